// The HCA object model of the RDMA transport (models/rdma): verbs numeric values, the Modify QP
// transition table for RC, UC and UD (checked against a table written here from
// ibv_modify_qp(3) and IBA vol. 1 §11.2.5.2, in both directions, and by driving real QPs),
// attribute value checks, memory regions and keys, completion queues, flushes, post errno
// values and the simulated memory.
#include "models/rdma/rdma-objects.h"

#include "ns3/enum.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace ns3;

namespace
{

// ---- Fixture -------------------------------------------------------------------------------

constexpr uint64_t kBuf = 0x7f3a12340000ULL; // a realistic user-space address
constexpr uint64_t kBufLen = 1 << 20;

using Attrs = std::map<std::string, std::string>;

/// A device with one PD over simulated memory, two CQs, and a log of asynchronous events.
struct Hca
{
    Ptr<RdmaDevice> dev;
    Ptr<RdmaSimulatedMemory> mem;
    Ptr<RdmaPd> pd;
    Ptr<RdmaCq> scq;
    Ptr<RdmaCq> rcq;
    std::vector<RdmaAsyncEvent> events;

    explicit Hca(const Attrs& attrs = {}, int cqe = 256)
    {
        dev = CreateObject<RdmaDevice>();
        for (const auto& [k, v] : attrs)
        {
            if (k == "LinkLayer" || k == "MaxMtu" || k == "AtomicCap")
            {
                dev->SetAttribute(k, EnumValue(std::stoi(v)));
            }
            else
            {
                dev->SetAttribute(k, UintegerValue(std::stoull(v, nullptr, 0)));
            }
        }
        dev->AssignStreams(7);
        dev->TraceConnectWithoutContext("AsyncEvent", MakeCallback(&Hca::OnEvent, this));
        mem = CreateObject<RdmaSimulatedMemory>();
        EXPECT_TRUE(mem->Map(kBuf, kBufLen));
        pd = dev->AllocPd(mem);
        scq = dev->CreateCq(cqe);
        rcq = dev->CreateCq(cqe);
    }

    ~Hca()
    {
        dev->Dispose();
    }

    Hca(const Hca&) = delete;
    Hca& operator=(const Hca&) = delete;

    void OnEvent(const RdmaAsyncEvent& e)
    {
        events.push_back(e);
    }

    Ptr<RdmaQp> Qp(RdmaQpType type, RdmaQpCap cap = {16, 16, 4, 4, 64}, Ptr<RdmaSrq> srq = nullptr)
    {
        RdmaQpInitAttr init;
        init.send_cq = scq;
        init.recv_cq = rcq;
        init.srq = srq;
        init.cap = cap;
        init.qp_type = type;
        int err = -1;
        Ptr<RdmaQp> qp = dev->CreateQp(pd, init, &err);
        EXPECT_EQ(err, 0) << dev->GetLastError();
        return qp;
    }

    int CountEvents(RdmaEventType t) const
    {
        int n = 0;
        for (const auto& e : events)
        {
            n += e.event_type == t;
        }
        return n;
    }
};

// ---- The reference transition table (written from ibv_modify_qp(3) / IBA §11.2.5.2) ------------

const std::map<std::string, uint32_t>&
BitsByName()
{
    // enum ibv_qp_attr_mask, as in <infiniband/verbs.h>.
    static const std::map<std::string, uint32_t> m = {
        {"STATE", 1u << 0},
        {"CUR_STATE", 1u << 1},
        {"EN_SQD_ASYNC_NOTIFY", 1u << 2},
        {"ACCESS_FLAGS", 1u << 3},
        {"PKEY_INDEX", 1u << 4},
        {"PORT", 1u << 5},
        {"QKEY", 1u << 6},
        {"AV", 1u << 7},
        {"PATH_MTU", 1u << 8},
        {"TIMEOUT", 1u << 9},
        {"RETRY_CNT", 1u << 10},
        {"RNR_RETRY", 1u << 11},
        {"RQ_PSN", 1u << 12},
        {"MAX_QP_RD_ATOMIC", 1u << 13},
        {"ALT_PATH", 1u << 14},
        {"MIN_RNR_TIMER", 1u << 15},
        {"SQ_PSN", 1u << 16},
        {"MAX_DEST_RD_ATOMIC", 1u << 17},
        {"PATH_MIG_STATE", 1u << 18},
        {"CAP", 1u << 19},
        {"DEST_QPN", 1u << 20},
        {"RATE_LIMIT", 1u << 25},
    };
    return m;
}

uint32_t
Bits(const std::string& names)
{
    std::istringstream is(names);
    std::string w;
    uint32_t m = 0;
    while (is >> w)
    {
        auto it = BitsByName().find(w);
        EXPECT_NE(it, BitsByName().end()) << "unknown bit name " << w;
        if (it != BitsByName().end())
        {
            m |= it->second;
        }
    }
    return m;
}

/// Every attribute bit libibverbs defines, except IBV_QP_STATE.
uint32_t
AllAttrBits()
{
    uint32_t m = 0;
    for (const auto& [n, b] : BitsByName())
    {
        m |= b;
    }
    return m & ~(1u << 0);
}

const std::map<std::string, RdmaQpState>&
StatesByName()
{
    static const std::map<std::string, RdmaQpState> m = {
        {"RESET", RdmaQpState::RESET},
        {"INIT", RdmaQpState::INIT},
        {"RTR", RdmaQpState::RTR},
        {"RTS", RdmaQpState::RTS},
        {"SQD", RdmaQpState::SQD},
        {"SQE", RdmaQpState::SQE},
        {"ERR", RdmaQpState::ERR},
    };
    return m;
}

struct Row
{
    const char* types;
    const char* from;
    const char* to;
    const char* required; ///< besides STATE
    const char* optional;
};

// ibv_modify_qp(3) lists the required attributes for RESET->INIT, INIT->RTR and RTR->RTS;
// IBA vol. 1 §11.2.5.2 gives the rest of the table (optional attributes, SQD, SQE).
const Row kRows[] = {
    {"RC UC", "RESET", "INIT", "PKEY_INDEX PORT ACCESS_FLAGS", ""},
    {"UD", "RESET", "INIT", "PKEY_INDEX PORT QKEY", ""},
    {"RC UC", "INIT", "INIT", "", "PKEY_INDEX PORT ACCESS_FLAGS"},
    {"UD", "INIT", "INIT", "", "PKEY_INDEX PORT QKEY"},
    {"RC",
     "INIT",
     "RTR",
     "AV PATH_MTU DEST_QPN RQ_PSN MAX_DEST_RD_ATOMIC MIN_RNR_TIMER",
     "ALT_PATH ACCESS_FLAGS PKEY_INDEX"},
    {"UC", "INIT", "RTR", "AV PATH_MTU DEST_QPN RQ_PSN", "ALT_PATH ACCESS_FLAGS PKEY_INDEX"},
    {"UD", "INIT", "RTR", "", "PKEY_INDEX QKEY"},
    {"RC",
     "RTR",
     "RTS",
     "SQ_PSN TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC",
     "CUR_STATE ALT_PATH ACCESS_FLAGS MIN_RNR_TIMER PATH_MIG_STATE"},
    {"UC", "RTR", "RTS", "SQ_PSN", "CUR_STATE ALT_PATH ACCESS_FLAGS PATH_MIG_STATE"},
    {"UD", "RTR", "RTS", "SQ_PSN", "CUR_STATE QKEY"},
    {"RC", "RTS", "RTS", "", "CUR_STATE ACCESS_FLAGS ALT_PATH PATH_MIG_STATE MIN_RNR_TIMER"},
    {"UC", "RTS", "RTS", "", "CUR_STATE ACCESS_FLAGS ALT_PATH PATH_MIG_STATE"},
    {"UD", "RTS", "RTS", "", "CUR_STATE QKEY"},
    {"RC UC UD", "RTS", "SQD", "", "EN_SQD_ASYNC_NOTIFY"},
    {"RC", "SQD", "RTS", "", "CUR_STATE ALT_PATH ACCESS_FLAGS MIN_RNR_TIMER PATH_MIG_STATE"},
    {"UC", "SQD", "RTS", "", "CUR_STATE ALT_PATH ACCESS_FLAGS PATH_MIG_STATE"},
    {"UD", "SQD", "RTS", "", "CUR_STATE QKEY"},
    {"RC",
     "SQD",
     "SQD",
     "",
     "PORT AV TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC MAX_DEST_RD_ATOMIC ALT_PATH "
     "ACCESS_FLAGS PKEY_INDEX MIN_RNR_TIMER PATH_MIG_STATE"},
    {"UC", "SQD", "SQD", "", "AV ALT_PATH ACCESS_FLAGS PKEY_INDEX PATH_MIG_STATE"},
    {"UD", "SQD", "SQD", "", "PKEY_INDEX QKEY"},
    // SQE exists for UC and UD only (an RC QP's send errors take it to ERR).
    {"UC", "SQE", "RTS", "", "CUR_STATE ACCESS_FLAGS"},
    {"UD", "SQE", "RTS", "", "CUR_STATE QKEY"},
    // "Any state -> Reset" and "any state -> Error" are added by RefTable().
};

struct RefRule
{
    uint32_t required;
    uint32_t optional;
};

using RefKey = std::tuple<RdmaQpType, RdmaQpState, RdmaQpState>;

const std::vector<RdmaQpType> kTypes = {RdmaQpType::RC, RdmaQpType::UC, RdmaQpType::UD};

/// The states a QP of this type can be in.
std::vector<RdmaQpState>
StatesOf(RdmaQpType t)
{
    std::vector<RdmaQpState> v = {RdmaQpState::RESET,
                                  RdmaQpState::INIT,
                                  RdmaQpState::RTR,
                                  RdmaQpState::RTS,
                                  RdmaQpState::SQD};
    if (t != RdmaQpType::RC)
    {
        v.push_back(RdmaQpState::SQE);
    }
    v.push_back(RdmaQpState::ERR);
    return v;
}

const std::map<RefKey, RefRule>&
RefTable()
{
    static const std::map<RefKey, RefRule> table = [] {
        std::map<RefKey, RefRule> t;
        for (const Row& r : kRows)
        {
            std::istringstream is(r.types);
            std::string ty;
            while (is >> ty)
            {
                const RdmaQpType type = ty == "RC"   ? RdmaQpType::RC
                                        : ty == "UC" ? RdmaQpType::UC
                                                     : RdmaQpType::UD;
                t[{type, StatesByName().at(r.from), StatesByName().at(r.to)}] = {
                    Bits(r.required),
                    Bits(r.optional)};
            }
        }
        for (RdmaQpType type : kTypes)
        {
            for (RdmaQpState s : StatesOf(type))
            {
                t[{type, s, RdmaQpState::RESET}] = {0, 0};
                t[{type, s, RdmaQpState::ERR}] = {0, 0};
            }
        }
        return t;
    }();
    return table;
}

// ---- Driving QPs ---------------------------------------------------------------------------

/// Attribute values that are all valid and all different from a fresh QP's.
RdmaQpAttr
ValidAttr(RdmaQpState from, RdmaQpState to)
{
    RdmaQpAttr a;
    a.qp_state = to;
    a.cur_qp_state = from;
    a.path_mtu = RdmaMtu::MTU_512;
    a.path_mig_state = RdmaMigState::REARM;
    a.qkey = 0x11111111;
    a.rq_psn = 0x123456;
    a.sq_psn = 0x654321;
    a.dest_qp_num = 0xABCDE;
    a.qp_access_flags = RDMA_ACCESS_REMOTE_WRITE | RDMA_ACCESS_REMOTE_READ;
    a.ah_attr.dlid = 0x17;
    a.ah_attr.sl = 3;
    a.ah_attr.port_num = 1;
    a.alt_ah_attr.dlid = 0x18;
    a.alt_ah_attr.sl = 4;
    a.alt_ah_attr.port_num = 1;
    a.pkey_index = 3;
    a.alt_pkey_index = 2;
    a.en_sqd_async_notify = 1;
    a.max_rd_atomic = 1;
    a.max_dest_rd_atomic = 2;
    a.min_rnr_timer = 12;
    a.port_num = 1;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 6;
    a.alt_port_num = 1;
    a.alt_timeout = 15;
    a.rate_limit = 1000;
    return a;
}

/// Whether `q` carries the value of attribute `bit` from `g`.
bool
FieldEquals(const RdmaQpAttr& q, const RdmaQpAttr& g, uint32_t bit)
{
    switch (bit)
    {
    case RDMA_QP_EN_SQD_ASYNC_NOTIFY:
        return q.en_sqd_async_notify == g.en_sqd_async_notify;
    case RDMA_QP_ACCESS_FLAGS:
        return q.qp_access_flags == g.qp_access_flags;
    case RDMA_QP_PKEY_INDEX:
        return q.pkey_index == g.pkey_index;
    case RDMA_QP_PORT:
        return q.port_num == g.port_num;
    case RDMA_QP_QKEY:
        return q.qkey == g.qkey;
    case RDMA_QP_AV:
        return q.ah_attr == g.ah_attr;
    case RDMA_QP_PATH_MTU:
        return q.path_mtu == g.path_mtu;
    case RDMA_QP_TIMEOUT:
        return q.timeout == g.timeout;
    case RDMA_QP_RETRY_CNT:
        return q.retry_cnt == g.retry_cnt;
    case RDMA_QP_RNR_RETRY:
        return q.rnr_retry == g.rnr_retry;
    case RDMA_QP_RQ_PSN:
        return q.rq_psn == g.rq_psn;
    case RDMA_QP_MAX_QP_RD_ATOMIC:
        return q.max_rd_atomic == g.max_rd_atomic;
    case RDMA_QP_ALT_PATH:
        return q.alt_ah_attr == g.alt_ah_attr && q.alt_pkey_index == g.alt_pkey_index &&
               q.alt_port_num == g.alt_port_num && q.alt_timeout == g.alt_timeout;
    case RDMA_QP_MIN_RNR_TIMER:
        return q.min_rnr_timer == g.min_rnr_timer;
    case RDMA_QP_SQ_PSN:
        return q.sq_psn == g.sq_psn;
    case RDMA_QP_MAX_DEST_RD_ATOMIC:
        return q.max_dest_rd_atomic == g.max_dest_rd_atomic;
    case RDMA_QP_PATH_MIG_STATE:
        return q.path_mig_state == g.path_mig_state;
    case RDMA_QP_DEST_QPN:
        return q.dest_qp_num == g.dest_qp_num;
    case RDMA_QP_CAP:
        return q.cap == g.cap;
    case RDMA_QP_RATE_LIMIT:
        return q.rate_limit == g.rate_limit;
    default: // STATE, CUR_STATE: no stored field of their own
        return true;
    }
}

RdmaQpAttr
QueryAttr(const Ptr<RdmaQp>& qp)
{
    RdmaQpAttr a;
    RdmaQpInitAttr init;
    EXPECT_EQ(qp->Query(a, 0, init), 0);
    return a;
}

/// One step of the reference path RESET->INIT->RTR->RTS with exactly the required attributes.
void
Step(const Ptr<RdmaQp>& qp, RdmaQpState to)
{
    const RdmaQpState from = qp->GetState();
    const RefRule& r = RefTable().at({qp->GetType(), from, to});
    ASSERT_EQ(qp->Modify(ValidAttr(from, to), RDMA_QP_STATE | r.required), 0)
        << qp->GetDevice()->GetLastError();
    ASSERT_EQ(qp->GetState(), to);
}

/// Bring a fresh QP to `target` by modifies (SQE by a reported send-queue error).
void
DriveTo(const Ptr<RdmaQp>& qp, RdmaQpState target)
{
    using S = RdmaQpState;
    switch (target)
    {
    case S::RESET:
        return;
    case S::ERR:
        Step(qp, S::INIT);
        Step(qp, S::ERR);
        return;
    default:
        break;
    }
    Step(qp, S::INIT);
    if (target == S::INIT)
    {
        return;
    }
    Step(qp, S::RTR);
    if (target == S::RTR)
    {
        return;
    }
    Step(qp, S::RTS);
    if (target == S::RTS)
    {
        return;
    }
    if (target == S::SQD)
    {
        Step(qp, S::SQD);
        return;
    }
    qp->ReportSendQueueError();
    ASSERT_EQ(qp->GetState(), S::SQE);
}

std::string
Name(RdmaQpType t, RdmaQpState f, RdmaQpState s)
{
    return std::string(RdmaQpTypeName(t)) + " " + RdmaQpStateName(f) + "->" + RdmaQpStateName(s);
}

bool
Contains(const std::string& s, const std::string& part)
{
    return s.find(part) != std::string::npos;
}

// ---- Verbs numeric values ------------------------------------------------------------------

TEST(RdmaTypes, ValuesEqualLibibverbs)
{
    // enum ibv_qp_state
    EXPECT_EQ(static_cast<int>(RdmaQpState::RESET), 0);
    EXPECT_EQ(static_cast<int>(RdmaQpState::INIT), 1);
    EXPECT_EQ(static_cast<int>(RdmaQpState::RTR), 2);
    EXPECT_EQ(static_cast<int>(RdmaQpState::RTS), 3);
    EXPECT_EQ(static_cast<int>(RdmaQpState::SQD), 4);
    EXPECT_EQ(static_cast<int>(RdmaQpState::SQE), 5);
    EXPECT_EQ(static_cast<int>(RdmaQpState::ERR), 6);
    // enum ibv_qp_type
    EXPECT_EQ(static_cast<int>(RdmaQpType::RC), 2);
    EXPECT_EQ(static_cast<int>(RdmaQpType::UC), 3);
    EXPECT_EQ(static_cast<int>(RdmaQpType::UD), 4);
    // enum ibv_qp_attr_mask: every bit, by the names of the man page.
    const std::map<std::string, uint32_t> model = {
        {"STATE", RDMA_QP_STATE},
        {"CUR_STATE", RDMA_QP_CUR_STATE},
        {"EN_SQD_ASYNC_NOTIFY", RDMA_QP_EN_SQD_ASYNC_NOTIFY},
        {"ACCESS_FLAGS", RDMA_QP_ACCESS_FLAGS},
        {"PKEY_INDEX", RDMA_QP_PKEY_INDEX},
        {"PORT", RDMA_QP_PORT},
        {"QKEY", RDMA_QP_QKEY},
        {"AV", RDMA_QP_AV},
        {"PATH_MTU", RDMA_QP_PATH_MTU},
        {"TIMEOUT", RDMA_QP_TIMEOUT},
        {"RETRY_CNT", RDMA_QP_RETRY_CNT},
        {"RNR_RETRY", RDMA_QP_RNR_RETRY},
        {"RQ_PSN", RDMA_QP_RQ_PSN},
        {"MAX_QP_RD_ATOMIC", RDMA_QP_MAX_QP_RD_ATOMIC},
        {"ALT_PATH", RDMA_QP_ALT_PATH},
        {"MIN_RNR_TIMER", RDMA_QP_MIN_RNR_TIMER},
        {"SQ_PSN", RDMA_QP_SQ_PSN},
        {"MAX_DEST_RD_ATOMIC", RDMA_QP_MAX_DEST_RD_ATOMIC},
        {"PATH_MIG_STATE", RDMA_QP_PATH_MIG_STATE},
        {"CAP", RDMA_QP_CAP},
        {"DEST_QPN", RDMA_QP_DEST_QPN},
        {"RATE_LIMIT", RDMA_QP_RATE_LIMIT},
    };
    EXPECT_EQ(model, BitsByName());
    for (const auto& [n, b] : model)
    {
        EXPECT_EQ(std::string(RdmaQpAttrMaskBitName(b)), "IBV_QP_" + n);
    }
    // enum ibv_access_flags
    EXPECT_EQ(RDMA_ACCESS_LOCAL_WRITE, 1u);
    EXPECT_EQ(RDMA_ACCESS_REMOTE_WRITE, 2u);
    EXPECT_EQ(RDMA_ACCESS_REMOTE_READ, 4u);
    EXPECT_EQ(RDMA_ACCESS_REMOTE_ATOMIC, 8u);
    EXPECT_EQ(RDMA_ACCESS_MW_BIND, 16u);
    EXPECT_EQ(RDMA_ACCESS_ZERO_BASED, 32u);
    EXPECT_EQ(RDMA_ACCESS_ON_DEMAND, 64u);
    EXPECT_EQ(RDMA_ACCESS_HUGETLB, 128u);
    EXPECT_EQ(RDMA_ACCESS_RELAXED_ORDERING, 1u << 20);
    // enum ibv_wr_opcode
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::RDMA_WRITE), 0);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::RDMA_WRITE_WITH_IMM), 1);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::SEND), 2);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::SEND_WITH_IMM), 3);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::RDMA_READ), 4);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::ATOMIC_CMP_AND_SWP), 5);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::ATOMIC_FETCH_AND_ADD), 6);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::LOCAL_INV), 7);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::BIND_MW), 8);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::SEND_WITH_INV), 9);
    EXPECT_EQ(static_cast<int>(RdmaWrOpcode::TSO), 10);
    // enum ibv_send_flags
    EXPECT_EQ(RDMA_SEND_FENCE, 1u);
    EXPECT_EQ(RDMA_SEND_SIGNALED, 2u);
    EXPECT_EQ(RDMA_SEND_SOLICITED, 4u);
    EXPECT_EQ(RDMA_SEND_INLINE, 8u);
    EXPECT_EQ(RDMA_SEND_IP_CSUM, 16u);
    // enum ibv_mtu
    EXPECT_EQ(static_cast<int>(RdmaMtu::MTU_256), 1);
    EXPECT_EQ(static_cast<int>(RdmaMtu::MTU_4096), 5);
    EXPECT_EQ(RdmaMtuBytes(RdmaMtu::MTU_1024), 1024u);
    EXPECT_EQ(RdmaMtuBytes(static_cast<RdmaMtu>(0)), 0u);
    EXPECT_EQ(RdmaMtuBytes(static_cast<RdmaMtu>(6)), 0u);
    // enum ibv_wc_opcode
    EXPECT_EQ(static_cast<int>(RdmaWcOpcode::SEND), 0);
    EXPECT_EQ(static_cast<int>(RdmaWcOpcode::RDMA_WRITE), 1);
    EXPECT_EQ(static_cast<int>(RdmaWcOpcode::RDMA_READ), 2);
    EXPECT_EQ(static_cast<int>(RdmaWcOpcode::COMP_SWAP), 3);
    EXPECT_EQ(static_cast<int>(RdmaWcOpcode::FETCH_ADD), 4);
    EXPECT_EQ(static_cast<int>(RdmaWcOpcode::RECV), 128);
    EXPECT_EQ(static_cast<int>(RdmaWcOpcode::RECV_RDMA_WITH_IMM), 129);
    EXPECT_EQ(RDMA_WC_GRH, 1u);
    EXPECT_EQ(RDMA_WC_WITH_IMM, 2u);
    // enum ibv_event_type (selected)
    EXPECT_EQ(static_cast<int>(RdmaEventType::CQ_ERR), 0);
    EXPECT_EQ(static_cast<int>(RdmaEventType::QP_FATAL), 1);
    EXPECT_EQ(static_cast<int>(RdmaEventType::SQ_DRAINED), 5);
    EXPECT_EQ(static_cast<int>(RdmaEventType::SRQ_LIMIT_REACHED), 15);
    EXPECT_EQ(static_cast<int>(RdmaEventType::QP_LAST_WQE_REACHED), 16);
    EXPECT_EQ(static_cast<int>(RdmaEventType::WQ_FATAL), 19);
}

TEST(RdmaTypes, WcStatusValuesAndStrings)
{
    // enum ibv_wc_status in order, with the strings of ibv_wc_status_str(3).
    const std::vector<std::pair<RdmaWcStatus, const char*>> v = {
        {RdmaWcStatus::SUCCESS, "success"},
        {RdmaWcStatus::LOC_LEN_ERR, "local length error"},
        {RdmaWcStatus::LOC_QP_OP_ERR, "local QP operation error"},
        {RdmaWcStatus::LOC_EEC_OP_ERR, "local EE context operation error"},
        {RdmaWcStatus::LOC_PROT_ERR, "local protection error"},
        {RdmaWcStatus::WR_FLUSH_ERR, "Work Request Flushed Error"},
        {RdmaWcStatus::MW_BIND_ERR, "memory management operation error"},
        {RdmaWcStatus::BAD_RESP_ERR, "bad response error"},
        {RdmaWcStatus::LOC_ACCESS_ERR, "local access error"},
        {RdmaWcStatus::REM_INV_REQ_ERR, "remote invalid request error"},
        {RdmaWcStatus::REM_ACCESS_ERR, "remote access error"},
        {RdmaWcStatus::REM_OP_ERR, "remote operation error"},
        {RdmaWcStatus::RETRY_EXC_ERR, "transport retry counter exceeded"},
        {RdmaWcStatus::RNR_RETRY_EXC_ERR, "RNR retry counter exceeded"},
        {RdmaWcStatus::LOC_RDD_VIOL_ERR, "local RDD violation error"},
        {RdmaWcStatus::REM_INV_RD_REQ_ERR, "remote invalid RD request"},
        {RdmaWcStatus::REM_ABORT_ERR, "operation aborted"},
        {RdmaWcStatus::INV_EECN_ERR, "invalid EE context number"},
        {RdmaWcStatus::INV_EEC_STATE_ERR, "invalid EE context state"},
        {RdmaWcStatus::FATAL_ERR, "fatal error"},
        {RdmaWcStatus::RESP_TIMEOUT_ERR, "response timeout error"},
        {RdmaWcStatus::GENERAL_ERR, "general error"},
    };
    ASSERT_EQ(v.size(), 22u);
    for (std::size_t i = 0; i < v.size(); ++i)
    {
        EXPECT_EQ(static_cast<std::size_t>(v[i].first), i);
        EXPECT_STREQ(RdmaWcStatusStr(v[i].first), v[i].second);
    }
}

// ---- The transition table ------------------------------------------------------------------

TEST(RdmaQpStateTable, ModelTableEqualsReferenceBothWays)
{
    // Every (type, from, to) of the full grid: a transition in either table must be in the
    // other with the same required and optional sets.
    int valid = 0;
    for (RdmaQpType type : kTypes)
    {
        for (unsigned f = 0; f < kRdmaQpStateCount; ++f)
        {
            for (unsigned s = 0; s < kRdmaQpStateCount; ++s)
            {
                const auto from = static_cast<RdmaQpState>(f);
                const auto to = static_cast<RdmaQpState>(s);
                SCOPED_TRACE(Name(type, from, to));
                const RdmaQpTransitionRule m = RdmaQpTransition(type, from, to);
                auto it = RefTable().find({type, from, to});
                if (it == RefTable().end())
                {
                    EXPECT_FALSE(m.valid);
                    continue;
                }
                ++valid;
                EXPECT_TRUE(m.valid);
                EXPECT_EQ(m.required, it->second.required);
                EXPECT_EQ(m.optional, it->second.optional);
            }
        }
    }
    // RC: 8 rows + any->RESET/ERR from its 6 states; UC, UD: 9 rows + 2 x 7 states. Counted,
    // so that a lost row shows up.
    EXPECT_EQ(valid, static_cast<int>(RefTable().size()));
    EXPECT_EQ(RefTable().size(), (8u + 12u) + 2 * (9u + 14u));
    // Types and states outside the model.
    EXPECT_FALSE(RdmaQpTransition(RdmaQpType::RAW_PACKET, RdmaQpState::RESET, RdmaQpState::INIT)
                     .valid);
    EXPECT_FALSE(RdmaQpTransition(RdmaQpType::RC, RdmaQpState::UNKNOWN, RdmaQpState::ERR).valid);
    EXPECT_FALSE(RdmaQpTransition(RdmaQpType::RC, RdmaQpState::RTS, RdmaQpState::UNKNOWN).valid);
}

/// Drive real QPs through every allowed transition of `type`: exactly the required attributes
/// succeed and take effect; each missing required one fails; each disallowed one fails; each
/// optional one is accepted and takes effect. A refusal changes nothing.
void
CheckAllowedTransitions(RdmaQpType type)
{
    Hca h;
    int checked = 0;
    for (const auto& [key, rule] : RefTable())
    {
        const auto& [t, from, to] = key;
        if (t != type)
        {
            continue;
        }
        SCOPED_TRACE(Name(t, from, to));
        ++checked;
        const RdmaQpAttr given = ValidAttr(from, to);

        // Exactly the required attributes.
        {
            Ptr<RdmaQp> qp = h.Qp(type);
            DriveTo(qp, from);
            const RdmaQpAttr before = QueryAttr(qp);
            ASSERT_EQ(qp->Modify(given, RDMA_QP_STATE | rule.required), 0)
                << h.dev->GetLastError();
            EXPECT_EQ(qp->GetState(), to);
            const RdmaQpAttr after = QueryAttr(qp);
            EXPECT_EQ(after.qp_state, to);
            for (uint32_t bit = 1; bit != 0; bit <<= 1)
            {
                if (!(AllAttrBits() & bit) || bit == RDMA_QP_CUR_STATE)
                {
                    continue;
                }
                if (to == RdmaQpState::RESET)
                {
                    // Reset returns every attribute to its default.
                    EXPECT_TRUE(FieldEquals(after, RdmaQpAttr(), bit) || bit == RDMA_QP_CAP)
                        << RdmaQpAttrMaskBitName(bit);
                }
                else if (rule.required & bit)
                {
                    EXPECT_TRUE(FieldEquals(after, given, bit)) << RdmaQpAttrMaskBitName(bit);
                }
                else
                {
                    EXPECT_TRUE(FieldEquals(after, before, bit)) << RdmaQpAttrMaskBitName(bit);
                }
            }
            // The same mask without IBV_QP_STATE is not this transition.
            if (from != to && rule.required != 0)
            {
                Ptr<RdmaQp> q2 = h.Qp(type);
                DriveTo(q2, from);
                const int r = q2->Modify(given, rule.required);
                if (RefTable().count({type, from, from}))
                {
                    const RefRule& self = RefTable().at({type, from, from});
                    const bool ok = (rule.required & ~(self.required | self.optional)) == 0;
                    EXPECT_EQ(r, ok ? 0 : EINVAL);
                }
                else
                {
                    EXPECT_EQ(r, EINVAL);
                }
                EXPECT_EQ(q2->GetState(), from);
            }
        }
        // Each required attribute missing.
        for (uint32_t bit = 1; bit != 0; bit <<= 1)
        {
            if (!(rule.required & bit))
            {
                continue;
            }
            Ptr<RdmaQp> qp = h.Qp(type);
            DriveTo(qp, from);
            const RdmaQpAttr before = QueryAttr(qp);
            EXPECT_EQ(qp->Modify(given, RDMA_QP_STATE | (rule.required & ~bit)), EINVAL)
                << "without " << RdmaQpAttrMaskBitName(bit);
            EXPECT_TRUE(Contains(h.dev->GetLastError(), "missing required attribute"))
                << h.dev->GetLastError();
            EXPECT_EQ(qp->GetState(), from);
            EXPECT_EQ(QueryAttr(qp), before);
        }
        // Each attribute that is neither required nor optional.
        for (uint32_t bit = 1; bit != 0; bit <<= 1)
        {
            if (!(AllAttrBits() & bit) || ((rule.required | rule.optional) & bit))
            {
                continue;
            }
            Ptr<RdmaQp> qp = h.Qp(type);
            DriveTo(qp, from);
            const RdmaQpAttr before = QueryAttr(qp);
            EXPECT_EQ(qp->Modify(given, RDMA_QP_STATE | rule.required | bit), EINVAL)
                << "with " << RdmaQpAttrMaskBitName(bit);
            EXPECT_TRUE(Contains(h.dev->GetLastError(), "is not allowed"))
                << h.dev->GetLastError();
            EXPECT_EQ(qp->GetState(), from);
            EXPECT_EQ(QueryAttr(qp), before);
        }
        // Each optional attribute, alone and all together.
        for (uint32_t bit = 1; bit != 0; bit <<= 1)
        {
            if (!(rule.optional & bit))
            {
                continue;
            }
            Ptr<RdmaQp> qp = h.Qp(type);
            DriveTo(qp, from);
            ASSERT_EQ(qp->Modify(given, RDMA_QP_STATE | rule.required | bit), 0)
                << "with optional " << RdmaQpAttrMaskBitName(bit) << ": "
                << h.dev->GetLastError();
            EXPECT_EQ(qp->GetState(), to);
            EXPECT_TRUE(FieldEquals(QueryAttr(qp), given, bit)) << RdmaQpAttrMaskBitName(bit);
        }
        if (rule.optional)
        {
            Ptr<RdmaQp> qp = h.Qp(type);
            DriveTo(qp, from);
            EXPECT_EQ(qp->Modify(given, RDMA_QP_STATE | rule.required | rule.optional), 0)
                << h.dev->GetLastError();
            EXPECT_EQ(qp->GetState(), to);
        }
    }
    EXPECT_GE(checked, 20);
}

TEST(RdmaQpStateTable, AllowedTransitionsRc)
{
    CheckAllowedTransitions(RdmaQpType::RC);
}

TEST(RdmaQpStateTable, AllowedTransitionsUc)
{
    CheckAllowedTransitions(RdmaQpType::UC);
}

TEST(RdmaQpStateTable, AllowedTransitionsUd)
{
    CheckAllowedTransitions(RdmaQpType::UD);
}

TEST(RdmaQpStateTable, DisallowedTransitionsFail)
{
    Hca h;
    int checked = 0;
    for (RdmaQpType type : kTypes)
    {
        for (RdmaQpState from : StatesOf(type))
        {
            for (unsigned s = 0; s <= kRdmaQpStateCount; ++s) // includes UNKNOWN (7)
            {
                const auto to = static_cast<RdmaQpState>(s);
                if (RefTable().count({type, from, to}))
                {
                    continue;
                }
                SCOPED_TRACE(Name(type, from, to));
                ++checked;
                // With the state alone, and with every attribute: never accepted.
                for (uint32_t mask : {uint32_t{RDMA_QP_STATE}, RDMA_QP_STATE | AllAttrBits()})
                {
                    Ptr<RdmaQp> qp = h.Qp(type);
                    DriveTo(qp, from);
                    const RdmaQpAttr before = QueryAttr(qp);
                    EXPECT_EQ(qp->Modify(ValidAttr(from, to), mask), EINVAL);
                    EXPECT_EQ(qp->GetState(), from);
                    EXPECT_EQ(QueryAttr(qp), before);
                }
                // With the required attributes of the natural way into `to` (from its
                // predecessor on the RESET->INIT->RTR->RTS path).
                for (RdmaQpState pred : StatesOf(type))
                {
                    auto it = RefTable().find({type, pred, to});
                    if (it == RefTable().end())
                    {
                        continue;
                    }
                    Ptr<RdmaQp> qp = h.Qp(type);
                    DriveTo(qp, from);
                    EXPECT_EQ(qp->Modify(ValidAttr(from, to),
                                         RDMA_QP_STATE | it->second.required),
                              EINVAL)
                        << "with the required attributes of " << Name(type, pred, to);
                    EXPECT_EQ(qp->GetState(), from);
                }
            }
        }
    }
    EXPECT_GT(checked, 60);
}

TEST(RdmaQpStateTable, SelfTransitionWithoutStateBit)
{
    // Without IBV_QP_STATE the QP stays where it is: allowed where X->X exists.
    Hca h;
    for (RdmaQpType type : kTypes)
    {
        for (RdmaQpState s : StatesOf(type))
        {
            SCOPED_TRACE(Name(type, s, s));
            Ptr<RdmaQp> qp = h.Qp(type);
            DriveTo(qp, s);
            const bool exists = RefTable().count({type, s, s}) != 0;
            EXPECT_EQ(qp->Modify(ValidAttr(s, s), 0), exists ? 0 : EINVAL);
            EXPECT_EQ(qp->GetState(), s);
        }
    }
}

TEST(RdmaQpStateTable, UnknownMaskBitsAndRcHasNoSqe)
{
    Hca h;
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC);
    for (uint32_t bit : {1u << 21, 1u << 22, 1u << 23, 1u << 24, 1u << 26, 1u << 31})
    {
        EXPECT_EQ(qp->Modify(ValidAttr(RdmaQpState::RESET, RdmaQpState::INIT),
                             RDMA_QP_STATE | Bits("PKEY_INDEX PORT ACCESS_FLAGS") | bit),
                  EINVAL);
        EXPECT_EQ(qp->GetState(), RdmaQpState::RESET);
    }
    // An RC send-queue error takes the QP to ERR, never SQE.
    DriveTo(qp, RdmaQpState::RTS);
    qp->ReportSendQueueError();
    EXPECT_EQ(qp->GetState(), RdmaQpState::ERR);
}

// ---- Attribute values ----------------------------------------------------------------------

struct ValueCase
{
    const char* what;
    RdmaQpType type;
    RdmaQpState from;
    RdmaQpState to;
    uint32_t extraMask;
    std::function<void(RdmaQpAttr&)> set;
    const char* reason; ///< null: must succeed
};

void
RunValueCases(Hca& h, const std::vector<ValueCase>& cases)
{
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.what);
        Ptr<RdmaQp> qp = h.Qp(c.type);
        DriveTo(qp, c.from);
        RdmaQpAttr a = ValidAttr(c.from, c.to);
        c.set(a);
        const uint32_t mask =
            RDMA_QP_STATE | RefTable().at({c.type, c.from, c.to}).required | c.extraMask;
        const RdmaQpAttr before = QueryAttr(qp);
        const int r = qp->Modify(a, mask);
        if (c.reason)
        {
            EXPECT_EQ(r, EINVAL);
            EXPECT_TRUE(Contains(h.dev->GetLastError(), c.reason)) << h.dev->GetLastError();
            EXPECT_EQ(qp->GetState(), c.from);
            EXPECT_EQ(QueryAttr(qp), before);
        }
        else
        {
            EXPECT_EQ(r, 0) << h.dev->GetLastError();
            EXPECT_EQ(qp->GetState(), c.to);
        }
    }
}

TEST(RdmaQpAttrValues, RangesAndLimits)
{
    using S = RdmaQpState;
    const auto RC = RdmaQpType::RC;
    const auto UD = RdmaQpType::UD;
    const uint32_t ALT = RDMA_QP_ALT_PATH;
    Hca h;
    std::vector<ValueCase> cases = {
        // RESET -> INIT
        {"port 0", RC, S::RESET, S::INIT, 0, [](auto& a) { a.port_num = 0; }, "port_num"},
        {"port 2 of 1", RC, S::RESET, S::INIT, 0, [](auto& a) { a.port_num = 2; }, "port_num"},
        {"pkey_index 127", RC, S::RESET, S::INIT, 0, [](auto& a) { a.pkey_index = 127; }, nullptr},
        {"pkey_index 128", RC, S::RESET, S::INIT, 0, [](auto& a) { a.pkey_index = 128; },
         "pkey_index"},
        {"ZERO_BASED access", RC, S::RESET, S::INIT, 0,
         [](auto& a) { a.qp_access_flags = RDMA_ACCESS_ZERO_BASED; }, "qp_access_flags"},
        {"all QP access bits", RC, S::RESET, S::INIT, 0,
         [](auto& a) { a.qp_access_flags = 0x1F; }, nullptr},
        {"qp_state 7", RC, S::RESET, S::INIT, 0,
         [](auto& a) { a.qp_state = RdmaQpState::UNKNOWN; }, "qp_state"},
        {"UD any qkey", UD, S::RESET, S::INIT, 0, [](auto& a) { a.qkey = 0xFFFFFFFF; }, nullptr},
        // INIT -> RTR (RC)
        {"path_mtu 0", RC, S::INIT, S::RTR, 0,
         [](auto& a) { a.path_mtu = static_cast<RdmaMtu>(0); }, "path_mtu"},
        {"path_mtu 6", RC, S::INIT, S::RTR, 0,
         [](auto& a) { a.path_mtu = static_cast<RdmaMtu>(6); }, "path_mtu"},
        {"path_mtu 4096", RC, S::INIT, S::RTR, 0,
         [](auto& a) { a.path_mtu = RdmaMtu::MTU_4096; }, nullptr},
        {"dest_qp_num 2^24-1", RC, S::INIT, S::RTR, 0,
         [](auto& a) { a.dest_qp_num = 0xFFFFFF; }, nullptr},
        {"dest_qp_num 2^24", RC, S::INIT, S::RTR, 0,
         [](auto& a) { a.dest_qp_num = 0x1000000; }, "dest_qp_num"},
        {"min_rnr_timer 31", RC, S::INIT, S::RTR, 0, [](auto& a) { a.min_rnr_timer = 31; },
         nullptr},
        {"min_rnr_timer 32", RC, S::INIT, S::RTR, 0, [](auto& a) { a.min_rnr_timer = 32; },
         "min_rnr_timer"},
        {"max_dest_rd_atomic 16", RC, S::INIT, S::RTR, 0,
         [](auto& a) { a.max_dest_rd_atomic = 16; }, nullptr},
        {"max_dest_rd_atomic 17", RC, S::INIT, S::RTR, 0,
         [](auto& a) { a.max_dest_rd_atomic = 17; }, "max_dest_rd_atomic"},
        {"AV port 0", RC, S::INIT, S::RTR, 0, [](auto& a) { a.ah_attr.port_num = 0; },
         "port_num"},
        {"AV port 2", RC, S::INIT, S::RTR, 0, [](auto& a) { a.ah_attr.port_num = 2; },
         "port_num"},
        {"AV dlid 0", RC, S::INIT, S::RTR, 0, [](auto& a) { a.ah_attr.dlid = 0; }, "dlid"},
        {"AV dlid 0xBFFF", RC, S::INIT, S::RTR, 0, [](auto& a) { a.ah_attr.dlid = 0xBFFF; },
         nullptr},
        {"AV multicast dlid", RC, S::INIT, S::RTR, 0, [](auto& a) { a.ah_attr.dlid = 0xC000; },
         "multicast"},
        {"AV sl 15", RC, S::INIT, S::RTR, 0, [](auto& a) { a.ah_attr.sl = 15; }, nullptr},
        {"AV sl 16", RC, S::INIT, S::RTR, 0, [](auto& a) { a.ah_attr.sl = 16; }, "ah_attr.sl"},
        {"GRH flow label 20 bits", RC, S::INIT, S::RTR, 0,
         [](auto& a) {
             a.ah_attr.is_global = 1;
             a.ah_attr.grh.flow_label = 0xFFFFF;
             a.ah_attr.grh.sgid_index = 127;
         },
         nullptr},
        {"GRH flow label 21 bits", RC, S::INIT, S::RTR, 0,
         [](auto& a) {
             a.ah_attr.is_global = 1;
             a.ah_attr.grh.flow_label = 0x100000;
         },
         "flow_label"},
        {"GRH sgid_index 128", RC, S::INIT, S::RTR, 0,
         [](auto& a) {
             a.ah_attr.is_global = 1;
             a.ah_attr.grh.sgid_index = 128;
         },
         "sgid_index"},
        {"alt path valid", RC, S::INIT, S::RTR, ALT, [](auto&) {}, nullptr},
        {"alt_port_num 0", RC, S::INIT, S::RTR, ALT, [](auto& a) { a.alt_port_num = 0; },
         "alt_port_num"},
        {"alt_timeout 32", RC, S::INIT, S::RTR, ALT, [](auto& a) { a.alt_timeout = 32; },
         "alt_timeout"},
        {"alt_pkey_index 128", RC, S::INIT, S::RTR, ALT, [](auto& a) { a.alt_pkey_index = 128; },
         "alt_pkey_index"},
        {"alt AV dlid 0", RC, S::INIT, S::RTR, ALT, [](auto& a) { a.alt_ah_attr.dlid = 0; },
         "alternate path"},
        // RTR -> RTS (RC)
        {"timeout 31", RC, S::RTR, S::RTS, 0, [](auto& a) { a.timeout = 31; }, nullptr},
        {"timeout 32", RC, S::RTR, S::RTS, 0, [](auto& a) { a.timeout = 32; }, "timeout"},
        {"retry_cnt 7", RC, S::RTR, S::RTS, 0, [](auto& a) { a.retry_cnt = 7; }, nullptr},
        {"retry_cnt 8", RC, S::RTR, S::RTS, 0, [](auto& a) { a.retry_cnt = 8; }, "retry_cnt"},
        {"rnr_retry 7", RC, S::RTR, S::RTS, 0, [](auto& a) { a.rnr_retry = 7; }, nullptr},
        {"rnr_retry 8", RC, S::RTR, S::RTS, 0, [](auto& a) { a.rnr_retry = 8; }, "rnr_retry"},
        {"max_rd_atomic 16", RC, S::RTR, S::RTS, 0, [](auto& a) { a.max_rd_atomic = 16; },
         nullptr},
        {"max_rd_atomic 17", RC, S::RTR, S::RTS, 0, [](auto& a) { a.max_rd_atomic = 17; },
         "max_rd_atomic"},
        {"cur_qp_state matches", RC, S::RTR, S::RTS, RDMA_QP_CUR_STATE, [](auto&) {}, nullptr},
        {"cur_qp_state wrong", RC, S::RTR, S::RTS, RDMA_QP_CUR_STATE,
         [](auto& a) { a.cur_qp_state = RdmaQpState::INIT; }, "cur_qp_state"},
        {"path_mig_state 3", RC, S::RTR, S::RTS, RDMA_QP_PATH_MIG_STATE,
         [](auto& a) { a.path_mig_state = static_cast<RdmaMigState>(3); }, "path_mig_state"},
    };
    RunValueCases(h, cases);
}

TEST(RdmaQpAttrValues, DeviceLimitsFromAttributes)
{
    using S = RdmaQpState;
    const auto RC = RdmaQpType::RC;
    // Lower limits through the ns-3 attributes.
    Hca h(Attrs{{"MaxMtu", std::to_string(static_cast<int>(RdmaMtu::MTU_1024))},
           {"MaxQpRdAtom", "2"},
           {"MaxQpInitRdAtom", "1"},
           {"PkeyTableLength", "4"},
           {"AtomicCap", std::to_string(static_cast<int>(RdmaAtomicCap::NONE))}});
    RunValueCases(
        h,
        {
            {"mtu 1024 on a 1024 port", RC, S::INIT, S::RTR, 0,
             [](auto& a) {
                 a.path_mtu = RdmaMtu::MTU_1024;
                 a.max_dest_rd_atomic = 2;
             },
             nullptr},
            {"mtu 2048 on a 1024 port", RC, S::INIT, S::RTR, 0,
             [](auto& a) { a.path_mtu = RdmaMtu::MTU_2048; }, "port's MTU"},
            {"max_dest_rd_atomic 3 > 2", RC, S::INIT, S::RTR, 0,
             [](auto& a) {
                 a.path_mtu = RdmaMtu::MTU_512;
                 a.max_dest_rd_atomic = 3;
             },
             "max_dest_rd_atomic"},
            {"max_rd_atomic 2 > 1", RC, S::RTR, S::RTS, 0, [](auto& a) { a.max_rd_atomic = 2; },
             "max_rd_atomic"},
            {"pkey_index 4 of 4", RC, S::RESET, S::INIT, 0, [](auto& a) { a.pkey_index = 4; },
             "pkey_index"},
            {"remote atomic without atomics", RC, S::RESET, S::INIT, 0,
             [](auto& a) { a.qp_access_flags = RDMA_ACCESS_REMOTE_ATOMIC; }, "atomic"},
        });
}

TEST(RdmaQpAttrValues, RoceAddressVectors)
{
    using S = RdmaQpState;
    const auto RC = RdmaQpType::RC;
    Hca h(Attrs{{"LinkLayer", std::to_string(static_cast<int>(RdmaLinkLayer::ETHERNET))}});
    RdmaPortAttr port;
    ASSERT_EQ(h.dev->QueryPort(1, port), 0);
    EXPECT_EQ(port.link_layer, RdmaLinkLayer::ETHERNET);
    RunValueCases(h,
                  {
                      {"RoCE AV without GRH", RC, S::INIT, S::RTR, 0, [](auto&) {}, "is_global"},
                      {"RoCE AV with GRH, dlid 0", RC, S::INIT, S::RTR, 0,
                       [](auto& a) {
                           a.ah_attr.is_global = 1;
                           a.ah_attr.dlid = 0;
                           a.ah_attr.grh.hop_limit = 1;
                       },
                       nullptr},
                      {"RoCE alternate path", RC, S::INIT, S::RTR, RDMA_QP_ALT_PATH,
                       [](auto& a) {
                           a.ah_attr.is_global = 1;
                           a.alt_ah_attr.is_global = 1;
                       },
                       "Ethernet"},
                  });
}

TEST(RdmaQpAttrValues, PsnsAreMaskedTo24Bits)
{
    Hca h;
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC);
    DriveTo(qp, RdmaQpState::INIT);
    RdmaQpAttr a = ValidAttr(RdmaQpState::INIT, RdmaQpState::RTR);
    a.rq_psn = 0xAB123456;
    ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE | RefTable().at({RdmaQpType::RC, RdmaQpState::INIT,
                                                            RdmaQpState::RTR})
                                                   .required),
              0);
    EXPECT_EQ(QueryAttr(qp).rq_psn, 0x123456u);
}

TEST(RdmaQpAttrValues, QueryAndResetKeepCapabilities)
{
    Hca h;
    RdmaQpCap cap{7, 9, 3, 2, 40};
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC, cap);
    DriveTo(qp, RdmaQpState::RTS);
    RdmaQpAttr a;
    RdmaQpInitAttr init;
    ASSERT_EQ(qp->Query(a, RDMA_QP_CAP, init), 0);
    EXPECT_EQ(a.qp_state, RdmaQpState::RTS);
    EXPECT_EQ(a.cur_qp_state, RdmaQpState::RTS);
    EXPECT_EQ(a.sq_psn, 0x654321u);
    EXPECT_EQ(a.dest_qp_num, 0xABCDEu);
    EXPECT_EQ(init.cap, cap);
    EXPECT_EQ(a.cap, cap);
    EXPECT_EQ(init.qp_type, RdmaQpType::RC);
    EXPECT_EQ(init.send_cq, h.scq);
    EXPECT_EQ(qp->Query(a, 1u << 22, init), EINVAL);
    // Back to RESET: attributes to their defaults, capacities kept.
    RdmaQpAttr r;
    r.qp_state = RdmaQpState::RESET;
    ASSERT_EQ(qp->Modify(r, RDMA_QP_STATE), 0);
    RdmaQpAttr expect;
    expect.cap = cap;
    EXPECT_EQ(QueryAttr(qp), expect);
}

// ---- Memory regions ------------------------------------------------------------------------

TEST(RdmaMr, AccessFlagRules)
{
    Hca h;
    // Every combination of the four rights: REMOTE_WRITE or REMOTE_ATOMIC need LOCAL_WRITE.
    for (uint32_t f = 0; f < 16; ++f)
    {
        int err = -1;
        Ptr<RdmaMr> mr = h.dev->RegMr(h.pd, kBuf, 4096, f, &err);
        const bool needsLw = f & (RDMA_ACCESS_REMOTE_WRITE | RDMA_ACCESS_REMOTE_ATOMIC);
        const bool ok = !needsLw || (f & RDMA_ACCESS_LOCAL_WRITE);
        EXPECT_EQ(err, ok ? 0 : EINVAL) << "access " << f;
        EXPECT_EQ(mr != nullptr, ok) << "access " << f;
        if (mr)
        {
            EXPECT_EQ(mr->GetAccess(), f);
        }
    }
    int err = -1;
    EXPECT_EQ(h.dev->RegMr(h.pd, kBuf, 4096, RDMA_ACCESS_ZERO_BASED, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(h.dev->RegMr(h.pd, kBuf, 4096, 1u << 11, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(h.dev->RegMr(h.pd, kBuf, 4096, RDMA_ACCESS_ON_DEMAND, &err), nullptr);
    EXPECT_EQ(err, EOPNOTSUPP);
    // Optional flags are ignored by a device without them.
    EXPECT_NE(h.dev->RegMr(h.pd, kBuf, 4096, RDMA_ACCESS_RELAXED_ORDERING, &err), nullptr);
    EXPECT_EQ(err, 0);
    EXPECT_NE(h.dev->RegMr(h.pd, kBuf, 4096, 1u << 29 | RDMA_ACCESS_LOCAL_WRITE, &err), nullptr);
    EXPECT_EQ(err, 0);
}

TEST(RdmaMr, RegistrationRangeErrors)
{
    Hca h(Attrs{{"MaxMrSize", "65536"}, {"MaxMr", "3"}});
    int err = -1;
    EXPECT_EQ(h.dev->RegMr(h.pd, kBuf, 0, 0, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(h.dev->RegMr(h.pd, kBuf, 65537, 0, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    EXPECT_NE(h.dev->RegMr(h.pd, kBuf, 65536, 0, &err), nullptr);
    // addr + length overflows 2^64.
    const uint64_t top = 0xFFFFFFFFFFFFF000ULL;
    ASSERT_TRUE(h.mem->Map(top, 4096));
    EXPECT_EQ(h.dev->RegMr(h.pd, top, 4097, 0, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(h.dev->RegMr(h.pd, UINT64_MAX, 2, 0, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    // Ending exactly at 2^64 is fine.
    EXPECT_NE(h.dev->RegMr(h.pd, top, 4096, 0, &err), nullptr);
    EXPECT_EQ(err, 0);
    // An IOVA range that wraps.
    EXPECT_EQ(h.dev->RegMrIova(h.pd, kBuf, 4096, UINT64_MAX - 100, 0, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    // Not mapped.
    EXPECT_EQ(h.dev->RegMr(h.pd, kBuf + kBufLen - 4096, 8192, 0, &err), nullptr);
    EXPECT_EQ(err, EFAULT);
    // A PD of nothing.
    EXPECT_EQ(h.dev->RegMr(nullptr, kBuf, 4096, 0, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    // max_mr: two registered so far, one more fits.
    EXPECT_NE(h.dev->RegMr(h.pd, kBuf, 4096, 0, &err), nullptr);
    EXPECT_EQ(h.dev->RegMr(h.pd, kBuf, 4096, 0, &err), nullptr);
    EXPECT_EQ(err, ENOMEM);
    EXPECT_EQ(h.dev->GetNMrs(), 3u);
}

TEST(RdmaMr, LocalAndRemoteRangeChecksAtTheBoundaries)
{
    Hca h;
    const uint64_t a = kBuf + 100; // not page aligned on purpose
    const uint64_t n = 1000;
    Ptr<RdmaMr> mr = h.dev->RegMr(h.pd, a, n, RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_READ);
    ASSERT_NE(mr, nullptr);
    using C = RdmaMrCheck;
    // Boundary bytes.
    EXPECT_EQ(mr->CheckLocal(a, 1, false), C::OK);
    EXPECT_EQ(mr->CheckLocal(a + n - 1, 1, false), C::OK);
    EXPECT_EQ(mr->CheckLocal(a, n, true), C::OK);
    EXPECT_EQ(mr->CheckLocal(a - 1, 1, false), C::OUT_OF_RANGE);
    EXPECT_EQ(mr->CheckLocal(a + n, 1, false), C::OUT_OF_RANGE);
    EXPECT_EQ(mr->CheckLocal(a - 1, n, false), C::OUT_OF_RANGE);
    EXPECT_EQ(mr->CheckLocal(a + 1, n, false), C::OUT_OF_RANGE);
    EXPECT_EQ(mr->CheckLocal(a, n + 1, false), C::OUT_OF_RANGE);
    // Ranges whose end overflows 2^64, or that are huge.
    EXPECT_EQ(mr->CheckLocal(a + 10, UINT64_MAX - 5, false), C::OUT_OF_RANGE);
    EXPECT_EQ(mr->CheckLocal(UINT64_MAX, 2, false), C::OUT_OF_RANGE);
    EXPECT_EQ(mr->CheckRemote(a + 10, UINT64_MAX, RDMA_ACCESS_REMOTE_READ), C::OUT_OF_RANGE);
    // Zero length touches nothing.
    EXPECT_EQ(mr->CheckLocal(a + n, 0, false), C::OK);
    // Rights.
    EXPECT_EQ(mr->CheckRemote(a, n, RDMA_ACCESS_REMOTE_READ), C::OK);
    EXPECT_EQ(mr->CheckRemote(a, n, RDMA_ACCESS_REMOTE_WRITE), C::ACCESS_DENIED);
    EXPECT_EQ(mr->CheckRemote(a, 8, RDMA_ACCESS_REMOTE_ATOMIC), C::ACCESS_DENIED);
    EXPECT_EQ(mr->CheckRemote(a, n, RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_WRITE),
              C::ACCESS_DENIED);
    Ptr<RdmaMr> ro = h.dev->RegMr(h.pd, a, n, 0);
    ASSERT_NE(ro, nullptr);
    EXPECT_EQ(ro->CheckLocal(a, n, false), C::OK); // local read is always allowed
    EXPECT_EQ(ro->CheckLocal(a, n, true), C::ACCESS_DENIED);
    EXPECT_EQ(ro->CheckRemote(a, n, RDMA_ACCESS_REMOTE_READ), C::ACCESS_DENIED);
    Ptr<RdmaMr> all = h.dev->RegMr(h.pd, a, n, 0xF);
    for (uint32_t r :
         {RDMA_ACCESS_REMOTE_READ, RDMA_ACCESS_REMOTE_WRITE, RDMA_ACCESS_REMOTE_ATOMIC})
    {
        EXPECT_EQ(all->CheckRemote(a, 8, r), C::OK);
    }
    EXPECT_EQ(RdmaLocalCheckStatus(C::OUT_OF_RANGE), RdmaWcStatus::LOC_PROT_ERR);
    EXPECT_EQ(RdmaRemoteCheckStatus(C::ACCESS_DENIED), RdmaWcStatus::REM_ACCESS_ERR);
    EXPECT_EQ(RdmaLocalCheckStatus(C::OK), RdmaWcStatus::SUCCESS);
}

TEST(RdmaMr, IovaKeysAndPdThroughTheDevice)
{
    Hca h;
    const uint64_t iova = 0x10000000;
    Ptr<RdmaMr> mr = h.dev->RegMrIova(h.pd, kBuf, 8192, iova, 0xF);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(mr->GetAddr(), kBuf);
    EXPECT_EQ(mr->GetIova(), iova);
    EXPECT_EQ(mr->ToMemoryAddress(iova + 5), kBuf + 5);
    EXPECT_EQ(mr->CheckLocal(iova + 8191, 1, true), RdmaMrCheck::OK);
    EXPECT_EQ(mr->CheckLocal(kBuf, 1, false), RdmaMrCheck::OUT_OF_RANGE); // not an IOVA
    EXPECT_NE(mr->GetLkey(), mr->GetRkey());
    EXPECT_EQ(h.dev->LookupLkey(mr->GetLkey()), mr);
    EXPECT_EQ(h.dev->LookupRkey(mr->GetRkey()), mr);
    Ptr<RdmaMr> got;
    EXPECT_EQ(h.dev->CheckLocalAccess(h.pd, {iova, 16, mr->GetLkey()}, true, &got),
              RdmaMrCheck::OK);
    EXPECT_EQ(got, mr);
    // An R_Key is no L_Key and the other way round.
    EXPECT_EQ(h.dev->CheckLocalAccess(h.pd, {iova, 16, mr->GetRkey()}, false),
              RdmaMrCheck::INVALID_KEY);
    EXPECT_EQ(h.dev->CheckRemoteAccess(h.pd, mr->GetLkey(), iova, 16, RDMA_ACCESS_REMOTE_READ),
              RdmaMrCheck::INVALID_KEY);
    EXPECT_EQ(h.dev->CheckRemoteAccess(h.pd, mr->GetRkey(), iova, 16, RDMA_ACCESS_REMOTE_WRITE),
              RdmaMrCheck::OK);
    EXPECT_EQ(h.dev->CheckRemoteAccess(h.pd, mr->GetRkey(), iova + 8190, 16,
                                       RDMA_ACCESS_REMOTE_WRITE),
              RdmaMrCheck::OUT_OF_RANGE);
    // Another PD (same memory) may not use the keys.
    Ptr<RdmaPd> other = h.dev->AllocPd(h.mem);
    EXPECT_EQ(h.dev->CheckLocalAccess(other, {iova, 16, mr->GetLkey()}, false),
              RdmaMrCheck::PD_MISMATCH);
    EXPECT_EQ(h.dev->CheckRemoteAccess(other, mr->GetRkey(), iova, 16, RDMA_ACCESS_REMOTE_READ),
              RdmaMrCheck::PD_MISMATCH);
    // Deregistered keys stop working at once.
    const uint32_t lkey = mr->GetLkey();
    ASSERT_EQ(h.dev->DeregMr(mr), 0);
    EXPECT_EQ(h.dev->CheckLocalAccess(h.pd, {iova, 16, lkey}, false), RdmaMrCheck::INVALID_KEY);
    EXPECT_EQ(mr->CheckLocal(iova, 16, false), RdmaMrCheck::INVALID_KEY);
    EXPECT_EQ(h.dev->LookupLkey(lkey), nullptr);
    EXPECT_EQ(h.dev->DeregMr(mr), EINVAL);
}

TEST(RdmaMr, KeysAreUniqueRandomAndReproducible)
{
    Hca h;
    std::vector<uint32_t> keys;
    std::set<uint32_t> seen;
    std::vector<Ptr<RdmaMr>> live;
    for (int i = 0; i < 3000; ++i)
    {
        Ptr<RdmaMr> mr = h.dev->RegMr(h.pd, kBuf, 64, RDMA_ACCESS_LOCAL_WRITE);
        ASSERT_NE(mr, nullptr);
        keys.push_back(mr->GetLkey());
        keys.push_back(mr->GetRkey());
        // Deregister every other one: freed keys must not come back.
        if (i % 2)
        {
            ASSERT_EQ(h.dev->DeregMr(mr), 0);
        }
        else
        {
            live.push_back(mr);
        }
    }
    for (uint32_t k : keys)
    {
        EXPECT_NE(k, 0u);
        EXPECT_TRUE(seen.insert(k).second) << "key issued twice: " << k;
    }
    // Not a counter: no two consecutive keys differ by a constant, and every bit is set in
    // roughly half of the keys.
    int steps = 0;
    for (std::size_t i = 1; i < keys.size(); ++i)
    {
        steps += (keys[i] - keys[i - 1]) == (keys[1] - keys[0]);
    }
    EXPECT_LT(steps, 5);
    for (int b = 0; b < 32; ++b)
    {
        int ones = 0;
        for (uint32_t k : keys)
        {
            ones += (k >> b) & 1;
        }
        EXPECT_GT(ones, 2400) << "bit " << b;
        EXPECT_LT(ones, 3600) << "bit " << b;
    }
    // The same stream gives the same keys; another stream others.
    auto firstKeys = [](int64_t stream) {
        Ptr<RdmaDevice> d = CreateObject<RdmaDevice>();
        d->AssignStreams(stream);
        Ptr<RdmaSimulatedMemory> m = CreateObject<RdmaSimulatedMemory>();
        m->Map(kBuf, 4096);
        Ptr<RdmaPd> pd = d->AllocPd(m);
        std::vector<uint32_t> v;
        for (int i = 0; i < 4; ++i)
        {
            Ptr<RdmaMr> mr = d->RegMr(pd, kBuf, 64, 0);
            v.push_back(mr->GetLkey());
            v.push_back(mr->GetRkey());
        }
        d->Dispose();
        return v;
    };
    EXPECT_EQ(firstKeys(3), firstKeys(3));
    EXPECT_NE(firstKeys(3), firstKeys(4));
}

// ---- Completion queues ---------------------------------------------------------------------

RdmaSendWr
Send(uint64_t id, uint32_t len = 64, uint32_t lkey = 0)
{
    RdmaSendWr wr;
    wr.wr_id = id;
    wr.opcode = RdmaWrOpcode::SEND;
    wr.send_flags = RDMA_SEND_SIGNALED;
    wr.sg_list.push_back({kBuf, len, lkey});
    return wr;
}

RdmaRecvWr
Recv(uint64_t id)
{
    RdmaRecvWr wr;
    wr.wr_id = id;
    wr.sg_list.push_back({kBuf, 256, 0});
    return wr;
}

TEST(RdmaCq, CreateLimitsPollAndNotify)
{
    Hca h(Attrs{{"MaxCqe", "8"}, {"MaxCq", "3"}}, 8);
    int err = -1;
    EXPECT_EQ(h.dev->CreateCq(0, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(h.dev->CreateCq(9, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    Ptr<RdmaCq> cq = h.dev->CreateCq(8, &err);
    ASSERT_NE(cq, nullptr);
    EXPECT_EQ(cq->GetCqe(), 8u);
    EXPECT_EQ(h.dev->CreateCq(1, &err), nullptr); // two made by the fixture
    EXPECT_EQ(err, ENOMEM);

    int fired = 0;
    cq->TraceConnectWithoutContext("CompletionEvent",
                                   MakeBoundCallback(+[](int* n, Ptr<RdmaCq>) { ++*n; }, &fired));
    RdmaWc wc;
    EXPECT_TRUE(cq->Push(wc)); // not armed
    EXPECT_EQ(fired, 0);
    EXPECT_EQ(cq->ReqNotify(true), 0);
    EXPECT_TRUE(cq->Push(wc)); // successful, not solicited
    EXPECT_EQ(fired, 0);
    EXPECT_TRUE(cq->Push(wc, true)); // solicited
    EXPECT_EQ(fired, 1);
    EXPECT_TRUE(cq->Push(wc, true)); // disarmed
    EXPECT_EQ(fired, 1);
    EXPECT_EQ(cq->ReqNotify(true), 0);
    RdmaWc bad;
    bad.status = RdmaWcStatus::REM_ACCESS_ERR;
    EXPECT_TRUE(cq->Push(bad)); // an error completion also wakes a solicited-only waiter
    EXPECT_EQ(fired, 2);
    EXPECT_EQ(cq->ReqNotify(false), 0);
    EXPECT_TRUE(cq->Push(wc));
    EXPECT_EQ(fired, 3);

    EXPECT_EQ(cq->Poll(-1).size(), 0u);
    RdmaWc out[8];
    EXPECT_EQ(cq->Poll(-1, out), -EINVAL);
    EXPECT_EQ(cq->Poll(2, out), 2);
    EXPECT_EQ(cq->GetSize(), 4u);
    EXPECT_EQ(cq->Poll(8, out), 4);
    EXPECT_EQ(cq->Poll(8, out), 0);
}

TEST(RdmaCq, OverrunPutsCqAndItsQpsInError)
{
    Hca h({}, 4);
    Ptr<RdmaCq> other = h.dev->CreateCq(16);
    Ptr<RdmaQp> victim = h.Qp(RdmaQpType::RC);          // send and receive on scq/rcq
    Ptr<RdmaQp> idle = h.Qp(RdmaQpType::RC);            // same CQs, but in RESET
    RdmaQpInitAttr init;
    init.send_cq = other;
    init.recv_cq = other;
    init.cap = {4, 4, 1, 1, 0};
    Ptr<RdmaQp> bystander = h.dev->CreateQp(h.pd, init);
    DriveTo(victim, RdmaQpState::RTS);
    DriveTo(bystander, RdmaQpState::RTS);
    ASSERT_EQ(victim->PostRecv(Recv(77)), 0);
    uint64_t dropsSeen = 0;
    h.scq->TraceConnectWithoutContext(
        "Drop",
        MakeBoundCallback(+[](uint64_t* n, const RdmaWc&) { ++*n; }, &dropsSeen));

    RdmaWc wc;
    for (int i = 0; i < 4; ++i)
    {
        wc.wr_id = i;
        EXPECT_TRUE(h.scq->Push(wc));
    }
    EXPECT_TRUE(h.events.empty());
    wc.wr_id = 4;
    EXPECT_FALSE(h.scq->Push(wc)); // the fifth overruns
    EXPECT_TRUE(h.scq->IsInError());
    EXPECT_EQ(h.scq->GetDroppedCount(), 1u);
    // CQ_ERR on the CQ, then QP_FATAL for the QP that completes into it.
    ASSERT_EQ(h.events.size(), 2u);
    EXPECT_EQ(h.events[0].event_type, RdmaEventType::CQ_ERR);
    EXPECT_EQ(h.events[0].cq, h.scq);
    EXPECT_EQ(h.events[1].event_type, RdmaEventType::QP_FATAL);
    EXPECT_EQ(h.events[1].qp, victim);
    EXPECT_EQ(victim->GetState(), RdmaQpState::ERR);
    EXPECT_EQ(idle->GetState(), RdmaQpState::RESET);
    EXPECT_EQ(bystander->GetState(), RdmaQpState::RTS);
    // The victim's receive was flushed into its (healthy) receive CQ.
    auto r = h.rcq->Poll(4);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].wr_id, 77u);
    EXPECT_EQ(r[0].status, RdmaWcStatus::WR_FLUSH_ERR);
    // Later completions are dropped and counted; the stored ones can still be polled.
    EXPECT_FALSE(h.scq->Push(wc));
    EXPECT_EQ(h.scq->GetDroppedCount(), 2u);
    EXPECT_EQ(dropsSeen, 2u);
    auto got = h.scq->Poll(10);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[3].wr_id, 3u);
    EXPECT_FALSE(h.scq->Push(wc)); // still in error after draining
    EXPECT_EQ(h.CountEvents(RdmaEventType::CQ_ERR), 1);
}

TEST(RdmaCq, OverrunByFlushCountsTheRest)
{
    Hca h({}, 2);
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC);
    DriveTo(qp, RdmaQpState::RTS);
    for (uint64_t i = 0; i < 4; ++i)
    {
        ASSERT_EQ(qp->PostSend(Send(i)), 0);
    }
    RdmaQpAttr a;
    a.qp_state = RdmaQpState::ERR;
    ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE), 0);
    EXPECT_EQ(qp->GetState(), RdmaQpState::ERR);
    EXPECT_TRUE(h.scq->IsInError());
    EXPECT_EQ(h.scq->GetDroppedCount(), 2u);
    EXPECT_EQ(h.CountEvents(RdmaEventType::CQ_ERR), 1);
    EXPECT_EQ(h.CountEvents(RdmaEventType::QP_FATAL), 0); // already in ERR
    EXPECT_EQ(qp->GetSendQueue()->GetSize(), 0u);
    auto got = h.scq->Poll(4);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].wr_id, 0u);
    EXPECT_EQ(got[1].wr_id, 1u);
}

// ---- Flushes and state effects -------------------------------------------------------------

TEST(RdmaQpFlush, ErrorFlushesBothQueuesInOrder)
{
    Hca h;
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC);
    DriveTo(qp, RdmaQpState::RTS);
    RdmaSendWr w = Send(10);
    ASSERT_EQ(qp->PostSend(w), 0);
    w.wr_id = 11;
    w.opcode = RdmaWrOpcode::RDMA_WRITE;
    w.send_flags = 0; // unsignaled: a flush still completes it
    ASSERT_EQ(qp->PostSend(w), 0);
    w.wr_id = 12;
    w.opcode = RdmaWrOpcode::RDMA_READ;
    ASSERT_EQ(qp->PostSend(w), 0);
    ASSERT_EQ(qp->PostRecv(Recv(20)), 0);
    ASSERT_EQ(qp->PostRecv(Recv(21)), 0);

    RdmaQpAttr a;
    a.qp_state = RdmaQpState::ERR;
    ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE), 0);
    auto s = h.scq->Poll(10);
    ASSERT_EQ(s.size(), 3u);
    const RdmaWcOpcode ops[] = {RdmaWcOpcode::SEND, RdmaWcOpcode::RDMA_WRITE,
                                RdmaWcOpcode::RDMA_READ};
    for (int i = 0; i < 3; ++i)
    {
        EXPECT_EQ(s[i].wr_id, 10u + i);
        EXPECT_EQ(s[i].status, RdmaWcStatus::WR_FLUSH_ERR);
        EXPECT_EQ(s[i].opcode, ops[i]);
        EXPECT_EQ(s[i].qp_num, qp->GetQpNum());
    }
    auto r = h.rcq->Poll(10);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].wr_id, 20u);
    EXPECT_EQ(r[1].wr_id, 21u);
    EXPECT_EQ(r[1].opcode, RdmaWcOpcode::RECV);
    EXPECT_EQ(r[1].status, RdmaWcStatus::WR_FLUSH_ERR);
    EXPECT_TRUE(h.events.empty()); // a consumer's move to ERR raises nothing

    // Posted in ERR: accepted and flushed at once.
    ASSERT_EQ(qp->PostSend(Send(30)), 0);
    ASSERT_EQ(qp->PostRecv(Recv(31)), 0);
    s = h.scq->Poll(10);
    r = h.rcq->Poll(10);
    ASSERT_EQ(s.size(), 1u);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(s[0].wr_id, 30u);
    EXPECT_EQ(r[0].wr_id, 31u);
    EXPECT_EQ(qp->GetSendQueue()->GetSize() + qp->GetRecvQueue()->GetSize(), 0u);
}

TEST(RdmaQpFlush, SendQueueFlushesBeforeReceiveQueueOnOneCq)
{
    Hca h;
    RdmaQpInitAttr init;
    init.send_cq = h.scq;
    init.recv_cq = h.scq;
    init.cap = {4, 4, 1, 1, 0};
    init.qp_type = RdmaQpType::UC;
    Ptr<RdmaQp> qp = h.dev->CreateQp(h.pd, init);
    ASSERT_NE(qp, nullptr);
    DriveTo(qp, RdmaQpState::RTS);
    ASSERT_EQ(qp->PostRecv(Recv(1)), 0);
    ASSERT_EQ(qp->PostSend(Send(2)), 0);
    ASSERT_EQ(qp->PostRecv(Recv(3)), 0);
    ASSERT_EQ(qp->PostSend(Send(4)), 0);
    RdmaQpAttr a;
    a.qp_state = RdmaQpState::ERR;
    ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE), 0);
    auto wc = h.scq->Poll(10);
    ASSERT_EQ(wc.size(), 4u);
    const uint64_t order[] = {2, 4, 1, 3};
    for (int i = 0; i < 4; ++i)
    {
        EXPECT_EQ(wc[i].wr_id, order[i]);
    }
    EXPECT_EQ(wc[0].opcode, RdmaWcOpcode::SEND);
    EXPECT_EQ(wc[2].opcode, RdmaWcOpcode::RECV);
}

TEST(RdmaQpFlush, ResetDiscardsWithoutCompletions)
{
    Hca h;
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::UC);
    DriveTo(qp, RdmaQpState::RTS);
    ASSERT_EQ(qp->PostSend(Send(1)), 0);
    ASSERT_EQ(qp->PostRecv(Recv(2)), 0);
    RdmaQpAttr a;
    a.qp_state = RdmaQpState::RESET;
    ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE), 0);
    EXPECT_EQ(h.scq->GetSize() + h.rcq->GetSize(), 0u);
    EXPECT_EQ(qp->GetSendQueue()->GetSize() + qp->GetRecvQueue()->GetSize(), 0u);
}

TEST(RdmaQpFlush, SendQueueErrorFlushesSendsOnly)
{
    Hca h;
    for (RdmaQpType t : {RdmaQpType::UC, RdmaQpType::UD})
    {
        SCOPED_TRACE(RdmaQpTypeName(t));
        Ptr<RdmaQp> qp = h.Qp(t);
        DriveTo(qp, RdmaQpState::RTS);
        Ptr<RdmaAh> ah;
        RdmaSendWr w = Send(1);
        if (t == RdmaQpType::UD)
        {
            RdmaAhAttr av;
            av.dlid = 5;
            av.port_num = 1;
            ah = h.dev->CreateAh(h.pd, av);
            w.ud.ah = PeekPointer(ah);
        }
        ASSERT_EQ(qp->PostSend(w), 0);
        ASSERT_EQ(qp->PostRecv(Recv(2)), 0);
        qp->ReportSendQueueError();
        EXPECT_EQ(qp->GetState(), RdmaQpState::SQE);
        auto s = h.scq->Poll(10);
        ASSERT_EQ(s.size(), 1u);
        EXPECT_EQ(s[0].status, RdmaWcStatus::WR_FLUSH_ERR);
        EXPECT_EQ(qp->GetRecvQueue()->GetSize(), 1u); // receives keep working
        // Sends posted in SQE are flushed; receives are queued.
        w.wr_id = 3;
        ASSERT_EQ(qp->PostSend(w), 0);
        EXPECT_EQ(h.scq->Poll(10).size(), 1u);
        ASSERT_EQ(qp->PostRecv(Recv(4)), 0);
        EXPECT_EQ(qp->GetRecvQueue()->GetSize(), 2u);
        // SQE -> RTS resumes.
        RdmaQpAttr a;
        a.qp_state = RdmaQpState::RTS;
        ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE), 0);
        ASSERT_EQ(qp->PostSend(w), 0);
        EXPECT_EQ(qp->GetSendQueue()->GetSize(), 1u);
        EXPECT_EQ(h.scq->GetSize(), 0u);
        RdmaRecvWqe got;
        EXPECT_TRUE(qp->TakeRecv(got));
        EXPECT_EQ(got.wr.wr_id, 2u);
        EXPECT_EQ(got.length, 256u);
        EXPECT_TRUE(qp->TakeRecv(got));
        EXPECT_FALSE(qp->TakeRecv(got));
    }
}

TEST(RdmaQpFlush, FatalAndDrainEvents)
{
    Hca h;
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC);
    std::vector<std::pair<RdmaQpState, RdmaQpState>> changes;
    qp->TraceConnectWithoutContext(
        "StateChange",
        MakeBoundCallback(
            +[](std::vector<std::pair<RdmaQpState, RdmaQpState>>* v, RdmaQpState a,
                RdmaQpState b) { v->emplace_back(a, b); },
            &changes));
    DriveTo(qp, RdmaQpState::RTS);
    ASSERT_EQ(changes.size(), 3u);
    EXPECT_EQ(changes[2].second, RdmaQpState::RTS);
    // Drain with work in the send queue: no event until the engine says it is drained, and
    // SQD->SQD is refused meanwhile.
    ASSERT_EQ(qp->PostSend(Send(1)), 0);
    RdmaQpAttr a;
    a.qp_state = RdmaQpState::SQD;
    a.en_sqd_async_notify = 1;
    ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE | RDMA_QP_EN_SQD_ASYNC_NOTIFY), 0);
    EXPECT_TRUE(qp->IsSqDraining());
    EXPECT_EQ(QueryAttr(qp).sq_draining, 1);
    EXPECT_EQ(h.CountEvents(RdmaEventType::SQ_DRAINED), 0);
    RdmaQpAttr t = ValidAttr(RdmaQpState::SQD, RdmaQpState::SQD);
    EXPECT_EQ(qp->Modify(t, RDMA_QP_TIMEOUT), EINVAL);
    EXPECT_TRUE(Contains(h.dev->GetLastError(), "draining"));
    EXPECT_EQ(qp->PostSend(Send(2)), 0); // posting in SQD queues
    qp->NotifySqDrained();
    EXPECT_FALSE(qp->IsSqDraining());
    ASSERT_EQ(h.CountEvents(RdmaEventType::SQ_DRAINED), 1);
    EXPECT_EQ(h.events.back().qp, qp);
    EXPECT_EQ(qp->Modify(t, RDMA_QP_TIMEOUT), 0);
    EXPECT_EQ(QueryAttr(qp).timeout, 14);
    // Back to RTS, then a fatal error: ERR, flushed, QP_FATAL.
    a.qp_state = RdmaQpState::RTS;
    ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE), 0);
    qp->ReportFatal(RdmaEventType::QP_ACCESS_ERR);
    EXPECT_EQ(qp->GetState(), RdmaQpState::ERR);
    EXPECT_EQ(h.scq->Poll(10).size(), 2u);
    EXPECT_EQ(h.events.back().event_type, RdmaEventType::QP_ACCESS_ERR);
    EXPECT_EQ(changes.back(), std::make_pair(RdmaQpState::RTS, RdmaQpState::ERR));
    const std::size_t n = h.events.size();
    qp->ReportFatal(RdmaEventType::QP_FATAL); // already in ERR: nothing more
    EXPECT_EQ(h.events.size(), n);

    // An empty send queue drains at once.
    Ptr<RdmaQp> q2 = h.Qp(RdmaQpType::UD);
    DriveTo(q2, RdmaQpState::RTS);
    ASSERT_EQ(q2->Modify(a = ValidAttr(RdmaQpState::RTS, RdmaQpState::SQD),
                         RDMA_QP_STATE | RDMA_QP_EN_SQD_ASYNC_NOTIFY),
              0);
    EXPECT_FALSE(q2->IsSqDraining());
    EXPECT_EQ(h.events.back().event_type, RdmaEventType::SQ_DRAINED);
    EXPECT_EQ(h.events.back().qp, q2);
}

TEST(RdmaQpFlush, SrqQpRaisesLastWqeReached)
{
    Hca h;
    Ptr<RdmaSrq> srq = h.dev->CreateSrq(h.pd, {8, 2, 0});
    ASSERT_NE(srq, nullptr);
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC, {4, 4, 1, 1, 0}, srq);
    DriveTo(qp, RdmaQpState::RTS);
    ASSERT_EQ(srq->PostRecv(Recv(1)), 0);
    ASSERT_EQ(srq->PostRecv(Recv(2)), 0);
    RdmaQpAttr a;
    a.qp_state = RdmaQpState::ERR;
    ASSERT_EQ(qp->Modify(a, RDMA_QP_STATE), 0);
    ASSERT_EQ(h.events.size(), 1u);
    EXPECT_EQ(h.events[0].event_type, RdmaEventType::QP_LAST_WQE_REACHED);
    EXPECT_EQ(h.events[0].qp, qp);
    EXPECT_EQ(srq->GetQueue()->GetSize(), 2u); // the SRQ's WQEs are not flushed
    EXPECT_EQ(h.rcq->GetSize(), 0u);
}

// ---- Posting -------------------------------------------------------------------------------

TEST(RdmaQpPost, SendStatesAndErrno)
{
    Hca h;
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC, {2, 2, 2, 2, 32});
    for (RdmaQpState s : {RdmaQpState::RESET, RdmaQpState::INIT, RdmaQpState::RTR})
    {
        if (s != RdmaQpState::RESET)
        {
            Step(qp, s);
        }
        EXPECT_EQ(qp->PostSend(Send(1)), EINVAL) << RdmaQpStateName(s);
        EXPECT_EQ(qp->GetSendQueue()->GetSize(), 0u);
    }
    Step(qp, RdmaQpState::RTS);
    // SGEs: the QP's max_send_sge (2), not the device's.
    RdmaSendWr w = Send(1);
    w.sg_list.push_back({kBuf, 8, 0});
    EXPECT_EQ(qp->PostSend(w), 0);
    w.sg_list.push_back({kBuf, 8, 0});
    EXPECT_EQ(qp->PostSend(w), EINVAL);
    EXPECT_TRUE(Contains(h.dev->GetLastError(), "max_send_sge"));
    // The queue holds max_send_wr (2).
    EXPECT_EQ(qp->PostSend(Send(2)), 0);
    EXPECT_EQ(qp->PostSend(Send(3)), ENOMEM);
    EXPECT_EQ(qp->GetSendQueue()->GetSize(), 2u);
    const RdmaSendWqe& first = qp->GetSendQueue()->At(0);
    EXPECT_EQ(first.wr.wr_id, 1u);
    EXPECT_EQ(first.length, 72u);
    EXPECT_TRUE(first.signaled);
    // A list stops at the first bad request; the earlier ones stay posted.
    qp->GetSendQueue()->Clear();
    std::vector<RdmaSendWr> list = {Send(5), Send(6), Send(7)};
    list[1].send_flags |= RDMA_SEND_IP_CSUM;
    std::size_t bad = 99;
    EXPECT_EQ(qp->PostSend(list, &bad), EINVAL);
    EXPECT_EQ(bad, 1u);
    ASSERT_EQ(qp->GetSendQueue()->GetSize(), 1u);
    EXPECT_EQ(qp->GetSendQueue()->At(0).wr.wr_id, 5u);
    // Unknown flag bit, unsignaled request.
    qp->GetSendQueue()->Clear();
    w = Send(8);
    w.send_flags = 1u << 7;
    EXPECT_EQ(qp->PostSend(w), EINVAL);
    w.send_flags = 0;
    ASSERT_EQ(qp->PostSend(w), 0);
    EXPECT_FALSE(qp->GetSendQueue()->At(0).signaled);
    // Destroyed QP.
    ASSERT_EQ(h.dev->DestroyQp(qp), 0);
    EXPECT_EQ(qp->PostSend(Send(9)), EINVAL);
    EXPECT_EQ(qp->PostRecv(Recv(9)), EINVAL);
    EXPECT_EQ(h.dev->DestroyQp(qp), EINVAL);
}

TEST(RdmaQpPost, OpcodesPerServiceType)
{
    Hca h;
    using O = RdmaWrOpcode;
    RdmaAhAttr av;
    av.dlid = 9;
    av.port_num = 1;
    Ptr<RdmaAh> ah = h.dev->CreateAh(h.pd, av);
    ASSERT_NE(ah, nullptr);
    // IBA vol. 1 §9.7-9.8: UD sends only; UC adds RDMA WRITE; RC adds READ and atomics.
    const std::map<O, std::set<RdmaQpType>> ok = {
        {O::SEND, {RdmaQpType::RC, RdmaQpType::UC, RdmaQpType::UD}},
        {O::SEND_WITH_IMM, {RdmaQpType::RC, RdmaQpType::UC, RdmaQpType::UD}},
        {O::RDMA_WRITE, {RdmaQpType::RC, RdmaQpType::UC}},
        {O::RDMA_WRITE_WITH_IMM, {RdmaQpType::RC, RdmaQpType::UC}},
        {O::RDMA_READ, {RdmaQpType::RC}},
        {O::ATOMIC_CMP_AND_SWP, {RdmaQpType::RC}},
        {O::ATOMIC_FETCH_AND_ADD, {RdmaQpType::RC}},
        {O::LOCAL_INV, {RdmaQpType::RC, RdmaQpType::UC, RdmaQpType::UD}},
        {O::BIND_MW, {}},
        {O::SEND_WITH_INV, {RdmaQpType::RC}},
        {O::TSO, {}},
        {O::DRIVER1, {}},
        {static_cast<O>(99), {}},
    };
    for (RdmaQpType t : kTypes)
    {
        Ptr<RdmaQp> qp = h.Qp(t, {64, 4, 2, 2, 0});
        DriveTo(qp, RdmaQpState::RTS);
        for (const auto& [op, types] : ok)
        {
            RdmaSendWr w = Send(static_cast<uint64_t>(op), 8);
            w.opcode = op;
            w.ud.ah = PeekPointer(ah);
            EXPECT_EQ(qp->PostSend(w), types.count(t) ? 0 : EINVAL)
                << RdmaQpTypeName(t) << " opcode " << static_cast<int>(op);
        }
    }
}

TEST(RdmaQpPost, AtomicsInlineUdAndMessageSize)
{
    Hca h(Attrs{{"MaxMsgSize", "4096"}});
    Ptr<RdmaQp> rc = h.Qp(RdmaQpType::RC, {16, 4, 2, 2, 32});
    DriveTo(rc, RdmaQpState::RTS);
    RdmaSendWr w = Send(1, 8);
    w.opcode = RdmaWrOpcode::ATOMIC_FETCH_AND_ADD;
    w.atomic.remote_addr = 0x1000;
    EXPECT_EQ(rc->PostSend(w), 0);
    w.atomic.remote_addr = 0x1004;
    EXPECT_EQ(rc->PostSend(w), EINVAL); // misaligned
    w.atomic.remote_addr = 0x1000;
    w.sg_list[0].length = 4;
    EXPECT_EQ(rc->PostSend(w), EINVAL); // not 8 bytes
    // Message size.
    EXPECT_EQ(rc->PostSend(Send(2, 4096)), 0);
    EXPECT_EQ(rc->PostSend(Send(3, 4097)), EINVAL);
    // Inline: copied at post time, bounded by max_inline_data (32), only for data-carrying ops.
    const uint8_t hello[] = "inline payload 0123456789abcdef"; // 32 bytes with the NUL
    ASSERT_TRUE(h.mem->Write(kBuf, hello, sizeof(hello)));
    w = Send(4, sizeof(hello));
    w.send_flags |= RDMA_SEND_INLINE;
    w.sg_list[0].lkey = 0xDEAD; // not checked for inline data
    ASSERT_EQ(rc->PostSend(w), 0);
    const uint8_t junk[sizeof(hello)] = {};
    ASSERT_TRUE(h.mem->Write(kBuf, junk, sizeof(junk)));
    const RdmaSendWqe& q = rc->GetSendQueue()->At(rc->GetSendQueue()->GetSize() - 1);
    ASSERT_EQ(q.inlineData.size(), sizeof(hello));
    EXPECT_EQ(std::memcmp(q.inlineData.data(), hello, sizeof(hello)), 0);
    // Several SGEs are gathered in order.
    const uint8_t tail[] = "TAIL";
    ASSERT_TRUE(h.mem->Write(kBuf + 4096, tail, 4));
    ASSERT_TRUE(h.mem->Write(kBuf, hello, 6));
    RdmaSendWr g = Send(40, 6);
    g.send_flags |= RDMA_SEND_INLINE;
    g.sg_list.push_back({kBuf + 4096, 4, 0});
    ASSERT_EQ(rc->PostSend(g), 0);
    const RdmaSendWqe& gq = rc->GetSendQueue()->At(rc->GetSendQueue()->GetSize() - 1);
    EXPECT_EQ(std::string(gq.inlineData.begin(), gq.inlineData.end()), "inlineTAIL");
    EXPECT_EQ(gq.length, 10u);
    w.sg_list[0].length = 33;
    EXPECT_EQ(rc->PostSend(w), EINVAL);
    w.sg_list[0].length = 8;
    w.opcode = RdmaWrOpcode::RDMA_READ;
    EXPECT_EQ(rc->PostSend(w), EINVAL);
    w.opcode = RdmaWrOpcode::RDMA_WRITE;
    w.sg_list[0].addr = 0x1000; // unmapped
    EXPECT_EQ(rc->PostSend(w), EFAULT);

    // UD needs an alive AH of the QP's PD; the WQE keeps its own copy of the vector.
    Ptr<RdmaQp> ud = h.Qp(RdmaQpType::UD);
    DriveTo(ud, RdmaQpState::RTS);
    w = Send(5);
    EXPECT_EQ(ud->PostSend(w), EINVAL);
    Ptr<RdmaPd> other = h.dev->AllocPd(h.mem);
    RdmaAhAttr av;
    av.dlid = 0xC001; // multicast is fine for UD
    av.sl = 2;
    av.port_num = 1;
    Ptr<RdmaAh> foreign = h.dev->CreateAh(other, av);
    w.ud.ah = PeekPointer(foreign);
    EXPECT_EQ(ud->PostSend(w), EINVAL);
    Ptr<RdmaAh> ah = h.dev->CreateAh(h.pd, av);
    w.ud.ah = PeekPointer(ah);
    w.ud.remote_qpn = 0x42;
    w.ud.remote_qkey = 0x11111111;
    ASSERT_EQ(ud->PostSend(w), 0);
    ASSERT_EQ(h.dev->DestroyAh(ah), 0);
    const RdmaSendWqe& u = ud->GetSendQueue()->At(0);
    EXPECT_EQ(u.ah.dlid, 0xC001);
    EXPECT_EQ(u.ah.sl, 2);
    EXPECT_EQ(u.wr.ud.ah, nullptr);
    EXPECT_EQ(u.wr.ud.remote_qpn, 0x42u);
    EXPECT_EQ(ud->PostSend(w), EINVAL); // the AH is gone
}

TEST(RdmaQpPost, SqSigAll)
{
    Hca h;
    RdmaQpInitAttr init;
    init.send_cq = h.scq;
    init.recv_cq = h.rcq;
    init.cap = {4, 4, 1, 1, 0};
    init.qp_type = RdmaQpType::RC;
    init.sq_sig_all = 1;
    Ptr<RdmaQp> qp = h.dev->CreateQp(h.pd, init);
    DriveTo(qp, RdmaQpState::RTS);
    RdmaSendWr w = Send(1);
    w.send_flags = 0;
    ASSERT_EQ(qp->PostSend(w), 0);
    EXPECT_TRUE(qp->GetSendQueue()->At(0).signaled);
}

TEST(RdmaQpPost, ReceiveStatesAndErrno)
{
    Hca h;
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::UD, {2, 2, 1, 1, 0});
    EXPECT_EQ(qp->PostRecv(Recv(1)), EINVAL); // RESET
    Step(qp, RdmaQpState::INIT);
    EXPECT_EQ(qp->PostRecv(Recv(1)), 0); // receives may be posted from INIT on
    RdmaRecvWr two = Recv(2);
    two.sg_list.push_back({kBuf, 8, 0});
    EXPECT_EQ(qp->PostRecv(two), EINVAL);
    EXPECT_EQ(qp->PostRecv(Recv(3)), 0);
    std::size_t bad = 9;
    EXPECT_EQ(qp->PostRecv({Recv(4)}, &bad), ENOMEM);
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(qp->GetRecvQueue()->GetSize(), 2u);
}

TEST(RdmaSrq, PostLimitsAndLimitEvent)
{
    Hca h(Attrs{{"MaxSrqWr", "16"}, {"MaxSrqSge", "2"}});
    int err = -1;
    EXPECT_EQ(h.dev->CreateSrq(h.pd, {0, 1, 0}, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(h.dev->CreateSrq(h.pd, {17, 1, 0}, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(h.dev->CreateSrq(h.pd, {4, 3, 0}, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    Ptr<RdmaSrq> srq = h.dev->CreateSrq(h.pd, {4, 1, 3}, &err);
    ASSERT_NE(srq, nullptr);
    RdmaSrqAttr q;
    ASSERT_EQ(srq->Query(q), 0);
    EXPECT_EQ(q.max_wr, 4u);
    EXPECT_EQ(q.srq_limit, 0u); // ignored at creation
    RdmaRecvWr two = Recv(0);
    two.sg_list.push_back({kBuf, 8, 0});
    EXPECT_EQ(srq->PostRecv(two), EINVAL);
    std::size_t bad = 9;
    EXPECT_EQ(srq->PostRecv({Recv(1), Recv(2), Recv(3), Recv(4), Recv(5)}, &bad), ENOMEM);
    EXPECT_EQ(bad, 4u);
    // A QP on the SRQ takes from it and may not post receives of its own.
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC, {4, 4, 1, 1, 0}, srq);
    DriveTo(qp, RdmaQpState::RTR);
    EXPECT_EQ(qp->PostRecv(Recv(6)), EINVAL);
    EXPECT_EQ(qp->GetRecvQueue()->GetCapacity(), 0u);
    // Limit: armed at 3, fires when fewer than 3 remain, then disarmed.
    EXPECT_EQ(srq->Modify({0, 0, 5}, RDMA_SRQ_LIMIT), EINVAL); // above max_wr
    EXPECT_EQ(srq->Modify({8, 0, 0}, RDMA_SRQ_MAX_WR), EINVAL); // no resizing
    EXPECT_EQ(srq->Modify({0, 0, 3}, 1u << 2), EINVAL);
    ASSERT_EQ(srq->Modify({0, 0, 3}, RDMA_SRQ_LIMIT), 0);
    RdmaRecvWqe got;
    ASSERT_TRUE(qp->TakeRecv(got)); // 4 -> 3
    EXPECT_EQ(got.wr.wr_id, 1u);
    EXPECT_EQ(h.CountEvents(RdmaEventType::SRQ_LIMIT_REACHED), 0);
    ASSERT_TRUE(qp->TakeRecv(got)); // 3 -> 2
    ASSERT_EQ(h.CountEvents(RdmaEventType::SRQ_LIMIT_REACHED), 1);
    EXPECT_EQ(h.events.back().srq, srq);
    ASSERT_EQ(srq->Query(q), 0);
    EXPECT_EQ(q.srq_limit, 0u);
    ASSERT_TRUE(qp->TakeRecv(got));
    EXPECT_EQ(h.CountEvents(RdmaEventType::SRQ_LIMIT_REACHED), 1);
    // In use: not destroyable.
    EXPECT_EQ(h.dev->DestroySrq(srq), EBUSY);
    ASSERT_EQ(h.dev->DestroyQp(qp), 0);
    EXPECT_EQ(h.dev->DestroySrq(srq), 0);
    EXPECT_EQ(srq->PostRecv(Recv(1)), EINVAL);
}

// ---- Creation, limits and destruction ------------------------------------------------------

TEST(RdmaDevice, CreateQpValidation)
{
    Hca h(Attrs{{"MaxQp", "3"},
           {"MaxQpWr", "64"},
           {"MaxSge", "4"},
           {"MaxInlineData", "128"},
           {"FirstQpNumber", "0xFFFFFE"}});
    RdmaQpInitAttr init;
    init.send_cq = h.scq;
    init.recv_cq = h.rcq;
    init.cap = {64, 64, 4, 4, 128};
    int err = -1;
    for (RdmaQpType t : {RdmaQpType::RAW_PACKET, RdmaQpType::XRC_SEND, RdmaQpType::XRC_RECV})
    {
        init.qp_type = t;
        EXPECT_EQ(h.dev->CreateQp(h.pd, init, &err), nullptr);
        EXPECT_EQ(err, EOPNOTSUPP);
    }
    init.qp_type = static_cast<RdmaQpType>(0);
    EXPECT_EQ(h.dev->CreateQp(h.pd, init, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    init.qp_type = RdmaQpType::RC;
    auto refuse = [&](RdmaQpInitAttr bad) {
        int e = -1;
        EXPECT_EQ(h.dev->CreateQp(h.pd, bad, &e), nullptr);
        EXPECT_EQ(e, EINVAL);
    };
    RdmaQpInitAttr b = init;
    b.send_cq = nullptr;
    refuse(b);
    b = init;
    b.cap.max_send_wr = 65;
    refuse(b);
    b = init;
    b.cap.max_recv_sge = 5;
    refuse(b);
    b = init;
    b.cap.max_inline_data = 129;
    refuse(b);
    Ptr<RdmaPd> other = h.dev->AllocPd(h.mem);
    b = init;
    b.srq = h.dev->CreateSrq(other, {4, 1, 0});
    refuse(b);
    Ptr<RdmaCq> dead = h.dev->CreateCq(4);
    ASSERT_EQ(h.dev->DestroyCq(dead), 0);
    b = init;
    b.recv_cq = dead;
    refuse(b);
    EXPECT_EQ(h.dev->CreateQp(nullptr, init, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    // QP numbers count up from FirstQpNumber, wrap to 2, and are unique.
    Ptr<RdmaQp> a = h.dev->CreateQp(h.pd, init, &err);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(init.cap.max_send_wr, 64u);
    Ptr<RdmaQp> c = h.dev->CreateQp(h.pd, init, &err);
    Ptr<RdmaQp> d = h.dev->CreateQp(h.pd, init, &err);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(a->GetQpNum(), 0xFFFFFEu);
    EXPECT_EQ(c->GetQpNum(), 0xFFFFFFu);
    EXPECT_EQ(d->GetQpNum(), 2u);
    EXPECT_EQ(h.dev->LookupQp(0xFFFFFF), c);
    EXPECT_EQ(h.dev->CreateQp(h.pd, init, &err), nullptr);
    EXPECT_EQ(err, ENOMEM);
    // With an SRQ the receive capacities are ignored and reported as 0.
    ASSERT_EQ(h.dev->DestroyQp(d), 0);
    EXPECT_EQ(h.dev->LookupQp(2), nullptr);
    init.srq = h.dev->CreateSrq(h.pd, {4, 1, 0});
    init.cap.max_recv_wr = 1000;
    Ptr<RdmaQp> s = h.dev->CreateQp(h.pd, init, &err);
    ASSERT_NE(s, nullptr) << h.dev->GetLastError();
    EXPECT_EQ(init.cap.max_recv_wr, 0u);
    EXPECT_EQ(init.cap.max_recv_sge, 0u);
}

TEST(RdmaDevice, BusyObjectsAndDispose)
{
    Hca h;
    Ptr<RdmaQp> qp = h.Qp(RdmaQpType::RC);
    Ptr<RdmaMr> mr = h.dev->RegMr(h.pd, kBuf, 64, 0);
    EXPECT_EQ(h.dev->DeallocPd(h.pd), EBUSY);
    EXPECT_EQ(h.dev->DestroyCq(h.scq), EBUSY);
    EXPECT_EQ(h.pd->GetUseCount(), 2u);
    ASSERT_EQ(h.dev->DestroyQp(qp), 0);
    EXPECT_EQ(h.dev->DestroyCq(h.scq), 0);
    EXPECT_EQ(h.scq->Poll(1).size(), 0u);
    EXPECT_EQ(h.scq->ReqNotify(false), EINVAL);
    EXPECT_EQ(h.dev->DeallocPd(h.pd), EBUSY);
    ASSERT_EQ(h.dev->DeregMr(mr), 0);
    EXPECT_EQ(h.dev->DeallocPd(h.pd), 0);
    EXPECT_EQ(h.dev->DeallocPd(h.pd), EINVAL);
    int err = -1;
    EXPECT_EQ(h.dev->AllocPd(nullptr, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    // Disposing the device orphans every object: verbs on them fail.
    Ptr<RdmaPd> pd = h.dev->AllocPd(h.mem);
    RdmaQpInitAttr i;
    i.send_cq = h.rcq;
    i.recv_cq = h.rcq;
    i.cap = {1, 1, 1, 1, 0};
    Ptr<RdmaQp> q2 = h.dev->CreateQp(pd, i);
    ASSERT_NE(q2, nullptr);
    h.dev->Dispose();
    EXPECT_FALSE(q2->IsAlive());
    EXPECT_EQ(q2->Modify(RdmaQpAttr(), 0), EINVAL);
    EXPECT_EQ(h.rcq->Poll(1).size(), 0u);
}

TEST(RdmaDevice, AddressHandlesAndQueries)
{
    Hca h(Attrs{{"PhysPortCount", "2"}, {"MaxAh", "2"}, {"GidTableLength", "4"}});
    RdmaDeviceAttr d = h.dev->QueryDevice();
    EXPECT_EQ(d.phys_port_cnt, 2);
    EXPECT_EQ(d.max_ah, 2u);
    EXPECT_EQ(d.atomic_cap, RdmaAtomicCap::HCA);
    EXPECT_TRUE(d.device_cap_flags & RDMA_DEVICE_CURR_QP_STATE_MOD);
    RdmaPortAttr p;
    EXPECT_EQ(h.dev->QueryPort(0, p), EINVAL);
    EXPECT_EQ(h.dev->QueryPort(3, p), EINVAL);
    ASSERT_EQ(h.dev->QueryPort(2, p), 0);
    EXPECT_EQ(p.gid_tbl_len, 4u);
    EXPECT_EQ(p.max_msg_sz, 1u << 31);
    RdmaAhAttr av;
    av.dlid = 3;
    av.port_num = 2;
    int err = -1;
    EXPECT_NE(h.dev->CreateAh(h.pd, av, &err), nullptr);
    av.port_num = 3;
    EXPECT_EQ(h.dev->CreateAh(h.pd, av, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    av.port_num = 1;
    av.dlid = 0;
    EXPECT_EQ(h.dev->CreateAh(h.pd, av, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    av.dlid = 1;
    av.is_global = 1;
    av.grh.sgid_index = 4;
    EXPECT_EQ(h.dev->CreateAh(h.pd, av, &err), nullptr);
    EXPECT_EQ(err, EINVAL);
    av.grh.sgid_index = 3;
    EXPECT_NE(h.dev->CreateAh(h.pd, av, &err), nullptr);
    EXPECT_EQ(h.dev->CreateAh(h.pd, av, &err), nullptr);
    EXPECT_EQ(err, ENOMEM);
    EXPECT_EQ(h.dev->GetNAhs(), 2u);
}

// ---- Simulated memory ----------------------------------------------------------------------

TEST(RdmaSimulatedMemory, SparseHighAddressesAndFaults)
{
    Ptr<RdmaSimulatedMemory> m = CreateObject<RdmaSimulatedMemory>();
    const uint64_t P = RdmaSimulatedMemory::kPageSize;
    const uint64_t base = 0x7fff12340000ULL;
    EXPECT_FALSE(m->IsMapped(base, 1));
    uint8_t b[64];
    std::memset(b, 0xAA, sizeof(b));
    EXPECT_FALSE(m->Read(base, b, 1));
    EXPECT_EQ(b[0], 0xAA); // a fault leaves the buffer alone
    // Map rounds outwards to whole pages.
    ASSERT_TRUE(m->Map(base + 10, 3 * P));
    EXPECT_EQ(m->GetMappedBytes(), 4 * P);
    EXPECT_TRUE(m->IsMapped(base, 4 * P));
    EXPECT_FALSE(m->IsMapped(base + 4 * P, 1));
    EXPECT_FALSE(m->IsMapped(base - 1, 2));
    EXPECT_EQ(m->GetResidentPages(), 0u);
    // Mapped, never written: zeros.
    ASSERT_TRUE(m->Read(base + 100, b, sizeof(b)));
    EXPECT_EQ(b[0], 0);
    EXPECT_EQ(b[63], 0);
    // Across a page boundary.
    uint8_t pat[64];
    for (int i = 0; i < 64; ++i)
    {
        pat[i] = static_cast<uint8_t>(i + 1);
    }
    ASSERT_TRUE(m->Write(base + P - 32, pat, 64));
    EXPECT_EQ(m->GetResidentPages(), 2u);
    ASSERT_TRUE(m->Read(base + P - 32, b, 64));
    EXPECT_EQ(std::memcmp(b, pat, 64), 0);
    // A write that runs off the mapping faults and writes nothing.
    EXPECT_FALSE(m->Write(base + 4 * P - 32, pat, 64));
    ASSERT_TRUE(m->Read(base + 4 * P - 32, b, 32));
    EXPECT_EQ(b[0], 0);
    EXPECT_FALSE(m->Read(base + 4 * P - 32, b, 64));
    // Ranges that wrap past 2^64 always fault; the last page is usable.
    EXPECT_FALSE(m->Map(UINT64_MAX, 2));
    EXPECT_FALSE(m->Map(base, 0));
    ASSERT_TRUE(m->Map(UINT64_MAX - P + 1, P));
    ASSERT_TRUE(m->Write(UINT64_MAX - 1, pat, 2));
    EXPECT_FALSE(m->Write(UINT64_MAX - 1, pat, 3));
    EXPECT_FALSE(m->Read(UINT64_MAX, b, 2));
    ASSERT_TRUE(m->Read(UINT64_MAX, b, 1));
    EXPECT_EQ(b[0], pat[1]);
    EXPECT_TRUE(RdmaMemory::Wraps(UINT64_MAX, 2));
    EXPECT_FALSE(RdmaMemory::Wraps(UINT64_MAX, 1));
    EXPECT_FALSE(RdmaMemory::Wraps(UINT64_MAX, 0));
}

TEST(RdmaSimulatedMemory, HugeMappingsUnmapAndMerge)
{
    Ptr<RdmaSimulatedMemory> m = CreateObject<RdmaSimulatedMemory>();
    const uint64_t P = RdmaSimulatedMemory::kPageSize;
    const uint64_t tib = 1ULL << 40;
    ASSERT_TRUE(m->Map(tib, tib)); // a terabyte costs nothing until written
    EXPECT_EQ(m->GetMappedBytes(), tib);
    EXPECT_EQ(m->GetResidentPages(), 0u);
    const uint8_t x = 0x5A;
    ASSERT_TRUE(m->Write(tib + tib / 2, &x, 1));
    EXPECT_EQ(m->GetResidentPages(), 1u);
    uint8_t y = 0;
    ASSERT_TRUE(m->Read(tib + tib / 2, &y, 1));
    EXPECT_EQ(y, x);
    // Punch a one-page hole: the halves stay, the hole faults, its contents are gone.
    const uint64_t hole = (tib + tib / 2) & ~(P - 1);
    ASSERT_TRUE(m->Unmap(hole + 1, 1));
    EXPECT_EQ(m->GetMappedBytes(), tib - P);
    EXPECT_FALSE(m->IsMapped(hole, 1));
    EXPECT_TRUE(m->IsMapped(hole - P, P));
    EXPECT_TRUE(m->IsMapped(hole + P, P));
    EXPECT_FALSE(m->IsMapped(hole - 1, 2));
    EXPECT_EQ(m->GetResidentPages(), 0u);
    ASSERT_TRUE(m->Map(hole, P));
    EXPECT_TRUE(m->IsMapped(tib, tib)); // merged back into one mapping
    ASSERT_TRUE(m->Read(tib + tib / 2, &y, 1));
    EXPECT_EQ(y, 0);
    // Adjacent and overlapping maps merge; unmapping across several mappings works.
    Ptr<RdmaSimulatedMemory> n = CreateObject<RdmaSimulatedMemory>();
    ASSERT_TRUE(n->Map(0x10000, P));
    ASSERT_TRUE(n->Map(0x10000 + P, P));
    ASSERT_TRUE(n->Map(0x10000 + 5 * P, P));
    EXPECT_TRUE(n->IsMapped(0x10000, 2 * P));
    EXPECT_FALSE(n->IsMapped(0x10000, 3 * P));
    ASSERT_TRUE(n->Map(0x10000 + P, 4 * P));
    EXPECT_TRUE(n->IsMapped(0x10000, 6 * P));
    ASSERT_TRUE(n->Unmap(0x10000 + P, 4 * P));
    EXPECT_EQ(n->GetMappedBytes(), 2 * P);
    EXPECT_TRUE(n->IsMapped(0x10000, P));
    EXPECT_TRUE(n->IsMapped(0x10000 + 5 * P, P));
    ASSERT_TRUE(n->Unmap(0, 1ULL << 30));
    EXPECT_EQ(n->GetMappedBytes(), 0u);
}

} // namespace
