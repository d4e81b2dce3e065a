#include "rdma-cc-hpcc.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaCcHpcc);

namespace
{
/// a - b in 24-bit PSN space (IBA vol. 1 §9.7.2), as a signed distance.
int32_t
PsnDiff(uint32_t a, uint32_t b)
{
    const int32_t d = static_cast<int32_t>((a - b) & 0xFFFFFF);
    return d >= 0x800000 ? d - 0x1000000 : d;
}
} // namespace

TypeId
RdmaCcHpcc::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaCcHpcc")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaCcHpcc>()
            .AddAttribute("TargetUtilization",
                          "eta: the utilization HPCC steers the bottleneck to (HPCC paper "
                          "§3.3; run.py U_TARGET 0.95), fraction.",
                          DoubleValue(0.95), MakeDoubleAccessor(&RdmaCcHpcc::m_eta),
                          MakeDoubleChecker<double>(0.01, 1.0))
            .AddAttribute("MaxStage",
                          "maxStage: additive-increase rounds before a multiplicative "
                          "adjustment is forced (run.py MI_THRESH 0), count.",
                          UintegerValue(0), MakeUintegerAccessor(&RdmaCcHpcc::m_maxStage),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("RateAi",
                          "R_AI, the additive increase per update, bit/s. 0 = run.py's rule, "
                          "10 Mb/s per 25 Gb/s of the QP's line rate (40 Mb/s at 100 Gb/s).",
                          DataRateValue(DataRate(0)), MakeDataRateAccessor(&RdmaCcHpcc::m_rateAi),
                          MakeDataRateChecker())
            .AddAttribute("MinRate", "Lowest rate (bit/s; run.py MIN_RATE 1000 Mb/s).",
                          DataRateValue(DataRate("1000Mbps")),
                          MakeDataRateAccessor(&RdmaCcHpcc::SetMinRate, &RdmaCcHpcc::GetMinRate),
                          MakeDataRateChecker())
            .AddAttribute("BaseRtt",
                          "T: the base round-trip time (the simulator's GLOBAL_T 1 uses the "
                          "fabric's largest; about 12.3 us on the HPCC paper fat-tree), time.",
                          TimeValue(MicroSeconds(13)),
                          MakeTimeAccessor(&RdmaCcHpcc::SetBaseRtt, &RdmaCcHpcc::GetBaseRtt),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("Window",
                          "W, the base window in bytes; 0 = the bandwidth-delay product, line "
                          "rate x BaseRtt / 8.",
                          UintegerValue(0), MakeUintegerAccessor(&RdmaCcHpcc::m_windowBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("HasWindow",
                          "Limit bytes in flight to the window (run.py HAS_WIN 1).",
                          BooleanValue(true), MakeBooleanAccessor(&RdmaCcHpcc::m_hasWindow),
                          MakeBooleanChecker())
            .AddAttribute("VarWindow",
                          "Scale the window by rate / line rate (run.py VAR_WIN 1).",
                          BooleanValue(true), MakeBooleanAccessor(&RdmaCcHpcc::m_varWindow),
                          MakeBooleanChecker())
            .AddAttribute("FastReact",
                          "React to every ACK from the reference rate, not only once per round "
                          "trip (run.py FAST_REACT 1).",
                          BooleanValue(true), MakeBooleanAccessor(&RdmaCcHpcc::m_fastReact),
                          MakeBooleanChecker())
            .AddTraceSource("Rate", "A QP's rate changed: (qpn, bit/s).",
                            MakeTraceSourceAccessor(&RdmaCcHpcc::m_rateTrace),
                            "ns3::RdmaCcHpcc::RateCallback")
            .AddTraceSource("Utilization",
                            "A QP's utilization estimate u after an update: (qpn, u).",
                            MakeTraceSourceAccessor(&RdmaCcHpcc::m_utilTrace),
                            "ns3::RdmaCcHpcc::UtilizationCallback");
    return tid;
}

void
RdmaCcHpcc::SetBaseRtt(Time t)
{
    m_baseRtt = t;
    m_baseRttS = t.GetSeconds();
}

Time
RdmaCcHpcc::GetBaseRtt() const
{
    return m_baseRtt;
}

void
RdmaCcHpcc::SetMinRate(DataRate r)
{
    m_minRate = r;
    m_minRateBps = static_cast<double>(r.GetBitRate());
}

DataRate
RdmaCcHpcc::GetMinRate() const
{
    return m_minRate;
}

RdmaCcHpcc::Qp*
RdmaCcHpcc::FindSlow(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    if (it == m_qps.end())
    {
        return nullptr;
    }
    m_lastQpn = qpn;
    m_lastQp = const_cast<Qp*>(&it->second);
    return m_lastQp;
}

void
RdmaCcHpcc::OnQpStart(uint32_t qpn, uint64_t lineRateBps)
{
    Qp& q = m_qps[qpn];
    q = Qp();
    q.line = static_cast<double>(lineRateBps);
    // HPCC starts every flow at line rate with a full window (HPCC paper §3.3).
    q.rate = q.line;
    q.curRate = q.line;
    q.rateAi = m_rateAi.GetBitRate() != 0 ? static_cast<double>(m_rateAi.GetBitRate())
                                          : 10e6 * q.line / 25e9;
    q.window = m_windowBytes != 0
                   ? m_windowBytes
                   : static_cast<uint64_t>(std::llround(q.line * m_baseRtt.GetSeconds() / 8));
}

void
RdmaCcHpcc::OnQpStop(uint32_t qpn)
{
    if (m_lastQp && m_lastQpn == qpn)
    {
        m_lastQp = nullptr;
    }
    m_qps.erase(qpn);
}

void
RdmaCcHpcc::OnSend(uint32_t, uint32_t, bool)
{
}

void
RdmaCcHpcc::OnAck(uint32_t, uint32_t, Time)
{
}

void
RdmaCcHpcc::OnCnp(uint32_t)
{
}

void
RdmaCcHpcc::OnBecn(uint32_t)
{
}

bool
RdmaCcHpcc::OnEcnMarkedReceive(uint32_t)
{
    return false;
}

void
RdmaCcHpcc::OnIntAck(uint32_t qpn, uint32_t psnEnd, uint32_t sndNxt, const IntStack& stack)
{
    Qp* qp = Find(qpn);
    if (!qp)
    {
        return;
    }
    if (stack.nHops > kIntStackCapacity)
    {
        m_badEchoes++;
        return;
    }
    Qp& q = *qp;
    if (!q.started)
    {
        // The first echo has no predecessor to difference against: record it.
        q.started = true;
        q.lastUpdatePsn = sndNxt;
        q.prev.CopyHopsFrom(stack);
        return;
    }
    // Once per round trip, when the ACK passes what was next to send at the last full update,
    // the reference rate moves; the ACKs in between react without moving it.
    const bool full = PsnDiff(psnEnd, q.lastUpdatePsn) > 0;
    if (full || m_fastReact)
    {
        // Without fast react the hops are kept from the last full update, so that the next
        // one differences over the whole round trip (as the simulator does).
        Update(qpn, q, stack, !full);
    }
    if (full && PsnDiff(sndNxt, q.lastUpdatePsn) > 0)
    {
        q.lastUpdatePsn = sndNxt;
    }
}

void
RdmaCcHpcc::Update(uint32_t qpn, Qp& q, const IntStack& stack, bool fastReact)
{
    const double t = m_baseRttS;
    double maxU = 0;
    double tau = 0;
    bool any = false;
    const uint32_t n = std::min(stack.nHops, q.prev.nHops);
    for (uint32_t j = 0; j < n; ++j)
    {
        const IntHop& h = stack.hops[j];
        const IntHop& p = q.prev.hops[j];
        const double dt = (h.timePs - p.timePs) * 1e-12;
        if (dt <= 0 || h.lineRateBps == 0 || h.txBytes < p.txBytes)
        {
            m_badEchoes++; // same or older sample (reordered echo): nothing to learn from it
            continue;
        }
        const double b = static_cast<double>(h.lineRateBps);
        const double txRate = static_cast<double>(h.txBytes - p.txBytes) * 8 / dt;
        const double qlen = static_cast<double>(std::min(h.qlenBytes, p.qlenBytes));
        // HPCC paper Algorithm 1 line 5: U_j = qlen / (B_j T) + txRate_j / B_j, with the queue
        // term normalised by the base window W = line x T / 8 as the simulator does.
        const double u = txRate / b + qlen * q.line / (b * static_cast<double>(q.window));
        if (u > maxU)
        {
            maxU = u;
            tau = dt;
        }
        any = true;
    }
    q.prev.CopyHopsFrom(stack);
    if (!any)
    {
        return;
    }
    // Algorithm 1 line 8: EWMA over one base RTT, weighted by the sample's interval.
    tau = std::min(tau, t);
    q.u = (q.u * (t - tau) + maxU * tau) / t;
    const double k = q.u / m_eta;
    double rate;
    uint32_t stage;
    // Algorithm 1 ComputeWind: multiplicative when over target or after maxStage additive
    // rounds, else additive.
    if (k >= 1 || q.stage >= m_maxStage)
    {
        rate = q.curRate / k + q.rateAi;
        stage = 0;
    }
    else
    {
        rate = q.curRate + q.rateAi;
        stage = q.stage + 1;
    }
    rate = std::min(q.line, std::max(m_minRateBps, rate));
    m_utilTrace(qpn, q.u);
    if (rate != q.rate)
    {
        q.rate = rate;
        m_rateTrace(qpn, rate);
    }
    if (!fastReact)
    {
        q.curRate = rate;
        q.stage = stage;
    }
}

uint64_t
RdmaCcHpcc::GetRate(uint32_t qpn) const
{
    const Qp* q = Find(qpn);
    return q ? static_cast<uint64_t>(std::llround(q->rate)) : 0;
}

uint64_t
RdmaCcHpcc::GetWindow(uint32_t qpn) const
{
    if (!m_hasWindow)
    {
        return 0;
    }
    const Qp* qp = Find(qpn);
    if (!qp)
    {
        return 0;
    }
    const Qp& q = *qp;
    if (!m_varWindow || q.line <= 0)
    {
        return q.window;
    }
    // The simulator's GetWin: W x R / line, at least one byte.
    return std::max<uint64_t>(
        1, static_cast<uint64_t>(static_cast<double>(q.window) * q.rate / q.line));
}

double
RdmaCcHpcc::GetCurrentRate(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.rate;
}

double
RdmaCcHpcc::GetReferenceRate(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.curRate;
}

double
RdmaCcHpcc::GetUtilization(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.u;
}

uint64_t
RdmaCcHpcc::GetBaseWindow(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.window;
}

} // namespace ns3
