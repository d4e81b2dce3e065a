// `cnuas rack up|down|pause|resume`: runs an ORv3 rack (power shelves, BBU shelf, a
// rackmon-like BMC) in real time, with a pty on its RS-485 bus for a real Modbus master and the
// BMC's Redfish service on loopback; `cnuas status` shows both; pauses and resumes its BMC.
#include "command.h"
#include "state-files.h"

#include "helpers/formats/parse-util.h"
#include "helpers/formats/rack-file.h"
#include "helpers/rack/rack-helper.h"
#include "helpers/rack/rs485-pty-bridge-helper.h"
#include "helpers/scenario/scenario-file.h"
#include "helpers/trace/modbus-pcap-writer.h"
#include "models/rack/rack-bmc.h"
#include "models/rack/redfish-server.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace cnuas
{

namespace
{

const char* const kUsage =
    "usage: cnuas rack up [--config FILE] [--shelves N] [--bbu-shelves N] [--hpr] [--no-bmc]\n"
    "                     [--redfish-port P] [--pty-link PATH] [--pcap FILE|DIR] [--duration S]\n"
    "                     [--set ATTRIBUTE=VALUE]... [--state-dir DIR]\n"
    "       cnuas rack down [--timeout S] [--state-dir DIR]\n"
    "       cnuas rack pause|resume [--timeout S] [--state-dir DIR]\n"
    "       cnuas rack fault dead|revive|chatter|quiet ADDRESS [--timeout S] [--state-dir DIR]\n"
    "\n"
    "'up' runs an ORv3 rack in real time until interrupted (Ctrl-C, SIGTERM or 'cnuas rack\n"
    "down'): PSU shelves and a BBU shelf on one RS-485 segment, a BMC polling them as rackmon\n"
    "does and serving what it reads as DMTF Redfish on 127.0.0.1, and a pseudo-terminal on the\n"
    "same bus for a real Modbus master (mbpoll, libmodbus, pymodbus, rackmond). It prints the\n"
    "pty path and the Redfish URL and records them in a state file that 'cnuas status' reads.\n"
    "'pause' stops the simulated BMC's polling (the transaction in flight ends first) so that a\n"
    "master on the pty has the bus to itself, as 'rackmoncli pause' does; 'resume' restarts\n"
    "it. Both return once the rack has done it (SIGUSR1/SIGUSR2 to the rack's pid). To start\n"
    "paused: --set ns3::RackBmc::Paused=true. A master on the pty and the BMC take turns (one\n"
    "transaction each), so the printed mbpoll and pymodbus lines work while the BMC polls.\n"
    "'fault' changes a running device's Modbus side, by address (0xC8 or 200): 'dead' (no\n"
    "answer, as unpowered or hung firmware), 'revive', 'chatter' (random bytes on the bus at\n"
    "random times), 'quiet'; rack files have the same as 'at T dead ADDRESS' etc.\n"
    "\n"
    "options (they override the config file):\n"
    "  --config FILE          a rack file (key = value lines, 'at T ACTION' events, 'set';\n"
    "                         see examples/rack/two-shelves.rack and docs/rack.md)\n"
    "  --shelves N            PSU shelves (default 2; legacy ORv3 at most 3, HPR 4)\n"
    "  --bbu-shelves N        BBU shelves (default 1)\n"
    "  --hpr                  HPR rack: 115200 baud, Ventura2 addresses, a PMM per shelf\n"
    "  --no-bmc               no simulated BMC (and so no Redfish): the pty's master is the\n"
    "                         only one on the bus (e.g. a real OpenBMC in QEMU)\n"
    "  --redfish-port P       Redfish TCP port on 127.0.0.1 (default 0: an ephemeral port)\n"
    "  --pty-link PATH        also make PATH a symlink to the pty (a stable name for clients)\n"
    "  --pcap FILE|DIR        write every Modbus RTU frame on the RS-485 bus (the BMC's, the\n"
    "                         pty master's and the answers) to a pcap Wireshark decodes (link\n"
    "                         type 252, 'mbrtu'): FILE if it ends in .pcap, else\n"
    "                         DIR/rs485-bus.pcap (DIR created)\n"
    "  --duration S           stop by itself after S seconds (default: run until stopped)\n"
    "  --set ATTR=VALUE       an ns-3 attribute default, e.g. ns3::RackBmc::MonitorInterval=5s\n"
    "  --state-dir DIR        where the state file goes (default $CNUAS_STATE_DIR, else\n"
    "                         $XDG_RUNTIME_DIR/cnuas, else /run/cnuas for root, else\n"
    "                         /tmp/cnuas-UID)\n"
    "  --timeout S            down, pause, resume: how long to wait (default 15)\n"
    "\n"
    "Exit status: 0 after a clean stop, 1 on a runtime error, 2 on a usage error, 3 on a bad\n"
    "rack file (named with the line).\n";

/// The rack file's settings and what only the command line gives.
struct UpConfig : ns3::RackFileConfig
{
    std::string pcap; ///< --pcap: a .pcap file, or a folder for rs485-bus.pcap
};

volatile std::sig_atomic_t g_stopSignal = 0;
volatile std::sig_atomic_t g_bmcSignal = 0; ///< SIGUSR1 pause, SIGUSR2 resume

void
OnSignal(int sig)
{
    g_stopSignal = sig;
}

void
OnBmcSignal(int sig)
{
    g_bmcSignal = sig;
}

/// What the signal watcher and the BMC's Held trace need: the state file records whether the
/// BMC has released the bus, which is what `cnuas rack pause` waits for.
struct BmcWatch
{
    ns3::Ptr<ns3::RackBmc> bmc;
    std::string statePath;
    nlohmann::json state;
};

BmcWatch g_bmcWatch;

/// `cnuas rack fault`: requests come as files DIR/fault-PID.req ("ACTION ADDRESS"), answers
/// go to DIR/fault-PID.rep ("ok ..." or "error ..."). Files, because a signal carries no
/// argument; each client names its own pair, so several may ask at once.
struct FaultWatch
{
    bool on = false;
    ns3::Rack rack;
    std::string dir;
    std::set<uint8_t> dead;
    std::set<uint8_t> chattering;
};

FaultWatch g_faultWatch;

/// Records a device's Modbus-side fault in the state file ("dead", "chattering": addresses).
void
NoteFault(const std::string& action, uint8_t a)
{
    if (action == "dead")
    {
        g_faultWatch.dead.insert(a);
    }
    else if (action == "revive")
    {
        g_faultWatch.dead.erase(a);
    }
    else if (action == "chatter")
    {
        g_faultWatch.chattering.insert(a);
    }
    else
    {
        g_faultWatch.chattering.erase(a);
    }
    if (!g_bmcWatch.statePath.empty())
    {
        g_bmcWatch.state["dead"] = g_faultWatch.dead;
        g_bmcWatch.state["chattering"] = g_faultWatch.chattering;
        std::string why;
        WriteState(g_bmcWatch.statePath, g_bmcWatch.state, &why);
    }
}

/// Answers the pending `cnuas rack fault` requests (simulation thread, from WatchSignals).
void
ServeFaultRequests()
{
    std::error_code ec;
    std::vector<std::filesystem::path> requests;
    for (const auto& entry : std::filesystem::directory_iterator(g_faultWatch.dir, ec))
    {
        const std::string name = entry.path().filename().string();
        if (name.rfind("fault-", 0) == 0 && entry.path().extension() == ".req")
        {
            requests.push_back(entry.path());
        }
    }
    for (const auto& req : requests)
    {
        std::ifstream in(req);
        std::string action;
        std::string address;
        in >> action >> address;
        std::string reply;
        try
        {
            if (!ns3::IsRackModbusFault(action))
            {
                throw std::invalid_argument("unknown fault '" + action +
                                            "' (dead, revive, chatter, quiet)");
            }
            const uint8_t a = ns3::ParseModbusAddress(address, "address");
            if (!ns3::ApplyRackModbusFault(g_faultWatch.rack, action, a))
            {
                throw std::invalid_argument("no device at Modbus address " + address);
            }
            NoteFault(action, a);
            char b[96];
            std::snprintf(b, sizeof(b), "ok %s 0x%02X at %.3f s\n", action.c_str(), a,
                          ns3::Simulator::Now().GetSeconds());
            reply = b;
        }
        catch (const std::exception& e)
        {
            reply = std::string("error ") + e.what() + "\n";
        }
        std::filesystem::path rep = req;
        rep.replace_extension(".rep");
        WriteFileAtomically(rep.string(), reply);
        std::filesystem::remove(req, ec);
    }
}

void
OnBmcHeld(bool held)
{
    g_bmcWatch.state["bmc_paused"] = held;
    std::string why;
    if (!WriteState(g_bmcWatch.statePath, g_bmcWatch.state, &why))
    {
        std::fprintf(stderr, "cnuas rack up: %s\n", why.c_str());
    }
}

void
WatchSignals()
{
    if (g_stopSignal != 0)
    {
        ns3::Simulator::Stop();
        return;
    }
    const int bmcSignal = g_bmcSignal;
    if (bmcSignal != 0)
    {
        g_bmcSignal = 0;
        if (g_bmcWatch.bmc && bmcSignal == SIGUSR1)
        {
            g_bmcWatch.bmc->Pause();
        }
        else if (g_bmcWatch.bmc)
        {
            g_bmcWatch.bmc->Resume();
        }
    }
    if (g_faultWatch.on)
    {
        ServeFaultRequests();
    }
    ns3::Simulator::Schedule(ns3::MilliSeconds(50), &WatchSignals);
}

std::string
AddressList(const ns3::Rack& r)
{
    std::string s;
    for (const auto& slave : r.slaves)
    {
        char b[8];
        std::snprintf(b, sizeof(b), "%s0x%02X", s.empty() ? "" : " ", slave->GetAddress());
        s += b;
    }
    return s;
}

int
RackUp(const std::vector<std::string>& args)
{
    UpConfig c;
    c.rack.responseDelay = ns3::MilliSeconds(1);
    std::string stateDir;
    std::string config;
    // First pass: the config file, so that the options override it.
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
    {
        if (args[i] == "--config")
        {
            config = args[i + 1];
        }
    }
    try
    {
        if (!config.empty())
        {
            ns3::ReadRackFile(config, &c); // InputError: the file's, with its line
        }
        for (std::size_t i = 0; i < args.size(); ++i)
        {
            const std::string& a = args[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= args.size())
                {
                    throw std::invalid_argument(a + " needs a value");
                }
                return args[++i];
            };
            if (a == "--config")
            {
                value();
            }
            else if (a == "--shelves")
            {
                c.rack.psuShelves = ns3::ParseRackCount(value(), a, 4);
            }
            else if (a == "--bbu-shelves")
            {
                c.rack.bbuShelves = ns3::ParseRackCount(value(), a, 4);
            }
            else if (a == "--hpr")
            {
                c.rack.hpr = true;
            }
            else if (a == "--no-bmc")
            {
                c.rack.bmc = false;
            }
            else if (a == "--redfish-port")
            {
                c.redfishPort = static_cast<int>(ns3::ParseRackCount(value(), a, 65535));
            }
            else if (a == "--pty-link")
            {
                c.ptyLink = value();
            }
            else if (a == "--pcap")
            {
                c.pcap = value();
            }
            else if (a == "--duration")
            {
                c.duration = ns3::ParseRackNumber(value(), a, 0, 1e9);
            }
            else if (a == "--set")
            {
                auto [k, v] = ns3::SplitAssignment(value(), "--set");
                c.settings.push_back({k, v, "--set"});
            }
            else if (a == "--state-dir")
            {
                stateDir = value();
            }
            else
            {
                throw std::invalid_argument("unknown option '" + a + "'");
            }
        }
        if (c.rack.psuShelves == 0 && c.rack.bbuShelves == 0)
        {
            throw std::invalid_argument("a rack needs at least one shelf");
        }
        const uint32_t maxShelves = c.rack.hpr ? 4 : 3;
        if (c.rack.psuShelves > maxShelves || c.rack.bbuShelves > maxShelves)
        {
            throw std::invalid_argument("at most " + std::to_string(maxShelves) +
                                        " PSU and BBU shelves in this addressing scheme");
        }
        if (c.rack.psusPerShelf > (c.rack.hpr ? 6u : 8u) ||
            c.rack.bbusPerShelf > (c.rack.hpr ? 6u : 8u))
        {
            throw std::invalid_argument("too many modules per shelf for the addressing scheme");
        }
        ns3::CheckRackAddresses(c.rack);
    }
    catch (const ns3::InputError& e)
    {
        std::fprintf(stderr, "cnuas rack up: %s\n", e.what());
        return kExitInput;
    }
    catch (const std::invalid_argument& e)
    {
        std::fprintf(stderr, "cnuas rack up: %s\n", e.what());
        return kExitUsage;
    }
    catch (const std::exception& e)
    {
        // A register map that cannot be read (CheckAddresses): the installation, not the input.
        std::fprintf(stderr, "cnuas rack up: %s\n", e.what());
        return kExitFailed;
    }

    const std::string dir = StateDirectory(stateDir);
    std::string why;
    if (!EnsureStateDirectory(dir, &why))
    {
        std::fprintf(stderr, "cnuas rack up: %s\n", why.c_str());
        return 1;
    }
    const std::string statePath = dir + "/rack.json";
    if (auto old = ReadState(statePath); old && ProcessAlive(old->value("pid", 0)))
    {
        std::fprintf(stderr,
                     "cnuas rack up: a rack is already up (pid %d, %s); 'cnuas rack down' "
                     "first\n",
                     old->value("pid", 0), statePath.c_str());
        return 1;
    }

    // The rack file's BMC keys are defaults, so that a `set`/--set of the same attribute wins.
    ns3::Config::SetDefault("ns3::RackBmc::MonitorInterval",
                            ns3::TimeValue(ns3::PicoSeconds(std::llround(c.monitor * 1e12))));
    ns3::Config::SetDefault("ns3::RackBmc::ScanPasses", ns3::UintegerValue(c.scanPasses));
    for (const auto& s : c.settings)
    {
        const std::string err = ns3::ApplyAttributeSetting(s.name, s.value);
        if (!err.empty())
        {
            std::fprintf(stderr, "cnuas rack up: %s: %s\n", s.where.c_str(), err.c_str());
            return s.where == "--set" ? kExitUsage : kExitInput;
        }
    }

    bool userSetParity = false;
    for (const auto& s : c.settings)
    {
        userSetParity = userSetParity || s.name.find("Rs485PtyBridge::Parity") != std::string::npos;
    }
    // Real time: the pty's client lives in wall-clock time.
    ns3::Rs485PtyBridgeHelper::EnableRealtime();
    ns3::RackHelper h;
    ns3::Rack rack = h.Build(c.rack);
    ns3::Ptr<ns3::RackStepLoad> load = ns3::CreateObject<ns3::RackStepLoad>();
    load->SetAttribute("InitialPower", ns3::DoubleValue(c.load));
    rack.power->SetLoadProfile(load);
    try
    {
        for (const ns3::RackFileEvent& e : c.events)
        {
            ns3::ScheduleRackEvent(e, rack, load, &NoteFault);
        }
    }
    catch (const std::exception& e)
    {
        // Events come from the rack file: its line is in the message.
        std::fprintf(stderr, "cnuas rack up: %s\n", e.what());
        ns3::Simulator::Destroy();
        return kExitInput;
    }

    const ns3::Rs485Format f = rack.psus.empty() ? rack.bbus[0]->GetMap().Format()
                                                 : rack.psus[0]->GetMap().Format();
    ns3::Rs485PtyBridgeHelper bh;
    bh.SetFormat(f); // a client that never sets the port talks at the segment's rate
    if (!c.ptyLink.empty())
    {
        bh.SetBridgeAttribute("LinkPath", ns3::StringValue(c.ptyLink));
    }
    ns3::Ptr<ns3::Node> ptyNode = ns3::CreateObject<ns3::Node>();
    ns3::Ptr<ns3::Rs485PtyBridge> bridge = bh.Install(ptyNode, rack.bus);
    if (rack.arbiter)
    {
        // The BMC and the pty's master take turns, one transaction each, behind one arbiter
        // (Modbus over serial line v1.02 §2.1: one master at a time), and the pty's master is
        // handed only the answers to its own requests (docs/rack.md §10.5).
        bridge->SetArbiter(rack.arbiter);
    }
    if (!userSetParity)
    {
        // A pty cannot carry parity (the kernel drops PARENB) and pyserial, hence pymodbus,
        // does not set INPCK, so Observe would take pymodbus's 8E1 for 8N1: unless asked
        // otherwise, the pty's master talks at the segment's own format (docs/rack.md §10).
        bridge->SetAttribute("Parity",
                             ns3::EnumValue(f.parity == ns3::Rs485Parity::Even ? 2
                                            : f.parity == ns3::Rs485Parity::Odd ? 3
                                                                                : 1));
    }
    ns3::Ptr<ns3::RedfishServer> redfish = ns3::CreateObject<ns3::RedfishServer>();
    redfish->SetAttribute("Port", ns3::UintegerValue(static_cast<uint16_t>(c.redfishPort)));
    if (!bridge->Start())
    {
        std::fprintf(stderr, "cnuas rack up: pty: %s\n", bridge->GetError().c_str());
        ns3::Simulator::Destroy();
        return 1;
    }
    if (rack.bmc)
    {
        redfish->SetBmc(rack.bmc);
    }
    if (rack.bmc && !redfish->Start())
    {
        std::fprintf(stderr, "cnuas rack up: %s\n", redfish->GetError().c_str());
        bridge->Stop();
        ns3::Simulator::Destroy();
        return 1;
    }
    // --pcap: the bus from time zero, framed as its receivers frame it (t3.5 silences); the
    // BMC's master and the pty's master send requests, the slaves responses (port tags).
    std::string pcapPath;
    ns3::Ptr<ns3::ModbusBusCapture> capture;
    if (!c.pcap.empty())
    {
        const std::filesystem::path given(c.pcap);
        const bool file = given.extension() == ".pcap";
        pcapPath = file ? c.pcap : (given / "rs485-bus.pcap").string();
        std::error_code ec;
        const std::filesystem::path folder = file ? given.parent_path() : given;
        if (!folder.empty())
        {
            std::filesystem::create_directories(folder, ec);
        }
        capture = ns3::CreateObject<ns3::ModbusBusCapture>();
        if (!capture->Open(pcapPath, rack.bus, f))
        {
            std::fprintf(stderr, "cnuas rack up: cannot write %s\n", pcapPath.c_str());
            redfish->Stop();
            bridge->Stop();
            ns3::Simulator::Destroy();
            return 1;
        }
        if (rack.master && rack.master->GetDevice())
        {
            capture->AddMaster(rack.master->GetDevice()->GetChannelIndex());
        }
        capture->AddMaster(bridge->GetDevice()->GetChannelIndex());
    }

    const bool even = f.parity == ns3::Rs485Parity::Even;
    nlohmann::json state{
        {"kind", "rack"},
        {"pid", static_cast<int>(getpid())},
        {"started", static_cast<long long>(std::time(nullptr))},
        {"pty", bridge->GetSlavePath()},
        {"pty_link", c.ptyLink},
        {"redfish", rack.bmc ? redfish->GetBaseUrl() : ""},
        {"redfish_port", redfish->GetPort()},
        {"bmc", static_cast<bool>(rack.bmc)},
        {"bmc_paused", rack.bmc && rack.bmc->IsHeld()},
        {"baud", f.baudRate},
        {"parity", even ? "even" : f.parity == ns3::Rs485Parity::Odd ? "odd" : "none"},
        {"psus", rack.psus.size()},
        {"bbus", rack.bbus.size()},
        {"pmms", rack.pmms.size()},
        {"addresses", AddressList(rack)},
        {"dead", nlohmann::json::array()},
        {"chattering", nlohmann::json::array()},
        {"config", config}};
    // Before the state file makes the pid public: a `cnuas rack pause` that comes at once must
    // find the handler (SIGUSR1's default action would end the process).
    struct sigaction su = {};
    su.sa_handler = &OnBmcSignal;
    sigemptyset(&su.sa_mask);
    sigaction(SIGUSR1, &su, nullptr);
    sigaction(SIGUSR2, &su, nullptr);
    if (!WriteState(statePath, state, &why))
    {
        std::fprintf(stderr, "cnuas rack up: %s\n", why.c_str());
        redfish->Stop();
        bridge->Stop();
        ns3::Simulator::Destroy();
        return 1;
    }

    const std::string port = bridge->GetPortPath();
    const int firstAddress = rack.slaves.empty() ? 1 : rack.slaves.front()->GetAddress();
    std::printf("cnuas rack: up (pid %d): %zu PSUs, %zu BBUs%s on one RS-485 segment, %u baud "
                "8%c1\n",
                static_cast<int>(getpid()), rack.psus.size(), rack.bbus.size(),
                rack.pmms.empty() ? "" : " and their shelf PMMs", f.baudRate, even ? 'E' : 'N');
    const std::string linkNote = c.ptyLink.empty() ? "" : " (link " + c.ptyLink + ")";
    std::printf("  pty:       %s%s\n", bridge->GetSlavePath().c_str(), linkNote.c_str());
    std::printf("  redfish:   %s\n", rack.bmc ? redfish->GetBaseUrl().c_str()
                                           : "none (--no-bmc: the pty's master is the BMC)");
    std::printf("  addresses: %s\n", AddressList(rack).c_str());
    if (capture)
    {
        std::printf("  pcap:      %s (Modbus RTU, link type 252)\n", pcapPath.c_str());
    }
    std::printf("  try:       mbpoll -m rtu -b %u -P %s -a %d -t 4:hex -r 1 -c 8 -1 %s\n",
                f.baudRate, even ? "even" : "none", firstAddress, port.c_str());
    // pymodbus 3.0 (python3-pymodbus): strict=False because its strict mode configures the
    // port a second time, which a pty refuses with parity on (docs/rack.md §10.2).
    std::printf("             python3 -c \"from pymodbus.client import ModbusSerialClient as M; "
                "c = M(port='%s', baudrate=%u, parity='%c', strict=False); c.connect(); "
                "print(c.read_holding_registers(1, 8, slave=%d).registers)\"\n",
                port.c_str(), f.baudRate, even ? 'E' : 'N', firstAddress);
    if (rack.bmc)
    {
        std::printf("             curl -s %s/Chassis/Rack/Sensors/RackOutputPower\n",
                    redfish->GetBaseUrl().c_str());
    }
    std::printf("  state:     %s ('cnuas status'); Ctrl-C or 'cnuas rack down' stops it\n",
                statePath.c_str());
    std::fflush(stdout);

    struct sigaction sa = {};
    sa.sa_handler = &OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    g_bmcWatch.statePath = statePath;
    g_bmcWatch.state = state;
    if (rack.bmc)
    {
        g_bmcWatch.bmc = rack.bmc;
        rack.bmc->TraceConnectWithoutContext("Held", ns3::MakeCallback(&OnBmcHeld));
    }
    g_faultWatch.on = true;
    g_faultWatch.rack = rack;
    g_faultWatch.dir = dir;
    ns3::Simulator::Schedule(ns3::Seconds(0), &WatchSignals);
    if (c.duration > 0)
    {
        ns3::Simulator::Stop(ns3::PicoSeconds(std::llround(c.duration * 1e12)));
    }
    ns3::Simulator::Run();
    g_bmcWatch.bmc = nullptr;
    g_faultWatch = FaultWatch();

    const double simSeconds = ns3::Simulator::Now().GetSeconds();
    const ns3::RackBmcCounters bmc = rack.bmc ? rack.bmc->GetCounters() : ns3::RackBmcCounters();
    const ns3::Rs485PtyBridgeCounters pty = bridge->GetCounters();
    redfish->Stop();
    const ns3::RedfishServerCounters web = redfish->GetCounters();
    bridge->Stop();
    if (capture)
    {
        capture->Close(); // writes the last frame
    }
    RemoveStateIfOurs(statePath, getpid());
    std::printf("cnuas rack: stopped after %.1f s (%s): BMC %llu reads, %llu failures, %llu "
                "monitor cycles; pty %llu client opens, %llu bytes in, %llu out; Redfish %llu "
                "requests\n",
                simSeconds, g_stopSignal == SIGINT ? "SIGINT" : g_stopSignal == SIGTERM ? "SIGTERM"
                                                                                       : "duration",
                static_cast<unsigned long long>(bmc.reads),
                static_cast<unsigned long long>(bmc.readFailures),
                static_cast<unsigned long long>(bmc.monitorCycles),
                static_cast<unsigned long long>(pty.clientOpens),
                static_cast<unsigned long long>(pty.bytesFromClient),
                static_cast<unsigned long long>(pty.bytesToClient),
                static_cast<unsigned long long>(web.requests));
    std::fflush(stdout);
    ns3::Simulator::Destroy();
    return 0;
}

int
RackDown(const std::vector<std::string>& args)
{
    std::string stateDir;
    double timeout = 15;
    try
    {
        for (std::size_t i = 0; i < args.size(); ++i)
        {
            if (args[i] == "--state-dir" && i + 1 < args.size())
            {
                stateDir = args[++i];
            }
            else if (args[i] == "--timeout" && i + 1 < args.size())
            {
                timeout = ns3::ParseRackNumber(args[++i], "--timeout", 0.1, 3600);
            }
            else
            {
                throw std::invalid_argument("unknown option '" + args[i] + "'");
            }
        }
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "cnuas rack down: %s\n", e.what());
        return kExitUsage;
    }
    const std::string statePath = StateDirectory(stateDir) + "/rack.json";
    auto state = ReadState(statePath);
    if (!state)
    {
        std::fprintf(stderr, "cnuas rack down: no rack is up (%s)\n", statePath.c_str());
        return 1;
    }
    const int pid = state->value("pid", 0);
    if (!ProcessAlive(pid))
    {
        std::remove(statePath.c_str());
        std::printf("cnuas rack down: pid %d was gone; removed its stale state file\n", pid);
        return 0;
    }
    if (!StopProcess(pid, timeout))
    {
        std::fprintf(stderr, "cnuas rack down: pid %d did not stop within %.1f s (killed)\n", pid,
                     timeout);
        std::remove(statePath.c_str());
        return 1;
    }
    std::remove(statePath.c_str()); // normally the rack removed it itself
    std::printf("cnuas rack down: stopped pid %d\n", pid);
    return 0;
}

/// `cnuas rack pause|resume`: signals the rack and waits until its state file shows the BMC
/// held (the transaction in flight has ended) or polling again.
int
RackPauseResume(bool pause, const std::vector<std::string>& args)
{
    const char* const name = pause ? "cnuas rack pause" : "cnuas rack resume";
    std::string stateDir;
    double timeout = 15;
    try
    {
        for (std::size_t i = 0; i < args.size(); ++i)
        {
            if (args[i] == "--state-dir" && i + 1 < args.size())
            {
                stateDir = args[++i];
            }
            else if (args[i] == "--timeout" && i + 1 < args.size())
            {
                timeout = ns3::ParseRackNumber(args[++i], "--timeout", 0.1, 3600);
            }
            else
            {
                throw std::invalid_argument("unknown option '" + args[i] + "'");
            }
        }
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return kExitUsage;
    }
    const std::string statePath = StateDirectory(stateDir) + "/rack.json";
    auto state = ReadState(statePath);
    if (!state)
    {
        std::fprintf(stderr, "%s: no rack is up (%s)\n", name, statePath.c_str());
        return 1;
    }
    const int pid = state->value("pid", 0);
    if (!ProcessAlive(pid))
    {
        std::fprintf(stderr, "%s: pid %d is gone (stale state file)\n", name, pid);
        return 1;
    }
    if (!state->value("bmc", false))
    {
        std::fprintf(stderr, "%s: the rack runs without a simulated BMC (--no-bmc)\n", name);
        return 1;
    }
    if (kill(pid, pause ? SIGUSR1 : SIGUSR2) != 0)
    {
        std::fprintf(stderr, "%s: cannot signal pid %d: %s\n", name, pid, std::strerror(errno));
        return 1;
    }
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
    while (std::chrono::steady_clock::now() < end)
    {
        auto s = ReadState(statePath);
        if (s && s->value("bmc_paused", !pause) == pause)
        {
            std::printf("%s: %s\n", name,
                        pause ? "the BMC is paused, the bus is free"
                              : "the BMC polls again");
            return 0;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::fprintf(stderr, "%s: pid %d did not confirm within %.1f s\n", name, pid, timeout);
    return 1;
}

/// `cnuas rack fault ACTION ADDRESS`: asks the running rack (request file) and waits for its
/// answer.
int
RackFault(const std::vector<std::string>& args)
{
    const char* const name = "cnuas rack fault";
    std::string stateDir;
    double timeout = 15;
    std::vector<std::string> words;
    try
    {
        for (std::size_t i = 0; i < args.size(); ++i)
        {
            if (args[i] == "--state-dir" && i + 1 < args.size())
            {
                stateDir = args[++i];
            }
            else if (args[i] == "--timeout" && i + 1 < args.size())
            {
                timeout = ns3::ParseRackNumber(args[++i], "--timeout", 0.1, 3600);
            }
            else if (args[i].rfind("--", 0) == 0)
            {
                throw std::invalid_argument("unknown option '" + args[i] + "'");
            }
            else
            {
                words.push_back(args[i]);
            }
        }
        if (words.size() != 2 || !ns3::IsRackModbusFault(words[0]))
        {
            throw std::invalid_argument("usage: cnuas rack fault dead|revive|chatter|quiet "
                                        "ADDRESS");
        }
        ns3::ParseModbusAddress(words[1], "ADDRESS");
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return kExitUsage;
    }
    const std::string dir = StateDirectory(stateDir);
    auto state = ReadState(dir + "/rack.json");
    if (!state || !ProcessAlive(state->value("pid", 0)))
    {
        std::fprintf(stderr, "%s: no rack is up (%s/rack.json)\n", name, dir.c_str());
        return 1;
    }
    const std::string base = dir + "/fault-" + std::to_string(getpid());
    std::remove((base + ".rep").c_str());
    if (!WriteFileAtomically(base + ".req", words[0] + " " + words[1] + "\n"))
    {
        std::fprintf(stderr, "%s: cannot write %s.req\n", name, base.c_str());
        return 1;
    }
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
    while (std::chrono::steady_clock::now() < end)
    {
        std::ifstream in(base + ".rep");
        std::string reply;
        if (in && std::getline(in, reply))
        {
            std::remove((base + ".rep").c_str());
            const bool ok = reply.rfind("ok", 0) == 0;
            std::fprintf(ok ? stdout : stderr, "%s: %s\n", name, reply.c_str());
            return ok ? 0 : 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::remove((base + ".req").c_str());
    std::fprintf(stderr, "%s: the rack did not answer within %.1f s\n", name, timeout);
    return 1;
}

int
RunRack(const std::vector<std::string>& args)
{
    if (args.empty() || args[0] == "--help" || args[0] == "-h")
    {
        std::fputs(kUsage, args.empty() ? stderr : stdout);
        return args.empty() ? kExitUsage : kExitOk;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const auto& a : rest)
    {
        if (a == "--help" || a == "-h")
        {
            std::fputs(kUsage, stdout);
            return 0;
        }
    }
    if (args[0] == "up")
    {
        return RackUp(rest);
    }
    if (args[0] == "down")
    {
        return RackDown(rest);
    }
    if (args[0] == "pause" || args[0] == "resume")
    {
        return RackPauseResume(args[0] == "pause", rest);
    }
    if (args[0] == "fault")
    {
        return RackFault(rest);
    }
    std::fprintf(stderr, "cnuas rack: unknown action '%s' (up, down, pause, resume, fault)\n%s",
                 args[0].c_str(), kUsage);
    return kExitUsage;
}

} // namespace

CNUAS_COMMAND("rack", "run an ORv3 rack with its BMC's Redfish service and a Modbus pty", RunRack);

} // namespace cnuas
