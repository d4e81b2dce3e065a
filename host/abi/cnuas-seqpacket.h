/*
 * The connection every host library opens to its daemon service (verbs, umad, rdma_cm): a Unix
 * SOCK_SEQPACKET socket, one datagram a request, and the lists of such sockets `cnuas exec`
 * names. Shared by host/verbs, host/umad, host/rdmacm and tools/cnuas.
 */
#ifndef CNUAS_SEQPACKET_H
#define CNUAS_SEQPACKET_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Connects to the socket at `path`, its first `len` bytes (the path need not end in '\0': it
 * may be one of a ':'-separated list). The descriptor (close-on-exec), or -errno: -ENAMETOOLONG
 * for an empty path or one that does not fit sun_path (never a truncated one), else connect's.
 */
int cnuas_seqpacket_connect(const char *path, size_t len);

/*
 * Walks a ':'-separated list of socket paths (CNUAS_HCA_SOCKET: a hybrid host's adapters): the
 * path at *list, its length in *len (0 for an empty entry), and *list moved past it and its
 * ':'. NULL at the end of the list, or for a NULL list.
 */
const char *cnuas_path_list_next(const char **list, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
