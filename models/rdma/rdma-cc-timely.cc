#include "rdma-cc-timely.h"

#include "models/common/sim-clock.h"
#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaCcTimely);

TypeId
RdmaCcTimely::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaCcTimely")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaCcTimely>()
            .AddAttribute("Alpha", "EWMA weight of the newest RTT difference (0..1).",
                          DoubleValue(0.875), MakeDoubleAccessor(&RdmaCcTimely::m_alpha),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("Beta", "Multiplicative decrease factor (0..1).", DoubleValue(0.8),
                          MakeDoubleAccessor(&RdmaCcTimely::m_beta),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("TLow", "Below this RTT the rate only grows (time).",
                          TimeValue(MicroSeconds(50)), MakeTimeAccessor(&RdmaCcTimely::m_tLow),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("THigh", "Above this RTT the rate is cut in proportion (time).",
                          TimeValue(MicroSeconds(500)),
                          MakeTimeAccessor(&RdmaCcTimely::m_tHigh), MakeTimeChecker(Time(0)))
            .AddAttribute("MinRtt", "The gradient's normaliser, the fabric's minimum RTT (time).",
                          TimeValue(MicroSeconds(20)),
                          MakeTimeAccessor(&RdmaCcTimely::m_minRtt),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("Delta", "Additive increment (bit/s).", DataRateValue(DataRate("10Mbps")),
                          MakeDataRateAccessor(&RdmaCcTimely::m_delta), MakeDataRateChecker())
            .AddAttribute("HaiRounds",
                          "Non-positive gradients in a row before the increment is multiplied "
                          "by this number (hyper-active increase), count.",
                          UintegerValue(5), MakeUintegerAccessor(&RdmaCcTimely::m_haiRounds),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MinRate", "Lowest rate (bit/s).", DataRateValue(DataRate("100Mbps")),
                          MakeDataRateAccessor(&RdmaCcTimely::m_minRate), MakeDataRateChecker())
            .AddAttribute("SegmentBytes",
                          "Bytes per RTT-sample segment (TIMELY §4: 16-64 KB; a sample is a "
                          "segment's completion time less its serialization), bytes; 0 = use "
                          "the engine's per-acknowledgment RTT.",
                          UintegerValue(16384),
                          MakeUintegerAccessor(&RdmaCcTimely::m_segmentBytes),
                          MakeUintegerChecker<uint32_t>())
            .AddTraceSource("RttSample", "An RTT sample was taken: (qpn, rtt).",
                            MakeTraceSourceAccessor(&RdmaCcTimely::m_rttTrace),
                            "ns3::RdmaCcTimely::RttCallback")
            .AddTraceSource("Rate", "A QP's rate changed: (qpn, bit/s).",
                            MakeTraceSourceAccessor(&RdmaCcTimely::m_rateTrace),
                            "ns3::RdmaCcDcqcn::AlphaCallback");
    return tid;
}

void
RdmaCcTimely::OnQpStart(uint32_t qpn, uint64_t lineRateBps)
{
    Qp& q = m_qps[qpn];
    q = Qp();
    q.line = static_cast<double>(lineRateBps);
    q.rate = q.line;
}

void
RdmaCcTimely::OnQpStop(uint32_t qpn)
{
    m_qps.erase(qpn);
}

void
RdmaCcTimely::OnSend(uint32_t qpn, uint32_t bytes, bool retransmission)
{
    auto it = m_qps.find(qpn);
    if (m_segmentBytes == 0 || it == m_qps.end() || retransmission)
    {
        return;
    }
    Qp& q = it->second;
    if (q.openBytes == 0)
    {
        q.openFirstSent = SimClock::Now();
    }
    q.sent++;
    q.openBytes += bytes;
    if (q.openBytes >= m_segmentBytes)
    {
        const double lastOnWire = q.line > 0 ? bytes * 8.0 / q.line : 0.0;
        q.segments.push_back({q.sent, q.openBytes, q.openFirstSent,
                              SimClock::Now() - q.openFirstSent + Seconds(lastOnWire)});
        q.openBytes = 0;
    }
}

void
RdmaCcTimely::OnAck(uint32_t qpn, uint32_t ackedPackets, Time rtt)
{
    auto it = m_qps.find(qpn);
    if (it == m_qps.end())
    {
        return;
    }
    Qp& q = it->second;
    if (m_segmentBytes == 0)
    {
        if (rtt.IsStrictlyPositive())
        {
            Sample(qpn, q, rtt.GetSeconds());
        }
        return;
    }
    q.acked += ackedPackets;
    // TIMELY §4: a completed segment gives one sample, its completion time less the time its
    // first packet left less its own serialization at line rate (the NIC's send time of the
    // segment, which is not queueing). Several segments completed at once give the newest.
    double sample = -1;
    while (!q.segments.empty() && q.segments.front().endPacket <= q.acked)
    {
        const auto& seg = q.segments.front();
        const double serialization = q.line > 0 ? seg.bytes * 8.0 / q.line : 0.0;
        sample = (SimClock::Now() - seg.firstSent).GetSeconds() -
                 std::max(serialization, seg.sendTime.GetSeconds());
        q.segments.pop_front();
    }
    if (sample > 0)
    {
        Sample(qpn, q, sample);
    }
}

void
RdmaCcTimely::Sample(uint32_t qpn, Qp& q, double r)
{
    m_samples++;
    m_rttTrace(qpn, Seconds(r));
    if (q.prevRtt < 0)
    {
        q.prevRtt = r;
        return;
    }
    // TIMELY Algorithm 1.
    const double newDiff = r - q.prevRtt;
    q.prevRtt = r;
    q.rttDiff = (1 - m_alpha) * q.rttDiff + m_alpha * newDiff;
    const double gradient = q.rttDiff / m_minRtt.GetSeconds();
    const double delta = static_cast<double>(m_delta.GetBitRate());
    if (r < m_tLow.GetSeconds())
    {
        q.rate += delta;
        q.negativeRun = 0;
    }
    else if (r > m_tHigh.GetSeconds())
    {
        q.rate *= 1 - m_beta * (1 - m_tHigh.GetSeconds() / r);
        q.negativeRun = 0;
    }
    else if (gradient <= 0)
    {
        q.negativeRun++;
        q.rate += (q.negativeRun >= m_haiRounds ? m_haiRounds : 1) * delta;
    }
    else
    {
        q.rate *= 1 - m_beta * gradient;
        q.negativeRun = 0;
    }
    q.rate = std::min(q.line, std::max(static_cast<double>(m_minRate.GetBitRate()), q.rate));
    m_rateTrace(qpn, q.rate);
}

void
RdmaCcTimely::OnCnp(uint32_t)
{
}

void
RdmaCcTimely::OnBecn(uint32_t)
{
}

bool
RdmaCcTimely::OnEcnMarkedReceive(uint32_t)
{
    return false;
}

uint64_t
RdmaCcTimely::GetRate(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : static_cast<uint64_t>(std::llround(it->second.rate));
}

uint64_t
RdmaCcTimely::GetWindow(uint32_t) const
{
    return 0;
}

double
RdmaCcTimely::GetCurrentRate(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.rate;
}

} // namespace ns3
