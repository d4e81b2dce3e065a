/*
 * The interface between a real process's verbs library (host/verbs, loaded as libibverbs.so.1)
 * and the emulated HCA of its host in the Cnuas daemon (models/emu/emu-hca-service.*).
 *
 * Two channels, as on a real adapter:
 *  - Control ("the kernel's uverbs commands"): one SOCK_SEQPACKET Unix connection per opened
 *    device context. Each request is one datagram (struct cnuas_hca_req) answered by one datagram
 *    (struct cnuas_hca_resp); descriptors travel with SCM_RIGHTS. Object creation, modification
 *    and destruction, queries.
 *  - Data ("the adapter's queues"): work queues and completion queues live in shared memory
 *    (memfd) mapped by both sides. The process writes WQEs and advances a producer index, then
 *    rings the context's doorbell (an eventfd the daemon watches); the daemon writes CQEs that the
 *    process polls with no system call. Message bytes move between the process's registered
 *    memory and the model with process_vm_readv/process_vm_writev, so one-sided operations
 *    aimed at a process complete while it makes no verbs call at all.
 *
 * Everything here is fixed-width, little-endian x86-64 (both sides run on one machine), and
 * valid C11 and C++17. Indices shared between the two sides are 32-bit free-running counters
 * (slot = index % capacity) read and written with __atomic builtins; each lives in its own
 * 64-byte line so that the producer and the consumer do not share a cache line.
 *
 * The daemon trusts nothing in shared memory: an index that claims more entries than a ring
 * holds, a WQE with a bad opcode or too many SGEs, an unknown address-handle number are refused
 * (the QP or CQ enters its error state, as hardware does with a corrupt doorbell record).
 */
#ifndef CNUAS_HCA_ABI_H
#define CNUAS_HCA_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a struct below or the meaning of a field changes. */
#define CNUAS_HCA_ABI_VERSION 3u

/* The environment variable `cnuas exec` sets: the path of the host's HCA socket, or of each of
 * its adapters' sockets separated by ':' (a hybrid fabric's host: its InfiniBand HCA, then its
 * RoCE NIC). */
#define CNUAS_HCA_SOCKET_ENV "CNUAS_HCA_SOCKET"

/* ---- control requests ------------------------------------------------------------------- */

enum cnuas_hca_op {
    CNUAS_OP_OPEN = 1,          /* fd in: the context's doorbell eventfd; fd out: async pipe */
    CNUAS_OP_QUERY_DEVICE,
    CNUAS_OP_QUERY_PORT,
    CNUAS_OP_QUERY_GID,
    CNUAS_OP_QUERY_PKEY,
    CNUAS_OP_ALLOC_PD,
    CNUAS_OP_DEALLOC_PD,
    CNUAS_OP_REG_MR,
    CNUAS_OP_DEREG_MR,
    CNUAS_OP_CREATE_COMP_CHANNEL, /* fd out: the channel's pipe (read end) */
    CNUAS_OP_DESTROY_COMP_CHANNEL,
    CNUAS_OP_CREATE_CQ,         /* fd out: the CQ's shared memory */
    CNUAS_OP_DESTROY_CQ,
    CNUAS_OP_CREATE_QP,         /* fd out: the QP's shared memory */
    CNUAS_OP_MODIFY_QP,
    CNUAS_OP_QUERY_QP,
    CNUAS_OP_DESTROY_QP,
    CNUAS_OP_CREATE_SRQ,        /* fd out: the SRQ's shared memory */
    CNUAS_OP_MODIFY_SRQ,
    CNUAS_OP_QUERY_SRQ,
    CNUAS_OP_DESTROY_SRQ,
    CNUAS_OP_CREATE_AH,
    CNUAS_OP_DESTROY_AH,
    CNUAS_OP_ATTACH_MCAST,
    CNUAS_OP_DETACH_MCAST,
    CNUAS_OP_COUNT
};

struct cnuas_hca_device_attr {
    char fw_ver[64];
    char name[64];            /* "cnuas_0" */
    uint64_t node_guid;       /* network byte order, as struct ibv_device_attr holds it */
    uint64_t sys_image_guid;  /* network byte order */
    uint64_t max_mr_size;
    uint64_t page_size_cap;
    uint32_t vendor_id;
    uint32_t vendor_part_id;
    uint32_t hw_ver;
    int32_t max_qp;
    int32_t max_qp_wr;
    uint32_t device_cap_flags;
    int32_t max_sge;
    int32_t max_sge_rd;
    int32_t max_cq;
    int32_t max_cqe;
    int32_t max_mr;
    int32_t max_pd;
    int32_t max_qp_rd_atom;
    int32_t max_ee_rd_atom;
    int32_t max_res_rd_atom;
    int32_t max_qp_init_rd_atom;
    int32_t max_ee_init_rd_atom;
    uint32_t atomic_cap;
    int32_t max_ah;
    int32_t max_srq;
    int32_t max_srq_wr;
    int32_t max_srq_sge;
    uint32_t max_inline_data;
    uint16_t max_pkeys;
    uint8_t local_ca_ack_delay;
    uint8_t phys_port_cnt;
    uint8_t node_type;        /* IBV_NODE_CA */
    uint8_t transport_type;   /* IBV_TRANSPORT_IB */
    uint8_t link_layer;       /* of port 1: IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
    uint8_t reserved[5];
    uint64_t completion_timestamp_mask;
    uint64_t hca_core_clock;  /* kHz of the completion timestamps (simulated nanoseconds) */
    int32_t max_mcast_grp;
    int32_t max_mcast_qp_attach;
    int32_t max_total_mcast_qp_attach;
    uint32_t reserved2;
};

struct cnuas_hca_port_attr {
    uint32_t state;           /* enum ibv_port_state */
    uint32_t max_mtu;         /* enum ibv_mtu */
    uint32_t active_mtu;
    int32_t gid_tbl_len;
    uint32_t port_cap_flags;
    uint32_t max_msg_sz;
    uint32_t bad_pkey_cntr;
    uint32_t qkey_viol_cntr;
    uint16_t pkey_tbl_len;
    uint16_t lid;
    uint16_t sm_lid;
    uint8_t lmc;
    uint8_t max_vl_num;
    uint8_t sm_sl;
    uint8_t subnet_timeout;
    uint8_t init_type_reply;
    uint8_t active_width;
    uint8_t active_speed;
    uint8_t phys_state;
    uint8_t link_layer;
    uint8_t flags;
    uint16_t port_cap_flags2;
    uint16_t reserved;
    uint32_t active_speed_ex;
};

/* struct ibv_ah_attr, fixed width. */
struct cnuas_hca_ah_attr {
    uint8_t dgid[16];
    uint32_t flow_label;
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint8_t is_global;
    uint16_t dlid;
    uint8_t sl;
    uint8_t src_path_bits;
    uint8_t static_rate;
    uint8_t port_num;
    uint8_t reserved[2];
};

struct cnuas_hca_qp_cap {
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
};

/* struct ibv_qp_attr, fixed width. */
struct cnuas_hca_qp_attr {
    uint32_t qp_state;
    uint32_t cur_qp_state;
    uint32_t path_mtu;
    uint32_t path_mig_state;
    uint32_t qkey;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint32_t dest_qp_num;
    uint32_t qp_access_flags;
    struct cnuas_hca_qp_cap cap;
    struct cnuas_hca_ah_attr ah_attr;
    struct cnuas_hca_ah_attr alt_ah_attr;
    uint16_t pkey_index;
    uint16_t alt_pkey_index;
    uint8_t en_sqd_async_notify;
    uint8_t sq_draining;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t min_rnr_timer;
    uint8_t port_num;
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t alt_port_num;
    uint8_t alt_timeout;
    uint8_t reserved;
    uint32_t rate_limit;
};

/* Where a work queue's pieces are in the QP's (or SRQ's) shared memory. */
struct cnuas_hca_wq_layout {
    uint32_t sq_offset;       /* first send slot */
    uint32_t sq_stride;       /* bytes per send slot */
    uint32_t sq_slots;        /* = max_send_wr */
    uint32_t rq_offset;       /* first receive slot (0 and 0 slots when the QP uses an SRQ) */
    uint32_t rq_stride;
    uint32_t rq_slots;
    uint32_t shm_bytes;       /* size of the whole mapping */
    uint32_t reserved;
};

struct cnuas_hca_req {
    uint32_t op;              /* enum cnuas_hca_op */
    uint32_t reserved;
    union {
        struct {
            uint32_t abi_version;
        } open;
        struct {
            uint32_t port_num;
            uint32_t index;
        } query; /* QUERY_PORT (port_num), QUERY_GID, QUERY_PKEY */
        struct {
            uint32_t handle;
        } destroy; /* every DEALLOC/DEREG/DESTROY op */
        struct {
            uint32_t pd;
            uint32_t access;
            uint64_t addr;
            uint64_t length;
            uint64_t iova;
            /* With a memfd passed beside the request: the process maps it at
             * [share_base, share_base + share_len), which covers the region
             * (host/verbs/verbs-shared-mr.c). 0, 0 without one. */
            uint64_t share_base;
            uint64_t share_len;
        } reg_mr;
        struct {
            uint64_t cookie;      /* the library's struct ibv_cq *, echoed in channel events */
            int32_t cqe;
            uint32_t channel;     /* 0: none */
            int32_t comp_vector;
            uint32_t reserved;
        } create_cq;
        struct {
            uint64_t cookie;      /* struct ibv_qp *, echoed in asynchronous events */
            uint32_t pd;
            uint32_t send_cq;
            uint32_t recv_cq;
            uint32_t srq;         /* 0: none */
            uint32_t qp_type;     /* enum ibv_qp_type */
            uint32_t sq_sig_all;
            struct cnuas_hca_qp_cap cap;
        } create_qp;
        struct {
            uint32_t handle;
            uint32_t attr_mask;
            struct cnuas_hca_qp_attr attr;
        } modify_qp; /* also QUERY_QP (attr unused) */
        struct {
            uint64_t cookie;      /* struct ibv_srq * */
            uint32_t pd;
            uint32_t max_wr;
            uint32_t max_sge;
            uint32_t srq_limit;
        } create_srq;
        struct {
            uint32_t handle;
            uint32_t attr_mask;   /* IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT */
            uint32_t max_wr;
            uint32_t srq_limit;
        } modify_srq; /* also QUERY_SRQ */
        struct {
            uint32_t pd;
            uint32_t reserved;
            struct cnuas_hca_ah_attr attr;
        } create_ah;
        struct {
            uint32_t qp;          /* the QP's handle */
            uint16_t lid;         /* the group's MLID, host byte order */
            uint16_t reserved;
            uint8_t gid[16];      /* the group's MGID */
        } mcast; /* ATTACH_MCAST, DETACH_MCAST */
    } u;
};

struct cnuas_hca_resp {
    uint32_t op;              /* the request's */
    int32_t err;              /* 0 or an errno value */
    char why[96];             /* on failure: the model's reason, for the library's debug log */
    union {
        struct {
            uint32_t abi_version;
            uint32_t reserved;
            struct cnuas_hca_device_attr dev;
        } open; /* also QUERY_DEVICE */
        struct cnuas_hca_port_attr port;
        struct {
            uint8_t gid[16];
            uint32_t gid_type;    /* enum ibv_gid_type: IB 0, RoCE v1 1, RoCE v2 2 */
            uint32_t ndev_ifindex;
        } gid;
        struct {
            uint16_t pkey;        /* network byte order, as ibv_query_pkey returns it */
        } pkey;
        struct {
            uint32_t handle;
        } created; /* ALLOC_PD, CREATE_COMP_CHANNEL, CREATE_AH */
        struct {
            uint32_t handle;
            uint32_t lkey;
            uint32_t rkey;
        } mr;
        struct {
            uint32_t handle;
            uint32_t cqe;         /* capacity */
            uint32_t shm_bytes;
            uint32_t cqe_offset;  /* first CQE */
        } cq;
        struct {
            uint32_t handle;
            uint32_t qp_num;
            struct cnuas_hca_qp_cap cap;
            struct cnuas_hca_wq_layout layout;
        } qp; /* also CREATE_SRQ (qp_num 0; cap.max_recv_wr/max_recv_sge; layout.rq_*) */
        struct {
            struct cnuas_hca_qp_attr attr;
            struct cnuas_hca_qp_cap cap;  /* QUERY_QP: the init attributes' capacities */
            uint32_t qp_state;            /* MODIFY_QP: the state after the call */
        } qp_attr;
        struct {
            uint32_t max_wr;
            uint32_t max_sge;
            uint32_t srq_limit;
        } srq_attr;
    } u;
};

/* ---- shared memory ------------------------------------------------------------------------ */

/* One 64-byte line holding one 32-bit index. */
struct cnuas_hca_index {
    uint32_t value;
    uint32_t pad[15];
};

/* Head of a QP's shared memory. sq_prod/rq_prod are written by the process (WQEs posted),
 * sq_retired/rq_retired by the daemon (WQEs the HCA has finished with: their slots may be
 * reused). state is the QP state as the daemon last set it (the process reads it to refuse
 * posts in RESET, or to ring the doorbell for receives posted in ERR so that they flush). */
struct cnuas_hca_qp_shm {
    struct cnuas_hca_index sq_prod;
    struct cnuas_hca_index sq_retired;
    struct cnuas_hca_index rq_prod;
    struct cnuas_hca_index rq_retired;
    struct cnuas_hca_index state;
};

/* An SRQ's shared memory head: rq_* as for a QP. */
struct cnuas_hca_srq_shm {
    struct cnuas_hca_index rq_prod;
    struct cnuas_hca_index rq_retired;
};

struct cnuas_hca_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/* A send WQE slot: this header, then either num_sge SGEs or inline_len bytes of inline data. */
struct cnuas_hca_send_wqe {
    uint64_t wr_id;
    uint32_t opcode;          /* enum ibv_wr_opcode */
    uint32_t send_flags;      /* enum ibv_send_flags */
    uint32_t imm_data;        /* network byte order, as the work request carries it */
    uint32_t num_sge;
    uint64_t remote_addr;     /* RDMA and atomic operations */
    uint32_t rkey;
    uint32_t inline_len;      /* IBV_SEND_INLINE: bytes of data following the header */
    uint64_t compare_add;
    uint64_t swap;
    uint32_t ah;              /* UD: the address handle's number */
    uint32_t remote_qpn;
    uint32_t remote_qkey;
    uint32_t reserved;
};

/* A receive WQE slot: this header, then num_sge SGEs. */
struct cnuas_hca_recv_wqe {
    uint64_t wr_id;
    uint32_t num_sge;
    uint32_t reserved;
};

/* Head of a CQ's shared memory. prod is written by the daemon, cons by the process.
 * arm_seq: the process increments it to request a completion event (ibv_req_notify_cq), with
 * arm_solicited saying whether only solicited completions should wake it. error: set by the
 * daemon when the CQ overran.
 * sleepers / wake: a poller that has found the CQ empty for a while sleeps (futex) on `wake`
 * after incrementing `sleepers`; the daemon, after any completion of the same device context,
 * bumps `wake` and wakes it (host/verbs/verbs-datapath.c, cnuas_idle_poll). */
struct cnuas_hca_cq_shm {
    struct cnuas_hca_index prod;
    struct cnuas_hca_index cons;
    struct cnuas_hca_index arm_seq;
    struct cnuas_hca_index arm_solicited;
    struct cnuas_hca_index error;
    struct cnuas_hca_index sleepers;
    struct cnuas_hca_index wake;
};

/* A completion (struct ibv_wc, fixed width, plus the simulated completion time). */
struct cnuas_hca_cqe {
    uint64_t wr_id;
    uint32_t status;
    uint32_t opcode;
    uint32_t vendor_err;
    uint32_t byte_len;
    uint32_t imm_data;        /* network byte order */
    uint32_t qp_num;
    uint32_t src_qp;
    uint32_t wc_flags;
    uint16_t pkey_index;
    uint16_t slid;
    uint8_t sl;
    uint8_t dlid_path_bits;
    uint8_t reserved[6];
    uint64_t timestamp_ns;    /* simulated time of the completion */
};

/* A record in a completion channel's pipe: the CQ that has an event. */
struct cnuas_hca_comp_event {
    uint64_t cq_cookie;
};

/* A record in the context's asynchronous-event pipe. */
struct cnuas_hca_async_event {
    uint32_t event_type;      /* enum ibv_event_type */
    uint32_t port_num;        /* port events */
    uint64_t cookie;          /* the library's struct ibv_cq/qp/srq * */
};

#ifdef __cplusplus
}
#endif

#endif
