#include "rdma-qp-state-table.h"

namespace ns3
{

namespace
{

/// Service types in table order.
enum TypeIndex : unsigned
{
    kRc = 0,
    kUc = 1,
    kUd = 2,
    kTypes = 3,
};

struct Cell
{
    bool valid;
    uint32_t required[kTypes]; ///< RC, UC, UD
    uint32_t optional[kTypes]; ///< RC, UC, UD
};

constexpr uint32_t PKEY = RDMA_QP_PKEY_INDEX;
constexpr uint32_t PORT = RDMA_QP_PORT;
constexpr uint32_t QKEY = RDMA_QP_QKEY;
constexpr uint32_t ACCESS = RDMA_QP_ACCESS_FLAGS;
constexpr uint32_t AV = RDMA_QP_AV;
constexpr uint32_t MTU = RDMA_QP_PATH_MTU;
constexpr uint32_t DQPN = RDMA_QP_DEST_QPN;
constexpr uint32_t RQPSN = RDMA_QP_RQ_PSN;
constexpr uint32_t SQPSN = RDMA_QP_SQ_PSN;
constexpr uint32_t DESTRD = RDMA_QP_MAX_DEST_RD_ATOMIC;
constexpr uint32_t RD = RDMA_QP_MAX_QP_RD_ATOMIC;
constexpr uint32_t RNRT = RDMA_QP_MIN_RNR_TIMER;
constexpr uint32_t TMO = RDMA_QP_TIMEOUT;
constexpr uint32_t RETRY = RDMA_QP_RETRY_CNT;
constexpr uint32_t RNR = RDMA_QP_RNR_RETRY;
constexpr uint32_t ALT = RDMA_QP_ALT_PATH;
constexpr uint32_t MIG = RDMA_QP_PATH_MIG_STATE;
constexpr uint32_t CUR = RDMA_QP_CUR_STATE;
constexpr uint32_t SQDN = RDMA_QP_EN_SQD_ASYNC_NOTIFY;

constexpr Cell kNone = {false, {0, 0, 0}, {0, 0, 0}};
/// "Any state -> Reset" and "any state -> Error": no attribute besides the state.
constexpr Cell kBare = {true, {0, 0, 0}, {0, 0, 0}};

constexpr unsigned kStates = kRdmaQpStateCount;

// kTable[from][to]; rows and columns RESET, INIT, RTR, RTS, SQD, SQE, ERR.
// IBA vol. 1 §11.2.5.2 / ibv_modify_qp(3).
constexpr Cell kTable[kStates][kStates] = {
    // from RESET
    {
        kBare, // -> RESET
        // -> INIT: P_Key index, port, and the access flags (RC, UC) or the Q_Key (UD).
        {true, {PKEY | PORT | ACCESS, PKEY | PORT | ACCESS, PKEY | PORT | QKEY}, {0, 0, 0}},
        kNone, // -> RTR
        kNone, // -> RTS
        kNone, // -> SQD
        kNone, // -> SQE
        kBare, // -> ERR
    },
    // from INIT
    {
        kBare,
        // -> INIT: anything RESET -> INIT set may be changed.
        {true, {0, 0, 0}, {PKEY | PORT | ACCESS, PKEY | PORT | ACCESS, PKEY | PORT | QKEY}},
        // -> RTR: the connection (RC, UC) or nothing (UD).
        {true,
         {AV | MTU | DQPN | RQPSN | DESTRD | RNRT, AV | MTU | DQPN | RQPSN, 0},
         {ALT | ACCESS | PKEY, ALT | ACCESS | PKEY, PKEY | QKEY}},
        kNone,
        kNone,
        kNone,
        kBare,
    },
    // from RTR
    {
        kBare,
        kNone,
        kNone,
        // -> RTS: the send PSN, and for RC the retry parameters and the initiator depth.
        {true,
         {TMO | RETRY | RNR | SQPSN | RD, SQPSN, SQPSN},
         {CUR | ALT | ACCESS | RNRT | MIG, CUR | ALT | ACCESS | MIG, CUR | QKEY}},
        kNone,
        kNone,
        kBare,
    },
    // from RTS
    {
        kBare,
        kNone,
        kNone,
        // -> RTS
        {true,
         {0, 0, 0},
         {CUR | ACCESS | ALT | MIG | RNRT, CUR | ACCESS | ALT | MIG, CUR | QKEY}},
        // -> SQD
        {true, {0, 0, 0}, {SQDN, SQDN, SQDN}},
        kNone,
        kBare,
    },
    // from SQD
    {
        kBare,
        kNone,
        kNone,
        // -> RTS
        {true,
         {0, 0, 0},
         {CUR | ALT | ACCESS | RNRT | MIG, CUR | ALT | ACCESS | MIG, CUR | QKEY}},
        // -> SQD: once drained, the path and most connection parameters may be changed.
        {true,
         {0, 0, 0},
         {PORT | AV | TMO | RETRY | RNR | RD | DESTRD | ALT | ACCESS | PKEY | RNRT | MIG,
          AV | ALT | ACCESS | PKEY | MIG,
          PKEY | QKEY}},
        kNone,
        kBare,
    },
    // from SQE (UC, UD only; see RdmaQpTransition)
    {
        kBare,
        kNone,
        kNone,
        // -> RTS
        {true, {0, 0, 0}, {0, CUR | ACCESS, CUR | QKEY}},
        kNone,
        kNone,
        kBare,
    },
    // from ERR
    {
        kBare,
        kNone,
        kNone,
        kNone,
        kNone,
        kNone,
        kBare,
    },
};

} // namespace

RdmaQpTransitionRule
RdmaQpTransition(RdmaQpType type, RdmaQpState from, RdmaQpState to)
{
    unsigned t;
    switch (type)
    {
    case RdmaQpType::RC:
        t = kRc;
        break;
    case RdmaQpType::UC:
        t = kUc;
        break;
    case RdmaQpType::UD:
        t = kUd;
        break;
    default:
        return {};
    }
    const auto f = static_cast<unsigned>(from);
    const auto s = static_cast<unsigned>(to);
    if (f >= kStates || s >= kStates)
    {
        return {};
    }
    // IBA vol. 1 §10.3.1: an RC QP never is in SQE.
    if (type == RdmaQpType::RC && from == RdmaQpState::SQE)
    {
        return {};
    }
    const Cell& c = kTable[f][s];
    RdmaQpTransitionRule r;
    r.valid = c.valid;
    r.required = c.required[t];
    r.optional = c.optional[t];
    return r;
}

} // namespace ns3
