// The emulated HCA of one real host, as the processes on that host reach it: a Unix socket that
// the libibverbs-compatible library (host/verbs) connects to, objects created on the model's
// RdmaDevice for each process, work and completion queues in shared memory, and the process's
// memory read and written with process_vm_readv/writev. The wire format of the socket and of
// the shared memory is host/abi/cnuas-hca-abi.h.
#ifndef CNUAS_EMU_HCA_SERVICE_H
#define CNUAS_EMU_HCA_SERVICE_H

#include "host/abi/cnuas-hca-abi.h"
#include "models/ib/ib-net-device.h"
#include "models/rdma/rdma-device.h"
#include "models/rdma/rdma-engine.h"
#include "models/rdma/rdma-link-port.h"
#include "models/roce/eth-net-device.h"

#include "ns3/nstime.h"
#include "ns3/object.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

class EmuRealtimeSimulatorImpl;

/// What an HCA service counted since it started.
struct EmuHcaCounters
{
    uint64_t contextsOpened = 0;  ///< connections that completed OPEN
    uint64_t contextsClosed = 0;  ///< connections ended (close, process exit, protocol error)
    uint64_t requests = 0;        ///< control requests answered
    uint64_t refused = 0;         ///< of those, answered with an error
    uint64_t malformed = 0;       ///< requests that were not a request (connection dropped)
    uint64_t doorbells = 0;       ///< doorbell rings taken
    uint64_t sendWqes = 0;        ///< send WQEs taken from shared memory
    uint64_t recvWqes = 0;        ///< receive WQEs taken from shared memory
    uint64_t badWqes = 0;         ///< WQEs refused (bad opcode, SGE count, AH, ...): error CQE
    uint64_t corruptIndices = 0;  ///< producer/consumer indices past a ring's size
    uint64_t eventsDropped = 0;   ///< event records a process's full pipe could not take
    uint64_t sharedMrs = 0;       ///< regions registered in memory shared with the daemon
    uint64_t unsharedMrs = 0;     ///< regions reached through /proc/PID/mem instead
    uint64_t windowsRefused = 0;  ///< shared-memory descriptors refused (not a sealed memfd, ...)
    uint64_t portEvents = 0;      ///< port events (PORT_ACTIVE, PORT_ERR, ...) sent to contexts
    uint64_t pollerWakes = 0;     ///< futex wakes of pollers asleep on an empty CQ
    uint64_t wakesDeferred = 0;   ///< completions whose wake waited (WakeModerationLag)
    uint64_t destroysDeferred = 0; ///< DESTROY_QP answered once the QP's posted sends had gone
    uint64_t destroysCut = 0;      ///< of those, destroyed at DestroyDrainLimit with sends left
    uint64_t closesDeferred = 0;   ///< contexts of a gone process kept until their sends had gone
    uint64_t closesCut = 0;        ///< of those, torn down at DestroyDrainLimit with sends left
};

/**
 * \brief Serves the verbs library of the processes of one emulated host.
 *
 * Each connection to the socket is one device context (ibv_open_device). The service runs on
 * the simulation thread: it polls its descriptors through EmuRealtimeSimulatorImpl::WatchFd, so
 * a control request, a doorbell and the model's events are ordered like any other event, and
 * no lock is taken anywhere.
 *
 * Objects a process creates are created on the host's RdmaDevice with a ProcessMemory of that
 * process (the peer credentials of its connection give the pid), so keys, PDs and QPs of two
 * processes are as separate as on hardware. When the connection ends (the process exits or
 * crashes) every object it made is destroyed, QPs first: its peers then see what hardware gives
 * them (retries exceeded, flushes), and the daemon and the other processes go on.
 *
 * Shared memory is read defensively: every WQE is copied out of the ring before it is checked,
 * an index that claims more entries than the ring holds puts the QP in the error state
 * (IBV_EVENT_QP_FATAL) or the CQ in overrun, and a WQE the model refuses completes with
 * IBV_WC_LOC_QP_OP_ERR and the QP enters the error state, as a real adapter does.
 */
class EmuHcaService : public Object
{
  public:
    static TypeId GetTypeId();
    EmuHcaService();
    ~EmuHcaService() override;

    /**
     * Listen on `socketPath` (a Unix SOCK_SEQPACKET socket, replaced if it exists) for the
     * processes of a host whose HCA is `device` with `engine` and port 1 `port`; `ibPort` (an
     * InfiniBand fabric) or `ethPort` (RoCE) is the port's link-layer device, for the port
     * attributes. Simulation thread, with EmuRealtimeSimulatorImpl as the simulator. False with
     * the reason in *why.
     */
    bool Start(const std::string& socketPath,
               Ptr<RdmaDevice> device,
               Ptr<RdmaEngine> engine,
               Ptr<RdmaLinkPort> port,
               Ptr<IbNetDevice> ibPort,
               Ptr<EthNetDevice> ethPort,
               std::string* why);
    /// Ends every context (destroying its objects), closes the socket and removes its file.
    void Stop();

    EmuHcaCounters GetCounters() const
    {
        return m_counters;
    }

    /// Contexts open now.
    uint32_t GetOpenContexts() const
    {
        return static_cast<uint32_t>(m_contexts.size());
    }

    const std::string& GetSocketPath() const
    {
        return m_path;
    }

    /// The node GUID the device reports (host order): the IB node's (its SMA's), or a RoCE
    /// adapter's EUI-64 of its MAC.
    uint64_t GetNodeGuid() const;

    /// The device name processes see (the DeviceName attribute).
    const std::string& GetDeviceName() const
    {
        return m_deviceName;
    }

    /// The adapter's transport engine (its retransmissions, NAKs and drops, for the status).
    Ptr<RdmaEngine> GetEngine() const
    {
        return m_engine;
    }

  protected:
    void DoDispose() override;

  private:
    struct Context;
    struct CqRec;
    struct QpRec;
    struct SrqRec;

    /// A connection ListenAndAccept took: a device context, or closed (MaxContexts, no pid).
    void Admit(int fd, pid_t pid);
    void OnReadable(uint32_t id);
    void OnDoorbell(uint32_t id);
    void Close(uint32_t id, const char* why);
    void Handle(Context& c, const cnuas_hca_req& q, int passedFd);
    bool Reply(Context& c, const void* resp, size_t len, int fd = -1);

    int DoOpen(Context& c, const struct cnuas_hca_req& q, int passedFd, struct cnuas_hca_resp& r,
               int* outFd);
    void FillDeviceAttr(struct cnuas_hca_device_attr& a) const;
    int FillPortAttr(uint32_t portNum, struct cnuas_hca_port_attr& a) const;
    int DoRegMr(Context& c, const struct cnuas_hca_req& q, struct cnuas_hca_resp& r, int passedFd);
    int DoCreateCq(Context& c, const struct cnuas_hca_req& q, struct cnuas_hca_resp& r,
                   int* outFd);
    int DoCreateQp(Context& c, const struct cnuas_hca_req& q, struct cnuas_hca_resp& r,
                   int* outFd);
    int DoModifyQp(Context& c, const struct cnuas_hca_req& q, struct cnuas_hca_resp& r);
    int DoQueryQp(Context& c, const struct cnuas_hca_req& q, struct cnuas_hca_resp& r);
    int DoCreateSrq(Context& c, const struct cnuas_hca_req& q, struct cnuas_hca_resp& r,
                    int* outFd);
    int DoDestroy(Context& c, uint32_t op, uint32_t handle);
    /**
     * DESTROY_QP of a QP with posted sends not yet on the wire: the answer (and the destroy)
     * wait until they have gone, at most DestroyDrainLimit. True when deferred (the answer is
     * then CheckDestroyDrained's); the sends posted before the call are taken either way.
     */
    bool DeferDestroyQp(Context& c, uint32_t handle);
    void CheckDestroyDrained(uint32_t contextId, uint32_t handle, Time deadline);
    /**
     * The process of a closing context is gone, but its posted sends are the adapter's: takes
     * what is still in the send queues, and if any QP has sends not yet on the wire keeps the
     * context (its QPs, CQs and regions; no longer reachable by the process) in m_closing until
     * they have gone, at most DestroyDrainLimit. False: nothing to wait for.
     */
    bool DrainBeforeTeardown(std::unique_ptr<Context>& c);
    void CheckCloseDrained(uint32_t contextId, Time deadline);
    /// Whether a QP of `c` still has posted sends not yet on the wire.
    bool HasUnsentSends(const Context& c) const;
    /// Sends the answer `r` with `err` (and `outFd` on success); a process that does not read
    /// its answers loses its context.
    void Answer(Context& c, struct cnuas_hca_resp& r, int err, int outFd);

    /// Take the send WQEs posted since the last look (the doorbell).
    void PullSends(Context& c, QpRec& q);
    /// Take the receive WQEs posted since the last look (lazily, when the model needs one).
    void PullRecvs(Context& c, QpRec& q);
    void PullSrqRecvs(Context& c, SrqRec& s);
    /// A QP's shared memory can no longer be trusted: the QP enters the error state.
    void BreakQp(Context& c, QpRec& q, const char* why);
    void OnQpState(uint32_t ctx, uint32_t handle, RdmaQpState from, RdmaQpState to);
    void OnCqEvent(uint32_t ctx, uint32_t handle);
    void OnAsyncEvent(const RdmaAsyncEvent& ev);
    /// InfiniBand port changes, as affiliated asynchronous events of port 1 to every open
    /// context (ibv_get_async_event(3): PORT_ACTIVE, PORT_ERR, LID_CHANGE, SM_CHANGE).
    void OnPortState(uint8_t oldState, uint8_t newState);
    void OnLid(uint16_t oldLid, uint16_t newLid);
    void OnSmLid(uint16_t oldLid, uint16_t newLid);
    void OnPkeyTable(uint16_t first, uint16_t end);
    void BroadcastPortEvent(uint32_t type);
    /// A completion of the context was written: wakes its pollers asleep on an empty CQ, now or,
    /// while the loop lags (WakeModerationLag), at its next idle turn.
    void WakePollers(uint32_t contextId);
    /// Wakes the context's sleeping pollers; true if there were any.
    bool WakeSleepers(uint32_t contextId);
    /// Whether the loop runs more than WakeModerationLag behind the wall clock.
    bool Lagging() const;
    /// Whether a CQ of the context has a poller asleep.
    bool HasSleepers(uint32_t contextId) const;
    void SendEvent(Context& c, uint32_t type, uint32_t port, uint64_t cookie);
    void DestroyAll(Context& c);

    std::string m_path;
    int m_listenFd = -1;
    Ptr<RdmaDevice> m_device;
    Ptr<RdmaEngine> m_engine;
    Ptr<RdmaLinkPort> m_port;
    Ptr<IbNetDevice> m_ibPort;
    Ptr<EthNetDevice> m_ethPort;
    std::map<uint32_t, std::unique_ptr<Context>> m_contexts;
    /// Contexts whose process went, kept while their QPs send what was posted.
    std::map<uint32_t, std::unique_ptr<Context>> m_closing;
    uint32_t m_nextContext = 1;
    EmuHcaCounters m_counters;
    bool m_traceConnected = false;

    // Attributes.
    std::string m_deviceName;
    std::string m_fwVersion;
    uint32_t m_maxContexts;
    bool m_shareMemory = true;
    Time m_wakeModerationLag;
    Time m_destroyDrainLimit;

    /// The event loop (null outside the emulation) and its idle hook that wakes the pollers of
    /// m_owedWakes' contexts.
    EmuRealtimeSimulatorImpl* m_loop = nullptr;
    uint64_t m_wakeHook = 0;
    std::vector<uint32_t> m_owedWakes;
};

} // namespace ns3

#endif
