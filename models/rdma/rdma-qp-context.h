// The transport engine's per-QP state: one requester, one responder and one completer context
// (IBA vol. 1 §9.7: the requester sends requests and the completer retires them on responses;
// the responder executes incoming requests and answers). Plain data: the engine's code in
// rdma-requester.cc, rdma-responder.cc and rdma-completer.cc works on it.
#ifndef CNUAS_RDMA_QP_CONTEXT_H
#define CNUAS_RDMA_QP_CONTEXT_H

#include "rdma-mr.h"
#include "rdma-qp.h"
#include "rdma-selective-repeat.h"
#include "rdma-types.h"

#include "models/common/sim-clock.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"

#include <cstdint>
#include <deque>

namespace ns3
{

/// PSNs are 24-bit serial numbers (IBA vol. 1 §9.7.1): a - b as a signed distance.
inline int32_t
RdmaPsnDiff(uint32_t a, uint32_t b)
{
    return static_cast<int32_t>((a - b) << 8) >> 8;
}

inline uint32_t
RdmaPsnAdd(uint32_t a, int64_t n)
{
    return static_cast<uint32_t>(a + n) & kRdmaMax24;
}

/// Requester states (what it is waiting for before it can send the next packet).
enum class RdmaReqState : uint8_t
{
    Idle,         ///< nothing to send
    Ready,        ///< queued in the engine's scheduler
    WaitPort,     ///< the port's queue is full
    WaitRate,     ///< the rate limiter holds the next packet
    WaitWindow,   ///< too many bytes unacknowledged (window)
    WaitRdAtomic, ///< max_rd_atomic READs/atomics outstanding (IBA vol. 1 §9.5)
    WaitFence,    ///< a fenced WR waits for earlier READs/atomics (IBA vol. 1 §10.8.3.3)
    RnrWait,      ///< an RNR NAK's timer runs (IBA vol. 1 §9.7.5.2.8)
    Error,        ///< the QP left RTS/SQD
    WaitCredit,   ///< no end-to-end credit for a SEND / WRITE with immediate (§9.7.7.2)
};

/// Completer states.
enum class RdmaCompState : uint8_t
{
    Idle,     ///< nothing unacknowledged
    WaitAck,  ///< packets in flight; the local ACK timer runs (RC)
    Error,
};

/// Responder states (where it is within the incoming message stream).
enum class RdmaRespState : uint8_t
{
    Idle,       ///< between messages
    InSend,     ///< inside a multi-packet SEND
    InWrite,    ///< inside a multi-packet RDMA WRITE
    UcDropping, ///< UC: a packet was lost, dropping until the next First/Only (IBA §9.8.2)
    Error,
};

const char* RdmaReqStateName(RdmaReqState s);
const char* RdmaRespStateName(RdmaRespState s);

/// One send WQE that the requester has started: SQ entry i is sendOps[i].
struct RdmaSendOp
{
    RdmaWrOpcode opcode = RdmaWrOpcode::SEND;
    uint32_t firstPsn = 0;
    uint32_t npkts = 1;       ///< request packets; READ: response packets
    uint64_t length = 0;
    bool readLike = false;    ///< READ or atomic: completes on its response data
    uint32_t respNext = 0;    ///< READ: response packets received in order
    bool done = false;        ///< READ/atomic: the response is in local memory
    bool fullySent = false;   ///< every request packet has been sent at least once
    /// RC: the message's send sequence number (SSN, 24 bits), matched against the AETH MSN.
    uint32_t ssn = 0;
    /// RC: the message uses a receive WQE at the responder (SEND, WRITE with immediate).
    bool consumesRecv = false;
    /// RC: receive-WQE-using messages started up to and including this one (end-to-end
    /// credits, IBA vol. 1 §9.7.7.2).
    uint64_t creditSeq = 0;
    /// A local error found when the WR started (bad L_Key, UD message above the MTU): the WR
    /// completes with it once the WRs before it have completed.
    RdmaWcStatus status = RdmaWcStatus::SUCCESS;
    Time firstSent;

    uint32_t LastPsn() const
    {
        return RdmaPsnAdd(firstPsn, static_cast<int64_t>(npkts) - 1);
    }
};

/// A READ or atomic the responder executed, kept for duplicates (IBA vol. 1 §9.7.5.1.4:
/// a duplicate atomic is answered from the saved result, never executed twice).
struct RdmaRespResource
{
    bool atomic = false;
    uint32_t firstPsn = 0;
    uint32_t npkts = 1;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t length = 0;
    uint64_t original = 0; ///< atomic: the value before the operation
    uint32_t msn = 0;
};

/// A READ the responder is answering: its response packets are built one at a time as the
/// port takes them (IBA vol. 1 §9.7.5.1.3: the responder streams them in PSN order).
struct RdmaReadJob
{
    Ptr<RdmaMr> mr;
    uint64_t va = 0;       ///< IOVA of the READ's first byte
    uint32_t length = 0;
    uint32_t firstPsn = 0;
    uint32_t npkts = 1;
    uint32_t next = 0;     ///< the next response packet to send
    uint32_t msn = 0;      ///< the AETH MSN of its First/Last/Only responses
};

/// A response of a QP held back until its READ responses ahead have gone (PSN order).
struct RdmaHeldResponse
{
    std::vector<uint8_t> bytes;
    RdmaAhAttr av;
};

struct RdmaQpContext
{
    Ptr<RdmaQp> qp;
    uint32_t qpn = 0;
    /// The QP went to Error/Reset or was destroyed while engine code held this context (a
    /// completion can overrun a CQ and move QPs to Error): stop touching it.
    bool dead = false;

    // ---- requester ----
    RdmaReqState reqState = RdmaReqState::Idle;
    bool queued = false;       ///< in the engine's ready list
    bool reqStarted = false;   ///< initialised from sq_psn on entering RTS
    std::deque<RdmaSendOp> sendOps;
    uint32_t sendOp = 0;       ///< cursor: index in sendOps (== size: start a new WQE)
    uint32_t sendPkt = 0;      ///< cursor: packet index within that op
    uint32_t nextNewPsn = 0;   ///< PSN of the next new WQE's first packet
    uint32_t maxSentNext = 0;  ///< one past the highest PSN ever sent
    uint32_t readsOutstanding = 0;
    Time nextTxTime;           ///< rate limiter
    PendingEvent wakeEvent;    ///< rate limiter / RNR wait (cancelled and set per paced packet)
    std::vector<uint8_t> sendBuf; ///< the current WQE's payload (gathered once)
    int32_t sendBufOp = -1;        ///< which sendOps index sendBuf holds

    // ---- requester: end-to-end credits (IBA vol. 1 §9.7.7.2) ----
    uint32_t ssnLast = 0;          ///< SSN of the last message started (0: none yet)
    uint64_t creditSeqSent = 0;    ///< receive-WQE-using messages started
    uint64_t creditSeqRetired = 0; ///< creditSeq of the last message completed
    uint64_t creditLimit = 0;      ///< may start messages with creditSeq <= this
    bool creditUnlimited = false;  ///< the responder advertises "invalid" (code 31)
    bool creditKnown = false;      ///< an ACK has reported credits
    uint32_t creditMsn = 0;        ///< MSN of the ACK the credits came with
    Time creditUpdated;            ///< when that ACK arrived (probe delay)

    // ---- completer ----
    RdmaCompState compState = RdmaCompState::Idle;
    uint32_t unackedPsn = 0;   ///< oldest PSN not yet acknowledged
    uint8_t retryLeft = 0;
    uint8_t rnrRetryLeft = 0;
    PendingEvent retryTimer; ///< asked per ACK whether it is still to run (ArmRetryTimer)
    /// When the retry timer expires. Progress restarts the timer by moving this (ArmRetryTimer)
    /// rather than by cancelling and rescheduling its event: a cancelled event would stay in
    /// the event queue for a whole timeout, one per ACK.
    Time retryDeadline;
    bool retryRestart = false; ///< progress since the timer was armed: next arm restarts it
    uint32_t lastGapRewindPsn = 0xFFFFFFFF;
    Time retryArmedAt;           ///< when retryTimer was started
    uint32_t retryArmedSentEnd = 0; ///< maxSentNext then: older packets have had the whole RTO
    Time lastResponseAt{Time(-1)};  ///< when the last response (ACK, NAK, READ data) arrived

    // ---- selective repeat (RdmaEngine LossRecovery Selective) ----
    RdmaSelectiveRepeat sr;

    // ---- responder ----
    RdmaRespState respState = RdmaRespState::Idle;
    bool respStarted = false;
    uint32_t ePsn = 0;         ///< expected PSN
    uint32_t msn = 0;          ///< message sequence number (IBA vol. 1 §9.7.5.1.2)
    uint8_t lastOpcode = 0;
    bool haveLastOpcode = false;
    bool nakSent = false;      ///< a PSN sequence error NAK is outstanding
    bool haveRecv = false;
    RdmaRecvWqe recv;
    uint64_t recvOffset = 0;
    Ptr<RdmaMr> writeMr;
    uint64_t writeVa = 0;      ///< IOVA of the next byte of the current WRITE
    uint64_t writeRemaining = 0;
    uint32_t writeTotal = 0;
    uint32_t ackPending = 0;   ///< coalesced AckReq packets not yet acknowledged
    PendingEvent ackTimer; ///< coalesced ACK's deadline (cancelled by every ACK sent)
    std::deque<RdmaRespResource> resources;
    bool becnPending = false;
    Time lastCnp{Time(-1)};
    std::deque<RdmaReadJob> readJobs;         ///< READs being answered, oldest first
    std::deque<RdmaHeldResponse> heldResponses; ///< responses behind those READs
    bool readQueued = false;                  ///< in the engine's READ-response list
};

} // namespace ns3

#endif
