#include "ib-packet-source.h"

#include "models/ib/ib-net-device.h"

#include "models/rdma/ib-bth-header.h"
#include "models/rdma/ib-deth-header.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbPacketSource");
NS_OBJECT_ENSURE_REGISTERED(IbPacketSource);
NS_OBJECT_ENSURE_REGISTERED(IbPacketSink);

namespace
{
/// UD SEND Only, IBA vol. 1 §9.2 table 36 (transport UD 0x60 + SEND Only 0x04).
constexpr uint8_t kUdSendOnly = 0x64;

Ptr<IbNetDevice>
FirstPort(Ptr<Node> node)
{
    for (uint32_t i = 0; i < node->GetNDevices(); ++i)
    {
        if (Ptr<IbNetDevice> d = DynamicCast<IbNetDevice>(node->GetDevice(i)))
        {
            return d;
        }
    }
    return nullptr;
}
} // namespace

TypeId
IbPacketSource::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbPacketSource")
            .SetParent<Application>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbPacketSource>()
            .AddAttribute("DestinationLid",
                          "DLID of the packets.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbPacketSource::m_dlid),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("ServiceLevel",
                          "SL of the packets (mapped to a VL by the SL-to-VL tables).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbPacketSource::m_sl),
                          MakeUintegerChecker<uint8_t>(0, 15))
            .AddAttribute("PayloadBytes",
                          "Payload per packet, bytes (at most the port MTU; padded to 4).",
                          UintegerValue(4096),
                          MakeUintegerAccessor(&IbPacketSource::m_payload),
                          MakeUintegerChecker<uint32_t>(0, 4096))
            .AddAttribute("MaxBytes",
                          "Stop after this many payload bytes (0: no limit).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbPacketSource::m_maxBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("DataRate",
                          "Payload sending rate; 0 sends greedily, as fast as credits allow.",
                          DataRateValue(DataRate(0)),
                          MakeDataRateAccessor(&IbPacketSource::m_rate),
                          MakeDataRateChecker())
            .AddAttribute("DestinationQp",
                          "DestQP in the BTH (QP0 and QP1 are the management QPs, so data uses "
                          "others).",
                          UintegerValue(0x100),
                          MakeUintegerAccessor(&IbPacketSource::m_destQp),
                          MakeUintegerChecker<uint32_t>(0, 0xFFFFFF))
            .AddAttribute("SourceQp",
                          "SrcQP in the DETH.",
                          UintegerValue(0x100),
                          MakeUintegerAccessor(&IbPacketSource::m_srcQp),
                          MakeUintegerChecker<uint32_t>(0, 0xFFFFFF));
    return tid;
}

IbPacketSource::IbPacketSource() = default;

void
IbPacketSource::StartApplication()
{
    m_port = FirstPort(GetNode());
    NS_ABORT_MSG_IF(!m_port, "IbPacketSource: node has no InfiniBand port");
    m_running = true;
    if (m_rate.GetBitRate() == 0)
    {
        m_port->SetTxReadyCallback(MakeCallback(&IbPacketSource::OnTxReady, this));
        Fill();
    }
    else
    {
        SendPaced();
    }
}

void
IbPacketSource::StopApplication()
{
    m_running = false;
    m_next.Cancel();
}

bool
IbPacketSource::SendOne()
{
    if (m_maxBytes > 0 && m_payloadSent >= m_maxBytes)
    {
        return false;
    }
    uint32_t pad = (4 - m_payload % 4) % 4;
    // BTH and DETH (IBA vol. 1 §9.2, §9.3.3); the payload and pad are zeros, which the frame
    // implies instead of storing (IbNetDevice::SendIbBytes): no Packet per packet sent.
    IbBthHeader bth;
    bth.SetOpCode(kUdSendOnly);
    bth.SetPadCnt(static_cast<uint8_t>(pad));
    bth.SetPkey(0xFFFF);
    bth.SetDestQp(m_destQp);
    bth.SetPsn(m_psn);
    IbDethHeader deth;
    deth.SetQkey(0x11111111);
    deth.SetSrcQp(m_srcQp);
    uint8_t headers[IbBthHeader::kSize + IbDethHeader::kSize];
    bth.WriteTo(headers);
    deth.WriteTo(headers + IbBthHeader::kSize);
    uint16_t dlid = m_destinations.empty() ? m_dlid : m_destinations[m_nextDestination];
    if (!m_port->SendIbBytes(headers,
                             sizeof(headers),
                             sizeof(headers) + m_payload + pad,
                             dlid,
                             m_sl,
                             IbLnh::IbaLocal))
    {
        return false;
    }
    if (!m_destinations.empty())
    {
        m_nextDestination = (m_nextDestination + 1) % m_destinations.size();
    }
    m_psn = (m_psn + 1) & 0xFFFFFF;
    m_packetsSent++;
    m_payloadSent += m_payload;
    return true;
}

void
IbPacketSource::OnTxReady(Ptr<IbNetDevice>)
{
    Fill();
}

void
IbPacketSource::Fill()
{
    while (m_running && m_port->CanSend(m_sl) && SendOne())
    {
    }
}

void
IbPacketSource::SendPaced()
{
    if (!m_running)
    {
        return;
    }
    SendOne();
    Time gap = m_rate.CalculateBytesTxTime(m_payload);
    m_next = Simulator::Schedule(gap, &IbPacketSource::SendPaced, this);
}

TypeId
IbPacketSink::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbPacketSink")
                            .SetParent<Application>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbPacketSink>()
                            .AddAttribute("SampleInterval",
                                          "Bin width of the throughput time series.",
                                          TimeValue(MicroSeconds(1)),
                                          MakeTimeAccessor(&IbPacketSink::m_interval),
                                          MakeTimeChecker())
                            .AddAttribute("PerSourceSeries",
                                          "Keep a throughput series per source LID beside the "
                                          "total one. Its memory grows as sources x bins (at "
                                          "1 us bins, an all-to-all of 1,024 hosts keeps about "
                                          "a million series); per-source packet and byte totals "
                                          "are kept either way.",
                                          BooleanValue(true),
                                          MakeBooleanAccessor(&IbPacketSink::m_perSourceSeries),
                                          MakeBooleanChecker())
                            .AddAttribute("PerSourceTotals",
                                          "Keep packets, bytes and first/last arrival per "
                                          "source LID (GetFlows). Updating one source's record "
                                          "per packet is a cache miss once there are many (an "
                                          "all-to-all on 1,024 hosts keeps about a million); "
                                          "the sink's own totals and series are kept either "
                                          "way.",
                                          BooleanValue(true),
                                          MakeBooleanAccessor(&IbPacketSink::m_perSourceTotals),
                                          MakeBooleanChecker());
    return tid;
}

IbPacketSink::IbPacketSink() = default;

void
IbPacketSink::StartApplication()
{
    Ptr<IbNetDevice> port = FirstPort(GetNode());
    NS_ABORT_MSG_IF(!port, "IbPacketSink: node has no InfiniBand port");
    port->SetIbFrameReceiveCallback(MakeCallback(&IbPacketSink::Receive, this));
}

void
IbPacketSink::StopApplication()
{
}

namespace
{
/// The entry for `slid` in `map`, found through `index` (slid -> the map's node, null until the
/// first use): map nodes never move, so the pointers stay valid.
template <typename T>
T&
IndexedBySlid(std::vector<T*>& index, std::map<uint16_t, T>& map, uint16_t slid)
{
    if (slid >= index.size())
    {
        index.resize(size_t(slid) + 1, nullptr);
    }
    T*& entry = index[slid];
    if (!entry)
    {
        entry = &map[slid];
    }
    return *entry;
}
} // namespace

IbPacketSink::Flow&
IbPacketSink::FlowOf(uint16_t slid)
{
    return IndexedBySlid(m_flowBySlid, m_flows, slid);
}

std::vector<uint64_t>&
IbPacketSink::BinsOf(uint16_t slid)
{
    return IndexedBySlid(m_binsBySlid, m_bins, slid);
}

void
IbPacketSink::Receive(Ptr<IbNetDevice>, const IbFrame&, const IbRxInfo& info)
{
    Time now = Simulator::Now();
    if (m_perSourceTotals)
    {
        Flow& f = FlowOf(info.slid);
        if (f.packets == 0)
        {
            f.first = now;
        }
        f.packets++;
        f.wireBytes += info.bytes;
        f.last = now;
    }
    m_totalPackets++;
    m_totalWireBytes += info.bytes;
    size_t bin = static_cast<size_t>(now.GetPicoSeconds() / m_interval.GetPicoSeconds());
    if (m_perSourceSeries)
    {
        auto& bins = BinsOf(info.slid);
        if (bins.size() <= bin)
        {
            bins.resize(bin + 1, 0);
        }
        bins[bin] += info.bytes;
    }
    if (m_allBins.size() <= bin)
    {
        m_allBins.resize(bin + 1, 0);
    }
    m_allBins[bin] += info.bytes;
}

const std::map<uint16_t, IbPacketSink::Flow>&
IbPacketSink::GetFlows() const
{
    NS_ABORT_MSG_IF(!m_perSourceTotals,
                    "IbPacketSink: per-source totals were not kept (PerSourceTotals is false)");
    return m_flows;
}

uint64_t
IbPacketSink::GetTotalWireBytes() const
{
    return m_totalWireBytes;
}

uint64_t
IbPacketSink::GetTotalPackets() const
{
    return m_totalPackets;
}

const std::vector<uint64_t>&
IbPacketSink::SeriesOf(uint16_t slid) const
{
    static const std::vector<uint64_t> kNone;
    if (slid == 0)
    {
        return m_allBins;
    }
    NS_ABORT_MSG_IF(!m_perSourceSeries,
                    "IbPacketSink: the series of source LID "
                        << slid << " was not kept (PerSourceSeries is false)");
    auto it = m_bins.find(slid);
    return it == m_bins.end() ? kNone : it->second;
}

uint64_t
IbPacketSink::GetWireBytesBetween(Time from, Time to, uint16_t slid) const
{
    const std::vector<uint64_t>* bins = &SeriesOf(slid);
    // Only bins wholly inside [from, to): a bin cut by the window's edge would count bytes
    // from outside it.
    const int64_t w = m_interval.GetPicoSeconds();
    uint64_t t = 0;
    for (size_t i = static_cast<size_t>((from.GetPicoSeconds() + w - 1) / w);
         i < bins->size() && (int64_t(i) + 1) * w <= to.GetPicoSeconds();
         ++i)
    {
        t += (*bins)[i];
    }
    return t;
}

std::vector<std::pair<Time, uint64_t>>
IbPacketSink::GetSeries(uint16_t slid) const
{
    std::vector<std::pair<Time, uint64_t>> out;
    const std::vector<uint64_t>* bins = &SeriesOf(slid);
    for (size_t i = 0; i < bins->size(); ++i)
    {
        out.emplace_back(m_interval * int64_t(i), (*bins)[i]);
    }
    return out;
}

} // namespace ns3
