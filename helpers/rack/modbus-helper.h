// Installs Modbus RTU masters and slaves on nodes that have an RS-485 transceiver.
#ifndef CNUAS_MODBUS_HELPER_H
#define CNUAS_MODBUS_HELPER_H

#include "models/rack/modbus-master.h"
#include "models/rack/modbus-register-bank.h"
#include "models/rack/modbus-slave.h"

#include "ns3/object-factory.h"

#include <string>

namespace ns3
{

/**
 * \brief Creates ModbusMaster and ModbusSlave applications with attributes set once here,
 * bound to a given Rs485Device and added to its node (started at time zero).
 */
class ModbusHelper
{
  public:
    ModbusHelper();

    void SetMasterAttribute(const std::string& name, const AttributeValue& value);
    void SetSlaveAttribute(const std::string& name, const AttributeValue& value);

    Ptr<ModbusMaster> InstallMaster(Ptr<Rs485Device> device) const;
    /// A slave at `address` serving `bank`.
    Ptr<ModbusSlave> InstallSlave(Ptr<Rs485Device> device,
                                  uint8_t address,
                                  Ptr<ModbusRegisterBank> bank) const;

  private:
    ObjectFactory m_masterFactory;
    ObjectFactory m_slaveFactory;
};

} // namespace ns3

#endif
