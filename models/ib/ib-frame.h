// The unit the InfiniBand link layer moves: one packet on the wire plus the fields a port or
// switch needs at every hop, parsed once where the packet enters the fabric.
#ifndef CNUAS_IB_FRAME_H
#define CNUAS_IB_FRAME_H

#include "ib-lrh-header.h"

#include "ns3/nstime.h"
#include "ns3/packet.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace ns3
{

class IbNetDevice;

/// Credit blocks are 64 bytes, IBA vol. 1 §7.9.4.
constexpr uint32_t kIbCreditBlockBytes = 64;
/// VL15 carries subnet management and is never flow controlled, IBA vol. 1 §7.6.4.
constexpr uint8_t kIbManagementVl = 15;
/// Bytes the link layer adds after the transport: ICRC (4, IBA packets only) and VCRC (2).
constexpr uint32_t kIbIcrcBytes = 4;
constexpr uint32_t kIbVcrcBytes = 2;

/**
 * \brief A packet in flight through the InfiniBand fabric.
 *
 * `packet` holds the wire bytes LRH .. ICRC VCRC. The fields below are authoritative for the
 * simulator's fast path: a port never re-parses an intact packet at each hop. CRC fields in
 * `packet` are placeholders until someone needs the real bytes (a pcap, a real-host bridge, an
 * error injector); then Materialize() writes the hop's VL into the LRH and computes the ICRC
 * (once, it is invariant) and the VCRC (per hop, it covers the VL). A packet whose bytes may be
 * corrupt (from an error model or a real host) carries `verifyBytes`: every receiver then parses
 * and checks it as hardware would. Untouched packets are correct by construction, so skipping
 * the check for them changes no outcome.
 */
struct IbFrame
{
    Ptr<Packet> packet;
    uint32_t bytes = 0;  ///< LRH through VCRC
    uint16_t blocks = 0; ///< ceil(bytes / 64) credit blocks
    uint16_t dlid = 0;
    uint16_t slid = 0;
    uint8_t sl = 0;
    uint8_t vl = 0; ///< VL on the current hop
    IbLnh lnh = IbLnh::IbaLocal;
    bool verifyBytes = false; ///< bytes may be corrupt: receivers must parse and check CRCs
    bool icrcKnown = false;   ///< `icrc` holds the packet's ICRC
    bool fromPeer = false;    ///< sent by the cabled peer's transmitter (it charged credit)
    uint16_t fctbsAfter = 0;  ///< the sender's FCTBS right after this packet (mod 4096)
    uint32_t linkGeneration = 0; ///< IbChannel generation the packet was sent in
    uint32_t icrc = 0;

    // Per-hop timing, set by the transmitting port.
    Time tailArrival; ///< when the last byte reaches the receiver
    // Per-hop switch state.
    uint8_t outPort = 0;
    uint8_t outVl = 0;
    uint64_t uid = 0; ///< fabric-unique packet number (for traces)
    bool inPool = false; ///< owned by IbFramePool's free list
    bool ccHead = false; ///< counted as waiting for its output (switch congestion control)

    /// True for a packet carrying an ICRC (LNH 2 or 3).
    bool HasIcrc() const { return lnh == IbLnh::IbaLocal || lnh == IbLnh::IbaGlobal; }
    /// Credit blocks for a packet of `bytes` bytes.
    static uint16_t BlocksFor(uint32_t bytes)
    {
        return static_cast<uint16_t>((bytes + kIbCreditBlockBytes - 1) / kIbCreditBlockBytes);
    }
    /**
     * The packet's wire bytes as they are on the current hop (VL, ICRC and VCRC filled in),
     * into `out`. Bytes that `verifyBytes` marks as possibly corrupt are returned unchanged.
     */
    void Materialize(std::vector<uint8_t>& out);
};

/// Recycles IbFrame objects: the per-hop path allocates nothing.
class IbFramePool
{
  public:
    static IbFrame* Allocate();
    static void Release(IbFrame* frame);
};

class IbNetDevice;

/**
 * \brief A FIFO of frames occupying one receive buffer (switch input port, one VL) or one
 * transmit queue (an HCA port, one VL).
 *
 * Only the head is eligible for transmission: a head that cannot go (its output is busy or out of
 * credit) blocks the frames behind it, the head-of-line blocking real input-buffered switches
 * exhibit.
 */
struct IbFrameQueue
{
    std::deque<IbFrame*> frames;
    uint32_t usedBlocks = 0;
    IbNetDevice* rxPort = nullptr; ///< port whose receive buffer this is (null: an HCA tx queue)
    uint8_t vl = 0;                ///< the receive VL (or the HCA's transmit VL)
    bool readyRegistered = false;  ///< head is registered with its output port
};

} // namespace ns3

#endif
