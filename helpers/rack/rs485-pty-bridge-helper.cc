#include "rs485-pty-bridge-helper.h"

#include "models/common/cnuas-init.h"

#include "ns3/config.h"
#include "ns3/enum.h"
#include "ns3/global-value.h"
#include "ns3/realtime-simulator-impl.h"
#include "ns3/string.h"

namespace ns3
{

Rs485PtyBridgeHelper::Rs485PtyBridgeHelper()
{
    m_bridgeFactory.SetTypeId("ns3::Rs485PtyBridge");
}

void
Rs485PtyBridgeHelper::SetBridgeAttribute(const std::string& name, const AttributeValue& value)
{
    m_bridgeFactory.Set(name, value);
}

void
Rs485PtyBridgeHelper::SetDeviceAttribute(const std::string& name, const AttributeValue& value)
{
    m_busHelper.SetDeviceAttribute(name, value);
}

void
Rs485PtyBridgeHelper::SetFormat(const Rs485Format& f)
{
    m_busHelper.SetFormat(f);
}

void
Rs485PtyBridgeHelper::EnableRealtime()
{
    Config::SetDefault("ns3::RealtimeSimulatorImpl::SynchronizationMode",
                       EnumValue(RealtimeSimulatorImpl::SYNC_BEST_EFFORT));
    GlobalValue::Bind("SimulatorImplementationType", StringValue("ns3::RealtimeSimulatorImpl"));
}

void
Rs485PtyBridgeHelper::DisableRealtime()
{
    GlobalValue::Bind("SimulatorImplementationType", StringValue(kCnuasSimulatorImplementation));
}

Ptr<Rs485PtyBridge>
Rs485PtyBridgeHelper::Install(Ptr<Node> node, Ptr<Rs485Channel> bus) const
{
    Ptr<Rs485Device> dev = m_busHelper.Install(node, bus);
    Ptr<Rs485PtyBridge> bridge = m_bridgeFactory.Create<Rs485PtyBridge>();
    bridge->SetDevice(dev);
    return bridge;
}

} // namespace ns3
