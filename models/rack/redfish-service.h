// The DMTF Redfish resource tree of a rack BMC, built from a snapshot of what the BMC has read.
#ifndef CNUAS_REDFISH_SERVICE_H
#define CNUAS_REDFISH_SERVICE_H

#include "rack-bmc.h"
#include "rack-register-map.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ns3
{

/// One register of a RedfishDevice: the BMC's decoded value, converted to SI units.
struct RedfishRegister
{
    std::string name;
    RackRegisterFormat format = RackRegisterFormat::Integer;
    std::string mapUnit;  ///< the unit the register map declares ("mV", "10mA", "dK"...)
    double value = 0;     ///< the decoded value in the map's unit (Flags: the raw bits)
    double si = 0;        ///< the same in SI units (V, A, W, deg C, Ah, s; % stays %)
    std::string text;     ///< String registers
    std::vector<std::string> flagsSet;
    bool valid = false;   ///< the BMC has read it at least once
};

/// One device as the BMC saw it, with plain (thread-safe to copy) values only.
struct RedfishDevice
{
    std::string name; ///< the BMC's name, e.g. "ORV3_PSU_C8"
    uint8_t address = 0;
    std::string type; ///< register map name, e.g. "ORV3_PSU"
    bool dormant = false;
    double lastSeenSeconds = 0; ///< simulation time of the last answer
    uint64_t reads = 0;
    uint64_t failures = 0;
    std::vector<RedfishRegister> registers;

    /// The register with this name, or nullptr.
    const RedfishRegister* Find(const std::string& registerName) const;
    /// SI value of a valid numeric register, or `fallback`.
    double Si(const std::string& registerName, double fallback = 0) const;
    /// Whether a valid Flags register has the named bit set.
    bool Flag(const std::string& registerName, const std::string& bit) const;
    /// Text of a valid String register (trailing blanks removed), or "".
    std::string Text(const std::string& registerName) const;
};

/// What the simulation thread hands to the Redfish server: no ns-3 object inside.
struct RedfishSnapshot
{
    uint64_t version = 0;     ///< increases with every publication
    double simSeconds = 0;    ///< simulation time of the snapshot
    uint32_t unixTime = 0;    ///< the BMC's clock
    bool scanComplete = false;
    RackBmcCounters counters;
    uint64_t cyclesCompleted = 0;  ///< monitoring cycles whose transactions all ended
    double lastCycleStart = -1;    ///< simulation time (s) of the last completed cycle, or -1
    double lastCycleEnd = -1;
    std::vector<RedfishDevice> devices; ///< in address order

    /// A snapshot of `bmc` now (simulation thread only).
    static RedfishSnapshot FromBmc(const RackBmc& bmc, uint64_t version);
};

/// SI value of `mapValue` given in `unit` (inverse of RackToMapUnit; "%" stays percent).
double RedfishToSi(double mapValue, const std::string& unit);

/// Options of the resource tree that the registers do not carry.
struct RedfishServiceOptions
{
    std::string uuid = "8a3b5c1e-0c6f-4d0e-9b52-6e7a1c0a5f01"; ///< ServiceRoot UUID
    std::string name = "Cnuas rack BMC";
    double psuCapacityWatts = 3000; ///< ORv3 rectifier rating (OCP ORv3 overview, 2019)
};

/**
 * \brief Builds the Redfish resources (DMTF DSP0266 / DSP8010 schemas) of one snapshot:
 *
 *     /redfish                                     version object {"v1": "/redfish/v1/"}
 *     /redfish/v1                                  ServiceRoot
 *     /redfish/v1/SessionService/Sessions          SessionCollection (empty: no auth here)
 *     /redfish/v1/Chassis                          ChassisCollection
 *     /redfish/v1/Chassis/Rack                     Chassis (Rack): rack sensors, Contains shelves
 *     /redfish/v1/Chassis/{Shelf}                  Chassis (Shelf), PowerShelfN / BatteryShelfN
 *     .../{Shelf}/Sensors[/{Id}]                   SensorCollection, Sensor
 *     .../{Shelf}/PowerSubsystem                   PowerSubsystem
 *     .../PowerSubsystem/PowerSupplies[/{Id}]      PowerSupplyCollection, PowerSupply
 *     .../PowerSupplies/{Id}/Metrics               PowerSupplyMetrics
 *     .../PowerSubsystem/Batteries[/{Id}]          BatteryCollection, Battery
 *     .../Batteries/{Id}/Metrics                   BatteryMetrics
 *
 * Shelves are formed from the Modbus addresses: ORv3 addresses carry the shelf in bits 7-3
 * (type T1 T0 and rack-address pins R2-R0, rackmon2 DESIGN.md "ORv3 Register Address types");
 * the HPR addresses of the Ventura2 layout put each shelf in one block of 8 as well. An HPR
 * shelf PMM joins the shelf whose Shelf_Location it reports (This_Shelf_Location).
 * Every value comes from the BMC's register reads, never from the model directly.
 */
class RedfishService
{
  public:
    /// Path (without a trailing slash) to resource, for every resource of the snapshot.
    typedef std::map<std::string, std::string> Tree;

    explicit RedfishService(const RedfishServiceOptions& options = RedfishServiceOptions());
    /// All resources of `snapshot`, each serialized to JSON text.
    Tree Build(const RedfishSnapshot& snapshot) const;
    /// The Redfish error body (DSP0266 "Error responses"; Base message registry ids).
    static std::string ErrorBody(const std::string& messageId,
                                 const std::string& message,
                                 const std::vector<std::string>& args,
                                 const std::string& resolution);

  private:
    RedfishServiceOptions m_options;
};

} // namespace ns3

#endif
