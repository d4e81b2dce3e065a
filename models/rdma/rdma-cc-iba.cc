#include "rdma-cc-iba.h"

#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaCcIba");
NS_OBJECT_ENSURE_REGISTERED(RdmaCcIba);

namespace
{
/// CCTI_Timer counts in units of 1.024 us (annex A10, CACongestionEntry).
constexpr int64_t kCctiTimerUnitPs = 1024000;
} // namespace

TypeId
RdmaCcIba::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaCcIba")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaCcIba>()
            .AddAttribute("IrdUnit",
                          "Time base of the injection rate delay: a CCT entry delays the next "
                          "packet by (Multiplier << Shift) of these (the annex leaves it to the "
                          "implementation)",
                          TimeValue(NanoSeconds(1)),
                          MakeTimeAccessor(&RdmaCcIba::m_irdUnit),
                          MakeTimeChecker(PicoSeconds(1)))
            .AddAttribute("ReturnBecn",
                          "Whether this CA, as a destination, asks the engine to return a BECN "
                          "for FECN-marked packets (annex A10: a CA that supports CC does)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&RdmaCcIba::m_returnBecn),
                          MakeBooleanChecker())
            .AddAttribute("ControlMap",
                          "Initial Control_Map: bit n enables congestion control on SL n",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaCcIba::m_initControlMap),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("CctiTimer",
                          "Initial CCTI_Timer of every SL, units of 1.024 us (0: no decrease)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaCcIba::m_initTimer),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("CctiIncrease",
                          "Initial CCTI_Increase of every SL (table entries per BECN)",
                          UintegerValue(1),
                          MakeUintegerAccessor(&RdmaCcIba::m_initIncrease),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("CctiMin",
                          "Initial CCTI_Min of every SL (table index)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaCcIba::m_initMin),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("CctiLimit",
                          "Initial CCTI_Limit (last table index); with CctStep > 0 a linear "
                          "table of CctiLimit + 1 entries is built",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaCcIba::m_initLimit),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("CctStep",
                          "Initial table: entry i delays by i * CctStep IrdUnits (0: entries "
                          "all zero until a CongestionControlTable Set)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaCcIba::m_initStep),
                          MakeUintegerChecker<uint16_t>())
            .AddTraceSource("Ccti",
                            "A QP's congestion control table index changed: qpn, old, new",
                            MakeTraceSourceAccessor(&RdmaCcIba::m_cctiTrace),
                            "ns3::RdmaCcIba::CctiChangeCallback");
    return tid;
}

RdmaCcIba::RdmaCcIba()
{
    m_cct.resize(1); // entry 0: no delay
}

RdmaCcIba::~RdmaCcIba() = default;

void
RdmaCcIba::DoDispose()
{
    for (auto& t : m_timers)
    {
        t.Cancel();
    }
    m_qps.clear();
    RdmaCongestionControl::DoDispose();
}

void
RdmaCcIba::NotifyConstructionCompleted()
{
    RdmaCongestionControl::NotifyConstructionCompleted();
    SetLinearCct(static_cast<uint16_t>(m_initLimit + 1), static_cast<uint16_t>(m_initStep));
    IbCaCongestionEntry e;
    e.cctiTimer = static_cast<uint16_t>(m_initTimer);
    e.cctiIncrease = static_cast<uint8_t>(m_initIncrease);
    e.cctiMin = static_cast<uint8_t>(m_initMin);
    for (uint8_t sl = 0; sl < 16; ++sl)
    {
        SetCaEntry(sl, e);
    }
    SetControlMap(static_cast<uint16_t>(m_initControlMap));
}

// ---- configuration ---------------------------------------------------------------------------

void
RdmaCcIba::SetPortControl(uint16_t portControl)
{
    m_portControl = portControl;
}

uint16_t
RdmaCcIba::GetPortControl() const
{
    return m_portControl;
}

void
RdmaCcIba::SetControlMap(uint16_t map)
{
    m_controlMap = map;
    for (uint8_t sl = 0; sl < 16; ++sl)
    {
        if (SlControlled(sl))
        {
            ArmTimer(sl);
        }
        else
        {
            m_timers[sl].Cancel();
        }
    }
}

uint16_t
RdmaCcIba::GetControlMap() const
{
    return m_controlMap;
}

void
RdmaCcIba::SetCaEntry(uint8_t sl, const IbCaCongestionEntry& e)
{
    if (sl >= 16)
    {
        return;
    }
    const bool timerChanged = e.cctiTimer != m_ca[sl].cctiTimer;
    m_ca[sl] = e;
    if (timerChanged)
    {
        m_timers[sl].Cancel();
        ArmTimer(sl);
    }
    // A raised CCTI_Min applies at once: no flow may run faster than it allows.
    for (auto& [qpn, q] : m_qps)
    {
        if (q.sl == sl && q.ccti < e.cctiMin)
        {
            SetCcti(qpn, q, std::min<uint16_t>(e.cctiMin, m_cctiLimit));
        }
    }
}

IbCaCongestionEntry
RdmaCcIba::GetCaEntry(uint8_t sl) const
{
    return sl < 16 ? m_ca[sl] : IbCaCongestionEntry{};
}

void
RdmaCcIba::SetCctiLimit(uint16_t limit)
{
    m_cctiLimit = limit;
    if (m_cct.size() < size_t(limit) + 1)
    {
        m_cct.resize(size_t(limit) + 1);
    }
    for (auto& [qpn, q] : m_qps)
    {
        if (q.ccti > limit)
        {
            SetCcti(qpn, q, limit);
        }
    }
}

uint16_t
RdmaCcIba::GetCctiLimit() const
{
    return m_cctiLimit;
}

void
RdmaCcIba::SetCctEntries(uint16_t first, const std::vector<IbCctEntry>& entries)
{
    if (m_cct.size() < size_t(first) + entries.size())
    {
        m_cct.resize(size_t(first) + entries.size());
    }
    std::copy(entries.begin(), entries.end(), m_cct.begin() + first);
}

IbCctEntry
RdmaCcIba::GetCctEntry(uint16_t index) const
{
    return index < m_cct.size() ? m_cct[index] : IbCctEntry{};
}

void
RdmaCcIba::SetLinearCct(uint16_t n, uint16_t step)
{
    std::vector<IbCctEntry> t(n);
    for (uint16_t i = 0; i < n; ++i)
    {
        t[i].multiplier = static_cast<uint16_t>(std::min<uint32_t>(uint32_t(i) * step, 0x3FFF));
    }
    m_cct.clear();
    SetCctEntries(0, t);
    SetCctiLimit(n ? n - 1 : 0);
}

void
RdmaCcIba::SetQpSl(uint32_t qpn, uint8_t sl)
{
    m_qpSl[qpn] = sl & 0xF;
    auto it = m_qps.find(qpn);
    if (it != m_qps.end())
    {
        it->second.sl = sl & 0xF;
    }
}

uint16_t
RdmaCcIba::GetCcti(uint32_t qpn) const
{
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.ccti;
}

Time
RdmaCcIba::GetIrd(uint32_t qpn) const
{
    const IbCctEntry e = GetCctEntry(GetCcti(qpn));
    return m_irdUnit * int64_t(uint32_t(e.multiplier) << e.shift);
}

bool
RdmaCcIba::SlControlled(uint8_t sl) const
{
    return (m_controlMap >> sl) & 1;
}

// ---- the per-SL timer ------------------------------------------------------------------------

void
RdmaCcIba::ArmTimer(uint8_t sl)
{
    if (m_timers[sl].IsRunning() || !SlControlled(sl) || m_ca[sl].cctiTimer == 0)
    {
        return;
    }
    // The annex's timer runs freely per SL; this one runs only while some QP on the SL is
    // above CCTI_Min (only the phase differs), so an idle policy leaves no events behind.
    bool above = false;
    for (const auto& [qpn, q] : m_qps)
    {
        above = above || (q.sl == sl && q.ccti > m_ca[sl].cctiMin);
    }
    if (!above)
    {
        return;
    }
    m_timers[sl] = Simulator::Schedule(PicoSeconds(kCctiTimerUnitPs * m_ca[sl].cctiTimer),
                                       &RdmaCcIba::TimerExpired,
                                       this,
                                       sl);
}

void
RdmaCcIba::TimerExpired(uint8_t sl)
{
    // Annex A10: each CCTI_Timer expiry lowers the index of every flow on the SL by one, not
    // below CCTI_Min; the timer then restarts.
    for (auto& [qpn, q] : m_qps)
    {
        if (q.sl == sl && q.ccti > m_ca[sl].cctiMin)
        {
            SetCcti(qpn, q, q.ccti - 1);
        }
    }
    ArmTimer(sl);
}

void
RdmaCcIba::SetCcti(uint32_t qpn, QpState& q, uint16_t v)
{
    if (v != q.ccti)
    {
        const uint16_t old = q.ccti;
        q.ccti = v;
        m_cctiTrace(qpn, old, v);
    }
}

// ---- the RdmaCongestionControl hooks ---------------------------------------------------------

void
RdmaCcIba::OnQpStart(uint32_t qpn, uint64_t lineRateBps)
{
    QpState q;
    q.lineRate = lineRateBps;
    auto sl = m_qpSl.find(qpn);
    q.sl = sl == m_qpSl.end() ? 0 : sl->second;
    q.ccti = std::min<uint16_t>(m_ca[q.sl].cctiMin, m_cctiLimit);
    m_qps[qpn] = q;
}

void
RdmaCcIba::OnQpStop(uint32_t qpn)
{
    m_qps.erase(qpn);
}

void
RdmaCcIba::OnSend(uint32_t, uint32_t, bool)
{
}

void
RdmaCcIba::OnAck(uint32_t, uint32_t, Time)
{
}

void
RdmaCcIba::OnCnp(uint32_t qpn)
{
    // An InfiniBand CNP (opcode 0x80) carries BECN: the unreliable types' notification.
    OnBecn(qpn);
}

void
RdmaCcIba::OnBecn(uint32_t qpn)
{
    ++m_becns;
    auto it = m_qps.find(qpn);
    if (it == m_qps.end())
    {
        return;
    }
    QpState& q = it->second;
    if (!SlControlled(q.sl))
    {
        return; // Control_Map: congestion control is off for this SL
    }
    const uint32_t raised = uint32_t(q.ccti) + m_ca[q.sl].cctiIncrease;
    SetCcti(qpn, q, static_cast<uint16_t>(std::min<uint32_t>(raised, m_cctiLimit)));
    ArmTimer(q.sl);
}

bool
RdmaCcIba::OnEcnMarkedReceive(uint32_t)
{
    ++m_fecns;
    return m_returnBecn;
}

uint64_t
RdmaCcIba::GetRate(uint32_t) const
{
    return 0;
}

uint64_t
RdmaCcIba::GetWindow(uint32_t) const
{
    return 0;
}

Time
RdmaCcIba::GetPacketGap(uint32_t qpn, uint32_t bytes) const
{
    auto it = m_qps.find(qpn);
    if (it == m_qps.end() || it->second.ccti == 0)
    {
        return Time(0);
    }
    const IbCctEntry e = GetCctEntry(it->second.ccti);
    const Time ird = m_irdUnit * int64_t(uint32_t(e.multiplier) << e.shift);
    if (ird.IsZero())
    {
        return Time(0);
    }
    // The delay is inserted between packets: the next may start after this one has been sent
    // at the line rate and the IRD has passed.
    Time wire(0);
    if (it->second.lineRate)
    {
        wire = PicoSeconds(static_cast<int64_t>(
            std::llround(double(bytes) * 8e12 / double(it->second.lineRate))));
    }
    return wire + ird;
}

} // namespace ns3
