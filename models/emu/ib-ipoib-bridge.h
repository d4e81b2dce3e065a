// IP over InfiniBand for emulated hosts: the kernel of a real host (a network namespace) sends
// IP through a TAP device, and its packets cross the simulated InfiniBand fabric as IPoIB
// datagrams (RFC 4391: UD SEND, a 4-byte encapsulation header, IPoIB ARP, the broadcast group)
// from its HCA port.
#ifndef CNUAS_IB_IPOIB_BRIDGE_H
#define CNUAS_IB_IPOIB_BRIDGE_H

#include "tap-port.h"

#include "models/ib/ib-gid.h"
#include "models/ib/ib-net-device.h"
#include "models/mgmt/ib-sa-records.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{

/// What an IPoIB bridge counted since it started.
struct IbIpoibBridgeCounters : TapPortCounters
{
    uint64_t sentToFabric = 0; ///< datagrams queued on the HCA port (unicast and broadcast)
    uint64_t broadcastSent = 0; ///< of them to the broadcast group (ARP requests, IP broadcast)
    uint64_t joins = 0;        ///< broadcast-group joins sent to the SA (MCMemberRecord Set)
    uint64_t joinErrors = 0;   ///< joins that timed out or that the SA refused
    uint64_t notJoined = 0;    ///< dropped: the broadcast group not joined (no SM, or no answer
                               ///< yet): no Q_Key and no MLID to send with, as the kernel's
                               ///< interface has no carrier until it joined
    uint64_t noPath = 0;       ///< dropped: no path (the SA found none, its query timed out,
                               ///< or more than PathQueueLength frames waited for it)
    uint64_t pathQueries = 0;  ///< SA PathRecord queries sent
    uint64_t pathErrors = 0;   ///< path queries that timed out or that the SA refused
    uint64_t waitedForPath = 0; ///< frames that waited for their path's query, then went
    uint64_t notActive = 0;    ///< dropped: this port is not Active
    uint64_t heldBack = 0;     ///< datagrams the port's full queue made wait, the TAP not read
    uint64_t refused = 0;      ///< dropped: the port refused a datagram it had room for
    uint64_t noPeer = 0;       ///< dropped: a link address no neighbour has (no ARP told it)
    uint64_t noGroup = 0;      ///< dropped: IP multicast (no group but the broadcast one is joined)
    uint64_t notIp = 0;        ///< dropped: neither IPv4 nor ARP, or malformed
    uint64_t received = 0;     ///< IPoIB datagrams received and written for the kernel
    uint64_t notIpoib = 0;     ///< IPoIB-addressed packets dropped: not a UD SEND, a wrong Q_Key,
                               ///< a bad ARP, or neither IPv4 nor ARP
    uint64_t toHca = 0;        ///< packets for other QPs, passed to the HCA model
    uint64_t solicited = 0;    ///< ARP requests sent for the host's rdma_cm (SolicitNeighbour)
};

/**
 * \brief Bridges a TAP device (an Ethernet TAP: what the host's kernel sees as its IPoIB
 * interface) to an InfiniBand HCA port, carrying IP as IPoIB datagrams on the simulated wire, as
 * the kernel's IPoIB driver in datagram mode does (RFC 4391; drivers/infiniband/ulp/ipoib).
 *
 * The broadcast group: once the port is Active with a LID and an SM, the bridge joins the IPv4
 * broadcast group of partition 0xFFFF (ff12:401b:ffff::ffff:ffff) as a full member with a
 * SubnAdmSet(MCMemberRecord) to the SM's LID (MGID, PortGID, P_Key and JoinState, as
 * ipoib_mcast_join; the SM made the group, IbIpoibBroadcastGroup). Its answer gives the MLID, the
 * Q_Key every IPoIB datagram then carries, and the SL and GRH fields of broadcasts. Unanswered
 * or refused joins are sent again after 1, 2, 4 .. 16 s (the kernel's backoff); a new LID or SM
 * joins again. Until joined nothing is sent (counted): no data flows until a subnet manager
 * has run, as the seed's port story requires.
 *
 * To the fabric: the kernel behind the TAP is an Ethernet one, so its link addresses are MACs.
 * Each IPoIB neighbour (its 20-byte link address, RFC 4391 §9.1.1: QPN and port GID) gets a
 * locally administered MAC made from its port GUID, learnt from the ARP packets that carry it;
 * a frame to that MAC goes to that QPN and GID. ARP becomes IPoIB ARP (RFC 4391 §9.1:
 * hardware type 32, 20-byte addresses): a request to the broadcast group (MLID, GRH to the MGID,
 * QPN 0xFFFFFF), a reply to the requester. IPv4 to a neighbour's MAC becomes a UD SEND Only
 * (IBA vol. 1 §9.8) to its QPN with the IPoIB encapsulation header (RFC 4391 §6: EtherType, 2
 * reserved bytes); IP broadcast goes to the group. The destination LID and SL come from a path
 * the SA gave, as in ipoib_main.c's path_rec_start: the first packet to a GID sends
 * SubnAdmGet(PathRecord) (DGID, SGID, NumbPath 1, TClass 0, P_Key; §15.2.5.16) to the SM's LID
 * over QP1, up to PathQueueLength packets wait for the answer (IPOIB_MAX_PATH_REC_QUEUE, 3),
 * and later ones use the path until this port's LID or SM changes (the kernel flushes its
 * paths on LID_CHANGE and SM_CHANGE). Whichever SM runs (the built-in one, opensm) answers.
 *
 * To the host: an IPoIB datagram for kQpn (or for the broadcast group) becomes an Ethernet
 * frame for the TAP: ARP back in its Ethernet form with the neighbours' MACs; IPv4 from the
 * sender's MAC (known by its LID from its ARP or its path) to this host's, or to broadcast.
 *
 * For the host's rdma_cm: every IPoIB ARP packet received also tells which link address its
 * sender's IPv4 address has (LookupNeighbour, the NeighbourLearnt trace), and SolicitNeighbour
 * sends the request the kernel's neighbour code sends when rdma_resolve_addr finds no entry.
 */
class IbIpoibBridge : public Object
{
  public:
    /// The QP number of every host's IPoIB UD QP.
    static constexpr uint32_t kQpn = 0x0000FF;

    static TypeId GetTypeId();
    /// The NeighbourLearnt trace's signature: the IPv4 address (host order), its link address's GID.
    typedef void (*NeighbourLearntCallback)(uint32_t ip, const IbGid& gid);
    IbIpoibBridge();
    ~IbIpoibBridge() override;

    /// How a SubnAdm MAD (256 bytes) reaches the SA: sent from this host's port over QP1 to
    /// the SM's LID; false if it could not be sent. Unset, no group is joined, no path found.
    void SetSaSender(Callback<bool, const uint8_t*> send)
    {
        m_sendSa = send;
        MaybeJoin(); // started on a port an SM has made Active already
    }
    /// A MAD this host's port received for its managers: true if it was the SA's answer to
    /// one of this bridge's queries or joins (taken), false to pass it on.
    bool TakeSaResponse(const uint8_t* mad);
    /// Takes `tapFd` (whose interface has MAC `mac`) and starts bridging it to `port`.
    /// Simulation thread.
    bool Start(Ptr<IbNetDevice> port, uint64_t mac, int tapFd, std::string* why);
    void Stop();
    IbIpoibBridgeCounters GetCounters() const;
    /// The broadcast group's MLID once joined from the port's LID through its SM, else 0.
    uint16_t GetBroadcastMlid() const
    {
        return IsJoinedNow() ? m_group.rec.mlid : 0;
    }
    /**
     * The neighbour table as the kernel's rdma_cm reads it (addr.c: the IPoIB interface's
     * neighbour entry gives the destination's link address, RFC 4391 §9.1.1): the GID of the
     * link address that IPv4 address `ip` (host order) was last seen with in an IPoIB ARP
     * packet, request or reply. False if no ARP has told it.
     */
    bool LookupNeighbour(uint32_t ip, IbGid& gid) const;
    /**
     * Asks the fabric who has `ip`, as the kernel's neighbour code does when rdma_cm finds no
     * entry: an IPoIB ARP request to the broadcast group from this interface's link address
     * and `ownIp` (host order). The answer, a reply from the host that has it, reaches
     * LookupNeighbour and fires NeighbourLearnt. False (counted as notJoined) before the group
     * is joined: the kernel's interface has no carrier then.
     */
    bool SolicitNeighbour(uint32_t ip, uint32_t ownIp);
    /// Receives the packets for QPs other than kQpn (the HCA model's traffic: the verbs of the
    /// host's processes), as the device's frames: no ns-3 Packet is made for them. Unset, they
    /// are counted as notIpoib and dropped.
    void SetOtherFrameCallback(IbNetDevice::IbFrameReceiveCallback cb)
    {
        m_other = cb;
    }

  protected:
    void DoDispose() override;

  private:
    /// An IPoIB link address (RFC 4391 §9.1.1): the QPN and the port's GID.
    struct LinkAddress
    {
        uint32_t qpn = 0;
        IbGid gid{};
        bool operator==(const LinkAddress& o) const { return qpn == o.qpn && gid == o.gid; }
    };
    /// Where a datagram goes: a neighbour (its path) or the broadcast group.
    struct Destination
    {
        bool broadcast = false;
        uint16_t dlid = 0;
        uint8_t sl = 0;
        uint32_t qpn = 0;
    };

    /// A frame from the host's kernel; returns the datagrams it made (0: refused or held).
    uint32_t FromHost(const uint8_t* bytes, uint32_t length);
    /// Starts an IPoIB ARP packet in m_arp sent by this interface from `senderIp`: the target's
    /// link address and IP are left zero for the caller.
    void StartOwnArp(uint16_t operation, uint32_t senderIp);
    /// The loop's idle turn: sends the held datagram once the port has room again.
    bool OnIdle();
    void FromFabric(Ptr<IbNetDevice> port, const IbFrame& frame, const IbRxInfo& info);
    /// Starts the Ethernet frame for the kernel (m_frame): to this host's MAC, or to broadcast
    /// for what came to the group, from `src`; returns where its `bodyBytes` bytes go.
    uint8_t* FrameForHost(bool toGroup, uint64_t src, uint16_t type, uint32_t bodyBytes);
    /// Writes the frame FrameForHost began to the TAP, counted as received.
    void WriteFrameForHost();
    /// An IPoIB ARP packet from the fabric, for the kernel in Ethernet form.
    void ArpFromFabric(const uint8_t* arp, uint32_t length, uint16_t slid, bool toGroup);
    /// Sends one IPoIB datagram (`type`, then `carried` bytes of `l3`) to `to`; returns the
    /// datagrams made (0 or 1), holding the host's frame `f` (if any: the bridge's own ARP
    /// requests have none) for a full queue when it can.
    uint32_t SendDatagram(const Destination& to, uint16_t type, const uint8_t* l3,
                          uint32_t carried, const uint8_t* f, uint32_t len);
    /// Sends to neighbour `to` once its path is known (else queues `f` and asks the SA).
    uint32_t SendToNeighbour(const LinkAddress& to, uint16_t type, const uint8_t* l3,
                             uint32_t carried, const uint8_t* f, uint32_t len);
    /// The MAC the kernel knows neighbour `a` by (made on first sight; 0 when the table of
    /// neighbours is full).
    uint64_t MacFor(const LinkAddress& a);
    LinkAddress OwnAddress() const;
    /// Whether the broadcast group was joined from the port's present LID through its present
    /// SM (a join from another LID or through another SM is the kernel's flushed one).
    bool IsJoinedNow() const
    {
        return m_group.joined && m_port && m_group.ownLid == m_port->GetLid() &&
               m_group.smLid == m_port->GetSmLid();
    }
    /// Joins the broadcast group if the port can and has not (trace sinks and retries call it).
    void MaybeJoin();
    void JoinTimedOut(uint64_t tid);
    void JoinFailed();
    void OnPortState(uint8_t oldState, uint8_t newState);
    void OnLidChange(uint16_t oldLid, uint16_t newLid);
    /// Sends the PathRecord query for `dgid`.
    void StartPathQuery(const IbGid& dgid);
    void PathQueryTimedOut(IbGid dgid, uint64_t tid);
    /// Ends `dgid`'s query: the path found (`ok`) sends the frames that waited, else they
    /// are dropped.
    void EndPathQuery(const IbGid& dgid, bool ok);
    uint64_t NextTid();

    /// What this host knows of the path to one GID (the kernel's struct ipoib_path).
    struct Path
    {
        bool valid = false;
        uint16_t dlid = 0;
        uint8_t sl = 0;
        uint16_t ownLid = 0; ///< this port's LID when the path was found
        uint16_t smLid = 0;  ///< and its SM's LID
        uint64_t tid = 0;    ///< the query out, 0: none
        std::vector<std::vector<uint8_t>> waiting; ///< host frames waiting for the answer
    };
    /// The broadcast group as this host joined it.
    struct Group
    {
        bool joined = false;
        IbMcMemberRecord rec; ///< the SA's answer
        uint16_t ownLid = 0;  ///< this port's LID and SM LID at the join
        uint16_t smLid = 0;
        uint64_t tid = 0;     ///< the join out, 0: none
        Time backoff;         ///< before the next try after a failure
        EventId retry;
    };

    Ptr<IbNetDevice> m_port;
    uint64_t m_mac = 0;
    Group m_group;
    std::map<IbGid, Path> m_paths;
    std::map<uint64_t, IbGid> m_pathByTid; ///< a query out -> its DGID
    std::unordered_map<uint64_t, LinkAddress> m_byMac;
    std::map<std::pair<uint32_t, IbGid>, uint64_t> m_macOf;
    std::unordered_map<uint16_t, uint64_t> m_macByLid; ///< a neighbour's LID -> its MAC
    std::unordered_map<uint32_t, LinkAddress> m_byIp; ///< IPv4 -> link address, from ARP
    /// An IPv4 address's link address learnt or changed (from an ARP packet): the address
    /// (host order) and the link address's GID.
    TracedCallback<uint32_t, const IbGid&> m_neighbourLearnt;
    Callback<bool, const uint8_t*> m_sendSa;
    uint32_t m_nextTid = 1;
    Time m_pathQueryTimeout;
    Time m_joinTimeout;
    Time m_joinBackoff;
    uint32_t m_pathQueueLength = 3;
    uint64_t m_subnetPrefix = 0;
    uint32_t m_psn = 0;
    TapPort m_tap;
    IbIpoibBridgeCounters m_counters;
    IbNetDevice::IbFrameReceiveCallback m_other;
    std::vector<uint8_t> m_scratch; ///< a packet's bytes (either direction)
    std::vector<uint8_t> m_arp;     ///< an ARP packet translated (either direction)
    std::vector<uint8_t> m_frame;   ///< the Ethernet frame written for the kernel
    std::vector<uint8_t> m_held;    ///< a frame from the host waiting for room on the port
    uint64_t m_idleHook = 0;        ///< 0: none (no emulation loop)
    bool m_traced = false;          ///< the port's trace sources connected
};

} // namespace ns3

#endif
