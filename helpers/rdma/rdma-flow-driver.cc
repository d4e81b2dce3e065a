#include "rdma-flow-driver.h"

#include "helpers/rdma/rdma-qp-connect.h"
#include "models/rdma/rdma-memory.h"
#include "models/rdma/rdma-mr.h"
#include "models/rdma/rdma-pd.h"
#include "models/rdma/rdma-qp.h"

#include "ns3/simulator.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ns3
{

namespace
{
constexpr uint64_t kBase = 0x7f0000000000ULL;
constexpr uint64_t kSpan = 1ULL << 31; ///< the largest single WRITE (2^31 bytes, IBA §9.4.1)

/**
 * Memory for load experiments: every address is mapped, reads give zeros and writes are
 * discarded, so a 320-host run does not hold gigabytes of payload nobody compares.
 */
class DiscardMemory : public RdmaMemory
{
  public:
    bool Read(uint64_t addr, uint8_t* dst, uint64_t len) const override
    {
        std::fill(dst, dst + len, 0);
        return !Wraps(addr, len);
    }

    bool Write(uint64_t addr, const uint8_t*, uint64_t len) override { return !Wraps(addr, len); }

    bool IsMapped(uint64_t addr, uint64_t len) const override { return !Wraps(addr, len); }

    bool ReadsAsZeros() const override { return true; }
};
} // namespace

RdmaFlowDriver::RdmaFlowDriver(std::vector<RdmaFlowHost> hosts, std::vector<RdmaFlowSpec> flows,
                               RdmaMtu pathMtu, bool countSentBytes)
    : m_hosts(std::move(hosts)),
      m_flows(std::move(flows)),
      m_pathMtu(pathMtu),
      m_countSent(countSentBytes)
{
}

void
RdmaFlowDriver::SetOnFlowStart(std::function<void(const RdmaFlowSpec&, uint32_t)> cb)
{
    m_onFlowStart = std::move(cb);
}

void
RdmaFlowDriver::Install(Time origin)
{
    m_origin = origin;
    m_state.resize(m_hosts.size());
    for (uint32_t h = 0; h < m_hosts.size(); ++h)
    {
        HostState& hs = m_state[h];
        Ptr<RdmaDevice> dev = m_hosts[h].device;
        hs.pd = dev->AllocPd(CreateObject<DiscardMemory>());
        hs.mr = dev->RegMr(hs.pd, kBase, kSpan, RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE);
        hs.cq = dev->CreateCq(65536);
        if (!hs.pd || !hs.mr || !hs.cq)
        {
            throw std::runtime_error("rdma flows: verbs setup failed: " + dev->GetLastError());
        }
        hs.cq->TraceConnectWithoutContext("CompletionEvent",
                                          MakeBoundCallback(&RdmaFlowDriver::OnCqEvent, this));
        hs.cq->ReqNotify(false);
        if (m_countSent)
        {
            // Monitoring costs only when it samples: without it no per-packet callback runs.
            m_hosts[h].engine->TraceConnectWithoutContext(
                "PacketSent",
                MakeBoundCallback(&RdmaFlowDriver::OnPacketSent, this, h));
        }
    }
    m_results.resize(m_flows.size());
    m_sentBytes.assign(m_flows.size(), 0);
    m_flowQps.resize(m_flows.size());
    for (uint32_t f = 0; f < m_flows.size(); ++f)
    {
        const RdmaFlowSpec& fs = m_flows[f];
        if (fs.src >= m_hosts.size() || fs.dst >= m_hosts.size() || fs.src == fs.dst ||
            fs.bytes == 0 || fs.bytes >= kSpan)
        {
            throw std::invalid_argument("rdma flows: flow " + std::to_string(f) +
                                        " has a bad host, or a size outside 1..2^31-1");
        }
        m_results[f].spec = fs;
        Simulator::Schedule(origin - Simulator::Now() + fs.start, &RdmaFlowDriver::StartFlow,
                            this, f);
    }
}

Ptr<RdmaQp>
RdmaFlowDriver::NewQp(uint32_t host)
{
    RdmaQpInitAttr init;
    init.send_cq = m_state[host].cq;
    init.recv_cq = m_state[host].cq;
    init.qp_type = RdmaQpType::RC;
    init.cap.max_send_wr = 4;
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    Ptr<RdmaQp> qp = m_hosts[host].device->CreateQp(m_state[host].pd, init);
    if (!qp)
    {
        throw std::runtime_error("rdma flows: CreateQp: " + m_hosts[host].device->GetLastError());
    }
    return qp;
}

void
RdmaFlowDriver::StartFlow(uint32_t f)
{
    const RdmaFlowSpec& fs = m_flows[f];
    Ptr<RdmaQp> s = NewQp(fs.src);
    Ptr<RdmaQp> d = NewQp(fs.dst);
    RdmaQpConnectOptions c;
    c.mtu = m_pathMtu;
    c.access = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE;
    c.timeout = 8; // 4.096 us x 2^8 = 1.05 ms: tail losses recover within a run
    ConnectQpPair(s, RdmaAddressOf(*m_hosts[fs.src].port), d, RdmaAddressOf(*m_hosts[fs.dst].port),
                  c);
    if (m_countSent)
    {
        m_flowOfQp[(uint64_t(fs.src) << 32) | s->GetQpNum()] = f;
    }
    m_flowQps[f] = {s, d};
    if (m_onFlowStart)
    {
        m_onFlowStart(fs, s->GetQpNum());
    }
    RdmaSendWr wr;
    wr.wr_id = f;
    wr.opcode = RdmaWrOpcode::RDMA_WRITE;
    wr.send_flags = RDMA_SEND_SIGNALED;
    wr.sg_list = {RdmaSge{kBase, static_cast<uint32_t>(fs.bytes), m_state[fs.src].mr->GetLkey()}};
    wr.rdma.remote_addr = kBase;
    wr.rdma.rkey = m_state[fs.dst].mr->GetRkey();
    if (s->PostSend(wr) != 0)
    {
        throw std::runtime_error("rdma flows: PostSend: " +
                                 m_hosts[fs.src].device->GetLastError());
    }
}

void
RdmaFlowDriver::OnCqEvent(RdmaFlowDriver* d, Ptr<RdmaCq> cq)
{
    for (const RdmaWc& wc : cq->Poll(1024))
    {
        if (wc.wr_id >= d->m_results.size() || d->m_results[wc.wr_id].fct.IsPositive())
        {
            continue;
        }
        RdmaFlowResult& r = d->m_results[wc.wr_id];
        r.fct = Simulator::Now() - (d->m_origin + r.spec.start);
        r.ok = wc.status == RdmaWcStatus::SUCCESS;
        // A finished flow's QPs go, as an application destroys them after its last
        // completion (HPCC's simulator likewise stops a finished QP's DCQCN timers): the
        // congestion-control ticks of thousands of finished flows would otherwise run, and
        // their contexts stay in every lookup, until the end of the run. After the last ACK
        // nothing of the flow is in flight but CNPs, which a destroyed QP ignores. In a fresh
        // event: the engine is still inside the completion's call chain.
        Simulator::ScheduleNow(&RdmaFlowDriver::ReleaseFlow, d, static_cast<uint32_t>(wc.wr_id));
        if (++d->m_done == d->m_results.size())
        {
            Simulator::Stop();
        }
    }
    cq->ReqNotify(false);
}

void
RdmaFlowDriver::ReleaseFlow(uint32_t f)
{
    const RdmaFlowSpec& fs = m_flows[f];
    auto& [s, d] = m_flowQps[f];
    if (s)
    {
        m_hosts[fs.src].device->DestroyQp(s);
        m_hosts[fs.dst].device->DestroyQp(d);
        s = nullptr;
        d = nullptr;
    }
}

void
RdmaFlowDriver::OnPacketSent(RdmaFlowDriver* d, uint32_t host, uint32_t qpn, uint8_t, uint32_t,
                             uint32_t bytes, bool)
{
    auto it = d->m_flowOfQp.find((uint64_t(host) << 32) | qpn);
    if (it != d->m_flowOfQp.end())
    {
        d->m_sentBytes[it->second] += bytes;
    }
}

} // namespace ns3
