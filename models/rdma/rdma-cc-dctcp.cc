#include "rdma-cc-dctcp.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaCcDctcp);

TypeId
RdmaCcDctcp::GetTypeId()
{
    // Defaults: the HPCC simulator's run.py for its DCTCP runs (g = 1/16, 615 Mb/s per RTT,
    // "calculated from RTT=13us and MTU=1KB"), alpha starting at 1 as in DCTCP's Linux code.
    static TypeId tid =
        TypeId("ns3::RdmaCcDctcp")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaCcDctcp>()
            .AddAttribute("G", "EWMA gain g of alpha (dimensionless, 0..1).",
                          DoubleValue(1.0 / 16), MakeDoubleAccessor(&RdmaCcDctcp::m_g),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("InitialAlpha", "Alpha of a QP when it starts (dimensionless, 0..1).",
                          DoubleValue(1.0), MakeDoubleAccessor(&RdmaCcDctcp::m_initialAlpha),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("RateAi",
                          "Rate added once per window without a cut (bit/s; the HPCC "
                          "simulator's DCTCP_RATE_AI).",
                          DataRateValue(DataRate("615Mbps")),
                          MakeDataRateAccessor(&RdmaCcDctcp::m_rateAi), MakeDataRateChecker())
            .AddAttribute("MinRate", "Lowest rate a cut leaves (bit/s).",
                          DataRateValue(DataRate("100Mbps")),
                          MakeDataRateAccessor(&RdmaCcDctcp::m_minRate), MakeDataRateChecker())
            .AddAttribute("Window",
                          "Bytes a QP may have in flight (the HPCC simulator's HAS_WIN window, "
                          "a BDP); 0 = no window.",
                          UintegerValue(0), MakeUintegerAccessor(&RdmaCcDctcp::m_window),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("VariableWindow",
                          "Scale the window by rate / line rate (the HPCC simulator's VAR_WIN).",
                          BooleanValue(false), MakeBooleanAccessor(&RdmaCcDctcp::m_varWin),
                          MakeBooleanChecker())
            .AddTraceSource("Rate", "A QP's rate changed: (qpn, bit/s).",
                            MakeTraceSourceAccessor(&RdmaCcDctcp::m_rateTrace),
                            "ns3::RdmaCcDcqcn::AlphaCallback")
            .AddTraceSource("Alpha", "A QP's alpha changed: (qpn, alpha).",
                            MakeTraceSourceAccessor(&RdmaCcDctcp::m_alphaTrace),
                            "ns3::RdmaCcDcqcn::AlphaCallback");
    return tid;
}

void
RdmaCcDctcp::OnQpStart(uint32_t qpn, uint64_t lineRateBps)
{
    Qp& q = m_qps[qpn];
    const uint64_t window = q.window;
    q = Qp();
    q.window = window;
    q.line = static_cast<double>(lineRateBps);
    q.rate = q.line; // no slow start: RDMA flows start at line rate
    q.alpha = m_initialAlpha;
}

void
RdmaCcDctcp::OnQpStop(uint32_t qpn)
{
    m_qps.erase(qpn);
}

void
RdmaCcDctcp::SetQpWindow(uint32_t qpn, uint64_t bytes)
{
    m_qps[qpn].window = bytes;
}

void
RdmaCcDctcp::OnSend(uint32_t qpn, uint32_t, bool retransmission)
{
    auto it = m_qps.find(qpn);
    if (it != m_qps.end() && !retransmission)
    {
        it->second.sent++;
    }
}

void
RdmaCcDctcp::OnAck(uint32_t qpn, uint32_t ackedPackets, Time)
{
    auto it = m_qps.find(qpn);
    if (it == m_qps.end() || it->second.line <= 0)
    {
        return;
    }
    Qp& q = it->second;
    q.acked += ackedPackets;
    q.batchAcked += ackedPackets;
    if (q.cwr && q.acked > q.cwrEnd)
    {
        // A packet sent after the cut is acknowledged: the cut has acted; react again.
        q.cwr = false;
    }
    if (!q.batchStarted)
    {
        q.batchStarted = true;
        q.batchEnd = q.sent;
        q.batchAcked = 0;
        q.batchMarked = 0;
        return;
    }
    if (q.acked < q.batchEnd)
    {
        return;
    }
    // DCTCP §3.1: once per window of data, alpha <- (1 - g) alpha + g F.
    const double f =
        q.batchAcked ? std::min(1.0, double(q.batchMarked) / double(q.batchAcked)) : 0.0;
    q.alpha = (1 - m_g) * q.alpha + m_g * f;
    m_alphaTrace(qpn, q.alpha);
    q.batchEnd = std::max(q.sent, q.acked + 1);
    q.batchAcked = 0;
    q.batchMarked = 0;
    if (!q.cwr)
    {
        q.rate = std::min(q.line, q.rate + static_cast<double>(m_rateAi.GetBitRate()));
        m_rateTrace(qpn, q.rate);
    }
}

void
RdmaCcDctcp::OnCnp(uint32_t qpn)
{
    auto it = m_qps.find(qpn);
    if (it == m_qps.end() || it->second.line <= 0)
    {
        return;
    }
    Qp& q = it->second;
    q.batchMarked++;
    if (q.cwr)
    {
        return;
    }
    // One cut per window (DCTCP §3.1, as TCP's CWR state): the packets already in flight
    // carry congestion the cut has not acted on yet.
    q.rate = std::max(static_cast<double>(m_minRate.GetBitRate()), q.rate * (1 - q.alpha / 2));
    q.cwr = true;
    q.cwrEnd = q.sent;
    m_decreases++;
    m_rateTrace(qpn, q.rate);
}

void
RdmaCcDctcp::OnBecn(uint32_t qpn)
{
    OnCnp(qpn);
}

bool
RdmaCcDctcp::OnEcnMarkedReceive(uint32_t)
{
    return true; // echo every mark: the sender needs the fraction, not just the event
}

uint64_t
RdmaCcDctcp::GetRate(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() || it->second.line <= 0
               ? 0
               : static_cast<uint64_t>(std::llround(it->second.rate));
}

uint64_t
RdmaCcDctcp::GetWindow(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    if (it == m_qps.end())
    {
        return m_window;
    }
    const Qp& q = it->second;
    const uint64_t w = q.window ? q.window : m_window;
    if (!w || !m_varWin || q.line <= 0)
    {
        return w;
    }
    return std::max<uint64_t>(1, static_cast<uint64_t>(double(w) * q.rate / q.line));
}

double
RdmaCcDctcp::GetCurrentRate(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.rate;
}

double
RdmaCcDctcp::GetAlpha(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.alpha;
}

} // namespace ns3
