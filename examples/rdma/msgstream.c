/* msgstream: one RC queue pair between two processes, the same program on InfiniBand and RoCE.
 *
 *   msgstream [options]          server: waits for one client
 *   msgstream [options] HOST     client: connects to the server on HOST
 *
 * A TCP connection carries the bootstrap and nothing else: each side sends one struct wire_info
 * (QP number, PSN, LID, GID, buffer address, rkey), and at the very end each side sends one
 * "done" byte. Then, over RDMA:
 *   phase 1  COUNT two-sided SENDs, client to server; the server checks every byte;
 *   phase 2  COUNT one-sided RDMA WRITEs from the client into the buffer the server published,
 *            then one RDMA WRITE WITH IMMEDIATE whose immediate value (COUNT) tells the server
 *            the writes are done; the server checks its buffer.
 * The only code that depends on the fabric is the link-layer branch in qp_to_rtr().
 *
 * Build: gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -O2 msgstream.c -libverbs
 * See README.md beside this file for how to run it on a Cnuas fabric. */

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

/* Default message size. On RoCEv2 every packet is a UDP datagram to port 4791 whose payload is
 *   BTH (12) + message (112) + ICRC (4) = 128 bytes   for each SEND ("UDP, length 128"), and
 *   BTH (12) + AETH (4) + ICRC (4)      =  20 bytes   for each acknowledgement ("UDP, length 20").
 * (An RDMA WRITE also carries a 16-byte RETH: 12 + 16 + 112 + 4 = 144; the zero-length WRITE
 * WITH IMMEDIATE adds 4 bytes of ImmDt: 12 + 16 + 4 + 4 = 36.) */
#define DEFAULT_MSG_SIZE 112
#define DEFAULT_COUNT 100
#define DEFAULT_TCP_PORT "18520"
#define DEFAULT_TIMEOUT_S 10        /* longest wait for the peer, at any step */
#define DEFAULT_ACCEPT_TIMEOUT_S 60 /* how long the server waits for a client */
#define QUEUE_DEPTH 64              /* work requests in flight per queue; also the buffer slots */
#define MAX_MSG_SIZE (16u << 20)
#define MAX_TOTAL_BYTES (1u << 30)

#define DONE_OK 'D'   /* the final byte each side sends: finished, all verified */
#define DONE_FAIL 'X' /* sent instead when this side failed, so the peer stops at once */

/* The bootstrap record, identical in both directions; every field in network byte order.
 * 40 bytes, no implicit padding. The client publishes no buffer (addr and rkey are 0). */
struct wire_info {
	uint32_t qpn;
	uint32_t psn;
	uint64_t addr;
	uint32_t rkey;
	uint16_t lid;
	uint16_t reserved; /* zero */
	uint8_t gid[16];
};
_Static_assert(sizeof(struct wire_info) == 40, "struct wire_info must be 40 bytes");

/* One side's addressing, in host byte order. */
struct dest {
	uint32_t qpn;
	uint32_t psn;
	uint16_t lid;
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
};

struct options {
	const char *server_host; /* NULL: run as the server */
	const char *tcp_port;
	const char *dev_name;
	unsigned int msg_size;
	unsigned int count;
	int ib_port;
	int gid_index;
	int timeout_s;
	int accept_timeout_s;
};

static int g_sock = -1;         /* the bootstrap connection, once there is one */
static int g_done_sent;         /* the final byte has been sent: nothing more to tell the peer */

/* Prints "msgstream: ..." and exits 1, telling the peer first when a connection is up. */
static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "msgstream: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (g_sock >= 0 && !g_done_sent) {
		char b = DONE_FAIL;

		(void)send(g_sock, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The byte at offset off of message msg in the given phase: every message, offset and phase
 * differ, so a lost, duplicated, reordered or misplaced message shows up. */
static uint8_t pattern(unsigned int phase, uint32_t msg, uint32_t off)
{
	uint32_t x = msg * 0x9E3779B1u ^ off * 0x85EBCA77u ^ phase * 0xC2B2AE3Du;

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return (uint8_t)(x >> 8);
}

static void fill(uint8_t *buf, unsigned int size, unsigned int phase, uint32_t msg)
{
	for (uint32_t off = 0; off < size; off++)
		buf[off] = pattern(phase, msg, off);
}

/* Fails with the first differing byte and the number of differing bytes. */
static void verify(const uint8_t *buf, unsigned int size, unsigned int phase, uint32_t msg,
		   const char *what)
{
	uint32_t bad = 0, first = 0;

	for (uint32_t off = 0; off < size; off++) {
		if (buf[off] != pattern(phase, msg, off)) {
			if (!bad)
				first = off;
			bad++;
		}
	}
	if (bad)
		fail("%s %" PRIu32 ": %" PRIu32 " of %u bytes wrong, first at offset %" PRIu32
		     " (expected 0x%02x, got 0x%02x)",
		     what, msg, bad, size, first, pattern(phase, msg, first), buf[first]);
}

/* ------------------------------------------------------------------------------------------
 * TCP bootstrap: every call has a deadline. */

static void set_socket_timeouts(int fd, int timeout_s)
{
	struct timeval tv = { .tv_sec = timeout_s, .tv_usec = 0 };
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		fail("setsockopt(SO_RCVTIMEO/SO_SNDTIMEO): %s", strerror(errno));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Connects within timeout_s, retrying while the server is not listening yet. */
static int tcp_connect(const char *host, const char *port, int timeout_s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	double deadline = now_s() + timeout_s;
	int err = getaddrinfo(host, port, &hints, &res);
	int last_errno = 0;

	if (err)
		fail("cannot resolve %s port %s: %s", host, port, gai_strerror(err));
	for (;;) {
		for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
			int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK, ai->ai_protocol);

			if (fd < 0) {
				last_errno = errno;
				continue;
			}
			int e = 0; /* 0: connected */

			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
				/* connected at once */
			} else if (errno != EINPROGRESS) {
				e = errno;
			} else {
				int left_ms = (int)((deadline - now_s()) * 1000);
				struct pollfd p = { .fd = fd, .events = POLLOUT };
				socklen_t len = sizeof(e);

				e = ETIMEDOUT;
				if (left_ms < 100)
					left_ms = 100; /* time to learn it was refused */
				if (poll(&p, 1, left_ms) == 1 &&
				    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len))
					e = errno;
			}
			if (e == 0) {
				int flags = fcntl(fd, F_GETFL);

				fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
				freeaddrinfo(res);
				set_socket_timeouts(fd, timeout_s);
				return fd;
			}
			last_errno = e;
			close(fd);
		}
		if (now_s() >= deadline)
			break;
		usleep(100 * 1000); /* the server may not be listening yet */
	}
	freeaddrinfo(res);
	fail("cannot connect to %s port %s within %d s: %s", host, port, timeout_s,
	     strerror(last_errno));
}

/* Listens on every address, waits up to accept_timeout_s for one client. */
static int tcp_accept(const char *port, int accept_timeout_s, int timeout_s)
{
	struct addrinfo hints = { .ai_family = AF_INET6, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res;
	int lfd = -1, one = 1, zero = 0, err;

	/* An IPv6 socket that also accepts IPv4; plain IPv4 where IPv6 is off. */
	for (int attempt = 0; attempt < 2 && lfd < 0; attempt++) {
		hints.ai_family = attempt == 0 ? AF_INET6 : AF_INET;
		err = getaddrinfo(NULL, port, &hints, &res);
		if (err)
			continue;
		lfd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
		if (lfd >= 0) {
			setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (res->ai_family == AF_INET6)
				setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind(lfd, res->ai_addr, res->ai_addrlen) || listen(lfd, 1)) {
				if (attempt == 1)
					fail("cannot listen on TCP port %s: %s", port, strerror(errno));
				close(lfd);
				lfd = -1;
			}
		}
		freeaddrinfo(res);
	}
	if (lfd < 0)
		fail("cannot listen on TCP port %s", port);

	printf("msgstream: server waiting for a client on TCP port %s (up to %d s)\n", port,
	       accept_timeout_s);
	fflush(stdout);
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int n = poll(&p, 1, accept_timeout_s * 1000);

	if (n < 0)
		fail("poll on the listening socket: %s", strerror(errno));
	if (n == 0)
		fail("no client connected within %d s", accept_timeout_s);
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		fail("accept: %s", strerror(errno));
	close(lfd);
	set_socket_timeouts(fd, timeout_s);
	return fd;
}

static void send_all(int fd, const void *buf, size_t len, const char *what)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			fail("timed out sending %s to the peer", what);
		if (n < 0)
			fail("sending %s to the peer: %s", what, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void recv_all(int fd, void *buf, size_t len, const char *what)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			fail("timed out waiting for %s from the peer", what);
		if (n < 0)
			fail("receiving %s from the peer: %s", what, strerror(errno));
		if (n == 0)
			fail("the peer closed the connection before sending %s", what);
		p += n;
		len -= (size_t)n;
	}
}

static void send_dest(int fd, const struct dest *d)
{
	struct wire_info w;

	memset(&w, 0, sizeof(w));
	w.qpn = htonl(d->qpn);
	w.psn = htonl(d->psn);
	w.addr = htobe64(d->addr);
	w.rkey = htonl(d->rkey);
	w.lid = htons(d->lid);
	memcpy(w.gid, d->gid.raw, sizeof(w.gid));
	send_all(fd, &w, sizeof(w), "the queue pair address");
}

static void recv_dest(int fd, struct dest *d)
{
	struct wire_info w;

	recv_all(fd, &w, sizeof(w), "the queue pair address");
	memset(d, 0, sizeof(*d));
	d->qpn = ntohl(w.qpn);
	d->psn = ntohl(w.psn);
	d->addr = be64toh(w.addr);
	d->rkey = ntohl(w.rkey);
	d->lid = ntohs(w.lid);
	memcpy(d->gid.raw, w.gid, sizeof(w.gid));
	if (d->qpn == 0 || d->qpn > 0xffffff)
		fail("the peer sent QP number %" PRIu32 ", not a valid one: is it msgstream?",
		     d->qpn);
}

/* While waiting for completions: has the peer given up (its DONE_FAIL byte or a closed
 * connection)? A DONE_OK byte from a peer that finished first is left for the final exchange. */
static void check_peer(void)
{
	char b;
	ssize_t n;

	if (g_sock < 0)
		return;
	n = recv(g_sock, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n == 1 && b == DONE_OK)
		return;
	if (n == 1)
		fail("the peer reported a failure and stopped");
	if (n == 0)
		fail("the peer closed the connection (did it exit?)");
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		fail("the connection to the peer failed: %s", strerror(errno));
}

/* ------------------------------------------------------------------------------------------
 * Verbs resources. */

struct rdma {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *ring_mr;   /* QUEUE_DEPTH slots of msg_size: send sources, receive targets */
	struct ibv_mr *target_mr; /* server only: COUNT * msg_size bytes, remote-writable */
	uint8_t *ring;
	uint8_t *target;
	struct ibv_port_attr port_attr;
	union ibv_gid gid;
};

static const char *port_state_name(enum ibv_port_state s)
{
	const char *name = ibv_port_state_str(s); /* "PORT_INIT", ... */

	return strncmp(name, "PORT_", 5) == 0 ? name + 5 : name;
}

static struct ibv_context *open_device(const char *want)
{
	int num = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx;

	if (!list)
		fail("no RDMA devices found (ibv_get_device_list: %s)", strerror(errno));
	if (num == 0)
		fail("no RDMA devices found");
	for (int i = 0; i < num && !dev; i++)
		if (!want || strcmp(ibv_get_device_name(list[i]), want) == 0)
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "msgstream: no RDMA device named %s; there are:", want);
		for (int i = 0; i < num; i++)
			fprintf(stderr, " %s", ibv_get_device_name(list[i]));
		fputc('\n', stderr);
		exit(1);
	}
	ctx = ibv_open_device(dev);
	if (!ctx)
		fail("cannot open %s: %s", ibv_get_device_name(dev), strerror(errno));
	printf("msgstream: device %s\n", ibv_get_device_name(dev));
	ibv_free_device_list(list);
	return ctx;
}

static void *alloc_buffer(size_t size)
{
	void *p = NULL;
	int err = posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), size);

	if (err)
		fail("cannot allocate %zu bytes: %s", size, strerror(err));
	memset(p, 0, size);
	return p;
}

static void setup(struct rdma *r, const struct options *o, int is_server)
{
	size_t ring_size = (size_t)QUEUE_DEPTH * o->msg_size;

	r->ctx = open_device(o->dev_name);
	if (ibv_query_port(r->ctx, o->ib_port, &r->port_attr))
		fail("cannot query port %d: %s", o->ib_port, strerror(errno));
	if (r->port_attr.state != IBV_PORT_ACTIVE)
		fail("port %d is not ACTIVE (state %s, LID %u): is a subnet manager running?",
		     o->ib_port, port_state_name(r->port_attr.state), r->port_attr.lid);
	/* Queried on both fabrics; on InfiniBand qp_to_rtr does not use it. */
	if (ibv_query_gid(r->ctx, o->ib_port, o->gid_index, &r->gid))
		fail("cannot read GID index %d of port %d: %s", o->gid_index, o->ib_port,
		     strerror(errno));

	r->pd = ibv_alloc_pd(r->ctx);
	if (!r->pd)
		fail("ibv_alloc_pd: %s", strerror(errno));
	r->ring = alloc_buffer(ring_size);
	r->ring_mr = ibv_reg_mr(r->pd, r->ring, ring_size, IBV_ACCESS_LOCAL_WRITE);
	if (!r->ring_mr)
		fail("ibv_reg_mr (%zu bytes): %s", ring_size, strerror(errno));
	if (is_server) {
		size_t target_size = (size_t)o->count * o->msg_size;

		r->target = alloc_buffer(target_size);
		memset(r->target, 0xee, target_size);
		r->target_mr = ibv_reg_mr(r->pd, r->target, target_size,
					  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!r->target_mr)
			fail("ibv_reg_mr (%zu bytes, remote write): %s", target_size,
			     strerror(errno));
	}

	r->cq = ibv_create_cq(r->ctx, 2 * QUEUE_DEPTH, NULL, NULL, 0);
	if (!r->cq)
		fail("ibv_create_cq: %s", strerror(errno));

	struct ibv_qp_init_attr init = {
		.send_cq = r->cq,
		.recv_cq = r->cq,
		.cap = { .max_send_wr = QUEUE_DEPTH, .max_recv_wr = QUEUE_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	r->qp = ibv_create_qp(r->pd, &init);
	if (!r->qp)
		fail("ibv_create_qp (RC): %s", strerror(errno));
}

static void teardown(struct rdma *r)
{
	ibv_destroy_qp(r->qp);
	ibv_destroy_cq(r->cq);
	if (r->target_mr)
		ibv_dereg_mr(r->target_mr);
	ibv_dereg_mr(r->ring_mr);
	ibv_dealloc_pd(r->pd);
	ibv_close_device(r->ctx);
	free(r->target);
	free(r->ring);
}

static uint32_t random_psn(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)time(NULL) ^ (uint32_t)getpid() * 2654435761u;
	return v & 0xffffff;
}

/* ------------------------------------------------------------------------------------------
 * Queue pair state machine: RESET -> INIT -> RTR -> RTS. */

/* INIT: the port, the partition (P_Key index 0) and what the peer may do to our memory. */
static void qp_to_init(struct ibv_qp *qp, uint8_t ib_port)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = ib_port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		fail("cannot move the QP to INIT: %s", strerror(errno));
}

/* RTR: where the remote queue pair is, and the PSN its first packet will carry. */
static void qp_to_rtr(struct ibv_qp *qp, const struct dest *remote, uint8_t link_layer,
		      int gid_index, uint8_t ib_port, enum ibv_mtu mtu)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = mtu,
		.dest_qp_num = remote->qpn,
		.rq_psn = remote->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12, /* 0.64 ms */
		.ah_attr = { .sl = 0, .src_path_bits = 0, .port_num = ib_port },
	};

	if (link_layer == IBV_LINK_LAYER_ETHERNET) {
		attr.ah_attr.is_global = 1;
		attr.ah_attr.grh.dgid = remote->gid;
		attr.ah_attr.grh.sgid_index = gid_index;
		attr.ah_attr.grh.hop_limit = 255;
	} else {
		attr.ah_attr.is_global = 0;
		attr.ah_attr.dlid = remote->lid;
	}

	if (ibv_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		fail("cannot move the QP to RTR: %s", strerror(errno));
}

/* RTS: our first PSN, and how long and how often to retry before reporting an error. */
static void qp_to_rts(struct ibv_qp *qp, uint32_t psn)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = psn,
		.timeout = 14,  /* 4.096 us * 2^14 = 67 ms per try */
		.retry_cnt = 7, /* then IBV_WC_RETRY_EXC_ERR: a dead peer is an error */
		.rnr_retry = 7, /* receiver not ready: retry indefinitely (the wait below has a deadline) */
		.max_rd_atomic = 1,
	};

	if (ibv_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		fail("cannot move the QP to RTS: %s", strerror(errno));
}

/* ------------------------------------------------------------------------------------------
 * Work requests and completions. */

static void post_recv(struct rdma *r, unsigned int msg_size, uint64_t index)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->ring + (index % QUEUE_DEPTH) * msg_size),
		.length = msg_size,
		.lkey = r->ring_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = index, .sg_list = &sge, .num_sge = 1 }, *bad;
	int err = ibv_post_recv(r->qp, &wr, &bad);

	if (err)
		fail("ibv_post_recv: %s", strerror(err));
}

/* SEND (remote == NULL) or RDMA WRITE of ring slot index % QUEUE_DEPTH. */
static void post_send(struct rdma *r, unsigned int msg_size, uint64_t index,
		      const struct dest *remote)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->ring + (index % QUEUE_DEPTH) * msg_size),
		.length = msg_size,
		.lkey = r->ring_mr->lkey,
	};
	struct ibv_send_wr wr = { .wr_id = index, .sg_list = &sge, .num_sge = 1 }, *bad;
	int err;

	if (remote) {
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = remote->addr + index * msg_size;
		wr.wr.rdma.rkey = remote->rkey;
	} else {
		wr.opcode = IBV_WR_SEND;
	}
	err = ibv_post_send(r->qp, &wr, &bad);
	if (err)
		fail("ibv_post_send (%s): %s", remote ? "RDMA WRITE" : "SEND", strerror(err));
}

static const char *wc_opcode_name(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA WRITE";
	case IBV_WC_RDMA_READ: return "RDMA READ";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV (RDMA WRITE WITH IMMEDIATE)";
	default: return "other";
	}
}

/* Waits for the next completion; gives up timeout_s after the last one, or at once when the peer
 * reports a failure or goes away. Any status but success ends the program. */
static void wait_completion(struct rdma *r, struct ibv_wc *wc, int timeout_s, const char *what)
{
	double deadline = now_s() + timeout_s;
	unsigned int idle = 0;

	for (;;) {
		int n = ibv_poll_cq(r->cq, 1, wc);

		if (n < 0)
			fail("ibv_poll_cq failed while waiting for %s", what);
		if (n == 1)
			break;
		if (++idle < 1000)
			continue;
		/* Nothing for a while: stop spinning (the fabric may be an emulator sharing the CPU),
		 * and see whether the peer is still there. */
		check_peer();
		if (now_s() > deadline)
			fail("no completion for %s within %d s: is the peer alive?", what, timeout_s);
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 }, NULL);
	}
	if (wc->status != IBV_WC_SUCCESS)
		fail("%s: work request %" PRIu64 " (%s) completed with status %s (%d), vendor error 0x%x",
		     what, wc->wr_id, wc_opcode_name(wc->opcode), ibv_wc_status_str(wc->status),
		     wc->status, wc->vendor_err);
}

/* Collects the send completion of work request `index`; they arrive in posting order. */
static void reap_send(struct rdma *r, uint64_t index, enum ibv_wc_opcode op, int timeout_s,
		      const char *what)
{
	struct ibv_wc wc;

	wait_completion(r, &wc, timeout_s, what);
	if (wc.opcode != op || wc.wr_id != index)
		fail("%s: expected the %s completion of work request %" PRIu64 ", got %s of %" PRIu64,
		     what, wc_opcode_name(op), index, wc_opcode_name(wc.opcode), wc.wr_id);
}

/* ------------------------------------------------------------------------------------------
 * The two sides. */

static void print_dest(const char *who, const struct dest *d)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, d->gid.raw, gid, sizeof(gid));
	printf("msgstream: %-6s QPN 0x%06" PRIx32 " PSN 0x%06" PRIx32 " LID 0x%04x GID %s",
	       who, d->qpn, d->psn, d->lid, gid);
	if (d->addr)
		printf(" buffer 0x%" PRIx64 " rkey 0x%" PRIx32, d->addr, d->rkey);
	printf("\n");
}

static struct dest local_dest(const struct rdma *r)
{
	struct dest d = {
		.qpn = r->qp->qp_num,
		.psn = random_psn(),
		.lid = r->port_attr.lid,
		.gid = r->gid,
		.addr = r->target_mr ? (uintptr_t)r->target : 0,
		.rkey = r->target_mr ? r->target_mr->rkey : 0,
	};

	return d;
}

static void connect_qp(struct rdma *r, const struct options *o, const struct dest *local,
		       const struct dest *remote)
{
	qp_to_rtr(r->qp, remote, r->port_attr.link_layer, o->gid_index, (uint8_t)o->ib_port,
		  r->port_attr.active_mtu);
	qp_to_rts(r->qp, local->psn);
}

/* The final byte pair: the client sends first, the server answers after verifying. */
static void finish(int is_server)
{
	char mine = DONE_OK, theirs;

	if (!is_server)
		send_all(g_sock, &mine, 1, "the done byte");
	recv_all(g_sock, &theirs, 1, "the done byte");
	if (theirs != DONE_OK)
		fail("the peer reported a failure");
	if (is_server)
		send_all(g_sock, &mine, 1, "the done byte");
	g_done_sent = 1;
}

static void run_server(struct rdma *r, const struct options *o)
{
	const unsigned int n = o->count, size = o->msg_size;
	const uint64_t total_recvs = (uint64_t)n + 1; /* n SENDs, then the WRITE WITH IMMEDIATE */
	uint64_t posted = 0;
	struct dest local, remote;
	struct ibv_wc wc;
	double t0;

	qp_to_init(r->qp, (uint8_t)o->ib_port);
	/* Every receive the client will need, or a queue's worth, is posted before the server
	 * sends its address: the client cannot send before there is a buffer for it. */
	while (posted < total_recvs && posted < QUEUE_DEPTH)
		post_recv(r, size, posted++);
	local = local_dest(r);

	g_sock = tcp_accept(o->tcp_port, o->accept_timeout_s, o->timeout_s);
	recv_dest(g_sock, &remote);
	connect_qp(r, o, &local, &remote);
	send_dest(g_sock, &local);
	print_dest("local", &local);
	print_dest("remote", &remote);

	/* Phase 1: n SENDs arrive in order; each is checked and its buffer reposted. */
	t0 = now_s();
	for (uint64_t i = 0; i < n; i++) {
		wait_completion(r, &wc, o->timeout_s, "message (phase 1)");
		if (wc.opcode != IBV_WC_RECV || (wc.wc_flags & IBV_WC_WITH_IMM))
			fail("message %" PRIu64 ": expected a SEND, got %s: do both sides use the same -n?",
			     i, wc_opcode_name(wc.opcode));
		if (wc.wr_id != i)
			fail("message %" PRIu64 " completed receive %" PRIu64 " out of order", i,
			     wc.wr_id);
		if (wc.byte_len != size)
			fail("message %" PRIu64 " has %" PRIu32 " bytes, expected %u: do both sides use "
			     "the same -s?", i, wc.byte_len, size);
		verify(r->ring + (i % QUEUE_DEPTH) * size, size, 1, (uint32_t)i, "message");
		if (posted < total_recvs)
			post_recv(r, size, posted++);
	}
	double t1 = now_s();
	printf("msgstream: phase 1 SEND/RECV: %u messages of %u bytes received and verified"
	       " (%.3f s)\n", n, size, t1 - t0);

	/* Phase 2: the client writes into r->target without the server doing anything; the
	 * WRITE WITH IMMEDIATE consumes the last receive and says how many writes preceded it. */
	wait_completion(r, &wc, o->timeout_s, "the RDMA WRITE WITH IMMEDIATE (phase 2)");
	if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM))
		fail("expected the RDMA WRITE WITH IMMEDIATE, got %s: do both sides use the same -n?",
		     wc_opcode_name(wc.opcode));
	uint32_t imm = ntohl(wc.imm_data);

	if (imm != n)
		fail("the immediate value says %" PRIu32 " writes, expected %u", imm, n);
	for (uint32_t i = 0; i < n; i++)
		verify(r->target + (size_t)i * size, size, 2, i, "RDMA WRITE");
	printf("msgstream: phase 2 RDMA WRITE: %u writes of %u bytes and 1 WRITE WITH IMMEDIATE"
	       " (imm %" PRIu32 ") verified (%.3f s)\n", n, size, imm, now_s() - t1);

	finish(1);
}

static void run_client(struct rdma *r, const struct options *o)
{
	const unsigned int n = o->count, size = o->msg_size;
	struct dest local, remote;
	double t0, t1;

	qp_to_init(r->qp, (uint8_t)o->ib_port);
	local = local_dest(r);

	g_sock = tcp_connect(o->server_host, o->tcp_port, o->timeout_s);
	send_dest(g_sock, &local);
	recv_dest(g_sock, &remote);
	if (remote.addr == 0)
		fail("the peer published no buffer: is it a msgstream client, not a server?");
	if (remote.addr + (uint64_t)n * size < remote.addr)
		fail("the server's buffer address 0x%" PRIx64 " is not usable", remote.addr);
	connect_qp(r, o, &local, &remote);
	print_dest("local", &local);
	print_dest("remote", &remote);

	/* Phase 1: SENDs, up to QUEUE_DEPTH in flight; a slot is refilled once its send completed. */
	t0 = now_s();
	for (uint64_t i = 0; i < n; i++) {
		if (i >= QUEUE_DEPTH)
			reap_send(r, i - QUEUE_DEPTH, IBV_WC_SEND, o->timeout_s, "SEND (phase 1)");
		fill(r->ring + (i % QUEUE_DEPTH) * size, size, 1, (uint32_t)i);
		post_send(r, size, i, NULL);
	}
	for (uint64_t i = n > QUEUE_DEPTH ? n - QUEUE_DEPTH : 0; i < n; i++)
		reap_send(r, i, IBV_WC_SEND, o->timeout_s, "SEND (phase 1)");
	t1 = now_s();
	printf("msgstream: phase 1 SEND/RECV: %u messages of %u bytes sent (%.3f s)\n", n, size,
	       t1 - t0);

	/* Phase 2: RDMA WRITEs of message i to offset i * size of the server's buffer. */
	for (uint64_t i = 0; i < n; i++) {
		if (i >= QUEUE_DEPTH)
			reap_send(r, i - QUEUE_DEPTH, IBV_WC_RDMA_WRITE, o->timeout_s,
				  "RDMA WRITE (phase 2)");
		fill(r->ring + (i % QUEUE_DEPTH) * size, size, 2, (uint32_t)i);
		post_send(r, size, i, &remote);
	}
	for (uint64_t i = n > QUEUE_DEPTH ? n - QUEUE_DEPTH : 0; i < n; i++)
		reap_send(r, i, IBV_WC_RDMA_WRITE, o->timeout_s, "RDMA WRITE (phase 2)");

	/* Then a zero-length RDMA WRITE WITH IMMEDIATE: RC executes it after every earlier write,
	 * and its immediate value (the number of writes) reaches the server in a completion. */
	struct ibv_send_wr wr = {
		.wr_id = n,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.num_sge = 0,
		.imm_data = htonl(n),
		.wr.rdma = { .remote_addr = remote.addr, .rkey = remote.rkey },
	}, *bad;
	int err = ibv_post_send(r->qp, &wr, &bad);

	if (err)
		fail("ibv_post_send (RDMA WRITE WITH IMMEDIATE): %s", strerror(err));
	reap_send(r, n, IBV_WC_RDMA_WRITE, o->timeout_s, "RDMA WRITE WITH IMMEDIATE (phase 2)");
	printf("msgstream: phase 2 RDMA WRITE: %u writes of %u bytes and 1 WRITE WITH IMMEDIATE"
	       " (imm %u) completed (%.3f s)\n", n, size, n, now_s() - t1);

	finish(0);
	printf("msgstream: the server verified every byte\n");
}

/* ------------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: msgstream [options]         run the server\n"
		"       msgstream [options] HOST    run the client, connecting to the server on HOST\n"
		"options (give both sides the same -p, -s and -n):\n"
		"  -p, --port=PORT        TCP port of the bootstrap connection (default %s)\n"
		"  -s, --size=BYTES       message size (default %u: a 128-byte UDP payload on RoCEv2)\n"
		"  -n, --count=N          messages per phase (default %u)\n"
		"  -d, --ib-dev=DEVICE    RDMA device (default: the first one)\n"
		"  -i, --ib-port=PORT     port of the device (default 1)\n"
		"  -g, --gid-idx=INDEX    local GID index, used on RoCE (default 0)\n"
		"  -t, --timeout=SECONDS  longest wait for the peer at any step (default %d)\n"
		"  -w, --wait=SECONDS     how long the server waits for a client (default %d)\n"
		"  -h, --help             this text\n",
		DEFAULT_TCP_PORT, DEFAULT_MSG_SIZE, DEFAULT_COUNT, DEFAULT_TIMEOUT_S,
		DEFAULT_ACCEPT_TIMEOUT_S);
}

static long parse_number(const char *arg, const char *name, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "msgstream: %s must be a number from %ld to %ld, not '%s'\n", name,
			min, max, arg);
		exit(2);
	}
	return v;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "timeout", required_argument, NULL, 't' },
		{ "wait", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct options){
		.tcp_port = DEFAULT_TCP_PORT,
		.msg_size = DEFAULT_MSG_SIZE,
		.count = DEFAULT_COUNT,
		.ib_port = 1,
		.gid_index = 0,
		.timeout_s = DEFAULT_TIMEOUT_S,
		.accept_timeout_s = DEFAULT_ACCEPT_TIMEOUT_S,
	};
	while ((c = getopt_long(argc, argv, "p:s:n:d:i:g:t:w:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			parse_number(optarg, "the TCP port (-p)", 1, 65535);
			o->tcp_port = optarg;
			break;
		case 's':
			o->msg_size = (unsigned int)parse_number(optarg, "the message size (-s)", 1,
								 MAX_MSG_SIZE);
			break;
		case 'n':
			o->count = (unsigned int)parse_number(optarg, "the count (-n)", 1, 1 << 24);
			break;
		case 'd':
			o->dev_name = optarg;
			break;
		case 'i':
			o->ib_port = (int)parse_number(optarg, "the port (-i)", 1, 255);
			break;
		case 'g':
			o->gid_index = (int)parse_number(optarg, "the GID index (-g)", 0, 255);
			break;
		case 't':
			o->timeout_s = (int)parse_number(optarg, "the timeout (-t)", 1, 3600);
			break;
		case 'w':
			o->accept_timeout_s = (int)parse_number(optarg, "the wait (-w)", 1, 86400);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		o->server_host = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "msgstream: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		exit(2);
	}
	if ((uint64_t)o->count * o->msg_size > MAX_TOTAL_BYTES) {
		fprintf(stderr, "msgstream: -n %u times -s %u is more than %u bytes\n", o->count,
			o->msg_size, MAX_TOTAL_BYTES);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct options o;
	struct rdma r;
	int is_server;

	parse_options(argc, argv, &o);
	is_server = o.server_host == NULL;
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&r, 0, sizeof(r));

	setup(&r, &o, is_server);
	if (is_server)
		run_server(&r, &o);
	else
		run_client(&r, &o);
	close(g_sock);
	teardown(&r);
	printf("msgstream: OK\n");
	return 0;
}
