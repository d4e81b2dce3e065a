// Assembles RS-485 bus segments: a channel and one transceiver per node.
#ifndef CNUAS_RS485_BUS_HELPER_H
#define CNUAS_RS485_BUS_HELPER_H

#include "models/rack/rs485-channel.h"
#include "models/rack/rs485-device.h"

#include "ns3/net-device-container.h"
#include "ns3/node-container.h"
#include "ns3/object-factory.h"

#include <string>

namespace ns3
{

/**
 * \brief Builds RS-485 buses: Rs485Channel attributes (Length, DelayPerMeter) and Rs485Device
 * attributes (BaudRate, DataBits, Parity, StopBits, TxEnableDelay, ...) are set once here and
 * apply to what Install creates.
 */
class Rs485BusHelper
{
  public:
    Rs485BusHelper();

    void SetChannelAttribute(const std::string& name, const AttributeValue& value);
    void SetDeviceAttribute(const std::string& name, const AttributeValue& value);
    /// Sets BaudRate, DataBits, Parity and StopBits for the devices to come.
    void SetFormat(const Rs485Format& f);

    /// A new, empty bus segment.
    Ptr<Rs485Channel> CreateBus() const;
    /// One transceiver on `node`, attached to `bus`.
    Ptr<Rs485Device> Install(Ptr<Node> node, Ptr<Rs485Channel> bus) const;
    /// One transceiver per node, all on `bus`.
    NetDeviceContainer Install(const NodeContainer& nodes, Ptr<Rs485Channel> bus) const;
    /// A new bus with one transceiver per node; the bus is the devices' channel.
    NetDeviceContainer Install(const NodeContainer& nodes) const;

  private:
    ObjectFactory m_channelFactory;
    ObjectFactory m_deviceFactory;
};

} // namespace ns3

#endif
