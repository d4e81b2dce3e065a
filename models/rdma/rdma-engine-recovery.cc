// Loss-recovery options beside IBA's go-back-N: a retransmission timeout in time units with
// IRN's two values (RTO_low while few packets are in flight, RTO_high otherwise), and IRN-style
// selective repeat (Mittal et al., SIGCOMM 2018 §3.1-3.2): the responder keeps request packets
// that arrive after a gap and answers each with a NAK carrying both the cumulative
// acknowledgment (BTH PSN) and the PSN it got (a SACK extension after the AETH); the requester
// resends only what those SACKs show missing, before any new packet, and caps its packets in
// flight (IRN's BDP cap) since without PFC nothing else bounds them.
#include "rdma-engine.h"
#include "models/common/sim-clock.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaEngineRecovery");

// ---- timeout -------------------------------------------------------------------------------

Time
RdmaEngine::RetryTimeout(const RdmaQpContext& c) const
{
    // IRN §3.2: RTO_low when at most N packets are in flight (a tail loss among few packets
    // leaves no later packet to trigger a NAK, so waiting long costs most), else RTO_high.
    const int32_t inFlight = RdmaPsnDiff(c.maxSentNext, c.unackedPsn);
    if (m_rtoLow.IsStrictlyPositive() && inFlight <= static_cast<int32_t>(m_rtoLowPackets))
    {
        return m_rtoLow;
    }
    return m_rtoHigh;
}

bool
RdmaEngine::ExtendRto(RdmaQpContext& c)
{
    if (!m_rtoHigh.IsStrictlyPositive() || !m_rtoLow.IsStrictlyPositive() ||
        m_rtoLow >= m_rtoHigh)
    {
        return false;
    }
    // The timer was started with RTO_low (few packets in flight then); more were sent since,
    // so the rule asks for RTO_high from the same start.
    const int32_t inFlight = RdmaPsnDiff(c.maxSentNext, c.unackedPsn);
    const Time ran = SimClock::Now() - c.retryArmedAt;
    if (inFlight <= static_cast<int32_t>(m_rtoLowPackets) || ran >= m_rtoHigh)
    {
        return false;
    }
    m_counters.rtoExtensions++;
    c.retryDeadline = c.retryArmedAt + m_rtoHigh;
    c.retryTimer =
        Simulator::Schedule(m_rtoHigh - ran, &RdmaEngine::OnRetryTimeout, this, c.qpn);
    return true;
}

uint32_t
RdmaEngine::InflightCap() const
{
    uint32_t cap = m_maxInflightPackets;
    if (Selective() && (!cap || cap > m_sackWindow))
    {
        // The responder keeps at most SackWindow packets ahead of a gap.
        cap = m_sackWindow;
    }
    return cap;
}

void
RdmaEngine::SelectiveTimeout(RdmaQpContext& c)
{
    // Nothing at all came back for a whole RTO: every packet no SACK reported is presumed
    // lost, as TCP does after its RTO (RFC 6675 §5.1). Responses did come (SACKs of later
    // packets) but the cumulative acknowledgment stood still: the packets sent before the
    // timer started have had the whole RTO and are lost (resends included) when not SACKed;
    // the younger ones may still be on their way and are left to the SACKs.
    c.sr.Advance(c.unackedPsn);
    const bool silent = c.lastResponseAt <= c.retryArmedAt;
    c.sr.OnTimeout(silent ? c.maxSentNext : c.retryArmedSentEnd);
    m_retransmitTrace(c.qpn, c.unackedPsn);
    c.retryTimer.Cancel();
    Kick(c);
}

// ---- requester: choosing what to resend ------------------------------------------------------

bool
RdmaEngine::PickSelectiveResend(RdmaQpContext& c, uint32_t& resendCount)
{
    if (!c.sr.HasState())
    {
        return false;
    }
    c.sr.Advance(c.unackedPsn);
    uint32_t psn = 0;
    while (c.sr.NextLost(psn))
    {
        if (RdmaPsnDiff(psn, c.maxSentNext) >= 0)
        {
            c.sr.MarkResent(psn, 1); // never sent (a go-back-N rewind moved the cursor back)
            continue;
        }
        bool placed = false;
        for (uint32_t i = 0; i < c.sendOps.size() && !placed; ++i)
        {
            const RdmaSendOp& op = c.sendOps[i];
            const int32_t d = RdmaPsnDiff(psn, op.firstPsn);
            if (op.status != RdmaWcStatus::SUCCESS || op.npkts == 0 || d < 0 ||
                d >= static_cast<int32_t>(op.npkts))
            {
                continue;
            }
            if (op.readLike)
            {
                // A READ's PSNs after the first are its responses', and a lost response is
                // asked for again by the READ path (rdma-completer.cc); only a READ or atomic
                // request with no response yet is resent here, as a whole.
                const uint32_t rest = op.npkts - static_cast<uint32_t>(d);
                if (d != 0 || op.respNext != 0 || op.done)
                {
                    c.sr.MarkResent(psn, rest);
                    placed = true; // nothing to send; look for the next
                    continue;
                }
                resendCount = op.npkts;
            }
            else
            {
                resendCount = 1;
            }
            c.sendOp = i;
            c.sendPkt = static_cast<uint32_t>(d);
            return true;
        }
        if (!placed)
        {
            c.sr.MarkResent(psn, 1); // acknowledged meanwhile or of a failed WR
        }
    }
    return false;
}

// ---- requester: SACKs ------------------------------------------------------------------------

bool
RdmaEngine::ParseSack(IbTransportHeaders& h, const uint8_t* data, uint32_t length,
                      uint32_t icrcSize, uint32_t& sackPsn)
{
    // An Acknowledge with exactly the SACK extension between the AETH and the ICRC, and a
    // PSN-sequence-error NAK syndrome: anything else stays malformed.
    if (h.error != IbParseError::UnexpectedPayload || length < 1 ||
        data[0] != IbOpcode::kRcAcknowledge)
    {
        return false;
    }
    IbTransportHeaders s;
    if (!s.Parse(data, length, icrcSize + kRdmaSackExtBytes) || s.payloadLength != 0 ||
        s.bth.GetPadCnt() != 0 || !s.aeth || s.aeth->GetKind() != IbAethKind::Nak ||
        s.aeth->GetNakCode() != IbNakCode::PsnSequenceError)
    {
        return false;
    }
    const uint8_t* ext = data + s.payloadOffset;
    if (ext[0] != 0)
    {
        return false; // reserved bits must be zero
    }
    sackPsn = (uint32_t(ext[1]) << 16) | (uint32_t(ext[2]) << 8) | ext[3];
    h = s;
    return true;
}

void
RdmaEngine::SackReceive(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                        uint32_t sackPsn)
{
    if (!Selective())
    {
        // A go-back-N requester reads it as the plain NAK it also is.
        CompleterReceive(c, h, payload);
        return;
    }
    if (c.qp->GetType() != RdmaQpType::RC || c.sendOps.empty())
    {
        Drop(c.qpn, RdmaDropReason::UnexpectedResponse);
        return;
    }
    const uint32_t cum = h.bth.GetPsn();
    // The SACKed PSN must lie after the cumulative one, within the window, and have been
    // sent; the cumulative PSN may not be ahead of what was sent (a "ghost" response, IBA
    // vol. 1 §9.7.5.1.1). Otherwise the SACK is counted and ignored.
    const int32_t ahead = RdmaPsnDiff(sackPsn, cum);
    if (RdmaPsnDiff(cum, c.maxSentNext) > 0 || ahead <= 0 ||
        static_cast<uint32_t>(ahead) >= m_sackWindow ||
        RdmaPsnDiff(sackPsn, c.maxSentNext) >= 0)
    {
        m_counters.sacksIgnored++;
        Drop(c.qpn, RdmaDropReason::UnexpectedResponse);
        return;
    }
    m_counters.sacksReceived++;
    m_counters.naksReceived++;
    m_nakRxTrace(c.qpn, h.aeth->GetSyndrome(), cum);
    AckThrough(c, cum, SimClock::Now());
    CompleteInOrder(c);
    if (c.dead)
    {
        return;
    }
    // IRN has no retry budget for NAKs: a SACK is progress information, not a failure.
    c.sr.Advance(c.unackedPsn);
    if (!c.sr.OnSack(sackPsn, c.maxSentNext, m_sackWindow))
    {
        return; // already cumulatively acknowledged
    }
    uint32_t lost = 0;
    if (c.reqState != RdmaReqState::RnrWait && c.sr.NextLost(lost))
    {
        Kick(c);
    }
}

// ---- responder -------------------------------------------------------------------------------

void
RdmaEngine::SendSack(RdmaQpContext& c, uint32_t sackPsn)
{
    c.ackPending = 0;
    c.ackTimer.Cancel();
    IbTransportHeaders h;
    h.bth.SetOpCode(IbOpcode::kRcAcknowledge);
    h.bth.SetPkey(QpPkey(*c.qp));
    h.bth.SetDestQp(c.qp->GetAttr().dest_qp_num);
    h.bth.SetPsn(c.ePsn); // the cumulative acknowledgment: everything before it arrived
    h.aeth = IbAethHeader::MakeNak(c.msn, IbNakCode::PsnSequenceError);
    std::vector<uint8_t> bytes = BuildPacket(h, nullptr, 0);
    // The SACK extension (docs/rdma-transport.md): 8 reserved bits, the 24-bit PSN received.
    bytes.push_back(0);
    bytes.push_back(static_cast<uint8_t>(sackPsn >> 16));
    bytes.push_back(static_cast<uint8_t>(sackPsn >> 8));
    bytes.push_back(static_cast<uint8_t>(sackPsn));
    m_counters.naksSent++;
    m_counters.sacksSent++;
    m_nakSentTrace(c.qpn, h.aeth->GetSyndrome(), c.ePsn);
    QueueResponse(c, std::move(bytes), ReplyAv(c));
}

void
RdmaEngine::HoldOutOfOrder(RdmaQpContext& c, const IbTransportHeaders& h,
                           const uint8_t* payload, const RdmaRxInfo& info)
{
    const uint32_t psn = h.bth.GetPsn();
    if (static_cast<uint32_t>(RdmaPsnDiff(psn, c.ePsn)) >= m_sackWindow)
    {
        Drop(c.qpn, RdmaDropReason::OutOfSequence); // beyond what it keeps: the RTO recovers
        return;
    }
    // IRN places out-of-order WRITE data at once and tracks a bitmap; this model keeps the
    // packet and executes it in PSN order when the gap fills, which gives the same packets on
    // the wire and the same memory contents at completion (docs/rdma-transport.md).
    RdmaHeldRequest r;
    r.headers = h;
    r.payload.assign(payload, payload + h.payloadLength);
    r.info = info;
    if (c.sr.Hold(psn, std::move(r)))
    {
        m_counters.heldOutOfOrder++;
    }
    else
    {
        Drop(c.qpn, RdmaDropReason::Duplicate);
    }
    SendSack(c, psn);
}

void
RdmaEngine::DrainHeld(RdmaQpContext& c)
{
    c.sr.draining = true;
    RdmaHeldRequest r;
    uint32_t executed = 0;
    while (!c.dead && c.respState != RdmaRespState::Error && c.sr.Take(c.ePsn, r))
    {
        RcResponder(c, r.headers, r.payload.data(), r.info);
        ++executed;
    }
    if (c.dead)
    {
        return;
    }
    c.sr.draining = false;
    if (c.respState == RdmaRespState::Error)
    {
        c.sr.ClearResponder();
        return;
    }
    c.sr.DropBehind(c.ePsn);
    if (executed && c.ackPending)
    {
        SendAck(c, RdmaPsnAdd(c.ePsn, -1));
    }
}

} // namespace ns3
