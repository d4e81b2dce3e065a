/*
 * The interface between a real process's rdma_cm library (host/rdmacm, loaded as
 * librdmacm.so.1) and the communication manager of its host's emulated HCA in the Cnuas daemon
 * (models/emu/emu-cm-service.*), the emulated counterpart of the kernel's rdma_ucm device.
 *
 *  - Requests: one SOCK_SEQPACKET Unix connection per process (the socket `cnuas exec` names in
 *    CNUAS_CM_SOCKET; one per host, whatever adapters it has), one datagram per request
 *    (struct cnuas_cm_req), one per answer (struct cnuas_cm_resp). Everything a process made
 *    (event channels, IDs, listeners, connections) belongs to its connection and ends with it,
 *    as the kernel's rdma_cm cleans up behind a process that exits.
 *  - Events: each event channel is a pipe the daemon writes and the process reads
 *    (CREATE_CHANNEL passes its read end), one struct cnuas_cm_event record per event (smaller
 *    than PIPE_BUF, so records never interleave), so that poll()/epoll on channel->fd work.
 *
 * The connection protocol itself (REQ/REP/RTU/REJ/DREQ/DREP, SIDR) is the daemon's: CM MADs on
 * the simulated wire. The process moves its QPs through INIT/RTR/RTS with ibv_modify_qp on the
 * attributes INIT_QP_ATTR gives, as librdmacm does with the kernel's.
 *
 * Fixed-width, little-endian x86-64, valid C11 and C++17. Addresses are struct sockaddr_in
 * (IPv4) in a 28-byte field (room for sockaddr_in6; IPv6 is refused with EAFNOSUPPORT).
 */
#ifndef CNUAS_CM_ABI_H
#define CNUAS_CM_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CNUAS_CM_ABI_VERSION 4u
#define CNUAS_CM_SOCKET_ENV "CNUAS_CM_SOCKET"
/* Largest private data of any CM message (RTU, DREP). */
#define CNUAS_CM_MAX_PRIVATE 224u

enum cnuas_cm_op {
    CNUAS_CM_OP_OPEN = 1,         /* first request on a connection */
    CNUAS_CM_OP_CREATE_CHANNEL,   /* fd out: the channel's pipe (read end) */
    CNUAS_CM_OP_DESTROY_CHANNEL,
    CNUAS_CM_OP_CREATE_ID,
    CNUAS_CM_OP_DESTROY_ID,
    CNUAS_CM_OP_MIGRATE_ID,       /* to another channel */
    CNUAS_CM_OP_BIND,
    CNUAS_CM_OP_RESOLVE_ADDR,     /* event: ADDR_RESOLVED or ADDR_ERROR */
    CNUAS_CM_OP_RESOLVE_ROUTE,    /* event: ROUTE_RESOLVED or ROUTE_ERROR */
    CNUAS_CM_OP_QUERY,            /* the ID's addresses, port, path */
    CNUAS_CM_OP_LISTEN,
    CNUAS_CM_OP_CONNECT,          /* REQ or SIDR_REQ */
    CNUAS_CM_OP_ACCEPT,           /* REP or SIDR_REP (passive side); RTU (active side) */
    CNUAS_CM_OP_REJECT,
    CNUAS_CM_OP_DISCONNECT,       /* DREQ, or DREP to a DREQ received */
    CNUAS_CM_OP_INIT_QP_ATTR,
    CNUAS_CM_OP_ESTABLISH,        /* rdma_notify(COMM_EST): traffic came before the RTU */
    CNUAS_CM_OP_JOIN_MCAST,       /* event: MULTICAST_JOIN or MULTICAST_ERROR (dst: the group) */
    CNUAS_CM_OP_LEAVE_MCAST,
    CNUAS_CM_OP_SET_OPTION,       /* rdma_set_option: RDMA_OPTION_ID_TOS, _ACK_TIMEOUT */
    CNUAS_CM_OP_COUNT
};

/* enum rdma_cm_event_type values travel as they are (RDMA_CM_EVENT_*). */

struct cnuas_cm_addr {
    uint8_t bytes[28];        /* struct sockaddr_in or sockaddr_in6 */
};

/* The route an ID has once resolved: what struct ibv_sa_path_rec and the address need. */
struct cnuas_cm_route {
    uint8_t sgid[16];
    uint8_t dgid[16];
    uint16_t slid;            /* host order; 0 on RoCE */
    uint16_t dlid;
    uint16_t pkey;            /* host order */
    uint8_t sl;
    uint8_t mtu;              /* enum ibv_mtu */
    uint8_t rate;             /* enum ibv_rate */
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint8_t link_layer;       /* IBV_LINK_LAYER_* */
    uint8_t resolved;         /* 1 addr, 2 addr + route */
    uint8_t reserved[3];
    uint64_t node_guid;       /* the adapter the ID is on: its verbs device's node GUID, as
                                 ibv_get_device_guid gives it (network order); 0: none yet */
};

struct cnuas_cm_conn_param {
    uint32_t qp_num;
    uint32_t qkey;            /* UD */
    uint8_t srq;
    uint8_t responder_resources;
    uint8_t initiator_depth;
    uint8_t flow_control;
    uint8_t retry_count;
    uint8_t rnr_retry_count;
    uint8_t private_data_len;
    uint8_t reserved;
    uint8_t private_data[CNUAS_CM_MAX_PRIVATE];
};

/* struct ibv_qp_attr as INIT_QP_ATTR fills it (the fields a QP transition needs). */
struct cnuas_cm_qp_attr {
    uint32_t attr_mask;       /* enum ibv_qp_attr_mask */
    uint32_t qp_state;
    uint32_t qp_access_flags;
    uint32_t qkey;
    uint32_t path_mtu;
    uint32_t dest_qp_num;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint16_t pkey_index;
    uint8_t port_num;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t min_rnr_timer;
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t reserved[3];
    /* ah_attr */
    uint8_t dgid[16];
    uint32_t flow_label;
    uint16_t dlid;
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint8_t is_global;
    uint8_t sl;
    uint8_t static_rate;
};

struct cnuas_cm_req {
    uint32_t op;              /* enum cnuas_cm_op */
    uint32_t id;              /* the ID's handle (0: none) */
    union {
        struct {
            uint32_t abi_version;
        } open;
        struct {
            uint32_t channel;
        } destroy_channel;
        struct {
            uint64_t cookie;      /* the library's struct rdma_cm_id *, echoed in events */
            uint32_t channel;
            uint32_t port_space;  /* enum rdma_port_space */
            uint32_t qp_type;     /* enum ibv_qp_type */
        } create_id;
        struct {
            uint32_t channel;
        } migrate;
        struct {
            struct cnuas_cm_addr addr;
        } bind;
        struct {
            struct cnuas_cm_addr src; /* family 0: none */
            struct cnuas_cm_addr dst;
            uint32_t timeout_ms;
        } resolve_addr;
        struct {
            uint32_t timeout_ms;
        } resolve_route;
        struct {
            int32_t backlog;
        } listen;
        struct cnuas_cm_conn_param conn; /* CONNECT, ACCEPT */
        struct {
            uint8_t private_data_len;
            uint8_t reserved[3];
            uint8_t private_data[CNUAS_CM_MAX_PRIVATE];
        } reject;
        struct {
            uint32_t qp_state;
        } init_qp_attr;
        struct {
            struct cnuas_cm_addr addr; /* the group's IPv4 multicast address */
            uint8_t join_state;        /* MCMemberRecord.JoinState: 1 full member, 8 send-only
                                          full member */
            uint8_t reserved[3];
        } mcast; /* JOIN_MCAST, LEAVE_MCAST */
        struct {
            uint32_t level;            /* RDMA_OPTION_ID */
            uint32_t optname;          /* RDMA_OPTION_ID_TOS or RDMA_OPTION_ID_ACK_TIMEOUT */
            uint8_t value;             /* both are one byte (the kernel's u8) */
            uint8_t reserved[3];
        } option; /* SET_OPTION */
    } u;
};

struct cnuas_cm_resp {
    uint32_t op;
    int32_t err;              /* 0 or an errno value */
    char why[96];
    union {
        struct {
            uint32_t abi_version;
        } open;
        struct {
            uint32_t handle;
        } created;            /* CREATE_CHANNEL, CREATE_ID */
        struct {
            struct cnuas_cm_addr src;
            struct cnuas_cm_addr dst;
            struct cnuas_cm_route route;
            uint32_t port_num;
        } query;              /* QUERY, BIND */
        struct cnuas_cm_qp_attr qp_attr;
    } u;
};

/* One record on an event channel's pipe. */
struct cnuas_cm_event {
    uint32_t event;           /* enum rdma_cm_event_type */
    int32_t status;
    uint32_t id;              /* the ID's handle; for CONNECT_REQUEST the new ID's */
    uint32_t listen_id;       /* CONNECT_REQUEST: the listening ID's handle */
    uint64_t cookie;          /* the ID's (CONNECT_REQUEST: the listening ID's) */
    struct cnuas_cm_addr src; /* CONNECT_REQUEST: the new ID's addresses */
    struct cnuas_cm_addr dst;
    struct cnuas_cm_route route;
    struct cnuas_cm_conn_param param;
    /* UD: where the peer's QP is (ESTABLISHED of a SIDR lookup; MULTICAST_JOIN: the group, with
     * param.qp_num 0xFFFFFF and param.qkey the group's Q_Key), for ibv_create_ah */
    struct cnuas_cm_qp_attr ah;
};

#ifdef __cplusplus
}
#endif

#endif
