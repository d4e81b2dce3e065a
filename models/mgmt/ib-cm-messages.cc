#include "ib-cm-messages.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

namespace
{
void
Put32(uint8_t* p, uint32_t v)
{
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}

uint32_t
Get32(const uint8_t* p)
{
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

void
Put24(uint8_t* p, uint32_t v)
{
    p[0] = static_cast<uint8_t>(v >> 16);
    p[1] = static_cast<uint8_t>(v >> 8);
    p[2] = static_cast<uint8_t>(v);
}

uint32_t
Get24(const uint8_t* p)
{
    return (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | p[2];
}

void
Put64(uint8_t* p, uint64_t v)
{
    Put32(p, static_cast<uint32_t>(v >> 32));
    Put32(p + 4, static_cast<uint32_t>(v));
}

uint64_t
Get64(const uint8_t* p)
{
    return (uint64_t(Get32(p)) << 32) | Get32(p + 4);
}

/// Offset of the private data in each message (after the 24-byte MAD header).
uint32_t
PrivateDataOffset(uint16_t attrId)
{
    switch (attrId)
    {
    case IbCmAttr::Req:
        return 140;
    case IbCmAttr::Rej:
        return 84;
    case IbCmAttr::Rep:
        return 36;
    case IbCmAttr::Rtu:
    case IbCmAttr::Drep:
        return 8;
    case IbCmAttr::Dreq:
        return 12;
    case IbCmAttr::SidrReq:
        return 16;
    case IbCmAttr::SidrRep:
        return 96;
    default:
        return 0;
    }
}
} // namespace

uint32_t
IbCmMessage::PrivateDataRoom(uint16_t attrId)
{
    switch (attrId)
    {
    case IbCmAttr::Req:
        return kIbCmReqPrivateBytes;
    case IbCmAttr::Rej:
        return kIbCmRejPrivateBytes;
    case IbCmAttr::Rep:
        return kIbCmRepPrivateBytes;
    case IbCmAttr::Rtu:
        return kIbCmRtuPrivateBytes;
    case IbCmAttr::Dreq:
        return kIbCmDreqPrivateBytes;
    case IbCmAttr::Drep:
        return kIbCmDrepPrivateBytes;
    case IbCmAttr::SidrReq:
        return kIbCmSidrReqPrivateBytes;
    case IbCmAttr::SidrRep:
        return kIbCmSidrRepPrivateBytes;
    default:
        return 0;
    }
}

const char*
IbCmAttrName(uint16_t attrId)
{
    switch (attrId)
    {
    case IbCmAttr::Req:
        return "REQ";
    case IbCmAttr::Mra:
        return "MRA";
    case IbCmAttr::Rej:
        return "REJ";
    case IbCmAttr::Rep:
        return "REP";
    case IbCmAttr::Rtu:
        return "RTU";
    case IbCmAttr::Dreq:
        return "DREQ";
    case IbCmAttr::Drep:
        return "DREP";
    case IbCmAttr::SidrReq:
        return "SIDR_REQ";
    case IbCmAttr::SidrRep:
        return "SIDR_REP";
    default:
        return "unknown";
    }
}

std::array<uint8_t, kIbMadBytes>
IbCmMessage::Encode() const
{
    std::array<uint8_t, kIbMadBytes> mad{};
    IbMadHeader h;
    h.SetMgmtClass(IbMgmtClass::ComMgt);
    h.SetClassVersion(kIbCmClassVersion);
    h.SetMethod(IbMadMethod::Send); // every CM message is a Send (IBA vol. 1 §12.6)
    h.SetTransactionId(transactionId);
    h.SetAttributeId(attrId);
    h.WriteTo(mad.data());
    uint8_t* d = mad.data() + 24;
    switch (attrId)
    {
    case IbCmAttr::Req: // Table 106
        Put32(d + 0, localCommId);
        Put64(d + 8, serviceId);
        Put64(d + 16, localCaGuid);
        Put32(d + 28, localQkey);
        Put24(d + 32, localQpn);
        d[35] = responderResources;
        d[39] = initiatorDepth;
        d[43] = static_cast<uint8_t>((remoteCmResponseTimeout & 0x1F) << 3 |
                                     (transportServiceType & 3) << 1 |
                                     (endToEndFlowControl ? 1 : 0));
        Put24(d + 44, startingPsn);
        d[47] = static_cast<uint8_t>((localCmResponseTimeout & 0x1F) << 3 | (retryCount & 7));
        IbMadStore16(d + 48, pkey);
        d[50] = static_cast<uint8_t>((pathMtu & 0xF) << 4 | (rnrRetryCount & 7));
        d[51] = static_cast<uint8_t>((maxCmRetries & 0xF) << 4 | (srq ? 0x08 : 0));
        IbMadStore16(d + 52, primary.localLid);
        IbMadStore16(d + 54, primary.remoteLid);
        std::copy(primary.localGid.begin(), primary.localGid.end(), d + 56);
        std::copy(primary.remoteGid.begin(), primary.remoteGid.end(), d + 72);
        Put32(d + 88, (primary.flowLabel & 0xFFFFF) << 12);
        d[91] = static_cast<uint8_t>(primary.packetRate & 0x3F);
        d[92] = primary.trafficClass;
        d[93] = primary.hopLimit;
        d[94] = static_cast<uint8_t>((primary.sl & 0xF) << 4 | (primary.subnetLocal ? 0x08 : 0));
        d[95] = static_cast<uint8_t>((primary.localAckTimeout & 0x1F) << 3);
        break;
    case IbCmAttr::Rep: // Table 110
        Put32(d + 0, localCommId);
        Put32(d + 4, remoteCommId);
        Put32(d + 8, localQkey);
        Put24(d + 12, localQpn);
        Put24(d + 20, startingPsn);
        d[24] = responderResources;
        d[25] = initiatorDepth;
        d[26] = static_cast<uint8_t>((targetAckDelay & 0x1F) << 3 | (failoverAccepted & 3) << 1 |
                                     (endToEndFlowControl ? 1 : 0));
        d[27] = static_cast<uint8_t>((rnrRetryCount & 7) << 5 | (srq ? 0x10 : 0));
        Put64(d + 28, localCaGuid);
        break;
    case IbCmAttr::Rej: // Table 108
        Put32(d + 0, localCommId);
        Put32(d + 4, remoteCommId);
        d[8] = static_cast<uint8_t>((messageRejected & 3) << 6);
        d[9] = 0; // no additional rejection information
        IbMadStore16(d + 10, reason);
        break;
    case IbCmAttr::Rtu:  // Table 111
    case IbCmAttr::Drep: // Table 113
        Put32(d + 0, localCommId);
        Put32(d + 4, remoteCommId);
        break;
    case IbCmAttr::Dreq: // Table 112
        Put32(d + 0, localCommId);
        Put32(d + 4, remoteCommId);
        Put24(d + 8, localQpn); // the receiver's QPN ("remote" from the sender's side)
        break;
    case IbCmAttr::SidrReq: // Table 119
        Put32(d + 0, localCommId);
        IbMadStore16(d + 4, pkey);
        Put64(d + 8, serviceId);
        break;
    case IbCmAttr::SidrRep: // Table 120
        Put32(d + 0, localCommId);
        d[4] = sidrStatus;
        d[5] = 0;
        Put24(d + 8, localQpn);
        Put64(d + 12, serviceId);
        Put32(d + 20, localQkey);
        break;
    default:
        break;
    }
    const uint32_t room = PrivateDataRoom(attrId);
    const uint32_t n = std::min<uint32_t>(room, static_cast<uint32_t>(privateData.size()));
    if (n > 0)
    {
        std::memcpy(d + PrivateDataOffset(attrId), privateData.data(), n);
    }
    return mad;
}

bool
IbCmMessage::Decode(const uint8_t* mad, IbCmMessage& m)
{
    IbMadHeader h;
    h.ReadFrom(mad);
    if (h.GetBaseVersion() != kIbMadBaseVersion || h.GetMgmtClass() != IbMgmtClass::ComMgt ||
        h.GetClassVersion() != kIbCmClassVersion || h.GetMethod() != IbMadMethod::Send)
    {
        return false;
    }
    m = IbCmMessage();
    m.attrId = h.GetAttributeId();
    m.transactionId = h.GetTransactionId();
    const uint8_t* d = mad + 24;
    switch (m.attrId)
    {
    case IbCmAttr::Req:
        m.localCommId = Get32(d);
        m.serviceId = Get64(d + 8);
        m.localCaGuid = Get64(d + 16);
        m.localQkey = Get32(d + 28);
        m.localQpn = Get24(d + 32);
        m.responderResources = d[35];
        m.initiatorDepth = d[39];
        m.remoteCmResponseTimeout = d[43] >> 3;
        m.transportServiceType = (d[43] >> 1) & 3;
        m.endToEndFlowControl = d[43] & 1;
        m.startingPsn = Get24(d + 44);
        m.localCmResponseTimeout = d[47] >> 3;
        m.retryCount = d[47] & 7;
        m.pkey = IbMadLoad16(d + 48);
        m.pathMtu = d[50] >> 4;
        m.rnrRetryCount = d[50] & 7;
        m.maxCmRetries = d[51] >> 4;
        m.srq = (d[51] & 0x08) != 0;
        m.primary.localLid = IbMadLoad16(d + 52);
        m.primary.remoteLid = IbMadLoad16(d + 54);
        std::copy(d + 56, d + 72, m.primary.localGid.begin());
        std::copy(d + 72, d + 88, m.primary.remoteGid.begin());
        m.primary.flowLabel = Get32(d + 88) >> 12;
        m.primary.packetRate = d[91] & 0x3F;
        m.primary.trafficClass = d[92];
        m.primary.hopLimit = d[93];
        m.primary.sl = d[94] >> 4;
        m.primary.subnetLocal = (d[94] & 0x08) != 0;
        m.primary.localAckTimeout = d[95] >> 3;
        break;
    case IbCmAttr::Rep:
        m.localCommId = Get32(d);
        m.remoteCommId = Get32(d + 4);
        m.localQkey = Get32(d + 8);
        m.localQpn = Get24(d + 12);
        m.startingPsn = Get24(d + 20);
        m.responderResources = d[24];
        m.initiatorDepth = d[25];
        m.targetAckDelay = d[26] >> 3;
        m.failoverAccepted = (d[26] >> 1) & 3;
        m.endToEndFlowControl = d[26] & 1;
        m.rnrRetryCount = d[27] >> 5;
        m.srq = (d[27] & 0x10) != 0;
        m.localCaGuid = Get64(d + 28);
        break;
    case IbCmAttr::Rej:
        m.localCommId = Get32(d);
        m.remoteCommId = Get32(d + 4);
        m.messageRejected = d[8] >> 6;
        m.reason = IbMadLoad16(d + 10);
        break;
    case IbCmAttr::Rtu:
    case IbCmAttr::Drep:
        m.localCommId = Get32(d);
        m.remoteCommId = Get32(d + 4);
        break;
    case IbCmAttr::Dreq:
        m.localCommId = Get32(d);
        m.remoteCommId = Get32(d + 4);
        m.localQpn = Get24(d + 8);
        break;
    case IbCmAttr::SidrReq:
        m.localCommId = Get32(d);
        m.pkey = IbMadLoad16(d + 4);
        m.serviceId = Get64(d + 8);
        break;
    case IbCmAttr::SidrRep:
        m.localCommId = Get32(d);
        m.sidrStatus = d[4];
        m.localQpn = Get24(d + 8);
        m.serviceId = Get64(d + 12);
        m.localQkey = Get32(d + 20);
        break;
    default:
        return false; // MRA, LAP, APR, ClassPortInfo: not modelled
    }
    const uint32_t room = PrivateDataRoom(m.attrId);
    const uint8_t* p = d + PrivateDataOffset(m.attrId);
    m.privateData.assign(p, p + room);
    return true;
}

} // namespace ns3
