// IP over InfiniBand for emulated hosts: the kernel of a real host (a network namespace) sends
// IP through a TAP device, and its packets cross the simulated InfiniBand fabric as IPoIB
// datagrams (RFC 4391: UD SEND, a 4-byte encapsulation header) from its HCA port.
#ifndef CNUAS_IB_IPOIB_BRIDGE_H
#define CNUAS_IB_IPOIB_BRIDGE_H

#include "tap-port.h"

#include "models/ib/ib-net-device.h"

#include "ns3/callback.h"
#include "ns3/nstime.h"
#include "ns3/object.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{

/// What an IPoIB bridge counted since it started.
struct IbIpoibBridgeCounters : TapPortCounters
{
    uint64_t sentToFabric = 0; ///< datagrams queued on the HCA port
    uint64_t noPath = 0;       ///< dropped: no path (no LID or SM to ask, the SA found none,
                               ///< or more than PathQueueLength frames waited for it)
    uint64_t pathQueries = 0;  ///< SA PathRecord queries sent
    uint64_t pathErrors = 0;   ///< path queries that timed out or that the SA refused
    uint64_t waitedForPath = 0; ///< frames that waited for their path's query, then went
    uint64_t notActive = 0;    ///< dropped: this port is not Active
    uint64_t heldBack = 0;     ///< datagrams the port's full queue made wait, the TAP not read
    uint64_t refused = 0;      ///< dropped: the port refused a datagram it had room for
    uint64_t noPeer = 0;       ///< dropped: no host of the fabric has the destination address
    uint64_t notIp = 0;        ///< dropped: neither IPv4 nor ARP, or malformed
    uint64_t received = 0;     ///< IPoIB datagrams received and written for the kernel
    uint64_t notIpoib = 0;     ///< packets the port received that were not IPoIB
    uint64_t toHca = 0;        ///< packets for other QPs, passed to the HCA model
};

/**
 * \brief Bridges a TAP device (an Ethernet TAP: what the host's kernel sees as its IPoIB
 * interface) to an InfiniBand HCA port, carrying IP as IPoIB datagrams on the simulated wire.
 *
 * To the fabric: an IPv4 packet or an ARP packet the kernel sends becomes one UD SEND Only
 * (IBA vol. 1 §9.8) on SL 0 with P_Key 0xFFFF, Q_Key kQkey, to QP kQpn of the host that owns the
 * destination (for ARP: the target) address, carrying the IPoIB encapsulation header (RFC 4391
 * §6: EtherType, 2 reserved bytes) and the packet. The destination LID and the SL come from a
 * path the SA gave, as in the kernel's IPoIB (ipoib_main.c, path_rec_start): the first packet to
 * a destination sends SubnAdmGet(PathRecord) (DGID, SGID, NumbPath 1, TClass 0, P_Key;
 * IBA vol. 1 §15.2.5.16) to the SM's LID over QP1, up to PathQueueLength packets wait for the
 * answer (IPOIB_MAX_PATH_REC_QUEUE, 3), and later ones use the path it gave until this port's
 * LID or SM changes (the kernel flushes its paths on those events). Whichever SM runs (the
 * built-in one, opensm) decides the path. Without a LID or an SM to ask (no SM ran), or with a
 * port that is not Active, nothing is sent and the drop is counted, as the seed's port story
 * requires: no data flows until a subnet manager has run.
 *
 * To the host: an IPoIB datagram for kQpn becomes an Ethernet frame for the TAP, from the MAC
 * the sending host's interface has (found by the packet's source LID) to this host's (or to
 * broadcast for an ARP request), so that the kernel's ARP and IP work unchanged. ARP keeps its
 * Ethernet form on the wire (hardware type 1, 6-byte addresses), not IPoIB's 20-byte link
 * addresses: the kernel behind the TAP is an Ethernet one.
 */
class IbIpoibBridge : public Object
{
  public:
    /// The QP number of every host's IPoIB UD QP, and the Q_Key (opensm's IPoIB default).
    static constexpr uint32_t kQpn = 0x0000FF;
    static constexpr uint32_t kQkey = 0x0000000B;

    /// A host of the fabric: its IPoIB address, its interface's MAC, its HCA port.
    struct Peer
    {
        uint32_t ip;
        uint64_t mac;
        Ptr<IbNetDevice> port;
    };

    static TypeId GetTypeId();
    IbIpoibBridge();
    ~IbIpoibBridge() override;

    /// Every host of the fabric (this one included), to resolve addresses.
    void SetPeers(const std::vector<Peer>& peers);
    /// How a SubnAdm MAD (256 bytes) reaches the SA: sent from this host's port over QP1 to
    /// the SM's LID; false if it could not be sent. Unset, no path is ever found.
    void SetSaSender(Callback<bool, const uint8_t*> send)
    {
        m_sendSa = send;
    }
    /// A MAD this host's port received for its managers: true if it was the SA's answer to
    /// one of this bridge's path queries (taken), false to pass it on.
    bool TakeSaResponse(const uint8_t* mad);
    /// Takes `tapFd` and starts bridging it to peer `self`'s port. Simulation thread.
    bool Start(uint32_t self, int tapFd, std::string* why);
    void Stop();
    IbIpoibBridgeCounters GetCounters() const;
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
    /// A frame from the host's kernel; returns the datagrams it made (0: refused or held).
    uint32_t FromHost(const uint8_t* bytes, uint32_t length);
    /// The loop's idle turn: sends the held datagram once the port has room again.
    bool OnIdle();
    void FromFabric(Ptr<IbNetDevice> port, const IbFrame& frame, const IbRxInfo& info);
    /// The peer whose port has `lid` now, or -1.
    int PeerByLid(uint16_t lid) const;
    /// Sends one IPoIB datagram to peer `to` on `path`; returns the datagrams made (0 or 1),
    /// holding the host's frame `f` for a full queue when it can.
    uint32_t SendDatagram(uint32_t to, uint16_t type, const uint8_t* l3, uint32_t carried,
                          const uint8_t* f, uint32_t len);
    /// Sends (again) the PathRecord query for peer `to`.
    void StartPathQuery(uint32_t to);
    void PathQueryTimedOut(uint32_t to, uint64_t tid);
    /// Ends peer `to`'s query: the path found (`ok`) sends the frames that waited, else they
    /// are dropped.
    void EndPathQuery(uint32_t to, bool ok);

    /// What this host knows of the path to one peer (the kernel's struct ipoib_path).
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

    std::vector<Peer> m_peers;
    std::unordered_map<uint32_t, uint32_t> m_byIp;
    std::vector<Path> m_paths;                      ///< by peer index
    std::unordered_map<uint64_t, uint32_t> m_byTid; ///< a query out -> its peer
    Callback<bool, const uint8_t*> m_sendSa;
    uint32_t m_nextTid = 1;
    Time m_pathQueryTimeout;
    uint32_t m_pathQueueLength = 3;
    uint64_t m_subnetPrefix = 0;
    uint32_t m_self = 0;
    uint32_t m_psn = 0;
    TapPort m_tap;
    IbIpoibBridgeCounters m_counters;
    IbNetDevice::IbFrameReceiveCallback m_other;
    std::vector<uint8_t> m_scratch; ///< a packet's bytes (either direction)
    std::vector<uint8_t> m_frame;   ///< the Ethernet frame written for the kernel
    std::vector<uint8_t> m_held;    ///< a frame from the host waiting for room on the port
    uint64_t m_idleHook = 0;        ///< 0: none (no emulation loop)
};

} // namespace ns3

#endif
