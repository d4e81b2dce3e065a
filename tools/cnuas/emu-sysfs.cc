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

/// CA `ca`'s files (drivers/infiniband/core/sysfs.c: node_type_show, node_guid_show, ...).
void
CaFiles(const cnuas_umad_ca_info& ca, SysClassFiles* files)
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
        const std::string prefix = Guid(pi.gid_prefix);
        files->push_back({port + "gids/0", prefix.substr(0, prefix.size() - 1) + ":" +
                                               Guid(pi.port_guid)});
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
                 SysClassFiles* files,
                 std::string* why)
{
    // The RoCE adapters, from their verbs sockets (an InfiniBand HCA's is the umad service's).
    const char* list = hcaSockets.c_str();
    size_t len = 0;
    while (const char* path = cnuas_path_list_next(&list, &len))
    {
        auto ca = std::make_unique<cnuas_umad_ca_info>();
        if (cnuas_verbs_ca_info(path, len, ca.get()) == 0)
        {
            CaFiles(*ca, files);
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
    CaFiles(ca, files);
    // Its MAD interface (an Ethernet port's is not modelled).
    files->push_back({"infiniband_mad/abi_version", "5\n"});
    files->push_back({"infiniband_mad/umad0/ibdev", name + "\n"});
    files->push_back({"infiniband_mad/umad0/port", "1\n"});
    return true;
}

std::string
MountSysClass(const SysClassFiles& files)
{
    // The classes of the sysfs mounted at /sys, kept open so that they can be bound back in
    // once the tmpfs hides them.
    const int orig = open("/sys/class", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (orig < 0)
    {
        return std::string("cannot open /sys/class: ") + std::strerror(errno);
    }
    std::vector<std::string> classes;
    if (DIR* d = opendir("/sys/class"))
    {
        while (dirent* e = readdir(d))
        {
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            {
                classes.emplace_back(e->d_name);
            }
        }
        closedir(d);
    }
    auto fail = [orig](const std::string& what) {
        const std::string e = what + ": " + std::strerror(errno);
        close(orig);
        return e;
    };
    if (mount("cnuas-sysclass", "/sys/class", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755") != 0)
    {
        return fail("cannot mount a tmpfs on /sys/class");
    }
    const std::string from = "/proc/self/fd/" + std::to_string(orig) + "/";
    for (const std::string& c : classes)
    {
        const std::string to = "/sys/class/" + c;
        if (mkdir(to.c_str(), 0755) != 0 ||
            mount((from + c).c_str(), to.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        {
            return fail("cannot bind " + c + " back into /sys/class");
        }
    }
    close(orig);
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

} // namespace cnuas
