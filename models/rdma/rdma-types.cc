#include "rdma-types.h"

#include <stdexcept>
#include <string>

namespace ns3
{

uint32_t
RdmaMtuBytes(RdmaMtu mtu)
{
    switch (mtu)
    {
    case RdmaMtu::MTU_256:
        return 256;
    case RdmaMtu::MTU_512:
        return 512;
    case RdmaMtu::MTU_1024:
        return 1024;
    case RdmaMtu::MTU_2048:
        return 2048;
    case RdmaMtu::MTU_4096:
        return 4096;
    }
    return 0;
}

RdmaMtu
RdmaMtuFromBytes(uint64_t bytes)
{
    for (RdmaMtu m : {RdmaMtu::MTU_256, RdmaMtu::MTU_512, RdmaMtu::MTU_1024, RdmaMtu::MTU_2048,
                      RdmaMtu::MTU_4096})
    {
        if (RdmaMtuBytes(m) == bytes)
        {
            return m;
        }
    }
    throw std::invalid_argument("mtu must be 256, 512, 1024, 2048 or 4096, not " +
                                std::to_string(bytes));
}

const char*
RdmaWcStatusStr(RdmaWcStatus status)
{
    // The strings of ibv_wc_status_str(3), so that logs read like those of verbs programs.
    switch (status)
    {
    case RdmaWcStatus::SUCCESS:
        return "success";
    case RdmaWcStatus::LOC_LEN_ERR:
        return "local length error";
    case RdmaWcStatus::LOC_QP_OP_ERR:
        return "local QP operation error";
    case RdmaWcStatus::LOC_EEC_OP_ERR:
        return "local EE context operation error";
    case RdmaWcStatus::LOC_PROT_ERR:
        return "local protection error";
    case RdmaWcStatus::WR_FLUSH_ERR:
        return "Work Request Flushed Error";
    case RdmaWcStatus::MW_BIND_ERR:
        return "memory management operation error";
    case RdmaWcStatus::BAD_RESP_ERR:
        return "bad response error";
    case RdmaWcStatus::LOC_ACCESS_ERR:
        return "local access error";
    case RdmaWcStatus::REM_INV_REQ_ERR:
        return "remote invalid request error";
    case RdmaWcStatus::REM_ACCESS_ERR:
        return "remote access error";
    case RdmaWcStatus::REM_OP_ERR:
        return "remote operation error";
    case RdmaWcStatus::RETRY_EXC_ERR:
        return "transport retry counter exceeded";
    case RdmaWcStatus::RNR_RETRY_EXC_ERR:
        return "RNR retry counter exceeded";
    case RdmaWcStatus::LOC_RDD_VIOL_ERR:
        return "local RDD violation error";
    case RdmaWcStatus::REM_INV_RD_REQ_ERR:
        return "remote invalid RD request";
    case RdmaWcStatus::REM_ABORT_ERR:
        return "operation aborted";
    case RdmaWcStatus::INV_EECN_ERR:
        return "invalid EE context number";
    case RdmaWcStatus::INV_EEC_STATE_ERR:
        return "invalid EE context state";
    case RdmaWcStatus::FATAL_ERR:
        return "fatal error";
    case RdmaWcStatus::RESP_TIMEOUT_ERR:
        return "response timeout error";
    case RdmaWcStatus::GENERAL_ERR:
        return "general error";
    case RdmaWcStatus::TM_ERR:
        return "TM error";
    case RdmaWcStatus::TM_RNDV_INCOMPLETE:
        return "TM software rendezvous";
    }
    return "unknown";
}

RdmaWcOpcode
RdmaWcOpcodeOf(RdmaWrOpcode op)
{
    switch (op)
    {
    case RdmaWrOpcode::RDMA_WRITE:
    case RdmaWrOpcode::RDMA_WRITE_WITH_IMM:
        return RdmaWcOpcode::RDMA_WRITE;
    case RdmaWrOpcode::SEND:
    case RdmaWrOpcode::SEND_WITH_IMM:
    case RdmaWrOpcode::SEND_WITH_INV:
        return RdmaWcOpcode::SEND;
    case RdmaWrOpcode::RDMA_READ:
        return RdmaWcOpcode::RDMA_READ;
    case RdmaWrOpcode::ATOMIC_CMP_AND_SWP:
        return RdmaWcOpcode::COMP_SWAP;
    case RdmaWrOpcode::ATOMIC_FETCH_AND_ADD:
        return RdmaWcOpcode::FETCH_ADD;
    case RdmaWrOpcode::LOCAL_INV:
        return RdmaWcOpcode::LOCAL_INV;
    case RdmaWrOpcode::BIND_MW:
        return RdmaWcOpcode::BIND_MW;
    case RdmaWrOpcode::TSO:
        return RdmaWcOpcode::TSO;
    case RdmaWrOpcode::DRIVER1:
        return RdmaWcOpcode::DRIVER1;
    }
    return RdmaWcOpcode::SEND;
}

const char*
RdmaEventTypeStr(RdmaEventType type)
{
    // The strings of ibv_event_type_str(3).
    switch (type)
    {
    case RdmaEventType::CQ_ERR:
        return "CQ error";
    case RdmaEventType::QP_FATAL:
        return "local work queue catastrophic error";
    case RdmaEventType::QP_REQ_ERR:
        return "invalid request local work queue error";
    case RdmaEventType::QP_ACCESS_ERR:
        return "local access violation work queue error";
    case RdmaEventType::COMM_EST:
        return "communication established";
    case RdmaEventType::SQ_DRAINED:
        return "send queue drained";
    case RdmaEventType::PATH_MIG:
        return "path migrated";
    case RdmaEventType::PATH_MIG_ERR:
        return "path migration request error";
    case RdmaEventType::DEVICE_FATAL:
        return "local catastrophic error";
    case RdmaEventType::PORT_ACTIVE:
        return "port active";
    case RdmaEventType::PORT_ERR:
        return "port error";
    case RdmaEventType::LID_CHANGE:
        return "LID change";
    case RdmaEventType::PKEY_CHANGE:
        return "P_Key change";
    case RdmaEventType::SM_CHANGE:
        return "SM change";
    case RdmaEventType::SRQ_ERR:
        return "SRQ catastrophic error";
    case RdmaEventType::SRQ_LIMIT_REACHED:
        return "SRQ limit reached";
    case RdmaEventType::QP_LAST_WQE_REACHED:
        return "last WQE reached";
    case RdmaEventType::CLIENT_REREGISTER:
        return "client reregistration";
    case RdmaEventType::GID_CHANGE:
        return "GID table change";
    case RdmaEventType::WQ_FATAL:
        return "WQ fatal";
    }
    return "unknown";
}

const char*
RdmaQpStateName(RdmaQpState s)
{
    switch (s)
    {
    case RdmaQpState::RESET:
        return "RESET";
    case RdmaQpState::INIT:
        return "INIT";
    case RdmaQpState::RTR:
        return "RTR";
    case RdmaQpState::RTS:
        return "RTS";
    case RdmaQpState::SQD:
        return "SQD";
    case RdmaQpState::SQE:
        return "SQE";
    case RdmaQpState::ERR:
        return "ERR";
    case RdmaQpState::UNKNOWN:
        return "UNKNOWN";
    }
    return "?";
}

const char*
RdmaQpTypeName(RdmaQpType t)
{
    switch (t)
    {
    case RdmaQpType::RC:
        return "RC";
    case RdmaQpType::UC:
        return "UC";
    case RdmaQpType::UD:
        return "UD";
    case RdmaQpType::RAW_PACKET:
        return "RAW_PACKET";
    case RdmaQpType::XRC_SEND:
        return "XRC_SEND";
    case RdmaQpType::XRC_RECV:
        return "XRC_RECV";
    case RdmaQpType::DRIVER:
        return "DRIVER";
    }
    return "?";
}

const char*
RdmaQpAttrMaskBitName(uint32_t bit)
{
    switch (bit)
    {
    case RDMA_QP_STATE:
        return "IBV_QP_STATE";
    case RDMA_QP_CUR_STATE:
        return "IBV_QP_CUR_STATE";
    case RDMA_QP_EN_SQD_ASYNC_NOTIFY:
        return "IBV_QP_EN_SQD_ASYNC_NOTIFY";
    case RDMA_QP_ACCESS_FLAGS:
        return "IBV_QP_ACCESS_FLAGS";
    case RDMA_QP_PKEY_INDEX:
        return "IBV_QP_PKEY_INDEX";
    case RDMA_QP_PORT:
        return "IBV_QP_PORT";
    case RDMA_QP_QKEY:
        return "IBV_QP_QKEY";
    case RDMA_QP_AV:
        return "IBV_QP_AV";
    case RDMA_QP_PATH_MTU:
        return "IBV_QP_PATH_MTU";
    case RDMA_QP_TIMEOUT:
        return "IBV_QP_TIMEOUT";
    case RDMA_QP_RETRY_CNT:
        return "IBV_QP_RETRY_CNT";
    case RDMA_QP_RNR_RETRY:
        return "IBV_QP_RNR_RETRY";
    case RDMA_QP_RQ_PSN:
        return "IBV_QP_RQ_PSN";
    case RDMA_QP_MAX_QP_RD_ATOMIC:
        return "IBV_QP_MAX_QP_RD_ATOMIC";
    case RDMA_QP_ALT_PATH:
        return "IBV_QP_ALT_PATH";
    case RDMA_QP_MIN_RNR_TIMER:
        return "IBV_QP_MIN_RNR_TIMER";
    case RDMA_QP_SQ_PSN:
        return "IBV_QP_SQ_PSN";
    case RDMA_QP_MAX_DEST_RD_ATOMIC:
        return "IBV_QP_MAX_DEST_RD_ATOMIC";
    case RDMA_QP_PATH_MIG_STATE:
        return "IBV_QP_PATH_MIG_STATE";
    case RDMA_QP_CAP:
        return "IBV_QP_CAP";
    case RDMA_QP_DEST_QPN:
        return "IBV_QP_DEST_QPN";
    case RDMA_QP_RATE_LIMIT:
        return "IBV_QP_RATE_LIMIT";
    default:
        return "?";
    }
}

bool
operator==(const RdmaGlobalRoute& a, const RdmaGlobalRoute& b)
{
    return a.dgid == b.dgid && a.flow_label == b.flow_label && a.sgid_index == b.sgid_index &&
           a.hop_limit == b.hop_limit && a.traffic_class == b.traffic_class;
}

bool
operator==(const RdmaAhAttr& a, const RdmaAhAttr& b)
{
    return a.grh == b.grh && a.dlid == b.dlid && a.sl == b.sl &&
           a.src_path_bits == b.src_path_bits && a.static_rate == b.static_rate &&
           a.is_global == b.is_global && a.port_num == b.port_num;
}

bool
operator==(const RdmaQpCap& a, const RdmaQpCap& b)
{
    return a.max_send_wr == b.max_send_wr && a.max_recv_wr == b.max_recv_wr &&
           a.max_send_sge == b.max_send_sge && a.max_recv_sge == b.max_recv_sge &&
           a.max_inline_data == b.max_inline_data;
}

bool
operator==(const RdmaQpAttr& a, const RdmaQpAttr& b)
{
    return a.qp_state == b.qp_state && a.cur_qp_state == b.cur_qp_state &&
           a.path_mtu == b.path_mtu && a.path_mig_state == b.path_mig_state &&
           a.qkey == b.qkey && a.rq_psn == b.rq_psn && a.sq_psn == b.sq_psn &&
           a.dest_qp_num == b.dest_qp_num && a.qp_access_flags == b.qp_access_flags &&
           a.cap == b.cap && a.ah_attr == b.ah_attr && a.alt_ah_attr == b.alt_ah_attr &&
           a.pkey_index == b.pkey_index && a.alt_pkey_index == b.alt_pkey_index &&
           a.en_sqd_async_notify == b.en_sqd_async_notify && a.sq_draining == b.sq_draining &&
           a.max_rd_atomic == b.max_rd_atomic && a.max_dest_rd_atomic == b.max_dest_rd_atomic &&
           a.min_rnr_timer == b.min_rnr_timer && a.port_num == b.port_num &&
           a.timeout == b.timeout && a.retry_cnt == b.retry_cnt && a.rnr_retry == b.rnr_retry &&
           a.alt_port_num == b.alt_port_num && a.alt_timeout == b.alt_timeout &&
           a.rate_limit == b.rate_limit;
}

} // namespace ns3
