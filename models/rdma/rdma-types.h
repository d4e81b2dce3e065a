// Verbs-level types of the fabric-independent RDMA transport: the enums and structs of the
// software transport interface (IBA vol. 1 ch. 10) and of the verbs (IBA vol. 1 ch. 11), with the
// numeric values of libibverbs (<infiniband/verbs.h>, rdma-core 44) so that a C ABI bridge can
// pass them through unchanged.
//
// Structs that mirror a libibverbs struct keep the libibverbs field names (qp_state, wr_id, ...)
// so that each field can be looked up in the ibv_* man pages; they do not mirror the C layout.
#ifndef CNUAS_RDMA_TYPES_H
#define CNUAS_RDMA_TYPES_H

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

class RdmaAh;

// ---- Queue pairs ---------------------------------------------------------------------------

/// QP states, IBA vol. 1 §10.3.1 (enum ibv_qp_state).
enum class RdmaQpState : uint8_t
{
    RESET = 0,
    INIT = 1,
    RTR = 2,
    RTS = 3,
    SQD = 4,
    SQE = 5,
    ERR = 6,
    UNKNOWN = 7, ///< never a valid state; libibverbs reserves the value
};

/// Number of real QP states (RESET..ERR).
constexpr unsigned kRdmaQpStateCount = 7;

/// QP transport service types (enum ibv_qp_type). Only RC, UC and UD are implemented; the
/// other values exist so that a request for them can be refused with EOPNOTSUPP.
enum class RdmaQpType : uint8_t
{
    RC = 2,
    UC = 3,
    UD = 4,
    RAW_PACKET = 8,
    XRC_SEND = 9,
    XRC_RECV = 10,
    DRIVER = 0xff,
};

/// Attribute mask bits of ibv_modify_qp / ibv_query_qp (enum ibv_qp_attr_mask). Bits 21-24
/// were used by old kernels and never exposed by libibverbs.
enum RdmaQpAttrMask : uint32_t
{
    RDMA_QP_STATE = 1u << 0,
    RDMA_QP_CUR_STATE = 1u << 1,
    RDMA_QP_EN_SQD_ASYNC_NOTIFY = 1u << 2,
    RDMA_QP_ACCESS_FLAGS = 1u << 3,
    RDMA_QP_PKEY_INDEX = 1u << 4,
    RDMA_QP_PORT = 1u << 5,
    RDMA_QP_QKEY = 1u << 6,
    RDMA_QP_AV = 1u << 7,
    RDMA_QP_PATH_MTU = 1u << 8,
    RDMA_QP_TIMEOUT = 1u << 9,
    RDMA_QP_RETRY_CNT = 1u << 10,
    RDMA_QP_RNR_RETRY = 1u << 11,
    RDMA_QP_RQ_PSN = 1u << 12,
    RDMA_QP_MAX_QP_RD_ATOMIC = 1u << 13,
    RDMA_QP_ALT_PATH = 1u << 14,
    RDMA_QP_MIN_RNR_TIMER = 1u << 15,
    RDMA_QP_SQ_PSN = 1u << 16,
    RDMA_QP_MAX_DEST_RD_ATOMIC = 1u << 17,
    RDMA_QP_PATH_MIG_STATE = 1u << 18,
    RDMA_QP_CAP = 1u << 19,
    RDMA_QP_DEST_QPN = 1u << 20,
    RDMA_QP_RATE_LIMIT = 1u << 25,
};

/// Every mask bit libibverbs defines; any other bit makes ibv_modify_qp fail with EINVAL.
constexpr uint32_t kRdmaQpAttrMaskAll = ((1u << 21) - 1) | RDMA_QP_RATE_LIMIT;

/// Path MTU (enum ibv_mtu): the 4-bit MTU code of IBA vol. 1 §14.2.5.6 (PortInfo NeighborMTU).
enum class RdmaMtu : uint8_t
{
    MTU_256 = 1,
    MTU_512 = 2,
    MTU_1024 = 3,
    MTU_2048 = 4,
    MTU_4096 = 5,
};

/// Bytes of an MTU code, 0 for an invalid code.
uint32_t RdmaMtuBytes(RdmaMtu mtu);
/// The MTU of `bytes` (256, 512, 1024, 2048 or 4096); throws std::invalid_argument otherwise.
RdmaMtu RdmaMtuFromBytes(uint64_t bytes);

/// Automatic path migration state (enum ibv_mig_state), IBA vol. 1 §17.2.8.
enum class RdmaMigState : uint8_t
{
    MIGRATED = 0,
    REARM = 1,
    ARMED = 2,
};

// ---- Memory access -------------------------------------------------------------------------

/// Access flags of memory regions and QPs (enum ibv_access_flags). IBA vol. 1 §10.6.3: local
/// read is always allowed; remote write and remote atomic need local write as well.
enum RdmaAccess : uint32_t
{
    RDMA_ACCESS_LOCAL_WRITE = 1u << 0,
    RDMA_ACCESS_REMOTE_WRITE = 1u << 1,
    RDMA_ACCESS_REMOTE_READ = 1u << 2,
    RDMA_ACCESS_REMOTE_ATOMIC = 1u << 3,
    RDMA_ACCESS_MW_BIND = 1u << 4,
    RDMA_ACCESS_ZERO_BASED = 1u << 5,
    RDMA_ACCESS_ON_DEMAND = 1u << 6,
    RDMA_ACCESS_HUGETLB = 1u << 7,
    RDMA_ACCESS_FLUSH_GLOBAL = 1u << 8,
    RDMA_ACCESS_FLUSH_PERSISTENT = 1u << 9,
    RDMA_ACCESS_RELAXED_ORDERING = 1u << 20, ///< IBV_ACCESS_OPTIONAL_FIRST
};

/// IBV_ACCESS_OPTIONAL_RANGE: bits 20-29, which a device that does not know them ignores
/// (ibv_reg_mr(3)).
constexpr uint32_t kRdmaAccessOptionalRange = 0x3FF00000u;
/// The three remote access rights.
constexpr uint32_t kRdmaAccessRemoteAll =
    RDMA_ACCESS_REMOTE_WRITE | RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC;

// ---- Address vectors -----------------------------------------------------------------------

/// A 128-bit GID, network byte order (union ibv_gid).
using RdmaGid = std::array<uint8_t, 16>;

/// GRH fields of an address vector (struct ibv_global_route), IBA vol. 1 §8.3.
struct RdmaGlobalRoute
{
    RdmaGid dgid{};
    uint32_t flow_label = 0; ///< 20 bits
    uint8_t sgid_index = 0;
    uint8_t hop_limit = 0;
    uint8_t traffic_class = 0;
};

/// Address vector (struct ibv_ah_attr), IBA vol. 1 §11.2.2.1 (Create Address Handle).
struct RdmaAhAttr
{
    RdmaGlobalRoute grh;
    uint16_t dlid = 0;
    uint8_t sl = 0;            ///< 4 bits
    uint8_t src_path_bits = 0;
    uint8_t static_rate = 0;   ///< enum ibv_rate; 0 = port rate
    uint8_t is_global = 0;
    uint8_t port_num = 0;
};

// ---- Work requests -------------------------------------------------------------------------

/// Send work request opcodes (enum ibv_wr_opcode).
enum class RdmaWrOpcode : uint8_t
{
    RDMA_WRITE = 0,
    RDMA_WRITE_WITH_IMM = 1,
    SEND = 2,
    SEND_WITH_IMM = 3,
    RDMA_READ = 4,
    ATOMIC_CMP_AND_SWP = 5,
    ATOMIC_FETCH_AND_ADD = 6,
    LOCAL_INV = 7,
    BIND_MW = 8,
    SEND_WITH_INV = 9,
    TSO = 10,
    DRIVER1 = 11,
};

/// Send flags (enum ibv_send_flags).
enum RdmaSendFlags : uint32_t
{
    RDMA_SEND_FENCE = 1u << 0,
    RDMA_SEND_SIGNALED = 1u << 1,
    RDMA_SEND_SOLICITED = 1u << 2,
    RDMA_SEND_INLINE = 1u << 3,
    RDMA_SEND_IP_CSUM = 1u << 4,
};

/// Scatter/gather element (struct ibv_sge).
struct RdmaSge
{
    uint64_t addr = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
};

/// Send work request (struct ibv_send_wr). The `next` chain of libibverbs is a std::vector of
/// requests in RdmaQp::PostSend. imm_data is in host byte order here (libibverbs carries it in
/// network byte order; a C bridge converts).
struct RdmaSendWr
{
    uint64_t wr_id = 0;
    std::vector<RdmaSge> sg_list;
    RdmaWrOpcode opcode = RdmaWrOpcode::SEND;
    uint32_t send_flags = 0;
    uint32_t imm_data = 0;

    struct Rdma
    {
        uint64_t remote_addr = 0;
        uint32_t rkey = 0;
    } rdma;

    struct Atomic
    {
        uint64_t remote_addr = 0;
        uint64_t compare_add = 0;
        uint64_t swap = 0;
        uint32_t rkey = 0;
    } atomic;

    struct Ud
    {
        RdmaAh* ah = nullptr; ///< not owned; must belong to the QP's PD
        uint32_t remote_qpn = 0;
        uint32_t remote_qkey = 0;
    } ud;
};

/// Receive work request (struct ibv_recv_wr).
struct RdmaRecvWr
{
    uint64_t wr_id = 0;
    std::vector<RdmaSge> sg_list;
};

/// A send WQE as the transport engine sees it: the request as posted, plus what the post
/// resolved (IBA vol. 1 §10.8.3: inline data is copied at post time).
struct RdmaSendWqe
{
    RdmaSendWr wr;                   ///< wr.ud.ah is cleared: the address vector is copied below
    bool signaled = false;           ///< RDMA_SEND_SIGNALED or the QP's sq_sig_all
    uint64_t length = 0;             ///< total message length, bytes
    std::vector<uint8_t> inlineData; ///< the message, for RDMA_SEND_INLINE
    /// UD only: the address vector of wr.ud.ah at post time (the WQE carries its own copy, so
    /// destroying the AH afterwards does not affect a posted request).
    RdmaAhAttr ah;
};

/// A receive WQE as the transport engine sees it.
struct RdmaRecvWqe
{
    RdmaRecvWr wr;
    uint64_t length = 0; ///< total scatter capacity, bytes
};

// ---- Completions ---------------------------------------------------------------------------

/// Work completion status (enum ibv_wc_status), IBA vol. 1 §11.4.2.1 (Poll for Completion).
enum class RdmaWcStatus : uint8_t
{
    SUCCESS = 0,
    LOC_LEN_ERR = 1,
    LOC_QP_OP_ERR = 2,
    LOC_EEC_OP_ERR = 3,
    LOC_PROT_ERR = 4,
    WR_FLUSH_ERR = 5,
    MW_BIND_ERR = 6,
    BAD_RESP_ERR = 7,
    LOC_ACCESS_ERR = 8,
    REM_INV_REQ_ERR = 9,
    REM_ACCESS_ERR = 10,
    REM_OP_ERR = 11,
    RETRY_EXC_ERR = 12,
    RNR_RETRY_EXC_ERR = 13,
    LOC_RDD_VIOL_ERR = 14,
    REM_INV_RD_REQ_ERR = 15,
    REM_ABORT_ERR = 16,
    INV_EECN_ERR = 17,
    INV_EEC_STATE_ERR = 18,
    FATAL_ERR = 19,
    RESP_TIMEOUT_ERR = 20,
    GENERAL_ERR = 21,
    TM_ERR = 22,               ///< tag matching; never produced here
    TM_RNDV_INCOMPLETE = 23,   ///< tag matching; never produced here
};

/// The string ibv_wc_status_str(3) returns for a status.
const char* RdmaWcStatusStr(RdmaWcStatus status);

/// Work completion opcodes (enum ibv_wc_opcode). Receive opcodes have bit 7 set.
enum class RdmaWcOpcode : uint8_t
{
    SEND = 0,
    RDMA_WRITE = 1,
    RDMA_READ = 2,
    COMP_SWAP = 3,
    FETCH_ADD = 4,
    BIND_MW = 5,
    LOCAL_INV = 6,
    TSO = 7,
    RECV = 128,
    RECV_RDMA_WITH_IMM = 129,
    TM_ADD = 130,
    TM_DEL = 131,
    TM_SYNC = 132,
    TM_RECV = 133,
    TM_NO_TAG = 134,
    DRIVER1 = 135,
};

/// The completion opcode of a send-queue work request.
RdmaWcOpcode RdmaWcOpcodeOf(RdmaWrOpcode op);

/// Work completion flags (enum ibv_wc_flags).
enum RdmaWcFlags : uint32_t
{
    RDMA_WC_GRH = 1u << 0,
    RDMA_WC_WITH_IMM = 1u << 1,
    RDMA_WC_IP_CSUM_OK = 1u << 2,
    RDMA_WC_WITH_INV = 1u << 3,
    RDMA_WC_TM_SYNC_REQ = 1u << 4,
    RDMA_WC_TM_MATCH = 1u << 5,
    RDMA_WC_TM_DATA_VALID = 1u << 6,
};

/// Work completion (struct ibv_wc). ibv_poll_cq(3): when status is not SUCCESS only wr_id,
/// status, qp_num and vendor_err are valid. imm_data is in host byte order.
struct RdmaWc
{
    uint64_t wr_id = 0;
    RdmaWcStatus status = RdmaWcStatus::SUCCESS;
    RdmaWcOpcode opcode = RdmaWcOpcode::SEND;
    uint32_t vendor_err = 0;
    uint32_t byte_len = 0;
    uint32_t imm_data = 0;
    uint32_t qp_num = 0;
    uint32_t src_qp = 0;
    uint32_t wc_flags = 0;
    uint16_t pkey_index = 0;
    uint16_t slid = 0;
    uint8_t sl = 0;
    uint8_t dlid_path_bits = 0;
    /// A UD receive's network header (the kernel's ib_wc.network_hdr_type, RdmaNetworkHdr):
    /// what an Ethernet adapter reports of the packet's L3 header (RoCEv2 annex A17.4.5.1).
    uint8_t network_hdr_type = 0;
};

/// ib_wc.network_hdr_type values (the kernel's enum rdma_network_type).
enum RdmaNetworkHdr : uint8_t
{
    RDMA_NETWORK_IB = 0,
    RDMA_NETWORK_ROCE_V1 = 1,
    RDMA_NETWORK_IPV4 = 2,
    RDMA_NETWORK_IPV6 = 3,
};

// ---- QP attributes -------------------------------------------------------------------------

/// QP capacities (struct ibv_qp_cap).
struct RdmaQpCap
{
    uint32_t max_send_wr = 0;
    uint32_t max_recv_wr = 0;
    uint32_t max_send_sge = 0;
    uint32_t max_recv_sge = 0;
    uint32_t max_inline_data = 0;
};

/// QP attributes (struct ibv_qp_attr), IBA vol. 1 §11.2.5.2 (Modify Queue Pair).
struct RdmaQpAttr
{
    RdmaQpState qp_state = RdmaQpState::RESET;
    RdmaQpState cur_qp_state = RdmaQpState::RESET;
    RdmaMtu path_mtu = RdmaMtu::MTU_1024;
    RdmaMigState path_mig_state = RdmaMigState::MIGRATED;
    uint32_t qkey = 0;
    uint32_t rq_psn = 0;
    uint32_t sq_psn = 0;
    uint32_t dest_qp_num = 0;
    uint32_t qp_access_flags = 0;
    RdmaQpCap cap;
    RdmaAhAttr ah_attr;
    RdmaAhAttr alt_ah_attr;
    uint16_t pkey_index = 0;
    uint16_t alt_pkey_index = 0;
    uint8_t en_sqd_async_notify = 0;
    uint8_t sq_draining = 0;
    uint8_t max_rd_atomic = 0;      ///< initiator depth (RDMA READ/atomic outstanding as requester)
    uint8_t max_dest_rd_atomic = 0; ///< responder resources
    uint8_t min_rnr_timer = 0;      ///< 5-bit code, IBA vol. 1 §9.7.5.2.8 table 45
    uint8_t port_num = 0;
    uint8_t timeout = 0;            ///< 5 bits: 4.096 us * 2^timeout, 0 = infinite
    uint8_t retry_cnt = 0;          ///< 3 bits
    uint8_t rnr_retry = 0;          ///< 3 bits, 7 = infinite
    uint8_t alt_port_num = 0;
    uint8_t alt_timeout = 0;
    uint32_t rate_limit = 0;
};

bool operator==(const RdmaGlobalRoute& a, const RdmaGlobalRoute& b);
bool operator==(const RdmaAhAttr& a, const RdmaAhAttr& b);
bool operator==(const RdmaQpCap& a, const RdmaQpCap& b);
bool operator==(const RdmaQpAttr& a, const RdmaQpAttr& b);
inline bool
operator!=(const RdmaQpAttr& a, const RdmaQpAttr& b)
{
    return !(a == b);
}

// ---- Asynchronous events -------------------------------------------------------------------

/// Asynchronous event types (enum ibv_event_type), IBA vol. 1 §11.6.3.
enum class RdmaEventType : uint8_t
{
    CQ_ERR = 0,
    QP_FATAL = 1,
    QP_REQ_ERR = 2,
    QP_ACCESS_ERR = 3,
    COMM_EST = 4,
    SQ_DRAINED = 5,
    PATH_MIG = 6,
    PATH_MIG_ERR = 7,
    DEVICE_FATAL = 8,
    PORT_ACTIVE = 9,
    PORT_ERR = 10,
    LID_CHANGE = 11,
    PKEY_CHANGE = 12,
    SM_CHANGE = 13,
    SRQ_ERR = 14,
    SRQ_LIMIT_REACHED = 15,
    QP_LAST_WQE_REACHED = 16,
    CLIENT_REREGISTER = 17,
    GID_CHANGE = 18,
    WQ_FATAL = 19,
};

/// The string ibv_event_type_str(3) returns for an event.
const char* RdmaEventTypeStr(RdmaEventType type);

/// Device capability flags reported by RdmaDevice::QueryDevice (enum ibv_device_cap_flags).
enum RdmaDeviceCapFlags : uint32_t
{
    RDMA_DEVICE_RESIZE_MAX_WR = 1u << 0,
    RDMA_DEVICE_CURR_QP_STATE_MOD = 1u << 7,
    RDMA_DEVICE_PORT_ACTIVE_EVENT = 1u << 10,
    RDMA_DEVICE_RC_RNR_NAK_GEN = 1u << 12,
    RDMA_DEVICE_SRQ_RESIZE = 1u << 13,
};

/// Atomic capability (enum ibv_atomic_cap).
enum class RdmaAtomicCap : uint8_t
{
    NONE = 0,
    HCA = 1,
    GLOB = 2,
};

/// Port link layer (IBV_LINK_LAYER_*).
enum class RdmaLinkLayer : uint8_t
{
    UNSPECIFIED = 0,
    INFINIBAND = 1,
    ETHERNET = 2,
};

/// Name of a QP state as ibv_rc_pingpong and the kernel print it ("RESET", "INIT", ...).
const char* RdmaQpStateName(RdmaQpState s);
/// Name of a QP type ("RC", "UC", "UD", ...).
const char* RdmaQpTypeName(RdmaQpType t);
/// Name of one attribute-mask bit ("IBV_QP_STATE", ...), "?" for a non-bit or unknown bit.
const char* RdmaQpAttrMaskBitName(uint32_t bit);

/// Largest 24-bit value (QP numbers, PSNs), IBA vol. 1 §9.2.
constexpr uint32_t kRdmaMax24 = 0xFFFFFF;
/// The destination QPN of a multicast packet (IBA vol. 1 §10.5: 0xFFFFFF) and the
/// remote_qpn a UD work request to a multicast group names.
constexpr uint32_t kRdmaMulticastQpn = 0xFFFFFF;

} // namespace ns3

#endif
