// The Linux side of an emulated host: its network namespace, the TAP device that is its NIC,
// the processes running in it. What `cnuas up` makes, `cnuas exec` enters and `cnuas down`
// removes.
#ifndef CNUAS_TOOLS_EMU_HOST_H
#define CNUAS_TOOLS_EMU_HOST_H

#include "emu-sysfs.h"

#include <string>
#include <utility>
#include <vector>

namespace cnuas
{

/// Where iproute2 keeps named network namespaces (bind mounts of nsfs files).
constexpr const char* kNetnsDir = "/run/netns";

/**
 * Creates named network namespace `name` in kNetnsDir, as `ip netns add` does, from the calling
 * thread without running a program. False with the reason (among them: it exists).
 */
bool CreateNetns(const std::string& name, std::string* why);
/// Whether a named network namespace exists.
bool NetnsExists(const std::string& name);
/// The inode of named network namespace `name` (what /proc/self/ns/net shows inside it); 0 if
/// it does not exist.
uint64_t NetnsInode(const std::string& name);

/// Where a host's UTS and IPC namespaces are kept (as bind mounts, NETNS.uts and NETNS.ipc).
constexpr const char* kHostSystemNsDir = "/run/cnuas-hosts";
/**
 * Gives the host of network namespace `netns` the namespaces that make it a machine of its own
 * to the programs in it, kept in kHostSystemNsDir: a UTS namespace whose hostname is
 * `hostname` (so `hostname` in h0 says h0, and MPI launchers tell hosts apart by it) and an IPC
 * namespace (System V IPC and POSIX message queues are per machine; UCX, and so Open MPI,
 * judges two processes able to share memory when they share one, and would otherwise pass
 * messages between emulated hosts through shared memory instead of the fabric). `cnuas exec`
 * enters them; DeleteNetnses removes them. False with the reason.
 */
bool CreateHostSystemNs(const std::string& netns, const std::string& hostname, std::string* why);
/// A namespace name iproute2 accepts: 1..64 characters of [A-Za-z0-9_.-], not "." or "..".
bool ValidNetnsName(const std::string& name);
/**
 * Runs `commands` (each an `ip` command line without the `ip`) as one `ip -batch`, in network
 * namespace `netns` (started inside it) unless it is empty; iproute2 stops at the first that
 * fails. False with that command (as iproute2 numbers it) and its error output in *why when one
 * fails.
 */
bool RunIpBatch(const std::string& netns, const std::vector<std::string>& commands,
                std::string* why);
/**
 * Creates TAP device `ifname` (IFF_TAP | IFF_NO_PI: plain Ethernet frames; with `vnetHeader`
 * also IFF_VNET_HDR, a virtio header before every frame, for offloads) in the calling thread's
 * network namespace and returns its descriptor (non-blocking, close-on-exec), or -1 with the
 * reason.
 */
int OpenTap(const std::string& ifname, bool vnetHeader, std::string* why);

/// One host's NIC and addressing, as `cnuas up` configures its namespace.
struct EmuHostConfig
{
    std::string netns;       ///< namespace name
    bool createNetns = true; ///< false: the namespace exists (a hybrid host's second NIC)
    std::string hostname;    ///< with createNetns: the host's own hostname (CreateHostSystemNs)
    std::string ifname;      ///< the NIC's name inside the host ("eth0")
    bool vnetHeader = false; ///< the TAP carries virtio headers (OpenTap)
    std::string mac;         ///< "02:00:00:00:00:01"
    std::string ipCidr;      ///< "10.0.0.1/8"
    unsigned mtu = 1500;
};

/**
 * Creates the namespace (unless `createNetns` is false) and, inside it, the host's NIC: a
 * TAP named `ifname` (OpenTap), with IPv6 off before its link comes up (the fabric routes the
 * hosts' IPv4 addresses; IPv6 neighbour discovery would only be counted as unroutable),
 * addressed and raised, and raises loopback. Returns the TAP's descriptor, or -1 with the reason.
 *
 * The TAP is persistent: closing its descriptor leaves the device, which goes with its
 * namespace. Both choices are for the kernel's sake on large fabrics (measured, docs/
 * performance.md): a TAP made in the daemon's namespace and moved in, or a non-persistent one
 * closed, each waits for an RCU grace period of its own, about 20 ms a host; the devices of
 * deleted namespaces are unregistered together, once for all of them. So a daemon that dies
 * leaves each host its NIC without carrier until `cnuas down` removes the namespace.
 */
int CreateEmuHost(const EmuHostConfig& host, std::string* why);
/**
 * The management network beside an InfiniBand fabric (the TCP bootstrap of verbs programs):
 * namespace `mgmtNetns` holds a bridge (CreateManagementBridge); each host gets `mgmt0`, a veth
 * addressed `ipCidr` whose other end, `bridgePort` (unique in the bridge's namespace), is made
 * in the bridge's namespace (AttachToManagement) and joins the bridge when
 * RaiseManagementPorts is given it. False with the reason.
 */
bool CreateManagementBridge(const std::string& mgmtNetns, std::string* why);
bool AttachToManagement(const std::string& hostNetns,
                        const std::string& mgmtNetns,
                        const std::string& bridgePort,
                        const std::string& ipCidr,
                        std::string* why);
bool RaiseManagementPorts(const std::string& mgmtNetns,
                          const std::vector<std::string>& bridgePorts,
                          std::string* why);
/**
 * A UDP socket bound to `port` on every address of namespace `netns` (IPv6 dual-stack, else
 * IPv4), non-blocking, for the caller to drain: what the kernel receives there is not the
 * kernel's (RoCEv2's port 4791 belongs to the NIC), and without a socket it would answer with
 * ICMP port unreachable. -1 with the reason.
 */
int OpenUdpSinkInNetns(const std::string& netns, uint16_t port, std::string* why);

/// /proc/net/packet of namespace `netns` (the host's open packet sockets: something captures
/// there while it lists any), for EthTapBridge::SetCaptureProbe. -1 with the reason.
int OpenPacketSocketListInNetns(const std::string& netns, std::string* why);
/**
 * Ends every process in the namespaces `names` (SIGTERM, then SIGKILL after `graceSeconds`, one
 * grace period for all) and deletes them as `ip netns delete` does, without running it (a
 * fabric of hundreds of hosts stops in a fraction of the time). Returns, for each, how many
 * processes it ended, or -1 with the reason in (*why)[i]; a namespace that does not exist is
 * no error (0).
 */
std::vector<int> DeleteNetnses(const std::vector<std::string>& names,
                               double graceSeconds,
                               std::vector<std::string>* why);
/// What a program in an emulated host sees of its machine besides the network (ExecInNetns).
struct HostView
{
    /// umad (issue 14): files added to /sys/class (the adapters' infiniband classes, emu-sysfs.h)
    SysClassFiles sysClass;
    /// its /dev/infiniband (MountDevInfiniband; a warning on stderr if it cannot be made)
    std::vector<DevNode> devNodes;
    /// Files bound over the machine's: {file, where} (the fabric's /etc/hosts and
    /// /etc/resolv.conf); a warning on stderr for one that cannot be.
    std::vector<std::pair<std::string, std::string>> etcFiles;
};

/**
 * Enters the host's namespaces (network; its UTS and IPC ones when it has them, and a private
 * mount namespace whose /sys shows the host's devices, as `ip netns exec` does), shows it
 * `view` when given, and replaces this process with `argv`. Returns only on failure, with the
 * reason.
 */
std::string ExecInNetns(const std::string& name, const std::vector<std::string>& argv,
                        const HostView* view = nullptr);

} // namespace cnuas

#endif
