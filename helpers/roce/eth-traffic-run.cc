#include "eth-traffic-run.h"

#include "helpers/trace/eth-pcap-writer.h"

#include "models/ib/ib-crc.h"
#include "models/rdma/ib-opcode.h"

#include "ns3/object-factory.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <chrono>
#include <ctime>
#include <memory>
#include <stdexcept>

namespace ns3
{

namespace
{
constexpr uint16_t kRoceV2Port = 4791; ///< IANA's RoCEv2 UDP port (IBA annex A17.2.2)
constexpr uint32_t kBthBytes = 12;
/// The destination QP of the generator's packets: any ordinary QP (0 and 1 are the SMI's and
/// GSI's, IBA vol. 1 §3.5.4).
constexpr uint32_t kGreedyDestQp = 0x000100;
} // namespace

EthGreedySource::EthGreedySource(Ptr<EthNetDevice> port, std::vector<uint32_t> dstIps,
                                 EthUdpFlow tmpl, uint32_t payloadBytes, Time stop)
    : m_port(port),
      m_dst(std::move(dstIps)),
      m_flow(tmpl),
      m_payload(payloadBytes),
      m_stopPs(stop.GetPicoSeconds())
{
    // Wireshark and `cnuas pcap check` read whatever goes to port 4791 as RoCEv2: such a
    // datagram must hold at least the BTH and the ICRC.
    if (m_flow.dstPort == kRoceV2Port && m_payload < kBthBytes + kIbIcrcSize)
    {
        throw std::invalid_argument("a RoCEv2 (UDP 4791) payload of " +
                                    std::to_string(m_payload) +
                                    " bytes cannot hold BTH + ICRC (16 bytes)");
    }
}

void
EthGreedySource::Start()
{
    m_port->SetTxReadyCallback(MakeCallback(&EthGreedySource::OnTxReady, this));
    Fill();
}

void
EthGreedySource::OnTxReady(Ptr<EthNetDevice>, uint8_t priority)
{
    if (priority == m_flow.priority)
    {
        Fill();
    }
}

void
EthGreedySource::Fill()
{
    if (m_dst.empty())
    {
        return;
    }
    while (Simulator::Now().GetPicoSeconds() < m_stopPs && m_port->CanSend(m_flow.priority))
    {
        EthUdpFlow f = m_flow;
        f.dstIp = m_dst[m_next];
        if (m_next < m_dst6.size())
        {
            f.ipv6 = true;
            f.dstIp6 = m_dst6[m_next];
        }
        f.srcPort = static_cast<uint16_t>(49152 + (m_next % 16384));
        m_next = (m_next + 1) % m_dst.size();
        bool sent;
        if (f.dstPort == kRoceV2Port)
        {
            // A RoCEv2 packet, so that a capture of the load is one Wireshark decodes and
            // `cnuas pcap check` passes: BTH (IBA vol. 1 §9.2) of a UC SEND Only, zeros as the
            // payload, and the ICRC (annex A17.4.5.3), which the frame computes only when its
            // bytes are made (a pcap); without icrcPending the capture would show ICRC 0.
            const uint8_t bth[kBthBytes] = {
                IbOpcode::kUcSendOnly,
                0x00, // SE 0, MigReq 0, PadCnt 0, TVer 0
                0xFF,
                0xFF, // P_Key: the default partition, full member
                0x00,
                static_cast<uint8_t>(kGreedyDestQp >> 16),
                static_cast<uint8_t>(kGreedyDestQp >> 8),
                static_cast<uint8_t>(kGreedyDestQp),
                0x00, // AckReq 0 (UC has no ACKs)
                static_cast<uint8_t>(m_psn >> 16),
                static_cast<uint8_t>(m_psn >> 8),
                static_cast<uint8_t>(m_psn),
            };
            f.icrcPending = true;
            sent = m_port->SendUdp(f, m_payload, bth, kBthBytes);
            if (sent)
            {
                m_psn = (m_psn + 1) & 0xFFFFFF; // PSN is 24 bits
            }
        }
        else
        {
            sent = m_port->SendUdp(f, m_payload);
        }
        if (!sent)
        {
            return;
        }
        m_sent++;
    }
}

namespace
{
struct RxCounter
{
    uint64_t frames = 0;
    uint64_t bytes = 0;
    uint64_t ce = 0;
    Time last;

    void Rx(Ptr<EthNetDevice>, const EthFrame& f)
    {
        frames++;
        last = Simulator::Now();
        bytes += f.bytes;
        ce += f.ecn == kEcnCe;
    }
};
/// CPU time of this process: on a machine shared with other jobs, wall time measures them too.
double
CpuSeconds()
{
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
} // namespace

EthTrafficStats
RunEthTraffic(const EthTrafficSpec& spec)
{
    EthTrafficStats st;
    if (!spec.scheduler.empty())
    {
        ObjectFactory sched;
        sched.SetTypeId(spec.scheduler);
        Simulator::SetScheduler(sched);
    }
    Topology topo = BuildTopologyFromSpec(spec.topology);
    EthFabricHelper helper;
    helper.SetHostLinkRate(spec.hostRate);
    helper.SetFabricLinkRate(spec.fabricRate);
    helper.SetPortAttribute("PfcEnableMask",
                            UintegerValue(spec.pfc ? (1u << spec.priority) : 0u));
    if (spec.configure)
    {
        spec.configure(helper);
    }
    EthFabric fab = helper.Build(topo);
    const uint32_t nHosts = static_cast<uint32_t>(fab.hostNodes.size());
    st.hosts = nHosts;

    std::vector<Ptr<PcapFileWrapper>> pcaps;
    if (!spec.pcapDir.empty())
    {
        for (uint32_t h = 0; h < nHosts; ++h)
        {
            pcaps.push_back(EthPcapHelper::Enable(
                fab.HostPort(h),
                spec.pcapDir + "/" + topo.nodes[fab.hostNodes[h]].name + ".pcap"));
        }
    }

    RxCounter sink;
    for (uint32_t h = 0; h < nHosts; ++h)
    {
        fab.HostPort(h)->SetEthReceiveCallback(MakeCallback(&RxCounter::Rx, &sink));
    }

    EthUdpFlow tmpl;
    tmpl.priority = spec.priority;
    tmpl.dscp = spec.dscp;
    tmpl.ecn = spec.ecnCapable ? kEcnEct0 : kEcnNotEct;
    std::vector<std::unique_ptr<EthGreedySource>> sources;
    for (uint32_t h = 0; h < nHosts; ++h)
    {
        std::vector<uint32_t> dst;
        std::vector<Ipv6Bytes> dst6;
        if (spec.pattern == EthTrafficSpec::Pattern::Incast)
        {
            if (h != spec.incastTarget)
            {
                dst.push_back(fab.HostIp(spec.incastTarget));
                dst6.push_back(fab.HostIp6(spec.incastTarget));
            }
        }
        else
        {
            for (uint32_t k = 1; k < nHosts; ++k)
            {
                dst.push_back(fab.HostIp((h + k) % nHosts));
                dst6.push_back(fab.HostIp6((h + k) % nHosts));
            }
        }
        if (dst.empty())
        {
            continue;
        }
        sources.push_back(std::make_unique<EthGreedySource>(fab.HostPort(h), dst, tmpl,
                                                            spec.payloadBytes, spec.duration));
        if (spec.ipv6)
        {
            sources.back()->SetIpv6Destinations(dst6);
        }
        Simulator::Schedule(Time(0), &EthGreedySource::Start, sources.back().get());
    }

    const auto wallStart = std::chrono::steady_clock::now();
    const double cpuStart = CpuSeconds();
    Simulator::Stop(spec.limit);
    Simulator::Run();
    st.cpuSeconds = CpuSeconds() - cpuStart;
    st.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    st.simulated = sink.last;
    st.events = Simulator::GetEventCount();
    for (auto& s : sources)
    {
        st.sent += s->GetSent();
    }
    st.received = sink.frames;
    st.receivedCe = sink.ce;
    for (auto& port : fab.AllPorts())
    {
        const EthPortCounters& c = port->GetCounters();
        st.pfcFramesSent += c.pfcFramesSent;
        for (uint8_t p = 0; p < kEthPriorities; ++p)
        {
            st.pausesSent += c.pauseSent[p];
            st.packetHops += c.txFrames[p];
            if (port->GetSwitch())
            {
                st.maxEgressQueueBytes = std::max(st.maxEgressQueueBytes,
                                                  port->GetMaxQueueBytes(p));
            }
        }
        for (int r = 0; r < static_cast<int>(EthDropReason::Count); ++r)
        {
            const uint64_t d = port->GetDropCount(static_cast<EthDropReason>(r));
            st.dropsByReason[r] += d;
            st.drops += d;
        }
    }
    for (auto& sw : fab.Switches())
    {
        st.ecnMarked += sw->GetEcnMarked();
        st.maxHeadroomUsed = std::max(st.maxHeadroomUsed, sw->GetMmu()->GetMaxHeadroomUsed());
    }
    st.aggregateGbps = sink.bytes * 8.0 / spec.duration.GetSeconds() / 1e9;
    for (auto& f : pcaps)
    {
        if (f)
        {
            f->Close();
        }
    }
    Simulator::Destroy();
    st.framesCreated = EthFramePool::Created();
    return st;
}

} // namespace ns3
