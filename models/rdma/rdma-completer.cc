// The completer: takes an RC requester's responses (ACK, NAK, RNR NAK, READ responses, atomic
// ACKs), places READ and atomic results, retires WQEs in order with their ibv_wc status, and
// recovers from losses: the local ACK timeout, PSN sequence error NAKs and RNR NAKs send the
// requester back to the oldest unacknowledged PSN (IBA vol. 1 §9.7.5.1, §9.7.5.2, §9.9.2).
#include "rdma-engine.h"
#include "models/common/sim-clock.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaCompleter");

namespace
{
/// The local ACK timeout: 4.096 us x 2^timeout (IBA vol. 1 §9.7.6.1.3); 0 means infinite.
Time
LocalAckTimeout(uint8_t code)
{
    return NanoSeconds(static_cast<int64_t>(4096) << std::min<uint8_t>(code, 31));
}

/// The completion status of a NAK code (IBA vol. 1 §9.9.2.1, table 59; ibv_wc_status).
RdmaWcStatus
NakStatus(IbNakCode code)
{
    switch (code)
    {
    case IbNakCode::InvalidRequest:
        return RdmaWcStatus::REM_INV_REQ_ERR;
    case IbNakCode::RemoteAccessError:
        return RdmaWcStatus::REM_ACCESS_ERR;
    case IbNakCode::RemoteOperationalError:
        return RdmaWcStatus::REM_OP_ERR;
    case IbNakCode::InvalidRdRequest:
        return RdmaWcStatus::REM_INV_RD_REQ_ERR;
    default:
        return RdmaWcStatus::BAD_RESP_ERR; // a reserved code is a malformed response
    }
}
} // namespace

void
RdmaEngine::ArmRetryTimer(RdmaQpContext& c)
{
    const uint8_t code = c.qp->GetAttr().timeout;
    if (RdmaPsnDiff(c.maxSentNext, c.unackedPsn) <= 0)
    {
        c.retryTimer.Cancel();
        c.compState = RdmaCompState::Idle;
        return;
    }
    c.compState = RdmaCompState::WaitAck;
    // The RTO attributes, when set, replace the local ACK timeout; else timeout 0 waits
    // forever (IBA vol. 1 §9.7.6.1.3).
    const Time t = m_rtoHigh.IsStrictlyPositive() ? RetryTimeout(c)
                   : code == 0                    ? Time(0)
                                                  : LocalAckTimeout(code);
    if (t.IsZero())
    {
        return;
    }
    if (c.retryTimer.IsRunning())
    {
        if (!c.retryRestart)
        {
            return;
        }
        // Restarted by progress: the expiry a cancel and a fresh schedule would give. The
        // pending event runs on to it (OnRetryTimeout) unless the new expiry is earlier than
        // the event (RTO_low after RTO_high): then it is rescheduled.
        c.retryRestart = false;
        c.retryArmedAt = SimClock::Now();
        c.retryArmedSentEnd = c.maxSentNext;
        c.retryDeadline = SimClock::Now() + t;
        if (c.retryDeadline >= TimeStep(c.retryTimer.GetTs()))
        {
            return;
        }
        c.retryTimer.Cancel();
    }
    c.retryRestart = false;
    c.retryArmedAt = SimClock::Now();
    c.retryArmedSentEnd = c.maxSentNext;
    c.retryDeadline = SimClock::Now() + t;
    c.retryTimer = Simulator::Schedule(t, &RdmaEngine::OnRetryTimeout, this, c.qpn);
}

void
RdmaEngine::OnRetryTimeout(uint32_t qpn)
{
    RdmaQpContext* c = FindContext(qpn);
    if (c && c->retryRestart)
    {
        c->retryRestart = false; // stopped by progress and not re-armed: a cancelled timer
        return;
    }
    if (c && SimClock::Now() < c->retryDeadline)
    {
        // Restarted since this event was scheduled: not expired yet.
        c->retryTimer = Simulator::Schedule(c->retryDeadline - SimClock::Now(),
                                            &RdmaEngine::OnRetryTimeout,
                                            this,
                                            qpn);
        return;
    }
    if (!c || c->reqState == RdmaReqState::RnrWait ||
        RdmaPsnDiff(c->maxSentNext, c->unackedPsn) <= 0)
    {
        return;
    }
    if (ExtendRto(*c))
    {
        return;
    }
    m_counters.timeouts++;
    m_timeoutTrace(qpn, c->unackedPsn);
    NS_LOG_INFO("QP " << qpn << ": local ACK timeout at PSN " << c->unackedPsn << ", "
                      << int(c->retryLeft) << " retries left");
    // IBA vol. 1 §9.7.6.1.3 / §9.9.2.3: retry_cnt retries, then the WR fails.
    if (c->retryLeft == 0)
    {
        FailHead(*c, RdmaWcStatus::RETRY_EXC_ERR);
        return;
    }
    c->retryLeft--;
    if (Selective())
    {
        SelectiveTimeout(*c);
        return;
    }
    Rewind(*c, c->unackedPsn);
}

void
RdmaEngine::OnRnrTimerExpired(uint32_t qpn, uint32_t psn)
{
    RdmaQpContext* c = FindContext(qpn);
    if (!c || c->reqState != RdmaReqState::RnrWait)
    {
        return;
    }
    c->reqState = RdmaReqState::Idle;
    // The refused PSN, or an earlier one if a READ before it still misses responses.
    Rewind(*c, RdmaPsnDiff(c->unackedPsn, psn) < 0 ? c->unackedPsn : psn);
}

void
RdmaEngine::Rewind(RdmaQpContext& c, uint32_t psn)
{
    for (uint32_t i = 0; i < c.sendOps.size(); ++i)
    {
        const RdmaSendOp& op = c.sendOps[i];
        if (op.status != RdmaWcStatus::SUCCESS || op.npkts == 0)
        {
            continue;
        }
        const int32_t d = RdmaPsnDiff(psn, op.firstPsn);
        if (d >= 0 && d < static_cast<int32_t>(op.npkts))
        {
            c.sendOp = i;
            c.sendPkt = static_cast<uint32_t>(d);
            if (op.readLike && op.opcode != RdmaWrOpcode::RDMA_READ)
            {
                c.sendPkt = 0;
            }
            m_retransmitTrace(c.qpn, psn);
            c.retryTimer.Cancel();
            if (c.reqState != RdmaReqState::RnrWait)
            {
                Kick(c);
            }
            return;
        }
    }
}

void
RdmaEngine::FailHead(RdmaQpContext& c, RdmaWcStatus status)
{
    Ptr<RdmaQp> qp = c.qp;
    Ptr<RdmaQueue<RdmaSendWqe>> sq = qp->GetSendQueue();
    NS_LOG_INFO("QP " << c.qpn << ": WR fails with " << RdmaWcStatusStr(status));
    c.retryTimer.Cancel();
    c.wakeEvent.Cancel();
    if (!sq->IsEmpty())
    {
        RdmaWc wc;
        wc.wr_id = sq->At(0).wr.wr_id;
        wc.opcode = RdmaWcOpcodeOf(sq->At(0).wr.opcode);
        wc.status = status;
        wc.qp_num = c.qpn;
        sq->Pop();
        if (!c.sendOps.empty())
        {
            c.creditSeqRetired = std::max(c.creditSeqRetired, c.sendOps.front().creditSeq);
            c.sendOps.pop_front();
        }
        PushSendWc(c, wc, true);
    }
    if (c.dead)
    {
        return;
    }
    // IBA vol. 1 §10.3.1: RC goes to Error, UC/UD to Send Queue Error; the QP flushes the rest.
    qp->ReportSendQueueError();
}

void
RdmaEngine::AckThrough(RdmaQpContext& c, uint32_t psnEx, Time now)
{
    if (RdmaPsnDiff(psnEx, c.maxSentNext) > 0)
    {
        psnEx = c.maxSentNext;
    }
    // An acknowledgment beyond a READ or atomic whose response has not (fully) arrived says
    // those responses were lost: acknowledge up to them and ask again (IBA vol. 1 §9.7.5.1.5,
    // implied NAK).
    bool lost = false;
    for (const RdmaSendOp& op : c.sendOps)
    {
        if (!op.readLike || op.done || op.status != RdmaWcStatus::SUCCESS)
        {
            continue;
        }
        const uint32_t missing = RdmaPsnAdd(op.firstPsn, op.respNext);
        if (RdmaPsnDiff(psnEx, missing) > 0)
        {
            psnEx = missing;
            lost = true;
        }
        break;
    }
    const int32_t acked = RdmaPsnDiff(psnEx, c.unackedPsn);
    if (acked > 0)
    {
        c.unackedPsn = psnEx;
        // Forward progress restores the retry budgets (IBA vol. 1 §9.7.6.1.3).
        c.retryLeft = c.qp->GetAttr().retry_cnt;
        c.rnrRetryLeft = c.qp->GetAttr().rnr_retry;
        c.retryRestart = true; // the timer restarts at ArmRetryTimer below (or stops)
        Time rtt;
        if (!c.sendOps.empty() && !c.sendOps.front().firstSent.IsZero())
        {
            rtt = now - c.sendOps.front().firstSent;
        }
        m_cc->OnAck(c.qpn, static_cast<uint32_t>(acked), rtt);
    }
    if (m_rxInt)
    {
        // The echoed INT of this acknowledgment (HPCC); once per received ACK.
        m_cc->OnIntAck(c.qpn, psnEx, c.maxSentNext, *m_rxInt);
        m_rxInt = nullptr;
    }
    if (lost && RdmaPsnDiff(c.maxSentNext, psnEx) > 0 && c.lastGapRewindPsn != psnEx)
    {
        c.lastGapRewindPsn = psnEx;
        Rewind(c, psnEx);
    }
}

void
RdmaEngine::ApplyCredits(RdmaQpContext& c, const IbAethHeader& aeth)
{
    if (!m_e2eCredits)
    {
        return;
    }
    const uint32_t msn = aeth.GetMsn();
    if (c.creditKnown && RdmaPsnDiff(msn, c.creditMsn) < 0)
    {
        return; // an older report than the one held (MSNs are 24-bit serial numbers)
    }
    // IBA vol. 1 §9.7.7.2: the credit count is the receive WQEs the responder holds beyond
    // the message numbered MSN; the requester may start receive-using messages up to that many
    // past the last one at or before MSN.
    uint64_t through = c.creditSeqRetired;
    for (const RdmaSendOp& op : c.sendOps)
    {
        if (op.status == RdmaWcStatus::SUCCESS && op.npkts != 0 && RdmaPsnDiff(op.ssn, msn) <= 0)
        {
            through = std::max(through, op.creditSeq);
        }
    }
    c.creditKnown = true;
    c.creditMsn = msn;
    c.creditUpdated = SimClock::Now();
    const uint32_t credits = aeth.GetCredits();
    c.creditUnlimited = credits == IbAethHeader::kUnlimitedCredits;
    c.creditLimit = c.creditUnlimited ? 0 : through + credits;
    m_creditTrace(c.qpn, msn, credits);
    if (c.reqState == RdmaReqState::WaitCredit)
    {
        c.wakeEvent.Cancel();
        Kick(c);
    }
}

void
RdmaEngine::CompleteInOrder(RdmaQpContext& c)
{
    Ptr<RdmaQp> qp = c.qp;
    Ptr<RdmaQueue<RdmaSendWqe>> sq = qp->GetSendQueue();
    const bool rc = qp->GetType() == RdmaQpType::RC;
    while (!c.sendOps.empty() && !sq->IsEmpty())
    {
        const RdmaSendOp& op = c.sendOps.front();
        if (!op.fullySent)
        {
            break;
        }
        if (op.status != RdmaWcStatus::SUCCESS)
        {
            FailHead(c, op.status);
            return;
        }
        if (rc)
        {
            if (op.readLike ? !op.done : RdmaPsnDiff(op.LastPsn(), c.unackedPsn) >= 0)
            {
                break;
            }
        }
        const RdmaSendWqe& wqe = sq->At(0);
        RdmaWc wc;
        wc.wr_id = wqe.wr.wr_id;
        wc.status = RdmaWcStatus::SUCCESS;
        wc.opcode = RdmaWcOpcodeOf(wqe.wr.opcode);
        wc.qp_num = c.qpn;
        wc.byte_len = static_cast<uint32_t>(op.length);
        const bool signaled = wqe.signaled;
        c.creditSeqRetired = std::max(c.creditSeqRetired, op.creditSeq);
        c.sendOps.pop_front();
        sq->Pop();
        if (c.sendOp > 0)
        {
            c.sendOp--;
        }
        else
        {
            // A late ACK completed the WR the requester was resending: go on with the next.
            c.sendPkt = 0;
        }
        PushSendWc(c, wc, signaled);
        if (c.dead)
        {
            return;
        }
    }
    if (rc)
    {
        ArmRetryTimer(c);
    }
    if (qp->GetState() == RdmaQpState::SQD && c.sendOps.empty())
    {
        qp->NotifySqDrained();
    }
    const RdmaReqState s = c.reqState;
    if (s == RdmaReqState::WaitWindow || s == RdmaReqState::WaitRdAtomic ||
        s == RdmaReqState::WaitFence || s == RdmaReqState::WaitCredit ||
        (s == RdmaReqState::Idle && c.sendOp < sq->GetSize()))
    {
        Kick(c);
    }
}

void
RdmaEngine::CompleterReceive(RdmaQpContext& c, const IbTransportHeaders& h,
                             const uint8_t* payload)
{
    if (c.qp->GetType() != RdmaQpType::RC || c.sendOps.empty())
    {
        Drop(c.qpn, RdmaDropReason::UnexpectedResponse);
        return;
    }
    const uint32_t psn = h.bth.GetPsn();
    const uint8_t opcode = h.bth.GetOpCode();
    const Time now = SimClock::Now();
    // A response for a PSN never sent is not ours (IBA vol. 1 §9.7.5.1.1: "ghost" responses
    // are dropped).
    if (RdmaPsnDiff(psn, c.maxSentNext) >= 0)
    {
        Drop(c.qpn, RdmaDropReason::UnexpectedResponse);
        return;
    }
    if (h.aeth && h.aeth->GetKind() == IbAethKind::Ack)
    {
        ApplyCredits(c, *h.aeth);
    }
    if (h.info->Has(IbOpFlag::kRead) || opcode == IbOpcode::kRcAtomicAcknowledge)
    {
        // Find the READ / atomic this response belongs to.
        RdmaSendOp* op = nullptr;
        uint32_t index = 0;
        for (uint32_t i = 0; i < c.sendOps.size(); ++i)
        {
            RdmaSendOp& o = c.sendOps[i];
            const int32_t d = RdmaPsnDiff(psn, o.firstPsn);
            if (o.readLike && o.status == RdmaWcStatus::SUCCESS && d >= 0 &&
                d < static_cast<int32_t>(o.npkts))
            {
                op = &o;
                index = i;
                break;
            }
        }
        const bool atomicAck = opcode == IbOpcode::kRcAtomicAcknowledge;
        if (!op || atomicAck != (op->opcode != RdmaWrOpcode::RDMA_READ))
        {
            Drop(c.qpn, RdmaDropReason::UnexpectedResponse);
            return;
        }
        if (op->done)
        {
            Drop(c.qpn, RdmaDropReason::Duplicate);
            return;
        }
        // Responses arrive in PSN order: while an earlier READ/atomic still misses its
        // response, this one cannot be taken (its own is lost; IBA vol. 1 §9.7.5.1.5). Ask
        // again from the missing PSN; the responder still holds that request's resource
        // because at most max_rd_atomic are outstanding.
        for (uint32_t i = 0; i < index; ++i)
        {
            const RdmaSendOp& e = c.sendOps[i];
            if (e.readLike && !e.done && e.status == RdmaWcStatus::SUCCESS)
            {
                Drop(c.qpn, RdmaDropReason::OutOfSequence);
                AckThrough(c, psn, now);
                return;
            }
        }
        const uint32_t expected = RdmaPsnAdd(op->firstPsn, op->respNext);
        const int32_t gap = RdmaPsnDiff(psn, expected);
        if (gap != 0)
        {
            Drop(c.qpn, gap < 0 ? RdmaDropReason::Duplicate : RdmaDropReason::OutOfSequence);
            if (gap > 0 && c.lastGapRewindPsn != expected)
            {
                // A READ response went missing: ask again from it once (IBA vol. 1
                // §9.7.5.1.5) rather than wait for the timeout.
                c.lastGapRewindPsn = expected;
                AckThrough(c, expected, now);
                Rewind(c, expected);
            }
            return;
        }
        const RdmaSendWqe& wqe = c.qp->GetSendQueue()->At(index);
        RdmaWcStatus st = RdmaWcStatus::SUCCESS;
        if (atomicAck)
        {
            // The original remote value lands in the local buffer as the responder's host
            // stores it (the model's memories are little-endian, like x86 hosts).
            uint64_t orig = h.atomicAckEth->GetOriginalRemoteData();
            uint8_t bytes[8];
            std::memcpy(bytes, &orig, 8);
            st = ScatterSgl(c.qp->GetPd(), wqe.wr.sg_list, 0, bytes, 8);
        }
        else
        {
            const uint32_t mtu = PathMtu(c);
            const uint64_t offset = uint64_t(op->respNext) * mtu;
            const uint64_t left = op->length - std::min(op->length, offset);
            const uint64_t want = std::min<uint64_t>(mtu, left);
            if (h.payloadLength != want)
            {
                // IBA vol. 1 §9.7.5.1.3: a READ response of the wrong length is a bad response.
                FailHead(c, RdmaWcStatus::BAD_RESP_ERR);
                return;
            }
            if (want)
            {
                st = ScatterSgl(c.qp->GetPd(), wqe.wr.sg_list, offset, payload, want);
            }
        }
        if (st != RdmaWcStatus::SUCCESS)
        {
            op->status = st;
            op->done = true;
        }
        op->respNext++;
        if (atomicAck || op->respNext >= op->npkts)
        {
            op->done = true;
            if (c.readsOutstanding)
            {
                c.readsOutstanding--;
            }
        }
        AckThrough(c, RdmaPsnAdd(psn, 1), now);
        CompleteInOrder(c);
        return;
    }
    if (opcode != IbOpcode::kRcAcknowledge || !h.aeth)
    {
        Drop(c.qpn, RdmaDropReason::UnexpectedResponse);
        return;
    }
    const IbAethHeader& aeth = *h.aeth;
    switch (aeth.GetKind())
    {
    case IbAethKind::Ack:
        if (RdmaPsnDiff(RdmaPsnAdd(psn, 1), c.unackedPsn) <= 0)
        {
            Drop(c.qpn, RdmaDropReason::Duplicate); // an old, coalesced-over ACK
            return;
        }
        AckThrough(c, RdmaPsnAdd(psn, 1), now);
        CompleteInOrder(c);
        return;
    case IbAethKind::RnrNak: {
        m_counters.rnrNaksReceived++;
        m_nakRxTrace(c.qpn, aeth.GetSyndrome(), psn);
        AckThrough(c, psn, now);
        CompleteInOrder(c);
        if (c.dead)
        {
            return;
        }
        // IBA vol. 1 §9.7.5.2.8: retry after the timer, at most rnr_retry times (7: forever).
        const uint8_t rnrRetry = c.qp->GetAttr().rnr_retry;
        if (rnrRetry != 7)
        {
            if (c.rnrRetryLeft == 0)
            {
                FailHead(c, RdmaWcStatus::RNR_RETRY_EXC_ERR);
                return;
            }
            c.rnrRetryLeft--;
        }
        c.retryTimer.Cancel();
        c.reqState = RdmaReqState::RnrWait;
        c.wakeEvent.Cancel();
        c.wakeEvent = Simulator::Schedule(aeth.GetRnrDelay(), &RdmaEngine::OnRnrTimerExpired,
                                          this, c.qpn, psn);
        return;
    }
    case IbAethKind::Nak: {
        m_counters.naksReceived++;
        m_nakRxTrace(c.qpn, aeth.GetSyndrome(), psn);
        AckThrough(c, psn, now);
        CompleteInOrder(c);
        if (c.dead)
        {
            return;
        }
        if (aeth.GetNakCode() == IbNakCode::PsnSequenceError)
        {
            // IBA vol. 1 §9.7.5.2.2: resend from the PSN the responder expects; it counts
            // against retry_cnt like a timeout.
            if (c.retryLeft == 0)
            {
                FailHead(c, RdmaWcStatus::RETRY_EXC_ERR);
                return;
            }
            c.retryLeft--;
            // Normally the NAK's PSN; earlier when a READ before it still misses responses.
            Rewind(c, c.unackedPsn);
            return;
        }
        FailHead(c, NakStatus(aeth.GetNakCode()));
        return;
    }
    default:
        Drop(c.qpn, RdmaDropReason::UnexpectedResponse);
        return;
    }
}

} // namespace ns3
