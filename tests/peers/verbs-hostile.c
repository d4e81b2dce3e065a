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
 *     bad-windows       registrations over a connection of its own, each with a shared-memory
 *                       descriptor the daemon must refuse (an unsealed memfd, one shorter than
 *                       it claims, a pipe, a range that does not cover the region, one that
 *                       overlaps an earlier window): each is still registered (through
 *                       /proc/PID/mem); then an RDMA READ into the real region proves the
 *                       daemon and the process's own shared pages still work
 *     fork              after ibv_reg_mr moved the region into shared memory, a forked child
 *                       scribbles on its copy: the parent's region must not change, and an
 *                       RDMA READ into it afterwards must land in the parent's pages
 * Prints "CASE: refused as expected (...)" and exits 0, or explains and exits 1. The server prints
 * "server buffer intact" and exits 0, or "server buffer CHANGED" and exits 1.
 *
 * Built against Debian's libibverbs headers; run inside an emulated host (`cnuas exec`), where it
 * loads Cnuas's library. Reaching into the library's shared memory (the last two cases) uses the
 * layout of host/abi/cnuas-hca-abi.h, as a hostile process could by reading /proc/self/maps.
 */
#define _GNU_SOURCE
#include "host/abi/cnuas-hca-abi.h"
#include "tests/peers/garbage-util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
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

/* One request over a raw connection to the HCA socket, with `fd` passed when >= 0. Returns
 * the answer's error (0: done), or -1 when the connection failed. */
static int raw_call(int s, struct cnuas_hca_req *q, struct cnuas_hca_resp *r, int fd)
{
    return garbage_call(s, q, sizeof(*q), r, sizeof(*r), fd, NULL) == 1 ? r->err : -1;
}

/* An RDMA READ of the server's first 64 bytes into the (zeroed) start of the region: the
 * pattern must come back, through whatever path the daemon uses for the region. */
static int read_back(const char *name, const struct wire *r)
{
    memset(region, 0, 64);
    struct ibv_sge sge = {(uintptr_t)region, 64, mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1,
                             .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr *bad;
    wr.wr.rdma.remote_addr = r->addr;
    wr.wr.rdma.rkey = r->rkey;
    struct ibv_wc wc;
    if (ibv_post_send(qp, &wr, &bad) || wait_wc(&wc) || wc.status != IBV_WC_SUCCESS) {
        printf("%s: the RDMA READ afterwards failed\n", name);
        return 1;
    }
    if (!intact(region, 64)) {
        printf("%s: the RDMA READ's data did not reach the region\n", name);
        return 1;
    }
    return 0;
}

/* A sealed (or not) memfd of `bytes`. */
static int make_memfd(size_t bytes, int seal)
{
    int fd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0)
        die("memfd");
    if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)
        die("seal");
    return fd;
}

static int bad_windows(const char *name, const struct wire *r)
{
    const char *path = getenv(CNUAS_HCA_SOCKET_ENV);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (!path || strlen(path) >= sizeof(a.sun_path)) {
        printf("%s: no HCA socket in the environment\n", name);
        return 1;
    }
    strcpy(a.sun_path, path);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0)
        die("connect to the HCA socket");
    struct cnuas_hca_req q;
    struct cnuas_hca_resp rsp;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_OPEN;
    q.u.open.abi_version = CNUAS_HCA_ABI_VERSION;
    int doorbell = eventfd(0, EFD_CLOEXEC);
    if (raw_call(s, &q, &rsp, doorbell) != 0)
        die("OPEN");
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_ALLOC_PD;
    if (raw_call(s, &q, &rsp, -1) != 0)
        die("ALLOC_PD");
    const uint32_t raw_pd = rsp.u.created.handle;
    /* Spare memory of its own for the regions: mapped, so each registration is legal. */
    const size_t len = 4 * 4096;
    uint8_t *spare = mmap(NULL, 4 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (spare == MAP_FAILED)
        die("mmap");
    int pipefd[2];
    if (pipe(pipefd))
        die("pipe");
    struct {
        const char *what;
        int fd;
        uint64_t base, share_len, addr;
    } attempts[] = {
        {"an unsealed memfd", make_memfd(len, 0), (uintptr_t)spare, len, (uintptr_t)spare},
        {"a memfd shorter than claimed", make_memfd(4096, 1), (uintptr_t)spare, len,
         (uintptr_t)spare},
        {"a pipe", pipefd[0], (uintptr_t)spare, len, (uintptr_t)spare},
        {"a range that does not cover the region", make_memfd(len, 1), (uintptr_t)spare + len,
         len, (uintptr_t)spare},
        /* Windows are per device context: one that this connection's daemon side accepts
         * (the memfd is well formed; that the process does not map it harms only itself)... */
        {NULL, make_memfd(len, 1), (uintptr_t)spare + 2 * len, len, (uintptr_t)spare + 2 * len},
        /* ...and one overlapping it at another base. */
        {"a range overlapping another window", make_memfd(len, 1), (uintptr_t)spare + 2 * len + 4096,
         len, (uintptr_t)spare + 2 * len + 4096},
    };
    for (size_t i = 0; i < sizeof(attempts) / sizeof(attempts[0]); ++i) {
        memset(&q, 0, sizeof(q));
        q.op = CNUAS_OP_REG_MR;
        q.u.reg_mr.pd = raw_pd;
        q.u.reg_mr.access = IBV_ACCESS_LOCAL_WRITE;
        q.u.reg_mr.addr = attempts[i].addr;
        q.u.reg_mr.length = len;
        q.u.reg_mr.iova = attempts[i].addr;
        q.u.reg_mr.share_base = attempts[i].base;
        q.u.reg_mr.share_len = attempts[i].share_len;
        const int err = raw_call(s, &q, &rsp, attempts[i].fd);
        if (err != 0) {
            printf("%s: registration with %s answered %d, expected it registered\n", name,
                   attempts[i].what ? attempts[i].what : "a well-formed window", err);
            return 1;
        }
        close(attempts[i].fd);
    }
    close(pipefd[1]);
    close(s);
    if (read_back(name, r))
        return 1;
    printf("%s: refused as expected (5 windows refused, the registrations kept, the region "
           "still served)\n", name);
    return 0;
}

static int fork_case(const char *name, const struct wire *r)
{
    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        memset(region, 0x5A, kRegion); /* its own copy, after fork */
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!intact(region, 2 * kRegion)) {
        printf("%s: the child's writes reached the parent's region\n", name);
        return 1;
    }
    if (read_back(name, r))
        return 1;
    printf("%s: refused as expected (the child's writes stayed its own; the parent's region "
           "still served)\n", name);
    return 0;
}

static int run_case(const char *name, const struct wire *r)
{
    if (!strcmp(name, "bad-windows"))
        return bad_windows(name, r);
    if (!strcmp(name, "fork"))
        return fork_case(name, r);
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
