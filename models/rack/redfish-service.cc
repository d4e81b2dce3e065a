#include "redfish-service.h"

#include "rack-device.h"

#include "ns3/simulator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace ns3
{

using json = nlohmann::json;

// ---- snapshot -------------------------------------------------------------------------------

const RedfishRegister*
RedfishDevice::Find(const std::string& registerName) const
{
    for (const RedfishRegister& r : registers)
    {
        if (r.name == registerName)
        {
            return &r;
        }
    }
    return nullptr;
}

double
RedfishDevice::Si(const std::string& registerName, double fallback) const
{
    const RedfishRegister* r = Find(registerName);
    return r != nullptr && r->valid ? r->si : fallback;
}

bool
RedfishDevice::Flag(const std::string& registerName, const std::string& bit) const
{
    const RedfishRegister* r = Find(registerName);
    return r != nullptr && r->valid &&
           std::find(r->flagsSet.begin(), r->flagsSet.end(), bit) != r->flagsSet.end();
}

std::string
RedfishDevice::Text(const std::string& registerName) const
{
    const RedfishRegister* r = Find(registerName);
    if (r == nullptr || !r->valid)
    {
        return "";
    }
    std::string t = r->text;
    while (!t.empty() && (t.back() == ' ' || t.back() == '\0'))
    {
        t.pop_back();
    }
    return t;
}

double
RedfishToSi(double mapValue, const std::string& unit)
{
    if (unit == "%")
    {
        return mapValue; // Redfish Percent readings are 0-100 as the registers are
    }
    // RackToMapUnit is affine (scale, then offset for temperatures): invert it.
    const double offset = RackToMapUnit(0.0, unit);
    const double scale = RackToMapUnit(1.0, unit) - offset;
    return (mapValue - offset) / scale;
}

RedfishSnapshot
RedfishSnapshot::FromBmc(const RackBmc& bmc, uint64_t version)
{
    RedfishSnapshot s;
    s.version = version;
    s.simSeconds = Simulator::Now().GetSeconds();
    s.unixTime = bmc.GetUnixTime();
    s.scanComplete = bmc.IsScanComplete();
    s.counters = bmc.GetCounters();
    // GetInventory() hands out a copy: move its strings instead of copying them again.
    std::vector<RackBmcDevice> inventory = bmc.GetInventory();
    s.devices.reserve(inventory.size());
    for (RackBmcDevice& d : inventory)
    {
        RedfishDevice o;
        o.name = std::move(d.name);
        o.address = d.address;
        o.type = std::move(d.type);
        o.dormant = d.dormant;
        o.lastSeenSeconds = d.lastSeen.GetSeconds();
        o.reads = d.reads;
        o.failures = d.failures;
        o.registers.reserve(d.registers.size());
        for (RackBmcRegister& r : d.registers)
        {
            RedfishRegister x;
            x.format = r.format;
            x.value = r.value;
            x.si = RedfishToSi(r.value, r.unit);
            x.name = std::move(r.name);
            x.mapUnit = std::move(r.unit);
            x.text = std::move(r.text);
            x.flagsSet = std::move(r.flagsSet);
            x.valid = r.valid;
            o.registers.push_back(std::move(x));
        }
        s.devices.push_back(std::move(o));
    }
    return s;
}

// ---- resources ------------------------------------------------------------------------------

namespace
{

enum class Kind : uint8_t
{
    Psu,
    Bbu,
    Pmm,
    Other,
};

Kind
KindOf(const std::string& type)
{
    auto endsWith = [&](const std::string& suffix) {
        return type.size() >= suffix.size() &&
               type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (type.find("PMM") != std::string::npos)
    {
        return Kind::Pmm;
    }
    if (endsWith("_PSU"))
    {
        return Kind::Psu;
    }
    if (endsWith("_BBU"))
    {
        return Kind::Bbu;
    }
    return Kind::Other;
}

json
Link(const std::string& path)
{
    return json{{"@odata.id", path}};
}

/// Redfish Health values in increasing severity (Resource schema, Health enum).
int
Severity(const std::string& health)
{
    return health == "Critical" ? 2 : health == "Warning" ? 1 : 0;
}

std::string
Worst(const std::string& a, const std::string& b)
{
    return Severity(a) >= Severity(b) ? a : b;
}

json
Status(const std::string& state, const std::string& health)
{
    return json{{"State", state}, {"Health", health}};
}

/// One sensor a device contributes: the register, the Redfish ReadingType and ReadingUnits
/// (UCUM, as the Sensor schema requires for each ReadingType).
struct SensorDef
{
    const char* suffix;
    const char* reg;
    const char* readingType;
    const char* units;
    const char* label;
};

const SensorDef kPsuSensors[] = {
    {"OutputVoltage", "PSU_Output_Voltage", "Voltage", "V", "output voltage"},
    {"OutputCurrent", "PSU_Output_Current", "Current", "A", "output current"},
    {"OutputPower", "PSU_Output_Power", "Power", "W", "output power"},
    {"InputVoltage", "PSU_Input_Voltage_AC", "Voltage", "V", "AC input voltage"},
    {"InputCurrent", "PSU_Input_Current_AC", "Current", "A", "AC input current"},
    {"InputPower", "PSU_Input_Power", "Power", "W", "input power"},
    {"InletTemp", "PSU_Temp0_Inlet", "Temperature", "Cel", "inlet temperature"},
    {"OutletTemp", "PSU_Temp1_Outlet", "Temperature", "Cel", "outlet temperature"},
    {"Fan0", "PSU_RPM_Fan0", "Rotational", "RPM", "fan 0 speed"},
    {"Fan1", "PSU_RPM_Fan1", "Rotational", "RPM", "fan 1 speed"},
};

const SensorDef kBbuSensors[] = {
    {"StateOfCharge", "Relative_State_Of_Charge", "Percent", "%", "state of charge"},
    {"Voltage", "Battery_Voltage", "Voltage", "V", "pack voltage"},
    {"Current", "Battery_Current", "Current", "A", "pack current"},
    {"Temperature", "Temp1", "Temperature", "Cel", "pack temperature"},
    {"BusbarVoltage", "Shelf_Busbar_Voltage", "Voltage", "V", "busbar voltage"},
    {"RemainingCapacity", "Remaining_Capacity", "ChargeAh", "A.h", "remaining capacity"},
};

struct Shelf
{
    Kind kind = Kind::Other;
    int key = 0; ///< address >> 3
    std::string id;
    std::vector<const RedfishDevice*> members;
    const RedfishDevice* pmm = nullptr;
};

class Builder
{
  public:
    Builder(const RedfishSnapshot& s, const RedfishServiceOptions& o, RedfishService::Tree& t)
        : m_s(s),
          m_o(o),
          m_tree(t)
    {
    }

    void Run()
    {
        GroupShelves();
        std::string rackHealth = "OK";
        json contains = json::array();
        for (Shelf& sh : m_shelves)
        {
            rackHealth = Worst(rackHealth, BuildShelf(sh));
            contains.push_back(Link(ChassisPath(sh.id)));
        }
        BuildRack(contains, rackHealth);
        BuildRoot();
    }

  private:
    static std::string ChassisPath(const std::string& id)
    {
        return "/redfish/v1/Chassis/" + id;
    }

    void Put(const std::string& path, json j)
    {
        m_tree[path] = j.dump();
    }

    void PutCollection(const std::string& path,
                       const std::string& type,
                       const std::string& name,
                       const std::vector<std::string>& members)
    {
        json m = json::array();
        for (const auto& p : members)
        {
            m.push_back(Link(p));
        }
        Put(path,
            json{{"@odata.id", path},
                 {"@odata.type", "#" + type + "." + type},
                 {"Name", name},
                 {"Members", m},
                 {"Members@odata.count", members.size()}});
    }

    void GroupShelves()
    {
        std::map<std::pair<int, int>, Shelf> byKey; // (kind, key)
        std::vector<const RedfishDevice*> pmms;
        for (const RedfishDevice& d : m_s.devices)
        {
            const Kind k = KindOf(d.type);
            if (k == Kind::Pmm)
            {
                pmms.push_back(&d);
                continue;
            }
            if (k == Kind::Other)
            {
                continue;
            }
            Shelf& sh = byKey[{static_cast<int>(k), d.address >> 3}];
            sh.kind = k;
            sh.key = d.address >> 3;
            sh.members.push_back(&d);
        }
        uint32_t psuN = 0;
        uint32_t bbuN = 0;
        for (auto& [key, sh] : byKey)
        {
            sh.id = sh.kind == Kind::Psu ? "PowerShelf" + std::to_string(++psuN)
                                         : "BatteryShelf" + std::to_string(++bbuN);
            m_shelves.push_back(sh);
        }
        // HPR: a shelf PMM reports the shelf location its modules report too.
        for (const RedfishDevice* p : pmms)
        {
            const bool psuPmm = p->type.find("PMM_PSU") != std::string::npos;
            const double loc = p->Si("This_Shelf_Location", -1);
            for (Shelf& sh : m_shelves)
            {
                if (sh.pmm == nullptr && (sh.kind == Kind::Psu) == psuPmm &&
                    !sh.members.empty() && ModuleLocation(*sh.members.front()) == loc)
                {
                    sh.pmm = p;
                    break;
                }
            }
        }
    }

    static double ModuleLocation(const RedfishDevice& d)
    {
        if (d.Find("Shelf_Location") != nullptr)
        {
            return d.Si("Shelf_Location", -2);
        }
        // BBUs: the shelf address pins in the hardware-signal register.
        double loc = 0;
        for (int b = 0; b < 3; ++b)
        {
            if (d.Flag("BBU_Module_Hardware_Signals", "Shelf_Addr_int_" + std::to_string(b)))
            {
                loc += 1 << b;
            }
        }
        return loc;
    }

    json Sensor(const std::string& shelfPath,
                const std::string& id,
                const std::string& name,
                const std::string& readingType,
                const std::string& units,
                const std::string& context,
                bool valid,
                double reading,
                const std::string& health,
                const std::string& related)
    {
        const std::string path = shelfPath + "/Sensors/" + id;
        json j{{"@odata.id", path},
               {"@odata.type", "#Sensor.v1_2_0.Sensor"},
               {"Id", id},
               {"Name", name},
               {"ReadingType", readingType},
               {"ReadingUnits", units},
               {"PhysicalContext", context},
               {"Status", Status(valid ? "Enabled" : "UnavailableOffline", health)}};
        j["Reading"] = valid ? json(reading) : json(nullptr);
        if (!related.empty())
        {
            j["RelatedItem"] = json::array({Link(related)});
        }
        Put(path, j);
        m_sensorIds[shelfPath].push_back(path);
        return json{{"Reading", j["Reading"]}, {"DataSourceUri", path}};
    }

    /// Adds the sensors of one device; returns excerpts by suffix for the metrics resources.
    std::map<std::string, json> DeviceSensors(const std::string& shelfPath,
                                              const RedfishDevice& d,
                                              const SensorDef* defs,
                                              std::size_t n,
                                              const std::string& context,
                                              const std::string& related)
    {
        std::map<std::string, json> out;
        for (std::size_t i = 0; i < n; ++i)
        {
            const RedfishRegister* r = d.Find(defs[i].reg);
            if (r == nullptr)
            {
                continue; // this map has no such register
            }
            const bool valid = r->valid && !d.dormant;
            out[defs[i].suffix] = Sensor(shelfPath,
                                         d.name + "_" + defs[i].suffix,
                                         d.name + " " + defs[i].label,
                                         defs[i].readingType,
                                         defs[i].units,
                                         context,
                                         valid,
                                         r->si,
                                         valid ? "OK" : "Critical",
                                         related);
        }
        return out;
    }

    /// PowerSupply Status and LineInputStatus from the alarm registers (ORv3 PSU map).
    static std::string PsuHealth(const RedfishDevice& d, bool* acLoss)
    {
        *acLoss = d.Flag("PFC_Alarm_Status_Register", "AC_Not_OK") ||
                  d.Flag("General_Alarm_Status_Register", "PFC");
        const bool dcdc = d.Flag("General_Alarm_Status_Register", "DCDC_Converter_Failure") ||
                          d.Flag("DCDC_Alarm_Status_Register", "DCDC_Fail");
        const bool warn = d.Flag("General_Alarm_Status_Register", "Fan_Alarm") ||
                          d.Flag("General_Alarm_Status_Register", "Temp_Alarm");
        if (d.dormant || dcdc || *acLoss)
        {
            return "Critical";
        }
        return warn ? "Warning" : "OK";
    }

    static std::string BbuHealth(const RedfishDevice& d)
    {
        if (d.dormant || d.Flag("BBU_Status", "Discharge_Not_Allowed") ||
            d.Flag("BBU_Status", "Charge_Not_Allowed") ||
            d.Flag("Battery_Status", "Terminate_Discharge_Alarm"))
        {
            return "Critical";
        }
        return d.Flag("Battery_Status", "Remaing_Capacity_Alarm") ? "Warning" : "OK";
    }

    static json Location(uint32_t slot)
    {
        return json{{"PartLocation",
                     {{"ServiceLabel", "Slot " + std::to_string(slot)},
                      {"LocationType", "Slot"},
                      {"LocationOrdinalValue", slot}}}};
    }

    std::string BuildPsu(const std::string& shelfPath, const RedfishDevice& d, uint32_t slot)
    {
        const std::string base = shelfPath + "/PowerSubsystem/PowerSupplies/" + d.name;
        bool acLoss = false;
        const std::string health = PsuHealth(d, &acLoss);
        auto ex = DeviceSensors(shelfPath, d, kPsuSensors, std::size(kPsuSensors),
                                "PowerSupply", base);
        json psu{{"@odata.id", base},
                 {"@odata.type", "#PowerSupply.v1_5_0.PowerSupply"},
                 {"Id", d.name},
                 {"Name", "PSU " + d.name},
                 {"Status", Status(d.dormant ? "UnavailableOffline" : "Enabled", health)},
                 {"PowerSupplyType", "AC"},
                 // ORv3 rectifier: single-phase 200-277 V AC in, 48/51 V DC out (OCP 2019).
                 {"InputNominalVoltageType", "AC200To277V"},
                 {"OutputNominalVoltageType", "DC48V"},
                 {"InputRanges",
                  json::array({{{"NominalVoltageType", "AC200To277V"},
                                {"CapacityWatts", m_o.psuCapacityWatts}}})},
                 {"PowerCapacityWatts", m_o.psuCapacityWatts},
                 {"LineInputStatus", d.dormant ? "Unknown" : acLoss ? "LossOfInput" : "Normal"},
                 {"HotPluggable", true},
                 {"Location", Location(slot)},
                 {"Metrics", Link(base + "/Metrics")}};
        const std::pair<const char*, const char*> asset[] = {
            {"Model", "PSU_MFR_Model"},
            {"SerialNumber", "PSU_MFR_Serial"},
            {"PartNumber", "PSU_FBPN"},
            {"FirmwareVersion", "PSU_FW_Revision"},
            {"Version", "PSU_HW_Revision"},
        };
        for (const auto& [prop, reg] : asset)
        {
            const std::string t = d.Text(reg);
            if (!t.empty())
            {
                psu[prop] = t;
            }
        }
        Put(base, psu);

        json m{{"@odata.id", base + "/Metrics"},
               {"@odata.type", "#PowerSupplyMetrics.v1_0_0.PowerSupplyMetrics"},
               {"Id", "Metrics"},
               {"Name", "Metrics of PSU " + d.name}};
        const std::pair<const char*, const char*> one[] = {
            {"InputVoltage", "InputVoltage"},     {"InputCurrentAmps", "InputCurrent"},
            {"InputPowerWatts", "InputPower"},    {"OutputPowerWatts", "OutputPower"},
            {"TemperatureCelsius", "OutletTemp"},
        };
        for (const auto& [prop, suffix] : one)
        {
            if (ex.count(suffix) != 0)
            {
                m[prop] = ex[suffix];
            }
        }
        if (ex.count("OutputVoltage") != 0)
        {
            m["RailVoltage"] = json::array({ex["OutputVoltage"]});
        }
        if (ex.count("OutputCurrent") != 0)
        {
            m["RailCurrentAmps"] = json::array({ex["OutputCurrent"]});
        }
        if (const RedfishRegister* f = d.Find("PSU_Input_Frequency_AC"); f != nullptr && f->valid)
        {
            m["FrequencyHz"] = json{{"Reading", f->si}};
        }
        m["Status"] = Status(d.dormant ? "UnavailableOffline" : "Enabled", health);
        Put(base + "/Metrics", m);
        return health;
    }

    std::string BuildBbu(const std::string& shelfPath, const RedfishDevice& d, uint32_t slot)
    {
        const std::string base = shelfPath + "/PowerSubsystem/Batteries/" + d.name;
        const std::string health = BbuHealth(d);
        auto ex = DeviceSensors(shelfPath, d, kBbuSensors, std::size(kBbuSensors), "Battery",
                                base);
        // BBU_Mode bits (ORv3 BBU map, register 107) give the charge state.
        const bool discharging =
            d.Flag("BBU_Mode", "Discharge") || d.Flag("Battery_Status", "Discharging");
        const bool charging = d.Flag("BBU_Mode", "Charging");
        json b{{"@odata.id", base},
               {"@odata.type", "#Battery.v1_0_0.Battery"},
               {"Id", d.name},
               {"Name", "BBU " + d.name},
               {"Status", Status(d.dormant ? "UnavailableOffline" : "Enabled", health)},
               {"ChargeState", discharging ? "Discharging" : charging ? "Charging" : "Idle"},
               {"HotPluggable", true},
               {"Location", Location(slot)},
               {"Metrics", Link(base + "/Metrics")}};
        if (const RedfishRegister* r = d.Find("SOH"); r != nullptr && r->valid)
        {
            b["StateOfHealthPercent"] = json{{"Reading", r->si}};
        }
        if (const RedfishRegister* r = d.Find("Design_Capacity"); r != nullptr && r->valid)
        {
            b["CapacityRatedAmpHours"] = r->si;
        }
        if (const RedfishRegister* r = d.Find("Full_Charge_Capacity"); r != nullptr && r->valid)
        {
            b["CapacityActualAmpHours"] = r->si;
        }
        const std::pair<const char*, const char*> asset[] = {
            {"Manufacturer", "Manufacturer_Name"},
            {"Model", "Manufacture_Model"},
            {"SerialNumber", "MFR_Serial"},
            {"PartNumber", "Facebook_Part_Number"},
            {"FirmwareVersion", "FW_Revision"},
        };
        for (const auto& [prop, reg] : asset)
        {
            const std::string t = d.Text(reg);
            if (!t.empty())
            {
                b[prop] = t;
            }
        }
        Put(base, b);

        json m{{"@odata.id", base + "/Metrics"},
               {"@odata.type", "#BatteryMetrics.v1_0_0.BatteryMetrics"},
               {"Id", "Metrics"},
               {"Name", "Metrics of BBU " + d.name}};
        if (ex.count("StateOfCharge") != 0)
        {
            m["ChargePercent"] = ex["StateOfCharge"];
        }
        if (ex.count("Voltage") != 0)
        {
            m["OutputVoltages"] = json::array({ex["Voltage"]});
        }
        if (ex.count("Current") != 0)
        {
            m["OutputCurrentAmps"] = json::array({ex["Current"]});
        }
        if (ex.count("Temperature") != 0)
        {
            m["TemperatureCelsius"] = ex["Temperature"];
        }
        if (ex.count("RemainingCapacity") != 0)
        {
            m["StoredChargeAmpHours"] = ex["RemainingCapacity"];
        }
        if (const RedfishRegister* r = d.Find("Count_of_Discharge_Events"); r && r->valid)
        {
            m["DischargeCycles"] = r->si;
        }
        json cells = json::array();
        for (int i = 1; i <= 12; ++i)
        {
            const RedfishRegister* r = d.Find("Cell_Voltage" + std::to_string(i));
            if (r != nullptr && r->valid)
            {
                cells.push_back(json{{"Reading", r->si}});
            }
        }
        if (!cells.empty())
        {
            m["CellVoltages"] = cells;
        }
        Put(base + "/Metrics", m);
        return health;
    }

    std::string BuildShelf(const Shelf& sh)
    {
        const std::string path = ChassisPath(sh.id);
        const bool psu = sh.kind == Kind::Psu;
        std::string health = "OK";
        std::vector<std::string> members;
        uint32_t slot = 0;
        for (const RedfishDevice* d : sh.members)
        {
            ++slot;
            health = Worst(health, psu ? BuildPsu(path, *d, slot) : BuildBbu(path, *d, slot));
            members.push_back(path + "/PowerSubsystem/" +
                              (psu ? "PowerSupplies/" : "Batteries/") + d->name);
        }
        const std::string sub = path + "/PowerSubsystem";
        if (psu)
        {
            PutCollection(sub + "/PowerSupplies", "PowerSupplyCollection",
                          "Power supplies of " + sh.id, members);
        }
        else
        {
            PutCollection(sub + "/Batteries", "BatteryCollection", "Batteries of " + sh.id,
                          members);
        }
        json ps{{"@odata.id", sub},
                {"@odata.type", "#PowerSubsystem.v1_1_0.PowerSubsystem"},
                {"Id", "PowerSubsystem"},
                {"Name", "Power subsystem of " + sh.id},
                {"Status", Status("Enabled", health)}};
        if (psu)
        {
            ps["PowerSupplies"] = Link(sub + "/PowerSupplies");
            ps["CapacityWatts"] = m_o.psuCapacityWatts * static_cast<double>(sh.members.size());
        }
        else
        {
            ps["Batteries"] = Link(sub + "/Batteries");
        }
        Put(sub, ps);

        PutCollection(path + "/Sensors", "SensorCollection", "Sensors of " + sh.id,
                      m_sensorIds[path]);
        json c{{"@odata.id", path},
               {"@odata.type", "#Chassis.v1_14_0.Chassis"},
               {"Id", sh.id},
               {"Name", psu ? "ORv3 power shelf " + sh.id.substr(10)
                            : "ORv3 battery backup shelf " + sh.id.substr(12)},
               {"ChassisType", "Shelf"},
               {"Status", Status("Enabled", health)},
               {"PowerSubsystem", Link(sub)},
               {"Sensors", Link(path + "/Sensors")},
               {"Links", {{"ContainedBy", Link(ChassisPath("Rack"))}}}};
        if (sh.pmm != nullptr)
        {
            // HPR: the shelf's power monitoring module identifies the shelf.
            c["Manufacturer"] = sh.pmm->Text("PMM_MFR_Name");
            c["Model"] = sh.pmm->Text("PMM_MFR_Model");
            c["SerialNumber"] = sh.pmm->Text("PMM_MFR_Serial");
            c["PartNumber"] = sh.pmm->Text("PMM_FBPN");
        }
        Put(path, c);
        return health;
    }

    void BuildRack(const json& contains, const std::string& health)
    {
        const std::string path = ChassisPath("Rack");
        double out = 0;
        double in = 0;
        double battery = 0;
        double busbar = 0;
        uint32_t busbarN = 0;
        bool anyPsu = false;
        bool anyBbu = false;
        for (const RedfishDevice& d : m_s.devices)
        {
            if (d.dormant)
            {
                continue;
            }
            const Kind k = KindOf(d.type);
            if (k == Kind::Psu)
            {
                anyPsu = true;
                out += d.Si("PSU_Output_Power");
                in += d.Si("PSU_Input_Power");
            }
            else if (k == Kind::Bbu)
            {
                anyBbu = true;
                // Battery_Current < 0 while discharging: power flows into the busbar.
                battery += std::max(0.0, -d.Si("Battery_Voltage") * d.Si("Battery_Current"));
                if (const RedfishRegister* r = d.Find("Shelf_Busbar_Voltage"); r && r->valid)
                {
                    busbar += r->si;
                    ++busbarN;
                }
            }
        }
        if (anyPsu)
        {
            Sensor(path, "RackOutputPower", "Rack PSU output power", "Power", "W", "DCBus", true,
                   out, "OK", "");
            Sensor(path, "RackInputPower", "Rack PSU input power", "Power", "W", "ACInput", true,
                   in, "OK", "");
        }
        if (anyBbu)
        {
            Sensor(path, "BatteryOutputPower", "Rack BBU discharge power", "Power", "W", "Battery",
                   true, battery, "OK", "");
            if (busbarN > 0)
            {
                Sensor(path, "BusbarVoltage", "Rack busbar voltage (BBU view)", "Voltage", "V",
                       "DCBus", true, busbar / busbarN, "OK", "");
            }
        }
        PutCollection(path + "/Sensors", "SensorCollection", "Sensors of the rack",
                      m_sensorIds[path]);
        Put(path,
            json{{"@odata.id", path},
                 {"@odata.type", "#Chassis.v1_14_0.Chassis"},
                 {"Id", "Rack"},
                 {"Name", "ORv3 rack"},
                 {"ChassisType", "Rack"},
                 {"Status", Status("Enabled", health)},
                 {"Sensors", Link(path + "/Sensors")},
                 {"Links", {{"Contains", contains}}}});
    }

    void BuildRoot()
    {
        std::vector<std::string> chassis = {ChassisPath("Rack")};
        for (const Shelf& sh : m_shelves)
        {
            chassis.push_back(ChassisPath(sh.id));
        }
        PutCollection("/redfish/v1/Chassis", "ChassisCollection", "Chassis", chassis);
        PutCollection("/redfish/v1/SessionService/Sessions", "SessionCollection", "Sessions", {});
        Put("/redfish", json{{"v1", "/redfish/v1/"}});
        Put("/redfish/v1",
            json{{"@odata.id", "/redfish/v1"},
                 {"@odata.type", "#ServiceRoot.v1_11_0.ServiceRoot"},
                 {"Id", "RootService"},
                 {"Name", m_o.name},
                 {"RedfishVersion", "1.15.0"},
                 {"UUID", m_o.uuid},
                 {"Chassis", Link("/redfish/v1/Chassis")},
                 {"Links", {{"Sessions", Link("/redfish/v1/SessionService/Sessions")}}},
                 {"Oem",
                  {{"Cnuas",
                    {{"SnapshotVersion", m_s.version},
                     {"SimulationSeconds", m_s.simSeconds},
                     {"BmcUnixTime", m_s.unixTime},
                     {"ScanComplete", m_s.scanComplete},
                     {"Devices", m_s.devices.size()},
                     {"MonitorCycles", m_s.counters.monitorCycles},
                     {"CompletedCycles", m_s.cyclesCompleted},
                     {"LastCycleStartSeconds", m_s.lastCycleStart},
                     {"LastCycleEndSeconds", m_s.lastCycleEnd},
                     {"Reads", m_s.counters.reads},
                     {"ReadFailures", m_s.counters.readFailures}}}}}});
    }

    const RedfishSnapshot& m_s;
    const RedfishServiceOptions& m_o;
    RedfishService::Tree& m_tree;
    std::vector<Shelf> m_shelves;
    std::map<std::string, std::vector<std::string>> m_sensorIds; ///< chassis path -> sensors
};

} // namespace

RedfishService::RedfishService(const RedfishServiceOptions& options)
    : m_options(options)
{
}

RedfishService::Tree
RedfishService::Build(const RedfishSnapshot& snapshot) const
{
    Tree t;
    Builder(snapshot, m_options, t).Run();
    return t;
}

std::string
RedfishService::ErrorBody(const std::string& messageId,
                          const std::string& message,
                          const std::vector<std::string>& args,
                          const std::string& resolution)
{
    json info{{"@odata.type", "#Message.v1_1_1.Message"},
              {"MessageId", messageId},
              {"Message", message},
              {"MessageArgs", args},
              {"MessageSeverity", "Critical"},
              {"Resolution", resolution}};
    return json{{"error",
                 {{"code", messageId},
                  {"message", message},
                  {"@Message.ExtendedInfo", json::array({info})}}}}
        .dump();
}

} // namespace ns3
