/*
 * Internals of Cnuas's libibverbs.so.1: the objects the library hands out, each a public
 * libibverbs struct first (applications read its fields directly) followed by what the library
 * needs to reach the emulated HCA. See host/abi/cnuas-hca-abi.h for the protocol.
 */
#ifndef CNUAS_VERBS_H
#define CNUAS_VERBS_H

#include "host/abi/cnuas-hca-abi.h"

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CNUAS_EXPORT __attribute__((visibility("default")))
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct cnuas_device {
    struct ibv_device dev;
    char socket_path[108];
    uint64_t guid; /* network byte order */
    int index;     /* ibv_get_device_index: its place in the host's device list */
};

struct cnuas_context {
    struct verbs_context vctx; /* ends with the struct ibv_context applications get */
    struct cnuas_device *device;
    int sock;
    int doorbell;
    pthread_mutex_t call_lock;
    struct cnuas_hca_device_attr attr;
    volatile int dead; /* the daemon went away: every call fails */
    uint32_t idle_polls;
    uint64_t last_check_ns;
    uint64_t idle_since_ns; /* first empty poll of the current streak (0: none) */
};

struct cnuas_pd {
    struct ibv_pd pd;
};

struct cnuas_mr {
    struct ibv_mr mr;
    int unshared; /* reached by the daemon through /proc/PID/mem (verbs-shared-mr.c) */
};

struct cnuas_channel {
    struct ibv_comp_channel ch;
    uint32_t handle;
};

struct cnuas_cq {
    struct ibv_cq_ex cq; /* ibv_cq_ex starts with the fields of ibv_cq */
    uint8_t *shm;
    size_t shm_bytes;
    struct cnuas_hca_cq_shm *head;
    struct cnuas_hca_cqe *cqes;
    uint32_t capacity;
    uint32_t cons;       /* next CQE to take */
    pthread_spinlock_t lock;
    const struct cnuas_hca_cqe *cur; /* ibv_start_poll/ibv_next_poll: the current one */
    uint64_t wc_flags;   /* what create_cq_ex asked for */
};

struct cnuas_qp {
    struct ibv_qp_ex qpx; /* starts with struct ibv_qp */
    uint8_t *shm;
    size_t shm_bytes;
    struct cnuas_hca_qp_shm *head;
    struct cnuas_hca_wq_layout layout;
    struct cnuas_hca_qp_cap cap;
    uint32_t sq_prod;
    uint32_t rq_prod;
    pthread_spinlock_t sq_lock;
    pthread_spinlock_t rq_lock;
    int sq_sig_all;
    /* ibv_wr_* batch state (between wr_start and wr_complete / wr_abort) */
    uint32_t batch_start;
    struct cnuas_hca_send_wqe *cur; /* the WQE being built */
    int batch_err;
};

struct cnuas_srq {
    struct ibv_srq srq;
    uint8_t *shm;
    size_t shm_bytes;
    struct cnuas_hca_srq_shm *head;
    struct cnuas_hca_wq_layout layout;
    uint32_t max_sge;
    uint32_t prod;
    pthread_spinlock_t lock;
};

struct cnuas_ah {
    struct ibv_ah ah;
};

static inline struct cnuas_context *to_cctx(struct ibv_context *c)
{
    return container_of(c, struct cnuas_context, vctx.context);
}

static inline struct cnuas_qp *to_cqp(struct ibv_qp *q)
{
    return container_of(q, struct cnuas_qp, qpx.qp_base);
}

static inline struct cnuas_cq *to_ccq(struct ibv_cq *c)
{
    return container_of((struct ibv_cq_ex *)c, struct cnuas_cq, cq);
}

/* One control request and its answer (blocking; serialised per context). Returns 0 or an errno
 * value (also stored in errno); *out_fd receives a passed descriptor or -1. */
int cnuas_call(struct cnuas_context *ctx, struct cnuas_hca_req *q, struct cnuas_hca_resp *r,
               int send_fd, int *out_fd);
/* Map `bytes` of a descriptor the daemon passed (and close it). NULL on failure. */
void *cnuas_map(int fd, size_t bytes);
/* clock_gettime of `clock` in nanoseconds. */
uint64_t cnuas_clock_ns(clockid_t clock);
/* Registered memory (verbs-shared-mr.c): a descriptor of the memfd holding the region's pages,
 * or -1 when the daemon is to reach it through /proc/PID/mem; such a region is remembered (its
 * pages are then never moved) until cnuas_forget_unshared. */
int cnuas_share_region(const void *addr, size_t length, uint64_t *base, uint64_t *len);
void cnuas_forget_unshared(const void *addr, size_t length);
/* The daemon has gone: say so once, and make every later call fail. */
void cnuas_mark_dead(struct cnuas_context *ctx, const char *what);
/* Whether the daemon is still there (a cheap check, done now and then while polling). */
int cnuas_check_alive(struct cnuas_context *ctx);
void cnuas_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Data path (verbs-datapath.c). */
int cnuas_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int cnuas_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int cnuas_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int cnuas_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int cnuas_req_notify_cq(struct ibv_cq *cq, int solicited_only);
void cnuas_ring_doorbell(struct cnuas_context *ctx);
void cnuas_init_qp_ex_ops(struct cnuas_qp *qp);
void cnuas_init_cq_ex_ops(struct cnuas_cq *cq);

#endif
