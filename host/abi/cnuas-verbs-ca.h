/*
 * A RoCE adapter as the kernel's /sys/class/infiniband describes it, asked of its verbs socket
 * (cnuas-hca-abi.h): what libibumad reads for `ibstat` and `cnuas exec` writes into a host's
 * sysfs view. InfiniBand CAs are described by their host's umad service (cnuas-umad-abi.h,
 * QUERY_CA), whose SMA knows LIDs and SM; an Ethernet port has none of that (LID 0, no SM),
 * and the verbs device knows all there is. Used by host/umad (C) and tools/cnuas (C++).
 */
#ifndef CNUAS_VERBS_CA_H
#define CNUAS_VERBS_CA_H

#include "cnuas-umad-abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Fills *ca from the HCA socket at `path`, whose name is `len` bytes (a path need not end in
 * '\0': it may be one of a ':'-separated list). 0; -ENOENT when the adapter is an InfiniBand
 * HCA (its CA is the umad service's); or -errno.
 */
int cnuas_verbs_ca_info(const char *path, unsigned long len, struct cnuas_umad_ca_info *ca);

/* One entry of a port's GID table. */
struct cnuas_verbs_gid_entry {
    uint8_t gid[16];
    int32_t type; /* enum ibv_gid_type (IB 0, RoCE v1 1, RoCE v2 2); -1: the entry is empty */
};

/*
 * Port 1's GID table, every entry up to the port's gid_tbl_len (at most `max`), as the
 * kernel's sysfs lists it (ports/1/gids/N, gid_attrs/types/N): programs that pick a RoCE v2
 * GID read these files rather than ask the verbs library. The table's length, or -errno.
 */
int cnuas_verbs_gid_table(const char *path, unsigned long len, struct cnuas_verbs_gid_entry *table,
                          unsigned max);

#ifdef __cplusplus
}
#endif

#endif
