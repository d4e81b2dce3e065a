/*
 * The interface between a real process's umad library (host/umad, loaded as libibumad.so.3) and
 * the management interfaces (SMI/GSI) of its host's emulated HCA port in the Cnuas daemon
 * (models/emu/emu-umad-service.*). It stands where the kernel's ib_umad module and the sysfs
 * files under /sys/class/infiniband stand on a real machine.
 *
 * Two channels, as with the kernel's /dev/infiniband/umadN:
 *  - Control ("sysfs reads and the umad ioctls"): a SOCK_SEQPACKET Unix connection to the
 *    host's umad socket (CNUAS_UMAD_SOCKET). Each request is one datagram (struct
 *    cnuas_umad_req) answered by one datagram (struct cnuas_umad_resp). QUERY_CA asks the CA
 *    and its ports (answered from the port's own SMA, as a kernel fills sysfs from the HCA's
 *    MAD interface); OPEN_PORT makes the connection a umad port and passes, with SCM_RIGHTS,
 *    the port's MAD stream; REGISTER/UNREGISTER are the agent ioctls.
 *  - MAD stream ("read() and write() of the umad device"): a SOCK_SEQPACKET socket pair, one
 *    end in the daemon, the other the descriptor umad_open_port returns. Each datagram is one
 *    struct cnuas_umad_mad: from the process a MAD to send, from the daemon a MAD received for
 *    one of the port's agents. Sending never waits for an answer: the library checks what the
 *    kernel checks at write() time and keeps the timeouts and retries of its sends itself, on
 *    the wall clock, as the kernel's MAD layer does.
 *
 * Fixed-width, little-endian x86-64 (both sides on one machine), valid C11 and C++17. Fields
 * that travel on the wire in a MAD (GUIDs, the MAD itself) are in network byte order; the rest
 * is in host order.
 */
#ifndef CNUAS_UMAD_ABI_H
#define CNUAS_UMAD_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a struct below or the meaning of a field changes. */
#define CNUAS_UMAD_ABI_VERSION 2u

/* The environment variable `cnuas exec` sets: the path of the host's umad socket. */
#define CNUAS_UMAD_SOCKET_ENV "CNUAS_UMAD_SOCKET"

#define CNUAS_UMAD_MAD_BYTES 256u
#define CNUAS_UMAD_MAX_PORTS 4u   /* ports a CA answer carries (an emulated HCA has one) */
#define CNUAS_UMAD_MAX_PKEYS 128u /* P_Key table entries a port answer carries */
#define CNUAS_UMAD_MAX_AGENTS 32u /* per open port, as the kernel's IB_UMAD_MAX_AGENTS */

enum cnuas_umad_op {
    CNUAS_UMAD_OP_QUERY_CA = 1, /* the CA and its ports */
    CNUAS_UMAD_OP_OPEN_PORT,    /* fd out: the port's MAD stream */
    CNUAS_UMAD_OP_REGISTER,     /* IB_USER_MAD_REGISTER_AGENT(2) */
    CNUAS_UMAD_OP_UNREGISTER,   /* IB_USER_MAD_UNREGISTER_AGENT */
    CNUAS_UMAD_OP_COUNT
};

/* A port as the sysfs files under /sys/class/infiniband/CA/ports/N describe it. */
struct cnuas_umad_port_info {
    uint32_t portnum;
    uint32_t base_lid;
    uint32_t lmc;
    uint32_t sm_lid;
    uint32_t sm_sl;
    uint32_t state;        /* PortInfo.PortState: 1 Down, 2 Init, 3 Armed, 4 Active */
    uint32_t phys_state;   /* PortInfo.PortPhysicalState: 2 Polling, 5 LinkUp, ... */
    uint32_t rate;         /* Gb/s, the integer part of sysfs "rate" (1x SDR: 2) */
    uint32_t capmask;      /* PortInfo.CapabilityMask, host order */
    uint32_t pkeys_size;   /* entries in pkeys */
    uint64_t gid_prefix;   /* network byte order */
    uint64_t port_guid;    /* network byte order */
    char link_layer[20];   /* "InfiniBand" */
    char rate_text[40];    /* sysfs "rate", e.g. "200 Gb/sec (4X HDR)" */
    char issm_path[108];   /* the port's SM interface (/dev/infiniband/issmN): a file whose
                              opening by a process sets PortInfo.CapabilityMask.IsSM until it
                              is closed */
    uint16_t pkeys[CNUAS_UMAD_MAX_PKEYS]; /* host order */
};

/* A CA as /sys/class/infiniband/CA describes it. */
struct cnuas_umad_ca_info {
    char ca_name[20];
    uint32_t node_type;    /* 1 CA */
    uint32_t numports;
    char fw_ver[20];
    char ca_type[40];
    char hw_ver[20];
    uint64_t node_guid;    /* network byte order */
    uint64_t system_guid;  /* network byte order */
    struct cnuas_umad_port_info ports[CNUAS_UMAD_MAX_PORTS]; /* ports[i] is port i + 1 */
};

struct cnuas_umad_req {
    uint32_t op;           /* enum cnuas_umad_op */
    uint32_t abi_version;  /* CNUAS_UMAD_ABI_VERSION, in every request */
    union {
        struct {
            uint32_t portnum;
        } open_port;
        struct {
            uint32_t qpn;          /* 0 SMI, 1 GSI */
            uint32_t flags;
            uint64_t method_mask[2];
            uint32_t oui;          /* 24 bits */
            uint8_t mgmt_class;    /* 0: no class (send only, and responses to its sends) */
            uint8_t mgmt_class_version;
            uint8_t rmpp_version;
            uint8_t reserved;
        } reg;
        struct {
            uint32_t agent_id;
        } unreg;
    } u;
};

struct cnuas_umad_resp {
    uint32_t op;           /* the request's */
    int32_t err;           /* 0 or an errno value */
    char why[96];          /* on failure: the daemon's reason, for the library's debug log */
    union {
        struct cnuas_umad_ca_info ca;
        struct {
            uint32_t portnum;
        } open_port;
        struct {
            uint32_t agent_id;
            uint32_t hi_tid;       /* the upper 32 bits of its requests' TransactionIDs */
        } reg;
    } u;
};

/* One datagram of a port's MAD stream (both directions). */
struct cnuas_umad_mad {
    uint32_t agent_id;     /* the port's agent that sends, or that receives */
    uint32_t status;       /* daemon to process: 0 */
    uint32_t length;       /* bytes of mad[] that are the MAD (CNUAS_UMAD_MAD_BYTES) */
    uint32_t reserved;
    /* To the process: where the MAD came from; from the process: where it goes. */
    uint32_t qpn;          /* host order */
    uint32_t qkey;         /* host order */
    uint16_t lid;          /* host order: the DLID sent to, or the SLID received from */
    uint8_t sl;
    uint8_t path_bits;
    uint8_t grh_present;
    uint8_t gid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint8_t gid[16];
    uint32_t flow_label;
    uint16_t pkey_index;
    uint16_t reserved2;
    uint8_t mad[CNUAS_UMAD_MAD_BYTES]; /* the MAD, as on the wire */
};

#ifdef __cplusplus
}
#endif

#endif
