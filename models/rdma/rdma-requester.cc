// The requester: turns send WQEs into request packets (IBA vol. 1 §9.7.1 PSNs, §9.7.2
// segmentation, §9.4 operations), under the QP's limits: the window, the rate limiter,
// max_rd_atomic outstanding READs/atomics (§9.5) and fences (§10.8.3.3).
#include "rdma-engine.h"

#include "models/common/event-tail.h"
#include "models/common/sim-clock.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaRequester");

namespace
{
bool
IsReadLike(RdmaWrOpcode op)
{
    return op == RdmaWrOpcode::RDMA_READ || op == RdmaWrOpcode::ATOMIC_CMP_AND_SWP ||
           op == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD;
}

/// Operations that take a receive WQE at the responder, and so an end-to-end credit (IBA
/// vol. 1 §9.7.7.2: SEND and RDMA WRITE with immediate).
bool
UsesRecvWqe(RdmaWrOpcode op)
{
    return op == RdmaWrOpcode::SEND || op == RdmaWrOpcode::SEND_WITH_IMM ||
           op == RdmaWrOpcode::SEND_WITH_INV || op == RdmaWrOpcode::RDMA_WRITE_WITH_IMM;
}

/// The request opcode of packet `index` of `count` of a SEND or RDMA WRITE (IBA vol. 1 §9.2
/// table 36), RC numbering; UC adds its 0x20 prefix.
uint8_t
SegmentOpcode(RdmaWrOpcode op, uint32_t index, uint32_t count)
{
    const bool first = index == 0;
    const bool last = index + 1 == count;
    switch (op)
    {
    case RdmaWrOpcode::SEND:
        return first && last ? IbOpcode::kRcSendOnly
               : first       ? IbOpcode::kRcSendFirst
               : last        ? IbOpcode::kRcSendLast
                             : IbOpcode::kRcSendMiddle;
    case RdmaWrOpcode::SEND_WITH_IMM:
        return first && last ? IbOpcode::kRcSendOnlyWithImm
               : first       ? IbOpcode::kRcSendFirst
               : last        ? IbOpcode::kRcSendLastWithImm
                             : IbOpcode::kRcSendMiddle;
    case RdmaWrOpcode::SEND_WITH_INV:
        return first && last ? IbOpcode::kRcSendOnlyWithInvalidate
               : first       ? IbOpcode::kRcSendFirst
               : last        ? IbOpcode::kRcSendLastWithInvalidate
                             : IbOpcode::kRcSendMiddle;
    case RdmaWrOpcode::RDMA_WRITE:
        return first && last ? IbOpcode::kRcRdmaWriteOnly
               : first       ? IbOpcode::kRcRdmaWriteFirst
               : last        ? IbOpcode::kRcRdmaWriteLast
                             : IbOpcode::kRcRdmaWriteMiddle;
    case RdmaWrOpcode::RDMA_WRITE_WITH_IMM:
        return first && last ? IbOpcode::kRcRdmaWriteOnlyWithImm
               : first       ? IbOpcode::kRcRdmaWriteFirst
               : last        ? IbOpcode::kRcRdmaWriteLastWithImm
                             : IbOpcode::kRcRdmaWriteMiddle;
    default:
        return 0xFF;
    }
}
} // namespace

uint32_t
RdmaEngine::PathMtu(const RdmaQpContext& c) const
{
    const RdmaQpAttr& a = c.qp->GetAttr();
    Ptr<RdmaLinkPort> port = PortOf(a.port_num ? a.port_num : 1);
    const uint32_t portMtu = port ? port->GetMtu() : 256;
    if (c.qp->GetType() == RdmaQpType::UD)
    {
        return portMtu;
    }
    // IBA vol. 1 §9.7.2: packets carry at most the path MTU; a path MTU above the port's is
    // clipped to what the port can carry.
    const uint32_t path = RdmaMtuBytes(a.path_mtu);
    return std::max<uint32_t>(256, std::min(path ? path : 256, portMtu));
}

uint32_t
RdmaEngine::PacketsFor(const RdmaQpContext& c, RdmaWrOpcode op, uint64_t len) const
{
    if (op == RdmaWrOpcode::ATOMIC_CMP_AND_SWP || op == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD)
    {
        return 1;
    }
    const uint32_t mtu = PathMtu(c);
    return len == 0 ? 1 : static_cast<uint32_t>((len + mtu - 1) / mtu);
}

void
RdmaEngine::WakeRequester(uint32_t qpn)
{
    EventTail::Scope scope; // the pump turn it asks for may follow at once
    RdmaQpContext* c = FindContext(qpn);
    if (c && (c->reqState == RdmaReqState::WaitRate || c->reqState == RdmaReqState::RnrWait ||
              c->reqState == RdmaReqState::WaitCredit))
    {
        Kick(*c);
    }
}

bool
RdmaEngine::LocalInvalidate(RdmaQpContext& c, const RdmaSendWqe& wqe)
{
    // IBA vol. 1 §10.6.7 (local invalidate): the WR names a key of a region in the QP's PD that
    // may be invalidated; it sends nothing and completes in send-queue order. Any other key
    // is a local protection error (IBV_WC_LOC_PROT_ERR), which stops the send queue.
    RdmaSendOp op;
    op.opcode = wqe.wr.opcode;
    op.firstPsn = c.nextNewPsn;
    op.npkts = 0;
    op.fullySent = true;
    Ptr<RdmaMr> mr = m_device->LookupRkey(wqe.wr.imm_data); // invalidate_rkey's slot
    if (!mr)
    {
        mr = m_device->LookupLkey(wqe.wr.imm_data);
    }
    if (!mr || mr->GetPd() != c.qp->GetPd() || !mr->Invalidate())
    {
        op.status = RdmaWcStatus::LOC_PROT_ERR;
    }
    c.sendOps.push_back(op);
    c.sendOp = static_cast<uint32_t>(c.sendOps.size());
    c.sendPkt = 0;
    return op.status == RdmaWcStatus::SUCCESS;
}

bool
RdmaEngine::CreditAllows(RdmaQpContext& c)
{
    // IBA vol. 1 §9.7.7.2: the requester starts a message that needs a receive WQE only
    // while the responder's last credit report leaves one for it ...
    if (!m_e2eCredits || c.creditUnlimited || c.creditSeqSent < c.creditLimit)
    {
        return true;
    }
    // ... or, out of credits, as the one message it may send to learn the current count (the
    // responder answers it with an ACK carrying fresh credits, or an RNR NAK). Only while no
    // such message is unanswered, else the answer to that one is what it waits for.
    for (const RdmaSendOp& op : c.sendOps)
    {
        if (op.consumesRecv && op.status == RdmaWcStatus::SUCCESS)
        {
            c.reqState = RdmaReqState::WaitCredit;
            m_counters.creditStalls++;
            return false;
        }
    }
    const Time now = SimClock::Now();
    const Time probeAt = c.creditUpdated + m_creditProbeDelay;
    if (c.creditKnown && probeAt > now)
    {
        // Give receives posted meanwhile a chance to show up in the count (attribute
        // CreditProbeDelay): a probe that finds none costs an RNR NAK and its timer.
        c.reqState = RdmaReqState::WaitCredit;
        m_counters.creditStalls++;
        c.wakeEvent.Cancel();
        c.wakeEvent =
            Simulator::Schedule(probeAt - now, &RdmaEngine::WakeRequester, this, c.qpn);
        return false;
    }
    m_counters.creditProbes++;
    return true;
}

bool
RdmaEngine::StartWqe(RdmaQpContext& c, const RdmaSendWqe& wqe)
{
    RdmaSendOp op;
    op.opcode = wqe.wr.opcode;
    op.length = wqe.length;
    op.readLike = IsReadLike(op.opcode);
    op.firstPsn = c.nextNewPsn;
    op.npkts = PacketsFor(c, op.opcode, op.length);
    // IBA vol. 1 §10.6.3.2 / §11.4.1.1: every local SGE is checked before the WR executes; the
    // READ and atomic targets are written, so they need local write access.
    const bool inlineSend = (wqe.wr.send_flags & RDMA_SEND_INLINE) && !op.readLike;
    if (!inlineSend)
    {
        for (const RdmaSge& sge : wqe.wr.sg_list)
        {
            const RdmaMrCheck chk =
                m_device->CheckLocalAccess(c.qp->GetPd(), sge, op.readLike, nullptr);
            if (chk != RdmaMrCheck::OK)
            {
                op.status = RdmaLocalCheckStatus(chk);
                break;
            }
        }
    }
    if (c.qp->GetType() == RdmaQpType::UD && op.length > PathMtu(c))
    {
        // IBA vol. 1 §9.8.3: a UD message is one packet.
        op.status = RdmaWcStatus::LOC_LEN_ERR;
    }
    if (op.status != RdmaWcStatus::SUCCESS)
    {
        op.npkts = 0;
        op.fullySent = true;
        c.sendOps.push_back(op);
        c.sendOp = static_cast<uint32_t>(c.sendOps.size());
        c.sendPkt = 0;
        return false;
    }
    c.nextNewPsn = RdmaPsnAdd(c.nextNewPsn, op.npkts);
    if (c.qp->GetType() == RdmaQpType::RC)
    {
        // IBA vol. 1 §9.7.7.2: messages are numbered (SSN) as the responder's MSN counts
        // them, so an ACK's MSN says which of them its credit count comes after.
        c.ssnLast = (c.ssnLast + 1) & kRdmaMax24;
        op.ssn = c.ssnLast;
        op.consumesRecv = UsesRecvWqe(op.opcode);
        if (op.consumesRecv)
        {
            c.creditSeqSent++;
        }
        op.creditSeq = c.creditSeqSent;
    }
    if (op.readLike)
    {
        c.readsOutstanding++;
    }
    c.sendOps.push_back(op);
    return true;
}

bool
RdmaEngine::RequesterStep(RdmaQpContext& c)
{
    Ptr<RdmaQp> qp = c.qp;
    const RdmaQpState s = qp->GetState();
    if (c.reqState == RdmaReqState::RnrWait)
    {
        return false; // the RNR timer resumes the requester
    }
    if (s != RdmaQpState::RTS && s != RdmaQpState::SQD)
    {
        c.reqState = s == RdmaQpState::SQE ? RdmaReqState::Error : RdmaReqState::Idle;
        return false;
    }
    Ptr<RdmaQueue<RdmaSendWqe>> sq = qp->GetSendQueue();
    const bool rc = qp->GetType() == RdmaQpType::RC;
    // Selective repeat: a packet known lost goes before any new one (IRN §3.1). The cursor
    // points at it for this one packet and comes back to where it was afterwards.
    struct CursorRestore
    {
        RdmaQpContext* c = nullptr;
        uint32_t op = 0;
        uint32_t pkt = 0;

        ~CursorRestore()
        {
            if (c)
            {
                c->sendOp = op;
                c->sendPkt = pkt;
            }
        }
    } restore;
    uint32_t resendCount = 0;
    const uint32_t savedOp = c.sendOp;
    const uint32_t savedPkt = c.sendPkt;
    const bool resend = rc && Selective() && PickSelectiveResend(c, resendCount);
    if (resend)
    {
        restore.c = &c;
        restore.op = savedOp;
        restore.pkt = savedPkt;
    }
    if (!resend && c.sendOp >= c.sendOps.size())
    {
        if (!c.sendOps.empty() && c.sendOps.back().status != RdmaWcStatus::SUCCESS)
        {
            c.reqState = RdmaReqState::Error; // a local error waits for its turn to complete
            return false;
        }
        if (c.sendOp >= sq->GetSize() || s == RdmaQpState::SQD)
        {
            // IBA vol. 1 §10.3.1 (SQ Drain): no new WQE starts in SQD.
            c.reqState = RdmaReqState::Idle;
            return false;
        }
        const RdmaSendWqe& wqe = sq->At(c.sendOp);
        const bool readLike = IsReadLike(wqe.wr.opcode);
        if ((wqe.wr.send_flags & RDMA_SEND_FENCE) && c.readsOutstanding > 0)
        {
            c.reqState = RdmaReqState::WaitFence;
            return false;
        }
        // IBA vol. 1 §9.5: at most max_rd_atomic READs and atomics outstanding (a QP set up
        // with 0 is given 1, as it could not issue any otherwise).
        const uint32_t maxRd = std::max<uint32_t>(1, qp->GetAttr().max_rd_atomic);
        if (rc && readLike && c.readsOutstanding >= maxRd)
        {
            c.reqState = RdmaReqState::WaitRdAtomic;
            return false;
        }
        if (wqe.wr.opcode == RdmaWrOpcode::LOCAL_INV)
        {
            const bool ok = LocalInvalidate(c, wqe);
            CompleteInOrder(c);
            return ok && !c.dead; // after a failure the send queue stops (error above)
        }
        if (rc && UsesRecvWqe(wqe.wr.opcode) && !CreditAllows(c))
        {
            return false;
        }
        if (!StartWqe(c, wqe))
        {
            CompleteInOrder(c);
            return false;
        }
    }
    RdmaSendOp& op = c.sendOps[c.sendOp];
    const RdmaSendWqe& wqe = sq->At(c.sendOp);
    const uint32_t psn = RdmaPsnAdd(op.firstPsn, c.sendPkt);
    const uint32_t mtu = PathMtu(c);
    if (rc && !resend)
    {
        uint64_t window = m_windowBytes;
        const uint64_t ccWindow = m_cc->GetWindow(c.qpn);
        if (ccWindow && (!window || ccWindow < window))
        {
            window = ccWindow;
        }
        const int32_t inFlight = RdmaPsnDiff(psn, c.unackedPsn);
        if (window && inFlight > 0 && uint64_t(inFlight) * mtu >= window)
        {
            c.reqState = RdmaReqState::WaitWindow;
            return false;
        }
        const uint32_t cap = InflightCap();
        if (cap && inFlight > 0 && uint32_t(inFlight) >= cap)
        {
            c.reqState = RdmaReqState::WaitWindow; // IRN's BDP cap
            return false;
        }
    }
    const Time now = SimClock::Now();
    if (c.nextTxTime > now)
    {
        c.reqState = RdmaReqState::WaitRate;
        c.wakeEvent.Cancel();
        c.wakeEvent = Simulator::Schedule(c.nextTxTime - now, &RdmaEngine::WakeRequester, this,
                                          c.qpn);
        return false;
    }
    const RdmaAhAttr av = qp->GetType() == RdmaQpType::UD ? wqe.ah : ReplyAv(c);
    Ptr<RdmaLinkPort> port = PortOf(av.port_num ? av.port_num : 1);
    if (!port || !port->CanSend(av.sl))
    {
        c.reqState = RdmaReqState::WaitPort;
        return false;
    }
    const uint64_t before = m_counters.bytesSent;
    if (qp->GetType() == RdmaQpType::UD)
    {
        SendUdPacket(c, wqe);
    }
    else
    {
        SendRequestPacket(c, wqe, op);
        if (resend)
        {
            c.sr.MarkResent(psn, resendCount);
        }
    }
    // Rate limiter: the QP's rate_limit (kbit/s, ibv_modify_qp(3)) and congestion control's
    // rate, whichever is lower; the next packet may leave when this one would have at that rate.
    uint64_t rate = uint64_t(qp->GetAttr().rate_limit) * 1000;
    const uint64_t ccRate = m_cc->GetRate(c.qpn);
    if (ccRate && (!rate || ccRate < rate))
    {
        rate = ccRate;
    }
    Time gap(0);
    if (rate)
    {
        const uint64_t bits =
            uint64_t(port->GetPacedBytes(
                static_cast<uint32_t>(m_counters.bytesSent - before), av)) * 8;
        gap = PicoSeconds(static_cast<int64_t>(bits * 1e12 / double(rate)));
    }
    // A delay-based policy (IBA annex A10's injection rate delay) may ask for a longer gap.
    const Time ccGap =
        m_cc->GetPacketGap(c.qpn, static_cast<uint32_t>(m_counters.bytesSent - before));
    if (ccGap > gap)
    {
        gap = ccGap;
    }
    if (gap.IsStrictlyPositive())
    {
        c.nextTxTime = std::max(c.nextTxTime, now) + gap;
    }
    if (c.dead)
    {
        return false;
    }
    if (rc)
    {
        ArmRetryTimer(c);
    }
    else
    {
        CompleteInOrder(c); // UC/UD WQEs complete once sent (IBA vol. 1 §9.8.1)
        if (c.dead)
        {
            return false;
        }
    }
    return true;
}

void
RdmaEngine::SendRequestPacket(RdmaQpContext& c, const RdmaSendWqe& wqe, RdmaSendOp& op)
{
    const RdmaQpAttr& a = c.qp->GetAttr();
    const bool uc = c.qp->GetType() == RdmaQpType::UC;
    const uint32_t mtu = PathMtu(c);
    const uint32_t idx = c.sendPkt;
    const uint32_t psn = RdmaPsnAdd(op.firstPsn, idx);
    const bool retrans = RdmaPsnDiff(psn, c.maxSentNext) < 0;
    IbTransportHeaders h;
    h.bth.SetPkey(QpPkey(*c.qp));
    h.bth.SetDestQp(a.dest_qp_num);
    h.bth.SetPsn(psn);
    // The packet's payloadBytes of data: in `payload`, or, when it is left empty, zeros (memory
    // that reads as zeros, or no data at all).
    std::vector<uint8_t> payload;
    uint32_t payloadBytes = 0;
    uint32_t sentPkts = 1;
    const uint64_t offset = uint64_t(idx) * mtu;
    switch (op.opcode)
    {
    case RdmaWrOpcode::RDMA_READ: {
        // One request covers the rest of the READ; a retry from response packet idx asks for
        // the remaining bytes only (IBA vol. 1 §9.7.4.1.3: PSN, VA and length move together).
        h.bth.SetOpCode(IbOpcode::kRcRdmaReadRequest);
        IbRethHeader reth;
        reth.SetVirtualAddress(wqe.wr.rdma.remote_addr + offset);
        reth.SetRkey(wqe.wr.rdma.rkey);
        reth.SetDmaLength(static_cast<uint32_t>(op.length - std::min(op.length, offset)));
        h.reth = reth;
        h.bth.SetAckReq(true);
        sentPkts = op.npkts - idx;
        break;
    }
    case RdmaWrOpcode::ATOMIC_CMP_AND_SWP:
    case RdmaWrOpcode::ATOMIC_FETCH_AND_ADD: {
        const bool cas = op.opcode == RdmaWrOpcode::ATOMIC_CMP_AND_SWP;
        h.bth.SetOpCode(cas ? IbOpcode::kRcCompareSwap : IbOpcode::kRcFetchAdd);
        IbAtomicEthHeader ae;
        ae.SetVirtualAddress(wqe.wr.atomic.remote_addr);
        ae.SetRkey(wqe.wr.atomic.rkey);
        ae.SetSwapAddData(cas ? wqe.wr.atomic.swap : wqe.wr.atomic.compare_add);
        ae.SetCompareData(cas ? wqe.wr.atomic.compare_add : 0);
        h.atomicEth = ae;
        h.bth.SetAckReq(true);
        break;
    }
    default: {
        uint8_t opcode = SegmentOpcode(op.opcode, idx, op.npkts);
        if (uc)
        {
            opcode |= IbOpcode::kUcPrefix;
        }
        h.bth.SetOpCode(opcode);
        const IbOpcodeInfo* info = IbOpcodeLookup(opcode);
        const uint64_t n = std::min<uint64_t>(mtu, op.length - std::min(op.length, offset));
        payloadBytes = static_cast<uint32_t>(n);
        if (!wqe.inlineData.empty())
        {
            payload.resize(n);
            std::copy(wqe.inlineData.begin() + offset, wqe.inlineData.begin() + offset + n,
                      payload.begin());
        }
        else if (n)
        {
            // Memory that reads as zeros (a load experiment's) is checked, not copied: the
            // payload goes as a zero tail (BuildPacket), a kilobyte a packet never built.
            const RdmaWcStatus st =
                GatherSglUnlessZeros(c.qp->GetPd(), wqe.wr.sg_list, offset, n, payload);
            if (st != RdmaWcStatus::SUCCESS)
            {
                // The memory went away under a posted WR (MR deregistered): a local error
                // that completes the WR once the earlier ones have (IBA vol. 1 §10.8.3).
                op.status = st;
                op.fullySent = true;
                if (op.readLike && c.readsOutstanding)
                {
                    c.readsOutstanding--;
                }
                c.sendOp++;
                c.sendPkt = 0;
                return;
            }
        }
        if (info->Carries(IbExtHeader::Reth))
        {
            IbRethHeader reth;
            reth.SetVirtualAddress(wqe.wr.rdma.remote_addr);
            reth.SetRkey(wqe.wr.rdma.rkey);
            reth.SetDmaLength(static_cast<uint32_t>(op.length));
            h.reth = reth;
        }
        if (info->Carries(IbExtHeader::ImmDt))
        {
            IbImmDtHeader imm;
            imm.SetImmediateData(wqe.wr.imm_data);
            h.immDt = imm;
        }
        if (info->Carries(IbExtHeader::Ieth))
        {
            // The R_Key to invalidate travels in imm_data's slot, as invalidate_rkey shares
            // a union with imm_data in struct ibv_send_wr.
            IbIethHeader ieth;
            ieth.SetRkey(wqe.wr.imm_data);
            h.ieth = ieth;
        }
        const bool endOfMessage = info->Has(IbOpFlag::kLast) || info->Has(IbOpFlag::kOnly);
        if (endOfMessage && (wqe.wr.send_flags & RDMA_SEND_SOLICITED))
        {
            h.bth.SetSe(true); // IBA vol. 1 §9.2: SE on the last packet of the message
        }
        if (!uc)
        {
            // A selective resend asks for an ACK: it may be the only packet sent for a while,
            // and a duplicate without AckReq would go unanswered.
            h.bth.SetAckReq(endOfMessage ||
                            (m_ackReqEvery && (psn % m_ackReqEvery) == m_ackReqEvery - 1) ||
                            (retrans && Selective()));
        }
        break;
    }
    }
    const uint8_t opcode = h.bth.GetOpCode();
    uint32_t zeroTail = 0;
    std::vector<uint8_t> bytes =
        BuildPacket(h, payload.empty() ? nullptr : payload.data(), payloadBytes, &zeroTail);
    if (op.firstSent.IsZero() && idx == 0)
    {
        op.firstSent = SimClock::Now();
    }
    c.sendPkt += sentPkts;
    if (c.sendPkt >= op.npkts)
    {
        op.fullySent = true;
        c.sendOp++;
        c.sendPkt = 0;
    }
    const uint32_t after = RdmaPsnAdd(psn, sentPkts);
    if (RdmaPsnDiff(after, c.maxSentNext) > 0)
    {
        c.maxSentNext = after;
    }
    if (retrans)
    {
        m_retransmitTrace(c.qpn, psn);
    }
    Transmit(c, std::move(bytes), ReplyAv(c), opcode, psn, retrans, zeroTail);
}

void
RdmaEngine::SendUdPacket(RdmaQpContext& c, const RdmaSendWqe& wqe)
{
    RdmaSendOp& op = c.sendOps[c.sendOp];
    IbTransportHeaders h;
    const bool imm = wqe.wr.opcode == RdmaWrOpcode::SEND_WITH_IMM;
    h.bth.SetOpCode(imm ? IbOpcode::kUdSendOnlyWithImm : IbOpcode::kUdSendOnly);
    h.bth.SetPkey(QpPkey(*c.qp));
    h.bth.SetDestQp(wqe.wr.ud.remote_qpn);
    h.bth.SetPsn(op.firstPsn);
    h.bth.SetSe((wqe.wr.send_flags & RDMA_SEND_SOLICITED) != 0);
    IbDethHeader deth;
    // IBA vol. 1 §10.2.5: a Q_Key with the high bit set in the WR means "use the QP's own".
    deth.SetQkey((wqe.wr.ud.remote_qkey & 0x80000000u) ? c.qp->GetAttr().qkey
                                                         : wqe.wr.ud.remote_qkey);
    deth.SetSrcQp(c.qpn);
    h.deth = deth;
    if (imm)
    {
        IbImmDtHeader i;
        i.SetImmediateData(wqe.wr.imm_data);
        h.immDt = i;
    }
    std::vector<uint8_t> payload(op.length);
    if (!wqe.inlineData.empty())
    {
        payload = wqe.inlineData;
    }
    else if (op.length)
    {
        const RdmaWcStatus st =
            GatherSgl(c.qp->GetPd(), wqe.wr.sg_list, 0, payload.data(), op.length);
        if (st != RdmaWcStatus::SUCCESS)
        {
            op.status = st;
            op.fullySent = true;
            c.sendOp++;
            return;
        }
    }
    std::vector<uint8_t> bytes =
        BuildPacket(h, payload.data(), static_cast<uint32_t>(payload.size()));
    op.fullySent = true;
    c.sendOp++;
    c.sendPkt = 0;
    c.maxSentNext = c.nextNewPsn;
    RdmaAhAttr av = wqe.ah;
    if (av.port_num == 0)
    {
        av.port_num = c.qp->GetAttr().port_num ? c.qp->GetAttr().port_num : 1;
    }
    Transmit(c, std::move(bytes), av, h.bth.GetOpCode(), op.firstPsn, false);
}

} // namespace ns3
