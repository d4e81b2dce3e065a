#include "ib-cc-switch-marker.h"

#include "ns3/log.h"

#include <limits>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbCcSwitchMarker");
NS_OBJECT_ENSURE_REGISTERED(IbCcSwitchMarker);

TypeId
IbCcSwitchMarker::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbCcSwitchMarker")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbCcSwitchMarker>()
            .AddTraceSource("Mark",
                            "A packet got FECN: output port, VL, blocks queued for it",
                            MakeTraceSourceAccessor(&IbCcSwitchMarker::m_markTrace),
                            "ns3::IbCcSwitchMarker::MarkCallback");
    return tid;
}

IbCcSwitchMarker::IbCcSwitchMarker()
    : m_ports(256),
      m_skip(256 * 16, 0)
{
}

void
IbCcSwitchMarker::SetSwitchSetting(const IbCcSwitchSetting& s)
{
    m_setting = s;
    std::fill(m_skip.begin(), m_skip.end(), 0);
}

const IbCcSwitchSetting&
IbCcSwitchMarker::GetSwitchSetting() const
{
    return m_setting;
}

void
IbCcSwitchMarker::SetPortSetting(uint8_t port, const IbCcSwitchPortSetting& s)
{
    m_ports[port] = s;
}

IbCcSwitchPortSetting
IbCcSwitchMarker::GetPortSetting(uint8_t port) const
{
    return m_ports[port];
}

uint32_t
IbCcSwitchMarker::ThresholdBlocks(uint8_t port, uint32_t bufferBlocks) const
{
    const IbCcSwitchPortSetting& p = m_ports[port];
    const bool own = p.valid && p.controlType == 0;
    const uint8_t t = (own ? p.threshold : m_setting.threshold) & 0xF;
    if (t == 0)
    {
        return std::numeric_limits<uint32_t>::max();
    }
    return static_cast<uint32_t>(uint64_t(bufferBlocks) * (16 - t) / 16);
}

bool
IbCcSwitchMarker::ShouldMark(uint8_t port,
                             uint8_t vl,
                             uint32_t queuedBlocks,
                             uint32_t bufferBlocks,
                             bool victim,
                             uint16_t blocks)
{
    if (queuedBlocks <= ThresholdBlocks(port, bufferBlocks))
    {
        return false;
    }
    ++m_congested;
    const IbCcSwitchPortSetting& p = m_ports[port];
    const bool own = p.valid && p.controlType == 0;
    if (victim && !m_setting.PortBit(m_setting.victimMask, port))
    {
        // A port held back by credit is a victim of congestion further down; that congestion
        // point marks the flows, this one would also mark innocent flows (annex A10).
        return false;
    }
    if (blocks < (own ? p.packetSize : m_setting.packetSize))
    {
        return false;
    }
    uint32_t& skip = m_skip[size_t(port) * 16 + (vl & 0xF)];
    if (skip > 0)
    {
        --skip;
        return false;
    }
    skip = own ? p.markingRate : m_setting.markingRate;
    ++m_marked;
    m_markTrace(port, vl, queuedBlocks);
    return true;
}

} // namespace ns3
