/*
 * Cnuas's libibumad: open ports, agents, and MAD send and receive (what the real library does
 * with /dev/infiniband/umadN, and what the kernel's MAD layer does behind it: the write-time
 * checks, the upper half of a request's TransactionID, and the timeouts and retries of sends
 * that expect a response, kept on the wall clock of the process as the kernel keeps them).
 */
#define _GNU_SOURCE
#include "cnuas-umad.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int cnuas_umad_connect(void);
int cnuas_umad_call(int fd, struct cnuas_umad_req *q, struct cnuas_umad_resp *r, int *out_fd);
int cnuas_umad_query(struct cnuas_umad_ca_info *ca);
int cnuas_umad_pick_port(const struct cnuas_umad_ca_info *ca, int wanted);

#define IB_OPENIB_OUI 0x001405
#define MAX_PORTS 64
/* The kernel's IB_MGMT_RMPP_HDR: the least a write may carry after the umad header. */
#define MIN_WRITE 36
/* The kernel returns a timed-out send with its MAD header only (IB_MGMT_MAD_HDR). */
#define MAD_HDR_BYTES 24

struct agent_rec {
    int used;
    uint8_t qpn;
    uint8_t mgmt_class;
    uint8_t rmpp_version; /* non-zero: the library does RMPP for it, as the kernel does */
    uint32_t hi_tid;
};

/* A send waiting for its response. */
struct pending {
    struct pending *next;
    uint32_t agent_id;
    uint8_t mgmt_class;
    uint32_t tid_low;
    int64_t deadline_ms;
    uint32_t timeout_ms;
    uint32_t retries_left;
    struct ib_user_mad hdr;          /* as the process wrote it (with the hi_tid) */
    struct cnuas_umad_mad wire;      /* as it went to the daemon, for a retry */
};

/* A MAD ready for umad_recv: a response, a request, or a timed-out send; a reassembled
 * multi-packet (RMPP) message is longer than one MAD. */
struct ready {
    struct ready *next;
    size_t bytes;                    /* header + MAD bytes */
    struct ib_user_mad hdr;
    uint8_t data[];
};

/* An RMPP message being received (the kernel's mad_rmpp_recv). */
struct reassembly {
    int used;
    uint32_t agent_id;
    uint8_t tid[8];
    uint16_t slid;
    uint32_t segs;       /* segments taken */
    size_t len;          /* bytes in buf */
    uint8_t *buf;        /* the first segment whole, then each one's data */
    uint64_t stamp;
};
#define MAX_REASSEMBLIES 8

struct port_rec {
    int fd;          /* the MAD stream: what umad_open_port returned */
    int ctl;         /* the control connection (agents) */
    int kick;        /* eventfd: a send added a deadline (wakes a umad_recv in poll) */
    int portnum;
    int dead;        /* the daemon went away */
    pthread_mutex_t lock;      /* agents, pending, ready */
    pthread_mutex_t ctl_lock;  /* one control request at a time */
    struct agent_rec agents[CNUAS_UMAD_MAX_AGENTS];
    struct pending *pending;
    struct ready *ready;       /* FIFO */
    struct reassembly rmpp[MAX_REASSEMBLIES];
    uint64_t rmpp_clock;
};

static pthread_mutex_t g_ports_lock = PTHREAD_MUTEX_INITIALIZER;
static struct port_rec *g_ports[MAX_PORTS];

static struct port_rec *find_port(int fd)
{
    struct port_rec *p = NULL;
    pthread_mutex_lock(&g_ports_lock);
    for (int i = 0; i < MAX_PORTS; ++i)
        if (g_ports[i] && g_ports[i]->fd == fd) {
            p = g_ports[i];
            break;
        }
    pthread_mutex_unlock(&g_ports_lock);
    return p;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- ports ------------------------------------------------------------------------------ */

CNUAS_EXPORT int umad_open_port(const char *ca_name, int portnum)
{
    struct cnuas_umad_ca_info ca;
    if (cnuas_umad_query(&ca) < 0)
        return -ENODEV;
    if (ca_name && strncmp(ca_name, ca.ca_name, UMAD_CA_NAME_LEN) != 0)
        return -ENODEV;
    if (portnum < 0 || (portnum > 0 && (unsigned)portnum > ca.numports))
        return -EINVAL;
    if (portnum == 0) {
        portnum = cnuas_umad_pick_port(&ca, 0);
        if (portnum < 0)
            return -ENODEV;
    }
    struct port_rec *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->fd = p->ctl = p->kick = -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->ctl_lock, NULL);
    p->portnum = portnum;
    p->ctl = cnuas_umad_connect();
    if (p->ctl < 0)
        goto fail;
    struct cnuas_umad_req q;
    struct cnuas_umad_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_UMAD_OP_OPEN_PORT;
    q.u.open_port.portnum = (uint32_t)portnum;
    if (cnuas_umad_call(p->ctl, &q, &r, &p->fd) != 0 || p->fd < 0)
        goto fail;
    p->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (p->kick < 0)
        goto fail;
    pthread_mutex_lock(&g_ports_lock);
    int slot = -1;
    for (int i = 0; i < MAX_PORTS; ++i)
        if (!g_ports[i]) {
            slot = i;
            break;
        }
    if (slot >= 0)
        g_ports[slot] = p;
    pthread_mutex_unlock(&g_ports_lock);
    if (slot < 0)
        goto fail;
    DEBUG("opened %s port %d fd %d", ca.ca_name, portnum, p->fd);
    return p->fd;
fail:
    if (p->fd >= 0)
        close(p->fd);
    if (p->ctl >= 0)
        close(p->ctl);
    if (p->kick >= 0)
        close(p->kick);
    free(p);
    return -EIO;
}

static void free_lists(struct port_rec *p)
{
    while (p->pending) {
        struct pending *n = p->pending->next;
        free(p->pending);
        p->pending = n;
    }
    while (p->ready) {
        struct ready *n = p->ready->next;
        free(p->ready);
        p->ready = n;
    }
    for (int i = 0; i < MAX_REASSEMBLIES; ++i) {
        free(p->rmpp[i].buf);
        p->rmpp[i].buf = NULL;
        p->rmpp[i].used = 0;
    }
}

CNUAS_EXPORT int umad_close_port(int fd)
{
    struct port_rec *p = NULL;
    pthread_mutex_lock(&g_ports_lock);
    for (int i = 0; i < MAX_PORTS; ++i)
        if (g_ports[i] && g_ports[i]->fd == fd) {
            p = g_ports[i];
            g_ports[i] = NULL;
            break;
        }
    pthread_mutex_unlock(&g_ports_lock);
    if (!p) {
        close(fd);
        return 0;
    }
    close(p->fd);
    close(p->ctl);
    close(p->kick);
    free_lists(p);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->ctl_lock);
    free(p);
    DEBUG("closed fd %d", fd);
    return 0;
}

CNUAS_EXPORT int umad_get_fd(int fd)
{
    return fd;
}

/* ---- agents ----------------------------------------------------------------------------- */

/* REGISTER on the port's control connection. 0 with *id, or an errno value. */
static int do_register(struct port_rec *p, uint32_t qpn, uint8_t mgmt_class, uint8_t version,
                       uint8_t rmpp_version, const uint64_t mask[2], uint32_t oui, uint32_t flags,
                       uint32_t *id)
{
    struct cnuas_umad_req q;
    struct cnuas_umad_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_UMAD_OP_REGISTER;
    q.u.reg.qpn = qpn;
    q.u.reg.mgmt_class = mgmt_class;
    q.u.reg.mgmt_class_version = version;
    q.u.reg.rmpp_version = rmpp_version;
    q.u.reg.flags = flags;
    q.u.reg.oui = oui;
    if (mask) {
        q.u.reg.method_mask[0] = mask[0];
        q.u.reg.method_mask[1] = mask[1];
    }
    pthread_mutex_lock(&p->ctl_lock);
    int err = cnuas_umad_call(p->ctl, &q, &r, NULL);
    pthread_mutex_unlock(&p->ctl_lock);
    if (err < 0)
        return EIO;
    if (err > 0)
        return err;
    if (r.u.reg.agent_id >= CNUAS_UMAD_MAX_AGENTS)
        return EIO;
    pthread_mutex_lock(&p->lock);
    struct agent_rec *a = &p->agents[r.u.reg.agent_id];
    a->used = 1;
    a->qpn = (uint8_t)qpn;
    a->mgmt_class = mgmt_class;
    a->rmpp_version = rmpp_version;
    a->hi_tid = r.u.reg.hi_tid;
    pthread_mutex_unlock(&p->lock);
    *id = r.u.reg.agent_id;
    DEBUG("fd %d registered agent %u qp %u class 0x%x", p->fd, *id, qpn, mgmt_class);
    return 0;
}

static uint32_t qp_of(int mgmt_class)
{
    return (mgmt_class == 0x1 || mgmt_class == 0x81) ? 0 : 1;
}

CNUAS_EXPORT int umad_register(int fd, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
                               long method_mask[16 / sizeof(long)])
{
    struct port_rec *p = find_port(fd);
    if (!p) {
        errno = EBADF;
        return -EPERM;
    }
    uint64_t mask[2] = {0, 0};
    if (method_mask)
        memcpy(mask, method_mask, sizeof(mask));
    uint32_t id;
    int err = do_register(p, qp_of(mgmt_class), (uint8_t)mgmt_class, (uint8_t)mgmt_version,
                          rmpp_version, mask, IB_OPENIB_OUI, 0, &id);
    if (err) {
        errno = err;
        return -EPERM;
    }
    return (int)id;
}

CNUAS_EXPORT int umad_register_oui(int fd, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
                                   long method_mask[16 / sizeof(long)])
{
    if (mgmt_class < 0x30 || mgmt_class > 0x4f) {
        DEBUG("mgmt class %d not in vendor range 2", mgmt_class);
        return -EINVAL;
    }
    struct port_rec *p = find_port(fd);
    if (!p) {
        errno = EBADF;
        return -EPERM;
    }
    uint64_t mask[2] = {0, 0};
    if (method_mask)
        memcpy(mask, method_mask, sizeof(mask));
    uint32_t o = ((uint32_t)oui[0] << 16) | ((uint32_t)oui[1] << 8) | oui[2];
    uint32_t id;
    int err = do_register(p, 1, (uint8_t)mgmt_class, 1, rmpp_version, mask, o, 0, &id);
    if (err) {
        errno = err;
        return -EPERM;
    }
    return (int)id;
}

CNUAS_EXPORT int umad_register2(int port_fd, struct umad_reg_attr *attr, uint32_t *agent_id)
{
    if (!attr || !agent_id)
        return EINVAL;
    if (attr->mgmt_class >= 0x30 && attr->mgmt_class <= 0x4f &&
        ((attr->oui & 0x00ffffff) == 0 || (attr->oui & 0xff000000) != 0))
        return EINVAL;
    /* No registration flags are known (UMAD_USER_RMPP needs RMPP, which is not offered): the
     * kernel answers that by clearing the flags it does not know and failing. */
    if (attr->flags != 0) {
        attr->flags = 0;
        return EINVAL;
    }
    struct port_rec *p = find_port(port_fd);
    if (!p)
        return EBADF;
    return do_register(p, qp_of(attr->mgmt_class), attr->mgmt_class, attr->mgmt_class_version,
                       attr->rmpp_version, attr->method_mask, attr->oui, attr->flags, agent_id);
}

CNUAS_EXPORT int umad_unregister(int fd, int agentid)
{
    struct port_rec *p = find_port(fd);
    if (!p) {
        errno = EBADF;
        return -1;
    }
    if (agentid < 0 || agentid >= (int)CNUAS_UMAD_MAX_AGENTS) {
        errno = EINVAL;
        return -1;
    }
    struct cnuas_umad_req q;
    struct cnuas_umad_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_UMAD_OP_UNREGISTER;
    q.u.unreg.agent_id = (uint32_t)agentid;
    pthread_mutex_lock(&p->ctl_lock);
    int err = cnuas_umad_call(p->ctl, &q, &r, NULL);
    pthread_mutex_unlock(&p->ctl_lock);
    if (err != 0) {
        errno = err < 0 ? EIO : err;
        return -1;
    }
    /* Its sends in flight are cancelled with it, as ib_unregister_mad_agent does. */
    pthread_mutex_lock(&p->lock);
    p->agents[agentid].used = 0;
    for (struct pending **pp = &p->pending; *pp;) {
        if ((*pp)->agent_id == (uint32_t)agentid) {
            struct pending *dead = *pp;
            *pp = dead->next;
            free(dead);
        } else {
            pp = &(*pp)->next;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return 0;
}

/* ---- the MAD buffer ----------------------------------------------------------------------- */

CNUAS_EXPORT void *umad_get_mad(void *umad)
{
    return ((struct ib_user_mad *)umad)->data;
}

CNUAS_EXPORT size_t umad_size(void)
{
    return sizeof(struct ib_user_mad);
}

CNUAS_EXPORT int umad_status(void *umad)
{
    return (int)((struct ib_user_mad *)umad)->status;
}

CNUAS_EXPORT ib_mad_addr_t *umad_get_mad_addr(void *umad)
{
    return &((struct ib_user_mad *)umad)->addr;
}

CNUAS_EXPORT int umad_set_grh(void *umad, void *mad_addr)
{
    struct ib_user_mad *mad = umad;
    struct ib_mad_addr *addr = mad_addr;
    if (addr) {
        mad->addr.grh_present = 1;
        memcpy(mad->addr.gid, addr->gid, 16);
        mad->addr.flow_label = htonl(addr->flow_label);
        mad->addr.hop_limit = addr->hop_limit;
        mad->addr.traffic_class = addr->traffic_class;
    } else {
        mad->addr.grh_present = 0;
    }
    return 0;
}

CNUAS_EXPORT int umad_set_pkey(void *umad, int pkey_index)
{
    ((struct ib_user_mad *)umad)->addr.pkey_index = (uint16_t)pkey_index;
    return 0;
}

CNUAS_EXPORT int umad_get_pkey(void *umad)
{
    return ((struct ib_user_mad *)umad)->addr.pkey_index;
}

CNUAS_EXPORT int umad_set_addr(void *umad, int dlid, int dqp, int sl, int qkey)
{
    struct ib_user_mad *mad = umad;
    mad->addr.qpn = htonl((uint32_t)dqp);
    mad->addr.lid = htons((uint16_t)dlid);
    mad->addr.qkey = htonl((uint32_t)qkey);
    mad->addr.sl = (uint8_t)sl;
    return 0;
}

/* Declared in umad.h with __be types; exported as rdma-core 44 defines it. */
CNUAS_EXPORT int umad_set_addr_net(void *umad, __be16 dlid, __be32 dqp, int sl, __be32 qkey)
{
    struct ib_user_mad *mad = umad;
    mad->addr.qpn = dqp;
    mad->addr.lid = dlid;
    mad->addr.qkey = qkey;
    mad->addr.sl = (uint8_t)sl;
    return 0;
}

/* ---- sending ------------------------------------------------------------------------------ */

static uint32_t be32_at(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ---- RMPP (IBA vol. 1 §13.6), as the kernel's mad_rmpp.c does it for agents registered with
 * an rmpp_version: the RMPP header at bytes 24-35 (version, type, RRespTime|flags, status,
 * SegmentNumber, PayloadLength/NewWindowLast); flags Active 1, First 2, Last 4; types DATA 1,
 * ACK 2, STOP 3, ABORT 4. ---- */
enum { RMPP_ACTIVE = 1, RMPP_FIRST = 2, RMPP_LAST = 4, RMPP_DATA = 1, RMPP_ACK = 2 };
/* Bytes of every segment's RMPP payload (the MAD after the common and RMPP headers). */
#define RMPP_SEG_PAYLOAD ((int)CNUAS_UMAD_MAD_BYTES - 36)

/* ib_is_mad_class_rmpp */
static int rmpp_class(uint8_t c)
{
    return c == 0x03 || c == 0x06 || c == 0x10 || c == 0x12 || (c >= 0x30 && c <= 0x4f);
}

/* ib_get_mad_data_offset: where a class's data starts (the headers every segment repeats). */
static int data_offset(uint8_t c)
{
    if (c == 0x03)
        return 56;
    if (c == 0x06 || c == 0x10 || c == 0x12)
        return 64;
    if (c >= 0x30 && c <= 0x4f)
        return 40;
    return 24;
}

/* What the kernel refuses at write() time (ib_umad_write, ib_post_send_mad, smi.c): 0 or the
 * errno value. */
static int check_send(struct port_rec *p, uint32_t agentid, const uint8_t *mad, int length)
{
    if (length < MIN_WRITE)
        return EINVAL;
    if (agentid >= CNUAS_UMAD_MAX_AGENTS)
        return EINVAL;
    const struct agent_rec *a = &p->agents[agentid];
    if (!a->used)
        return EIO;
    const uint8_t cls = mad[1];
    const int rmpp = a->rmpp_version && rmpp_class(cls) && (mad[26] & RMPP_ACTIVE);
    if (length > (int)CNUAS_UMAD_MAD_BYTES && !rmpp)
        return EINVAL; /* longer than a MAD needs RMPP: an RMPP agent and the Active flag */
    if (rmpp && (length < data_offset(cls) || length > (1 << 20)))
        return EINVAL;
    const int smp = cls == 0x01 || cls == 0x81;
    if (smp != (a->qpn == 0))
        return EINVAL;
    if (cls == 0x81) {
        /* Directed route, IBA vol. 1 §14.2.2.1 (C14-9) at the originator. */
        const uint8_t hop_ptr = mad[6], hop_cnt = mad[7];
        const uint16_t dr_slid = (uint16_t)((mad[32] << 8) | mad[33]);
        const uint16_t dr_dlid = (uint16_t)((mad[34] << 8) | mad[35]);
        if (hop_cnt > 63)
            return EINVAL;
        /* A LID-routed part before or after the directed one is not modelled. */
        if (dr_slid != 0xFFFF || dr_dlid != 0xFFFF)
            return EINVAL;
        if ((mad[3] & 0x80) != 0) {
            /* An answer (to an SMInfo request) goes back along the request's path (C14-13):
             * the D bit set and the hop pointer where the request left it. */
            if (!(mad[4] & 0x80) || (hop_cnt > 0 && hop_ptr != hop_cnt + 1))
                return EINVAL;
        } else if (hop_cnt > 63 || hop_ptr != 0) {
            return EINVAL;
        } else if (hop_cnt > 0 && mad[128 + 1] != p->portnum) {
            return EINVAL; /* InitialPath[1] must be the port the SMP leaves by */
        }
    }
    return 0;
}

CNUAS_EXPORT int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms,
                           int retries)
{
    struct ib_user_mad *mad = umad;
    errno = 0;
    mad->timeout_ms = (uint32_t)timeout_ms;
    mad->retries = (uint32_t)retries;
    mad->agent_id = (uint32_t)agentid;
    if (cnuas_umad_debug_level > 1)
        umad_dump(mad);
    struct port_rec *p = find_port(fd);
    if (!p) {
        errno = EBADF;
        return -EIO;
    }
    uint8_t *data = mad->data;
    pthread_mutex_lock(&p->lock);
    int err = p->dead ? EIO : check_send(p, (uint32_t)agentid, data, length);
    /* ib_response_mad: responses, TrapRepress and BM responses start no transaction. */
    const int response = (data[3] & 0x80) != 0 || data[3] == 0x07 ||
                         (data[1] == 0x05 && (data[23] & 1) != 0);
    const uint32_t tid_low = be32_at(data + 12);
    if (!err && !response) {
        /* Two requests of one agent with one TransactionID in flight: the second is refused
         * (ib_umad_write's is_duplicate). */
        for (struct pending *q = p->pending; q; q = q->next)
            if (q->agent_id == (uint32_t)agentid && q->tid_low == tid_low &&
                q->mgmt_class == data[1]) {
                err = EINVAL;
                break;
            }
    }
    if (err) {
        pthread_mutex_unlock(&p->lock);
        DEBUG("send refused: %s", strerror(err));
        errno = err;
        return -EIO;
    }
    struct pending *pend = calloc(1, sizeof(*pend));
    if (!pend) {
        pthread_mutex_unlock(&p->lock);
        errno = ENOMEM;
        return -EIO;
    }
    struct cnuas_umad_mad *w = &pend->wire;
    w->agent_id = (uint32_t)agentid;
    w->length = CNUAS_UMAD_MAD_BYTES;
    w->qpn = ntohl(mad->addr.qpn);
    w->qkey = ntohl(mad->addr.qkey);
    w->lid = ntohs(mad->addr.lid);
    w->sl = mad->addr.sl;
    w->path_bits = mad->addr.path_bits;
    w->grh_present = mad->addr.grh_present;
    w->gid_index = mad->addr.gid_index;
    w->hop_limit = mad->addr.hop_limit;
    w->traffic_class = mad->addr.traffic_class;
    memcpy(w->gid, mad->addr.gid, 16);
    w->flow_label = ntohl(mad->addr.flow_label);
    w->pkey_index = mad->addr.pkey_index;
    const int rmpp = p->agents[agentid].rmpp_version && rmpp_class(data[1]) &&
                     (data[26] & RMPP_ACTIVE);
    memcpy(w->mad, data, (size_t)(length < (int)CNUAS_UMAD_MAD_BYTES ? length
                                                                   : (int)CNUAS_UMAD_MAD_BYTES));
    if (!response) {
        /* The agent's hi_tid in the upper half of the TransactionID, as ib_umad_write puts it
         * in its own copy (the process's buffer keeps its TID; a timed-out send comes back
         * with the hi_tid, as from the kernel). The daemon sets it again. */
        const uint32_t hi = p->agents[agentid].hi_tid;
        w->mad[8] = (uint8_t)(hi >> 24);
        w->mad[9] = (uint8_t)(hi >> 16);
        w->mad[10] = (uint8_t)(hi >> 8);
        w->mad[11] = (uint8_t)hi;
    }
    int sent_ok = 1;
    if (!rmpp) {
        sent_ok = send(p->fd, w, sizeof(*w), MSG_NOSIGNAL) == (ssize_t)sizeof(*w);
    } else {
        /* Segments of 256 bytes, each repeating the headers up to the class's data offset, in
         * order (mad_rmpp.c send_next_seg); the whole window at once: the receivers here take
         * any number, and answer the last with an ACK, which completes nothing more. */
        const int hdr = data_offset(data[1]);
        const int seg_size = (int)CNUAS_UMAD_MAD_BYTES - hdr;
        const int data_len = length - hdr;
        const int count = data_len > 0 ? (data_len + seg_size - 1) / seg_size : 1;
        const int pad = count * seg_size - data_len;
        struct cnuas_umad_mad seg = *w;
        for (int i = 1; i <= count && sent_ok; ++i) {
            memset(seg.mad + hdr, 0, CNUAS_UMAD_MAD_BYTES - (size_t)hdr);
            const int off = (i - 1) * seg_size;
            const int n = data_len - off < seg_size ? data_len - off : seg_size;
            if (n > 0)
                memcpy(seg.mad + hdr, data + hdr + off, (size_t)n);
            if (seg.mad[24] == 0)
                seg.mad[24] = 1;
            seg.mad[25] = RMPP_DATA;
            seg.mad[26] = (uint8_t)((data[26] & 0xF8) | RMPP_ACTIVE | (i == 1 ? RMPP_FIRST : 0) |
                                    (i == count ? RMPP_LAST : 0));
            seg.mad[27] = 0;
            put_be32(seg.mad + 28, (uint32_t)i);
            uint32_t paylen = 0;
            if (i == 1)
                paylen = (uint32_t)(count * RMPP_SEG_PAYLOAD - pad);
            if (i == count && count > 1)
                paylen = (uint32_t)(RMPP_SEG_PAYLOAD - pad);
            put_be32(seg.mad + 32, paylen);
            if (i == 1)
                *w = seg; /* what a retry or a timeout report carries */
            sent_ok = send(p->fd, &seg, sizeof(seg), MSG_NOSIGNAL) == (ssize_t)sizeof(seg);
        }
    }
    if (!sent_ok) {
        p->dead = 1;
        pthread_mutex_unlock(&p->lock);
        free(pend);
        errno = EIO;
        return -EIO;
    }
    if (response || timeout_ms <= 0) {
        /* No response expected: the send is complete. */
        pthread_mutex_unlock(&p->lock);
        free(pend);
        return 0;
    }
    pend->agent_id = (uint32_t)agentid;
    pend->mgmt_class = data[1];
    pend->tid_low = tid_low;
    pend->timeout_ms = (uint32_t)timeout_ms;
    pend->retries_left = retries > 0 ? (uint32_t)retries : 0;
    pend->deadline_ms = now_ms() + timeout_ms;
    pend->hdr = *mad;
    pend->next = p->pending;
    p->pending = pend;
    pthread_mutex_unlock(&p->lock);
    uint64_t one = 1;
    if (write(p->kick, &one, sizeof(one)) < 0) {
        /* the counter is full: a waiter is being woken anyway */
    }
    return 0;
}

/* ---- receiving ---------------------------------------------------------------------------- */

static void push_ready(struct port_rec *p, struct ready *r, int front)
{
    if (front) {
        r->next = p->ready;
        p->ready = r;
        return;
    }
    r->next = NULL;
    struct ready **pp = &p->ready;
    while (*pp)
        pp = &(*pp)->next;
    *pp = r;
}

/* Sends whose time is up: retried while retries are left, else returned to the agent with
 * status ETIMEDOUT and their MAD header, as the kernel does. Returns the milliseconds to the
 * next deadline (-1: none). Port lock held. */
static int64_t run_deadlines(struct port_rec *p)
{
    const int64_t now = now_ms();
    int64_t next = -1;
    for (struct pending **pp = &p->pending; *pp;) {
        struct pending *q = *pp;
        if (q->deadline_ms <= now) {
            if (q->retries_left > 0 && !p->dead) {
                q->retries_left--;
                q->deadline_ms = now + q->timeout_ms;
                DEBUG("retrying TID 0x%x of agent %u", q->tid_low, q->agent_id);
                if (send(p->fd, &q->wire, sizeof(q->wire), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                    DEBUG("retry not sent: %s", strerror(errno));
            } else {
                *pp = q->next;
                struct ready *r = calloc(1, sizeof(*r) + MAD_HDR_BYTES);
                if (r) {
                    r->hdr = q->hdr;
                    r->hdr.status = ETIMEDOUT;
                    memcpy(r->data, q->wire.mad, MAD_HDR_BYTES);
                    r->bytes = sizeof(r->hdr) + MAD_HDR_BYTES;
                    push_ready(p, r, 0);
                }
                free(q);
                continue;
            }
        }
        const int64_t left = q->deadline_ms - now;
        if (next < 0 || left < next)
            next = left;
        pp = &q->next;
    }
    return next;
}

/* An RMPP segment for an agent that does RMPP (mad_rmpp.c): ACK, STOP and ABORT are the
 * library's business and go no further; DATA segments are put together in order, and the last
 * one is answered with an ACK and completes the message, returned (malloc'd) with its length
 * as the kernel computes it (get_mad_len: the data offset, the segments' data, less the pad the
 * last one's PayloadLength tells). NULL when nothing is complete. Port lock held. */
static uint8_t *rmpp_receive(struct port_rec *p, const struct cnuas_umad_mad *m, size_t *len)
{
    const uint8_t *mad = m->mad;
    if (mad[25] != RMPP_DATA)
        return NULL;
    const int hdr = data_offset(mad[1]);
    const uint32_t seg = be32_at(mad + 28);
    const int flags = mad[26] & 7;
    struct reassembly *r = NULL;
    for (int i = 0; i < MAX_REASSEMBLIES; ++i)
        if (p->rmpp[i].used && p->rmpp[i].agent_id == m->agent_id && p->rmpp[i].slid == m->lid &&
            memcmp(p->rmpp[i].tid, mad + 8, 8) == 0)
            r = &p->rmpp[i];
    if (flags & RMPP_FIRST) {
        if (seg != 1)
            return NULL;
        if (!r) {
            /* A free slot, else the oldest message gives way. */
            for (int i = 0; i < MAX_REASSEMBLIES && !r; ++i)
                if (!p->rmpp[i].used)
                    r = &p->rmpp[i];
            if (!r) {
                r = &p->rmpp[0];
                for (int i = 1; i < MAX_REASSEMBLIES; ++i)
                    if (p->rmpp[i].stamp < r->stamp)
                        r = &p->rmpp[i];
            }
        }
        free(r->buf);
        memset(r, 0, sizeof(*r));
        r->buf = malloc(CNUAS_UMAD_MAD_BYTES);
        if (!r->buf)
            return NULL;
        r->used = 1;
        r->agent_id = m->agent_id;
        r->slid = m->lid;
        memcpy(r->tid, mad + 8, 8);
        r->stamp = ++p->rmpp_clock;
        memcpy(r->buf, mad, CNUAS_UMAD_MAD_BYTES);
        r->len = CNUAS_UMAD_MAD_BYTES;
        r->segs = 1;
    } else {
        if (!r || seg != r->segs + 1)
            return NULL; /* out of order: the sender's retry will bring it again */
        uint8_t *bigger = realloc(r->buf, r->len + CNUAS_UMAD_MAD_BYTES - (size_t)hdr);
        if (!bigger)
            return NULL;
        r->buf = bigger;
        memcpy(r->buf + r->len, mad + hdr, CNUAS_UMAD_MAD_BYTES - (size_t)hdr);
        r->len += CNUAS_UMAD_MAD_BYTES - (size_t)hdr;
        r->segs++;
    }
    if (!(flags & RMPP_LAST))
        return NULL;
    /* The ACK of the whole message, to the sender (ack_recv): the segment's headers with type
     * ACK, SegmentNumber the last one, NewWindowLast the same. */
    struct cnuas_umad_mad ack = *m;
    memset(ack.mad + 36, 0, CNUAS_UMAD_MAD_BYTES - 36);
    ack.mad[25] = RMPP_ACK;
    ack.mad[26] = (uint8_t)((mad[26] & 0xF8) | RMPP_ACTIVE);
    ack.mad[27] = 0;
    put_be32(ack.mad + 28, r->segs);
    put_be32(ack.mad + 32, r->segs);
    ack.qkey = m->qpn == 1 ? 0x80010000u : m->qkey;
    if (send(p->fd, &ack, sizeof(ack), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        DEBUG("RMPP ACK not sent: %s", strerror(errno));
    int pad = RMPP_SEG_PAYLOAD - (int)be32_at(mad + 32);
    if (pad < 0 || pad > RMPP_SEG_PAYLOAD)
        pad = 0;
    size_t total = (size_t)hdr + r->segs * (CNUAS_UMAD_MAD_BYTES - (size_t)hdr) - (size_t)pad;
    if (total > r->len)
        total = r->len;
    uint8_t *out = r->buf;
    r->buf = NULL;
    r->used = 0;
    *len = total;
    return out;
}

/* Takes what the daemon sent: requests and traps become ready; a response becomes ready if a
 * send of its agent waits for it (the kernel drops the others). Returns 0, or -EIO when the
 * daemon has gone. Port lock held. */
static int drain_stream(struct port_rec *p)
{
    for (;;) {
        struct cnuas_umad_mad m;
        ssize_t got = recv(p->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_TRUNC);
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (got <= 0) {
            p->dead = 1;
            return -EIO;
        }
        if (got != (ssize_t)sizeof(m) || m.agent_id >= CNUAS_UMAD_MAX_AGENTS ||
            !p->agents[m.agent_id].used)
            continue;
        const uint8_t *mad = m.mad;
        size_t mad_len = CNUAS_UMAD_MAD_BYTES;
        uint8_t *whole = NULL;
        if (p->agents[m.agent_id].rmpp_version && rmpp_class(m.mad[1]) &&
            (m.mad[26] & RMPP_ACTIVE)) {
            whole = rmpp_receive(p, &m, &mad_len);
            if (!whole)
                continue; /* a segment taken, an ACK consumed, or a stray dropped */
            mad = whole;
        }
        /* ib_response_mad: a TrapRepress answers the Trap it names (IBA vol. 1 §13.4.9) as a
         * GetResp answers a Get: it ends that send, which otherwise times out. */
        if ((mad[3] & 0x80) != 0 || mad[3] == 0x07) {
            const uint32_t tid_low = be32_at(mad + 12);
            struct pending **pp = &p->pending;
            while (*pp && !((*pp)->agent_id == m.agent_id && (*pp)->tid_low == tid_low &&
                            (*pp)->mgmt_class == mad[1]))
                pp = &(*pp)->next;
            if (!*pp) {
                DEBUG("response TID 0x%x for agent %u matches no send: dropped", tid_low,
                      m.agent_id);
                free(whole);
                continue;
            }
            struct pending *done = *pp;
            *pp = done->next;
            free(done);
        }
        struct ready *r = calloc(1, sizeof(*r) + mad_len);
        if (!r) {
            free(whole);
            continue;
        }
        r->hdr.agent_id = m.agent_id;
        r->hdr.status = 0;
        r->hdr.length = (uint32_t)(sizeof(r->hdr) + mad_len);
        r->hdr.addr.qpn = htonl(m.qpn);
        r->hdr.addr.qkey = htonl(m.qkey);
        r->hdr.addr.lid = htons(m.lid);
        r->hdr.addr.sl = m.sl;
        r->hdr.addr.path_bits = m.path_bits;
        r->hdr.addr.grh_present = m.grh_present;
        r->hdr.addr.pkey_index = m.pkey_index;
        memcpy(r->data, mad, mad_len);
        r->bytes = sizeof(r->hdr) + mad_len;
        free(whole);
        push_ready(p, r, 0);
    }
}

/* Waits (port lock released) until the stream or the kick is readable, or `ms` pass. */
static void wait_input(struct port_rec *p, int64_t ms)
{
    struct pollfd pfd[2] = {{.fd = p->fd, .events = POLLIN}, {.fd = p->kick, .events = POLLIN}};
    pthread_mutex_unlock(&p->lock);
    int n = poll(pfd, 2, ms > 0x7fffffff ? 0x7fffffff : (int)ms);
    if (n > 0 && (pfd[1].revents & POLLIN)) {
        uint64_t v;
        if (read(p->kick, &v, sizeof(v)) < 0) {
            /* another waiter took it */
        }
    }
    pthread_mutex_lock(&p->lock);
}

/* The common loop of umad_recv and umad_poll: waits until a MAD is ready (returns 0, port lock
 * held, p->ready set), the caller's timeout passes (-ETIMEDOUT), or the daemon goes (-EIO). A
 * negative timeout waits forever; 0 only looks (-EWOULDBLOCK). */
static int wait_ready(struct port_rec *p, int timeout_ms)
{
    const int64_t end = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
    for (;;) {
        /* Arrivals first: a response that came in just before its deadline counts. */
        int dead = drain_stream(p);
        const int64_t next_deadline = run_deadlines(p);
        if (p->ready)
            return 0;
        if (dead < 0 || p->dead)
            return -EIO;
        if (timeout_ms == 0)
            return -EWOULDBLOCK;
        int64_t wait = -1;
        if (timeout_ms > 0) {
            wait = end - now_ms();
            if (wait <= 0)
                return -ETIMEDOUT;
        }
        if (next_deadline >= 0 && (wait < 0 || next_deadline < wait))
            wait = next_deadline;
        wait_input(p, wait < 0 ? 1000 : wait);
    }
}

CNUAS_EXPORT int umad_recv(int fd, void *umad, int *length, int timeout_ms)
{
    errno = 0;
    if (!umad || !length) {
        errno = EINVAL;
        return -EINVAL;
    }
    struct port_rec *p = find_port(fd);
    if (!p) {
        errno = EBADF;
        return -EIO;
    }
    pthread_mutex_lock(&p->lock);
    int r = wait_ready(p, timeout_ms);
    if (r < 0) {
        pthread_mutex_unlock(&p->lock);
        errno = -r;
        return r;
    }
    struct ready *m = p->ready;
    const int mad_bytes = (int)(m->bytes - sizeof(m->hdr));
    if (*length < mad_bytes) {
        /* The kernel keeps the MAD queued and fails the read: a multi-packet message whose
         * first MAD fits gets that MAD, the header with the whole length, and ENOSPC (so that
         * the caller can make room and read again: saquery does); anything else EINVAL. */
        int err = EINVAL;
        if (mad_bytes > (int)CNUAS_UMAD_MAD_BYTES && *length >= (int)CNUAS_UMAD_MAD_BYTES) {
            memcpy(umad, &m->hdr, sizeof(m->hdr));
            memcpy((uint8_t *)umad + sizeof(m->hdr), m->data, CNUAS_UMAD_MAD_BYTES);
            err = ENOSPC;
        }
        pthread_mutex_unlock(&p->lock);
        *length = mad_bytes;
        errno = err;
        return -err;
    }
    p->ready = m->next;
    pthread_mutex_unlock(&p->lock);
    memcpy(umad, &m->hdr, sizeof(m->hdr));
    memcpy((uint8_t *)umad + sizeof(m->hdr), m->data, (size_t)mad_bytes);
    *length = mad_bytes;
    const int agent = (int)m->hdr.agent_id;
    free(m);
    DEBUG("mad received by agent %d length %d", agent, mad_bytes);
    return agent;
}

CNUAS_EXPORT int umad_poll(int fd, int timeout_ms)
{
    struct port_rec *p = find_port(fd);
    if (!p)
        return -EIO;
    pthread_mutex_lock(&p->lock);
    int r = wait_ready(p, timeout_ms == 0 ? 0 : timeout_ms);
    pthread_mutex_unlock(&p->lock);
    if (r == -EWOULDBLOCK)
        return -ETIMEDOUT; /* poll() with a zero timeout: nothing there */
    return r;
}

/* ---- dumps -------------------------------------------------------------------------------- */

CNUAS_EXPORT void umad_addr_dump(ib_mad_addr_t *addr)
{
    char gid_str[64];
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) {
        gid_str[i * 2] = hex[addr->gid[i] >> 4];
        gid_str[i * 2 + 1] = hex[addr->gid[i] & 0xf];
    }
    gid_str[32] = 0;
    IBWARN("qpn %d qkey 0x%x lid %u sl %d\n"
           "grh_present %d gid_index %d hop_limit %d traffic_class %d flow_label 0x%x pkey_index "
           "0x%x\n"
           "Gid 0x%s",
           ntohl(addr->qpn), ntohl(addr->qkey), ntohs(addr->lid), addr->sl, addr->grh_present,
           (int)addr->gid_index, (int)addr->hop_limit, (int)addr->traffic_class,
           addr->flow_label, addr->pkey_index, gid_str);
}

CNUAS_EXPORT void umad_dump(void *umad)
{
    struct ib_user_mad *mad = umad;
    IBWARN("agent id %d status %x timeout %d", mad->agent_id, mad->status, mad->timeout_ms);
    umad_addr_dump(&mad->addr);
}
