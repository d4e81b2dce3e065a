// InfiniBand link width x speed, and the serialization arithmetic that follows from it.
// IBA vol. 2 (physical layer) defines the lane rates and encodings; the per-generation figures
// below are the commonly published ones (SDR..XDR).
#ifndef CNUAS_IB_LINK_RATE_H
#define CNUAS_IB_LINK_RATE_H

#include "ns3/nstime.h"

#include <cstdint>
#include <string>

namespace ns3
{

/// Lane speed generations.
enum class IbLinkSpeed : uint8_t
{
    Sdr,
    Ddr,
    Qdr,
    Fdr10,
    Fdr,
    Edr,
    Hdr,
    Ndr,
    Xdr,
};

/**
 * \brief A link's width (lanes) and lane speed.
 *
 * Data rate per lane is the signalling rate less line-encoding overhead: 8b/10b for SDR, DDR and
 * QDR (2.5/5/10 Gb/s signalling -> 2/4/8 Gb/s data), 64b/66b for FDR10, FDR and EDR
 * (10.3125/14.0625/25.78125 Gb/s -> 10/13.64/25 Gb/s), and PAM4 with FEC for HDR, NDR and XDR
 * (53.125/106.25/212.5 Gb/s -> 50/100/200 Gb/s data per lane).
 *
 * A "symbol time" here is the time one lane takes to carry one byte of data (for 8b/10b links
 * exactly one 10-bit symbol); IBA vol. 1 §7.9.4.2 bounds flow-control packet spacing in symbol
 * times, so that bound scales with the lane rate.
 */
struct IbLinkRate
{
    uint8_t width = 4; ///< lanes: 1, 2, 4, 8 or 12
    IbLinkSpeed speed = IbLinkSpeed::Hdr;

    /// Data rate of one lane after encoding, bit/s.
    double LaneDataRate() const;
    /// Signalling rate of one lane, bit/s (before encoding).
    double LaneSignallingRate() const;
    /// Data rate of the link (all lanes), bit/s.
    double DataRate() const { return LaneDataRate() * width; }
    /// Time one lane takes for one byte of data.
    Time SymbolTime() const;
    /**
     * Time the link needs to carry `bytes` bytes striped across its lanes: packets start on lane 0
     * and end padded to a whole column of lanes (IBA vol. 2 byte striping), so a multi-lane link
     * transmits ceil(bytes / width) byte times.
     */
    Time SerializationTime(uint32_t bytes) const;
    /// "4xHDR".
    std::string ToString() const;
    /// Parses "4xHDR", "12xNDR", "1xSDR" (case-insensitive). False on anything else.
    static bool Parse(const std::string& text, IbLinkRate& out);
    /// The common rate two ports agree on: the smaller width and the slower speed.
    static IbLinkRate Common(const IbLinkRate& a, const IbLinkRate& b);
    /// Name of a speed ("HDR").
    static const char* SpeedName(IbLinkSpeed s);
    bool operator==(const IbLinkRate& o) const { return width == o.width && speed == o.speed; }
};

} // namespace ns3

#endif
