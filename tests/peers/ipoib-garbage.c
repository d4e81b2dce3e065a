/*
 * A verbs program that sends another host's IPoIB what no kernel would, for the emulation tests
 * (tests/test-emu-ib.cc): UD datagrams to QP 0xFF (the IPoIB QP of every emulated host) of the
 * host at LID, and to the IPoIB broadcast group, each one wrong in a different way:
 *
 *   wrong-qkey      a well-formed IPv4 datagram with a Q_Key other than the group's
 *   short           fewer bytes than the IPoIB encapsulation header
 *   not-ip          an EtherType that is neither IPv4 nor ARP (IPv6, 0x88B5, 0)
 *   eth-arp         ARP in its Ethernet form (hardware type 1, 6-byte addresses)
 *   cut-arp         IPoIB ARP cut short at every length below its 56 bytes
 *   bad-arp         IPoIB ARP with a wrong protocol type, address length or hardware type
 *   flood-arp       2,000 well-formed IPoIB ARP requests, each from a made-up link address, for
 *                   an address nobody has (neighbours the bridge learns: bounded)
 *   group-garbage   random bytes to the broadcast group (MLID 0xC000, a GRH to its MGID)
 *
 *   ipoib-garbage LID SEED          sends them all, prints "sent N", exits 0 (1 on a verbs error)
 *
 * The test then checks that the daemon is alive, counted the drops, and that IPoIB still works.
 * Built against Debian's libibverbs headers; run inside an emulated host (`cnuas exec`).
 */
#include "tests/peers/garbage-util.h"

#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kIpoibQpn = 0xFF, kMulticastQpn = 0xFFFFFF, kQkey = 0x0B1B, kBufBytes = 2048 };

struct sender {
    struct ibv_context* ctx;
    struct ibv_pd* pd;
    struct ibv_cq* cq;
    struct ibv_qp* qp;
    struct ibv_mr* mr;
    struct ibv_ah* unicast;
    struct ibv_ah* group;
    uint8_t* buf;
    union ibv_gid gid;
    long sent;
};

/* Sends the first `len` bytes of the buffer (after the GRH room UD receivers need; here the
 * sender's buffer is the payload itself) and waits for its completion. */
static int send_one(struct sender* s, struct ibv_ah* ah, uint32_t qpn, uint32_t qkey, uint32_t len)
{
    struct ibv_sge sge = {(uintptr_t)s->buf, len, s->mr->lkey};
    struct ibv_send_wr wr = {0}, *bad = NULL;
    wr.sg_list = &sge;
    wr.num_sge = len > 0 ? 1 : 0;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = qpn;
    wr.wr.ud.remote_qkey = qkey;
    if (ibv_post_send(s->qp, &wr, &bad) != 0) {
        fprintf(stderr, "ibv_post_send failed\n");
        return -1;
    }
    struct ibv_wc wc;
    int n;
    while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0) {
    }
    if (n < 0 || wc.status != IBV_WC_SUCCESS) {
        fprintf(stderr, "send completion: %s\n", n < 0 ? "poll failed" : ibv_wc_status_str(wc.status));
        return -1;
    }
    s->sent++;
    return 0;
}

/* The IPoIB encapsulation header (RFC 4391 section 6): EtherType, 2 reserved bytes. */
static void put_header(uint8_t* p, uint16_t ethertype)
{
    p[0] = (uint8_t)(ethertype >> 8);
    p[1] = (uint8_t)ethertype;
    p[2] = p[3] = 0;
}

/* An IPoIB ARP request (RFC 4391 section 9.1) after the header, from link address (qpn, gid)
 * for 10.0.255.254; 56 bytes. */
static void put_ipoib_arp(uint8_t* p, uint32_t qpn, const uint8_t* gid)
{
    memset(p, 0, 56);
    p[0] = 0, p[1] = 32;        /* hardware type: InfiniBand */
    p[2] = 0x08, p[3] = 0x00;   /* protocol: IPv4 */
    p[4] = 20, p[5] = 4;
    p[6] = 0, p[7] = 1;         /* request */
    p[9] = (uint8_t)(qpn >> 16), p[10] = (uint8_t)(qpn >> 8), p[11] = (uint8_t)qpn;
    memcpy(p + 12, gid, 16);
    p[28] = 10, p[29] = 0, p[30] = 255, p[31] = 253;
    p[52] = 10, p[53] = 0, p[54] = 255, p[55] = 254;
}

int main(int argc, char** argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ipoib-garbage LID SEED\n");
        return 2;
    }
    const uint16_t lid = (uint16_t)strtoul(argv[1], NULL, 0);
    garbage_seed(strtoull(argv[2], NULL, 0));
    int num = 0;
    struct ibv_device** list = ibv_get_device_list(&num);
    if (!list || num < 1) {
        fprintf(stderr, "no device\n");
        return 1;
    }
    struct sender s = {0};
    s.ctx = ibv_open_device(list[0]);
    s.pd = s.ctx ? ibv_alloc_pd(s.ctx) : NULL;
    s.cq = s.pd ? ibv_create_cq(s.ctx, 16, NULL, NULL, 0) : NULL;
    s.buf = calloc(1, kBufBytes);
    s.mr = s.cq ? ibv_reg_mr(s.pd, s.buf, kBufBytes, IBV_ACCESS_LOCAL_WRITE) : NULL;
    if (!s.mr) {
        fprintf(stderr, "could not open the device\n");
        return 1;
    }
    struct ibv_qp_init_attr init = {0};
    init.send_cq = init.recv_cq = s.cq;
    init.qp_type = IBV_QPT_UD;
    init.cap.max_send_wr = 4;
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    s.qp = ibv_create_qp(s.pd, &init);
    struct ibv_qp_attr a = {0};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = 0x12345678;
    if (!s.qp ||
        ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
        fprintf(stderr, "could not make the UD QP\n");
        return 1;
    }
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(s.qp, &a, IBV_QP_STATE)) {
        return 1;
    }
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    if (ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        return 1;
    }
    ibv_query_gid(s.ctx, 1, 0, &s.gid);
    struct ibv_ah_attr ah = {0};
    ah.dlid = lid;
    ah.port_num = 1;
    s.unicast = ibv_create_ah(s.pd, &ah);
    static const uint8_t kMgid[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
                                      0,    0,    0,    0,    0xff, 0xff, 0xff, 0xff};
    ah.dlid = 0xC000;
    ah.is_global = 1;
    memcpy(ah.grh.dgid.raw, kMgid, 16);
    s.group = ibv_create_ah(s.pd, &ah);
    if (!s.unicast || !s.group) {
        fprintf(stderr, "could not make the address handles\n");
        return 1;
    }
    uint8_t* b = s.buf;
    /* wrong-qkey: a plausible IPv4 header after the IPoIB header. */
    put_header(b, 0x0800);
    memset(b + 4, 0, 40);
    b[4] = 0x45;
    b[6] = 0, b[7] = 40;
    if (send_one(&s, s.unicast, kIpoibQpn, 0x1234, 44) || send_one(&s, s.group, kMulticastQpn, 0, 44))
        return 1;
    /* short */
    for (uint32_t len = 0; len < 4; ++len)
        if (send_one(&s, s.unicast, kIpoibQpn, kQkey, len))
            return 1;
    /* not-ip */
    const uint16_t types[] = {0x86DD, 0x88B5, 0};
    for (int i = 0; i < 3; ++i) {
        put_header(b, types[i]);
        if (send_one(&s, s.unicast, kIpoibQpn, kQkey, 64))
            return 1;
    }
    /* eth-arp: 28 bytes of Ethernet ARP */
    put_header(b, 0x0806);
    memset(b + 4, 0, 28);
    b[5] = 1, b[6] = 0x08, b[8] = 6, b[9] = 4, b[11] = 1;
    if (send_one(&s, s.unicast, kIpoibQpn, kQkey, 32) || send_one(&s, s.group, kMulticastQpn, kQkey, 32))
        return 1;
    /* cut-arp */
    for (uint32_t cut = 0; cut < 56; cut += 5) {
        put_header(b, 0x0806);
        put_ipoib_arp(b + 4, 0x123456, s.gid.raw);
        if (send_one(&s, s.unicast, kIpoibQpn, kQkey, 4 + cut))
            return 1;
    }
    /* bad-arp */
    for (int field = 0; field < 4; ++field) {
        put_header(b, 0x0806);
        put_ipoib_arp(b + 4, 0x123456, s.gid.raw);
        uint8_t* arp = b + 4;
        if (field == 0) arp[1] = 1;       /* hardware type 1 with 20-byte addresses */
        if (field == 1) arp[2] = 0x86;    /* protocol 0x86DD */
        if (field == 2) arp[4] = 6;       /* address length 6 */
        if (field == 3) arp[5] = 16;      /* protocol length 16 */
        if (send_one(&s, s.unicast, kIpoibQpn, kQkey, 60))
            return 1;
    }
    /* flood-arp: made-up link addresses, to the group and to the host */
    for (int i = 0; i < 2000; ++i) {
        uint8_t gid[16];
        for (int k = 0; k < 16; ++k)
            gid[k] = (uint8_t)rnd();
        put_header(b, 0x0806);
        put_ipoib_arp(b + 4, (uint32_t)rnd() & 0xFFFFFF, gid);
        if (send_one(&s, (i & 1) ? s.group : s.unicast, (i & 1) ? kMulticastQpn : kIpoibQpn,
                     kQkey, 60))
            return 1;
    }
    /* group-garbage */
    for (int i = 0; i < 200; ++i) {
        const uint32_t len = below(kBufBytes - 64);
        for (uint32_t k = 0; k < len; ++k)
            b[k] = (uint8_t)rnd();
        if (send_one(&s, s.group, kMulticastQpn, (i & 3) ? kQkey : (uint32_t)rnd(), len))
            return 1;
    }
    printf("sent %ld\n", s.sent);
    ibv_destroy_ah(s.group);
    ibv_destroy_ah(s.unicast);
    ibv_destroy_qp(s.qp);
    ibv_dereg_mr(s.mr);
    ibv_destroy_cq(s.cq);
    ibv_dealloc_pd(s.pd);
    ibv_close_device(s.ctx);
    ibv_free_device_list(list);
    free(s.buf);
    return 0;
}
