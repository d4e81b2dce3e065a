// The management interfaces of one real host's HCA port, as the processes on that host reach
// them through the umad library (host/umad, loaded as libibumad.so.3): what the kernel's
// ib_umad module and the sysfs files of /sys/class/infiniband give a process on a real machine.
// The wire format of the socket is host/abi/cnuas-umad-abi.h.
#ifndef CNUAS_EMU_UMAD_SERVICE_H
#define CNUAS_EMU_UMAD_SERVICE_H

#include "host/abi/cnuas-umad-abi.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sma-agent.h"
#include "models/mgmt/ib-smp.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace ns3
{

/// What a umad service counted since it started.
struct EmuUmadCounters
{
    uint64_t connections = 0;    ///< control connections accepted
    uint64_t portsOpened = 0;    ///< of those, made umad ports (umad_open_port)
    uint64_t requests = 0;       ///< control requests answered
    uint64_t refused = 0;        ///< of those, answered with an error
    uint64_t malformed = 0;      ///< requests or stream datagrams that were not one (dropped)
    uint64_t madsSent = 0;       ///< MADs from processes handed to the SMI/GSI
    uint64_t madsRefused = 0;    ///< MADs from processes the SMI/GSI could not send
    uint64_t madsDelivered = 0;  ///< MADs handed to a process's agent
    uint64_t madsUndelivered = 0; ///< for an agent whose process did not take them (full)
    uint64_t madsUnclaimed = 0;  ///< responses and traps no agent and no other manager took
    uint64_t queries = 0;        ///< CA/port queries answered from the port's SMA
    uint64_t requestsDelivered = 0; ///< requests to the port handed to a process (SMInfo, SA...)
};

/**
 * \brief Serves the umad library of the processes of one emulated InfiniBand host.
 *
 * Each connection to the socket is either a query (umad_get_ca and friends: the CA and its
 * ports, answered by asking the port's own SMA with hop-count-0 directed-route SMPs for
 * NodeInfo, PortInfo and P_KeyTable, as a kernel fills sysfs through the adapter's MAD
 * interface) or, after OPEN_PORT, a umad port (umad_open_port): its agents register and
 * unregister on the connection, and its MADs travel on a socket pair whose other end the process
 * holds. The service runs on the simulation thread (EmuRealtimeSimulatorImpl::WatchFd): no lock
 * anywhere.
 *
 * Sending: a MAD from a process goes through the node's IbMadDispatcher as a real packet:
 * directed-route SMPs with SendDirectedSmp, LID-routed SMPs with SendLidRoutedSmp, GMPs with
 * SendGmp from the host's port; a request's TransactionID gets the agent's hi_tid in its upper
 * 32 bits, as the kernel's ib_umad does, so that the response finds its agent. What the
 * SMI/GSI refuses is counted and dropped: the process sees a timeout, as on hardware.
 *
 * Receiving: the service is the node's manager (IbMadDispatcher::SetManagerHandler), chained
 * in front of any manager already there (the built-in subnet manager on its host): responses
 * whose hi_tid is one of its agents', and traps and reports for an agent registered for that
 * class and method, go to the agent's process; everything else goes on to the previous manager.
 * Requests addressed to the port go to the model's agents (SMA, PMA), as a real adapter's
 * firmware takes them first, except what the model does not serve there: SMInfo requests
 * (IBA vol. 1 §14.2.5.13: the SM's attribute, not the SMA's) go to a process registered for
 * Get/Set of the subnet management classes (opensm), and requests of a QP1 class no agent of
 * the node serves (the SA, when opensm runs here) to a process registered for the method. The
 * process's responses leave as the SMA's would (SendSmpResponse along the request's path, or
 * a GMP to the requester).
 *
 * The SM interface: each port has an issm file (the path comes with the port's attributes,
 * umad_get_issm_path); while a process holds it open, PortInfo.CapabilityMask.IsSM is set on
 * the port (IbSmaAgent::SetIsSm), as the kernel's ib_umad sets it while /dev/infiniband/issmN
 * is open. Opens and closes are seen with inotify, so a process that dies releases it too.
 *
 * Nothing a process sends can stop the daemon: a datagram of the wrong size, an unknown agent,
 * a MAD of a class its agent may not send, a directed route that leaves nowhere: each is
 * counted and dropped (the library refuses most of them before they leave the process, with
 * the kernel's error codes).
 */
class EmuUmadService : public Object
{
  public:
    static TypeId GetTypeId();
    EmuUmadService();
    ~EmuUmadService() override;

    /**
     * Listen on `socketPath` (replaced if it exists) for the processes of a host whose HCA
     * port is port `portNumber` of the node `dispatcher` serves. Simulation thread, with
     * EmuRealtimeSimulatorImpl as the simulator. False with the reason in *why.
     */
    bool Start(const std::string& socketPath,
               Ptr<IbMadDispatcher> dispatcher,
               uint8_t portNumber,
               std::string* why);
    /// Ends every connection, gives the node its previous manager back, removes the socket.
    void Stop();

    EmuUmadCounters GetCounters() const { return m_counters; }
    const std::string& GetSocketPath() const { return m_path; }
    /// Ports (umad_open_port) open now.
    uint32_t GetOpenPorts() const;
    /// Whether a process holds the port's SM interface (issm) open: IsSM is set.
    bool IsSmHeld() const { return m_issmOpens > 0; }

  protected:
    void DoDispose() override;

  private:
    struct Agent
    {
        bool used = false;
        uint8_t qpn = 1;
        uint8_t mgmtClass = 0;
        uint8_t classVersion = 0;
        uint8_t rmppVersion = 0;
        std::array<uint64_t, 2> methodMask{};
        uint32_t oui = 0;
        uint32_t hiTid = 0;
    };
    struct Conn
    {
        uint32_t id = 0;
        int fd = -1;     ///< control connection
        int madFd = -1;  ///< the daemon's end of the MAD stream (a port)
        pid_t pid = 0;
        std::array<Agent, CNUAS_UMAD_MAX_AGENTS> agents{};
    };
    /// A CA query in progress: the SMPs asked of the port's SMA so far.
    struct Query
    {
        uint32_t conn = 0;
        int step = 0;
        uint16_t pkeyBlocks = 0;
        cnuas_umad_resp resp{};
        EventId timeout;
    };

    /// A connection ListenAndAccept took: a query or port, or closed (MaxConnections).
    void Admit(int fd, pid_t pid);
    void OnControl(uint32_t id);
    void OnMadStream(uint32_t id);
    void Close(uint32_t id, const char* why);
    void Handle(Conn& c, const cnuas_umad_req& q);
    bool Reply(Conn& c, const cnuas_umad_resp& r, int fd = -1);
    int DoOpenPort(Conn& c, const cnuas_umad_req& q, cnuas_umad_resp& r, int* outFd);
    int DoRegister(Conn& c, const cnuas_umad_req& q, cnuas_umad_resp& r);
    int DoUnregister(Conn& c, const cnuas_umad_req& q);

    /// A MAD a process wrote to its stream: checked, its TID marked, sent.
    void SendFromProcess(Conn& c, const cnuas_umad_mad& m);
    /// The node's SMA handler: SMInfo to a registered process, the rest to the SMA.
    void OnSmpRequest(const IbReceivedMad& mad);
    /// A GSI request of a class no agent of the node serves.
    void OnGsiRequest(const IbReceivedMad& mad);
    /// The agent registered for requests of (class, version, method): false if none.
    bool FindRequestAgent(uint8_t cls, uint8_t version, uint8_t method, uint32_t* conn,
                          uint32_t* agent) const;
    /// Makes the GSI handlers of the node match the registrations: a class no agent of the
    /// model serves, with an agent registered for its requests, is served here.
    void UpdateGsiHandlers();
    bool StartIssm(std::string* why);
    void StopIssm();
    void OnIssmEvent();
    /// One inotify instance for every service of the daemon (a user has 128 by default, and a
    /// fabric may have more hosts): watch descriptor -> service.
    static void OnInotify();
    static int s_inotifyFd;
    static std::map<int, EmuUmadService*> s_issmWatches;
    /// The node's manager handler: this service's MADs, else the previous manager's.
    void OnManagerMad(const IbReceivedMad& mad);
    bool DeliverTo(Conn& c, uint32_t agentId, const IbReceivedMad& mad);

    void StartQuery(Conn& c);
    void SendQuerySmp(uint64_t tid, Query& q);
    void OnQueryAnswer(uint64_t tid, const IbSmp& smp);
    void QueryTimeout(uint64_t tid);
    void FinishQuery(uint64_t tid, int err, const char* why);

    std::string m_path;
    int m_listenFd = -1;
    Ptr<IbMadDispatcher> m_disp;
    uint8_t m_portNumber = 1;
    IbMadDispatcher::MadHandler m_previousManager;
    IbMadDispatcher::MadHandler m_previousSma;
    bool m_installed = false;
    std::set<uint8_t> m_gsiClasses; ///< classes whose GSI handler is this service's
    /// Requests delivered to processes, by TransactionID, for sending their responses back the
    /// way they came (bounded: the oldest go first).
    std::map<uint64_t, IbReceivedMad> m_incoming;
    std::deque<uint64_t> m_incomingOrder;
    Ptr<IbSmaAgent> m_sma;
    std::string m_issmPath;
    int m_issmWatch = -1; ///< this service's watch on s_inotifyFd
    int m_issmOpens = 0;
    std::map<uint32_t, std::unique_ptr<Conn>> m_conns;
    uint32_t m_nextConn = 1;
    /// hi_tid -> (connection, agent id)
    std::map<uint32_t, std::pair<uint32_t, uint32_t>> m_byHiTid;
    uint32_t m_nextHiTid = 0;
    uint32_t m_queryHiTid = 0;
    uint32_t m_nextQuerySeq = 1;
    std::map<uint64_t, Query> m_queries;
    EmuUmadCounters m_counters;

    // Attributes.
    std::string m_caName;
    std::string m_fwVersion;
    std::string m_hwVersion;
    std::string m_caType;
    Time m_queryTimeout;
    uint32_t m_maxConnections;
};

} // namespace ns3

#endif
