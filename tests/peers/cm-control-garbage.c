/*
 * Garbage on the emulated rdma_cm's control socket, for the emulation tests
 * (tests/test-emu-rdmacm.cc): a process that speaks the protocol of host/abi/cnuas-cm-abi.h as
 * badly as it can, to check that the daemon answers every request, closes only connections that
 * break the framing, never blocks on a process that does not read its events, and stays up.
 *
 *   cm-control-garbage [REQUESTS [SEED]]        (defaults 3000 and 1)
 *
 * Connects to $CNUAS_CM_SOCKET (set by `cnuas exec`), opens, then sends REQUESTS requests from a
 * generator seeded with SEED: every operation and numbers past the table; IDs and channels from
 * earlier answers, of another process's numbering or made up; addresses of this fabric's hosts,
 * of nobody, loopback, any, IPv6, another family or random bytes, on edge ports; listens,
 * connects (to its own listeners too), accepts, rejects and disconnects with QP numbers and
 * private-data lengths at their edges (past the 224 bytes a CM message holds); resolve timeouts
 * from 0 to forever. Some event channels it drains, most it never reads, so the daemon meets
 * full pipes. Every so often it drops the connection with its IDs alive (connected or
 * listening), opens a fresh one and sends a request before OPEN, or sends a datagram of the
 * wrong size. Rules checked:
 *   - a well-framed request is answered by one datagram of the answer's size naming its op;
 *   - a datagram of the wrong size ends the connection;
 *   - no answer takes longer than 10 s (a daemon blocked on a full pipe would not answer);
 *   - afterwards a fresh connection opens, makes a channel and an ID and destroys them.
 * Prints "garbage: ..." with the counts and "daemon alive" and exits 0, or says what broke and
 * exits 1.
 */
#define _GNU_SOURCE
#include "host/abi/cnuas-cm-abi.h"
#include "tests/peers/garbage-util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>

enum { kKeep = 32, kChannels = 8 };

static uint32_t ids[kKeep], nids;
static uint32_t channels[kKeep], nchannels;
/* Read ends of the channels' pipes this connection holds; drained only if `drained`. */
static struct {
    int fd;
    int drained;
} pipes[kChannels];
static int npipes;
static long events_read;

static void forget_all(void)
{
    for (int i = 0; i < npipes; ++i)
        close(pipes[i].fd);
    npipes = 0;
    nids = nchannels = 0;
}

static void keep(uint32_t *list, uint32_t *n, uint32_t h)
{
    list[*n < kKeep ? (*n)++ : below(kKeep)] = h;
}

static uint32_t pick(const uint32_t *list, uint32_t n)
{
    const uint32_t r = below(10);
    if (r < 8 && n)
        return list[below(n)];
    return edgy32();
}

/* Reads what the drained channels hold (the rest are left to fill). */
static void drain(void)
{
    struct cnuas_cm_event ev;
    for (int i = 0; i < npipes; ++i) {
        if (!pipes[i].drained)
            continue;
        while (read(pipes[i].fd, &ev, sizeof(ev)) > 0)
            events_read++;
    }
}

/* An address: this fabric's hosts, nobody, loopback, any, IPv6, another family or noise. */
static void address(struct cnuas_cm_addr *a)
{
    memset(a, 0, sizeof(*a));
    const uint32_t r = below(10);
    if (r == 0) {
        random_bytes(a, sizeof(*a));
        return;
    }
    if (r == 1) {
        struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = htons(below(65536))};
        random_bytes(&s6.sin6_addr, sizeof(s6.sin6_addr));
        memcpy(a->bytes, &s6, sizeof(s6) < sizeof(a->bytes) ? sizeof(s6) : sizeof(a->bytes));
        return;
    }
    static const char *hosts[] = {"10.0.0.1",  "10.0.0.2", "10.0.0.99",       "10.255.0.1",
                                  "127.0.0.1", "0.0.0.0",  "255.255.255.255", "224.1.2.3",
                                  "239.255.255.250"};
    struct sockaddr_in s4 = {.sin_family = r == 2 ? (sa_family_t)edgy32() : AF_INET};
    const uint32_t port = below(3) ? 20000 + below(8) : edgy32();
    s4.sin_port = htons((uint16_t)port);
    if (below(8))
        inet_pton(AF_INET, hosts[below(sizeof(hosts) / sizeof(hosts[0]))], &s4.sin_addr);
    else
        s4.sin_addr.s_addr = (uint32_t)rnd();
    memcpy(a->bytes, &s4, sizeof(s4));
}

static void conn_param(struct cnuas_cm_conn_param *c)
{
    random_bytes(c, sizeof(*c));
    if (below(2)) {
        c->qp_num = below(2) ? 1 + below(4096) : edgy32();
        c->srq = (uint8_t)below(2);
        c->responder_resources = (uint8_t)below(20);
        c->initiator_depth = (uint8_t)below(20);
        c->retry_count = (uint8_t)below(10);
        c->rnr_retry_count = (uint8_t)below(10);
        c->private_data_len = (uint8_t)(below(2) ? below(CNUAS_CM_MAX_PRIVATE + 1) : edgy32());
    }
}

static void make_request(struct cnuas_cm_req *q, uint32_t op)
{
    memset(q, 0, sizeof(*q));
    q->op = op;
    q->id = pick(ids, nids);
    switch (op) {
    case CNUAS_CM_OP_OPEN:
        q->u.open.abi_version = below(2) ? CNUAS_CM_ABI_VERSION : edgy32();
        break;
    case CNUAS_CM_OP_DESTROY_CHANNEL:
        q->u.destroy_channel.channel = pick(channels, nchannels);
        break;
    case CNUAS_CM_OP_CREATE_ID:
        q->u.create_id.cookie = rnd();
        q->u.create_id.channel = pick(channels, nchannels);
        /* RDMA_PS_TCP 0x106, RDMA_PS_UDP 0x111, RDMA_PS_IPOIB 0x2, or anything */
        q->u.create_id.port_space = below(3) ? (below(2) ? 0x106 : 0x111) : edgy32();
        q->u.create_id.qp_type = below(3) ? 2 + below(3) : edgy32();
        break;
    case CNUAS_CM_OP_MIGRATE_ID:
        q->u.migrate.channel = pick(channels, nchannels);
        break;
    case CNUAS_CM_OP_BIND:
        address(&q->u.bind.addr);
        break;
    case CNUAS_CM_OP_RESOLVE_ADDR:
        if (below(3))
            address(&q->u.resolve_addr.src);
        address(&q->u.resolve_addr.dst);
        q->u.resolve_addr.timeout_ms = below(3) ? below(2000) : edgy32();
        break;
    case CNUAS_CM_OP_RESOLVE_ROUTE:
        q->u.resolve_route.timeout_ms = below(3) ? below(2000) : edgy32();
        break;
    case CNUAS_CM_OP_LISTEN:
        q->u.listen.backlog = (int32_t)(below(2) ? below(16) : edgy32());
        break;
    case CNUAS_CM_OP_CONNECT:
    case CNUAS_CM_OP_ACCEPT:
        conn_param(&q->u.conn);
        break;
    case CNUAS_CM_OP_REJECT:
        q->u.reject.private_data_len = (uint8_t)edgy32();
        random_bytes(q->u.reject.private_data, sizeof(q->u.reject.private_data));
        break;
    case CNUAS_CM_OP_INIT_QP_ATTR:
        q->u.init_qp_attr.qp_state = below(2) ? below(8) : edgy32();
        break;
    case CNUAS_CM_OP_JOIN_MCAST:
    case CNUAS_CM_OP_LEAVE_MCAST:
        address(&q->u.mcast.addr);
        q->u.mcast.join_state = (uint8_t)(below(2) ? (below(2) ? 1 : 8) : edgy32());
        break;
    default: /* DESTROY_ID, QUERY, DISCONNECT, ESTABLISH, CREATE_CHANNEL, unknown ops */
        if (below(4) == 0)
            random_bytes(&q->u, sizeof(q->u));
        break;
    }
    if (below(30) == 0)
        q->id = edgy32();
}

static int call(int s, const struct cnuas_cm_req *q, size_t len, struct cnuas_cm_resp *r,
                int *got_fd)
{
    return garbage_call(s, q, len, r, sizeof(*r), -1, got_fd);
}

static int open_connection(int *s)
{
    forget_all();
    *s = garbage_connect(CNUAS_CM_SOCKET_ENV);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_OPEN;
    q.u.open.abi_version = CNUAS_CM_ABI_VERSION;
    return call(*s, &q, sizeof(q), &r, NULL) == 1 && r.err == 0;
}

/* Ends connection *s and opens a fresh one; ends the program, saying so, when the daemon will
 * not open it. */
static void reconnect(int *s, const char *after)
{
    close(*s);
    if (!open_connection(s)) {
        printf("garbage: OPEN failed %s\n", after);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const long requests = argc > 1 ? atol(argv[1]) : 3000;
    garbage_seed(argc > 2 ? strtoull(argv[2], NULL, 0) : 1);
    long answered = 0, errors = 0, made = 0, malformed = 0, malformed_closed = 0;
    long daemon_closed = 0, reopened = 0, before_open = 0;
    int s;
    if (!open_connection(&s)) {
        printf("garbage: the first OPEN failed\n");
        return 1;
    }
    for (long i = 0; i < requests; ++i) {
        const uint32_t choice = below(200);
        if (choice == 0) { /* drop everything (IDs connected, listening), start over */
            close(s);
            reopened++;
            forget_all();
            s = garbage_connect(CNUAS_CM_SOCKET_ENV);
            struct cnuas_cm_req q;
            struct cnuas_cm_resp r;
            make_request(&q, CNUAS_CM_OP_CREATE_CHANNEL + below(CNUAS_CM_OP_COUNT - 2));
            const int got = call(s, &q, sizeof(q), &r, NULL);
            if (got < 0)
                return 1;
            before_open++;
            if (got == 1 && r.err == 0) {
                printf("garbage: op %u before OPEN was accepted\n", q.op);
                return 1;
            }
            reconnect(&s, "on a fresh connection");
            continue;
        }
        if (choice == 1) { /* a datagram of the wrong size: the connection must end */
            struct cnuas_cm_resp r;
            const int got = garbage_send_malformed(s, sizeof(struct cnuas_cm_req), &r, sizeof(r));
            if (got < 0)
                return 1;
            malformed++;
            malformed_closed += got == 0;
            reconnect(&s, "after a malformed datagram");
            continue;
        }
        if (choice < 8) {
            drain();
            continue;
        }
        const uint32_t op = below(12) ? 1 + below(CNUAS_CM_OP_COUNT - 1) : edgy32();
        struct cnuas_cm_req q;
        struct cnuas_cm_resp r;
        int fd = -1;
        make_request(&q, op);
        const int got = call(s, &q, sizeof(q), &r, &fd);
        if (got < 0)
            return 1;
        if (got == 0) {
            if (fd >= 0)
                close(fd);
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
            if (fd >= 0)
                close(fd);
            continue;
        }
        if (op == CNUAS_CM_OP_CREATE_CHANNEL) {
            keep(channels, &nchannels, r.u.created.handle);
            made++;
            if (fd >= 0 && npipes < kChannels) {
                fcntl(fd, F_SETFL, O_NONBLOCK);
                pipes[npipes].fd = fd;
                pipes[npipes].drained = below(4) == 0; /* most are never read */
                npipes++;
                fd = -1;
            }
        } else if (op == CNUAS_CM_OP_CREATE_ID) {
            keep(ids, &nids, r.u.created.handle);
            made++;
        }
        if (fd >= 0)
            close(fd);
    }
    close(s);
    forget_all();
    /* The next process must still be served. */
    s = garbage_connect(CNUAS_CM_SOCKET_ENV);
    struct cnuas_cm_req q;
    struct cnuas_cm_resp r;
    int fd = -1;
    int ok = 0;
    memset(&q, 0, sizeof(q));
    q.op = CNUAS_CM_OP_OPEN;
    q.u.open.abi_version = CNUAS_CM_ABI_VERSION;
    if (call(s, &q, sizeof(q), &r, NULL) == 1 && r.err == 0) {
        memset(&q, 0, sizeof(q));
        q.op = CNUAS_CM_OP_CREATE_CHANNEL;
        if (call(s, &q, sizeof(q), &r, &fd) == 1 && r.err == 0 && fd >= 0) {
            const uint32_t channel = r.u.created.handle;
            memset(&q, 0, sizeof(q));
            q.op = CNUAS_CM_OP_CREATE_ID;
            q.u.create_id.channel = channel;
            q.u.create_id.port_space = 0x106;
            q.u.create_id.qp_type = 2;
            if (call(s, &q, sizeof(q), &r, NULL) == 1 && r.err == 0) {
                memset(&q, 0, sizeof(q));
                q.op = CNUAS_CM_OP_DESTROY_ID;
                q.id = r.u.created.handle;
                ok = call(s, &q, sizeof(q), &r, NULL) == 1 && r.err == 0;
            }
        }
    }
    if (!ok) {
        printf("garbage: the daemon no longer serves a fresh connection\n");
        return 1;
    }
    printf("garbage: %ld requests, %ld answered (%ld errors, %ld channels and IDs made), %ld "
           "before OPEN, %ld malformed datagrams (%ld ended their connection), %ld connections "
           "closed by the daemon, %ld dropped and reopened, %ld events read, %d timeouts; "
           "daemon alive\n",
           requests, answered, errors, made, before_open, malformed, malformed_closed,
           daemon_closed, reopened, events_read, garbage_timeouts);
    return malformed_closed == malformed ? 0 : 1;
}
