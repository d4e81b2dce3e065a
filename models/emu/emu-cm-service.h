// The rdma_cm of one emulated host: what the kernel's rdma_ucm device and rdma_cm are on a real
// machine. Processes (Cnuas's librdmacm, host/rdmacm) reach it through a Unix socket
// (host/abi/cnuas-cm-abi.h); it resolves IP addresses to the fabric's ports, keeps the port
// spaces, and drives the port's communication manager (IbCmAgent), whose CM MADs cross the
// simulated fabric.
#ifndef CNUAS_EMU_CM_SERVICE_H
#define CNUAS_EMU_CM_SERVICE_H

#include "host/abi/cnuas-cm-abi.h"
#include "models/mgmt/ib-cm-agent.h"
#include "models/rdma/rdma-link-port.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

class IbMadDispatcher;
class IbSaMad;
class RoceRdmaPort;

/**
 * Puts `agent` on QP1 of an InfiniBand CA port: the node's GSI hands it CM MADs (class 0x07),
 * and it sends LID-routed GMPs from port `portNumber` (IBA vol. 1 §13.5).
 */
void EmuCmAttachToIbPort(Ptr<IbCmAgent> agent, Ptr<IbMadDispatcher> disp, uint8_t portNumber);
/// Puts `agent` on QP1 of a RoCE port: CM MADs in RoCEv2 (UDP 4791) to and from QP1.
void EmuCmAttachToRocePort(Ptr<IbCmAgent> agent, Ptr<RoceRdmaPort> port);

/// What an rdma_cm service counted since it started.
struct EmuCmCounters
{
    uint64_t processes = 0;      ///< connections opened
    uint64_t requests = 0;       ///< requests answered
    uint64_t refused = 0;        ///< of those, with an error
    uint64_t malformed = 0;      ///< requests that were not one (connection dropped)
    uint64_t events = 0;         ///< events written to channels
    uint64_t eventsDropped = 0;  ///< events a full or closed channel could not take
    uint64_t addrErrors = 0;     ///< address resolutions that failed (no route, no answer)
    uint64_t neighbourProbes = 0; ///< InfiniBand: ARP requests asked of IPoIB for resolutions
    uint64_t idsDestroyedWithProcess = 0; ///< IDs a process left behind when it ended
    uint64_t saRequests = 0;     ///< SA MCMemberRecord requests sent (joins, retries, leaves)
    uint64_t saTimeouts = 0;     ///< joins and route queries that got no SA answer after every retry
    uint64_t pathQueries = 0;    ///< SA PathRecord queries sent (rdma_resolve_route, retries)
    uint64_t routeErrors = 0;    ///< ROUTE_ERROR events (no LID, SA refusal, no SA answer)
    uint64_t multicastJoins = 0; ///< MULTICAST_JOIN events
    uint64_t multicastErrors = 0; ///< MULTICAST_ERROR events
};

/**
 * \brief The host's rdma_cm: IDs, port spaces, address and route resolution, and the
 * connection handshakes (through IbCmAgent) of the processes of one emulated host.
 *
 * Adapters: the host's RDMA adapters, one per fabric it is on (a hybrid fabric's host has an
 * InfiniBand HCA and a RoCE NIC), each with its own address, subnet and peers. An ID belongs to
 * the adapter its bound address is on, or the one whose subnet holds the address it resolves
 * (the kernel's rdma_cm picks the device by the route to the destination); a listener bound to
 * no address listens on every adapter and its connection requests come on the one they
 * arrived at. Every route and event names its adapter's node GUID, by which the library gives
 * the ID that device's verbs context.
 *
 * Addresses: each adapter's IPv4 address (RoCE: eth0's; InfiniBand: ib0's, its IPoIB
 * address). On InfiniBand an address resolves as the kernel's rdma_resolve_addr resolves it
 * (drivers/infiniband/core/addr.c): from the IPoIB interface's neighbour table, the GID of the
 * link address its ARP gave (Adapter::lookupNeighbour); with no entry, the interface sends ARP
 * requests to the broadcast group (solicitNeighbour: at once and every NeighbourRetransmit,
 * NeighbourProbes in all) and the resolution ends when the answer comes (NeighbourLearnt) or
 * with ADDR_ERROR (-ETIMEDOUT) when the caller's timeout passes. The DLID is not known then:
 * rdma_resolve_route asks the SA for it. On RoCE the addresses are those of the other hosts of
 * its fabric (SetPeers) and resolve to their GID (::ffff:IP, GID index 0); one no host has fails
 * with ADDR_ERROR (-ETIMEDOUT) after UnresolvedAddressDelay. An address outside the adapter's
 * subnet fails at once (-ENETUNREACH).
 *
 * Port spaces (RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IPOIB): a bound port is the ID's; service ID
 * 0x0000000001PPpppp (PP the space, pppp the port) as the kernel's rdma_cm forms it, and the
 * REQ's private data starts with the rdma_cm header (version 0, IP version 4, source port,
 * source and destination addresses; 36 bytes), which the passive side reads back into the new
 * ID's addresses. RDMA_PS_UDP connects by SIDR with Q_Key 0x01234567 (RDMA_UDP_QKEY).
 *
 * Everything runs on the simulation thread (EmuRealtimeSimulatorImpl::WatchFd); a process that
 * ends has its IDs destroyed as the kernel does (IbCmAgent::Destroy: REJ or DREQ to the peer).
 */
class EmuCmService : public Object
{
  public:
    static TypeId GetTypeId();
    EmuCmService();
    ~EmuCmService() override;

    /// A host of the fabric: its address (host byte order) and its HCA port.
    struct Peer
    {
        uint32_t ip = 0;
        Ptr<RdmaLinkPort> port;
    };
    /// One of the host's adapters: its port with its communication manager, its address
    /// `ip`/`prefixLen` (host byte order), and the node GUID its verbs device reports.
    struct Adapter
    {
        Ptr<IbCmAgent> agent;
        Ptr<RdmaLinkPort> port;
        uint32_t ip = 0;
        uint8_t prefixLen = 8;
        uint64_t nodeGuid = 0;
        std::vector<Peer> peers;
        /// InfiniBand: sends a 256-byte SA MAD from the adapter's port to its subnet manager
        /// (the SM LID the port holds, QP1); false if it could not leave. Answers come back
        /// through TakeSaResponse.
        Callback<bool, const uint8_t*> sendSa;
        /// RoCE: the port joins (true) or leaves (false) a multicast group (its GID: an
        /// IPv4-mapped address), what the kernel's IGMP report does for it; false if refused.
        /// With neither callback the adapter takes no multicast joins.
        Callback<bool, const std::array<uint8_t, 16>&, bool> ethMembership;
        /// InfiniBand: the IPoIB interface's neighbour table (IbIpoibBridge::LookupNeighbour):
        /// true with the GID of the link address IPv4 address `ip` (host order) has. With it
        /// the adapter's addresses resolve by IPoIB ARP, without it from SetPeers' hosts.
        std::function<bool(uint32_t ip, std::array<uint8_t, 16>& gid)> lookupNeighbour;
        /// Sends an ARP request for `ip` from `ownIp` (IbIpoibBridge::SolicitNeighbour);
        /// false if it could not leave (the interface has not joined its broadcast group).
        std::function<bool(uint32_t ip, uint32_t ownIp)> solicitNeighbour;
    };

    /**
     * Listen on `socketPath` for the processes of a host with these adapters (at least one;
     * the first is the one loopback addresses resolve to). False with the reason.
     */
    bool Start(const std::string& socketPath,
               const std::vector<Adapter>& adapters,
               std::string* why);
    /// The hosts whose addresses resolve on adapter `adapter` (this one included or not), for
    /// an adapter without a neighbour table (RoCE).
    void SetPeers(size_t adapter, const std::vector<Peer>& peers);
    /// Adapter `adapter`'s neighbour table learnt `ip`'s link address (host order): address
    /// resolutions waiting for it end.
    void NeighbourLearnt(size_t adapter, uint32_t ip);
    void Stop();
    /**
     * An SA response that reached adapter `adapter`'s node: true if it answers one of this
     * service's requests (and is taken), false to leave it to another manager of the node.
     */
    bool TakeSaResponse(size_t adapter, const uint8_t* mad);

    const EmuCmCounters& GetCounters() const
    {
        return m_counters;
    }
    uint32_t GetOpenProcesses() const
    {
        return static_cast<uint32_t>(m_procs.size());
    }
    /// IDs listening now (a server is ready for its clients).
    uint32_t GetListeningCount() const;
    size_t GetAdapterCount() const
    {
        return m_adapters.size();
    }
    Ptr<IbCmAgent> GetAgent(size_t adapter = 0) const
    {
        return m_adapters.at(adapter).agent;
    }
    const std::string& GetSocketPath() const
    {
        return m_path;
    }

  protected:
    void DoDispose() override;

  private:
    enum class IdState : uint8_t
    {
        Idle,
        Bound,
        AddrQuery,
        AddrResolved,
        RouteQuery,   ///< InfiniBand: the SA PathRecord query is out
        RouteResolved,
        Listening,
        Connecting,   ///< REQ / SIDR_REQ sent
        RepReceived,  ///< active side: the process moves its QP, then ACCEPT sends the RTU
        ReqReceived,  ///< passive side: CONNECT_REQUEST given, waiting for ACCEPT or REJECT
        Accepted,     ///< passive side: REP sent, waiting for the RTU
        Established,
        DreqSent,
        DreqReceived,
        Disconnected,
    };
    struct Proc;
    struct Id
    {
        uint32_t handle = 0;
        uint32_t proc = 0;
        uint32_t channel = 0;
        uint64_t cookie = 0;
        uint32_t ps = 0;
        uint32_t qpType = 0;
        IdState state = IdState::Idle;
        int adapter = -1;    ///< index in m_adapters; -1: none yet (unbound, or any)
        uint32_t srcIp = 0;  ///< host order; 0: any
        uint16_t srcPort = 0;
        uint32_t dstIp = 0;
        uint16_t dstPort = 0;
        bool boundPort = false;
        Ptr<RdmaLinkPort> remote; ///< the resolved peer's port (RoCE; this host's own)
        bool byNeighbour = false; ///< InfiniBand: resolved by the IPoIB neighbour table to
        std::array<uint8_t, 16> neighbourGid{}; ///< this GID (the DLID from the SA, later)
        uint32_t addrAttempt = 0;  ///< which resolve_addr this is (its timers carry it)
        int addrAdapter = -1;      ///< the adapter a resolution by ARP waits on
        uint32_t neighbourProbes = 0; ///< ARP requests asked for this resolution
        cnuas_cm_route route{};
        uint32_t commId = 0;      ///< the agent's connection, 0: none
        uint32_t localQpn = 0;
        uint32_t localPsn = 0;
        uint32_t remoteQpn = 0;
        uint32_t remotePsn = 0;
        uint32_t qkey = 0;
        uint8_t responderResources = 0;
        uint8_t initiatorDepth = 0;
        uint8_t retryCount = 7;
        uint8_t rnrRetryCount = 7;
        uint8_t tos = 0;          ///< rdma_set_option(RDMA_OPTION_ID_TOS); 0 by default
        bool ackTimeoutSet = false; ///< rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT) was called
        uint8_t ackTimeout = 0;
        uint16_t remoteLid = 0;
        std::array<uint8_t, 16> remoteGid{};
        /// Multicast groups joined or being joined (rdma_join_multicast).
        struct Join
        {
            uint32_t ip = 0;                ///< the group's address, host order
            std::array<uint8_t, 16> mgid{}; ///< the MGID the address maps to
            uint8_t joinState = 1;
            bool joined = false;
            uint64_t tid = 0;               ///< the SA request in flight (0: none)
            uint32_t attempts = 0;
        };
        std::vector<Join> joins;
        uint64_t routeTid = 0;      ///< the PathRecord query out, 0: none
        uint32_t routeAttempts = 0; ///< PathRecord queries sent for this resolution
        Time routeWait;             ///< how long each of them waits for the SA
    };
    struct Proc
    {
        uint32_t id = 0;
        int fd = -1;
        int pid = 0;
        bool opened = false;
        std::map<uint32_t, int> channels; ///< handle -> write end of its pipe
        std::vector<int> retired;         ///< write ends of destroyed channels
    };

    /// A connection ListenAndAccept took: a process's rdma_cm, or closed (MaxProcesses).
    void Admit(int fd, pid_t pid);
    void OnReadable(uint32_t proc);
    void Close(uint32_t proc, const char* why);
    void Handle(Proc& p, const cnuas_cm_req& q);
    int DoCreateChannel(Proc& p, cnuas_cm_resp& r, int* outFd);
    int DoCreateId(Proc& p, const cnuas_cm_req& q, cnuas_cm_resp& r);
    int DoBind(Id& id, const cnuas_cm_addr& a, cnuas_cm_resp& r);
    int DoResolveAddr(Id& id, const cnuas_cm_req& q);
    int DoResolveRoute(Id& id, uint32_t timeoutMs);
    /// Sends (again) the SA PathRecord query of an ID in RouteQuery, and its timeout.
    void SendPathQuery(uint32_t handle);
    void PathQueryTimedOut(uint64_t tid);
    /// The SA's answer to an ID's PathRecord query: the route, or ROUTE_ERROR.
    void TakePathRecord(uint32_t handle, uint64_t tid, const IbSaMad& resp);
    void FailRoute(Id& id, int32_t status);
    int DoListen(Id& id);
    int DoConnect(Id& id, const cnuas_cm_conn_param& c);
    int DoAccept(Id& id, const cnuas_cm_conn_param& c);
    int DoReject(Id& id, const cnuas_cm_req& q);
    int DoDisconnect(Id& id);
    int DoInitQpAttr(Id& id, uint32_t state, cnuas_cm_qp_attr& a);
    int DoJoinMcast(Id& id, const cnuas_cm_req& q);
    int DoLeaveMcast(Id& id, const cnuas_cm_req& q);
    /// rdma_set_option on the ID: its type of service, or its QP's local ACK timeout.
    int DoSetOption(Id& id, const cnuas_cm_req& q);
    /// Sends (again) the SA join of group `ip` of ID `handle`, arming its timeout.
    void SendJoin(uint32_t handle, uint32_t ip);
    void JoinTimedOut(uint64_t tid);
    /// SubnAdmDelete(MCMemberRecord) of a joined group: the SA's answer is not waited for.
    void SendLeave(const Id& id, const Id::Join& j);
    /// A join of `id` to group `j` ends (left, refused, timed out, the ID destroyed): the
    /// host's port leaves the group when no other ID of the host holds it, as the kernel's
    /// multicast module and IGMP count local members.
    void ReleaseGroup(const Id& id, const Id::Join& j);
    /// The MCMemberRecord request of group `j` for `id` (method Set or Delete).
    bool SendMcMemberRecord(const Id& id, const Id::Join& j, uint8_t method, uint64_t tid);
    void FillQuery(const Id& id, cnuas_cm_resp& r) const;
    void DestroyId(uint32_t handle, bool processGone);

    void OnListenEvent(uint32_t listenHandle, uint32_t adapter, const IbCmEvent& ev);
    void OnConnEvent(uint32_t handle, const IbCmEvent& ev);
    void Post(const Id& id, uint32_t event, int32_t status, cnuas_cm_event& ev);
    void Post(const Id& id, uint32_t event, int32_t status);
    void FinishAddr(uint32_t handle, int32_t status);
    /// The ID `handle` if resolution `attempt` of its address still waits for ARP, else null.
    Id* WaitingForNeighbour(uint32_t handle, uint32_t attempt);
    /// Asks IPoIB for another ARP request for a resolution still waiting (attempt `attempt`).
    void ProbeNeighbour(uint32_t handle, uint32_t attempt);
    /// The caller's timeout of resolution `attempt`: ADDR_ERROR (-ETIMEDOUT) if it still waits.
    void NeighbourTimedOut(uint32_t handle, uint32_t attempt);

    /// Whether `ip` (host byte order) is a loopback address.
    static bool IsLoopback(uint32_t ip);
    /// The adapter whose address `ip` is, or -1.
    int AdapterOf(uint32_t ip) const;
    /// The adapter whose subnet holds `ip`, or -1.
    int AdapterToward(uint32_t ip) const;
    const Peer* FindPeer(const Adapter& a, uint32_t ip) const;
    /// The ID's adapter (the first when it has none yet) and its communication manager.
    const Adapter& AdapterFor(const Id& id) const;
    Ptr<IbCmAgent> AgentOf(const Id& id) const;
    /// Stops the listening of `id` on its adapter, or on every adapter.
    void StopListening(const Id& id);
    /// The port-space map of `ps`, or null if the space is not modelled.
    std::map<uint16_t, uint32_t>* Space(uint32_t ps);
    int BindPort(Id& id, uint16_t port);
    uint64_t ServiceId(uint32_t ps, uint16_t port) const;
    void FillRoute(Id& id) const;
    IbCmAddress PeerAddress(const Id& id) const;
    std::vector<uint8_t> CmaHeader(const Id& id) const;
    uint32_t NewPsn(uint32_t qpn);

    std::string m_path;
    int m_listenFd = -1;
    std::vector<Adapter> m_adapters;
    std::map<uint32_t, std::unique_ptr<Proc>> m_procs;
    std::map<uint32_t, Id> m_ids;
    uint32_t m_nextProc = 1;
    uint32_t m_nextHandle = 1;
    std::map<uint16_t, uint32_t> m_tcpPorts;
    std::map<uint16_t, uint32_t> m_udpPorts;
    std::map<uint16_t, uint32_t> m_ipoibPorts;
    uint16_t m_nextEphemeral = 0;
    uint32_t m_psnSeed = 0;
    /// SA joins in flight: transaction ID -> (ID handle, group address).
    std::map<uint64_t, std::pair<uint32_t, uint32_t>> m_saPending;
    std::map<uint64_t, uint32_t> m_pathPending; ///< PathRecord query TID -> ID handle
    /// The host's joins of each group, by (adapter, MGID): IDs holding it, and whether any was
    /// granted (so the port is a member and must leave when the last goes).
    struct GroupUse
    {
        uint32_t ids = 0;
        bool joined = false;
    };
    std::map<std::pair<int, std::array<uint8_t, 16>>, GroupUse> m_groups;
    uint32_t m_nextSaTid = 1;
    EmuCmCounters m_counters;
    // Attributes.
    Time m_unresolvedDelay;
    Time m_neighbourRetransmit;
    uint32_t m_neighbourProbes;
    uint8_t m_localAckTimeout;
    uint8_t m_hopLimit;
    uint32_t m_maxProcesses;
    Time m_saTimeout;
    uint32_t m_saRetries;
};

} // namespace ns3

#endif
