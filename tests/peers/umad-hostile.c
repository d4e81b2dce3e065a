/*
 * A misbehaving umad program for the umad emulation tests (tests/test-emu-umad.cc): bad sends,
 * garbage written straight to the MAD stream and the control socket, SMPs to places that do
 * not exist, a closed port. Each case prints "ok NAME" or "FAIL NAME: why"; the last line is
 * "done N failures". Run inside an emulated InfiniBand host (cnuas exec) whose port is Active.
 * Built against Debian's libibumad headers, run on Cnuas's libibumad.so.3.
 */
#define _GNU_SOURCE
#include "host/abi/cnuas-umad-abi.h"

#include <infiniband/umad.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "peer-check.h"

enum { MAD = 256 };

static uint8_t buf[4096];
static uint32_t next_tid = 0x1000;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* A directed-route SMP Get of `attr` along `path` (hop count n), in `umad`. */
static uint8_t *dr_smp(void *umad, uint16_t attr, uint32_t mod, const uint8_t *path, int n)
{
    memset(umad, 0, umad_size() + MAD);
    uint8_t *m = umad_get_mad(umad);
    m[0] = 1;    /* base version */
    m[1] = 0x81; /* directed route */
    m[2] = 1;
    m[3] = 0x01; /* Get */
    m[7] = (uint8_t)n;
    uint32_t tid = next_tid++;
    m[12] = (uint8_t)(tid >> 24);
    m[13] = (uint8_t)(tid >> 16);
    m[14] = (uint8_t)(tid >> 8);
    m[15] = (uint8_t)tid;
    m[16] = (uint8_t)(attr >> 8);
    m[17] = (uint8_t)attr;
    m[20] = (uint8_t)(mod >> 24);
    m[21] = (uint8_t)(mod >> 16);
    m[22] = (uint8_t)(mod >> 8);
    m[23] = (uint8_t)mod;
    m[32] = m[33] = m[34] = m[35] = 0xFF; /* DrSLID, DrDLID permissive */
    for (int i = 0; i < n; ++i)
        m[128 + 1 + i] = path[i];
    umad_set_addr(umad, 0xFFFF, 0, 0, 0);
    return m;
}

static uint16_t mad_status(const uint8_t *m)
{
    return (uint16_t)((m[4] << 8) | m[5]);
}

/* `umad-hostile mkey PATH...`: protects the port at the end of the directed route PATH (after
 * the local port) with M_Key 0xC0FFEE and protection bits 2, giving it LID and SM LID 0x10 (a
 * PortInfo Set needs unicast LIDs). Prints "ok mkey-set" or "FAIL ...". */
static int set_mkey(int argc, char **argv)
{
    int fd = umad_open_port(NULL, 0);
    int smi = fd >= 0 ? umad_register(fd, 0x81, 1, 0, NULL) : -1;
    if (smi < 0) {
        printf("FAIL mkey-set: no port\n");
        return 1;
    }
    uint8_t path[64];
    int n = 0;
    path[n++] = 1;
    for (int i = 0; i < argc && n < 63; ++i)
        path[n++] = (uint8_t)atoi(argv[i]);
    void *umad = buf;
    dr_smp(umad, 0x0015, 0, path, n);
    int len = MAD;
    if (umad_send(fd, smi, umad, MAD, 500, 2) != 0 || umad_recv(fd, umad, &len, 3000) != smi ||
        umad_status(umad) != 0) {
        printf("FAIL mkey-set: PortInfo Get\n");
        return 1;
    }
    uint8_t info[64];
    memcpy(info, (uint8_t *)umad_get_mad(umad) + 64, 64);
    uint8_t *m = dr_smp(umad, 0x0015, 0, path, n);
    m[3] = 0x02; /* Set */
    memcpy(m + 64, info, 64);
    uint8_t *pi = m + 64;
    const uint8_t key[8] = {0, 0, 0, 0, 0, 0xC0, 0xFF, 0xEE};
    memcpy(pi, key, 8);                      /* M_Key */
    pi[16] = 0, pi[17] = 0x10;               /* LID */
    pi[18] = 0, pi[19] = 0x10;               /* MasterSMLID */
    pi[32] &= 0xF0;                          /* PortState: no change */
    pi[33] &= 0x0F;                          /* PortPhysicalState: no change */
    pi[34] = (uint8_t)((pi[34] & 0x3F) | 0x80); /* M_KeyProtectBits 2 */
    len = MAD;
    if (umad_send(fd, smi, umad, MAD, 500, 2) != 0 || umad_recv(fd, umad, &len, 3000) != smi ||
        umad_status(umad) != 0 || (mad_status(umad_get_mad(umad)) & 0x7FFF) != 0) {
        printf("FAIL mkey-set: PortInfo Set status 0x%x\n", mad_status(umad_get_mad(umad)));
        return 1;
    }
    printf("ok mkey-set\n");
    umad_close_port(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "mkey") == 0) {
        if (umad_init() < 0)
            return 1;
        return set_mkey(argc - 2, argv + 2);
    }
    if (umad_init() < 0) {
        printf("FAIL init\ndone 1 failures\n");
        return 1;
    }
    int fd = umad_open_port(NULL, 0);
    CHECK("open", fd >= 0, "umad_open_port: %d", fd);
    if (fd < 0) {
        printf("done %d failures\n", failures);
        return 1;
    }
    int smi = umad_register(fd, 0x81, 1, 0, NULL);
    CHECK("register-smi", smi >= 0, "umad_register(0x81): %d", smi);
    void *umad = buf;

    /* 1. The local SMA answers NodeInfo (hop count 0). */
    dr_smp(umad, 0x0011, 0, NULL, 0);
    int r = umad_send(fd, smi, umad, MAD, 500, 1);
    int len = MAD;
    int got = r == 0 ? umad_recv(fd, umad, &len, 2000) : r;
    uint8_t *m = umad_get_mad(umad);
    CHECK("local-nodeinfo", got == smi && umad_status(umad) == 0 && m[3] == 0x81 &&
                                mad_status(m) == 0x8000 && m[64 + 2] == 1,
          "send %d recv %d status %d method 0x%x mad status 0x%x type %d", r, got,
          umad_status(umad), m[3], mad_status(m), m[66]);

    /* 2. A buffer too small: EINVAL and the length needed; the MAD stays for the next read. */
    dr_smp(umad, 0x0011, 0, NULL, 0);
    umad_send(fd, smi, umad, MAD, 500, 1);
    len = 10;
    got = umad_recv(fd, umad, &len, 2000);
    CHECK("recv-too-small", got == -EINVAL && len == MAD, "recv %d len %d", got, len);
    len = MAD;
    got = umad_recv(fd, umad, &len, 2000);
    CHECK("recv-after-too-small", got == smi && len == MAD, "recv %d len %d", got, len);

    /* 3. The spec's MAD status: an attribute the SMA does not have, a class version it does
     * not speak. */
    dr_smp(umad, 0xFF01, 0, NULL, 0);
    umad_send(fd, smi, umad, MAD, 500, 1);
    len = MAD;
    got = umad_recv(fd, umad, &len, 2000);
    CHECK("unknown-attribute", got == smi && (mad_status(m) & 0x7FFF) == 0x000C,
          "recv %d status 0x%x", got, mad_status(m));
    m = dr_smp(umad, 0x0011, 0, NULL, 0);
    m[2] = 9;
    umad_send(fd, smi, umad, MAD, 500, 1);
    len = MAD;
    got = umad_recv(fd, umad, &len, 2000);
    m = umad_get_mad(umad);
    CHECK("bad-class-version", got == smi && (mad_status(m) & 0x7FFF) == 0x0004,
          "recv %d status 0x%x", got, mad_status(m));

    /* 4. What the kernel refuses at write(): unknown agents, short writes, bad routes. */
    dr_smp(umad, 0x0011, 0, NULL, 0);
    errno = 0;
    r = umad_send(fd, 99, umad, MAD, 100, 0);
    CHECK("send-agent-out-of-range", r == -EIO && errno == EINVAL, "%d errno %d", r, errno);
    r = umad_send(fd, 7, umad, MAD, 100, 0);
    CHECK("send-unregistered-agent", r == -EIO && errno == EIO, "%d errno %d", r, errno);
    r = umad_send(fd, smi, umad, 10, 100, 0);
    CHECK("send-too-short", r == -EIO && errno == EINVAL, "%d errno %d", r, errno);
    m = dr_smp(umad, 0x0011, 0, NULL, 0);
    m[7] = 70;
    r = umad_send(fd, smi, umad, MAD, 100, 0);
    CHECK("send-hop-count-70", r == -EIO && errno == EINVAL, "%d errno %d", r, errno);
    {
        const uint8_t path[] = {2};
        dr_smp(umad, 0x0011, 0, path, 1);
        r = umad_send(fd, smi, umad, MAD, 100, 0);
        CHECK("send-wrong-first-port", r == -EIO && errno == EINVAL, "%d errno %d", r, errno);
    }
    m = dr_smp(umad, 0x0015, 0, NULL, 0);
    m[1] = 0x04; /* PerfMgt through the SMI agent */
    r = umad_send(fd, smi, umad, MAD, 100, 0);
    CHECK("send-gmp-on-qp0", r == -EIO && errno == EINVAL, "%d errno %d", r, errno);

    /* 5. An SMP to a path that leads nowhere: no answer; retries, then the send comes back
     * with status ETIMEDOUT after timeout x (retries + 1). A second request with the same
     * TransactionID meanwhile is a duplicate. */
    {
        const uint8_t path[] = {1, 9, 9};
        dr_smp(umad, 0x0011, 0, path, 3);
        uint8_t copy[sizeof(buf)];
        memcpy(copy, umad, umad_size() + MAD);
        const double t0 = now_s();
        r = umad_send(fd, smi, umad, MAD, 200, 2);
        errno = 0;
        int dup = umad_send(fd, smi, copy, MAD, 200, 0);
        CHECK("send-duplicate-tid", dup == -EIO && errno == EINVAL, "%d errno %d", dup, errno);
        len = MAD;
        got = umad_recv(fd, umad, &len, 5000);
        const double waited = now_s() - t0;
        CHECK("nonexistent-path-times-out",
              r == 0 && got == smi && umad_status(umad) == ETIMEDOUT && len == 24 &&
                  waited > 0.55 && waited < 4.9, /* 3 x 200 ms, however late a loaded daemon is */
              "send %d recv %d status %d len %d after %.3f s", r, got, umad_status(umad), len,
              waited);
    }

    /* 6. umad_recv's own timeout, and a zero timeout. */
    len = MAD;
    double t0 = now_s();
    got = umad_recv(fd, umad, &len, 100);
    CHECK("recv-timeout", got == -ETIMEDOUT && now_s() - t0 >= 0.09, "%d", got);
    len = MAD;
    got = umad_recv(fd, umad, &len, 0);
    CHECK("recv-nonblocking", got == -EWOULDBLOCK, "%d", got);
    CHECK("poll-timeout", umad_poll(fd, 50) == -ETIMEDOUT, "poll");

    /* 7. Registration rules: a method of a class has one agent; vendor range 2 needs an OUI;
     * no flags are known. */
    long mask[16 / sizeof(long)] = {0};
    mask[0] = 1L << 1; /* Get */
    int a1 = umad_register(fd, 0x04, 1, 0, mask);
    int a2 = umad_register(fd, 0x04, 1, 0, mask);
    CHECK("register-method-twice", a1 >= 0 && a2 == -EPERM, "%d %d", a1, a2);
    uint8_t oui[3] = {0, 0x14, 0x05};
    CHECK("register-oui-outside-range", umad_register_oui(fd, 0x09, 0, oui, NULL) == -EINVAL,
          "register_oui");
    struct umad_reg_attr attr = {.mgmt_class = 0x04, .mgmt_class_version = 1,
                                 .flags = UMAD_USER_RMPP};
    uint32_t id;
    CHECK("register2-unknown-flags", umad_register2(fd, &attr, &id) == EINVAL && attr.flags == 0,
          "register2");
    CHECK("unregister", umad_unregister(fd, a1) == 0, "unregister");
    CHECK("unregister-again", umad_unregister(fd, a1) == -1 && errno == EINVAL, "errno %d",
          errno);

    /* 8. Garbage straight into the MAD stream: the daemon drops it and the port works on. */
    {
        const int sfd = umad_get_fd(fd);
        char junk[7] = "garbage";
        ssize_t w = write(sfd, junk, sizeof(junk));
        struct cnuas_umad_mad bad;
        memset(&bad, 0xA5, sizeof(bad)); /* the right size, an agent that does not exist */
        w += write(sfd, &bad, sizeof(bad));
        bad.agent_id = (uint32_t)smi; /* its agent, a length that is no MAD's */
        w += write(sfd, &bad, sizeof(bad));
        uint8_t big[600];
        memset(big, 0x5A, sizeof(big));
        w += write(sfd, big, sizeof(big));
        (void)w;
        dr_smp(umad, 0x0011, 0, NULL, 0);
        umad_send(fd, smi, umad, MAD, 500, 1);
        len = MAD;
        got = umad_recv(fd, umad, &len, 2000);
        CHECK("works-after-garbage", got == smi && umad_status(umad) == 0, "recv %d", got);
    }

    /* 9. Garbage on the control socket: that connection ends, nothing else. */
    {
        const char *path = getenv("CNUAS_UMAD_SOCKET");
        struct sockaddr_un a;
        memset(&a, 0, sizeof(a));
        a.sun_family = AF_UNIX;
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", path ? path : "");
        int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        int c = connect(s, (struct sockaddr *)&a, sizeof(a));
        ssize_t w = send(s, "nonsense", 8, MSG_NOSIGNAL);
        char reply[8];
        ssize_t n = recv(s, reply, sizeof(reply), 0);
        CHECK("control-garbage-closes", c == 0 && w == 8 && n == 0, "connect %d send %zd recv %zd",
              c, w, n);
        close(s);
    }

    /* 10. A closed port. */
    umad_close_port(fd);
    dr_smp(umad, 0x0011, 0, NULL, 0);
    errno = 0;
    r = umad_send(fd, smi, umad, MAD, 100, 0);
    CHECK("send-closed-port", r == -EIO && errno == EBADF, "%d errno %d", r, errno);
    len = MAD;
    got = umad_recv(fd, umad, &len, 100);
    CHECK("recv-closed-port", got < 0, "%d", got);
    printf("done %d failures\n", failures);
    return failures ? 1 : 0;
}
