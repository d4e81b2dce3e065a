// Assembles an ORv3 rack on one RS-485 segment: PSU shelves, BBU shelf, (HPR) shelf PMMs, the
// electrical model they follow, and a BMC polling them.
#ifndef CNUAS_RACK_HELPER_H
#define CNUAS_RACK_HELPER_H

#include "models/rack/modbus-master.h"
#include "models/rack/modbus-slave.h"
#include "models/rack/rack-bbu.h"
#include "models/rack/rack-bmc.h"
#include "models/rack/rack-electrical-model.h"
#include "models/rack/rack-pmm.h"
#include "models/rack/rack-psu.h"
#include "models/rack/rs485-channel.h"

#include "ns3/node-container.h"
#include "ns3/object-factory.h"

#include <string>
#include <vector>

namespace ns3
{

/// What to build.
struct RackConfig
{
    /// false: legacy ORv3 (ORV3_PSU/ORV3_BBU maps, 19200 8E1, addresses from the T/R/D pins);
    /// true: HPR (ORV3_HPR_* maps, 115200 8E1, Ventura2 addresses, a PMM per shelf).
    bool hpr = false;
    uint32_t psuShelves = 2;
    uint32_t psusPerShelf = 6;
    uint32_t bbuShelves = 1;
    uint32_t bbusPerShelf = 6;
    /// ORv3: rack-address pins of each PSU shelf (defaults fall in rackmon2's ORV3_PSU ranges
    /// 200-205 and 232-237) and BBU shelf (ORV3_BBU range 64-69).
    std::vector<uint8_t> psuShelfPins = {1, 5, 6};
    std::vector<uint8_t> bbuShelfPins = {0, 2, 4};
    std::string mapDirectory; ///< empty: RackRegisterMap::DefaultDirectory()
    Time responseDelay = MilliSeconds(3); ///< devices' turnaround (ModbusSlave ResponseDelay)
    Time minDelay = MilliSeconds(2);      ///< BMC's gap after each transaction (rackmon min_delay)
    double busLength = 10.0;              ///< metres
    bool bmc = true;                      ///< install a RackBmc on the master
};

/// What was built.
struct Rack
{
    Ptr<Rs485Channel> bus;
    NodeContainer nodes; ///< node 0: the BMC; then one node per device
    Ptr<RackElectricalModel> power;
    Ptr<ModbusMaster> master;
    Ptr<RackBmc> bmc;
    /// The bus arbiter the BMC's transactions go through (with a BMC): another master on the
    /// segment (a pty bridge) registers with it to take turns (Rs485BusArbiter).
    Ptr<Rs485BusArbiter> arbiter;
    std::vector<Ptr<RackPsu>> psus; ///< shelf by shelf, slot order
    std::vector<Ptr<RackBbu>> bbus;
    std::vector<Ptr<RackPmm>> pmms; ///< HPR: PSU shelves' PMMs, then BBU shelves'
    std::vector<Ptr<RackDevice>> devices; ///< all of the above
    std::vector<Ptr<ModbusSlave>> slaves; ///< devices[i] is served by slaves[i]

    /// The device at a Modbus address, or nullptr.
    Ptr<RackDevice> Find(uint8_t address) const;
};

/**
 * \brief Builds a rack: one node and RS-485 transceiver per device (at its map's line
 * format), a ModbusSlave per device serving its RackDevice bank, a RackElectricalModel with
 * one PSU shelf per PSU shelf and one BBU per BBU slot, and a BMC node with a ModbusMaster and
 * a RackBmc that knows every map used. Attributes set here apply to what Build creates.
 */
class RackHelper
{
  public:
    RackHelper();

    void SetElectricalAttribute(const std::string& name, const AttributeValue& value);
    void SetBmcAttribute(const std::string& name, const AttributeValue& value);
    void SetMasterAttribute(const std::string& name, const AttributeValue& value);
    void SetTransceiverAttribute(const std::string& name, const AttributeValue& value);

    Rack Build(const RackConfig& config) const;

  private:
    ObjectFactory m_power;
    ObjectFactory m_bmc;
    ObjectFactory m_master;
    ObjectFactory m_transceiver;
};

} // namespace ns3

#endif
