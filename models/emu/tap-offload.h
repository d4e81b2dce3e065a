// The NIC offloads of an emulated Ethernet host port, done by the bridge between a TAP with
// IFF_VNET_HDR and the packet-accurate model: checksum completion and TCP segmentation (TSO) of
// what the host's kernel sends, and coalescing (GRO/LRO) of the TCP segments the model delivers
// to it. The model only ever sees wire-size frames with correct checksums; the kernels move up
// to 64 KB per system call.
#ifndef CNUAS_TAP_OFFLOAD_H
#define CNUAS_TAP_OFFLOAD_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ns3
{

/**
 * \brief The header a TAP with IFF_VNET_HDR puts before every frame in both directions:
 * struct virtio_net_hdr (Virtio 1.1 §5.1.6, linux/virtio_net.h), 10 bytes, little-endian on
 * this (little-endian) machine, which is the kernel's default for a TAP (TUNSETVNETLE unset).
 */
struct VirtioNetHeader
{
    static constexpr uint32_t kSize = 10;
    static constexpr uint8_t kFlagNeedsCsum = 1; ///< VIRTIO_NET_HDR_F_NEEDS_CSUM
    static constexpr uint8_t kFlagDataValid = 2; ///< VIRTIO_NET_HDR_F_DATA_VALID
    static constexpr uint8_t kGsoNone = 0;       ///< VIRTIO_NET_HDR_GSO_NONE
    static constexpr uint8_t kGsoTcpV4 = 1;      ///< VIRTIO_NET_HDR_GSO_TCPV4
    static constexpr uint8_t kGsoEcn = 0x80;     ///< VIRTIO_NET_HDR_GSO_ECN: the TSO frame has CWR

    uint8_t flags = 0;
    uint8_t gsoType = kGsoNone;
    uint16_t hdrLen = 0;     ///< Ethernet + IP + TCP header bytes (a hint)
    uint16_t gsoSize = 0;    ///< payload bytes per segment (the MSS)
    uint16_t csumStart = 0;  ///< where the checksummed range starts, from the Ethernet header
    uint16_t csumOffset = 0; ///< where in it the checksum field lies

    void ReadFrom(const uint8_t* p);
    void WriteTo(uint8_t* p) const;
};

/// Why a frame from the host could not be made wire frames (each counted by the bridge).
enum class TapOffloadError : uint8_t
{
    None,
    Runt,            ///< shorter than the virtio header, or its headers run past its end
    UnsupportedGso,  ///< a GSO type the TAP was not offered (UDP, TCPv6, ...)
    BadGsoFrame,     ///< a TSO frame that is not Ethernet / IPv4 without fragments / TCP
    BadGsoSize,      ///< gso_size 0, or more segments than TapOffload allows
    BadChecksumSpan, ///< NEEDS_CSUM with csum_start/csum_offset outside the frame
};

const char* TapOffloadErrorName(TapOffloadError e);

/// The 16-bit ones' complement sum (RFC 1071) of `len` bytes, added to `initial` (both in
/// network byte order's value, not complemented). Fast over 64 KB.
uint16_t OnesComplementSum(const uint8_t* data, size_t len, uint16_t initial = 0);
/// The TCP/UDP pseudo-header sum over IPv4 (RFC 793 §3.1, RFC 768): source and destination
/// addresses (network order bytes), protocol and transport length; not complemented.
uint16_t Ipv4PseudoHeaderSum(const uint8_t* srcDst8, uint8_t protocol, uint16_t l4Length);

/**
 * \brief Host to fabric: what a NIC with checksum offload and TSO does to a frame the kernel
 * hands it.
 *
 * With TUN_F_CSUM the kernel may hand a frame whose transport checksum is left partial
 * (CHECKSUM_PARTIAL, VIRTIO_NET_HDR_F_NEEDS_CSUM): the field at csum_start + csum_offset holds
 * the folded pseudo-header sum, and the device sums from csum_start to the end and stores the
 * complement, as the kernel's skb_checksum_help does (0 sent as 0xFFFF, RFC 768).
 *
 * With TUN_F_TSO4 it may hand one TCP/IPv4 frame of up to 64 KB (gso_type TCPV4) that the
 * device cuts into segments of gso_size payload bytes, as the kernel's own GSO
 * (tcp_gso_segment, inet_gso_segment) does: every segment carries copies of the Ethernet, IP
 * and TCP headers (options included); the TCP sequence number advances by the payload before
 * it; the IPv4 identification advances by one per segment; total length and header checksum
 * are the segment's; CWR only on the first segment (RFC 3168 §6.1.2: it is set once per window
 * reduction), FIN and PSH only on the last; the TCP checksum is computed over each segment.
 */
class TapSegmenter
{
  public:
    /// Receives each wire frame (Ethernet, no FCS). Valid only during the call.
    using Emit = std::function<void(const uint8_t* frame, uint32_t length)>;

    /// At most this many segments from one frame (the kernel's MSS floor of 88 bytes makes
    /// at most 745 of 64 KB).
    static constexpr uint32_t kMaxSegments = 1024;

    /**
     * One read from the TAP: `bytes` starts with the virtio header. Emits the wire frames and
     * returns None, or emits nothing and returns why. `*checksumsFilled` (if given) is
     * increased by the checksums it computed for the kernel.
     */
    TapOffloadError Process(const uint8_t* bytes,
                            uint32_t length,
                            const Emit& emit,
                            uint32_t* segments,
                            uint64_t* checksumsFilled = nullptr);

    /**
     * For a read holding a TSO frame: how many wire frames Process will make of it, and the
     * traffic class they go on (the 802.1Q PCP, or the DSCP's class selector, as
     * EthNetDevice::SendFromHost classifies). 0 for any other read.
     */
    static uint32_t CountTsoSegments(const uint8_t* bytes, uint32_t length, uint8_t* trafficClass);

  private:
    TapOffloadError Segment(const VirtioNetHeader& h,
                            const uint8_t* frame,
                            uint32_t length,
                            const Emit& emit,
                            uint32_t* segments,
                            uint32_t* checksumsFilled);
    std::vector<uint8_t> m_frame; ///< scratch: a frame whose checksum is filled, a segment
};

/// What a TapCoalescer counted.
struct TapCoalescerCounters
{
    uint64_t writes = 0;            ///< writes handed to the writer (frames and merged ones)
    uint64_t frames = 0;            ///< wire frames in those writes
    uint64_t coalescedWrites = 0;   ///< writes that carried more than one segment
    uint64_t coalescedSegments = 0; ///< segments in those
    uint64_t flushIdle = 0;         ///< merged writes flushed because nothing more came soon
    uint64_t flushHold = 0;         ///< ... because the oldest segment reached the hold time
};

/**
 * \brief Fabric to host: what a NIC's large receive offload does, by the rules of the Linux
 * kernel's GRO (tcp_gro_receive, inet_gro_receive), so that the receiving kernel sees exactly
 * what its own GRO would have made of the same segments.
 *
 * A TCP/IPv4 segment with payload is held, and the following ones are appended to it while
 * each is the same flow (addresses, ports), starts where the held data ends, has the same TOS
 * octet (so ECN: a CE-marked segment is never merged with unmarked ones, and the receiver
 * sees each CE, RFC 3168 §6.1.3), TTL and DF bit, an IP identification one more than the
 * last (or the same, with DF), no IP options, the same TCP header length, options, window,
 * acknowledgement number and flags except PSH and FIN, no CWR (a CWR segment starts a new
 * one), a valid TCP checksum (a corrupt one is handed on alone for the kernel to drop), and a
 * payload no larger than the first's. A segment with PSH, FIN, URG, or a payload smaller than
 * the first's ends the merge and flushes it; so does the 64 KB limit of an IPv4 datagram. Any
 * other frame (not TCP, no payload, SYN/RST) flushes what is held and is written alone.
 *
 * A merged write goes out with gso_type TCPV4 and gso_size the first segment's payload, and
 * NEEDS_CSUM with the TCP checksum field holding the pseudo-header sum (the receiving kernel
 * takes CHECKSUM_PARTIAL as verified: the segments' checksums were verified here). A lone
 * segment goes out as it came, with an empty virtio header.
 *
 * Time is the caller's: Offer takes the wall time, and the caller flushes when nothing is due
 * soon (FlushIfIdle) or the hold time has passed.
 */
class TapCoalescer
{
  public:
    /// Receives each write for the TAP: the virtio header and the frame, and how many wire
    /// frames it carries. It may keep the bytes by swapping the vector with another (TapPort).
    using Write = std::function<void(std::vector<uint8_t>& bytes, uint32_t frames)>;

    explicit TapCoalescer(Write write) : m_write(std::move(write)) {}

    /// One wire frame for the host (Ethernet, no FCS; padding after the IP datagram allowed),
    /// at wall time `nowNs`.
    void Offer(const uint8_t* frame, uint32_t length, int64_t nowNs);
    /// Writes what is held, if anything.
    void Flush();
    /// Whether a merge is held, and since when (wall ns of its first segment).
    bool HasPending() const { return m_segments > 0; }
    int64_t PendingSinceNs() const { return m_heldSinceNs; }
    uint32_t PendingSegments() const { return m_segments; }
    /// The caller's wall-clock rule: flushes what is held if the next thing the simulator has to
    /// do is more than `idleGapNs` away, or the held data is `holdNs` old. True if it flushed.
    bool FlushIfDue(int64_t nowNs, int64_t untilNextNs, int64_t idleGapNs, int64_t holdNs);
    const TapCoalescerCounters& GetCounters() const { return m_counters; }

  private:
    struct Parsed;
    bool Parse(const uint8_t* frame, uint32_t length, Parsed& p) const;
    bool CanAppend(const uint8_t* frame, const Parsed& p) const;
    void Start(const uint8_t* frame, const Parsed& p, int64_t nowNs);
    void Append(const uint8_t* frame, const Parsed& p);
    void WriteAlone(const uint8_t* frame, uint32_t length);

    Write m_write;
    TapCoalescerCounters m_counters;
    std::vector<uint8_t> m_buf; ///< virtio header + the merged frame
    std::vector<uint8_t> m_alone;
    uint32_t m_segments = 0;
    int64_t m_heldSinceNs = 0;
    // the held merge's layout and what the next segment must match
    uint32_t m_l3 = 0;          ///< IP header offset in the frame
    uint32_t m_l4 = 0;          ///< TCP header offset
    uint32_t m_headerBytes = 0; ///< Ethernet + IP + TCP
    uint32_t m_mss = 0;         ///< the first segment's payload
    uint32_t m_nextSeq = 0;
    uint16_t m_nextIpId = 0;
    bool m_headCwr = false;
};

} // namespace ns3

#endif
