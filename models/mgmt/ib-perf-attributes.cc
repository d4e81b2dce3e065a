#include "ib-perf-attributes.h"

#include "ib-mad-header.h"

#include "models/rdma/ib-wire-bytes.h"

#include <cstring>

namespace ns3
{

void
IbPortCountersAttr::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    out[1] = portSelect;
    IbMadStore16(out + 2, counterSelect);
    IbMadStore16(out + 4, symbolErrorCounter);
    out[6] = linkErrorRecoveryCounter;
    out[7] = linkDownedCounter;
    IbMadStore16(out + 8, portRcvErrors);
    IbMadStore16(out + 10, portRcvRemotePhysicalErrors);
    IbMadStore16(out + 12, portRcvSwitchRelayErrors);
    IbMadStore16(out + 14, portXmitDiscards);
    out[16] = portXmitConstraintErrors;
    out[17] = portRcvConstraintErrors;
    out[18] = counterSelect2;
    out[19] = static_cast<uint8_t>((localLinkIntegrityErrors << 4) |
                                   (excessiveBufferOverrunErrors & 0x0F));
    // bytes 20-21 reserved
    IbMadStore16(out + 22, vl15Dropped);
    IbWireStore32(out + 24, portXmitData);
    IbWireStore32(out + 28, portRcvData);
    IbWireStore32(out + 32, portXmitPkts);
    IbWireStore32(out + 36, portRcvPkts);
    IbWireStore32(out + 40, portXmitWait);
}

void
IbPortCountersAttr::ReadFrom(const uint8_t* in)
{
    portSelect = in[1];
    counterSelect = IbMadLoad16(in + 2);
    symbolErrorCounter = IbMadLoad16(in + 4);
    linkErrorRecoveryCounter = in[6];
    linkDownedCounter = in[7];
    portRcvErrors = IbMadLoad16(in + 8);
    portRcvRemotePhysicalErrors = IbMadLoad16(in + 10);
    portRcvSwitchRelayErrors = IbMadLoad16(in + 12);
    portXmitDiscards = IbMadLoad16(in + 14);
    portXmitConstraintErrors = in[16];
    portRcvConstraintErrors = in[17];
    counterSelect2 = in[18];
    localLinkIntegrityErrors = in[19] >> 4;
    excessiveBufferOverrunErrors = in[19] & 0x0F;
    vl15Dropped = IbMadLoad16(in + 22);
    portXmitData = IbWireLoad32(in + 24);
    portRcvData = IbWireLoad32(in + 28);
    portXmitPkts = IbWireLoad32(in + 32);
    portRcvPkts = IbWireLoad32(in + 36);
    portXmitWait = IbWireLoad32(in + 40);
}

void
IbPortCountersExtendedAttr::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    out[1] = portSelect;
    IbMadStore16(out + 2, counterSelect);
    IbWireStore64(out + 8, portXmitData);
    IbWireStore64(out + 16, portRcvData);
    IbWireStore64(out + 24, portXmitPkts);
    IbWireStore64(out + 32, portRcvPkts);
    IbWireStore64(out + 40, portUnicastXmitPkts);
    IbWireStore64(out + 48, portUnicastRcvPkts);
    IbWireStore64(out + 56, portMulticastXmitPkts);
    IbWireStore64(out + 64, portMulticastRcvPkts);
}

void
IbPortCountersExtendedAttr::ReadFrom(const uint8_t* in)
{
    portSelect = in[1];
    counterSelect = IbMadLoad16(in + 2);
    portXmitData = IbWireLoad64(in + 8);
    portRcvData = IbWireLoad64(in + 16);
    portXmitPkts = IbWireLoad64(in + 24);
    portRcvPkts = IbWireLoad64(in + 32);
    portUnicastXmitPkts = IbWireLoad64(in + 40);
    portUnicastRcvPkts = IbWireLoad64(in + 48);
    portMulticastXmitPkts = IbWireLoad64(in + 56);
    portMulticastRcvPkts = IbWireLoad64(in + 64);
}

void
IbClassPortInfo::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    out[0] = baseVersion;
    out[1] = classVersion;
    IbMadStore16(out + 2, capabilityMask);
    IbWireStore32(out + 4, (capabilityMask2 << 5) | (respTimeValue & 0x1F));
    std::memcpy(out + 8, redirectGid.data(), 16);
    IbWireStore32(out + 24, redirectTcSlFl);
    IbMadStore16(out + 28, redirectLid);
    IbMadStore16(out + 30, redirectPkey);
    IbWireStore24(out + 33, redirectQp);
    IbWireStore32(out + 36, redirectQkey);
    std::memcpy(out + 40, trapGid.data(), 16);
    IbWireStore32(out + 56, trapTcSlFl);
    IbMadStore16(out + 60, trapLid);
    IbMadStore16(out + 62, trapPkey);
    out[64] = trapHopLimit;
    IbWireStore24(out + 65, trapQp);
    IbWireStore32(out + 68, trapQkey);
}

void
IbClassPortInfo::ReadFrom(const uint8_t* in)
{
    baseVersion = in[0];
    classVersion = in[1];
    capabilityMask = IbMadLoad16(in + 2);
    const uint32_t w = IbWireLoad32(in + 4);
    capabilityMask2 = w >> 5;
    respTimeValue = w & 0x1F;
    std::memcpy(redirectGid.data(), in + 8, 16);
    redirectTcSlFl = IbWireLoad32(in + 24);
    redirectLid = IbMadLoad16(in + 28);
    redirectPkey = IbMadLoad16(in + 30);
    redirectQp = IbWireLoad24(in + 33);
    redirectQkey = IbWireLoad32(in + 36);
    std::memcpy(trapGid.data(), in + 40, 16);
    trapTcSlFl = IbWireLoad32(in + 56);
    trapLid = IbMadLoad16(in + 60);
    trapPkey = IbMadLoad16(in + 62);
    trapHopLimit = in[64];
    trapQp = IbWireLoad24(in + 65);
    trapQkey = IbWireLoad32(in + 68);
}

} // namespace ns3
