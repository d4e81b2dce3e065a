// The unit the InfiniBand link layer moves: one packet on the wire plus the fields a port or
// switch needs at every hop, parsed once where the packet enters the fabric.
#ifndef CNUAS_IB_FRAME_H
#define CNUAS_IB_FRAME_H

#include "ib-lrh-header.h"

#include "models/common/lazy-fifo.h"

#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
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
 * \brief The stored bytes of a frame past IbFrame::kInlineBytes.
 *
 * The storage stays with the frame object when the pool recycles it (assigning an empty tail,
 * as the pool's `*frame = IbFrame()` does, keeps it), so frames that carry MADs (a
 * directed-route SMP stores about 200 bytes past the head at every hop, IBA vol. 1 §14.2.1.2)
 * allocate nothing once the pool is warm. Storage above kKeptBytes (a data payload) is freed
 * when the frame is released, so a pool that once held a burst of 4 KiB packets does not keep
 * their memory.
 */
class IbFrameTail
{
  public:
    /// Storage up to this size stays with a released frame.
    static constexpr uint32_t kKeptBytes = 512;

    IbFrameTail() = default;
    IbFrameTail(const IbFrameTail& other)
    {
        Assign(other.Data(), other.Size());
    }
    IbFrameTail(IbFrameTail&& other) noexcept
    {
        Swap(other);
    }
    IbFrameTail& operator=(const IbFrameTail& other)
    {
        if (this != &other)
        {
            Assign(other.Data(), other.Size());
        }
        return *this;
    }
    /// From an empty tail: empty, the storage kept; else the two swap.
    IbFrameTail& operator=(IbFrameTail&& other) noexcept
    {
        if (other.m_size == 0)
        {
            m_size = 0;
        }
        else if (this != &other)
        {
            Swap(other);
        }
        return *this;
    }

    /// True when bytes are stored.
    explicit operator bool() const
    {
        return m_size > 0;
    }
    uint32_t Size() const
    {
        return m_size;
    }
    const uint8_t* Data() const
    {
        return m_buf.get();
    }
    /// Stores `n` bytes from `data` (none for n = 0), growing the storage if it must.
    void Assign(const uint8_t* data, uint32_t n);
    /// Empty; storage above kKeptBytes is freed.
    void Release()
    {
        m_size = 0;
        if (m_capacity > kKeptBytes)
        {
            m_buf.reset();
            m_capacity = 0;
        }
    }

  private:
    void Swap(IbFrameTail& other) noexcept
    {
        std::swap(m_buf, other.m_buf);
        std::swap(m_capacity, other.m_capacity);
        std::swap(m_size, other.m_size);
    }

    std::unique_ptr<uint8_t[]> m_buf;
    uint32_t m_capacity = 0;
    uint32_t m_size = 0;
};

class IbNetDevice;

/**
 * \brief The event of a frame's arrival at the far end of a cable, built into the frame itself
 * (IbFrame derives from it): IbNetDevice::TransmitFrame schedules the frame, and the simulator
 * runs IbNetDevice::ReceiveFrameEvent on `receiver` for it.
 *
 * Why not an event made by MakeEvent: a heap allocation and a free per packet-hop, and an
 * object written at the sender and read at the arrival, after thousands of other events, from a
 * line that has left the caches, followed by the frame's first line, which has too. Built in,
 * the event is in the frame's first line, which the scheduler prefetches (FifoHeapScheduler::
 * RemoveNext) while the event before it runs. The Ethernet side does the same (EthFrameArrival).
 *
 * The reference count: the simulator drops one reference after running the event (and at
 * Simulator::Destroy for one never run); the transmitter adds one before each schedule, and the
 * frame keeps its own from construction, so the count never reaches zero and the frame's pool,
 * not the simulator, owns the memory. Nothing cancels an arrival (a cable that goes down voids
 * its frames by generation).
 */
class IbFrameArrival : public EventImpl
{
  public:
    IbNetDevice* receiver = nullptr; ///< the port at the far end of the cable

  protected:
    void Notify() override; ///< (ib-net-device.cc) receiver->ReceiveFrameEvent(this frame)
};

/**
 * \brief A packet in flight through the InfiniBand fabric.
 *
 * The frame stores the packet's wire bytes LRH .. VCRC up to the last one that is not zero:
 * up to kInlineBytes of them in the record itself (`head`), the rest in `tail`; the bytes from
 * there up to `bytes` are zeros and are not stored. So a packet the model made carries its
 * headers in the record, and its payload only when the payload holds data: an ACK, a packet of
 * a synthetic source or a packet whose data is zeros (load experiments on memory that reads as
 * zeros) needs no ns-3 Packet and no kilobyte per packet, and the CRC placeholders at the end of
 * every packet the model made are never stored. Read the bytes with CopyBytes (as stored) or
 * Materialize (as on the wire of this hop); ToPacket makes an ns-3 Packet of them for the
 * consumers that take one (traces, management agents, bridges to real hosts).
 *
 * The fields below are authoritative for the simulator's fast path: a port never re-parses an
 * intact packet at each hop. CRC bytes are placeholders (zeros) until someone needs the real
 * bytes (a pcap, a real-host bridge, an error injector); then Materialize() writes the hop's VL
 * into the LRH and computes the ICRC (once, it is invariant) and the VCRC (per hop, it covers the
 * VL). A packet whose bytes may be corrupt (from an error model or a real host) carries
 * `verifyBytes`: every receiver then parses and checks it as hardware would. Untouched packets
 * are correct by construction, so skipping the check for them changes no outcome. Trailing zeros
 * are implied for those packets too: dropping them is lossless, as `bytes` says how many follow.
 */
struct IbFrame : public IbFrameArrival
{
    /**
     * Wire bytes kept in the record: every header combination of IBA vol. 1 ch. 9 fits (LRH 8,
     * GRH 40, BTH 12 and the largest extended header, AtomicETH 28: 88 bytes), so the fields a
     * hop rewrites in place (the LRH's VL, the BTH's FECN and BECN bits) are always here.
     */
    static constexpr uint32_t kInlineBytes = 96;

    uint32_t bytes = 0;  ///< LRH through VCRC (on the wire; stored or implied)
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
    int64_t tailArrivalPs = 0; ///< when the last byte reaches the receiver (ps)
    // Per-hop switch state.
    uint8_t outPort = 0;
    uint8_t outVl = 0;
    uint64_t uid = 0; ///< fabric-unique packet number (for traces)
    bool inPool = false; ///< owned by IbFramePool's free list
    bool ccHead = false; ///< counted as waiting for its output (switch congestion control)
    uint32_t storedBytes = 0; ///< leading wire bytes stored (head, then tail); zeros follow
    IbFrameTail tail;         ///< stored bytes past kInlineBytes (false when there are none)
    std::array<uint8_t, kInlineBytes> head; ///< the first min(storedBytes, kInlineBytes) bytes

    /**
     * For IbFramePool, on reuse: every field as IbFrame() makes it, but without writing the
     * inline bytes, of which only the first `storedBytes` (now 0) are ever read. A few stores
     * instead of building and copying a 200-byte IbFrame for every packet-hop.
     */
    void ResetForReuse();
    /**
     * Every field of `other` but the event's (reference count, receiver) and the pool's, its
     * stored bytes included: a switch's copy of a multicast packet for one more output port.
     */
    void CopyPacketFrom(const IbFrame& other);

    /// True for a packet carrying an ICRC (LNH 2 or 3).
    bool HasIcrc() const { return lnh == IbLnh::IbaLocal || lnh == IbLnh::IbaGlobal; }
    /// Credit blocks for a packet of `bytes` bytes.
    static uint16_t BlocksFor(uint32_t bytes)
    {
        return static_cast<uint16_t>((bytes + kIbCreditBlockBytes - 1) / kIbCreditBlockBytes);
    }
    /**
     * Stores the packet's leading wire bytes: `leadLen` bytes at `lead` (at most kInlineBytes)
     * followed by `restLen` bytes at `rest`; all after them, up to `bytes`, are zeros. The zeros
     * that end them are dropped (implied) too. Does not change `bytes`.
     */
    void StoreBytes(const uint8_t* lead, uint32_t leadLen, const uint8_t* rest = nullptr,
                    uint32_t restLen = 0);
    /// The packet's `bytes` wire bytes as stored (stored bytes, then the implied zeros).
    void CopyBytes(uint8_t* out) const;
    /// Only the stored bytes (`storedBytes` of them), for a reader whose buffer is zeros after
    /// them already.
    void CopyStoredBytes(uint8_t* out) const;
    /// The first `n` (at most kInlineBytes) wire bytes as stored, zeros where none are stored.
    void CopyHead(uint8_t* out, uint32_t n) const;
    /**
     * The stored byte at `offset` (below kInlineBytes), for rewriting a header field in place:
     * an implied zero there becomes a stored one.
     */
    uint8_t& HeadByte(uint32_t offset);
    /// An ns-3 Packet holding the `bytes` wire bytes as stored (its implied zeros stay virtual).
    Ptr<Packet> ToPacket() const;
    /// Drops the stored bytes (the frame goes back to its pool, or gets new ones).
    void ClearBytes()
    {
        storedBytes = 0;
        tail.Release();
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
    LazyFifo<IbFrame*> frames; ///< allocates nothing while the queue has never held a frame
    uint32_t usedBlocks = 0;
    IbNetDevice* rxPort = nullptr; ///< port whose receive buffer this is (null: an HCA tx queue)
    uint8_t vl = 0;                ///< the receive VL (or the HCA's transmit VL)
    bool readyRegistered = false;  ///< head is registered with its output port
};

} // namespace ns3

#endif
