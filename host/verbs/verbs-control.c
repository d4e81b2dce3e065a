/*
 * Cnuas's libibverbs.so.1, control path: devices, contexts, and the creation, modification,
 * query and destruction of verbs objects, each one request to the host's emulated HCA in the
 * Cnuas daemon (host/abi/cnuas-hca-abi.h). Unmodified programs built against rdma-core 44's
 * headers load this library instead of Debian's (cnuas exec puts its directory first on the
 * library path), so every struct handed out is laid out as <infiniband/verbs.h> says.
 */
#define _GNU_SOURCE
#include "cnuas-verbs.h"

#include "host/abi/cnuas-host-env.h"
#include "host/abi/cnuas-seqpacket.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* <infiniband/verbs.h> turns these into macros or inline wrappers; the library defines the
 * exported functions behind them. */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* ---- plumbing ---------------------------------------------------------------------------- */

void cnuas_debug(const char *fmt, ...)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("CNUAS_VERBS_DEBUG");
        on = e && *e && strcmp(e, "0") != 0;
    }
    if (!on)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("libibverbs (cnuas): ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cnuas_mark_dead(struct cnuas_context *ctx, const char *what)
{
    if (!ctx->dead) {
        ctx->dead = 1;
        fprintf(stderr,
                "libibverbs (cnuas): the emulated HCA %s is gone (%s: the Cnuas daemon at %s "
                "stopped or restarted); verbs calls on this device now fail\n",
                ctx->device->dev.name, what, ctx->device->socket_path);
    }
}

uint64_t cnuas_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cnuas_check_alive(struct cnuas_context *ctx)
{
    if (ctx->dead)
        return 0;
    /* A busy poller spins here millions of times a second: look at the socket at most every
     * 50 ms of wall clock. The daemon never writes unasked, so a readable socket with nothing
     * in it is a hang-up. */
    const uint64_t t = cnuas_clock_ns(CLOCK_MONOTONIC_COARSE);
    if (t - ctx->last_check_ns < 50000000ull)
        return 1;
    ctx->last_check_ns = t;
    struct pollfd p = {ctx->sock, POLLIN, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLRDHUP))) {
        cnuas_mark_dead(ctx, "connection closed");
        return 0;
    }
    return 1;
}

static int recv_answer(struct cnuas_context *ctx, struct cnuas_hca_resp *r, int *out_fd)
{
    struct iovec iov = {r, sizeof(*r)};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof(control.buf);
    ssize_t got;
    do {
        got = recvmsg(ctx->sock, &msg, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
    if (got <= 0) {
        cnuas_mark_dead(ctx, got == 0 ? "connection closed" : strerror(errno));
        return EIO;
    }
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&msg); h; h = CMSG_NXTHDR(&msg, h)) {
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
            int fd;
            memcpy(&fd, CMSG_DATA(h), sizeof(int));
            if (out_fd && *out_fd < 0)
                *out_fd = fd;
            else
                close(fd);
        }
    }
    if ((size_t)got != sizeof(*r)) {
        cnuas_mark_dead(ctx, "a malformed answer");
        return EIO;
    }
    return 0;
}

int cnuas_call(struct cnuas_context *ctx, struct cnuas_hca_req *q, struct cnuas_hca_resp *r,
               int send_fd, int *out_fd)
{
    if (out_fd)
        *out_fd = -1;
    if (ctx->dead) {
        errno = EIO;
        return EIO;
    }
    struct iovec iov = {q, sizeof(*q)};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (send_fd >= 0) {
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof(control.buf);
        struct cmsghdr *h = CMSG_FIRSTHDR(&msg);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &send_fd, sizeof(int));
    }
    pthread_mutex_lock(&ctx->call_lock);
    ssize_t sent;
    do {
        sent = sendmsg(ctx->sock, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    int err = 0;
    if (sent != (ssize_t)sizeof(*q)) {
        cnuas_mark_dead(ctx, sent < 0 ? strerror(errno) : "short write");
        err = EIO;
    } else {
        err = recv_answer(ctx, r, out_fd);
    }
    pthread_mutex_unlock(&ctx->call_lock);
    if (err == 0 && r->op != q->op) {
        cnuas_mark_dead(ctx, "an answer to another request");
        err = EIO;
    }
    if (err == 0 && r->err != 0) {
        err = r->err;
        r->why[sizeof(r->why) - 1] = '\0';
        cnuas_debug("request %u refused: %s (%s)", q->op, strerror(err), r->why);
        if (out_fd && *out_fd >= 0) {
            close(*out_fd);
            *out_fd = -1;
        }
    }
    errno = err;
    return err;
}

void *cnuas_map(int fd, size_t bytes)
{
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* The HCA socket at `path`: the descriptor, or -1 with errno set. */
static int connect_to(const char *path)
{
    const int s = cnuas_seqpacket_connect(path, strlen(path));
    if (s < 0) {
        errno = -s;
        return -1;
    }
    return s;
}

/* ---- devices ----------------------------------------------------------------------------- */

/* The host's adapters found so far: a dual-rail host of a hybrid fabric has two (an InfiniBand
 * HCA and a RoCE NIC), listed in the order `cnuas exec` names their sockets. */
#define CNUAS_MAX_DEVICES 8
static struct cnuas_device *g_devices[CNUAS_MAX_DEVICES];
static int g_num_devices;
static pthread_mutex_t g_device_lock = PTHREAD_MUTEX_INITIALIZER;

/* Ask the daemon for the device's name and GUID (a short-lived connection). */
static int probe_device(const char *path, struct cnuas_hca_device_attr *attr)
{
    int s = connect_to(path);
    if (s < 0)
        return -1;
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_QUERY_DEVICE;
    struct cnuas_hca_resp r;
    int ok = send(s, &q, sizeof(q), MSG_NOSIGNAL) == (ssize_t)sizeof(q) &&
             recv(s, &r, sizeof(r), 0) == (ssize_t)sizeof(r) && r.err == 0 &&
             r.u.open.abi_version == CNUAS_HCA_ABI_VERSION;
    close(s);
    if (!ok)
        return -1;
    *attr = r.u.open.dev;
    return 0;
}

/* One adapter behind the socket at `path` (its `len` bytes), as the kernel would number it:
 * uverbs<index>. */
static void probe_one(const char *path, size_t len)
{
    struct cnuas_device probe;
    if (len == 0 || len >= sizeof(probe.socket_path) || g_num_devices >= CNUAS_MAX_DEVICES)
        return;
    char one[sizeof(probe.socket_path)];
    memcpy(one, path, len);
    one[len] = '\0';
    struct cnuas_hca_device_attr attr;
    if (probe_device(one, &attr) != 0) {
        cnuas_debug("no emulated HCA answers at %s", one);
        return;
    }
    struct cnuas_device *d = calloc(1, sizeof(*d));
    if (!d)
        return;
    const int index = g_num_devices;
    attr.name[sizeof(attr.name) - 1] = '\0';
    snprintf(d->dev.name, sizeof(d->dev.name), "%s", attr.name);
    snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", index);
    snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d",
             index);
    snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
             attr.name);
    d->dev.node_type = IBV_NODE_CA;
    d->dev.transport_type = IBV_TRANSPORT_IB;
    snprintf(d->socket_path, sizeof(d->socket_path), "%s", one);
    d->guid = attr.node_guid;
    d->index = index;
    g_devices[g_num_devices++] = d;
}

CNUAS_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list = calloc(CNUAS_MAX_DEVICES + 1, sizeof(*list));
    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&g_device_lock);
    /* The host's HCA sockets, as `cnuas exec` names them: one path, or several separated by
     * ':' (a hybrid fabric's host). A device that does not answer is left out and asked again
     * at the next call, as rdma-core looks at sysfs again; one that did is kept for the
     * process's life, as rdma-core keeps the devices it found. */
    const char *paths = cnuas_host_getenv(CNUAS_HCA_SOCKET_ENV);
    const char *p;
    size_t len;
    while ((p = cnuas_path_list_next(&paths, &len))) {
        int known = 0;
        for (int i = 0; i < g_num_devices && !known; ++i)
            known = strncmp(g_devices[i]->socket_path, p, len) == 0 &&
                    g_devices[i]->socket_path[len] == '\0';
        if (!known)
            probe_one(p, len);
    }
    int n = 0;
    for (; n < g_num_devices; ++n)
        list[n] = &g_devices[n]->dev;
    pthread_mutex_unlock(&g_device_lock);
    if (num_devices)
        *num_devices = n;
    return list;
}

/* Whether `device` is one this library handed out. */
static struct cnuas_device *known_device(struct ibv_device *device)
{
    struct cnuas_device *found = NULL;
    pthread_mutex_lock(&g_device_lock);
    for (int i = 0; i < g_num_devices && !found; ++i)
        if (device == &g_devices[i]->dev)
            found = g_devices[i];
    pthread_mutex_unlock(&g_device_lock);
    return found;
}

CNUAS_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

CNUAS_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device ? device->name : NULL;
}

CNUAS_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return container_of(device, struct cnuas_device, dev)->guid;
}

CNUAS_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
    struct cnuas_device *d = device ? known_device(device) : NULL;
    return d ? d->index : -1;
}

static int ctx_query_port(struct ibv_context *context, uint8_t port_num,
                          struct ibv_port_attr *attr, size_t attr_len);
static int ctx_query_device_ex(struct ibv_context *context,
                               const struct ibv_query_device_ex_input *input,
                               struct ibv_device_attr_ex *attr, size_t attr_size);
static struct ibv_qp *ctx_create_qp_ex(struct ibv_context *context,
                                       struct ibv_qp_init_attr_ex *attr);
static struct ibv_cq_ex *ctx_create_cq_ex(struct ibv_context *context,
                                          struct ibv_cq_init_attr_ex *attr);
static struct ibv_srq *ctx_create_srq_ex(struct ibv_context *context,
                                         struct ibv_srq_init_attr_ex *attr);
static int ctx_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values);
CNUAS_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                                struct _compat_ibv_port_attr *port_attr);

CNUAS_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct cnuas_device *d = device ? known_device(device) : NULL;
    if (!d) {
        errno = ENODEV;
        return NULL;
    }
    struct cnuas_context *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        errno = ENOMEM;
        return NULL;
    }
    ctx->device = d;
    ctx->sock = connect_to(d->socket_path);
    if (ctx->sock < 0) {
        int e = errno;
        free(ctx);
        errno = e ? e : ENODEV;
        return NULL;
    }
    pthread_mutex_init(&ctx->call_lock, NULL);
    ctx->doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ctx->doorbell < 0) {
        int e = errno;
        close(ctx->sock);
        free(ctx);
        errno = e;
        return NULL;
    }
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_OPEN;
    q.u.open.abi_version = CNUAS_HCA_ABI_VERSION;
    struct cnuas_hca_resp r;
    int async_fd = -1;
    int err = cnuas_call(ctx, &q, &r, ctx->doorbell, &async_fd);
    if (err || async_fd < 0) {
        if (async_fd >= 0)
            close(async_fd);
        close(ctx->doorbell);
        close(ctx->sock);
        free(ctx);
        errno = err ? err : EPROTO;
        return NULL;
    }
    ctx->attr = r.u.open.dev;

    struct verbs_context *v = &ctx->vctx;
    v->sz = sizeof(*v);
    v->query_port = ctx_query_port;
    v->query_device_ex = ctx_query_device_ex;
    v->create_qp_ex = ctx_create_qp_ex;
    v->create_cq_ex = ctx_create_cq_ex;
    v->create_srq_ex = ctx_create_srq_ex;
    v->query_rt_values = ctx_query_rt_values;
    struct ibv_context *c = &v->context;
    c->device = device;
    c->cmd_fd = ctx->sock;
    c->async_fd = async_fd;
    c->num_comp_vectors = 1;
    pthread_mutex_init(&c->mutex, NULL);
    c->abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->ops.post_send = cnuas_post_send;
    c->ops.post_recv = cnuas_post_recv;
    c->ops.poll_cq = cnuas_poll_cq;
    c->ops.req_notify_cq = cnuas_req_notify_cq;
    c->ops.post_srq_recv = cnuas_post_srq_recv;
    c->ops._compat_query_port = (void *)ibv_query_port;
    return c;
}

CNUAS_EXPORT int ibv_close_device(struct ibv_context *context)
{
    struct cnuas_context *ctx = to_cctx(context);
    /* Closing the connection makes the daemon destroy whatever the process left behind. */
    close(ctx->sock);
    close(ctx->doorbell);
    close(context->async_fd);
    pthread_mutex_destroy(&ctx->call_lock);
    free(ctx);
    return 0;
}

/* ---- queries ----------------------------------------------------------------------------- */

static void fill_device_attr(const struct cnuas_hca_device_attr *a, struct ibv_device_attr *o)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->fw_ver, sizeof(o->fw_ver), "%s", a->fw_ver);
    o->node_guid = a->node_guid;
    o->sys_image_guid = a->sys_image_guid;
    o->max_mr_size = a->max_mr_size;
    o->page_size_cap = a->page_size_cap;
    o->vendor_id = a->vendor_id;
    o->vendor_part_id = a->vendor_part_id;
    o->hw_ver = a->hw_ver;
    o->max_qp = a->max_qp;
    o->max_qp_wr = a->max_qp_wr;
    o->device_cap_flags = a->device_cap_flags;
    o->max_sge = a->max_sge;
    o->max_sge_rd = a->max_sge_rd;
    o->max_cq = a->max_cq;
    o->max_cqe = a->max_cqe;
    o->max_mr = a->max_mr;
    o->max_pd = a->max_pd;
    o->max_qp_rd_atom = a->max_qp_rd_atom;
    o->max_ee_rd_atom = a->max_ee_rd_atom;
    o->max_res_rd_atom = a->max_res_rd_atom;
    o->max_qp_init_rd_atom = a->max_qp_init_rd_atom;
    o->max_ee_init_rd_atom = a->max_ee_init_rd_atom;
    o->atomic_cap = (enum ibv_atomic_cap)a->atomic_cap;
    o->max_ah = a->max_ah;
    o->max_srq = a->max_srq;
    o->max_srq_wr = a->max_srq_wr;
    o->max_srq_sge = a->max_srq_sge;
    o->max_mcast_grp = a->max_mcast_grp;
    o->max_mcast_qp_attach = a->max_mcast_qp_attach;
    o->max_total_mcast_qp_attach = a->max_total_mcast_qp_attach;
    o->max_pkeys = a->max_pkeys;
    o->local_ca_ack_delay = a->local_ca_ack_delay;
    o->phys_port_cnt = a->phys_port_cnt;
}

CNUAS_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    struct cnuas_context *ctx = to_cctx(context);
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_QUERY_DEVICE;
    struct cnuas_hca_resp r;
    int err = cnuas_call(ctx, &q, &r, -1, NULL);
    if (err)
        return err;
    ctx->attr = r.u.open.dev;
    fill_device_attr(&ctx->attr, attr);
    return 0;
}

static int ctx_query_device_ex(struct ibv_context *context,
                               const struct ibv_query_device_ex_input *input,
                               struct ibv_device_attr_ex *attr, size_t attr_size)
{
    if (input && input->comp_mask)
        return EINVAL;
    if (attr_size < sizeof(attr->orig_attr))
        return EINVAL;
    struct ibv_device_attr orig;
    int err = ibv_query_device(context, &orig);
    if (err)
        return err;
    struct ibv_device_attr_ex ex;
    memset(&ex, 0, sizeof(ex));
    ex.orig_attr = orig;
    ex.completion_timestamp_mask = to_cctx(context)->attr.completion_timestamp_mask;
    ex.hca_core_clock = to_cctx(context)->attr.hca_core_clock;
    ex.max_dm_size = 0;
    ex.phys_port_cnt_ex = orig.phys_port_cnt;
    size_t n = attr_size < sizeof(ex) ? attr_size : sizeof(ex);
    memcpy(attr, &ex, n);
    if (attr_size > n)
        memset((char *)attr + n, 0, attr_size - n);
    return 0;
}

static int ctx_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values)
{
    /* The clock of completion timestamps: the model's nanoseconds. Without the model's
     * present at hand, the process's monotonic clock is the nearest honest reading. */
    if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
        return EOPNOTSUPP;
    if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK)
        clock_gettime(CLOCK_MONOTONIC, &values->raw_clock);
    return 0;
}

static int query_port_into(struct ibv_context *context, uint8_t port_num,
                           struct ibv_port_attr *out)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_QUERY_PORT;
    q.u.query.port_num = port_num;
    struct cnuas_hca_resp r;
    int err = cnuas_call(to_cctx(context), &q, &r, -1, NULL);
    if (err)
        return err;
    const struct cnuas_hca_port_attr *a = &r.u.port;
    memset(out, 0, sizeof(*out));
    out->state = (enum ibv_port_state)a->state;
    out->max_mtu = (enum ibv_mtu)a->max_mtu;
    out->active_mtu = (enum ibv_mtu)a->active_mtu;
    out->gid_tbl_len = a->gid_tbl_len;
    out->port_cap_flags = a->port_cap_flags;
    out->max_msg_sz = a->max_msg_sz;
    out->bad_pkey_cntr = a->bad_pkey_cntr;
    out->qkey_viol_cntr = a->qkey_viol_cntr;
    out->pkey_tbl_len = a->pkey_tbl_len;
    out->lid = a->lid;
    out->sm_lid = a->sm_lid;
    out->lmc = a->lmc;
    out->max_vl_num = a->max_vl_num;
    out->sm_sl = a->sm_sl;
    out->subnet_timeout = a->subnet_timeout;
    out->init_type_reply = a->init_type_reply;
    out->active_width = a->active_width;
    out->active_speed = a->active_speed;
    out->phys_state = a->phys_state;
    out->link_layer = a->link_layer;
    out->flags = a->flags;
    out->port_cap_flags2 = a->port_cap_flags2;
    return 0;
}

static int ctx_query_port(struct ibv_context *context, uint8_t port_num,
                          struct ibv_port_attr *attr, size_t attr_len)
{
    struct ibv_port_attr full;
    int err = query_port_into(context, port_num, &full);
    if (err)
        return err;
    memcpy(attr, &full, attr_len < sizeof(full) ? attr_len : sizeof(full));
    return 0;
}

/* The exported ibv_query_port@IBVERBS_1.1: programs built against headers older than
 * port_cap_flags2 pass the 48-byte struct _compat_ibv_port_attr, so only that much is written. */
CNUAS_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                                struct _compat_ibv_port_attr *port_attr)
{
    return ctx_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
                          offsetof(struct ibv_port_attr, port_cap_flags2));
}

static int query_gid_raw(struct ibv_context *context, uint8_t port_num, unsigned index,
                         union ibv_gid *gid, uint32_t *type)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_QUERY_GID;
    q.u.query.port_num = port_num;
    q.u.query.index = index;
    struct cnuas_hca_resp r;
    int err = cnuas_call(to_cctx(context), &q, &r, -1, NULL);
    if (err)
        return err;
    memcpy(gid->raw, r.u.gid.gid, 16);
    if (type)
        *type = r.u.gid.gid_type;
    return 0;
}

CNUAS_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                               union ibv_gid *gid)
{
    if (index < 0)
        return -1;
    return query_gid_raw(context, port_num, (unsigned)index, gid, NULL) ? -1 : 0;
}

/* IBVERBS_PRIVATE_34: ibv_devinfo asks it for every GID it prints. The sysfs type enum has two
 * values: 0 "IB/RoCE v1", 1 "RoCE v2". */
CNUAS_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
                                    unsigned int index, int *type)
{
    union ibv_gid gid;
    uint32_t t = 0;
    int err = query_gid_raw(context, port_num, index, &gid, &t);
    if (err)
        return err;
    *type = t == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
    return 0;
}

static int zero_gid(const union ibv_gid *g)
{
    for (int i = 0; i < 16; ++i)
        if (g->raw[i])
            return 0;
    return 1;
}

CNUAS_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
                                   uint32_t gid_index, struct ibv_gid_entry *entry,
                                   uint32_t flags, size_t entry_size)
{
    if (flags || entry_size < sizeof(*entry) || port_num > 255)
        return EINVAL;
    union ibv_gid gid;
    uint32_t type = 0;
    int err = query_gid_raw(context, (uint8_t)port_num, gid_index, &gid, &type);
    if (err)
        return err;
    /* An empty table entry has no GID (rdma-core: ENODATA). */
    if (zero_gid(&gid))
        return ENODATA;
    memset(entry, 0, entry_size);
    entry->gid = gid;
    entry->gid_index = gid_index;
    entry->port_num = port_num;
    entry->gid_type = type;
    entry->ndev_ifindex = 0;
    return 0;
}

CNUAS_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
                                          struct ibv_gid_entry *entries, size_t max_entries,
                                          uint32_t flags, size_t entry_size)
{
    if (flags || entry_size < sizeof(*entries))
        return -EINVAL;
    struct ibv_port_attr pa;
    int err = query_port_into(context, 1, &pa);
    if (err)
        return -err;
    size_t n = 0;
    for (int i = 0; i < pa.gid_tbl_len && n < max_entries; ++i) {
        struct ibv_gid_entry *e = (struct ibv_gid_entry *)((char *)entries + n * entry_size);
        err = _ibv_query_gid_ex(context, 1, (uint32_t)i, e, 0, entry_size);
        if (err == 0)
            ++n;
        else if (err != ENODATA)
            return -err;
    }
    return (ssize_t)n;
}

CNUAS_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                                __be16 *pkey)
{
    if (index < 0)
        return -1;
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_QUERY_PKEY;
    q.u.query.port_num = port_num;
    q.u.query.index = (uint32_t)index;
    struct cnuas_hca_resp r;
    if (cnuas_call(to_cctx(context), &q, &r, -1, NULL))
        return -1;
    *pkey = r.u.pkey.pkey;
    return 0;
}

CNUAS_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
    struct ibv_port_attr pa;
    if (query_port_into(context, port_num, &pa))
        return -1;
    for (int i = 0; i < pa.pkey_tbl_len; ++i) {
        __be16 p;
        if (ibv_query_pkey(context, port_num, i, &p))
            return -1;
        if (p == pkey)
            return i;
    }
    errno = ENOENT;
    return -1;
}

/* ---- protection domains, memory regions -------------------------------------------------- */

static uint32_t simple_create(struct ibv_context *context, uint32_t op, int *err)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = op;
    struct cnuas_hca_resp r;
    *err = cnuas_call(to_cctx(context), &q, &r, -1, NULL);
    return *err ? 0 : r.u.created.handle;
}

static int simple_destroy(struct ibv_context *context, uint32_t op, uint32_t handle)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = op;
    q.u.destroy.handle = handle;
    struct cnuas_hca_resp r;
    int err = cnuas_call(to_cctx(context), &q, &r, -1, NULL);
    /* With the daemon gone the object is gone too: let the program clean up. */
    return err == EIO ? 0 : err;
}

CNUAS_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    int err;
    uint32_t h = simple_create(context, CNUAS_OP_ALLOC_PD, &err);
    if (err) {
        errno = err;
        return NULL;
    }
    struct cnuas_pd *pd = calloc(1, sizeof(*pd));
    if (!pd) {
        simple_destroy(context, CNUAS_OP_DEALLOC_PD, h);
        errno = ENOMEM;
        return NULL;
    }
    pd->pd.context = context;
    pd->pd.handle = h;
    return &pd->pd;
}

CNUAS_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    int err = simple_destroy(pd->context, CNUAS_OP_DEALLOC_PD, pd->handle);
    if (err)
        return err;
    free(container_of(pd, struct cnuas_pd, pd));
    return 0;
}

CNUAS_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                             uint64_t iova, unsigned int access)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_REG_MR;
    q.u.reg_mr.pd = pd->handle;
    q.u.reg_mr.addr = (uint64_t)(uintptr_t)addr;
    q.u.reg_mr.length = length;
    q.u.reg_mr.iova = iova;
    q.u.reg_mr.access = access;
    /* The region's pages go into shared memory the emulated HCA maps, where they can be
     * (verbs-shared-mr.c); otherwise the daemon reaches them through /proc/PID/mem. */
    int share_fd = cnuas_share_region(addr, length, &q.u.reg_mr.share_base, &q.u.reg_mr.share_len);
    struct cnuas_hca_resp r;
    int err = cnuas_call(to_cctx(pd->context), &q, &r, share_fd, NULL);
    if (share_fd >= 0)
        close(share_fd);
    struct cnuas_mr *mr = err ? NULL : calloc(1, sizeof(*mr));
    if (!mr) {
        if (share_fd < 0)
            cnuas_forget_unshared(addr, length);
        if (!err)
            simple_destroy(pd->context, CNUAS_OP_DEREG_MR, r.u.mr.handle);
        errno = err ? err : ENOMEM;
        return NULL;
    }
    mr->unshared = share_fd < 0;
    mr->mr.context = pd->context;
    mr->mr.pd = pd;
    mr->mr.addr = addr;
    mr->mr.length = length;
    mr->mr.handle = r.u.mr.handle;
    mr->mr.lkey = r.u.mr.lkey;
    mr->mr.rkey = r.u.mr.rkey;
    return &mr->mr;
}

CNUAS_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned)access);
}

CNUAS_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                                            uint64_t iova, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

CNUAS_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
                              size_t length, int access)
{
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT;
}

CNUAS_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
    int err = simple_destroy(mr->context, CNUAS_OP_DEREG_MR, mr->handle);
    if (err)
        return err;
    struct cnuas_mr *cmr = container_of(mr, struct cnuas_mr, mr);
    if (cmr->unshared)
        cnuas_forget_unshared(mr->addr, mr->length);
    free(cmr);
    return 0;
}

CNUAS_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                              uint64_t iova, int fd, int access)
{
    errno = EOPNOTSUPP;
    return NULL;
}

/* ---- completion channels and CQs --------------------------------------------------------- */

CNUAS_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_CREATE_COMP_CHANNEL;
    struct cnuas_hca_resp r;
    int fd = -1;
    int err = cnuas_call(to_cctx(context), &q, &r, -1, &fd);
    if (err || fd < 0) {
        errno = err ? err : EPROTO;
        return NULL;
    }
    struct cnuas_channel *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        close(fd);
        simple_destroy(context, CNUAS_OP_DESTROY_COMP_CHANNEL, r.u.created.handle);
        errno = ENOMEM;
        return NULL;
    }
    ch->ch.context = context;
    ch->ch.fd = fd;
    ch->ch.refcnt = 0;
    ch->handle = r.u.created.handle;
    return &ch->ch;
}

CNUAS_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    struct cnuas_channel *ch = container_of(channel, struct cnuas_channel, ch);
    if (channel->refcnt) {
        errno = EBUSY;
        return EBUSY;
    }
    int err = simple_destroy(channel->context, CNUAS_OP_DESTROY_COMP_CHANNEL, ch->handle);
    if (err)
        return err;
    close(channel->fd);
    free(ch);
    return 0;
}

static struct cnuas_cq *create_cq(struct ibv_context *context, int cqe,
                                  struct ibv_comp_channel *channel, int comp_vector,
                                  void *cq_context, uint64_t wc_flags)
{
    if (comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
        errno = EINVAL;
        return NULL;
    }
    struct cnuas_cq *cq = calloc(1, sizeof(*cq));
    if (!cq) {
        errno = ENOMEM;
        return NULL;
    }
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_CREATE_CQ;
    q.u.create_cq.cookie = (uint64_t)(uintptr_t)cq;
    q.u.create_cq.cqe = cqe;
    q.u.create_cq.channel = channel ? container_of(channel, struct cnuas_channel, ch)->handle : 0;
    q.u.create_cq.comp_vector = comp_vector;
    struct cnuas_hca_resp r;
    int fd = -1;
    int err = cnuas_call(to_cctx(context), &q, &r, -1, &fd);
    if (err) {
        free(cq);
        errno = err;
        return NULL;
    }
    cq->shm = cnuas_map(fd, r.u.cq.shm_bytes);
    if (!cq->shm) {
        simple_destroy(context, CNUAS_OP_DESTROY_CQ, r.u.cq.handle);
        free(cq);
        errno = ENOMEM;
        return NULL;
    }
    cq->shm_bytes = r.u.cq.shm_bytes;
    cq->head = (struct cnuas_hca_cq_shm *)cq->shm;
    cq->cqes = (struct cnuas_hca_cqe *)(cq->shm + r.u.cq.cqe_offset);
    cq->capacity = r.u.cq.cqe;
    cq->wc_flags = wc_flags;
    pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
    struct ibv_cq_ex *c = &cq->cq;
    c->context = context;
    c->channel = channel;
    c->cq_context = cq_context;
    c->handle = r.u.cq.handle;
    c->cqe = (int)r.u.cq.cqe;
    pthread_mutex_init(&c->mutex, NULL);
    pthread_cond_init(&c->cond, NULL);
    if (channel)
        __atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELAXED);
    cnuas_init_cq_ex_ops(cq);
    return cq;
}

CNUAS_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                          struct ibv_comp_channel *channel, int comp_vector)
{
    struct cnuas_cq *cq = create_cq(context, cqe, channel, comp_vector, cq_context, 0);
    return cq ? ibv_cq_ex_to_cq(&cq->cq) : NULL;
}

static struct ibv_cq_ex *ctx_create_cq_ex(struct ibv_context *context,
                                          struct ibv_cq_init_attr_ex *attr)
{
    const uint64_t supported = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
                               IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
                               IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
                               IBV_WC_EX_WITH_DLID_PATH_BITS |
                               IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    if ((attr->wc_flags & ~supported) || (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
        ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && attr->flags)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    struct cnuas_cq *cq = create_cq(context, (int)attr->cqe, attr->channel,
                                    (int)attr->comp_vector, attr->cq_context, attr->wc_flags);
    return cq ? &cq->cq : NULL;
}

CNUAS_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
    struct cnuas_cq *cq = to_ccq(ibcq);
    int err = simple_destroy(ibcq->context, CNUAS_OP_DESTROY_CQ, ibcq->handle);
    if (err)
        return err;
    if (ibcq->channel)
        __atomic_sub_fetch(&ibcq->channel->refcnt, 1, __ATOMIC_RELAXED);
    munmap(cq->shm, cq->shm_bytes);
    pthread_spin_destroy(&cq->lock);
    free(cq);
    return 0;
}

CNUAS_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    /* The completion ring lives in memory both sides have mapped; moving it is not offered
     * (device_cap_flags has no IBV_DEVICE_RESIZE_MAX_WR either). */
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
}

CNUAS_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                                  void **cq_context)
{
    struct cnuas_hca_comp_event e;
    /* One read, not retried: a signal ends the wait with -1 and errno EINTR, as rdma-core's
     * read of the uverbs channel does, and programs rely on it (qperf ends an event-driven
     * test's wait with SIGALRM). */
    const ssize_t got = read(channel->fd, &e, sizeof(e));
    if (got != (ssize_t)sizeof(e)) {
        if (got == 0) {
            cnuas_mark_dead(to_cctx(channel->context), "completion channel closed");
            errno = EIO;
        }
        return -1;
    }
    struct cnuas_cq *c = (struct cnuas_cq *)(uintptr_t)e.cq_cookie;
    *cq = ibv_cq_ex_to_cq(&c->cq);
    *cq_context = c->cq.cq_context;
    return 0;
}

CNUAS_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

/* ---- queue pairs ------------------------------------------------------------------------- */

static void to_abi_ah(const struct ibv_ah_attr *a, struct cnuas_hca_ah_attr *o)
{
    memset(o, 0, sizeof(*o));
    memcpy(o->dgid, a->grh.dgid.raw, 16);
    o->flow_label = a->grh.flow_label;
    o->sgid_index = a->grh.sgid_index;
    o->hop_limit = a->grh.hop_limit;
    o->traffic_class = a->grh.traffic_class;
    o->is_global = a->is_global;
    o->dlid = a->dlid;
    o->sl = a->sl;
    o->src_path_bits = a->src_path_bits;
    o->static_rate = a->static_rate;
    o->port_num = a->port_num;
}

static void from_abi_ah(const struct cnuas_hca_ah_attr *a, struct ibv_ah_attr *o)
{
    memset(o, 0, sizeof(*o));
    memcpy(o->grh.dgid.raw, a->dgid, 16);
    o->grh.flow_label = a->flow_label;
    o->grh.sgid_index = a->sgid_index;
    o->grh.hop_limit = a->hop_limit;
    o->grh.traffic_class = a->traffic_class;
    o->is_global = a->is_global;
    o->dlid = a->dlid;
    o->sl = a->sl;
    o->src_path_bits = a->src_path_bits;
    o->static_rate = a->static_rate;
    o->port_num = a->port_num;
}

static struct ibv_qp *create_qp(struct ibv_context *context, struct ibv_pd *pd,
                                struct ibv_qp_init_attr_ex *a)
{
    if (!pd || !a->send_cq || !a->recv_cq) {
        errno = EINVAL;
        return NULL;
    }
    struct cnuas_qp *qp = calloc(1, sizeof(*qp));
    if (!qp) {
        errno = ENOMEM;
        return NULL;
    }
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_CREATE_QP;
    q.u.create_qp.cookie = (uint64_t)(uintptr_t)qp;
    q.u.create_qp.pd = pd->handle;
    q.u.create_qp.send_cq = a->send_cq->handle;
    q.u.create_qp.recv_cq = a->recv_cq->handle;
    q.u.create_qp.srq = a->srq ? a->srq->handle : 0;
    q.u.create_qp.qp_type = a->qp_type;
    q.u.create_qp.sq_sig_all = a->sq_sig_all;
    q.u.create_qp.cap.max_send_wr = a->cap.max_send_wr;
    q.u.create_qp.cap.max_recv_wr = a->cap.max_recv_wr;
    q.u.create_qp.cap.max_send_sge = a->cap.max_send_sge;
    q.u.create_qp.cap.max_recv_sge = a->cap.max_recv_sge;
    q.u.create_qp.cap.max_inline_data = a->cap.max_inline_data;
    struct cnuas_hca_resp r;
    int fd = -1;
    int err = cnuas_call(to_cctx(context), &q, &r, -1, &fd);
    if (err) {
        free(qp);
        errno = err;
        return NULL;
    }
    qp->shm = cnuas_map(fd, r.u.qp.layout.shm_bytes);
    if (!qp->shm) {
        simple_destroy(context, CNUAS_OP_DESTROY_QP, r.u.qp.handle);
        free(qp);
        errno = ENOMEM;
        return NULL;
    }
    qp->shm_bytes = r.u.qp.layout.shm_bytes;
    qp->head = (struct cnuas_hca_qp_shm *)qp->shm;
    qp->layout = r.u.qp.layout;
    qp->cap = r.u.qp.cap;
    qp->sq_sig_all = a->sq_sig_all;
    pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
    pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
    struct ibv_qp *b = &qp->qpx.qp_base;
    b->context = context;
    b->qp_context = a->qp_context;
    b->pd = pd;
    b->send_cq = a->send_cq;
    b->recv_cq = a->recv_cq;
    b->srq = a->srq;
    b->handle = r.u.qp.handle;
    b->qp_num = r.u.qp.qp_num;
    b->state = IBV_QPS_RESET;
    b->qp_type = a->qp_type;
    pthread_mutex_init(&b->mutex, NULL);
    pthread_cond_init(&b->cond, NULL);
    /* ibv_create_qp(3): the actual capacities go back to the caller. */
    a->cap.max_send_wr = qp->cap.max_send_wr;
    a->cap.max_recv_wr = qp->cap.max_recv_wr;
    a->cap.max_send_sge = qp->cap.max_send_sge;
    a->cap.max_recv_sge = qp->cap.max_recv_sge;
    a->cap.max_inline_data = qp->cap.max_inline_data;
    cnuas_init_qp_ex_ops(qp);
    return b;
}

CNUAS_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    struct ibv_qp_init_attr_ex ex;
    memset(&ex, 0, sizeof(ex));
    ex.qp_context = attr->qp_context;
    ex.send_cq = attr->send_cq;
    ex.recv_cq = attr->recv_cq;
    ex.srq = attr->srq;
    ex.cap = attr->cap;
    ex.qp_type = attr->qp_type;
    ex.sq_sig_all = attr->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    struct ibv_qp *qp = create_qp(pd->context, pd, &ex);
    if (qp)
        attr->cap = ex.cap;
    return qp;
}

static struct ibv_qp *ctx_create_qp_ex(struct ibv_context *context,
                                       struct ibv_qp_init_attr_ex *attr)
{
    const uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                         IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                         IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                         IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
                         IBV_QP_EX_WITH_SEND_WITH_INV;
    const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD)) {
        errno = EINVAL; /* no XRC target QPs: every QP needs a PD */
        return NULL;
    }
    if ((attr->comp_mask & ~known) ||
        ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (attr->send_ops_flags & ~ops))) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return create_qp(context, attr->pd, attr);
}

CNUAS_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    return &to_cqp(qp)->qpx;
}

CNUAS_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_MODIFY_QP;
    q.u.modify_qp.handle = ibqp->handle;
    q.u.modify_qp.attr_mask = (uint32_t)attr_mask;
    struct cnuas_hca_qp_attr *o = &q.u.modify_qp.attr;
    o->qp_state = attr->qp_state;
    o->cur_qp_state = attr->cur_qp_state;
    o->path_mtu = attr->path_mtu;
    o->path_mig_state = attr->path_mig_state;
    o->qkey = attr->qkey;
    o->rq_psn = attr->rq_psn;
    o->sq_psn = attr->sq_psn;
    o->dest_qp_num = attr->dest_qp_num;
    o->qp_access_flags = (uint32_t)attr->qp_access_flags;
    o->cap.max_send_wr = attr->cap.max_send_wr;
    o->cap.max_recv_wr = attr->cap.max_recv_wr;
    o->cap.max_send_sge = attr->cap.max_send_sge;
    o->cap.max_recv_sge = attr->cap.max_recv_sge;
    o->cap.max_inline_data = attr->cap.max_inline_data;
    to_abi_ah(&attr->ah_attr, &o->ah_attr);
    to_abi_ah(&attr->alt_ah_attr, &o->alt_ah_attr);
    o->pkey_index = attr->pkey_index;
    o->alt_pkey_index = attr->alt_pkey_index;
    o->en_sqd_async_notify = attr->en_sqd_async_notify;
    o->sq_draining = attr->sq_draining;
    o->max_rd_atomic = attr->max_rd_atomic;
    o->max_dest_rd_atomic = attr->max_dest_rd_atomic;
    o->min_rnr_timer = attr->min_rnr_timer;
    o->port_num = attr->port_num;
    o->timeout = attr->timeout;
    o->retry_cnt = attr->retry_cnt;
    o->rnr_retry = attr->rnr_retry;
    o->alt_port_num = attr->alt_port_num;
    o->alt_timeout = attr->alt_timeout;
    o->rate_limit = attr->rate_limit;
    struct cnuas_hca_resp r;
    int err = cnuas_call(to_cctx(ibqp->context), &q, &r, -1, NULL);
    if (err)
        return err;
    ibqp->state = (enum ibv_qp_state)r.u.qp_attr.qp_state;
    if (r.u.qp_attr.qp_state == IBV_QPS_RESET) {
        /* Everything posted so far was discarded: start the rings afresh. */
        struct cnuas_qp *qp = to_cqp(ibqp);
        pthread_spin_lock(&qp->sq_lock);
        qp->sq_prod = __atomic_load_n(&qp->head->sq_retired.value, __ATOMIC_ACQUIRE);
        pthread_spin_unlock(&qp->sq_lock);
        pthread_spin_lock(&qp->rq_lock);
        qp->rq_prod = __atomic_load_n(&qp->head->rq_retired.value, __ATOMIC_ACQUIRE);
        pthread_spin_unlock(&qp->rq_lock);
    }
    return 0;
}

CNUAS_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
                              struct ibv_qp_init_attr *init_attr)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_QUERY_QP;
    q.u.modify_qp.handle = ibqp->handle;
    q.u.modify_qp.attr_mask = (uint32_t)attr_mask;
    struct cnuas_hca_resp r;
    int err = cnuas_call(to_cctx(ibqp->context), &q, &r, -1, NULL);
    if (err)
        return err;
    const struct cnuas_hca_qp_attr *a = &r.u.qp_attr.attr;
    memset(attr, 0, sizeof(*attr));
    attr->qp_state = (enum ibv_qp_state)a->qp_state;
    attr->cur_qp_state = (enum ibv_qp_state)a->cur_qp_state;
    attr->path_mtu = (enum ibv_mtu)a->path_mtu;
    attr->path_mig_state = (enum ibv_mig_state)a->path_mig_state;
    attr->qkey = a->qkey;
    attr->rq_psn = a->rq_psn;
    attr->sq_psn = a->sq_psn;
    attr->dest_qp_num = a->dest_qp_num;
    attr->qp_access_flags = (unsigned)a->qp_access_flags;
    attr->cap.max_send_wr = r.u.qp_attr.cap.max_send_wr;
    attr->cap.max_recv_wr = r.u.qp_attr.cap.max_recv_wr;
    attr->cap.max_send_sge = r.u.qp_attr.cap.max_send_sge;
    attr->cap.max_recv_sge = r.u.qp_attr.cap.max_recv_sge;
    attr->cap.max_inline_data = r.u.qp_attr.cap.max_inline_data;
    from_abi_ah(&a->ah_attr, &attr->ah_attr);
    from_abi_ah(&a->alt_ah_attr, &attr->alt_ah_attr);
    attr->pkey_index = a->pkey_index;
    attr->alt_pkey_index = a->alt_pkey_index;
    attr->en_sqd_async_notify = a->en_sqd_async_notify;
    attr->sq_draining = a->sq_draining;
    attr->max_rd_atomic = a->max_rd_atomic;
    attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
    attr->min_rnr_timer = a->min_rnr_timer;
    attr->port_num = a->port_num;
    attr->timeout = a->timeout;
    attr->retry_cnt = a->retry_cnt;
    attr->rnr_retry = a->rnr_retry;
    attr->alt_port_num = a->alt_port_num;
    attr->alt_timeout = a->alt_timeout;
    attr->rate_limit = a->rate_limit;
    ibqp->state = attr->qp_state;
    if (init_attr) {
        memset(init_attr, 0, sizeof(*init_attr));
        init_attr->qp_context = ibqp->qp_context;
        init_attr->send_cq = ibqp->send_cq;
        init_attr->recv_cq = ibqp->recv_cq;
        init_attr->srq = ibqp->srq;
        init_attr->cap = attr->cap;
        init_attr->qp_type = ibqp->qp_type;
        init_attr->sq_sig_all = to_cqp(ibqp)->sq_sig_all;
    }
    return 0;
}

CNUAS_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
    struct cnuas_qp *qp = to_cqp(ibqp);
    int err = simple_destroy(ibqp->context, CNUAS_OP_DESTROY_QP, ibqp->handle);
    if (err)
        return err;
    munmap(qp->shm, qp->shm_bytes);
    pthread_spin_destroy(&qp->sq_lock);
    pthread_spin_destroy(&qp->rq_lock);
    free(qp);
    return 0;
}

CNUAS_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
                                            uint32_t flags)
{
    /* Data lands in order: the transport writes each packet's payload as it is accepted. */
    return flags ? 0 : 1;
}

/* ---- shared receive queues --------------------------------------------------------------- */

static struct ibv_srq *create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    struct cnuas_srq *srq = calloc(1, sizeof(*srq));
    if (!srq) {
        errno = ENOMEM;
        return NULL;
    }
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_CREATE_SRQ;
    q.u.create_srq.cookie = (uint64_t)(uintptr_t)srq;
    q.u.create_srq.pd = pd->handle;
    q.u.create_srq.max_wr = attr->attr.max_wr;
    q.u.create_srq.max_sge = attr->attr.max_sge;
    q.u.create_srq.srq_limit = attr->attr.srq_limit;
    struct cnuas_hca_resp r;
    int fd = -1;
    int err = cnuas_call(to_cctx(pd->context), &q, &r, -1, &fd);
    if (err) {
        free(srq);
        errno = err;
        return NULL;
    }
    srq->shm = cnuas_map(fd, r.u.qp.layout.shm_bytes);
    if (!srq->shm) {
        simple_destroy(pd->context, CNUAS_OP_DESTROY_SRQ, r.u.qp.handle);
        free(srq);
        errno = ENOMEM;
        return NULL;
    }
    srq->shm_bytes = r.u.qp.layout.shm_bytes;
    srq->head = (struct cnuas_hca_srq_shm *)srq->shm;
    srq->layout = r.u.qp.layout;
    srq->max_sge = r.u.qp.cap.max_recv_sge;
    pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
    srq->srq.context = pd->context;
    srq->srq.srq_context = attr->srq_context;
    srq->srq.pd = pd;
    srq->srq.handle = r.u.qp.handle;
    pthread_mutex_init(&srq->srq.mutex, NULL);
    pthread_cond_init(&srq->srq.cond, NULL);
    attr->attr.max_wr = r.u.qp.cap.max_recv_wr;
    attr->attr.max_sge = r.u.qp.cap.max_recv_sge;
    return &srq->srq;
}

CNUAS_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
                                            struct ibv_srq_init_attr *srq_init_attr)
{
    return create_srq(pd, srq_init_attr);
}

static struct ibv_srq *ctx_create_srq_ex(struct ibv_context *context,
                                         struct ibv_srq_init_attr_ex *attr)
{
    /* Basic SRQs only: XRC SRQs and tag matching are not modelled. */
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
        ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC) ||
        (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
                                       IBV_SRQ_INIT_ATTR_CQ))) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    struct ibv_srq_init_attr basic;
    basic.srq_context = attr->srq_context;
    basic.attr = attr->attr;
    struct ibv_srq *s = create_srq(attr->pd, &basic);
    if (s)
        attr->attr = basic.attr;
    return s;
}

CNUAS_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_MODIFY_SRQ;
    q.u.modify_srq.handle = srq->handle;
    q.u.modify_srq.attr_mask = (uint32_t)mask;
    q.u.modify_srq.max_wr = attr->max_wr;
    q.u.modify_srq.srq_limit = attr->srq_limit;
    struct cnuas_hca_resp r;
    return cnuas_call(to_cctx(srq->context), &q, &r, -1, NULL);
}

CNUAS_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_QUERY_SRQ;
    q.u.modify_srq.handle = srq->handle;
    struct cnuas_hca_resp r;
    int err = cnuas_call(to_cctx(srq->context), &q, &r, -1, NULL);
    if (err)
        return err;
    attr->max_wr = r.u.srq_attr.max_wr;
    attr->max_sge = r.u.srq_attr.max_sge;
    attr->srq_limit = r.u.srq_attr.srq_limit;
    return 0;
}

CNUAS_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
    struct cnuas_srq *srq = container_of(ibsrq, struct cnuas_srq, srq);
    int err = simple_destroy(ibsrq->context, CNUAS_OP_DESTROY_SRQ, ibsrq->handle);
    if (err)
        return err;
    munmap(srq->shm, srq->shm_bytes);
    pthread_spin_destroy(&srq->lock);
    free(srq);
    return 0;
}

/* ---- address handles --------------------------------------------------------------------- */

CNUAS_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_OP_CREATE_AH;
    q.u.create_ah.pd = pd->handle;
    to_abi_ah(attr, &q.u.create_ah.attr);
    struct cnuas_hca_resp r;
    int err = cnuas_call(to_cctx(pd->context), &q, &r, -1, NULL);
    if (err) {
        errno = err;
        return NULL;
    }
    struct cnuas_ah *ah = calloc(1, sizeof(*ah));
    if (!ah) {
        simple_destroy(pd->context, CNUAS_OP_DESTROY_AH, r.u.created.handle);
        errno = ENOMEM;
        return NULL;
    }
    ah->ah.context = pd->context;
    ah->ah.pd = pd;
    ah->ah.handle = r.u.created.handle;
    return &ah->ah;
}

CNUAS_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
    int err = simple_destroy(ah->context, CNUAS_OP_DESTROY_AH, ah->handle);
    if (err)
        return err;
    free(container_of(ah, struct cnuas_ah, ah));
    return 0;
}

/* ---- multicast groups --------------------------------------------------------------------- */

/* The group's MGID and MLID come from an SA join (MCMemberRecord) the program made itself, by
 * libibumad or librdmacm; the adapter only learns which of its QPs take the group's packets. */
static int mcast_op(struct ibv_qp *qp, uint32_t op, const union ibv_gid *gid, uint16_t lid)
{
    if (!qp || !gid)
        return EINVAL;
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = op;
    q.u.mcast.qp = qp->handle;
    q.u.mcast.lid = lid;
    memcpy(q.u.mcast.gid, gid->raw, sizeof(q.u.mcast.gid));
    struct cnuas_hca_resp r;
    return cnuas_call(to_cctx(qp->context), &q, &r, -1, NULL);
}

CNUAS_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    return mcast_op(qp, CNUAS_OP_ATTACH_MCAST, gid, lid);
}

CNUAS_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    return mcast_op(qp, CNUAS_OP_DETACH_MCAST, gid, lid);
}

CNUAS_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
                                     struct ibv_wc *wc, struct ibv_grh *grh,
                                     struct ibv_ah_attr *ah_attr)
{
    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->dlid = wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num = port_num;
    if (wc->wc_flags & IBV_WC_GRH) {
        ah_attr->is_global = 1;
        const uint8_t *raw = (const uint8_t *)grh;
        /* RoCEv2 over IPv4 (IBA annex A17.4.5.1): the first 20 bytes of the GRH area are
         * undefined and the IPv4 header fills the last 20, so the GRH's IP version is not 6 and
         * byte 20 starts an IPv4 header; the sender's GID is then its IPv4-mapped address, as
         * rdma-core's get_grh_header_version/set_ah_attr_by_ipv4 read it. */
        if (((be32toh(grh->version_tclass_flow) >> 28) & 0xF) != 6 && (raw[20] >> 4) == 4) {
            memset(&ah_attr->grh.dgid, 0, sizeof(ah_attr->grh.dgid));
            ah_attr->grh.dgid.raw[10] = 0xFF;
            ah_attr->grh.dgid.raw[11] = 0xFF;
            memcpy(&ah_attr->grh.dgid.raw[12], raw + 20 + 12, 4); /* IPv4 source address */
            ah_attr->grh.traffic_class = raw[20 + 1];
            ah_attr->grh.hop_limit = 0xFF;
            ah_attr->grh.sgid_index = 0; /* the port's IPv4 GID */
            return 0;
        }
        ah_attr->grh.dgid = grh->sgid;
        ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xFFFFF;
        ah_attr->grh.hop_limit = 0xFF;
        ah_attr->grh.traffic_class = (be32toh(grh->version_tclass_flow) >> 20) & 0xFF;
        ah_attr->grh.sgid_index = 0;
    }
    return 0;
}

CNUAS_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
                                                  struct ibv_grh *grh, uint8_t port_num)
{
    struct ibv_ah_attr attr;
    if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
        return NULL;
    return ibv_create_ah(pd, &attr);
}

/* ---- asynchronous events ----------------------------------------------------------------- */

CNUAS_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    struct cnuas_hca_async_event e;
    /* Not retried after a signal either (ibv_get_cq_event). */
    const ssize_t got = read(context->async_fd, &e, sizeof(e));
    if (got != (ssize_t)sizeof(e)) {
        if (got == 0) {
            cnuas_mark_dead(to_cctx(context), "event channel closed");
            errno = EIO;
        }
        return -1;
    }
    memset(event, 0, sizeof(*event));
    event->event_type = (enum ibv_event_type)e.event_type;
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        event->element.cq = ibv_cq_ex_to_cq(&((struct cnuas_cq *)(uintptr_t)e.cookie)->cq);
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        event->element.qp = &((struct cnuas_qp *)(uintptr_t)e.cookie)->qpx.qp_base;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        event->element.srq = &((struct cnuas_srq *)(uintptr_t)e.cookie)->srq;
        break;
    default:
        event->element.port_num = (int)e.port_num;
        break;
    }
    return 0;
}

CNUAS_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
        struct ibv_cq *cq = event->element.cq;
        pthread_mutex_lock(&cq->mutex);
        ++cq->async_events_completed;
        pthread_cond_signal(&cq->cond);
        pthread_mutex_unlock(&cq->mutex);
        break;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: {
        struct ibv_qp *qp = event->element.qp;
        pthread_mutex_lock(&qp->mutex);
        ++qp->events_completed;
        pthread_cond_signal(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
        break;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
        struct ibv_srq *srq = event->element.srq;
        pthread_mutex_lock(&srq->mutex);
        ++srq->events_completed;
        pthread_cond_signal(&srq->cond);
        pthread_mutex_unlock(&srq->mutex);
        break;
    }
    default:
        break;
    }
}
