// umad (issue 14): the emulated HCA as /sys/class/infiniband shows an adapter on a real machine,
// for the programs that read sysfs themselves rather than through libibumad (ibstatus, a shell
// script; perftest's --report_counters; ibstat's FDR10 check). `cnuas exec` writes it into the
// private mount namespace it runs the program in.
#ifndef CNUAS_TOOLS_EMU_SYSFS_H
#define CNUAS_TOOLS_EMU_SYSFS_H

#include <string>
#include <utility>
#include <vector>

namespace cnuas
{

/// Files as (path under /sys/class, contents), e.g. ("infiniband/cnuas_0/ports/1/lid", "0x3\n").
using SysClassFiles = std::vector<std::pair<std::string, std::string>>;

/**
 * The files the kernel would show for the host's CAs: asks the host's umad service (its socket,
 * `umadSocket`; "" for none) for its InfiniBand CA and ports, and each RoCE adapter's verbs
 * socket (`hcaSockets`, ':' between them, as `cnuas exec` names them to the verbs library) for
 * its own: /sys/class/infiniband/CA/{node_type, node_guid, sys_image_guid, fw_ver, hw_rev,
 * hca_type, ports/N/{lid, sm_lid, sm_sl, lid_mask_count, state, phys_state, rate, cap_mask,
 * link_layer, gids/N, gid_attrs/{types,ndevs}/N, pkeys/I}} and, for the InfiniBand CA,
 * /sys/class/infiniband_mad/{abi_version, umad0/{ibdev, port}}, in the kernel's formats
 * (drivers/infiniband/core/sysfs.c). A RoCE GID's network device is `roceNetdev` (the host's
 * interface of that fabric). False with the reason (the umad service did not answer).
 */
bool HcaSysClassFiles(const std::string& umadSocket,
                      const std::string& hcaSockets,
                      const std::string& roceNetdev,
                      SysClassFiles* files,
                      std::string* why);

/**
 * In a private mount namespace whose /sys is mounted: puts a tmpfs over /sys/class that holds
 * every class of that sysfs (bind mounts) plus `files`, read-only. "" or the problem.
 */
std::string MountSysClass(const SysClassFiles& files);

/// A character device node of the host's /dev/infiniband.
struct DevNode
{
    std::string name; ///< e.g. "uverbs0"
    unsigned major;
    unsigned minor;
    unsigned mode; ///< permission bits
};

/// The nodes the kernel's RDMA drivers make for a host with `verbsDevices` adapters and, with
/// `umad`, an InfiniBand CA's MAD interface: uverbsN, umad0, issm0.
std::vector<DevNode> HcaDevNodes(int verbsDevices, bool umad);

/**
 * In a private mount namespace: a /dev/infiniband holding `nodes` (over the machine's, or added
 * to a view of /dev when the machine has none). Nothing opens them: Cnuas's libraries reach
 * the daemon through sockets. They are there because programs look: UCX lists a verbs device
 * only when /dev/infiniband/<dev_name> is a character device it may read and write. "" or the
 * problem.
 */
std::string MountDevInfiniband(const std::vector<DevNode>& nodes);

} // namespace cnuas

#endif
