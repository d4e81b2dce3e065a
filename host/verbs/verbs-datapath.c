/*
 * Cnuas's libibverbs.so.1, data path: posting work requests into the shared work queues and
 * polling completions out of the shared completion queues, without a system call except the
 * doorbell (one eventfd write per post call). Also the extended APIs perftest uses by default:
 * the ibv_qp_ex wr_* builders and the ibv_cq_ex start/next/end polling.
 *
 * Synchronous errors are the ones libibverbs documents for ibv_post_send(3)/ibv_post_recv(3):
 * EINVAL for a request the QP cannot take (state, opcode, SGE count, inline size), ENOMEM when
 * the queue is full. Everything else (keys, access rights, remote errors) comes back as a
 * completion, as on hardware.
 */
#define _GNU_SOURCE
#include "cnuas-verbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline uint32_t load_acquire(const uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void store_release(uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

void cnuas_ring_doorbell(struct cnuas_context *ctx)
{
    const uint64_t one = 1;
    /* An eventfd write never blocks here (EFD_NONBLOCK); a counter at its maximum is still a
     * pending ring. */
    if (write(ctx->doorbell, &one, sizeof(one)) < 0 && errno != EAGAIN)
        cnuas_mark_dead(ctx, "doorbell");
}

/* ---- send ------------------------------------------------------------------------------- */

static int opcode_allowed(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_LOCAL_INV:
        return 1;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return type == IBV_QPT_RC || type == IBV_QPT_UC;
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_SEND_WITH_INV:
        return type == IBV_QPT_RC;
    default:
        return 0;
    }
}

static int send_state_ok(struct cnuas_qp *qp)
{
    /* IBA vol. 1 §10.3.1: no posting to the send queue before RTS. */
    const uint32_t s = load_acquire(&qp->head->state.value);
    return s != IBV_QPS_RESET && s != IBV_QPS_INIT && s != IBV_QPS_RTR;
}

static struct cnuas_hca_send_wqe *sq_slot(struct cnuas_qp *qp, uint32_t index)
{
    return (struct cnuas_hca_send_wqe *)(qp->shm + qp->layout.sq_offset +
                                         (size_t)(index % qp->layout.sq_slots) *
                                             qp->layout.sq_stride);
}

static int sq_full(struct cnuas_qp *qp)
{
    return qp->sq_prod - load_acquire(&qp->head->sq_retired.value) >= qp->layout.sq_slots;
}

static int fill_send(struct cnuas_qp *qp, struct ibv_send_wr *wr, struct cnuas_hca_send_wqe *w)
{
    const enum ibv_qp_type type = qp->qpx.qp_base.qp_type;
    if (!opcode_allowed(type, wr->opcode))
        return EINVAL;
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
        return EINVAL;
    memset(w, 0, sizeof(*w));
    w->wr_id = wr->wr_id;
    w->opcode = wr->opcode;
    w->send_flags = wr->send_flags;
    w->imm_data = wr->imm_data; /* union with invalidate_rkey */
    switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
        w->remote_addr = wr->wr.rdma.remote_addr;
        w->rkey = wr->wr.rdma.rkey;
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        w->remote_addr = wr->wr.atomic.remote_addr;
        w->rkey = wr->wr.atomic.rkey;
        w->compare_add = wr->wr.atomic.compare_add;
        w->swap = wr->wr.atomic.swap;
        break;
    default:
        break;
    }
    if (type == IBV_QPT_UD) {
        if (!wr->wr.ud.ah)
            return EINVAL;
        w->ah = wr->wr.ud.ah->handle;
        w->remote_qpn = wr->wr.ud.remote_qpn;
        w->remote_qkey = wr->wr.ud.remote_qkey;
    }
    uint8_t *data = (uint8_t *)(w + 1);
    if (wr->send_flags & IBV_SEND_INLINE) {
        /* ibv_post_send(3): inline data is copied now; the buffer may be reused on return. */
        uint64_t total = 0;
        for (int i = 0; i < wr->num_sge; ++i)
            total += wr->sg_list[i].length;
        if (total > qp->cap.max_inline_data)
            return EINVAL;
        uint32_t off = 0;
        for (int i = 0; i < wr->num_sge; ++i) {
            memcpy(data + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            off += wr->sg_list[i].length;
        }
        w->inline_len = off;
    } else {
        w->num_sge = (uint32_t)wr->num_sge;
        memcpy(data, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
    }
    return 0;
}

int cnuas_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
    struct cnuas_qp *qp = to_cqp(ibqp);
    struct cnuas_context *ctx = to_cctx(ibqp->context);
    if (ctx->dead) {
        *bad_wr = wr;
        return EIO;
    }
    int err = 0;
    pthread_spin_lock(&qp->sq_lock);
    const uint32_t start = qp->sq_prod;
    if (!send_state_ok(qp)) {
        err = EINVAL;
        *bad_wr = wr;
    }
    for (; wr && !err; wr = wr->next) {
        if (sq_full(qp)) {
            err = ENOMEM;
        } else {
            /* Built in place; published only by the producer index below. */
            err = fill_send(qp, wr, sq_slot(qp, qp->sq_prod));
        }
        if (err) {
            *bad_wr = wr;
            break;
        }
        ++qp->sq_prod;
    }
    if (qp->sq_prod != start) {
        store_release(&qp->head->sq_prod.value, qp->sq_prod);
        cnuas_ring_doorbell(ctx);
    }
    pthread_spin_unlock(&qp->sq_lock);
    return err;
}

/* ---- receive ----------------------------------------------------------------------------- */

static int fill_recv(uint8_t *slot, uint32_t max_sge, struct ibv_recv_wr *wr)
{
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
        return EINVAL;
    struct cnuas_hca_recv_wqe *w = (struct cnuas_hca_recv_wqe *)slot;
    w->wr_id = wr->wr_id;
    w->num_sge = (uint32_t)wr->num_sge;
    w->reserved = 0;
    memcpy(w + 1, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
    return 0;
}

int cnuas_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
    struct cnuas_qp *qp = to_cqp(ibqp);
    struct cnuas_context *ctx = to_cctx(ibqp->context);
    if (ctx->dead) {
        *bad_wr = wr;
        return EIO;
    }
    if (ibqp->srq || qp->layout.rq_slots == 0) {
        *bad_wr = wr;
        return EINVAL;
    }
    const uint32_t state = load_acquire(&qp->head->state.value);
    if (state == IBV_QPS_RESET) {
        *bad_wr = wr;
        return EINVAL;
    }
    int err = 0;
    pthread_spin_lock(&qp->rq_lock);
    const uint32_t start = qp->rq_prod;
    for (; wr; wr = wr->next) {
        if (qp->rq_prod - load_acquire(&qp->head->rq_retired.value) >= qp->layout.rq_slots) {
            err = ENOMEM;
        } else {
            uint8_t *slot = qp->shm + qp->layout.rq_offset +
                            (size_t)(qp->rq_prod % qp->layout.rq_slots) * qp->layout.rq_stride;
            err = fill_recv(slot, qp->cap.max_recv_sge, wr);
        }
        if (err) {
            *bad_wr = wr;
            break;
        }
        ++qp->rq_prod;
    }
    if (qp->rq_prod != start) {
        store_release(&qp->head->rq_prod.value, qp->rq_prod);
        /* The HCA fetches receive WQEs when a message needs one; only in the error state must
         * it be told, so that they complete with a flush. */
        if (state == IBV_QPS_ERR)
            cnuas_ring_doorbell(ctx);
    }
    pthread_spin_unlock(&qp->rq_lock);
    return err;
}

int cnuas_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct cnuas_srq *srq = container_of(ibsrq, struct cnuas_srq, srq);
    if (to_cctx(ibsrq->context)->dead) {
        *bad = wr;
        return EIO;
    }
    int err = 0;
    pthread_spin_lock(&srq->lock);
    const uint32_t start = srq->prod;
    for (; wr; wr = wr->next) {
        if (srq->prod - load_acquire(&srq->head->rq_retired.value) >= srq->layout.rq_slots) {
            err = ENOMEM;
        } else {
            uint8_t *slot = srq->shm + srq->layout.rq_offset +
                            (size_t)(srq->prod % srq->layout.rq_slots) * srq->layout.rq_stride;
            err = fill_recv(slot, srq->max_sge, wr);
        }
        if (err) {
            *bad = wr;
            break;
        }
        ++srq->prod;
    }
    if (srq->prod != start)
        store_release(&srq->head->rq_prod.value, srq->prod);
    pthread_spin_unlock(&srq->lock);
    return err;
}

/* ---- completions ------------------------------------------------------------------------- */

static void to_wc(const struct cnuas_hca_cqe *e, struct ibv_wc *wc)
{
    wc->wr_id = e->wr_id;
    wc->status = (enum ibv_wc_status)e->status;
    wc->opcode = (enum ibv_wc_opcode)e->opcode;
    wc->vendor_err = e->vendor_err;
    wc->byte_len = e->byte_len;
    wc->imm_data = e->imm_data;
    wc->qp_num = e->qp_num;
    wc->src_qp = e->src_qp;
    wc->wc_flags = e->wc_flags;
    wc->pkey_index = e->pkey_index;
    wc->slid = e->slid;
    wc->sl = e->sl;
    wc->dlid_path_bits = e->dlid_path_bits;
}

/* CNUAS_POLL_SLEEP_AFTER_US (default 20; 0: never sleep) and CNUAS_POLL_SLEEP_MAX_US (default
 * 200): how long a poller spins on empty CQs before it sleeps, and the longest one sleep. */
static uint64_t g_sleep_after_ns = ~0ull; /* ~0: not read yet */
static uint64_t g_sleep_max_ns;

static void read_sleep_settings(void)
{
    const char *a = getenv("CNUAS_POLL_SLEEP_AFTER_US");
    const char *m = getenv("CNUAS_POLL_SLEEP_MAX_US");
    const uint64_t after = a ? strtoull(a, NULL, 10) : 20;
    const uint64_t most = m ? strtoull(m, NULL, 10) : 200;
    g_sleep_max_ns = (most ? most : 1) * 1000ull;
    __atomic_store_n(&g_sleep_after_ns, after * 1000ull, __ATOMIC_RELEASE);
}

/* Sleeps until the daemon writes a completion for this context or g_sleep_max_ns pass. */
static void cnuas_sleep_on_cq(struct cnuas_cq *cq)
{
    struct cnuas_hca_cq_shm *h = cq->head;
    __atomic_add_fetch(&h->sleepers.value, 1, __ATOMIC_SEQ_CST);
    const uint32_t seq = __atomic_load_n(&h->wake.value, __ATOMIC_SEQ_CST);
    /* Pairs with the daemon's fence between writing a completion and reading `sleepers`:
     * either this sees the completion, or the daemon sees this sleeper and bumps `wake`. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&h->prod.value, __ATOMIC_ACQUIRE) ==
        __atomic_load_n(&cq->cons, __ATOMIC_RELAXED)) {
        struct timespec ts = {0, (long)g_sleep_max_ns};
        /* Not FUTEX_PRIVATE: the daemon wakes it from another process. */
        syscall(SYS_futex, &h->wake.value, FUTEX_WAIT, seq, &ts, NULL, 0);
    }
    __atomic_sub_fetch(&h->sleepers.value, 1, __ATOMIC_SEQ_CST);
}

/* A poll that found completions: the next empty one starts a new idle streak. */
static inline void cnuas_busy_poll(struct cnuas_context *ctx)
{
    ctx->idle_since_ns = 0;
}

/* An empty poll. The HCA here is not hardware beside the CPU but a thread of the daemon that
 * shares the CPUs with the programs polling it: a program that spins on an empty CQ keeps the
 * HCA from running, and on a machine with few cores the completion it waits for then waits for
 * the scheduler's time slice (milliseconds; three busy threads on two cores gave pingpong round
 * trips of 0.1-4 ms in the tail). So a poller that keeps finding nothing yields its CPU now and
 * then, and after CNUAS_POLL_SLEEP_AFTER_US of finding nothing sleeps on the CQ until the
 * daemon writes a completion of the context (a futex it wakes), the way an adapter's interrupt
 * moderation hands a busy-polling driver over to interrupts. ibv_poll_cq then returns 0 after at
 * most CNUAS_POLL_SLEEP_MAX_US. It also looks now and then whether the daemon is still there,
 * or a poller would wait forever after a daemon crash. Returns non-zero when the daemon is
 * gone. */
static int cnuas_idle_poll(struct cnuas_context *ctx, struct cnuas_cq *cq)
{
    const uint32_t n = ++ctx->idle_polls;
    if (__builtin_expect(__atomic_load_n(&g_sleep_after_ns, __ATOMIC_ACQUIRE) == ~0ull, 0))
        read_sleep_settings();
    if (g_sleep_after_ns != 0 && (n & 7) == 0) {
        const uint64_t t = cnuas_clock_ns(CLOCK_MONOTONIC);
        if (ctx->idle_since_ns == 0) {
            ctx->idle_since_ns = t;
        } else if (t - ctx->idle_since_ns >= g_sleep_after_ns) {
            cnuas_sleep_on_cq(cq);
            return !cnuas_check_alive(ctx); /* it looks at most once per 50 ms */
        }
    }
    if ((n & 31) == 0)
        sched_yield();
    if ((n & 1023) == 0 && !cnuas_check_alive(ctx))
        return 1;
    return ctx->dead;
}

int cnuas_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
    struct cnuas_cq *cq = to_ccq(ibcq);
    if (num_entries < 0)
        return -EINVAL;
    int n = 0;
    pthread_spin_lock(&cq->lock);
    const uint32_t prod = load_acquire(&cq->head->prod.value);
    while (n < num_entries && cq->cons != prod) {
        to_wc(&cq->cqes[cq->cons % cq->capacity], &wc[n]);
        ++cq->cons;
        ++n;
    }
    if (n)
        store_release(&cq->head->cons.value, cq->cons);
    pthread_spin_unlock(&cq->lock);
    if (n)
        cnuas_busy_poll(to_cctx(ibcq->context));
    else if (cnuas_idle_poll(to_cctx(ibcq->context), cq))
        return -EIO;
    return n;
}

int cnuas_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct cnuas_cq *cq = to_ccq(ibcq);
    if (to_cctx(ibcq->context)->dead)
        return EIO;
    store_release(&cq->head->arm_solicited.value, solicited_only ? 1u : 0u);
    __atomic_add_fetch(&cq->head->arm_seq.value, 1, __ATOMIC_RELEASE);
    /* Pairs with the HCA's fence between writing a completion and reading the arm: either
     * the next poll sees that completion, or the HCA sees this request. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return 0;
}

/* ---- ibv_cq_ex --------------------------------------------------------------------------- */

static struct cnuas_cq *from_cqx(struct ibv_cq_ex *c)
{
    return container_of(c, struct cnuas_cq, cq);
}

static int cqx_load(struct cnuas_cq *cq)
{
    const uint32_t prod = load_acquire(&cq->head->prod.value);
    if (cq->cons == prod) {
        cq->cur = NULL;
        return ENOENT;
    }
    cq->cur = &cq->cqes[cq->cons % cq->capacity];
    cq->cq.status = (enum ibv_wc_status)cq->cur->status;
    cq->cq.wr_id = cq->cur->wr_id;
    return 0;
}

static int cqx_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
    struct cnuas_cq *cq = from_cqx(c);
    if (attr && attr->comp_mask)
        return EINVAL;
    pthread_spin_lock(&cq->lock);
    int err = cqx_load(cq);
    if (err) {
        pthread_spin_unlock(&cq->lock);
        return cnuas_idle_poll(to_cctx(c->context), cq) ? EIO : ENOENT;
    }
    cnuas_busy_poll(to_cctx(c->context));
    return 0;
}

static int cqx_next_poll(struct ibv_cq_ex *c)
{
    struct cnuas_cq *cq = from_cqx(c);
    ++cq->cons;
    store_release(&cq->head->cons.value, cq->cons);
    return cqx_load(cq);
}

static void cqx_end_poll(struct ibv_cq_ex *c)
{
    struct cnuas_cq *cq = from_cqx(c);
    if (cq->cur) {
        ++cq->cons; /* the last one read (a next_poll that found nothing took none) */
        store_release(&cq->head->cons.value, cq->cons);
    }
    cq->cur = NULL;
    pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode cqx_opcode(struct ibv_cq_ex *c)
{
    return (enum ibv_wc_opcode)from_cqx(c)->cur->opcode;
}

static uint32_t cqx_vendor_err(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->vendor_err;
}

static uint32_t cqx_byte_len(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->byte_len;
}

static __be32 cqx_imm_data(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->imm_data;
}

static uint32_t cqx_qp_num(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->qp_num;
}

static uint32_t cqx_src_qp(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->src_qp;
}

static unsigned int cqx_wc_flags(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->wc_flags;
}

static uint32_t cqx_slid(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->slid;
}

static uint8_t cqx_sl(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->sl;
}

static uint8_t cqx_dlid_path_bits(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->dlid_path_bits;
}

static uint64_t cqx_completion_ts(struct ibv_cq_ex *c)
{
    return from_cqx(c)->cur->timestamp_ns;
}

void cnuas_init_cq_ex_ops(struct cnuas_cq *cq)
{
    struct ibv_cq_ex *c = &cq->cq;
    c->start_poll = cqx_start_poll;
    c->next_poll = cqx_next_poll;
    c->end_poll = cqx_end_poll;
    c->read_opcode = cqx_opcode;
    c->read_vendor_err = cqx_vendor_err;
    c->read_byte_len = cqx_byte_len;
    c->read_imm_data = cqx_imm_data;
    c->read_qp_num = cqx_qp_num;
    c->read_src_qp = cqx_src_qp;
    c->read_wc_flags = cqx_wc_flags;
    c->read_slid = cqx_slid;
    c->read_sl = cqx_sl;
    c->read_dlid_path_bits = cqx_dlid_path_bits;
    c->read_completion_ts = cqx_completion_ts;
}

/* ---- ibv_qp_ex (ibv_wr_*) ----------------------------------------------------------------- */

static struct cnuas_qp *from_qpx(struct ibv_qp_ex *q)
{
    return container_of(q, struct cnuas_qp, qpx);
}

static void qpx_start(struct ibv_qp_ex *q)
{
    struct cnuas_qp *qp = from_qpx(q);
    pthread_spin_lock(&qp->sq_lock);
    qp->batch_start = qp->sq_prod;
    qp->batch_err = send_state_ok(qp) ? 0 : EINVAL;
    qp->cur = NULL;
}

/* Opens the next WQE of the batch for an operation; later wr_set_* calls fill it. */
static struct cnuas_hca_send_wqe *qpx_next(struct ibv_qp_ex *q, enum ibv_wr_opcode op)
{
    struct cnuas_qp *qp = from_qpx(q);
    qp->cur = NULL;
    if (qp->batch_err)
        return NULL;
    if (!opcode_allowed(q->qp_base.qp_type, op)) {
        qp->batch_err = EINVAL;
        return NULL;
    }
    if (sq_full(qp)) {
        qp->batch_err = ENOMEM;
        return NULL;
    }
    struct cnuas_hca_send_wqe *w = sq_slot(qp, qp->sq_prod);
    memset(w, 0, sizeof(*w));
    w->wr_id = q->wr_id;
    w->opcode = op;
    w->send_flags = q->wr_flags;
    ++qp->sq_prod;
    qp->cur = w;
    return w;
}

static void qpx_send(struct ibv_qp_ex *q)
{
    qpx_next(q, IBV_WR_SEND);
}

static void qpx_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
    struct cnuas_hca_send_wqe *w = qpx_next(q, IBV_WR_SEND_WITH_IMM);
    if (w)
        w->imm_data = imm;
}

static void qpx_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
    struct cnuas_hca_send_wqe *w = qpx_next(q, IBV_WR_SEND_WITH_INV);
    if (w)
        w->imm_data = rkey;
}

static void qpx_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
    struct cnuas_hca_send_wqe *w = qpx_next(q, IBV_WR_LOCAL_INV);
    if (w)
        w->imm_data = rkey;
}

static void qpx_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
    struct cnuas_hca_send_wqe *w = qpx_next(q, IBV_WR_RDMA_WRITE);
    if (w) {
        w->rkey = rkey;
        w->remote_addr = addr;
    }
}

static void qpx_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, __be32 imm)
{
    struct cnuas_hca_send_wqe *w = qpx_next(q, IBV_WR_RDMA_WRITE_WITH_IMM);
    if (w) {
        w->rkey = rkey;
        w->remote_addr = addr;
        w->imm_data = imm;
    }
}

static void qpx_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
    struct cnuas_hca_send_wqe *w = qpx_next(q, IBV_WR_RDMA_READ);
    if (w) {
        w->rkey = rkey;
        w->remote_addr = addr;
    }
}

static void qpx_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t compare,
                        uint64_t swap)
{
    struct cnuas_hca_send_wqe *w = qpx_next(q, IBV_WR_ATOMIC_CMP_AND_SWP);
    if (w) {
        w->rkey = rkey;
        w->remote_addr = addr;
        w->compare_add = compare;
        w->swap = swap;
    }
}

static void qpx_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t add)
{
    struct cnuas_hca_send_wqe *w = qpx_next(q, IBV_WR_ATOMIC_FETCH_AND_ADD);
    if (w) {
        w->rkey = rkey;
        w->remote_addr = addr;
        w->compare_add = add;
    }
}

static void qpx_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
    struct cnuas_qp *qp = from_qpx(q);
    if (!qp->cur)
        return;
    if (!ah) {
        qp->batch_err = EINVAL;
        return;
    }
    qp->cur->ah = ah->handle;
    qp->cur->remote_qpn = qpn;
    qp->cur->remote_qkey = qkey;
}

static void qpx_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg)
{
    struct cnuas_qp *qp = from_qpx(q);
    if (!qp->cur)
        return;
    if (n > qp->cap.max_send_sge) {
        qp->batch_err = EINVAL;
        return;
    }
    qp->cur->num_sge = (uint32_t)n;
    qp->cur->inline_len = 0;
    qp->cur->send_flags &= ~(uint32_t)IBV_SEND_INLINE; /* the data is gathered, not inline */
    memcpy(qp->cur + 1, sg, n * sizeof(*sg));
}

static void qpx_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
    struct ibv_sge sge = {addr, length, lkey};
    qpx_set_sge_list(q, 1, &sge);
}

static void qpx_set_inline_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *buf)
{
    struct cnuas_qp *qp = from_qpx(q);
    if (!qp->cur)
        return;
    size_t total = 0;
    for (size_t i = 0; i < n; ++i)
        total += buf[i].length;
    if (total > qp->cap.max_inline_data) {
        qp->batch_err = EINVAL;
        return;
    }
    uint8_t *data = (uint8_t *)(qp->cur + 1);
    size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
        memcpy(data + off, buf[i].addr, buf[i].length);
        off += buf[i].length;
    }
    qp->cur->inline_len = (uint32_t)off;
    qp->cur->send_flags |= IBV_SEND_INLINE;
}

static void qpx_set_inline(struct ibv_qp_ex *q, void *addr, size_t length)
{
    struct ibv_data_buf b = {addr, length};
    qpx_set_inline_list(q, 1, &b);
}

static int qpx_complete(struct ibv_qp_ex *q)
{
    struct cnuas_qp *qp = from_qpx(q);
    struct cnuas_context *ctx = to_cctx(q->qp_base.context);
    int err = qp->batch_err;
    if (!err && ctx->dead)
        err = EIO;
    if (err) {
        qp->sq_prod = qp->batch_start; /* nothing of a failed batch is posted */
    } else if (qp->sq_prod != qp->batch_start) {
        store_release(&qp->head->sq_prod.value, qp->sq_prod);
        cnuas_ring_doorbell(ctx);
    }
    qp->cur = NULL;
    pthread_spin_unlock(&qp->sq_lock);
    return err;
}

static void qpx_abort(struct ibv_qp_ex *q)
{
    struct cnuas_qp *qp = from_qpx(q);
    qp->sq_prod = qp->batch_start;
    qp->cur = NULL;
    pthread_spin_unlock(&qp->sq_lock);
}

void cnuas_init_qp_ex_ops(struct cnuas_qp *qp)
{
    struct ibv_qp_ex *q = &qp->qpx;
    q->wr_atomic_cmp_swp = qpx_cmp_swp;
    q->wr_atomic_fetch_add = qpx_fetch_add;
    q->wr_local_inv = qpx_local_inv;
    q->wr_rdma_read = qpx_rdma_read;
    q->wr_rdma_write = qpx_rdma_write;
    q->wr_rdma_write_imm = qpx_rdma_write_imm;
    q->wr_send = qpx_send;
    q->wr_send_imm = qpx_send_imm;
    q->wr_send_inv = qpx_send_inv;
    q->wr_set_ud_addr = qpx_set_ud_addr;
    q->wr_set_inline_data = qpx_set_inline;
    q->wr_set_inline_data_list = qpx_set_inline_list;
    q->wr_set_sge = qpx_set_sge;
    q->wr_set_sge_list = qpx_set_sge_list;
    q->wr_start = qpx_start;
    q->wr_complete = qpx_complete;
    q->wr_abort = qpx_abort;
}
