// An InfiniBand port: the link layer of one end of a cable, on an HCA or on a switch.
#ifndef CNUAS_IB_NET_DEVICE_H
#define CNUAS_IB_NET_DEVICE_H

#include "models/common/reusable-event.h"
#include "models/common/sniffer-list.h"
#include "ib-frame.h"
#include "ib-link-rate.h"
#include "ib-lrh-header.h"
#include "ib-port-counters.h"
#include "ib-vl-arbiter.h"

#include "ns3/callback.h"
#include "ns3/error-model.h"
#include "ns3/event-id.h"
#include "ns3/mac16-address.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <array>
#include <deque>
#include <string>
#include <vector>

namespace ns3
{

class IbChannel;
class IbSwitch;

/**
 * A TracedCallback that tells its owner before a sink connects or disconnects. The lazy
 * flow-control refresh (IbNetDevice::LazyFlowControlRefresh) needs it: a refresh that no one
 * observes costs no event, so a port must account for the refreshes it skipped, and go back to
 * sending them as events, before anyone starts observing (MakeTraceSourceAccessor calls these
 * methods through the member's declared type, so hiding the base's methods is enough).
 */
template <typename... Ts>
class IbObservedTracedCallback : public TracedCallback<Ts...>
{
  public:
    void SetObserverHook(Callback<void> hook) { m_hook = hook; }
    void ConnectWithoutContext(const CallbackBase& callback)
    {
        Notify();
        TracedCallback<Ts...>::ConnectWithoutContext(callback);
    }
    void Connect(const CallbackBase& callback, std::string path)
    {
        Notify();
        TracedCallback<Ts...>::Connect(callback, path);
    }
    void DisconnectWithoutContext(const CallbackBase& callback)
    {
        Notify();
        TracedCallback<Ts...>::DisconnectWithoutContext(callback);
    }
    void Disconnect(const CallbackBase& callback, std::string path)
    {
        Notify();
        TracedCallback<Ts...>::Disconnect(callback, path);
    }

  private:
    void Notify()
    {
        if (!m_hook.IsNull())
        {
            m_hook();
        }
    }
    Callback<void> m_hook;
};

/// PortInfo.PortState, IBA vol. 1 §7.2 and §14.2.5.6.
enum class IbPortState : uint8_t
{
    NoChange = 0,
    Down = 1,
    Init = 2,
    Armed = 3,
    Active = 4,
};

/// PortInfo.PortPhysicalState, IBA vol. 1 §14.2.5.6.
enum class IbPhysState : uint8_t
{
    Sleep = 1,
    Polling = 2,
    Disabled = 3,
    PortConfigurationTraining = 4,
    LinkUp = 5,
    LinkErrorRecovery = 6,
};

/// Why a port discarded a packet (the trace source "Drop" reports one of these).
enum class IbDropReason : uint8_t
{
    BadVcrc,          ///< VCRC mismatch: PortRcvErrors (IBA vol. 1 §7.8.2)
    BadIcrc,          ///< ICRC mismatch at the destination CA: PortRcvErrors (§7.8.1)
    Malformed,        ///< truncated, LVer != 0, PktLen disagreeing with the length: PortRcvErrors
    UnsupportedLnh,   ///< raw / non-IBA packet at a CA that does not take them: PortRcvErrors
    InvalidVl,        ///< data packet on a VL above OperationalVLs: PortRcvErrors (§7.6.3)
    PortNotActive,    ///< data packet while the port is not Armed/Active (§7.2)
    DlidMismatch,     ///< DLID not this CA port's LID range: PortRcvErrors
    SwitchRelay,      ///< no LFT entry / bad port / SL2VL to an unused VL: PortRcvSwitchRelayErrors
    XmitDiscard,      ///< output port down or not Active: PortXmitDiscards
    Vl15Overflow,     ///< VL15 buffer full: VL15Dropped (§7.6.4: SMPs may be dropped)
    BufferOverrun,    ///< more data than advertised credit: ExcessiveBufferOverrunErrors
    LinkDown,         ///< the cable went down with the packet in flight or queued
    InjectedLoss,     ///< a PacketLossModel (Action Drop) removed it on the wire: no counter
    /// A data packet needing more credit blocks than the peer's whole receive buffer for a VL
    /// (its VlBufferBytes) can ever grant: discarded at the head of its queue instead of
    /// holding the VL for ever: PortXmitDiscards
    ExceedsPeerBuffer,
};

const char* IbDropReasonName(IbDropReason r);
const char* IbPortStateName(IbPortState s);

/// What a CA port tells the layer above about a received packet.
struct IbRxInfo
{
    uint16_t slid = 0;
    uint16_t dlid = 0;
    uint8_t sl = 0;
    uint8_t vl = 0;
    IbLnh lnh = IbLnh::IbaLocal;
    uint32_t bytes = 0; ///< LRH through VCRC
};

/// A packet the transport above a CA port discarded for its P_Key (IBA vol. 1 §10.9.3): the
/// fields of the Bad P_Key trap (Notice 257, §14.2.5.1).
struct IbPkeyViolation
{
    uint16_t pkey = 0;  ///< the packet's BTH P_Key
    uint16_t slid = 0;  ///< the sender's LID (LRH SLID)
    uint16_t dlid = 0;  ///< the LID it was sent to (LRH DLID)
    uint8_t sl = 0;     ///< LRH SL
    uint32_t srcQp = 0; ///< the sender's QP
    uint32_t dstQp = 0; ///< the BTH DestQP
    bool global = false; ///< the packet had a GRH: the GIDs below are its
    std::array<uint8_t, 16> sgid{};
    std::array<uint8_t, 16> dgid{};
};

/**
 * \brief One InfiniBand port (IBA vol. 1 ch. 7, the link layer): transmit side with VL
 * arbitration and credit-based flow control, receive side with per-VL buffers counted in 64-byte
 * blocks, the port state machine, and the PortCounters.
 *
 * A port belongs either to a channel adapter (it then has its own per-VL transmit queues and
 * delivers to the layer above) or to an IbSwitch (the switch's crossbar feeds its transmitter and
 * takes what it receives).
 *
 * Event economy: a packet costs one event per hop (its arrival at the next port). The
 * transmitter schedules a wake-up only when work is waiting behind a packet on the wire;
 * flow-control packets cost one arrival event each and are coalesced while one is pending.
 */
class IbNetDevice : public NetDevice
{
  public:
    static TypeId GetTypeId();
    IbNetDevice();
    ~IbNetDevice() override;

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
    /// Sends `packet` (which starts after the LRH, without ICRC/VCRC) to the LID in `dest`
    /// (a Mac16Address) on SL 0; protocolNumber is the LNH.
    bool Send(Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber) override;
    bool SendFrom(Ptr<Packet> packet,
                  const Address& source,
                  const Address& dest,
                  uint16_t protocolNumber) override;
    Ptr<Node> GetNode() const override;
    void SetNode(Ptr<Node> node) override;
    bool NeedsArp() const override;
    /// The node's protocol handlers (Node::AddDevice sets this): a CA port's packets reach it
    /// when no InfiniBand consumer (SetIbReceiveCallback, SetIbFrameReceiveCallback) owns the
    /// data path.
    void SetReceiveCallback(NetDevice::ReceiveCallback cb) override;
    void SetPromiscReceiveCallback(NetDevice::PromiscReceiveCallback cb) override;
    bool SupportsSendFrom() const override;

    // ---- trace signatures ----
    /// Tx, Rx: (packet, VL).
    typedef void (*PacketVlCallback)(Ptr<const Packet> packet, uint8_t vl);
    /// Drop: (packet or null, IbDropReason).
    typedef void (*PacketReasonCallback)(Ptr<const Packet> packet, uint8_t reason);
    /// BufferOccupancy, Credits: (VL, blocks).
    typedef void (*VlValueCallback)(uint8_t vl, uint32_t blocks);
    /// FlowControlTx, FlowControlRx: (op, VL, FCTBS, FCCL).
    typedef void (*FlowControlCallback)(uint8_t op, uint8_t vl, uint16_t fctbs, uint16_t fccl);
    /// CreditStall: (VL, how long data waited).
    typedef void (*VlTimeCallback)(uint8_t vl, Time duration);
    /// PortState: (old, new) IbPortState values.
    typedef void (*StateCallback)(uint8_t oldState, uint8_t newState);
    /// A LID field (the port's own, or its master SM's) changed: (old, new).
    typedef void (*LidCallback)(uint16_t oldLid, uint16_t newLid);
    /// PkeyTable: the first and one past the last entry that changed.
    typedef void (*PkeyTableCallback)(uint16_t first, uint16_t end);
    /// PkeyViolation: the packet the transport discarded.
    typedef void (*PkeyViolationCallback)(const IbPkeyViolation& v);

    // ---- cabling and identity --------------------------------------------------------------
    void Attach(Ptr<IbChannel> channel);
    Ptr<IbChannel> GetIbChannel() const;
    Ptr<IbNetDevice> GetPeer() const;
    /// Called by the channel once both ends are connected: physical training, then Init.
    void NotifyCableConnected();
    /// The cable's link generation and propagation delay, pushed by the channel whenever they
    /// change (attach, a new length, the link going down): every packet and flow-control
    /// packet reads them at both ends, and the port's copy saves a cache miss on the channel
    /// object each time (the same as the Ethernet port's).
    void SyncCable(uint32_t generation, int64_t delayPs);
    /// Takes the physical link down (cable pulled / port disabled): queued and in-flight
    /// packets are discarded, PortState goes Down, LinkDownedCounter counts it.
    void SetPhysicalLinkDown();
    /// Brings a downed link back: both ends retrain to Init.
    void SetPhysicalLinkUp();
    /// Makes this a switch port (port numbers 1..N; port 0 is the switch's management port).
    void SetSwitch(Ptr<IbSwitch> sw, uint8_t portNumber);
    Ptr<IbSwitch> GetSwitch() const;
    bool IsSwitchPort() const;
    uint8_t GetPortNumber() const;
    void SetPortNumber(uint8_t n);
    uint64_t GetPortGuid() const;
    void SetPortGuid(uint64_t guid);

    // ---- PortInfo fields (what a subnet manager Gets and Sets, IBA vol. 1 §14.2.5.6) -------
    uint16_t GetLid() const;
    void SetLid(uint16_t lid);
    uint8_t GetLmc() const;
    void SetLmc(uint8_t lmc);
    uint16_t GetSmLid() const;
    void SetSmLid(uint16_t lid);
    IbPortState GetPortState() const;
    IbPhysState GetPhysState() const;
    /**
     * A PortState change as a SubnSet(PortInfo) requests it (IBA vol. 1 §7.2): Init->Armed,
     * Armed->Active, anything->Down (the link retrains to Init). Returns false, changing
     * nothing, for any other transition.
     */
    bool SetPortState(IbPortState next);
    /// Data VLs in use (1, 2, 4, 8 or 15, per OperationalVLs); only while Down or Init.
    bool SetOperationalVls(uint8_t dataVls);
    uint8_t GetOperationalVls() const;
    uint8_t GetVlCap() const;
    /// The width x speed this port supports (enabled).
    IbLinkRate GetSupportedRate() const;
    /// The width x speed the link trained to (common to both ends); valid when linked.
    IbLinkRate GetActiveRate() const;
    IbVlArbiter& GetVlArbiter();
    /// SLtoVLMappingTable of a CA port (switches keep theirs per port pair in IbSwitch).
    void SetSlToVl(const std::array<uint8_t, 16>& table);
    uint8_t MapSlToVl(uint8_t sl) const;
    /**
     * The port's P_Key table (IBA vol. 1 §10.9.2): what the SM writes (SubnSet(P_KeyTable),
     * §14.2.5.7, through the node's SMA) and what the transport checks each packet against, one
     * table for both. Entry 0 holds the default partition as a full member (0xFFFF) until an SM
     * writes it (§10.9.1.2). Its size is the port's capacity: the SMA makes it its node's
     * PartitionCap when it is installed.
     */
    const std::vector<uint16_t>& GetPkeyTable() const;
    /// Entry `index`; false past the end of the table.
    bool GetPkey(uint16_t index, uint16_t& pkey) const;
    /// Replaces the table (its size becomes the capacity); "PkeyTable" fires if entries changed.
    void SetPkeyTable(const std::vector<uint16_t>& table);
    /// Writes `count` entries from `first` (within the table); false, changing nothing, if they
    /// do not fit. "PkeyTable" fires if entries changed.
    bool SetPkeys(uint16_t first, const uint16_t* entries, uint16_t count);
    /// The transport discarded a packet whose P_Key did not match its QP's (§10.9.3):
    /// PortInfo.P_KeyViolations counts it (§14.2.5.6), "PkeyViolation" tells the SMA (Trap 257).
    void NotifyPkeyViolation(const IbPkeyViolation& v);
    uint64_t GetPkeyViolations() const;

    // ---- channel-adapter data path ---------------------------------------------------------
    /**
     * Sends a packet from this CA port: `packet` holds everything after the LRH (GRH/BTH and
     * payload including pad, a multiple of 4 bytes) without ICRC/VCRC; the port adds the LRH, the
     * ICRC (LNH 2/3) and the VCRC. Returns false if the port is not Active (counted in
     * PortXmitDiscards), the VL's transmit queue is full, or the packet is malformed.
     */
    bool SendIb(Ptr<Packet> packet, uint16_t dlid, uint8_t sl, IbLnh lnh = IbLnh::IbaLocal);
    /**
     * SendIb without an ns-3 Packet: the `length` bytes after the LRH are the `stored` bytes at
     * `data` followed by `length - stored` zeros (a synthetic payload, or data of memory that
     * reads as zeros). The frame stores them up to their last byte that is not zero
     * (IbFrame::StoreBytes), so zeros cost nothing however they are passed.
     */
    bool SendIbBytes(const uint8_t* data, uint32_t stored, uint32_t length, uint16_t dlid,
                     uint8_t sl, IbLnh lnh = IbLnh::IbaLocal);

  private:
    /// Builds the frame (LRH, CRC placeholders) from the bytes after the LRH (`stored` at
    /// `data`, zeros up to `length`) and queues it on `vl`.
    /// `slid` < 0: the port's LID (permissive on VL15 while the LID is 0).
    bool Enqueue(const uint8_t* data, uint32_t stored, uint32_t length, uint16_t dlid, uint8_t sl,
                 uint8_t vl, IbLnh lnh, int32_t slid = -1);
    /// Enqueue of a Packet's bytes.
    bool EnqueuePacket(Ptr<const Packet> packet, uint16_t dlid, uint8_t sl, uint8_t vl,
                       IbLnh lnh, int32_t slid = -1);

  public:
    /**
     * Sends a subnet-management packet on VL15 (`packet` starts at the BTH, as for SendIb). VL15
     * needs no credit and no Active port: it is what flows while a port is still Init, before a
     * subnet manager has given it a LID (IBA vol. 1 §7.2, §7.6.4). Returns false if the physical
     * link is down or the VL15 queue is full.
     */
    bool SendManagement(Ptr<Packet> packet, uint16_t dlid);
    /**
     * Sends a packet a management agent of this node generated, from a channel-adapter port or
     * from a switch port (a switch's management port 0 sends through its physical ports,
     * IBA vol. 1 §17.2.1): `packet` starts at the BTH, the LRH carries `dlid` and `slid` as
     * given (directed-route SMPs use the permissive LID for both, §14.2.2). VL15 needs neither
     * credit nor an Active port; a data VL (a GMP's) needs an Active port and a VL below
     * OperationalVLs, else the packet is counted in PortXmitDiscards. False if not queued.
     */
    bool SendManagementPacket(Ptr<Packet> packet, uint16_t dlid, uint16_t slid, uint8_t sl,
                              uint8_t vl);
    /**
     * SendManagementPacket without an ns-3 Packet: the `length` bytes at `data` start at the
     * BTH. A switch's SMI forwards every directed-route SMP at every hop through here, so the
     * management path builds no Packet unless someone observes it (the XmitDiscard drop trace).
     */
    bool SendManagementBytes(const uint8_t* data, uint32_t length, uint16_t dlid, uint16_t slid,
                             uint8_t sl, uint8_t vl);
    /// True if a packet on `sl` would be queued now.
    bool CanSend(uint8_t sl) const;
    /// True if the send queue of `vl` has room for a packet now (TxQueuePackets).
    bool HasQueueRoom(uint8_t vl) const;
    typedef Callback<void, Ptr<IbNetDevice>, Ptr<const Packet>, const IbRxInfo&> IbReceiveCallback;
    /// Receives every good packet addressed to this CA port (the whole wire packet). Replaces
    /// an IbFrameReceiveCallback: the CA's data path has one owner.
    void SetIbReceiveCallback(IbReceiveCallback cb);
    /**
     * The same without an ns-3 Packet: the frame, valid during the call (its bytes through
     * IbFrame::CopyBytes, the zeros that end them implied). Replaces an IbReceiveCallback.
     */
    typedef Callback<void, Ptr<IbNetDevice>, const IbFrame&, const IbRxInfo&>
        IbFrameReceiveCallback;
    void SetIbFrameReceiveCallback(IbFrameReceiveCallback cb);
    /**
     * Receives, instead of the IbReceiveCallback, the packets for this CA port's management
     * agents: everything on VL15 and every packet whose BTH DestQP is 0 (SMI) or 1 (GSI),
     * IBA vol. 1 §13.5.1. Unset, they go to the IbReceiveCallback like any other packet. The
     * frame is valid during the call (as for an IbFrameReceiveCallback): the management path
     * reads its bytes without an ns-3 Packet.
     */
    void SetManagementReceiveCallback(IbFrameReceiveCallback cb);
    /// Called when a full transmit queue has room again.
    void SetTxReadyCallback(Callback<void, Ptr<IbNetDevice>> cb);
    /**
     * A packet arriving from outside the model (a real host, a fuzzer, a test): raw wire bytes
     * LRH..VCRC, checked like any packet whose bytes may be corrupt.
     */
    void InjectReceivedBytes(const uint8_t* bytes, uint32_t length);

    // ---- used by IbSwitch ------------------------------------------------------------------
    /// A queue whose head frame leaves through this port on `outVl` (frame->outVl).
    void RegisterReadyQueue(IbFrameQueue* queue);
    /// Frees receive-buffer blocks (the frame left the switch or was consumed).
    void ReleaseReceiveBlocks(uint8_t vl, uint16_t blocks);
    IbFrameQueue& GetReceiveQueue(uint8_t vl);
    /// A VL15 packet held in the receive buffer has left it.
    void ReleaseVl15Slot();
    /// Discards a frame this port had accepted (counting it as `reason` on this port).
    void DropFrame(IbFrame* frame, IbDropReason reason);

    // ---- observation -----------------------------------------------------------------------
    const IbPortCounters& GetCounters() const;
    IbPortCounters& GetCountersForUpdate();
    uint32_t GetReceiveBufferBlocks() const;
    uint32_t GetReceiveBufferUsed(uint8_t vl) const;
    uint32_t GetMaxReceiveBufferUsed(uint8_t vl) const;
    /// Blocks the transmitter may still send on `vl` before it needs more credit.
    uint32_t GetCreditsAvailable(uint8_t vl);
    uint16_t GetFctbs(uint8_t vl) const;
    uint16_t GetFccl(uint8_t vl);
    /// Flow-control packets received and processed at their arrival (events) and applied
    /// lazily (no event), for the performance accounting.
    uint64_t GetFlowControlEvents() const { return m_fcEvents; }
    uint64_t GetFlowControlStashed() const;
    uint64_t GetWakeEvents() const { return m_wakes; }
    /// What the transmitter's wake-ups sent, for the performance accounting (issue 18's events
    /// per packet-hop): a data packet, a flow-control packet, a VL15 packet, or nothing (the
    /// packet it woke for could not go yet: credit, a cut-through head still arriving). They
    /// add up to GetWakeEvents().
    struct WakeBreakdown
    {
        uint64_t data = 0;
        uint64_t flowControl = 0;
        uint64_t management = 0;
        uint64_t nothing = 0;
    };
    const WakeBreakdown& GetWakeBreakdown() const { return m_wakeBreakdown; }
    /// Flow-control refresh ticks (IBA vol. 1 §7.9.4.2) executed as events, and those
    /// accounted without an event while the link was idle (LazyFlowControlRefresh); together
    /// they are the ticks an all-events run executes.
    uint64_t GetRefreshEvents() const { return m_refreshes; }
    uint64_t GetLazyRefreshes() const;
    /// Of the lazy ticks, those accounted a whole refresh period at a time (a sleeping link's
    /// refresh repeats exactly each period, so a long idle stretch costs a few steps, not one
    /// per tick).
    uint64_t GetLazyRefreshesSkipped() const;
    /// Whether the refresh timer is asleep (idle link, no event pending for it).
    bool IsRefreshDormant() const { return m_refreshDormant; }
    /// Total time this port had data for `vl` but no credit to send it.
    Time GetCreditStallTime(uint8_t vl) const;
    uint64_t GetDropCount(IbDropReason r) const;
    uint64_t GetFlowControlPacketsSent() const;
    /// A callback that receives every packet's wire bytes on this port (tx and rx) with its
    /// time; attaching one makes the port materialize CRCs (used by pcap writers).
    typedef Callback<void, Time, const uint8_t*, uint32_t, bool> SnifferCallback;
    /// Adds a sniffer; returns its handle for RemoveSniffer.
    uint32_t AddSniffer(SnifferCallback cb);
    /// Removes a sniffer (a capture stopped while the simulation runs); unknown handles are
    /// ignored.
    void RemoveSniffer(uint32_t handle);
    /// Arrival of a frame (scheduled by the peer's transmitter).
    void ReceiveFrameEvent(IbFrame* frame);
    /// Arrival of a flow-control packet (IBA vol. 1 §7.9.4).
    void ReceiveFlowControlEvent(uint8_t op, uint8_t vl, uint16_t fctbs, uint16_t fccl,
                                 uint32_t linkGeneration);

  protected:
    void DoDispose() override;
    void DoInitialize() override;

  private:
    /// The Mtu attribute's setter: an invalid value is an error, not silently ignored.
    void SetMtuAttribute(uint16_t mtu);

    /// A queue whose head goes out through this port, with that head: it cannot change while
    /// the queue is registered (only this port pops it, after taking the entry out), and the
    /// transmitter's every decision reads it (its blocks, its arrival) - through the queue, two
    /// dependent cache misses more (the queue sits in another port's receive buffer).
    struct ReadyEntry
    {
        IbFrameQueue* queue;
        IbFrame* head;
    };
    struct TxVl
    {
        uint16_t fctbs = 0;              ///< blocks sent since link init, mod 4096
        uint16_t fccl = 0;               ///< last credit limit received, mod 4096
        LazyFifo<ReadyEntry> ready;      ///< queues whose head goes out on this VL
        int64_t stallStartPs = -1;       ///< data waiting without credit since
        int64_t stallTotalPs = 0;
        /// Flow-control packets from the peer that arrive while nothing here is waiting for
        /// them: applied when this port next looks at its credits (see ApplyStashedFlowControl).
        struct StashedFc
        {
            int64_t arrivalPs;
            uint16_t fccl;
        };
        LazyFifo<StashedFc> stash;
        IbFrameQueue hcaQueue;           ///< a CA's own transmit queue
    };
    struct RxVl
    {
        uint16_t abr = 0;      ///< adjusted blocks received, mod 4096
        /// The peer's FCTBS after the last data packet that reached this port (good or not):
        /// what ABR would be had nothing been lost.
        uint16_t lastArrivedPos = 0;
        uint32_t lostSinceSync = 0; ///< data packets discarded here since the last ABR sync
        uint32_t maxUsed = 0;
        bool fcPending = false;
        bool fcInitPending = false;
        int64_t lastFcSentPs = -1;
        IbFrameQueue queue;    ///< the receive buffer (switch ports hold frames here)
    };

    // A VL's ready list changes only through these, which keep m_readyVls in step with it.
    void PushReady(uint8_t vl, const ReadyEntry& entry)
    {
        m_tx[vl].ready.push_back(entry);
        m_readyVls = static_cast<uint16_t>(m_readyVls | (1u << vl));
    }
    void PopReady(uint8_t vl)
    {
        m_tx[vl].ready.pop_front();
        if (m_tx[vl].ready.empty())
        {
            m_readyVls = static_cast<uint16_t>(m_readyVls & ~(1u << vl));
        }
    }
    void ClearReady(uint8_t vl)
    {
        m_tx[vl].ready.clear();
        m_readyVls = static_cast<uint16_t>(m_readyVls & ~(1u << vl));
    }

    void Kick();
    void WakeUp();
    // The `nowPs` parameters below are the current time, which the caller has read already: a
    // port's transmit path runs several times per packet-hop, and one read per decision keeps
    // it one instant. Times on this path are integer picoseconds, as on the Ethernet side: an
    // ns-3 Time made, converted and destroyed at every step cost a tenth of an InfiniBand
    // fabric's instructions (each conversion looks up the time resolution, each Time checks
    // whether times are being marked).
    /// Whether a wake-up at `atPs` (the end of the current transmission) has work to do.
    bool HasPendingWork(int64_t atPs, int64_t nowPs);
    void ScheduleWake(int64_t atPs, int64_t nowPs);
    bool HasCredit(uint8_t vl, uint16_t blocks) const;
    uint16_t AdvertisedFccl(uint8_t vl) const;
    void SendFlowControl(uint8_t vl, bool init, int64_t nowPs);
    void TransmitFrame(IbFrame* frame, IbFrameQueue* from, uint8_t vl, int64_t nowPs);
    /// When the queued `head` may start on this port: now, or later while a cut-through
    /// packet is still arriving (its last byte must not leave before it has come in).
    int64_t EarliestStartPs(const IbFrame* head, int64_t nowPs) const;
    void FlowControlRefresh();
    void StartFlowControl();
    void ResetLinkState();
    /// This end's side of a link going down: physical state, queues, PortState, timers.
    void LoseLink(IbPhysState phys);
    void DiscardQueued(IbDropReason reason);
    /// Pops the head of `q` and discards it: buffer space and credit released, PortXmitDiscards
    /// and the drop counter and trace for `reason`.
    void DiscardQueuedHead(IbFrameQueue* q, IbDropReason reason);
    /// Credit blocks the peer's receive buffer holds for one data VL (its VlBufferBytes).
    uint32_t PeerVlBufferBlocks() const;
    /// Discards the heads of VL `vl`'s ready queues (bound for this port) that need more credit
    /// than the peer's whole VL buffer can grant (IbDropReason::ExceedsPeerBuffer).
    void DiscardHeadsExceedingPeerBuffer(uint8_t vl);
    void ChangeState(IbPortState next);
    void CompleteTraining();
    /// Checks bytes of a frame that may be corrupt; returns false after counting the drop.
    bool VerifyFrameBytes(IbFrame* frame);
    void Sniff(IbFrame* frame, bool transmit);
    /// How long after a transmission starts the peer takes the packet (ps).
    int64_t ArrivalDelayPs(int64_t txPs, int64_t propagationPs, uint32_t bytes) const;
    /**
     * m_activeRate.SerializationTime(bytes) in picoseconds, memoized: it is asked for every
     * packet and flow-control packet a port sends, and a port sends few distinct sizes (a
     * sweep's SMPs one, flow-control packets another, a switch's cut-through head a third).
     * A hit returns what the arithmetic returned for the same size at the active rate (the memo
     * is emptied when the link trains to a rate).
     */
    int64_t WireTimePs(uint32_t bytes) const;
    /// The flow-control refresh period, FcRefreshSymbols symbol times (IBA vol. 1 §7.9.4.2).
    int64_t RefreshPeriodPs() const
    {
        return m_symbolPs * static_cast<int64_t>(m_fcRefreshSymbols);
    }
    void EndStall(uint8_t vl);
    void NoteCreditsChanged(uint8_t vl);
    void ApplyStashedFlowControl(uint8_t vl);
    void ApplyStashedFlowControl(uint8_t vl, int64_t nowPs);
    /// Whether a flow-control packet for `vl` must be processed as an event on arrival here.
    bool NeedsFlowControlEvent(uint8_t vl) const;
    void CountPeerPacketLost(IbFrame* frame);

    // ---- lazy flow-control refresh (docs/architecture.md §6.9) ----
    /// Whether the refresh timer may sleep at this tick: the link is idle both ways and no one
    /// observes this port's flow-control packets or needs them as events at the peer.
    bool RefreshCanSleep() const;
    /// Accounts, without events, for the refresh packets a sleeping timer would have sent up to
    /// `nowPs`: ticks at or before nowPs, back-to-back packets of a tick that start before it.
    /// Changes only what those packets change (lastFcSentPs, busy-until, m_fcSent, the peer's
    /// stash); the timer stays asleep. `firstTickIsEvent`: the tick at m_nextTickPs is the
    /// refresh event running now.
    void AdvanceDormantRefresh(int64_t nowPs, bool firstTickIsEvent = false);
    /// At a tick of AdvanceDormantRefresh (none pending): if the refresh has repeated exactly
    /// over the last period, accounts at once for the whole periods up to one before `nowPs`
    /// (`drainPs`: how long a tick's packets take to arrive) and returns true; else notes the
    /// state for the comparison one period on.
    bool SkipRepeatedPeriods(int64_t nowPs, int64_t period, int64_t drainPs);
    /// One refresh tick at `tickPs` as FlowControlRefresh would execute it.
    void VirtualRefreshTick(int64_t tickPs);
    /// One flow-control packet as SendFlowControl would send it, starting at `startPs`.
    void VirtualSendFlowControl(uint8_t vl, int64_t startPs, int64_t nowPs);
    /// Catches up and wakes the timer: from here on the port behaves as if it had sent every
    /// refresh as an event (pending packets of a tick, the wake-up after the one on the wire,
    /// the next tick's event).
    void WakeRefresh();
    /// Called on entry to everything that acts on the link (either end): wakes both ends'
    /// sleeping refresh timers first.
    void TouchLink()
    {
        if (m_refreshDormant || (m_peer && m_peer->m_refreshDormant))
        {
            WakeLinkRefresh();
        }
    }
    void WakeLinkRefresh();
    /// Whether a Kick at `now` may leave the link's sleeping refresh asleep: it sends at most
    /// one VL15 packet and leaves nothing queued or scheduled (accounts this end's ticks up to
    /// now when it may).
    bool KickKeepsRefreshAsleep(int64_t nowPs);
    /// Catches both ends up for a reader (no event scheduled, the timer stays asleep).
    void CatchUpLinkForRead() const;
    void SetLazyFlowControlRefresh(bool lazy);
    bool GetLazyFlowControlRefresh() const;

    // ---- what every packet-hop reads or writes, first and together ----
    // A k=16 fabric touches a million ports' records per wall second, and the first load of
    // each line of one is a cache miss (perf: the fabric run is memory-bound). Spread over the
    // 4 KB record these fields cost a line each; gathered here they share a few (paired
    // ib-fat-tree k=16: -4 %, docs/performance.md).
    IbNetDevice* m_peer = nullptr; ///< the far end of the cable (set when cabled; not owned)
    IbSwitch* m_switch = nullptr; ///< the switch that owns this port (not owned: no cycle)
    int64_t m_cableDelayPs = 0;      ///< the cable's propagation delay (SyncCable)
    int64_t m_busyUntilPs = 0; ///< the wire is busy until then (ps)
    int64_t m_wakeAtPs = -1; ///< when m_wake fires (-1: none pending)
    int64_t m_portWaitStartPs = -1;
    uint32_t m_cableGeneration = 0; ///< the cable's link generation (SyncCable)
    uint32_t m_delimiterBytes = 2;
    uint32_t m_txQueuePackets = 64;
    uint32_t m_vl15Queued = 0; ///< VL15 packets held in the receive buffer
    uint16_t m_readyVls = 0;       ///< VLs whose ready list is not empty (bit v: m_tx[v].ready)
    uint16_t m_virtualPending = 0; ///< while asleep: VLs whose refresh packet is still to go
    uint16_t m_oversizedVls = 0; ///< data VLs (a bit each) whose next packet can never fit
    uint16_t m_lid = 0;
    uint8_t m_portNumber = 1;
    uint8_t m_opVls = 1;
    IbPortState m_state = IbPortState::Down;
    IbPhysState m_phys = IbPhysState::Polling;
    bool m_refreshDormant = false; ///< refresh timer asleep: ticks accounted lazily
    struct WireTimeMemo
    {
        uint32_t bytes = 0;
        int64_t ps = -1; ///< -1: empty
    };
    /// WireTimePs's last answers, for m_activeRate (emptied where it is set)
    mutable std::array<WireTimeMemo, 4> m_wireTimeMemo{};
    mutable uint8_t m_wireTimeMemoNext = 0;                ///< the slot the next miss fills
    int64_t m_symbolPs = 0; ///< the active rate's symbol time in picoseconds
    uint64_t m_fcSent = 0;
    uint64_t m_fcEvents = 0;
    uint64_t m_fcStashed = 0;
    uint64_t m_wakes = 0;
    /// The WakeBreakdown counter of what the last transmit opportunity sent (WakeUp counts it).
    uint64_t WakeBreakdown::*m_lastSent = &WakeBreakdown::nothing;
    ReusableEvent<IbNetDevice, &IbNetDevice::WakeUp> m_wake{this}; ///< the transmitter's wake-up
    IbPortCounters m_counters;
    IbVlArbiter m_arbiter;
    SnifferList<SnifferCallback> m_sniffers;
    TracedCallback<Ptr<const Packet>, uint8_t> m_txTrace;
    TracedCallback<Ptr<const Packet>, uint8_t> m_rxTrace;

    WakeBreakdown m_wakeBreakdown;

    // data path: the VLs' queues and flow-control state
    std::array<TxVl, 16> m_tx;
    std::array<RxVl, 16> m_rx;

    // configuration
    Ptr<Node> m_node;
    Ptr<IbChannel> m_channel;
    Ptr<ErrorModel> m_receiveErrorModel;
    uint32_t m_ifIndex = 0;
    uint16_t m_mtu = 4096;
    uint64_t m_portGuid = 0;
    uint8_t m_linkWidth = 4;
    int m_linkSpeed = static_cast<int>(IbLinkSpeed::Hdr); ///< an IbLinkSpeed (EnumValue holds int)
    uint32_t m_vlBufferBytes = 65536;
    uint32_t m_vl15BufferPackets = 4;
    uint32_t m_fcRefreshSymbols = 65536;
    bool m_lazyRefresh = true;
    uint8_t m_vlCap = 8;
    Time m_trainingTime;
    bool m_acceptRaw = false;

    // PortInfo state
    uint8_t m_lmc = 0;
    uint16_t m_smLid = 0;
    std::vector<uint16_t> m_pkeys{0xFFFF};
    uint64_t m_pkeyViolations = 0;
    bool m_cabled = false;
    bool m_physDisabled = false;
    IbLinkRate m_activeRate;
    std::array<uint8_t, 16> m_slToVl{};
    bool m_slToVlSet = false;

    // the rest of the transmitter and the refresh timer
    EventId m_fcRefresh;
    int64_t m_nextTickPs = -1;     ///< while asleep: the next tick not yet accounted
    uint64_t m_lazyRefreshes = 0;  ///< refresh ticks accounted without an event
    uint64_t m_lazySkipped = 0;    ///< of those, accounted by whole periods
    /// A sleeping link's refresh state at a tick, for recognising one period later that it
    /// repeats (AdvanceDormantRefresh).
    struct DormantSnapshot
    {
        int64_t tickPs = -1; ///< -1: none taken
        uint8_t opVls = 0;
        int64_t busyUntilPs = 0;
        std::array<int64_t, 16> lastFcSentPs{};
        uint64_t fcSent = 0;
        uint64_t lazyRefreshes = 0;
        uint64_t peerStashed = 0;
    };
    DormantSnapshot m_dormantSnapshot;
    EventId m_training;
    std::array<uint64_t, 14> m_drops{};
    uint64_t m_refreshes = 0;
    std::vector<uint8_t> m_scratch;

    IbReceiveCallback m_ibRx;
    IbFrameReceiveCallback m_ibFrameRx;
    std::vector<uint8_t> m_sendBuf; ///< a Packet's bytes on their way into a frame
    /// Enqueue's LRH, kept from packet to packet: an ns-3 Header's construction and destruction
    /// per packet (with ns-3's logging checks) cost more than the 8 bytes it writes.
    IbLrhHeader m_txLrh;
    IbFrameReceiveCallback m_mgmtRx; ///< VL15 and QP0/QP1 packets, when set
    NetDevice::ReceiveCallback m_netRx;
    NetDevice::PromiscReceiveCallback m_promiscRx;
    Callback<void, Ptr<IbNetDevice>> m_txReady;
    std::vector<Callback<void>> m_linkChange;

    // trace sources (Tx and Rx are with the hot fields above)
    TracedCallback<Ptr<const Packet>, uint8_t> m_dropTrace; ///< packet (may be null), reason
    TracedCallback<uint8_t, uint32_t> m_bufferTrace;        ///< vl, blocks used
    IbObservedTracedCallback<uint8_t, uint32_t> m_creditTrace; ///< vl, credits available
    IbObservedTracedCallback<uint8_t, uint8_t, uint16_t, uint16_t> m_fcTxTrace; ///< op, vl, fctbs, fccl
    IbObservedTracedCallback<uint8_t, uint8_t, uint16_t, uint16_t> m_fcRxTrace;
    TracedCallback<uint8_t, Time> m_stallTrace;        ///< vl, length of a finished stall
    TracedCallback<uint8_t, uint8_t> m_stateTrace;     ///< old, new PortState
    TracedCallback<uint16_t, uint16_t> m_lidTrace;     ///< old, new LID
    TracedCallback<uint16_t, uint16_t> m_smLidTrace;   ///< old, new MasterSMLID
    TracedCallback<uint16_t, uint16_t> m_pkeyTableTrace; ///< first, end of the entries changed
    TracedCallback<const IbPkeyViolation&> m_pkeyViolationTrace; ///< the packet discarded
};

} // namespace ns3

#endif
