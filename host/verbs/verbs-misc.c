/*
 * Cnuas's libibverbs.so.1: the functions that need no HCA (names of enums, rate conversions,
 * sysfs helpers, fork support) and honest refusals for what the emulated HCA does not model
 * (multicast attach, device import, ECE, kernel structure copies of librdmacm's old ABI).
 */
#define _GNU_SOURCE
#include "cnuas-verbs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- names ------------------------------------------------------------------------------- */

CNUAS_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    /* The strings of libibverbs, which programs print and users search for. */
    static const char *const s[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_MW_BIND_ERR] = "memory management operation error",
        [IBV_WC_BAD_RESP_ERR] = "bad response error",
        [IBV_WC_LOC_ACCESS_ERR] = "local access error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IBV_WC_REM_ABORT_ERR] = "aborted error",
        [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
        [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
        [IBV_WC_FATAL_ERR] = "fatal error",
        [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
        [IBV_WC_GENERAL_ERR] = "general error",
        [IBV_WC_TM_ERR] = "TM error",
        [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
    };
    if ((unsigned)status < sizeof(s) / sizeof(s[0]) && s[status])
        return s[status];
    return "unknown";
}

CNUAS_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
    static const char *const s[] = {
        [IBV_EVENT_CQ_ERR] = "CQ error",
        [IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
        [IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
        [IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
        [IBV_EVENT_COMM_EST] = "communication established",
        [IBV_EVENT_SQ_DRAINED] = "send queue drained",
        [IBV_EVENT_PATH_MIG] = "path migrated",
        [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
        [IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
        [IBV_EVENT_PORT_ACTIVE] = "port active",
        [IBV_EVENT_PORT_ERR] = "port error",
        [IBV_EVENT_LID_CHANGE] = "LID change",
        [IBV_EVENT_PKEY_CHANGE] = "P_Key change",
        [IBV_EVENT_SM_CHANGE] = "SM change",
        [IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
        [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
        [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
        [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
        [IBV_EVENT_GID_CHANGE] = "GID table change",
        [IBV_EVENT_WQ_FATAL] = "WQ fatal",
    };
    if ((unsigned)event < sizeof(s) / sizeof(s[0]) && s[event])
        return s[event];
    return "unknown";
}

CNUAS_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
    static const char *const s[] = {
        [IBV_NODE_CA] = "InfiniBand channel adapter",
        [IBV_NODE_SWITCH] = "InfiniBand switch",
        [IBV_NODE_ROUTER] = "InfiniBand router",
        [IBV_NODE_RNIC] = "iWARP NIC",
        [IBV_NODE_USNIC] = "usNIC",
        [IBV_NODE_USNIC_UDP] = "usNIC UDP",
        [IBV_NODE_UNSPECIFIED] = "unspecified",
    };
    if ((unsigned)node_type < sizeof(s) / sizeof(s[0]) && s[node_type])
        return s[node_type];
    return "unknown";
}

CNUAS_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
    static const char *const s[] = {
        [IBV_PORT_NOP] = "no state change (NOP)",
        [IBV_PORT_DOWN] = "down",
        [IBV_PORT_INIT] = "init",
        [IBV_PORT_ARMED] = "armed",
        [IBV_PORT_ACTIVE] = "active",
        [IBV_PORT_ACTIVE_DEFER] = "active defer",
    };
    if ((unsigned)port_state < sizeof(s) / sizeof(s[0]) && s[port_state])
        return s[port_state];
    return "unknown";
}

/* ---- rates (enum ibv_rate, ibv_rate_to_mult(3), ibv_rate_to_mbps(3)) ---------------------- */

static const struct {
    enum ibv_rate rate;
    int mult; /* of 2.5 Gb/s; 0 where the rate is not a multiple */
    int mbps;
} g_rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 0, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500}, {IBV_RATE_800_GBPS, 320, 850000},
    {IBV_RATE_1200_GBPS, 480, 1275000},
};

CNUAS_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
    for (size_t i = 0; i < sizeof(g_rates) / sizeof(g_rates[0]); ++i)
        if (g_rates[i].rate == rate)
            return g_rates[i].mult ? g_rates[i].mult : -1;
    return -1;
}

CNUAS_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
    for (size_t i = 0; i < sizeof(g_rates) / sizeof(g_rates[0]); ++i)
        if (g_rates[i].mult && g_rates[i].mult == mult)
            return g_rates[i].rate;
    return IBV_RATE_MAX;
}

CNUAS_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
    for (size_t i = 0; i < sizeof(g_rates) / sizeof(g_rates[0]); ++i)
        if (g_rates[i].rate == rate)
            return g_rates[i].mbps;
    return -1;
}

CNUAS_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    for (size_t i = 0; i < sizeof(g_rates) / sizeof(g_rates[0]); ++i)
        if (g_rates[i].mbps == mbps)
            return g_rates[i].rate;
    return IBV_RATE_MAX;
}

/* ---- sysfs ------------------------------------------------------------------------------- */

CNUAS_EXPORT const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

CNUAS_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
    if (size == 0)
        return -1;
    /* The emulated device has no sysfs directory; the one file programs read through this
     * call (ibv_devinfo: board_id) is answered here. */
    if (strncmp(dir, "/sys/class/infiniband/", 22) == 0 && strcmp(file, "board_id") == 0) {
        int n = snprintf(buf, size, "CNUAS_EMULATED_HCA");
        return n < (int)size ? n : (int)size - 1;
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t len = read(fd, buf, size);
    close(fd);
    if (len <= 0)
        return -1;
    if ((size_t)len == size)
        --len;
    if (buf[len - 1] == '\n')
        --len;
    buf[len] = '\0';
    return (int)len;
}

/* ---- fork -------------------------------------------------------------------------------- */

/* Nothing is pinned: the emulated HCA reaches memory through process_vm_readv/writev, so a
 * fork cannot break a registration (ibv_fork_init(3): IBV_FORK_UNNEEDED). */
CNUAS_EXPORT int ibv_fork_init(void)
{
    return 0;
}

CNUAS_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

CNUAS_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
    return 0;
}

CNUAS_EXPORT int ibv_dofork_range(void *base, size_t size)
{
    return 0;
}

/* ---- not modelled: honest errors --------------------------------------------------------- */


CNUAS_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
                                             struct ibv_ah_attr *attr, uint8_t eth_mac[6],
                                             uint16_t *vid)
{
    return EOPNOTSUPP;
}

CNUAS_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
    errno = EOPNOTSUPP;
    return NULL;
}

CNUAS_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

CNUAS_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

CNUAS_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

CNUAS_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

CNUAS_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

CNUAS_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

CNUAS_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    return EOPNOTSUPP;
}

CNUAS_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    return EOPNOTSUPP;
}

/* The kernel-structure copies (IBVERBS_1.0) are used by librdmacm's old ABI with a kernel
 * rdma_cm device, which no Cnuas host has. They convert field by field; nothing calls them. */
CNUAS_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, void *src)
{
    memset(dst, 0, sizeof(*dst));
}

CNUAS_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, void *src)
{
    memset(dst, 0, sizeof(*dst));
}

CNUAS_EXPORT void ibv_copy_path_rec_from_kern(void *dst, void *src)
{
}

CNUAS_EXPORT void ibv_copy_path_rec_to_kern(void *dst, void *src)
{
}

/* IBVERBS_PRIVATE_34: providers (libmlx5, libefa, which perftest links) register from their
 * constructors; there is no kernel device for them to drive, so the registration is noted and
 * nothing more. */
CNUAS_EXPORT void verbs_register_driver_34(const void *ops)
{
}
