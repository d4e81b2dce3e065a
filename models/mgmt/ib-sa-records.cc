#include "ib-sa-records.h"

#include "ib-gmp.h"
#include "ib-mad-header.h"

#include "models/rdma/ib-wire-bytes.h"

#include <cmath>
#include <cstring>

namespace ns3
{

void
IbNodeRecord::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    IbMadStore16(out, lid);
    nodeInfo.WriteTo(out + 4);
    description.WriteTo(out + 44);
}

void
IbNodeRecord::ReadFrom(const uint8_t* in)
{
    lid = IbMadLoad16(in);
    nodeInfo.ReadFrom(in + 4);
    description.ReadFrom(in + 44);
}

void
IbPathRecord::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    IbWireStore32(out, static_cast<uint32_t>(serviceId >> 32));
    IbWireStore32(out + 4, static_cast<uint32_t>(serviceId));
    std::memcpy(out + 8, dgid.data(), 16);
    std::memcpy(out + 24, sgid.data(), 16);
    IbMadStore16(out + 40, dlid);
    IbMadStore16(out + 42, slid);
    IbWireStore32(out + 44, (rawTraffic ? 0x80000000u : 0) | ((flowLabel & 0xFFFFF) << 8) |
                                hopLimit);
    out[48] = tClass;
    out[49] = static_cast<uint8_t>((reversible ? 0x80 : 0) | (numbPath & 0x7F));
    IbMadStore16(out + 50, pkey);
    IbMadStore16(out + 52, static_cast<uint16_t>(((qosClass & 0xFFF) << 4) | (sl & 0x0F)));
    out[54] = static_cast<uint8_t>(((mtuSelector & 3) << 6) | (mtu & 0x3F));
    out[55] = static_cast<uint8_t>(((rateSelector & 3) << 6) | (rate & 0x3F));
    out[56] = static_cast<uint8_t>(((packetLifeTimeSelector & 3) << 6) | (packetLifeTime & 0x3F));
    out[57] = preference;
}

void
IbPathRecord::ReadFrom(const uint8_t* in)
{
    serviceId = uint64_t{IbWireLoad32(in)} << 32 | IbWireLoad32(in + 4);
    std::memcpy(dgid.data(), in + 8, 16);
    std::memcpy(sgid.data(), in + 24, 16);
    dlid = IbMadLoad16(in + 40);
    slid = IbMadLoad16(in + 42);
    const uint32_t w = IbWireLoad32(in + 44);
    rawTraffic = (w & 0x80000000u) != 0;
    flowLabel = (w >> 8) & 0xFFFFF;
    hopLimit = static_cast<uint8_t>(w);
    tClass = in[48];
    reversible = (in[49] & 0x80) != 0;
    numbPath = in[49] & 0x7F;
    pkey = IbMadLoad16(in + 50);
    const uint16_t q = IbMadLoad16(in + 52);
    qosClass = q >> 4;
    sl = q & 0x0F;
    mtuSelector = in[54] >> 6;
    mtu = in[54] & 0x3F;
    rateSelector = in[55] >> 6;
    rate = in[55] & 0x3F;
    packetLifeTimeSelector = in[56] >> 6;
    packetLifeTime = in[56] & 0x3F;
    preference = in[57];
}

void
IbMcMemberRecord::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    std::memcpy(out, mgid.data(), 16);
    std::memcpy(out + 16, portGid.data(), 16);
    IbWireStore32(out + 32, qkey);
    IbMadStore16(out + 36, mlid);
    out[38] = static_cast<uint8_t>(((mtuSelector & 3) << 6) | (mtu & 0x3F));
    out[39] = tClass;
    IbMadStore16(out + 40, pkey);
    out[42] = static_cast<uint8_t>(((rateSelector & 3) << 6) | (rate & 0x3F));
    out[43] = static_cast<uint8_t>(((packetLifeTimeSelector & 3) << 6) | (packetLifeTime & 0x3F));
    IbWireStore32(out + 44, (uint32_t(sl & 0x0F) << 28) | ((flowLabel & 0xFFFFF) << 8) | hopLimit);
    out[48] = static_cast<uint8_t>(((scope & 0x0F) << 4) | (joinState & 0x0F));
    out[49] = proxyJoin ? 0x80 : 0;
}

void
IbMcMemberRecord::ReadFrom(const uint8_t* in)
{
    std::memcpy(mgid.data(), in, 16);
    std::memcpy(portGid.data(), in + 16, 16);
    qkey = IbWireLoad32(in + 32);
    mlid = IbMadLoad16(in + 36);
    mtuSelector = in[38] >> 6;
    mtu = in[38] & 0x3F;
    tClass = in[39];
    pkey = IbMadLoad16(in + 40);
    rateSelector = in[42] >> 6;
    rate = in[42] & 0x3F;
    packetLifeTimeSelector = in[43] >> 6;
    packetLifeTime = in[43] & 0x3F;
    const uint32_t w = IbWireLoad32(in + 44);
    sl = static_cast<uint8_t>(w >> 28);
    flowLabel = (w >> 8) & 0xFFFFF;
    hopLimit = static_cast<uint8_t>(w);
    scope = in[48] >> 4;
    joinState = in[48] & 0x0F;
    proxyJoin = (in[49] & 0x80) != 0;
}

namespace
{
/// A SubnAdm MAD (IBA vol. 1 §15.2.1) of `method` for attribute `attrId`, carrying `record`
/// with the component `mask` that says which of its fields the request sets.
template <typename Record>
std::array<uint8_t, kIbMadBytes>
SaRequestBytes(const Record& record, uint8_t method, uint16_t attrId, uint64_t mask, uint64_t tid)
{
    IbSaMad m = IbSaMad::Make(method, attrId, 0, tid);
    m.SetComponentMask(mask);
    record.WriteTo(m.Data());
    std::array<uint8_t, kIbMadBytes> bytes{};
    m.WriteTo(bytes.data());
    return bytes;
}
} // namespace

std::array<uint8_t, kIbMadBytes>
IbPathRecord::Request(uint8_t method, uint64_t mask, uint64_t tid) const
{
    return SaRequestBytes(*this, method, IbSaAttr::PathRecord, mask, tid);
}

std::array<uint8_t, kIbMadBytes>
IbMcMemberRecord::Request(uint8_t method, uint64_t mask, uint64_t tid) const
{
    return SaRequestBytes(*this, method, IbSaAttr::McMemberRecord, mask, tid);
}

namespace IbSaLayout
{

const std::vector<IbSaField> kNodeRecord = {
    {0, 16}, {16, 16},
    // NodeInfo (§14.2.5.3) from byte 4.
    {32, 8}, {40, 8}, {48, 8}, {56, 8}, {64, 64}, {128, 64}, {192, 64}, {256, 16}, {272, 16},
    {288, 32}, {320, 8}, {328, 24},
    // NodeDescription from byte 44.
    {352, 512}};

const std::vector<IbSaField> kPortInfoRecord = {
    {0, 16}, {16, 8}, {24, 8},
    // PortInfo (§14.2.5.6, Table 155) from byte 4: M_Key, GidPrefix, LID, MasterSMLID,
    // CapabilityMask, DiagCode, M_KeyLeasePeriod, LocalPortNum, LinkWidthEnabled/Supported/
    // Active, LinkSpeedSupported, PortState, PortPhysicalState, LinkDownDefaultState,
    // M_KeyProtectBits, reserved, LMC, LinkSpeedActive/Enabled, NeighborMTU, MasterSMSL, VLCap,
    // InitType, VLHighLimit, VLArbitrationHigh/LowCap, InitTypeReply, MTUCap, VLStallCount,
    // HOQLife, OperationalVLs, PartitionEnforcementInbound/Outbound, FilterRawInbound/Outbound,
    // M_/P_/Q_KeyViolations, GUIDCap, ClientReregister, MulticastPKeyTrapSuppressionEnabled,
    // SubnetTimeOut, reserved, RespTimeValue, LocalPhyErrors, OverrunErrors, MaxCreditHint,
    // reserved, LinkRoundTripLatency, CapabilityMask2, LinkSpeedExtActive/Supported, reserved,
    // LinkSpeedExtEnabled.
    {32, 64}, {96, 64}, {160, 16}, {176, 16}, {192, 32}, {224, 16}, {240, 16}, {256, 8},
    {264, 8}, {272, 8}, {280, 8}, {288, 4}, {292, 4}, {296, 4}, {300, 4}, {304, 2}, {306, 3},
    {309, 3}, {312, 4}, {316, 4}, {320, 4}, {324, 4}, {328, 4}, {332, 4}, {336, 8}, {344, 8},
    {352, 8}, {360, 4}, {364, 4}, {368, 3}, {371, 5}, {376, 4}, {380, 1}, {381, 1}, {382, 1},
    {383, 1}, {384, 16}, {400, 16}, {416, 16}, {432, 8}, {440, 1}, {441, 2}, {443, 5},
    {448, 3}, {451, 5}, {456, 4}, {460, 4}, {464, 16}, {480, 8}, {488, 24}, {512, 16},
    {528, 4}, {532, 4}, {536, 3}, {539, 5}};

const std::vector<IbSaField> kLinkRecord = {{0, 16}, {16, 8}, {24, 8}, {32, 16}};

const std::vector<IbSaField> kSwitchInfoRecord = {
    {0, 16}, {16, 16},
    // SwitchInfo (§14.2.5.4, Table 147) from byte 4: LinearFDBCap, RandomFDBCap,
    // MulticastFDBCap, LinearFDBTop, DefaultPort, DefaultMulticastPrimaryPort,
    // DefaultMulticastNotPrimaryPort, LifeTimeValue, PortStateChange, OptimizedSLtoVLMapping,
    // LIDsPerPort, PartitionEnforcementCap, InboundEnforcementCap, OutboundEnforcementCap,
    // FilterRawInboundCap, FilterRawOutboundCap, EnhancedPort0, reserved, MulticastFDBTop.
    {32, 16}, {48, 16}, {64, 16}, {80, 16}, {96, 8}, {104, 8}, {112, 8}, {120, 5}, {125, 1},
    {126, 2}, {128, 16}, {144, 16}, {160, 1}, {161, 1}, {162, 1}, {163, 1}, {164, 1},
    {165, 11}, {176, 16}};

const std::vector<IbSaField> kLftRecord = {{0, 16}, {16, 16}, {32, 32}, {64, 512}};

const std::vector<IbSaField> kGuidInfoRecord = {{0, 16},   {16, 8},   {24, 8},   {32, 32},
                                                {64, 64},  {128, 64}, {192, 64}, {256, 64},
                                                {320, 64}, {384, 64}, {448, 64}, {512, 64}};

const std::vector<IbSaField> kPKeyTableRecord = {{0, 16}, {16, 16}, {32, 8}, {40, 24},
                                                 {64, 512}};

const std::vector<IbSaField> kSmInfoRecord = {{0, 16},   {16, 16},  {32, 64}, {96, 64},
                                              {160, 32}, {192, 4},  {196, 4}};

const std::vector<IbSaField> kMcMemberRecord = {
    {0, 128},  {128, 128}, {256, 32}, {288, 16}, {304, 2},  {306, 6},  {312, 8},
    {320, 16}, {336, 2},   {338, 6},  {344, 2},  {346, 6},  {352, 4},  {356, 20},
    {376, 8},  {384, 4},   {388, 4},  {392, 1},  {393, 23}};

const std::vector<IbSaField> kMftRecord = {{0, 16}, {16, 4}, {20, 3}, {23, 9}, {32, 32},
                                           {64, 512}};

} // namespace IbSaLayout

uint64_t
IbSaFieldValue(const uint8_t* record, IbSaField f)
{
    uint64_t v = 0;
    for (uint32_t b = f.bit; b < static_cast<uint32_t>(f.bit) + f.width; ++b)
    {
        v = (v << 1) | ((record[b / 8] >> (7 - b % 8)) & 1u);
    }
    return v;
}

bool
IbSaComponentsMatch(const uint8_t* candidate, const uint8_t* query, uint64_t mask,
                    const std::vector<IbSaField>& fields, uint64_t subsetMask)
{
    for (size_t i = 0; i < fields.size() && i < 64; ++i)
    {
        const uint64_t bit = uint64_t{1} << i;
        if (!(mask & bit))
        {
            continue;
        }
        const IbSaField f = fields[i];
        if (f.width > 64)
        {
            if (std::memcmp(candidate + f.bit / 8, query + f.bit / 8, f.width / 8) != 0)
            {
                return false;
            }
            continue;
        }
        const uint64_t want = IbSaFieldValue(query, f);
        const uint64_t have = IbSaFieldValue(candidate, f);
        if ((subsetMask & bit) ? (have & want) != want : have != want)
        {
            return false;
        }
    }
    return true;
}

std::array<uint8_t, 16>
IbPortGid(uint64_t portGuid)
{
    std::array<uint8_t, 16> g{};
    IbWireStore64(g.data(), 0xFE80000000000000ULL);
    IbWireStore64(g.data() + 8, portGuid);
    return g;
}

uint64_t
IbGidPortGuid(const std::array<uint8_t, 16>& gid)
{
    return IbWireLoad64(gid.data()) == 0xFE80000000000000ULL ? IbWireLoad64(gid.data() + 8) : 0;
}

double
IbSaPortGbps(const IbPortInfo& pi)
{
    double lanes = 0;
    switch (pi.linkWidthActive)
    {
    case 1:
        lanes = 1;
        break;
    case 2:
        lanes = 4;
        break;
    case 4:
        lanes = 8;
        break;
    case 8:
        lanes = 12;
        break;
    case 16:
        lanes = 2;
        break;
    default:
        return 0;
    }
    const double lane = pi.linkSpeedExtActive == 1   ? 14
                        : pi.linkSpeedExtActive == 2 ? 25
                        : pi.linkSpeedExtActive == 4 ? 50
                        : pi.linkSpeedExtActive == 8 ? 100
                        : pi.linkSpeedActive == 1    ? 2.5
                        : pi.linkSpeedActive == 2    ? 5
                        : pi.linkSpeedActive == 4    ? 10
                                                     : 0;
    return lanes * lane;
}

namespace
{

// IBA vol. 1 §15.2.5.16 (Table 201 "Rate") and its extensions up to 600 Gb/s.
const std::pair<double, uint8_t> kRateCodes[] = {
    {2.5, 2},  {10, 3},  {30, 4},   {5, 5},    {20, 6},  {40, 7},   {60, 8},   {80, 9},
    {120, 10}, {14, 11}, {56, 12},  {112, 13}, {168, 14}, {25, 15}, {100, 16}, {200, 17},
    {300, 18}, {28, 19}, {50, 20},  {400, 21}, {600, 22}};

} // namespace

double
IbSaRateGbps(uint8_t code)
{
    for (const auto& [rate, c] : kRateCodes)
    {
        if (c == code)
        {
            return rate;
        }
    }
    return 0;
}

uint8_t
IbSaRateCode(double gbps)
{
    for (const auto& [rate, code] : kRateCodes)
    {
        if (std::fabs(rate - gbps) < 0.01)
        {
            return code;
        }
    }
    return 0;
}

IbMcMemberRecord
IbIpoibBroadcastGroup(uint16_t pkey)
{
    IbMcMemberRecord g;
    const uint16_t full = static_cast<uint16_t>(pkey | 0x8000);
    g.mgid = {0xFF, 0x12, 0x40, 0x1B, static_cast<uint8_t>(full >> 8), static_cast<uint8_t>(full),
              0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF};
    g.qkey = 0x0B1B;
    g.mlid = 0xC000;
    g.mtuSelector = 2; // "exactly" (§15.2.5.16's selector encoding)
    g.mtu = 4;         // 2048
    g.pkey = full;
    g.rateSelector = 2;
    g.rate = 3; // 10 Gb/s
    g.packetLifeTimeSelector = 2;
    g.packetLifeTime = 0x12;
    g.scope = 2; // link-local
    return g;
}

} // namespace ns3
