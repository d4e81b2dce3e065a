#include "ib-link-rate.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace ns3
{

namespace
{
struct SpeedRow
{
    IbLinkSpeed speed;
    const char* name;
    double signallingGbps; ///< per lane
    double dataGbps;       ///< per lane, after encoding (and FEC for PAM4 generations)
};

// Per-lane figures: InfiniBand Trade Association roadmap and IBA vol. 2 encodings.
const SpeedRow kSpeeds[] = {
    {IbLinkSpeed::Sdr, "SDR", 2.5, 2.0},
    {IbLinkSpeed::Ddr, "DDR", 5.0, 4.0},
    {IbLinkSpeed::Qdr, "QDR", 10.0, 8.0},
    {IbLinkSpeed::Fdr10, "FDR10", 10.3125, 10.0},
    {IbLinkSpeed::Fdr, "FDR", 14.0625, 14.0625 * 64.0 / 66.0},
    {IbLinkSpeed::Edr, "EDR", 25.78125, 25.0},
    {IbLinkSpeed::Hdr, "HDR", 53.125, 50.0},
    {IbLinkSpeed::Ndr, "NDR", 106.25, 100.0},
    {IbLinkSpeed::Xdr, "XDR", 212.5, 200.0},
};

const SpeedRow&
Row(IbLinkSpeed s)
{
    return kSpeeds[static_cast<int>(s)];
}
} // namespace

double
IbLinkRate::LaneDataRate() const
{
    return Row(speed).dataGbps * 1e9;
}

double
IbLinkRate::LaneSignallingRate() const
{
    return Row(speed).signallingGbps * 1e9;
}

Time
IbLinkRate::SymbolTime() const
{
    return PicoSeconds(std::llround(8e12 / LaneDataRate()));
}

Time
IbLinkRate::SerializationTime(uint32_t bytes) const
{
    uint64_t columns = (bytes + width - 1) / width;
    // Rounded to the picosecond once per packet; computed from the exact rate each time so that
    // rounding does not accumulate over a packet's bytes.
    return PicoSeconds(std::llround(static_cast<double>(columns) * 8e12 / LaneDataRate()));
}

std::string
IbLinkRate::ToString() const
{
    return std::to_string(width) + "x" + Row(speed).name;
}

const char*
IbLinkRate::SpeedName(IbLinkSpeed s)
{
    return Row(s).name;
}

bool
IbLinkRate::Parse(const std::string& text, IbLinkRate& out)
{
    auto x = text.find_first_of("xX");
    if (x == std::string::npos || x == 0)
    {
        return false;
    }
    int width = 0;
    for (size_t i = 0; i < x; ++i)
    {
        if (!std::isdigit(static_cast<unsigned char>(text[i])))
        {
            return false;
        }
        width = width * 10 + (text[i] - '0');
        if (width > 12)
        {
            return false;
        }
    }
    if (width != 1 && width != 2 && width != 4 && width != 8 && width != 12)
    {
        return false;
    }
    std::string name = text.substr(x + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
        return static_cast<char>(std::toupper(c));
    });
    for (const auto& row : kSpeeds)
    {
        if (name == row.name)
        {
            out.width = static_cast<uint8_t>(width);
            out.speed = row.speed;
            return true;
        }
    }
    return false;
}

IbLinkRate
IbLinkRate::Common(const IbLinkRate& a, const IbLinkRate& b)
{
    IbLinkRate r;
    r.width = std::min(a.width, b.width);
    r.speed = std::min(a.speed, b.speed);
    return r;
}

} // namespace ns3
