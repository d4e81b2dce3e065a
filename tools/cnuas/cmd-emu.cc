// `cnuas exec`, `rsh`, `down`, `capture` and `sm`: the commands that reach an emulated fabric
// from outside, through its state files, its network namespaces and its daemon's control
// socket. They are part of the `cnuas` program itself, which does not load the simulator: a
// script or a test calls them hundreds of times (main.cc). The daemon is cmd-up.cc.
// docs/emulation.md.
#include "command.h"
#include "emu-control.h"
#include "emu-fabric-files.h"
#include "emu-host.h"
#include "emu-sysfs.h" // umad (issue 14)
#include "state-files.h"

#include "helpers/formats/parse-util.h"

#include <glob.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

namespace cnuas
{

namespace
{

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

/// Where Cnuas's libibverbs.so.1 is: $CNUAS_HOST_LIB_DIR, else beside this program, `self`
/// (the build tree's host/lib, an installation's LIBDIR/cnuas/host). "" if nowhere.
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
    for (const std::string& cand :
         {dir + "/../host/lib", dir + "/../" CNUAS_INSTALL_LIBDIR "/cnuas/host"})
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

CNUAS_COMMAND("exec", "run a command inside an emulated host", RunExec);
CNUAS_COMMAND("rsh", "run a command inside an emulated host as ssh would (for mpirun)", RunRsh);
CNUAS_COMMAND("down", "stop an emulated fabric and remove all it made", RunDown);
CNUAS_COMMAND("capture", "write a running fabric's port to a pcap", RunCapture);
CNUAS_COMMAND("sm", "start or stop the built-in subnet manager of a running fabric", RunSm);

} // namespace cnuas
