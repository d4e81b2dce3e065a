// The unit the Ethernet link layer moves: one frame on the wire plus the fields a port or a
// switch needs at every hop, kept parsed so that no hop re-reads bytes.
#ifndef CNUAS_ETH_FRAME_H
#define CNUAS_ETH_FRAME_H

#include "eth-pfc-header.h"

#include "models/common/int-stack.h"

#include "ns3/event-impl.h"
#include "ns3/packet.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

constexpr uint16_t kEthTypeIpv4 = 0x0800;
constexpr uint16_t kEthTypeIpv6 = 0x86DD;
constexpr uint16_t kEthTypeVlan = 0x8100; ///< 802.1Q C-tag TPID, IEEE 802.1Q §9.5
constexpr uint16_t kEthTypeArp = 0x0806;  ///< RFC 826
constexpr uint8_t kIpProtoTcp = 6;
constexpr uint8_t kIpProtoUdp = 17;
/// An ARP request or reply for IPv4 over Ethernet (RFC 826): 8 bytes of header, two MAC and two
/// IPv4 addresses.
constexpr uint32_t kArpIpv4Bytes = 28;
/// Ethernet header without and with an 802.1Q tag, FCS, and minimum frame (802.3 §3.1.1, §4.4.2).
constexpr uint32_t kEthHeaderBytes = 14;
constexpr uint32_t kEthVlanTagBytes = 4;
constexpr uint32_t kEthFcsBytes = 4;
constexpr uint32_t kEthMinFrameBytes = 64;
/// Bytes each frame costs on the wire besides itself: preamble + SFD (8, 802.3 §3.2.1-2) and the
/// minimum inter-packet gap (12 byte times, 802.3 §4.4.2).
constexpr uint32_t kEthPreambleBytes = 8;
constexpr uint32_t kEthIfgBytes = 12;
constexpr uint32_t kEthWireOverheadBytes = kEthPreambleBytes + kEthIfgBytes;
constexpr uint32_t kIpv4HeaderBytes = 20;
constexpr uint32_t kIpv6HeaderBytes = 40; ///< fixed header, RFC 8200 §3
constexpr uint32_t kUdpHeaderBytes = 8;

/// Bytes of a frame whose Ethernet header (with an 802.1Q tag if `vlanTag`) carries `bodyBytes`,
/// then `intBytes` of INT telemetry, then the FCS; at least the minimum frame (802.3 §4.4.2).
/// Without the preamble and gap the wire adds (kEthWireOverheadBytes).
constexpr uint32_t
EthFrameBytes(uint32_t bodyBytes, bool vlanTag, uint32_t intBytes = 0)
{
    const uint32_t n = kEthHeaderBytes + (vlanTag ? kEthVlanTagBytes : 0) + bodyBytes +
                       kEthFcsBytes + intBytes;
    return n < kEthMinFrameBytes ? kEthMinFrameBytes : n;
}

/// EthFrameBytes of a UDP datagram carrying `payloadBytes`, over IPv4 or IPv6: the size
/// EthFrame::ComputeSize gives such a frame, for whoever needs it before the frame exists.
constexpr uint32_t
EthUdpFrameBytes(uint32_t payloadBytes, bool ipv6, bool vlanTag, uint32_t intBytes = 0)
{
    return EthFrameBytes((ipv6 ? kIpv6HeaderBytes : kIpv4HeaderBytes) + kUdpHeaderBytes +
                             payloadBytes,
                         vlanTag,
                         intBytes);
}
/// The MAC Control destination address 01-80-C2-00-00-01 (802.3 §31.4.1; 802.1Qbb §36.1.3).
constexpr uint64_t kEthMacControlDst = 0x0180C2000001ULL;
/// ECN codepoints in the IPv4 TOS octet (RFC 3168 §5).
constexpr uint8_t kEcnNotEct = 0;
constexpr uint8_t kEcnEct1 = 1;
constexpr uint8_t kEcnEct0 = 2;
constexpr uint8_t kEcnCe = 3;

/// An IPv6 address, network byte order.
using Ipv6Bytes = std::array<uint8_t, 16>;

/// The individual/group bit of a MAC address (802.3 §3.2.3: the first bit on the wire, the
/// least significant bit of the first octet), as a bit of a 48-bit MAC held in a uint64_t.
constexpr uint64_t kEthMacGroupBit = 0x010000000000ULL;
/// Whether an IPv4 address (host order) is a multicast group: 224.0.0.0/4 (RFC 5771).
constexpr bool
EthIsIpv4Multicast(uint32_t ip)
{
    return (ip >> 28) == 0xE;
}
/// Whether an IPv6 address is a multicast group: ff00::/8 (RFC 4291 §2.7).
inline bool
EthIsIpv6Multicast(const Ipv6Bytes& ip)
{
    return ip[0] == 0xFF;
}
/// The MAC an IPv4 group is sent to: 01-00-5E and the group's low 23 bits (RFC 1112 §6.4).
constexpr uint64_t
EthMulticastMac(uint32_t group)
{
    return 0x01005E000000ULL | (group & 0x7FFFFF);
}
/// The MAC an IPv6 group is sent to: 33-33 and the group's last four octets (RFC 2464 §7).
inline uint64_t
EthMulticastMac6(const Ipv6Bytes& group)
{
    return 0x333300000000ULL | uint64_t(group[12]) << 24 | uint64_t(group[13]) << 16 |
           uint64_t(group[14]) << 8 | group[15];
}

enum class EthFrameKind : uint8_t
{
    Udp, ///< Ethernet [802.1Q] IPv4 or IPv6, UDP, payload
    Pfc, ///< MAC Control PFC
    /**
     * A frame from a real host's IP stack (emulation, models/emu/eth-tap-bridge.h): IPv4 or
     * IPv6 with any upper protocol, or ARP. Its bytes from the IP (or ARP) header on are
     * carried as the host sent them, in the payload fields (payloadBytes = that length); the
     * fields the fabric acts on are parsed from them (addresses, TCP/UDP ports for ECMP, TTL,
     * DSCP, ECN) and what the switches change in them (TTL or hop limit, the ECN field) is
     * written back when bytes are made. An ARP frame travels to the owner of its target
     * address (dstIp = the target protocol address), see docs/emulation.md.
     */
    Verbatim,
};

/// Why a frame's bytes were refused (EthFrame::Parse), also the port's drop reasons for them.
enum class EthParseError : uint8_t
{
    None,
    Runt,             ///< shorter than 64 bytes (802.3 §4.2.4.2.2)
    BadFcs,           ///< FCS mismatch (802.3 §3.2.9)
    UnknownEthertype, ///< not IPv4, IPv6 or MAC Control (after an optional 802.1Q tag)
    BadControl,       ///< MAC Control with an opcode other than PFC, or reserved CEV bits set
    BadIpv4,          ///< IPv4 version/IHL/total length/checksum wrong, fragment, or not UDP
    BadUdp,           ///< UDP length disagrees with the IP length; bad or zero IPv6 checksum
    BadIpv6,          ///< IPv6 version, payload length, or a next header other than UDP
    BadArp,           ///< an ARP packet that is not IPv4 over Ethernet, or is truncated
};
const char* EthParseErrorName(EthParseError e);

/**
 * \brief The INT stack a frame carries (HPCC paper §3.2), kept beside the frame record so
 * that frames without telemetry pay one pointer for it. Pooled like the frames.
 *
 * Aligned to a cache line, so that the hop count and the hops of a fat-tree path (5) fill
 * exactly three lines (hop j at bytes 16 + 32 j) and a reader knows which to fetch
 * (EthNetDevice::ReceiveFrame). A recycled record is fresh in its first line only: the hop
 * slots beyond the count keep what a previous frame wrote, never read (IntStack).
 */
struct alignas(64) EthIntRecord
{
    // What a switch's push (EthSwitch::PushIntHop) reads is in the line of the first hop.
    uint8_t maxHops = kIntDefaultMaxHops; ///< slots of the stack (hops beyond are not pushed)
    bool inPool = false;
    IntStack stack;

    /// What SimObjectPool does to a recycled record (HasResetForReuse): its first line fresh
    /// (limit, hop count) and nothing more. The hop slots beyond the count are never read
    /// (IntStack), and the switches overwrite each as they push; assigning EthIntRecord()
    /// instead wrote all five lines of a record that left the caches since its last frame, on
    /// every data packet and ACK of an INT flow.
    void ResetForReuse()
    {
        maxHops = kIntDefaultMaxHops;
        stack.nHops = 0;
    }

    /// Lines that hold the hop count and `hops` hops.
    static constexpr uint32_t LinesFor(uint32_t hops)
    {
        return (16 + 32 * hops + 63) / 64;
    }
};

class EthNetDevice;

/**
 * \brief The event of a frame's arrival at the far end of a cable, built into the frame
 * itself (EthFrame derives from it): EthNetDevice::Transmit schedules the frame, and the
 * simulator runs EthNetDevice::ReceiveFrameEvent on `receiver` for it.
 *
 * Why not an event made by Simulator::Schedule: that is a heap allocation and a free per
 * packet-hop, and an object written at the sender and read at the arrival, after thousands of
 * other events, from a line that has left the caches, followed by the frame's first line,
 * which has too. Built in, the event is in the frame's first line, so the scheduler's fetch of
 * the next event's object (FifoHeapScheduler::RemoveNext prefetches it while the event before
 * it runs) brings in the line the receiving port reads first. The order of events is unchanged:
 * Simulator::ScheduleWithContext with an EventImpl inserts it as Schedule would.
 *
 * The reference count: the simulator drops one reference after running an event (and at
 * Simulator::Destroy for one never run), so the sender adds one before each schedule
 * (EthNetDevice::Transmit) and the frame keeps its own from construction: it never reaches
 * zero, and the frame's pool, not the simulator, owns the memory. Copying or assigning a frame
 * leaves a count as it was (SimpleRefCount's copy and assignment do not copy it).
 */
class EthFrameArrival : public EventImpl
{
  public:
    EthNetDevice* receiver = nullptr; ///< the port at the far end of the cable

  protected:
    void Notify() override; ///< (eth-net-device.cc) receiver->ReceiveFrameEvent(this frame)
};

/**
 * \brief A frame in flight through the Ethernet fabric.
 *
 * The fields are authoritative; the bytes are produced only when someone needs them
 * (Materialize: pcap writers, tests). The frame stores the leading bytes of the opaque UDP
 * payload (the RoCEv2 encapsulation puts BTH.. there): up to kInlinePayloadBytes of them in the
 * record itself, more in `payload`; the bytes from their end up to `payloadBytes` are zeros and
 * are not stored, and a frame that stores none is `payloadBytes` zero bytes. So synthetic traffic
 * costs no buffer at all, and a RoCE ACK, or a packet whose data is zeros (load experiments on
 * memory that reads as zeros), carries only its headers, in the frame record: no ns-3 Packet to
 * make, touch at the far end and free. Read them with StoredPayloadBytes and CopyPayload.
 */
struct alignas(64) EthFrame : public EthFrameArrival
{
    // The fields every hop reads come first, in one cache line with the arrival event (24
    // bytes: the frame record is the one piece of memory each hop touches that was last touched
    // a hop ago).
    EthFrameKind kind = EthFrameKind::Udp;
    uint8_t priority = 0; ///< traffic class on the current hop
    uint8_t ttl = 64;     ///< IPv4 TTL or IPv6 hop limit
    uint8_t ecn = kEcnNotEct;
    uint8_t dscp = 0;
    bool vlanTagged = false;
    uint8_t pcp = 0; ///< 802.1Q priority code point (when tagged)
    bool ipv6 = false;
    uint8_t mmuBucket = 0; ///< where the switch MMU charged the frame (SharedBufferMmu)
    /// Switches append a hop to this frame's INT record (intRec) at every egress: a data
    /// packet of an INT flow. An ACK that echoes a receiver's stack has a record and not this
    /// flag, so a switch leaves it, and its record, untouched (EthSwitch::NotifyDequeue).
    bool intPush = false;
    uint16_t inPort = 0;   ///< switch ingress port (1-based)
    uint32_t bytes = 0;    ///< frame size, destination MAC through FCS (padding included)
    uint32_t linkGeneration = 0;
    uint32_t srcIp = 0;    ///< IPv4 (when !ipv6)
    uint32_t dstIp = 0;
    uint16_t srcPort = 0;
    uint16_t dstPort = 0;
    // INT telemetry (only frames of INT-enabled flows have a record; a switch writes a hop
    // into it at every egress). The record is owned by the frame and returned to its pool with
    // it (EthFramePool::Release).
    EthIntRecord* intRec = nullptr;
    // Written at every hop (a switch rewrites both on the way out) but read only where bytes
    // are made: outside the first line.
    uint64_t dstMac = 0;   ///< 48-bit, most significant octet first on the wire
    uint64_t srcMac = 0;
    // Read at the ends of the path, or only when bytes are made.
    int64_t sentPs = 0;    ///< when the frame left its source (for latency)
    uint64_t uid = 0;      ///< fabric-unique frame number, for traces
    uint32_t payloadBytes = 0;
    uint16_t vid = 0;      ///< 802.1Q VLAN identifier (0: priority-tagged frame)
    uint16_t ipId = 0;
    uint32_t flowLabel = 0; ///< IPv6 flow label, 20 bits
    /**
     * The payload ends in a RoCEv2 ICRC that is not computed yet: the frame was made by the
     * model (RoceRdmaPort), whose packets are correct by construction, so the 4 bytes are a
     * placeholder and Materialize computes them when someone needs bytes (pcap, sniffers,
     * tests). The InfiniBand side does the same (docs/architecture.md §6.7). Frames parsed
     * from bytes (EthFrame::Parse) never have it: their ICRC is whatever arrived and is checked.
     */
    bool icrcPending = false;
    Ptr<const Packet> payload; ///< leading payload bytes (when not inline); zeros follow
    Ipv6Bytes srcIp6{};     ///< IPv6 (when ipv6)
    Ipv6Bytes dstIp6{};
    EthPfcHeader pfc;
    /// Bytes the INT stack occupies on the wire, counted in `bytes` (and so in the wire time,
    /// buffer and queue accounting) but not materialized: no dissector knows an INT shim between
    /// UDP and the BTH, so the bytes a capture shows stay a valid RoCEv2 frame.
    uint16_t intBytes = 0;
    /// Leading payload bytes kept in the record (instead of `payload`): how many, and them.
    static constexpr uint32_t kInlinePayloadBytes = 64;
    uint8_t inlineLength = 0;
    bool inPool = false; ///< on the pool's free list (read only by the pool)
    std::array<uint8_t, kInlinePayloadBytes> inlinePayload;
    /// Verbatim frames: the EtherType after the optional tag (IPv4, IPv6 or ARP), and the IP
    /// protocol or IPv6 next header (0 for ARP).
    uint16_t etherType = 0;
    uint8_t ipProtocol = 0;

    /// Payload bytes the frame stores (inline or in `payload`); zeros follow up to payloadBytes.
    uint32_t StoredPayloadBytes() const
    {
        return inlineLength ? inlineLength : (payload ? payload->GetSize() : 0);
    }
    /// Stores `len` leading payload bytes: in the record when they fit, else in a Packet.
    void StorePayload(const uint8_t* data, uint32_t len);
    /// Copies the first min(len, StoredPayloadBytes()) payload bytes to `dst`; returns how many
    /// (the rest of the payload is zeros).
    uint32_t CopyPayload(uint8_t* dst, uint32_t len) const;

    /// Fills `bytes` from the fields (header sizes, payload, INT bytes, padding to 64, FCS).
    void ComputeSize();
    /**
     * The frame's bytes as on the wire, destination MAC through FCS when `withFcs`, else
     * without the FCS (the way a capture on a host shows them): the IPv4 header checksum, UDP
     * length and the padding are filled in. Over IPv4 the UDP checksum is 0 ("not computed",
     * RFC 768), as RoCEv2 sends it; over IPv6 it is computed, as RFC 8200 §8.1 requires.
     */
    void Materialize(std::vector<uint8_t>& out, bool withFcs) const;
    /**
     * Parses `len` bytes (destination MAC through FCS) into `out`, checking what a receiving MAC
     * and IPv4 layer check. Returns the first problem found, or None.
     */
    static EthParseError Parse(const uint8_t* data, uint32_t len, EthFrame& out);

    /**
     * Parses the bytes a real host's network stack sent (destination MAC through the end of
     * the packet, no FCS, as a TAP device delivers them; shorter than 64 bytes is allowed, the
     * MAC pads) into a Verbatim frame (UDP included: the host's datagrams are carried as sent),
     * or into a PFC frame for MAC Control. Checks what a first-hop router checks: an IPv4
     * header's version, IHL, length and header checksum (RFC 1812 §5.2.2), an IPv6 header's
     * version and payload length, ARP's hardware and protocol types. Returns the first problem,
     * or None.
     */
    static EthParseError ParseFromHost(const uint8_t* data, uint32_t len, EthFrame& out);

    /// Whether the frame is an IP datagram to a multicast group (IPv4 224.0.0.0/4, IPv6
    /// ff00::/8); never a PFC frame. An ARP frame's dstIp is its target's unicast address.
    bool IsMulticast() const
    {
        return kind != EthFrameKind::Pfc &&
               (ipv6 ? EthIsIpv6Multicast(dstIp6) : EthIsIpv4Multicast(dstIp));
    }
    /// The MAC of the frame's multicast group (RFC 1112 §6.4, RFC 2464 §7); IsMulticast frames.
    uint64_t GroupMac() const
    {
        return ipv6 ? EthMulticastMac6(dstIp6) : EthMulticastMac(dstIp);
    }

  private:
    /// Materialize's Verbatim part: the stored network-layer bytes at `l3`, with the fields the
    /// fabric changes written back.
    void MaterializeVerbatim(uint8_t* l3) const;
    /// Writes the ICRC into a materialized frame whose IP header is at `ip` (icrcPending).
    void FillPendingIcrc(uint8_t* ip, uint32_t ipHeaderBytes) const;
    /// The MAC header of both parsers: addresses, tag, and where the EtherType's payload starts
    /// (`*off`) and what it is (`*type`). The caller makes sure the header's bytes are there.
    static void ParseMacHeader(const uint8_t* data, EthFrame& f, uint32_t* off, uint16_t* type);
    /// The IPv6 and UDP part of Parse: `avail` bytes from the IPv6 header to the FCS.
    static EthParseError ParseIpv6(const uint8_t* ip, uint32_t avail, EthFrame& out);

  public:
};

/// CRC-32 of IEEE 802.3 §3.2.9 (reflected polynomial 0xEDB88320, preset and inverted); the FCS
/// goes on the wire least significant byte first.
uint32_t EthCrc32(const uint8_t* data, size_t len);
/// The Internet checksum (RFC 1071) over `len` bytes.
uint16_t InternetChecksum(const uint8_t* data, size_t len);

/// Recycles EthFrame objects: the per-hop path allocates nothing.
class EthFramePool
{
  public:
    static EthFrame* Allocate();
    static void Release(EthFrame* frame);
    /**
     * A second frame with the same fields as `frame` (a switch's copy of a multicast frame):
     * its own INT record when `frame` has one (each copy's path pushes its own hops), the stored
     * payload shared (a Packet is immutable), no MMU charge yet (mmuBucket 0), no receiver, and
     * the pool's and the event's bookkeeping its own (a copy's reference count starts as a new
     * frame's: SimpleRefCount's assignment does not copy it).
     */
    static EthFrame* Copy(const EthFrame& frame);
    /// Frames made so far (for memory accounting).
    static size_t Created();
};

/// Recycles EthIntRecord objects (EthFramePool::Release returns a frame's record).
class EthIntPool
{
  public:
    static EthIntRecord* Allocate();
    static void Release(EthIntRecord* rec);
    static size_t Created();
};

} // namespace ns3

#endif
