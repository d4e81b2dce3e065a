/*
 * rsockets (rdma/rsocket.h) in Cnuas's librdmacm: stream sockets over RC queue pairs, built on
 * this library's rdma_cm and Cnuas's libibverbs exactly as librdmacm builds them on the kernel's,
 * so Debian's rstream and riostream (rdmacm-utils) and socket programs under librspreload run on
 * the emulated hosts, and what crosses the fabric is what a real rsocket sends.
 *
 * The protocol is librdmacm's rsocket protocol, version 1 (the facts below are read from
 * rdma-core's librdmacm/rsocket.c; the code is this project's own):
 *   - connection set-up through rdma_cm (RDMA_PS_TCP); the REQ's and REP's private data is a
 *     40-byte rs_conn_data: version 1, flags (bit 0: the sender is big-endian, bit 1: it offers
 *     an iomap area), the receive credits (big-endian 16 bits), the iomap area's size (scaled to
 *     8 bits), then two {addr, key, length} descriptors, big-endian: the sender's "target SGL"
 *     (two slots the peer writes its receive-buffer halves into) and the first half of its
 *     receive buffer;
 *   - data: RDMA WRITE WITH IMMEDIATE into the half of the peer's receive buffer it last
 *     offered, the immediate (big-endian) being (op << 29 | length), op 0 = data; the receiver
 *     posts zero-length receives to take the immediates;
 *   - credits: when half the receive buffer has been read, or half the receive queue consumed,
 *     the reader RDMA-WRITEs the free half's descriptor into the writer's next target-SGL slot
 *     with immediate (op 4 = SGL, data = the sequence number up to which the writer may send);
 *     without a free half, a zero-length WRITE WITH IMMEDIATE carries the sequence number alone;
 *   - control (op 7): 0 disconnect, 2 shutdown of the sender's writing side;
 *   - iomap (riomap/riowrite): a mapping is announced by an RDMA WRITE WITH IMMEDIATE (op 6,
 *     data = slot) of {offset, addr, key, length} into the peer's iomap area; riowrite is a plain
 *     RDMA WRITE into the mapped region.
 * The SGL and iomap entries are in the sender's byte order unless the two hosts differ (then
 * swapped), as in librdmacm.
 *
 * AF_INET6 sockets carry IPv4 as v4-mapped addresses (::ffff:a.b.c.d; :: and ::1 stand for
 * 0.0.0.0 and 127.0.0.1), since this rdma_cm is IPv4 only: a server that listens on :: (iperf3,
 * under librspreload) takes IPv4 clients as a dual-stack TCP socket does; another IPv6 address is
 * EADDRNOTAVAIL to bind and ENETUNREACH to connect to.
 *
 * What is not offered: datagram rsockets (SOCK_DGRAM, which librdmacm runs over UD QPs and a UDP
 * socket beside them; rsocket() fails with EOPNOTSUPP, and librspreload then gives the program a
 * kernel UDP socket), AF_IB addresses (EAFNOSUPPORT), keepalive messages (SO_KEEPALIVE and
 * TCP_KEEPIDLE are kept and read back; a reliable connection sees its peer go through rdma_cm's
 * DISCONNECTED instead), RDMA_ROUTE (EOPNOTSUPP), fork support (RDMAV_FORK_SAFE's copies), and
 * librdmacm's progress threads (a non-blocking connect or accept goes on when the program next
 * polls or uses the socket).
 *
 * A connected rsocket watches its rdma_cm ID, as librdmacm's connection service thread does (here
 * without a thread: whenever the socket is used or polled), so the reader of a crashed peer (its
 * DREQ) gets end of file and a writer ECONNRESET. Where this differs from librdmacm, on purpose:
 * poll says POLLHUP only once what the peer sent has been read (below, rs_poll_rs). As in
 * librdmacm, a second rconnect on a connected socket is 0.
 */
#define _GNU_SOURCE
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include <byteswap.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CNUAS_EXPORT __attribute__((visibility("default")))

/* ---- protocol constants (librdmacm rsocket.c, protocol version 1) ----------------------------- */

enum {
    RS_OP_DATA = 0,
    RS_OP_WRITE = 2, /* a riowrite's completion: never on the wire */
    RS_OP_SGL = 4,
    RS_OP_IOMAP_SGL = 6,
    RS_OP_CTRL = 7,
};
enum { RS_CTRL_DISCONNECT = 0, RS_CTRL_KEEPALIVE = 1, RS_CTRL_SHUTDOWN = 2 };

#define RS_MSG(op, data) (((uint32_t)(op) << 29) | (uint32_t)(data))
#define RS_MSG_OP(m) ((m) >> 29)
#define RS_MSG_DATA(m) ((m)&0x1FFFFFFFu)
#define RS_WR_RECV (1ull << 63) /* a receive's work request ID; a send's is its message */

#define RS_CONN_FLAG_NET (1 << 0)
#define RS_CONN_FLAG_IOMAP (1 << 1)
#define RS_SGL_SIZE 2
#define RS_QP_CTRL_SIZE 4 /* control messages in flight at once; a power of 2 */
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xFFFE
#define RS_SNDLOWAT 2048 /* a sender waits for this much room before it writes */
#define RS_OLAP_START_SIZE 2048 /* a large send goes out in writes of 2 KiB, doubling ... */
#define RS_MAX_TRANSFER 65536 /* ... up to 64 KiB, so the first bytes leave early */

/* librdmacm's defaults (its rsocket configuration files are not read here). */
#define RS_DEF_INLINE 64
#define RS_DEF_QSIZE 384
#define RS_DEF_MEM (1u << 17)

struct rs_sge {
    uint64_t addr;
    uint32_t key;
    uint32_t length;
};

struct rs_iomap {
    uint64_t offset;
    struct rs_sge sge;
};

struct rs_conn_data {
    uint8_t version;
    uint8_t flags;
    uint16_t credits; /* big-endian */
    uint8_t reserved[3];
    uint8_t target_iomap_size;
    struct rs_sge target_sgl; /* big-endian fields */
    struct rs_sge data_buf;   /* big-endian fields */
};

_Static_assert(sizeof(struct rs_sge) == 16, "rs_sge is 16 bytes on the wire");
_Static_assert(sizeof(struct rs_iomap) == 24, "rs_iomap is 24 bytes on the wire");
_Static_assert(sizeof(struct rs_conn_data) == 40, "rs_conn_data is 40 bytes on the wire");

/* ---- the socket ---------------------------------------------------------------------------- */

enum rs_state {
    RS_INIT = 0,
    RS_BOUND = 0x0001,
    RS_LISTENING = 0x0002,
    RS_OPENING = 0x0004,
    RS_RESOLVING_ADDR = RS_OPENING | 0x0010,
    RS_RESOLVING_ROUTE = RS_OPENING | 0x0020,
    RS_CONNECTING = RS_OPENING | 0x0040,
    RS_ACCEPTING = RS_OPENING | 0x0080,
    RS_CONNECTED = 0x0100,
    RS_WRITABLE = 0x0200,
    RS_READABLE = 0x0400,
    RS_CONNECT_RDWR = RS_CONNECTED | RS_READABLE | RS_WRITABLE,
    RS_CONNECT_ERROR = 0x0800,
    RS_DISCONNECTED = 0x1000,
    RS_ERROR = 0x2000,
};

struct rs_mapping {
    struct ibv_mr *mr;
    uint64_t offset;
    int slot; /* in the peer's iomap area; -1: a local mapping (not writable by the peer) */
    int announced;
    struct rs_mapping *next;
};

struct rsocket {
    int index; /* the descriptor the program holds: the rdma_cm event channel's */
    int family; /* AF_INET, or AF_INET6 carrying IPv4 (v4-mapped) addresses */
    struct rdma_event_channel *channel;
    struct rdma_cm_id *cm_id;
    pthread_mutex_t slock; /* one sender at a time */
    pthread_mutex_t rlock; /* one receiver at a time */
    pthread_mutex_t lock;  /* the state below; never held while sleeping */

    int state;
    int err;
    int fs_flags; /* O_NONBLOCK */
    int swap_sgl; /* the peer's byte order differs */
    int cm_gone;  /* rdma_cm said DISCONNECTED (or the connection failed) */
    struct sockaddr_in dst;

    /* options */
    uint64_t so_opts, tcp_opts, ipv6_opts;
    int keepalive_time;
    int ip_tos;
    uint32_t sbuf_size, rbuf_size;
    uint16_t sq_size, rq_size, sq_inline;
    uint16_t target_iomap_size;

    /* the queue pair's resources */
    struct ibv_comp_channel *comp;
    struct ibv_cq *cq;
    int cq_armed;
    unsigned unacked_events;
    uint8_t *sbuf;
    struct ibv_mr *smr;
    struct ibv_sge ssgl[2];
    uint32_t sbuf_bytes_avail;
    uint8_t *rbuf;
    struct ibv_mr *rmr;
    uint32_t rbuf_bytes_avail, rbuf_free_offset, rbuf_offset;
    void *target_area; /* target SGL slots, then the iomap area: the peer writes both */
    struct ibv_mr *target_mr;
    volatile struct rs_sge *target_sgl;
    volatile struct rs_iomap *target_iomap;
    int target_sge;

    /* sequence numbers and credits */
    uint32_t ctrl_seqno, ctrl_max_seqno;
    uint16_t sseq_no, sseq_comp, rseq_no, rseq_comp;
    int sqe_avail;
    struct rs_sge remote_sgl;   /* where our SGL updates go */
    struct rs_sge remote_iomap; /* where our mappings go */
    int remote_sge;

    /* received data not yet read: lengths of the writes, in order */
    uint32_t *rmsg;
    int rmsg_head, rmsg_tail;

    struct rs_mapping *mappings;
    struct rs_mapping **peer_slots; /* remote_iomap.length of them */
    int iomap_pending;
};

/* The descriptor table: index -> socket. */
static pthread_mutex_t g_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsocket **g_table;
static int g_table_size;

static int fail(int e)
{
    errno = e;
    return -1;
}

static struct rsocket *rs_lookup(int fd)
{
    struct rsocket *rs = NULL;
    pthread_mutex_lock(&g_table_lock);
    if (fd >= 0 && fd < g_table_size)
        rs = g_table[fd];
    pthread_mutex_unlock(&g_table_lock);
    return rs;
}

static int rs_insert(struct rsocket *rs)
{
    int fd = rs->index;
    pthread_mutex_lock(&g_table_lock);
    if (fd >= g_table_size) {
        int size = g_table_size ? g_table_size : 64;
        while (size <= fd)
            size *= 2;
        struct rsocket **t = realloc(g_table, sizeof(*t) * (size_t)size);
        if (!t) {
            pthread_mutex_unlock(&g_table_lock);
            return fail(ENOMEM);
        }
        memset(t + g_table_size, 0, sizeof(*t) * (size_t)(size - g_table_size));
        g_table = t;
        g_table_size = size;
    }
    g_table[fd] = rs;
    pthread_mutex_unlock(&g_table_lock);
    return 0;
}

static void rs_remove(struct rsocket *rs)
{
    pthread_mutex_lock(&g_table_lock);
    if (rs->index >= 0 && rs->index < g_table_size && g_table[rs->index] == rs)
        g_table[rs->index] = NULL;
    pthread_mutex_unlock(&g_table_lock);
}

static int set_nonblock(int fd, int on)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -1;
    flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
    return fcntl(fd, F_SETFL, flags);
}

/* librdmacm's 8-bit scale for the iomap size: values above 128 keep their top bits only. */
static int value_to_scale(int value, int bits)
{
    return value <= (1 << (bits - 1)) ? value : (1 << (bits - 1)) | (value >> bits);
}

static int scale_to_value(int value, int bits)
{
    return value <= (1 << (bits - 1)) ? value : (value & ~(1 << (bits - 1))) << bits;
}

static struct rsocket *rs_alloc(const struct rsocket *inherit)
{
    struct rsocket *rs = calloc(1, sizeof(*rs));
    if (!rs)
        return NULL;
    rs->index = -1;
    pthread_mutex_init(&rs->slock, NULL);
    pthread_mutex_init(&rs->rlock, NULL);
    pthread_mutex_init(&rs->lock, NULL);
    if (inherit) {
        rs->sbuf_size = inherit->sbuf_size;
        rs->rbuf_size = inherit->rbuf_size;
        rs->sq_inline = inherit->sq_inline;
        rs->sq_size = inherit->sq_size;
        rs->rq_size = inherit->rq_size;
        rs->target_iomap_size = inherit->target_iomap_size;
        rs->fs_flags = inherit->fs_flags;
        rs->family = inherit->family;
        rs->ipv6_opts = inherit->ipv6_opts;
        rs->so_opts = inherit->so_opts;
        rs->tcp_opts = inherit->tcp_opts;
        rs->keepalive_time = inherit->keepalive_time;
    } else {
        rs->sbuf_size = RS_DEF_MEM;
        rs->rbuf_size = RS_DEF_MEM;
        rs->sq_inline = RS_DEF_INLINE;
        rs->sq_size = RS_DEF_QSIZE;
        rs->rq_size = RS_DEF_QSIZE;
        rs->keepalive_time = 7200;
    }
    rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
    return rs;
}

static void rs_free(struct rsocket *rs)
{
    rs_remove(rs);
    while (rs->mappings) {
        struct rs_mapping *m = rs->mappings;
        rs->mappings = m->next;
        ibv_dereg_mr(m->mr);
        free(m);
    }
    free(rs->peer_slots);
    if (rs->cm_id && rs->cm_id->qp)
        rdma_destroy_qp(rs->cm_id);
    if (rs->smr)
        ibv_dereg_mr(rs->smr);
    if (rs->rmr)
        ibv_dereg_mr(rs->rmr);
    if (rs->target_mr)
        ibv_dereg_mr(rs->target_mr);
    if (rs->cq) {
        if (rs->unacked_events)
            ibv_ack_cq_events(rs->cq, rs->unacked_events);
        ibv_destroy_cq(rs->cq);
    }
    if (rs->comp)
        ibv_destroy_comp_channel(rs->comp);
    free(rs->sbuf);
    free(rs->rbuf);
    free(rs->target_area);
    free(rs->rmsg);
    if (rs->cm_id)
        rdma_destroy_id(rs->cm_id);
    if (rs->channel)
        rdma_destroy_event_channel(rs->channel);
    pthread_mutex_destroy(&rs->slock);
    pthread_mutex_destroy(&rs->rlock);
    pthread_mutex_destroy(&rs->lock);
    free(rs);
}

static int rs_nonblocking(const struct rsocket *rs, int flags)
{
    return (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* ---- the queue pair and its buffers --------------------------------------------------------- */

static int rs_create_ep(struct rsocket *rs)
{
    struct rdma_cm_id *id = rs->cm_id;
    if (rs->sq_size < RS_QP_MIN_SIZE)
        rs->sq_size = RS_QP_MIN_SIZE;
    if (rs->rq_size < RS_QP_MIN_SIZE)
        rs->rq_size = RS_QP_MIN_SIZE;
    if (rs->sbuf_size < 2 * RS_SNDLOWAT)
        rs->sbuf_size = 2 * RS_SNDLOWAT;
    if (rs->rbuf_size < 2 * RS_SNDLOWAT)
        rs->rbuf_size = 2 * RS_SNDLOWAT;

    rs->comp = ibv_create_comp_channel(id->verbs);
    if (!rs->comp)
        return -1;
    /* Read only after poll says so, possibly by several threads: never blocks. */
    if (set_nonblock(rs->comp->fd, 1))
        return -1;
    rs->cq = ibv_create_cq(id->verbs, rs->sq_size + rs->rq_size, rs, rs->comp, 0);
    if (!rs->cq)
        return -1;

    struct ibv_qp_init_attr qa;
    memset(&qa, 0, sizeof(qa));
    qa.qp_context = rs;
    qa.send_cq = rs->cq;
    qa.recv_cq = rs->cq;
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 1;
    qa.cap.max_send_wr = rs->sq_size;
    qa.cap.max_recv_wr = rs->rq_size;
    qa.cap.max_send_sge = 2;
    qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = rs->sq_inline;
    if (rdma_create_qp(id, NULL, &qa))
        return -1;
    rs->sq_inline = (uint16_t)qa.cap.max_inline_data;

    /* The send staging ring, and after it RS_QP_CTRL_SIZE slots for SGL updates when they cannot
     * go inline. */
    size_t sbytes = rs->sbuf_size + RS_QP_CTRL_SIZE * sizeof(struct rs_sge);
    rs->sbuf = calloc(1, sbytes);
    rs->rbuf = calloc(1, rs->rbuf_size);
    size_t tbytes = RS_SGL_SIZE * sizeof(struct rs_sge) +
                    (size_t)rs->target_iomap_size * sizeof(struct rs_iomap);
    rs->target_area = calloc(1, tbytes);
    rs->rmsg = calloc((size_t)rs->rq_size + 1, sizeof(*rs->rmsg));
    if (!rs->sbuf || !rs->rbuf || !rs->target_area || !rs->rmsg)
        return fail(ENOMEM);
    rs->smr = ibv_reg_mr(id->pd, rs->sbuf, sbytes, IBV_ACCESS_LOCAL_WRITE);
    rs->rmr = ibv_reg_mr(id->pd, rs->rbuf, rs->rbuf_size,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    rs->target_mr = ibv_reg_mr(id->pd, rs->target_area, tbytes,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!rs->smr || !rs->rmr || !rs->target_mr)
        return -1;
    rs->target_sgl = (volatile struct rs_sge *)rs->target_area;
    if (rs->target_iomap_size)
        rs->target_iomap = (volatile struct rs_iomap *)(rs->target_sgl + RS_SGL_SIZE);

    rs->ssgl[0].addr = rs->ssgl[1].addr = (uintptr_t)rs->sbuf;
    rs->ssgl[0].lkey = rs->ssgl[1].lkey = rs->smr->lkey;
    rs->sbuf_bytes_avail = rs->sbuf_size;
    /* The first half of the receive buffer is offered in the connection data; the second is
     * the first credit update's. */
    rs->rbuf_free_offset = rs->rbuf_size >> 1;
    rs->rbuf_bytes_avail = rs->rbuf_size >> 1;
    rs->sqe_avail = rs->sq_size - RS_QP_CTRL_SIZE;
    rs->rseq_comp = rs->rq_size >> 1;

    for (int i = 0; i < rs->rq_size; i++) {
        struct ibv_recv_wr wr, *bad;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id = RS_WR_RECV;
        if (ibv_post_recv(id->qp, &wr, &bad))
            return -1;
    }
    return 0;
}

static void rs_format_conn_data(const struct rsocket *rs, struct rs_conn_data *c)
{
    memset(c, 0, sizeof(*c));
    c->version = 1;
    c->flags = RS_CONN_FLAG_IOMAP | (__BYTE_ORDER == __BIG_ENDIAN ? RS_CONN_FLAG_NET : 0);
    c->credits = htobe16(rs->rq_size);
    c->target_iomap_size = (uint8_t)value_to_scale(rs->target_iomap_size, 8);
    c->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
    c->target_sgl.length = htobe32(RS_SGL_SIZE);
    c->target_sgl.key = htobe32(rs->target_mr->rkey);
    c->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
    c->data_buf.length = htobe32(rs->rbuf_size >> 1);
    c->data_buf.key = htobe32(rs->rmr->rkey);
}

/* The peer's connection data; 0, or -1 with EPROTO when it is not an rsocket's. */
static int rs_save_conn_data(struct rsocket *rs, const void *data, size_t len)
{
    struct rs_conn_data c;
    if (!data || len < sizeof(c))
        return fail(EPROTO);
    memcpy(&c, data, sizeof(c));
    if (c.version != 1)
        return fail(EPROTO);
    rs->remote_sgl.addr = be64toh(c.target_sgl.addr);
    rs->remote_sgl.length = be32toh(c.target_sgl.length);
    rs->remote_sgl.key = be32toh(c.target_sgl.key);
    if (rs->remote_sgl.length == 0 || rs->remote_sgl.length > 64)
        return fail(EPROTO);
    rs->remote_sge = 1; /* slot 0 of the peer's SGL holds what it offered here */
    rs->swap_sgl = ((c.flags & RS_CONN_FLAG_NET) != 0) != (__BYTE_ORDER == __BIG_ENDIAN);
    if (c.flags & RS_CONN_FLAG_IOMAP) {
        rs->remote_iomap.addr = rs->remote_sgl.addr + sizeof(struct rs_sge) * rs->remote_sgl.length;
        rs->remote_iomap.length = (uint32_t)scale_to_value(c.target_iomap_size, 8);
        rs->remote_iomap.key = rs->remote_sgl.key;
    }
    rs->target_sgl[0].addr = be64toh(c.data_buf.addr);
    rs->target_sgl[0].length = be32toh(c.data_buf.length);
    rs->target_sgl[0].key = be32toh(c.data_buf.key);
    rs->sseq_comp = be16toh(c.credits);
    return 0;
}

/* ---- posting -------------------------------------------------------------------------------- */

static int rs_post_write(struct rsocket *rs, struct ibv_sge *sgl, int nsge, uint32_t msg,
                         int with_imm, int flags, uint64_t addr, uint32_t rkey)
{
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = msg;
    wr.sg_list = sgl;
    wr.num_sge = nsge;
    wr.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    wr.send_flags = flags;
    if (with_imm)
        wr.imm_data = htobe32(msg);
    wr.wr.rdma.remote_addr = addr;
    wr.wr.rdma.rkey = rkey;
    int e = ibv_post_send(rs->cm_id->qp, &wr, &bad);
    return e ? fail(e) : 0;
}

/* A control message alone: a zero-length RDMA WRITE WITH IMMEDIATE. */
static int rs_post_msg(struct rsocket *rs, uint32_t msg)
{
    return rs_post_write(rs, NULL, 0, msg, 1, 0, 0, 0);
}

/* Copies `len` bytes of `buf` into the staging ring and fills `sgl` (one or two entries, the
 * ring's end and its start) for them; returns the number of entries. */
static int rs_stage(struct rsocket *rs, const void *buf, uint32_t len, struct ibv_sge *sgl)
{
    uint64_t end = (uintptr_t)rs->sbuf + rs->sbuf_size;
    uint32_t left = (uint32_t)(end - rs->ssgl[0].addr);
    if (len <= left) {
        memcpy((void *)(uintptr_t)rs->ssgl[0].addr, buf, len);
        sgl[0] = rs->ssgl[0];
        sgl[0].length = len;
        rs->ssgl[0].addr = len < left ? rs->ssgl[0].addr + len : (uintptr_t)rs->sbuf;
        return 1;
    }
    memcpy((void *)(uintptr_t)rs->ssgl[0].addr, buf, left);
    memcpy(rs->sbuf, (const uint8_t *)buf + left, len - left);
    sgl[0] = rs->ssgl[0];
    sgl[0].length = left;
    sgl[1] = rs->ssgl[1];
    sgl[1].addr = (uintptr_t)rs->sbuf;
    sgl[1].length = len - left;
    rs->ssgl[0].addr = (uintptr_t)rs->sbuf + (len - left);
    return 2;
}

static int rs_ctrl_avail(const struct rsocket *rs)
{
    return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

/* Gives the peer credit: the next free half of the receive buffer when there is one, else the
 * sequence number alone (the receive queue's half was consumed). */
static void rs_send_credits(struct rsocket *rs)
{
    rs->ctrl_seqno++;
    rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
    uint32_t msg = RS_MSG(RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
    if (rs->rbuf_bytes_avail >= (rs->rbuf_size >> 1)) {
        struct rs_sge sge;
        sge.addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset];
        sge.key = rs->rmr->rkey;
        sge.length = rs->rbuf_size >> 1;
        if (rs->swap_sgl) {
            sge.addr = bswap_64(sge.addr);
            sge.key = bswap_32(sge.key);
            sge.length = bswap_32(sge.length);
        }
        struct ibv_sge ib;
        int flags;
        if (rs->sq_inline >= sizeof(sge)) {
            ib.addr = (uintptr_t)&sge;
            ib.lkey = 0;
            flags = IBV_SEND_INLINE;
        } else {
            uint8_t *slot = rs->sbuf + rs->sbuf_size +
                            sizeof(sge) * (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));
            memcpy(slot, &sge, sizeof(sge));
            ib.addr = (uintptr_t)slot;
            ib.lkey = rs->smr->lkey;
            flags = 0;
        }
        ib.length = sizeof(sge);
        rs_post_write(rs, &ib, 1, msg, 1, flags,
                      rs->remote_sgl.addr + rs->remote_sge * sizeof(struct rs_sge),
                      rs->remote_sgl.key);
        rs->rbuf_bytes_avail -= rs->rbuf_size >> 1;
        rs->rbuf_free_offset += rs->rbuf_size >> 1;
        if (rs->rbuf_free_offset >= rs->rbuf_size)
            rs->rbuf_free_offset = 0;
        if (++rs->remote_sge == (int)rs->remote_sgl.length)
            rs->remote_sge = 0;
    } else {
        rs_post_msg(rs, msg);
    }
}

static void rs_update_credits(struct rsocket *rs)
{
    if ((rs->state & RS_CONNECTED) && rs_ctrl_avail(rs) &&
        (rs->rbuf_bytes_avail >= (rs->rbuf_size >> 1) ||
         (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0))
        rs_send_credits(rs);
}

/* ---- completions and rdma_cm events (rs->lock held) ------------------------------------------ */

static void rs_poll_cq(struct rsocket *rs)
{
    if (!rs->cq)
        return;
    struct ibv_wc wc;
    int received = 0;
    while (ibv_poll_cq(rs->cq, 1, &wc) > 0) {
        if (wc.wr_id & RS_WR_RECV) {
            if (wc.status != IBV_WC_SUCCESS)
                continue; /* flushed */
            received++;
            uint32_t msg = (wc.wc_flags & IBV_WC_WITH_IMM) ? be32toh(wc.imm_data) : 0;
            switch (RS_MSG_OP(msg)) {
            case RS_OP_SGL:
                rs->sseq_comp = (uint16_t)RS_MSG_DATA(msg);
                break;
            case RS_OP_IOMAP_SGL:
                break; /* the mapping is in the iomap area already */
            case RS_OP_CTRL:
                if (RS_MSG_DATA(msg) == RS_CTRL_DISCONNECT)
                    rs->state = RS_DISCONNECTED;
                else if (RS_MSG_DATA(msg) == RS_CTRL_SHUTDOWN)
                    rs->state = (rs->state & RS_WRITABLE) ? (rs->state & ~RS_READABLE)
                                                          : RS_DISCONNECTED;
                break;
            case RS_OP_DATA: {
                /* A peer that writes more than the half it was offered, or more writes than it
                 * had credit for, is not following the protocol: the connection ends (EPROTO)
                 * rather than the accounting going wrong. */
                int next = rs->rmsg_tail + 1 == rs->rq_size + 1 ? 0 : rs->rmsg_tail + 1;
                if (RS_MSG_DATA(msg) > (rs->rbuf_size >> 1) || next == rs->rmsg_head) {
                    rs->state = RS_ERROR;
                    rs->err = EPROTO;
                    break;
                }
                rs->rmsg[rs->rmsg_tail] = RS_MSG_DATA(msg);
                rs->rmsg_tail = next;
                break;
            }
            default:
                break; /* reserved operations: taken and ignored, as librdmacm does */
            }
        } else {
            uint32_t msg = (uint32_t)wc.wr_id;
            switch (RS_MSG_OP(msg)) {
            case RS_OP_SGL:
            case RS_OP_CTRL:
                rs->ctrl_max_seqno++;
                if (RS_MSG_OP(msg) == RS_OP_CTRL && RS_MSG_DATA(msg) == RS_CTRL_DISCONNECT)
                    rs->state = RS_DISCONNECTED;
                break;
            case RS_OP_IOMAP_SGL:
                rs->sqe_avail++;
                rs->sbuf_bytes_avail += sizeof(struct rs_iomap);
                break;
            default: /* data and riowrites */
                rs->sqe_avail++;
                rs->sbuf_bytes_avail += RS_MSG_DATA(msg);
                break;
            }
            if (wc.status != IBV_WC_SUCCESS && (rs->state & RS_CONNECTED)) {
                rs->state = RS_ERROR;
                rs->err = EIO;
            }
        }
    }
    if (rs->state & RS_CONNECTED) {
        while (received--) {
            struct ibv_recv_wr wr, *bad;
            memset(&wr, 0, sizeof(wr));
            wr.wr_id = RS_WR_RECV;
            int e = ibv_post_recv(rs->cm_id->qp, &wr, &bad);
            if (e) {
                rs->state = RS_ERROR;
                rs->err = e;
                break;
            }
        }
    }
}

/* Takes a completion event if one is there (the channel does not block). */
static void rs_take_cq_event(struct rsocket *rs)
{
    struct ibv_cq *cq;
    void *ctx;
    if (!rs->comp || ibv_get_cq_event(rs->comp, &cq, &ctx))
        return;
    rs->cq_armed = 0;
    if (++rs->unacked_events >= 64u) {
        ibv_ack_cq_events(rs->cq, rs->unacked_events);
        rs->unacked_events = 0;
    }
}

/* A connected socket's rdma_cm events, without waiting: a disconnect (the peer's DREQ) or an
 * error ends the connection for reading once what arrived has been read. */
static void rs_poll_cm(struct rsocket *rs)
{
    struct pollfd p = {rs->channel->fd, POLLIN, 0};
    while (!rs->cm_gone && poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
        struct rdma_cm_event *ev;
        int was_blocking = !(rs->fs_flags & O_NONBLOCK);
        if (was_blocking)
            set_nonblock(rs->channel->fd, 1);
        int r = rdma_get_cm_event(rs->channel, &ev);
        if (was_blocking)
            set_nonblock(rs->channel->fd, 0);
        if (r)
            return;
        enum rdma_cm_event_type t = ev->event;
        rdma_ack_cm_event(ev);
        if (t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_DEVICE_REMOVAL ||
            t == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
            rs->cm_gone = 1;
            /* What the peer wrote before it went is in the completion queue already (it waited
             * for its writes' acknowledgements before disconnecting). */
            rs_poll_cq(rs);
            if (rs->state & RS_CONNECTED)
                rs->state = RS_DISCONNECTED;
        }
    }
}

static void rs_progress(struct rsocket *rs)
{
    rs_update_credits(rs);
    rs_poll_cq(rs);
    if (rs->state & (RS_CONNECTED | RS_DISCONNECTED))
        rs_poll_cm(rs);
    rs_update_credits(rs);
}

/* ---- conditions ----------------------------------------------------------------------------- */

static int rs_can_send(const struct rsocket *rs)
{
    return rs->sqe_avail > 0 && rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
           rs->sseq_no != rs->sseq_comp && rs->target_sgl[rs->target_sge].length != 0;
}
static int rs_conn_can_send(const struct rsocket *rs)
{
    return rs_can_send(rs) || !(rs->state & RS_WRITABLE);
}
static int rs_conn_can_send_ctrl(const struct rsocket *rs)
{
    return rs_ctrl_avail(rs) || !(rs->state & RS_CONNECTED);
}
static int rs_have_rdata(const struct rsocket *rs)
{
    return rs->rmsg_head != rs->rmsg_tail;
}
static int rs_conn_have_rdata(const struct rsocket *rs)
{
    return rs_have_rdata(rs) || !(rs->state & RS_READABLE);
}
static int rs_conn_all_sends_done(const struct rsocket *rs)
{
    return ((int)(rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail ==
            rs->sq_size) ||
           !(rs->state & RS_CONNECTED);
}

/*
 * Waits, with rs->lock held on entry and on return, until `test` holds: completions and rdma_cm
 * events are taken as they come; the lock is dropped while sleeping, so a sender waiting for
 * credit does not keep a reader (whose reading gives the peer credit) from the queue. Returns 0,
 * or -1 with EWOULDBLOCK (nonblock) or EINTR.
 */
static int rs_wait(struct rsocket *rs, int nonblock, int (*test)(const struct rsocket *))
{
    for (;;) {
        rs_progress(rs);
        if (test(rs))
            return 0;
        if (nonblock)
            return fail(EWOULDBLOCK);
        if (!rs->cq_armed) {
            ibv_req_notify_cq(rs->cq, 0);
            rs->cq_armed = 1;
            continue; /* what completed before the arming was not signalled: look again */
        }
        struct pollfd p[2] = {{rs->comp->fd, POLLIN, 0}, {rs->channel->fd, POLLIN, 0}};
        int n = rs->cm_gone ? 1 : 2;
        pthread_mutex_unlock(&rs->lock);
        int r = poll(p, (nfds_t)n, -1);
        int e = errno;
        pthread_mutex_lock(&rs->lock);
        if (r < 0) {
            if (e == EINTR)
                return fail(EINTR);
            rs->state = RS_ERROR;
            rs->err = e;
            return fail(e);
        }
        if (p[0].revents & POLLIN)
            rs_take_cq_event(rs);
    }
}

/* ---- connecting ----------------------------------------------------------------------------- */

static int errno_of_status(int status, int otherwise)
{
    return status < 0 ? -status : (status > 0 ? status : otherwise);
}

/* Takes the next rdma_cm event of a socket being connected or accepted: 0 with *type, status and
 * private data copied; -1 with EAGAIN when non-blocking and none is there. */
static int rs_next_event(struct rsocket *rs, enum rdma_cm_event_type *type, int *status,
                         uint8_t *pdata, uint8_t *plen)
{
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(rs->channel, &ev))
        return -1;
    *type = ev->event;
    *status = ev->status;
    if (pdata && plen) {
        *plen = ev->param.conn.private_data_len;
        if (ev->param.conn.private_data && *plen)
            memcpy(pdata, ev->param.conn.private_data, *plen);
    }
    rdma_ack_cm_event(ev);
    return 0;
}

/* Drives a socket being connected (or accepted) as far as its events allow; 0 once connected,
 * else -1 with EINPROGRESS (non-blocking, not yet) or the failure. */
static int rs_do_connect(struct rsocket *rs)
{
    int nonblock = rs->fs_flags & O_NONBLOCK;
    for (;;) {
        if (rs->state & RS_CONNECTED)
            return 0;
        if (rs->state == RS_CONNECT_ERROR || rs->state == RS_ERROR ||
            rs->state == RS_DISCONNECTED)
            return fail(ENOTCONN);
        if (!(rs->state & RS_OPENING))
            return fail(EINVAL);
        enum rdma_cm_event_type type;
        int status = 0;
        uint8_t pdata[256];
        uint8_t plen = 0;
        if (rs_next_event(rs, &type, &status, pdata, &plen)) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return fail(EINPROGRESS);
            if (errno == EINTR && !nonblock)
                continue;
            rs->err = errno;
            rs->state = RS_CONNECT_ERROR;
            return -1;
        }
        int err = 0;
        switch (rs->state) {
        case RS_RESOLVING_ADDR:
            if (type == RDMA_CM_EVENT_ADDR_RESOLVED) {
                if (rdma_resolve_route(rs->cm_id, 2000))
                    err = errno;
                else
                    rs->state = RS_RESOLVING_ROUTE;
            } else if (type == RDMA_CM_EVENT_ADDR_ERROR) {
                err = errno_of_status(status, EHOSTUNREACH);
            }
            break;
        case RS_RESOLVING_ROUTE:
            if (type == RDMA_CM_EVENT_ROUTE_RESOLVED) {
                struct rs_conn_data cd;
                struct rdma_conn_param param;
                if (rs_create_ep(rs)) {
                    err = errno;
                    break;
                }
                rs_format_conn_data(rs, &cd);
                memset(&param, 0, sizeof(param));
                param.private_data = &cd;
                param.private_data_len = sizeof(cd);
                param.flow_control = 1;
                param.retry_count = 7;
                param.rnr_retry_count = 7;
                if (rdma_connect(rs->cm_id, &param))
                    err = errno;
                else
                    rs->state = RS_CONNECTING;
            } else if (type == RDMA_CM_EVENT_ROUTE_ERROR) {
                err = errno_of_status(status, EHOSTUNREACH);
            }
            break;
        case RS_CONNECTING:
            if (type == RDMA_CM_EVENT_ESTABLISHED) {
                if (rs_save_conn_data(rs, pdata, plen))
                    err = EPROTO; /* not an rsocket on the other side */
                else
                    rs->state = RS_CONNECT_RDWR;
            } else if (type == RDMA_CM_EVENT_REJECTED) {
                err = ECONNREFUSED;
            } else if (type == RDMA_CM_EVENT_UNREACHABLE) {
                err = ETIMEDOUT; /* the REQ's retries ran out */
            } else if (type == RDMA_CM_EVENT_CONNECT_ERROR) {
                err = errno_of_status(status, ETIMEDOUT);
            }
            break;
        case RS_ACCEPTING:
            if (type == RDMA_CM_EVENT_ESTABLISHED)
                rs->state = RS_CONNECT_RDWR;
            else if (type == RDMA_CM_EVENT_CONNECT_ERROR || type == RDMA_CM_EVENT_UNREACHABLE ||
                     type == RDMA_CM_EVENT_REJECTED || type == RDMA_CM_EVENT_DISCONNECTED)
                err = ECONNABORTED;
            break;
        default:
            break;
        }
        if (err) {
            rs->err = err;
            rs->state = RS_CONNECT_ERROR;
            if (err == EPROTO || err == ECONNABORTED)
                rdma_disconnect(rs->cm_id);
            return fail(err);
        }
    }
}

/* ---- addresses ------------------------------------------------------------------------------ */

/* The IPv4 address a program's address stands for: an AF_INET6 socket's v4-mapped address
 * (::ffff:a.b.c.d), its wildcard (::) and loopback (::1) as 0.0.0.0 and 127.0.0.1; another IPv6
 * address is not on this rdma_cm (IPv4 only): `v6_errno`. */
static int to_v4(const struct sockaddr *addr, socklen_t len, struct sockaddr_in *out, int v6_errno)
{
    memset(out, 0, sizeof(*out));
    out->sin_family = AF_INET;
    if (!addr)
        return fail(EINVAL);
    if (addr->sa_family == AF_INET) {
        if (len < sizeof(struct sockaddr_in))
            return fail(EINVAL);
        memcpy(out, addr, sizeof(*out));
        return 0;
    }
    if (addr->sa_family != AF_INET6)
        return fail(EAFNOSUPPORT);
    if (len < sizeof(struct sockaddr_in6))
        return fail(EINVAL);
    struct sockaddr_in6 a6;
    memcpy(&a6, addr, sizeof(a6));
    out->sin_port = a6.sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&a6.sin6_addr))
        memcpy(&out->sin_addr, &a6.sin6_addr.s6_addr[12], 4);
    else if (IN6_IS_ADDR_UNSPECIFIED(&a6.sin6_addr))
        out->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (IN6_IS_ADDR_LOOPBACK(&a6.sin6_addr))
        out->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else
        return fail(v6_errno);
    return 0;
}

/* An rdma_cm (IPv4) address as the socket's family gives it, truncated to *len as getsockname
 * does; *len becomes the full size (a NULL address with *len 0 asks only for the size). */
static int give_addr(const struct rsocket *rs, const struct sockaddr *src, struct sockaddr *dst,
                     socklen_t *len)
{
    if (!len)
        return fail(EFAULT);
    struct sockaddr_in v4;
    memset(&v4, 0, sizeof(v4));
    v4.sin_family = AF_INET;
    if (src && src->sa_family == AF_INET)
        memcpy(&v4, src, sizeof(v4));
    union {
        struct sockaddr_in v4;
        struct sockaddr_in6 v6;
    } out;
    socklen_t size;
    memset(&out, 0, sizeof(out));
    if (rs->family == AF_INET6) {
        out.v6.sin6_family = AF_INET6;
        out.v6.sin6_port = v4.sin_port;
        if (v4.sin_addr.s_addr != htonl(INADDR_ANY)) {
            out.v6.sin6_addr.s6_addr[10] = 0xff;
            out.v6.sin6_addr.s6_addr[11] = 0xff;
            memcpy(&out.v6.sin6_addr.s6_addr[12], &v4.sin_addr, 4);
        }
        size = sizeof(out.v6);
    } else {
        out.v4 = v4;
        size = sizeof(out.v4);
    }
    if (*len && !dst)
        return fail(EFAULT);
    memcpy(dst, &out, *len < size ? *len : size);
    *len = size;
    return 0;
}

/* ---- socket calls --------------------------------------------------------------------------- */

CNUAS_EXPORT int rsocket(int domain, int type, int protocol)
{
    int kind = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (kind != SOCK_STREAM || (protocol && protocol != IPPROTO_TCP))
        return fail(EOPNOTSUPP); /* datagram rsockets are not offered (above) */
    if (domain != AF_INET && domain != AF_INET6)
        return fail(domain == AF_IB ? EAFNOSUPPORT : EOPNOTSUPP);
    struct rsocket *rs = rs_alloc(NULL);
    if (!rs)
        return fail(ENOMEM);
    rs->family = domain;
    rs->channel = rdma_create_event_channel();
    if (!rs->channel) {
        int e = errno;
        rs_free(rs);
        /* No rdma_cm here (outside an emulated host): what librdmacm says without devices. */
        return fail(e == ENOENT || e == ECONNREFUSED ? ENODEV : e);
    }
    if (rdma_create_id(rs->channel, &rs->cm_id, rs, RDMA_PS_TCP)) {
        int e = errno;
        rs_free(rs);
        return fail(e);
    }
    rs->index = rs->channel->fd;
    if (type & SOCK_CLOEXEC)
        fcntl(rs->index, F_SETFD, FD_CLOEXEC);
    if (type & SOCK_NONBLOCK) {
        rs->fs_flags |= O_NONBLOCK;
        set_nonblock(rs->index, 1);
    }
    if (rs_insert(rs)) {
        rs_free(rs);
        return -1;
    }
    return rs->index;
}

CNUAS_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    struct sockaddr_in v4;
    if (to_v4(addr, addrlen, &v4, EADDRNOTAVAIL))
        return -1;
    if (rdma_bind_addr(rs->cm_id, (struct sockaddr *)&v4))
        return -1;
    rs->state = RS_BOUND;
    return 0;
}

CNUAS_EXPORT int rlisten(int socket, int backlog)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    if (rs->state == RS_LISTENING)
        return 0;
    if (rdma_listen(rs->cm_id, backlog))
        return -1;
    rs->state = RS_LISTENING;
    return 0;
}

CNUAS_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    struct rsocket *ls = rs_lookup(socket);
    if (!ls)
        return fail(EBADF);
    if (ls->state != RS_LISTENING)
        return fail(EINVAL);
    for (;;) {
        struct rdma_cm_event *ev;
        pthread_mutex_lock(&ls->rlock);
        int r = rdma_get_cm_event(ls->channel, &ev);
        pthread_mutex_unlock(&ls->rlock);
        if (r) {
            if (errno == EINTR && !(ls->fs_flags & O_NONBLOCK))
                continue;
            return -1; /* EAGAIN when non-blocking and nobody is asking */
        }
        if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
            rdma_ack_cm_event(ev);
            continue;
        }
        struct rdma_cm_id *id = ev->id;
        struct rdma_conn_param req = ev->param.conn;
        uint8_t pdata[256];
        uint8_t plen = req.private_data_len;
        if (req.private_data && plen)
            memcpy(pdata, req.private_data, plen);
        rdma_ack_cm_event(ev);

        struct rsocket *rs = rs_alloc(ls);
        if (!rs) {
            rdma_reject(id, NULL, 0);
            rdma_destroy_id(id);
            return fail(ENOMEM);
        }
        rs->cm_id = id;
        id->context = rs;
        rs->channel = rdma_create_event_channel();
        if (!rs->channel || rdma_migrate_id(id, rs->channel)) {
            int e = errno;
            rdma_reject(id, NULL, 0);
            rs_free(rs);
            return fail(e);
        }
        rs->index = rs->channel->fd;
        if (plen < sizeof(struct rs_conn_data) || pdata[0] != 1 || rs_create_ep(rs) ||
            rs_save_conn_data(rs, pdata, plen)) {
            /* Not an rsocket asking (or no resources): refused, and the listener goes on. */
            rdma_reject(id, NULL, 0);
            rs_free(rs);
            continue;
        }
        struct rs_conn_data cd;
        rs_format_conn_data(rs, &cd);
        struct rdma_conn_param param;
        memset(&param, 0, sizeof(param));
        param.responder_resources = req.responder_resources;
        param.initiator_depth = req.initiator_depth;
        param.flow_control = req.flow_control;
        param.retry_count = req.retry_count;
        param.rnr_retry_count = req.rnr_retry_count;
        param.private_data = &cd;
        param.private_data_len = sizeof(cd);
        if (rdma_accept(id, &param)) {
            rdma_reject(id, NULL, 0);
            rs_free(rs);
            continue;
        }
        rs->state = RS_ACCEPTING;
        if (rs->fs_flags & O_NONBLOCK)
            set_nonblock(rs->index, 1);
        if (rs_insert(rs)) {
            rs_free(rs);
            return -1;
        }
        if (!(rs->fs_flags & O_NONBLOCK)) {
            /* As librdmacm's synchronous accept: back once the RTU has come. A client that gave
             * up is not this listener's error: the next request is taken. */
            pthread_mutex_lock(&rs->slock);
            int c = rs_do_connect(rs);
            pthread_mutex_unlock(&rs->slock);
            if (c) {
                rs_free(rs);
                continue;
            }
        }
        if (addr && addrlen)
            rgetpeername(rs->index, addr, addrlen);
        return rs->index;
    }
}

CNUAS_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    pthread_mutex_lock(&rs->slock);
    int ret;
    if (rs->state == RS_INIT || rs->state == RS_BOUND) {
        if (to_v4(addr, addrlen, &rs->dst, ENETUNREACH)) {
            ret = -1;
            goto out;
        }
        if (rdma_resolve_addr(rs->cm_id, NULL, (struct sockaddr *)&rs->dst, 2000)) {
            rs->err = errno;
            rs->state = RS_CONNECT_ERROR;
            ret = -1;
            goto out;
        }
        rs->state = RS_RESOLVING_ADDR;
    } else if (rs->state == RS_LISTENING) {
        ret = fail(EINVAL);
        goto out;
    }
    /* Again on a socket being connected: how far it got (EINPROGRESS until it is done, then 0),
     * as librdmacm answers. */
    ret = rs_do_connect(rs);
out:
    pthread_mutex_unlock(&rs->slock);
    return ret;
}

/* A socket still opening is driven first, as librdmacm does on the first send or receive. */
static int rs_ready_to_transfer(struct rsocket *rs)
{
    if (!(rs->state & RS_OPENING))
        return 0;
    pthread_mutex_lock(&rs->slock);
    int r = rs_do_connect(rs);
    pthread_mutex_unlock(&rs->slock);
    if (r && errno == EINPROGRESS)
        errno = EAGAIN;
    return r;
}

/* Waits (rs->lock held) until the socket may post another write: a send queue entry, room in the
 * staging ring and, for data, the peer's credit. */
static int rs_wait_send_room(struct rsocket *rs, int flags)
{
    if (rs_can_send(rs))
        return 0;
    if (rs_wait(rs, rs_nonblocking(rs, flags), rs_conn_can_send))
        return -1;
    return (rs->state & RS_WRITABLE) ? 0 : fail(ECONNRESET);
}

/* The size of the next write of a transfer with `left` bytes to go, at most `limit`: 2 KiB first,
 * doubling up to 64 KiB (*olen), so the first bytes leave early, as librdmacm sends. */
static uint32_t rs_next_xfer(uint32_t *olen, size_t left, uint32_t limit)
{
    uint32_t xfer;
    if (*olen < left) {
        xfer = *olen;
        if (*olen < RS_MAX_TRANSFER)
            *olen <<= 1;
    } else {
        xfer = (uint32_t)left;
    }
    return xfer < limit ? xfer : limit;
}

/* The gather list for `len` bytes at `buf`: inline when the queue pair takes that much inline
 * (*flags then IBV_SEND_INLINE), else staged through the ring. */
static int rs_sgl_for(struct rsocket *rs, const void *buf, uint32_t len, struct ibv_sge *sgl,
                      int *flags)
{
    if (len <= rs->sq_inline) {
        sgl[0].addr = (uintptr_t)buf;
        sgl[0].length = len;
        sgl[0].lkey = 0;
        *flags = IBV_SEND_INLINE;
        return 1;
    }
    *flags = 0;
    return rs_stage(rs, buf, len, sgl);
}

/* Sends pending mappings (rs->lock held). */
static int rs_send_iomaps(struct rsocket *rs, int flags)
{
    for (struct rs_mapping *m = rs->mappings; m; m = m->next) {
        if (m->slot < 0 || m->announced)
            continue;
        if (rs_wait_send_room(rs, flags))
            return -1;
        struct rs_iomap iom;
        iom.offset = m->offset;
        iom.sge.addr = (uintptr_t)m->mr->addr;
        iom.sge.length = (uint32_t)m->mr->length;
        iom.sge.key = m->mr->rkey;
        if (rs->swap_sgl) {
            iom.offset = bswap_64(iom.offset);
            iom.sge.addr = bswap_64(iom.sge.addr);
            iom.sge.length = bswap_32(iom.sge.length);
            iom.sge.key = bswap_32(iom.sge.key);
        }
        struct ibv_sge sgl[2];
        int sflags;
        int nsge = rs_sgl_for(rs, &iom, sizeof(iom), sgl, &sflags);
        rs->sseq_no++;
        rs->sqe_avail--;
        rs->sbuf_bytes_avail -= sizeof(iom);
        if (rs_post_write(rs, sgl, nsge, RS_MSG(RS_OP_IOMAP_SGL, m->slot), 1, sflags,
                          rs->remote_iomap.addr + (uint64_t)m->slot * sizeof(struct rs_iomap),
                          rs->remote_iomap.key))
            return -1;
        m->announced = 1;
    }
    rs->iomap_pending = 0;
    return 0;
}

/* What every writer checks first (rs->lock held): connected, and the peer told of our mappings. */
static int rs_ready_to_write(struct rsocket *rs, int flags)
{
    if (!(rs->state & RS_CONNECTED))
        return fail(rs->state & (RS_DISCONNECTED | RS_ERROR) ? EPIPE : ENOTCONN);
    return rs->iomap_pending ? rs_send_iomaps(rs, flags) : 0;
}

/* Gathers `len` bytes from the iovec cursor (*iov, *off) into `dst`. */
static void iov_take(const struct iovec **iov, size_t *off, void *dst, size_t len)
{
    uint8_t *d = dst;
    while (len) {
        size_t n = (*iov)->iov_len - *off;
        if (n > len)
            n = len;
        memcpy(d, (const uint8_t *)(*iov)->iov_base + *off, n);
        d += n;
        len -= n;
        *off += n;
        if (*off == (*iov)->iov_len) {
            (*iov)++;
            *off = 0;
        }
    }
}

/* The socket behind a descriptor a program sends or receives on, driven through its
 * connection first; NULL with errno set. */
static struct rsocket *rs_for_transfer(int socket)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs) {
        errno = EBADF;
        return NULL;
    }
    return rs_ready_to_transfer(rs) ? NULL : rs;
}

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++)
        len += iov[i].iov_len;
    return len;
}

static ssize_t rs_sendv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
    struct rsocket *rs = rs_for_transfer(socket);
    if (!rs)
        return -1;
    const size_t len = iov_total(iov, iovcnt);
    /* Skip leading empty entries so the cursor always points at bytes. */
    while (iovcnt > 0 && iov->iov_len == 0) {
        iov++;
        iovcnt--;
    }
    pthread_mutex_lock(&rs->slock);
    pthread_mutex_lock(&rs->lock);
    int ret = 0;
    size_t left = len, off = 0;
    uint32_t olen = RS_OLAP_START_SIZE;
    if (rs_ready_to_write(rs, flags)) {
        ret = -1;
        goto out;
    }
    while (left) {
        if (rs_wait_send_room(rs, flags)) {
            ret = -1;
            break;
        }
        uint32_t room = rs->target_sgl[rs->target_sge].length;
        uint32_t xfer = rs_next_xfer(&olen, left,
                                     rs->sbuf_bytes_avail < room ? rs->sbuf_bytes_avail : room);
        struct ibv_sge sgl[2];
        int nsge, sflags;
        uint8_t inl[256];
        uint8_t *tmp = NULL; /* a write that spans the program's vectors, gathered */
        if (xfer <= rs->sq_inline && xfer <= sizeof(inl)) {
            iov_take(&iov, &off, inl, xfer);
            nsge = rs_sgl_for(rs, inl, xfer, sgl, &sflags);
        } else if (iov->iov_len - off >= xfer) {
            /* Staged through the ring, so the program may reuse its buffer at once. */
            nsge = rs_sgl_for(rs, (const uint8_t *)iov->iov_base + off, xfer, sgl, &sflags);
            off += xfer;
            if (off == iov->iov_len) {
                iov++;
                off = 0;
            }
        } else {
            tmp = malloc(xfer);
            if (!tmp) {
                ret = fail(ENOMEM);
                break;
            }
            iov_take(&iov, &off, tmp, xfer);
            nsge = rs_sgl_for(rs, tmp, xfer, sgl, &sflags);
        }
        /* Where this write goes: the peer's current half, moved on before posting so the peer's
         * next offer cannot be overwritten by this one (librdmacm's order). */
        uint64_t raddr = rs->target_sgl[rs->target_sge].addr;
        uint32_t rkey = rs->target_sgl[rs->target_sge].key;
        rs->target_sgl[rs->target_sge].addr += xfer;
        rs->target_sgl[rs->target_sge].length -= xfer;
        if (!rs->target_sgl[rs->target_sge].length && ++rs->target_sge == RS_SGL_SIZE)
            rs->target_sge = 0;
        rs->sseq_no++;
        rs->sqe_avail--;
        rs->sbuf_bytes_avail -= xfer;
        int posted = rs_post_write(rs, sgl, nsge, RS_MSG(RS_OP_DATA, xfer), 1, sflags, raddr, rkey);
        free(tmp); /* inline data is copied at the post */
        if (posted) {
            ret = -1;
            break;
        }
        left -= xfer;
    }
out:
    pthread_mutex_unlock(&rs->lock);
    pthread_mutex_unlock(&rs->slock);
    if (left < len)
        return (ssize_t)(len - left);
    return ret ? ret : 0;
}

static ssize_t rs_recvv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
    struct rsocket *rs = rs_for_transfer(socket);
    if (!rs)
        return -1;
    const size_t len = iov_total(iov, iovcnt);
    pthread_mutex_lock(&rs->rlock);
    pthread_mutex_lock(&rs->lock);
    int ret = 0;
    size_t left = len;
    if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR))) {
        ret = fail(ENOTCONN);
        goto out;
    }
    int vi = 0;
    size_t voff = 0;
    do {
        if (!rs_have_rdata(rs)) {
            if (rs_wait(rs, rs_nonblocking(rs, flags), rs_conn_have_rdata)) {
                ret = -1;
                break;
            }
        }
        /* Copy in order across the writes that arrived; MSG_PEEK leaves them where they are. */
        int head = rs->rmsg_head;
        uint32_t offset = rs->rbuf_offset;
        while (left && head != rs->rmsg_tail) {
            uint32_t in_msg = rs->rmsg[head];
            uint32_t n = in_msg < left ? in_msg : (uint32_t)left;
            for (uint32_t done = 0; done < n;) {
                uint32_t chunk = n - done;
                if (chunk > rs->rbuf_size - offset)
                    chunk = rs->rbuf_size - offset;
                if (chunk > iov[vi].iov_len - voff)
                    chunk = (uint32_t)(iov[vi].iov_len - voff);
                memcpy((uint8_t *)iov[vi].iov_base + voff, &rs->rbuf[offset], chunk);
                done += chunk;
                voff += chunk;
                offset += chunk;
                if (offset == rs->rbuf_size)
                    offset = 0;
                if (voff == iov[vi].iov_len) {
                    vi++;
                    voff = 0;
                }
            }
            left -= n;
            if (flags & MSG_PEEK) {
                if (n < in_msg)
                    break;
                if (++head == rs->rq_size + 1)
                    head = 0;
                continue;
            }
            rs->rbuf_bytes_avail += n;
            rs->rbuf_offset = offset;
            if (n < in_msg) {
                rs->rmsg[head] = in_msg - n;
            } else {
                rs->rseq_no++;
                if (++rs->rmsg_head == rs->rq_size + 1)
                    rs->rmsg_head = 0;
            }
            head = rs->rmsg_head;
        }
        if (flags & MSG_PEEK)
            break;
        rs_update_credits(rs);
    } while (left && (flags & MSG_WAITALL) && (rs->state & RS_READABLE));
out:
    pthread_mutex_unlock(&rs->lock);
    pthread_mutex_unlock(&rs->rlock);
    if (left < len)
        return (ssize_t)(len - left);
    return ret ? ret : 0; /* 0: the peer shut its side down, nothing was left to read */
}

CNUAS_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
    struct iovec v = {(void *)buf, len};
    return rs_sendv(socket, &v, 1, flags);
}

CNUAS_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
                             const struct sockaddr *dest_addr, socklen_t addrlen)
{
    if (dest_addr || addrlen)
        return rs_lookup(socket) ? fail(EISCONN) : fail(EBADF);
    return rsend(socket, buf, len, flags);
}

CNUAS_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
    if (msg->msg_control && msg->msg_controllen)
        return fail(EOPNOTSUPP);
    return rs_sendv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

CNUAS_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
    return rsend(socket, buf, count, 0);
}

CNUAS_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
    return rs_sendv(socket, iov, iovcnt, 0);
}

CNUAS_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
    struct iovec v = {buf, len};
    return rs_recvv(socket, &v, 1, flags);
}

CNUAS_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
                               struct sockaddr *src_addr, socklen_t *addrlen)
{
    ssize_t r = rrecv(socket, buf, len, flags);
    if (r > 0 && src_addr && addrlen)
        rgetpeername(socket, src_addr, addrlen);
    return r;
}

CNUAS_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
    if (msg->msg_control && msg->msg_controllen)
        return fail(EOPNOTSUPP);
    return rs_recvv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

CNUAS_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
    return rrecv(socket, buf, count, 0);
}

CNUAS_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
    return rs_recvv(socket, iov, iovcnt, 0);
}

CNUAS_EXPORT int rshutdown(int socket, int how)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
        return fail(EINVAL);
    pthread_mutex_lock(&rs->slock);
    pthread_mutex_lock(&rs->lock);
    int ret = 0;
    if (rs->state & RS_CONNECTED) {
        int ctrl;
        if (how == SHUT_RDWR) {
            ctrl = RS_CTRL_DISCONNECT;
            rs->state &= ~(RS_READABLE | RS_WRITABLE);
        } else if (how == SHUT_WR) {
            rs->state &= ~RS_WRITABLE;
            ctrl = (rs->state & RS_READABLE) ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
        } else {
            rs->state &= ~RS_READABLE;
            if (rs->state & RS_WRITABLE)
                goto out;
            ctrl = RS_CTRL_DISCONNECT;
        }
        if (!rs_ctrl_avail(rs) && rs_wait(rs, 0, rs_conn_can_send_ctrl)) {
            ret = -1;
            goto out;
        }
        if ((rs->state & RS_CONNECTED) && rs_ctrl_avail(rs)) {
            rs->ctrl_seqno++;
            ret = rs_post_msg(rs, RS_MSG(RS_OP_CTRL, ctrl));
        }
    }
    /* Everything posted reaches the peer (acknowledged) before the socket says it is done. */
    if (rs->state & RS_CONNECTED)
        rs_wait(rs, 0, rs_conn_all_sends_done);
out:
    pthread_mutex_unlock(&rs->lock);
    pthread_mutex_unlock(&rs->slock);
    return ret;
}

CNUAS_EXPORT int rclose(int socket)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    if (rs->state & RS_CONNECTED)
        rshutdown(socket, SHUT_RDWR);
    /* The DREQ: the peer's rdma_cm says DISCONNECTED (librdmacm sends it when the ID goes). */
    if (rs->cm_id && rs->cq && !rs->cm_gone)
        rdma_disconnect(rs->cm_id);
    rs_free(rs);
    return 0;
}

CNUAS_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    if (!(rs->state & (RS_CONNECTED | RS_OPENING | RS_DISCONNECTED)))
        return fail(ENOTCONN);
    return give_addr(rs, rdma_get_peer_addr(rs->cm_id), addr, addrlen);
}

CNUAS_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    return give_addr(rs, rdma_get_local_addr(rs->cm_id), addr, addrlen);
}

static int int_option(const void *optval, socklen_t optlen, int *v)
{
    if (!optval || optlen < sizeof(int))
        return fail(EINVAL);
    memcpy(v, optval, sizeof(int));
    return 0;
}

CNUAS_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
                             socklen_t optlen)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    int v = 0;
    uint64_t *bits = NULL;
    int on = 0;
    const int unknown = -2;
    int ret = unknown;
    switch (level) {
    case SOL_SOCKET:
        bits = &rs->so_opts;
        switch (optname) {
        case SO_REUSEADDR:
        case SO_OOBINLINE:
        case SO_KEEPALIVE:
            if ((ret = int_option(optval, optlen, &v)) == 0)
                on = v != 0;
            break;
        case SO_RCVBUF:
        case SO_SNDBUF:
            if ((ret = int_option(optval, optlen, &v)) == 0 && !rs->cq) {
                /* Doubled, as the kernel doubles a TCP socket's (and librdmacm an rsocket's). */
                uint32_t size = v > 0 ? (uint32_t)v << 1 : 0;
                if (size < 2 * RS_SNDLOWAT)
                    size = 2 * RS_SNDLOWAT;
                if (optname == SO_RCVBUF)
                    rs->rbuf_size = size;
                else
                    rs->sbuf_size = size;
            }
            bits = NULL;
            break;
        case SO_LINGER:
            if (!optval || optlen < sizeof(struct linger))
                ret = fail(EINVAL);
            else {
                ret = 0;
                on = !((const struct linger *)optval)->l_onoff; /* bit set: off (librdmacm's) */
            }
            break;
        default:
            bits = NULL;
            break;
        }
        break;
    case IPPROTO_TCP:
        bits = &rs->tcp_opts;
        switch (optname) {
        case TCP_NODELAY:
            if ((ret = int_option(optval, optlen, &v)) == 0)
                on = v != 0;
            break;
        case TCP_KEEPIDLE:
            if ((ret = int_option(optval, optlen, &v)) == 0) {
                if (v <= 0)
                    ret = fail(EINVAL);
                else
                    rs->keepalive_time = v;
            }
            bits = NULL;
            break;
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
        case TCP_MAXSEG:
        case TCP_CONGESTION:
            ret = 0; /* nothing to tune on a reliable connection */
            bits = NULL;
            break;
        default:
            bits = NULL;
            break;
        }
        break;
    case IPPROTO_IPV6:
        /* Kept and read back; an AF_INET6 rsocket carries IPv4 (v4-mapped) only either way. */
        if (optname == IPV6_V6ONLY && (ret = int_option(optval, optlen, &v)) == 0) {
            bits = &rs->ipv6_opts;
            on = v != 0;
        }
        break;
    case IPPROTO_IP:
        if (optname == IP_TOS && (ret = int_option(optval, optlen, &v)) == 0) {
            uint8_t tos = (uint8_t)v;
            rs->ip_tos = v;
            ret = rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
                                  sizeof(tos));
        }
        break;
    case SOL_RDMA: {
        if (rs->state >= RS_OPENING) {
            ret = fail(EINVAL);
            break;
        }
        if (optname == RDMA_ROUTE) {
            ret = fail(EOPNOTSUPP);
            break;
        }
        if ((ret = int_option(optval, optlen, &v)) != 0)
            break;
        uint32_t u = v < 0 ? 0 : (uint32_t)v;
        if (u > RS_QP_MAX_SIZE)
            u = RS_QP_MAX_SIZE;
        switch (optname) {
        case RDMA_SQSIZE:
            rs->sq_size = (uint16_t)u;
            break;
        case RDMA_RQSIZE:
            rs->rq_size = (uint16_t)u;
            break;
        case RDMA_INLINE:
            rs->sq_inline = (uint16_t)u;
            break;
        case RDMA_IOMAPSIZE:
            rs->target_iomap_size = (uint16_t)scale_to_value(value_to_scale((int)u, 8), 8);
            break;
        default:
            ret = unknown;
            break;
        }
        break;
    }
    default:
        break;
    }
    if (ret == unknown)
        return fail(ENOPROTOOPT);
    if (ret == 0 && bits && optname < 64) {
        if (on)
            *bits |= 1ull << optname;
        else
            *bits &= ~(1ull << optname);
    }
    return ret;
}

CNUAS_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
                             socklen_t *optlen)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    if (!optval || !optlen || *optlen < sizeof(int))
        return fail(EINVAL);
    int v;
    switch (level) {
    case SOL_SOCKET:
        switch (optname) {
        case SO_REUSEADDR:
        case SO_KEEPALIVE:
        case SO_OOBINLINE:
            v = (rs->so_opts >> optname) & 1;
            break;
        case SO_RCVBUF:
            v = (int)rs->rbuf_size;
            break;
        case SO_SNDBUF:
            v = (int)rs->sbuf_size;
            break;
        case SO_ERROR:
            pthread_mutex_lock(&rs->lock);
            v = rs->err;
            rs->err = 0;
            pthread_mutex_unlock(&rs->lock);
            break;
        case SO_TYPE:
            v = SOCK_STREAM;
            break;
        case SO_DOMAIN:
            v = rs->family;
            break;
        case SO_BROADCAST:
            v = 0;
            break;
        case SO_LINGER: {
            if (*optlen < sizeof(struct linger))
                return fail(EINVAL);
            struct linger l = {!((rs->so_opts >> SO_LINGER) & 1), 0};
            memcpy(optval, &l, sizeof(l));
            *optlen = sizeof(l);
            return 0;
        }
        default:
            return fail(ENOPROTOOPT);
        }
        break;
    case IPPROTO_TCP:
        switch (optname) {
        case TCP_NODELAY:
            v = (rs->tcp_opts >> TCP_NODELAY) & 1;
            break;
        case TCP_KEEPIDLE:
            v = rs->keepalive_time;
            break;
        case TCP_MAXSEG:
            v = 2048;
            break;
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
            v = 1; /* nothing to count or wait for on a reliable connection */
            break;
        case TCP_CONGESTION: {
            /* What paces the connection is the fabric's (the NIC's DCQCN on RoCE, credits on
             * InfiniBand), not a TCP algorithm. */
            static const char name[] = "rdma";
            socklen_t n = *optlen < sizeof(name) ? *optlen : sizeof(name);
            memcpy(optval, name, n);
            *optlen = n;
            return 0;
        }
        case TCP_INFO: {
            /* What a socket program reads for its statistics: the state, and the send queue's
             * depth as its window; no retransmissions or RTT to report from here. */
            struct tcp_info info;
            memset(&info, 0, sizeof(info));
            info.tcpi_state = (rs->state & RS_CONNECTED) ? TCP_ESTABLISHED : TCP_CLOSE;
            info.tcpi_snd_cwnd = rs->sq_size;
            info.tcpi_snd_mss = info.tcpi_rcv_mss = 2048;
            socklen_t n = *optlen < sizeof(info) ? *optlen : sizeof(info);
            memcpy(optval, &info, n);
            *optlen = n;
            return 0;
        }
        default:
            return fail(ENOPROTOOPT);
        }
        break;
    case IPPROTO_IP:
        if (optname != IP_TOS)
            return fail(ENOPROTOOPT);
        v = rs->ip_tos;
        break;
    case IPPROTO_IPV6:
        if (optname != IPV6_V6ONLY)
            return fail(ENOPROTOOPT);
        v = (rs->ipv6_opts >> IPV6_V6ONLY) & 1;
        break;
    case SOL_RDMA:
        switch (optname) {
        case RDMA_SQSIZE:
            v = rs->sq_size;
            break;
        case RDMA_RQSIZE:
            v = rs->rq_size;
            break;
        case RDMA_INLINE:
            v = rs->sq_inline;
            break;
        case RDMA_IOMAPSIZE:
            v = rs->target_iomap_size;
            break;
        default:
            return fail(ENOPROTOOPT);
        }
        break;
    default:
        return fail(ENOPROTOOPT);
    }
    memcpy(optval, &v, sizeof(v));
    *optlen = sizeof(v);
    return 0;
}

CNUAS_EXPORT int rfcntl(int socket, int cmd, ... /* arg */)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    va_list ap;
    va_start(ap, cmd);
    int ret;
    switch (cmd) {
    case F_GETFL:
        ret = O_RDWR | rs->fs_flags;
        break;
    case F_SETFL: {
        int flags = va_arg(ap, int);
        rs->fs_flags = flags & O_NONBLOCK;
        ret = set_nonblock(rs->index, rs->fs_flags != 0);
        break;
    }
    default:
        ret = fail(EOPNOTSUPP);
        break;
    }
    va_end(ap);
    return ret;
}

/* ---- iomap ---------------------------------------------------------------------------------- */

CNUAS_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
    (void)flags;
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    if (!rs->cm_id->pd || (prot & ~(PROT_WRITE | PROT_NONE)))
        return fail(EINVAL);
    pthread_mutex_lock(&rs->lock);
    int slot = -1;
    int access = IBV_ACCESS_LOCAL_WRITE;
    if (prot & PROT_WRITE) {
        /* A slot of the peer's iomap area: what it may riowrite into. */
        if (!rs->peer_slots && rs->remote_iomap.length)
            rs->peer_slots = calloc(rs->remote_iomap.length, sizeof(*rs->peer_slots));
        for (uint32_t i = 0; rs->peer_slots && i < rs->remote_iomap.length; i++) {
            if (!rs->peer_slots[i]) {
                slot = (int)i;
                break;
            }
        }
        if (slot < 0) {
            pthread_mutex_unlock(&rs->lock);
            return fail(ENOMEM);
        }
        access |= IBV_ACCESS_REMOTE_WRITE;
    }
    struct rs_mapping *m = calloc(1, sizeof(*m));
    if (!m) {
        pthread_mutex_unlock(&rs->lock);
        return fail(ENOMEM);
    }
    m->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
    if (!m->mr) {
        int e = errno;
        free(m);
        pthread_mutex_unlock(&rs->lock);
        return fail(e);
    }
    m->offset = offset == -1 ? (uint64_t)(uintptr_t)buf : (uint64_t)offset;
    m->slot = slot;
    m->next = rs->mappings;
    rs->mappings = m;
    if (slot >= 0) {
        rs->peer_slots[slot] = m;
        rs->iomap_pending = 1;
    }
    pthread_mutex_unlock(&rs->lock);
    return (off_t)m->offset;
}

CNUAS_EXPORT int riounmap(int socket, void *buf, size_t len)
{
    struct rsocket *rs = rs_lookup(socket);
    if (!rs)
        return fail(EBADF);
    pthread_mutex_lock(&rs->lock);
    for (struct rs_mapping **at = &rs->mappings; *at; at = &(*at)->next) {
        struct rs_mapping *m = *at;
        if (m->mr->addr == buf && m->mr->length == len) {
            *at = m->next;
            if (m->slot >= 0)
                rs->peer_slots[m->slot] = NULL;
            ibv_dereg_mr(m->mr);
            free(m);
            pthread_mutex_unlock(&rs->lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&rs->lock);
    return fail(EINVAL);
}

/* The peer's mapping that holds `offset`, from its iomap area. */
static int rs_find_iomap(const struct rsocket *rs, uint64_t offset, struct rs_iomap *out)
{
    for (int i = 0; i < rs->target_iomap_size; i++) {
        struct rs_iomap m;
        m.offset = rs->target_iomap[i].offset;
        m.sge.addr = rs->target_iomap[i].sge.addr;
        m.sge.key = rs->target_iomap[i].sge.key;
        m.sge.length = rs->target_iomap[i].sge.length;
        if (m.sge.length && offset >= m.offset && offset < m.offset + m.sge.length) {
            *out = m;
            return 1;
        }
    }
    return 0;
}

CNUAS_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
    struct rsocket *rs = rs_for_transfer(socket);
    if (!rs)
        return (size_t)-1;
    pthread_mutex_lock(&rs->slock);
    pthread_mutex_lock(&rs->lock);
    int ret = 0;
    size_t left = count;
    uint32_t olen = RS_OLAP_START_SIZE;
    const uint8_t *src = buf;
    uint64_t off = (uint64_t)offset;
    struct rs_iomap iom;
    int have = 0;
    if (rs_ready_to_write(rs, flags)) {
        ret = -1;
        goto out;
    }
    while (left) {
        if (!have || off >= iom.offset + iom.sge.length) {
            have = rs_find_iomap(rs, off, &iom);
            if (!have) {
                ret = fail(EINVAL); /* nothing of the peer's mapped there */
                break;
            }
        }
        if (rs_wait_send_room(rs, flags)) {
            ret = -1;
            break;
        }
        uint64_t mapped = iom.offset + iom.sge.length - off;
        uint32_t xfer = rs_next_xfer(&olen, left,
                                     mapped < rs->sbuf_bytes_avail ? (uint32_t)mapped
                                                                   : rs->sbuf_bytes_avail);
        struct ibv_sge sgl[2];
        int sflags;
        int nsge = rs_sgl_for(rs, src, xfer, sgl, &sflags);
        rs->sqe_avail--;
        rs->sbuf_bytes_avail -= xfer;
        if (rs_post_write(rs, sgl, nsge, RS_MSG(RS_OP_WRITE, xfer), 0, sflags,
                          iom.sge.addr + (off - iom.offset), iom.sge.key)) {
            ret = -1;
            break;
        }
        left -= xfer;
        src += xfer;
        off += xfer;
    }
out:
    pthread_mutex_unlock(&rs->lock);
    pthread_mutex_unlock(&rs->slock);
    if (left < count)
        return count - left;
    return ret ? (size_t)ret : 0;
}

/* ---- poll and select ------------------------------------------------------------------------ */

/* What a socket is ready for now (nothing waited for). */
static short rs_poll_rs(struct rsocket *rs, short events)
{
    if ((rs->state & RS_OPENING) && (rs->fs_flags & O_NONBLOCK)) {
        /* (A blocking socket being opened is some other thread's rconnect or raccept.) */
        pthread_mutex_lock(&rs->slock);
        rs_do_connect(rs);
        pthread_mutex_unlock(&rs->slock);
    }
    if (rs->state == RS_LISTENING) {
        struct pollfd p = {rs->index, POLLIN, 0};
        poll(&p, 1, 0);
        return (short)(p.revents & events & POLLIN);
    }
    if (rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)) {
        pthread_mutex_lock(&rs->lock);
        rs_progress(rs);
        short rev = 0;
        if ((events & POLLIN) && rs_conn_have_rdata(rs))
            rev |= POLLIN;
        if ((events & POLLOUT) && rs_can_send(rs) && (rs->state & RS_WRITABLE))
            rev |= POLLOUT;
        /* Hung up only once what the peer sent before it went has been read, as a TCP socket
         * says (librdmacm says POLLHUP at once, and rstream -T a, which gives up on a hang-up,
         * then loses the race between its peer's last data and its disconnect). */
        if (rs->state == RS_DISCONNECTED ? !rs_have_rdata(rs) : !(rs->state & RS_CONNECTED))
            rev |= rs->state == RS_DISCONNECTED ? POLLHUP : POLLERR;
        pthread_mutex_unlock(&rs->lock);
        return rev;
    }
    if (rs->state == RS_CONNECT_ERROR)
        return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
    return 0;
}

/* What each of `fds` is ready for now: an rsocket's (rss[i]) as rs_poll_rs says, another
 * descriptor's as poll says without waiting. */
static int rs_check_all(struct pollfd *fds, struct rsocket *const *rss, nfds_t nfds)
{
    int cnt = 0;
    for (nfds_t i = 0; i < nfds; i++) {
        if (rss[i]) {
            fds[i].revents = rs_poll_rs(rss[i], fds[i].events);
        } else {
            fds[i].revents = 0;
            poll(&fds[i], 1, 0);
        }
        if (fds[i].revents)
            cnt++;
    }
    return cnt;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

CNUAS_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    /* Each descriptor's socket, looked up once: `rss` (NULL where it is not an rsocket); then
     * what rpoll sleeps on, up to two descriptors a socket (its completion channel, whose
     * socket `owner` names, and its rdma_cm channel) and the others as given. */
    struct rsocket **rss = calloc(nfds + 1, sizeof(*rss));
    if (!rss)
        return fail(ENOMEM);
    int any = 0;
    for (nfds_t i = 0; i < nfds; i++)
        any |= (rss[i] = rs_lookup(fds[i].fd)) != NULL;
    if (!any) {
        free(rss);
        return poll(fds, nfds, timeout); /* rping, ucmatose, udaddy: their event channels */
    }
    const int64_t deadline = timeout >= 0 ? now_ms() + timeout : -1;
    struct pollfd *wait = calloc(2 * nfds + 1, sizeof(*wait));
    struct rsocket **owner = calloc(2 * nfds + 1, sizeof(*owner));
    int ret = -1;
    if (!wait || !owner) {
        errno = ENOMEM;
        goto out;
    }
    for (;;) {
        ret = rs_check_all(fds, rss, nfds);
        if (ret || timeout == 0)
            break;
        /* Arm every socket's completion queue, then look again before sleeping: a completion
         * between the look and the arming would otherwise not wake this poll. */
        nfds_t n = 0;
        for (nfds_t i = 0; i < nfds; i++) {
            struct rsocket *rs = rss[i];
            if (!rs) {
                wait[n].fd = fds[i].fd;
                wait[n].events = fds[i].events;
                wait[n].revents = 0;
                owner[n++] = NULL;
                continue;
            }
            pthread_mutex_lock(&rs->lock);
            if (rs->cq && !rs->cq_armed) {
                ibv_req_notify_cq(rs->cq, 0);
                rs->cq_armed = 1;
            }
            if (rs->comp) {
                wait[n].fd = rs->comp->fd;
                wait[n].events = POLLIN;
                wait[n].revents = 0;
                owner[n++] = rs;
            }
            if (!rs->cm_gone) {
                wait[n].fd = rs->index;
                wait[n].events = POLLIN;
                wait[n].revents = 0;
                owner[n++] = NULL; /* its events are taken by rs_poll_rs */
            }
            pthread_mutex_unlock(&rs->lock);
        }
        ret = rs_check_all(fds, rss, nfds);
        if (ret)
            break;
        /* At most a second at a time: a socket whose events another thread's wait took. */
        int left = 1000;
        if (deadline >= 0) {
            int64_t l = deadline - now_ms();
            if (l <= 0) {
                ret = 0;
                break;
            }
            if (l < left)
                left = (int)l;
        }
        if (poll(wait, n, left) < 0) {
            ret = -1;
            break;
        }
        for (nfds_t i = 0; i < n; i++) {
            if (owner[i] && (wait[i].revents & POLLIN)) {
                pthread_mutex_lock(&owner[i]->lock);
                rs_take_cq_event(owner[i]);
                pthread_mutex_unlock(&owner[i]->lock);
            }
        }
    }
out:
    free(owner);
    free(wait);
    free(rss);
    return ret;
}

CNUAS_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                         struct timeval *timeout)
{
    struct pollfd *fds = calloc((size_t)(nfds > 0 ? nfds : 1), sizeof(*fds));
    if (!fds)
        return fail(ENOMEM);
    nfds_t n = 0;
    for (int fd = 0; fd < nfds; fd++) {
        short ev = 0;
        if (readfds && FD_ISSET(fd, readfds))
            ev |= POLLIN;
        if (writefds && FD_ISSET(fd, writefds))
            ev |= POLLOUT;
        if (exceptfds && FD_ISSET(fd, exceptfds))
            ev |= POLLPRI;
        if (ev) {
            fds[n].fd = fd;
            fds[n++].events = ev;
        }
    }
    int ms = timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
    int r = rpoll(fds, n, ms);
    if (r >= 0) {
        if (readfds)
            FD_ZERO(readfds);
        if (writefds)
            FD_ZERO(writefds);
        if (exceptfds)
            FD_ZERO(exceptfds);
        r = 0;
        for (nfds_t i = 0; i < n; i++) {
            if ((fds[i].events & POLLIN) && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                FD_SET(fds[i].fd, readfds);
                r++;
            }
            if ((fds[i].events & POLLOUT) && (fds[i].revents & (POLLOUT | POLLERR))) {
                FD_SET(fds[i].fd, writefds);
                r++;
            }
            if ((fds[i].events & POLLPRI) && (fds[i].revents & POLLPRI)) {
                FD_SET(fds[i].fd, exceptfds);
                r++;
            }
        }
    }
    free(fds);
    return r;
}
