// The management interfaces of one node: the SMI (QP0, VL15, with the directed-route rules of
// IBA vol. 1 §14.2.2) and the GSI (QP1), which hand MADs to the node's agents (SMA, PMA) and to
// a manager application (a subnet manager) running there.
#ifndef CNUAS_IB_MAD_DISPATCHER_H
#define CNUAS_IB_MAD_DISPATCHER_H

#include "ib-mad-packet.h"
#include "ib-smp.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <array>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace ns3
{

struct IbFrame;
class IbNetDevice;
class IbSwitch;
class Node;

/// Why the SMI or GSI of a node discarded a packet (trace source "MadDrop").
enum class IbMadDropReason : uint8_t
{
    NotAMad,          ///< not one 256-byte MAD in a UD SEND Only (length, opcode, LNH)
    SmpNotOnVl15,     ///< QP0 packet on a data VL, or a VL15 packet not for QP0 (§13.5.1)
    WrongClassOnQp0,  ///< QP0 carries only the subnet management classes (§13.5.1)
    BadQkey,          ///< GMP whose Q_Key is not the GSI's 0x80010000 (§13.5.1)
    BadHopPointer,    ///< directed route: hop pointer outside the rules of §14.2.2
    BadHopCount,      ///< directed route: hop count above 63
    NotASwitch,       ///< directed route would need a CA to forward (§14.2.2.1)
    BadPathPort,      ///< directed route names a port that does not exist or is not linked
    DrLidRoutedPart,  ///< DrSLID/DrDLID not permissive: LID-routed DR segments not modelled
    NoRoute,          ///< a switch has no LFT entry for a response's DLID
    NoAgent,          ///< no agent or manager for this class / direction
    SendFailed,       ///< the port refused the packet (link down, queue full, not Active)
};

const char* IbMadDropReasonName(IbMadDropReason r);

/// A MAD as it reached a node: where it came in and its headers.
struct IbReceivedMad
{
    Ptr<IbNetDevice> port; ///< arrival port (a CA port, or the switch's physical port)
    uint8_t portNumber = 0;
    uint8_t vl = 0;
    IbMadPacketView view;
    /// For a directed-route SMP delivered locally: the SMP with hop pointer and return path as
    /// the SMI updated them (the agent answers from this).
    IbSmp smp;
};

/**
 * \brief The SMI and GSI of one node (a channel adapter with its ports, or a switch).
 *
 * Receiving: every CA port's management receive path (IbNetDevice::SetManagementReceiveCallback)
 * or the switch's management port 0 (IbSwitch::SetManagementCallback) feeds this object. QP0
 * packets must be on VL15 and carry a subnet management class; directed-route SMPs go through
 * the receive rules of §14.2.2 (C14-9 outbound, C14-13 returning): a switch in the middle of a
 * path records the arrival port in ReturnPath, moves the hop pointer and forwards the SMP out of
 * the next port itself, never showing it to its agents; at the end of the path the SMP is
 * delivered locally. Requests (Get, Set, TrapRepress and unknown methods) go to the SMA
 * (QP0) or to the GSI agent registered for the class (QP1); responses and traps go to the
 * manager callback (a subnet manager on this node). Everything discarded is counted with its
 * reason and reported by the "MadDrop" trace source.
 *
 * Time: a switch hands a packet to its management port when the packet's last byte is in;
 * the attribute ProcessingDelay then adds the time the node's management firmware takes per
 * MAD (every MAD the SMI/GSI takes from the wire, forwarded or answered), default 0.
 *
 * Sending: agents answer with SendSmpResponse/SendGmpResponse, which apply the send rules
 * (return path for a directed route, LID routing through the switch's LFT for a switch's own
 * packets); a manager sends requests with SendDirectedSmp, SendLidRoutedSmp and SendGmp.
 */
class IbMadDispatcher : public Object
{
  public:
    static TypeId GetTypeId();
    IbMadDispatcher();
    ~IbMadDispatcher() override;

    /// Attach to `node`: its IbSwitch if it has one, else every IbNetDevice port of it.
    void Install(Ptr<Node> node);
    Ptr<Node> GetNode() const;
    bool IsSwitch() const;
    Ptr<IbSwitch> GetSwitch() const;
    /// Physical ports by number (a CA's ports, or the switch's 1..N).
    Ptr<IbNetDevice> GetPort(uint8_t number) const;
    uint8_t GetNumPorts() const;
    std::vector<Ptr<IbNetDevice>> GetPorts() const;

    typedef Callback<void, const IbReceivedMad&> MadHandler;
    /// The SMA: SMP requests that reached this node's end of their path.
    void SetSmaHandler(MadHandler h);
    /// A GSI agent for management class `mgmtClass` (requests to QP1).
    void SetGsiHandler(uint8_t mgmtClass, MadHandler h);
    /// The handlers set now (null if none), for a front end that takes some requests itself
    /// and passes the rest on (the umad service of an emulated host: SMInfo and classes no
    /// agent of the model serves go to the processes registered for them).
    MadHandler GetSmaHandler() const;
    MadHandler GetGsiHandler(uint8_t mgmtClass) const;
    /// A manager on this node: SMP and GMP responses and traps that arrive here.
    void SetManagerHandler(MadHandler h);
    /// The manager handler set now (null if none), so that a second manager on the node (the
    /// umad service of an emulated host) can take the MADs that are its own and pass the rest on.
    MadHandler GetManagerHandler() const;

    // ---- sending ------------------------------------------------------------------------------
    /**
     * The answer to `request` (as delivered to a handler): for a directed-route SMP `smp` must
     * carry the D bit and the request's path; it goes out of ReturnPath[hop count] per C14-13 (a
     * hop count of 0 is a loopback to this node's manager). A LID-routed SMP goes to the
     * request's SLID, by the switch's LFT if this is a switch.
     */
    bool SendSmpResponse(const IbReceivedMad& request, const IbSmp& smp);
    /// The answer to a GMP request: 256 bytes to the requester's SLID and SrcQP on its SL.
    bool SendGmpResponse(const IbReceivedMad& request, const uint8_t* mad);
    /**
     * Several answers to one GMP request, in order (the RMPP segments of a large SA table),
     * each queued when the port's send queue has room: a table of hundreds of segments waits
     * for the wire rather than overflowing TxQueuePackets, as the kernel's MAD layer posts
     * segments only as its send queue allows (IBA vol. 1 §13.6.4 leaves the pacing to the
     * sender). While the queue is full it looks again after one MAD's time on the port's link.
     */
    void SendGmpResponses(const IbReceivedMad& request,
                          std::vector<std::array<uint8_t, kIbMadBytes>> mads);
    /**
     * A directed-route SMP from this node (the originator, C14-9): hop pointer 0 -> 1 and out
     * of InitialPath[1] (a CA: which must be that CA port's number). A hop count of 0 goes to
     * this node's own SMA. DrSLID and DrDLID must be permissive (pure directed route).
     */
    bool SendDirectedSmp(const IbSmp& smp);
    /// A LID-routed SMP from `port` (a CA port number, or 0 at a switch: routed by its LFT).
    bool SendLidRoutedSmp(uint8_t port, const IbSmp& smp, uint16_t dlid);
    /// A GMP to `dlid`, QP `destQp` (1 for GSI agents), on `sl`, from CA port `port` (or 0).
    /// At a CA, a LID-routed SMP or a GMP to the sending port's own LID is looped back inside
    /// the adapter (GetLoopedBack counts them): a switch never sends a packet back out of the port it came
    /// in by, so it could not come back over the wire.
    bool SendGmp(uint8_t port, const uint8_t* mad, uint16_t dlid, uint32_t destQp, uint8_t sl);

    /// Packets this node's SMI/GSI discarded for `r`.
    uint64_t GetDropCount(IbMadDropReason r) const;
    /// SMPs a switch forwarded along their directed route.
    uint64_t GetDrForwarded() const { return m_drForwarded; }
    /// MADs a CA sent to its own LID and took back without the wire.
    uint64_t GetLoopedBack() const { return m_loopedBack; }
    /// This node's LID: the switch's, or the CA port's.
    uint16_t GetLid(uint8_t port) const;

    /// MadRx: (packet, arrival port number); MadDrop: (packet, IbMadDropReason).
    typedef void (*PacketPortCallback)(Ptr<const Packet> packet, uint8_t port);

  protected:
    void DoDispose() override;

  private:
    /**
     * A received packet's bytes as the SMI/GSI reads them. Every directed-route SMP is read
     * here at every switch of its path, so no ns-3 Packet is made for it unless a trace
     * (MadRx, MadDrop) is connected: ToPacket() makes one from the frame or returns the Packet
     * the bytes came from.
     */
    struct RxBytes
    {
        /// The first min(size, kIbMaxMadPacketBytes) bytes: the receiver's own copy, which
        /// ForwardDirectedSmp edits in place into the packet it sends on.
        uint8_t* bytes = nullptr;
        uint32_t size = 0;              ///< the packet's length, LRH .. VCRC
        const IbFrame* frame = nullptr; ///< the frame they were read from (valid during receipt)
        Ptr<const Packet> packet;       ///< or the Packet they were read from
        Ptr<const Packet> ToPacket() const;
    };
    /// `rx` for `frame`, its bytes copied into `buf` (kIbMaxMadPacketBytes).
    static RxBytes ReadFrame(const IbFrame& frame, uint8_t* buf);
    void ReceiveFromCaPort(Ptr<IbNetDevice> port, const IbFrame& frame, const struct IbRxInfo& i);
    void ReceiveAtSwitch(Ptr<IbNetDevice> in, const IbFrame& frame);
    /// A packet received ProcessingDelay ago (held as a Packet while it waited).
    void ReceiveDelayed(Ptr<IbNetDevice> in, Ptr<const Packet> p, uint8_t vl);
    void Receive(Ptr<IbNetDevice> in, const RxBytes& rx, uint8_t vl);
    /**
     * At a switch, a directed-route SMP part way along its path, forwarded by editing its bytes
     * (hop pointer, ReturnPath) instead of through an IbReceivedMad and an IbSmp: false if `rx`
     * is anything else, which ReceiveDirected then decides and counts.
     */
    bool ForwardDirectedSmp(uint8_t inPort, const RxBytes& rx);
    void ReceiveDirected(IbReceivedMad& mad, const RxBytes& rx);
    void Deliver(const IbReceivedMad& mad, const RxBytes& rx);
    void Drop(Ptr<const Packet> p, IbMadDropReason r);
    /// Drop of a received packet: a Packet of it only if MadDrop is connected.
    void Drop(const RxBytes& rx, IbMadDropReason r);
    /// Sends SMP bytes out of physical port `out` on VL15 with the given LIDs.
    bool SendSmpOut(uint8_t out, const IbSmp& smp, uint16_t dlid, uint16_t slid);
    /**
     * The same for a directed-route SMP with its D bit and hop pointer replaced: what
     * SendSmpOut sends for a copy of `smp` given SetDirection(returning) and
     * SetHopPointer(hopPointer), written straight into the packet (no IbSmp copy per SMP).
     */
    bool SendDirectedSmpOut(uint8_t out, const IbSmp& smp, bool returning, uint8_t hopPointer);
    /**
     * The same for an SMP already in `packet` (kIbMadTransportBytes + kIbMadBytes, the MAD
     * after the room for BTH and DETH, which this writes).
     */
    bool SendSmpBytesOut(uint8_t out, uint8_t* packet, uint16_t dlid, uint16_t slid);
    /// At a CA, whether `dlid` is CA port `port`'s own LID (LMC range included).
    bool IsOwnLid(uint8_t port, uint16_t dlid) const;
    /// Hands a MAD the node sent to itself to its own SMI/GSI, as the packet would have arrived.
    bool Loopback(uint8_t port, const uint8_t* mad, uint32_t destQp, uint32_t srcQp,
                  uint32_t qkey, uint16_t lid, uint8_t sl, uint8_t vl);
    /// Port a switch's own LID-routed packet leaves by (0: none).
    uint8_t RouteFromSwitch(uint16_t dlid) const;
    bool PortUsable(uint8_t n) const;
    /**
     * BTH (UD SEND Only, default P_Key, this node's next PSN) and DETH into the first
     * kIbMadTransportBytes of `packet`, as IbWriteMadPacket writes them, from headers kept in
     * the dispatcher (IbWriteMadPacket's are thread-local: two lookups of a shared library's
     * thread-local storage per packet-hop).
     */
    void WriteMadTransport(uint8_t* packet, uint32_t destQp, uint32_t srcQp, uint32_t qkey);
    /// Queues what SendGmpResponses holds while the port has room; reschedules itself if not.
    void SendPacedGmps();
    /// Port and VL a GMP to `dlid` on `sl` leaves by (port 0: none).
    std::pair<uint8_t, uint8_t> GmpPortAndVl(uint8_t port, uint16_t dlid, uint8_t sl) const;

    Ptr<Node> m_node;
    Ptr<IbSwitch> m_switch;
    std::map<uint8_t, Ptr<IbNetDevice>> m_ports;
    std::vector<IbNetDevice*> m_portByNumber; ///< the same ports by number (null: none)
    MadHandler m_sma;
    MadHandler m_manager;
    std::map<uint8_t, MadHandler> m_gsi;
    std::array<uint64_t, 12> m_drops{};
    uint64_t m_drForwarded = 0;
    uint64_t m_loopedBack = 0;
    Time m_processingDelay;
    IbLrhHeader m_forwardLrh; ///< ForwardDirectedSmp's reading of the LRH (no Header per hop)
    IbBthHeader m_forwardBth; ///< and of the BTH
    uint32_t m_psn = 0;
    IbBthHeader m_sendBth;   ///< WriteMadTransport's (only the fields it sets ever change)
    IbDethHeader m_sendDeth; ///< and DETH
    /**
     * Receive's IbReceivedMad, kept from MAD to MAD: its five ns-3 Headers, built and destroyed
     * for every MAD a node takes, cost more than reading the MAD. A receipt nested in another
     * (were a handler to make this node receive at once) gets a fresh one.
     */
    IbReceivedMad m_rxMad;
    bool m_rxMadInUse = false;
    bool m_rxMadSmpRead = false; ///< m_rxMad.smp holds a MAD read before (not IbSmp())
    struct PacedGmp
    {
        uint8_t port;
        uint16_t dlid;
        uint32_t destQp;
        uint8_t sl;
        std::array<uint8_t, kIbMadBytes> mad;
    };
    std::deque<PacedGmp> m_paced; ///< GMPs SendGmpResponses still holds, in order
    EventId m_pacedRetry;
    TracedCallback<Ptr<const Packet>, uint8_t> m_rxTrace;
    TracedCallback<Ptr<const Packet>, uint8_t> m_dropTrace;
};

} // namespace ns3

#endif
