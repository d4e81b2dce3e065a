/*
 * A UD sender that destroys its QP right after posting, without waiting for a completion, as
 * rdma-core's mckey does: on an adapter the sends are on the wire long before the destroy
 * command reaches it.
 *
 *   verbs-destroy-after-post DEST COUNT GO_FILE [exit]
 *
 * DEST is the receiving port: a LID on an InfiniBand port, an IPv4 address on a RoCE port (its
 * IPv4-mapped GID); the sends go to QP 0x123456 there, which nobody has (the receiver drops
 * them, counted). Prints "ready PID" once the QP is in RTS, waits until GO_FILE exists, posts
 * COUNT 1 KiB sends in one list, prints "posted", destroys the QP and prints "destroyed" with
 * the time ibv_destroy_qp took. Exit 0, or 1 with the failing call. With "exit" it ends the
 * process right after "posted" instead (_exit: no destroy, no close), as a program that exits
 * or is killed with work posted: the kernel tears its QP down then.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MESSAGE_BYTES 1024
#define REMOTE_QPN 0x123456
#define QKEY 0x11111111

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 4 && !(argc == 5 && strcmp(argv[4], "exit") == 0)) {
        fprintf(stderr, "usage: %s DEST COUNT GO_FILE [exit]\n", argv[0]);
        return 2;
    }
    const int exit_after_post = argc == 5;
    const int count = atoi(argv[2]);
    if (count <= 0 || count > 256) {
        fprintf(stderr, "COUNT must be 1..256\n");
        return 2;
    }
    int n = 0;
    struct ibv_device **devs = ibv_get_device_list(&n);
    if (!devs || n == 0)
        die("ibv_get_device_list");
    struct ibv_context *ctx = ibv_open_device(devs[0]);
    if (!ctx)
        die("ibv_open_device");
    struct ibv_port_attr port;
    if (ibv_query_port(ctx, 1, &port))
        die("ibv_query_port");
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = pd ? ibv_create_cq(ctx, count + 1, NULL, NULL, 0) : NULL;
    if (!cq)
        die("ibv_alloc_pd/ibv_create_cq");
    /* Whole pages, so that the library can share every byte of the region with the daemon. */
    const size_t bytes = ((size_t)count * MESSAGE_BYTES + 4095) / 4096 * 4096;
    char *buf = aligned_alloc(4096, bytes);
    if (buf)
        memset(buf, 0, bytes);
    struct ibv_mr *mr = buf ? ibv_reg_mr(pd, buf, bytes, 0) : NULL;
    if (!mr)
        die("ibv_reg_mr");
    struct ibv_qp_init_attr init = {.send_cq = cq,
                                    .recv_cq = cq,
                                    .cap = {.max_send_wr = (uint32_t)count,
                                            .max_recv_wr = 1,
                                            .max_send_sge = 1,
                                            .max_recv_sge = 1},
                                    .qp_type = IBV_QPT_UD};
    struct ibv_qp *qp = ibv_create_qp(pd, &init);
    if (!qp)
        die("ibv_create_qp");
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
        die("ibv_modify_qp INIT");
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
        die("ibv_modify_qp RTR");
    a.qp_state = IBV_QPS_RTS;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
        die("ibv_modify_qp RTS");

    struct ibv_ah_attr ah_attr = {.port_num = 1};
    if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
        struct in_addr ip;
        if (inet_pton(AF_INET, argv[1], &ip) != 1) {
            fprintf(stderr, "DEST must be an IPv4 address on a RoCE port\n");
            return 2;
        }
        ah_attr.is_global = 1;
        ah_attr.grh.hop_limit = 64;
        ah_attr.grh.sgid_index = 0;
        ah_attr.grh.dgid.raw[10] = 0xff;
        ah_attr.grh.dgid.raw[11] = 0xff;
        memcpy(&ah_attr.grh.dgid.raw[12], &ip, 4);
    } else {
        ah_attr.dlid = (uint16_t)atoi(argv[1]);
    }
    struct ibv_ah *ah = ibv_create_ah(pd, &ah_attr);
    if (!ah)
        die("ibv_create_ah");

    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (access(argv[3], F_OK) != 0)
        usleep(1000);

    struct ibv_sge sge[256];
    struct ibv_send_wr wr[256];
    for (int i = 0; i < count; ++i) {
        sge[i] = (struct ibv_sge){.addr = (uintptr_t)(buf + (size_t)i * MESSAGE_BYTES),
                                  .length = MESSAGE_BYTES,
                                  .lkey = mr->lkey};
        wr[i] = (struct ibv_send_wr){.wr_id = (uint64_t)i,
                                     .next = i + 1 < count ? &wr[i + 1] : NULL,
                                     .sg_list = &sge[i],
                                     .num_sge = 1,
                                     .opcode = IBV_WR_SEND,
                                     .send_flags = 0,
                                     .wr.ud = {.ah = ah, .remote_qpn = REMOTE_QPN,
                                               .remote_qkey = QKEY}};
    }
    struct ibv_send_wr *bad = NULL;
    if (ibv_post_send(qp, wr, &bad))
        die("ibv_post_send");
    printf("posted %d\n", count);
    fflush(stdout);
    if (exit_after_post)
        _exit(0);
    const double t0 = now_ms();
    if (ibv_destroy_qp(qp))
        die("ibv_destroy_qp");
    printf("destroyed in %.3f ms\n", now_ms() - t0);
    fflush(stdout);
    ibv_destroy_ah(ah);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(devs);
    free(buf);
    return 0;
}
