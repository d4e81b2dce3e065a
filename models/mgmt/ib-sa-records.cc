#include "ib-sa-records.h"

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

uint8_t
IbSaRateCode(double gbps)
{
    // IBA vol. 1 §15.2.5.16 (Table 201 "Rate") and its extensions up to 600 Gb/s.
    static const std::pair<double, uint8_t> kCodes[] = {
        {2.5, 2},  {10, 3},   {30, 4},   {5, 5},    {20, 6},   {40, 7},   {60, 8},  {80, 9},
        {120, 10}, {14, 11},  {56, 12},  {112, 13}, {168, 14}, {25, 15},  {100, 16}, {200, 17},
        {300, 18}, {28, 19},  {50, 20},  {400, 21}, {600, 22}};
    for (const auto& [rate, code] : kCodes)
    {
        if (std::fabs(rate - gbps) < 0.01)
        {
            return code;
        }
    }
    return 0;
}

} // namespace ns3
