// Writes InfiniBand packets as ERF records inside a pcap file (link type 197), the encoding
// Wireshark/tshark 4.0 decode as InfiniBand. See docs/ib-wire.md for why not link type 247.
#ifndef CNUAS_IB_PCAP_WRITER_H
#define CNUAS_IB_PCAP_WRITER_H

#include "ns3/nstime.h"
#include "ns3/pcap-file-wrapper.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \brief An ERF-in-pcap trace of InfiniBand packets.
 *
 * Each pcap record (nanosecond timestamps, link type 197 = LINKTYPE_ERF) holds a 16-byte ERF
 * header followed by the packet from the first LRH byte through the VCRC:
 *  * ts: little-endian 64-bit fixed point, seconds in the upper 32 bits, binary fraction of a
 *    second in the lower 32 bits;
 *  * type 21 (ERF_TYPE_INFINIBAND); flags 0x04 (variable-length record);
 *  * rlen (big-endian) = 16 + packet length; lctr (loss counter) = 0;
 *  * wlen (big-endian) = packet length.
 * The file is written through ns-3's PcapFileWrapper, and nothing in it depends on the wall
 * clock, so the same run always produces a byte-identical file.
 */
class IbErfPcapWriter
{
  public:
    /// pcap link type of ERF records (LINKTYPE_ERF).
    static constexpr uint32_t kLinkTypeErf = 197;
    /// ERF record type of an InfiniBand packet that starts at the LRH.
    static constexpr uint8_t kErfTypeInfiniband = 21;
    /// ERF record type of an InfiniBand link packet (flow control).
    static constexpr uint8_t kErfTypeInfinibandLink = 25;
    /// ERF flags: bit 2 = variable-length record.
    static constexpr uint8_t kErfFlagVarLen = 0x04;
    /// Size of the ERF header without extension headers.
    static constexpr uint32_t kErfHeaderSize = 16;
    /// Largest packet an ERF record can hold (rlen is 16 bits and includes the header).
    static constexpr uint32_t kMaxPacket = 0xFFFF - kErfHeaderSize;

    IbErfPcapWriter() = default;
    ~IbErfPcapWriter();
    IbErfPcapWriter(const IbErfPcapWriter&) = delete;
    IbErfPcapWriter& operator=(const IbErfPcapWriter&) = delete;

    /// Create (or truncate) path and write the pcap file header. False if it cannot be opened.
    bool Open(const std::string& path);
    /// Append one packet (LRH .. VCRC, len bytes, at most kMaxPacket) captured at time t.
    void Write(Time t, const uint8_t* pkt, uint32_t len);
    /// Write a record of another ERF type (25: an InfiniBand link flow-control packet).
    void Write(Time t, const uint8_t* pkt, uint32_t len, uint8_t erfType);
    /// Flush and close the file; further Write calls are ignored until the next Open.
    void Close();
    /// Whether a file is open.
    bool IsOpen() const;

    /// ERF fixed-point timestamp of a simulation time (negative times clamp to zero).
    static uint64_t ErfTimestamp(Time t);
    /// Fill a 16-byte ERF header for a packet of wireLen bytes of record type erfType.
    static void EncodeErfHeader(uint8_t* out, Time t, uint8_t erfType, uint16_t wireLen);

  private:
    Ptr<PcapFileWrapper> m_file;
    std::vector<uint8_t> m_record; ///< reused record buffer (ERF header + packet)
};

} // namespace ns3

#endif
