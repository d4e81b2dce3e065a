/*
 * A misbehaving verbs program for the emulation tests (tests/test-emu-verbs.cc): it does what a
 * buggy or hostile process could do to the emulated HCA, and checks that the HCA refuses it the
 * way hardware does and that no memory outside what the rules allow changes.
 *
 *   verbs-hostile server                 exposes a 64 KiB region (REMOTE_WRITE|REMOTE_READ) filled
 *                                        with a pattern; at the end checks the pattern is intact
 *   verbs-hostile HOST CASE              connects to the server and tries CASE:
 *     forged-rkey       RDMA WRITE with the server's rkey altered   -> remote access error
 *     out-of-range      RDMA WRITE past the end of the server's MR  -> remote access error
 *     bad-lkey          SEND from a buffer with a made-up lkey      -> local protection error
 *     unregistered      RDMA WRITE from memory outside the local MR -> local protection error
 *     garbage-wqe       a WQE with an unknown opcode and 1000 SGEs written straight into the
 *                       shared send queue                           -> local QP operation error
 *     corrupt-doorbell  the send producer index set far past the ring -> the QP enters ERR
 * Prints "CASE: refused as expected (...)" and exits 0, or explains and exits 1. The server prints
 * "server buffer intact" and exits 0, or "server buffer CHANGED" and exits 1.
 *
 * Built against Debian's libibverbs headers; run inside an emulated host (`cnuas exec`), where it
 * loads Cnuas's library. Reaching into the library's shared memory (the last two cases) uses the
 * layout of host/abi/cnuas-hca-abi.h, as a hostile process could by reading /proc/self/maps.
 */
#define _GNU_SOURCE
#include "host/abi/cnuas-hca-abi.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kRegion = 65536, kPort = 18530 };

struct wire {
    uint32_t qpn, psn, rkey, lid;
    uint64_t addr;
    uint8_t gid[16];
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *region;
static int link_layer;

static void die(const char *what)
{
    fprintf(stderr, "verbs-hostile: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        p[i] = (uint8_t)(i * 131 + 7);
}

static int intact(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (p[i] != (uint8_t)(i * 131 + 7))
            return 0;
    return 1;
}

static void setup(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || n == 0)
        die("no RDMA device");
    ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!ctx)
        die("ibv_open_device");
    struct ibv_port_attr pa;
    if (ibv_query_port(ctx, 1, &pa))
        die("ibv_query_port");
    link_layer = pa.link_layer;
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
    region = aligned_alloc(4096, 2 * kRegion);
    if (!pd || !cq || !region)
        die("resources");
    fill(region, 2 * kRegion);
    /* Only the first half is registered: the second is memory the HCA must never touch. */
    mr = ibv_reg_mr(pd, region, kRegion,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!mr)
        die("ibv_reg_mr");
    struct ibv_qp_init_attr ia = {.send_cq = cq,
                                  .recv_cq = cq,
                                  .cap = {.max_send_wr = 16, .max_recv_wr = 16,
                                          .max_send_sge = 1, .max_recv_sge = 1},
                                  .qp_type = IBV_QPT_RC};
    qp = ibv_create_qp(pd, &ia);
    if (!qp)
        die("ibv_create_qp");
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                  IBV_QP_ACCESS_FLAGS))
        die("INIT");
}

static struct wire local_wire(void)
{
    struct wire w;
    memset(&w, 0, sizeof(w));
    struct ibv_port_attr pa;
    ibv_query_port(ctx, 1, &pa);
    union ibv_gid gid;
    ibv_query_gid(ctx, 1, 0, &gid);
    w.qpn = qp->qp_num;
    w.psn = 0x1234;
    w.lid = pa.lid;
    w.rkey = mr->rkey;
    w.addr = (uint64_t)(uintptr_t)region;
    memcpy(w.gid, gid.raw, 16);
    return w;
}

static void connect_qp(const struct wire *r)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
                            .dest_qp_num = r->qpn, .rq_psn = r->psn, .max_dest_rd_atomic = 1,
                            .min_rnr_timer = 12};
    a.ah_attr.port_num = 1;
    if (link_layer == IBV_LINK_LAYER_ETHERNET) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
        a.ah_attr.grh.hop_limit = 255;
    } else {
        a.ah_attr.dlid = (uint16_t)r->lid;
    }
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                  IBV_QP_MIN_RNR_TIMER))
        die("RTR");
    struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 12, .retry_cnt = 3,
                            .rnr_retry = 3, .sq_psn = 0x1234, .max_rd_atomic = 1};
    if (ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        die("RTS");
}

/* Waits up to 20 s for one completion. */
static int wait_wc(struct ibv_wc *wc)
{
    const time_t end = time(NULL) + 20;
    while (time(NULL) < end) {
        int n = ibv_poll_cq(cq, 1, wc);
        if (n < 0)
            return -1;
        if (n == 1)
            return 0;
    }
    return -1;
}

static int expect_status(const char *name, enum ibv_wc_status want)
{
    struct ibv_wc wc;
    if (wait_wc(&wc)) {
        printf("%s: no completion within 20 s\n", name);
        return 1;
    }
    if (wc.status != want) {
        printf("%s: completion '%s', expected '%s'\n", name, ibv_wc_status_str(wc.status),
               ibv_wc_status_str(want));
        return 1;
    }
    printf("%s: refused as expected (%s)\n", name, ibv_wc_status_str(wc.status));
    return 0;
}

static struct cnuas_hca_qp_shm *find_qp_shm(uint8_t **base)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    uintptr_t lo = 0;
    while (f && fgets(line, sizeof(line), f)) {
        if (strstr(line, "memfd:cnuas-qp")) {
            sscanf(line, "%lx-", &lo);
            break;
        }
    }
    if (f)
        fclose(f);
    *base = (uint8_t *)lo;
    return (struct cnuas_hca_qp_shm *)lo;
}

/* Rings every eventfd the process has: one of them is the context's doorbell. */
static void ring_all_eventfds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], target[64] = {0};
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        if (readlink(path, target, sizeof(target) - 1) > 0 && strstr(target, "eventfd")) {
            uint64_t one = 1;
            if (write(atoi(e->d_name), &one, sizeof(one)) < 0) {
            }
        }
    }
    if (d)
        closedir(d);
}

static int run_case(const char *name, const struct wire *r)
{
    struct ibv_sge sge = {(uintptr_t)region, 64, mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr *bad;
    wr.wr.rdma.remote_addr = r->addr;
    wr.wr.rdma.rkey = r->rkey;
    if (!strcmp(name, "forged-rkey")) {
        wr.wr.rdma.rkey = r->rkey ^ 0x00A5A500u;
        if (ibv_post_send(qp, &wr, &bad))
            die("post");
        return expect_status(name, IBV_WC_REM_ACCESS_ERR);
    }
    if (!strcmp(name, "out-of-range")) {
        wr.wr.rdma.remote_addr = r->addr + kRegion - 32; /* 64 bytes: 32 past the end */
        if (ibv_post_send(qp, &wr, &bad))
            die("post");
        return expect_status(name, IBV_WC_REM_ACCESS_ERR);
    }
    if (!strcmp(name, "bad-lkey")) {
        sge.lkey = mr->lkey ^ 0x5A5A5A5Au;
        wr.opcode = IBV_WR_SEND;
        if (ibv_post_send(qp, &wr, &bad))
            die("post");
        return expect_status(name, IBV_WC_LOC_PROT_ERR);
    }
    if (!strcmp(name, "unregistered")) {
        sge.addr = (uintptr_t)(region + kRegion + 128); /* the unregistered half */
        if (ibv_post_send(qp, &wr, &bad))
            die("post");
        return expect_status(name, IBV_WC_LOC_PROT_ERR);
    }
    uint8_t *base;
    struct cnuas_hca_qp_shm *shm = find_qp_shm(&base);
    if (!shm) {
        printf("%s: the QP's shared memory was not found\n", name);
        return 1;
    }
    if (!strcmp(name, "garbage-wqe")) {
        /* Slot 0 of the send queue follows the 512-byte head. */
        struct cnuas_hca_send_wqe *w = (struct cnuas_hca_send_wqe *)(base + 512);
        memset(w, 0, sizeof(*w));
        w->wr_id = 77;
        w->opcode = 200;
        w->num_sge = 1000;
        __atomic_store_n(&shm->sq_prod.value, 1u, __ATOMIC_RELEASE);
        ring_all_eventfds();
        return expect_status(name, IBV_WC_LOC_QP_OP_ERR);
    }
    if (!strcmp(name, "corrupt-doorbell")) {
        __atomic_store_n(&shm->sq_prod.value, 0x7FFFFFF0u, __ATOMIC_RELEASE);
        ring_all_eventfds();
        const time_t end = time(NULL) + 20;
        while (time(NULL) < end) {
            struct ibv_qp_attr a;
            struct ibv_qp_init_attr ia;
            if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR) {
                struct ibv_async_event ev;
                struct pollfd p = {ctx->async_fd, POLLIN, 0};
                const char *what = "no event";
                if (poll(&p, 1, 1000) == 1 && ibv_get_async_event(ctx, &ev) == 0) {
                    what = ibv_event_type_str(ev.event_type);
                    ibv_ack_async_event(&ev);
                }
                printf("%s: refused as expected (QP in the error state; %s)\n", name, what);
                return 0;
            }
            usleep(10000);
        }
        printf("%s: the QP did not enter the error state\n", name);
        return 1;
    }
    printf("unknown case %s\n", name);
    return 2;
}

static int tcp_server(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(kPort)};
    if (bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1))
        die("listen");
    int c = accept(s, NULL, NULL);
    close(s);
    return c;
}

static int tcp_client(const char *host)
{
    struct addrinfo *ai;
    if (getaddrinfo(host, "18530", NULL, &ai))
        die("address");
    for (int i = 0; i < 100; ++i) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
            freeaddrinfo(ai);
            return s;
        }
        close(s);
        usleep(100000);
    }
    die("connect");
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: verbs-hostile server | verbs-hostile HOST CASE\n");
        return 2;
    }
    setup();
    const int server = !strcmp(argv[1], "server");
    int s = server ? tcp_server() : tcp_client(argv[1]);
    struct wire mine = local_wire(), theirs;
    if (write(s, &mine, sizeof(mine)) != sizeof(mine) ||
        recv(s, &theirs, sizeof(theirs), MSG_WAITALL) != sizeof(theirs))
        die("exchange");
    connect_qp(&theirs);
    /* The client starts only once the server's QP is ready to respond. */
    char ready = 'r';
    if (server ? write(s, &ready, 1) != 1 : recv(s, &ready, 1, MSG_WAITALL) != 1)
        die("ready");
    if (server) {
        char done;
        if (recv(s, &done, 1, MSG_WAITALL) != 1)
            die("waiting for the client");
        const int ok = intact(region, 2 * kRegion);
        printf("server buffer %s\n", ok ? "intact" : "CHANGED");
        return ok ? 0 : 1;
    }
    const int rc = argc > 2 ? run_case(argv[2], &theirs) : 2;
    const int local_ok = intact(region, 2 * kRegion);
    if (!local_ok)
        printf("client buffer CHANGED\n");
    char done = 'd';
    if (write(s, &done, 1) != 1)
        die("done");
    return rc || !local_ok;
}
