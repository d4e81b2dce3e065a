#include "ib-net-device.h"

#include "ib-channel.h"
#include "ib-crc.h"
#include "ib-switch.h"
#include "ib-vl-counts.h"

#include "models/common/packet-loss-model.h"
#include "models/common/uinteger-set-checker.h"
#include "models/common/sim-clock.h"

#include "ns3/boolean.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/make-event.h"
#include "ns3/node.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbNetDevice");
NS_OBJECT_ENSURE_REGISTERED(IbNetDevice);

namespace
{
/// FCTBS and FCCL are 12-bit counters, IBA vol. 1 §7.9.4.
constexpr uint16_t kFcMask = 0x0FFF;
/// A receiver advertises at most 2048 blocks beyond ABR (half the counter space), §7.9.4.3.
constexpr uint32_t kFcWindow = 2048;
/// Link flow-control packets are 6 bytes, §7.9.4.
constexpr uint32_t kFcPacketBytes = 6;

uint64_t g_nextFrameUid = 1;
} // namespace

const char*
IbDropReasonName(IbDropReason r)
{
    switch (r)
    {
    case IbDropReason::BadVcrc:
        return "bad-vcrc";
    case IbDropReason::BadIcrc:
        return "bad-icrc";
    case IbDropReason::Malformed:
        return "malformed";
    case IbDropReason::UnsupportedLnh:
        return "unsupported-lnh";
    case IbDropReason::InvalidVl:
        return "invalid-vl";
    case IbDropReason::PortNotActive:
        return "port-not-active";
    case IbDropReason::DlidMismatch:
        return "dlid-mismatch";
    case IbDropReason::SwitchRelay:
        return "switch-relay";
    case IbDropReason::XmitDiscard:
        return "xmit-discard";
    case IbDropReason::Vl15Overflow:
        return "vl15-overflow";
    case IbDropReason::BufferOverrun:
        return "buffer-overrun";
    case IbDropReason::LinkDown:
        return "link-down";
    case IbDropReason::InjectedLoss:
        return "injected-loss";
    case IbDropReason::ExceedsPeerBuffer:
        return "exceeds-peer-buffer";
    }
    return "?";
}

const char*
IbPortStateName(IbPortState s)
{
    switch (s)
    {
    case IbPortState::NoChange:
        return "NoChange";
    case IbPortState::Down:
        return "Down";
    case IbPortState::Init:
        return "Initializing";
    case IbPortState::Armed:
        return "Armed";
    case IbPortState::Active:
        return "Active";
    }
    return "?";
}

TypeId
IbNetDevice::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbNetDevice")
            .SetParent<NetDevice>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbNetDevice>()
            .AddAttribute("LinkWidth",
                          "Lanes the port supports: 1, 2, 4, 8 or 12.",
                          UintegerValue(4),
                          MakeUintegerAccessor(&IbNetDevice::m_linkWidth),
                          MakeUintegerChecker<uint8_t>(1, 12))
            .AddAttribute("LinkSpeed",
                          "Lane speed the port supports (the link trains to the slower end).",
                          EnumValue(static_cast<int>(IbLinkSpeed::Hdr)),
                          MakeEnumAccessor(&IbNetDevice::m_linkSpeed),
                          MakeEnumChecker(static_cast<int>(IbLinkSpeed::Sdr), "SDR",
                                          static_cast<int>(IbLinkSpeed::Ddr), "DDR",
                                          static_cast<int>(IbLinkSpeed::Qdr), "QDR",
                                          static_cast<int>(IbLinkSpeed::Fdr10), "FDR10",
                                          static_cast<int>(IbLinkSpeed::Fdr), "FDR",
                                          static_cast<int>(IbLinkSpeed::Edr), "EDR",
                                          static_cast<int>(IbLinkSpeed::Hdr), "HDR",
                                          static_cast<int>(IbLinkSpeed::Ndr), "NDR",
                                          static_cast<int>(IbLinkSpeed::Xdr), "XDR"))
            .AddAttribute("Mtu",
                          "Largest transport payload (IBA MTU: 256, 512, 1024, 2048 or 4096 "
                          "bytes).",
                          UintegerValue(4096),
                          MakeUintegerAccessor(&IbNetDevice::SetMtuAttribute,
                                               &IbNetDevice::GetMtu),
                          MakeUintegerChecker<uint16_t>(256, 4096))
            .AddAttribute("VlBufferBytes",
                          "Receive buffer per data VL, bytes (a multiple of 64; at most 131072 "
                          "since a receiver can advertise 2048 blocks, IBA vol. 1 §7.9.4.3).",
                          UintegerValue(65536),
                          MakeUintegerAccessor(&IbNetDevice::m_vlBufferBytes),
                          MakeUintegerChecker<uint32_t>(kIbCreditBlockBytes,
                                                        kFcWindow * kIbCreditBlockBytes))
            .AddAttribute("Vl15BufferPackets",
                          "Management (VL15) packets the receive buffer holds; more are dropped "
                          "and counted in VL15Dropped.",
                          UintegerValue(4),
                          MakeUintegerAccessor(&IbNetDevice::m_vl15BufferPackets),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("TxQueuePackets",
                          "Packets a channel adapter queues per VL before SendIb refuses more.",
                          UintegerValue(64),
                          MakeUintegerAccessor(&IbNetDevice::m_txQueuePackets),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("DelimiterBytes",
                          "Wire bytes a packet's start and end delimiters occupy, bytes.",
                          UintegerValue(2),
                          MakeUintegerAccessor(&IbNetDevice::m_delimiterBytes),
                          MakeUintegerChecker<uint32_t>(0, 64))
            .AddAttribute("FlowControlRefreshSymbols",
                          "A flow-control packet goes on every data VL at least this often, in "
                          "symbol times (IBA vol. 1 §7.9.4.2 requires 65536); 0 disables the "
                          "refresh (updates then go only on change).",
                          UintegerValue(65536),
                          MakeUintegerAccessor(&IbNetDevice::m_fcRefreshSymbols),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("LazyFlowControlRefresh",
                          "Whether the periodic flow-control refresh costs no event while the "
                          "link is idle both ways and no one observes its flow-control packets: "
                          "the packets are still sent on the wire, counted, and seen by every "
                          "credit decision exactly as with one event per refresh (false), only "
                          "accounted for when something next happens on the link "
                          "(docs/architecture.md §6.9).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&IbNetDevice::SetLazyFlowControlRefresh,
                                              &IbNetDevice::GetLazyFlowControlRefresh),
                          MakeBooleanChecker())
            .AddAttribute("VlCap",
                          "Data VLs the port implements (PortInfo.VLCap: 1, 2, 4, 8 or 15, the "
                          "counts the field can encode, IBA vol. 1 §14.2.5.6).",
                          UintegerValue(8),
                          MakeUintegerAccessor(&IbNetDevice::m_vlCap),
                          MakeUintegerSetChecker<uint8_t>(IbDataVlCounts()))
            .AddAttribute("TrainingTime",
                          "Time from cable connection to the physical link being up "
                          "(PortPhysicalState LinkUp, PortState Init).",
                          TimeValue(MicroSeconds(1)),
                          MakeTimeAccessor(&IbNetDevice::m_trainingTime),
                          MakeTimeChecker())
            .AddAttribute("AcceptRawPackets",
                          "Whether a channel adapter port takes raw (LNH 0/1) packets; if not "
                          "they are discarded and counted.",
                          BooleanValue(false),
                          MakeBooleanAccessor(&IbNetDevice::m_acceptRaw),
                          MakeBooleanChecker())
            .AddAttribute("ReceiveErrorModel",
                          "Corrupts received packets on the wire (an ns3::ErrorModel such as "
                          "RateErrorModel): a hit flips one bit of the packet, which the VCRC "
                          "check then catches as a hardware receiver would.",
                          PointerValue(),
                          MakePointerAccessor(&IbNetDevice::m_receiveErrorModel),
                          MakePointerChecker<ErrorModel>())
            .AddTraceSource("Tx",
                            "A packet starts transmission: (packet, VL).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_txTrace),
                            "ns3::IbNetDevice::PacketVlCallback")
            .AddTraceSource("Rx",
                            "A good packet was received: (packet, VL).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_rxTrace),
                            "ns3::IbNetDevice::PacketVlCallback")
            .AddTraceSource("Drop",
                            "A packet was discarded: (packet or null, IbDropReason).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_dropTrace),
                            "ns3::IbNetDevice::PacketReasonCallback")
            .AddTraceSource("BufferOccupancy",
                            "Receive buffer use changed: (VL, blocks used).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_bufferTrace),
                            "ns3::IbNetDevice::VlValueCallback")
            .AddTraceSource("Credits",
                            "Transmit credits changed: (VL, blocks available).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_creditTrace),
                            "ns3::IbNetDevice::VlValueCallback")
            .AddTraceSource("FlowControlTx",
                            "A flow-control packet was sent: (op, VL, FCTBS, FCCL).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_fcTxTrace),
                            "ns3::IbNetDevice::FlowControlCallback")
            .AddTraceSource("FlowControlRx",
                            "A flow-control packet arrived: (op, VL, FCTBS, FCCL).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_fcRxTrace),
                            "ns3::IbNetDevice::FlowControlCallback")
            .AddTraceSource("CreditStall",
                            "Data waited for credit and can now go: (VL, how long it waited).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_stallTrace),
                            "ns3::IbNetDevice::VlTimeCallback")
            .AddTraceSource("PortState",
                            "PortState changed: (old, new) as IbPortState values.",
                            MakeTraceSourceAccessor(&IbNetDevice::m_stateTrace),
                            "ns3::IbNetDevice::StateCallback")
            .AddTraceSource("Lid",
                            "The port's LID changed (a SubnSet(PortInfo)): (old, new).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_lidTrace),
                            "ns3::IbNetDevice::LidCallback")
            .AddTraceSource("SmLid",
                            "MasterSMLID changed (a SubnSet(PortInfo)): (old, new).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_smLidTrace),
                            "ns3::IbNetDevice::LidCallback")
            .AddTraceSource("PkeyTable",
                            "P_Key table entries changed (a SubnSet(P_KeyTable)): (first, end).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_pkeyTableTrace),
                            "ns3::IbNetDevice::PkeyTableCallback")
            .AddTraceSource("PkeyViolation",
                            "The transport discarded a packet for its P_Key: (its P_Key, "
                            "LIDs, SL, QPs and GIDs).",
                            MakeTraceSourceAccessor(&IbNetDevice::m_pkeyViolationTrace),
                            "ns3::IbNetDevice::PkeyViolationCallback");
    return tid;
}

IbNetDevice::IbNetDevice()
{
    for (uint8_t sl = 0; sl < 16; ++sl)
    {
        m_slToVl[sl] = 0;
    }
    for (uint8_t vl = 0; vl < 16; ++vl)
    {
        m_rx[vl].queue.rxPort = this;
        m_rx[vl].queue.vl = vl;
        m_tx[vl].hcaQueue.vl = vl;
    }
    m_arbiter.SetDefault(1);
    // Whoever starts observing flow-control packets or credits must see every refresh packet
    // from then on as an event: wake a sleeping refresh timer (both ends) first.
    Callback<void> hook = MakeCallback(&IbNetDevice::WakeLinkRefresh, this);
    m_fcTxTrace.SetObserverHook(hook);
    m_fcRxTrace.SetObserverHook(hook);
    m_creditTrace.SetObserverHook(hook);
}

IbNetDevice::~IbNetDevice() = default;

void
IbNetDevice::DoInitialize()
{
    NetDevice::DoInitialize();
}

void
IbNetDevice::DoDispose()
{
    m_wake.Cancel();
    m_wakeAtPs = -1;
    m_fcRefresh.Cancel();
    m_refreshDormant = false;
    m_virtualPending = 0;
    m_training.Cancel();
    for (uint8_t vl = 0; vl < m_tx.size(); ++vl)
    {
        TxVl& tx = m_tx[vl];
        for (IbFrame* f : tx.hcaQueue.frames)
        {
            IbFramePool::Release(f);
        }
        tx.hcaQueue.frames.clear();
        ClearReady(vl);
    }
    for (auto& rx : m_rx)
    {
        for (IbFrame* f : rx.queue.frames)
        {
            IbFramePool::Release(f);
        }
        rx.queue.frames.clear();
    }
    if (m_peer && m_peer->m_peer == this)
    {
        m_peer->m_peer = nullptr;
    }
    m_peer = nullptr;
    m_channel = nullptr;
    m_switch = nullptr;
    m_node = nullptr;
    m_ibRx = MakeNullCallback<void, Ptr<IbNetDevice>, Ptr<const Packet>, const IbRxInfo&>();
    m_mgmtRx = IbFrameReceiveCallback();
    m_ibFrameRx = IbFrameReceiveCallback();
    m_sniffers.clear();
    NetDevice::DoDispose();
}

// ---- ns3::NetDevice -----------------------------------------------------------------------

void
IbNetDevice::SetIfIndex(const uint32_t index)
{
    m_ifIndex = index;
}

uint32_t
IbNetDevice::GetIfIndex() const
{
    return m_ifIndex;
}

Ptr<Channel>
IbNetDevice::GetChannel() const
{
    return m_channel;
}

void
IbNetDevice::SetAddress(Address address)
{
    uint8_t buf[2];
    Mac16Address::ConvertFrom(address).CopyTo(buf);
    SetLid(static_cast<uint16_t>((buf[0] << 8) | buf[1]));
}

Address
IbNetDevice::GetAddress() const
{
    uint8_t buf[2] = {static_cast<uint8_t>(m_lid >> 8), static_cast<uint8_t>(m_lid)};
    Mac16Address a;
    a.CopyFrom(buf);
    return a;
}

bool
IbNetDevice::SetMtu(const uint16_t mtu)
{
    if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
    {
        return false;
    }
    m_mtu = mtu;
    return true;
}

void
IbNetDevice::SetMtuAttribute(uint16_t mtu)
{
    if (!SetMtu(mtu))
    {
        throw std::invalid_argument("ns3::IbNetDevice::Mtu must be 256, 512, 1024, 2048 or 4096 "
                                    "(the InfiniBand MTUs), not " +
                                    std::to_string(mtu));
    }
}

uint16_t
IbNetDevice::GetMtu() const
{
    return m_mtu;
}

bool
IbNetDevice::IsLinkUp() const
{
    return m_phys == IbPhysState::LinkUp;
}

void
IbNetDevice::AddLinkChangeCallback(Callback<void> callback)
{
    m_linkChange.push_back(callback);
}

bool
IbNetDevice::IsBroadcast() const
{
    return false;
}

Address
IbNetDevice::GetBroadcast() const
{
    return Mac16Address("ff:ff");
}

bool
IbNetDevice::IsMulticast() const
{
    return false;
}

Address
IbNetDevice::GetMulticast(Ipv4Address) const
{
    return Mac16Address("ff:ff");
}

Address
IbNetDevice::GetMulticast(Ipv6Address) const
{
    return Mac16Address("ff:ff");
}

bool
IbNetDevice::IsPointToPoint() const
{
    return true;
}

bool
IbNetDevice::IsBridge() const
{
    return false;
}

bool
IbNetDevice::Send(Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber)
{
    uint8_t buf[2];
    Mac16Address::ConvertFrom(dest).CopyTo(buf);
    return SendIb(packet,
                  static_cast<uint16_t>((buf[0] << 8) | buf[1]),
                  0,
                  static_cast<IbLnh>(protocolNumber & 0x3));
}

bool
IbNetDevice::SendFrom(Ptr<Packet>, const Address&, const Address&, uint16_t)
{
    return false;
}

Ptr<Node>
IbNetDevice::GetNode() const
{
    return m_node;
}

void
IbNetDevice::SetNode(Ptr<Node> node)
{
    m_node = node;
}

bool
IbNetDevice::NeedsArp() const
{
    return false;
}

void
IbNetDevice::SetReceiveCallback(NetDevice::ReceiveCallback cb)
{
    m_netRx = cb;
}

void
IbNetDevice::SetPromiscReceiveCallback(NetDevice::PromiscReceiveCallback cb)
{
    m_promiscRx = cb;
}

bool
IbNetDevice::SupportsSendFrom() const
{
    return false;
}

// ---- cabling, identity, PortInfo ----------------------------------------------------------

void
IbNetDevice::Attach(Ptr<IbChannel> channel)
{
    m_channel = channel;
    channel->Attach(this);
}

Ptr<IbChannel>
IbNetDevice::GetIbChannel() const
{
    return m_channel;
}

Ptr<IbNetDevice>
IbNetDevice::GetPeer() const
{
    return m_channel ? m_channel->GetPeer(this) : nullptr;
}

void
IbNetDevice::SyncCable(uint32_t generation, int64_t delayPs)
{
    m_cableGeneration = generation;
    m_cableDelayPs = delayPs;
}

void
IbNetDevice::NotifyCableConnected()
{
    m_cabled = true;
    m_peer = PeekPointer(GetPeer());
    if (m_physDisabled)
    {
        return;
    }
    // Physical training (IBA vol. 2): Polling, then configuration/training, then LinkUp.
    m_phys = IbPhysState::PortConfigurationTraining;
    m_training.Cancel();
    m_training = Simulator::Schedule(m_trainingTime, &IbNetDevice::CompleteTraining, this);
}

void
IbNetDevice::CompleteTraining()
{
    Ptr<IbNetDevice> peer = GetPeer();
    if (!peer || m_physDisabled || peer->m_physDisabled)
    {
        m_phys = IbPhysState::Polling;
        return;
    }
    m_activeRate = IbLinkRate::Common(GetSupportedRate(), peer->GetSupportedRate());
    m_wireTimeMemo.fill(WireTimeMemo()); // WireTimePs's answers were for the old rate
    m_symbolPs = m_activeRate.SymbolTime().GetPicoSeconds();
    m_phys = IbPhysState::LinkUp;
    ResetLinkState();
    // IBA vol. 1 §7.2: a port whose physical link comes up enters Init; it carries only
    // subnet management (VL15) until a subnet manager arms and activates it.
    ChangeState(IbPortState::Init);
    StartFlowControl();
    for (auto& cb : m_linkChange)
    {
        cb();
    }
}

void
IbNetDevice::SetPhysicalLinkDown()
{
    TouchLink(); // refresh packets sent before this instant went, and may be lost with the link
    m_physDisabled = true;
    m_training.Cancel();
    if (m_phys == IbPhysState::LinkUp)
    {
        IbPortCounters::Add(m_counters.linkDownedCounter, 1);
    }
    if (m_channel)
    {
        m_channel->NextGeneration();
    }
    LoseLink(IbPhysState::Disabled);
    Ptr<IbNetDevice> peer = GetPeer();
    if (peer && peer->m_phys == IbPhysState::LinkUp)
    {
        // The far end loses signal too; it keeps polling for a partner.
        IbPortCounters::Add(peer->m_counters.linkDownedCounter, 1);
        peer->LoseLink(IbPhysState::Polling);
    }
}

void
IbNetDevice::LoseLink(IbPhysState phys)
{
    m_phys = phys;
    DiscardQueued(IbDropReason::LinkDown);
    ChangeState(IbPortState::Down);
    m_fcRefresh.Cancel();
    m_refreshDormant = false;
    m_virtualPending = 0;
    m_wake.Cancel();
    m_wakeAtPs = -1;
    for (auto& cb : m_linkChange)
    {
        cb();
    }
}

void
IbNetDevice::SetPhysicalLinkUp()
{
    m_physDisabled = false;
    if (!m_cabled)
    {
        return;
    }
    NotifyCableConnected();
    Ptr<IbNetDevice> peer = GetPeer();
    if (peer && !peer->m_physDisabled && peer->m_phys != IbPhysState::LinkUp)
    {
        peer->NotifyCableConnected();
    }
}

void
IbNetDevice::ResetLinkState()
{
    for (uint8_t vl = 0; vl < 16; ++vl)
    {
        m_tx[vl].fctbs = 0;
        m_tx[vl].fccl = 0;
        m_tx[vl].stallStartPs = -1;
        m_rx[vl].abr = 0;
        m_rx[vl].lastArrivedPos = 0;
        m_rx[vl].lostSinceSync = 0;
        m_tx[vl].stash.clear();
        m_rx[vl].fcPending = false;
        m_rx[vl].fcInitPending = false;
    }
    m_busyUntilPs = SimClock::NowPs();
}

void
IbNetDevice::DiscardQueued(IbDropReason reason)
{
    for (uint8_t vl = 0; vl < 16; ++vl)
    {
        // Queues whose head was waiting for this port: their heads cannot leave any more.
        auto ready = std::move(m_tx[vl].ready);
        ClearReady(vl);
        for (const ReadyEntry& entry : ready)
        {
            IbFrameQueue* q = entry.queue;
            q->readyRegistered = false;
            // A CA's own queue empties completely; a switch input buffer loses the packets
            // routed here, up to the first one bound elsewhere.
            while (!q->frames.empty() && (!q->rxPort || q->frames.front()->outPort == m_portNumber))
            {
                DiscardQueuedHead(q, reason);
            }
            if (!q->frames.empty() && m_switch)
            {
                m_switch->NotifyHeadChanged(q);
            }
            if (!q->rxPort && !m_txReady.IsNull())
            {
                m_txReady(this); // the CA's queue has room again
            }
        }
    }
}

void
IbNetDevice::DiscardQueuedHead(IbFrameQueue* q, IbDropReason reason)
{
    IbFrame* f = q->frames.front();
    if (q->rxPort && IbSwitch::IsMulticastLid(f->dlid))
    {
        // A multicast packet loses only this output's copy; it stays queued for its next one.
        if (IbFrame* copy = m_switch->SplitMulticastCopy(f, q->rxPort->GetPortNumber()))
        {
            m_switch->NotifyDiscard(copy);
            IbPortCounters::Add(m_counters.portXmitDiscards, 1);
            m_drops[static_cast<int>(reason)]++;
            if (!m_dropTrace.IsEmpty())
            {
                m_dropTrace(copy->ToPacket(), static_cast<uint8_t>(reason));
            }
            IbFramePool::Release(copy);
            return;
        }
    }
    q->frames.pop_front();
    const uint16_t blocks = f->vl == kIbManagementVl ? 0 : f->blocks; // VL15 takes no credit
    q->usedBlocks -= blocks;
    if (q->rxPort)
    {
        // A switch input buffer frees the space (returning credit upstream, §7.9.4).
        m_switch->NotifyDiscard(f);
        q->rxPort->ReleaseReceiveBlocks(q->vl, blocks);
        if (q->vl == kIbManagementVl)
        {
            q->rxPort->ReleaseVl15Slot();
        }
    }
    IbPortCounters::Add(m_counters.portXmitDiscards, 1);
    m_drops[static_cast<int>(reason)]++;
    if (!m_dropTrace.IsEmpty())
    {
        m_dropTrace(f->ToPacket(), static_cast<uint8_t>(reason));
    }
    IbFramePool::Release(f);
}

uint32_t
IbNetDevice::PeerVlBufferBlocks() const
{
    // m_peer, not GetPeer(): the transmitter asks this whenever its head lacks credit, and the
    // channel's lookup costs a miss on the channel and a reference count on the peer.
    NS_ASSERT(m_peer == PeekPointer(GetPeer()));
    return m_peer ? m_peer->GetReceiveBufferBlocks() : std::numeric_limits<uint32_t>::max();
}

void
IbNetDevice::DiscardHeadsExceedingPeerBuffer(uint8_t vl)
{
    // IBA vol. 1 §7.9.4: a data packet leaves only with credit for all its blocks, and the
    // receiver advertises at most its whole buffer. A packet larger than that buffer (a
    // configuration whose VlBufferBytes is below one packet of the MTU) would wait at the head
    // of its queue for ever, everything behind it too; like a switch's head-of-queue lifetime
    // discard (§18.2.5.4), it is discarded and counted in PortXmitDiscards. The discard takes
    // the transmitter the packet's wire time, as if it had been sent into the void: a source
    // that keeps offering such packets then cannot hold simulated time still.
    const uint32_t capacity = PeerVlBufferBlocks();
    m_busyUntilPs = std::max(m_busyUntilPs, SimClock::NowPs());
    auto ready = std::move(m_tx[vl].ready);
    ClearReady(vl);
    for (const ReadyEntry& entry : ready)
    {
        IbFrameQueue* q = entry.queue;
        bool dropped = false;
        // A switch input queue's later packets may be bound elsewhere: only heads bound here.
        while (!q->frames.empty() && q->frames.front()->blocks > capacity &&
               (!q->rxPort || q->frames.front()->outPort == m_portNumber))
        {
            const IbFrame* f = q->frames.front();
            m_busyUntilPs += WireTimePs(f->bytes + m_delimiterBytes);
            NS_LOG_WARN("port " << +m_portNumber << " discards packet " << f->uid << " of "
                                << f->blocks << " credit blocks: the peer's VL buffer holds "
                                << capacity << " (VlBufferBytes below one packet)");
            DiscardQueuedHead(q, IbDropReason::ExceedsPeerBuffer);
            dropped = true;
        }
        if (!dropped)
        {
            PushReady(vl, entry); // keeps its place, and its head
            continue;
        }
        q->readyRegistered = false;
        if (!q->frames.empty())
        {
            if (q->rxPort)
            {
                m_switch->NotifyHeadChanged(q);
            }
            else
            {
                RegisterReadyQueue(q);
            }
        }
        if (!q->rxPort && !m_txReady.IsNull())
        {
            // The CA's queue has room again. Told by an event of its own: this runs inside the
            // sender's own SendIb (its packet was the one discarded), which must not be entered
            // again before it returns.
            Simulator::ScheduleNow([this]() {
                if (!m_txReady.IsNull())
                {
                    m_txReady(this);
                }
            });
        }
    }
}

void
IbNetDevice::SetSwitch(Ptr<IbSwitch> sw, uint8_t portNumber)
{
    m_switch = PeekPointer(sw);
    m_portNumber = portNumber;
}

Ptr<IbSwitch>
IbNetDevice::GetSwitch() const
{
    return m_switch;
}

bool
IbNetDevice::IsSwitchPort() const
{
    return m_switch != nullptr;
}

uint8_t
IbNetDevice::GetPortNumber() const
{
    return m_portNumber;
}

void
IbNetDevice::SetPortNumber(uint8_t n)
{
    m_portNumber = n;
}

uint64_t
IbNetDevice::GetPortGuid() const
{
    return m_portGuid;
}

void
IbNetDevice::SetPortGuid(uint64_t guid)
{
    m_portGuid = guid;
}

uint16_t
IbNetDevice::GetLid() const
{
    return m_lid;
}

void
IbNetDevice::SetLid(uint16_t lid)
{
    const uint16_t old = m_lid;
    m_lid = lid;
    if (old != lid)
    {
        m_lidTrace(old, lid);
    }
}

uint8_t
IbNetDevice::GetLmc() const
{
    return m_lmc;
}

void
IbNetDevice::SetLmc(uint8_t lmc)
{
    m_lmc = lmc & 0x7;
}

uint16_t
IbNetDevice::GetSmLid() const
{
    return m_smLid;
}

void
IbNetDevice::SetSmLid(uint16_t lid)
{
    const uint16_t old = m_smLid;
    m_smLid = lid;
    if (old != lid)
    {
        m_smLidTrace(old, lid);
    }
}

const std::vector<uint16_t>&
IbNetDevice::GetPkeyTable() const
{
    return m_pkeys;
}

bool
IbNetDevice::GetPkey(uint16_t index, uint16_t& pkey) const
{
    if (index >= m_pkeys.size())
    {
        return false;
    }
    pkey = m_pkeys[index];
    return true;
}

void
IbNetDevice::SetPkeyTable(const std::vector<uint16_t>& table)
{
    if (table == m_pkeys)
    {
        return;
    }
    // What changed, for the listeners: up to the end of the longer of the two tables.
    const size_t common = std::min(table.size(), m_pkeys.size());
    size_t first = 0;
    while (first < common && table[first] == m_pkeys[first])
    {
        ++first;
    }
    const size_t end = std::max(table.size(), m_pkeys.size());
    m_pkeys = table;
    m_pkeyTableTrace(static_cast<uint16_t>(std::min<size_t>(first, 0xFFFF)),
                     static_cast<uint16_t>(std::min<size_t>(end, 0xFFFF)));
}

bool
IbNetDevice::SetPkeys(uint16_t first, const uint16_t* entries, uint16_t count)
{
    if (size_t(first) + count > m_pkeys.size())
    {
        return false;
    }
    if (std::equal(entries, entries + count, m_pkeys.begin() + first))
    {
        return true;
    }
    std::copy(entries, entries + count, m_pkeys.begin() + first);
    m_pkeyTableTrace(first, static_cast<uint16_t>(first + count));
    return true;
}

void
IbNetDevice::NotifyPkeyViolation(const IbPkeyViolation& v)
{
    ++m_pkeyViolations;
    m_pkeyViolationTrace(v);
}

uint64_t
IbNetDevice::GetPkeyViolations() const
{
    return m_pkeyViolations;
}

IbPortState
IbNetDevice::GetPortState() const
{
    return m_state;
}

IbPhysState
IbNetDevice::GetPhysState() const
{
    return m_phys;
}

void
IbNetDevice::ChangeState(IbPortState next)
{
    if (next == m_state)
    {
        return;
    }
    // The state decides what the transmitter may send (data only when Active, §7.2.4) and
    // what the receiver accepts; while nothing is queued at either end neither reaches the
    // refresh (the subnet manager arming and activating an idle port), so a sleeping timer
    // stays asleep. The Kick below follows its own rule.
    if ((m_readyVls | (m_peer ? m_peer->m_readyVls : 0)) != 0)
    {
        TouchLink();
    }
    IbPortState old = m_state;
    m_state = next;
    NS_LOG_INFO("port " << +m_portNumber << " " << IbPortStateName(old) << " -> "
                        << IbPortStateName(next));
    m_stateTrace(static_cast<uint8_t>(old), static_cast<uint8_t>(next));
    if (next == IbPortState::Active)
    {
        Kick();
        // A channel adapter's consumer may have given up while the port could not send.
        if (!m_switch && !m_txReady.IsNull())
        {
            m_txReady(this);
        }
    }
}

bool
IbNetDevice::SetPortState(IbPortState next)
{
    switch (next)
    {
    case IbPortState::NoChange:
        return true;
    case IbPortState::Armed:
        // IBA vol. 1 §7.2.4: Armed only from Init.
        if (m_state != IbPortState::Init)
        {
            return false;
        }
        ChangeState(next);
        return true;
    case IbPortState::Active:
        // IBA vol. 1 §7.2.5: Active only from Armed.
        if (m_state != IbPortState::Armed)
        {
            return false;
        }
        ChangeState(next);
        return true;
    case IbPortState::Down:
        // The link is taken down and retrains to Init by itself (§7.2.1).
        if (m_phys == IbPhysState::LinkUp)
        {
            SetPhysicalLinkDown();
            SetPhysicalLinkUp();
        }
        return true;
    case IbPortState::Init:
        return false;
    }
    return false;
}

bool
IbNetDevice::SetOperationalVls(uint8_t dataVls)
{
    if (!IbIsDataVlCount(dataVls) || dataVls > m_vlCap)
    {
        return false;
    }
    // OperationalVLs may change only while the port is not carrying data (§14.2.5.6 note).
    if (m_state == IbPortState::Armed || m_state == IbPortState::Active)
    {
        return false;
    }
    TouchLink(); // the refreshes so far went on the old OperationalVLs
    m_opVls = dataVls;
    m_arbiter.SetDefault(dataVls);
    if (m_phys == IbPhysState::LinkUp)
    {
        StartFlowControl();
    }
    return true;
}

uint8_t
IbNetDevice::GetOperationalVls() const
{
    return m_opVls;
}

uint8_t
IbNetDevice::GetVlCap() const
{
    return m_vlCap;
}

IbLinkRate
IbNetDevice::GetSupportedRate() const
{
    IbLinkRate r;
    r.width = m_linkWidth;
    r.speed = static_cast<IbLinkSpeed>(m_linkSpeed);
    return r;
}

IbLinkRate
IbNetDevice::GetActiveRate() const
{
    return m_activeRate;
}

IbVlArbiter&
IbNetDevice::GetVlArbiter()
{
    return m_arbiter;
}

void
IbNetDevice::SetSlToVl(const std::array<uint8_t, 16>& table)
{
    m_slToVl = table;
    m_slToVlSet = true;
}

uint8_t
IbNetDevice::MapSlToVl(uint8_t sl) const
{
    // Until a table is set, SL s travels on VL (s mod OperationalVLs), the same default a
    // switch applies, so that every SL reaches every destination on an unconfigured fabric.
    return m_slToVlSet ? m_slToVl[sl & 0xF] : static_cast<uint8_t>((sl & 0xF) % m_opVls);
}

// ---- flow control -------------------------------------------------------------------------

bool
IbNetDevice::HasCredit(uint8_t vl, uint16_t blocks) const
{
    // IBA vol. 1 §7.9.4.3: a packet of B blocks may go if (FCCL - (FCTBS + B)) mod 4096 <= 2048.
    const TxVl& tx = m_tx[vl];
    uint16_t slack = static_cast<uint16_t>((tx.fccl - (tx.fctbs + blocks)) & kFcMask);
    return slack <= kFcWindow;
}

uint32_t
IbNetDevice::GetCreditsAvailable(uint8_t vl)
{
    ApplyStashedFlowControl(vl);
    const TxVl& tx = m_tx[vl];
    uint16_t diff = static_cast<uint16_t>((tx.fccl - tx.fctbs) & kFcMask);
    return diff <= kFcWindow ? diff : 0;
}

uint16_t
IbNetDevice::AdvertisedFccl(uint8_t vl) const
{
    const RxVl& rx = m_rx[vl];
    uint32_t capacity = GetReceiveBufferBlocks();
    uint32_t used = rx.queue.usedBlocks;
    uint32_t free = used >= capacity ? 0 : capacity - used;
    free = std::min(free, kFcWindow);
    return static_cast<uint16_t>((rx.abr + free) & kFcMask);
}

void
IbNetDevice::StartFlowControl()
{
    // Flow-control initialisation (§7.9.4.1): an Init packet on every data VL starts the
    // credit exchange; until the peer's arrives, the transmitter has no credit.
    TouchLink();
    for (uint8_t vl = 0; vl < m_opVls; ++vl)
    {
        m_rx[vl].fcInitPending = true;
    }
    m_fcRefresh.Cancel();
    if (m_fcRefreshSymbols > 0)
    {
        m_fcRefresh = Simulator::Schedule(PicoSeconds(RefreshPeriodPs()),
                                          &IbNetDevice::FlowControlRefresh,
                                          this);
    }
    Kick();
}

void
IbNetDevice::FlowControlRefresh()
{
    // §7.9.4.2: every data VL gets a flow-control packet at least every 65536 symbol times;
    // VLs that had one recently (updates on change) are not sent again.
    const int64_t period = RefreshPeriodPs();
    const int64_t now = SimClock::NowPs();
    if (RefreshCanSleep())
    {
        // Idle link: this tick and every later one until something happens on the link are
        // accounted for without events (docs/architecture.md §6.9).
        m_refreshes++;
        m_refreshDormant = true;
        m_nextTickPs = now;
        m_virtualPending = 0;
        m_dormantSnapshot.tickPs = -1;
        AdvanceDormantRefresh(now, true);
        return;
    }
    int64_t next = now + period;
    bool any = false;
    for (uint8_t vl = 0; vl < m_opVls; ++vl)
    {
        RxVl& rx = m_rx[vl];
        if (rx.lastFcSentPs < 0 || now - rx.lastFcSentPs >= period - period / 16)
        {
            rx.fcPending = true;
            any = true;
        }
        else
        {
            next = std::min(next, rx.lastFcSentPs + period);
        }
    }
    m_refreshes++;
    m_fcRefresh = Simulator::Schedule(PicoSeconds(next - now), &IbNetDevice::FlowControlRefresh, this);
    if (any)
    {
        Kick();
    }
}

void
IbNetDevice::SendFlowControl(uint8_t vl, bool init, int64_t nowPs)
{
    NS_ASSERT(nowPs == Simulator::Now().GetPicoSeconds());
    RxVl& rx = m_rx[vl];
    rx.fcPending = false;
    rx.fcInitPending = false;
    rx.lastFcSentPs = nowPs;
    m_lastSent = &WakeBreakdown::flowControl;
    uint8_t op = init ? 1 : 0;
    uint16_t fctbs = m_tx[vl].fctbs;
    uint16_t fccl = AdvertisedFccl(vl);
    const int64_t txPs = WireTimePs(kFcPacketBytes + m_delimiterBytes);
    m_busyUntilPs = nowPs + txPs;
    m_fcSent++;
    if (!m_fcTxTrace.IsEmpty())
    {
        m_fcTxTrace(op, vl, fctbs, fccl);
    }
    IbNetDevice* peer = m_peer; // GetPeer() without the channel's lookup (see PeerVlBufferBlocks)
    NS_ASSERT(peer == PeekPointer(GetPeer()));
    const int64_t arrivalPs = txPs + m_cableDelayPs;
    if (!init && !peer->NeedsFlowControlEvent(vl))
    {
        peer->m_tx[vl].stash.push_back({nowPs + arrivalPs, fccl});
        peer->m_fcStashed++;
        return;
    }
    // Nothing cancels an arrival (a cable that goes down voids it by generation): no EventId.
    SimClock::ScheduleWithContext(SimClock::Context(),
                                  arrivalPs,
                                  MakeEvent(&IbNetDevice::ReceiveFlowControlEvent,
                                            peer,
                                            op,
                                            vl,
                                            fctbs,
                                            fccl,
                                            m_cableGeneration));
}

// ---- lazy flow-control refresh ------------------------------------------------------------
//
// Why the lazy refresh is exact (docs/architecture.md §6.9 says the same at more length).
// While the link is idle both ways, a refresh tick's effects are a function of time alone:
//  * At this port it marks the due VLs pending (the 15/16 rule on lastFcSentPs) and sends them
//    back to back, lowest VL first, one per transmit opportunity: lastFcSentPs, busy-until and
//    m_fcSent change, and the next tick's time follows from lastFcSentPs.
//  * Each packet carries FCTBS (changes only when this port sends data) and AdvertisedFccl
//    (changes only when a data packet or a flow-control packet arrives here or receive-buffer
//    blocks are freed); while no one needs it as an event at the peer (the peer is not stalled,
//    owes no ABR repair, has no Credits/FlowControlRx sink, is up: NeedsFlowControlEvent) its
//    only effect there is an entry in the peer's stash, which the peer applies when it next
//    reads its credit.
//  * No one observes it as it happens (no FlowControlTx sink here; sniffers and pcap writers
//    never see flow-control packets: the flow-control pcap is written from FlowControlTx).
// Every one of those inputs changes only inside a function that first calls TouchLink (a
// packet or flow-control packet arriving, blocks freed, Kick and so every transmission at either
// end, a PortState or OperationalVLs change, link down, a sink connecting to a trace source
// that sees them, switching the attribute off), and every reader of what the ticks change
// (credit reads through ApplyStashedFlowControl, the counters) first accounts for the ticks up to
// now. So the state each of them sees is the state an all-events run has at that instant, and
// from TouchLink on the timer runs as events again, until a tick finds the link idle once more.
// Management traffic is the exception that keeps the timers asleep: a VL15 packet needs no
// credit, so sending one alone (KickKeepsRefreshAsleep: this end's ticks accounted first, then
// its busy time is what the later ticks wait for), its arrival, and a PortState change while
// nothing is queued at either end change none of the inputs above. A subnet manager's sweep,
// one SMP at a time over otherwise idle links, then costs no refresh event at all.
//
// Ties at one picosecond. ns-3 runs simultaneous events in the order they were scheduled. A tick
// at the very instant of another event counts as having run before it (the tick's event is
// scheduled a whole period ahead, so it precedes anything scheduled since), and a back-to-back
// packet of a tick due at the very instant is left to its wake-up event, scheduled then (an
// all-events run scheduled it one packet time earlier, after almost anything else due at that
// instant). The exceptions, an event scheduled more than a period ahead for the exact picosecond
// of a tick or one scheduled less than a flow-control packet's time ahead for the exact
// picosecond of a back-to-back refresh packet, may run in the other order than in an all-events
// run; both orders are legal link behaviour, as with the lazy updates of §6.3.

void
IbNetDevice::SetLazyFlowControlRefresh(bool lazy)
{
    if (!lazy)
    {
        WakeLinkRefresh();
    }
    m_lazyRefresh = lazy;
}

bool
IbNetDevice::GetLazyFlowControlRefresh() const
{
    return m_lazyRefresh;
}

bool
IbNetDevice::RefreshCanSleep() const
{
    if (!m_lazyRefresh || !m_peer || m_fcRefreshSymbols == 0 || !m_channel)
    {
        return false;
    }
    if (m_phys != IbPhysState::LinkUp || m_peer->m_phys != IbPhysState::LinkUp)
    {
        return false;
    }
    // Nothing on the wire or due at either end: no wake-up pending, nothing queued.
    if (m_wakeAtPs >= 0 || m_peer->m_wakeAtPs >= 0 || SimClock::NowPs() < m_busyUntilPs)
    {
        return false;
    }
    if (!m_fcTxTrace.IsEmpty())
    {
        return false; // someone records every flow-control packet this port sends
    }
    if ((m_readyVls | m_peer->m_readyVls) != 0)
    {
        return false;
    }
    for (uint8_t v = 0; v < m_opVls; ++v)
    {
        if (m_rx[v].fcPending || m_rx[v].fcInitPending || m_peer->NeedsFlowControlEvent(v))
        {
            return false;
        }
    }
    return true;
}

void
IbNetDevice::VirtualSendFlowControl(uint8_t vl, int64_t startPs, int64_t nowPs)
{
    // What SendFlowControl does for a packet the peer stashes (no event, no trace).
    m_virtualPending = static_cast<uint16_t>(m_virtualPending & ~(1u << vl));
    m_rx[vl].lastFcSentPs = startPs;
    const int64_t txPs =
        WireTimePs(kFcPacketBytes + m_delimiterBytes);
    m_busyUntilPs = startPs + txPs;
    m_fcSent++;
    const int64_t arrivalPs = startPs + txPs + m_cableDelayPs;
    const uint16_t fccl = AdvertisedFccl(vl);
    auto& stash = m_peer->m_tx[vl].stash;
    // Stashed updates that have both arrived by now are applied together by the next credit
    // read (none happened since they arrived: it would have caught up first), so the older
    // one can be overwritten; this keeps the stash small over a long idle stretch.
    if (!stash.empty() && stash.back().arrivalPs <= nowPs && arrivalPs <= nowPs)
    {
        stash.back() = {arrivalPs, fccl};
    }
    else
    {
        stash.push_back({arrivalPs, fccl});
    }
    m_peer->m_fcStashed++;
}

void
IbNetDevice::VirtualRefreshTick(int64_t tickPs)
{
    // FlowControlRefresh, §7.9.4.2, without the event.
    const int64_t period = RefreshPeriodPs();
    int64_t next = tickPs + period;
    bool any = false;
    for (uint8_t vl = 0; vl < m_opVls; ++vl)
    {
        const RxVl& rx = m_rx[vl];
        if (rx.lastFcSentPs < 0 || tickPs - rx.lastFcSentPs >= period - period / 16)
        {
            m_virtualPending = static_cast<uint16_t>(m_virtualPending | (1u << vl));
            any = true;
        }
        else
        {
            next = std::min(next, rx.lastFcSentPs + period);
        }
    }
    m_nextTickPs = next;
    // The tick's Kick: the lowest pending VL goes at once if the wire is free.
    if (any && m_busyUntilPs <= tickPs)
    {
        for (uint8_t vl = 0; vl < m_opVls; ++vl)
        {
            if (m_virtualPending & (1u << vl))
            {
                VirtualSendFlowControl(vl, tickPs, tickPs);
                break;
            }
        }
    }
}

void
IbNetDevice::AdvanceDormantRefresh(int64_t nowPs, bool firstTickIsEvent)
{
    if (!m_refreshDormant)
    {
        return;
    }
    const int64_t period = RefreshPeriodPs();
    const int64_t txPs =
        WireTimePs(kFcPacketBytes + m_delimiterBytes);
    const int64_t delayPs = m_cableDelayPs;
    const int64_t vls = m_opVls;
    bool first = firstTickIsEvent;
    while (true)
    {
        const int64_t busyPs = m_busyUntilPs;
        if (m_virtualPending != 0)
        {
            // A tick due no later than the wake-up after the packet on the wire runs first (its
            // event was scheduled a period earlier than the wake-up's).
            if (m_nextTickPs <= busyPs && m_nextTickPs <= nowPs)
            {
                VirtualRefreshTick(m_nextTickPs);
                m_lazyRefreshes++;
                continue;
            }
            // The wake-up at busy-until sends the lowest pending VL; one due exactly now is left
            // to a real wake-up (WakeRefresh) should the port wake now.
            if (busyPs < nowPs)
            {
                for (uint8_t vl = 0; vl < m_opVls; ++vl)
                {
                    if (m_virtualPending & (1u << vl))
                    {
                        VirtualSendFlowControl(vl, busyPs, nowPs);
                        break;
                    }
                }
                continue;
            }
            break;
        }
        if (m_nextTickPs > nowPs)
        {
            break;
        }
        if (!first)
        {
            // Steady state: every VL due at every tick, each tick's packets done long before the
            // next one. Ticks then repeat exactly a period apart; skip all but the last whose
            // packets have all arrived by now (its stash entries supersede the skipped ones').
            const int64_t t0 = m_nextTickPs;
            bool steady = busyPs <= t0 && vls * txPs <= period && (vls - 1) * txPs <= period / 16;
            for (uint8_t vl = 0; steady && vl < m_opVls; ++vl)
            {
                const int64_t last = m_rx[vl].lastFcSentPs;
                steady = last < 0 || t0 - last >= period - period / 16;
            }
            const int64_t span = nowPs - t0 - vls * txPs - delayPs;
            if (steady && span >= period)
            {
                const int64_t skip = span / period; // ticks t0 .. t0 + (skip-1) period
                const int64_t lastSkipped = t0 + (skip - 1) * period;
                m_fcSent += static_cast<uint64_t>(skip * vls);
                m_peer->m_fcStashed += static_cast<uint64_t>(skip * vls);
                m_lazyRefreshes += static_cast<uint64_t>(skip);
                for (uint8_t vl = 0; vl < m_opVls; ++vl)
                {
                    m_rx[vl].lastFcSentPs = lastSkipped + vl * txPs;
                }
                m_busyUntilPs = lastSkipped + vls * txPs;
                m_nextTickPs = t0 + skip * period;
                m_lazySkipped += static_cast<uint64_t>(skip);
            }
            else if (SkipRepeatedPeriods(nowPs, period, vls * txPs + delayPs))
            {
                continue;
            }
        }
        VirtualRefreshTick(m_nextTickPs);
        if (!first)
        {
            m_lazyRefreshes++;
        }
        first = false;
    }
}

bool
IbNetDevice::SkipRepeatedPeriods(int64_t nowPs, int64_t period, int64_t drainPs)
{
    // The lockstep skip above covers every VL due at every tick. After traffic, VLs whose
    // updates went out at other times (an update on change, §7.9.4.1) keep their own phase, and
    // a period holds several ticks: still the same ticks every period, with the same packets at
    // the same offsets. So take the state at a tick, run one period tick by tick, and if the
    // state is then the same shifted by exactly one period, every later period until something
    // happens on the link will be too: account for all but the last whole ones at once, so
    // that the packets left to send one by one supersede what the skipped ones would have left
    // in the peer's stash.
    DormantSnapshot& s = m_dormantSnapshot;
    const int64_t t = m_nextTickPs;
    if (s.tickPs >= 0 && t == s.tickPs + period && s.opVls == m_opVls &&
        m_busyUntilPs - t == s.busyUntilPs - s.tickPs)
    {
        bool same = true;
        for (uint8_t vl = 0; same && vl < m_opVls; ++vl)
        {
            const int64_t before = s.lastFcSentPs[vl];
            const int64_t now = m_rx[vl].lastFcSentPs;
            same = before >= 0 && now == before + period;
        }
        const int64_t skip = (nowPs - t - period - drainPs) / period;
        if (same && skip > 0)
        {
            const auto k = static_cast<uint64_t>(skip);
            m_fcSent += k * (m_fcSent - s.fcSent);
            m_peer->m_fcStashed += k * (m_peer->m_fcStashed - s.peerStashed);
            const uint64_t ticks = m_lazyRefreshes - s.lazyRefreshes;
            m_lazyRefreshes += k * ticks;
            m_lazySkipped += k * ticks;
            for (uint8_t vl = 0; vl < m_opVls; ++vl)
            {
                m_rx[vl].lastFcSentPs += skip * period;
            }
            m_busyUntilPs += skip * period;
            m_nextTickPs += skip * period;
            s.tickPs = -1;
            return true;
        }
    }
    // (Re)start the comparison here when there is room for it to pay.
    if (s.tickPs < 0 || t >= s.tickPs + period)
    {
        s.tickPs = nowPs - t > 3 * period + drainPs ? t : -1;
        if (s.tickPs >= 0)
        {
            s.opVls = m_opVls;
            s.busyUntilPs = m_busyUntilPs;
            for (uint8_t vl = 0; vl < m_opVls; ++vl)
            {
                s.lastFcSentPs[vl] = m_rx[vl].lastFcSentPs;
            }
            s.fcSent = m_fcSent;
            s.lazyRefreshes = m_lazyRefreshes;
            s.peerStashed = m_peer->m_fcStashed;
        }
    }
    return false;
}

void
IbNetDevice::WakeRefresh()
{
    if (!m_refreshDormant)
    {
        return;
    }
    const int64_t nowPs = SimClock::NowPs();
    AdvanceDormantRefresh(nowPs);
    m_refreshDormant = false;
    m_dormantSnapshot.tickPs = -1;
    // The state an all-events run has now: the next tick's event, the VLs of the current tick
    // still to go and the wake-up at the end of the packet on the wire.
    m_fcRefresh = Simulator::Schedule(PicoSeconds(m_nextTickPs - nowPs),
                                      &IbNetDevice::FlowControlRefresh,
                                      this);
    if (m_virtualPending != 0)
    {
        for (uint8_t vl = 0; vl < 16; ++vl)
        {
            if (m_virtualPending & (1u << vl))
            {
                m_rx[vl].fcPending = true;
            }
        }
        m_virtualPending = 0;
        ScheduleWake(m_busyUntilPs, nowPs);
    }
}

int64_t
IbNetDevice::EarliestStartPs(const IbFrame* head, int64_t nowPs) const
{
    // Cut-through cannot outrun the packet's own arrival: the output may start only when its
    // last byte would not leave before it has come in.
    if (head->tailArrivalPs > nowPs)
    {
        const int64_t startPs = head->tailArrivalPs - WireTimePs(head->bytes + m_delimiterBytes);
        if (startPs > nowPs)
        {
            return startPs;
        }
    }
    return nowPs;
}

bool
IbNetDevice::KickKeepsRefreshAsleep(int64_t nowPs)
{
    // A transmission opportunity at which this port sends one VL15 packet, or nothing, and
    // leaves nothing behind changes none of the sleeping refresh's inputs but this port's busy
    // time: VL15 carries no credit (§7.9.4), so FCTBS, FCCL and ABR stay as they were, nothing
    // waits for credit (no stall, so the peer needs no flow-control packet as an event) and no
    // wake-up is scheduled. The ticks up to now are accounted first, on the wire as it was;
    // later ones see the packet's busy time as an all-events run's ticks would (a tick during
    // it sends its packets back to back after it, AdvanceDormantRefresh). The subnet manager's
    // sweep is made of such hops: one directed-route SMP at a time on most links.
    // Anything else (data queued at this port, a flow-control packet due, a second VL15
    // packet, a head still arriving, the wire busy) wakes the link as TouchLink does.
    if ((m_readyVls & ~(1u << kIbManagementVl)) != 0 || m_wakeAtPs >= 0)
    {
        return false;
    }
    for (uint8_t vl = 0; vl < m_opVls; ++vl)
    {
        if (m_rx[vl].fcPending || m_rx[vl].fcInitPending)
        {
            return false;
        }
    }
    if (m_readyVls != 0)
    {
        const TxVl& mgmt = m_tx[kIbManagementVl];
        if (mgmt.ready.size() != 1)
        {
            return false;
        }
        const IbFrameQueue* q = mgmt.ready.front().queue;
        const IbFrame* head = mgmt.ready.front().head;
        if (q->frames.size() != 1 || EarliestStartPs(head, nowPs) > nowPs)
        {
            return false;
        }
    }
    AdvanceDormantRefresh(nowPs);
    // A refresh packet due now or still on the wire goes first (Kick's order): that needs the
    // timer awake, as it is while anything is sent.
    return m_virtualPending == 0 && nowPs >= m_busyUntilPs;
}

void
IbNetDevice::WakeLinkRefresh()
{
    WakeRefresh();
    if (m_peer)
    {
        m_peer->WakeRefresh();
    }
}

void
IbNetDevice::CatchUpLinkForRead() const
{
    // Accounting only: what a counter or credit reader sees equals an all-events run's, and the
    // timers stay asleep (reading schedules nothing, so it cannot change what happens next).
    const int64_t nowPs = SimClock::NowPs();
    auto* self = const_cast<IbNetDevice*>(this);
    self->AdvanceDormantRefresh(nowPs);
    if (m_peer)
    {
        m_peer->AdvanceDormantRefresh(nowPs);
    }
}

void
IbNetDevice::ReceiveFlowControlEvent(uint8_t op, uint8_t vl, uint16_t fctbs, uint16_t fccl,
                                     uint32_t linkGeneration)
{
    TouchLink();
    if (m_phys != IbPhysState::LinkUp || vl >= 15 ||
        linkGeneration != m_cableGeneration)
    {
        return; // sent before the link went down: lost with it
    }
    m_fcEvents++;
    ApplyStashedFlowControl(vl); // older packets first
    m_fcRxTrace(op, vl, fctbs, fccl);
    // Receive side, IBA vol. 1 §7.9.4.3: ABR := FCTBS, which gives back the blocks of packets
    // the peer sent but this port discarded. Packets the peer sent before this flow-control
    // packet whose arrival this model has not processed yet (their events are still pending)
    // will add their blocks when they do, so ABR is set to the peer's count as of the last
    // packet that did arrive: exactly FCTBS once those are in.
    RxVl& rx = m_rx[vl];
    rx.abr = rx.lastArrivedPos;
    rx.lostSinceSync = 0;
    // Transmit side: the peer's credit limit.
    m_tx[vl].fccl = fccl;
    NoteCreditsChanged(vl);
    Kick();
}

bool
IbNetDevice::NeedsFlowControlEvent(uint8_t vl) const
{
    // An arrival event is needed when the packet changes something at its arrival time: the
    // transmitter is waiting for this credit, an ABR repair is due, or someone traces credits.
    // Otherwise its only effect, a higher FCCL, can be applied when the transmitter next asks:
    // every credit check sees exactly the credit that had arrived by then, and an event per
    // update is saved. What can differ from processing every update as an event is the order
    // of simultaneous events (a credit landing at the very instant a decision is made), which
    // ns-3 leaves to insertion order anyway; in symmetric all-to-all runs such ties shift the
    // results by about as much as a centimetre more cable does (docs/ib-link.md).
    return m_tx[vl].stallStartPs >= 0 || m_rx[vl].lostSinceSync > 0 ||
           !m_fcRxTrace.IsEmpty() || !m_creditTrace.IsEmpty() || m_phys != IbPhysState::LinkUp;
}

void
IbNetDevice::ApplyStashedFlowControl(uint8_t vl)
{
    ApplyStashedFlowControl(vl, SimClock::NowPs());
}

void
IbNetDevice::ApplyStashedFlowControl(uint8_t vl, int64_t nowPs)
{
    NS_ASSERT(nowPs == Simulator::Now().GetPicoSeconds());
    if (m_peer && m_peer->m_refreshDormant)
    {
        // Refresh packets the sleeping peer has sent by now belong in the stash first.
        m_peer->AdvanceDormantRefresh(nowPs);
    }
    auto& stash = m_tx[vl].stash;
    while (!stash.empty() && stash.front().arrivalPs <= nowPs)
    {
        m_tx[vl].fccl = stash.front().fccl;
        stash.pop_front();
    }
}

void
IbNetDevice::NoteCreditsChanged(uint8_t vl)
{
    // Only a sink needs the figure now; without one the stash is applied by the next credit
    // decision, which sees the same credit (every decision applies what has arrived first).
    if (!m_creditTrace.IsEmpty())
    {
        m_creditTrace(vl, GetCreditsAvailable(vl));
    }
}

void
IbNetDevice::ReleaseReceiveBlocks(uint8_t vl, uint16_t blocks)
{
    if (vl == kIbManagementVl)
    {
        return;
    }
    TouchLink(); // refreshes before this instant carried the FCCL before the release
    RxVl& rx = m_rx[vl];
    rx.queue.usedBlocks -= std::min<uint32_t>(blocks, rx.queue.usedBlocks);
    m_bufferTrace(vl, rx.queue.usedBlocks);
    // Freed space raises FCCL: an update goes out at the next opportunity (§7.9.4.2, "on
    // change"); while one is pending it will carry the newest value, so updates coalesce.
    if (m_phys == IbPhysState::LinkUp && !rx.fcPending)
    {
        rx.fcPending = true;
        Kick();
    }
}

// ---- transmit -----------------------------------------------------------------------------

void
IbNetDevice::ScheduleWake(int64_t atPs, int64_t nowPs)
{
    NS_ASSERT(nowPs == Simulator::Now().GetPicoSeconds());
    // One pending wake-up at most; an earlier one replaces a later one.
    if (m_wakeAtPs >= 0)
    {
        if (m_wakeAtPs <= atPs)
        {
            return;
        }
        m_wake.Cancel();
    }
    m_wakeAtPs = atPs;
    m_wake.Schedule(atPs - nowPs);
}

void
IbNetDevice::WakeUp()
{
    m_wakeAtPs = -1;
    m_wakes++;
    m_lastSent = &WakeBreakdown::nothing;
    Kick();
    (m_wakeBreakdown.*m_lastSent)++;
}

bool
IbNetDevice::HasPendingWork(int64_t atPs, int64_t nowPs)
{
    // Link packets and VL15 always warrant a wake-up.
    for (uint8_t v = 0; v < m_opVls; ++v)
    {
        if (m_rx[v].fcPending || m_rx[v].fcInitPending)
        {
            return true;
        }
    }
    if (m_readyVls & (1u << kIbManagementVl)) // VL15's ready list, from the hot line
    {
        return true;
    }
    if (m_state != IbPortState::Active)
    {
        return false;
    }
    // Data: worth waking for only if some VL will have credit. A VL with neither credit nor a
    // flow-control packet on its way is stalled from `atPs` on; the peer then sends its next
    // update as an event, which kicks this transmitter, so no wake-up is needed.
    bool waiting = false;
    for (uint8_t v = 0; v < m_opVls; ++v)
    {
        TxVl& tx = m_tx[v];
        if (tx.ready.empty())
        {
            continue;
        }
        waiting = true;
        ApplyStashedFlowControl(v, nowPs);
        const uint16_t blocks = tx.ready.front().head->blocks;
        if (!tx.stash.empty() || HasCredit(v, blocks) || blocks > PeerVlBufferBlocks())
        {
            return true;
        }
    }
    if (waiting)
    {
        for (uint8_t v = 0; v < m_opVls; ++v)
        {
            if (!m_tx[v].ready.empty() && m_tx[v].stallStartPs < 0)
            {
                m_tx[v].stallStartPs = atPs;
            }
        }
        if (m_portWaitStartPs < 0)
        {
            m_portWaitStartPs = atPs;
        }
    }
    return false;
}

void
IbNetDevice::Kick()
{
    if (m_phys != IbPhysState::LinkUp)
    {
        return;
    }
    const int64_t nowPs = SimClock::NowPs();
    if ((m_refreshDormant || (m_peer && m_peer->m_refreshDormant)) &&
        !KickKeepsRefreshAsleep(nowPs))
    {
        WakeLinkRefresh();
    }
    if (nowPs < m_busyUntilPs)
    {
        ScheduleWake(m_busyUntilPs, nowPs);
        return;
    }
    // Link packets first: flow control keeps the peer's transmitter going.
    for (uint8_t vl = 0; vl < m_opVls; ++vl)
    {
        RxVl& rx = m_rx[vl];
        if (rx.fcInitPending || rx.fcPending)
        {
            SendFlowControl(vl, rx.fcInitPending, nowPs);
            if (HasPendingWork(m_busyUntilPs, nowPs))
            {
                ScheduleWake(m_busyUntilPs, nowPs);
            }
            return;
        }
    }
    // VL15 has absolute priority over data VLs and needs no credit (§7.6.4, §7.9.4).
    // (m_readyVls says whether VL15's ready list is empty without reading it: another line.)
    if (m_readyVls & (1u << kIbManagementVl))
    {
        TxVl& mgmt = m_tx[kIbManagementVl];
        IbFrame* head = mgmt.ready.front().head;
        NS_ASSERT(head == mgmt.ready.front().queue->frames.front());
        const int64_t startPs = EarliestStartPs(head, nowPs);
        if (startPs > nowPs)
        {
            ScheduleWake(startPs, nowPs);
            return;
        }
        IbFrameQueue* q = mgmt.ready.front().queue;
        PopReady(kIbManagementVl);
        q->readyRegistered = false;
        TransmitFrame(head, q, kIbManagementVl, nowPs);
        return;
    }
    // Data VLs only leave an Active port (Armed may receive but not send, §7.2.4).
    if (m_state != IbPortState::Active)
    {
        return;
    }
    constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
    int64_t earliestPs = kNever;
    bool waiting = false;
    auto eligible = [&](uint8_t vl) {
        if (vl >= m_opVls)
        {
            return false;
        }
        TxVl& tx = m_tx[vl];
        if (tx.ready.empty())
        {
            return false;
        }
        waiting = true;
        IbFrame* head = tx.ready.front().head;
        NS_ASSERT(head == tx.ready.front().queue->frames.front());
        ApplyStashedFlowControl(vl, nowPs);
        if (!HasCredit(vl, head->blocks))
        {
            if (head->blocks > PeerVlBufferBlocks())
            {
                m_oversizedVls |= static_cast<uint16_t>(1u << vl); // never: discarded below
                return false;
            }
            if (tx.stallStartPs < 0)
            {
                tx.stallStartPs = nowPs;
            }
            if (!tx.stash.empty())
            {
                // Credit is already on its way: wake when it lands.
                earliestPs = std::min(earliestPs, tx.stash.front().arrivalPs);
            }
            return false;
        }
        const int64_t startPs = EarliestStartPs(head, nowPs);
        if (startPs > nowPs)
        {
            earliestPs = std::min(earliestPs, startPs);
            return false;
        }
        return true;
    };
    int vl = m_arbiter.Select(eligible);
    if (m_oversizedVls != 0)
    {
        // A packet the peer's buffer cannot hold would wait for credit for ever, and its VL
        // with it: it goes, and the arbitration runs again on what is at the heads now.
        const uint16_t vls = m_oversizedVls;
        m_oversizedVls = 0;
        for (uint8_t v = 0; v < m_opVls; ++v)
        {
            if (vls & (1u << v))
            {
                DiscardHeadsExceedingPeerBuffer(v);
            }
        }
        ScheduleWake(nowPs, nowPs);
        return;
    }
    if (vl < 0)
    {
        if (earliestPs != kNever)
        {
            ScheduleWake(earliestPs, nowPs);
        }
        if (waiting && m_portWaitStartPs < 0)
        {
            m_portWaitStartPs = nowPs;
        }
        return;
    }
    TxVl& tx = m_tx[vl];
    const ReadyEntry entry = tx.ready.front();
    PopReady(static_cast<uint8_t>(vl));
    entry.queue->readyRegistered = false;
    m_arbiter.Commit(static_cast<uint8_t>(vl), entry.head->bytes);
    TransmitFrame(entry.head, entry.queue, static_cast<uint8_t>(vl), nowPs);
}

void
IbNetDevice::EndStall(uint8_t vl)
{
    TxVl& tx = m_tx[vl];
    if (tx.stallStartPs >= 0)
    {
        int64_t d = SimClock::NowPs() - tx.stallStartPs;
        tx.stallStartPs = -1;
        if (d > 0)
        {
            tx.stallTotalPs += d;
            m_stallTrace(vl, PicoSeconds(d));
        }
    }
}

void
IbNetDevice::TransmitFrame(IbFrame* frame, IbFrameQueue* from, uint8_t vl, int64_t nowPs)
{
    NS_ASSERT(nowPs == Simulator::Now().GetPicoSeconds());
    NS_ASSERT(frame == from->frames.front());
    // A multicast packet with outputs after this one stays at the head of its input buffer; a
    // copy of it leaves here (IbSwitch::SplitMulticastCopy).
    IbFrame* const queuedHead = frame;
    if (from->rxPort && IbSwitch::IsMulticastLid(frame->dlid))
    {
        if (IbFrame* copy = m_switch->SplitMulticastCopy(frame, from->rxPort->GetPortNumber()))
        {
            frame = copy;
        }
    }
    const bool headStays = frame != queuedHead;
    if (!headStays)
    {
        from->frames.pop_front();
    }
    const bool data = vl != kIbManagementVl;
    m_lastSent = data ? &WakeBreakdown::data : &WakeBreakdown::management;
    if (data && from->rxPort)
    {
        m_switch->NotifyDeparture(frame, this, vl); // congestion control may set FECN
    }
    if (data)
    {
        EndStall(vl);
    }
    if (m_portWaitStartPs >= 0)
    {
        // PortXmitWait counts ticks with data waiting and nothing sent; a tick here is one
        // symbol time of the active rate.
        int64_t waited = nowPs - m_portWaitStartPs;
        int64_t tick = std::max<int64_t>(1, m_symbolPs);
        IbPortCounters::Add(m_counters.portXmitWait, static_cast<uint64_t>(waited / tick));
        m_portWaitStartPs = -1;
    }

    // The packet goes on the wire first: the link is busy from now on, so anything the
    // bookkeeping below sets in motion (credit returns, refills) queues behind it.
    frame->vl = vl;
    if (frame->verifyBytes)
    {
        // Bytes that may be corrupt travel as bytes: this hop's VL and a fresh VCRC go into them
        // (a switch regenerates the VCRC, §7.8.2); the ICRC stays as received.
        frame->Materialize(m_scratch);
        frame->StoreBytes(m_scratch.data(), 0, m_scratch.data(),
                          static_cast<uint32_t>(m_scratch.size()));
    }
    const int64_t txPs = WireTimePs(frame->bytes + m_delimiterBytes);
    frame->tailArrivalPs = nowPs + txPs + m_cableDelayPs;
    m_busyUntilPs = nowPs + txPs;
    if (data)
    {
        m_tx[vl].fctbs = static_cast<uint16_t>((m_tx[vl].fctbs + frame->blocks) & kFcMask);
        NoteCreditsChanged(vl);
    }
    m_counters.CountXmit(frame->bytes - kIbVcrcBytes, IbSwitch::IsMulticastLid(frame->dlid));
    if (!m_txTrace.IsEmpty())
    {
        m_txTrace(frame->ToPacket(), vl); // only observers pay for a Packet
    }
    if (!m_sniffers.empty())
    {
        Sniff(frame, true);
    }
    // The cabled peer (m_peer is GetPeer() while the link is up, without a Ptr per packet).
    IbNetDevice* peer = m_peer;
    NS_ASSERT(peer == PeekPointer(GetPeer()));
    frame->fromPeer = data;
    frame->fctbsAfter = m_tx[vl].fctbs;
    frame->linkGeneration = m_cableGeneration;
    // The arrival is the frame's own event (IbFrameArrival): one reference for the simulator to
    // drop when it has run it. Nothing cancels an arrival (a cable that goes down voids it by
    // generation), so no EventId is made for it.
    frame->receiver = peer;
    frame->Ref();
    SimClock::ScheduleWithContext(SimClock::Context(),
                                  peer->ArrivalDelayPs(txPs, m_cableDelayPs, frame->bytes),
                                  static_cast<EventImpl*>(frame));

    // The frame has left the queue it sat in: a switch input buffer frees its blocks (and
    // returns the credit upstream), a CA transmit queue gains room.
    if (from->rxPort && headStays)
    {
        m_switch->NotifyHeadChanged(from); // on to the multicast packet's next output
    }
    else if (from->rxPort)
    {
        if (from->vl == kIbManagementVl)
        {
            from->rxPort->ReleaseVl15Slot();
        }
        else
        {
            from->rxPort->ReleaseReceiveBlocks(from->vl, frame->blocks);
        }
        if (!from->frames.empty())
        {
            m_switch->NotifyHeadChanged(from);
        }
    }
    else
    {
        bool wasFull = from->frames.size() + 1 >= m_txQueuePackets;
        if (!from->frames.empty())
        {
            RegisterReadyQueue(from);
        }
        if (wasFull && !m_txReady.IsNull())
        {
            m_txReady(this);
        }
    }
    // Wake at the end of this packet only if something else can go then.
    if (HasPendingWork(m_busyUntilPs, nowPs))
    {
        ScheduleWake(m_busyUntilPs, nowPs);
    }
}

int64_t
IbNetDevice::ArrivalDelayPs(int64_t txPs, int64_t propagationPs, uint32_t bytes) const
{
    if (m_switch)
    {
        return m_switch->ArrivalDelayPs(
            txPs, propagationPs, bytes,
            WireTimePs(m_switch->CutThroughHeadBytes(m_delimiterBytes)));
    }
    // A channel adapter takes the packet when its last byte is in.
    return txPs + propagationPs;
}

int64_t
IbNetDevice::WireTimePs(uint32_t bytes) const
{
    for (const WireTimeMemo& m : m_wireTimeMemo)
    {
        if (m.bytes == bytes && m.ps >= 0)
        {
            return m.ps;
        }
    }
    const int64_t ps = m_activeRate.SerializationTime(bytes).GetPicoSeconds();
    m_wireTimeMemo[m_wireTimeMemoNext] = {bytes, ps};
    m_wireTimeMemoNext = static_cast<uint8_t>((m_wireTimeMemoNext + 1) % m_wireTimeMemo.size());
    return ps;
}

void
IbNetDevice::RegisterReadyQueue(IbFrameQueue* queue)
{
    if (queue->readyRegistered || queue->frames.empty())
    {
        return;
    }
    queue->readyRegistered = true;
    IbFrame* head = queue->frames.front();
    uint8_t vl = m_switch ? head->outVl : head->vl;
    PushReady(vl, {queue, head});
    Kick();
}

bool
IbNetDevice::HasQueueRoom(uint8_t vl) const
{
    return vl < m_tx.size() && m_tx[vl].hcaQueue.frames.size() < m_txQueuePackets;
}

bool
IbNetDevice::CanSend(uint8_t sl) const
{
    uint8_t vl = MapSlToVl(sl);
    return m_state == IbPortState::Active && vl < m_opVls &&
           m_tx[vl].hcaQueue.frames.size() < m_txQueuePackets;
}

bool
IbNetDevice::SendIb(Ptr<Packet> packet, uint16_t dlid, uint8_t sl, IbLnh lnh)
{
    NS_ABORT_MSG_IF(m_switch, "SendIb is for channel-adapter ports");
    uint8_t vl = MapSlToVl(sl);
    if (m_state != IbPortState::Active || vl >= m_opVls)
    {
        IbPortCounters::Add(m_counters.portXmitDiscards, 1);
        m_drops[static_cast<int>(IbDropReason::XmitDiscard)]++;
        m_dropTrace(packet, static_cast<uint8_t>(IbDropReason::XmitDiscard));
        return false;
    }
    return EnqueuePacket(packet, dlid, sl, vl, lnh);
}

bool
IbNetDevice::SendIbBytes(const uint8_t* data, uint32_t stored, uint32_t length, uint16_t dlid,
                         uint8_t sl, IbLnh lnh)
{
    NS_ABORT_MSG_IF(m_switch, "SendIbBytes is for channel-adapter ports");
    NS_ABORT_MSG_IF(stored > length, "SendIbBytes: more bytes stored than sent");
    uint8_t vl = MapSlToVl(sl);
    if (m_state != IbPortState::Active || vl >= m_opVls)
    {
        IbPortCounters::Add(m_counters.portXmitDiscards, 1);
        m_drops[static_cast<int>(IbDropReason::XmitDiscard)]++;
        if (!m_dropTrace.IsEmpty())
        {
            Ptr<Packet> p = Create<Packet>(data, stored);
            p->AddPaddingAtEnd(length - stored);
            m_dropTrace(p, static_cast<uint8_t>(IbDropReason::XmitDiscard));
        }
        return false;
    }
    return Enqueue(data, stored, length, dlid, sl, vl, lnh);
}

bool
IbNetDevice::SendManagement(Ptr<Packet> packet, uint16_t dlid)
{
    NS_ABORT_MSG_IF(m_switch, "SendManagement is for channel-adapter ports");
    if (m_phys != IbPhysState::LinkUp)
    {
        return false;
    }
    return EnqueuePacket(packet, dlid, 0, kIbManagementVl, IbLnh::IbaLocal);
}

bool
IbNetDevice::SendManagementPacket(Ptr<Packet> packet, uint16_t dlid, uint16_t slid, uint8_t sl,
                                  uint8_t vl)
{
    m_sendBuf.resize(packet->GetSize());
    packet->CopyData(m_sendBuf.data(), static_cast<uint32_t>(m_sendBuf.size()));
    return SendManagementBytes(m_sendBuf.data(), static_cast<uint32_t>(m_sendBuf.size()), dlid,
                               slid, sl, vl);
}

bool
IbNetDevice::SendManagementBytes(const uint8_t* data, uint32_t length, uint16_t dlid,
                                 uint16_t slid, uint8_t sl, uint8_t vl)
{
    if (m_phys != IbPhysState::LinkUp)
    {
        return false;
    }
    if (vl != kIbManagementVl && (m_state != IbPortState::Active || vl >= m_opVls))
    {
        IbPortCounters::Add(m_counters.portXmitDiscards, 1);
        m_drops[static_cast<int>(IbDropReason::XmitDiscard)]++;
        if (!m_dropTrace.IsEmpty())
        {
            m_dropTrace(Create<Packet>(data, length),
                        static_cast<uint8_t>(IbDropReason::XmitDiscard));
        }
        return false;
    }
    return Enqueue(data, length, length, dlid, sl, vl, IbLnh::IbaLocal, slid);
}

bool
IbNetDevice::EnqueuePacket(Ptr<const Packet> packet, uint16_t dlid, uint8_t sl, uint8_t vl,
                           IbLnh lnh, int32_t slid)
{
    m_sendBuf.resize(packet->GetSize());
    packet->CopyData(m_sendBuf.data(), static_cast<uint32_t>(m_sendBuf.size()));
    const auto n = static_cast<uint32_t>(m_sendBuf.size());
    return Enqueue(m_sendBuf.data(), n, n, dlid, sl, vl, lnh, slid);
}

bool
IbNetDevice::Enqueue(const uint8_t* data, uint32_t stored, uint32_t body, uint16_t dlid,
                     uint8_t sl, uint8_t vl, IbLnh lnh, int32_t slidOverride)
{
    IbFrameQueue& q = m_tx[vl].hcaQueue;
    if (q.frames.size() >= m_txQueuePackets)
    {
        return false;
    }
    const bool iba = lnh == IbLnh::IbaLocal || lnh == IbLnh::IbaGlobal;
    const uint32_t words = (IbLrhHeader::kSize + body + (iba ? kIbIcrcBytes : 0)) / 4;
    if (body % 4 != 0 || words > IbLrhHeader::kMaxPktLenWords)
    {
        return false; // the transport pads to 4 bytes (BTH.PadCnt); IBA MTU bounds the size
    }
    IbLrhHeader& lrh = m_txLrh; // every field but LVer (always 0) is set here
    lrh.SetVl(vl);
    lrh.SetSl(sl);
    lrh.SetLnh(lnh);
    // A port without a LID sends management packets from the permissive LID (IBA vol. 1 ch. 14,
    // directed-route SMPs).
    const uint16_t slid = slidOverride >= 0 ? static_cast<uint16_t>(slidOverride)
                          : (m_lid == 0 && vl == kIbManagementVl) ? IbLrhHeader::kPermissiveLid
                                                                  : m_lid;
    lrh.SetDlid(dlid);
    lrh.SetSlid(slid);
    lrh.SetPktLenWords(static_cast<uint16_t>(words));

    // The frame stores the LRH and the bytes after it up to their last that is not zero; the
    // rest of the body and the CRC placeholders (ICRC for LNH 2/3, VCRC) are implied zeros.
    IbFrame* f = IbFramePool::Allocate();
    uint8_t lrhBytes[IbLrhHeader::kSize];
    lrh.WriteTo(lrhBytes);
    f->bytes = IbLrhHeader::kSize + body + (iba ? kIbIcrcBytes : 0) + kIbVcrcBytes;
    f->StoreBytes(lrhBytes, IbLrhHeader::kSize, data, stored);
    f->blocks = IbFrame::BlocksFor(f->bytes);
    f->dlid = dlid;
    f->slid = slid;
    f->sl = sl;
    f->vl = vl;
    f->lnh = lnh;
    f->uid = g_nextFrameUid++;
    // A switch port's transmitter looks at outVl (a frame from the crossbar has one); a frame
    // the switch's own agent sends through this port must say the same.
    f->outVl = vl;
    f->outPort = m_portNumber;
    q.frames.push_back(f);
    if (q.frames.size() == 1)
    {
        RegisterReadyQueue(&q);
    }
    return true;
}

void
IbNetDevice::SetIbReceiveCallback(IbReceiveCallback cb)
{
    m_ibRx = cb;
    m_ibFrameRx = IbFrameReceiveCallback();
}

void
IbNetDevice::SetIbFrameReceiveCallback(IbFrameReceiveCallback cb)
{
    m_ibFrameRx = cb;
    m_ibRx = IbReceiveCallback();
}

void
IbNetDevice::SetManagementReceiveCallback(IbFrameReceiveCallback cb)
{
    m_mgmtRx = cb;
}

void
IbNetDevice::SetTxReadyCallback(Callback<void, Ptr<IbNetDevice>> cb)
{
    m_txReady = cb;
}

// ---- receive ------------------------------------------------------------------------------

void
IbNetDevice::DropFrame(IbFrame* frame, IbDropReason reason)
{
    switch (reason)
    {
    case IbDropReason::BadVcrc:
    case IbDropReason::BadIcrc:
    case IbDropReason::Malformed:
    case IbDropReason::UnsupportedLnh:
    case IbDropReason::InvalidVl:
    case IbDropReason::DlidMismatch:
    case IbDropReason::PortNotActive:
        IbPortCounters::Add(m_counters.portRcvErrors, 1);
        break;
    case IbDropReason::SwitchRelay:
        IbPortCounters::Add(m_counters.portRcvSwitchRelayErrors, 1);
        break;
    case IbDropReason::XmitDiscard:
    case IbDropReason::ExceedsPeerBuffer:
        IbPortCounters::Add(m_counters.portXmitDiscards, 1);
        break;
    case IbDropReason::LinkDown:
    case IbDropReason::InjectedLoss:
        // A packet on a cable that went down (or that an injected loss removed) was never
        // received: no receive counter applies (queued packets discarded at the sender count
        // as PortXmitDiscards there).
        break;
    case IbDropReason::Vl15Overflow:
        IbPortCounters::Add(m_counters.vl15Dropped, 1);
        break;
    case IbDropReason::BufferOverrun:
        IbPortCounters::Add(m_counters.excessiveBufferOverrunErrors, 1, 4);
        break;
    }
    m_drops[static_cast<int>(reason)]++;
    NS_LOG_INFO("port " << +m_portNumber << " drops packet " << frame->uid << ": "
                        << IbDropReasonName(reason));
    if (!m_dropTrace.IsEmpty())
    {
        m_dropTrace(frame->ToPacket(), static_cast<uint8_t>(reason));
    }
    IbFramePool::Release(frame);
}

bool
IbNetDevice::VerifyFrameBytes(IbFrame* frame)
{
    // What a receiver's packet checks see (IBA vol. 1 §7.8 and the receive rules of §7.7):
    // length, LVer, PktLen, VCRC at every port; the ICRC at the destination channel adapter.
    const uint32_t len = frame->bytes;
    m_scratch.resize(len);
    frame->CopyBytes(m_scratch.data());
    frame->blocks = IbFrame::BlocksFor(len);
    if (len < IbLrhHeader::kSize + kIbVcrcBytes)
    {
        DropFrame(frame, IbDropReason::Malformed);
        return false;
    }
    IbLrhHeader lrh;
    lrh.ReadFrom(m_scratch.data());
    frame->vl = lrh.GetVl();
    frame->sl = lrh.GetSl();
    frame->dlid = lrh.GetDlid();
    frame->slid = lrh.GetSlid();
    frame->lnh = lrh.GetLnh();
    if (lrh.GetLver() != 0 || uint32_t(lrh.GetPktLenWords()) * 4 + kIbVcrcBytes != len ||
        (frame->HasIcrc() && len < IbLrhHeader::kSize + kIbIcrcBytes + kIbVcrcBytes))
    {
        DropFrame(frame, IbDropReason::Malformed);
        return false;
    }
    IbCrcCheck check = IbCheckCrcs(m_scratch.data(), len);
    if (!check.vcrcOk)
    {
        // A VCRC error is a local physical error (PortRcvErrors); the symbol error that caused
        // it is counted too, as the receiver saw bad symbols.
        IbPortCounters::Add(m_counters.symbolErrorCounter, 1);
        DropFrame(frame, IbDropReason::BadVcrc);
        return false;
    }
    if (check.hasIcrc)
    {
        frame->icrcKnown = true;
        frame->icrc = IbLoadIcrc(m_scratch.data() + len - kIbVcrcBytes - kIbIcrcBytes);
        // Switches do not check the ICRC; the destination does (§7.8.1).
        if (!m_switch && !check.icrcOk)
        {
            DropFrame(frame, IbDropReason::BadIcrc);
            return false;
        }
    }
    return true;
}

void
IbNetDevice::InjectReceivedBytes(const uint8_t* bytes, uint32_t length)
{
    IbFrame* f = IbFramePool::Allocate();
    f->bytes = length;
    f->StoreBytes(bytes, 0, bytes, length);
    f->blocks = IbFrame::BlocksFor(length);
    f->verifyBytes = true;
    f->uid = g_nextFrameUid++;
    f->tailArrivalPs = SimClock::NowPs();
    // Header fields are not trusted: VerifyFrameBytes parses them from the bytes.
    ReceiveFrameEvent(f);
}

void
IbFrameArrival::Notify()
{
    receiver->ReceiveFrameEvent(static_cast<IbFrame*>(this));
}

void
IbNetDevice::ReceiveFrameEvent(IbFrame* frame)
{
    // Refreshes before this arrival carried ABR and FCCL before it, so the link's sleeping
    // timers are woken first; a VL15 packet changes neither (it needs no credit, §7.9.4), so its
    // arrival leaves them asleep unless its bytes turn out to name a data VL (below).
    const bool managementOnWire = frame->vl == kIbManagementVl;
    if (!managementOnWire)
    {
        TouchLink();
    }
    if (frame->fromPeer && frame->linkGeneration != m_cableGeneration)
    {
        // On the cable when it went down: lost with the link, before any accounting.
        frame->fromPeer = false;
        DropFrame(frame, IbDropReason::LinkDown);
        return;
    }
    const bool fromPeer = frame->fromPeer;
    const uint8_t wireVl = frame->vl;
    frame->fromPeer = false;
    if (fromPeer)
    {
        // Where the peer's block count stood after this packet: ABR without losses.
        m_rx[wireVl].lastArrivedPos = frame->fctbsAfter;
    }
    // A data packet discarded before it is counted in ABR leaves the two ends' counts apart
    // until the next flow-control packet repairs them (§7.9.4.3).
    auto lose = [&](IbDropReason reason) {
        if (fromPeer && wireVl < kIbManagementVl)
        {
            m_rx[wireVl].lostSinceSync++;
        }
        DropFrame(frame, reason);
    };
    // The error model sees the packet's bytes as they are stored (a Packet only for it).
    if (m_receiveErrorModel && m_receiveErrorModel->IsCorrupt(frame->ToPacket()))
    {
        const auto* loss = dynamic_cast<const PacketLossModel*>(PeekPointer(m_receiveErrorModel));
        if (loss && loss->DropsPackets())
        {
            lose(IbDropReason::InjectedLoss); // gone on the wire; the sender's credit is repaired
            return;                           // by the next flow-control packet (§7.9.4.3)
        }
        // A bit error on the wire: the bytes as they arrive, one bit flipped past the LRH.
        frame->Materialize(m_scratch);
        size_t bit = (frame->uid * 2654435761u) % ((m_scratch.size() - IbLrhHeader::kSize) * 8);
        m_scratch[IbLrhHeader::kSize + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        frame->StoreBytes(m_scratch.data(), 0, m_scratch.data(),
                          static_cast<uint32_t>(m_scratch.size()));
        frame->verifyBytes = true;
    }
    if (!m_sniffers.empty())
    {
        Sniff(frame, false);
    }
    if (m_phys != IbPhysState::LinkUp)
    {
        lose(IbDropReason::LinkDown);
        return;
    }
    if (frame->verifyBytes && !VerifyFrameBytes(frame))
    {
        if (fromPeer && wireVl < kIbManagementVl)
        {
            m_rx[wireVl].lostSinceSync++;
        }
        return; // counted
    }
    const uint8_t vl = frame->vl;
    if (vl == kIbManagementVl)
    {
        if (m_vl15Queued >= m_vl15BufferPackets)
        {
            DropFrame(frame, IbDropReason::Vl15Overflow);
            return;
        }
    }
    else
    {
        if (managementOnWire)
        {
            TouchLink(); // sent on VL15, read as data: ABR and the buffer change below
        }
        if (vl >= m_opVls)
        {
            lose(IbDropReason::InvalidVl);
            return;
        }
        // §7.2: a port in Init drops data packets; an Armed port accepts one and becomes
        // Active.
        if (m_state == IbPortState::Armed)
        {
            ChangeState(IbPortState::Active);
        }
        else if (m_state != IbPortState::Active)
        {
            lose(IbDropReason::PortNotActive);
            return;
        }
        RxVl& rx = m_rx[vl];
        rx.abr = static_cast<uint16_t>((rx.abr + frame->blocks) & kFcMask);
        if (rx.queue.usedBlocks + frame->blocks > GetReceiveBufferBlocks())
        {
            // Only a transmitter ignoring credit can get here (§7.9.4.3).
            DropFrame(frame, IbDropReason::BufferOverrun);
            return;
        }
        rx.queue.usedBlocks += frame->blocks;
        rx.maxUsed = std::max(rx.maxUsed, rx.queue.usedBlocks);
        m_bufferTrace(vl, rx.queue.usedBlocks);
    }
    m_counters.CountRcv(frame->bytes - kIbVcrcBytes, IbSwitch::IsMulticastLid(frame->dlid));
    if (!m_rxTrace.IsEmpty())
    {
        m_rxTrace(frame->ToPacket(), vl); // only observers pay for a Packet
    }

    if (m_switch)
    {
        if (vl == kIbManagementVl)
        {
            m_vl15Queued++;
        }
        m_switch->Forward(this, frame);
        return;
    }
    // Channel adapter: check it is for us, hand it up, free the buffer at once.
    const uint16_t mask = static_cast<uint16_t>(~((1u << m_lmc) - 1));
    // A multicast DLID is taken too: which of the port's QPs (if any) are members of the group
    // is the transport's to decide (IBA vol. 1 §10.5: by the GRH's MGID).
    bool forUs = frame->dlid == IbLrhHeader::kPermissiveLid ||
                 (m_lid != 0 && (frame->dlid & mask) == (m_lid & mask)) ||
                 (IbSwitch::IsMulticastLid(frame->dlid) && vl != kIbManagementVl);
    IbDropReason reason = IbDropReason::DlidMismatch;
    if (forUs && !m_acceptRaw && !frame->HasIcrc())
    {
        forUs = false;
        reason = IbDropReason::UnsupportedLnh;
    }
    if (!forUs)
    {
        ReleaseReceiveBlocks(vl, vl == kIbManagementVl ? 0 : frame->blocks);
        DropFrame(frame, reason);
        return;
    }
    IbRxInfo info;
    info.slid = frame->slid;
    info.dlid = frame->dlid;
    info.sl = frame->sl;
    info.vl = vl;
    info.lnh = frame->lnh;
    info.bytes = frame->bytes;
    ReleaseReceiveBlocks(vl, vl == kIbManagementVl ? 0 : frame->blocks);
    if (!m_mgmtRx.IsNull())
    {
        // Management traffic (IBA vol. 1 §13.5.1: SMPs on VL15 to QP0, GMPs to QP1) goes to the
        // node's agents and never reaches the data consumer.
        int64_t qp = vl == kIbManagementVl ? 0 : -1;
        if (qp < 0 && (info.lnh == IbLnh::IbaLocal || info.lnh == IbLnh::IbaGlobal))
        {
            const uint32_t bth = info.lnh == IbLnh::IbaLocal ? 8 : 48;
            if (frame->bytes >= bth + 12)
            {
                uint8_t head[60];
                frame->CopyHead(head, bth + 12);
                qp = (static_cast<int64_t>(head[bth + 5]) << 16) | (head[bth + 6] << 8) |
                     head[bth + 7];
            }
        }
        if (qp == 0 || qp == 1)
        {
            m_mgmtRx(this, *frame, info);
            IbFramePool::Release(frame);
            return;
        }
    }
    // The consumer without a Packet reads the frame itself (its bytes are copied only if it
    // wants them); the frame goes back to its pool after it. A Packet is made only for
    // consumers that take one.
    if (!m_ibFrameRx.IsNull())
    {
        m_ibFrameRx(this, *frame, info);
    }
    // The node's protocol handlers (the generic NetDevice receive callback, which
    // Node::AddDevice always sets) get the packet only when no InfiniBand consumer owns the data
    // path: the CA's data path has one owner, and for an RDMA engine or a sink that owner has
    // taken the packet already. (Delivering it to the node too built an ns-3 Packet per
    // delivered packet for a node with no handler for it: 4 % of a k=16 all-to-all's time.)
    const bool toNode = m_ibFrameRx.IsNull() && m_ibRx.IsNull() && !m_netRx.IsNull();
    Ptr<const Packet> p;
    if (!m_ibRx.IsNull() || toNode)
    {
        p = frame->ToPacket();
    }
    IbFramePool::Release(frame);
    if (!m_ibRx.IsNull())
    {
        m_ibRx(this, p, info);
    }
    if (toNode)
    {
        m_netRx(this, p, static_cast<uint16_t>(info.lnh), GetAddress());
    }
}

// ---- observation --------------------------------------------------------------------------

void
IbNetDevice::Sniff(IbFrame* frame, bool transmit)
{
    if (!transmit && frame->verifyBytes)
    {
        // Received bytes that may be corrupt are recorded exactly as they came in.
        m_scratch.resize(frame->bytes);
        frame->CopyBytes(m_scratch.data());
    }
    else
    {
        frame->Materialize(m_scratch);
    }
    for (auto& cb : m_sniffers)
    {
        cb(SimClock::Now(), m_scratch.data(), static_cast<uint32_t>(m_scratch.size()), transmit);
    }
}

uint32_t
IbNetDevice::AddSniffer(SnifferCallback cb)
{
    return m_sniffers.Add(cb);
}

void
IbNetDevice::RemoveSniffer(uint32_t handle)
{
    m_sniffers.Remove(handle);
}

void
IbNetDevice::ReleaseVl15Slot()
{
    if (m_vl15Queued > 0)
    {
        m_vl15Queued--;
    }
}

IbFrameQueue&
IbNetDevice::GetReceiveQueue(uint8_t vl)
{
    return m_rx[vl & 0xF].queue;
}

const IbPortCounters&
IbNetDevice::GetCounters() const
{
    return m_counters;
}

IbPortCounters&
IbNetDevice::GetCountersForUpdate()
{
    return m_counters;
}

uint32_t
IbNetDevice::GetReceiveBufferBlocks() const
{
    return m_vlBufferBytes / kIbCreditBlockBytes;
}

uint32_t
IbNetDevice::GetReceiveBufferUsed(uint8_t vl) const
{
    return m_rx[vl & 0xF].queue.usedBlocks;
}

uint32_t
IbNetDevice::GetMaxReceiveBufferUsed(uint8_t vl) const
{
    return m_rx[vl & 0xF].maxUsed;
}

uint16_t
IbNetDevice::GetFctbs(uint8_t vl) const
{
    return m_tx[vl & 0xF].fctbs;
}

uint16_t
IbNetDevice::GetFccl(uint8_t vl)
{
    ApplyStashedFlowControl(vl & 0xF);
    return m_tx[vl & 0xF].fccl;
}

Time
IbNetDevice::GetCreditStallTime(uint8_t vl) const
{
    return PicoSeconds(m_tx[vl & 0xF].stallTotalPs);
}

uint64_t
IbNetDevice::GetDropCount(IbDropReason r) const
{
    return m_drops[static_cast<int>(r)];
}

uint64_t
IbNetDevice::GetFlowControlPacketsSent() const
{
    CatchUpLinkForRead();
    return m_fcSent;
}

uint64_t
IbNetDevice::GetFlowControlStashed() const
{
    CatchUpLinkForRead();
    return m_fcStashed;
}

uint64_t
IbNetDevice::GetLazyRefreshes() const
{
    CatchUpLinkForRead();
    return m_lazyRefreshes;
}

uint64_t
IbNetDevice::GetLazyRefreshesSkipped() const
{
    CatchUpLinkForRead();
    return m_lazySkipped;
}

} // namespace ns3
