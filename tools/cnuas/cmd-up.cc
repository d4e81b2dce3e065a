// `cnuas up`: the daemon of an emulated fabric, one process per fabric, whose hosts are Linux
// network namespaces, their kernels attached to simulated NICs through TAP devices, the model
// driven in real time. Part of the simulator's module (sim-commands.cc), which `cnuas` loads for
// this command; exec, down, capture and sm reach the daemon from cmd-emu.cc without loading it.
// docs/emulation.md.
#include "command.h"
#include "emu-control.h"
#include "emu-fabric-files.h"
#include "emu-host.h"
#include "emu-sysfs.h" // umad (issue 14)
#include "state-files.h"

#include "helpers/formats/parse-util.h"
#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-cc-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/roce/eth-fabric-helper.h"
#include "helpers/roce/roce-helper.h"
#include "helpers/scenario/scenario-file.h"
#include "helpers/trace/eth-pcap-writer.h"
#include "helpers/trace/ib-pcap-writer.h"
#include "helpers/trace/ib-trace-helper.h"
#include "models/emu/emu-hca-service.h"
#include "models/emu/emu-umad-service.h" // umad (issue 14)
#include "models/emu/emu-cm-service.h"   // rdma_cm (issue 13)
#include "models/mgmt/ib-cm-agent.h"
#include "models/mgmt/ib-sm-partitions.h"
#include "models/mgmt/ib-sma-agent.h"     // umad (issue 14)
#include "models/emu/emu-realtime-simulator-impl.h"
#include "models/emu/eth-tap-bridge.h"
#include "models/emu/ib-ipoib-bridge.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"
#include "models/ib/ib-vl-counts.h"
#include "models/roce/eth-multicast-router.h"

#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/global-value.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

namespace cnuas
{

namespace
{

// ---- the daemon ----------------------------------------------------------------------------

struct UpOptions
{
    std::string fabric = "roce";
    uint32_t hosts = 0;
    std::string topology;
    std::string roceTopology; ///< hybrid: the Ethernet fabric's own topology (same hosts)
    std::string name = kDefaultFabric;
    std::string sm = "builtin";
    int smPriority = 0; ///< the built-in SM's SMInfo.Priority (0-15)
    std::string partitions; ///< the built-in SM's partitions.conf (absolute path), or ""
    std::string pcapDir;
    double dilation = 1;
    std::string hostRate;
    std::string fabricRate;
    unsigned mtu = 0; ///< RoCE: the hosts' and switches' Ethernet MTU (0: EthNetDevice's default)
    std::vector<ns3::AttributeSetting> settings;
    std::string stateDir;
    double readyTimeout = 60;
    int niceness = -10; ///< the daemon's scheduling priority (nice value)
};

/// A capture that `cnuas capture` holds open: it ends when that command's connection closes.
struct Capture
{
    ns3::Ptr<ns3::EthNetDevice> port; ///< RoCE: the port and its Ethernet pcap
    ns3::Ptr<ns3::PcapFileWrapper> file;
    ns3::Ptr<ns3::IbNetDevice> ibPort; ///< InfiniBand: the port and its ERF pcap
    std::shared_ptr<ns3::IbErfPcapWriter> ibFile;
    uint32_t handle = 0;

    void End()
    {
        if (port)
        {
            port->RemoveSniffer(handle);
            file->Close();
        }
        if (ibPort)
        {
            ibPort->RemoveSniffer(handle);
            ibFile->Close();
        }
    }
};

void
WriteErfRecord(std::shared_ptr<ns3::IbErfPcapWriter> w,
               ns3::Time t,
               const uint8_t* bytes,
               uint32_t len,
               bool)
{
    w->Write(t, bytes, len);
}

/**
 * The hosts' adapters on one fabric: an InfiniBand HCA or a RoCE NIC per host, each with the
 * interface its kernel sees (ib0, eth0), the service through which its processes' verbs reach
 * it, and what the host's rdma_cm needs of it. A hybrid fabric's hosts have both: two
 * adapters, two fabrics, as a dual-rail cluster node has (docs/emulation.md §10).
 */
struct HostRail
{
    std::string ifname;             ///< the interface in the host: "ib0" (IPoIB) or "eth0"
    std::vector<uint32_t> ips;      ///< host i's address on that interface (host byte order)
    std::vector<std::string> macs;  ///< and its MAC
    uint8_t prefixLen = 0;          ///< the interface's subnet
    std::vector<ns3::Ptr<ns3::EmuHcaService>> hcaServices;
    std::vector<std::string> hcaSockets;
    /// Host i's adapter as its rdma_cm sees it (the host's one rdma_cm serves all its rails).
    std::vector<ns3::EmuCmService::Adapter> cmAdapters;
    /// InfiniBand: host i's management dispatcher, where SA answers to its rdma_cm arrive.
    std::vector<ns3::Ptr<ns3::IbMadDispatcher>> madDispatchers;
};

/// Everything the daemon runs. The simulation thread owns it; other threads reach it only
/// through events (Simulator::ScheduleWithContext).
struct Daemon
{
    UpOptions opt;
    std::string dir;
    ns3::Topology topology;
    ns3::Topology ethTopology; ///< the RoCE fabric's: `topology`, or a hybrid's --roce-topology
    ns3::EthFabric eth;
    /// The RoCE fabric's multicast routing (what IGMP snooping and PIM would build): the
    /// hosts' rdma_cm joins program the switches' group routes through it.
    ns3::Ptr<ns3::EthMulticastRouter> ethMulticast;
    std::vector<std::string> hostNames;
    std::vector<std::string> netns;
    HostRail roceRail; ///< RoCE and hybrid fabrics: the hosts' RoCE NICs (eth0)
    HostRail ibRail;   ///< InfiniBand and hybrid fabrics: the hosts' HCAs (ib0)
    std::vector<ns3::Ptr<ns3::EthTapBridge>> bridges;
    std::vector<ns3::Ptr<ns3::PcapFileWrapper>> pcaps;
    // InfiniBand
    ns3::IbFabric ib;
    std::vector<ns3::Ptr<ns3::IbIpoibBridge>> ipoib;
    ns3::Ptr<ns3::IbSubnetManager> sm;
    std::unique_ptr<ns3::IbPcapHelper> ibPcap;
    std::string mgmtNetns;
    std::vector<std::string> mgmtIps;
    // The hosts' HCAs (RDMA device, engine, port) and the services through which their
    // processes' verbs reach them.
    std::vector<ns3::RoceHca> roceHcas;
    std::vector<ns3::RdmaHca> ibHcas;
    // umad (issue 14): InfiniBand hosts' management interfaces, for libibumad.
    std::vector<ns3::Ptr<ns3::EmuUmadService>> umadServices;
    std::vector<std::string> umadSockets;
    // The hosts' rdma_cm: a CM agent on QP1 of each adapter's port and the service librdmacm
    // uses, one per host whatever adapters it has.
    std::vector<ns3::Ptr<ns3::EmuCmService>> cmServices;
    std::vector<std::string> cmSockets;
    std::vector<int> udpSinks; ///< RoCE hosts: the kernel's UDP 4791, drained
    std::map<int, Capture> captures; ///< by control connection
    nlohmann::json state;
    int readyFd = -1;
    int stopFd = -1; ///< eventfd: tells the control thread to end
    /// Control connections dropped for not finishing their request, or not taking their
    /// answer, within kControlDeadline, or for being the oldest unfinished one when a new one
    /// came to a full house (the control thread's; read by status).
    std::atomic<uint64_t> controlDropped{0};
    long long started = 0;

    bool HasIb() const
    {
        return opt.fabric == "ib" || opt.fabric == "hybrid";
    }
    bool HasRoce() const
    {
        return opt.fabric == "roce" || opt.fabric == "hybrid";
    }
    bool Hybrid() const
    {
        return opt.fabric == "hybrid";
    }
    /// The rails in the order the hosts' device lists give their adapters: the InfiniBand HCA
    /// first (cnuas_0), then the RoCE NIC.
    std::vector<const HostRail*> Rails() const
    {
        std::vector<const HostRail*> r;
        if (HasIb())
        {
            r.push_back(&ibRail);
        }
        if (HasRoce())
        {
            r.push_back(&roceRail);
        }
        return r;
    }
};

/// Runs `f` on the simulation thread and waits up to `timeout` seconds for it. Control thread.
bool
RunInSimulation(std::function<void()> f, double timeout)
{
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> fut = done->get_future();
    ns3::Simulator::ScheduleWithContext(ns3::Simulator::NO_CONTEXT, ns3::Time(0), [f, done]() {
        f();
        done->set_value();
    });
    return fut.wait_for(std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000))) ==
           std::future_status::ready;
}

nlohmann::json
DropsJson(const ns3::EthNetDevice& port)
{
    nlohmann::json d = nlohmann::json::object();
    for (int r = 0; r < static_cast<int>(ns3::EthDropReason::Count); ++r)
    {
        const uint64_t n = port.GetDropCount(static_cast<ns3::EthDropReason>(r));
        if (n > 0)
        {
            d[ns3::EthDropReasonName(static_cast<ns3::EthDropReason>(r))] = n;
        }
    }
    return d;
}

nlohmann::json
LagJson()
{
    nlohmann::json j = nlohmann::json::object();
    auto sim = ns3::EmuRealtimeSimulatorImpl::Current();
    if (!sim)
    {
        return j;
    }
    const ns3::EmuLagStats s = sim->GetLagStats();
    j["dilation"] = s.dilation;
    j["events"] = s.events;
    j["late_events"] = s.lateEvents;
    j["current_lag_us"] = s.currentLagNs / 1e3;
    j["max_lag_us"] = s.maxLagNs / 1e3;
    j["mean_lag_us"] = s.meanLagNs / 1e3;
    j["wall_s"] = s.wallNs / 1e9;
    j["sim_s"] = s.simNs / 1e9;
    j["host_frames_in"] = s.foreignEvents;
    j["spin_s"] = s.spinNs / 1e9;
    j["spin_backoffs"] = s.spinBackoffs;
    // The lag now: the figures above are since the start, which a large fabric's bring-up
    // (every link training and ARP at time zero) dominates for as long as it runs.
    j["recent"] = {{"window_s", s.recentWindowS},
                   {"events", s.recentEvents},
                   {"late_events", s.recentLateEvents},
                   {"mean_lag_us", s.recentMeanLagNs / 1e3},
                   {"max_lag_us", s.recentMaxLagNs / 1e3}};
    return j;
}

std::string
GuidText(uint64_t guid)
{
    char b[24];
    std::snprintf(b, sizeof(b), "0x%016llx", static_cast<unsigned long long>(guid));
    return b;
}

/// The built-in SM (stopped or running) and the other SMs it knows of. Simulation thread.
nlohmann::json
SmJson(const Daemon& d)
{
    const ns3::IbSubnetManager& sm = *d.sm;
    nlohmann::json others = nlohmann::json::array();
    for (const ns3::IbKnownSm& o : sm.GetKnownSms())
    {
        std::string where;
        for (size_t i = 0; i < d.hostNames.size(); ++i)
        {
            if (d.ib.HostPort(static_cast<uint32_t>(i))->GetPortGuid() == o.guid)
            {
                where = d.hostNames[i];
            }
        }
        others.push_back({{"guid", GuidText(o.guid)},
                          {"node", where},
                          {"priority", o.priority},
                          {"state", ns3::IbSmStateName(o.state)}});
    }
    return {{"node", d.hostNames.empty() ? "" : d.hostNames[0]},
            {"guid", GuidText(sm.GetGuid())},
            {"running", sm.IsRunning()},
            {"state", ns3::IbSmStateName(sm.GetSmState())},
            {"priority", sm.GetPriority()},
            {"phase", ns3::IbSweepPhaseName(sm.GetPhase())},
            {"master_guid", GuidText(sm.GetMasterGuid())},
            {"subnet_up_s", sm.GetLastSubnetUp().GetSeconds()},
            {"smps_sent", sm.GetSmpsSent()},
            {"heavy_sweeps", sm.GetHeavySweeps()},
            {"partitions", sm.GetPartitions().Partitions().size()},
            {"partition_error", sm.GetPartitionError()},
            {"pkey_blocks_written", sm.GetPkeyBlocksWritten()},
            {"traps_received", sm.GetTrapsReceived()},
            {"security_traps", sm.GetSecurityTrapsReceived()},
            {"handovers_sent", sm.GetHandoversSent()},
            {"handovers_received", sm.GetHandoversReceived()},
            {"acknowledges_sent", sm.GetAcknowledgesSent()},
            {"acknowledges_received", sm.GetAcknowledgesReceived()},
            {"sm_key_mismatches", sm.GetSmKeyMismatches()},
            {"multicast_groups", sm.GetMulticast().Groups().size()},
            {"mft_blocks_written", sm.GetMftBlocksWritten()},
            {"other_sms", others}};
}

/// What every SMA of the fabric answered with a status other than 0, by attribute and status
/// ("PortInfo Set 0x001c": n), so that a refused Set shows. Simulation thread.
nlohmann::json
SmaRefusalsJson(const Daemon& d)
{
    nlohmann::json j = nlohmann::json::object();
    for (uint32_t n = 0; n < d.ib.nodes.GetN(); ++n)
    {
        auto sma = ns3::IbMgmtHelper::GetSma(d.ib.nodes.Get(n));
        if (!sma)
        {
            continue;
        }
        for (uint16_t status : {ns3::IbMadStatus::BadVersion,
                                ns3::IbMadStatus::UnsupportedMethod,
                                ns3::IbMadStatus::UnsupportedMethodAttr,
                                ns3::IbMadStatus::InvalidField})
        {
            if (const uint64_t c = sma->GetAnsweredCount(status))
            {
                char key[16];
                std::snprintf(key, sizeof(key), "0x%04x", status);
                j[key] = j.value(key, uint64_t(0)) + c;
            }
        }
    }
    return j;
}

/// Host i's rdma_cm: its processes and the CM MADs its agents (one per adapter) sent and took.
/// Simulation thread.
nlohmann::json
CmJson(const Daemon& d, size_t i)
{
    if (i >= d.cmServices.size())
    {
        return nullptr;
    }
    const auto& svc = d.cmServices[i];
    const ns3::EmuCmCounters c = svc->GetCounters();
    ns3::IbCmCounters a;
    uint32_t connections = 0;
    for (size_t k = 0; k < svc->GetAdapterCount(); ++k)
    {
        const ns3::IbCmCounters one = svc->GetAgent(k)->GetCounters();
        a.sent += one.sent;
        a.received += one.received;
        a.retransmitted += one.retransmitted;
        a.noListener += one.noListener;
        a.timeouts += one.timeouts;
        a.malformed += one.malformed;
        connections += static_cast<uint32_t>(svc->GetAgent(k)->GetConnectionCount());
    }
    return {{"processes_open", svc->GetOpenProcesses()},
            {"processes", c.processes},
            {"requests", c.requests},
            {"refused", c.refused},
            {"malformed_requests", c.malformed},
            {"addr_errors", c.addrErrors},
            {"neighbour_probes", c.neighbourProbes},
            {"events", c.events},
            {"events_dropped", c.eventsDropped},
            {"ids_left_by_processes", c.idsDestroyedWithProcess},
            {"listening", svc->GetListeningCount()},
            {"connections", connections},
            {"mads_sent", a.sent},
            {"mads_received", a.received},
            {"retransmitted", a.retransmitted},
            {"no_listener", a.noListener},
            {"timeouts", a.timeouts},
            {"malformed", a.malformed},
            {"sa_requests", c.saRequests},
            {"sa_timeouts", c.saTimeouts},
            {"path_queries", c.pathQueries},
            {"route_errors", c.routeErrors},
            {"multicast_joins", c.multicastJoins},
            {"multicast_errors", c.multicastErrors}};
}

/// What the adapter's transport did (its hardware counters, as mlx5's hw_counters show a
/// real one's): packets, retransmissions and their causes, and what it dropped, by reason.
/// Simulation thread.
nlohmann::json
TransportJson(const ns3::Ptr<ns3::RdmaEngine>& engine)
{
    if (!engine)
    {
        return nullptr;
    }
    const ns3::RdmaEngineCounters& e = engine->GetCounters();
    nlohmann::json drops = nlohmann::json::object();
    for (size_t r = 0; r < static_cast<size_t>(ns3::RdmaDropReason::Count); ++r)
    {
        const auto reason = static_cast<ns3::RdmaDropReason>(r);
        if (const uint64_t n = engine->GetDropCount(reason))
        {
            drops[ns3::RdmaDropReasonName(reason)] = n;
        }
    }
    return {{"packets_sent", e.packetsSent},
            {"packets_received", e.packetsReceived},
            {"retransmitted_packets", e.retransmittedPackets},
            {"timeouts", e.timeouts},
            {"naks_sent", e.naksSent},
            {"naks_received", e.naksReceived},
            {"rnr_naks_sent", e.rnrNaksSent},
            {"rnr_naks_received", e.rnrNaksReceived},
            {"refused_by_port", e.txRefused},
            {"multicast_received", e.multicastReceived},
            {"multicast_no_member", e.multicastNoMember},
            {"drops", drops}};
}

/// The verbs service of host i's adapter on one rail: contexts and how registered memory is
/// reached. Simulation thread.
nlohmann::json
VerbsJson(const HostRail& rail, size_t i)
{
    if (i >= rail.hcaServices.size())
    {
        return nullptr;
    }
    const ns3::EmuHcaCounters c = rail.hcaServices[i]->GetCounters();
    return {{"device", rail.hcaServices[i]->GetDeviceName()},
            {"contexts_open", rail.hcaServices[i]->GetOpenContexts()},
            {"contexts_opened", c.contextsOpened},
            {"contexts_closed", c.contextsClosed},
            {"requests", c.requests},
            {"refused", c.refused},
            {"malformed_requests", c.malformed},
            {"doorbells", c.doorbells},
            {"send_wqes", c.sendWqes},
            {"recv_wqes", c.recvWqes},
            {"bad_wqes", c.badWqes},
            {"corrupt_indices", c.corruptIndices},
            {"events_dropped", c.eventsDropped},
            {"shared_mrs", c.sharedMrs},
            {"unshared_mrs", c.unsharedMrs},
            {"windows_refused", c.windowsRefused},
            {"port_events", c.portEvents},
            {"poller_wakes", c.pollerWakes},
            {"wakes_deferred", c.wakesDeferred},
            {"destroys_deferred", c.destroysDeferred},
            {"destroys_cut", c.destroysCut},
            {"closes_deferred", c.closesDeferred},
            {"closes_cut", c.closesCut},
            {"transport", TransportJson(rail.hcaServices[i]->GetEngine())}};
}

/// Host i's InfiniBand HCA: its port, IPoIB interface, umad, verbs and rdma_cm. Simulation
/// thread.
nlohmann::json
IbHostJson(const Daemon& d, size_t i)
{
    auto port = d.ib.HostPort(static_cast<uint32_t>(i));
    const ns3::IbIpoibBridgeCounters c = d.ipoib[i]->GetCounters();
    nlohmann::json h = {{"name", d.hostNames[i]},
                        {"netns", d.netns[i]},
                        {"ip", Ipv4Text(d.ibRail.ips[i])},
                        {"mac", d.ibRail.macs[i]},
                        {"port_state", ns3::IbPortStateName(port->GetPortState())},
                        {"lid", port->GetLid()},
                        {"sm_lid", port->GetSmLid()},
                        {"from_host_frames", c.framesFromHost},
                        {"to_host_frames", c.framesToHost},
                        {"to_host_errors", c.toHostErrors},
                        {"to_host_ring_full", c.toHostRingFull},
                        {"ipoib_sent", c.sentToFabric},
                        {"ipoib_broadcast_sent", c.broadcastSent},
                        {"arp_solicited", c.solicited},
                        {"ipoib_received", c.received},
                        {"broadcast_mlid", d.ipoib[i]->GetBroadcastMlid()},
                        {"broadcast_joins", c.joins},
                        {"broadcast_join_errors", c.joinErrors},
                        {"dropped_not_joined", c.notJoined},
                        {"dropped_no_group", c.noGroup},
                        {"dropped_not_ipoib", c.notIpoib},
                        {"dropped_no_path", c.noPath},
                        {"path_queries", c.pathQueries},
                        {"path_errors", c.pathErrors},
                        {"waited_for_path", c.waitedForPath},
                        {"dropped_port_not_active", c.notActive},
                        {"dropped_refused", c.refused},
                        {"held_queue_full", c.heldBack},
                        {"dropped_no_peer", c.noPeer},
                        {"dropped_not_ip", c.notIp}};
    if (i < d.mgmtIps.size())
    {
        h["mgmt_ip"] = d.mgmtIps[i];
    }
    if (!d.Hybrid()) // a hybrid host's one rdma_cm is at the host's level
    {
        h["rdma_cm"] = CmJson(d, i);
    }
    if (i < d.umadServices.size()) // umad (issue 14)
    {
        const ns3::EmuUmadCounters u = d.umadServices[i]->GetCounters();
        h["umad"] = {{"ports_open", d.umadServices[i]->GetOpenPorts()},
                     {"is_sm", d.umadServices[i]->IsSmHeld()},
                     {"connections", u.connections},
                     {"ports_opened", u.portsOpened},
                     {"requests", u.requests},
                     {"refused", u.refused},
                     {"mads_sent", u.madsSent},
                     {"mads_refused", u.madsRefused},
                     {"mads_delivered", u.madsDelivered},
                     {"mads_undelivered", u.madsUndelivered},
                     {"mads_unclaimed", u.madsUnclaimed},
                     {"requests_delivered", u.requestsDelivered},
                     {"malformed", u.malformed},
                     {"queries", u.queries}};
    }
    h["verbs"] = VerbsJson(d.ibRail, i);
    return h;
}

/// Host i's RoCE NIC: its Ethernet port, the TAP bridge (eth0), verbs and rdma_cm.
/// Simulation thread.
nlohmann::json
RoceHostJson(const Daemon& d, size_t i)
{
    auto port = d.eth.HostPort(static_cast<uint32_t>(i));
    const ns3::EthTapBridgeCounters c = d.bridges[i]->GetCounters();
    uint64_t tx = 0;
    uint64_t rx = 0;
    for (uint8_t p = 0; p < ns3::kEthPriorities; ++p)
    {
        tx += port->GetCounters().txFrames[p];
        rx += port->GetCounters().rxFrames[p];
    }
    nlohmann::json h = {{"name", d.hostNames[i]},
                        {"netns", d.netns[i]},
                        {"ip", Ipv4Text(d.roceRail.ips[i])},
                        {"mac", d.roceRail.macs[i]},
                        {"port_tx_frames", tx},
                        {"port_rx_frames", rx},
                        {"pfc_sent", port->GetCounters().pfcFramesSent},
                        {"pfc_received", port->GetCounters().pfcFramesReceived},
                        {"from_host_frames", c.framesFromHost},
                        {"to_host_frames", c.framesToHost},
                        {"sent_to_fabric", c.sentToFabric},
                        {"refused_by_port", c.refusedByPort},
                        {"rx_ring_overruns", c.rxRingOverruns},
                        {"pending_frames", d.bridges[i]->GetPendingFrames()},
                        {"to_host_errors", c.toHostErrors},
                        {"to_host_ring_full", c.toHostRingFull},
                        {"to_host_by_writer", c.writtenByWriter},
                        {"drops", DropsJson(*port)},
                        {"offload",
                         {{"checksum", c.checksumOffload},
                          {"segmentation", c.segmentationOffload},
                          {"coalescing", c.receiveCoalescing},
                          {"reads_from_host", c.readsFromHost},
                          {"gso_from_host", c.gsoFromHost},
                          {"segments_from_gso", c.segmentsFromGso},
                          {"checksums_filled", c.checksumsFilled},
                          {"refused", c.offloadRefused},
                          {"tso_held_back", c.tsoHeldBack},
                          {"writes_to_host", c.writesToHost},
                          {"coalesced_writes", c.coalescedWrites},
                          {"coalesced_segments", c.coalescedSegments},
                          {"flush_idle", c.flushIdle},
                          {"flush_hold", c.flushHold}}},
                        {"verbs", VerbsJson(d.roceRail, i)}};
    h["rdma_cm"] = CmJson(d, i);
    return h;
}

/// The live status. Simulation thread. A host of a RoCE or InfiniBand fabric is its adapter's
/// object; a hybrid fabric's host is its RoCE NIC's (eth0) with its HCA's under "ib".
nlohmann::json
StatusJson(const Daemon& d)
{
    nlohmann::json j;
    j["name"] = d.opt.name;
    j["fabric"] = d.opt.fabric;
    j["lag"] = LagJson();
    j["control_dropped"] = d.controlDropped.load();
    j["hosts"] = nlohmann::json::array();
    for (size_t i = 0; i < d.hostNames.size(); ++i)
    {
        if (!d.HasRoce())
        {
            j["hosts"].push_back(IbHostJson(d, i));
            continue;
        }
        j["hosts"].push_back(RoceHostJson(d, i));
        if (d.HasIb())
        {
            j["hosts"].back()["ib"] = IbHostJson(d, i);
        }
    }
    if (d.HasIb())
    {
        j["sm"] = d.sm ? SmJson(d) : nlohmann::json(nullptr);
        j["sma_refusals"] = SmaRefusalsJson(d);
        // Copies the InfiniBand switches made of multicast packets (beyond each one's first
        // output), whichever SM wrote their MFTs.
        uint64_t copies = 0;
        for (uint32_t n = 0; n < d.ib.switches.GetN(); ++n)
        {
            if (auto sw = d.ib.switches.Get(n)->GetObject<ns3::IbSwitch>())
            {
                copies += sw->GetMulticastCopies();
            }
        }
        j["ib_multicast_copies"] = copies;
    }
    if (!d.HasRoce())
    {
        return j;
    }
    j["switches"] = nlohmann::json::array();
    for (uint32_t n = 0; n < d.eth.switchAt.size(); ++n)
    {
        auto sw = d.eth.switchAt[n];
        if (!sw)
        {
            continue;
        }
        uint64_t pfcSent = 0;
        nlohmann::json drops = nlohmann::json::object();
        for (const auto& port : d.eth.ports[n])
        {
            pfcSent += port->GetCounters().pfcFramesSent;
            const nlohmann::json portDrops = DropsJson(*port); // outlives the loop over it
            for (const auto& item : portDrops.items())
            {
                drops[item.key()] =
                    drops.value(item.key(), uint64_t(0)) + item.value().get<uint64_t>();
            }
        }
        j["switches"].push_back({{"name", d.ethTopology.nodes[n].name},
                                 {"forwarded", sw->GetForwarded()},
                                 {"multicast_copies", sw->GetMulticastCopies()},
                                 {"multicast_pruned", sw->GetMulticastPruned()},
                                 {"ecn_marked", sw->GetEcnMarked()},
                                 {"pfc_sent", pfcSent},
                                 {"drops", drops}});
    }
    if (d.ethMulticast)
    {
        // The fabric's multicast routes, as the hosts' rdma_cm joins made them.
        j["roce_multicast"] = {{"groups", d.ethMulticast->GetNGroups()},
                               {"joins", d.ethMulticast->GetJoins()},
                               {"leaves", d.ethMulticast->GetLeaves()},
                               {"routes_written", d.ethMulticast->GetRoutesWritten()}};
    }
    j["captures"] = d.captures.size();
    return j;
}

/// The node of `topology` and 1-based port number "HOST" (its NIC, port 1) or "NODE:PORT" names.
std::optional<std::pair<uint32_t, uint32_t>>
ParsePortSpec(const ns3::Topology& topology, const std::string& spec)
{
    std::string node = spec;
    uint32_t portNo = 1;
    if (auto c = spec.rfind(':'); c != std::string::npos)
    {
        node = spec.substr(0, c);
        try
        {
            portNo = static_cast<uint32_t>(std::stoul(spec.substr(c + 1)));
        }
        catch (const std::exception&)
        {
            return std::nullopt;
        }
    }
    auto idx = topology.Find(node);
    if (!idx || portNo < 1)
    {
        return std::nullopt;
    }
    return std::make_pair(*idx, portNo);
}

/// Finds a RoCE port by its spec. Simulation thread.
ns3::Ptr<ns3::EthNetDevice>
FindPort(const Daemon& d, const std::string& spec)
{
    auto p = ParsePortSpec(d.ethTopology, spec);
    if (!p || p->second > d.eth.ports[p->first].size())
    {
        return nullptr;
    }
    return d.eth.ports[p->first][p->second - 1];
}

/// Finds an InfiniBand port by its spec. Simulation thread.
ns3::Ptr<ns3::IbNetDevice>
FindIbPort(const Daemon& d, const std::string& spec)
{
    auto p = ParsePortSpec(d.topology, spec);
    if (!p || p->second > d.ib.ports[p->first].size())
    {
        return nullptr;
    }
    return d.ib.ports[p->first][p->second - 1];
}

/// One request line from a control connection; returns the answer, or "" to keep the
/// connection open (a capture runs until it closes).
std::string
HandleRequest(Daemon& d, int conn, const std::string& line)
{
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    if (verb == "status")
    {
        auto out = std::make_shared<std::string>();
        Daemon* dp = &d;
        if (!RunInSimulation([dp, out]() { *out = StatusJson(*dp).dump(); }, 3.0))
        {
            // The model is too far behind to answer: say so with what other threads can read.
            nlohmann::json j{{"name", d.opt.name},
                             {"lag", LagJson()},
                             {"error", "the simulation thread did not answer within 3 s"}};
            return j.dump();
        }
        return *out;
    }
    if (verb == "capture")
    {
        std::string spec;
        std::string path;
        in >> spec;
        std::getline(in >> std::ws, path);
        if (spec.empty() || path.empty())
        {
            return nlohmann::json{{"error", "usage: capture PORT FILE"}}.dump();
        }
        auto err = std::make_shared<std::string>();
        Daemon* dp = &d;
        RunInSimulation(
            [dp, conn, spec0 = spec, path, err]() {
                Capture c;
                // A hybrid fabric's port is named with its fabric first: "ib/h0", "roce/s1:2"
                // (cnuas capture --fabric).
                std::string spec = spec0;
                bool ib = !dp->HasRoce();
                if (dp->Hybrid())
                {
                    const auto slash = spec.find('/');
                    const std::string rail =
                        slash == std::string::npos ? "" : spec.substr(0, slash);
                    if (rail != "ib" && rail != "roce")
                    {
                        *err = "this hybrid fabric has two: name the port's fabric "
                               "(cnuas capture --fabric ib|roce)";
                        return;
                    }
                    ib = rail == "ib";
                    spec = spec.substr(slash + 1);
                }
                if (ib)
                {
                    c.ibPort = FindIbPort(*dp, spec);
                    if (!c.ibPort)
                    {
                        *err = "no port '" + spec + "' (a host name, or NODE:PORT)";
                        return;
                    }
                    c.ibFile = std::make_shared<ns3::IbErfPcapWriter>();
                    if (!c.ibFile->Open(path))
                    {
                        *err = "cannot write " + path;
                        return;
                    }
                    c.handle = c.ibPort->AddSniffer(
                        ns3::MakeBoundCallback(&WriteErfRecord, c.ibFile));
                    dp->captures[conn] = c;
                    return;
                }
                c.port = FindPort(*dp, spec);
                if (!c.port)
                {
                    *err = "no port '" + spec + "' (a host name, or NODE:PORT)";
                    return;
                }
                c.file = ns3::EthPcapHelper::Enable(c.port, path, &c.handle);
                if (!c.file)
                {
                    *err = "cannot write " + path;
                    return;
                }
                dp->captures[conn] = c;
            },
            3.0);
        if (!err->empty())
        {
            return nlohmann::json{{"error", *err}}.dump();
        }
        return nlohmann::json{{"ok", "capturing " + spec + " to " + path}}.dump();
    }
    if (verb == "sm")
    {
        // The built-in SM at run time (issue 14): "sm start [PRIORITY]", "sm stop".
        std::string what;
        in >> what;
        int priority = -1;
        std::string p;
        if (in >> p)
        {
            uint64_t v = 0;
            if (!ns3::ParseDecimalUint(p, 15, &v))
            {
                return nlohmann::json{{"error", "priority '" + p + "': 0 to 15"}}.dump();
            }
            priority = static_cast<int>(v);
        }
        if (what != "start" && what != "stop")
        {
            return nlohmann::json{{"error", "usage: sm start [PRIORITY] | sm stop"}}.dump();
        }
        auto answer = std::make_shared<nlohmann::json>();
        Daemon* dp = &d;
        if (!RunInSimulation(
                [dp, what, priority, answer]() {
                    if (!dp->sm)
                    {
                        *answer = {{"error", "this fabric has no built-in subnet manager "
                                             "(InfiniBand fabrics only)"}};
                        return;
                    }
                    if (what == "stop")
                    {
                        if (!dp->sm->IsRunning())
                        {
                            *answer = {{"error", "the built-in subnet manager is not running"}};
                            return;
                        }
                        dp->sm->Stop();
                        *answer = {{"ok", "built-in subnet manager stopped"}};
                        return;
                    }
                    if (dp->sm->IsRunning())
                    {
                        *answer = {{"error", "the built-in subnet manager is already running "
                                             "(stop it first to change its priority)"}};
                        return;
                    }
                    if (priority >= 0)
                    {
                        dp->sm->SetAttribute("Priority", ns3::UintegerValue(priority));
                    }
                    dp->sm->Start();
                    *answer = {{"ok", "built-in subnet manager started on " +
                                          (dp->hostNames.empty() ? std::string("?")
                                                                 : dp->hostNames[0]) +
                                          ", priority " +
                                          std::to_string(dp->sm->GetPriority())}};
                },
                3.0))
        {
            return nlohmann::json{{"error", "the simulation thread did not answer within 3 s"}}
                .dump();
        }
        return answer->dump();
    }
    return nlohmann::json{{"error", "unknown request '" + verb + "'"}}.dump();
}

void
EndCapture(Daemon& d, int conn)
{
    Daemon* dp = &d;
    RunInSimulation(
        [dp, conn]() {
            auto it = dp->captures.find(conn);
            if (it != dp->captures.end())
            {
                it->second.End();
                dp->captures.erase(it);
            }
        },
        3.0);
}

/// A connection to the control socket: its request line as it arrives, then the answer as it
/// leaves, without blocking (a client that dribbles its request or does not read its answer
/// cannot hold the thread, the other clients or the daemon's exit); after a capture's answer,
/// the connection stays open until the client closes it.
struct ControlConn
{
    std::string in;
    std::string out;
    size_t sent = 0;
    bool answered = false; ///< `out` holds the answer
    bool capture = false;  ///< the answer started a capture (it ends when the client closes)
    std::chrono::steady_clock::time_point deadline;

    /// Whether the whole answer has gone (then only a capture keeps the connection open).
    bool AnswerSent() const { return answered && sent == out.size(); }
};

/// How long a client has from connecting to the end of the answer (the request takes up to
/// 3 s on the simulation thread).
constexpr auto kControlDeadline = std::chrono::seconds(10);
/// Connections served at once; a new one beyond them ends the oldest unfinished one.
constexpr size_t kControlConnections = 32;
/// A request line's bytes at most.
constexpr size_t kControlLineBytes = 4096;

/// Reads what `fd` has of its request; once the line is whole (or the client has shut down its
/// side, or it reached kControlLineBytes), answers it. False when the connection is to be closed
/// without an answer (the client went before saying anything).
bool
ControlRead(Daemon& d, int fd, ControlConn& c)
{
    char buf[512];
    bool eof = false;
    while (c.in.size() < kControlLineBytes)
    {
        const ssize_t n = read(fd, buf, std::min(sizeof(buf), kControlLineBytes - c.in.size()));
        if (n > 0)
        {
            c.in.append(buf, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
        {
            break;
        }
        eof = true;
        break;
    }
    const size_t nl = c.in.find('\n');
    if (nl == std::string::npos && !eof && c.in.size() < kControlLineBytes)
    {
        return true; // more to come
    }
    if (nl == std::string::npos && c.in.empty())
    {
        return false;
    }
    const std::string line = c.in.substr(0, nl);
    c.out = HandleRequest(d, fd, line) + "\n";
    c.answered = true;
    c.capture = line.rfind("capture", 0) == 0 && c.out.find("\"ok\"") != std::string::npos;
    return true;
}

/// The control socket: status queries, captures and the SM's start and stop. One thread, poll
/// over the listening socket, the stop eventfd and the connections (non-blocking).
void
ControlLoop(Daemon* d, int listenFd)
{
    std::map<int, ControlConn> conns;
    auto drop = [d, &conns](int fd) {
        if (conns.at(fd).capture)
        {
            EndCapture(*d, fd);
        }
        close(fd);
        conns.erase(fd);
    };
    while (true)
    {
        std::vector<pollfd> fds{{listenFd, POLLIN, 0}, {d->stopFd, POLLIN, 0}};
        auto now = std::chrono::steady_clock::now();
        int timeoutMs = -1;
        for (const auto& [fd, c] : conns)
        {
            const bool writing = c.answered && c.sent < c.out.size();
            fds.push_back({fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0});
            if (!c.answered || writing)
            {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    c.deadline - now);
                const int ms = static_cast<int>(std::max<int64_t>(0, left.count()));
                timeoutMs = timeoutMs < 0 ? ms : std::min(timeoutMs, ms);
            }
        }
        if (poll(fds.data(), fds.size(), timeoutMs) < 0)
        {
            if (errno == EINTR)
            {
                continue;
            }
            break;
        }
        if (fds[1].revents != 0)
        {
            break;
        }
        now = std::chrono::steady_clock::now();
        for (size_t i = 2; i < fds.size(); ++i)
        {
            const int fd = fds[i].fd;
            ControlConn& c = conns.at(fd);
            if (c.AnswerSent()) // a capture running
            {
                char b[64];
                if (fds[i].revents != 0 && read(fd, b, sizeof(b)) <= 0) // closed: it ends
                {
                    drop(fd);
                }
                continue;
            }
            if (!c.answered && fds[i].revents != 0 && !ControlRead(*d, fd, c))
            {
                drop(fd);
                continue;
            }
            if (c.answered && c.sent < c.out.size() && fds[i].revents != 0)
            {
                const ssize_t n = send(fd, c.out.data() + c.sent, c.out.size() - c.sent,
                                       MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                {
                    drop(fd); // the client went away
                    continue;
                }
                c.sent += n > 0 ? static_cast<size_t>(n) : 0;
            }
            if (c.AnswerSent() && !c.capture)
            {
                drop(fd);
                continue;
            }
            if (!c.AnswerSent() && now >= c.deadline)
            {
                ++d->controlDropped; // too slow to ask, or to take the answer
                drop(fd);
            }
        }
        if ((fds[0].revents & POLLIN) != 0)
        {
            while (true)
            {
                const int conn = accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (conn < 0)
                {
                    break;
                }
                if (conns.size() >= kControlConnections)
                {
                    // Full: the oldest request not yet done makes room, so that a crowd of
                    // silent clients cannot shut the others out (running captures stay).
                    auto oldest = conns.end();
                    for (auto it = conns.begin(); it != conns.end(); ++it)
                    {
                        if (!it->second.AnswerSent() &&
                            (oldest == conns.end() ||
                             it->second.deadline < oldest->second.deadline))
                        {
                            oldest = it;
                        }
                    }
                    if (oldest == conns.end())
                    {
                        close(conn); // every slot a capture
                        continue;
                    }
                    ++d->controlDropped;
                    drop(oldest->first);
                }
                conns[conn].deadline = now + kControlDeadline;
            }
        }
    }
    // The simulation has stopped: the daemon ends what is still captured (DaemonMain).
    for (const auto& [fd, c] : conns)
    {
        close(fd);
    }
}

void
Report(int fd, const std::string& line)
{
    if (fd >= 0)
    {
        const std::string l = line + "\n";
        if (write(fd, l.data(), l.size()) < 0)
        {
            // the parent went away; the daemon goes on
        }
    }
}

/// Where --pcap DIR puts host i's capture: DIR/HOST.pcap, or DIR/HOST-IFNAME.pcap for each
/// adapter of a hybrid fabric's host.
std::string
PcapPath(const Daemon& d, size_t i, const std::string& ifname)
{
    return d.opt.pcapDir + "/" + d.hostNames[i] + (d.Hybrid() ? "-" + ifname : "") + ".pcap";
}

/**
 * Host i's NIC on `rail`: a TAP (its descriptor returned, -1 with the reason on failure) made
 * inside the host's namespace as the rail's interface, with the host's MAC and address on
 * it and `mtu`; with `vnetHeader` the TAP carries virtio headers (the bridge's offloads). The
 * namespace is made with the first rail's NIC (a hybrid fabric's hosts have two).
 */
int
MakeHostNic(const Daemon& d,
            const HostRail& rail,
            size_t i,
            unsigned mtu,
            bool vnetHeader,
            std::string* why)
{
    const bool first = &rail == d.Rails().front();
    EmuHostConfig cfg;
    cfg.netns = d.netns[i];
    cfg.createNetns = first;
    cfg.hostname = d.hostNames[i];
    cfg.ifname = rail.ifname;
    cfg.vnetHeader = vnetHeader;
    cfg.mac = rail.macs[i];
    cfg.ipCidr = Ipv4Text(rail.ips[i]) + "/" + std::to_string(rail.prefixLen);
    cfg.mtu = mtu;
    const int fd = CreateEmuHost(cfg, why);
    if (fd < 0)
    {
        *why = "host " + d.hostNames[i] + ": " + *why;
        return -1;
    }
    // `up` shows how far the hosts are (a k=16 fabric takes seconds); a hybrid's hosts are
    // made once per rail.
    const size_t rails = d.Rails().size();
    const size_t made = (first ? 0 : d.hostNames.size()) + i + 1;
    if ((i + 1) % 32 == 0 || i + 1 == d.hostNames.size())
    {
        Report(d.readyFd, "progress " + std::to_string(made) + " " +
                              std::to_string(d.hostNames.size() * rails));
    }
    return fd;
}

/// Host i's HCA service on `rail`: its processes' verbs reach the adapter through a socket in
/// the state directory. A hybrid fabric's hosts have two adapters, named as two single-port
/// adapters are: cnuas_0 (the InfiniBand HCA) and cnuas_1 (the RoCE NIC).
/// False with the reason.
bool
StartHcaService(Daemon& d,
                HostRail& rail,
                size_t i,
                ns3::Ptr<ns3::RdmaDevice> device,
                ns3::Ptr<ns3::RdmaEngine> engine,
                ns3::Ptr<ns3::RdmaLinkPort> port,
                ns3::Ptr<ns3::IbNetDevice> ibPort,
                ns3::Ptr<ns3::EthNetDevice> ethPort,
                std::string* why)
{
    const std::string path = HcaSocketPath(d.dir, d.opt.name, d.hostNames[i]) +
                             (d.Hybrid() ? (ibPort ? ".ib" : ".roce") : "");
    auto svc = ns3::CreateObject<ns3::EmuHcaService>();
    if (d.Hybrid())
    {
        svc->SetAttribute("DeviceName", ns3::StringValue(ibPort ? "cnuas_0" : "cnuas_1"));
    }
    if (!svc->Start(path, device, engine, port, ibPort, ethPort, why))
    {
        *why = "host " + d.hostNames[i] + " HCA: " + *why;
        return false;
    }
    rail.hcaServices.push_back(svc);
    rail.hcaSockets.push_back(path);
    return true;
}

/// umad (issue 14): host i's management interfaces (SMI/GSI of its HCA port) for the umad
/// library, through a socket beside the HCA's. Started after the built-in SM, in front of
/// which it chains itself as the node's manager. False with the reason.
bool
StartUmadService(Daemon& d, size_t i, std::string* why)
{
    const std::string path = d.dir + "/" + d.opt.name + "." + d.hostNames[i] + ".umad";
    ns3::Ptr<ns3::Node> node = d.ib.hosts.Get(static_cast<uint32_t>(i));
    auto svc = ns3::CreateObject<ns3::EmuUmadService>();
    // The CA is the verbs device: one name and firmware version for both libraries.
    if (i < d.ibRail.hcaServices.size())
    {
        ns3::StringValue v;
        d.ibRail.hcaServices[i]->GetAttribute("DeviceName", v);
        svc->SetAttribute("CaName", v);
        d.ibRail.hcaServices[i]->GetAttribute("FirmwareVersion", v);
        svc->SetAttribute("FirmwareVersion", v);
    }
    if (!svc->Start(path, ns3::IbMgmtHelper::GetDispatcher(node),
                    d.ib.HostPort(static_cast<uint32_t>(i))->GetPortNumber(), why))
    {
        *why = "host " + d.hostNames[i] + " umad: " + *why;
        return false;
    }
    d.umadServices.push_back(svc);
    d.umadSockets.push_back(path);
    return true;
}

/// Host i's adapter on `rail` for its rdma_cm: a CM agent on QP1 of the adapter's port
/// (`attach` puts it there). StartCmServices starts the host's rdma_cm with its adapters.
void
AddCmAdapter(HostRail& rail,
             size_t i,
             ns3::Ptr<ns3::RdmaLinkPort> port,
             uint64_t caGuid,
             const std::function<void(ns3::Ptr<ns3::IbCmAgent>)>& attach)
{
    auto agent = ns3::CreateObject<ns3::IbCmAgent>();
    agent->SetCaGuid(caGuid);
    attach(agent);
    ns3::EmuCmService::Adapter a;
    a.agent = agent;
    a.port = port;
    a.ip = rail.ips[i];
    a.prefixLen = rail.prefixLen;
    a.nodeGuid = rail.hcaServices[i]->GetNodeGuid();
    rail.cmAdapters.push_back(a);
}

/// Every host's rdma_cm, with its adapters in the device list's order (a hybrid host's HCA,
/// then its NIC), each resolving the addresses of its own fabric's hosts; the service Cnuas's
/// librdmacm reaches through a socket beside the HCA's. "" or the problem.
std::string
StartCmServices(Daemon& d)
{
    const std::vector<const HostRail*> rails = d.Rails();
    std::vector<std::vector<ns3::EmuCmService::Peer>> peers(rails.size());
    for (size_t k = 0; k < rails.size(); ++k)
    {
        if (rails[k] == &d.ibRail)
        {
            continue; // InfiniBand resolves by IPoIB's ARP, not from a list of hosts
        }
        for (size_t i = 0; i < rails[k]->cmAdapters.size(); ++i)
        {
            peers[k].push_back({rails[k]->ips[i], rails[k]->cmAdapters[i].port});
        }
    }
    for (size_t i = 0; i < d.hostNames.size(); ++i)
    {
        std::vector<ns3::EmuCmService::Adapter> adapters;
        for (const HostRail* rail : rails)
        {
            adapters.push_back(rail->cmAdapters.at(i));
        }
        const std::string path = d.dir + "/" + d.opt.name + "." + d.hostNames[i] + ".cm";
        auto svc = ns3::CreateObject<ns3::EmuCmService>();
        std::string why;
        if (!svc->Start(path, adapters, &why))
        {
            return "host " + d.hostNames[i] + " rdma_cm: " + why;
        }
        for (size_t k = 0; k < rails.size(); ++k)
        {
            if (rails[k] == &d.ibRail)
            {
                // InfiniBand: addresses resolve by IPoIB's ARP (the adapter's neighbour table).
                d.ipoib.at(i)->TraceConnectWithoutContext(
                    "NeighbourLearnt",
                    ns3::Callback<void, uint32_t, const ns3::IbGid&>(
                        [svc, k](uint32_t ip, const ns3::IbGid&) { svc->NeighbourLearnt(k, ip); }));
            }
            else
            {
                svc->SetPeers(k, peers[k]);
            }
            if (i < rails[k]->madDispatchers.size())
            {
                // In front of the node's other managers (the umad service): SA answers to this
                // rdma_cm's joins are its own, everything else passes on.
                ns3::Ptr<ns3::IbMadDispatcher> disp = rails[k]->madDispatchers[i];
                const ns3::IbMadDispatcher::MadHandler next = disp->GetManagerHandler();
                disp->SetManagerHandler(ns3::IbMadDispatcher::MadHandler(
                    [svc, k, next](const ns3::IbReceivedMad& m) {
                        if (!svc->TakeSaResponse(k, m.view.mad.data()) && !next.IsNull())
                        {
                            next(m);
                        }
                    }));
            }
        }
        d.cmServices.push_back(svc);
        d.cmSockets.push_back(path);
    }
    return "";
}

/// The RoCE fabric and its hosts: a TAP per host bridged to its Ethernet port. "" or the
/// problem.
std::string
BuildRoceHosts(Daemon& d)
{
    std::string why;
    ns3::EthFabricHelper helper;
    try
    {
        if (!d.opt.hostRate.empty())
        {
            helper.SetHostLinkRate(ns3::DataRate(d.opt.hostRate));
        }
        if (!d.opt.fabricRate.empty())
        {
            helper.SetFabricLinkRate(ns3::DataRate(d.opt.fabricRate));
        }
        d.eth = helper.Build(d.ethTopology);
    }
    catch (const std::exception& e)
    {
        return std::string("cannot build the fabric: ") + e.what();
    }
    // Each host's RDMA NIC on its port; the TAP bridge below takes the port's frames and
    // passes the NIC's own (RoCEv2 of the host's verbs) back to it.
    d.roceHcas = ns3::RoceHelper().Install(d.eth);
    HostRail& rail = d.roceRail;
    rail.ifname = kRoceInterface;
    // The model's addresses (10.0.0.<i+1>, RoCE GIDs are made from them); a hybrid fabric's
    // hosts keep 10.1/16 for IPoIB, so there eth0 has a /16 (65,534 hosts).
    rail.prefixLen = d.Hybrid() ? 16 : 8;
    for (size_t i = 0; i < d.hostNames.size(); ++i)
    {
        auto port = d.eth.HostPort(static_cast<uint32_t>(i));
        rail.ips.push_back(d.eth.HostIp(static_cast<uint32_t>(i)));
        rail.macs.push_back(MacText(port->GetMac()));
    }
    for (size_t i = 0; i < d.hostNames.size(); ++i)
    {
        auto port = d.eth.HostPort(static_cast<uint32_t>(i));
        auto bridge = ns3::CreateObject<ns3::EthTapBridge>();
        const int fd =
            MakeHostNic(d, rail, i, port->GetMtu(), bridge->NeedsVnetHeader(), &why);
        if (fd < 0)
        {
            return why;
        }
        const int probe = OpenPacketSocketListInNetns(d.netns[i], &why);
        if (probe < 0)
        {
            return "host " + d.hostNames[i] + ": " + why;
        }
        bridge->SetCaptureProbe(probe);
        const ns3::RoceHca& hca = d.roceHcas[i];
        bridge->SetModelFrameCallback(ns3::MakeCallback(&ns3::RoceRdmaPort::Deliver, hca.port));
        if (!bridge->Start(port, fd, &why))
        {
            return "host " + d.hostNames[i] + ": " + why;
        }
        d.bridges.push_back(bridge);
        if (!StartHcaService(d, rail, i, hca.device, hca.engine, hca.port, nullptr, port, &why))
        {
            return why;
        }
        // RoCEv2's UDP port belongs to the NIC: the kernel gets a socket there (so the copies
        // of the HCA's frames written for tcpdump draw no ICMP), which is drained.
        const int sink = OpenUdpSinkInNetns(d.netns[i], 4791, &why);
        if (sink < 0)
        {
            return "host " + d.hostNames[i] + ": " + why;
        }
        d.udpSinks.push_back(sink);
        {
            // A RoCE adapter's CA GUID is its node GUID (EUI-64 of the MAC).
            ns3::Ptr<ns3::RoceRdmaPort> rocePort = hca.port;
            AddCmAdapter(rail, i, hca.port, rail.hcaServices[i]->GetNodeGuid(),
                         [rocePort](ns3::Ptr<ns3::IbCmAgent> a) {
                             ns3::EmuCmAttachToRocePort(a, rocePort);
                         });
            // The port's groups, counted: the rdma_cm's joins (their IGMP reports, in effect)
            // and the QPs attached to a group on the port (ibv_attach_mcast sends no IGMP; the
            // NIC steers the group to them, and a switch floods unregistered groups to every
            // port of the VLAN: here the routes take the port instead, docs/emulation.md §8.8)
            // keep the port in the group's routes until the last of them goes.
            if (!d.ethMulticast)
            {
                d.ethMulticast = ns3::CreateObject<ns3::EthMulticastRouter>();
            }
            ns3::Ptr<ns3::EthMulticastRouter> router = d.ethMulticast;
            auto held = std::make_shared<std::map<std::array<uint8_t, 16>, uint32_t>>();
            auto membership = [router, port, held](const std::array<uint8_t, 16>& group,
                                                   bool join) {
                auto it = held->find(group);
                if (join)
                {
                    if (it != held->end())
                    {
                        ++it->second;
                        return true;
                    }
                    if (!router->Join(port, group))
                    {
                        return false;
                    }
                    (*held)[group] = 1;
                    return true;
                }
                if (it == held->end())
                {
                    return false;
                }
                if (--it->second == 0)
                {
                    held->erase(it);
                    return router->Leave(port, group);
                }
                return true;
            };
            rail.cmAdapters.back().ethMembership =
                ns3::Callback<bool, const std::array<uint8_t, 16>&, bool>(membership);
            hca.device->TraceConnectWithoutContext(
                "McastAttach",
                ns3::Callback<void, const ns3::RdmaGid&, uint16_t, bool>(
                    [membership](const ns3::RdmaGid& gid, uint16_t, bool attached) {
                        membership(gid, attached);
                    }));
        }
        ns3::EmuRealtimeSimulatorImpl::Current()->WatchFd(sink, ns3::Simulator::NO_CONTEXT, [sink]() {
            char buf[64];
            while (recv(sink, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC) >= 0)
            {
            }
        });
        if (!d.opt.pcapDir.empty())
        {
            const std::string f = PcapPath(d, i, kRoceInterface);
            auto file = ns3::EthPcapHelper::Enable(port, f);
            if (!file)
            {
                return "cannot write " + f;
            }
            d.pcaps.push_back(file);
        }
    }
    return "";
}

/// The InfiniBand fabric and its hosts: management agents in every node, the built-in SM on
/// the first host unless --sm none, an IPoIB interface (ib0) per host bridged to its HCA port,
/// and the management network (mgmt0) beside the fabric. "" or the problem.
std::string
BuildIbHosts(Daemon& d)
{
    std::string why;
    try
    {
        d.ib = ns3::IbFabricHelper().Build(d.topology);
    }
    catch (const std::exception& e)
    {
        return std::string("cannot build the fabric: ") + e.what();
    }
    // Every node answers management: SMA and PMA behind its SMI/GSI (IBA vol. 1 ch. 13-16).
    ns3::IbMgmtHelper().Install(d.ib);
    // Every switch has a congestion-control agent (class 0x21, IBA vol. 1 annex A10) over its
    // marker, as HDR switches do: `ibccquery` reads it and `ibccconfig` (or a CC manager such as
    // opensm's) configures it. Out of the box its thresholds are 0, which marks nothing, so the
    // fabric behaves as without it until someone turns it on.
    ns3::IbCcHelper().InstallAgents(d.ib, {});
    // umad (issue 14): every node describes itself by its topology name whichever SM runs, as
    // a host's kernel sets its NodeDescription from the host name and a switch has its own
    // (ibnetdiscover, iblinkinfo and saquery show them).
    for (uint32_t n = 0; n < d.ib.nodes.GetN() && n < d.ib.topology.nodes.size(); ++n)
    {
        if (auto sma = ns3::IbMgmtHelper::GetSma(d.ib.nodes.Get(n)))
        {
            sma->SetAttribute("NodeDescription", ns3::StringValue(d.ib.topology.nodes[n].name));
            // A single-adapter system's image GUID is its node GUID, as a ConnectX reports it
            // and as the verbs device says (ibv_devinfo's sys_image_guid): ibstat and
            // ibnetdiscover (sysimgguid) then agree with it.
            sma->SetAttribute("SystemImageGuid", ns3::UintegerValue(sma->GetNodeGuid()));
        }
    }
    // The built-in SM is always there on the first host, running from the start with
    // --sm builtin, stopped with --sm none until `cnuas sm start`: installed before the umad
    // services so that they chain in front of it (they pass it what is not a process's).
    if (d.ib.hosts.GetN() > 0)
    {
        ns3::IbSmHelper smh;
        smh.SetSmAttribute("Priority", ns3::UintegerValue(d.opt.smPriority));
        smh.SetSmAttribute("PartitionConfig", ns3::StringValue(d.opt.partitions));
        // As many data VLs as the ports have, which is what opensm enables (its max_op_vls,
        // 15, capped by each link's VLCap): the two SMs then configure the links alike, and a
        // handover either way changes no port's OperationalVLs (opensm would take a CA port
        // Down to change them, and a switch port that carries data refuses a change,
        // §14.2.5.6). Unless the user chose a value with --set.
        bool userVls = false;
        bool userSmInfoTimeout = false;
        bool userSweepInterval = false;
        for (const auto& setting : d.opt.settings)
        {
            userVls = userVls || setting.name.find("IbSubnetManager::OperationalVls") !=
                                     std::string::npos;
            userSmInfoTimeout = userSmInfoTimeout ||
                                setting.name.find("IbSubnetManager::SmInfoTimeout") !=
                                    std::string::npos;
            userSweepInterval = userSweepInterval ||
                                setting.name.find("IbSubnetManager::SweepInterval") !=
                                    std::string::npos;
        }
        if (!userSweepInterval)
        {
            // A light sweep (SwitchInfo of every switch) and a standby's poll of the master
            // every second of wall time: a tenth of opensm's sweep_interval, so that a change
            // that sends no trap is still seen within a second (traps start a heavy sweep at
            // once). The simulation default, 10 ms of simulated time, is 100 light sweeps a
            // second in real time: on an idle k=8 fat-tree 8,000 SMPs a second crossing it.
            smh.SetSmAttribute("SweepInterval",
                               ns3::TimeValue(ns3::Seconds(1.0 / d.opt.dilation)));
        }
        if (!userSmInfoTimeout)
        {
            // Another SM here is a process (opensm) whose answers cross the host's umad
            // interface and the process's scheduling: give it opensm's own transaction timeout,
            // 200 ms of wall time, not the 100 us an adapter's agent needs.
            smh.SetSmAttribute("SmInfoTimeout",
                               ns3::TimeValue(ns3::Seconds(0.2 / d.opt.dilation)));
        }
        if (!userVls)
        {
            const uint8_t cap = d.ib.HostPort(0)->GetVlCap();
            uint8_t vls = 1;
            for (uint8_t n : ns3::IbDataVlCounts())
            {
                vls = n <= cap ? std::max(vls, n) : vls;
            }
            smh.SetSmAttribute("OperationalVls", ns3::UintegerValue(vls));
        }
        d.sm = smh.Install(d.ib, d.ib.hosts.Get(0), ns3::MicroSeconds(2), d.opt.sm == "builtin");
    }
    if (!d.opt.pcapDir.empty())
    {
        // From time zero: the subnet manager's sweep is the most instructive traffic.
        d.ibPcap = std::make_unique<ns3::IbPcapHelper>();
        for (size_t i = 0; i < d.hostNames.size(); ++i)
        {
            const std::string f = PcapPath(d, i, kIpoibInterface);
            if (!d.ibPcap->Enable(d.ib.HostPort(static_cast<uint32_t>(i)), f))
            {
                return "cannot write " + f;
            }
        }
    }
    // The management network (mgmt0) carries the TCP bootstrap of verbs programs whatever the
    // fabric's state; a hybrid fabric's hosts have eth0 on the RoCE fabric for that.
    const bool management = !d.mgmtNetns.empty();
    if (management && !CreateManagementBridge(d.mgmtNetns, &why))
    {
        return "management network: " + why;
    }
    // Each host's HCA (RDMA device, engine, port) on its CA port; the IPoIB bridge below takes
    // the port's packets and passes those for the HCA's QPs back to it.
    d.ibHcas = ns3::RdmaHelper().Install(d.ib);
    HostRail& rail = d.ibRail;
    rail.ifname = kIpoibInterface;
    rail.prefixLen = 16;
    std::vector<std::string> bridgePorts;
    // A locally administered MAC per host for the kernel's view of its IPoIB interface (IPoIB
    // has none; the bridge gives each neighbour one made from its port GUID, 02:<low 40 bits>).
    auto ipoibMac = [](size_t i) { return 0x021B00000000ULL + i + 1; };
    for (size_t i = 0; i < d.hostNames.size(); ++i)
    {
        // 10.0.0.<i+1>/16; 10.1.0.<i+1>/16 on a hybrid fabric, whose eth0 has 10.0/16.
        const uint32_t ip = ns3::EthFabricHelper::HostAddress(static_cast<uint32_t>(i)) +
                            (d.Hybrid() ? kHybridIbOffset : 0u);
        rail.ips.push_back(ip);
        rail.macs.push_back(MacText(ipoibMac(i)));
        if (management)
        {
            d.mgmtIps.push_back(Ipv4Text(0x0AFF0000u + static_cast<uint32_t>(i) + 1));
        }
    }
    for (size_t i = 0; i < d.hostNames.size(); ++i)
    {
        // IPoIB datagram mode over a 2048-byte IB MTU (RFC 4391 §3).
        const int fd = MakeHostNic(d, rail, i, 2044, false, &why);
        if (fd < 0)
        {
            return why;
        }
        if (management)
        {
            bridgePorts.push_back("m" + std::to_string(i));
            if (!AttachToManagement(d.netns[i], d.mgmtNetns, bridgePorts.back(),
                                    d.mgmtIps[i] + "/16", &why))
            {
                return "host " + d.hostNames[i] + " management network: " + why;
            }
        }
        auto bridge = ns3::CreateObject<ns3::IbIpoibBridge>();
        const ns3::RdmaHca& hca = d.ibHcas[i];
        bridge->SetOtherFrameCallback(ns3::MakeCallback(&ns3::IbRdmaPort::Deliver, hca.port));
        if (!bridge->Start(d.ib.HostPort(static_cast<uint32_t>(i)), ipoibMac(i), fd, &why))
        {
            return "host " + d.hostNames[i] + ": " + why;
        }
        d.ipoib.push_back(bridge);
        if (!StartHcaService(d, rail, i, hca.device, hca.engine, hca.port,
                             d.ib.HostPort(static_cast<uint32_t>(i)), nullptr, &why))
        {
            return why;
        }
        {
            ns3::Ptr<ns3::IbNetDevice> ibPort = d.ib.HostPort(static_cast<uint32_t>(i));
            ns3::Ptr<ns3::IbMadDispatcher> disp =
                ns3::IbMgmtHelper::GetDispatcher(d.ib.hosts.Get(static_cast<uint32_t>(i)));
            const uint8_t portNumber = ibPort->GetPortNumber();
            AddCmAdapter(rail, i, hca.port, ibPort->GetPortGuid(),
                         [disp, portNumber](ns3::Ptr<ns3::IbCmAgent> a) {
                             ns3::EmuCmAttachToIbPort(a, disp, portNumber);
                         });
            // The rdma_cm's multicast joins ask the SA (MCMemberRecord) at the SM LID the
            // port holds now, as the kernel's ib_sa does.
            rail.cmAdapters.back().sendSa =
                ns3::Callback<bool, const uint8_t*>([disp, ibPort, portNumber](const uint8_t* mad) {
                    const uint16_t smLid = ibPort->GetSmLid();
                    return smLid != 0 && disp->SendGmp(portNumber, mad, smLid, 1, 0);
                });
            // IPoIB asks the same SA for its paths, and takes its answers before the host's
            // other managers (umad's, rdma_cm's, chained in front later) see them.
            bridge->SetSaSender(rail.cmAdapters.back().sendSa);
            // rdma_cm resolves addresses from IPoIB's neighbours and has it ARP for the rest,
            // as the kernel's rdma_resolve_addr does; StartCmServices hears what it learns.
            rail.cmAdapters.back().lookupNeighbour = [bridge](uint32_t ip, ns3::IbGid& gid) {
                return bridge->LookupNeighbour(ip, gid);
            };
            rail.cmAdapters.back().solicitNeighbour = [bridge](uint32_t ip, uint32_t ownIp) {
                return bridge->SolicitNeighbour(ip, ownIp);
            };
            const ns3::IbMadDispatcher::MadHandler next = disp->GetManagerHandler();
            disp->SetManagerHandler(ns3::IbMadDispatcher::MadHandler(
                [bridge, next](const ns3::IbReceivedMad& m) {
                    if (!bridge->TakeSaResponse(m.view.mad.data()) && !next.IsNull())
                    {
                        next(m);
                    }
                }));
            rail.madDispatchers.push_back(disp);
        }
        if (!StartUmadService(d, i, &why)) // umad (issue 14)
        {
            return why;
        }
    }
    if (management && !RaiseManagementPorts(d.mgmtNetns, bridgePorts, &why))
    {
        return "management network: " + why;
    }
    return "";
}

int
DaemonMain(Daemon& d)
{
    const std::string statePath = FabricStatePath(d.dir, d.opt.name);
    // The daemon is the hosts' hardware: NICs, HCAs and switches. The programs on the hosts share
    // this machine's CPUs with it, and verbs programs busy-poll (their completion queues, or
    // memory an RDMA WRITE will change); at the same priority a poller could keep the daemon
    // off the CPU for a scheduler time slice, milliseconds, while it waits for the very
    // completion the daemon would deliver. So the daemon runs ahead of ordinary programs.
    if (setpriority(PRIO_PROCESS, 0, d.opt.niceness) != 0)
    {
        std::fprintf(stderr, "cnuas daemon: cannot raise the priority to nice %d: %s\n",
                     d.opt.niceness, std::strerror(errno));
    }
    // With autogroups (sched_autogroup_enabled, a desktop kernel's default and this machine's)
    // a nice value orders threads within their session only: sessions share the CPUs equally,
    // and the daemon (a session of its own) met 16 ranks of an MPI job as an equal. It waited
    // 28 s on the run queue during a 30 s run, its events up to 46 s late, and UCX's UD
    // transport tripped its own assertions on what came back that late. The session's nice
    // value ranks the whole session; the daemon is its session's only process.
    if (FILE* ag = std::fopen("/proc/self/autogroup", "we"))
    {
        const bool written = std::fprintf(ag, "%d", d.opt.niceness) > 0;
        if (std::fclose(ag) != 0 || !written)
        {
            std::fprintf(stderr, "cnuas daemon: cannot set its session's nice to %d: %s\n",
                         d.opt.niceness, std::strerror(errno));
        }
    }
    // The state file comes first and names every namespace this fabric will make, so that a
    // daemon killed at any point leaves `cnuas down` the list of what to remove.
    d.started = static_cast<long long>(std::time(nullptr));
    nlohmann::json nsList = nlohmann::json::array();
    for (const auto& n : d.netns)
    {
        nsList.push_back(n);
    }
    if (!d.mgmtNetns.empty())
    {
        nsList.push_back(d.mgmtNetns);
    }
    d.state = {{"kind", "fabric"},
               {"name", d.opt.name},
               {"fabric", d.opt.fabric},
               {"pid", static_cast<int>(getpid())},
               {"started", d.started},
               {"phase", "starting"},
               {"namespaces", nsList},
               {"socket", FabricSocketPath(d.dir, d.opt.name)},
               {"log", FabricLogPath(d.dir, d.opt.name)},
               {"dilation", d.opt.dilation}};
    std::string why;
    auto fail = [&](const std::string& msg) {
        Report(d.readyFd, "error " + msg);
        std::fprintf(stderr, "cnuas daemon: %s\n", msg.c_str());
        for (const auto& line : CleanUpFabric(d.state, d.dir))
        {
            std::fprintf(stderr, "cnuas daemon: %s\n", line.c_str());
        }
        return 1;
    };
    if (!WriteState(statePath, d.state, &why))
    {
        return fail(why);
    }

    // The model, in real time.
    ns3::GlobalValue::Bind("SimulatorImplementationType",
                           ns3::StringValue("ns3::EmuRealtimeSimulatorImpl"));
    ns3::Config::SetDefault("ns3::EmuRealtimeSimulatorImpl::TimeDilation",
                            ns3::DoubleValue(d.opt.dilation));
    // A NIC's transmit ring: the kernel hands a TAP frames without back-pressure, so the port's
    // queue is where a burst waits (EthNetDevice's default of 64 frames suits the model's own
    // senders, which wait for room).
    ns3::Config::SetDefault("ns3::EthNetDevice::TxQueueFrames", ns3::UintegerValue(1024));
    for (const auto& s : d.opt.settings)
    {
        const std::string problem = ns3::ApplyAttributeSetting(s.name, s.value);
        if (!problem.empty())
        {
            return fail("--set " + s.name + "=" + s.value + ": " + problem);
        }
    }
    // A hybrid fabric is both, one model: every host's InfiniBand HCA on the IB fabric and its
    // RoCE NIC on the Ethernet one, in the same simulation and the same real-time loop.
    if (d.HasIb())
    {
        const std::string problem = BuildIbHosts(d);
        if (!problem.empty())
        {
            return fail(problem);
        }
    }
    if (d.HasRoce())
    {
        const std::string problem = BuildRoceHosts(d);
        if (!problem.empty())
        {
            return fail(problem);
        }
    }
    if (const std::string problem = StartCmServices(d); !problem.empty())
    {
        return fail(problem);
    }

    // The control socket.
    const std::string sockPath = FabricSocketPath(d.dir, d.opt.name);
    unlink(sockPath.c_str());
    // Non-blocking: the control thread accepts until none waits (ControlLoop).
    const int listenFd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    if (sockPath.size() >= sizeof(addr.sun_path))
    {
        return fail("control socket path too long: " + sockPath);
    }
    std::strncpy(addr.sun_path, sockPath.c_str(), sizeof(addr.sun_path) - 1);
    if (listenFd < 0 || bind(listenFd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listenFd, 16) != 0)
    {
        return fail("cannot listen on " + sockPath + ": " + std::strerror(errno));
    }
    chmod(sockPath.c_str(), 0600);
    d.stopFd = eventfd(0, EFD_CLOEXEC);
    std::thread control(ControlLoop, &d, listenFd);

    // Signals end the run: a thread waits for them (they are blocked in every thread) and asks
    // the simulation thread to stop.
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGTERM);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGHUP);
    std::thread signals([stopSignals]() {
        int sig = 0;
        sigwait(&stopSignals, &sig);
        ns3::Simulator::ScheduleWithContext(ns3::Simulator::NO_CONTEXT, ns3::Time(0),
                                            []() { ns3::Simulator::Stop(); });
    });

    ns3::Simulator::ScheduleNow([&d, statePath]() {
        d.state["phase"] = "running";
        nlohmann::json hosts = nlohmann::json::array();
        // A host's address is its fabric interface's (eth0 on a hybrid fabric, whose IPoIB
        // address is "ib_ip"); its adapters' sockets are listed in the device list's order.
        const HostRail& primary = d.HasRoce() ? d.roceRail : d.ibRail;
        for (size_t i = 0; i < d.hostNames.size(); ++i)
        {
            hosts.push_back({{"name", d.hostNames[i]},
                             {"netns", d.netns[i]},
                             {"ip", Ipv4Text(primary.ips[i])},
                             {"mac", primary.macs[i]}});
            nlohmann::json hca = nlohmann::json::array();
            for (const HostRail* rail : d.Rails())
            {
                if (i < rail->hcaSockets.size())
                {
                    hca.push_back(rail->hcaSockets[i]);
                }
            }
            hosts.back()["hca_sockets"] = hca;
            if (i < d.cmSockets.size())
            {
                hosts.back()["cm_socket"] = d.cmSockets[i];
            }
            if (d.Hybrid())
            {
                hosts.back()["ib_ip"] = Ipv4Text(d.ibRail.ips[i]);
                hosts.back()["ib_mac"] = d.ibRail.macs[i];
            }
            if (i < d.umadSockets.size()) // umad (issue 14)
            {
                hosts.back()["umad_socket"] = d.umadSockets[i];
            }
            if (i < d.mgmtIps.size())
            {
                hosts.back()["mgmt_ip"] = d.mgmtIps[i];
            }
        }
        d.state["hosts"] = hosts;
        std::string w;
        if (!WriteState(statePath, d.state, &w))
        {
            std::fprintf(stderr, "cnuas daemon: %s\n", w.c_str());
        }
        Report(d.readyFd, "ready");
        close(d.readyFd);
        d.readyFd = -1;
    });
    std::fprintf(stderr, "cnuas daemon: fabric %s running (%zu hosts, dilation %g)\n",
                 d.opt.name.c_str(), d.hostNames.size(), d.opt.dilation);
    int rc = 0;
    try
    {
        ns3::Simulator::Run();
    }
    catch (const std::exception& e)
    {
        // A model error must not leave the hosts behind: report it and clean up as on a stop.
        std::fprintf(stderr, "cnuas daemon: the simulation failed: %s\n", e.what());
        rc = 1;
    }

    // Shut down: the final figures go to the log, then everything made is removed.
    std::fprintf(stderr, "cnuas daemon: stopping; final status %s\n",
                 StatusJson(d).dump().c_str());
    const uint64_t one = 1;
    if (write(d.stopFd, &one, sizeof(one)) < 0)
    {
        std::fprintf(stderr, "cnuas daemon: cannot stop the control thread\n");
    }
    control.join();
    close(listenFd);
    close(d.stopFd);
    pthread_kill(signals.native_handle(), SIGTERM); // if no signal came (harmless otherwise)
    signals.join();
    for (auto& h : d.cmServices)
    {
        h->Stop();
    }
    d.cmServices.clear();
    for (auto& h : d.umadServices) // umad (issue 14)
    {
        h->Stop();
    }
    d.umadServices.clear();
    for (HostRail* rail : {&d.ibRail, &d.roceRail})
    {
        for (auto& h : rail->hcaServices)
        {
            h->Stop();
        }
        rail->hcaServices.clear();
    }
    for (int fd : d.udpSinks)
    {
        close(fd);
    }
    d.udpSinks.clear();
    for (auto& b : d.bridges)
    {
        b->Stop();
    }
    for (auto& b : d.ipoib)
    {
        b->Stop();
    }
    if (d.ibPcap)
    {
        d.ibPcap->Close();
    }
    for (auto& f : d.pcaps)
    {
        f->Close();
    }
    for (auto& [conn, capture] : d.captures)
    {
        capture.End();
    }
    d.captures.clear();
    d.bridges.clear();
    d.ipoib.clear();
    d.sm = nullptr;
    d.pcaps.clear();
    ns3::Simulator::Destroy();
    for (const auto& line : CleanUpFabric(d.state, d.dir))
    {
        std::fprintf(stderr, "cnuas daemon: %s\n", line.c_str());
    }
    return rc;
}

// ---- cnuas up --------------------------------------------------------------------------------

const char* const kUpUsage =
    "usage: cnuas up [--fabric roce|ib|hybrid] [--hosts N | --topology SPEC]\n"
    "                [--roce-topology SPEC] [--sm builtin|none]\n"
    "                [--sm-priority P] [--partitions FILE] [--name NAME]\n"
    "                [--pcap DIR] [--dilation F] [--host-rate R] [--fabric-rate R] [--mtu B]\n"
    "                [--set ATTRIBUTE=VALUE]... [--state-dir DIR] [--timeout S] [--nice N]\n"
    "\n"
    "Brings up an emulated fabric: one Linux network namespace per host, whose kernel reaches\n"
    "its simulated NIC through a TAP device (eth0, addressed 10.0.0.<i+1>/8), the fabric's\n"
    "switches, links, PFC and ECN modelled by a daemon that runs the model in real time.\n"
    "Returns when the hosts are ready. Needs root (namespaces, TAP devices).\n"
    "\n"
    "  --fabric roce|ib|hybrid\n"
    "                         RoCE/Ethernet (hosts' eth0 on the fabric), InfiniBand (hosts'\n"
    "                         ib0 carries IPoIB on the fabric, mgmt0 a management network), or\n"
    "                         both: every host has an InfiniBand HCA (cnuas_0, ib0 10.1.0.<i+1>)\n"
    "                         on an IB fabric and a RoCE NIC (cnuas_1, eth0 10.0.0.<i+1>) on an\n"
    "                         Ethernet fabric of the same topology (or --roce-topology's)\n"
    "  --sm builtin|none      InfiniBand: the built-in subnet manager on the first host, or\n"
    "                         none (ports stay Initializing with LID 0, no data flows) until\n"
    "                         an SM starts (opensm in a host, or 'cnuas sm start')\n"
    "  --sm-priority P        the built-in SM's priority, 0-15 (default 0, as opensm's):\n"
    "                         beside opensm the higher priority is master, then the lower GUID\n"
    "  --partitions FILE      InfiniBand: the built-in SM's partitions, in opensm's\n"
    "                         partitions.conf format (Name=PKey[,ipoib] : GUID=full, ... ;):\n"
    "                         it writes each adapter port's P_Key table from them\n"
    "  --hosts N              N hosts on one switch (star; default 2)\n"
    "  --topology SPEC        pair, star:hosts=N, dumbbell:left=L,right=R,\n"
    "                         leaf-spine:leaves=L,spines=S,hosts=H, fat-tree:k=K, or a file\n"
    "  --roce-topology SPEC   hybrid: the Ethernet fabric's own topology, with the same hosts\n"
    "                         (e.g. an InfiniBand fat-tree beside an Ethernet leaf-spine)\n"
    "  --name NAME            fabric name (default cnuas); hosts of another name's fabric\n"
    "                         live in namespaces NAME-HOST\n"
    "  --pcap DIR             write every host port's frames to DIR/HOST.pcap\n"
    "  --dilation F           run the model F times slower than the wall clock (simulated\n"
    "                         time = wall time / F; default 1)\n"
    "  --host-rate R          RoCE, hybrid: the Ethernet fabric's host link rate (default the\n"
    "                         port's DataRate, 100Gbps)\n"
    "  --fabric-rate R        its switch-to-switch link rate\n"
    "  --mtu B                RoCE, hybrid: the Ethernet MTU of every port and of eth0,\n"
    "                         1280-9216 (default 1500); 9000, as RoCE clusters run, gives a\n"
    "                         4096-byte RoCE path MTU and about twice the verbs goodput\n"
    "  --set A=V              an ns-3 attribute default, as for 'cnuas run'\n"
    "  --state-dir DIR        where the state, socket and log go (as for 'cnuas status')\n"
    "  --timeout S            how long to wait for the hosts (default 60 s)\n"
    "  --nice N               the daemon's nice value (default -10: it is the hosts' hardware\n"
    "                         and must not wait behind programs that busy-poll it)\n"
    "\n"
    "Then: cnuas exec HOST -- CMD..., cnuas status, cnuas capture HOST -w FILE, cnuas down.\n"
    "Exit status 0 when the fabric is up, 1 if it could not be brought up, 2 on a usage "
    "error.\n";

int
RunUp(const std::vector<std::string>& args)
{
    UpOptions o;
    for (size_t i = 0; i < args.size(); ++i)
    {
        std::string a = args[i];
        std::string v;
        bool hasValue = false;
        if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos)
        {
            v = a.substr(eq + 1);
            a = a.substr(0, eq);
            hasValue = true;
        }
        auto value = [&]() -> std::string {
            if (hasValue)
            {
                return v;
            }
            if (i + 1 >= args.size())
            {
                throw std::invalid_argument(a + " needs a value");
            }
            return args[++i];
        };
        try
        {
            if (a == "--help" || a == "-h")
            {
                std::fputs(kUpUsage, stdout);
                return 0;
            }
            else if (a == "--fabric")
            {
                o.fabric = value();
            }
            else if (a == "--hosts")
            {
                const std::string n = value();
                size_t used = 0;
                const long h = std::stol(n, &used);
                if (used != n.size() || h < 1 || h > 1000)
                {
                    throw std::invalid_argument("--hosts takes 1..1000, not '" + n + "'");
                }
                o.hosts = static_cast<uint32_t>(h);
            }
            else if (a == "--topology")
            {
                o.topology = value();
            }
            else if (a == "--roce-topology")
            {
                o.roceTopology = value();
            }
            else if (a == "--name")
            {
                o.name = value();
            }
            else if (a == "--sm")
            {
                o.sm = value();
            }
            else if (a == "--partitions")
            {
                // Read and checked here, so that a bad file is the command's error, not a
                // policy the daemon's SM leaves unused.
                const std::string file = value();
                ns3::IbPartitionPolicy policy;
                std::string why;
                if (!policy.ReadFile(file, &why))
                {
                    std::fprintf(stderr, "cnuas up: --partitions %s\n", why.c_str());
                    return 2;
                }
                std::error_code ec;
                o.partitions = std::filesystem::absolute(file, ec).string();
            }
            else if (a == "--sm-priority")
            {
                const std::string v = value();
                uint64_t p = 0;
                if (!ns3::ParseDecimalUint(v, 15, &p))
                {
                    std::fprintf(stderr, "cnuas up: --sm-priority %s: 0 to 15\n", v.c_str());
                    return 2;
                }
                o.smPriority = static_cast<int>(p);
            }
            else if (a == "--pcap")
            {
                o.pcapDir = value();
            }
            else if (a == "--dilation")
            {
                const std::string n = value();
                if (!ns3::ParseFiniteDouble(n, &o.dilation) ||
                    !(o.dilation >= 1e-3 && o.dilation <= 1e6))
                {
                    throw std::invalid_argument("--dilation takes a factor in 0.001..1e6, not '" +
                                                n + "'");
                }
            }
            else if (a == "--host-rate")
            {
                o.hostRate = value();
            }
            else if (a == "--fabric-rate")
            {
                o.fabricRate = value();
            }
            else if (a == "--mtu")
            {
                const std::string n = value();
                size_t used = 0;
                const long m = std::stol(n, &used);
                // IPv6 (every host has an address) needs 1280; 9216 is the largest jumbo
                // frame EthNetDevice models.
                if (used != n.size() || m < 1280 || m > 9216)
                {
                    throw std::invalid_argument("--mtu takes bytes in 1280..9216, not '" + n +
                                                "'");
                }
                o.mtu = static_cast<unsigned>(m);
            }
            else if (a == "--set")
            {
                auto [k, val] = ns3::SplitAssignment(value(), "--set");
                o.settings.push_back({k, val, "--set"});
            }
            else if (a == "--state-dir")
            {
                o.stateDir = value();
            }
            else if (a == "--timeout")
            {
                const std::string v = value();
                const auto seconds = ParseSeconds(v, false);
                if (!seconds)
                {
                    throw std::invalid_argument("--timeout takes seconds, above 0 and at most "
                                                "86400, not '" + v + "'");
                }
                o.readyTimeout = *seconds;
            }
            else if (a == "--nice")
            {
                const std::string v = value();
                size_t used = 0;
                o.niceness = std::stoi(v, &used);
                if (used != v.size() || o.niceness < -20 || o.niceness > 19)
                {
                    throw std::invalid_argument("--nice " + v + ": a nice value in -20..19");
                }
            }
            else
            {
                throw std::invalid_argument("unknown option '" + a + "'");
            }
        }
        catch (const std::exception& e)
        {
            std::fprintf(stderr, "cnuas up: %s\n%s", e.what(), kUpUsage);
            return 2;
        }
    }
    if (o.fabric != "roce" && o.fabric != "ib" && o.fabric != "hybrid")
    {
        std::fprintf(stderr, "cnuas up: --fabric %s: unknown fabric (roce, ib or hybrid)\n",
                     o.fabric.c_str());
        return 2;
    }
    if (o.sm != "builtin" && o.sm != "none")
    {
        std::fprintf(stderr, "cnuas up: --sm %s: builtin or none\n", o.sm.c_str());
        return 2;
    }
    if (o.fabric == "roce" && (o.sm != "builtin"))
    {
        std::fprintf(stderr, "cnuas up: --sm is for InfiniBand fabrics\n");
        return 2;
    }
    if (o.fabric == "roce" && !o.partitions.empty())
    {
        std::fprintf(stderr, "cnuas up: --partitions is for InfiniBand fabrics\n");
        return 2;
    }
    if (o.fabric == "ib" && (!o.hostRate.empty() || !o.fabricRate.empty()))
    {
        std::fprintf(stderr, "cnuas up: --host-rate/--fabric-rate are for RoCE; an InfiniBand "
                             "topology file names each link's rate (e.g. 4xHDR)\n");
        return 2;
    }
    if (o.mtu != 0)
    {
        // A hybrid fabric's --mtu is its Ethernet fabric's (eth0); the IB MTU is the SM's.
        if (o.fabric == "ib")
        {
            std::fprintf(stderr, "cnuas up: --mtu is for RoCE (on InfiniBand the IB MTU is the "
                                 "subnet manager's and IPoIB's 2044 bytes follow from it)\n");
            return 2;
        }
        for (const auto& st : o.settings)
        {
            if (st.name.find("EthNetDevice::Mtu") != std::string::npos)
            {
                std::fprintf(stderr, "cnuas up: give --mtu or --set %s, not both\n",
                             st.name.c_str());
                return 2;
            }
        }
        o.settings.push_back({"ns3::EthNetDevice::Mtu", std::to_string(o.mtu), "--mtu"});
    }
    if (!ValidFabricName(o.name))
    {
        std::fprintf(stderr, "cnuas up: --name '%s': use 1..32 letters, digits, '-' or '_'\n",
                     o.name.c_str());
        return 2;
    }
    if (o.hosts > 0 && !o.topology.empty())
    {
        std::fprintf(stderr, "cnuas up: give --hosts or --topology, not both\n");
        return 2;
    }
    if (!o.roceTopology.empty() && o.fabric != "hybrid")
    {
        std::fprintf(stderr, "cnuas up: --roce-topology is for hybrid fabrics (--topology names "
                             "a single fabric's)\n");
        return 2;
    }
    for (const std::string* rate : {&o.hostRate, &o.fabricRate})
    {
        ns3::DataRate r;
        std::istringstream in(*rate);
        if (!rate->empty() && (rate->find('-') != std::string::npos || !(in >> r) ||
                               r.GetBitRate() == 0))
        {
            std::fprintf(stderr, "cnuas up: '%s' is not a link rate (e.g. 10Gbps)\n",
                         rate->c_str());
            return 2;
        }
    }

    Daemon d;
    d.opt = o;
    // A topology spec or file; a spec on the command line is a usage error (2), a file's
    // content an input error (3) (docs/cli.md).
    auto readTopology = [](const std::string& option, const std::string& given,
                           const std::string& fallback, ns3::Topology* out) {
        std::string spec = given.empty() ? fallback : given;
        struct stat st = {};
        if (spec.find(':') == std::string::npos && stat(spec.c_str(), &st) == 0)
        {
            spec = "file:" + spec;
        }
        try
        {
            *out = ns3::BuildTopologyFromSpec(spec);
            return 0;
        }
        catch (const std::exception& e)
        {
            std::fprintf(stderr, "cnuas up: %s: %s\n", option.c_str(), e.what());
            return given.rfind("file:", 0) == 0 || given.find('/') != std::string::npos ||
                           given.find(".topo") != std::string::npos
                       ? 3
                       : 2;
        }
    };
    if (const int rc = readTopology("--topology", o.topology,
                                    "star:hosts=" + std::to_string(o.hosts ? o.hosts : 2),
                                    &d.topology);
        rc != 0)
    {
        return rc;
    }
    d.ethTopology = d.topology;
    if (!o.roceTopology.empty())
    {
        if (const int rc = readTopology("--roce-topology", o.roceTopology, "", &d.ethTopology);
            rc != 0)
        {
            return rc;
        }
        // One host, two adapters: the two fabrics must join the same hosts, in the same order
        // (host i's HCA and NIC are host i's).
        std::vector<std::string> ib;
        std::vector<std::string> eth;
        for (uint32_t n : d.topology.Hosts())
        {
            ib.push_back(d.topology.nodes[n].name);
        }
        for (uint32_t n : d.ethTopology.Hosts())
        {
            eth.push_back(d.ethTopology.nodes[n].name);
        }
        if (ib != eth)
        {
            std::fprintf(stderr,
                         "cnuas up: --roce-topology has %zu hosts (%s...), --topology %zu (%s...): "
                         "a hybrid's two fabrics join the same hosts, named alike and in the "
                         "same order\n",
                         eth.size(), eth.empty() ? "" : eth[0].c_str(), ib.size(),
                         ib.empty() ? "" : ib[0].c_str());
            return 2;
        }
    }
    for (uint32_t n : d.topology.Hosts())
    {
        d.hostNames.push_back(d.topology.nodes[n].name);
        d.netns.push_back(NetnsName(o.name, d.topology.nodes[n].name));
        if (!ValidNetnsName(d.netns.back()))
        {
            std::fprintf(stderr, "cnuas up: host name '%s' cannot name a namespace\n",
                         d.topology.nodes[n].name.c_str());
            return 3;
        }
    }
    if (d.hostNames.empty())
    {
        std::fprintf(stderr, "cnuas up: the topology has no hosts\n");
        return 3;
    }
    if (o.fabric == "ib")
    {
        d.mgmtNetns = o.name == kDefaultFabric ? "cnuas-mgmt" : o.name + "-mgmt";
    }
    if (o.fabric == "hybrid" && d.hostNames.size() > 65534)
    {
        std::fprintf(stderr, "cnuas up: a hybrid fabric takes at most 65,534 hosts (10.0/16 "
                             "on eth0, 10.1/16 on ib0)\n");
        return 3;
    }
    if (geteuid() != 0)
    {
        std::fprintf(stderr, "cnuas up: emulation needs root (network namespaces, TAP "
                             "devices)\n");
        return 1;
    }

    d.dir = StateDirectory(o.stateDir);
    if (o.fabric == "hybrid" && d.dir.find(':') != std::string::npos)
    {
        // A hybrid host's adapters are named to its processes as a ':'-separated list.
        std::fprintf(stderr, "cnuas up: a hybrid fabric's state directory cannot contain ':' "
                             "(%s)\n",
                     d.dir.c_str());
        return 1;
    }
    std::string why;
    if (!EnsureStateDirectory(d.dir, &why))
    {
        std::fprintf(stderr, "cnuas up: %s\n", why.c_str());
        return 1;
    }
    const std::string statePath = FabricStatePath(d.dir, o.name);
    if (auto old = ReadState(statePath))
    {
        if (ProcessAlive(old->value("pid", 0)))
        {
            std::fprintf(stderr,
                         "cnuas up: fabric '%s' is up already (pid %d); 'cnuas down%s' stops "
                         "it\n",
                         o.name.c_str(), old->value("pid", 0),
                         o.name == kDefaultFabric ? "" : (" --name " + o.name).c_str());
            return 1;
        }
        std::printf("cnuas up: removing what a fabric '%s' that died left behind\n",
                    o.name.c_str());
        for (const auto& line : CleanUpFabric(*old, d.dir))
        {
            std::printf("  %s\n", line.c_str());
        }
    }
    std::vector<std::string> allNetns = d.netns;
    if (!d.mgmtNetns.empty())
    {
        allNetns.push_back(d.mgmtNetns);
    }
    for (const auto& n : allNetns)
    {
        if (NetnsExists(n))
        {
            std::fprintf(stderr,
                         "cnuas up: network namespace '%s' exists already and is not this "
                         "fabric's; remove it or choose another --name\n",
                         n.c_str());
            return 1;
        }
    }
    if (!o.pcapDir.empty() && mkdir(o.pcapDir.c_str(), 0755) != 0 && errno != EEXIST)
    {
        std::fprintf(stderr, "cnuas up: cannot create %s: %s\n", o.pcapDir.c_str(),
                     std::strerror(errno));
        return 1;
    }

    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
    {
        std::perror("cnuas up: pipe");
        return 1;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0)
    {
        std::perror("cnuas up: fork");
        return 1;
    }
    if (pid == 0)
    {
        // The daemon: its own session, no terminal, its output in the log.
        close(ready[0]);
        // Nothing of the caller's but the ready pipe: a test harness or a shell pipeline
        // waiting for EOF on a descriptor it handed down must not wait for the daemon.
        for (int fd = 3; fd < 4096; ++fd)
        {
            if (fd != ready[1])
            {
                close(fd);
            }
        }
        setsid();
        const int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        const int log = open(FabricLogPath(d.dir, o.name).c_str(),
                             O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (log >= 0)
        {
            dup2(log, 1);
            dup2(log, 2);
        }
        signal(SIGPIPE, SIG_IGN);
        sigset_t block;
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &block, nullptr);
        d.readyFd = ready[1];
        int rc = 1;
        try
        {
            rc = DaemonMain(d);
        }
        catch (const std::exception& e)
        {
            std::fprintf(stderr, "cnuas daemon: %s\n", e.what());
            Report(d.readyFd, std::string("error ") + e.what());
            CleanUpFabric(d.state, d.dir);
        }
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(rc);
    }
    close(ready[1]);
    // Wait for "ready" or "error ...", with a deadline.
    std::string buf;
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(o.readyTimeout * 1000));
    bool readyOk = false;
    std::string error;
    // A progress line on a terminal only ("96/1024 hosts made", rewritten in place).
    const bool showProgress = isatty(STDERR_FILENO) != 0;
    bool progressShown = false;
    while (true)
    {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              until - std::chrono::steady_clock::now())
                              .count();
        if (left <= 0)
        {
            char seconds[32];
            std::snprintf(seconds, sizeof(seconds), "%g", o.readyTimeout);
            error = std::string("the hosts were not ready within ") + seconds +
                    " s (--timeout; a large fabric takes longer)";
            kill(pid, SIGTERM);
            break;
        }
        pollfd p{ready[0], POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left)) <= 0)
        {
            continue;
        }
        char c[256];
        const ssize_t n = read(ready[0], c, sizeof(c));
        if (n <= 0)
        {
            break;
        }
        buf.append(c, static_cast<size_t>(n));
        // One line at a time: "progress MADE OF", then "ready" or "error WHY".
        for (size_t eol; !readyOk && error.empty() && (eol = buf.find('\n')) != buf.npos;)
        {
            const std::string line = buf.substr(0, eol);
            buf.erase(0, eol + 1);
            if (line == "ready")
            {
                readyOk = true;
            }
            else if (line.rfind("error ", 0) == 0)
            {
                error = line.substr(6);
            }
            else if (line.rfind("progress ", 0) == 0 && showProgress)
            {
                std::string made = line.substr(9);
                std::replace(made.begin(), made.end(), ' ', '/');
                std::fprintf(stderr, "\rcnuas up: %s hosts made", made.c_str());
                std::fflush(stderr);
                progressShown = true;
            }
        }
        if (readyOk || !error.empty())
        {
            break;
        }
    }
    if (progressShown)
    {
        std::fprintf(stderr, "\r\033[K"); // the progress line goes; the result follows
    }
    close(ready[0]);
    if (!readyOk)
    {
        if (error.empty())
        {
            error = "the daemon ended before the hosts were ready (log: " +
                    FabricLogPath(d.dir, o.name) + ")";
        }
        std::fprintf(stderr, "cnuas up: %s\n", error.c_str());
        int status = 0;
        waitpid(pid, &status, 0);
        return 1;
    }
    char dilation[32];
    std::snprintf(dilation, sizeof(dilation), "%g", o.dilation);
    std::printf("fabric %s up: %zu hosts on a%s fabric, daemon pid %d%s\n", o.name.c_str(),
                d.hostNames.size(),
                o.fabric == "ib"       ? "n InfiniBand"
                : o.fabric == "hybrid" ? " hybrid (InfiniBand and RoCE, two adapters a host)"
                                       : " RoCE",
                static_cast<int>(pid),
                o.dilation == 1 ? ", real time"
                                : (std::string(", time dilation ") + dilation +
                                   " (simulated time = wall time / " + dilation + ")")
                                      .c_str());
    auto state = ReadState(statePath);
    if (state && state->contains("hosts"))
    {
        for (const auto& h : (*state)["hosts"])
        {
            const bool ib = o.fabric == "ib";
            std::string second;
            if (ib)
            {
                second = "  mgmt0 " + h.value("mgmt_ip", "");
            }
            else if (o.fabric == "hybrid")
            {
                second = std::string("  ") + kIpoibInterface + " " + h.value("ib_ip", "");
            }
            std::printf("  %-10s netns %-16s %s %-12s %s%s\n", h.value("name", "").c_str(),
                        h.value("netns", "").c_str(), ib ? kIpoibInterface : kRoceInterface,
                        h.value("ip", "").c_str(), h.value("mac", "").c_str(), second.c_str());
        }
    }
    const std::string nameOpt = o.name == kDefaultFabric ? "" : " --name " + o.name;
    const uint32_t peer = ns3::EthFabricHelper::HostAddress(d.hostNames.size() > 1 ? 1 : 0);
    std::printf("try: cnuas exec%s %s -- ping -c 3 %s\n", nameOpt.c_str(),
                d.hostNames[0].c_str(), Ipv4Text(peer).c_str());
    if (o.fabric == "hybrid")
    {
        // The other adapter: the peer's ib0, and the two devices verbs programs choose from.
        std::printf("     cnuas exec%s %s -- ping -c 3 %s; cnuas exec%s %s -- ibv_devices\n",
                    nameOpt.c_str(), d.hostNames[0].c_str(),
                    Ipv4Text(peer + kHybridIbOffset).c_str(), nameOpt.c_str(),
                    d.hostNames[0].c_str());
    }
    std::printf("     cnuas status; cnuas down%s\n", nameOpt.c_str());
    return 0;
}

} // namespace

CNUAS_COMMAND("up", "bring up an emulated fabric whose hosts are network namespaces", RunUp);

} // namespace cnuas
