/*
 * Garbage on the emulated umad interface, for the umad emulation tests (tests/test-emu-umad.cc):
 * a process that speaks host/abi/cnuas-umad-abi.h as badly as it can, on the control socket and
 * on the MAD streams of the ports it opens, to check that the daemon answers every request,
 * drops and counts every datagram that is not one, sends what the SMI/GSI accepts into the
 * fabric (where every SMA, PMA, SA and subnet manager meets it), never blocks on a process that
 * does not read, and stays up.
 *
 *   umad-garbage [ROUNDS [SEED]]        (defaults 3000 and 1)
 *
 * Holds up to four connections to $CNUAS_UMAD_SOCKET (set by `cnuas exec`) and for ROUNDS
 * rounds drawn from a generator seeded with SEED does one of: a control request (every
 * operation and numbers past the table, a wrong ABI version, OPEN_PORT of ports that do not
 * exist or twice, REGISTER with QPs, classes, versions, method masks, OUIs, RMPP versions and
 * flags at their edges, UNREGISTER of agents it has, had or never had); a MAD written to an open
 * port's stream for an agent it registered or one it did not, of the right length or not, as a
 * directed-route or LID-routed SMP or a GMP of any class, with methods, attributes, modifiers,
 * M_Keys, hop counts and pointers, paths, LIDs, QPs and Q_Keys at their edges, or random bytes;
 * a datagram of the wrong size (empty too) on either socket; opening or closing the port's SM
 * interface (issm); reading what its drained streams hold (most streams it never reads, so the
 * daemon meets full ones); dropping a connection with its port and agents alive. Its own host's
 * PortInfo it never sets M_Key protection on (a locked port stops the run's own SMPs; locking
 * is umad-hostile's case). Rules checked:
 *   - a well-framed control request is answered by one datagram of the answer's size naming
 *     its op; a registered agent's ID is below CNUAS_UMAD_MAX_AGENTS;
 *   - a control datagram of the wrong size ends the connection;
 *   - what a stream delivers is one whole datagram, a 256-byte MAD with status 0, for an agent
 *     registered on that port;
 *   - the daemon reads everything written to a stream: before a connection is dropped its
 *     stream empties within 10 s, so the daemon's malformed count can be checked exactly;
 *   - no answer takes longer than 10 s;
 *   - afterwards a fresh connection queries the CA, opens the port, registers an SMI agent and
 *     has the local SMA answer a NodeInfo Get.
 * Prints "garbage: ..." with the counts and "daemon alive" and exits 0, or says what broke and
 * exits 1.
 */
#define _GNU_SOURCE
#include "host/abi/cnuas-umad-abi.h"
#include "tests/peers/garbage-util.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <time.h>

enum { kConns = 4, kMad = CNUAS_UMAD_MAD_BYTES };

/* One connection to the umad socket: a query, or (mad >= 0) a port. */
static struct conn {
    int ctl;
    int mad;
    int drained;
    uint32_t registered;    /* agent IDs registered now (bit i: agent i) */
    uint32_t ever;          /* agent IDs ever registered on this port (deliveries may lag) */
    uint8_t qpn[CNUAS_UMAD_MAX_AGENTS];
} conns[kConns];

static char issm_path[sizeof(((struct cnuas_umad_port_info *)0)->issm_path)];
static int issm_fd = -1;

static long answered, refused, ports_opened, agents_registered, control_malformed;
static long control_malformed_closed, mads_written, stream_malformed, stream_full;
static long mads_read, dropped, issm_toggles;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void close_conn(struct conn *c)
{
    if (c->ctl >= 0)
        close(c->ctl);
    if (c->mad >= 0)
        close(c->mad);
    memset(c, 0, sizeof(*c));
    c->ctl = c->mad = -1;
}

/* Reads what stream `c` holds, checking each datagram. 0, or 1 with the reason printed. */
static int drain(struct conn *c)
{
    struct cnuas_umad_mad d;
    uint8_t buf[sizeof(d) + 64];
    for (;;) {
        const ssize_t got = recv(c->mad, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
        if (got < 0)
            return 0; /* EAGAIN: all read */
        if (got != (ssize_t)sizeof(d)) {
            printf("garbage: the stream delivered %zd bytes (a datagram is %zu)\n", got,
                   sizeof(d));
            return 1;
        }
        memcpy(&d, buf, sizeof(d));
        if (d.length != kMad || d.status != 0 || d.agent_id >= CNUAS_UMAD_MAX_AGENTS ||
            !(c->ever & (1u << d.agent_id))) {
            printf("garbage: delivered to agent %u (registered 0x%x), length %u, status %u\n",
                   d.agent_id, c->ever, d.length, d.status);
            return 1;
        }
        mads_read++;
    }
}

/* Waits until the daemon has read everything written to `c`'s stream (SIOCOUTQ: what the
 * receiver has not taken). 0, or 1 when 10 s pass. */
static int settle(struct conn *c)
{
    if (c->mad < 0)
        return 0;
    const double end = now_s() + 10;
    int queued = 1;
    while (ioctl(c->mad, SIOCOUTQ, &queued) == 0 && queued > 0 && now_s() < end)
        usleep(1000);
    if (queued > 0) {
        printf("garbage: the daemon left %d bytes of a stream unread for 10 s\n", queued);
        garbage_timeouts++;
        return 1;
    }
    return 0;
}

static int connect_conn(struct conn *c)
{
    close_conn(c);
    c->ctl = garbage_connect(CNUAS_UMAD_SOCKET_ENV);
    return c->ctl >= 0;
}

static uint32_t known_agent(const struct conn *c)
{
    if (c->registered && below(8)) {
        uint32_t a;
        do
            a = below(CNUAS_UMAD_MAX_AGENTS);
        while (!(c->registered & (1u << a)));
        return a;
    }
    return below(2) ? below(CNUAS_UMAD_MAX_AGENTS) : edgy32();
}

static const uint8_t classes[] = {0x01, 0x81, 0x03, 0x04, 0x05, 0x06, 0x07, 0x09, 0x0A,
                                  0x10, 0x21, 0x2F, 0x30, 0x4F, 0x50, 0xFF, 0x00};

static uint8_t some_class(void)
{
    return below(8) ? classes[below(sizeof(classes))] : (uint8_t)rnd();
}

static void make_request(struct cnuas_umad_req *q, uint32_t op, const struct conn *c)
{
    memset(q, 0, sizeof(*q));
    q->op = op;
    q->abi_version = below(20) ? CNUAS_UMAD_ABI_VERSION : edgy32();
    switch (op) {
    case CNUAS_UMAD_OP_OPEN_PORT:
        q->u.open_port.portnum = below(4) ? below(2) : edgy32();
        break;
    case CNUAS_UMAD_OP_REGISTER:
        q->u.reg.qpn = below(6) ? below(2) : edgy32();
        q->u.reg.mgmt_class = some_class();
        q->u.reg.mgmt_class_version = (uint8_t)(below(4) ? 1 + below(2) : rnd());
        q->u.reg.rmpp_version = (uint8_t)(below(4) ? 0 : rnd());
        q->u.reg.flags = below(4) ? 0 : edgy32();
        if (below(3)) {
            q->u.reg.method_mask[0] = 1ULL << below(64);
            if (below(2))
                q->u.reg.method_mask[0] |= 1ULL << below(64);
        } else if (below(2)) {
            q->u.reg.method_mask[0] = edgy64();
            q->u.reg.method_mask[1] = edgy64();
        }
        q->u.reg.oui = below(3) ? 0 : edgy32();
        break;
    case CNUAS_UMAD_OP_UNREGISTER:
        q->u.unreg.agent_id = known_agent(c);
        break;
    default: /* QUERY_CA, unknown ops */
        if (below(4) == 0)
            random_bytes(&q->u, sizeof(q->u));
        break;
    }
}

/* A control request on `c` and its answer, checked. 0, or 1 with the reason printed. */
static int control_request(struct conn *c)
{
    static const uint32_t ops[] = {CNUAS_UMAD_OP_QUERY_CA, CNUAS_UMAD_OP_OPEN_PORT,
                                   CNUAS_UMAD_OP_REGISTER, CNUAS_UMAD_OP_REGISTER,
                                   CNUAS_UMAD_OP_UNREGISTER};
    const uint32_t op = below(12) ? ops[below(sizeof(ops) / sizeof(ops[0]))] : edgy32();
    struct cnuas_umad_req q;
    struct cnuas_umad_resp r;
    make_request(&q, op, c);
    int fd = -1;
    const int got = garbage_call(c->ctl, &q, sizeof(q), &r, sizeof(r), -1, &fd);
    if (got < 0)
        return 1;
    if (got == 0) {
        printf("garbage: the daemon closed a connection after a well-framed op %u\n", op);
        return 1;
    }
    if (r.op != q.op) {
        printf("garbage: the answer to op %u names op %u\n", q.op, r.op);
        return 1;
    }
    answered++;
    if (r.err != 0) {
        refused++;
        if (fd >= 0) {
            printf("garbage: a refusal (op %u, %s) came with a descriptor\n", op, r.why);
            close(fd);
            return 1;
        }
        return 0;
    }
    if (op == CNUAS_UMAD_OP_OPEN_PORT) {
        if (fd < 0 || c->mad >= 0) {
            printf("garbage: OPEN_PORT succeeded %s\n",
                   fd < 0 ? "without a stream" : "on a port already open");
            return 1;
        }
        fcntl(fd, F_SETFL, O_NONBLOCK);
        c->mad = fd;
        c->drained = below(3) == 0; /* most are never read */
        ports_opened++;
        return 0;
    }
    if (fd >= 0) {
        printf("garbage: op %u answered with a descriptor\n", op);
        close(fd);
        return 1;
    }
    if (op == CNUAS_UMAD_OP_REGISTER) {
        const uint32_t a = r.u.reg.agent_id;
        if (a >= CNUAS_UMAD_MAX_AGENTS || (c->registered & (1u << a))) {
            printf("garbage: REGISTER gave agent %u (registered 0x%x)\n", a, c->registered);
            return 1;
        }
        c->registered |= 1u << a;
        c->ever |= 1u << a;
        c->qpn[a] = (uint8_t)q.u.reg.qpn;
        agents_registered++;
    } else if (op == CNUAS_UMAD_OP_UNREGISTER) {
        c->registered &= ~(1u << q.u.unreg.agent_id % CNUAS_UMAD_MAX_AGENTS);
    } else if (op == CNUAS_UMAD_OP_QUERY_CA) {
        if (r.u.ca.numports < 1 || r.u.ca.numports > CNUAS_UMAD_MAX_PORTS) {
            printf("garbage: QUERY_CA answered %u ports\n", r.u.ca.numports);
            return 1;
        }
        memcpy(issm_path, r.u.ca.ports[0].issm_path, sizeof(issm_path));
        issm_path[sizeof(issm_path) - 1] = '\0';
    }
    return 0;
}

static void put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v);
}

/* The MAD of a datagram: mostly well formed for class `cls`, with fields at their edges. */
static void make_mad(uint8_t *m, uint8_t cls)
{
    memset(m, 0, kMad);
    if (below(12) == 0) {
        random_bytes(m, kMad);
        if (below(2))
            m[1] = cls;
        return;
    }
    static const uint8_t methods[] = {0x01, 0x02, 0x03, 0x05, 0x06, 0x07, 0x12, 0x13, 0x14,
                                      0x15, 0x81, 0x86, 0x92, 0x94, 0x95, 0x00, 0x7F, 0xFF};
    static const uint16_t attrs[] = {0x0001, 0x0002, 0x0003, 0x0010, 0x0011, 0x0012, 0x0014,
                                     0x0015, 0x0016, 0x0017, 0x0018, 0x0019, 0x001A, 0x001B,
                                     0x001C, 0x001D, 0x0020, 0x0030, 0x0031, 0x0035, 0x0038,
                                     0x0080, 0xFF00, 0xFFFF, 0x0000};
    m[0] = (uint8_t)(below(12) ? 1 : rnd());
    m[1] = cls;
    m[2] = (uint8_t)(below(10) ? (cls == 0x03 ? 2 : 1) : rnd());
    m[3] = below(10) ? methods[below(sizeof(methods))] : (uint8_t)rnd();
    if (below(8) == 0)
        put16(m + 4, edgy32());
    random_bytes(m + 8, 8); /* TransactionID */
    const uint16_t attr = below(10) ? attrs[below(sizeof(attrs) / sizeof(attrs[0]))]
                                    : (uint16_t)rnd();
    put16(m + 16, attr);
    put32(m + 20, below(2) ? below(4) : edgy32()); /* AttributeModifier */
    const int smp = cls == 0x01 || cls == 0x81;
    if (!smp) {
        random_bytes(m + 24, kMad - 24); /* class header and data */
        if (below(2))
            memset(m + 24, 0, 32);
        return;
    }
    if (below(4) == 0)
        put32(m + 28, below(2) ? 0xC0FFEE : (uint32_t)rnd()); /* M_Key */
    if (cls == 0x81) {
        static const uint8_t hops[] = {0, 1, 2, 3, 4, 6, 63, 64, 65, 127, 255};
        m[6] = (uint8_t)(below(10) ? 0 : rnd());   /* hop pointer */
        m[7] = hops[below(4) ? below(4) : below(sizeof(hops))];
        put16(m + 32, below(8) ? 0xFFFF : edgy32()); /* DrSLID */
        put16(m + 34, below(8) ? 0xFFFF : edgy32()); /* DrDLID */
        for (int i = 1; i < 64; ++i)
            m[128 + i] = (uint8_t)(below(4) ? 1 + below(4) : rnd());
        if (below(8))
            m[129] = 1; /* leaves by this port, mostly */
        if (below(3) == 0)
            random_bytes(m + 192, 64); /* return path */
    }
    if (m[3] != 0x01 || below(4) == 0)
        random_bytes(m + 64, 64); /* SMP data: Sets of anything */
    /* Never M_Key protection on a PortInfo Set: a locked port ends the run's own SMPs. */
    if (attr == 0x0015)
        m[64 + 34] &= 0x3F;
}

/* Writes `len` bytes to `c`'s stream without waiting, counting them in *sent, or in
 * stream_full when there is no room. 0, or 1 with the reason printed. */
static int stream_send(struct conn *c, const void *buf, size_t len, long *sent)
{
    if (send(c->mad, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len)
        ++*sent;
    else if (errno == EAGAIN)
        stream_full++;
    else {
        printf("garbage: a stream write failed: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* A datagram written to `c`'s stream (which is open). 0, or 1 with the reason printed. */
static int stream_write(struct conn *c)
{
    struct cnuas_umad_mad d;
    uint8_t junk[sizeof(d) + 64];
    if (below(40) == 0) {
        random_bytes(junk, sizeof(junk));
        static const size_t sizes[] = {0, 1, 4, sizeof(d) - 1, sizeof(d) + 1, sizeof(d) + 64};
        const size_t len = sizes[below(sizeof(sizes) / sizeof(sizes[0]))];
        return stream_send(c, junk, len, &stream_malformed);
    }
    memset(&d, 0, sizeof(d));
    d.agent_id = known_agent(c);
    const uint8_t qpn = d.agent_id < CNUAS_UMAD_MAX_AGENTS ? c->qpn[d.agent_id] : 1;
    uint8_t cls;
    if (below(6) == 0)
        cls = some_class();
    else if (qpn == 0)
        cls = below(4) ? 0x81 : 0x01;
    else
        cls = classes[2 + below(sizeof(classes) - 2)];
    d.length = below(20) ? kMad : edgy32();
    d.status = below(10) ? 0 : edgy32();
    d.lid = (uint16_t)(below(4) ? 1 + below(8) : edgy32());
    d.qpn = below(4) ? below(2) : edgy32();
    d.qkey = below(2) ? 0x80010000u : (uint32_t)rnd();
    d.sl = (uint8_t)rnd();
    d.path_bits = (uint8_t)(below(4) ? 0 : rnd());
    d.grh_present = (uint8_t)(below(6) == 0);
    d.gid_index = (uint8_t)(below(4) ? 0 : rnd());
    d.hop_limit = (uint8_t)rnd();
    d.traffic_class = (uint8_t)rnd();
    random_bytes(d.gid, sizeof(d.gid));
    d.flow_label = edgy32();
    d.pkey_index = (uint16_t)(below(4) ? 0 : edgy32());
    make_mad(d.mad, cls);
    return stream_send(c, &d, sizeof(d), &mads_written);
}

/* Whether a fresh process is served: the CA answered, the port opened, an SMI agent
 * registered and the local SMA's NodeInfo received. */
static int daemon_serves(void)
{
    struct conn c;
    memset(&c, 0, sizeof(c));
    c.ctl = garbage_connect(CNUAS_UMAD_SOCKET_ENV);
    c.mad = -1;
    struct cnuas_umad_req q;
    struct cnuas_umad_resp r;
    int fd = -1;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_UMAD_OP_QUERY_CA;
    q.abi_version = CNUAS_UMAD_ABI_VERSION;
    if (garbage_call(c.ctl, &q, sizeof(q), &r, sizeof(r), -1, NULL) != 1 || r.err != 0) {
        printf("garbage: QUERY_CA failed\n");
        return 0;
    }
    q.op = CNUAS_UMAD_OP_OPEN_PORT;
    if (garbage_call(c.ctl, &q, sizeof(q), &r, sizeof(r), -1, &fd) != 1 || r.err != 0 ||
        fd < 0) {
        printf("garbage: OPEN_PORT failed\n");
        return 0;
    }
    q.op = CNUAS_UMAD_OP_REGISTER;
    q.u.reg.qpn = 0;
    q.u.reg.mgmt_class = 0x81;
    q.u.reg.mgmt_class_version = 1;
    if (garbage_call(c.ctl, &q, sizeof(q), &r, sizeof(r), -1, NULL) != 1 || r.err != 0) {
        printf("garbage: REGISTER failed\n");
        return 0;
    }
    struct cnuas_umad_mad d;
    memset(&d, 0, sizeof(d));
    d.agent_id = r.u.reg.agent_id;
    d.length = kMad;
    d.lid = 0xFFFF;
    d.mad[0] = 1;
    d.mad[1] = 0x81;
    d.mad[2] = 1;
    d.mad[3] = 0x01; /* Get */
    put32(d.mad + 12, 0x600D);
    put16(d.mad + 16, 0x0011); /* NodeInfo */
    put32(d.mad + 32, 0xFFFFFFFF); /* DrSLID, DrDLID permissive */
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (send(fd, &d, sizeof(d), MSG_NOSIGNAL) != (ssize_t)sizeof(d) ||
        recv(fd, &d, sizeof(d), 0) != (ssize_t)sizeof(d) || d.mad[3] != 0x81 ||
        d.mad[64 + 2] != 1) {
        printf("garbage: the local SMA's NodeInfo did not come back\n");
        return 0;
    }
    close(fd);
    close(c.ctl);
    return 1;
}

int main(int argc, char **argv)
{
    const long rounds = argc > 1 ? atol(argv[1]) : 3000;
    garbage_seed(argc > 2 ? strtoull(argv[2], NULL, 0) : 1);
    for (int i = 0; i < kConns; ++i)
        close_conn(&conns[i]);
    for (long i = 0; i < rounds; ++i) {
        struct conn *c = &conns[below(kConns)];
        if (c->ctl < 0 && !connect_conn(c))
            return 1;
        const uint32_t choice = below(200);
        if (choice == 0) { /* drop it, port and agents alive */
            if (settle(c))
                return 1;
            close_conn(c);
            dropped++;
        } else if (choice == 1) { /* a control datagram of the wrong size: the end of it */
            if (settle(c))
                return 1;
            struct cnuas_umad_resp r;
            const int got = garbage_send_malformed(c->ctl, sizeof(struct cnuas_umad_req), &r,
                                                   sizeof(r));
            if (got < 0)
                return 1;
            control_malformed++;
            control_malformed_closed += got == 0;
            close_conn(c);
        } else if (choice == 2) { /* the SM interface held or let go */
            if (issm_fd >= 0) {
                close(issm_fd);
                issm_fd = -1;
                issm_toggles++;
            } else if (issm_path[0]) {
                issm_fd = open(issm_path, O_RDWR | O_CLOEXEC);
                issm_toggles += issm_fd >= 0;
            }
        } else if (choice < 10) {
            for (int k = 0; k < kConns; ++k)
                if (conns[k].mad >= 0 && conns[k].drained && drain(&conns[k]))
                    return 1;
        } else if (choice < 60 || c->mad < 0) {
            if (control_request(c))
                return 1;
        } else if (stream_write(c)) {
            return 1;
        }
    }
    for (int k = 0; k < kConns; ++k) {
        if (settle(&conns[k]) || (conns[k].mad >= 0 && conns[k].drained && drain(&conns[k])))
            return 1;
        close_conn(&conns[k]);
    }
    if (issm_fd >= 0)
        close(issm_fd);
    if (!daemon_serves()) {
        printf("garbage: the daemon no longer serves a fresh process\n");
        return 1;
    }
    printf("garbage: %ld rounds, %ld answered (%ld refused, %ld ports opened, %ld agents "
           "registered), %ld malformed requests (%ld ended their connection), %ld MADs "
           "written, %ld malformed stream datagrams, %ld writes to a full stream, %ld MADs "
           "read, %ld connections dropped, %ld issm opens and closes, %d timeouts; daemon "
           "alive\n",
           rounds, answered, refused, ports_opened, agents_registered, control_malformed,
           control_malformed_closed, mads_written, stream_malformed, stream_full, mads_read,
           dropped, issm_toggles, garbage_timeouts);
    return control_malformed_closed == control_malformed ? 0 : 1;
}
