#include "rack-electrical-model.h"

#include "ns3/abort.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/nstime.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RackElectricalModel");
NS_OBJECT_ENSURE_REGISTERED(RackLoadProfile);
NS_OBJECT_ENSURE_REGISTERED(RackConstantLoad);
NS_OBJECT_ENSURE_REGISTERED(RackStepLoad);
NS_OBJECT_ENSURE_REGISTERED(RackCallbackLoad);
NS_OBJECT_ENSURE_REGISTERED(RackElectricalModel);

TypeId
RackLoadProfile::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RackLoadProfile").SetParent<Object>().SetGroupName("Cnuas");
    return tid;
}

TypeId
RackConstantLoad::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RackConstantLoad")
                            .SetParent<RackLoadProfile>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RackConstantLoad>()
                            .AddAttribute("Power",
                                          "Load on the busbar, W.",
                                          DoubleValue(0),
                                          MakeDoubleAccessor(&RackConstantLoad::m_power),
                                          MakeDoubleChecker<double>(0));
    return tid;
}

double
RackConstantLoad::GetPower(Time) const
{
    return m_power;
}

TypeId
RackStepLoad::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RackStepLoad")
                            .SetParent<RackLoadProfile>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RackStepLoad>()
                            .AddAttribute("InitialPower",
                                          "Load before the first step, W.",
                                          DoubleValue(0),
                                          MakeDoubleAccessor(&RackStepLoad::m_initial),
                                          MakeDoubleChecker<double>(0));
    return tid;
}

void
RackStepLoad::AddStep(Time at, double watts)
{
    NS_ABORT_MSG_IF(!(watts >= 0) || !std::isfinite(watts), "RackStepLoad: bad load " << watts);
    m_steps[at] = watts;
}

double
RackStepLoad::GetPower(Time t) const
{
    auto it = m_steps.upper_bound(t);
    if (it == m_steps.begin())
    {
        return m_initial;
    }
    return std::prev(it)->second;
}

TypeId
RackCallbackLoad::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RackCallbackLoad")
                            .SetParent<RackLoadProfile>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RackCallbackLoad>();
    return tid;
}

void
RackCallbackLoad::SetFunction(Callback<double, Time> f)
{
    m_f = f;
}

double
RackCallbackLoad::GetPower(Time t) const
{
    if (m_f.IsNull())
    {
        return 0;
    }
    const double p = m_f(t);
    // A bad value from user code is not worth a crash: no load, logged.
    if (!(p >= 0) || !std::isfinite(p))
    {
        NS_LOG_WARN("RackCallbackLoad: ignoring load " << p << " W at " << t);
        return 0;
    }
    return p;
}

// ---- RackElectricalModel -------------------------------------------------------------------

TypeId
RackElectricalModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RackElectricalModel")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<RackElectricalModel>()
            .AddAttribute("BusbarVoltage",
                          "Busbar voltage the PSUs regulate to, V (ORv3 rectifiers: 51 V, or 48 V "
                          "with the 51V/48V setting).",
                          DoubleValue(51.0),
                          MakeDoubleAccessor(&RackElectricalModel::m_busbarVoltage),
                          MakeDoubleChecker<double>(1, 100))
            .AddAttribute("BackupVoltage",
                          "Busbar voltage while the BBUs carry the load, V.",
                          DoubleValue(48.0),
                          MakeDoubleAccessor(&RackElectricalModel::m_backupVoltage),
                          MakeDoubleChecker<double>(1, 100))
            .AddAttribute("PsuRatedPower",
                          "Rated output of one PSU, W (ORv3 shelf: 6 x 3 kW).",
                          DoubleValue(3000.0),
                          MakeDoubleAccessor(&RackElectricalModel::m_psuRated),
                          MakeDoubleChecker<double>(1))
            .AddAttribute("EfficiencyCurve",
                          "PSU efficiency against load fraction, 'fraction:efficiency' pairs "
                          "separated by ';', interpolated linearly, held flat outside.",
                          StringValue("0.05:0.85;0.1:0.92;0.2:0.955;0.5:0.975;1.0:0.965"),
                          MakeStringAccessor(&RackElectricalModel::SetEfficiencyCurve,
                                             &RackElectricalModel::GetEfficiencyCurve),
                          MakeStringChecker())
            .AddAttribute("AcVoltage",
                          "AC input voltage of the PSUs, V rms.",
                          DoubleValue(230.0),
                          MakeDoubleAccessor(&RackElectricalModel::m_acVoltage),
                          MakeDoubleChecker<double>(1))
            .AddAttribute("AcFrequency",
                          "AC input frequency, Hz.",
                          DoubleValue(50.0),
                          MakeDoubleAccessor(&RackElectricalModel::m_acFrequency),
                          MakeDoubleChecker<double>(1))
            .AddAttribute("PowerFactor",
                          "PSU input power factor.",
                          DoubleValue(0.99),
                          MakeDoubleAccessor(&RackElectricalModel::m_powerFactor),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("AmbientTemperature",
                          "Inlet air temperature, deg C.",
                          DoubleValue(25.0),
                          MakeDoubleAccessor(&RackElectricalModel::m_ambient),
                          MakeDoubleChecker<double>(-40, 100))
            .AddAttribute("ThermalResistance",
                          "PSU outlet temperature rise per watt of loss, K/W.",
                          DoubleValue(0.15),
                          MakeDoubleAccessor(&RackElectricalModel::m_thermalResistance),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("ThermalTimeConstant",
                          "Time constant of the PSU and BBU temperatures.",
                          TimeValue(Seconds(60)),
                          MakeTimeAccessor(&RackElectricalModel::m_thermalTau),
                          MakeTimeChecker(MilliSeconds(1)))
            .AddAttribute("FanFailureFactor",
                          "Thermal resistance multiplier of a PSU whose fan failed.",
                          DoubleValue(3.0),
                          MakeDoubleAccessor(&RackElectricalModel::m_fanFailureFactor),
                          MakeDoubleChecker<double>(1))
            .AddAttribute("FanRpmIdle",
                          "PSU fan speed at no load, rpm (rising linearly to FanRpmFull).",
                          DoubleValue(4000),
                          MakeDoubleAccessor(&RackElectricalModel::m_fanRpmIdle),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("FanRpmFull",
                          "PSU fan speed at rated load, rpm.",
                          DoubleValue(16000),
                          MakeDoubleAccessor(&RackElectricalModel::m_fanRpmFull),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("BbuCapacity",
                          "BBU pack capacity, Ah.",
                          DoubleValue(6.0),
                          MakeDoubleAccessor(&RackElectricalModel::m_bbuCapacityAh),
                          MakeDoubleChecker<double>(0.001))
            .AddAttribute("BbuCells",
                          "Series cells per BBU pack (the ORv3 BBU map has 11 cell voltages).",
                          UintegerValue(11),
                          MakeUintegerAccessor(&RackElectricalModel::m_bbuCells),
                          MakeUintegerChecker<uint32_t>(1, 32))
            .AddAttribute("BbuChargeCurrent",
                          "Charging current of a BBU below full charge, A.",
                          DoubleValue(1.5),
                          MakeDoubleAccessor(&RackElectricalModel::m_bbuChargeCurrent),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("BbuThermalCoefficient",
                          "BBU temperature rise per watt exchanged, K/W.",
                          DoubleValue(0.004),
                          MakeDoubleAccessor(&RackElectricalModel::m_bbuThermal),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("MaxStep",
                          "Longest integration step of charge and temperature.",
                          TimeValue(Seconds(1)),
                          MakeTimeAccessor(&RackElectricalModel::m_maxStep),
                          MakeTimeChecker(MicroSeconds(1)))
            .AddAttribute("LoadProfile",
                          "The hosts' load (an ns3::RackLoadProfile); none: no load.",
                          PointerValue(),
                          MakePointerAccessor(&RackElectricalModel::m_load),
                          MakePointerChecker<RackLoadProfile>())
            .AddTraceSource("Fault",
                            "A fault was injected or cleared: (fault, shelf or BBU, slot, on).",
                            MakeTraceSourceAccessor(&RackElectricalModel::m_faultTrace),
                            "ns3::RackElectricalModel::FaultCallback")
            .AddTraceSource("BbuMode",
                            "A BBU started or stopped charging or discharging: (bbu, charging, "
                            "discharging).",
                            MakeTraceSourceAccessor(&RackElectricalModel::m_bbuModeTrace),
                            "ns3::RackElectricalModel::BbuModeCallback");
    return tid;
}

RackElectricalModel::RackElectricalModel()
{
    SetEfficiencyCurve("0.05:0.85;0.1:0.92;0.2:0.955;0.5:0.975;1.0:0.965");
}

void
RackElectricalModel::DoDispose()
{
    m_load = nullptr;
    Object::DoDispose();
}

void
RackElectricalModel::SetEfficiencyCurve(std::string text)
{
    std::vector<std::pair<double, double>> curve;
    std::istringstream in(text);
    std::string item;
    while (std::getline(in, item, ';'))
    {
        const auto colon = item.find(':');
        char* e1 = nullptr;
        char* e2 = nullptr;
        const std::string a = item.substr(0, colon);
        const std::string b = colon == std::string::npos ? "" : item.substr(colon + 1);
        const double x = std::strtod(a.c_str(), &e1);
        const double y = std::strtod(b.c_str(), &e2);
        NS_ABORT_MSG_IF(colon == std::string::npos || a.empty() || b.empty() || *e1 || *e2 ||
                            !(x >= 0) || !(y > 0 && y <= 1),
                        "RackElectricalModel::EfficiencyCurve: bad pair '"
                            << item << "' (want fraction:efficiency with 0 < efficiency <= 1)");
        curve.emplace_back(x, y);
    }
    NS_ABORT_MSG_IF(curve.empty(), "RackElectricalModel::EfficiencyCurve is empty");
    std::sort(curve.begin(), curve.end());
    m_curve = curve;
}

std::string
RackElectricalModel::GetEfficiencyCurve() const
{
    std::ostringstream out;
    for (std::size_t i = 0; i < m_curve.size(); ++i)
    {
        out << (i ? ";" : "") << m_curve[i].first << ":" << m_curve[i].second;
    }
    return out.str();
}

double
RackElectricalModel::EfficiencyAt(double f) const
{
    if (f <= m_curve.front().first)
    {
        return m_curve.front().second;
    }
    for (std::size_t i = 1; i < m_curve.size(); ++i)
    {
        if (f <= m_curve[i].first)
        {
            const auto& [x0, y0] = m_curve[i - 1];
            const auto& [x1, y1] = m_curve[i];
            return y0 + (y1 - y0) * (f - x0) / (x1 - x0);
        }
    }
    return m_curve.back().second;
}

uint32_t
RackElectricalModel::AddPsuShelf(uint32_t slots)
{
    Advance();
    Shelf s;
    s.psus.resize(slots);
    for (auto& p : s.psus)
    {
        p.s.inletTemperature = m_ambient;
        p.s.outletTemperature = m_ambient;
    }
    m_shelves.push_back(s);
    Solve(Simulator::Now());
    return static_cast<uint32_t>(m_shelves.size() - 1);
}

uint32_t
RackElectricalModel::AddBbu()
{
    Advance();
    Bbu b;
    b.s.temperature = m_ambient;
    b.s.capacityAh = m_bbuCapacityAh;
    m_bbus.push_back(b);
    m_tracedModes.emplace_back(false, false);
    Solve(Simulator::Now());
    return static_cast<uint32_t>(m_bbus.size() - 1);
}

uint32_t
RackElectricalModel::GetPsuCount(uint32_t shelf) const
{
    NS_ABORT_MSG_IF(shelf >= m_shelves.size(), "no PSU shelf " << shelf);
    return static_cast<uint32_t>(m_shelves[shelf].psus.size());
}

void
RackElectricalModel::SetLoadProfile(Ptr<RackLoadProfile> profile)
{
    Advance();
    m_load = profile;
    Solve(Simulator::Now());
}

Ptr<RackLoadProfile>
RackElectricalModel::GetLoadProfile() const
{
    return m_load;
}

double
RackElectricalModel::CellVoltageAt(double soc) const
{
    // A Li-ion cell's open-circuit voltage, roughly linear between 3.3 V empty and 4.15 V full.
    return 3.3 + 0.85 * std::min(1.0, std::max(0.0, soc));
}

void
RackElectricalModel::Solve(Time t)
{
    m_loadNow = m_load ? m_load->GetPower(t) : 0.0;
    std::vector<RackPsuState*> delivering;
    for (auto& sh : m_shelves)
    {
        for (auto& p : sh.psus)
        {
            p.s.acOk = sh.acOk;
            p.s.delivering = p.s.present && !p.s.failed && sh.acOk;
            if (p.s.delivering)
            {
                delivering.push_back(&p.s);
            }
        }
    }
    const bool ac = !delivering.empty();
    double charging = 0; // W the BBUs take from the busbar
    std::vector<RackBbuState*> able;
    for (auto& b : m_bbus)
    {
        RackBbuState& s = b.s;
        s.cellVoltage = CellVoltageAt(s.stateOfCharge);
        s.packVoltage = s.cellVoltage * m_bbuCells;
        s.charging = s.discharging = false;
        s.current = s.power = 0;
        if (!s.present || s.failed)
        {
            continue;
        }
        if (ac && s.stateOfCharge < 1.0)
        {
            s.charging = true;
            s.current = m_bbuChargeCurrent;
            s.power = -s.current * s.packVoltage;
            charging += -s.power;
        }
        else if (!ac && s.stateOfCharge > 0.0)
        {
            able.push_back(&s);
        }
    }
    m_unservedNow = 0;
    if (ac)
    {
        m_busbarNow = m_busbarVoltage;
        const double total = m_loadNow + charging;
        const double each = total / delivering.size();
        for (RackPsuState* p : delivering)
        {
            p->outputVoltage = m_busbarVoltage;
            p->outputPower = each;
            p->outputCurrent = each / m_busbarVoltage;
            p->shareCurrent = p->outputCurrent;
        }
    }
    else if (!able.empty())
    {
        m_busbarNow = m_backupVoltage;
        const double each = m_loadNow / able.size();
        for (RackBbuState* s : able)
        {
            s->discharging = true;
            s->power = each;
            s->current = -each / s->packVoltage;
        }
    }
    else
    {
        m_busbarNow = 0;
        m_unservedNow = m_loadNow;
    }
    for (auto& sh : m_shelves)
    {
        for (auto& p : sh.psus)
        {
            RackPsuState& s = p.s;
            if (!s.delivering)
            {
                s.outputVoltage = s.present && !s.failed ? m_busbarNow : 0;
                s.outputCurrent = s.outputPower = s.shareCurrent = 0;
            }
            const double fraction = s.outputPower / m_psuRated;
            s.efficiency = s.delivering ? EfficiencyAt(fraction) : 0;
            s.inputVoltage = s.present && sh.acOk ? m_acVoltage : 0;
            s.inputFrequency = s.present && sh.acOk ? m_acFrequency : 0;
            s.powerFactor = s.delivering ? m_powerFactor : 0;
            s.inputPower = s.delivering ? s.outputPower / s.efficiency : 0;
            s.inputCurrent = s.delivering ? s.inputPower / (m_acVoltage * m_powerFactor) : 0;
            s.fanRpm = !s.present || s.fanFailed
                           ? 0
                           : m_fanRpmIdle + (m_fanRpmFull - m_fanRpmIdle) *
                                                std::min(1.0, std::max(0.0, fraction));
            s.inletTemperature = m_ambient;
        }
    }
}

void
RackElectricalModel::Integrate(double dt)
{
    const double k = 1.0 - std::exp(-dt / m_thermalTau.GetSeconds());
    for (auto& sh : m_shelves)
    {
        for (auto& p : sh.psus)
        {
            RackPsuState& s = p.s;
            const double loss = s.delivering ? s.inputPower - s.outputPower : 0;
            const double r = m_thermalResistance * (s.fanFailed ? m_fanFailureFactor : 1.0);
            const double target = m_ambient + r * loss;
            s.outletTemperature += (target - s.outletTemperature) * k;
        }
    }
    for (auto& b : m_bbus)
    {
        RackBbuState& s = b.s;
        // Charge in ampere-hours; the current is the pack's (Solve keeps it constant per step).
        s.stateOfCharge += s.current * dt / 3600.0 / m_bbuCapacityAh;
        s.stateOfCharge = std::min(1.0, std::max(0.0, s.stateOfCharge));
        const double target = m_ambient + m_bbuThermal * std::fabs(s.power);
        s.temperature += (target - s.temperature) * k;
    }
}

void
RackElectricalModel::Advance()
{
    const Time now = Simulator::Now();
    while (m_last < now)
    {
        const Time dt = std::min(m_maxStep, now - m_last);
        Solve(m_last);
        Integrate(dt.GetSeconds());
        m_last += dt;
    }
    Solve(now);
    TraceBbuModes();
}

void
RackElectricalModel::TraceBbuModes()
{
    for (std::size_t i = 0; i < m_bbus.size(); ++i)
    {
        const auto mode = std::make_pair(m_bbus[i].s.charging, m_bbus[i].s.discharging);
        if (mode != m_tracedModes[i])
        {
            if (mode.second && !m_tracedModes[i].second)
            {
                m_bbus[i].s.dischargeEvents++;
            }
            m_tracedModes[i] = mode;
            m_bbuModeTrace(static_cast<uint32_t>(i), mode.first, mode.second);
        }
    }
}

namespace
{
template <typename V>
auto&
At(V& v, uint32_t i, const char* what)
{
    NS_ABORT_MSG_IF(i >= v.size(), "RackElectricalModel: no " << what << " " << i);
    return v[i];
}
} // namespace

void
RackElectricalModel::SetPsuFailed(uint32_t shelf, uint32_t slot, bool failed)
{
    Advance();
    RackPsuState& s = At(At(m_shelves, shelf, "shelf").psus, slot, "PSU").s;
    if (failed && !s.failed)
    {
        s.faultCount++;
    }
    s.failed = failed;
    Solve(Simulator::Now());
    TraceBbuModes();
    m_faultTrace("PsuFailure", shelf, slot, failed);
}

void
RackElectricalModel::SetPsuFanFailed(uint32_t shelf, uint32_t slot, bool failed)
{
    Advance();
    At(At(m_shelves, shelf, "shelf").psus, slot, "PSU").s.fanFailed = failed;
    Solve(Simulator::Now());
    m_faultTrace("PsuFanFailure", shelf, slot, failed);
}

void
RackElectricalModel::SetPsuPresent(uint32_t shelf, uint32_t slot, bool present)
{
    Advance();
    At(At(m_shelves, shelf, "shelf").psus, slot, "PSU").s.present = present;
    Solve(Simulator::Now());
    TraceBbuModes();
    m_faultTrace("PsuRemoved", shelf, slot, !present);
}

void
RackElectricalModel::SetAcLoss(uint32_t shelf, bool lost)
{
    Advance();
    Shelf& sh = At(m_shelves, shelf, "shelf");
    if (lost && sh.acOk)
    {
        for (auto& p : sh.psus)
        {
            p.s.acOutages++;
        }
    }
    sh.acOk = !lost;
    Solve(Simulator::Now());
    TraceBbuModes();
    m_faultTrace("AcLoss", shelf, 0, lost);
}

void
RackElectricalModel::SetRackAcLoss(bool lost)
{
    for (uint32_t i = 0; i < m_shelves.size(); ++i)
    {
        SetAcLoss(i, lost);
    }
}

void
RackElectricalModel::SetBbuFailed(uint32_t bbu, bool failed)
{
    Advance();
    At(m_bbus, bbu, "BBU").s.failed = failed;
    Solve(Simulator::Now());
    TraceBbuModes();
    m_faultTrace("BbuFailure", bbu, 0, failed);
}

void
RackElectricalModel::SetBbuStateOfCharge(uint32_t bbu, double soc)
{
    NS_ABORT_MSG_IF(!(soc >= 0 && soc <= 1), "state of charge must be in [0, 1]");
    Advance();
    At(m_bbus, bbu, "BBU").s.stateOfCharge = soc;
    Solve(Simulator::Now());
    TraceBbuModes();
}

RackPsuState
RackElectricalModel::GetPsu(uint32_t shelf, uint32_t slot)
{
    Advance();
    return At(At(m_shelves, shelf, "shelf").psus, slot, "PSU").s;
}

RackBbuState
RackElectricalModel::GetBbu(uint32_t bbu)
{
    Advance();
    return At(m_bbus, bbu, "BBU").s;
}

double
RackElectricalModel::GetBusbarVoltage()
{
    Advance();
    return m_busbarNow;
}

double
RackElectricalModel::GetLoad()
{
    Advance();
    return m_loadNow;
}

double
RackElectricalModel::GetUnservedPower()
{
    Advance();
    return m_unservedNow;
}

} // namespace ns3
