/*
 * rdma_set_option as a program uses it, checked against what the kernel's rdma_cm does:
 *
 *   cm-options SERVER_IP PORT
 *
 * A TOS of the wrong size is refused (EINVAL: the kernel wants one byte), so is an ACK timeout
 * on a UD ID (rdma_set_ack_timeout: RC only), and an unknown level (ENOSYS, as the kernel's
 * ucma_set_option); an ACK timeout of 18 on an RC ID is taken, and
 * the QP that ID connects (to a listener at SERVER_IP:PORT, e.g. `ucmatose -C 0`) has timeout
 * 18 once it is ready to send, where a second connection without the option has the default.
 * Prints "ok NAME" or "FAIL NAME: why" per check; exit 0 when all passed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer-check.h"

/* Waits for the next event on `ch`; returns its type, or -1. */
static int next_event(struct rdma_event_channel *ch, int *status)
{
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(ch, &ev))
        return -1;
    const int type = ev->event;
    *status = ev->status;
    rdma_ack_cm_event(ev);
    return type;
}

/* Connects a new RC ID to `server` (with ACK timeout `timeout` unless it is negative) and
 * returns the timeout its QP has at RTS, or -1 with the step that failed printed. */
static int connect_and_query(struct rdma_event_channel *ch, struct sockaddr_in *server,
                             int timeout)
{
    struct rdma_cm_id *id = NULL;
    int status = 0, result = -1;
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
        printf("rdma_create_id: %s\n", strerror(errno));
        return -1;
    }
    if (timeout >= 0) {
        uint8_t t = (uint8_t)timeout;
        if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t))) {
            printf("ACK_TIMEOUT on an RC ID: %s\n", strerror(errno));
            goto out;
        }
    }
    if (rdma_resolve_addr(id, NULL, (struct sockaddr *)server, 5000) ||
        next_event(ch, &status) != RDMA_CM_EVENT_ADDR_RESOLVED) {
        printf("address not resolved (status %d)\n", status);
        goto out;
    }
    if (rdma_resolve_route(id, 5000) || next_event(ch, &status) != RDMA_CM_EVENT_ROUTE_RESOLVED) {
        printf("route not resolved (status %d)\n", status);
        goto out;
    }
    struct ibv_qp_init_attr init = {.cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                            .max_send_sge = 1, .max_recv_sge = 1},
                                    .qp_type = IBV_QPT_RC};
    if (rdma_create_qp(id, NULL, &init)) {
        printf("rdma_create_qp: %s\n", strerror(errno));
        goto out;
    }
    struct rdma_conn_param param = {.responder_resources = 1, .initiator_depth = 1,
                                    .retry_count = 7, .rnr_retry_count = 7};
    if (rdma_connect(id, &param) || next_event(ch, &status) != RDMA_CM_EVENT_ESTABLISHED) {
        printf("not connected (status %d)\n", status);
        goto destroy_qp;
    }
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr got;
    if (ibv_query_qp(id->qp, &attr, IBV_QP_TIMEOUT | IBV_QP_STATE, &got)) {
        printf("ibv_query_qp: %s\n", strerror(errno));
    } else if (attr.qp_state != IBV_QPS_RTS) {
        printf("QP state %d, not RTS\n", attr.qp_state);
    } else {
        result = attr.timeout;
    }
    rdma_disconnect(id);
    next_event(ch, &status); /* DISCONNECTED */
destroy_qp:
    rdma_destroy_qp(id);
out:
    rdma_destroy_id(id);
    return result;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SERVER_IP PORT\n", argv[0]);
        return 2;
    }
    struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &server.sin_addr) != 1) {
        fprintf(stderr, "SERVER_IP must be an IPv4 address\n");
        return 2;
    }
    struct rdma_event_channel *ch = rdma_create_event_channel();
    if (!ch) {
        perror("rdma_create_event_channel");
        return 1;
    }

    struct rdma_cm_id *rc = NULL, *ud = NULL;
    if (rdma_create_id(ch, &rc, NULL, RDMA_PS_TCP) || rdma_create_id(ch, &ud, NULL, RDMA_PS_UDP)) {
        perror("rdma_create_id");
        return 1;
    }
    int wide = 136;
    errno = 0;
    int r = rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &wide, sizeof(wide));
    CHECK("tos-of-the-wrong-size", r == -1 && errno == EINVAL, "%d errno %d", r, errno);
    uint8_t tos = 136;
    r = rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos));
    CHECK("tos", r == 0, "%d errno %d", r, errno);
    uint8_t timeout = 18;
    errno = 0;
    r = rdma_set_option(ud, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout));
    CHECK("ack-timeout-on-ud", r == -1 && errno == EINVAL, "%d errno %d", r, errno);
    errno = 0;
    r = rdma_set_option(rc, 7, RDMA_OPTION_ID_TOS, &tos, sizeof(tos));
    CHECK("unknown-level", r == -1 && errno == ENOSYS, "%d errno %d", r, errno);
    rdma_destroy_id(rc);
    rdma_destroy_id(ud);

    const int set = connect_and_query(ch, &server, 18);
    CHECK("ack-timeout-reaches-the-qp", set == 18, "timeout %d", set);
    const int plain = connect_and_query(ch, &server, -1);
    CHECK("default-ack-timeout", plain >= 0 && plain != 18, "timeout %d", plain);

    rdma_destroy_event_channel(ch);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
