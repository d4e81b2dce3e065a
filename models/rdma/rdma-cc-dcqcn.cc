#include "rdma-cc-dcqcn.h"

#include "models/common/sim-clock.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaCcDcqcn");
NS_OBJECT_ENSURE_REGISTERED(RdmaCcDcqcn);
NS_OBJECT_ENSURE_REGISTERED(RdmaCcDcqcnPaper);
NS_OBJECT_ENSURE_REGISTERED(RdmaCcDcqcnMlx);

TypeId
RdmaCcDcqcn::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaCcDcqcn")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Cnuas")
            .AddTraceSource("Rate",
                            "A QP's current or target rate changed: (qpn, Rc, Rt), bit/s.",
                            MakeTraceSourceAccessor(&RdmaCcDcqcn::m_rateTrace),
                            "ns3::RdmaCcDcqcn::RateCallback")
            .AddTraceSource("Alpha",
                            "A QP's alpha changed: (qpn, alpha).",
                            MakeTraceSourceAccessor(&RdmaCcDcqcn::m_alphaTrace),
                            "ns3::RdmaCcDcqcn::AlphaCallback");
    return tid;
}

TypeId
RdmaCcDcqcn::AddAttributes(TypeId tid, const Defaults& d)
{
    return tid
        .AddAttribute("G",
                      "EWMA gain g of alpha (dimensionless, 0..1).",
                      DoubleValue(d.g),
                      MakeDoubleAccessor(&RdmaCcDcqcn::m_g),
                      MakeDoubleChecker<double>(0.0, 1.0))
        .AddAttribute("InitialAlpha",
                      "Alpha of a QP when it starts (paper) or at its first CNP (firmware), "
                      "dimensionless.",
                      DoubleValue(d.initialAlpha),
                      MakeDoubleAccessor(&RdmaCcDcqcn::m_initialAlpha),
                      MakeDoubleChecker<double>(0.0, 1.0))
        .AddAttribute("AlphaInterval",
                      "Paper: K, alpha decays by (1-g) when no CNP arrived for this long; "
                      "firmware: the alpha update tick (time).",
                      TimeValue(d.alphaInterval),
                      MakeTimeAccessor(&RdmaCcDcqcn::m_alphaInterval),
                      MakeTimeChecker(NanoSeconds(1)))
        .AddAttribute("DecreaseInterval",
                      "Firmware: the tick on which a CNP seen in the period cuts the rate "
                      "(time; unused by the paper form, which cuts on each CNP).",
                      TimeValue(d.decreaseInterval),
                      MakeTimeAccessor(&RdmaCcDcqcn::m_decreaseInterval),
                      MakeTimeChecker(NanoSeconds(1)))
        .AddAttribute("IncreaseTimer",
                      "Paper: T, the rate-increase timer; firmware: the RP timer (time).",
                      TimeValue(d.increaseTimer),
                      MakeTimeAccessor(&RdmaCcDcqcn::m_increaseTimer),
                      MakeTimeChecker(NanoSeconds(1)))
        .AddAttribute("ByteCounter",
                      "Paper: B, bytes sent per byte-counter increase event (0: no byte "
                      "counter, as in the firmware form), bytes.",
                      UintegerValue(d.byteCounter),
                      MakeUintegerAccessor(&RdmaCcDcqcn::m_byteCounter),
                      MakeUintegerChecker<uint64_t>())
        .AddAttribute("F",
                      "Fast-recovery rounds before additive increase (count).",
                      UintegerValue(d.f),
                      MakeUintegerAccessor(&RdmaCcDcqcn::m_f),
                      MakeUintegerChecker<uint32_t>())
        .AddAttribute("RateAi",
                      "Additive-increase step R_AI of the target rate (bit/s).",
                      DataRateValue(d.rateAi),
                      MakeDataRateAccessor(&RdmaCcDcqcn::m_rateAi),
                      MakeDataRateChecker())
        .AddAttribute("RateHai",
                      "Hyper-increase step R_HAI of the target rate (bit/s).",
                      DataRateValue(d.rateHai),
                      MakeDataRateAccessor(&RdmaCcDcqcn::m_rateHai),
                      MakeDataRateChecker())
        .AddAttribute("MinRate",
                      "Lowest rate a cut leaves (bit/s).",
                      DataRateValue(d.minRate),
                      MakeDataRateAccessor(&RdmaCcDcqcn::m_minRate),
                      MakeDataRateChecker())
        .AddAttribute("ClampTargetRate",
                      "Firmware: every cut sets Rt = Rc (else only cuts after an increase "
                      "round do).",
                      BooleanValue(d.clampTargetRate),
                      MakeBooleanAccessor(&RdmaCcDcqcn::m_clamp),
                      MakeBooleanChecker())
        .AddAttribute("RateOnFirstCnp",
                      "Firmware: Rc and Rt become this fraction of Rc at a QP's first CNP "
                      "(1 keeps the rate), dimensionless.",
                      DoubleValue(d.rateOnFirstCnp),
                      MakeDoubleAccessor(&RdmaCcDcqcn::m_rateOnFirstCnp),
                      MakeDoubleChecker<double>(0.0, 1.0))
        .AddAttribute("MinDecreaseFactor",
                      "Smallest factor one cut may multiply Rc by (0.5 caps a cut at half, "
                      "the NIC's rpg_min_dec_fac; 0 leaves alpha/2 alone), dimensionless.",
                      DoubleValue(d.minDecreaseFactor),
                      MakeDoubleAccessor(&RdmaCcDcqcn::m_minDecreaseFactor),
                      MakeDoubleChecker<double>(0.0, 1.0))
        .AddAttribute("CnpInterval",
                      "Notification point: least time between two CNPs for one QP "
                      "(paper: N = 50 us), time; 0 sends one per marked packet.",
                      TimeValue(d.cnpInterval),
                      MakeTimeAccessor(&RdmaCcDcqcn::m_cnpInterval),
                      MakeTimeChecker(Time(0)))
        .AddAttribute("HyperIncreaseScaled",
                      "Hyper increase adds R_HAI times the rounds past F (QCN's rule) "
                      "instead of R_HAI once.",
                      BooleanValue(d.hyperScaled),
                      MakeBooleanAccessor(&RdmaCcDcqcn::m_hyperScaled),
                      MakeBooleanChecker())
        .AddAttribute("HyperIncreaseHalving",
                      "Paper form: in hyper increase (both counters past F) the increase "
                      "timer runs at T/2 and the byte counter at B/2 (QCN, 802.1Qau; ns3-rdma).",
                      BooleanValue(d.hyperHalving),
                      MakeBooleanAccessor(&RdmaCcDcqcn::m_hyperHalving),
                      MakeBooleanChecker())
        .AddAttribute("AlphaBeforeCut",
                      "Paper form: a CNP updates alpha first and cuts with the new alpha (as "
                      "ns3-rdma does) instead of cutting with the old one (the paper's order).",
                      BooleanValue(d.alphaBeforeCut),
                      MakeBooleanAccessor(&RdmaCcDcqcn::m_alphaBeforeCut),
                      MakeBooleanChecker())
        .AddAttribute("TargetRateHeuristic",
                      "Paper form: ns3-rdma's heuristic, at a CNP with no increase round since "
                      "the last cut, Rt > 10 Rc makes Rt = Rt / 8.",
                      BooleanValue(d.targetHeuristic),
                      MakeBooleanAccessor(&RdmaCcDcqcn::m_targetHeuristic),
                      MakeBooleanChecker())
        .AddAttribute("Window",
                      "Bytes a QP may have in flight, 0 = none (the HPCC paper's dcqcn_vwin "
                      "runs: HAS_WIN with the window = the base-RTT BDP), bytes.",
                      UintegerValue(0),
                      MakeUintegerAccessor(&RdmaCcDcqcn::m_window),
                      MakeUintegerChecker<uint64_t>())
        .AddAttribute("VariableWindow",
                      "Scale Window by Rc / line rate (the HPCC simulator's VAR_WIN).",
                      BooleanValue(false),
                      MakeBooleanAccessor(&RdmaCcDcqcn::m_varWin),
                      MakeBooleanChecker());
}

TypeId
RdmaCcDcqcnPaper::GetTypeId()
{
    Defaults d;
    d.g = 1.0 / 256;
    d.initialAlpha = 1.0;
    d.alphaInterval = MicroSeconds(55);
    d.decreaseInterval = MicroSeconds(50);
    d.increaseTimer = MicroSeconds(55);
    d.byteCounter = 10 * 1000 * 1000;
    d.f = 5;
    d.rateAi = DataRate("40Mbps");
    d.rateHai = DataRate("400Mbps");
    d.minRate = DataRate("10Mbps");
    d.clampTargetRate = true;
    d.rateOnFirstCnp = 1.0;
    d.minDecreaseFactor = 0.0;
    d.cnpInterval = MicroSeconds(50);
    d.hyperScaled = true;
    d.hyperHalving = true;
    d.alphaBeforeCut = false;
    d.targetHeuristic = false;
    static TypeId tid = AddAttributes(TypeId("ns3::RdmaCcDcqcnPaper")
                                          .SetParent<RdmaCcDcqcn>()
                                          .SetGroupName("Cnuas")
                                          .AddConstructor<RdmaCcDcqcnPaper>(),
                                      d);
    return tid;
}

RdmaCcDcqcnPaper::RdmaCcDcqcnPaper()
{
    m_firmware = false;
}

TypeId
RdmaCcDcqcnMlx::GetTypeId()
{
    Defaults d;
    d.g = 1.0 / 256;
    d.initialAlpha = 1.0;
    d.alphaInterval = MicroSeconds(1);
    d.decreaseInterval = MicroSeconds(4);
    d.increaseTimer = MicroSeconds(300);
    d.byteCounter = 0;
    d.f = 1;
    d.rateAi = DataRate("20Mbps");
    d.rateHai = DataRate("200Mbps");
    d.minRate = DataRate("1Gbps");
    d.clampTargetRate = false;
    d.rateOnFirstCnp = 1.0;
    d.minDecreaseFactor = 0.0;
    d.cnpInterval = MicroSeconds(4);
    d.hyperScaled = false;
    d.hyperHalving = false;
    d.alphaBeforeCut = false;
    d.targetHeuristic = false;
    static TypeId tid = AddAttributes(TypeId("ns3::RdmaCcDcqcnMlx")
                                          .SetParent<RdmaCcDcqcn>()
                                          .SetGroupName("Cnuas")
                                          .AddConstructor<RdmaCcDcqcnMlx>(),
                                      d);
    return tid;
}

RdmaCcDcqcnMlx::RdmaCcDcqcnMlx()
{
    m_firmware = true;
}

RdmaCcDcqcn::RdmaCcDcqcn() = default;
RdmaCcDcqcn::~RdmaCcDcqcn() = default;

void
RdmaCcDcqcn::DoDispose()
{
    for (auto& [qpn, q] : m_qps)
    {
        q.alphaEvent.Cancel();
        q.decreaseEvent.Cancel();
        q.increaseEvent.Cancel();
    }
    m_qps.clear();
    RdmaCongestionControl::DoDispose();
}

RdmaCcDcqcn::Qp*
RdmaCcDcqcn::Find(uint32_t qpn)
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? nullptr : &it->second;
}

const RdmaCcDcqcn::Qp*
RdmaCcDcqcn::Find(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? nullptr : &it->second;
}

void
RdmaCcDcqcn::OnQpStart(uint32_t qpn, uint64_t lineRateBps)
{
    Qp& q = m_qps[qpn];
    q.alphaEvent.Cancel();
    q.decreaseEvent.Cancel();
    q.increaseEvent.Cancel();
    const Time lastCnp = q.lastCnpSent; // the notification point's memory survives a restart
    const uint64_t window = q.window;
    q = Qp();
    q.lastCnpSent = lastCnp;
    q.window = window;
    // DCQCN starts every flow at line rate: there is no slow start (paper §3.1).
    q.line = static_cast<double>(lineRateBps);
    q.rc = q.rt = q.line;
    q.alpha = m_initialAlpha;
}

void
RdmaCcDcqcn::OnQpStop(uint32_t qpn)
{
    Qp* q = Find(qpn);
    if (q)
    {
        q->alphaEvent.Cancel();
        q->decreaseEvent.Cancel();
        q->increaseEvent.Cancel();
        m_qps.erase(qpn);
    }
}

void
RdmaCcDcqcn::OnSend(uint32_t qpn, uint32_t bytes, bool)
{
    Qp* q = Find(qpn);
    if (!q || m_firmware || m_byteCounter == 0 || !q->cnpSeen)
    {
        return;
    }
    // Paper §3.1: every B bytes sent is an increase event of the byte counter (B/2 in hyper
    // increase with HyperIncreaseHalving, as QCN's byte counter).
    q->bytes += bytes;
    for (;;)
    {
        const bool half = m_hyperHalving && InHyper(*q);
        const uint64_t limit = half ? std::max<uint64_t>(1, m_byteCounter / 2) : m_byteCounter;
        if (q->bytes < limit)
        {
            break;
        }
        q->bytes -= limit;
        q->byteCount++;
        Increase(qpn, *q);
    }
}

void
RdmaCcDcqcn::OnAck(uint32_t, uint32_t, Time)
{
}

void
RdmaCcDcqcn::OnBecn(uint32_t qpn)
{
    OnCnp(qpn); // an InfiniBand BECN is the same signal
}

void
RdmaCcDcqcn::SetAlpha(uint32_t qpn, Qp& q, double a)
{
    q.alpha = a;
    m_alphaTrace(qpn, a);
}

void
RdmaCcDcqcn::Report(uint32_t qpn, const Qp& q)
{
    m_rateTrace(qpn, q.rc, q.rt);
}

void
RdmaCcDcqcn::Cut(uint32_t qpn, Qp& q)
{
    double factor = 1.0 - q.alpha / 2;
    factor = std::max(factor, m_minDecreaseFactor);
    q.rc = std::max(static_cast<double>(m_minRate.GetBitRate()), q.rc * factor);
    m_decreases++;
}

void
RdmaCcDcqcn::OnCnp(uint32_t qpn)
{
    Qp* q = Find(qpn);
    if (!q)
    {
        return;
    }
    m_cnpsReceived++;
    if (!m_firmware)
    {
        // Paper §3.1, reaction point on a CNP: Rt = Rc, Rc = Rc (1 - alpha/2), then
        // alpha = (1 - g) alpha + g; both increase counters and the byte count restart, and
        // so do the alpha timer (K) and the increase timer (T).
        q->cnpSeen = true;
        const bool increased = q->timerCount != 0 || q->byteCount != 0;
        if (m_clamp || increased)
        {
            q->rt = q->rc;
        }
        if (m_alphaBeforeCut)
        {
            SetAlpha(qpn, *q, (1 - m_g) * q->alpha + m_g);
        }
        Cut(qpn, *q);
        if (!m_alphaBeforeCut)
        {
            SetAlpha(qpn, *q, (1 - m_g) * q->alpha + m_g);
        }
        if (m_targetHeuristic && !increased && q->rt > 10 * q->rc)
        {
            q->rt /= 8; // ns3-rdma: repeated cuts left the target far above the rate
        }
        q->timerCount = 0;
        q->byteCount = 0;
        q->bytes = 0;
        q->alphaEvent.Cancel();
        q->alphaEvent =
            Simulator::Schedule(m_alphaInterval, &RdmaCcDcqcn::AlphaTick, this, qpn);
        q->increaseEvent.Cancel();
        q->increaseEvent =
            Simulator::Schedule(m_increaseTimer, &RdmaCcDcqcn::IncreaseTimer, this, qpn);
        Report(qpn, *q);
        return;
    }
    // Firmware: the CNP only raises flags; the ticks act on them.
    q->cnpInAlphaPeriod = true;
    q->cnpInDecreasePeriod = true;
    if (!q->cnpSeen)
    {
        // First CNP of the QP: alpha starts at InitialAlpha, the rate at RateOnFirstCnp of
        // itself, and the alpha and decrease ticks start.
        q->cnpSeen = true;
        SetAlpha(qpn, *q, m_initialAlpha);
        q->rc *= m_rateOnFirstCnp;
        q->rt = q->rc;
        q->alphaEvent = Simulator::Schedule(m_alphaInterval, &RdmaCcDcqcn::AlphaTick, this, qpn);
        q->decreaseEvent =
            Simulator::Schedule(m_decreaseInterval, &RdmaCcDcqcn::DecreaseTick, this, qpn);
        Report(qpn, *q);
    }
}

void
RdmaCcDcqcn::AlphaTick(uint32_t qpn)
{
    Qp* q = Find(qpn);
    if (!q)
    {
        return;
    }
    if (!m_firmware)
    {
        // Paper: K passed without a CNP (a CNP restarts this timer): alpha decays.
        SetAlpha(qpn, *q, (1 - m_g) * q->alpha);
    }
    else
    {
        SetAlpha(qpn, *q, (1 - m_g) * q->alpha + (q->cnpInAlphaPeriod ? m_g : 0.0));
        q->cnpInAlphaPeriod = false;
    }
    q->alphaEvent = Simulator::Schedule(m_alphaInterval, &RdmaCcDcqcn::AlphaTick, this, qpn);
}

void
RdmaCcDcqcn::DecreaseTick(uint32_t qpn)
{
    Qp* q = Find(qpn);
    if (!q)
    {
        return;
    }
    if (q->cnpInDecreasePeriod)
    {
        // Firmware: a CNP in the last period cuts once; the target follows the current rate
        // if clamping is on or an increase round happened since the last cut.
        if (m_clamp || q->timerCount != 0)
        {
            q->rt = q->rc;
        }
        Cut(qpn, *q);
        q->timerCount = 0;
        q->increaseEvent.Cancel();
        q->increaseEvent =
            Simulator::Schedule(m_increaseTimer, &RdmaCcDcqcn::IncreaseTimer, this, qpn);
        q->cnpInDecreasePeriod = false;
        Report(qpn, *q);
    }
    q->decreaseEvent =
        Simulator::Schedule(m_decreaseInterval, &RdmaCcDcqcn::DecreaseTick, this, qpn);
}

void
RdmaCcDcqcn::IncreaseTimer(uint32_t qpn)
{
    Qp* q = Find(qpn);
    if (!q)
    {
        return;
    }
    if (!m_firmware)
    {
        q->timerCount++;
    }
    Increase(qpn, *q);
    if (m_firmware)
    {
        q->timerCount++; // the firmware counts the round after acting on it
    }
    // QCN's timer runs at T/2 in hyper increase (HyperIncreaseHalving, paper form only).
    const Time period = !m_firmware && m_hyperHalving && InHyper(*q) ? m_increaseTimer / 2
                                                                      : m_increaseTimer;
    q->increaseEvent = Simulator::Schedule(period, &RdmaCcDcqcn::IncreaseTimer, this, qpn);
}

void
RdmaCcDcqcn::Increase(uint32_t qpn, Qp& q)
{
    // Three phases (paper §3.1 after QCN, 802.1Qau): fast recovery moves Rc halfway to Rt;
    // additive increase first raises Rt by R_AI; hyper increase by R_HAI.
    // Paper: by the two counters, fast recovery while both are below F, hyper increase when
    // both are past F, additive otherwise. Firmware: by the timer rounds alone, additive at
    // exactly F, hyper beyond.
    uint32_t lo = q.timerCount;
    uint32_t hi = q.timerCount;
    if (!m_firmware && m_byteCounter != 0)
    {
        lo = std::min(q.timerCount, q.byteCount);
        hi = std::max(q.timerCount, q.byteCount);
    }
    const bool fast = m_firmware ? q.timerCount < m_f : hi < m_f;
    const bool hyper = m_firmware ? q.timerCount > m_f : lo > m_f;
    if (!fast)
    {
        double step = static_cast<double>(m_rateAi.GetBitRate());
        if (hyper)
        {
            const uint32_t rounds = m_hyperScaled ? lo - m_f : 1;
            step = static_cast<double>(m_rateHai.GetBitRate()) * rounds;
        }
        q.rt = std::min(q.line, q.rt + step);
    }
    q.rc = std::min(q.line, (q.rt + q.rc) / 2);
    Report(qpn, q);
}

bool
RdmaCcDcqcn::InHyper(const Qp& q) const
{
    const uint32_t lo =
        m_byteCounter != 0 ? std::min(q.timerCount, q.byteCount) : q.timerCount;
    return lo > m_f;
}

bool
RdmaCcDcqcn::OnEcnMarkedReceive(uint32_t qpn)
{
    // Notification point (paper §3.1): at most one CNP per QP per CnpInterval.
    Qp& q = m_qps[qpn]; // the responder side of a QP may never have started sending
    const Time now = SimClock::Now();
    if (q.lastCnpSent >= Time(0) && now - q.lastCnpSent < m_cnpInterval)
    {
        m_cnpsSuppressed++;
        return false;
    }
    q.lastCnpSent = now;
    m_cnpsRequested++;
    return true;
}

uint64_t
RdmaCcDcqcn::GetRate(uint32_t qpn) const
{
    const Qp* q = Find(qpn);
    return q && q->line > 0 ? static_cast<uint64_t>(std::llround(q->rc)) : 0;
}

uint64_t
RdmaCcDcqcn::GetWindow(uint32_t qpn) const
{
    const Qp* q = Find(qpn);
    const uint64_t w = q && q->window ? q->window : m_window;
    if (!w || !m_varWin || !q || q->line <= 0)
    {
        return w;
    }
    // HPCC simulator (rdma-queue-pair.cc GetWin): the BDP window shrinks with the rate.
    return std::max<uint64_t>(1, static_cast<uint64_t>(double(w) * q->rc / q->line));
}

void
RdmaCcDcqcn::SetQpWindow(uint32_t qpn, uint64_t bytes)
{
    m_qps[qpn].window = bytes;
}

double
RdmaCcDcqcn::GetCurrentRate(uint32_t qpn) const
{
    const Qp* q = Find(qpn);
    return q ? q->rc : 0;
}

double
RdmaCcDcqcn::GetTargetRate(uint32_t qpn) const
{
    const Qp* q = Find(qpn);
    return q ? q->rt : 0;
}

double
RdmaCcDcqcn::GetAlpha(uint32_t qpn) const
{
    const Qp* q = Find(qpn);
    return q ? q->alpha : 0;
}

} // namespace ns3
