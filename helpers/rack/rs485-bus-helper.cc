#include "rs485-bus-helper.h"

#include "ns3/enum.h"
#include "ns3/node.h"
#include "ns3/uinteger.h"

namespace ns3
{

Rs485BusHelper::Rs485BusHelper()
{
    m_channelFactory.SetTypeId("ns3::Rs485Channel");
    m_deviceFactory.SetTypeId("ns3::Rs485Device");
}

void
Rs485BusHelper::SetChannelAttribute(const std::string& name, const AttributeValue& value)
{
    m_channelFactory.Set(name, value);
}

void
Rs485BusHelper::SetDeviceAttribute(const std::string& name, const AttributeValue& value)
{
    m_deviceFactory.Set(name, value);
}

void
Rs485BusHelper::SetFormat(const Rs485Format& f)
{
    m_deviceFactory.Set("BaudRate", UintegerValue(f.baudRate));
    m_deviceFactory.Set("DataBits", UintegerValue(f.dataBits));
    m_deviceFactory.Set("Parity", EnumValue(static_cast<int>(f.parity)));
    m_deviceFactory.Set("StopBits", UintegerValue(f.stopBits));
}

Ptr<Rs485Channel>
Rs485BusHelper::CreateBus() const
{
    return m_channelFactory.Create<Rs485Channel>();
}

Ptr<Rs485Device>
Rs485BusHelper::Install(Ptr<Node> node, Ptr<Rs485Channel> bus) const
{
    Ptr<Rs485Device> dev = m_deviceFactory.Create<Rs485Device>();
    dev->SetAddress(Mac8Address::Allocate());
    node->AddDevice(dev);
    dev->Attach(bus);
    return dev;
}

NetDeviceContainer
Rs485BusHelper::Install(const NodeContainer& nodes, Ptr<Rs485Channel> bus) const
{
    NetDeviceContainer c;
    for (auto it = nodes.Begin(); it != nodes.End(); ++it)
    {
        c.Add(Install(*it, bus));
    }
    return c;
}

NetDeviceContainer
Rs485BusHelper::Install(const NodeContainer& nodes) const
{
    return Install(nodes, CreateBus());
}

} // namespace ns3
