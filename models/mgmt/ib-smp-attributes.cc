#include "ib-smp-attributes.h"

#include "ib-mad-header.h"

#include "models/rdma/ib-wire-bytes.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

// ---- NodeInfo, §14.2.5.3 ------------------------------------------------------------------

void
IbNodeInfo::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    out[0] = baseVersion;
    out[1] = classVersion;
    out[2] = nodeType;
    out[3] = numPorts;
    IbWireStore64(out + 4, systemImageGuid);
    IbWireStore64(out + 12, nodeGuid);
    IbWireStore64(out + 20, portGuid);
    IbMadStore16(out + 28, partitionCap);
    IbMadStore16(out + 30, deviceId);
    IbWireStore32(out + 32, revision);
    out[36] = localPortNum;
    IbWireStore24(out + 37, vendorId);
}

void
IbNodeInfo::ReadFrom(const uint8_t* in)
{
    baseVersion = in[0];
    classVersion = in[1];
    nodeType = in[2];
    numPorts = in[3];
    systemImageGuid = IbWireLoad64(in + 4);
    nodeGuid = IbWireLoad64(in + 12);
    portGuid = IbWireLoad64(in + 20);
    partitionCap = IbMadLoad16(in + 28);
    deviceId = IbMadLoad16(in + 30);
    revision = IbWireLoad32(in + 32);
    localPortNum = in[36];
    vendorId = IbWireLoad24(in + 37);
}

// ---- NodeDescription, §14.2.5.2 -----------------------------------------------------------

void
IbNodeDescription::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    std::memcpy(out, text.data(), std::min<size_t>(text.size(), kSize));
}

void
IbNodeDescription::ReadFrom(const uint8_t* in)
{
    const uint8_t* end = std::find(in, in + kSize, 0);
    text.assign(reinterpret_cast<const char*>(in), static_cast<size_t>(end - in));
}

// ---- SwitchInfo, §14.2.5.4 ----------------------------------------------------------------

void
IbSwitchInfo::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    IbMadStore16(out + 0, linearFdbCap);
    IbMadStore16(out + 2, randomFdbCap);
    IbMadStore16(out + 4, multicastFdbCap);
    IbMadStore16(out + 6, linearFdbTop);
    out[8] = defaultPort;
    out[9] = defaultMulticastPrimaryPort;
    out[10] = defaultMulticastNotPrimaryPort;
    out[11] = static_cast<uint8_t>(((lifeTimeValue & 0x1F) << 3) | (portStateChange ? 0x04 : 0) |
                                   (optimizedSlToVlMapping & 0x03));
    IbMadStore16(out + 12, lidsPerPort);
    IbMadStore16(out + 14, partitionEnforcementCap);
    out[16] = static_cast<uint8_t>((enforcementCaps & 0x1F) << 3);
    IbMadStore16(out + 18, multicastFdbTop); // bit 144: bits 133-143 are reserved
}

void
IbSwitchInfo::ReadFrom(const uint8_t* in)
{
    linearFdbCap = IbMadLoad16(in + 0);
    randomFdbCap = IbMadLoad16(in + 2);
    multicastFdbCap = IbMadLoad16(in + 4);
    linearFdbTop = IbMadLoad16(in + 6);
    defaultPort = in[8];
    defaultMulticastPrimaryPort = in[9];
    defaultMulticastNotPrimaryPort = in[10];
    lifeTimeValue = in[11] >> 3;
    portStateChange = (in[11] & 0x04) != 0;
    optimizedSlToVlMapping = in[11] & 0x03;
    lidsPerPort = IbMadLoad16(in + 12);
    partitionEnforcementCap = IbMadLoad16(in + 14);
    enforcementCaps = in[16] >> 3;
    multicastFdbTop = IbMadLoad16(in + 18);
}

// ---- PortInfo, §14.2.5.6 ------------------------------------------------------------------

void
IbPortInfo::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    IbWireStore64(out + 0, mKey);
    IbWireStore64(out + 8, gidPrefix);
    IbMadStore16(out + 16, lid);
    IbMadStore16(out + 18, masterSmLid);
    IbWireStore32(out + 20, capabilityMask);
    IbMadStore16(out + 24, diagCode);
    IbMadStore16(out + 26, mKeyLeasePeriod);
    out[28] = localPortNum;
    out[29] = linkWidthEnabled;
    out[30] = linkWidthSupported;
    out[31] = linkWidthActive;
    out[32] = static_cast<uint8_t>((linkSpeedSupported << 4) | (portState & 0x0F));
    out[33] = static_cast<uint8_t>((portPhysicalState << 4) | (linkDownDefaultState & 0x0F));
    out[34] = static_cast<uint8_t>(((mKeyProtectBits & 0x03) << 6) | (lmc & 0x07));
    out[35] = static_cast<uint8_t>((linkSpeedActive << 4) | (linkSpeedEnabled & 0x0F));
    out[36] = static_cast<uint8_t>((neighborMtu << 4) | (masterSmSl & 0x0F));
    out[37] = static_cast<uint8_t>((vlCap << 4) | (initType & 0x0F));
    out[38] = vlHighLimit;
    out[39] = vlArbitrationHighCap;
    out[40] = vlArbitrationLowCap;
    out[41] = static_cast<uint8_t>((initTypeReply << 4) | (mtuCap & 0x0F));
    out[42] = static_cast<uint8_t>(((vlStallCount & 0x07) << 5) | (hoqLife & 0x1F));
    out[43] = static_cast<uint8_t>((operationalVls << 4) | (enforcementBits & 0x0F));
    IbMadStore16(out + 44, mKeyViolations);
    IbMadStore16(out + 46, pKeyViolations);
    IbMadStore16(out + 48, qKeyViolations);
    out[50] = guidCap;
    out[51] = static_cast<uint8_t>((clientReregister ? 0x80 : 0) | (subnetTimeOut & 0x1F));
    out[52] = respTimeValue & 0x1F;
    out[53] = static_cast<uint8_t>((localPhyErrors << 4) | (overrunErrors & 0x0F));
    IbMadStore16(out + 54, maxCreditHint);
    IbWireStore24(out + 57, linkRoundTripLatency);
    IbMadStore16(out + 60, capabilityMask2);
    out[62] = static_cast<uint8_t>((linkSpeedExtActive << 4) | (linkSpeedExtSupported & 0x0F));
    out[63] = linkSpeedExtEnabled & 0x1F;
}

void
IbPortInfo::ReadFrom(const uint8_t* in)
{
    mKey = IbWireLoad64(in + 0);
    gidPrefix = IbWireLoad64(in + 8);
    lid = IbMadLoad16(in + 16);
    masterSmLid = IbMadLoad16(in + 18);
    capabilityMask = IbWireLoad32(in + 20);
    diagCode = IbMadLoad16(in + 24);
    mKeyLeasePeriod = IbMadLoad16(in + 26);
    localPortNum = in[28];
    linkWidthEnabled = in[29];
    linkWidthSupported = in[30];
    linkWidthActive = in[31];
    linkSpeedSupported = in[32] >> 4;
    portState = in[32] & 0x0F;
    portPhysicalState = in[33] >> 4;
    linkDownDefaultState = in[33] & 0x0F;
    mKeyProtectBits = in[34] >> 6;
    lmc = in[34] & 0x07;
    linkSpeedActive = in[35] >> 4;
    linkSpeedEnabled = in[35] & 0x0F;
    neighborMtu = in[36] >> 4;
    masterSmSl = in[36] & 0x0F;
    vlCap = in[37] >> 4;
    initType = in[37] & 0x0F;
    vlHighLimit = in[38];
    vlArbitrationHighCap = in[39];
    vlArbitrationLowCap = in[40];
    initTypeReply = in[41] >> 4;
    mtuCap = in[41] & 0x0F;
    vlStallCount = in[42] >> 5;
    hoqLife = in[42] & 0x1F;
    operationalVls = in[43] >> 4;
    enforcementBits = in[43] & 0x0F;
    mKeyViolations = IbMadLoad16(in + 44);
    pKeyViolations = IbMadLoad16(in + 46);
    qKeyViolations = IbMadLoad16(in + 48);
    guidCap = in[50];
    clientReregister = (in[51] & 0x80) != 0;
    subnetTimeOut = in[51] & 0x1F;
    respTimeValue = in[52] & 0x1F;
    localPhyErrors = in[53] >> 4;
    overrunErrors = in[53] & 0x0F;
    maxCreditHint = IbMadLoad16(in + 54);
    linkRoundTripLatency = IbWireLoad24(in + 57);
    capabilityMask2 = IbMadLoad16(in + 60);
    linkSpeedExtActive = in[62] >> 4;
    linkSpeedExtSupported = in[62] & 0x0F;
    linkSpeedExtEnabled = in[63] & 0x1F;
}

// ---- tables -------------------------------------------------------------------------------

void
IbPKeyTableBlock::WriteTo(uint8_t* out) const
{
    for (uint32_t i = 0; i < kEntries; ++i)
    {
        IbMadStore16(out + 2 * i, pkey[i]);
    }
}

void
IbPKeyTableBlock::ReadFrom(const uint8_t* in)
{
    for (uint32_t i = 0; i < kEntries; ++i)
    {
        pkey[i] = IbMadLoad16(in + 2 * i);
    }
}

void
IbGuidInfoBlock::WriteTo(uint8_t* out) const
{
    for (uint32_t i = 0; i < kEntries; ++i)
    {
        IbWireStore64(out + 8 * i, guid[i]);
    }
}

void
IbGuidInfoBlock::ReadFrom(const uint8_t* in)
{
    for (uint32_t i = 0; i < kEntries; ++i)
    {
        guid[i] = IbWireLoad64(in + 8 * i);
    }
}

void
IbLftBlock::WriteTo(uint8_t* out) const
{
    std::memcpy(out, port.data(), kSize);
}

void
IbLftBlock::ReadFrom(const uint8_t* in)
{
    std::memcpy(port.data(), in, kSize);
}

void
IbMftBlock::WriteTo(uint8_t* out) const
{
    for (uint32_t i = 0; i < kEntries; ++i)
    {
        IbMadStore16(out + 2 * i, mask[i]);
    }
}

void
IbMftBlock::ReadFrom(const uint8_t* in)
{
    for (uint32_t i = 0; i < kEntries; ++i)
    {
        mask[i] = IbMadLoad16(in + 2 * i);
    }
}

void
IbSlToVlTable::WriteTo(uint8_t* out) const
{
    for (uint32_t i = 0; i < 8; ++i)
    {
        out[i] = static_cast<uint8_t>(((vl[2 * i] & 0x0F) << 4) | (vl[2 * i + 1] & 0x0F));
    }
}

void
IbSlToVlTable::ReadFrom(const uint8_t* in)
{
    for (uint32_t i = 0; i < 8; ++i)
    {
        vl[2 * i] = in[i] >> 4;
        vl[2 * i + 1] = in[i] & 0x0F;
    }
}

void
IbVlArbTableBlock::WriteTo(uint8_t* out) const
{
    for (uint32_t i = 0; i < kEntries; ++i)
    {
        out[2 * i] = vl[i] & 0x0F;
        out[2 * i + 1] = weight[i];
    }
}

void
IbVlArbTableBlock::ReadFrom(const uint8_t* in)
{
    for (uint32_t i = 0; i < kEntries; ++i)
    {
        vl[i] = in[2 * i] & 0x0F;
        weight[i] = in[2 * i + 1];
    }
}

// ---- Notice, §13.4.8.2 --------------------------------------------------------------------

void
IbNotice::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    out[0] = static_cast<uint8_t>((isGeneric ? 0x80 : 0) | (type & 0x7F));
    IbWireStore24(out + 1, producerType);
    IbMadStore16(out + 4, trapNumber);
    IbMadStore16(out + 6, issuerLid);
    IbMadStore16(out + 8,
                 static_cast<uint16_t>((noticeToggle ? 0x8000 : 0) | (noticeCount & 0x7FFF)));
    std::memcpy(out + 10, dataDetails.data(), dataDetails.size());
}

void
IbNotice::ReadFrom(const uint8_t* in)
{
    isGeneric = (in[0] & 0x80) != 0;
    type = in[0] & 0x7F;
    producerType = IbWireLoad24(in + 1);
    trapNumber = IbMadLoad16(in + 4);
    issuerLid = IbMadLoad16(in + 6);
    const uint16_t t = IbMadLoad16(in + 8);
    noticeToggle = (t & 0x8000) != 0;
    noticeCount = t & 0x7FFF;
    std::memcpy(dataDetails.data(), in + 10, dataDetails.size());
}

} // namespace ns3
