#include "ib-switch.h"

#include "ib-crc.h"
#include "ib-net-device.h"
#include "models/common/sim-clock.h"

#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbSwitch");
NS_OBJECT_ENSURE_REGISTERED(IbSwitch);

namespace
{
/// Linear forwarding table size (LinearFDBCap): the unicast LID space 1..0xBFFF (§4.1.3).
constexpr uint16_t kLinearFdbCap = 0xC000;
constexpr uint8_t kNoRoute = 255;
/// MulticastFDBCap: MLIDs 0xC000 .. 0xCFFF, as many as a ConnectX-class switch offers.
constexpr uint16_t kMulticastFdbCap = 0x1000;
} // namespace

TypeId
IbSwitch::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbSwitch")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbSwitch>()
            .AddAttribute("ForwardingMode",
                          "CutThrough starts forwarding once the routing header is in; "
                          "StoreAndForward waits for the whole packet.",
                          EnumValue(static_cast<int>(IbForwardingMode::CutThrough)),
                          MakeEnumAccessor(&IbSwitch::m_mode),
                          MakeEnumChecker(static_cast<int>(IbForwardingMode::CutThrough), "CutThrough",
                                          static_cast<int>(IbForwardingMode::StoreAndForward),
                                          "StoreAndForward"))
            .AddAttribute("Latency",
                          "Port-to-port forwarding latency added to every packet (lookup, "
                          "crossbar), beyond the bytes' own time on the wire.",
                          TimeValue(NanoSeconds(100)),
                          MakeTimeAccessor(&IbSwitch::SetLatency, &IbSwitch::GetLatency),
                          MakeTimeChecker(Seconds(0)))
            .AddAttribute("CutThroughBytes",
                          "Bytes of a packet that must be in before a cut-through switch can "
                          "route it (the LRH carries the DLID).",
                          UintegerValue(8),
                          MakeUintegerAccessor(&IbSwitch::m_cutThroughBytes),
                          MakeUintegerChecker<uint32_t>(1, 4200))
            .AddTraceSource("Forward",
                            "A packet was routed: (packet, input port, output port).",
                            MakeTraceSourceAccessor(&IbSwitch::m_forwardTrace),
                            "ns3::IbSwitch::ForwardCallback");
    return tid;
}

IbSwitch::IbSwitch()
    : m_lft(kLinearFdbCap, kNoRoute)
{
    m_ports.push_back(nullptr);
    m_slToVl.assign(1, std::array<uint8_t, 16>{});
    m_slToVlSet.assign(1, false);
}

IbSwitch::~IbSwitch() = default;

void
IbSwitch::DoDispose()
{
    m_ports.clear();
    m_management = ManagementCallback();
    Object::DoDispose();
}

uint8_t
IbSwitch::AddPort(Ptr<IbNetDevice> port)
{
    NS_ABORT_MSG_IF(m_ports.size() > 254, "IbSwitch: at most 254 ports");
    uint8_t n = static_cast<uint8_t>(m_ports.size());
    m_ports.push_back(port);
    port->SetSwitch(this, n);
    // SL-to-VL tables per (input, output) pair; unset pairs use the default in MapSlToVl. The
    // matrix grows by a row and a column; tables already set keep their (input, output) place.
    const size_t dim = m_ports.size();
    const size_t oldDim = dim - 1;
    std::vector<std::array<uint8_t, 16>> tables(dim * dim, std::array<uint8_t, 16>{});
    std::vector<bool> set(dim * dim, false);
    for (size_t in = 0; in < oldDim; ++in)
    {
        for (size_t out = 0; out < oldDim; ++out)
        {
            tables[in * dim + out] = m_slToVl[in * oldDim + out];
            set[in * dim + out] = m_slToVlSet[in * oldDim + out];
        }
    }
    m_slToVl = std::move(tables);
    m_slToVlSet = std::move(set);
    return n;
}

uint8_t
IbSwitch::GetNPorts() const
{
    return static_cast<uint8_t>(m_ports.size() - 1);
}

Ptr<IbNetDevice>
IbSwitch::GetPort(uint8_t number) const
{
    return number >= 1 && number < m_ports.size() ? m_ports[number] : nullptr;
}

uint16_t
IbSwitch::GetLid() const
{
    return m_lid;
}

void
IbSwitch::SetLid(uint16_t lid)
{
    m_lid = lid;
}

uint8_t
IbSwitch::GetLmc() const
{
    return m_lmc;
}

void
IbSwitch::SetLmc(uint8_t lmc)
{
    m_lmc = lmc & 0x7;
}

uint16_t
IbSwitch::GetLinearFdbCap() const
{
    return kLinearFdbCap;
}

uint16_t
IbSwitch::GetLinearFdbTop() const
{
    return m_lftTop;
}

void
IbSwitch::SetLinearFdbTop(uint16_t top)
{
    m_lftTop = std::min<uint16_t>(top, kLinearFdbCap - 1);
}

bool
IbSwitch::SetLftBlock(uint16_t block, const uint8_t entries[64])
{
    if (uint32_t(block) * 64 >= kLinearFdbCap)
    {
        return false;
    }
    std::memcpy(&m_lft[block * 64], entries, 64);
    return true;
}

void
IbSwitch::GetLftBlock(uint16_t block, uint8_t entries[64]) const
{
    if (uint32_t(block) * 64 >= kLinearFdbCap)
    {
        std::memset(entries, kNoRoute, 64);
        return;
    }
    std::memcpy(entries, &m_lft[block * 64], 64);
}

uint8_t
IbSwitch::GetLftEntry(uint16_t lid) const
{
    return lid < kLinearFdbCap ? m_lft[lid] : kNoRoute;
}

void
IbSwitch::SetSlToVl(uint8_t inPort, uint8_t outPort, const std::array<uint8_t, 16>& table)
{
    size_t dim = m_ports.size();
    if (inPort < dim && outPort < dim)
    {
        m_slToVl[inPort * dim + outPort] = table;
        m_slToVlSet[inPort * dim + outPort] = true;
    }
}

uint8_t
IbSwitch::MapSlToVl(uint8_t inPort, uint8_t outPort, uint8_t sl) const
{
    size_t dim = m_ports.size();
    size_t pair = inPort * dim + outPort;
    if (!m_slToVlSet[pair])
    {
        // Unconfigured: SL s on VL (s mod the output's OperationalVLs).
        return static_cast<uint8_t>((sl & 0xF) % m_ports[outPort]->GetOperationalVls());
    }
    return m_slToVl[pair][sl & 0xF];
}

uint64_t
IbSwitch::GetNodeGuid() const
{
    return m_nodeGuid;
}

void
IbSwitch::SetNodeGuid(uint64_t guid)
{
    m_nodeGuid = guid;
}

uint16_t
IbSwitch::GetMulticastFdbCap() const
{
    return kMulticastFdbCap;
}

uint16_t
IbSwitch::GetMulticastFdbTop() const
{
    return m_mftTop;
}

bool
IbSwitch::SetMulticastFdbTop(uint16_t top)
{
    if (top != 0 && (top < kMulticastLidBase - 1 || top >= kMulticastLidBase + kMulticastFdbCap))
    {
        return false;
    }
    m_mftTop = top;
    return true;
}

bool
IbSwitch::SetMftBlock(uint16_t block, uint8_t position, const uint16_t masks[32])
{
    if (uint32_t(block) * 32 >= kMulticastFdbCap || position >= 16 ||
        uint32_t(position) * 16 >= m_ports.size())
    {
        return false;
    }
    const size_t end = size_t(block) * 32 + 32;
    if (m_mft.size() < end)
    {
        m_mft.resize(end, std::array<uint16_t, 16>{});
    }
    for (size_t i = 0; i < 32; ++i)
    {
        m_mft[size_t(block) * 32 + i][position] = masks[i];
    }
    return true;
}

bool
IbSwitch::GetMftBlock(uint16_t block, uint8_t position, uint16_t masks[32]) const
{
    std::fill(masks, masks + 32, 0);
    if (uint32_t(block) * 32 >= kMulticastFdbCap || position >= 16 ||
        uint32_t(position) * 16 >= m_ports.size())
    {
        return false;
    }
    for (size_t i = 0; i < 32; ++i)
    {
        const size_t entry = size_t(block) * 32 + i;
        masks[i] = entry < m_mft.size() ? m_mft[entry][position] : 0;
    }
    return true;
}

bool
IbSwitch::IsMftMember(uint16_t mlid, uint8_t port) const
{
    if (!IsMulticastLid(mlid) || size_t(mlid - kMulticastLidBase) >= m_mft.size())
    {
        return false;
    }
    return (m_mft[mlid - kMulticastLidBase][port >> 4] >> (port & 0xF)) & 1;
}

uint8_t
IbSwitch::NextMulticastOutput(const IbFrame& frame, uint8_t inPort, uint8_t after,
                              uint8_t& outVl) const
{
    const size_t entry = size_t(frame.dlid) - kMulticastLidBase;
    if (!IsMulticastLid(frame.dlid) || entry >= m_mft.size())
    {
        return 0;
    }
    const std::array<uint16_t, 16>& mask = m_mft[entry];
    for (size_t port = size_t(after) + 1; port < m_ports.size(); ++port)
    {
        if (port == inPort || !((mask[port >> 4] >> (port & 0xF)) & 1))
        {
            continue;
        }
        const Ptr<IbNetDevice>& dev = m_ports[port];
        if (dev->GetPhysState() != IbPhysState::LinkUp ||
            dev->GetPortState() != IbPortState::Active)
        {
            continue; // a member port that is down gets no copy; the others still do
        }
        const uint8_t vl = MapSlToVl(inPort, static_cast<uint8_t>(port), frame.sl);
        if (vl >= dev->GetOperationalVls())
        {
            continue;
        }
        outVl = vl;
        return static_cast<uint8_t>(port);
    }
    return 0;
}

IbFrame*
IbSwitch::SplitMulticastCopy(IbFrame* head, uint8_t inPort)
{
    uint8_t nextVl = 0;
    const uint8_t next = NextMulticastOutput(*head, inPort, head->outPort, nextVl);
    if (next == 0)
    {
        return nullptr;
    }
    IbFrame* copy = IbFramePool::Allocate();
    copy->CopyPacketFrom(*head);
    // The copy leaves now and takes the head's place in the congestion accounting of this
    // output; the head is queued (and, at the head of its buffer, waiting) for the next one.
    head->ccHead = false;
    head->outPort = next;
    head->outVl = nextVl;
    QueuedBlocks(next, nextVl) += head->blocks;
    ++m_multicastCopies;
    m_forwarded++;
    if (!m_forwardTrace.IsEmpty())
    {
        m_forwardTrace(head->ToPacket(), inPort, next);
    }
    return copy;
}

uint64_t
IbSwitch::GetMulticastCopies() const
{
    return m_multicastCopies;
}

void
IbSwitch::SetManagementCallback(ManagementCallback cb)
{
    m_management = cb;
}

void
IbSwitch::DeliverToManagement(Ptr<IbNetDevice> in, IbFrame* frame)
{
    if (!m_management.IsNull())
    {
        m_management(in, *frame);
    }
    IbFramePool::Release(frame);
}

int64_t
IbSwitch::ArrivalDelayPs(int64_t txPs, int64_t propagationPs, uint32_t bytes,
                         int64_t headPs) const
{
    if (m_mode == static_cast<int>(IbForwardingMode::StoreAndForward) || bytes <= m_cutThroughBytes)
    {
        return txPs + propagationPs + m_latencyPs;
    }
    // The routing decision needs the start delimiter and the first header bytes.
    return headPs + propagationPs + m_latencyPs;
}

void
IbSwitch::Forward(IbNetDevice* in, IbFrame* frame)
{
    const uint8_t inPort = in->GetPortNumber();
    const uint16_t dlid = frame->dlid;
    const uint16_t mask = static_cast<uint16_t>(~((1u << m_lmc) - 1));
    const bool isMgmt = frame->vl == kIbManagementVl;
    // A packet that will not be queued gives its receive-buffer space back at once: data
    // blocks (which returns credit upstream) or a VL15 slot.
    auto release = [&]() {
        if (isMgmt)
        {
            in->ReleaseVl15Slot();
        }
        else
        {
            in->ReleaseReceiveBlocks(frame->vl, frame->blocks);
        }
    };

    // For the switch itself (port 0): its LID, or the permissive LID that directed-route SMPs
    // carry (IBA vol. 1 ch. 14: they follow their path, not the LFT; the management agent of a
    // later layer forwards them).
    if (dlid == IbLrhHeader::kPermissiveLid || (m_lid != 0 && (dlid & mask) == (m_lid & mask)))
    {
        const int64_t tailPs = frame->tailArrivalPs;
        release();
        if (m_management.IsNull())
        {
            IbFramePool::Release(frame);
            return;
        }
        // A cut-through arrival event is at the packet's head; the management port takes a
        // packet only once all of it is in. The frame waits with it (out of every queue: its
        // buffer slot is free already), so no copy of its bytes is made.
        const int64_t nowPs = SimClock::NowPs();
        if (tailPs > nowPs)
        {
            Simulator::Schedule(PicoSeconds(tailPs - nowPs), &IbSwitch::DeliverToManagement, this,
                                Ptr<IbNetDevice>(in), frame);
        }
        else
        {
            DeliverToManagement(in, frame);
        }
        return;
    }
    if (IsMulticastLid(dlid))
    {
        ForwardMulticast(in, frame);
        return;
    }
    uint8_t out = dlid <= m_lftTop ? m_lft[dlid] : kNoRoute;
    // IBA vol. 1 §18.2.4.3: a DLID with no valid LFT entry, or one that names a port that does
    // not exist, cannot be relayed (PortRcvSwitchRelayErrors); neither is a packet sent back out
    // of the port it came in on.
    if (out == kNoRoute || out == 0 || out >= m_ports.size() || out == inPort)
    {
        release();
        in->DropFrame(frame, IbDropReason::SwitchRelay);
        return;
    }
    Ptr<IbNetDevice> outDev = m_ports[out];
    uint8_t outVl = isMgmt ? kIbManagementVl : MapSlToVl(inPort, out, frame->sl);
    if (!isMgmt && outVl >= outDev->GetOperationalVls())
    {
        // SL2VL mapping to a VL the output does not run: dropped (§7.6.6, VL15 mapping of a
        // data SL means discard).
        release();
        in->DropFrame(frame, IbDropReason::SwitchRelay);
        return;
    }
    if (outDev->GetPhysState() != IbPhysState::LinkUp ||
        (!isMgmt && outDev->GetPortState() != IbPortState::Active))
    {
        release();
        outDev->DropFrame(frame, IbDropReason::XmitDiscard);
        return;
    }
    frame->outPort = out;
    frame->outVl = outVl;
    if (!isMgmt)
    {
        QueuedBlocks(out, outVl) += frame->blocks;
    }
    m_forwarded++;
    if (!m_forwardTrace.IsEmpty())
    {
        m_forwardTrace(frame->ToPacket(), inPort, out); // only observers pay for a Packet
    }
    IbFrameQueue& q = in->GetReceiveQueue(frame->vl);
    q.frames.push_back(frame);
    if (q.frames.size() == 1)
    {
        if (!isMgmt)
        {
            AddHead(frame);
        }
        outDev->RegisterReadyQueue(&q);
    }
}

void
IbSwitch::ForwardMulticast(IbNetDevice* in, IbFrame* frame)
{
    const uint8_t inPort = in->GetPortNumber();
    uint8_t outVl = 0;
    // Subnet management never travels by multicast (VL15 packets are LID- or directed-routed,
    // §14.2.1); a data packet goes to its MFT entry's ports but the one it came in on.
    const uint8_t out = frame->vl == kIbManagementVl
                            ? 0
                            : NextMulticastOutput(*frame, inPort, 0, outVl);
    if (out == 0)
    {
        if (frame->vl == kIbManagementVl)
        {
            in->ReleaseVl15Slot();
        }
        else
        {
            in->ReleaseReceiveBlocks(frame->vl, frame->blocks);
        }
        in->DropFrame(frame, IbDropReason::SwitchRelay);
        return;
    }
    frame->outPort = out;
    frame->outVl = outVl;
    QueuedBlocks(out, outVl) += frame->blocks;
    m_forwarded++;
    if (!m_forwardTrace.IsEmpty())
    {
        m_forwardTrace(frame->ToPacket(), inPort, out);
    }
    IbFrameQueue& q = in->GetReceiveQueue(frame->vl);
    q.frames.push_back(frame);
    if (q.frames.size() == 1)
    {
        AddHead(frame);
        m_ports[out]->RegisterReadyQueue(&q);
    }
}

void
IbSwitch::NotifyHeadChanged(IbFrameQueue* queue)
{
    if (!queue->frames.empty() && queue->vl != kIbManagementVl)
    {
        AddHead(queue->frames.front());
    }
    if (queue->frames.empty() || queue->readyRegistered)
    {
        return;
    }
    m_ports[queue->frames.front()->outPort]->RegisterReadyQueue(queue);
}

uint64_t
IbSwitch::GetForwardedPackets() const
{
    return m_forwarded;
}

// ---- congestion control (IBA vol. 1 annex A10) -----------------------------------------------

uint32_t&
IbSwitch::QueuedBlocks(uint8_t port, uint8_t vl)
{
    const size_t i = size_t(port) * 16 + (vl & 0xF);
    if (m_outQueued.size() <= i)
    {
        m_outQueued.resize(std::max<size_t>(i + 1, m_ports.size() * 16), 0);
    }
    return m_outQueued[i];
}

uint32_t&
IbSwitch::WaitingBlocks(uint8_t port, uint8_t vl)
{
    const size_t i = size_t(port) * 16 + (vl & 0xF);
    if (m_outWaiting.size() <= i)
    {
        m_outWaiting.resize(std::max<size_t>(i + 1, m_ports.size() * 16), 0);
    }
    return m_outWaiting[i];
}

uint32_t
IbSwitch::GetWaitingBlocks(uint8_t port, uint8_t vl) const
{
    const size_t i = size_t(port) * 16 + (vl & 0xF);
    return i < m_outWaiting.size() ? m_outWaiting[i] : 0;
}

void
IbSwitch::AddHead(IbFrame* frame)
{
    if (!frame->ccHead)
    {
        frame->ccHead = true;
        WaitingBlocks(frame->outPort, frame->outVl) += frame->blocks;
    }
}

void
IbSwitch::RemoveHead(IbFrame* frame)
{
    if (frame->ccHead)
    {
        frame->ccHead = false;
        uint32_t& w = WaitingBlocks(frame->outPort, frame->outVl);
        w -= std::min<uint32_t>(w, frame->blocks);
    }
}

uint32_t
IbSwitch::GetQueuedBlocks(uint8_t port, uint8_t vl) const
{
    const size_t i = size_t(port) * 16 + (vl & 0xF);
    return i < m_outQueued.size() ? m_outQueued[i] : 0;
}

void
IbSwitch::SetCcMarker(Ptr<IbCcSwitchMarker> marker)
{
    m_ccMarker = marker;
}

Ptr<IbCcSwitchMarker>
IbSwitch::GetCcMarker() const
{
    return m_ccMarker;
}

uint64_t
IbSwitch::GetFecnMarked() const
{
    return m_fecnMarked;
}

void
IbSwitch::NotifyDiscard(IbFrame* frame)
{
    if (frame->vl != kIbManagementVl)
    {
        uint32_t& q = QueuedBlocks(frame->outPort, frame->outVl);
        q -= std::min<uint32_t>(q, frame->blocks);
        RemoveHead(frame);
    }
}

void
IbSwitch::NotifyDeparture(IbFrame* frame, IbNetDevice* out, uint8_t vl)
{
    uint32_t& q = QueuedBlocks(frame->outPort, vl);
    q -= std::min<uint32_t>(q, frame->blocks);
    // The port VL's output queue, as annex A10 measures congestion: in this input-buffered
    // switch, the packets at the heads of input buffers that wait for this output (this one
    // included). Packets further back wait for whatever their head waits for; counting them
    // here would mark victims of head-of-line blocking as if they were causing congestion.
    const uint32_t queued = WaitingBlocks(frame->outPort, vl);
    RemoveHead(frame);
    // Only IBA transport packets (LNH 2, 3) have a BTH to carry FECN; raw packets pass.
    if (!m_ccMarker || !frame->HasIcrc())
    {
        return;
    }
    // A victim port cannot send because the next hop is out of buffer: after this packet it
    // has no credit left for another like it.
    const bool victim = out->GetCreditsAvailable(vl) < 2u * frame->blocks;
    if (!m_ccMarker->ShouldMark(frame->outPort,
                                vl,
                                queued,
                                out->GetReceiveBufferBlocks(),
                                victim,
                                frame->blocks))
    {
        return;
    }
    // FECN is bit 7 of BTH byte 4 (annex A10). ICRC masks the BTH Resv8a byte (IBA vol. 1
    // §7.8.1), so the ICRC stays valid; the VCRC covers it and is regenerated per hop anyway
    // (a frame's bytes are materialized with a fresh VCRC when they are needed).
    const uint32_t bthAt = IbLrhHeader::kSize + (frame->lnh == IbLnh::IbaGlobal ? 40 : 0);
    const uint32_t len = frame->bytes;
    if (len < bthAt + 12 + kIbIcrcBytes + kIbVcrcBytes)
    {
        return; // too short to hold a BTH: not an intact IBA packet
    }
    // The BTH is always in the frame record's inline bytes (IbFrame::kInlineBytes): the bit is
    // set in place, whatever the payload is.
    uint8_t& fecnByte = frame->HeadByte(bthAt + 4);
    if (fecnByte & 0x80)
    {
        return; // already marked upstream
    }
    fecnByte |= 0x80;
    if (frame->verifyBytes)
    {
        m_markScratch.resize(len);
        frame->CopyBytes(m_markScratch.data());
        IbStoreVcrc(m_markScratch.data() + len - kIbVcrcBytes,
                    IbComputeVcrc(m_markScratch.data(), len - kIbVcrcBytes));
        frame->StoreBytes(m_markScratch.data(), 0, m_markScratch.data(), len);
    }
    ++m_fecnMarked;
}

} // namespace ns3
