#include "emu-host.h"
#include "emu-sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

namespace cnuas
{

namespace
{
std::string
NetnsPath(const std::string& name)
{
    return std::string(kNetnsDir) + "/" + name;
}

/// Runs argv with `input` on its standard input, waits, and returns its exit status (-1 if it
/// could not run); stderr and stdout go to *output.
int
RunCapture(const std::vector<std::string>& argv,
           std::string* output,
           const std::string& input = "")
{
    int pipefd[2];
    int inpipe[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
    {
        *output = std::string("pipe: ") + std::strerror(errno);
        return -1;
    }
    if (pipe2(inpipe, O_CLOEXEC) != 0)
    {
        *output = std::string("pipe: ") + std::strerror(errno);
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    // posix_spawn, not fork: glibc starts the child with clone(CLONE_VM | CLONE_VFORK), so a
    // daemon holding a large fabric does not copy its page tables for every `ip` it runs
    // (about a millisecond per 100 MB resident).
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, inpipe[0], 0);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv)
    {
        args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    pid_t pid = -1;
    const int spawnError = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawnError != 0)
    {
        *output = "cannot run " + argv[0] + ": " + std::strerror(spawnError);
        for (int fd : {pipefd[0], pipefd[1], inpipe[0], inpipe[1]})
        {
            close(fd);
        }
        return -1;
    }
    close(pipefd[1]);
    close(inpipe[0]);
    // The input is written whole before the output is read: `ip -batch` prints nothing unless
    // a command fails, and then stops reading, so the child never waits for us to read while
    // we wait for it to read. (A child gone early costs an EPIPE: the daemon, the only caller,
    // ignores SIGPIPE.)
    size_t written = 0;
    while (written < input.size())
    {
        const ssize_t n = write(inpipe[1], input.data() + written, input.size() - written);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n <= 0)
        {
            break; // the child has gone: its status says why
        }
        written += static_cast<size_t>(n);
    }
    close(inpipe[1]);
    output->clear();
    char buf[512];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
    {
        if (n > 0)
        {
            output->append(buf, static_cast<size_t>(n));
        }
    }
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    {
    }
    while (!output->empty() && (output->back() == '\n' || output->back() == ' '))
    {
        output->pop_back();
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

bool
NetnsExists(const std::string& name)
{
    struct stat st = {};
    return stat(NetnsPath(name).c_str(), &st) == 0;
}

uint64_t
NetnsInode(const std::string& name)
{
    struct stat st;
    return stat(NetnsPath(name).c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

bool
ValidNetnsName(const std::string& name)
{
    if (name.empty() || name.size() > 64 || name == "." || name == "..")
    {
        return false;
    }
    for (char c : name)
    {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
        {
            return false;
        }
    }
    return true;
}

static int InNetns(const std::string& netns, const std::function<int()>& f, std::string* why);

bool
RunIpBatch(const std::string& netns, const std::vector<std::string>& commands, std::string* why)
{
    // Not `ip -n NS`: for that iproute2 also unshares a mount namespace and remounts /sys, and
    // copying the mount tree costs in proportion to the mounts, among them every namespace's
    // bind mount in /run/netns (at 1,024 hosts a third of up's CPU was the kernel copying
    // mount trees for `ip`). Started from this thread while it is inside the namespace, `ip`
    // is in it from its first instruction (a child takes the namespaces of the thread that
    // makes it), and none of these commands reads /sys.
    const std::vector<std::string> argv{"ip", "-batch", "-"};
    std::string input;
    for (const auto& c : commands)
    {
        input += c + "\n";
    }
    std::string out;
    std::string enterWhy;
    const int rc = netns.empty() ? RunCapture(argv, &out, input)
                                 : InNetns(
                                       netns,
                                       [&argv, &out, &input]() {
                                           return RunCapture(argv, &out, input);
                                       },
                                       &enterWhy);
    if (!enterWhy.empty())
    {
        *why = enterWhy;
        return false;
    }
    if (rc == 0)
    {
        return true;
    }
    // iproute2 says "Command failed -:N" for most failures (line N of the batch); name that
    // command, or the first of them, rather than the whole batch.
    size_t failed = 0;
    const size_t mark = out.find("Command failed -:");
    if (mark != std::string::npos)
    {
        failed = std::strtoul(out.c_str() + mark + 17, nullptr, 10);
        out.erase(mark);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
    {
        out.pop_back();
    }
    for (char& c : out)
    {
        c = c == '\n' ? ';' : c;
    }
    const size_t shown = failed >= 1 && failed <= commands.size() ? failed - 1 : 0;
    *why = "'ip -batch'" + (netns.empty() ? std::string() : " in namespace " + netns) +
           " failed at '" +
           (commands.empty() ? std::string() : commands[shown]) + "'" +
           (failed >= 1 || commands.size() <= 1
                ? std::string()
                : " or one of the " + std::to_string(commands.size() - 1) + " commands after it") +
           (out.empty() ? "" : ": " + out);
    return false;
}

int
OpenTap(const std::string& ifname, bool vnetHeader, std::string* why)
{
    if (ifname.size() >= IFNAMSIZ)
    {
        *why = "interface name too long: " + ifname;
        return -1;
    }
    const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
    {
        *why = std::string("cannot open /dev/net/tun: ") + std::strerror(errno) +
               (errno == ENOENT ? " (no TUN/TAP support in this kernel)" : "") +
               (errno == EACCES || errno == EPERM ? " (emulation needs root)" : "");
        return -1;
    }
    ifreq ifr = {};
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (vnetHeader ? IFF_VNET_HDR : 0);
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) != 0)
    {
        *why = "TUNSETIFF " + ifname + ": " + std::strerror(errno);
        close(fd);
        return -1;
    }
    return fd;
}

/// Puts the calling thread back into the network namespace it was in a moment ago (`self`, a
/// descriptor of it, closed here). setns changes only the calling thread's namespace.
static void
ReturnToNetns(int self)
{
    if (setns(self, CLONE_NEWNET) != 0)
    {
        // Cannot happen for a namespace we were in a moment ago; going on in the wrong one
        // would be worse than stopping.
        std::abort();
    }
    close(self);
}

/// Makes `dir` (if need be) a shared mount, bound onto itself first if it is not a mount point,
/// so that namespaces mounted in it later show in every mount namespace that shares it (what
/// iproute2 does for /run/netns). False with the reason.
static bool
MakeSharedMountDir(const char* dir, std::string* why)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    {
        *why = std::string("cannot make ") + dir + ": " + std::strerror(errno);
        return false;
    }
    if (mount("", dir, "none", MS_SHARED | MS_REC, nullptr) != 0 &&
        (errno != EINVAL || mount(dir, dir, "none", MS_BIND | MS_REC, nullptr) != 0 ||
         mount("", dir, "none", MS_SHARED | MS_REC, nullptr) != 0))
    {
        *why = std::string("cannot make ") + dir + " a shared mount: " + std::strerror(errno) +
               (errno == EPERM ? " (needs root)" : "");
        return false;
    }
    return true;
}

bool
CreateNetns(const std::string& name, std::string* why)
{
    // What `ip netns add` does (iproute2's netns_add), without a program to run for it.
    if (!MakeSharedMountDir(kNetnsDir, why))
    {
        return false;
    }
    const std::string path = NetnsPath(name);
    const int file = open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
    if (file < 0)
    {
        *why = "cannot create " + path + ": " + std::strerror(errno) +
               (errno == EEXIST ? " (the namespace exists)" : "");
        return false;
    }
    close(file);
    // A new namespace for this thread alone (unshare and setns change only the calling
    // thread's), bound to the file, then back to where the thread was.
    const int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0 || unshare(CLONE_NEWNET) != 0)
    {
        *why = "cannot make network namespace " + name + ": " + std::strerror(errno);
        if (self >= 0)
        {
            close(self);
        }
        unlink(path.c_str());
        return false;
    }
    const bool bound =
        mount("/proc/thread-self/ns/net", path.c_str(), "none", MS_BIND, nullptr) == 0;
    const int boundErrno = errno;
    ReturnToNetns(self);
    if (!bound)
    {
        *why = "cannot mount network namespace " + name + " on " + path + ": " +
               std::strerror(boundErrno);
        unlink(path.c_str());
        return false;
    }
    return true;
}

namespace
{
std::string
HostSystemNsPath(const std::string& netns, const char* kind)
{
    return std::string(kHostSystemNsDir) + "/" + netns + "." + kind;
}

constexpr std::pair<const char*, int> kHostSystemNs[] = {{"uts", CLONE_NEWUTS},
                                                         {"ipc", CLONE_NEWIPC}};
} // namespace

bool
CreateHostSystemNs(const std::string& netns, const std::string& hostname, std::string* why)
{
    if (!MakeSharedMountDir(kHostSystemNsDir, why))
    {
        return false;
    }
    // As for the network namespace: new ones for this thread alone (UTS and IPC namespaces
    // are per thread for unshare and setns), bound to files, then back.
    int self[2] = {open("/proc/thread-self/ns/uts", O_RDONLY | O_CLOEXEC),
                   open("/proc/thread-self/ns/ipc", O_RDONLY | O_CLOEXEC)};
    auto closeSelf = [&self]() {
        for (int fd : self)
        {
            if (fd >= 0)
            {
                close(fd);
            }
        }
    };
    if (self[0] < 0 || self[1] < 0 || unshare(CLONE_NEWUTS | CLONE_NEWIPC) != 0)
    {
        *why = "cannot make the UTS and IPC namespaces of " + netns + ": " +
               std::strerror(errno);
        closeSelf();
        return false;
    }
    bool ok = sethostname(hostname.data(), hostname.size()) == 0;
    if (!ok)
    {
        *why = "cannot set hostname " + hostname + ": " + std::strerror(errno);
    }
    for (size_t k = 0; ok && k < 2; ++k)
    {
        const std::string path = HostSystemNsPath(netns, kHostSystemNs[k].first);
        const int file = open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        ok = file >= 0 && close(file) == 0 &&
             mount((std::string("/proc/thread-self/ns/") + kHostSystemNs[k].first).c_str(),
                   path.c_str(), "none", MS_BIND, nullptr) == 0;
        if (!ok)
        {
            *why = "cannot keep namespace " + path + ": " + std::strerror(errno);
            unlink(path.c_str());
        }
    }
    for (size_t k = 0; k < 2; ++k)
    {
        if (setns(self[k], kHostSystemNs[k].second) != 0)
        {
            std::abort(); // as ReturnToNetns: namespaces we were in a moment ago
        }
    }
    closeSelf();
    return ok;
}

/// Enters the host's UTS and IPC namespaces, if it has them (a fabric brought up before they
/// existed has not). "" or the problem.
static std::string
EnterHostSystemNs(const std::string& netns)
{
    for (const auto& [kind, flag] : kHostSystemNs)
    {
        const std::string path = HostSystemNsPath(netns, kind);
        const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
        {
            continue;
        }
        const bool entered = setns(fd, flag) == 0;
        const int err = errno;
        close(fd);
        if (!entered)
        {
            return "cannot enter " + path + ": " + std::strerror(err);
        }
    }
    return "";
}

/// Writes `value` to /proc/sys file `path` of the calling thread's namespace (/proc/sys/net is
/// the opening thread's). False with the reason.
static bool
WriteSysctl(const std::string& path, const char* value, std::string* why)
{
    const int sysctl = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    const size_t size = std::strlen(value);
    const bool written =
        sysctl >= 0 && write(sysctl, value, size) == static_cast<ssize_t>(size);
    const int writeErrno = errno;
    if (sysctl >= 0)
    {
        close(sysctl);
    }
    if (!written)
    {
        *why = "cannot write " + path + ": " + std::strerror(writeErrno);
    }
    return written;
}

/**
 * In the calling thread's namespace, for every device made from now on (conf/default; `lo`,
 * made with the namespace, keeps ::1):
 *  - IPv6 off. Such a device never sends a router solicitation, DAD probe or MLD report: the
 *    fabric routes the hosts' IPv4 addresses, and on the management network's bridge each
 *    multicast of each host would be flooded to every other host (with 1,024 hosts, the
 *    bridge's flooding of MLD took seconds of both cores at every up and down). A kernel
 *    without IPv6 has nothing to turn off.
 *  - With `host`, IPv4 routes through a device without carrier ignored: a host's TAP loses its
 *    carrier when the daemon dies (the device itself stays, CreateEmuHost), and a send then
 *    fails at once with "Network is unreachable", as with a pulled cable, instead of waiting for
 *    ARP to give up.
 * False with the reason.
 */
static bool
NewDeviceDefaults(bool host, std::string* why)
{
    // Once: a lookup in /proc/sys walks entries of every namespace's tables (proc_sys_compare).
    static const bool ipv6 = access("/proc/sys/net/ipv6", F_OK) == 0;
    return (!ipv6 || WriteSysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1\n", why)) &&
           (!host ||
            WriteSysctl("/proc/sys/net/ipv4/conf/default/ignore_routes_with_linkdown", "1\n", why));
}

int
CreateEmuHost(const EmuHostConfig& h, std::string* why)
{
    // Three steps a host, one of them a program: the namespace; the TAP made inside it under
    // its own name, so it never meets the machine's devices and is not moved (a move waits for
    // a grace period); then the link's address, MTU and state.
    if (h.createNetns && (!CreateNetns(h.netns, why) ||
                          (!h.hostname.empty() && !CreateHostSystemNs(h.netns, h.hostname, why))))
    {
        return -1;
    }
    std::string err;
    const int fd = InNetns(
        h.netns,
        [&h, &err]() {
            if (h.createNetns && !NewDeviceDefaults(true, &err))
            {
                return -1;
            }
            const int tap = OpenTap(h.ifname, h.vnetHeader, &err);
            if (tap < 0)
            {
                return -1;
            }
            if (ioctl(tap, TUNSETPERSIST, 1) != 0)
            {
                err = "TUNSETPERSIST " + h.ifname + ": " + std::strerror(errno);
                close(tap);
                return -1;
            }
            return tap;
        },
        why);
    if (fd < 0)
    {
        if (!err.empty())
        {
            *why = err;
        }
        return -1;
    }
    const std::string mtu = std::to_string(h.mtu);
    if (!RunIpBatch(h.netns,
                    {"link set dev " + h.ifname + " address " + h.mac + " mtu " + mtu,
                     "addr add " + h.ipCidr + " dev " + h.ifname,
                     "link set dev lo up",
                     "link set dev " + h.ifname + " up"},
                    why))
    {
        close(fd);
        return -1;
    }
    return fd;
}

bool
CreateManagementBridge(const std::string& mgmtNetns, std::string* why)
{
    if (!CreateNetns(mgmtNetns, why))
    {
        return false;
    }
    std::string err;
    if (InNetns(mgmtNetns, [&err]() { return NewDeviceDefaults(false, &err) ? 0 : -1; }, why) != 0)
    {
        *why = err.empty() ? *why : err;
        return false;
    }
    return RunIpBatch(mgmtNetns, {"link add br0 type bridge", "link set dev br0 up"}, why);
}

bool
AttachToManagement(const std::string& hostNetns,
                   const std::string& mgmtNetns,
                   const std::string& bridgePort,
                   const std::string& ipCidr,
                   std::string* why)
{
    // The pair is made in the host's namespace, its own end already named mgmt0 and the other
    // sent to the bridge's namespace in the same request: nothing of it is ever on the
    // machine, and nothing is moved or renamed (each waits for the kernel). The bridge's end
    // joins the bridge in RaiseManagementPorts, for all hosts at once.
    return RunIpBatch(hostNetns,
                      {"link add mgmt0 type veth peer name " + bridgePort + " netns " + mgmtNetns,
                       "addr add " + ipCidr + " dev mgmt0",
                       "link set dev mgmt0 up"},
                      why);
}

bool
RaiseManagementPorts(const std::string& mgmtNetns, const std::vector<std::string>& bridgePorts,
                     std::string* why)
{
    // A Linux bridge has at most 1,023 ports (BR_MAX_PORTS, port 0 reserved): past
    // kHostsPerBridge hosts they go to more bridges, br1, br2, ..., each joined to br0 by a
    // veth pair. A tree of depth one: one broadcast domain without loops, so no spanning tree.
    constexpr size_t kHostsPerBridge = 1000;
    std::vector<std::string> commands;
    const size_t bridges = (bridgePorts.size() + kHostsPerBridge - 1) / kHostsPerBridge;
    for (size_t b = 1; b < bridges; ++b)
    {
        const std::string br = "br" + std::to_string(b);
        const std::string up = "up" + std::to_string(b);
        const std::string down = "down" + std::to_string(b);
        commands.insert(commands.end(),
                        {"link add " + br + " type bridge",
                         "link set dev " + br + " up",
                         "link add " + up + " type veth peer name " + down,
                         "link set dev " + up + " master br0",
                         "link set dev " + down + " master " + br,
                         "link set dev " + up + " up",
                         "link set dev " + down + " up"});
    }
    for (size_t i = 0; i < bridgePorts.size(); ++i)
    {
        commands.push_back("link set dev " + bridgePorts[i] + " master br" +
                           std::to_string(i / kHostsPerBridge));
        commands.push_back("link set dev " + bridgePorts[i] + " up");
    }
    return commands.empty() || RunIpBatch(mgmtNetns, commands, why);
}

namespace
{
/// The processes of each of the namespaces `names` (by their index), from one walk of /proc.
std::vector<std::vector<int>>
PidsInNetnses(const std::vector<std::string>& names)
{
    std::vector<std::vector<int>> pids(names.size());
    std::map<std::pair<dev_t, ino_t>, size_t> index;
    for (size_t i = 0; i < names.size(); ++i)
    {
        struct stat ns = {};
        if (stat(NetnsPath(names[i]).c_str(), &ns) == 0)
        {
            index[{ns.st_dev, ns.st_ino}] = i;
        }
    }
    DIR* d = index.empty() ? nullptr : opendir("/proc");
    if (!d)
    {
        return pids;
    }
    while (dirent* e = readdir(d))
    {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end != '\0' || pid == getpid())
        {
            continue;
        }
        struct stat st = {};
        const std::string link = std::string("/proc/") + e->d_name + "/ns/net";
        if (stat(link.c_str(), &st) != 0)
        {
            continue;
        }
        auto it = index.find({st.st_dev, st.st_ino});
        if (it != index.end())
        {
            pids[it->second].push_back(static_cast<int>(pid));
        }
    }
    closedir(d);
    return pids;
}
} // namespace

std::vector<int>
DeleteNetnses(const std::vector<std::string>& names,
              double graceSeconds,
              std::vector<std::string>* why)
{
    std::vector<int> ended(names.size(), 0);
    why->assign(names.size(), "");
    std::vector<std::vector<int>> pids = PidsInNetnses(names);
    size_t left = 0;
    for (size_t i = 0; i < names.size(); ++i)
    {
        ended[i] = static_cast<int>(pids[i].size());
        left += pids[i].size();
        for (int pid : pids[i])
        {
            kill(pid, SIGTERM);
        }
    }
    // One grace period for all of them.
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(graceSeconds * 1000));
    while (left > 0 && std::chrono::steady_clock::now() < until)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        pids = PidsInNetnses(names);
        left = 0;
        for (const auto& p : pids)
        {
            left += p.size();
        }
    }
    if (left > 0)
    {
        for (const auto& p : PidsInNetnses(names))
        {
            for (int pid : p)
            {
                kill(pid, SIGKILL);
            }
        }
    }
    // What `ip netns delete` does (iproute2's netns_delete): the namespace file is a bind mount
    // of /proc/PID/ns/net; detach it and remove the file. The kernel frees the namespace, and
    // the devices in it, once nothing else holds it (a process still dying, an open TAP).
    // The host's UTS and IPC namespaces (CreateHostSystemNs) go the same way.
    for (size_t i = 0; i < names.size(); ++i)
    {
        for (const std::string& path :
             {NetnsPath(names[i]), HostSystemNsPath(names[i], "uts"),
              HostSystemNsPath(names[i], "ipc")})
        {
            umount2(path.c_str(), MNT_DETACH);
            if (unlink(path.c_str()) != 0 && errno != ENOENT)
            {
                (*why)[i] = "cannot remove " + path + ": " + std::strerror(errno);
                ended[i] = -1;
            }
        }
    }
    return ended;
}

std::string
ExecInNetns(const std::string& name, const std::vector<std::string>& argv,
            const HostView* view)
{
    if (argv.empty())
    {
        return "no command to run";
    }
    const int nsfd = open(NetnsPath(name).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0)
    {
        return "cannot open " + NetnsPath(name) + ": " + std::strerror(errno);
    }
    if (setns(nsfd, CLONE_NEWNET) != 0)
    {
        const std::string e = std::strerror(errno);
        close(nsfd);
        return "cannot enter network namespace " + name + ": " + e +
               (errno == EPERM ? " (needs root)" : "");
    }
    close(nsfd);
    const std::string systemErr = EnterHostSystemNs(name);
    if (!systemErr.empty())
    {
        return systemErr;
    }
    // A mount namespace of our own, so that /sys can show this namespace's devices (sysfs
    // shows the network devices of the namespace of whoever mounts it) without touching the
    // machine's mounts; propagation from us to the machine is cut first.
    if (unshare(CLONE_NEWNS) != 0)
    {
        return std::string("cannot make a mount namespace: ") + std::strerror(errno);
    }
    if (mount(nullptr, "/", nullptr, MS_SLAVE | MS_REC, nullptr) != 0)
    {
        return std::string("cannot make / a slave mount: ") + std::strerror(errno);
    }
    if (umount2("/sys", MNT_DETACH) == 0)
    {
        if (mount(name.c_str(), "/sys", "sysfs", 0, nullptr) != 0)
        {
            return std::string("cannot mount sysfs: ") + std::strerror(errno);
        }
        if (view && !view->sysClass.empty()) // umad (issue 14)
        {
            const std::string err = MountSysClass(view->sysClass);
            if (!err.empty())
            {
                return err;
            }
        }
    }
    if (view && !view->devNodes.empty())
    {
        // Not fatal: only programs that look for the nodes (UCX) miss them.
        const std::string err = MountDevInfiniband(view->devNodes);
        if (!err.empty())
        {
            std::fprintf(stderr, "cnuas exec: warning: no /dev/infiniband view: %s\n",
                         err.c_str());
        }
    }
    // The fabric's hosts by name, as a cluster's DNS or /etc/hosts gives them (launchers such
    // as mpirun look up the hosts they are given), and a resolver that fails at once: a host's
    // network is the fabric, which has no name server.
    for (size_t i = 0; view && i < view->etcFiles.size(); ++i)
    {
        const char* file = view->etcFiles[i].first.c_str();
        const char* where = view->etcFiles[i].second.c_str();
        auto bind = [file, where]() { return mount(file, where, nullptr, MS_BIND, nullptr) == 0; };
        // A program started from inside a host (mpirun's `cnuas rsh`) finds the host's own
        // file bound there, and that file may have been replaced since: it is unmounted in
        // this namespace first.
        if (!bind() && (umount2(where, MNT_DETACH) != 0 || !bind()))
        {
            std::fprintf(stderr, "cnuas exec: warning: cannot show the fabric's %s: %s\n", where,
                         std::strerror(errno));
        }
    }
    std::vector<char*> args;
    for (const auto& a : argv)
    {
        args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    execvp(args[0], args.data());
    return "cannot run " + argv[0] + ": " + std::strerror(errno);
}

/// Runs `f` in the calling thread with namespace `netns` entered, and comes back. setns changes
/// only the calling thread's namespace; descriptors made inside keep the namespace they were
/// made in. Returns f's result, or -1 with the reason if the namespace cannot be entered.
static int
InNetns(const std::string& netns, const std::function<int()>& f, std::string* why)
{
    const int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    const int target = open(NetnsPath(netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (self < 0 || target < 0 || setns(target, CLONE_NEWNET) != 0)
    {
        *why = "cannot enter namespace " + netns + ": " + std::strerror(errno);
        if (self >= 0)
        {
            close(self);
        }
        if (target >= 0)
        {
            close(target);
        }
        return -1;
    }
    const int rc = f();
    const int savedErrno = errno;
    ReturnToNetns(self);
    close(target);
    errno = savedErrno;
    return rc;
}

int
OpenUdpSinkInNetns(const std::string& netns, uint16_t port, std::string* why)
{
    std::string err;
    const int fd = InNetns(
        netns,
        [port, &err]() {
            int s = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (s >= 0)
            {
                const int off = 0;
                setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
                sockaddr_in6 a{};
                a.sin6_family = AF_INET6;
                a.sin6_port = htons(port);
                a.sin6_addr = in6addr_any;
                if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0)
                {
                    return s;
                }
                close(s);
            }
            // No IPv6 in this kernel: IPv4 alone.
            s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(port);
            if (s >= 0 && bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0)
            {
                return s;
            }
            err = std::strerror(errno);
            if (s >= 0)
            {
                close(s);
            }
            return -1;
        },
        why);
    if (fd < 0 && !err.empty())
    {
        *why = "cannot bind UDP port " + std::to_string(port) + " in " + netns + ": " + err;
    }
    return fd;
}

int
OpenPacketSocketListInNetns(const std::string& netns, std::string* why)
{
    // /proc/net files belong to the namespace of the task that opens them, for as long as they
    // stay open.
    const int fd =
        InNetns(netns, []() { return open("/proc/thread-self/net/packet", O_RDONLY | O_CLOEXEC); }, why);
    if (fd < 0 && why->empty())
    {
        *why = std::string("cannot open /proc/net/packet in ") + netns + ": " + std::strerror(errno);
    }
    return fd;
}

} // namespace cnuas
