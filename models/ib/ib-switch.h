// An InfiniBand switch: N ports, per-port per-VL input buffers, a crossbar, and forwarding by
// destination LID through a linear forwarding table (IBA vol. 1 §18.2).
#ifndef CNUAS_IB_SWITCH_H
#define CNUAS_IB_SWITCH_H

#include "ib-cc-switch-marker.h"
#include "ib-frame.h"
#include "ib-link-rate.h"

#include "ns3/callback.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <vector>

namespace ns3
{

class IbNetDevice;
class Node;

/// How a switch forwards: as soon as the header is in (the usual IB switch) or after the whole
/// packet is in.
enum class IbForwardingMode : uint8_t
{
    CutThrough,
    StoreAndForward,
};

/**
 * \brief The relay function of an InfiniBand switch.
 *
 * Aggregated to a Node that holds the switch's IbNetDevice ports. A packet arriving on port i,
 * VL v waits in i's receive buffer for v (credit-controlled by the upstream port) until it is the
 * head of that buffer and its output port and output VL can take it: head-of-line blocking, as
 * input-buffered IB switches have. The output is chosen by the DLID's LFT entry, the output VL
 * by the SL-to-VL table for the (input, output) port pair. The switch never drops a data packet
 * for lack of buffer: credits stop the upstream port instead, and congestion spreads back.
 */
class IbSwitch : public Object
{
  public:
    static TypeId GetTypeId();
    IbSwitch();
    ~IbSwitch() override;

    /// Adds a port; ports are numbered from 1 in the order added.
    uint8_t AddPort(Ptr<IbNetDevice> port);
    uint8_t GetNPorts() const;
    /// Port 1..N.
    Ptr<IbNetDevice> GetPort(uint8_t number) const;

    // ---- what a subnet manager programs (SwitchInfo, LinearForwardingTable, SLtoVL) ------
    /// The switch's own LID (that of management port 0, IBA vol. 1 §18.2.4.1).
    uint16_t GetLid() const;
    void SetLid(uint16_t lid);
    uint8_t GetLmc() const;
    void SetLmc(uint8_t lmc);
    uint16_t GetLinearFdbCap() const;
    uint16_t GetLinearFdbTop() const;
    void SetLinearFdbTop(uint16_t top);
    /// Sets LFT block `block` (LIDs 64*block .. 64*block+63) as a SubnSet(LinearForwardingTable)
    /// does (§14.2.5.10); entries are port numbers, 255 = no route. False if out of range.
    bool SetLftBlock(uint16_t block, const uint8_t entries[64]);
    void GetLftBlock(uint16_t block, uint8_t entries[64]) const;
    /// LFT entry for one LID (255 = none).
    uint8_t GetLftEntry(uint16_t lid) const;
    /// SLtoVLMappingTable for packets from inPort leaving by outPort (§7.6.6).
    void SetSlToVl(uint8_t inPort, uint8_t outPort, const std::array<uint8_t, 16>& table);
    uint8_t MapSlToVl(uint8_t inPort, uint8_t outPort, uint8_t sl) const;
    uint64_t GetNodeGuid() const;
    void SetNodeGuid(uint64_t guid);

    // ---- multicast: MulticastForwardingTable (§14.2.5.12), replication (§18.2.4.3) --------
    /// The first multicast LID (§4.1.1: 0xC000 .. 0xFFFE; 0xFFFF is the permissive LID).
    static constexpr uint16_t kMulticastLidBase = 0xC000;
    /// True for a LID in the multicast range.
    static bool IsMulticastLid(uint16_t lid)
    {
        return lid >= kMulticastLidBase && lid != IbLrhHeader::kPermissiveLid;
    }
    /// MLIDs the MFT holds (SwitchInfo.MulticastFDBCap): 0xC000 .. 0xC000 + cap - 1.
    uint16_t GetMulticastFdbCap() const;
    uint16_t GetMulticastFdbTop() const;
    /// False (nothing changed) for a top beyond the table or below 0xBFFF (which says no entry
    /// is in use); 0 is taken too (the field not in use).
    bool SetMulticastFdbTop(uint16_t top);
    /**
     * Sets MFT block `block` (MLIDs 0xC000 + 32 * block ..) at port-mask `position` (ports
     * 16 * position .. 16 * position + 15) as a SubnSet(MulticastForwardingTable) does; bit i of
     * an entry is port 16 * position + i. False if out of range (block beyond the cap, position
     * beyond the ports).
     */
    bool SetMftBlock(uint16_t block, uint8_t position, const uint16_t masks[32]);
    /// False if out of range (`masks` then all zeros).
    bool GetMftBlock(uint16_t block, uint8_t position, uint16_t masks[32]) const;
    /// True if port `port` is in the MFT entry of `mlid`.
    bool IsMftMember(uint16_t mlid, uint8_t port) const;
    /**
     * Where a multicast frame that came in on `inPort` goes after output `after` (0: its first
     * output): the next port of its MFT entry, in port order, that is not `inPort`, is up and
     * Active and runs the VL the frame's SL maps to there (set in `outVl`); 0 when none is left.
     */
    uint8_t NextMulticastOutput(const IbFrame& frame, uint8_t inPort, uint8_t after,
                                uint8_t& outVl) const;
    /**
     * IbNetDevice, as the head of `inPort`'s receive queue leaves by its output: if the
     * multicast packet has another output after this one, a copy for this output (returned, to
     * be sent in its place) while the head stays queued, retargeted at the next output; null
     * when this output is its last, and the head itself goes. Replication is serial: the
     * packet holds its input buffer until its last copy has left (the order of the copies is
     * the switch's to choose).
     */
    IbFrame* SplitMulticastCopy(IbFrame* head, uint8_t inPort);
    /// Copies of multicast packets made (one per output beyond the first).
    uint64_t GetMulticastCopies() const;

    /// Packets for the switch itself (DLID = its LID, or directed-route SMPs) go here: the
    /// subnet management agent of a later layer, once the packet's last byte is in. The frame
    /// is valid during the call only (the switch frees it after): the agent reads its bytes
    /// (IbFrame::CopyBytes) without an ns-3 Packet, as every directed-route SMP comes here at
    /// every switch on its path.
    typedef Callback<void, Ptr<IbNetDevice>, const IbFrame&> ManagementCallback;
    void SetManagementCallback(ManagementCallback cb);

    // ---- used by IbNetDevice ---------------------------------------------------------------
    /// A frame accepted into `in`'s receive buffer: route it and queue it.
    void Forward(IbNetDevice* in, IbFrame* frame);
    /// The head of `queue` changed: register it with its output port.
    void NotifyHeadChanged(IbFrameQueue* queue);
    /**
     * Delay in picoseconds from the upstream port's transmission start to the arrival event
     * here (`txPs` the packet's wire time, `propagationPs` the cable's). `headPs` is the input
     * link's time for the bytes a cut-through decision needs (CutThroughHeadBytes(
     * delimiterBytes) at the link's rate), worked out by the caller, which keeps it from packet
     * to packet.
     */
    int64_t ArrivalDelayPs(int64_t txPs, int64_t propagationPs, uint32_t bytes,
                           int64_t headPs) const;
    /// What a cut-through decision waits for: the start delimiter and the first header bytes.
    uint32_t CutThroughHeadBytes(uint32_t delimiterBytes) const
    {
        return m_cutThroughBytes + delimiterBytes / 2;
    }

    uint64_t GetForwardedPackets() const;

    // ---- congestion control (IBA vol. 1 annex A10), used when a marker is set --------------
    /// The congestion point: FECN marking of packets leaving congested ports (null: none).
    void SetCcMarker(Ptr<IbCcSwitchMarker> marker);
    Ptr<IbCcSwitchMarker> GetCcMarker() const;
    /// IbNetDevice: a data frame from an input buffer starts leaving by `out` on `vl`.
    void NotifyDeparture(IbFrame* frame, IbNetDevice* out, uint8_t vl);
    /// IbNetDevice: a queued data frame was discarded instead of sent.
    void NotifyDiscard(IbFrame* frame);
    /// Data blocks queued in all input buffers for output (port, vl).
    uint32_t GetQueuedBlocks(uint8_t port, uint8_t vl) const;
    /// Data blocks at the heads of input buffers, waiting for output (port, vl): what
    /// congestion control takes as the port VL's output queue.
    uint32_t GetWaitingBlocks(uint8_t port, uint8_t vl) const;
    /// Packets this switch set FECN in.
    uint64_t GetFecnMarked() const;
    /// Forward trace: (packet, input port, output port).
    typedef void (*ForwardCallback)(Ptr<const Packet> packet, uint8_t inPort, uint8_t outPort);

  protected:
    void DoDispose() override;

  private:
    uint32_t& QueuedBlocks(uint8_t port, uint8_t vl);
    uint32_t& WaitingBlocks(uint8_t port, uint8_t vl);
    void AddHead(IbFrame* frame);
    void RemoveHead(IbFrame* frame);
    /// Hands a packet for the switch itself to the management callback (at its tail), then
    /// frees its frame.
    void DeliverToManagement(Ptr<IbNetDevice> in, IbFrame* frame);
    /// Forward() for a multicast DLID: queued for the first output of its MFT entry.
    void ForwardMulticast(IbNetDevice* in, IbFrame* frame);

    std::vector<Ptr<IbNetDevice>> m_ports; ///< index 0 unused (management port)
    std::vector<uint8_t> m_lft;
    /// MFT entries from 0xC000 up, 16 port-mask positions each, grown as far as set.
    std::vector<std::array<uint16_t, 16>> m_mft;
    /// SwitchInfo.MulticastFDBTop: 0, as a switch reports it that does not claim
    /// IsMulticastFDBTopSupported (so an SM leaves it alone, and ibroute -M reads up to the cap).
    uint16_t m_mftTop = 0;
    uint64_t m_multicastCopies = 0;
    uint16_t m_lftTop = 0;
    uint16_t m_lid = 0;
    uint8_t m_lmc = 0;
    uint64_t m_nodeGuid = 0;
    std::vector<std::array<uint8_t, 16>> m_slToVl; ///< [in * (N+1) + out]
    std::vector<bool> m_slToVlSet;                 ///< that pair's table was set
    int m_mode = static_cast<int>(IbForwardingMode::CutThrough); ///< an IbForwardingMode
    /// The Latency attribute, kept in picoseconds (read for every packet-hop).
    int64_t m_latencyPs = 100000;
    void SetLatency(Time latency) { m_latencyPs = latency.GetPicoSeconds(); }
    Time GetLatency() const { return PicoSeconds(m_latencyPs); }
    uint32_t m_cutThroughBytes = 8;
    uint64_t m_forwarded = 0;
    ManagementCallback m_management;
    Ptr<IbCcSwitchMarker> m_ccMarker;
    std::vector<uint32_t> m_outQueued;  ///< [port * 16 + vl] data blocks queued for the output
    std::vector<uint32_t> m_outWaiting; ///< [port * 16 + vl] head blocks waiting for it
    uint64_t m_fecnMarked = 0;
    std::vector<uint8_t> m_markScratch;
    TracedCallback<Ptr<const Packet>, uint8_t, uint8_t> m_forwardTrace; ///< packet, in, out
};

} // namespace ns3

#endif
