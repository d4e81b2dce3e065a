/*
 * The connection to a daemon service (cnuas-seqpacket.h).
 */
#define _GNU_SOURCE
#include "cnuas-seqpacket.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int cnuas_seqpacket_connect(const char *path, size_t len)
{
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    if (len == 0 || len >= sizeof(addr.sun_path))
        return -ENAMETOOLONG;
    memcpy(addr.sun_path, path, len);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

const char *cnuas_path_list_next(const char **list, size_t *len)
{
    const char *p = *list;
    if (!p || !*p)
        return NULL;
    const char *end = strchr(p, ':');
    *len = end ? (size_t)(end - p) : strlen(p);
    *list = p + *len + (end ? 1 : 0);
    return p;
}
