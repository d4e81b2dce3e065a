// The electrical and thermal state of an ORv3 rack: PSU shelves on a shared 48/51 V busbar,
// battery backup units, the hosts' load, and injectable power faults.
#ifndef CNUAS_RACK_ELECTRICAL_MODEL_H
#define CNUAS_RACK_ELECTRICAL_MODEL_H

#include "ns3/callback.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <map>
#include <string>
#include <vector>

namespace ns3
{

/// What the hosts of the rack draw from the busbar, in watts, as a function of time. The
/// fabric feeds host load through this interface (a RackCallbackLoad, or a subclass).
class RackLoadProfile : public Object
{
  public:
    static TypeId GetTypeId();
    /// Power drawn from the busbar at `t`, W (>= 0).
    virtual double GetPower(Time t) const = 0;
};

/// A constant load.
class RackConstantLoad : public RackLoadProfile
{
  public:
    static TypeId GetTypeId();
    double GetPower(Time t) const override;

  private:
    double m_power = 0;
};

/// A step schedule: InitialPower until the first step, then each step's power from its time on.
class RackStepLoad : public RackLoadProfile
{
  public:
    static TypeId GetTypeId();
    /// From `at` on, the load is `watts` (steps may be added in any order).
    void AddStep(Time at, double watts);
    double GetPower(Time t) const override;

  private:
    double m_initial = 0;
    std::map<Time, double> m_steps;
};

/// A load computed by a user function (e.g. from the fabric's traffic).
class RackCallbackLoad : public RackLoadProfile
{
  public:
    static TypeId GetTypeId();
    void SetFunction(Callback<double, Time> f);
    double GetPower(Time t) const override;

  private:
    Callback<double, Time> m_f;
};

/// One PSU's operating point.
struct RackPsuState
{
    bool present = true;
    bool failed = false;    ///< DC/DC converter failure (no output)
    bool fanFailed = false;
    bool acOk = true;       ///< its shelf has AC input
    bool delivering = false; ///< present, not failed, AC ok
    double outputVoltage = 0; ///< V
    double outputCurrent = 0; ///< A
    double outputPower = 0;   ///< W
    double shareCurrent = 0;  ///< A, the I-share bus value: the shelf's average per working PSU
    double inputPower = 0;    ///< W
    double inputVoltage = 0;  ///< V AC
    double inputCurrent = 0;  ///< A AC
    double inputFrequency = 0; ///< Hz
    double powerFactor = 0;
    double efficiency = 0;
    double inletTemperature = 0;  ///< deg C
    double outletTemperature = 0; ///< deg C
    double fanRpm = 0;
    uint32_t acOutages = 0;  ///< AC-loss events seen
    uint32_t faultCount = 0; ///< converter failures seen
};

/// One BBU's state.
struct RackBbuState
{
    bool present = true;
    bool failed = false;
    double stateOfCharge = 1.0; ///< 0..1
    double packVoltage = 0;     ///< V
    double cellVoltage = 0;     ///< V, every cell alike
    double current = 0;         ///< A at the pack, > 0 charging, < 0 discharging
    double power = 0;           ///< W into the busbar (> 0 discharging)
    bool charging = false;
    bool discharging = false;
    double temperature = 0;     ///< deg C
    double capacityAh = 0;
    uint32_t dischargeEvents = 0;
};

/**
 * \brief The rack's power system: PSU shelves and BBUs on one busbar (ORv3: one 48 V power
 * zone on a rear busbar; rectifiers with an analog I-share bus; battery backup in BBU shelves;
 * OCP ORv3 power system overview, 2019).
 *
 * Rules:
 *  - every delivering PSU (present, no converter failure, AC on its shelf) holds the busbar at
 *    BusbarVoltage and carries an equal share of the load plus the BBUs' charging power (active
 *    current sharing over the I-share bus: the busbar is common, so shelves share too);
 *  - with no delivering PSU the BBUs discharge, each supplying an equal share at
 *    BackupVoltage; with none left (empty, failed) the busbar collapses (0 V, load unserved);
 *  - input power = output / efficiency (piecewise-linear curve of the load fraction);
 *  - PSU outlet temperature approaches ambient + ThermalResistance x losses (x FanFailureFactor
 *    with a failed fan) with ThermalTimeConstant; BBU temperature likewise from its I^2R-like
 *    BbuThermalCoefficient x |power|;
 *  - BBUs below full charge are charged at BbuChargeCurrent while AC is present.
 *
 * State is integrated lazily, in steps of at most MaxStep, whenever it is read or changed, so
 * a register read at time t sees exactly the state at t and an idle rack costs no events.
 */
class RackElectricalModel : public Object
{
  public:
    static TypeId GetTypeId();
    RackElectricalModel();

    /// Trace signatures.
    typedef void (*FaultCallback)(const std::string& fault, uint32_t shelf, uint32_t slot, bool on);
    typedef void (*BbuModeCallback)(uint32_t bbu, bool charging, bool discharging);

    /// Adds a PSU shelf with `slots` PSUs; returns its index.
    uint32_t AddPsuShelf(uint32_t slots);
    /// Adds one BBU; returns its index.
    uint32_t AddBbu();
    uint32_t GetPsuShelfCount() const { return static_cast<uint32_t>(m_shelves.size()); }
    uint32_t GetPsuCount(uint32_t shelf) const;
    uint32_t GetBbuCount() const { return static_cast<uint32_t>(m_bbus.size()); }

    void SetLoadProfile(Ptr<RackLoadProfile> profile);
    Ptr<RackLoadProfile> GetLoadProfile() const;

    // Faults (each traced as "Fault"; the state up to now is integrated first).
    void SetPsuFailed(uint32_t shelf, uint32_t slot, bool failed);
    void SetPsuFanFailed(uint32_t shelf, uint32_t slot, bool failed);
    void SetPsuPresent(uint32_t shelf, uint32_t slot, bool present);
    /// AC input of one PSU shelf lost (true) or restored.
    void SetAcLoss(uint32_t shelf, bool lost);
    /// AC input of every shelf.
    void SetRackAcLoss(bool lost);
    void SetBbuFailed(uint32_t bbu, bool failed);
    /// Sets a BBU's state of charge (0..1), e.g. to start a test from a partly charged pack.
    void SetBbuStateOfCharge(uint32_t bbu, double soc);

    /// The state at the current simulation time.
    RackPsuState GetPsu(uint32_t shelf, uint32_t slot);
    RackBbuState GetBbu(uint32_t bbu);
    double GetBusbarVoltage();
    /// Host load now, W.
    double GetLoad();
    /// Load the busbar could not supply now, W.
    double GetUnservedPower();
    double GetAmbientTemperature() const { return m_ambient; }
    double GetBusbarSetpoint() const { return m_busbarVoltage; }
    double GetPsuRatedPower() const { return m_psuRated; }
    double GetBbuCapacity() const { return m_bbuCapacityAh; }
    uint32_t GetBbuCells() const { return m_bbuCells; }
    /// Efficiency at a load fraction of the rated power (the curve, interpolated).
    double EfficiencyAt(double loadFraction) const;

  protected:
    void DoDispose() override;

  private:
    struct Psu
    {
        RackPsuState s;
    };
    struct Shelf
    {
        bool acOk = true;
        std::vector<Psu> psus;
    };
    struct Bbu
    {
        RackBbuState s;
    };

    void SetEfficiencyCurve(std::string text);
    std::string GetEfficiencyCurve() const;
    /// Integrates the state from the last update to now.
    void Advance();
    /// Operating point (currents, powers) at time t from the current state.
    void Solve(Time t);
    /// Moves temperatures and charge over dt with the operating point last solved.
    void Integrate(double dt);
    void TraceBbuModes();
    double CellVoltageAt(double soc) const;

    double m_busbarVoltage = 51.0;
    double m_backupVoltage = 48.0;
    double m_psuRated = 3000.0;
    double m_acVoltage = 230.0;
    double m_acFrequency = 50.0;
    double m_powerFactor = 0.99;
    double m_ambient = 25.0;
    double m_thermalResistance = 0.15;
    Time m_thermalTau;
    double m_fanFailureFactor = 3.0;
    double m_fanRpmIdle = 4000;
    double m_fanRpmFull = 16000;
    double m_bbuCapacityAh = 6.0;
    uint32_t m_bbuCells = 11;
    double m_bbuChargeCurrent = 1.5;
    double m_bbuThermal = 0.004;
    Time m_maxStep;
    std::vector<std::pair<double, double>> m_curve; ///< (load fraction, efficiency), sorted

    std::vector<Shelf> m_shelves;
    std::vector<Bbu> m_bbus;
    Ptr<RackLoadProfile> m_load;
    Time m_last;
    double m_busbarNow = 0;
    double m_loadNow = 0;
    double m_unservedNow = 0;
    std::vector<std::pair<bool, bool>> m_tracedModes;

    TracedCallback<const std::string&, uint32_t, uint32_t, bool> m_faultTrace;
    TracedCallback<uint32_t, bool, bool> m_bbuModeTrace;
};

} // namespace ns3

#endif
