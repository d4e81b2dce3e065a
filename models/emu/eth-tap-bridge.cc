#include "eth-tap-bridge.h"

#include "emu-realtime-simulator-impl.h"

#include "ns3/boolean.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EthTapBridge");
NS_OBJECT_ENSURE_REGISTERED(EthTapBridge);

TypeId
EthTapBridge::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EthTapBridge")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<EthTapBridge>()
            .AddAttribute("RxRingFrames",
                          "Reader-thread mode (a simulator other than EmuRealtimeSimulatorImpl): "
                          "frames the host sent that the simulator has not taken yet (the "
                          "NIC's receive ring); beyond it frames are dropped and counted.",
                          UintegerValue(1024),
                          MakeUintegerAccessor(&EthTapBridge::m_rxRingFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("RxBatchFrames",
                          "Frames read from the TAP at most per poll of the simulation thread "
                          "(EmuRealtimeSimulatorImpl), before the model's events get a turn.",
                          UintegerValue(64),
                          MakeUintegerAccessor(&EthTapBridge::m_rxBatchFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("InlineBurst",
                          "Frames for the host that the simulation thread writes itself within "
                          "100 us; beyond, they go to the writer thread (merged writes, "
                          "ReceiveCoalescing, always do).",
                          UintegerValue(4),
                          MakeUintegerAccessor(&EthTapBridge::m_inlineBurst),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("TxRingFrames",
                          "Writes for the host (a frame, or a merge of segments) that may wait "
                          "for the writer thread; beyond, they are dropped and their frames "
                          "counted.",
                          UintegerValue(1024),
                          MakeUintegerAccessor(&EthTapBridge::m_txRingFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MirrorModelFrames",
                          "Whether the RoCEv2 frames the host's simulated HCA sends and "
                          "receives are also written to the TAP (marked so that the kernel "
                          "drops them), so that tcpdump in the host sees the host's RDMA traffic "
                          "as on a real RoCE NIC's interface: Never, WhenCaptured (while a packet "
                          "socket is open in the host, i.e. something captures; each copy costs "
                          "a TAP write), Always.",
                          EnumValue(static_cast<int>(MirrorMode::WhenCaptured)),
                          MakeEnumAccessor(&EthTapBridge::m_mirrorMode),
                          MakeEnumChecker(static_cast<int>(MirrorMode::Never),
                                          "Never",
                                          static_cast<int>(MirrorMode::WhenCaptured),
                                          "WhenCaptured",
                                          static_cast<int>(MirrorMode::Always),
                                          "Always"))
            .AddAttribute("ChecksumOffload",
                          "Offer the host's kernel transmit checksum offload (TUN_F_CSUM): it "
                          "may hand frames whose TCP/UDP checksum is partial "
                          "(VIRTIO_NET_HDR_F_NEEDS_CSUM), which the bridge completes before the "
                          "port sees them. Needs a TAP with IFF_VNET_HDR.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&EthTapBridge::m_checksumOffload),
                          MakeBooleanChecker())
            .AddAttribute("SegmentationOffload",
                          "Offer TCP segmentation offload for IPv4 (TUN_F_TSO4, TUN_F_TSO_ECN): "
                          "the kernel hands TCP frames of up to 64 KB, which the bridge cuts "
                          "into wire-size segments as the kernel's GSO would. Needs "
                          "ChecksumOffload.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&EthTapBridge::m_segmentationOffload),
                          MakeBooleanChecker())
            .AddAttribute("ReceiveCoalescing",
                          "Merge consecutive in-order TCP segments of one flow that the port "
                          "delivers for the host into one GSO write (the kernel's GRO rules), "
                          "so the receiving kernel runs its TCP once per merge instead of once "
                          "per segment. Needs the emulation simulator (EmuRealtimeSimulatorImpl).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&EthTapBridge::m_receiveCoalescing),
                          MakeBooleanChecker())
            .AddAttribute("CoalesceHoldTime",
                          "Wall time a segment may be held back for merging at most (it is "
                          "written by then even if more of its flow is about to arrive).",
                          TimeValue(MicroSeconds(50)),
                          MakeTimeAccessor(&EthTapBridge::m_holdTime),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("CoalesceIdleGap",
                          "A held merge is written as soon as the simulator has caught up with "
                          "the wall clock and its next event is due later than this (wall time): "
                          "no further segment can come sooner.",
                          TimeValue(MicroSeconds(10)),
                          MakeTimeAccessor(&EthTapBridge::m_idleGap),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("FromHost",
                            "A wire frame the host's kernel sent (bytes, length), when the "
                            "simulator takes it: as read from the TAP, or one segment of a TSO "
                            "frame, with its checksums complete.",
                            MakeTraceSourceAccessor(&EthTapBridge::m_fromHostTrace),
                            "ns3::EthTapBridge::BytesCallback")
            .AddTraceSource("ToHost",
                            "A wire frame for the host's kernel (bytes, length), before it is "
                            "written to the TAP alone or merged with others of its flow.",
                            MakeTraceSourceAccessor(&EthTapBridge::m_toHostTrace),
                            "ns3::EthTapBridge::BytesCallback");
    return tid;
}

EthTapBridge::EthTapBridge()
    : m_coalescer([this](std::vector<uint8_t>& b, uint32_t frames) { m_tap.Write(b, frames); })
{
}

namespace
{
int64_t
WallNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
} // namespace

bool
EthTapBridge::NeedsVnetHeader() const
{
    return m_checksumOffload || m_segmentationOffload || m_receiveCoalescing;
}

bool
EthTapBridge::ConfigureOffloads(int tapFd, std::string* why)
{
    // IFF_VNET_HDR is chosen when the TAP is made (TUNSETIFF); ask the device what it has.
    ifreq ifr = {};
    m_vnet = ioctl(tapFd, TUNGETIFF, &ifr) == 0 && (ifr.ifr_flags & IFF_VNET_HDR) != 0;
    if (!m_vnet)
    {
        if (NeedsVnetHeader())
        {
            NS_LOG_WARN("the TAP has no IFF_VNET_HDR: no offloads");
        }
        return true;
    }
    if (m_segmentationOffload && !m_checksumOffload)
    {
        // The kernel honours TSO only with checksum offload (tun's set_offload).
        *why = "SegmentationOffload needs ChecksumOffload";
        return false;
    }
    int hdrSize = static_cast<int>(VirtioNetHeader::kSize);
    unsigned offloads = 0;
    if (m_checksumOffload)
    {
        offloads |= TUN_F_CSUM;
    }
    if (m_segmentationOffload)
    {
        offloads |= TUN_F_TSO4 | TUN_F_TSO_ECN;
    }
    if (ioctl(tapFd, TUNSETVNETHDRSZ, &hdrSize) != 0 || ioctl(tapFd, TUNSETOFFLOAD, offloads) != 0)
    {
        *why = std::string("cannot set the TAP's offloads: ") + std::strerror(errno);
        return false;
    }
    auto emu = EmuRealtimeSimulatorImpl::Current();
    m_loop = PeekPointer(emu);
    m_coalescing = m_receiveCoalescing && emu;
    m_holdNs = m_holdTime.GetNanoSeconds();
    m_idleGapNs = m_idleGap.GetNanoSeconds();
    if (emu)
    {
        m_idleHook =
            emu->AddIdleHook([this](int64_t untilNextNs) { return OnIdle(untilNextNs); });
    }
    return true;
}

bool
EthTapBridge::OnIdle(int64_t untilNextNs)
{
    if (!m_heldBack.empty())
    {
        ReleaseHeldBack();
    }
    if (m_coalescer.HasPending())
    {
        m_lastWallNs = WallNs();
        m_coalescer.FlushIfDue(m_lastWallNs, untilNextNs, m_idleGapNs, m_holdNs);
    }
    m_idleArmed = !m_heldBack.empty() || m_coalescer.HasPending();
    return m_idleArmed;
}

void
EthTapBridge::ArmIdle()
{
    // Once until OnIdle says there is nothing left: a busy bridge offers a merge every
    // segment, and the simulator's list of armed hooks is searched on each arming.
    if (m_idleHook != 0 && !m_idleArmed)
    {
        m_idleArmed = true;
        if (auto emu = EmuRealtimeSimulatorImpl::Current())
        {
            emu->ArmIdleHook(m_idleHook);
        }
    }
}

void
EthTapBridge::ReleaseHeldBack()
{
    if (!m_port || m_port->GetTxQueueRoom(m_heldBackClass) < m_heldBackSegments)
    {
        return;
    }
    std::vector<uint8_t> bytes;
    bytes.swap(m_heldBack);
    m_tap.AddFramesFromHost(Segment(bytes.data(), static_cast<uint32_t>(bytes.size())));
    bytes.swap(m_heldBack);
    m_heldBack.clear(); // keeps its capacity for the next one
    m_tap.PauseReading(false);
}

EthTapBridge::~EthTapBridge()
{
    Stop();
}

void
EthTapBridge::DoDispose()
{
    Stop();
    if (m_port)
    {
        m_port->SetEthReceiveCallback(EthNetDevice::EthReceiveCallback());
    }
    m_port = nullptr;
    m_modelFrame = EthNetDevice::EthReceiveCallback();
    Object::DoDispose();
}

bool
EthTapBridge::Start(Ptr<EthNetDevice> port, int tapFd, std::string* why)
{
    m_port = port;
    port->SetEthReceiveCallback(MakeCallback(&EthTapBridge::ToHost, this));
    if (m_mirrorMode != static_cast<int>(MirrorMode::Never))
    {
        port->TraceConnectWithoutContext("Tx", MakeCallback(&EthTapBridge::MirrorTx, this));
    }
    TapPortConfig config;
    config.rxRingFrames = m_rxRingFrames;
    config.rxBatchFrames = m_rxBatchFrames;
    config.inlineBurst = m_inlineBurst;
    config.txRingFrames = m_txRingFrames;
    if (!ConfigureOffloads(tapFd, why))
    {
        close(tapFd);
        return false;
    }
    const uint32_t context = port->GetNode() ? port->GetNode()->GetId() : Simulator::NO_CONTEXT;
    return m_tap.Start(tapFd,
                       context,
                       config,
                       [this](const uint8_t* b, uint32_t n) { return FromHost(b, n); },
                       why);
}

void
EthTapBridge::Stop()
{
    if (m_idleHook != 0)
    {
        if (auto emu = EmuRealtimeSimulatorImpl::Current())
        {
            emu->RemoveIdleHook(m_idleHook);
        }
        m_idleHook = 0;
        m_idleArmed = false;
    }
    m_coalescer.Flush();
    m_tap.Stop();
    if (m_probeFd >= 0)
    {
        close(m_probeFd);
        m_probeFd = -1;
    }
}

uint32_t
EthTapBridge::FromHost(const uint8_t* bytes, uint32_t length)
{
    if (!m_port)
    {
        return 0; // disposed while the frame was on its way
    }
    if (!m_vnet)
    {
        SendToPort(bytes, length);
        return 1;
    }
    // A NIC whose transmit ring cannot take a whole TSO frame stops its queue instead of
    // dropping part of it: the read is held, and the TAP is not read until the port has room,
    // so the host's kernel queues (and its TCP slows down) as behind a real NIC.
    uint8_t tc = 0;
    const uint32_t needed = m_tap.IsPolled() ? TapSegmenter::CountTsoSegments(bytes, length, &tc) : 0;
    if (needed > 0 && needed <= m_port->GetTxQueueFrames() && needed > m_port->GetTxQueueRoom(tc))
    {
        m_heldBack.assign(bytes, bytes + length);
        m_heldBackSegments = needed;
        m_heldBackClass = tc;
        m_tsoHeldBack++;
        m_tap.PauseReading(true);
        ArmIdle(); // released from the idle hook when the port has room
        return 0; // counted when sent
    }
    return Segment(bytes, length);
}

uint32_t
EthTapBridge::Segment(const uint8_t* bytes, uint32_t length)
{
    uint32_t segments = 0;
    const TapOffloadError e = m_segmenter.Process(
        bytes,
        length,
        [this](const uint8_t* f, uint32_t n) { SendToPort(f, n); },
        &segments,
        &m_checksumsFilled);
    if (e != TapOffloadError::None)
    {
        // Counted as one frame refused, as a NIC counts a descriptor it cannot use.
        NS_LOG_DEBUG("frame from the host refused: " << TapOffloadErrorName(e));
        m_offloadRefused++;
        return 1;
    }
    if ((bytes[1] & ~VirtioNetHeader::kGsoEcn) == VirtioNetHeader::kGsoTcpV4)
    {
        m_gsoFromHost++;
        m_segmentsFromGso += segments;
    }
    return segments;
}

void
EthTapBridge::SendToPort(const uint8_t* frame, uint32_t length)
{
    m_fromHostTrace(frame, length);
    if (m_port->SendFromHost(frame, length))
    {
        m_sent++;
    }
    else
    {
        m_refused++;
    }
}

void
EthTapBridge::WriteFrame(const uint8_t* frame, size_t length)
{
    if (!m_vnet)
    {
        m_tap.Write(frame, length);
        return;
    }
    m_vnetScratch.resize(VirtioNetHeader::kSize + length);
    VirtioNetHeader().WriteTo(m_vnetScratch.data());
    std::memcpy(m_vnetScratch.data() + VirtioNetHeader::kSize, frame, length);
    m_tap.Write(m_vnetScratch.data(), m_vnetScratch.size());
}

void
EthTapBridge::ToHost(Ptr<EthNetDevice> port, const EthFrame& frame)
{
    if (frame.kind != EthFrameKind::Verbatim)
    {
        m_notForKernel++;
        if (frame.kind == EthFrameKind::Udp && MirrorWanted())
        {
            Mirror(frame, false);
        }
        if (!m_modelFrame.IsNull())
        {
            m_modelFrame(port, frame);
        }
        return;
    }
    frame.Materialize(m_scratch, false);
    m_toHostTrace(m_scratch.data(), static_cast<uint32_t>(m_scratch.size()));
    if (!m_coalescing)
    {
        WriteFrame(m_scratch.data(), m_scratch.size());
        return;
    }
    // The wall clock is read for a new merge and every 8th segment (a clock read per segment
    // cost 5 % of the daemon): a merge's start is stamped no later than it began, so the hold
    // bound errs on the short side. While the model lags the idle hook runs only every 100 us,
    // so the hold bound is also kept here.
    if (!m_coalescer.HasPending() || ++m_offersSinceClock >= 8)
    {
        m_offersSinceClock = 0;
        m_lastWallNs = WallNs();
    }
    m_coalescer.Offer(m_scratch.data(), static_cast<uint32_t>(m_scratch.size()), m_lastWallNs);
    if (m_coalescer.HasPending() && m_offersSinceClock == 0)
    {
        m_coalescer.FlushIfDue(m_lastWallNs, 0, m_idleGapNs, m_holdNs);
    }
    if (m_coalescer.HasPending())
    {
        ArmIdle(); // flushed from the idle hook within its bounds
    }
}

void
EthTapBridge::MirrorTx(const EthFrame& frame)
{
    if (frame.kind == EthFrameKind::Udp && MirrorWanted())
    {
        Mirror(frame, true);
    }
}

void
EthTapBridge::SetCaptureProbe(int procNetPacketFd)
{
    if (m_probeFd >= 0)
    {
        close(m_probeFd);
    }
    m_probeFd = procNetPacketFd;
}

bool
EthTapBridge::MirrorWanted()
{
    const auto mode = static_cast<MirrorMode>(m_mirrorMode);
    if (mode != MirrorMode::WhenCaptured)
    {
        return mode == MirrorMode::Always;
    }
    if (m_probeFd < 0)
    {
        return false;
    }
    // The host's list of packet sockets (/proc/net/packet of its namespace), looked at no more
    // than every 20 ms of wall clock: a header line, then one line per open socket. The clock
    // is the event loop's reading (a clock read of its own for every frame cost 2 %).
    const auto now = m_loop ? m_loop->WallClockAtEvent() : std::chrono::steady_clock::now();
    if (now - m_lastProbe >= std::chrono::milliseconds(20))
    {
        m_lastProbe = now;
        char buf[4096];
        const ssize_t n = pread(m_probeFd, buf, sizeof(buf) - 1, 0);
        int lines = 0;
        for (ssize_t i = 0; i < n; ++i)
        {
            lines += buf[i] == '\n';
        }
        m_captured = lines > 1;
    }
    return m_captured;
}

void
EthTapBridge::Mirror(const EthFrame& frame, bool transmitted)
{
    // The host's kernel must see these frames for tcpdump but not act on them, as a RoCE NIC's
    // own traffic never reaches the kernel's UDP. A frame the HCA sent is addressed to another
    // MAC, so the kernel treats it as another host's (PACKET_OTHERHOST) and drops it before IP;
    // one for this host's HCA goes to UDP port 4791, which the daemon holds open in the
    // namespace (as the kernel's soft-RoCE driver does) and drains.
    frame.Materialize(m_mirrorScratch, false);
    WriteFrame(m_mirrorScratch.data(), m_mirrorScratch.size());
    (transmitted ? m_mirroredTx : m_mirroredRx)++;
}

EthTapBridgeCounters
EthTapBridge::GetCounters() const
{
    EthTapBridgeCounters c;
    static_cast<TapPortCounters&>(c) = m_tap.GetCounters();
    c.sentToFabric = m_sent;
    c.refusedByPort = m_refused;
    c.notForKernel = m_notForKernel;
    c.mirroredTx = m_mirroredTx;
    c.mirroredRx = m_mirroredRx;
    c.checksumOffload = m_vnet && m_checksumOffload;
    c.segmentationOffload = m_vnet && m_segmentationOffload;
    c.receiveCoalescing = m_coalescing;
    c.gsoFromHost = m_gsoFromHost;
    c.segmentsFromGso = m_segmentsFromGso;
    c.checksumsFilled = m_checksumsFilled;
    c.offloadRefused = m_offloadRefused;
    c.tsoHeldBack = m_tsoHeldBack;
    const TapCoalescerCounters& k = m_coalescer.GetCounters();
    c.coalescedWrites = k.coalescedWrites;
    c.coalescedSegments = k.coalescedSegments;
    c.flushIdle = k.flushIdle;
    c.flushHold = k.flushHold;
    return c;
}

} // namespace ns3
