/*
 * rsockets (rdma/rsocket.h) in Cnuas's librdmacm: not provided. rsocket() fails with
 * EOPNOTSUPP, so no descriptor is ever an rsocket, and the calls that take one behave as they do
 * in librdmacm for a descriptor that is not: rpoll and rselect are poll and select (rping, ucmatose
 * and udaddy wait on their event channel with rpoll), the others fail with EBADF.
 */
#define _GNU_SOURCE
#include <rdma/rsocket.h>

#include <errno.h>
#include <poll.h>
#include <sys/select.h>

#define CNUAS_EXPORT __attribute__((visibility("default")))

static int ebadf(void)
{
    errno = EBADF;
    return -1;
}

CNUAS_EXPORT int rsocket(int domain, int type, int protocol)
{
    (void)domain;
    (void)type;
    (void)protocol;
    errno = EOPNOTSUPP;
    return -1;
}

CNUAS_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    return poll(fds, nfds, timeout);
}

CNUAS_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                         struct timeval *timeout)
{
    return select(nfds, readfds, writefds, exceptfds, timeout);
}

CNUAS_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)socket; (void)addr; (void)addrlen;
    return ebadf();
}

CNUAS_EXPORT int rlisten(int socket, int backlog)
{
    (void)socket; (void)backlog;
    return ebadf();
}

CNUAS_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    (void)socket; (void)addr; (void)addrlen;
    return ebadf();
}

CNUAS_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)socket; (void)addr; (void)addrlen;
    return ebadf();
}

CNUAS_EXPORT int rshutdown(int socket, int how)
{
    (void)socket; (void)how;
    return ebadf();
}

CNUAS_EXPORT int rclose(int socket)
{
    (void)socket;
    return ebadf();
}

CNUAS_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
    (void)socket; (void)buf; (void)len; (void)flags;
    return ebadf();
}

CNUAS_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
                               struct sockaddr *src_addr, socklen_t *addrlen)
{
    (void)socket; (void)buf; (void)len; (void)flags; (void)src_addr; (void)addrlen;
    return ebadf();
}

CNUAS_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
    (void)socket; (void)msg; (void)flags;
    return ebadf();
}

CNUAS_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
    (void)socket; (void)buf; (void)len; (void)flags;
    return ebadf();
}

CNUAS_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
                             const struct sockaddr *dest_addr, socklen_t addrlen)
{
    (void)socket; (void)buf; (void)len; (void)flags; (void)dest_addr; (void)addrlen;
    return ebadf();
}

CNUAS_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
    (void)socket; (void)msg; (void)flags;
    return ebadf();
}

CNUAS_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
    (void)socket; (void)buf; (void)count;
    return ebadf();
}

CNUAS_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
    (void)socket; (void)iov; (void)iovcnt;
    return ebadf();
}

CNUAS_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
    (void)socket; (void)buf; (void)count;
    return ebadf();
}

CNUAS_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
    (void)socket; (void)iov; (void)iovcnt;
    return ebadf();
}

CNUAS_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    (void)socket; (void)addr; (void)addrlen;
    return ebadf();
}

CNUAS_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    (void)socket; (void)addr; (void)addrlen;
    return ebadf();
}

CNUAS_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
                             socklen_t optlen)
{
    (void)socket; (void)level; (void)optname; (void)optval; (void)optlen;
    return ebadf();
}

CNUAS_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
                             socklen_t *optlen)
{
    (void)socket; (void)level; (void)optname; (void)optval; (void)optlen;
    return ebadf();
}

CNUAS_EXPORT int rfcntl(int socket, int cmd, ... /* arg */)
{
    (void)socket; (void)cmd;
    return ebadf();
}

CNUAS_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
    (void)socket; (void)buf; (void)len; (void)prot; (void)flags; (void)offset;
    return ebadf();
}

CNUAS_EXPORT int riounmap(int socket, void *buf, size_t len)
{
    (void)socket; (void)buf; (void)len;
    return ebadf();
}

CNUAS_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
    (void)socket; (void)buf; (void)count; (void)offset; (void)flags;
    errno = EBADF;
    return 0;
}
