/*
 * Cnuas's libibumad: the CA and port queries (what the real library reads from sysfs) and the
 * control connection to the host's umad service.
 *
 * A host's CAs: its InfiniBand HCA, described by the umad service (CNUAS_UMAD_SOCKET: LIDs, SM,
 * the ports' MAD interfaces), and its RoCE adapters, described by their verbs sockets
 * (CNUAS_HCA_SOCKET; an Ethernet port has no LID, no SM and, here, no MAD interface). A hybrid
 * fabric's host has one of each, a RoCE fabric's host only the second kind, as `ibstat` on a
 * machine with a ConnectX in Ethernet mode lists it.
 */
#define _GNU_SOURCE
#include "cnuas-umad.h"

#include "host/abi/cnuas-hca-abi.h"
#include "host/abi/cnuas-host-env.h"
#include "host/abi/cnuas-seqpacket.h"
#include "host/abi/cnuas-verbs-ca.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int cnuas_umad_debug_level = 0;

/* How long a control request may take before the daemon is taken to be gone (ms). */
#define CTL_TIMEOUT_MS 10000

static const char *socket_path(void)
{
    const char *p = cnuas_host_getenv(CNUAS_UMAD_SOCKET_ENV);
    return p && *p ? p : NULL;
}

/* A new control connection to the host's umad service, or -errno. */
int cnuas_umad_connect(void)
{
    const char *path = socket_path();
    if (!path)
        return -ENODEV;
    const int fd = cnuas_seqpacket_connect(path, strlen(path));
    if (fd < 0)
        DEBUG("no emulated HCA answers at %s: %s", path, strerror(-fd));
    return fd;
}

/* One request and its answer on control connection `fd`; a descriptor the answer carries goes
 * to *out_fd (if not NULL). Returns 0, the daemon's errno value (positive), or -errno when the
 * connection failed. */
int cnuas_umad_call(int fd, struct cnuas_umad_req *q, struct cnuas_umad_resp *r, int *out_fd)
{
    if (out_fd)
        *out_fd = -1;
    q->abi_version = CNUAS_UMAD_ABI_VERSION;
    if (send(fd, q, sizeof(*q), MSG_NOSIGNAL) != (ssize_t)sizeof(*q))
        return -EIO;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int n;
    do {
        n = poll(&pfd, 1, CTL_TIMEOUT_MS);
    } while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -EIO;
    struct iovec iov = {.iov_base = r, .iov_len = sizeof(*r)};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof(control.buf);
    ssize_t got = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&msg); h; h = CMSG_NXTHDR(&msg, h)) {
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
            int passed;
            memcpy(&passed, CMSG_DATA(h), sizeof(int));
            if (out_fd && *out_fd < 0)
                *out_fd = passed;
            else
                close(passed);
        }
    }
    if (got != (ssize_t)sizeof(*r) || r->op != q->op) {
        if (out_fd && *out_fd >= 0) {
            close(*out_fd);
            *out_fd = -1;
        }
        return -EIO;
    }
    if (r->err != 0)
        DEBUG("request %u refused: %s (%s)", q->op, strerror(r->err), r->why);
    return r->err;
}

/* The CA, asked of the daemon (which asks the port's SMA). 0 or -errno. */
int cnuas_umad_query(struct cnuas_umad_ca_info *ca)
{
    int fd = cnuas_umad_connect();
    if (fd < 0)
        return fd;
    struct cnuas_umad_req q;
    struct cnuas_umad_resp *r = malloc(sizeof(*r));
    if (!r) {
        close(fd);
        return -ENOMEM;
    }
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_UMAD_OP_QUERY_CA;
    int err = cnuas_umad_call(fd, &q, r, NULL);
    close(fd);
    if (err == 0) {
        *ca = r->u.ca;
        ca->ca_name[sizeof(ca->ca_name) - 1] = '\0';
        if (ca->numports > CNUAS_UMAD_MAX_PORTS)
            ca->numports = CNUAS_UMAD_MAX_PORTS;
    }
    free(r);
    return err > 0 ? -err : err;
}

#define MAX_CAS 8

static int by_ca_name(const void *a, const void *b)
{
    return strcmp(((const struct cnuas_umad_ca_info *)a)->ca_name,
                  ((const struct cnuas_umad_ca_info *)b)->ca_name);
}

/* Every CA of the host, sorted by name as libibumad lists sysfs (at most `max`): the umad
 * service's, then each RoCE adapter's. The count, or -errno when there is none (the umad
 * service's error if it failed). */
static int query_all(struct cnuas_umad_ca_info *cas, int max)
{
    int n = 0;
    int err = -ENODEV;
    if (socket_path() && max > 0) {
        err = cnuas_umad_query(&cas[0]);
        n = err == 0;
    }
    const char *paths = cnuas_host_getenv(CNUAS_HCA_SOCKET_ENV);
    const char *p;
    size_t len;
    while (n < max && (p = cnuas_path_list_next(&paths, &len))) {
        /* An InfiniBand adapter answers -ENOENT here: its CA is the umad service's. */
        if (cnuas_verbs_ca_info(p, len, &cas[n]) == 0) {
            int dup = 0;
            for (int i = 0; i < n; ++i)
                dup |= strcmp(cas[i].ca_name, cas[n].ca_name) == 0;
            n += !dup;
        }
    }
    if (n == 0)
        return err;
    qsort(cas, (size_t)n, sizeof(cas[0]), by_ca_name);
    return n;
}

/* The CA `name` stands for, into *ca: NULL is the first with MAD interfaces (the umad
 * service's), else the first; anything else must be one of the host's CAs. 0, -ENODEV (no
 * such CA) or -errno. */
static int query_named(const char *name, struct cnuas_umad_ca_info *ca)
{
    struct cnuas_umad_ca_info *cas = calloc(MAX_CAS, sizeof(*cas));
    if (!cas)
        return -ENOMEM;
    const int n = query_all(cas, MAX_CAS);
    int found = -1;
    for (int i = 0; i < n && found < 0; ++i)
        if (name ? strncmp(name, cas[i].ca_name, UMAD_CA_NAME_LEN) == 0
                 : cas[i].ports[0].issm_path[0] != '\0')
            found = i;
    if (!name && found < 0 && n > 0)
        found = 0;
    if (found >= 0)
        *ca = cas[found];
    free(cas);
    return found >= 0 ? 0 : n < 0 ? n : -ENODEV;
}

static void fill_port(const struct cnuas_umad_ca_info *ca, const struct cnuas_umad_port_info *in,
                      umad_port_t *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->ca_name, sizeof(p->ca_name), "%s", ca->ca_name);
    p->portnum = (int)in->portnum;
    p->base_lid = in->base_lid;
    p->lmc = in->lmc;
    p->sm_lid = in->sm_lid;
    p->sm_sl = in->sm_sl;
    p->state = in->state;
    p->phys_state = in->phys_state;
    p->rate = in->rate;
    p->capmask = htonl(in->capmask);
    p->gid_prefix = in->gid_prefix;
    p->port_guid = in->port_guid;
    snprintf(p->link_layer, sizeof(p->link_layer), "%s", in->link_layer);
    unsigned n = in->pkeys_size > CNUAS_UMAD_MAX_PKEYS ? CNUAS_UMAD_MAX_PKEYS : in->pkeys_size;
    if (n > 0) {
        p->pkeys = calloc(n, sizeof(p->pkeys[0]));
        if (p->pkeys) {
            memcpy(p->pkeys, in->pkeys, n * sizeof(p->pkeys[0]));
            p->pkeys_size = n;
        }
    }
}

/* libibumad's choice of port (resolve_ca_port): the one asked for if it is usable, else the
 * first Active port, else the first LinkUp one, else the first not Disabled. Returns the port
 * number, or -1 when none will do. */
int cnuas_umad_pick_port(const struct cnuas_umad_ca_info *ca, int wanted)
{
    if (wanted > 0) {
        if ((unsigned)wanted > ca->numports)
            return -1;
        return ca->ports[wanted - 1].phys_state == 3 && ca->ports[wanted - 1].state != 4
                   ? -1
                   : wanted;
    }
    for (unsigned i = 0; i < ca->numports; ++i)
        if (ca->ports[i].state == 4)
            return (int)i + 1;
    for (unsigned i = 0; i < ca->numports; ++i)
        if (ca->ports[i].phys_state == 5)
            return (int)i + 1;
    for (unsigned i = 0; i < ca->numports; ++i)
        if (ca->ports[i].phys_state != 3)
            return (int)i + 1;
    return -1;
}

CNUAS_EXPORT int umad_init(void)
{
    const char *path = socket_path();
    const char *hca = cnuas_host_getenv(CNUAS_HCA_SOCKET_ENV);
    struct stat st;
    if ((!path || stat(path, &st) != 0) && !(hca && *hca)) {
        /* As the real library says when the kernel module is missing. */
        IBWARN("can't read ABI version from %s/%s (No such file or directory): is ib_umad "
               "module loaded?",
               IB_UMAD_ABI_DIR, IB_UMAD_ABI_FILE);
        return -1;
    }
    return 0;
}

CNUAS_EXPORT int umad_done(void)
{
    return 0;
}

CNUAS_EXPORT int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max)
{
    struct cnuas_umad_ca_info *all = calloc(MAX_CAS, sizeof(*all));
    if (!all)
        return 0;
    int n = query_all(all, MAX_CAS);
    n = n < 0 ? 0 : n < max ? n : max;
    for (int i = 0; i < n; ++i)
        strncpy(cas[i], all[i].ca_name, UMAD_CA_NAME_LEN);
    free(all);
    return n;
}

CNUAS_EXPORT int umad_get_ca_portguids(const char *ca_name, __be64 *portguids, int max)
{
    struct cnuas_umad_ca_info ca;
    int r = query_named(ca_name, &ca);
    if (r < 0)
        return r == -ENOMEM ? -1 : -ENODEV;
    int ports = (int)ca.numports + 1; /* slot 0: a CA has no port 0 */
    if (portguids) {
        if (ports > max)
            return -ENOMEM;
        portguids[0] = 0;
        for (unsigned i = 0; i < ca.numports; ++i)
            portguids[i + 1] = ca.ports[i].port_guid;
    }
    return ports;
}

CNUAS_EXPORT int umad_get_ca(const char *ca_name, umad_ca_t *out)
{
    struct cnuas_umad_ca_info ca;
    int r = query_named(ca_name, &ca);
    if (r < 0)
        return r == -ENODEV ? -ENODEV : -EIO;
    memset(out, 0, sizeof(*out));
    snprintf(out->ca_name, sizeof(out->ca_name), "%s", ca.ca_name);
    out->node_type = ca.node_type;
    out->numports = (int)ca.numports;
    snprintf(out->fw_ver, sizeof(out->fw_ver), "%s", ca.fw_ver);
    snprintf(out->ca_type, sizeof(out->ca_type), "%s", ca.ca_type);
    snprintf(out->hw_ver, sizeof(out->hw_ver), "%s", ca.hw_ver);
    out->node_guid = ca.node_guid;
    out->system_guid = ca.system_guid;
    for (unsigned i = 0; i < ca.numports && i + 1 < UMAD_CA_MAX_PORTS; ++i) {
        umad_port_t *p = calloc(1, sizeof(*p));
        if (!p) {
            umad_release_ca(out);
            return -ENOMEM;
        }
        fill_port(&ca, &ca.ports[i], p);
        out->ports[i + 1] = p;
    }
    return 0;
}

CNUAS_EXPORT int umad_release_ca(umad_ca_t *ca)
{
    if (!ca)
        return -ENODEV;
    for (int i = 0; i < UMAD_CA_MAX_PORTS; ++i) {
        if (ca->ports[i]) {
            free(ca->ports[i]->pkeys);
            free(ca->ports[i]);
            ca->ports[i] = NULL;
        }
    }
    return 0;
}

CNUAS_EXPORT int umad_get_port(const char *ca_name, int portnum, umad_port_t *port)
{
    struct cnuas_umad_ca_info ca;
    int r = query_named(ca_name, &ca);
    if (r < 0)
        return r == -ENODEV ? -ENODEV : -EIO;
    if (portnum <= 0) {
        portnum = cnuas_umad_pick_port(&ca, 0);
        if (portnum < 0)
            return -ENODEV;
    }
    if ((unsigned)portnum > ca.numports)
        return -EIO; /* no such directory in sysfs */
    fill_port(&ca, &ca.ports[portnum - 1], port);
    return 0;
}

CNUAS_EXPORT int umad_release_port(umad_port_t *port)
{
    if (!port)
        return -ENODEV;
    free(port->pkeys);
    port->pkeys = NULL;
    port->pkeys_size = 0;
    return 0;
}

CNUAS_EXPORT int umad_get_issm_path(const char *ca_name, int portnum, char path[], int max)
{
    struct cnuas_umad_ca_info ca;
    if (query_named(ca_name, &ca) < 0)
        return -ENODEV;
    if (portnum <= 0)
        portnum = cnuas_umad_pick_port(&ca, 0);
    if (portnum <= 0 || (unsigned)portnum > ca.numports || !ca.ports[portnum - 1].issm_path[0])
        return -EINVAL;
    /* Opening it sets IsSM on the port until it is closed, as /dev/infiniband/issmN does. */
    snprintf(path, (size_t)max, "%s", ca.ports[portnum - 1].issm_path);
    return 0;
}

CNUAS_EXPORT struct umad_device_node *umad_get_ca_device_list(void)
{
    struct cnuas_umad_ca_info *cas = calloc(MAX_CAS, sizeof(*cas));
    if (!cas) {
        errno = ENOMEM;
        return NULL;
    }
    const int n = query_all(cas, MAX_CAS);
    if (n < 0) {
        free(cas);
        /* No CA (no socket, as no /sys/class/infiniband): an empty list, not an error. */
        errno = (n == -ENODEV || n == -ENOENT || n == -ECONNREFUSED) ? 0 : -n;
        return NULL;
    }
    struct umad_device_node *head = NULL;
    for (int i = n - 1; i >= 0; --i) {
        size_t len = strlen(cas[i].ca_name) + 1;
        struct umad_device_node *node = malloc(sizeof(*node) + len);
        if (!node) {
            umad_free_ca_device_list(head);
            free(cas);
            errno = ENOMEM;
            return NULL;
        }
        char *name = (char *)(node + 1);
        memcpy(name, cas[i].ca_name, len);
        node->ca_name = name;
        node->next = head;
        head = node;
    }
    free(cas);
    errno = 0;
    return head;
}

CNUAS_EXPORT void umad_free_ca_device_list(struct umad_device_node *head)
{
    while (head) {
        struct umad_device_node *next = head->next;
        free(head);
        head = next;
    }
}

static int by_name(const void *a, const void *b)
{
    const struct umad_device_node *x = *(struct umad_device_node *const *)a;
    const struct umad_device_node *y = *(struct umad_device_node *const *)b;
    return strcmp(x->ca_name, y->ca_name);
}

CNUAS_EXPORT int umad_sort_ca_device_list(struct umad_device_node **head, size_t size)
{
    if (!head)
        return -EINVAL;
    if (size < 2 || !*head)
        return 0;
    struct umad_device_node **v = calloc(size, sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    for (struct umad_device_node *p = *head; p && n < size; p = p->next)
        v[n++] = p;
    qsort(v, n, sizeof(*v), by_name);
    for (size_t i = 0; i + 1 < n; ++i)
        v[i]->next = v[i + 1];
    v[n - 1]->next = NULL;
    *head = v[0];
    free(v);
    return 0;
}

CNUAS_EXPORT int umad_debug(int level)
{
    if (level >= 0)
        cnuas_umad_debug_level = level;
    return cnuas_umad_debug_level;
}
