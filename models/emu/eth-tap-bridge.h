// A Linux TAP device bridged to a simulated Ethernet host port: the kernel IP stack of a real
// host (a network namespace) sends and receives through the simulated NIC, so ARP, ICMP, TCP
// and UDP from ordinary programs cross the simulated switches in real time.
#ifndef CNUAS_ETH_TAP_BRIDGE_H
#define CNUAS_ETH_TAP_BRIDGE_H

#include "tap-offload.h"
#include "tap-port.h"

#include "models/roce/eth-net-device.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

class EmuRealtimeSimulatorImpl;

/// What a bridge counted since it started: the TAP's side, and what the port made of it.
struct EthTapBridgeCounters : TapPortCounters
{
    uint64_t sentToFabric = 0;  ///< frames from the host accepted by the simulated port
    uint64_t refusedByPort = 0; ///< refused by the port (malformed, MTU, queue full; its drops)
    uint64_t notForKernel = 0;  ///< frames the port received that were the model's own traffic
    uint64_t mirroredTx = 0;    ///< the HCA's frames copied to the TAP for tcpdump (sent)
    uint64_t mirroredRx = 0;    ///< (received)
    // offloads (docs/emulation.md §2.1)
    bool checksumOffload = false;   ///< the TAP may hand frames with partial checksums
    bool segmentationOffload = false; ///< ... and TSO frames of up to 64 KB
    bool receiveCoalescing = false; ///< TCP segments for the host are merged into GSO writes
    uint64_t gsoFromHost = 0;       ///< reads that held a TSO frame
    uint64_t segmentsFromGso = 0;   ///< wire frames cut from them
    uint64_t checksumsFilled = 0;   ///< transport checksums computed for the kernel
    uint64_t offloadRefused = 0;    ///< reads refused before the port (bad virtio header/GSO)
    uint64_t tsoHeldBack = 0;       ///< TSO frames held until the port's queue had room
    uint64_t coalescedWrites = 0;   ///< writes to the host that carried merged segments
    uint64_t coalescedSegments = 0; ///< segments in them
    uint64_t flushIdle = 0;         ///< merged writes flushed as the simulator went idle
    uint64_t flushHold = 0;         ///< ... as the oldest segment reached CoalesceHoldTime
};

/**
 * \brief Bridges a TAP device (IFF_TAP | IFF_NO_PI, optionally IFF_VNET_HDR with offloads) to
 * an EthNetDevice host port.
 *
 * Offloads (attributes ChecksumOffload, SegmentationOffload, ReceiveCoalescing; they need a
 * TAP opened with IFF_VNET_HDR, see NeedsVnetHeader): the bridge is the NIC's offload engine.
 * Frames the kernel hands with a partial checksum are completed, TSO frames are cut into
 * wire-size segments (TapSegmenter) before the port sees them; TCP segments the port delivers
 * in a row are merged into one GSO write (TapCoalescer), flushed when the simulator goes idle
 * (nothing due within CoalesceIdleGap) and never held longer than CoalesceHoldTime of wall
 * time. The model, its traces and pcaps see only wire frames with correct checksums.
 *
 * Host to fabric: each frame the host's kernel sends on the TAP (read as TapPort describes)
 * goes to EthNetDevice::SendFromHost, which parses it and queues it like any frame of its class;
 * what the port refuses is counted under the port's drop reason.
 *
 * Fabric to host: every frame of the host's kernel (EthFrameKind::Verbatim) that the port
 * receives is written to the TAP, with the switches' changes (MACs, TTL, ECN) written back, so
 * the namespace's kernel receives it and tcpdump inside the namespace sees it. Frames the model
 * itself made (RoCEv2 from the simulated HCA) are passed to the ModelFrame callback instead
 * (the verbs bridge), never to the kernel, whose UDP would answer port 4791 with ICMP
 * unreachable.
 */
class EthTapBridge : public Object
{
  public:
    static TypeId GetTypeId();
    EthTapBridge();
    ~EthTapBridge() override;

    /**
     * Takes `tapFd` (an open TAP device; the bridge closes it) and starts bridging it to `port`.
     * Call from the simulation thread before the simulator runs. Returns false with the reason
     * in *why if it cannot start.
     */
    bool Start(Ptr<EthNetDevice> port, int tapFd, std::string* why);
    /// Stops the threads and closes the TAP. Idempotent; called by Dispose.
    void Stop();
    /// Whether the attributes ask for offloads, so the TAP must be opened with IFF_VNET_HDR.
    bool NeedsVnetHeader() const;
    /// Counters (simulation thread, or after the simulator stopped).
    EthTapBridgeCounters GetCounters() const;
    /// Frames waiting between a reader thread and the simulator now (reader-thread mode).
    uint32_t GetPendingFrames() const { return m_tap.GetPendingFrames(); }
    Ptr<EthNetDevice> GetPort() const { return m_port; }
    /// When the HCA's RoCEv2 frames are copied to the TAP (attribute MirrorModelFrames).
    enum class MirrorMode : int
    {
        Never = 0,
        WhenCaptured = 1,
        Always = 2,
    };

    /// For MirrorModelFrames=WhenCaptured: a descriptor of /proc/net/packet opened inside the
    /// host's namespace (the bridge closes it). Without one, WhenCaptured mirrors nothing.
    void SetCaptureProbe(int procNetPacketFd);
    /// Receives the frames the port got that the model made (not the kernel's).
    void SetModelFrameCallback(EthNetDevice::EthReceiveCallback cb) { m_modelFrame = cb; }

  protected:
    void DoDispose() override;

  private:
    /// Simulation thread: one read from the host; returns the wire frames it made.
    uint32_t FromHost(const uint8_t* bytes, uint32_t length);
    /// One wire frame from the host to the port.
    void SendToPort(const uint8_t* frame, uint32_t length);
    /// Writes a frame for the host, with an empty virtio header when the TAP has one.
    void WriteFrame(const uint8_t* frame, size_t length);
    /// Sets up the TAP's offloads; false with the reason.
    bool ConfigureOffloads(int tapFd, std::string* why);
    /// The idle hook: releases a held-back read and flushes a due merge; true while either
    /// is still held (the hook stays armed).
    bool OnIdle(int64_t untilNextNs);
    /// Arms the idle hook: something is held that OnIdle must see to.
    void ArmIdle();
    /// Cuts one read into wire frames for the port; returns how many.
    uint32_t Segment(const uint8_t* bytes, uint32_t length);
    /// Sends the held-back TSO frame if the port's queue has room for it now.
    void ReleaseHeldBack();
    /// Simulation thread: one frame the port received.
    void ToHost(Ptr<EthNetDevice> port, const EthFrame& frame);
    /// Simulation thread: the port started sending a frame (its "Tx" trace).
    void MirrorTx(const EthFrame& frame);
    void Mirror(const EthFrame& frame, bool transmitted);
    bool MirrorWanted();

    Ptr<EthNetDevice> m_port;
    uint32_t m_rxRingFrames = 1024; ///< attributes, copied into the TapPort's configuration
    uint32_t m_rxBatchFrames = 64;
    uint32_t m_inlineBurst = 4;
    uint32_t m_txRingFrames = 1024;
    TapPort m_tap;
    bool m_checksumOffload = true; ///< attributes
    bool m_segmentationOffload = true;
    bool m_receiveCoalescing = true;
    Time m_holdTime;
    Time m_idleGap;
    bool m_vnet = false;           ///< the TAP has IFF_VNET_HDR: every read and write has one
    bool m_coalescing = false;     ///< in effect (needs the emulation simulator's idle hook)
    uint64_t m_idleHook = 0;
    bool m_idleArmed = false; ///< the hook is armed (OnIdle's last answer, or ArmIdle since)
    int64_t m_holdNs = 0;
    int64_t m_idleGapNs = 0;
    TapSegmenter m_segmenter;
    TapCoalescer m_coalescer;
    uint64_t m_gsoFromHost = 0;
    uint64_t m_segmentsFromGso = 0;
    uint64_t m_checksumsFilled = 0;
    uint64_t m_offloadRefused = 0;
    std::vector<uint8_t> m_vnetScratch;
    std::vector<uint8_t> m_heldBack;  ///< a TSO read waiting for room on the port (reading paused)
    uint32_t m_heldBackSegments = 0;
    uint8_t m_heldBackClass = 0;
    uint64_t m_tsoHeldBack = 0;
    uint32_t m_offersSinceClock = 0;
    int64_t m_lastWallNs = 0;
    uint64_t m_sent = 0;
    uint64_t m_refused = 0;
    uint64_t m_notForKernel = 0;
    uint64_t m_mirroredTx = 0;
    uint64_t m_mirroredRx = 0;
    int m_mirrorMode = 1; ///< a MirrorMode (EnumValue holds int)
    int m_probeFd = -1;
    bool m_captured = false;
    std::chrono::steady_clock::time_point m_lastProbe{};
    /// The emulation's event loop when Start found one (it outlives the events that read it).
    EmuRealtimeSimulatorImpl* m_loop = nullptr;
    std::vector<uint8_t> m_mirrorScratch;
    std::vector<uint8_t> m_scratch;
    EthNetDevice::EthReceiveCallback m_modelFrame;
    TracedCallback<const uint8_t*, uint32_t> m_fromHostTrace;
    TracedCallback<const uint8_t*, uint32_t> m_toHostTrace;
};

} // namespace ns3

#endif
