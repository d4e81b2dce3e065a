// An Ethernet port: MAC with 802.1Qbb priority flow control, eight traffic classes, and (at a
// host) a receive buffer that can back up and send PFC itself.
#ifndef CNUAS_ETH_NET_DEVICE_H
#define CNUAS_ETH_NET_DEVICE_H

#include "models/common/lazy-fifo.h"
#include "models/common/reusable-event.h"
#include "models/common/sniffer-list.h"
#include "eth-frame.h"

#include "ns3/callback.h"
#include "ns3/data-rate.h"
#include "ns3/error-model.h"
#include "ns3/event-id.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <array>
#include <string>
#include <vector>

namespace ns3
{

class EthChannel;
class EthSwitch;

constexpr uint8_t kEthPriorities = 8; ///< 802.1Q priorities and traffic classes

/// Why a frame was discarded (the "Drop" trace source reports one of these; counted per port).
enum class EthDropReason : uint8_t
{
    Runt,             ///< received bytes shorter than 64 (802.3 §4.2.4.2.2)
    BadFcs,           ///< FCS mismatch (802.3 §3.2.9)
    UnknownEthertype, ///< neither IPv4, 802.1Q nor MAC Control
    BadControl,       ///< MAC Control frame that is not PFC
    BadIpv4,          ///< bad IPv4 header (version, length, checksum, fragment, protocol)
    BadUdp,           ///< UDP length disagreeing with IP's; bad or zero checksum over IPv6
    LinkDown,         ///< on the cable or queued when the link went down
    TxQueueFull,      ///< a host's transmit queue for the priority was full
    RxBufferFull,     ///< a host's receive buffer overflowed (no PFC, or PFC too late)
    NotForUs,         ///< at a host: destination IP is neither this port's nor a group
    NoRoute,          ///< at a switch: no forwarding entry for the destination IP
    TtlExpired,       ///< at a switch: IPv4 TTL reached zero (RFC 791)
    BufferFull,       ///< at a switch: lossy priority over its shared-buffer threshold
    HeadroomOverflow, ///< at a switch: lossless priority over its headroom (PFC came too late)
    Oversize,         ///< a host asked to send a datagram larger than the MTU
    BadIpv6,          ///< bad IPv6 header (version, payload length, extension headers)
    BadArp,           ///< an ARP packet that is not IPv4 over Ethernet, or truncated
    Count
};
const char* EthDropReasonName(EthDropReason r);

/// Per-priority port counters (what `ethtool -S` shows per priority on RoCE NICs).
struct EthPortCounters
{
    std::array<uint64_t, kEthPriorities> txFrames{};
    std::array<uint64_t, kEthPriorities> txBytes{};
    std::array<uint64_t, kEthPriorities> rxFrames{};
    std::array<uint64_t, kEthPriorities> rxBytes{};
    std::array<uint64_t, kEthPriorities> pauseSent{};  ///< PFC frames sent with quanta > 0
    std::array<uint64_t, kEthPriorities> resumeSent{}; ///< PFC frames sent with quanta 0
    std::array<uint64_t, kEthPriorities> pauseReceived{};
    std::array<uint64_t, kEthPriorities> resumeReceived{};
    uint64_t pfcFramesSent = 0;
    uint64_t pfcFramesReceived = 0;
    uint64_t pfcIgnored = 0; ///< PFC for priorities not PFC-enabled on this port
};

/// A UDP flow as a host sends it: the 5-tuple less the source address, and its class.
struct EthUdpFlow
{
    bool ipv6 = false;  ///< send over IPv6 to dstIp6 (else IPv4 to dstIp)
    uint32_t dstIp = 0;
    Ipv6Bytes dstIp6{};
    uint32_t flowLabel = 0; ///< IPv6 flow label
    uint16_t srcPort = 49152;
    uint16_t dstPort = 4791;
    uint8_t priority = 0; ///< traffic class at the host; also the PCP when tagging
    uint8_t dscp = 0;
    uint8_t ecn = kEcnNotEct;
    /// INT (HPCC paper §3.2): > 0 gives the frame an empty INT stack of this many slots
    /// (<= kIntStackCapacity) that switches fill; its wire bytes are charged to the frame.
    uint8_t intMaxHops = 0;
    /// An echo of a received stack (a receiver's ACK, HPCC): carried, charged, never pushed to.
    const IntStack* intEcho = nullptr;
    uint8_t intEchoSlots = 0; ///< the slots the echo is charged for (its sender's hop limit)
    /// The payload ends in a RoCEv2 ICRC placeholder (EthFrame::icrcPending).
    bool icrcPending = false;
};

/**
 * \brief One Ethernet port (MAC + PFC), on a host or on an EthSwitch.
 *
 * Transmit side: eight egress queues (traffic class = priority) and a control queue for PFC
 * frames, which go first and are never paused (802.1Qbb §36.1.3: MAC Control frames are not
 * subject to PFC). Classes in StrictPriorityMask are served strictly, highest first; the rest
 * share what is left by deficit weighted round robin. Each frame occupies the wire for its bytes
 * plus preamble, SFD and inter-frame gap at DataRate, and arrives at the far end when its last
 * bit does (store and forward): one event per frame-hop, plus a transmitter wake-up only when a
 * frame has work queued behind it.
 *
 * PFC receiver: a PFC frame stops the priorities its class-enable vector names for
 * quanta x 512 bit times at this port's rate, from its arrival; a later frame replaces the time
 * (re-pause) and quanta 0 resumes (802.1Qbb §36.1.3, §36.2). A frame already on the wire is
 * finished, none is started while paused.
 *
 * PFC generator (AssertPause/ReleasePause): a switch MMU calls them when an ingress queue
 * crosses XOFF/XON; a host port calls them itself when its receive buffer, drained at
 * RxDrainRate, passes NicXoffBytes / falls to NicXonBytes. While asserted, the pause is
 * refreshed before it expires.
 */
class EthNetDevice : public NetDevice
{
  public:
    static TypeId GetTypeId();
    EthNetDevice();
    ~EthNetDevice() override;

    // ---- ns3::NetDevice --------------------------------------------------------------------
    void SetIfIndex(const uint32_t index) override;
    uint32_t GetIfIndex() const override;
    Ptr<Channel> GetChannel() const override;
    void SetAddress(Address address) override;
    Address GetAddress() const override;
    bool SetMtu(const uint16_t mtu) override;
    uint16_t GetMtu() const override;
    bool IsLinkUp() const override;
    void AddLinkChangeCallback(Callback<void> callback) override;
    bool IsBroadcast() const override;
    Address GetBroadcast() const override;
    bool IsMulticast() const override;
    Address GetMulticast(Ipv4Address multicastGroup) const override;
    Address GetMulticast(Ipv6Address addr) const override;
    bool IsPointToPoint() const override;
    bool IsBridge() const override;
    /// Not supported (returns false): hosts send with SendUdp, switches forward frames.
    bool Send(Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber) override;
    bool SendFrom(Ptr<Packet> packet,
                  const Address& source,
                  const Address& dest,
                  uint16_t protocolNumber) override;
    Ptr<Node> GetNode() const override;
    void SetNode(Ptr<Node> node) override;
    bool NeedsArp() const override;
    void SetReceiveCallback(NetDevice::ReceiveCallback cb) override;
    void SetPromiscReceiveCallback(NetDevice::PromiscReceiveCallback cb) override;
    bool SupportsSendFrom() const override;

    // ---- trace signatures ----
    /// Tx, Rx: the frame (its fields; Materialize for bytes).
    typedef void (*FrameCallback)(const EthFrame& frame);
    /// Drop: (frame or null, EthDropReason).
    typedef void (*DropCallback)(const EthFrame* frame, uint8_t reason);
    /// QueueDepth: (priority, bytes queued for transmission).
    typedef void (*QueueCallback)(uint8_t priority, uint64_t bytes);
    /// PauseSent, PauseReceived: (priority, quanta; 0 = resume).
    typedef void (*PauseCallback)(uint8_t priority, uint16_t quanta);
    /// PausedDuration: (priority, how long the transmitter was paused) when a pause ends.
    typedef void (*PausedCallback)(uint8_t priority, Time duration);

    // ---- cabling and identity --------------------------------------------------------------
    void Attach(Ptr<EthChannel> channel);
    Ptr<EthChannel> GetEthChannel() const;
    Ptr<EthNetDevice> GetPeer() const;
    /// Called by the channel when the link goes down or comes back up.
    void NotifyLinkChange(bool up);
    /// The cable's state, pushed by the channel whenever it changes (a port attached, the link
    /// up or down, a new length or delay per metre): every frame reads it at both ends, and a
    /// copy in the port's own hot lines saves a cache miss on the channel object per frame.
    void SyncCable(bool up, uint32_t generation, int64_t delayPs);
    /// IsLinkUp without the virtual call: what the port itself, its switch and its RoCE port ask
    /// per frame.
    bool LinkUp() const { return m_linkUp; }
    void SetMac(uint64_t mac48);
    uint64_t GetMac() const;
    void SetIpv4(uint32_t address);
    uint32_t GetIpv4() const;
    void SetIpv6(const Ipv6Bytes& address) { m_ip6 = address; }
    const Ipv6Bytes& GetIpv6() const { return m_ip6; }
    DataRate GetDataRate() const;
    void SetDataRate(DataRate rate);
    /// Time to send `bytes` of frame, including preamble, SFD and inter-frame gap.
    Time WireTime(uint32_t bytes) const;
    /// WireTime at `bps` bits per second, picoseconds: rounded once per frame from the exact
    /// rate, in integers (bits x 1e12 stays below 2^63 for any frame); 0 at rate 0. What the
    /// port charges a frame, for whoever must reckon times the port will produce (the ideal
    /// FCT of helpers/roce/roce-ideal-fct.cc).
    static int64_t WireTimePs(uint32_t frameBytes, uint64_t bps)
    {
        if (bps == 0)
        {
            return 0;
        }
        const uint64_t bits = 8ULL * (frameBytes + kEthWireOverheadBytes);
        return static_cast<int64_t>((bits * 1000000000000ULL + bps / 2) / bps);
    }
    /// The inter-frame gap at `bps`, picoseconds, rounded as WireTimePs (0 at rate 0): the part
    /// of a frame's wire time after its last bit.
    static int64_t InterFrameGapPs(uint64_t bps)
    {
        return bps ? static_cast<int64_t>((8ULL * kEthIfgBytes * 1000000000000ULL + bps / 2) / bps)
                   : 0;
    }
    /// One pause quantum (512 bit times) at this port's rate, picoseconds (exact, not rounded).
    double QuantumPs() const;
    /// The largest frame this port sends: MTU + Ethernet header + 802.1Q tag + FCS.
    uint32_t MaxFrameBytes() const;
    void SetSwitch(EthSwitch* sw, uint16_t portNumber);
    EthSwitch* GetSwitch() const { return m_switch; }
    uint16_t GetPortNumber() const { return m_portNumber; }
    /// DWRR weight of a traffic class not in StrictPriorityMask (>= 1).
    void SetDwrrWeight(uint8_t tc, uint32_t weight);
    bool IsPfcEnabled(uint8_t priority) const { return (m_pfcMask >> priority) & 1; }
    /**
     * "" if the port's configuration is consistent, else what is wrong: NIC XON not below
     * XOFF, XOFF beyond the receive buffer, less room above XOFF than the round trip needs
     * (HeadroomNeeded), DWRR quantum below the largest frame.
     */
    std::string Validate() const;
    /**
     * Bytes that can still arrive after this port decides to pause its peer (802.1Qbb Annex O,
     * the PFC delay model): a maximum frame this port may be sending when the decision is made
     * (the PFC frame waits for it), the PFC frame, the interface and response delays of the
     * peer (802.3 values quoted in EthNetDevice::PfcResponseTime), the cable there and back,
     * and the maximum frame the peer may have started just before it stops.
     */
    uint64_t HeadroomNeeded() const;

    // ---- host data path --------------------------------------------------------------------
    /**
     * Sends a UDP datagram of `payloadBytes` (opaque bytes `payload` followed by zeros up to
     * `payloadBytes`; all zeros if null) to
     * flow.dstIp (or flow.dstIp6 when flow.ipv6) with traffic class flow.priority; to the
     * peer's MAC, or for a multicast group to the group's MAC (RFC 1112 §6.4, RFC 2464 §7).
     * Returns false, counted, if the queue for that priority is full (TxQueueFull), the link is
     * down (LinkDown) or the datagram exceeds the MTU (Oversize).
     */
    bool SendUdp(const EthUdpFlow& flow,
                 uint32_t payloadBytes,
                 Ptr<const Packet> payload = nullptr);
    /// The same with the payload's first `stored` bytes given as memory (zeros follow up to
    /// `payloadBytes`): a few dozen are kept in the frame record itself (EthFrame::StorePayload),
    /// so a header-only packet needs no ns-3 Packet.
    bool SendUdp(const EthUdpFlow& flow,
                 uint32_t payloadBytes,
                 const uint8_t* leading,
                 uint32_t stored);
    /**
     * Sends a frame a real host's network stack made (emulation: models/emu/eth-tap-bridge.h),
     * `length` bytes from the destination MAC on, no FCS. It is parsed (EthFrame::ParseFromHost)
     * and queued on the class its 802.1Q PCP names, or for an untagged frame the class selector
     * of its DSCP (RFC 2474 §4.2.2.2), as the receiving side classifies. Returns false, counted,
     * when the bytes are malformed (the parse error's drop reason), the packet exceeds the MTU
     * (Oversize), the link is down (LinkDown) or the class's queue is full (TxQueueFull).
     */
    bool SendFromHost(const uint8_t* bytes, uint32_t length);
    /// Frames the transmit queue of class `tc` can still take (TxQueueFrames less those queued):
    /// a host bridge with TSO holds a large frame back until all its segments fit, as a NIC
    /// stops its queue rather than drop.
    uint32_t GetTxQueueRoom(uint8_t tc) const;
    uint32_t GetTxQueueFrames() const { return m_txQueueFrames; }
    /// Frames queued on class `tc` for transmission (the one being sent is no longer queued).
    uint32_t GetQueuedFrames(uint8_t tc) const
    {
        return static_cast<uint32_t>(m_txq[tc % kEthPriorities].frames.size());
    }
    /// Bytes a UDP datagram of `payloadBytes` (and `intBytes` of INT) sent by this port takes
    /// on the wire: its frame as SendUdp builds it plus preamble, SFD and inter-frame gap.
    uint32_t UdpWireBytes(uint32_t payloadBytes, bool ipv6, uint32_t intBytes = 0) const;
    bool CanSend(uint8_t priority) const;
    /// The IPv4 identification the next SendUdp will use (RoCEv2's ICRC covers it).
    uint16_t PeekNextIpId() const { return m_ipId; }
    typedef Callback<void, Ptr<EthNetDevice>, const EthFrame&> EthReceiveCallback;
    /// Every good frame addressed to this host port or to an IP multicast group (the consumer
    /// picks the groups it wants), after the receive buffer, if modelled.
    void SetEthReceiveCallback(EthReceiveCallback cb);
    /// Called each time a frame of a priority leaves a host's transmit queue (room again).
    void SetTxReadyCallback(Callback<void, Ptr<EthNetDevice>, uint8_t> cb);
    /// A frame arriving from outside the model (a real host, a fuzzer, a test): bytes
    /// destination MAC through FCS, checked as a MAC and IPv4 layer check them.
    void InjectReceivedBytes(const uint8_t* bytes, uint32_t length);

    // ---- PFC generation (switch MMU, host receive buffer) -----------------------------------
    /// Asks the peer to stop `priority` (sends PFC XOFF now and refreshes it while asserted).
    void AssertPause(uint8_t priority);
    /// Lets the peer resume `priority` (sends PFC with quanta 0).
    void ReleasePause(uint8_t priority);
    bool IsPauseAsserted(uint8_t priority) const { return (m_pauseAsserted >> priority) & 1; }

    // ---- used by EthSwitch ---------------------------------------------------------------
    /// Queues a frame the switch forwards out of this port on class frame->priority.
    void EnqueueEgress(EthFrame* frame);
    /// Bytes queued for transmission on a class.
    uint64_t GetQueueBytes(uint8_t tc) const { return m_txq[tc].bytes; }
    /// Bytes queued for transmission over all priorities (the sum of GetQueueBytes).
    uint64_t GetQueuedBytes() const { return m_queuedBytes; }
    /// Wire bytes (frame + kEthWireOverheadBytes) of the non-PFC frames sent, all priorities.
    uint64_t GetTxWireBytes() const { return m_txWireBytes; }
    /// GetDataRate in bit/s, without building a DataRate.
    uint64_t GetBitRate() const { return m_bps; }
    uint64_t GetMaxQueueBytes(uint8_t tc) const { return m_txq[tc].maxBytes; }
    void CountDrop(const EthFrame* frame, EthDropReason reason);

    // ---- observation -----------------------------------------------------------------------
    /// The port's counters (the per-priority frame and byte counts assembled from the hot
    /// per-frame pairs the port keeps).
    EthPortCounters GetCounters() const;
    uint64_t GetDropCount(EthDropReason r) const { return m_drops[static_cast<int>(r)]; }
    uint64_t GetTotalDrops() const;
    /// Total time the transmitter of `priority` has been paused by the peer, up to now.
    Time GetPausedTime(uint8_t priority) const;
    bool IsPaused(uint8_t priority) const;
    uint64_t GetRxBufferMaxUsed() const { return m_rxMaxUsed; }
    uint64_t GetWakeEvents() const { return m_wakes; }
    /// Receives every frame's bytes (without FCS) on this port, tx and rx, with the time.
    typedef Callback<void, Time, const uint8_t*, uint32_t, bool> SnifferCallback;
    /// Adds a sniffer; returns its handle for RemoveSniffer.
    uint32_t AddSniffer(SnifferCallback cb);
    /// Removes a sniffer (a capture stopped while the simulation runs); unknown handles are
    /// ignored.
    void RemoveSniffer(uint32_t handle);
    /// Arrival of a frame's last bit (scheduled by the peer's transmitter).
    /// A frame's arrival, as an event: the EventTail scope around ReceiveFrame.
    void ReceiveFrameEvent(EthFrame* frame);
    void ReceiveFrame(EthFrame* frame);

  protected:
    void DoDispose() override;

  private:
    struct TxQueue
    {
        LazyFifo<EthFrame*> frames;
        uint64_t bytes = 0;
        uint64_t maxBytes = 0;
        int64_t pausedUntilPs = 0;   ///< PFC: no frame starts before this
        int64_t pauseStartPs = -1;   ///< start of the current pause interval (-1: none)
        int64_t pausedTotalPs = 0;   ///< finished pause intervals
        uint64_t deficit = 0;        ///< DWRR deficit counter, bytes
        uint32_t weight = 1;
    };

    /// SendUdp's checks and frame; the payload as a Packet or as memory (one of them).
    bool SendUdpFrame(const EthUdpFlow& flow,
                      uint32_t payloadBytes,
                      Ptr<const Packet> payload,
                      const uint8_t* leading,
                      uint32_t stored);
    /// Puts a host's frame on its class's transmit queue (room already checked).
    void EnqueueHostFrame(EthFrame* f);
    void Kick();
    /// Starts the next frame if the wire is free at `now` (ps; the caller's Simulator::Now).
    void WakeUp(int64_t now);
    /// The wire's wake-up as an event: the EventTail scope around WakeUp, which Kick calls
    /// directly in whatever event it runs.
    void WakeUpEvent();
    void ScheduleWake(int64_t atPs);
    /// Next frame to send at `nowPs` (removed from its queue), or null; `retryPs` gets the
    /// earliest time a paused queue may go (or -1).
    EthFrame* Dequeue(int64_t nowPs, int64_t* retryPs);
    bool Eligible(uint8_t tc, int64_t nowPs) const;
    void Transmit(EthFrame* frame, int64_t nowPs);
    void SendPfc(uint16_t mask, uint16_t quanta);
    void RefreshPause();
    void HandlePfc(const EthFrame& frame);
    void ApplyPfc(const EthPfcHeader& pfc);
    void EndPauseInterval(uint8_t prio, int64_t endPs);
    void DeliverLocal(EthFrame* frame);
    void DrainRxHead();
    void DrainDone();
    void Sniff(const EthFrame& frame, bool transmit);
    void DropQueued(EthDropReason reason);
    void Release(EthFrame* frame);
    void SetMtuAttribute(uint16_t mtu);
    void SetDwrrWeights(std::string text);
    std::string GetDwrrWeights() const;

    // What every frame's receive, enqueue, wake-up and transmit read, first and together: at
    // fabric scale the ports' state is far larger than the cache, and each line a frame's path
    // touches on a port is a miss (perf of a k=16 fat-tree, docs/performance.md). The rest of
    // the object follows, configuration first.
    bool m_linkUp = false;          ///< the cable's state (SyncCable)
    uint8_t m_nonEmpty = 0;         ///< bit c: class c has frames queued
    uint8_t m_pauseAsserted = 0;    ///< PFC generator: priorities this port holds paused
    uint16_t m_portNumber = 1;
    uint32_t m_cableGeneration = 0; ///< the cable's link generation (SyncCable)
    int64_t m_cableDelayPs = 0;     ///< the cable's propagation delay (SyncCable)
    EthSwitch* m_switch = nullptr;  ///< the switch that owns this port (not owned: no cycle)
    EthNetDevice* m_peerRaw = nullptr; ///< the cabled peer (a cable never changes ends)
    int64_t m_busyUntilPs = 0;
    int64_t m_wakeAtPs = -1;
    uint64_t m_wakes = 0;
    uint64_t m_bps = 100000000000ULL; ///< m_rate in bit/s (cached: used per frame)
    int64_t m_ifgPs = 960;            ///< the inter-frame gap at m_rate, picoseconds
    // Running totals over the priorities, for a switch's INT record per frame (EthSwitch::
    // PushIntHop) without a loop over the priorities.
    uint64_t m_queuedBytes = 0; ///< sum of m_txq[*].bytes
    uint64_t m_txWireBytes = 0; ///< sum of txBytes + txFrames * kEthWireOverheadBytes
    uint64_t m_mac = 0;
    uint32_t m_ip = 0;
    Ptr<ErrorModel> m_receiveErrorModel;
    SnifferList<SnifferCallback> m_sniffers;
    TracedCallback<const EthFrame&> m_txTrace;
    TracedCallback<const EthFrame&> m_rxTrace;
    TracedCallback<uint8_t, uint64_t> m_queueTrace;
    /// Frames and bytes of one priority side by side: a frame counts both, in one line (the
    /// rest of EthPortCounters, PFC's, lives in m_counters).
    struct FrameByteCount
    {
        uint64_t frames = 0;
        uint64_t bytes = 0;
    };
    std::array<FrameByteCount, kEthPriorities> m_rxCount{};
    std::array<FrameByteCount, kEthPriorities> m_txCount{};

    // configuration
    Ptr<Node> m_node;
    Ptr<EthChannel> m_channel;
    uint32_t m_ifIndex = 0;
    uint16_t m_mtu = 1500;
    DataRate m_rate;
    Ipv6Bytes m_ip6{};
    uint32_t m_txQueueFrames = 64;
    uint8_t m_strictMask = 0;
    uint32_t m_dwrrQuantum = 9216;
    std::string m_dwrrWeightsError; ///< a DwrrWeights value that did not parse (for Validate)
    uint8_t m_pfcMask = 0x08;
    uint16_t m_pauseQuanta = 0xFFFF;
    double m_refreshFraction = 0.5;
    bool m_vlanTag = false;
    uint16_t m_vlanId = 0;
    uint64_t m_rxBufferBytes = 512 * 1024;
    DataRate m_rxDrainRate;
    uint64_t m_nicXoff = 256 * 1024;
    uint64_t m_nicXon = 128 * 1024;
    Time m_responseTime; ///< 0: from the 802.3 table by rate
    Time m_pfcResponseDelay; ///< received PFC takes effect this much later (0: at once)
    uint32_t m_linkEpoch = 0; ///< link-down count: a delayed PFC from before one is void

    // transmit state
    std::array<TxQueue, kEthPriorities> m_txq;
    LazyFifo<EthFrame*> m_ctrl;
    uint8_t m_rrNext = 0;
    bool m_rrCredited = false;
    ReusableEvent<EthNetDevice, &EthNetDevice::WakeUpEvent> m_wake{this}; ///< the transmitter's wake-up

    // PFC generator
    EventId m_refresh;

    // host receive buffer
    LazyFifo<EthFrame*> m_rxFifo;
    uint64_t m_rxUsed = 0;
    std::array<uint64_t, kEthPriorities> m_rxUsedPrio{};
    uint64_t m_rxMaxUsed = 0;
    EventId m_drain;

    EthPortCounters m_counters; ///< PFC's counts (tx/rx frames and bytes: m_txCount, m_rxCount)
    std::array<uint64_t, static_cast<int>(EthDropReason::Count)> m_drops{};
    uint16_t m_ipId = 0;
    std::vector<uint8_t> m_scratch;

    EthReceiveCallback m_ethRx;
    Callback<void, Ptr<EthNetDevice>, uint8_t> m_txReady;
    NetDevice::ReceiveCallback m_netRx;
    NetDevice::PromiscReceiveCallback m_promiscRx;
    std::vector<Callback<void>> m_linkChange;

    TracedCallback<const EthFrame*, uint8_t> m_dropTrace;
    TracedCallback<uint8_t, uint16_t> m_pauseTxTrace;
    TracedCallback<uint8_t, uint16_t> m_pauseRxTrace;
    TracedCallback<uint8_t, Time> m_pausedTrace;
};

} // namespace ns3

#endif
