// Link-layer traffic for the InfiniBand fabric before (and beside) the RDMA transport:
// a source of UD SEND packets and a sink that measures what arrives.
#ifndef CNUAS_IB_PACKET_SOURCE_H
#define CNUAS_IB_PACKET_SOURCE_H

#include "ns3/application.h"
#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <map>
#include <vector>

namespace ns3
{

class IbNetDevice;
struct IbRxInfo;
struct IbFrame;

/**
 * \brief Sends UD SEND-Only packets (LRH, BTH opcode 0x64, DETH, payload) from a CA port.
 *
 * Greedy (DataRate 0: keeps the port's transmit queue full, so the link layer's credits alone
 * pace it) or paced at a fixed rate. It is a traffic generator for link-layer experiments, not a
 * transport: there are no acknowledgements.
 */
class IbPacketSource : public Application
{
  public:
    static TypeId GetTypeId();
    IbPacketSource();

    uint64_t GetPacketsSent() const { return m_packetsSent; }
    /// Send to these LIDs in turn, one packet each (overrides DestinationLid): all-to-all
    /// traffic from one source.
    void SetDestinations(std::vector<uint16_t> lids) { m_destinations = std::move(lids); }
    uint64_t GetPayloadBytesSent() const { return m_payloadSent; }

  private:
    void StartApplication() override;
    void StopApplication() override;
    void Fill();
    void OnTxReady(Ptr<IbNetDevice>);
    void SendPaced();
    bool SendOne();

    Ptr<IbNetDevice> m_port;
    uint16_t m_dlid = 0;
    std::vector<uint16_t> m_destinations;
    size_t m_nextDestination = 0;
    uint8_t m_sl = 0;
    uint32_t m_payload = 4096;
    uint64_t m_maxBytes = 0;
    DataRate m_rate;
    uint32_t m_destQp = 0x100;
    uint32_t m_srcQp = 0x100;
    uint32_t m_psn = 0;
    bool m_running = false;
    uint64_t m_packetsSent = 0;
    uint64_t m_payloadSent = 0;
    EventId m_next;
};

/**
 * \brief Counts what reaches a CA port, per source LID, and keeps a throughput time series.
 */
class IbPacketSink : public Application
{
  public:
    static TypeId GetTypeId();
    IbPacketSink();

    struct Flow
    {
        uint64_t packets = 0;
        uint64_t wireBytes = 0; ///< LRH through VCRC
        Time first;
        Time last;
    };
    /// Per-source records by SLID; aborts if they were not kept (PerSourceTotals false).
    const std::map<uint16_t, Flow>& GetFlows() const;
    uint64_t GetTotalWireBytes() const;
    uint64_t GetTotalPackets() const;
    /// Wire bytes received in the SampleInterval bins lying wholly inside [from, to), by source
    /// LID (0 = all sources; a source needs PerSourceSeries).
    uint64_t GetWireBytesBetween(Time from, Time to, uint16_t slid = 0) const;
    Time GetSampleInterval() const { return m_interval; }
    /// Bins of `SampleInterval`: (bin start, wire bytes) for one source (0 = all; a source
    /// needs PerSourceSeries).
    std::vector<std::pair<Time, uint64_t>> GetSeries(uint16_t slid = 0) const;

  private:
    void StartApplication() override;
    void StopApplication() override;
    /// Counts a packet: only its size matters, so it takes the frame and reads no bytes.
    void Receive(Ptr<IbNetDevice> dev, const IbFrame& frame, const IbRxInfo& info);

    /// Wire bytes per bin of one series, checked before it is read.
    const std::vector<uint64_t>& SeriesOf(uint16_t slid) const;

    /// The Flow of source `slid` in m_flows, found by index: a sink of an all-to-all on 1,024
    /// hosts hears from 1,023 sources, and a map lookup per packet (ten dependent loads) was
    /// the most expensive step of a packet's last hop. Map nodes never move, so the pointers
    /// stay valid.
    Flow& FlowOf(uint16_t slid);
    /// The same for the per-source series in m_bins.
    std::vector<uint64_t>& BinsOf(uint16_t slid);

    Time m_interval;
    bool m_perSourceSeries = true;
    bool m_perSourceTotals = true;
    std::map<uint16_t, Flow> m_flows;
    std::map<uint16_t, std::vector<uint64_t>> m_bins;
    std::vector<Flow*> m_flowBySlid;                   ///< index into m_flows (null: none yet)
    std::vector<std::vector<uint64_t>*> m_binsBySlid;  ///< index into m_bins
    std::vector<uint64_t> m_allBins;
    uint64_t m_totalPackets = 0;   ///< over every source (a drain loop asks after each step)
    uint64_t m_totalWireBytes = 0;
};

} // namespace ns3

#endif
