/*
 * What the garbage peers (hca-control-garbage.c, cm-control-garbage.c, umad-garbage.c) share:
 * a seeded generator of edge values, and one request and its answer over a daemon's
 * SOCK_SEQPACKET control socket with descriptors passed both ways. Header-only (each peer is
 * one program).
 */
#ifndef CNUAS_PEER_GARBAGE_UTIL_H
#define CNUAS_PEER_GARBAGE_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static uint64_t garbage_rng_state;

/* Seeds the generator: the same seed, the same run. */
static inline void garbage_seed(uint64_t seed)
{
    garbage_rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
}

/* xorshift64*: enough for choosing garbage. */
static inline uint64_t rnd(void)
{
    garbage_rng_state ^= garbage_rng_state >> 12;
    garbage_rng_state ^= garbage_rng_state << 25;
    garbage_rng_state ^= garbage_rng_state >> 27;
    return garbage_rng_state * 0x2545F4914F6CDD1DULL;
}

static inline uint32_t below(uint32_t n) { return (uint32_t)(rnd() % n); }

/* A 32-bit value at an edge more often than not. */
static inline uint32_t edgy32(void)
{
    static const uint32_t edges[] = {0, 1, 2, 3, 4, 16, 255, 256, 4096, 65535, 65536,
                                     0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF};
    switch (below(4)) {
    case 0: return (uint32_t)rnd();
    case 1: return below(64);
    default: return edges[below(sizeof(edges) / sizeof(edges[0]))];
    }
}

static inline uint64_t edgy64(void)
{
    static const uint64_t edges[] = {0, 1, 4096, 1ULL << 31, 1ULL << 32, 1ULL << 40,
                                     0x7FFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL};
    return below(3) ? edgy32() : edges[below(sizeof(edges) / sizeof(edges[0]))];
}

static inline void random_bytes(void *p, size_t n)
{
    uint8_t *b = (uint8_t *)p;
    for (size_t i = 0; i < n; ++i)
        b[i] = (uint8_t)rnd();
}

/* Answers that never came within the socket's 10 s (a hung daemon). */
static int garbage_timeouts;

/* Connects to the socket named by environment variable `env` (set by `cnuas exec`); a receive
 * waits at most 10 s. Exits with a message when there is none. */
static inline int garbage_connect(const char *env)
{
    const char *path = getenv(env);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (!path || strlen(path) >= sizeof(a.sun_path)) {
        printf("garbage: no %s in the environment (run under cnuas exec)\n", env);
        exit(1);
    }
    strcpy(a.sun_path, path);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
        printf("garbage: cannot connect to %s: %s\n", path, strerror(errno));
        exit(1);
    }
    struct timeval tv = {10, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return s;
}

/* Sends `len` bytes of `q` with `fd` passed when >= 0, and takes the answer, which must be
 * exactly `resp_len` bytes, into `resp`. Returns 1 with the answer, 0 when the daemon closed the
 * connection, -1 on a timeout or an answer of another size (reported). The first descriptor that
 * comes back goes to *got_fd when got_fd is given; any other is closed. */
static inline int garbage_call(int s, const void *q, size_t len, void *resp, size_t resp_len,
                               int fd, int *got_fd)
{
    if (got_fd)
        *got_fd = -1;
    struct iovec iov = {(void *)q, len};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(4 * sizeof(int))];
    } control;
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (fd >= 0) {
        m.msg_control = control.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int));
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof(int));
    }
    if (sendmsg(s, &m, MSG_NOSIGNAL) != (ssize_t)len)
        return 0; /* closed under us */
    uint8_t rbuf[4096]; /* more than any answer: a long one shows */
    struct iovec riov = {rbuf, resp_len + 1 < sizeof(rbuf) ? resp_len + 1 : sizeof(rbuf)};
    memset(&m, 0, sizeof(m));
    m.msg_iov = &riov;
    m.msg_iovlen = 1;
    m.msg_control = control.buf;
    m.msg_controllen = sizeof(control.buf);
    const ssize_t got = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
            const size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < n; ++i) {
                int f;
                memcpy(&f, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
                if (got_fd && *got_fd < 0)
                    *got_fd = f;
                else
                    close(f);
            }
        }
    }
    if (got == 0 || (got < 0 && (errno == ECONNRESET || errno == EPIPE)))
        return 0;
    if (got < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            garbage_timeouts++;
        printf("garbage: no answer: %s\n", strerror(errno));
        return -1;
    }
    if ((size_t)got != resp_len) {
        printf("garbage: an answer of %zd bytes (want %zu)\n", got, resp_len);
        return -1;
    }
    memcpy(resp, rbuf, resp_len);
    return 1;
}

/* Sends a datagram of the wrong size for a request of `req_len` bytes (one to sixteen bytes
 * short or eight long, of noise, or empty: recv alone reads an empty datagram as the end of the
 * connection), half of them with a descriptor attached, and takes what comes back as
 * garbage_call does: a daemon must end the connection (0), count it as malformed and close the
 * descriptor it was passed. Returns garbage_call's answer. */
static inline int garbage_send_malformed(int s, size_t req_len, void *resp, size_t resp_len)
{
    uint8_t junk[4096 + 8];
    if (req_len + 8 > sizeof(junk) || req_len < 17)
        return -1;
    random_bytes(junk, req_len + 8);
    const uint32_t kind = below(4);
    const size_t len = kind == 0 ? 0 : kind == 1 ? req_len + 8 : req_len - 1 - below(16);
    const int fd = below(2) ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
    const int got = garbage_call(s, junk, len, resp, resp_len, fd, NULL);
    if (fd >= 0)
        close(fd);
    return got;
}

#endif
