// `cnuas up`, `cnuas exec`, `cnuas capture`, `cnuas down`: emulated fabrics whose hosts are
// Linux network namespaces, their kernels attached to simulated NICs through TAP devices, the
// model driven in real time by a daemon (one process per fabric). docs/emulation.md.
#include "cmd-status.h"
#include "command.h"
#include "emu-control.h"
#include "emu-host.h"
#include "emu-sysfs.h" // umad (issue 14)

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

const char* const kDefaultFabric = "cnuas";

/// A number of seconds from the command line: the whole text a finite decimal number, not
/// negative (nor 0 unless `zeroAllowed`), at most a day (longer is a typing error, and a wall
/// deadline of it would overflow). Nothing for anything else.
std::optional<double>
ParseSeconds(const std::string& text, bool zeroAllowed)
{
    double s = 0;
    if (!ns3::ParseFiniteDouble(text, &s) || s < 0 || (s == 0 && !zeroAllowed) || s > 86400)
    {
        return std::nullopt;
    }
    return s;
}

// ---- names and files ---------------------------------------------------------------------------

std::string
FabricStatePath(const std::string& dir, const std::string& name)
{
    return dir + "/fabric-" + name + ".json";
}

std::string
FabricSocketPath(const std::string& dir, const std::string& name)
{
    return dir + "/fabric-" + name + ".sock";
}

/// The Unix socket through which the processes of `host` reach its emulated HCA.
std::string
HcaSocketPath(const std::string& dir, const std::string& name, const std::string& host)
{
    return dir + "/" + name + "." + host + ".hca";
}

std::string
FabricLogPath(const std::string& dir, const std::string& name)
{
    return dir + "/fabric-" + name + ".log";
}

/// The /etc/hosts and /etc/resolv.conf that `cnuas exec` shows in the hosts of fabric `name`
/// (written by exec, removed by down).
std::string
FabricEtcHostsPath(const std::string& dir, const std::string& name)
{
    return dir + "/" + name + ".hosts";
}

std::string
FabricResolvConfPath(const std::string& dir, const std::string& name)
{
    return dir + "/" + name + ".resolv.conf";
}

/// The link to cnuas named FABRIC.cnuas-rsh that exec names to MPICH's hydra as its remote
/// shell (main() takes a cnuas called so for `cnuas rsh`; removed by down).
std::string
FabricRshLinkPath(const std::string& dir, const std::string& name)
{
    return dir + "/" + name + ".cnuas-rsh";
}

/// Where `cnuas exec` writes each host's own variables, by its network namespace's inode:
/// PREFIX<inode>.env (host/abi/cnuas-host-env.h; removed by down).
std::string
FabricHostMapPrefix(const std::string& dir, const std::string& name)
{
    return dir + "/" + name + ".netns-";
}

/// Makes `path` hold `text` (WriteFileAtomically), writing only when it differs.
bool
WriteFileIfChanged(const std::string& path, const std::string& text)
{
    return ReadTextFile(path) == text || WriteFileAtomically(path, text);
}

/// The namespace of a host: its own name for the default fabric (`cnuas exec h0`, as the
/// topology names it), prefixed by the fabric's name for any other, so that fabrics coexist.
std::string
NetnsName(const std::string& fabric, const std::string& host)
{
    return fabric == kDefaultFabric ? host : fabric + "-" + host;
}

bool
ValidFabricName(const std::string& n)
{
    if (n.empty() || n.size() > 32)
    {
        return false;
    }
    return std::all_of(n.begin(), n.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
}

std::string
Ipv4Text(uint32_t a)
{
    char b[20];
    std::snprintf(b, sizeof(b), "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255,
                  a & 255);
    return b;
}

std::string
MacText(uint64_t m)
{
    char b[20];
    std::snprintf(b, sizeof(b), "%02x:%02x:%02x:%02x:%02x:%02x",
                  static_cast<unsigned>(m >> 40) & 255, static_cast<unsigned>(m >> 32) & 255,
                  static_cast<unsigned>(m >> 24) & 255, static_cast<unsigned>(m >> 16) & 255,
                  static_cast<unsigned>(m >> 8) & 255, static_cast<unsigned>(m) & 255);
    return b;
}

/// The fabric files in the state directory, by fabric name.
std::vector<std::string>
FabricNames(const std::string& dir)
{
    std::vector<std::string> names;
    if (DIR* d = opendir(dir.c_str()))
    {
        while (dirent* e = readdir(d))
        {
            const std::string n = e->d_name;
            if (n.size() > 12 && n.compare(0, 7, "fabric-") == 0 &&
                n.compare(n.size() - 5, 5, ".json") == 0)
            {
                names.push_back(n.substr(7, n.size() - 12));
            }
        }
        closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
}

/// The fabric a command means: --name, else $CNUAS_FABRIC, else the only one up, else the
/// default name.
std::string
ChooseFabric(const std::string& explicitName, const std::string& dir)
{
    if (!explicitName.empty())
    {
        return explicitName;
    }
    if (const char* e = std::getenv("CNUAS_FABRIC"); e != nullptr && *e != '\0')
    {
        return e;
    }
    const auto names = FabricNames(dir);
    return names.size() == 1 ? names[0] : kDefaultFabric;
}

/// Says that fabric `fabric` is not up, and what is: with several fabrics up and none named,
/// the command could not guess which (the default name is not among them).
void
SayNotUp(const char* verb, const std::string& fabric, const std::string& dir)
{
    std::string up; // a state file whose daemon is gone is not a fabric that is up
    for (const auto& n : FabricNames(dir))
    {
        const auto state = ReadState(FabricStatePath(dir, n));
        if (state && ProcessAlive(state->value("pid", 0)))
        {
            up += (up.empty() ? "" : ", ") + n;
        }
    }
    if (up.empty())
    {
        std::fprintf(stderr, "cnuas %s: fabric '%s' is not up ('cnuas up' starts one)\n", verb,
                     fabric.c_str());
    }
    else
    {
        std::fprintf(stderr,
                     "cnuas %s: fabric '%s' is not up; up: %s (name one with --name or "
                     "CNUAS_FABRIC)\n",
                     verb, fabric.c_str(), up.c_str());
    }
}

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

/// A hybrid fabric's hosts have ib0 at 10.1.0.<i+1>/16 beside eth0's 10.0.0.<i+1>/16.
constexpr uint32_t kHybridIbOffset = 0x00010000u;

/// The interfaces a host's kernel sees: its RoCE NIC (and the network device of its GIDs), and
/// IPoIB on its InfiniBand HCA.
constexpr const char* kRoceInterface = "eth0";
constexpr const char* kIpoibInterface = "ib0";

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

/// Removes what the daemon made. Called by the daemon on its way out and by `cnuas down` for a
/// daemon that cannot (killed). Returns lines describing what was removed.
std::vector<std::string>
CleanUpFabric(const nlohmann::json& state, const std::string& dir)
{
    std::vector<std::string> done;
    std::vector<std::string> names;
    for (const auto& ns : state.value("namespaces", nlohmann::json::array()))
    {
        if (NetnsExists(ns.get<std::string>()))
        {
            names.push_back(ns.get<std::string>());
        }
    }
    std::vector<std::string> why;
    const std::vector<int> ended = DeleteNetnses(names, 1.0, &why);
    for (size_t i = 0; i < names.size(); ++i)
    {
        done.push_back(ended[i] < 0 ? "could not remove namespace " + names[i] + ": " + why[i]
                                    : "removed namespace " + names[i] +
                                          (ended[i] > 0 ? " (ended " + std::to_string(ended[i]) +
                                                              " processes)"
                                                        : ""));
    }
    const std::string name = state.value("name", "");
    std::vector<std::string> files = {FabricSocketPath(dir, name), FabricStatePath(dir, name)};
    for (const auto& h : state.value("hosts", nlohmann::json::array()))
    {
        for (const auto& path : h.value("hca_sockets", nlohmann::json::array()))
        {
            if (path.is_string())
            {
                files.push_back(path.get<std::string>());
            }
        }
        for (const char* key : {"umad_socket", "cm_socket"}) // umad: issue 14
        {
            if (h.contains(key))
            {
                files.push_back(h.value(key, ""));
            }
        }
    }
    for (const std::string& f : files)
    {
        if (unlink(f.c_str()) == 0)
        {
            done.push_back("removed " + f);
        }
    }
    return done;
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
    "                [--sm-priority P] [--name NAME]\n"
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

// ---- cnuas exec ------------------------------------------------------------------------------

const char* const kExecUsage =
    "usage: cnuas exec [--name NAME] [--state-dir DIR] HOST [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD inside emulated host HOST: in its network namespace (eth0 is its simulated NIC)\n"
    "with a private /sys and /dev/infiniband that show the host's devices, an /etc/hosts that\n"
    "names the fabric's hosts, and Open MPI and MPICH set up as on a cluster with these\n"
    "adapters (OMPI_MCA_pml=ucx, OMPI_MCA_plm_rsh_agent='cnuas rsh', OMPI_ALLOW_RUN_AS_ROOT,\n"
    "HYDRA_LAUNCHER_EXEC: each unless already set), so `mpirun -np 2 --host h0,h1 PROGRAM`\n"
    "(or mpirun.mpich -hosts h0,h1) runs over the fabric's RDMA.\n"
    "The exit status is CMD's; 2 for a usage error, 1 if the fabric or the host does not exist.\n";

/// This program's own path ("" if the kernel will not say).
std::string
SelfExecutable()
{
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    return n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
}

/// Where Cnuas's libibverbs.so.1 is: $CNUAS_HOST_LIB_DIR, else beside this program, `self`
/// (the build tree's host/lib, an installation's lib/cnuas/host). "" if nowhere.
std::string
HostLibraryDirectory(const std::string& self)
{
    if (const char* e = std::getenv("CNUAS_HOST_LIB_DIR"); e != nullptr && *e != '\0')
    {
        return e;
    }
    std::string dir = self;
    if (dir.empty())
    {
        return "";
    }
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string& cand : {dir + "/../host/lib", dir + "/../lib/cnuas/host"})
    {
        if (access((cand + "/libibverbs.so.1").c_str(), R_OK) == 0)
        {
            char real[4096];
            return realpath(cand.c_str(), real) ? std::string(real) : cand;
        }
    }
    return "";
}

/// What exec and rsh are asked: [--name NAME] [--state-dir DIR] HOST [--] WORDS...
struct HostCommandArgs
{
    std::string name;
    std::string stateDir;
    std::string host;
    std::vector<std::string> words;
};

/// Parses exec's and rsh's shared arguments (rsh, as ssh, takes no "--" after the host).
/// Returns an exit status when there is nothing to run (0 after --help, 2 on a usage error,
/// said on stderr), nothing when `out` holds a host and a command.
std::optional<int>
ParseHostCommand(const std::vector<std::string>& args,
                 const char* verb,
                 const char* usage,
                 bool dashDashAfterHost,
                 HostCommandArgs* out)
{
    size_t i = 0;
    for (; i < args.size(); ++i)
    {
        if (args[i] == "--help" || args[i] == "-h")
        {
            std::fputs(usage, stdout);
            return 0;
        }
        if ((args[i] == "--name" || args[i] == "--state-dir") && i + 1 < args.size())
        {
            (args[i] == "--name" ? out->name : out->stateDir) = args[i + 1];
            ++i;
            continue;
        }
        if (args[i].rfind("-", 0) == 0 && args[i] != "--")
        {
            std::fprintf(stderr, "cnuas %s: unknown option '%s'\n%s", verb, args[i].c_str(), usage);
            return 2;
        }
        break;
    }
    if (i >= args.size() || args[i] == "--")
    {
        std::fprintf(stderr, "cnuas %s: which host?\n%s", verb, usage);
        return 2;
    }
    out->host = args[i++];
    if (dashDashAfterHost && i < args.size() && args[i] == "--")
    {
        ++i;
    }
    if (i >= args.size())
    {
        std::fprintf(stderr, "cnuas %s: no command to run in %s\n%s", verb, out->host.c_str(),
                     usage);
        return 2;
    }
    out->words.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    return std::nullopt;
}

/// Runs `cmd` in emulated host `host` of fabric `name` (exec's and rsh's work; `verb` names
/// which in messages).
int
ExecInHost(const char* verb,
           const std::string& name,
           const std::string& stateDir,
           const std::string& host,
           const std::vector<std::string>& cmd)
{
    const std::string dir = StateDirectory(stateDir);
    const std::string fabric = ChooseFabric(name, dir);
    auto state = ReadState(FabricStatePath(dir, fabric));
    if (!state || !ProcessAlive(state->value("pid", 0)))
    {
        SayNotUp(verb, fabric, dir);
        return 1;
    }
    std::string netns;
    std::string hcaSocket; // the host's adapters' sockets, ':' between them (a hybrid's two)
    std::string umadSocket; // umad (issue 14)
    std::string cmSocket;
    std::string known;
    std::string hostsByName; // "IP NAME" lines for the hosts' /etc/hosts
    for (const auto& h : state->value("hosts", nlohmann::json::array()))
    {
        known += (known.empty() ? "" : " ") + h.value("name", "");
        // On an InfiniBand fabric a host's name is its management address, as on a cluster
        // whose hosts are named on their Ethernet (the IPoIB address runs at the model's pace).
        const std::string byName = h.value("mgmt_ip", h.value("ip", ""));
        if (!byName.empty())
        {
            hostsByName += byName + " " + h.value("name", "") + "\n";
        }
        if (h.value("name", "") == host)
        {
            netns = h.value("netns", "");
            for (const auto& path : h.value("hca_sockets", nlohmann::json::array()))
            {
                if (path.is_string())
                {
                    hcaSocket += (hcaSocket.empty() ? "" : ":") + path.get<std::string>();
                }
            }
            umadSocket = h.value("umad_socket", "");
            cmSocket = h.value("cm_socket", "");
        }
    }
    if (netns.empty())
    {
        std::fprintf(stderr, "cnuas %s: fabric '%s' has no host '%s' (hosts: %s)\n",
                     verb, fabric.c_str(), host.c_str(), known.c_str());
        return 1;
    }
    setenv("CNUAS_HOST", host.c_str(), 1);
    setenv("CNUAS_FABRIC", fabric.c_str(), 1);
    // The MPIs as a cluster with these adapters configures them (each unless the user set it):
    // Open MPI's mpirun reaches the other hosts through `cnuas rsh` as a cluster's through ssh;
    // its ranks talk over UCX on the adapter, where Debian's configuration turns UCX off
    // (pml = ^ucx) and leaves TCP, whose ranks spin in poll() beside the daemon (1 B round
    // trips of 8-12 ms on 2 cores, against 35-75 us over UCX); the user is root in a host, as
    // every program exec runs is. MPICH's hydra (Debian's MPICH is over UCX too) takes its
    // remote shell as one program: a link to this one named FABRIC.cnuas-rsh, which main()
    // takes for `cnuas rsh`.
    const std::string self = SelfExecutable();
    std::string rshLink;
    if (!self.empty())
    {
        rshLink = FabricRshLinkPath(dir, fabric);
        char target[4096];
        const ssize_t n = readlink(rshLink.c_str(), target, sizeof(target) - 1);
        if (n < 0 || std::string(target, static_cast<size_t>(n)) != self)
        {
            const std::string tmp = rshLink + ".tmp." + std::to_string(getpid());
            if (symlink(self.c_str(), tmp.c_str()) != 0 ||
                rename(tmp.c_str(), rshLink.c_str()) != 0)
            {
                unlink(tmp.c_str());
                rshLink.clear();
            }
        }
    }
    const std::pair<const char*, std::string> mpiDefaults[] = {
        {"OMPI_MCA_plm_rsh_agent", self.empty() ? "" : self + " rsh"},
        {"OMPI_MCA_pml", "ucx"},
        {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
        {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
        {"HYDRA_LAUNCHER", rshLink.empty() ? "" : "rsh"},
        {"HYDRA_LAUNCHER_EXEC", rshLink},
    };
    for (const auto& [variable, value] : mpiDefaults)
    {
        if (!value.empty() && std::getenv(variable) == nullptr)
        {
            setenv(variable, value.c_str(), 1);
        }
    }
    // Verbs programs load Cnuas's libibverbs (first on the library path), which finds the
    // host's HCA through this socket.
    if (!hcaSocket.empty())
    {
        setenv("CNUAS_HCA_SOCKET", hcaSocket.c_str(), 1);
        // umad (issue 14): Cnuas's libibumad (same directory) finds the host's SMI/GSI here.
        if (!umadSocket.empty())
        {
            setenv("CNUAS_UMAD_SOCKET", umadSocket.c_str(), 1);
        }
        // Cnuas's librdmacm (same directory) finds the host's rdma_cm here.
        if (!cmSocket.empty())
        {
            setenv("CNUAS_CM_SOCKET", cmSocket.c_str(), 1);
        }
        const std::string libDir = HostLibraryDirectory(self);
        if (libDir.empty())
        {
            std::fprintf(stderr,
                         "cnuas %s: warning: Cnuas's libibverbs was not found (set "
                         "CNUAS_HOST_LIB_DIR); verbs programs will see no device\n",
                         verb);
        }
        else
        {
            const char* old = std::getenv("LD_LIBRARY_PATH");
            const std::string path =
                libDir + (old != nullptr && *old != '\0' ? ":" + std::string(old) : "");
            setenv("LD_LIBRARY_PATH", path.c_str(), 1);
        }
    }
    // The host's own variables, where its processes find them when a launcher hands them
    // another host's environment (MPICH's hydra and Slurm's srun pass theirs on to every
    // process they start): the libraries take the values of the network namespace they run
    // in (host/abi/cnuas-host-env.h).
    if (const uint64_t inode = NetnsInode(netns); inode != 0)
    {
        const std::string prefix = FabricHostMapPrefix(dir, fabric);
        WriteFileIfChanged(prefix + std::to_string(inode) + ".env",
                           "CNUAS_HCA_SOCKET=" + hcaSocket + "\nCNUAS_UMAD_SOCKET=" +
                               umadSocket + "\nCNUAS_CM_SOCKET=" + cmSocket + "\n");
        setenv("CNUAS_HOST_NETNS", std::to_string(inode).c_str(), 1);
        setenv("CNUAS_HOST_MAP", prefix.c_str(), 1);
    }
    HostView view;
    // The host's adapters in its /sys/class/infiniband (umad, issue 14; a RoCE NIC's too), for
    // programs that read sysfs themselves (ibstatus): a snapshot as the program starts.
    if (!umadSocket.empty() || !hcaSocket.empty())
    {
        std::string why;
        if (!HcaSysClassFiles(umadSocket, hcaSocket, kRoceInterface, &view.sysClass, &why))
        {
            std::fprintf(stderr, "cnuas %s: warning: no /sys/class/infiniband view: %s\n",
                         verb, why.c_str());
            view.sysClass.clear();
        }
    }
    // Its /etc/hosts: the machine's, then the fabric's hosts by name (written beside the state
    // file).
    {
        const std::string path = FabricEtcHostsPath(dir, fabric);
        std::string machine = ReadTextFile("/etc/hosts");
        const std::string mark = "\n# The hosts of Cnuas fabric '" + fabric + "'";
        if (const size_t at = machine.find(mark); at != std::string::npos)
        {
            machine.erase(at); // inside a host: its own view, written by an earlier exec
        }
        if (WriteFileIfChanged(path, machine + mark +
                                         " (cnuas exec shows this file as /etc/hosts in them)\n" +
                                         hostsByName))
        {
            view.etcFiles.emplace_back(path, "/etc/hosts");
        }
    }
    // Its resolver: a host's network is the fabric, where no name server answers; the
    // machine's (unreachable from there, or routed into the fabric when its address falls in
    // the hosts' subnet) cost every lookup of a name outside /etc/hosts the resolver's
    // timeouts, 12 s here. A server on the host's own loopback refuses at once, unless the user
    // runs one there.
    if (const std::string path = FabricResolvConfPath(dir, fabric);
        WriteFileIfChanged(path, "# Cnuas fabric '" + fabric +
                                     "': its hosts' network has no name server; names are in "
                                     "/etc/hosts.\nnameserver 127.0.0.1\n"))
    {
        view.etcFiles.emplace_back(path, "/etc/resolv.conf");
    }
    // And its /dev/infiniband: a node per adapter (and the IB CA's MAD interface), as the
    // kernel's drivers make them, for programs that look there before using verbs (UCX).
    if (!hcaSocket.empty())
    {
        const int adapters =
            1 + static_cast<int>(std::count(hcaSocket.begin(), hcaSocket.end(), ':'));
        view.devNodes = HcaDevNodes(adapters, !umadSocket.empty());
    }
    const std::string err = ExecInNetns(netns, cmd, &view);
    std::fprintf(stderr, "cnuas %s: %s\n", verb, err.c_str());
    return err.find("cannot run") == 0 ? 127 : 1;
}

// ---- cnuas rsh -------------------------------------------------------------------------------

const char* const kRshUsage =
    "usage: cnuas rsh [--name NAME] [--state-dir DIR] HOST COMMAND [WORDS...]\n"
    "\n"
    "Runs a command in emulated host HOST as ssh runs a remote one: COMMAND and WORDS joined\n"
    "with spaces and given to sh -c. For programs that start processes on other machines\n"
    "through an ssh-like agent: `cnuas exec` names it to Open MPI in every host\n"
    "(OMPI_MCA_plm_rsh_agent), so `mpirun --host h0,h1 ...` started in a host runs its ranks\n"
    "in those hosts. The fabric is NAME, else the calling host's ($CNUAS_FABRIC), else as for\n"
    "exec. The exit status is the command's; 2 for a usage error.\n";

int
RunExec(const std::vector<std::string>& args)
{
    HostCommandArgs a;
    if (const auto done = ParseHostCommand(args, "exec", kExecUsage, true, &a))
    {
        return *done;
    }
    return ExecInHost("exec", a.name, a.stateDir, a.host, a.words);
}

int
RunRsh(const std::vector<std::string>& args)
{
    HostCommandArgs a;
    if (const auto done = ParseHostCommand(args, "rsh", kRshUsage, false, &a))
    {
        return *done;
    }
    std::string command;
    for (const std::string& w : a.words)
    {
        command += (command.empty() ? "" : " ") + w;
    }
    return ExecInHost("rsh", a.name, a.stateDir, a.host, {"/bin/sh", "-c", command});
}

// ---- cnuas down ------------------------------------------------------------------------------

const char* const kDownUsage =
    "usage: cnuas down [--name NAME | --all] [--state-dir DIR] [--timeout S]\n"
    "\n"
    "Stops an emulated fabric and removes everything it made: the hosts' namespaces and the\n"
    "processes in them, with the TAP devices inside, state file and socket. Works after a\n"
    "crash too (a daemon killed with SIGKILL): what the state file names is removed, nothing\n"
    "else.\n"
    "--timeout S: how long the daemon has to stop before it is killed (default 10 s and 50 ms\n"
    "a host; a k=16 fat-tree, 1,024 hosts, stops in under a second).\n"
    "Exit status 0 when nothing is left, 1 if something could not be removed or no fabric\n"
    "was up, 2 on a usage error.\n";

int
DownOne(const std::string& dir, const std::string& name, double timeout)
{
    const std::string statePath = FabricStatePath(dir, name);
    auto state = ReadState(statePath);
    if (!state)
    {
        SayNotUp("down", name, dir);
        return 1;
    }
    const int pid = state->value("pid", 0);
    if (timeout < 0)
    {
        timeout = 10 + 0.05 * static_cast<double>(
                                  state->value("namespaces", nlohmann::json::array()).size());
    }
    if (ProcessAlive(pid))
    {
        if (StopProcess(pid, timeout))
        {
            std::printf("cnuas down: fabric '%s' stopped (pid %d)\n", name.c_str(), pid);
        }
        else
        {
            std::printf("cnuas down: fabric '%s' did not stop within %g s; killed pid %d\n",
                        name.c_str(), timeout, pid);
        }
    }
    else
    {
        std::printf("cnuas down: fabric '%s' (pid %d) was not running\n", name.c_str(), pid);
    }
    // The daemon's last word is its final status (in its log): the lag over the whole run.
    {
        std::ifstream log(FabricLogPath(dir, name));
        std::string line;
        const std::string tag = "final status ";
        while (std::getline(log, line))
        {
            const auto at = line.find(tag);
            if (at == std::string::npos)
            {
                continue;
            }
            auto j = nlohmann::json::parse(line.substr(at + tag.size()), nullptr, false);
            if (!j.is_discarded() && j.contains("lag") && !j["lag"].empty())
            {
                const auto& l = j["lag"];
                std::printf("  over the run: %.3f s simulated in %.3f s wall (dilation %g), lag "
                            "mean %.1f us, max %.1f us, %llu of %llu events late by > 1 ms\n",
                            l.value("sim_s", 0.0), l.value("wall_s", 0.0),
                            l.value("dilation", 1.0), l.value("mean_lag_us", 0.0),
                            l.value("max_lag_us", 0.0),
                            static_cast<unsigned long long>(l.value("late_events", 0ULL)),
                            static_cast<unsigned long long>(l.value("events", 0ULL)));
            }
        }
    }
    int rc = 0;
    for (const auto& line : CleanUpFabric(*state, dir))
    {
        std::printf("  %s\n", line.c_str());
        if (line.rfind("could not", 0) == 0)
        {
            rc = 1;
        }
    }
    unlink(FabricLogPath(dir, name).c_str());
    unlink(FabricEtcHostsPath(dir, name).c_str());
    unlink(FabricResolvConfPath(dir, name).c_str());
    unlink(FabricRshLinkPath(dir, name).c_str());
    glob_t hostMaps{};
    if (glob((FabricHostMapPrefix(dir, name) + "*.env").c_str(), 0, nullptr, &hostMaps) == 0)
    {
        for (size_t i = 0; i < hostMaps.gl_pathc; ++i)
        {
            unlink(hostMaps.gl_pathv[i]);
        }
    }
    globfree(&hostMaps);
    return rc;
}

int
RunDown(const std::vector<std::string>& args)
{
    std::string name;
    std::string stateDir;
    bool all = false;
    double timeout = -1; // by the fabric's size (DownOne)
    for (size_t i = 0; i < args.size(); ++i)
    {
        if (args[i] == "--help" || args[i] == "-h")
        {
            std::fputs(kDownUsage, stdout);
            return 0;
        }
        else if (args[i] == "--all")
        {
            all = true;
        }
        else if ((args[i] == "--name" || args[i] == "--state-dir" || args[i] == "--timeout") &&
                 i + 1 < args.size())
        {
            const std::string v = args[++i];
            if (args[i - 1] == "--name")
            {
                name = v;
            }
            else if (args[i - 1] == "--state-dir")
            {
                stateDir = v;
            }
            else
            {
                const auto seconds = ParseSeconds(v, true);
                timeout = seconds.value_or(-1);
                if (!seconds)
                {
                    std::fprintf(stderr,
                                 "cnuas down: --timeout '%s' is not a number of seconds\n",
                                 v.c_str());
                    return 2;
                }
            }
        }
        else
        {
            std::fprintf(stderr, "cnuas down: unknown argument '%s'\n%s", args[i].c_str(),
                         kDownUsage);
            return 2;
        }
    }
    const std::string dir = StateDirectory(stateDir);
    if (all)
    {
        int rc = 0;
        for (const auto& n : FabricNames(dir))
        {
            rc = std::max(rc, DownOne(dir, n, timeout));
        }
        return rc;
    }
    return DownOne(dir, ChooseFabric(name, dir), timeout);
}

// ---- cnuas capture -----------------------------------------------------------------------------

const char* const kCaptureUsage =
    "usage: cnuas capture [--name NAME] [--state-dir DIR] [--fabric ib|roce] PORT -w FILE\n"
    "                     [--duration S]\n"
    "\n"
    "Writes the frames of a simulated port of a running fabric to FILE (pcap, nanosecond\n"
    "time stamps of simulated time; Ethernet on RoCE, ERF InfiniBand on IB), until Ctrl-C or\n"
    "for S seconds. PORT is a host (its NIC) or NODE:PORT (a switch port, numbered from 1).\n"
    "A hybrid fabric has two: --fabric names which (ib: the host's HCA, roce: its NIC).\n";

volatile sig_atomic_t g_captureStop = 0;

void
OnCaptureSignal(int)
{
    g_captureStop = 1;
}

int
RunCapture(const std::vector<std::string>& args)
{
    std::string name;
    std::string stateDir;
    std::string port;
    std::string file;
    std::string rail;
    double duration = -1;
    for (size_t i = 0; i < args.size(); ++i)
    {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h")
        {
            std::fputs(kCaptureUsage, stdout);
            return 0;
        }
        if ((a == "--name" || a == "--state-dir" || a == "-w" || a == "--duration" ||
             a == "--fabric") &&
            i + 1 < args.size())
        {
            const std::string v = args[++i];
            if (a == "--name")
            {
                name = v;
            }
            else if (a == "--fabric")
            {
                if (v != "ib" && v != "roce")
                {
                    std::fprintf(stderr, "cnuas capture: --fabric %s: ib or roce\n", v.c_str());
                    return 2;
                }
                rail = v;
            }
            else if (a == "--state-dir")
            {
                stateDir = v;
            }
            else if (a == "-w")
            {
                file = v;
            }
            else
            {
                const auto seconds = ParseSeconds(v, false);
                if (!seconds)
                {
                    std::fprintf(stderr,
                                 "cnuas capture: --duration '%s' is not a number of seconds "
                                 "above 0 and at most 86400\n",
                                 v.c_str());
                    return 2;
                }
                duration = *seconds;
            }
        }
        else if (a.rfind("-", 0) != 0 && port.empty())
        {
            port = a;
        }
        else
        {
            std::fprintf(stderr, "cnuas capture: unexpected '%s'\n%s", a.c_str(), kCaptureUsage);
            return 2;
        }
    }
    if (port.empty() || file.empty())
    {
        std::fprintf(stderr, "cnuas capture: give a port and -w FILE\n%s", kCaptureUsage);
        return 2;
    }
    // The daemon writes the file: give it an absolute path.
    if (file[0] != '/')
    {
        char cwd[4096];
        if (getcwd(cwd, sizeof(cwd)) != nullptr)
        {
            file = std::string(cwd) + "/" + file;
        }
    }
    const std::string dir = StateDirectory(stateDir);
    const std::string fabric = ChooseFabric(name, dir);
    auto state = ReadState(FabricStatePath(dir, fabric));
    if (!state || !ProcessAlive(state->value("pid", 0)))
    {
        SayNotUp("capture", fabric, dir);
        return 1;
    }
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, state->value("socket", "").c_str(), sizeof(addr.sun_path) - 1);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    {
        std::fprintf(stderr, "cnuas capture: cannot reach the daemon: %s\n",
                     std::strerror(errno));
        return 1;
    }
    if (!rail.empty() && state->value("fabric", "") != "hybrid")
    {
        if (state->value("fabric", "") != rail)
        {
            std::fprintf(stderr, "cnuas capture: fabric '%s' is not %s\n", fabric.c_str(),
                         rail == "ib" ? "InfiniBand" : "RoCE");
            return 1;
        }
        rail.clear(); // one fabric: nothing to choose
    }
    const std::string req =
        "capture " + (rail.empty() ? "" : rail + "/") + port + " " + file + "\n";
    if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size()))
    {
        std::fprintf(stderr, "cnuas capture: cannot talk to the daemon\n");
        return 1;
    }
    std::string line;
    char c;
    while (read(fd, &c, 1) == 1 && c != '\n')
    {
        line += c;
    }
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("ok"))
    {
        std::fprintf(stderr, "cnuas capture: %s\n",
                     j.is_discarded() ? "no answer from the daemon"
                                      : j.value("error", "refused").c_str());
        return 1;
    }
    std::fprintf(stderr, "cnuas capture: %s%s\n", j["ok"].get<std::string>().c_str(),
                 duration > 0 ? "" : " (Ctrl-C stops)");
    signal(SIGINT, OnCaptureSignal);
    signal(SIGTERM, OnCaptureSignal);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(duration * 1000));
    while (!g_captureStop && (duration < 0 || std::chrono::steady_clock::now() < until))
    {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0 && read(fd, &c, 1) <= 0)
        {
            std::fprintf(stderr, "cnuas capture: the fabric went down\n");
            close(fd);
            return 1;
        }
    }
    // Closing the connection ends the capture; the daemon flushes and closes the file. Wait
    // for it so that the file is complete when this command returns.
    shutdown(fd, SHUT_WR);
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, 3000);
    close(fd);
    std::fprintf(stderr, "cnuas capture: wrote %s\n", file.c_str());
    return 0;
}

} // namespace

// ---- shared with cnuas status ------------------------------------------------------------------

std::optional<nlohmann::json>
QueryFabric(const std::string& socketPath,
            const std::string& request,
            double timeoutSeconds,
            std::string* why)
{
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socketPath.c_str(), sizeof(addr.sun_path) - 1);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    {
        *why = "cannot reach " + socketPath + ": " + std::strerror(errno);
        if (fd >= 0)
        {
            close(fd);
        }
        return std::nullopt;
    }
    const std::string req = request + "\n";
    std::string line;
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()))
    {
        const auto until = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000));
        char buf[4096];
        while (std::chrono::steady_clock::now() < until)
        {
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, 100) <= 0)
            {
                continue;
            }
            const ssize_t n = read(fd, buf, sizeof(buf));
            if (n <= 0)
            {
                break;
            }
            line.append(buf, static_cast<size_t>(n));
            if (line.find('\n') != std::string::npos)
            {
                break;
            }
        }
    }
    close(fd);
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded())
    {
        *why = "no answer from the daemon";
        return std::nullopt;
    }
    return j;
}

void
PrintFabricStatus(const nlohmann::json& state, const nlohmann::json* live)
{
    const double dilation = state.value("dilation", 1.0);
    std::printf("  fabric:  %s, %s\n", state.value("fabric", "?").c_str(),
                dilation == 1 ? "real time"
                              : ("time dilation " + std::to_string(dilation) +
                                 " (simulated time = wall time / factor)")
                                    .c_str());
    if (!live || live->contains("error"))
    {
        std::printf("  daemon:  %s\n",
                    live ? (*live)["error"].get<std::string>().c_str() : "did not answer");
    }
    if (live && live->contains("lag") && !(*live)["lag"].empty())
    {
        const auto& l = (*live)["lag"];
        if (l.contains("recent"))
        {
            const auto& r = l["recent"];
            std::printf("  lag:     now %.1f us; last %.1f s: mean %.1f us, max %.1f us, %llu of "
                        "%llu events late by > 1 ms\n",
                        l.value("current_lag_us", 0.0), r.value("window_s", 0.0),
                        r.value("mean_lag_us", 0.0), r.value("max_lag_us", 0.0),
                        static_cast<unsigned long long>(r.value("late_events", 0ULL)),
                        static_cast<unsigned long long>(r.value("events", 0ULL)));
        }
        std::printf("  %s max %.1f us, mean %.1f us; %llu of %llu events "
                    "late by > 1 ms; simulated %.3f s in %.3f s wall\n",
                    l.contains("recent") ? "since up:" : "lag:    ", l.value("max_lag_us", 0.0),
                    l.value("mean_lag_us", 0.0),
                    static_cast<unsigned long long>(l.value("late_events", 0ULL)),
                    static_cast<unsigned long long>(l.value("events", 0ULL)),
                    l.value("sim_s", 0.0), l.value("wall_s", 0.0));
    }
    const nlohmann::json hosts =
        live && live->contains("hosts") ? (*live)["hosts"] : state.value("hosts", nlohmann::json::array());
    // One adapter's line (and its offload and verbs lines); a hybrid fabric's host has a
    // second, its InfiniBand HCA's, under "ib".
    auto printAdapter = [](const nlohmann::json& h, bool first) {
        if (first)
        {
            std::printf("  %-10s netns %-16s %-12s %s", h.value("name", "").c_str(),
                        h.value("netns", "").c_str(), h.value("ip", "").c_str(),
                        h.value("mac", "").c_str());
        }
        else
        {
            std::printf("  %-10s ib0   %-16s %-12s %s", "", "", h.value("ip", "").c_str(),
                        h.value("mac", "").c_str());
        }
        if (h.contains("port_state"))
        {
            char joined[24] = "not joined";
            if (const int mlid = h.value("broadcast_mlid", 0); mlid != 0)
            {
                std::snprintf(joined, sizeof joined, "joined 0x%04x", mlid);
            }
            std::printf("  port %s, LID %d; IPoIB %s, sent %llu, received %llu, dropped (not "
                        "joined) %llu, (no path) %llu, (port not Active) %llu; held for a full "
                        "queue %llu",
                        h.value("port_state", "").c_str(), h.value("lid", 0),
                        joined,
                        static_cast<unsigned long long>(h.value("ipoib_sent", 0ULL)),
                        static_cast<unsigned long long>(h.value("ipoib_received", 0ULL)),
                        static_cast<unsigned long long>(h.value("dropped_not_joined", 0ULL)),
                        static_cast<unsigned long long>(h.value("dropped_no_path", 0ULL)),
                        static_cast<unsigned long long>(h.value("dropped_port_not_active", 0ULL)),
                        static_cast<unsigned long long>(h.value("held_queue_full", 0ULL)));
        }
        else if (h.contains("from_host_frames"))
        {
            std::printf("  from host %llu, to host %llu, ring overruns %llu, refused %llu",
                        static_cast<unsigned long long>(h.value("from_host_frames", 0ULL)),
                        static_cast<unsigned long long>(h.value("to_host_frames", 0ULL)),
                        static_cast<unsigned long long>(h.value("rx_ring_overruns", 0ULL)),
                        static_cast<unsigned long long>(h.value("refused_by_port", 0ULL)));
            if (!h["drops"].empty())
            {
                std::printf(", drops %s", h["drops"].dump().c_str());
            }
            if (h.contains("offload"))
            {
                const auto& o = h["offload"];
                auto on = [&o](const char* k) { return o.value(k, false) ? "on" : "off"; };
                std::printf("\n  %-10s offloads: checksum %s, TSO %s (%llu reads, %llu TSO "
                            "frames cut into %llu segments, %llu checksums filled, %llu refused), "
                            "coalescing %s (%llu writes, %llu of them %llu merged segments)",
                            "", on("checksum"), on("segmentation"),
                            static_cast<unsigned long long>(o.value("reads_from_host", 0ULL)),
                            static_cast<unsigned long long>(o.value("gso_from_host", 0ULL)),
                            static_cast<unsigned long long>(o.value("segments_from_gso", 0ULL)),
                            static_cast<unsigned long long>(o.value("checksums_filled", 0ULL)),
                            static_cast<unsigned long long>(o.value("refused", 0ULL)),
                            on("coalescing"),
                            static_cast<unsigned long long>(o.value("writes_to_host", 0ULL)),
                            static_cast<unsigned long long>(o.value("coalesced_writes", 0ULL)),
                            static_cast<unsigned long long>(o.value("coalesced_segments", 0ULL)));
            }
        }
        if (h.contains("verbs") && h["verbs"].is_object())
        {
            const auto& v = h["verbs"];
            auto n = [&v](const char* k) {
                return static_cast<unsigned long long>(v.value(k, 0ULL));
            };
            std::printf("\n  %-10s verbs (%s): %llu contexts open, %llu requests (%llu "
                        "refused), %llu send / %llu receive WQEs (%llu bad); memory regions: "
                        "%llu shared with the daemon, %llu through /proc/PID/mem",
                        "", v.value("device", "?").c_str(), n("contexts_open"), n("requests"),
                        n("refused"), n("send_wqes"), n("recv_wqes"), n("bad_wqes"),
                        n("shared_mrs"), n("unshared_mrs"));
            if (v.contains("transport") && v["transport"].is_object())
            {
                const auto& t = v["transport"];
                auto m = [&t](const char* k) {
                    return static_cast<unsigned long long>(t.value(k, 0ULL));
                };
                std::string drops;
                const nlohmann::json byReason = t.value("drops", nlohmann::json::object());
                for (const auto& [reason, count] : byReason.items()) // kept: items() walks into it
                {
                    drops += (drops.empty() ? "" : ", ") + reason + " " + count.dump();
                }
                std::printf("\n  %-10s transport: %llu packets sent, %llu received; %llu "
                            "retransmitted after %llu timeouts and %llu NAKs (%llu RNR); sent "
                            "%llu NAKs (%llu RNR); dropped: %s",
                            "", m("packets_sent"), m("packets_received"),
                            m("retransmitted_packets"), m("timeouts"), m("naks_received"),
                            m("rnr_naks_received"), m("naks_sent"), m("rnr_naks_sent"),
                            drops.empty() ? "none" : drops.c_str());
            }
        }
        std::printf("\n");
    };
    for (const auto& h : hosts)
    {
        printAdapter(h, true);
        if (h.contains("ib") && h["ib"].is_object())
        {
            printAdapter(h["ib"], false);
        }
        else if (h.contains("ib_ip"))
        {
            std::printf("  %-10s ib0   %-16s %s\n", "", "", h.value("ib_ip", "").c_str());
        }
    }
    if (live && live->contains("sm") && !(*live)["sm"].is_null())
    {
        const auto& sm = (*live)["sm"];
        bool processSm = false;
        for (const auto& h : hosts)
        {
            const auto& ib = h.contains("ib") ? h["ib"] : h;
            processSm = processSm || (ib.contains("umad") && ib["umad"].value("is_sm", false));
        }
        if (!sm.value("running", false) && !processSm)
        {
            std::printf("  subnet manager: none: ports stay Initializing, LID 0 (the built-in "
                        "one on %s is stopped; cnuas sm start runs it)\n",
                        sm.value("node", "").c_str());
        }
        else if (!sm.value("running", false))
        {
            std::printf("  built-in subnet manager on %s: stopped (cnuas sm start runs it)\n",
                        sm.value("node", "").c_str());
        }
        else
        {
            std::printf("  built-in subnet manager on %s: %s, priority %d, %s; subnet up at "
                        "%.6f s simulated, %llu SMPs, %llu handovers given, %llu taken\n",
                        sm.value("node", "").c_str(), sm.value("state", "").c_str(),
                        sm.value("priority", 0), sm.value("phase", "").c_str(),
                        sm.value("subnet_up_s", -1.0),
                        static_cast<unsigned long long>(sm.value("smps_sent", 0ULL)),
                        static_cast<unsigned long long>(sm.value("handovers_sent", 0ULL)),
                        static_cast<unsigned long long>(sm.value("handovers_received", 0ULL)));
            for (const auto& o : sm.value("other_sms", nlohmann::json::array()))
            {
                std::printf("  subnet manager %s on %s: %s, priority %d (as the built-in SM "
                            "last heard)\n",
                            o.value("guid", "").c_str(),
                            o.value("node", "").empty() ? "?" : o.value("node", "").c_str(),
                            o.value("state", "").c_str(), o.value("priority", 0));
            }
        }
        for (const auto& h : hosts)
        {
            const auto& ib = h.contains("ib") ? h["ib"] : h;
            if (ib.contains("umad") && ib["umad"].value("is_sm", false))
            {
                std::printf("  %s holds its port's SM interface (issm): an SM such as opensm "
                            "runs there\n",
                            h.value("name", "").c_str());
            }
        }
    }
    if (live && live->contains("switches"))
    {
        for (const auto& s : (*live)["switches"])
        {
            std::printf("  %-10s forwarded %llu, ECN marked %llu, PFC sent %llu%s%s\n",
                        s.value("name", "").c_str(),
                        static_cast<unsigned long long>(s.value("forwarded", 0ULL)),
                        static_cast<unsigned long long>(s.value("ecn_marked", 0ULL)),
                        static_cast<unsigned long long>(s.value("pfc_sent", 0ULL)),
                        s["drops"].empty() ? "" : ", drops ",
                        s["drops"].empty() ? "" : s["drops"].dump().c_str());
        }
    }
}

const char* const kSmUsage =
    "usage: cnuas sm start|stop [--priority P] [--name NAME] [--state-dir DIR]\n"
    "\n"
    "Starts or stops the built-in subnet manager of a running InfiniBand fabric (it lives on\n"
    "the first host; 'cnuas up --sm none' leaves it stopped). Started beside another SM\n"
    "(opensm in a host), it takes part in the election of IBA vol. 1 §14.4: a lower priority\n"
    "(0-15; equal priorities go to the lower port GUID) stands by and takes over when the\n"
    "master stops answering; a higher one is handed the mastership. 'cnuas status' shows\n"
    "each SM's state and priority.\n";

int
RunSm(const std::vector<std::string>& args)
{
    std::string name;
    std::string stateDir;
    std::string what;
    std::string priority;
    for (size_t i = 0; i < args.size(); ++i)
    {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h")
        {
            std::fputs(kSmUsage, stdout);
            return 0;
        }
        if ((a == "--name" || a == "--state-dir" || a == "--priority") && i + 1 < args.size())
        {
            (a == "--name" ? name : a == "--state-dir" ? stateDir : priority) = args[++i];
        }
        else if ((a == "start" || a == "stop") && what.empty())
        {
            what = a;
        }
        else
        {
            std::fprintf(stderr, "cnuas sm: unexpected '%s'\n%s", a.c_str(), kSmUsage);
            return 2;
        }
    }
    uint64_t p = 0;
    if (what.empty() || (!priority.empty() && (what != "start" ||
                                               !ns3::ParseDecimalUint(priority, 15, &p))))
    {
        std::fprintf(stderr, "cnuas sm: give start or stop (--priority 0-15 with start)\n%s",
                     kSmUsage);
        return 2;
    }
    const std::string dir = StateDirectory(stateDir);
    const std::string fabric = ChooseFabric(name, dir);
    auto state = ReadState(FabricStatePath(dir, fabric));
    if (!state || !ProcessAlive(state->value("pid", 0)))
    {
        SayNotUp("sm", fabric, dir);
        return 1;
    }
    std::string why;
    auto answer = QueryFabric(state->value("socket", ""),
                              "sm " + what + (priority.empty() ? "" : " " + priority), 5.0, &why);
    if (!answer)
    {
        std::fprintf(stderr, "cnuas sm: %s\n", why.c_str());
        return 1;
    }
    if (!answer->contains("ok"))
    {
        std::fprintf(stderr, "cnuas sm: %s\n", answer->value("error", "refused").c_str());
        return 1;
    }
    std::printf("%s\n", (*answer)["ok"].get<std::string>().c_str());
    return 0;
}

CNUAS_COMMAND("up", "bring up an emulated fabric whose hosts are network namespaces", RunUp);
CNUAS_COMMAND("exec", "run a command inside an emulated host", RunExec);
CNUAS_COMMAND("rsh", "run a command inside an emulated host as ssh would (for mpirun)", RunRsh);
CNUAS_COMMAND("down", "stop an emulated fabric and remove all it made", RunDown);
CNUAS_COMMAND("capture", "write a running fabric's port to a pcap", RunCapture);
CNUAS_COMMAND("sm", "start or stop the built-in subnet manager of a running fabric", RunSm);

} // namespace cnuas
