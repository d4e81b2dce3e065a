#include "emu-sysfs.h"

#include "host/abi/cnuas-umad-abi.h"
#include "host/abi/cnuas-seqpacket.h"
#include "host/abi/cnuas-verbs-ca.h"

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace cnuas
{

namespace
{

std::string
Guid(uint64_t beGuid)
{
    const uint64_t g = be64toh(beGuid);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x\n", unsigned(g >> 48) & 0xFFFF,
                  unsigned(g >> 32) & 0xFFFF, unsigned(g >> 16) & 0xFFFF, unsigned(g) & 0xFFFF);
    return buf;
}

std::string
Hex(unsigned v, const char* fmt = "0x%x\n")
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), fmt, v);
    return buf;
}

/// A GID as sysfs prints it ("%pI6": eight groups of four hex digits).
std::string
GidText(const uint8_t* gid)
{
    char buf[48];
    std::string text;
    for (int i = 0; i < 16; i += 2)
    {
        std::snprintf(buf, sizeof(buf), "%02x%02x%c", gid[i], gid[i + 1], i == 14 ? '\n' : ':');
        text += buf;
    }
    return text;
}

/// A port's GID table as the kernel lists it (drivers/infiniband/core/sysfs.c): gids/N for
/// every entry (an empty one reads as the zero GID), and for each GID in use its type
/// (gid_attrs/types/N: "RoCE v2"; "IB/RoCE v1" for InfiniBand's) and, for a RoCE GID, its
/// network device (gid_attrs/ndevs/N; an InfiniBand GID has none and the read fails). An empty
/// entry's gid_attrs files fail to read on a real machine (EINVAL); here they are absent
/// (ENOENT): either way a program that looks for a RoCE v2 GID passes over the entry.
void
GidTableFiles(const std::string& port,
              const std::vector<cnuas_verbs_gid_entry>& table,
              const std::string& netdev,
              SysClassFiles* files)
{
    for (size_t i = 0; i < table.size(); ++i)
    {
        const std::string n = std::to_string(i);
        files->push_back({port + "gids/" + n, GidText(table[i].gid)});
        if (table[i].type < 0)
        {
            continue;
        }
        files->push_back({port + "gid_attrs/types/" + n,
                          table[i].type == 2 ? "RoCE v2\n" : "IB/RoCE v1\n"});
        if (table[i].type != 0) // 0: an InfiniBand GID
        {
            files->push_back({port + "gid_attrs/ndevs/" + n, netdev + "\n"});
        }
    }
}

/// CA `ca`'s files (drivers/infiniband/core/sysfs.c: node_type_show, node_guid_show, ...), its
/// port's GID table `gids` (null: the port's one GID, from its prefix and GUID).
void
CaFiles(const cnuas_umad_ca_info& ca,
        const std::vector<cnuas_verbs_gid_entry>* gids,
        const std::string& netdev,
        SysClassFiles* files)
{
    const std::string name(ca.ca_name, strnlen(ca.ca_name, sizeof(ca.ca_name)));
    const std::string dev = "infiniband/" + name + "/";
    files->push_back({dev + "node_type", ca.node_type == 2 ? "2: switch\n" : "1: CA\n"});
    files->push_back({dev + "node_guid", Guid(ca.node_guid)});
    files->push_back({dev + "sys_image_guid", Guid(ca.system_guid)});
    files->push_back({dev + "fw_ver", std::string(ca.fw_ver, strnlen(ca.fw_ver, 20)) + "\n"});
    files->push_back({dev + "hw_rev", std::string(ca.hw_ver, strnlen(ca.hw_ver, 20)) + "\n"});
    files->push_back({dev + "hca_type", std::string(ca.ca_type, strnlen(ca.ca_type, 40)) + "\n"});
    static const char* const kStates[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE",
                                          "ACTIVE_DEFER"};
    static const char* const kPhys[] = {"<unknown>", "Sleep", "Polling", "Disabled",
                                        "PortConfigurationTraining", "LinkUp",
                                        "LinkErrorRecovery", "Phy Test"};
    for (uint32_t i = 0; i < ca.numports && i < CNUAS_UMAD_MAX_PORTS; ++i)
    {
        const cnuas_umad_port_info& pi = ca.ports[i];
        const std::string port = dev + "ports/" + std::to_string(pi.portnum) + "/";
        files->push_back({port + "lid", Hex(pi.base_lid)});
        files->push_back({port + "sm_lid", Hex(pi.sm_lid)});
        files->push_back({port + "sm_sl", std::to_string(pi.sm_sl) + "\n"});
        files->push_back({port + "lid_mask_count", std::to_string(pi.lmc) + "\n"});
        files->push_back({port + "state", std::to_string(pi.state) + ": " +
                                              (pi.state < 6 ? kStates[pi.state] : "UNKNOWN") +
                                              "\n"});
        files->push_back({port + "phys_state", std::to_string(pi.phys_state) + ": " +
                                                   (pi.phys_state < 8 ? kPhys[pi.phys_state]
                                                                      : "<unknown>") +
                                                   "\n"});
        files->push_back({port + "rate",
                          std::string(pi.rate_text, strnlen(pi.rate_text, 40)) + "\n"});
        files->push_back({port + "cap_mask", Hex(pi.capmask, "0x%08x\n")});
        files->push_back(
            {port + "link_layer",
             std::string(pi.link_layer, strnlen(pi.link_layer, sizeof(pi.link_layer))) + "\n"});
        if (gids != nullptr && !gids->empty())
        {
            GidTableFiles(port, *gids, netdev, files);
        }
        else
        {
            const std::string prefix = Guid(pi.gid_prefix);
            files->push_back({port + "gids/0", prefix.substr(0, prefix.size() - 1) + ":" +
                                                   Guid(pi.port_guid)});
        }
        for (uint32_t k = 0; k < pi.pkeys_size && k < CNUAS_UMAD_MAX_PKEYS; ++k)
        {
            files->push_back({port + "pkeys/" + std::to_string(k), Hex(pi.pkeys[k], "0x%04x\n")});
        }
    }
}

} // namespace

bool
HcaSysClassFiles(const std::string& umadSocket,
                 const std::string& hcaSockets,
                 const std::string& roceNetdev,
                 SysClassFiles* files,
                 std::string* why)
{
    // The RoCE adapters, from their verbs sockets (an InfiniBand HCA's is the umad service's).
    const char* list = hcaSockets.c_str();
    size_t len = 0;
    std::vector<cnuas_verbs_gid_entry> ibGids; // the InfiniBand HCA's, for the umad CA below
    while (const char* path = cnuas_path_list_next(&list, &len))
    {
        std::vector<cnuas_verbs_gid_entry> gids(256);
        const int n =
            cnuas_verbs_gid_table(path, len, gids.data(), static_cast<unsigned>(gids.size()));
        gids.resize(n > 0 ? static_cast<size_t>(n) : 0);
        auto ca = std::make_unique<cnuas_umad_ca_info>();
        const int err = cnuas_verbs_ca_info(path, len, ca.get());
        if (err == 0)
        {
            CaFiles(*ca, &gids, roceNetdev, files);
        }
        else if (err == -ENOENT)
        {
            ibGids = std::move(gids);
        }
    }
    if (umadSocket.empty())
    {
        return true;
    }
    const int fd = cnuas_seqpacket_connect(umadSocket.c_str(), umadSocket.size());
    if (fd < 0)
    {
        *why = "cannot reach the host's umad service: " + std::string(std::strerror(-fd));
        return false;
    }
    cnuas_umad_req q{};
    q.op = CNUAS_UMAD_OP_QUERY_CA;
    q.abi_version = CNUAS_UMAD_ABI_VERSION;
    auto r = std::make_unique<cnuas_umad_resp>();
    pollfd p{fd, POLLIN, 0};
    const bool ok = send(fd, &q, sizeof(q), MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(q)) &&
                    poll(&p, 1, 10000) == 1 &&
                    recv(fd, r.get(), sizeof(*r), 0) == static_cast<ssize_t>(sizeof(*r));
    close(fd);
    if (!ok || r->err != 0)
    {
        *why = ok ? std::string("the umad service refused: ") + r->why
                  : "no answer from the host's umad service";
        return false;
    }
    const cnuas_umad_ca_info& ca = r->u.ca;
    const std::string name(ca.ca_name, strnlen(ca.ca_name, sizeof(ca.ca_name)));
    CaFiles(ca, &ibGids, "", files);
    // Its MAD interface (an Ethernet port's is not modelled).
    files->push_back({"infiniband_mad/abi_version", "5\n"});
    files->push_back({"infiniband_mad/umad0/ibdev", name + "\n"});
    files->push_back({"infiniband_mad/umad0/port", "1\n"});
    return true;
}

namespace
{

/// Puts a tmpfs (mount `flags`) over directory `dir` that shows what `dir` showed: each
/// directory and file in it bound back from the original (device nodes keep working), each
/// symbolic link copied. Entries can then be added without touching the machine's. "" or the
/// problem.
std::string
TmpfsShowingTheOriginal(const std::string& dir, unsigned long flags)
{
    // The original, kept open so that its entries can be bound back once the tmpfs hides it.
    const int orig = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (orig < 0)
    {
        return "cannot open " + dir + ": " + std::strerror(errno);
    }
    struct Entry
    {
        std::string name;
        mode_t type;
        std::string linkTarget;
    };
    std::vector<Entry> entries;
    const int listing = openat(orig, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (DIR* d = listing >= 0 ? fdopendir(listing) : nullptr)
    {
        while (dirent* e = readdir(d))
        {
            if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0)
            {
                continue;
            }
            struct stat st;
            if (fstatat(orig, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            {
                continue; // gone meanwhile
            }
            Entry entry{e->d_name, st.st_mode & S_IFMT, ""};
            if (S_ISLNK(st.st_mode))
            {
                char target[4096];
                const ssize_t n = readlinkat(orig, e->d_name, target, sizeof(target) - 1);
                if (n < 0)
                {
                    continue;
                }
                entry.linkTarget.assign(target, static_cast<size_t>(n));
            }
            entries.push_back(std::move(entry));
        }
        closedir(d);
    }
    else if (listing >= 0)
    {
        close(listing);
    }
    auto fail = [orig](const std::string& what) {
        const std::string e = what + ": " + std::strerror(errno);
        close(orig);
        return e;
    };
    if (mount("cnuas-view", dir.c_str(), "tmpfs", flags, "mode=0755") != 0)
    {
        return fail("cannot mount a tmpfs on " + dir);
    }
    const std::string from = "/proc/self/fd/" + std::to_string(orig) + "/";
    for (const Entry& e : entries)
    {
        const std::string to = dir + "/" + e.name;
        if (e.type == S_IFLNK)
        {
            if (symlink(e.linkTarget.c_str(), to.c_str()) != 0)
            {
                return fail("cannot copy the link " + to);
            }
            continue;
        }
        const bool made = e.type == S_IFDIR ? mkdir(to.c_str(), 0755) == 0 : [&to]() {
            const int f = open(to.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
            return f >= 0 && close(f) == 0;
        }();
        if (!made || mount((from + e.name).c_str(), to.c_str(), nullptr, MS_BIND | MS_REC,
                           nullptr) != 0)
        {
            return fail("cannot bind " + e.name + " back into " + dir);
        }
    }
    close(orig);
    return "";
}

} // namespace

std::string
MountSysClass(const SysClassFiles& files)
{
    const std::string err =
        TmpfsShowingTheOriginal("/sys/class", MS_NOSUID | MS_NODEV | MS_NOEXEC);
    if (!err.empty())
    {
        return err;
    }
    for (const auto& [rel, text] : files)
    {
        const std::string path = "/sys/class/" + rel;
        for (size_t at = std::string("/sys/class/").size(); (at = path.find('/', at)) != path.npos;
             ++at)
        {
            mkdir(path.substr(0, at).c_str(), 0755); // EEXIST is fine
        }
        const int f = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0444);
        if (f < 0 || write(f, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        {
            if (f >= 0)
            {
                close(f);
            }
            return std::string("cannot write /sys/class/") + rel + ": " + std::strerror(errno);
        }
        close(f);
    }
    // Read-only, as sysfs is to a program that is not the kernel.
    if (mount(nullptr, "/sys/class", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
                                                  MS_NOEXEC,
              nullptr) != 0)
    {
        return std::string("cannot make /sys/class read-only: ") + std::strerror(errno);
    }
    return "";
}

std::vector<DevNode>
HcaDevNodes(int verbsDevices, bool umad)
{
    // Documentation/admin-guide/devices.txt: major 231 is InfiniBand's, umadN at minor N,
    // issmN at 64 + N, uverbsN at 192 + N; modes as rdma-core's udev rules set them (verbs
    // world-writable, the MAD interfaces root's).
    std::vector<DevNode> nodes;
    for (int i = 0; i < verbsDevices; ++i)
    {
        nodes.push_back({"uverbs" + std::to_string(i), 231, static_cast<unsigned>(192 + i), 0666});
    }
    if (umad)
    {
        nodes.push_back({"umad0", 231, 0, 0600});
        nodes.push_back({"issm0", 231, 64, 0600});
    }
    return nodes;
}

std::string
MountDevInfiniband(const std::vector<DevNode>& nodes)
{
    const std::string dir = "/dev/infiniband";
    struct stat st;
    // A machine with RDMA adapters of its own has the directory: the emulated host's devices
    // replace them. Otherwise a directory is added to a view of /dev.
    std::string err = stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)
                          ? (mount("cnuas-dev", dir.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC,
                                   "mode=0755") == 0
                                 ? ""
                                 : "cannot mount a tmpfs on " + dir + ": " + std::strerror(errno))
                          : TmpfsShowingTheOriginal("/dev", MS_NOSUID | MS_NOEXEC);
    if (!err.empty())
    {
        return err;
    }
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    {
        return "cannot make " + dir + ": " + std::strerror(errno);
    }
    for (const DevNode& n : nodes)
    {
        const std::string path = dir + "/" + n.name;
        if (mknod(path.c_str(), S_IFCHR | n.mode, makedev(n.major, n.minor)) != 0 ||
            chmod(path.c_str(), n.mode) != 0) // past the umask
        {
            return "cannot make " + path + ": " + std::strerror(errno);
        }
    }
    return "";
}

} // namespace cnuas
