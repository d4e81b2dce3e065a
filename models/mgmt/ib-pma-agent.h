// The performance management agent of a node (IBA vol. 1 §16.1): answers PerfMgt GMPs on QP1
// from the PortCounters the link layer keeps.
#ifndef CNUAS_IB_PMA_AGENT_H
#define CNUAS_IB_PMA_AGENT_H

#include "ib-mad-dispatcher.h"

#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <map>

namespace ns3
{

class IbPerfMgtMad;

/**
 * \brief PMA: ClassPortInfo (Get), PortCounters and PortCountersExtended (Get and Set) for the
 * ports of a channel adapter or of a switch (IBA vol. 1 §16.1.3.5, §16.1.4.11).
 *
 * The counters are the IbNetDevice's own (IbPortCounters): they saturate at their width and
 * never wrap (§16.1.3.5), and the extended ones are 64-bit. A Set clears exactly the counters
 * its CounterSelect (and, for PortXmitWait, CounterSelect2) bits name and answers with the
 * counters as they then are; PortCountersExtended is cleared independently of PortCounters.
 * PortSelect names the port (a switch's 1..N; 0xFF, all ports, is not supported: status 7).
 */
class IbPmaAgent : public Object
{
  public:
    static TypeId GetTypeId();
    IbPmaAgent();
    ~IbPmaAgent() override;

    /// Serve the node `dispatcher` is installed on (registers for class 0x04 on QP1).
    void Install(Ptr<IbMadDispatcher> dispatcher);

    /// GMPs answered with `status`.
    uint64_t GetAnsweredCount(uint16_t status) const;

    /// MadAnswered: (attribute ID, request method, status).
    typedef void (*AnsweredCallback)(uint16_t attrId, uint8_t method, uint16_t status);

  protected:
    void DoDispose() override;

  private:
    void Handle(const IbReceivedMad& req);
    uint16_t PortCounters(IbPerfMgtMad& mad, bool set);
    uint16_t PortCountersExtended(IbPerfMgtMad& mad, bool set);

    Ptr<IbMadDispatcher> m_disp;
    uint8_t m_respTimeValue = 18;
    std::map<uint16_t, uint64_t> m_answered;
    TracedCallback<uint16_t, uint8_t, uint16_t> m_answeredTrace;
};

} // namespace ns3

#endif
