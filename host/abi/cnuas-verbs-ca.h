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

#ifdef __cplusplus
}
#endif

#endif
