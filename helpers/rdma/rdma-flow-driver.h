// The flow half of an RDMA load experiment, on any fabric: one RC QP pair per flow doing one
// RDMA WRITE of the flow's size at its start time, its completion time, and the bytes each
// flow's sender put on its port (for sampled rates). The RoCE run (helpers/roce/
// roce-traffic-run.h) and the InfiniBand run (helpers/ib/ib-flow-run.h) build their fabric and
// HCAs and hand them here, so the two fabrics run their flows with the same code.
#ifndef CNUAS_RDMA_FLOW_DRIVER_H
#define CNUAS_RDMA_FLOW_DRIVER_H

#include "models/rdma/rdma-cq.h"
#include "models/rdma/rdma-device.h"
#include "models/rdma/rdma-engine.h"
#include "models/rdma/rdma-link-port.h"
#include "models/rdma/rdma-types.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ns3
{

/// One flow: `bytes` written by host `src` into host `dst`, posted at `start`.
struct RdmaFlowSpec
{
    uint32_t src = 0;
    uint32_t dst = 0;
    uint64_t bytes = 0;
    Time start;
};

struct RdmaFlowResult
{
    RdmaFlowSpec spec;
    Time fct = Time(-1); ///< start to the sender's completion; -1 if unfinished
    bool ok = false;     ///< completed with status SUCCESS
};

/// The parts of one host's HCA the flows use.
struct RdmaFlowHost
{
    Ptr<RdmaDevice> device;
    Ptr<RdmaEngine> engine;
    Ptr<RdmaLinkPort> port;
};

/**
 * Runs a list of flows over HCAs that already exist. Install() gives every host a protection
 * domain over discarding memory, a memory region of 2^31 bytes and a completion queue, and
 * schedules every flow's start at `origin + flow.start`; the simulation is the caller's to run.
 * When the last flow completes the driver stops the simulator. Flow f's QPs are destroyed when
 * it completes, as an application would (their congestion-control timers stop with them).
 */
class RdmaFlowDriver
{
  public:
    /// `countSentBytes`: count each flow's transmitted bytes (SentBytes) through the engines'
    /// PacketSent trace; off, no per-packet callback runs.
    RdmaFlowDriver(std::vector<RdmaFlowHost> hosts, std::vector<RdmaFlowSpec> flows,
                   RdmaMtu pathMtu, bool countSentBytes);

    /// Called when a flow has its QPs connected, before its WRITE is posted: the flow, the
    /// sender's QP number (e.g. to give that QP its own congestion window).
    void SetOnFlowStart(std::function<void(const RdmaFlowSpec&, uint32_t srcQpn)> cb);

    /// Creates the verbs objects and schedules the flows (throws std::invalid_argument for a
    /// flow with a bad host or a size outside 1..2^31-1, std::runtime_error when the verbs
    /// setup fails). Flow start times count from `origin`.
    void Install(Time origin = Time(0));

    uint32_t FlowsDone() const { return m_done; }
    size_t FlowCount() const { return m_results.size(); }
    /// Bytes flow f's sender has transmitted so far (with countSentBytes).
    uint64_t SentBytes(uint32_t f) const { return m_sentBytes[f]; }
    /// Per flow, in the order given; fct and ok set for those that completed.
    std::vector<RdmaFlowResult>& Results() { return m_results; }

  private:
    struct HostState
    {
        Ptr<RdmaPd> pd;
        Ptr<RdmaMr> mr;
        Ptr<RdmaCq> cq;
    };

    Ptr<RdmaQp> NewQp(uint32_t host);
    void StartFlow(uint32_t f);
    void ReleaseFlow(uint32_t f);
    static void OnCqEvent(RdmaFlowDriver* d, Ptr<RdmaCq> cq);
    static void OnPacketSent(RdmaFlowDriver* d, uint32_t host, uint32_t qpn, uint8_t op,
                             uint32_t psn, uint32_t bytes, bool retx);

    std::vector<RdmaFlowHost> m_hosts;
    std::vector<HostState> m_state;
    std::vector<RdmaFlowSpec> m_flows;
    std::vector<RdmaFlowResult> m_results;
    RdmaMtu m_pathMtu;
    bool m_countSent;
    std::function<void(const RdmaFlowSpec&, uint32_t)> m_onFlowStart;
    std::unordered_map<uint64_t, uint32_t> m_flowOfQp; ///< (host << 32 | qpn) -> flow
    std::vector<uint64_t> m_sentBytes;
    /// The two QPs of each flow (sender, receiver), released when the flow completes.
    std::vector<std::pair<Ptr<RdmaQp>, Ptr<RdmaQp>>> m_flowQps;
    Time m_origin; ///< what flow start times count from
    uint32_t m_done = 0;
};

} // namespace ns3

#endif
