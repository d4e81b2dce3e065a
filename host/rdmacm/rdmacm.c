/*
 * Cnuas's librdmacm.so.1: rdma-core 44's rdma_cm API (RDMACM_1.0-1.3) on an emulated host.
 *
 * The real library talks to the kernel's rdma_cm through /dev/infiniband/rdma_cm; this one talks
 * to the daemon's rdma_cm of the host (models/emu/emu-cm-service.*) through the socket
 * `cnuas exec` names in CNUAS_CM_SOCKET (protocol: host/abi/cnuas-cm-abi.h). The daemon resolves
 * addresses, keeps the port spaces and runs the IB CM handshakes (REQ/REP/RTU, REJ, DREQ/DREP,
 * SIDR) as MADs on the simulated fabric; this library does what librdmacm does in user space:
 * it keeps struct rdma_cm_id and its events, creates QPs and CQs through libibverbs (Cnuas's,
 * beside this one) and moves QPs through INIT/RTR/RTS with the attributes the daemon gives
 * (rdma_init_qp_attr), as librdmacm's ucma_modify_qp_rtr/rts do.
 *
 * Event channels are pipes the daemon writes: channel->fd works with poll/epoll/select. IDs made
 * without a channel are synchronous (each call waits for its event), as in librdmacm.
 * rsockets are rsocket.c's, on top of this library and libibverbs as librdmacm's are. Multicast
 * joins work on InfiniBand (the daemon asks the SA for an MCMemberRecord; this library attaches
 * the ID's QP to the group, as librdmacm's ucma_process_join does) and on RoCE (the group's GID
 * is the IPv4-mapped address and the port joins the fabric's multicast routes, as the kernel's
 * cma_iboe_join_multicast has no SA to ask); ECE fails with EOPNOTSUPP.
 */
#define _GNU_SOURCE
#include "host/abi/cnuas-cm-abi.h"
#include "host/abi/cnuas-host-env.h"
#include "host/abi/cnuas-seqpacket.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CNUAS_EXPORT __attribute__((visibility("default")))
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct cnuas_channel {
    struct rdma_event_channel ch;
    uint32_t handle;
};

/* A multicast group an ID joined or is joining (librdmacm's struct cma_multicast). */
struct cnuas_mc {
    struct sockaddr_in addr;
    void *context;
    union ibv_gid mgid;
    uint16_t mlid;
    int attached;                     /* the ID's QP is attached to the group */
    struct cnuas_mc *next;
};

struct cnuas_id {
    struct rdma_cm_id id;
    struct cnuas_mc *mcs;
    uint32_t handle;
    int sync;                         /* made without a channel: calls wait for their event */
    struct ibv_sa_path_rec path;
    uint8_t responder_resources;      /* what the connection offers (CONNECT_REQUEST/REP) */
    uint8_t initiator_depth;
    int connect_error;
    int created_cqs;
    struct ibv_qp_init_attr *qp_init; /* rdma_create_ep on a passive ID: for its requests */
    struct cnuas_id *next;
};

struct cnuas_event {
    struct rdma_cm_event ev;
    uint8_t private_data[CNUAS_CM_MAX_PRIVATE];
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_call_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_sock = -1;
/* The host's verbs devices, each opened once with its default PD (librdmacm's cma_dev_array):
 * a hybrid fabric's host has two, and an ID is on the one its route names. */
#define CNUAS_CM_MAX_DEVICES 8
static struct ibv_context *g_verbs[CNUAS_CM_MAX_DEVICES];
static struct ibv_pd *g_pd[CNUAS_CM_MAX_DEVICES];
static int g_num_verbs;
static struct cnuas_id *g_ids;
static int g_debug = -1;

static void debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void debug(const char *fmt, ...)
{
    if (g_debug < 0)
        g_debug = getenv("CNUAS_RDMACM_DEBUG") != NULL;
    if (!g_debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "librdmacm(cnuas): ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int fail(int err)
{
    errno = err;
    return -1;
}

/* ---- the daemon connection -------------------------------------------------------------- */

static int open_daemon_locked(void)
{
    if (g_sock >= 0)
        return 0;
    const char *path = cnuas_host_getenv(CNUAS_CM_SOCKET_ENV);
    if (!path || !*path) {
        debug("no %s: not on an emulated host", CNUAS_CM_SOCKET_ENV);
        return ENODEV;
    }
    const int s = cnuas_seqpacket_connect(path, strlen(path));
    if (s < 0) {
        debug("cannot reach the host's rdma_cm at %s: %s", path, strerror(-s));
        return ENODEV;
    }
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_OPEN;
    q.u.open.abi_version = CNUAS_CM_ABI_VERSION;
    if (send(s, &q, sizeof(q), MSG_NOSIGNAL) != sizeof(q) ||
        recv(s, &r, sizeof(r), 0) != sizeof(r) || r.err != 0) {
        close(s);
        return EPROTO;
    }
    g_sock = s;
    return 0;
}

/* One request and its answer. Returns 0 or an errno value (errno set too). */
static int cm_call(struct cnuas_cm_req *q, struct cnuas_cm_resp *r, int *out_fd)
{
    if (out_fd)
        *out_fd = -1;
    pthread_mutex_lock(&g_call_lock);
    int err = open_daemon_locked();
    if (err) {
        pthread_mutex_unlock(&g_call_lock);
        errno = err;
        return err;
    }
    if (send(g_sock, q, sizeof(*q), MSG_NOSIGNAL) != sizeof(*q)) {
        pthread_mutex_unlock(&g_call_lock);
        fprintf(stderr, "librdmacm(cnuas): the emulated host's rdma_cm is gone\n");
        errno = ENODEV;
        return ENODEV;
    }
    struct iovec iov = {r, sizeof(*r)};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof(ctl.buf);
    ssize_t n;
    do {
        n = recvmsg(g_sock, &m, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    pthread_mutex_unlock(&g_call_lock);
    if (n != sizeof(*r)) {
        fprintf(stderr, "librdmacm(cnuas): the emulated host's rdma_cm is gone\n");
        errno = ENODEV;
        return ENODEV;
    }
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
            int fd;
            memcpy(&fd, CMSG_DATA(h), sizeof(fd));
            if (out_fd)
                *out_fd = fd;
            else
                close(fd);
        }
    }
    if (r->err) {
        debug("request %u refused: %s%s%s", q->op, strerror(r->err), r->why[0] ? ": " : "",
              r->why);
        errno = r->err;
    }
    return r->err;
}

/* The devices and their default PDs, opened once (librdmacm's ucma_init_device). */
static int open_devices(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_num_verbs == 0) { /* none yet: look again, as the old one-device library did */
        int n = 0;
        struct ibv_device **list = ibv_get_device_list(&n);
        for (int i = 0; list && i < n && g_num_verbs < CNUAS_CM_MAX_DEVICES; ++i) {
            struct ibv_context *c = ibv_open_device(list[i]);
            struct ibv_pd *pd = c ? ibv_alloc_pd(c) : NULL;
            if (!pd) {
                if (c)
                    ibv_close_device(c);
                continue;
            }
            g_verbs[g_num_verbs] = c;
            g_pd[g_num_verbs] = pd;
            ++g_num_verbs;
        }
        if (list)
            ibv_free_device_list(list);
    }
    int ok = g_num_verbs > 0;
    pthread_mutex_unlock(&g_lock);
    return ok ? 0 : ENODEV;
}

/* The opened device whose node GUID is `guid` (network order, as the daemon names an ID's
 * adapter); the first for 0 (an older daemon's answer) or a GUID no device has. */
static struct ibv_context *device_of(uint64_t guid)
{
    for (int i = 0; i < g_num_verbs; ++i)
        if (ibv_get_device_guid(g_verbs[i]->device) == guid)
            return g_verbs[i];
    return g_num_verbs > 0 ? g_verbs[0] : NULL;
}

/* The default PD of device context `verbs` (rdma_cm's: QPs made without one go there). */
static struct ibv_pd *default_pd(struct ibv_context *verbs)
{
    for (int i = 0; i < g_num_verbs; ++i)
        if (g_verbs[i] == verbs)
            return g_pd[i];
    return NULL;
}

static void register_id(struct cnuas_id *p)
{
    pthread_mutex_lock(&g_lock);
    p->next = g_ids;
    g_ids = p;
    pthread_mutex_unlock(&g_lock);
}

static void unregister_id(struct cnuas_id *p)
{
    pthread_mutex_lock(&g_lock);
    for (struct cnuas_id **pp = &g_ids; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

static struct cnuas_id *find_id(uint32_t handle)
{
    pthread_mutex_lock(&g_lock);
    struct cnuas_id *p = g_ids;
    while (p && p->handle != handle)
        p = p->next;
    pthread_mutex_unlock(&g_lock);
    return p;
}

static struct cnuas_id *to_priv(struct rdma_cm_id *id)
{
    return container_of(id, struct cnuas_id, id);
}

/* ---- event channels ---------------------------------------------------------------------- */

/* The ID's group with the address `a` (IPv4, port ignored), or NULL. */
static struct cnuas_mc *find_mc(struct cnuas_id *p, const struct cnuas_cm_addr *a)
{
    struct sockaddr_in s;
    memcpy(&s, a->bytes, sizeof(s));
    pthread_mutex_lock(&g_lock);
    struct cnuas_mc *mc = p->mcs;
    while (mc && mc->addr.sin_addr.s_addr != s.sin_addr.s_addr)
        mc = mc->next;
    pthread_mutex_unlock(&g_lock);
    return mc;
}

static void unlink_mc(struct cnuas_id *p, struct cnuas_mc *mc)
{
    pthread_mutex_lock(&g_lock);
    for (struct cnuas_mc **at = &p->mcs; *at; at = &(*at)->next) {
        if (*at == mc) {
            *at = mc->next;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    free(mc);
}

CNUAS_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_CREATE_CHANNEL;
    int fd = -1;
    if (cm_call(&q, &r, &fd) != 0)
        return NULL;
    if (fd < 0) {
        errno = EPROTO;
        return NULL;
    }
    struct cnuas_channel *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        errno = ENOMEM;
        return NULL;
    }
    c->ch.fd = fd;
    c->handle = r.u.created.handle;
    return &c->ch;
}

CNUAS_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
    if (!channel)
        return;
    struct cnuas_channel *c = container_of(channel, struct cnuas_channel, ch);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_DESTROY_CHANNEL;
    q.u.destroy_channel.channel = c->handle;
    cm_call(&q, &r, NULL);
    close(c->ch.fd);
    free(c);
}

static uint32_t channel_handle(struct rdma_event_channel *ch)
{
    return container_of(ch, struct cnuas_channel, ch)->handle;
}

/* ---- IDs --------------------------------------------------------------------------------- */

static void copy_addr(struct sockaddr_storage *to, const struct cnuas_cm_addr *a)
{
    memset(to, 0, sizeof(*to));
    memcpy(to, a->bytes, sizeof(struct sockaddr_in));
}

static void apply_route(struct cnuas_id *p, const struct cnuas_cm_route *rt)
{
    struct rdma_cm_id *id = &p->id;
    memcpy(id->route.addr.addr.ibaddr.sgid.raw, rt->sgid, 16);
    memcpy(id->route.addr.addr.ibaddr.dgid.raw, rt->dgid, 16);
    id->route.addr.addr.ibaddr.pkey = htons(rt->pkey);
    if (rt->link_layer != 0 && !id->verbs && open_devices() == 0) {
        id->verbs = device_of(rt->node_guid);
        id->port_num = 1;
        /* librdmacm gives an ID bound to a device that device's PD (ucma_get_device): UCX's
         * rdmacm transport creates its placeholder QP with ibv_create_qp(id->pd, ...). */
        if (!id->pd)
            id->pd = default_pd(id->verbs);
    }
    if (rt->resolved >= 2) {
        struct ibv_sa_path_rec *pr = &p->path;
        memset(pr, 0, sizeof(*pr));
        memcpy(pr->sgid.raw, rt->sgid, 16);
        memcpy(pr->dgid.raw, rt->dgid, 16);
        pr->slid = htons(rt->slid);
        pr->dlid = htons(rt->dlid);
        pr->hop_limit = rt->hop_limit;
        pr->traffic_class = rt->traffic_class;
        pr->reversible = 1;
        pr->numb_path = 1;
        pr->pkey = htons(rt->pkey);
        pr->sl = rt->sl;
        pr->mtu_selector = 2; /* exactly */
        pr->mtu = rt->mtu;
        pr->rate_selector = 2;
        pr->rate = rt->rate;
        pr->packet_life_time_selector = 2;
        id->route.path_rec = pr;
        id->route.num_paths = 1;
    }
}

static int id_call(struct cnuas_id *p, struct cnuas_cm_req *q, struct cnuas_cm_resp *r)
{
    q->id = p->handle;
    return cm_call(q, r, NULL);
}

/* A request that carries nothing but its operation: 0, or -1 with errno set. */
static int id_op(struct rdma_cm_id *id, uint32_t op)
{
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = op;
    return id_call(to_priv(id), &q, &r) ? -1 : 0;
}

static int query_id(struct cnuas_id *p)
{
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_QUERY;
    if (id_call(p, &q, &r))
        return -1;
    copy_addr(&p->id.route.addr.src_storage, &r.u.query.src);
    copy_addr(&p->id.route.addr.dst_storage, &r.u.query.dst);
    apply_route(p, &r.u.query.route);
    return 0;
}

static struct cnuas_id *new_id(struct rdma_event_channel *channel, void *context,
                               enum rdma_port_space ps, enum ibv_qp_type qp_type,
                               uint32_t handle)
{
    struct cnuas_id *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->id.channel = channel;
    p->id.context = context;
    p->id.ps = ps;
    p->id.qp_type = qp_type;
    p->handle = handle;
    return p;
}

static int create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
                     enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
    if (!id)
        return fail(EINVAL);
    int sync = 0;
    if (!channel) {
        channel = rdma_create_event_channel();
        if (!channel)
            return -1;
        sync = 1;
    }
    struct cnuas_id *p = new_id(channel, context, ps, qp_type, 0);
    if (!p) {
        if (sync)
            rdma_destroy_event_channel(channel);
        return fail(ENOMEM);
    }
    p->sync = sync;
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_CREATE_ID;
    q.u.create_id.cookie = (uint64_t)(uintptr_t)p;
    q.u.create_id.channel = channel_handle(channel);
    q.u.create_id.port_space = ps;
    q.u.create_id.qp_type = qp_type;
    if (cm_call(&q, &r, NULL)) {
        int e = errno;
        if (sync)
            rdma_destroy_event_channel(channel);
        free(p);
        return fail(e);
    }
    p->handle = r.u.created.handle;
    register_id(p);
    *id = &p->id;
    return 0;
}

CNUAS_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
                                void *context, enum rdma_port_space ps)
{
    /* librdmacm's ucma_get_qp_type: UDP and IPoIB spaces are UD, the others RC. */
    enum ibv_qp_type t = (ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP) ? IBV_QPT_UD : IBV_QPT_RC;
    return create_id(channel, id, context, ps, t);
}

static void destroy_cqs(struct cnuas_id *p)
{
    struct rdma_cm_id *id = &p->id;
    if (!p->created_cqs)
        return;
    if (id->recv_cq) {
        ibv_destroy_cq(id->recv_cq);
        if (id->send_cq == id->recv_cq)
            id->send_cq = NULL;
        id->recv_cq = NULL;
    }
    if (id->recv_cq_channel) {
        ibv_destroy_comp_channel(id->recv_cq_channel);
        if (id->send_cq_channel == id->recv_cq_channel)
            id->send_cq_channel = NULL;
        id->recv_cq_channel = NULL;
    }
    if (id->send_cq) {
        ibv_destroy_cq(id->send_cq);
        id->send_cq = NULL;
    }
    if (id->send_cq_channel) {
        ibv_destroy_comp_channel(id->send_cq_channel);
        id->send_cq_channel = NULL;
    }
    p->created_cqs = 0;
}

CNUAS_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
    if (!id)
        return fail(EINVAL);
    struct cnuas_id *p = to_priv(id);
    if (id->event) {
        rdma_ack_cm_event(id->event);
        id->event = NULL;
    }
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_DESTROY_ID;
    id_call(p, &q, &r);
    unregister_id(p);
    while (p->mcs) { /* the daemon leaves the groups with the ID */
        struct cnuas_mc *mc = p->mcs;
        p->mcs = mc->next;
        if (mc->attached && id->qp)
            ibv_detach_mcast(id->qp, &mc->mgid, mc->mlid);
        free(mc);
    }
    if (p->sync)
        rdma_destroy_event_channel(id->channel);
    free(p->qp_init);
    free(p);
    return 0;
}

CNUAS_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
    struct cnuas_id *p = to_priv(id);
    int sync = 0;
    if (!channel) {
        channel = rdma_create_event_channel();
        if (!channel)
            return -1;
        sync = 1;
    }
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_MIGRATE_ID;
    q.u.migrate.channel = channel_handle(channel);
    if (id_call(p, &q, &r)) {
        int e = errno;
        if (sync)
            rdma_destroy_event_channel(channel);
        return fail(e);
    }
    if (p->sync)
        rdma_destroy_event_channel(id->channel);
    id->channel = channel;
    p->sync = sync;
    return 0;
}

static int put_addr(struct cnuas_cm_addr *a, const struct sockaddr *s)
{
    memset(a, 0, sizeof(*a));
    if (!s)
        return 0;
    if (s->sa_family == AF_INET) {
        memcpy(a->bytes, s, sizeof(struct sockaddr_in));
        return 0;
    }
    if (s->sa_family == AF_INET6 || s->sa_family == AF_IB)
        return EAFNOSUPPORT;
    return EINVAL;
}

CNUAS_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
    if (!id || !addr)
        return fail(EINVAL);
    struct cnuas_id *p = to_priv(id);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_BIND;
    int e = put_addr(&q.u.bind.addr, addr);
    if (e)
        return fail(e);
    if (id_call(p, &q, &r))
        return -1;
    copy_addr(&id->route.addr.src_storage, &r.u.query.src);
    apply_route(p, &r.u.query.route);
    return 0;
}

/* Wait for the event a synchronous ID's call causes (librdmacm's ucma_complete). */
static int complete_sync(struct cnuas_id *p)
{
    if (!p->sync)
        return 0;
    if (p->id.event) {
        rdma_ack_cm_event(p->id.event);
        p->id.event = NULL;
    }
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(p->id.channel, &ev))
        return -1;
    p->id.event = ev;
    if (ev->status) {
        int e = ev->status < 0 ? -ev->status : ECONNREFUSED;
        return fail(e);
    }
    if (ev->event == RDMA_CM_EVENT_ADDR_ERROR || ev->event == RDMA_CM_EVENT_ROUTE_ERROR ||
        ev->event == RDMA_CM_EVENT_UNREACHABLE || ev->event == RDMA_CM_EVENT_REJECTED ||
        ev->event == RDMA_CM_EVENT_CONNECT_ERROR)
        return fail(ECONNREFUSED);
    return 0;
}

CNUAS_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
                                   struct sockaddr *dst_addr, int timeout_ms)
{
    if (!id || !dst_addr)
        return fail(EINVAL);
    struct cnuas_id *p = to_priv(id);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_RESOLVE_ADDR;
    int e = put_addr(&q.u.resolve_addr.src, src_addr);
    if (!e)
        e = put_addr(&q.u.resolve_addr.dst, dst_addr);
    if (e)
        return fail(e);
    q.u.resolve_addr.timeout_ms = timeout_ms > 0 ? (uint32_t)timeout_ms : 0;
    if (id_call(p, &q, &r))
        return -1;
    memcpy(&id->route.addr.dst_storage, dst_addr, sizeof(struct sockaddr_in));
    return complete_sync(p);
}

CNUAS_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
    if (!id)
        return fail(EINVAL);
    struct cnuas_id *p = to_priv(id);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_RESOLVE_ROUTE;
    q.u.resolve_route.timeout_ms = timeout_ms > 0 ? (uint32_t)timeout_ms : 0;
    if (id_call(p, &q, &r))
        return -1;
    return complete_sync(p);
}

/* ---- QPs --------------------------------------------------------------------------------- */

static void to_ibv_qp_attr(const struct cnuas_cm_qp_attr *a, struct ibv_qp_attr *qa, int *mask)
{
    qa->qp_state = a->qp_state;
    qa->qp_access_flags = a->qp_access_flags;
    qa->qkey = a->qkey;
    qa->path_mtu = a->path_mtu;
    qa->dest_qp_num = a->dest_qp_num;
    qa->rq_psn = a->rq_psn;
    qa->sq_psn = a->sq_psn;
    qa->pkey_index = a->pkey_index;
    qa->port_num = a->port_num;
    qa->max_rd_atomic = a->max_rd_atomic;
    qa->max_dest_rd_atomic = a->max_dest_rd_atomic;
    qa->min_rnr_timer = a->min_rnr_timer;
    qa->timeout = a->timeout;
    qa->retry_cnt = a->retry_cnt;
    qa->rnr_retry = a->rnr_retry;
    memset(&qa->ah_attr, 0, sizeof(qa->ah_attr));
    qa->ah_attr.dlid = a->dlid;
    qa->ah_attr.sl = a->sl;
    qa->ah_attr.is_global = a->is_global;
    qa->ah_attr.port_num = a->port_num ? a->port_num : 1;
    qa->ah_attr.static_rate = a->static_rate;
    memcpy(qa->ah_attr.grh.dgid.raw, a->dgid, 16);
    qa->ah_attr.grh.flow_label = a->flow_label;
    qa->ah_attr.grh.sgid_index = a->sgid_index;
    qa->ah_attr.grh.hop_limit = a->hop_limit;
    qa->ah_attr.grh.traffic_class = a->traffic_class;
    *mask = (int)a->attr_mask;
}

CNUAS_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
                                   int *qp_attr_mask)
{
    if (!id || !qp_attr || !qp_attr_mask)
        return fail(EINVAL);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_INIT_QP_ATTR;
    q.u.init_qp_attr.qp_state = qp_attr->qp_state;
    if (id_call(to_priv(id), &q, &r))
        return -1;
    to_ibv_qp_attr(&r.u.qp_attr, qp_attr, qp_attr_mask);
    return 0;
}

static int modify_to(struct rdma_cm_id *id, enum ibv_qp_state state, int max_rd)
{
    struct ibv_qp_attr a;
    int mask;
    memset(&a, 0, sizeof(a));
    a.qp_state = state;
    if (rdma_init_qp_attr(id, &a, &mask))
        return -1;
    if (max_rd >= 0) {
        if (state == IBV_QPS_RTR && (mask & IBV_QP_MAX_DEST_RD_ATOMIC))
            a.max_dest_rd_atomic = (uint8_t)max_rd;
        if (state == IBV_QPS_RTS && (mask & IBV_QP_MAX_QP_RD_ATOMIC))
            a.max_rd_atomic = (uint8_t)max_rd;
    }
    int e = ibv_modify_qp(id->qp, &a, mask);
    if (e) {
        debug("ibv_modify_qp to state %d: %s", state, strerror(e));
        return fail(e);
    }
    return 0;
}

/* librdmacm's ucma_modify_qp_rtr: INIT again with the connection's access rights, then RTR. */
static int modify_rtr(struct rdma_cm_id *id, int resp_res)
{
    if (modify_to(id, IBV_QPS_INIT, -1))
        return -1;
    return modify_to(id, IBV_QPS_RTR, resp_res);
}

static int modify_err(struct rdma_cm_id *id)
{
    if (!id->qp)
        return 0;
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    return ibv_modify_qp(id->qp, &a, IBV_QP_STATE);
}

static int init_ud_qp(struct rdma_cm_id *id)
{
    if (modify_to(id, IBV_QPS_INIT, -1))
        return -1;
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    int e = ibv_modify_qp(id->qp, &a, IBV_QP_STATE);
    if (e)
        return fail(e);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    e = ibv_modify_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
    return e ? fail(e) : 0;
}

static int create_cqs(struct cnuas_id *p, uint32_t send_size, uint32_t recv_size)
{
    struct rdma_cm_id *id = &p->id;
    if (recv_size) {
        id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
        if (!id->recv_cq_channel)
            goto err;
        id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
        if (!id->recv_cq)
            goto err;
    }
    if (send_size) {
        id->send_cq_channel = ibv_create_comp_channel(id->verbs);
        if (!id->send_cq_channel)
            goto err;
        id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
        if (!id->send_cq)
            goto err;
    }
    p->created_cqs = 1;
    return 0;
err:
    p->created_cqs = 1;
    destroy_cqs(p);
    return fail(ENOMEM);
}

CNUAS_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
    if (!id || !attr)
        return fail(EINVAL);
    struct cnuas_id *p = to_priv(id);
    if (!id->verbs || id->qp)
        return fail(EINVAL);
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
        attr->pd = id->pd ? id->pd : default_pd(id->verbs);
        attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
    }
    if (attr->pd->context != id->verbs)
        return fail(EINVAL);
    if (id->qp_type == IBV_QPT_UD && attr->qp_type != IBV_QPT_UD)
        return fail(EINVAL);
    if ((!attr->send_cq || !attr->recv_cq) &&
        create_cqs(p, attr->send_cq ? 0 : attr->cap.max_send_wr,
                   attr->recv_cq ? 0 : attr->cap.max_recv_wr))
        return -1;
    if (!attr->send_cq)
        attr->send_cq = id->send_cq;
    if (!attr->recv_cq)
        attr->recv_cq = id->recv_cq;
    if (attr->srq == NULL && id->srq)
        attr->srq = id->srq;
    struct ibv_qp *qp = ibv_create_qp_ex(id->verbs, attr);
    if (!qp) {
        int e = errno ? errno : ENOMEM;
        destroy_cqs(p);
        return fail(e);
    }
    id->qp = qp;
    id->pd = attr->pd;
    int ret = attr->qp_type == IBV_QPT_UD ? init_ud_qp(id) : modify_to(id, IBV_QPS_INIT, -1);
    if (ret) {
        int e = errno;
        ibv_destroy_qp(qp);
        id->qp = NULL;
        destroy_cqs(p);
        return fail(e);
    }
    return 0;
}

CNUAS_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
                                struct ibv_qp_init_attr *qp_init_attr)
{
    if (!id || !qp_init_attr)
        return fail(EINVAL);
    if (pd && id->verbs && pd->context != id->verbs)
        return fail(EINVAL);
    struct ibv_qp_init_attr_ex ex;
    memset(&ex, 0, sizeof(ex));
    memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd ? pd : (id->pd ? id->pd : default_pd(id->verbs));
    int ret = rdma_create_qp_ex(id, &ex);
    if (ret)
        return ret;
    memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
    return 0;
}

CNUAS_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
    if (!id || !id->qp)
        return;
    ibv_destroy_qp(id->qp);
    id->qp = NULL;
    destroy_cqs(to_priv(id));
}

CNUAS_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
    if (!id || !attr || !id->verbs)
        return fail(EINVAL);
    if (attr->srq_type != IBV_SRQT_BASIC)
        return fail(EOPNOTSUPP); /* XRC is not modelled */
    struct ibv_pd *pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd
                            ? attr->pd
                            : (id->pd ? id->pd : default_pd(id->verbs));
    struct ibv_srq_init_attr a;
    memset(&a, 0, sizeof(a));
    a.srq_context = attr->srq_context;
    a.attr = attr->attr;
    struct ibv_srq *srq = ibv_create_srq(pd, &a);
    if (!srq)
        return -1;
    attr->attr = a.attr;
    id->srq = srq;
    id->pd = pd;
    return 0;
}

CNUAS_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
                                 struct ibv_srq_init_attr *attr)
{
    if (!attr)
        return fail(EINVAL);
    struct ibv_srq_init_attr_ex ex;
    memset(&ex, 0, sizeof(ex));
    ex.srq_context = attr->srq_context;
    ex.attr = attr->attr;
    ex.srq_type = IBV_SRQT_BASIC;
    if (pd) {
        ex.pd = pd;
        ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
    }
    int ret = rdma_create_srq_ex(id, &ex);
    if (!ret)
        attr->attr = ex.attr;
    return ret;
}

CNUAS_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
    if (!id || !id->srq)
        return;
    ibv_destroy_srq(id->srq);
    id->srq = NULL;
}

/* ---- connections ------------------------------------------------------------------------- */

static void put_conn(struct cnuas_cm_conn_param *c, const struct rdma_conn_param *u)
{
    memset(c, 0, sizeof(*c));
    if (!u)
        return;
    c->qp_num = u->qp_num;
    c->srq = u->srq;
    c->responder_resources = u->responder_resources;
    c->initiator_depth = u->initiator_depth;
    c->flow_control = u->flow_control;
    c->retry_count = u->retry_count;
    c->rnr_retry_count = u->rnr_retry_count;
    c->private_data_len = u->private_data ? u->private_data_len : 0;
    if (c->private_data_len)
        memcpy(c->private_data, u->private_data,
               c->private_data_len < CNUAS_CM_MAX_PRIVATE ? c->private_data_len
                                                          : CNUAS_CM_MAX_PRIVATE);
}

static uint8_t device_rd_atom(struct ibv_context *verbs, int init)
{
    struct ibv_device_attr a;
    if (!verbs || ibv_query_device(verbs, &a))
        return 1;
    int v = init ? a.max_qp_init_rd_atom : a.max_qp_rd_atom;
    return (uint8_t)(v > 255 ? 255 : v);
}

CNUAS_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
    if (!id)
        return fail(EINVAL);
    struct cnuas_id *p = to_priv(id);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_CONNECT;
    put_conn(&q.u.conn, conn_param);
    if (!conn_param) {
        q.u.conn.retry_count = 7;
        q.u.conn.rnr_retry_count = 7;
    }
    /* RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH: as many as the device allows (ucma_valid_param). */
    if (!conn_param || q.u.conn.responder_resources == RDMA_MAX_RESP_RES)
        q.u.conn.responder_resources = device_rd_atom(id->verbs, 0);
    if (!conn_param || q.u.conn.initiator_depth == RDMA_MAX_INIT_DEPTH)
        q.u.conn.initiator_depth = device_rd_atom(id->verbs, 1);
    if (id->qp) {
        q.u.conn.qp_num = id->qp->qp_num;
        q.u.conn.srq = id->srq != NULL;
    }
    p->responder_resources = q.u.conn.responder_resources;
    p->initiator_depth = q.u.conn.initiator_depth;
    if (id_call(p, &q, &r))
        return -1;
    return complete_sync(p);
}

CNUAS_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
    if (!id)
        return fail(EINVAL);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_LISTEN;
    q.u.listen.backlog = backlog;
    if (id_call(to_priv(id), &q, &r))
        return -1;
    return query_id(to_priv(id));
}

CNUAS_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
    if (!id)
        return fail(EINVAL);
    struct cnuas_id *p = to_priv(id);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_ACCEPT;
    put_conn(&q.u.conn, conn_param);
    int resp_res = p->responder_resources, init_depth = p->initiator_depth;
    if (conn_param) {
        if (conn_param->responder_resources != RDMA_MAX_RESP_RES)
            resp_res = conn_param->responder_resources < p->responder_resources
                           ? conn_param->responder_resources
                           : p->responder_resources;
        if (conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
            init_depth = conn_param->initiator_depth < p->initiator_depth
                             ? conn_param->initiator_depth
                             : p->initiator_depth;
    }
    q.u.conn.responder_resources = (uint8_t)resp_res;
    q.u.conn.initiator_depth = (uint8_t)init_depth;
    if (!conn_param)
        q.u.conn.rnr_retry_count = 7;
    if (id->qp) {
        q.u.conn.qp_num = id->qp->qp_num;
        q.u.conn.srq = id->srq != NULL;
        if (id->qp_type != IBV_QPT_UD) {
            if (modify_rtr(id, resp_res) || modify_to(id, IBV_QPS_RTS, init_depth))
                return -1;
        } else {
            struct ibv_qp_attr a;
            struct ibv_qp_init_attr ia;
            if (ibv_query_qp(id->qp, &a, IBV_QP_QKEY, &ia) == 0)
                q.u.conn.qkey = a.qkey;
        }
    } else if (id->qp_type == IBV_QPT_UD && conn_param) {
        q.u.conn.qkey = 0;
    }
    if (id->event) {
        rdma_ack_cm_event(id->event);
        id->event = NULL;
    }
    if (id_call(p, &q, &r)) {
        int e = errno;
        modify_err(id);
        return fail(e);
    }
    if (id->qp_type == IBV_QPT_UD)
        return 0;
    return complete_sync(p);
}

static int reject(struct rdma_cm_id *id, const void *private_data, uint8_t len)
{
    if (!id)
        return fail(EINVAL);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_REJECT;
    if (private_data && len) {
        q.u.reject.private_data_len = len;
        memcpy(q.u.reject.private_data, private_data,
               len < CNUAS_CM_MAX_PRIVATE ? len : CNUAS_CM_MAX_PRIVATE);
    }
    if (id->event) {
        rdma_ack_cm_event(id->event);
        id->event = NULL;
    }
    return id_call(to_priv(id), &q, &r) ? -1 : 0;
}

CNUAS_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
                             uint8_t private_data_len)
{
    return reject(id, private_data, private_data_len);
}

CNUAS_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
                                 uint8_t private_data_len)
{
    (void)id;
    (void)private_data;
    (void)private_data_len;
    return fail(EOPNOTSUPP); /* enhanced connection establishment is not modelled */
}

CNUAS_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
    (void)id;
    (void)ece;
    return fail(EOPNOTSUPP);
}

CNUAS_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
    (void)id;
    (void)ece;
    return fail(EOPNOTSUPP);
}

/* rdma_notify(3): the consumer's QP saw IBV_EVENT_COMM_EST (a packet came before the RTU): the
 * passive side's connection counts as established (the kernel's ib_cm_notify, cm_establish:
 * EISCONN when it already is, EINVAL before an accept). Other events are refused (EINVAL), as
 * ib_cm_notify refuses all but COMM_EST and PATH_MIG, and there are no alternate paths here. */
CNUAS_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
    if (!id || event != IBV_EVENT_COMM_EST)
        return fail(EINVAL);
    return id_op(id, CNUAS_CM_OP_ESTABLISH);
}

/* rdma_establish(3): the active side of a connection made without a QP on the ID (rdma_connect
 * with conn_param->qp_num, as UCX's rdmacm transport makes them) got its CONNECT_RESPONSE and
 * has moved its own QP to RTS: the RTU goes out (librdmacm's ucma_process_conn_resp, without
 * the QP transitions). An ID with a QP had that done when the response came (EINVAL). */
CNUAS_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
    if (!id || id->qp)
        return fail(EINVAL);
    return id_op(id, CNUAS_CM_OP_ACCEPT);
}

CNUAS_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
    if (!id)
        return fail(EINVAL);
    /* librdmacm moves the QP to the error state first, so its work requests flush. */
    modify_err(id);
    return id_op(id, CNUAS_CM_OP_DISCONNECT);
}

/* ---- events ------------------------------------------------------------------------------ */

static void fill_conn_event(struct cnuas_event *e, const struct cnuas_cm_event *rec)
{
    struct rdma_conn_param *c = &e->ev.param.conn;
    c->responder_resources = rec->param.responder_resources;
    c->initiator_depth = rec->param.initiator_depth;
    c->flow_control = rec->param.flow_control;
    c->retry_count = rec->param.retry_count;
    c->rnr_retry_count = rec->param.rnr_retry_count;
    c->srq = rec->param.srq;
    c->qp_num = rec->param.qp_num;
    c->private_data_len = rec->param.private_data_len;
    memcpy(e->private_data, rec->param.private_data, CNUAS_CM_MAX_PRIVATE);
    c->private_data = c->private_data_len ? e->private_data : NULL;
}

static void fill_ud_event(struct cnuas_event *e, const struct cnuas_cm_event *rec)
{
    struct rdma_ud_param *u = &e->ev.param.ud;
    u->qp_num = rec->param.qp_num;
    u->qkey = rec->param.qkey;
    u->private_data_len = rec->param.private_data_len;
    memcpy(e->private_data, rec->param.private_data, CNUAS_CM_MAX_PRIVATE);
    u->private_data = u->private_data_len ? e->private_data : NULL;
    int mask;
    struct ibv_qp_attr qa;
    memset(&qa, 0, sizeof(qa));
    to_ibv_qp_attr(&rec->ah, &qa, &mask);
    u->ah_attr = qa.ah_attr;
    u->ah_attr.port_num = 1;
}

CNUAS_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
                                   struct rdma_cm_event **event)
{
    if (!channel || !event)
        return fail(EINVAL);
    for (;;) {
        struct cnuas_cm_event rec;
        ssize_t n = read(channel->fd, &rec, sizeof(rec));
        if (n < 0)
            return -1; /* EAGAIN on a non-blocking channel, EINTR */
        if (n != sizeof(rec))
            return fail(n == 0 ? ENODEV : EPROTO);
        struct cnuas_event *e = calloc(1, sizeof(*e));
        if (!e)
            return fail(ENOMEM);
        e->ev.event = rec.event;
        e->ev.status = rec.status;
        if (rec.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            struct cnuas_id *l = find_id(rec.listen_id);
            if (!l) {
                free(e);
                continue; /* the listener is gone */
            }
            struct cnuas_id *p =
                new_id(l->id.channel, l->id.context, l->id.ps, l->id.qp_type, rec.id);
            if (!p) {
                free(e);
                return fail(ENOMEM);
            }
            p->responder_resources = rec.param.responder_resources;
            p->initiator_depth = rec.param.initiator_depth;
            copy_addr(&p->id.route.addr.src_storage, &rec.src);
            copy_addr(&p->id.route.addr.dst_storage, &rec.dst);
            apply_route(p, &rec.route);
            if (l->id.pd)
                p->id.pd = l->id.pd;
            register_id(p);
            e->ev.id = &p->id;
            e->ev.listen_id = &l->id;
            if (p->id.qp_type == IBV_QPT_UD)
                fill_ud_event(e, &rec);
            else
                fill_conn_event(e, &rec);
            *event = &e->ev;
            return 0;
        }
        struct cnuas_id *p = find_id(rec.id);
        if (!p) {
            free(e);
            continue; /* an event for an ID already destroyed */
        }
        struct rdma_cm_id *id = &p->id;
        e->ev.id = id;
        switch (rec.event) {
        case RDMA_CM_EVENT_ADDR_RESOLVED:
            copy_addr(&id->route.addr.src_storage, &rec.src);
            apply_route(p, &rec.route);
            break;
        case RDMA_CM_EVENT_ROUTE_RESOLVED:
            apply_route(p, &rec.route);
            break;
        case RDMA_CM_EVENT_CONNECT_RESPONSE:
            fill_conn_event(e, &rec);
            if (!id->qp)
                break;
            /* librdmacm's ucma_process_conn_resp: RTR, RTS, then the RTU (ACCEPT). */
            p->responder_resources = rec.param.responder_resources < p->responder_resources
                                         ? rec.param.responder_resources
                                         : p->responder_resources;
            p->initiator_depth = rec.param.initiator_depth < p->initiator_depth
                                     ? rec.param.initiator_depth
                                     : p->initiator_depth;
            {
                struct cnuas_cm_req q;
                struct cnuas_cm_resp r;
                memset(&q, 0, sizeof(q));
                q.op = CNUAS_CM_OP_ACCEPT;
                if (modify_rtr(id, p->responder_resources) ||
                    modify_to(id, IBV_QPS_RTS, p->initiator_depth) || id_call(p, &q, &r)) {
                    e->ev.status = -errno;
                    e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
                    p->connect_error = 1;
                    modify_err(id);
                } else {
                    e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
                }
            }
            break;
        case RDMA_CM_EVENT_ESTABLISHED:
            if (id->qp_type == IBV_QPT_UD)
                fill_ud_event(e, &rec);
            else
                fill_conn_event(e, &rec);
            break;
        case RDMA_CM_EVENT_MULTICAST_JOIN:
        case RDMA_CM_EVENT_MULTICAST_ERROR: {
            struct cnuas_mc *mc = find_mc(p, &rec.dst);
            if (!mc) {
                free(e);
                continue; /* left meanwhile */
            }
            fill_ud_event(e, &rec);
            /* librdmacm gives the join's context in private_data (ucma_process_join). */
            e->ev.param.ud.private_data = mc->context;
            e->ev.param.ud.private_data_len = 0;
            if (rec.event == RDMA_CM_EVENT_MULTICAST_ERROR) {
                unlink_mc(p, mc);
                break;
            }
            mc->mgid = e->ev.param.ud.ah_attr.grh.dgid;
            mc->mlid = e->ev.param.ud.ah_attr.dlid;
            if (id->qp) {
                int err = ibv_attach_mcast(id->qp, &mc->mgid, mc->mlid);
                if (err) {
                    e->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
                    e->ev.status = -err;
                } else {
                    mc->attached = 1;
                }
            }
            break;
        }
        case RDMA_CM_EVENT_REJECTED:
        case RDMA_CM_EVENT_DISCONNECTED:
            if (rec.event == RDMA_CM_EVENT_DISCONNECTED && p->connect_error) {
                free(e);
                continue;
            }
            if (id->qp_type == IBV_QPT_UD)
                fill_ud_event(e, &rec);
            else
                fill_conn_event(e, &rec);
            break;
        default:
            break;
        }
        *event = &e->ev;
        return 0;
    }
}

CNUAS_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
    if (!event)
        return fail(EINVAL);
    free(container_of(event, struct cnuas_event, ev));
    return 0;
}

CNUAS_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
    switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
    default: return "UNKNOWN EVENT";
    }
}

/* ---- options, devices, ports ------------------------------------------------------------- */

CNUAS_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
                                 size_t optlen)
{
    if (!id || (!optval && optlen))
        return fail(EINVAL);
    if (level == RDMA_OPTION_ID &&
        (optname == RDMA_OPTION_ID_TOS || optname == RDMA_OPTION_ID_ACK_TIMEOUT)) {
        /* The type of service (the route's traffic class on RoCE, the PathRecord query's QoS
         * class on InfiniBand) and the local ACK timeout of the ID's QP, kept by the daemon
         * as the kernel keeps them in the ID; both are one byte there (else EINVAL). */
        if (optlen != sizeof(uint8_t))
            return fail(EINVAL);
        struct cnuas_cm_req q;
        struct cnuas_cm_resp r;
        memset(&q, 0, sizeof(q));
        q.op = CNUAS_CM_OP_SET_OPTION;
        q.u.option.level = (uint32_t)level;
        q.u.option.optname = (uint32_t)optname;
        q.u.option.value = *(const uint8_t *)optval;
        return id_call(to_priv(id), &q, &r) ? -1 : 0;
    }
    if (level == RDMA_OPTION_ID &&
        (optname == RDMA_OPTION_ID_REUSEADDR || optname == RDMA_OPTION_ID_AFONLY))
        return 0; /* accepted: the emulated CM's ports are its own, IPv4 only */
    if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
        return fail(EOPNOTSUPP); /* AF_IB path records: not offered */
    return fail(ENOSYS); /* the kernel's ucma_set_option for a level or name it does not know */
}

CNUAS_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
    struct ibv_context **list = calloc(CNUAS_CM_MAX_DEVICES + 1, sizeof(*list));
    if (!list)
        return NULL;
    int n = 0;
    if (open_devices() == 0)
        for (; n < g_num_verbs; ++n)
            list[n] = g_verbs[n];
    if (num_devices)
        *num_devices = n;
    return list;
}

CNUAS_EXPORT void rdma_free_devices(struct ibv_context **list)
{
    free(list);
}

static __be16 port_of(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_port;
    if (a->sa_family == AF_INET6)
        return ((const struct sockaddr_in6 *)a)->sin6_port;
    return 0;
}

CNUAS_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
    return port_of(&id->route.addr.src_addr);
}

CNUAS_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
    return port_of(&id->route.addr.dst_addr);
}

/* JoinState of MCMemberRecord (IBA vol. 1 15.2.5.17): full member, send-only full member. */
#define CNUAS_JOIN_FULL_MEMBER 1
#define CNUAS_JOIN_SENDONLY_FULL_MEMBER 8

static int join(struct rdma_cm_id *id, struct sockaddr *addr, uint8_t join_state, void *context)
{
    if (!id || !addr)
        return fail(EINVAL);
    if (addr->sa_family != AF_INET)
        return fail(addr->sa_family == AF_INET6 || addr->sa_family == AF_IB ? EAFNOSUPPORT
                                                                             : EINVAL);
    struct cnuas_id *p = to_priv(id);
    struct cnuas_mc *mc = calloc(1, sizeof(*mc));
    if (!mc)
        return fail(ENOMEM);
    memcpy(&mc->addr, addr, sizeof(mc->addr));
    mc->context = context;
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_JOIN_MCAST;
    put_addr(&q.u.mcast.addr, addr);
    q.u.mcast.join_state = join_state;
    pthread_mutex_lock(&g_lock);
    mc->next = p->mcs;
    p->mcs = mc;
    pthread_mutex_unlock(&g_lock);
    if (id_call(p, &q, &r)) {
        int e = errno;
        unlink_mc(p, mc);
        return fail(e);
    }
    return complete_sync(p);
}

CNUAS_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
    return join(id, addr, CNUAS_JOIN_FULL_MEMBER, context);
}

CNUAS_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
                                        struct rdma_cm_join_mc_attr_ex *mc_join_attr,
                                        void *context)
{
    if (!mc_join_attr)
        return fail(EINVAL);
    /* librdmacm: both fields are required; the flags are full member or send-only full
     * member (RDMA_MC_JOIN_FLAG_FULLMEMBER 0, _SENDONLY_FULLMEMBER 1). */
    const uint32_t need = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
    if ((mc_join_attr->comp_mask & need) != need || mc_join_attr->comp_mask & ~need)
        return fail(EINVAL);
    uint8_t state;
    if (mc_join_attr->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER)
        state = CNUAS_JOIN_FULL_MEMBER;
    else if (mc_join_attr->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
        state = CNUAS_JOIN_SENDONLY_FULL_MEMBER;
    else
        return fail(EINVAL);
    return join(id, mc_join_attr->addr, state, context);
}

CNUAS_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
    if (!id || !addr)
        return fail(EINVAL);
    struct cnuas_id *p = to_priv(id);
    struct cnuas_cm_addr a;
    if (put_addr(&a, addr))
        return fail(EADDRNOTAVAIL);
    struct cnuas_mc *mc = find_mc(p, &a);
    if (!mc)
        return fail(EADDRNOTAVAIL); /* never joined */
    /* librdmacm detaches the QP first, then has the kernel leave the group. */
    if (mc->attached && id->qp)
        ibv_detach_mcast(id->qp, &mc->mgid, mc->mlid);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_LEAVE_MCAST;
    q.u.mcast.addr = a;
    int err = id_call(p, &q, &r) ? errno : 0;
    unlink_mc(p, mc);
    return err ? fail(err) : 0;
}

/* ---- rdma_getaddrinfo and endpoints ------------------------------------------------------ */

static int copy_sockaddr(struct sockaddr **to, socklen_t *len, const struct sockaddr *from,
                         socklen_t flen)
{
    *to = malloc(flen);
    if (!*to)
        return ENOMEM;
    memcpy(*to, from, flen);
    *len = flen;
    return 0;
}

CNUAS_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
    while (res) {
        struct rdma_addrinfo *next = res->ai_next;
        free(res->ai_src_addr);
        free(res->ai_dst_addr);
        free(res->ai_src_canonname);
        free(res->ai_dst_canonname);
        free(res->ai_route);
        free(res->ai_connect);
        free(res);
        res = next;
    }
}

/* librdmacm's rdma_getaddrinfo: a node or service is resolved with getaddrinfo (a passive
 * one as the source address, else as the destination); with neither, the hints' own
 * addresses are the answer (libfabric's verbs provider asks so for an address it has). Either
 * way a source address in the hints is kept when resolution gave none. */
CNUAS_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
                                  const struct rdma_addrinfo *hints,
                                  struct rdma_addrinfo **res)
{
    if (!res || (!node && !service && !hints))
        return fail(EINVAL);
    if (hints && hints->ai_family && hints->ai_family != AF_INET)
        return fail(EAFNOSUPPORT); /* the emulated fabrics are IPv4 */
    const int passive = hints && (hints->ai_flags & RAI_PASSIVE);
    struct addrinfo *ai = NULL;
    if (node || service) {
        struct addrinfo h;
        memset(&h, 0, sizeof(h));
        h.ai_family = AF_INET;
        h.ai_socktype = SOCK_STREAM;
        if (passive)
            h.ai_flags |= AI_PASSIVE;
        if (hints && (hints->ai_flags & RAI_NUMERICHOST))
            h.ai_flags |= AI_NUMERICHOST;
        int rc = getaddrinfo(node, service, &h, &ai);
        if (rc)
            return rc == EAI_SYSTEM ? -1 : fail(EADDRNOTAVAIL);
    }
    struct rdma_addrinfo *r = calloc(1, sizeof(*r));
    if (!r) {
        freeaddrinfo(ai);
        return fail(ENOMEM);
    }
    r->ai_flags = hints ? hints->ai_flags : 0;
    r->ai_family = AF_INET;
    r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
    r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
    int err = 0;
    if (ai && passive)
        err = copy_sockaddr(&r->ai_src_addr, &r->ai_src_len, ai->ai_addr, ai->ai_addrlen);
    else if (ai)
        err = copy_sockaddr(&r->ai_dst_addr, &r->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
    else if (hints->ai_dst_len)
        err = copy_sockaddr(&r->ai_dst_addr, &r->ai_dst_len, hints->ai_dst_addr,
                            hints->ai_dst_len);
    if (!err && !r->ai_src_len && hints && hints->ai_src_len)
        err = copy_sockaddr(&r->ai_src_addr, &r->ai_src_len, hints->ai_src_addr,
                            hints->ai_src_len);
    if (!err && node) {
        r->ai_dst_canonname = passive ? NULL : strdup(node);
        if (passive)
            r->ai_src_canonname = strdup(node);
    }
    freeaddrinfo(ai);
    if (err) {
        rdma_freeaddrinfo(r);
        return fail(err);
    }
    *res = r;
    return 0;
}

CNUAS_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
                                struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
    if (!id || !res)
        return fail(EINVAL);
    struct rdma_cm_id *cm_id;
    if (create_id(NULL, &cm_id, NULL, res->ai_port_space, res->ai_qp_type))
        return -1;
    struct cnuas_id *p = to_priv(cm_id);
    int ret;
    /* librdmacm's rdma_create_ep: the QPs it makes are of the address's QP type. */
    if (qp_init_attr)
        qp_init_attr->qp_type = res->ai_qp_type;
    if (res->ai_flags & RAI_PASSIVE) {
        ret = rdma_bind_addr(cm_id, res->ai_src_addr);
        if (ret)
            goto err;
        if (qp_init_attr) {
            p->qp_init = malloc(sizeof(*qp_init_attr));
            if (!p->qp_init) {
                errno = ENOMEM;
                goto err;
            }
            *p->qp_init = *qp_init_attr;
        }
        cm_id->pd = pd;
        *id = cm_id;
        return 0;
    }
    ret = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
    if (ret)
        goto err;
    ret = rdma_resolve_route(cm_id, 2000);
    if (ret)
        goto err;
    if (qp_init_attr) {
        ret = rdma_create_qp(cm_id, pd, qp_init_attr);
        if (ret)
            goto err;
    }
    *id = cm_id;
    return 0;
err: {
    int e = errno;
    rdma_destroy_id(cm_id);
    return fail(e);
}
}

CNUAS_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
    if (!id)
        return;
    if (id->qp)
        rdma_destroy_qp(id);
    if (id->srq)
        rdma_destroy_srq(id);
    rdma_destroy_id(id);
}

CNUAS_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
    if (!listen || !id)
        return fail(EINVAL);
    struct cnuas_id *l = to_priv(listen);
    if (!l->sync)
        return fail(EINVAL);
    if (listen->event) {
        rdma_ack_cm_event(listen->event);
        listen->event = NULL;
    }
    struct rdma_cm_event *ev;
    for (;;) {
        if (rdma_get_cm_event(listen->channel, &ev))
            return -1;
        if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
            break;
        rdma_ack_cm_event(ev); /* nothing else concerns a synchronous listener */
    }
    if (ev->status) {
        int e = -ev->status;
        rdma_ack_cm_event(ev);
        return fail(e);
    }
    struct rdma_cm_id *nid = ev->id;
    struct cnuas_id *n = to_priv(nid);
    /* A synchronous listener's requests are synchronous too, each on its own channel. */
    if (rdma_migrate_id(nid, NULL)) {
        int e = errno;
        rdma_reject(nid, NULL, 0);
        rdma_ack_cm_event(ev);
        rdma_destroy_id(nid);
        return fail(e);
    }
    (void)n;
    if (l->qp_init) {
        struct ibv_qp_init_attr attr = *l->qp_init;
        if (rdma_create_qp(nid, listen->pd, &attr)) {
            int e = errno;
            rdma_reject(nid, NULL, 0);
            rdma_ack_cm_event(ev);
            rdma_destroy_id(nid);
            return fail(e);
        }
    }
    nid->event = ev;
    *id = nid;
    return 0;
}
