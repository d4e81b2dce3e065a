#include "modbus-helper.h"

#include "ns3/abort.h"
#include "ns3/node.h"

namespace ns3
{

ModbusHelper::ModbusHelper()
{
    m_masterFactory.SetTypeId("ns3::ModbusMaster");
    m_slaveFactory.SetTypeId("ns3::ModbusSlave");
}

void
ModbusHelper::SetMasterAttribute(const std::string& name, const AttributeValue& value)
{
    m_masterFactory.Set(name, value);
}

void
ModbusHelper::SetSlaveAttribute(const std::string& name, const AttributeValue& value)
{
    m_slaveFactory.Set(name, value);
}

Ptr<ModbusMaster>
ModbusHelper::InstallMaster(Ptr<Rs485Device> device) const
{
    NS_ABORT_MSG_IF(!device || !device->GetNode(), "ModbusHelper: device without a node");
    Ptr<ModbusMaster> m = m_masterFactory.Create<ModbusMaster>();
    m->SetDevice(device);
    device->GetNode()->AddApplication(m);
    m->SetStartTime(Seconds(0));
    return m;
}

Ptr<ModbusSlave>
ModbusHelper::InstallSlave(Ptr<Rs485Device> device,
                           uint8_t address,
                           Ptr<ModbusRegisterBank> bank) const
{
    NS_ABORT_MSG_IF(!device || !device->GetNode(), "ModbusHelper: device without a node");
    Ptr<ModbusSlave> s = m_slaveFactory.Create<ModbusSlave>();
    s->SetAddress(address);
    s->SetRegisterBank(bank);
    s->SetDevice(device);
    device->GetNode()->AddApplication(s);
    s->SetStartTime(Seconds(0));
    return s;
}

} // namespace ns3
