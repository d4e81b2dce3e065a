#include "ib-cc-attributes.h"

#include "models/rdma/ib-wire-bytes.h"

#include <cstring>

namespace ns3
{

namespace
{
void
Store16(uint8_t* out, uint16_t v)
{
    out[0] = static_cast<uint8_t>(v >> 8);
    out[1] = static_cast<uint8_t>(v);
}

uint16_t
Load16(const uint8_t* in)
{
    return static_cast<uint16_t>((in[0] << 8) | in[1]);
}
} // namespace

void
IbCongestionInfoAttr::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    Store16(out, congestionInfo);
    out[2] = controlTableCap;
}

void
IbCongestionInfoAttr::ReadFrom(const uint8_t* in)
{
    congestionInfo = Load16(in);
    controlTableCap = in[2];
}

void
IbCongestionKeyInfoAttr::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    IbWireStore64(out, ccKey);
    out[8] = protectBit ? 0x80 : 0;
    Store16(out + 10, leasePeriod);
    Store16(out + 12, violations);
}

void
IbCongestionKeyInfoAttr::ReadFrom(const uint8_t* in)
{
    ccKey = IbWireLoad64(in);
    protectBit = (in[8] & 0x80) != 0;
    leasePeriod = Load16(in + 10);
    violations = Load16(in + 12);
}

void
IbSwitchCongestionSettingAttr::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    IbWireStore32(out, s.controlMap);
    std::memcpy(out + 4, s.victimMask.data(), 32);
    std::memcpy(out + 36, s.creditMask.data(), 32);
    out[68] = static_cast<uint8_t>((s.threshold & 0xF) << 4);
    out[69] = s.packetSize;
    out[70] = static_cast<uint8_t>((s.csThreshold & 0xF) << 4);
    Store16(out + 72, s.csReturnDelay);
    Store16(out + 74, s.markingRate);
}

void
IbSwitchCongestionSettingAttr::ReadFrom(const uint8_t* in)
{
    s.controlMap = IbWireLoad32(in);
    std::memcpy(s.victimMask.data(), in + 4, 32);
    std::memcpy(s.creditMask.data(), in + 36, 32);
    s.threshold = in[68] >> 4;
    s.packetSize = in[69];
    s.csThreshold = in[70] >> 4;
    s.csReturnDelay = Load16(in + 72);
    s.markingRate = Load16(in + 74);
}

void
IbSwitchPortCongestionSettingAttr::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    for (size_t i = 0; i < ports.size(); ++i)
    {
        const IbCcSwitchPortSetting& p = ports[i];
        uint8_t* e = out + 4 * i;
        e[0] = static_cast<uint8_t>((p.valid ? 0x80 : 0) | ((p.controlType & 1) << 6) |
                                    (p.threshold & 0xF));
        e[1] = p.packetSize;
        Store16(e + 2, p.markingRate);
    }
}

void
IbSwitchPortCongestionSettingAttr::ReadFrom(const uint8_t* in)
{
    for (size_t i = 0; i < ports.size(); ++i)
    {
        const uint8_t* e = in + 4 * i;
        IbCcSwitchPortSetting& p = ports[i];
        p.valid = (e[0] & 0x80) != 0;
        p.controlType = (e[0] >> 6) & 1;
        p.threshold = e[0] & 0xF;
        p.packetSize = e[1];
        p.markingRate = Load16(e + 2);
    }
}

void
IbCaCongestionSettingAttr::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    Store16(out, portControl);
    Store16(out + 2, controlMap);
    for (size_t sl = 0; sl < entries.size(); ++sl)
    {
        uint8_t* e = out + 4 + 8 * sl;
        Store16(e, entries[sl].cctiTimer);
        e[2] = entries[sl].cctiIncrease;
        e[3] = entries[sl].triggerThreshold;
        e[4] = entries[sl].cctiMin;
    }
}

void
IbCaCongestionSettingAttr::ReadFrom(const uint8_t* in)
{
    portControl = Load16(in);
    controlMap = Load16(in + 2);
    for (size_t sl = 0; sl < entries.size(); ++sl)
    {
        const uint8_t* e = in + 4 + 8 * sl;
        entries[sl].cctiTimer = Load16(e);
        entries[sl].cctiIncrease = e[2];
        entries[sl].triggerThreshold = e[3];
        entries[sl].cctiMin = e[4];
    }
}

void
IbCongestionControlTableAttr::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    Store16(out, cctiLimit);
    for (size_t i = 0; i < entries.size(); ++i)
    {
        Store16(out + 4 + 2 * i, entries[i].Pack());
    }
}

void
IbCongestionControlTableAttr::ReadFrom(const uint8_t* in)
{
    cctiLimit = Load16(in);
    for (size_t i = 0; i < entries.size(); ++i)
    {
        entries[i] = IbCctEntry::Unpack(Load16(in + 4 + 2 * i));
    }
}

} // namespace ns3
