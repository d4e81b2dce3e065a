/*
 * Garbage on the emulated HCA's control socket, for the emulation tests (tests/test-emu-verbs.cc):
 * a process that speaks the protocol of host/abi/cnuas-hca-abi.h as badly as it can, to check
 * that the daemon answers every request (an error is an answer), closes only connections that
 * break the framing, and stays up for the next process.
 *
 *   hca-control-garbage [REQUESTS [SEED]]        (defaults 3000 and 1)
 *
 * Connects to $CNUAS_HCA_SOCKET (set by `cnuas exec`), opens a device context, then sends
 * REQUESTS requests drawn from a generator seeded with SEED (the same run again for the same
 * seed): every operation and numbers past the table; fields at their edges (0, 1, -1, 2^31,
 * lengths of terabytes) or random; handles from earlier answers (of the right kind or another)
 * or made up; memory regions over its own pages, past them or nowhere; QP and SRQ attributes as
 * random bytes, or a sensible RESET -> INIT -> RTR -> RTS walk; a descriptor passed with
 * requests that take none. The data path too: it maps the shared memory of QPs, SRQs and CQs it
 * made, writes garbage work requests into their rings (random bytes, or headers with edge
 * opcodes, SGE counts and keys over its own memory), sets producer and consumer indices to
 * plausible or absurd values and rings the doorbell. Every so often it drops the connection
 * with its objects alive, opens a fresh one and sends a request before OPEN, or sends a
 * datagram one byte short or eight bytes long. Rules checked:
 *   - a well-framed request is answered by one datagram of the answer's size naming its op;
 *   - a datagram of the wrong size ends the connection (the daemon counts it as malformed);
 *   - no answer takes longer than 10 s (no hang);
 *   - after all of it a fresh connection opens a context and queries the device.
 * Prints one line "garbage: ..." with the counts and "daemon alive" and exits 0, or says what
 * broke and exits 1.
 */
#define _GNU_SOURCE
#include "host/abi/cnuas-hca-abi.h"
#include "tests/peers/garbage-util.h"

#include <sys/eventfd.h>
#include <sys/mman.h>

enum { kKinds = 8, kKeep = 32, kOwnBytes = 1 << 20 };

/* What a handle names; NONE for made-up numbers. */
enum kind { PD, MR, CHANNEL, CQ, QP, SRQ, AH, NONE };

static uint32_t handles[kKinds][kKeep];
static uint32_t counts[kKinds];
static void remember(enum kind k, uint32_t h)
{
    handles[k][counts[k] < kKeep ? counts[k]++ : below(kKeep)] = h;
}
static void forget_all(void) { memset(counts, 0, sizeof(counts)); }
/* A handle of kind k if there is one, often; one of another kind, or a made-up number. */
static uint32_t handle_of(enum kind k)
{
    const uint32_t r = below(10);
    if (r < 7 && counts[k])
        return handles[k][below(counts[k])];
    if (r < 8) {
        const enum kind other = (enum kind)below(NONE);
        if (counts[other])
            return handles[other][below(counts[other])];
    }
    return edgy32();
}

static uint8_t *own;      /* kOwnBytes of this process's memory, for legal-looking regions */
static int doorbell = -1; /* this connection's doorbell (an eventfd the daemon watches) */

/* Shared memory of the connection's QPs, SRQs and CQs, mapped to scribble on. */
enum { kMaps = 16 };
static struct mapping {
    uint8_t *base;
    size_t bytes;
    enum { MAP_QP, MAP_SRQ, MAP_CQ } what;
    struct cnuas_hca_wq_layout layout; /* QP and SRQ */
} maps[kMaps];
static int nmaps;
static long scribbles;

static void unmap_all(void)
{
    for (int i = 0; i < nmaps; ++i)
        munmap(maps[i].base, maps[i].bytes);
    nmaps = 0;
}

static int open_socket(void) { return garbage_connect(CNUAS_HCA_SOCKET_ENV); }

static int call_fd(int s, const void *q, size_t len, struct cnuas_hca_resp *r, int fd,
                   int *got_fd)
{
    return garbage_call(s, q, len, r, sizeof(*r), fd, got_fd);
}

static int call(int s, const void *q, size_t len, struct cnuas_hca_resp *r, int fd)
{
    return call_fd(s, q, len, r, fd, NULL);
}

static int open_context(int s)
{
    struct cnuas_hca_req q;
    struct cnuas_hca_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_OPEN;
    q.u.open.abi_version = CNUAS_HCA_ABI_VERSION;
    unmap_all();
    if (doorbell >= 0)
        close(doorbell);
    doorbell = eventfd(0, EFD_CLOEXEC);
    const int got = call(s, &q, sizeof(q), &r, doorbell);
    return got == 1 && r.err == 0;
}

/* Ends connection *s and opens a fresh one with a context, forgetting the old one's objects;
 * ends the program, saying so, when the daemon will not open it. */
static void reconnect(int *s, const char *after)
{
    close(*s);
    forget_all();
    *s = open_socket();
    if (!open_context(*s)) {
        printf("garbage: OPEN failed %s\n", after);
        exit(1);
    }
}

/* Keeps the shared memory of a QP, SRQ or CQ just made, to scribble on later. */
static void keep_mapping(int fd, size_t bytes, int what, const struct cnuas_hca_wq_layout *l)
{
    if (fd < 0 || bytes == 0 || bytes > (64u << 20) || nmaps == kMaps)
        return;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return;
    maps[nmaps].base = p;
    maps[nmaps].bytes = bytes;
    maps[nmaps].what = what;
    if (l)
        maps[nmaps].layout = *l;
    nmaps++;
}

/* Garbage into one ring of `slots` slots of `stride` bytes at `offset`: whole random slots, or
 * send-WQE headers with edge values and SGEs over this process's memory. */
static void scribble_ring(struct mapping *m, uint32_t offset, uint32_t stride, uint32_t slots,
                          int send)
{
    if (!slots || !stride || offset > m->bytes || (uint64_t)stride * slots > m->bytes - offset)
        return; /* a layout that does not fit the mapping: not ours to trust */
    for (uint32_t k = 0, n = 1 + below(4); k < n; ++k) {
        uint8_t *slot = m->base + offset + (uint64_t)below(slots) * stride;
        if (below(2)) {
            random_bytes(slot, stride);
            continue;
        }
        memset(slot, 0, stride);
        const size_t head = send ? sizeof(struct cnuas_hca_send_wqe)
                                 : sizeof(struct cnuas_hca_recv_wqe);
        if (stride < head)
            continue;
        uint32_t nsge = below(2) ? below(5) : edgy32();
        if (send) {
            struct cnuas_hca_send_wqe w;
            random_bytes(&w, sizeof(w));
            w.opcode = below(2) ? below(12) : edgy32();
            w.send_flags = below(2) ? below(16) : edgy32();
            w.num_sge = nsge;
            w.inline_len = below(3) ? 0 : edgy32();
            w.remote_addr = below(2) ? (uintptr_t)own : edgy64();
            w.ah = handle_of(AH);
            memcpy(slot, &w, sizeof(w));
        } else {
            struct cnuas_hca_recv_wqe w = {rnd(), nsge, 0};
            memcpy(slot, &w, sizeof(w));
        }
        const uint32_t room = (uint32_t)((stride - head) / sizeof(struct cnuas_hca_sge));
        for (uint32_t i = 0; i < room && i < (nsge < 8 ? nsge : 8); ++i) {
            struct cnuas_hca_sge g = {(uintptr_t)own + below(kOwnBytes),
                                      below(2) ? below(8192) : edgy32(), handle_of(MR)};
            memcpy(slot + head + i * sizeof(g), &g, sizeof(g));
        }
    }
}

/* One scribble on a mapping kept, then the doorbell. */
static void scribble(void)
{
    if (!nmaps)
        return;
    struct mapping *m = &maps[below(nmaps)];
    struct cnuas_hca_index *idx = (struct cnuas_hca_index *)m->base;
    const size_t heads = m->bytes / sizeof(*idx);
    if (m->what == MAP_CQ) {
        /* The indices the process owns: cons, arm_seq, arm_solicited, sleepers (1, 2, 3, 5). */
        static const int owned[] = {1, 2, 3, 5};
        const int i = owned[below(4)];
        if ((size_t)i < heads)
            __atomic_store_n(&idx[i].value, below(2) ? idx[i].value + below(4) : edgy32(),
                             __ATOMIC_RELEASE);
    } else {
        const struct cnuas_hca_wq_layout *l = &m->layout;
        const int sq = m->what == MAP_QP && below(2);
        if (sq)
            scribble_ring(m, l->sq_offset, l->sq_stride, l->sq_slots, 1);
        else
            scribble_ring(m, l->rq_offset, l->rq_stride, l->rq_slots, 0);
        /* The producer index: a plausible step, or anything. QP: sq_prod 0, rq_prod 2; SRQ:
         * rq_prod 0. */
        const int i = m->what == MAP_SRQ ? 0 : (sq ? 0 : 2);
        const uint32_t slots = sq ? l->sq_slots : l->rq_slots;
        if ((size_t)i < heads)
            __atomic_store_n(&idx[i].value,
                             below(3) ? idx[i].value + 1 + below(slots ? slots : 1) : edgy32(),
                             __ATOMIC_RELEASE);
    }
    const uint64_t one = 1;
    if (write(doorbell, &one, sizeof(one)) != sizeof(one))
        return;
    scribbles++;
}

/* One request of op `op` with garbage in it; *fd set when one should go with it. */
static void make_request(struct cnuas_hca_req *q, uint32_t op, int *fd)
{
    memset(q, 0, sizeof(*q));
    q->op = op;
    if (below(20) == 0)
        q->reserved = edgy32();
    switch (op) {
    case CNUAS_OP_OPEN:
        q->u.open.abi_version = below(2) ? CNUAS_HCA_ABI_VERSION : edgy32();
        *fd = below(2) ? eventfd(0, EFD_CLOEXEC) : -1;
        break;
    case CNUAS_OP_QUERY_PORT:
    case CNUAS_OP_QUERY_GID:
    case CNUAS_OP_QUERY_PKEY:
        q->u.query.port_num = below(3) ? 1 : edgy32();
        q->u.query.index = edgy32();
        break;
    case CNUAS_OP_DEALLOC_PD: q->u.destroy.handle = handle_of(PD); break;
    case CNUAS_OP_DEREG_MR: q->u.destroy.handle = handle_of(MR); break;
    case CNUAS_OP_DESTROY_COMP_CHANNEL: q->u.destroy.handle = handle_of(CHANNEL); break;
    case CNUAS_OP_DESTROY_CQ: q->u.destroy.handle = handle_of(CQ); break;
    case CNUAS_OP_DESTROY_QP: q->u.destroy.handle = handle_of(QP); break;
    case CNUAS_OP_DESTROY_SRQ: q->u.destroy.handle = handle_of(SRQ); break;
    case CNUAS_OP_DESTROY_AH: q->u.destroy.handle = handle_of(AH); break;
    case CNUAS_OP_ATTACH_MCAST:
    case CNUAS_OP_DETACH_MCAST:
        q->u.mcast.qp = handle_of(QP);
        q->u.mcast.lid = (uint16_t)(below(2) ? 0xC000 + below(4) : edgy32());
        for (unsigned i = 0; i < sizeof(q->u.mcast.gid); ++i)
            q->u.mcast.gid[i] = (uint8_t)below(256);
        if (below(2))
            q->u.mcast.gid[0] = 0xFF; /* a multicast GID, half the time */
        break;
    case CNUAS_OP_REG_MR: {
        q->u.reg_mr.pd = handle_of(PD);
        q->u.reg_mr.access = below(2) ? below(16) : edgy32();
        const uint32_t where = below(4);
        if (where < 2) { /* over its own pages, sometimes running past them */
            const uint64_t off = below(kOwnBytes);
            q->u.reg_mr.addr = (uintptr_t)own + off;
            q->u.reg_mr.length = where == 0 ? 1 + below(kOwnBytes - (uint32_t)off) : edgy64();
        } else {
            q->u.reg_mr.addr = edgy64();
            q->u.reg_mr.length = edgy64();
        }
        q->u.reg_mr.iova = below(2) ? q->u.reg_mr.addr : edgy64();
        if (below(8) == 0) { /* a shared window: made up, and a memfd of some size */
            q->u.reg_mr.share_base = below(2) ? q->u.reg_mr.addr : edgy64();
            q->u.reg_mr.share_len = edgy64();
            *fd = memfd_create("garbage", MFD_CLOEXEC | MFD_ALLOW_SEALING);
            if (*fd >= 0 && ftruncate(*fd, 4096 * (1 + below(4))) != 0) {
                close(*fd);
                *fd = -1;
            }
        }
        break;
    }
    case CNUAS_OP_CREATE_CQ:
        q->u.create_cq.cookie = rnd();
        q->u.create_cq.cqe = below(2) ? (int32_t)(1 + below(256)) : (int32_t)edgy32();
        q->u.create_cq.channel = below(2) ? 0 : handle_of(CHANNEL);
        q->u.create_cq.comp_vector = (int32_t)(below(2) ? 0 : edgy32());
        break;
    case CNUAS_OP_CREATE_QP:
        q->u.create_qp.cookie = rnd();
        q->u.create_qp.pd = handle_of(PD);
        q->u.create_qp.send_cq = handle_of(CQ);
        q->u.create_qp.recv_cq = handle_of(CQ);
        q->u.create_qp.srq = below(3) ? 0 : handle_of(SRQ);
        q->u.create_qp.qp_type = below(2) ? 2 + below(3) /* RC, UC, UD */ : edgy32();
        q->u.create_qp.sq_sig_all = edgy32();
        if (below(2)) {
            q->u.create_qp.cap.max_send_wr = 1 + below(64);
            q->u.create_qp.cap.max_recv_wr = 1 + below(64);
            q->u.create_qp.cap.max_send_sge = 1 + below(4);
            q->u.create_qp.cap.max_recv_sge = 1 + below(4);
            q->u.create_qp.cap.max_inline_data = below(256);
        } else {
            q->u.create_qp.cap.max_send_wr = edgy32();
            q->u.create_qp.cap.max_recv_wr = edgy32();
            q->u.create_qp.cap.max_send_sge = edgy32();
            q->u.create_qp.cap.max_recv_sge = edgy32();
            q->u.create_qp.cap.max_inline_data = edgy32();
        }
        break;
    case CNUAS_OP_MODIFY_QP:
    case CNUAS_OP_QUERY_QP: {
        q->u.modify_qp.handle = handle_of(QP);
        struct cnuas_hca_qp_attr *a = &q->u.modify_qp.attr;
        if (below(2)) {
            random_bytes(a, sizeof(*a));
            q->u.modify_qp.attr_mask = edgy32();
        } else {
            /* A plausible step of the usual walk (enum ibv_qp_attr_mask's bits), sometimes
             * with random bits flipped. INIT: STATE, PKEY_INDEX, PORT, ACCESS_FLAGS. RTR:
             * STATE, AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER. RTS:
             * STATE, TIMEOUT, RETRY_CNT, RNR_RETRY, SQ_PSN, MAX_QP_RD_ATOMIC. */
            static const uint32_t masks[] = {0x1 | 0x10 | 0x20 | 0x8,
                                             0x1 | 0x80 | 0x100 | 0x100000 | 0x1000 | 0x20000 |
                                                 0x8000,
                                             0x1 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x2000};
            const uint32_t step = below(3);
            a->qp_state = 1 + step;
            a->port_num = 1;
            a->path_mtu = 1 + below(5);
            a->dest_qp_num = edgy32();
            a->max_dest_rd_atomic = (uint8_t)below(32);
            a->max_rd_atomic = (uint8_t)below(32);
            a->timeout = (uint8_t)below(32);
            a->retry_cnt = (uint8_t)below(8);
            a->rnr_retry = (uint8_t)below(8);
            a->ah_attr.dlid = (uint16_t)below(8);
            a->ah_attr.port_num = 1;
            a->ah_attr.is_global = (uint8_t)below(2);
            a->ah_attr.sgid_index = (uint8_t)below(4);
            q->u.modify_qp.attr_mask = masks[step] ^ (below(4) ? 0 : edgy32());
        }
        break;
    }
    case CNUAS_OP_CREATE_SRQ:
        q->u.create_srq.cookie = rnd();
        q->u.create_srq.pd = handle_of(PD);
        q->u.create_srq.max_wr = below(2) ? 1 + below(64) : edgy32();
        q->u.create_srq.max_sge = below(2) ? 1 + below(4) : edgy32();
        q->u.create_srq.srq_limit = edgy32();
        break;
    case CNUAS_OP_MODIFY_SRQ:
    case CNUAS_OP_QUERY_SRQ:
        q->u.modify_srq.handle = handle_of(SRQ);
        q->u.modify_srq.attr_mask = edgy32();
        q->u.modify_srq.max_wr = edgy32();
        q->u.modify_srq.srq_limit = edgy32();
        break;
    case CNUAS_OP_CREATE_AH:
        q->u.create_ah.pd = handle_of(PD);
        random_bytes(&q->u.create_ah.attr, sizeof(q->u.create_ah.attr));
        if (below(2)) {
            q->u.create_ah.attr.port_num = 1;
            q->u.create_ah.attr.sgid_index = (uint8_t)below(4);
        }
        break;
    default: /* ALLOC_PD, CREATE_COMP_CHANNEL, QUERY_DEVICE, unknown ops: random tail */
        if (below(2))
            random_bytes(&q->u, sizeof(q->u));
        break;
    }
    if (*fd < 0 && below(25) == 0)
        *fd = eventfd(0, EFD_CLOEXEC); /* a descriptor nobody asked for */
}

/* The kind of handle a successful answer to op creates. */
static enum kind created(uint32_t op, const struct cnuas_hca_resp *r, uint32_t *h)
{
    switch (op) {
    case CNUAS_OP_ALLOC_PD: *h = r->u.created.handle; return PD;
    case CNUAS_OP_CREATE_COMP_CHANNEL: *h = r->u.created.handle; return CHANNEL;
    case CNUAS_OP_CREATE_AH: *h = r->u.created.handle; return AH;
    case CNUAS_OP_REG_MR: *h = r->u.mr.handle; return MR;
    case CNUAS_OP_CREATE_CQ: *h = r->u.cq.handle; return CQ;
    case CNUAS_OP_CREATE_QP: *h = r->u.qp.handle; return QP;
    case CNUAS_OP_CREATE_SRQ: *h = r->u.qp.handle; return SRQ;
    default: return NONE;
    }
}

int main(int argc, char **argv)
{
    const long requests = argc > 1 ? atol(argv[1]) : 3000;
    garbage_seed(argc > 2 ? strtoull(argv[2], NULL, 0) : 1);
    own = mmap(NULL, kOwnBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (own == MAP_FAILED) {
        printf("garbage: mmap failed\n");
        return 1;
    }
    memset(own, 0x5A, kOwnBytes);
    long answered = 0, errors = 0, created_objects = 0, malformed = 0, malformed_closed = 0;
    long daemon_closed = 0, reopened = 0, before_open = 0;
    int s = open_socket();
    if (!open_context(s)) {
        printf("garbage: the first OPEN failed\n");
        return 1;
    }
    for (long i = 0; i < requests; ++i) {
        const uint32_t pick = below(100);
        if (pick == 0) { /* drop everything, start over */
            close(s);
            forget_all();
            s = open_socket();
            reopened++;
            if (below(2)) { /* a request before OPEN: answered with an error */
                struct cnuas_hca_req q;
                struct cnuas_hca_resp r;
                int fd = -1;
                make_request(&q, CNUAS_OP_ALLOC_PD + below(CNUAS_OP_COUNT - CNUAS_OP_ALLOC_PD),
                             &fd);
                const int got = call(s, &q, sizeof(q), &r, fd);
                if (fd >= 0)
                    close(fd);
                if (got < 0)
                    return 1;
                before_open++;
                if (got == 1 && r.err == 0) {
                    printf("garbage: op %u before OPEN was accepted\n", q.op);
                    return 1;
                }
                if (got == 0) {
                    close(s);
                    s = open_socket();
                }
            }
            if (!open_context(s)) {
                printf("garbage: OPEN on a fresh connection failed after %ld requests\n", i);
                return 1;
            }
            continue;
        }
        if (pick == 1) { /* a datagram of the wrong size: the connection must end */
            struct cnuas_hca_resp r;
            const int got = garbage_send_malformed(s, sizeof(struct cnuas_hca_req), &r, sizeof(r));
            if (got < 0)
                return 1;
            malformed++;
            if (got == 0)
                malformed_closed++;
            reconnect(&s, "after a malformed datagram");
            continue;
        }
        if (pick < 12) {
            scribble();
            continue;
        }
        /* Most requests name a real op; some name none. */
        const uint32_t op = below(12) ? 1 + below(CNUAS_OP_COUNT - 1) : edgy32();
        struct cnuas_hca_req q;
        struct cnuas_hca_resp r;
        int fd = -1;
        int shm = -1;
        make_request(&q, op, &fd);
        const int got = call_fd(s, &q, sizeof(q), &r, fd, &shm);
        if (fd >= 0)
            close(fd);
        if (got == 1 && r.err == 0 && r.op == q.op && below(2)) {
            if (op == CNUAS_OP_CREATE_QP)
                keep_mapping(shm, r.u.qp.layout.shm_bytes, MAP_QP, &r.u.qp.layout);
            else if (op == CNUAS_OP_CREATE_SRQ)
                keep_mapping(shm, r.u.qp.layout.shm_bytes, MAP_SRQ, &r.u.qp.layout);
            else if (op == CNUAS_OP_CREATE_CQ)
                keep_mapping(shm, r.u.cq.shm_bytes, MAP_CQ, NULL);
        }
        if (shm >= 0)
            close(shm);
        if (got < 0)
            return 1;
        if (got == 0) {
            /* The daemon may end a connection that misuses descriptors; it must not end one
             * for a request it can answer, but that is its call to make: counted, reopened. */
            daemon_closed++;
            reconnect(&s, "after the daemon closed a connection");
            continue;
        }
        if (r.op != q.op) {
            printf("garbage: the answer to op %u names op %u\n", q.op, r.op);
            return 1;
        }
        answered++;
        if (r.err != 0) {
            errors++;
            continue;
        }
        uint32_t h = 0;
        const enum kind k = created(op, &r, &h);
        if (k != NONE) {
            remember(k, h);
            created_objects++;
        }
    }
    close(s);
    /* The next process must still be served. */
    s = open_socket();
    struct cnuas_hca_req q;
    struct cnuas_hca_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_QUERY_DEVICE;
    if (!open_context(s) || call(s, &q, sizeof(q), &r, -1) != 1 || r.err != 0) {
        printf("garbage: the daemon no longer serves a fresh connection\n");
        return 1;
    }
    printf("garbage: %ld requests, %ld answered (%ld errors, %ld objects made), %ld before OPEN, "
           "%ld malformed datagrams (%ld ended their connection), %ld connections closed by the "
           "daemon, %ld dropped and reopened, %ld scribbles on shared queues, %d timeouts; "
           "daemon alive\n",
           requests, answered, errors, created_objects, before_open, malformed, malformed_closed,
           daemon_closed, reopened, scribbles, garbage_timeouts);
    return malformed_closed == malformed ? 0 : 1;
}
