#include "emu-host.h"
#include "emu-sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
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
    const pid_t pid = fork();
    if (pid < 0)
    {
        *output = std::string("fork: ") + std::strerror(errno);
        for (int fd : {pipefd[0], pipefd[1], inpipe[0], inpipe[1]})
        {
            close(fd);
        }
        return -1;
    }
    if (pid == 0)
    {
        dup2(inpipe[0], 0);
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        std::vector<char*> args;
        for (const auto& a : argv)
        {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        execvp(args[0], args.data());
        dprintf(2, "cannot run %s: %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    close(inpipe[0]);
    // A batch of commands is a few kilobytes, within the pipe's buffer: written whole before
    // the output is read, without waiting on the child. (A child gone early costs an EPIPE:
    // the daemon, the only caller, ignores SIGPIPE.)
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

/// Writes `value` to a /proc/sys file inside the namespace (a child enters it: /proc/sys/net is
/// the reading process's namespace's).
bool
WriteSysctlIn(const std::string& netns, const std::string& path, const std::string& value,
              std::string* why)
{
    const int nsfd = open(NetnsPath(netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0)
    {
        *why = "cannot open " + NetnsPath(netns) + ": " + std::strerror(errno);
        return false;
    }
    const pid_t pid = fork();
    if (pid == 0)
    {
        if (setns(nsfd, CLONE_NEWNET) != 0)
        {
            _exit(2);
        }
        std::ofstream f(path);
        f << value << "\n";
        f.flush();
        _exit(f ? 0 : 3);
    }
    close(nsfd);
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
    {
    }
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    {
        *why = "cannot write " + path + " in namespace " + netns;
        return false;
    }
    return true;
}
} // namespace

bool
NetnsExists(const std::string& name)
{
    struct stat st = {};
    return stat(NetnsPath(name).c_str(), &st) == 0;
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

bool
RunIpBatch(const std::string& netns, const std::vector<std::string>& commands, std::string* why)
{
    std::vector<std::string> argv{"ip"};
    if (!netns.empty())
    {
        argv.insert(argv.end(), {"-n", netns});
    }
    argv.insert(argv.end(), {"-batch", "-"});
    std::string input;
    for (const auto& c : commands)
    {
        input += c + "\n";
    }
    std::string out;
    if (RunCapture(argv, &out, input) == 0)
    {
        return true;
    }
    *why = "'ip" + (netns.empty() ? std::string() : " -n " + netns) + " -batch' of '" + input;
    while (!why->empty() && why->back() == '\n')
    {
        why->pop_back();
    }
    for (char& c : *why)
    {
        c = c == '\n' ? ';' : c;
    }
    *why += "' failed" + (out.empty() ? "" : ": " + out);
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

bool
CreateEmuHost(const EmuHostConfig& h, std::string* why)
{
    // Three programs a host rather than one per command (fork and exec cost milliseconds in a
    // daemon that holds a large fabric): the namespace, and the TAP moved into it under its
    // own name (the kernel renames it on the way, so the host's eth0 never meets the
    // machine's); IPv6 off before the link comes up, so that no router solicitation or DAD
    // probe is sent; then the link's address, MTU and state.
    const std::string mtu = std::to_string(h.mtu);
    return RunIpBatch("", {"netns add " + h.netns,
                          "link set dev " + h.tap + " netns " + h.netns + " name " + h.ifname},
                      why) &&
           WriteSysctlIn(h.netns, "/proc/sys/net/ipv6/conf/" + h.ifname + "/disable_ipv6", "1",
                         why) &&
           RunIpBatch(h.netns, {"link set dev " + h.ifname + " address " + h.mac + " mtu " + mtu,
                                "addr add " + h.ipCidr + " dev " + h.ifname,
                                "link set dev lo up",
                                "link set dev " + h.ifname + " up"},
                      why);
}

bool
CreateManagementBridge(const std::string& mgmtNetns, std::string* why)
{
    return RunIpBatch("", {"netns add " + mgmtNetns}, why) &&
           RunIpBatch(mgmtNetns, {"link add br0 type bridge", "link set dev br0 up"}, why);
}

bool
AttachToManagement(const std::string& hostNetns,
                   const std::string& mgmtNetns,
                   const std::string& vethName,
                   const std::string& ipCidr,
                   std::string* why)
{
    const std::string peer = vethName + "b";
    // Both ends leave this namespace at once, so nothing of the pair stays on the machine.
    return RunIpBatch("",
                      {"link add " + vethName + " netns " + hostNetns + " type veth peer name " +
                       peer + " netns " + mgmtNetns},
                      why) &&
           RunIpBatch(hostNetns, {"link set dev " + vethName + " name mgmt0",
                                  "addr add " + ipCidr + " dev mgmt0",
                                  "link set dev mgmt0 up"},
                      why) &&
           RunIpBatch(mgmtNetns, {"link set dev " + peer + " master br0",
                                  "link set dev " + peer + " up"},
                      why);
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
    for (size_t i = 0; i < names.size(); ++i)
    {
        const std::string path = NetnsPath(names[i]);
        umount2(path.c_str(), MNT_DETACH);
        if (unlink(path.c_str()) != 0 && errno != ENOENT)
        {
            (*why)[i] = "cannot remove " + path + ": " + std::strerror(errno);
            ended[i] = -1;
        }
    }
    return ended;
}

std::string
ExecInNetns(const std::string& name, const std::vector<std::string>& argv,
            const std::vector<std::pair<std::string, std::string>>* sysClass)
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
        if (sysClass && !sysClass->empty()) // umad (issue 14)
        {
            const std::string err = MountSysClass(*sysClass);
            if (!err.empty())
            {
                return err;
            }
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
    if (setns(self, CLONE_NEWNET) != 0)
    {
        // Cannot happen for a namespace we were in a moment ago; going on in the wrong one
        // would be worse than stopping.
        std::abort();
    }
    close(self);
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
