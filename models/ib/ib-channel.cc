#include "ib-channel.h"

#include "ib-net-device.h"

#include "ns3/double.h"
#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbChannel");
NS_OBJECT_ENSURE_REGISTERED(IbChannel);

TypeId
IbChannel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbChannel")
            .SetParent<Channel>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbChannel>()
            .AddAttribute("Length",
                          "Cable length, metres.",
                          DoubleValue(2.0),
                          MakeDoubleAccessor(&IbChannel::SetLength, &IbChannel::GetLength),
                          MakeDoubleChecker<double>(0.0, 1e6))
            .AddAttribute("DelayPerMeter",
                          "Propagation delay per metre of cable (about 5 ns/m for copper and "
                          "fibre, i.e. 0.67 c).",
                          TimeValue(NanoSeconds(5)),
                          MakeTimeAccessor(&IbChannel::SetDelayPerMeter,
                                           &IbChannel::GetDelayPerMeter),
                          MakeTimeChecker());
    return tid;
}

IbChannel::IbChannel()
    : m_lengthMeters(2.0),
      m_delayPerMeter(NanoSeconds(5))
{
    UpdateDelay();
}

void
IbChannel::SetLength(double meters)
{
    m_lengthMeters = meters;
    UpdateDelay();
}

void
IbChannel::SetDelayPerMeter(Time perMeter)
{
    m_delayPerMeter = perMeter;
    UpdateDelay();
}

void
IbChannel::UpdateDelay()
{
    m_delayPs = static_cast<int64_t>(m_delayPerMeter.GetPicoSeconds() * m_lengthMeters);
    m_delay = PicoSeconds(m_delayPs);
    PushStateToPorts();
}

void
IbChannel::NextGeneration()
{
    m_generation++;
    PushStateToPorts();
}

void
IbChannel::PushStateToPorts()
{
    for (const auto& dev : m_dev)
    {
        if (dev)
        {
            dev->SyncCable(m_generation, m_delayPs);
        }
    }
}

void
IbChannel::Attach(Ptr<IbNetDevice> device)
{
    NS_ABORT_MSG_IF(m_dev[1], "IbChannel: a cable connects exactly two ports");
    if (!m_dev[0])
    {
        m_dev[0] = device;
        PushStateToPorts();
        return;
    }
    m_dev[1] = device;
    PushStateToPorts();
    m_dev[0]->NotifyCableConnected();
    m_dev[1]->NotifyCableConnected();
}

Ptr<IbNetDevice>
IbChannel::GetPeer(const IbNetDevice* device) const
{
    if (m_dev[0] == device)
    {
        return m_dev[1];
    }
    if (m_dev[1] == device)
    {
        return m_dev[0];
    }
    return nullptr;
}

std::size_t
IbChannel::GetNDevices() const
{
    return (m_dev[0] ? 1 : 0) + (m_dev[1] ? 1 : 0);
}

Ptr<NetDevice>
IbChannel::GetDevice(std::size_t i) const
{
    return i < 2 ? m_dev[i] : nullptr;
}

} // namespace ns3
