/*
 * A RoCE adapter's CA description from its verbs socket (cnuas-verbs-ca.h).
 */
#define _GNU_SOURCE
#include "cnuas-verbs-ca.h"

#include "cnuas-hca-abi.h"
#include "cnuas-seqpacket.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One request and its answer on `fd` (a fresh connection: queries need no open context). */
static int ask(int fd, uint32_t op, uint32_t port, uint32_t index, struct cnuas_hca_resp *r)
{
    struct cnuas_hca_req q;
    memset(&q, 0, sizeof(q));
    q.op = op;
    q.u.query.port_num = port;
    q.u.query.index = index;
    if (send(fd, &q, sizeof(q), MSG_NOSIGNAL) != (ssize_t)sizeof(q))
        return -EIO;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n;
    do {
        n = poll(&p, 1, 10000);
    } while (n < 0 && errno == EINTR);
    if (n <= 0 || recv(fd, r, sizeof(*r), 0) != (ssize_t)sizeof(*r) || r->op != op)
        return -EIO;
    return r->err ? -r->err : 0;
}

/* ibv_port_attr's active_width and active_speed as sysfs's "rate": "100 Gb/sec (4X EDR)". */
static uint32_t rate_text(uint8_t width, uint8_t speed, char *text, size_t n)
{
    int lanes = width == 1 ? 1 : width == 2 ? 4 : width == 4 ? 8 : width == 8 ? 12 : 2;
    int tenths; /* per lane, 0.1 Gb/s */
    const char *name;
    switch (speed) {
    case 1: tenths = 25, name = "SDR"; break;
    case 2: tenths = 50, name = "DDR"; break;
    case 4: tenths = 100, name = "QDR"; break;
    case 8: tenths = 100, name = "FDR10"; break;
    case 16: tenths = 140, name = "FDR"; break;
    case 32: tenths = 250, name = "EDR"; break;
    case 64: tenths = 500, name = "HDR"; break;
    case 128: tenths = 1000, name = "NDR"; break;
    default: tenths = 250, name = "EDR"; break;
    }
    const int rate = lanes * tenths;
    snprintf(text, n, "%d%s Gb/sec (%dX %s)", rate / 10, rate % 10 ? ".5" : "", lanes, name);
    return (uint32_t)(rate / 10);
}

/* A connection to the HCA socket at `path` (`len` bytes) and room for its answers in *r: the
 * descriptor, or -errno (then nothing is left open). */
static int open_session(const char *path, unsigned long len, struct cnuas_hca_resp **r)
{
    const int fd = cnuas_seqpacket_connect(path, len);
    if (fd < 0)
        return fd;
    *r = malloc(sizeof(**r));
    if (!*r) {
        close(fd);
        return -ENOMEM;
    }
    return fd;
}

int cnuas_verbs_ca_info(const char *path, unsigned long len, struct cnuas_umad_ca_info *ca)
{
    struct cnuas_hca_resp *r;
    const int fd = open_session(path, len, &r);
    if (fd < 0)
        return fd;
    int err = ask(fd, CNUAS_OP_QUERY_DEVICE, 0, 0, r);
    if (err == 0 && r->u.open.abi_version != CNUAS_HCA_ABI_VERSION)
        err = -EPROTO;
    if (err == 0 && r->u.open.dev.link_layer != 2 /* IBV_LINK_LAYER_ETHERNET */)
        err = -ENOENT;
    if (err) {
        free(r);
        close(fd);
        return err;
    }
    memset(ca, 0, sizeof(*ca));
    const struct cnuas_hca_device_attr *dev = &r->u.open.dev;
    snprintf(ca->ca_name, sizeof(ca->ca_name), "%.*s", (int)sizeof(ca->ca_name) - 1, dev->name);
    ca->node_type = 1; /* CA */
    ca->numports = 1;
    snprintf(ca->fw_ver, sizeof(ca->fw_ver), "%.*s", (int)sizeof(ca->fw_ver) - 1, dev->fw_ver);
    snprintf(ca->ca_type, sizeof(ca->ca_type), "Cnuas emulated HCA");
    snprintf(ca->hw_ver, sizeof(ca->hw_ver), "%u", dev->hw_ver);
    ca->node_guid = dev->node_guid;
    ca->system_guid = dev->sys_image_guid;
    struct cnuas_umad_port_info *p = &ca->ports[0];
    p->portnum = 1;
    err = ask(fd, CNUAS_OP_QUERY_PORT, 1, 0, r);
    if (err == 0) {
        /* An Ethernet port has no LID and no SM (sysfs shows lid 0x0, sm_lid 0x0). */
        p->state = r->u.port.state;
        p->phys_state = r->u.port.phys_state;
        p->capmask = r->u.port.port_cap_flags;
        p->rate = rate_text(r->u.port.active_width, r->u.port.active_speed, p->rate_text,
                            sizeof(p->rate_text));
        err = ask(fd, CNUAS_OP_QUERY_GID, 1, 0, r);
    }
    if (err == 0) {
        /* libibumad's port GUID and GID prefix are GID 0's halves (here ::ffff:IPv4). */
        memcpy(&p->gid_prefix, r->u.gid.gid, 8);
        memcpy(&p->port_guid, r->u.gid.gid + 8, 8);
    }
    snprintf(p->link_layer, sizeof(p->link_layer), "Ethernet");
    p->pkeys_size = 1;
    p->pkeys[0] = 0xFFFF;
    free(r);
    close(fd);
    return err;
}

int cnuas_verbs_gid_table(const char *path, unsigned long len, struct cnuas_verbs_gid_entry *table,
                          unsigned max)
{
    struct cnuas_hca_resp *r;
    const int fd = open_session(path, len, &r);
    if (fd < 0)
        return fd;
    int err = ask(fd, CNUAS_OP_QUERY_PORT, 1, 0, r);
    int n = 0;
    if (err == 0) {
        const int32_t tbl = r->u.port.gid_tbl_len;
        n = tbl < 0 ? 0 : (unsigned)tbl < max ? tbl : (int)max;
    }
    /* One question per entry: the model's table may have holes (a RoCE port without an IPv4
     * address has an empty entry 0 and its IPv6 GID at 1), and 128 questions to an idle
     * daemon take about 5 ms. */
    static const uint8_t zero[16];
    for (int i = 0; err == 0 && i < n; ++i) {
        err = ask(fd, CNUAS_OP_QUERY_GID, 1, (uint32_t)i, r);
        if (err == 0) {
            memcpy(table[i].gid, r->u.gid.gid, 16);
            table[i].type = memcmp(r->u.gid.gid, zero, 16) == 0 ? -1 : (int32_t)r->u.gid.gid_type;
        }
    }
    free(r);
    close(fd);
    return err ? err : n;
}
