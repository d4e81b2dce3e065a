#include "eth-channel.h"

#include "eth-net-device.h"

#include "ns3/double.h"
#include "ns3/log.h"

#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EthChannel");
NS_OBJECT_ENSURE_REGISTERED(EthChannel);

TypeId
EthChannel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EthChannel")
            .SetParent<Channel>()
            .SetGroupName("Cnuas")
            .AddConstructor<EthChannel>()
            .AddAttribute("Length",
                          "Cable length, metres.",
                          DoubleValue(2.0),
                          MakeDoubleAccessor(&EthChannel::SetLength,
                                             &EthChannel::GetLengthMeters),
                          MakeDoubleChecker<double>(0.0, 1e6))
            .AddAttribute("DelayPerMeter",
                          "Propagation delay per metre of cable (about 5 ns/m in fibre and "
                          "twinax).",
                          TimeValue(NanoSeconds(5)),
                          MakeTimeAccessor(&EthChannel::SetDelayPerMeter,
                                           &EthChannel::GetDelayPerMeter),
                          MakeTimeChecker(Time(0)));
    return tid;
}

EthChannel::EthChannel()
    : m_lengthMeters(2.0),
      m_delayPerMeter(NanoSeconds(5))
{
}

void
EthChannel::DoDispose()
{
    m_dev[0] = nullptr;
    m_dev[1] = nullptr;
    Channel::DoDispose();
}

void
EthChannel::Attach(Ptr<EthNetDevice> device)
{
    NS_ABORT_MSG_IF(m_dev[1], "EthChannel: a cable connects exactly two ports");
    if (!m_dev[0])
    {
        m_dev[0] = device;
    }
    else
    {
        m_dev[1] = device;
        m_up = true;
    }
    PushStateToPorts();
}

void
EthChannel::PushStateToPorts()
{
    for (const auto& dev : m_dev)
    {
        if (dev)
        {
            dev->SyncCable(m_up, m_generation, m_delayPs);
        }
    }
}

Ptr<EthNetDevice>
EthChannel::GetPeer(const EthNetDevice* device) const
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

void
EthChannel::SetLength(double meters)
{
    m_lengthMeters = meters;
    m_delayPs = std::llround(m_delayPerMeter.GetPicoSeconds() * m_lengthMeters);
    PushStateToPorts();
}

void
EthChannel::SetDelayPerMeter(Time d)
{
    m_delayPerMeter = d;
    m_delayPs = std::llround(m_delayPerMeter.GetPicoSeconds() * m_lengthMeters);
    PushStateToPorts();
}

Time
EthChannel::GetDelay() const
{
    return PicoSeconds(m_delayPs);
}

void
EthChannel::SetUp(bool up)
{
    if (up == m_up || !m_dev[1])
    {
        return;
    }
    m_up = up;
    if (!up)
    {
        m_generation++;
    }
    PushStateToPorts();
    m_dev[0]->NotifyLinkChange(up);
    m_dev[1]->NotifyLinkChange(up);
}

std::size_t
EthChannel::GetNDevices() const
{
    return (m_dev[0] ? 1 : 0) + (m_dev[1] ? 1 : 0);
}

Ptr<NetDevice>
EthChannel::GetDevice(std::size_t i) const
{
    return i < 2 ? m_dev[i] : nullptr;
}

} // namespace ns3
