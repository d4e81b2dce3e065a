// The responder: executes incoming requests in PSN order and answers them. RC checks PSNs
// (IBA vol. 1 §9.7.5.1.1: duplicates re-acknowledged or re-executed, PSN sequence errors
// NAKed once), opcode sequences (§9.8.3.1), receive WQEs (RNR NAK, §9.7.5.2.8), R_Keys and
// access rights (§9.7.5.1.x, §10.6.3.3, touching no byte on a refusal), and coalesces ACKs.
// UC drops a message that lost a packet (§9.8.2); UD checks the Q_Key and fills the GRH area
// of the receive buffer (§9.8.3, §11.4.1.2).
#include "rdma-engine.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaResponder");

namespace
{
/// Bytes reserved for the GRH at the start of a UD receive buffer (IBA vol. 1 §11.4.1.2).
constexpr uint32_t kUdGrhSpace = 40;
} // namespace

uint8_t
RdmaEngine::CreditCode(const RdmaQpContext& c) const
{
    // IBA vol. 1 §9.7.7.2: a QP on an SRQ does not do end-to-end credits (code 31).
    if (c.qp->GetSrq())
    {
        return IbAethHeader::kInvalidCreditCode;
    }
    return IbAethHeader::CountToCreditCode(c.qp->GetRecvQueue()->GetSize());
}

void
RdmaEngine::SendAck(RdmaQpContext& c, uint32_t psn)
{
    c.ackPending = 0;
    c.ackTimer.Cancel();
    IbTransportHeaders h;
    h.bth.SetOpCode(IbOpcode::kRcAcknowledge);
    h.bth.SetPkey(QpPkey(*c.qp));
    h.bth.SetDestQp(c.qp->GetAttr().dest_qp_num);
    h.bth.SetPsn(psn);
    h.aeth = IbAethHeader::MakeAck(c.msn, CreditCode(c));
    m_counters.acksSent++;
    QueueResponse(c, BuildPacket(h, nullptr, 0), ReplyAv(c));
}

void
RdmaEngine::SendNak(RdmaQpContext& c, uint32_t psn, uint8_t syndrome)
{
    c.ackPending = 0;
    c.ackTimer.Cancel();
    IbTransportHeaders h;
    h.bth.SetOpCode(IbOpcode::kRcAcknowledge);
    h.bth.SetPkey(QpPkey(*c.qp));
    h.bth.SetDestQp(c.qp->GetAttr().dest_qp_num);
    h.bth.SetPsn(psn);
    IbAethHeader aeth;
    aeth.SetSyndrome(syndrome);
    aeth.SetMsn(c.msn);
    h.aeth = aeth;
    if (aeth.IsRnrNak())
    {
        m_counters.rnrNaksSent++;
    }
    else
    {
        m_counters.naksSent++;
    }
    m_nakSentTrace(c.qpn, syndrome, psn);
    QueueResponse(c, BuildPacket(h, nullptr, 0), ReplyAv(c));
}

void
RdmaEngine::NoteAckReq(RdmaQpContext& c)
{
    // ACK coalescing (IBA vol. 1 §9.7.5.1.2: one ACK may acknowledge every earlier PSN).
    c.ackPending++;
    if (c.sr.draining)
    {
        return; // requests kept after a gap: one ACK when they are all executed
    }
    if (c.ackPending >= m_ackCoalesceCount || m_ackCoalesceDelay.IsZero())
    {
        SendAck(c, RdmaPsnAdd(c.ePsn, -1));
        return;
    }
    if (!c.ackTimer.IsRunning())
    {
        c.ackTimer = Simulator::Schedule(m_ackCoalesceDelay, &RdmaEngine::FlushAck, this, c.qpn);
    }
}

void
RdmaEngine::FlushAck(uint32_t qpn)
{
    RdmaQpContext* c = FindContext(qpn);
    if (c && c->ackPending)
    {
        SendAck(*c, RdmaPsnAdd(c->ePsn, -1));
    }
}

void
RdmaEngine::ResponderFatal(RdmaQpContext& c, RdmaEventType ev)
{
    c.respState = RdmaRespState::Error;
    // IBA vol. 1 §9.9.3.1: after a NAK for an invalid request, a remote access error or a
    // remote operational error the responder's QP enters Error (the affiliated asynchronous
    // event says which: QP_REQ_ERR, QP_ACCESS_ERR, QP_FATAL).
    c.qp->ReportFatal(ev);
}

bool
RdmaEngine::SendReadResponses(RdmaQpContext& c, Ptr<RdmaMr> mr, uint64_t va, uint32_t len,
                              uint32_t firstPsn)
{
    const uint32_t mtu = PathMtu(c);
    c.ackPending = 0; // the responses acknowledge everything before them
    c.ackTimer.Cancel();
    RdmaReadJob j;
    j.mr = mr;
    j.va = va;
    j.length = len;
    j.firstPsn = firstPsn;
    j.npkts = len == 0 ? 1 : (len + mtu - 1) / mtu;
    j.msn = c.msn;
    c.readJobs.push_back(j);
    if (!c.readQueued)
    {
        c.readQueued = true;
        m_readReady.push_back(c.qpn);
    }
    SchedulePump();
    return true;
}

RdmaEngine::ReadStep
RdmaEngine::ReadResponseStep(RdmaQpContext& c)
{
    if (c.readJobs.empty())
    {
        return ReadStep::Done;
    }
    const RdmaAhAttr av = ReplyAv(c);
    Ptr<RdmaLinkPort> port = PortOf(av.port_num);
    if (!port)
    {
        c.readJobs.clear();
        ReleaseHeldResponses(c);
        return ReadStep::Done;
    }
    if (!port->CanSend(av.sl))
    {
        return ReadStep::PortFull;
    }
    RdmaReadJob& j = c.readJobs.front();
    const uint32_t mtu = PathMtu(c);
    const uint32_t i = j.next;
    const uint32_t off = i * mtu;
    const uint32_t size = std::min(mtu, j.length - std::min(j.length, off));
    const uint32_t psn = RdmaPsnAdd(j.firstPsn, i);
    // The data is read as the packet is built, as a streaming HCA does.
    std::vector<uint8_t> data(size);
    if (size && !j.mr->GetMemory()->Read(j.mr->ToMemoryAddress(j.va + off), data.data(), size))
    {
        // A memory fault under a valid R_Key: remote operational error at this PSN
        // (IBA vol. 1 §9.9.3.1.3); what was held behind the READ is moot.
        c.readJobs.clear();
        c.heldResponses.clear();
        SendNak(c, psn,
                IbAethHeader::MakeNak(c.msn, IbNakCode::RemoteOperationalError).GetSyndrome());
        ResponderFatal(c, RdmaEventType::QP_FATAL);
        return ReadStep::Done;
    }
    IbTransportHeaders h;
    const uint32_t n = j.npkts;
    h.bth.SetOpCode(n == 1       ? IbOpcode::kRcRdmaReadResponseOnly
                    : i == 0     ? IbOpcode::kRcRdmaReadResponseFirst
                    : i + 1 == n ? IbOpcode::kRcRdmaReadResponseLast
                                 : IbOpcode::kRcRdmaReadResponseMiddle);
    h.bth.SetPkey(QpPkey(*c.qp));
    h.bth.SetDestQp(c.qp->GetAttr().dest_qp_num);
    h.bth.SetPsn(psn);
    if (IbOpcodeLookup(h.bth.GetOpCode())->Carries(IbExtHeader::Aeth))
    {
        h.aeth = IbAethHeader::MakeAck(j.msn, CreditCode(c));
    }
    std::vector<uint8_t> bytes = BuildPacket(h, data.data(), size);
    if (c.becnPending)
    {
        bytes[4] |= IbBthHeader::kBecnBit; // IBA annex A10: BECN on the next response
        c.becnPending = false;
    }
    const uint8_t opcode = h.bth.GetOpCode();
    const uint32_t total = static_cast<uint32_t>(bytes.size());
    m_counters.packetsSent++;
    m_counters.bytesSent += total;
    if (!port->Send(bytes, av))
    {
        m_counters.txRefused++;
    }
    m_sentTrace(c.qpn, opcode, psn, total, false);
    if (++j.next >= j.npkts)
    {
        c.readJobs.pop_front();
    }
    if (c.readJobs.empty())
    {
        ReleaseHeldResponses(c);
        return ReadStep::Done;
    }
    return ReadStep::More;
}

void
RdmaEngine::ReleaseHeldResponses(RdmaQpContext& c)
{
    std::deque<RdmaHeldResponse> held;
    held.swap(c.heldResponses);
    for (RdmaHeldResponse& r : held)
    {
        QueueResponse(c, std::move(r.bytes), r.av);
    }
}

void
RdmaEngine::ResponderReceive(RdmaQpContext& c, const IbTransportHeaders& h,
                             const uint8_t* payload, const RdmaRxInfo& info)
{
    switch (c.qp->GetType())
    {
    case RdmaQpType::RC:
        RcResponder(c, h, payload, info);
        if (Selective() && !c.dead && c.sr.HeldCount())
        {
            DrainHeld(c);
        }
        break;
    case RdmaQpType::UC:
        UcResponder(c, h, payload, info);
        break;
    default:
        UdResponder(c, h, payload, info);
        break;
    }
}

bool
RdmaEngine::ResponderData(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                          const RdmaRxInfo& info, bool reliable)
{
    const IbOpcodeInfo& oi = *h.info;
    const bool first = oi.Has(IbOpFlag::kFirst) || oi.Has(IbOpFlag::kOnly);
    const bool last = oi.Has(IbOpFlag::kLast) || oi.Has(IbOpFlag::kOnly);
    const uint32_t psn = h.bth.GetPsn();
    const uint32_t len = h.payloadLength;
    Ptr<RdmaQp> qp = c.qp;
    auto refuse = [&](IbNakCode code, RdmaEventType ev, RdmaDropReason ucReason) {
        if (reliable)
        {
            SendNak(c, psn, IbAethHeader::MakeNak(c.msn, code).GetSyndrome());
            ResponderFatal(c, ev);
        }
        else
        {
            Drop(c.qpn, ucReason);
            c.respState = RdmaRespState::UcDropping;
            c.writeMr = nullptr;
        }
        return false;
    };
    auto needRecv = [&]() {
        if (c.haveRecv)
        {
            return true;
        }
        if (qp->TakeRecv(c.recv))
        {
            c.haveRecv = true;
            c.recvOffset = 0;
            return true;
        }
        if (reliable)
        {
            // IBA vol. 1 §9.7.5.2.8: no receive WQE: RNR NAK with the QP's min_rnr_timer; the
            // PSN does not advance, the requester retries this packet. The packets behind it
            // are dropped without another NAK, as after a sequence error NAK.
            SendNak(c, psn,
                    IbAethHeader::MakeRnrNak(c.msn, qp->GetAttr().min_rnr_timer).GetSyndrome());
            c.nakSent = true;
        }
        else
        {
            Drop(c.qpn, RdmaDropReason::NoReceiveWqe);
            c.respState = RdmaRespState::UcDropping;
        }
        return false;
    };
    auto completeRecv = [&](RdmaWcStatus status, RdmaWcOpcode opcode, uint32_t byteLen) {
        RdmaWc wc;
        wc.wr_id = c.recv.wr.wr_id;
        wc.status = status;
        wc.opcode = opcode;
        wc.byte_len = byteLen;
        wc.qp_num = c.qpn;
        wc.src_qp = qp->GetAttr().dest_qp_num;
        wc.slid = info.slid;
        wc.sl = info.sl;
        wc.pkey_index = qp->GetAttr().pkey_index;
        if (h.immDt)
        {
            wc.imm_data = h.immDt->GetImmediateData();
            wc.wc_flags |= RDMA_WC_WITH_IMM;
        }
        if (h.ieth && status == RdmaWcStatus::SUCCESS)
        {
            // ibv_wc: invalidated_rkey shares imm_data's union; IBV_WC_WITH_INV says which.
            wc.imm_data = h.ieth->GetRkey();
            wc.wc_flags |= RDMA_WC_WITH_INV;
        }
        c.haveRecv = false;
        c.recvOffset = 0;
        PushRecvWc(c, wc, h.bth.GetSe());
    };

    if (oi.Has(IbOpFlag::kSend))
    {
        if (first)
        {
            if (!needRecv())
            {
                return false;
            }
            c.recvOffset = 0; // UC: a message abandoned midway leaves its WQE for this one
        }
        if (!c.haveRecv)
        {
            return refuse(IbNakCode::InvalidRequest, RdmaEventType::QP_REQ_ERR,
                          RdmaDropReason::OutOfSequence);
        }
        if (c.recvOffset + len > c.recv.length)
        {
            // IBA vol. 1 §9.9.3.1.2: the message does not fit the receive buffer: NAK invalid
            // request; the receive WQE completes with a local length error.
            const uint64_t got = c.recvOffset + len;
            completeRecv(RdmaWcStatus::LOC_LEN_ERR, RdmaWcOpcode::RECV,
                         static_cast<uint32_t>(got));
            if (c.dead)
            {
                return false;
            }
            return refuse(IbNakCode::InvalidRequest, RdmaEventType::QP_REQ_ERR,
                          RdmaDropReason::LengthError);
        }
        const RdmaWcStatus st =
            len ? ScatterSgl(qp->GetPd(), c.recv.wr.sg_list, c.recvOffset, payload, len)
                : RdmaWcStatus::SUCCESS;
        if (st != RdmaWcStatus::SUCCESS)
        {
            completeRecv(st, RdmaWcOpcode::RECV, 0);
            if (c.dead)
            {
                return false;
            }
            return refuse(IbNakCode::RemoteOperationalError, RdmaEventType::QP_FATAL,
                          RdmaDropReason::AccessError);
        }
        c.recvOffset += len;
        c.respState = last ? RdmaRespState::Idle : RdmaRespState::InSend;
        if (last && h.ieth && !RemoteInvalidate(c, h.ieth->GetRkey()))
        {
            // The key cannot be invalidated (unknown, another PD, a region not made for
            // it): the message fails like any other R_Key refusal, NAKed as a remote access
            // error; its receive WQE completes in error.
            completeRecv(RdmaWcStatus::LOC_PROT_ERR, RdmaWcOpcode::RECV, 0);
            if (c.dead)
            {
                return false;
            }
            return refuse(IbNakCode::RemoteAccessError, RdmaEventType::QP_ACCESS_ERR,
                          RdmaDropReason::AccessError);
        }
        if (last)
        {
            completeRecv(RdmaWcStatus::SUCCESS, RdmaWcOpcode::RECV,
                         static_cast<uint32_t>(c.recvOffset));
        }
        return true;
    }

    // RDMA WRITE.
    if (first)
    {
        const IbRethHeader& reth = *h.reth;
        Ptr<RdmaMr> mr;
        RdmaMrCheck chk = RdmaMrCheck::ACCESS_DENIED;
        // IBA vol. 1 §10.6.3.3 / §9.7.5.1.x: the QP must allow remote writes and the R_Key
        // must cover [VA, VA+DMA length) with remote write access; checked before any byte is
        // written.
        if (qp->AllowsRemote(RDMA_ACCESS_REMOTE_WRITE))
        {
            if (reth.GetDmaLength() == 0)
            {
                // IBA vol. 1 C9-88: a zero-length RDMA WRITE moves no data, and its R_Key and
                // VA are not checked (UCX flushes a connection with one whose R_Key is 0). It
                // is one packet without payload; with immediate it still takes a receive WQE.
                if (!last || len != 0)
                {
                    return refuse(IbNakCode::InvalidRequest, RdmaEventType::QP_REQ_ERR,
                                  RdmaDropReason::LengthError);
                }
                if (h.immDt && !needRecv())
                {
                    return false;
                }
                c.respState = RdmaRespState::Idle;
                if (h.immDt)
                {
                    completeRecv(RdmaWcStatus::SUCCESS, RdmaWcOpcode::RECV_RDMA_WITH_IMM, 0);
                }
                return true;
            }
            chk = m_device->CheckRemoteAccess(qp->GetPd(), reth.GetRkey(),
                                              reth.GetVirtualAddress(), reth.GetDmaLength(),
                                              RDMA_ACCESS_REMOTE_WRITE, &mr);
        }
        if (chk != RdmaMrCheck::OK)
        {
            NS_LOG_INFO("QP " << c.qpn << ": RDMA WRITE refused (" << RdmaMrCheckName(chk)
                              << ")");
            return refuse(IbNakCode::RemoteAccessError, RdmaEventType::QP_ACCESS_ERR,
                          RdmaDropReason::AccessError);
        }
        c.writeMr = mr;
        c.writeVa = reth.GetVirtualAddress();
        c.writeRemaining = reth.GetDmaLength();
        c.writeTotal = reth.GetDmaLength();
    }
    if (!c.writeMr)
    {
        return refuse(IbNakCode::InvalidRequest, RdmaEventType::QP_REQ_ERR,
                      RdmaDropReason::OutOfSequence);
    }
    if (len > c.writeRemaining || (last && len != c.writeRemaining))
    {
        // The packets carry more or fewer bytes than the RETH announced (§9.7.5.1.3).
        return refuse(IbNakCode::InvalidRequest, RdmaEventType::QP_REQ_ERR,
                      RdmaDropReason::LengthError);
    }
    if (last && h.immDt && !needRecv())
    {
        return false; // WRITE with immediate consumes a receive WQE (IBA vol. 1 §9.4.3)
    }
    if (len && !c.writeMr->GetMemory()->Write(c.writeMr->ToMemoryAddress(c.writeVa), payload,
                                              len))
    {
        return refuse(IbNakCode::RemoteOperationalError, RdmaEventType::QP_FATAL,
                      RdmaDropReason::AccessError);
    }
    c.writeVa += len;
    c.writeRemaining -= len;
    c.respState = last ? RdmaRespState::Idle : RdmaRespState::InWrite;
    if (last)
    {
        c.writeMr = nullptr;
        if (h.immDt)
        {
            completeRecv(RdmaWcStatus::SUCCESS, RdmaWcOpcode::RECV_RDMA_WITH_IMM, c.writeTotal);
        }
    }
    return true;
}

bool
RdmaEngine::RemoteInvalidate(const RdmaQpContext& c, uint32_t rkey)
{
    // IBA vol. 1 §10.6.7: a SEND with invalidate names an R_Key of the responder's PD; only a
    // region made for invalidation (RdmaMr::SetInvalidatable) may be invalidated, after the
    // message's data has been placed. Later accesses with the key fail their R_Key check.
    Ptr<RdmaMr> mr = m_device->LookupRkey(rkey);
    if (!mr || mr->GetPd() != c.qp->GetPd() || !mr->Invalidate())
    {
        NS_LOG_INFO("QP " << c.qpn << ": SEND with invalidate of R_Key " << rkey
                          << " refused");
        return false;
    }
    return true;
}

void
RdmaEngine::RcDuplicate(RdmaQpContext& c, const IbTransportHeaders& h)
{
    const uint32_t psn = h.bth.GetPsn();
    Drop(c.qpn, RdmaDropReason::Duplicate);
    if (h.info->Has(IbOpFlag::kRead))
    {
        // IBA vol. 1 §9.7.5.1.4: a duplicate READ is executed again (from its own RETH, which
        // a retry may have moved forward), if it falls inside a READ this responder did.
        for (const RdmaRespResource& r : c.resources)
        {
            const int32_t d = RdmaPsnDiff(psn, r.firstPsn);
            if (!r.atomic && d >= 0 && d < static_cast<int32_t>(r.npkts))
            {
                Ptr<RdmaMr> mr;
                const IbRethHeader& reth = *h.reth;
                if (reth.GetDmaLength() == 0 || // C9-88, as above
                    m_device->CheckRemoteAccess(c.qp->GetPd(), reth.GetRkey(),
                                                reth.GetVirtualAddress(), reth.GetDmaLength(),
                                                RDMA_ACCESS_REMOTE_READ, &mr) == RdmaMrCheck::OK)
                {
                    SendReadResponses(c, mr, reth.GetVirtualAddress(), reth.GetDmaLength(), psn);
                }
                return;
            }
        }
        return;
    }
    if (h.info->Has(IbOpFlag::kAtomic))
    {
        // A duplicate atomic is answered with the saved result, never executed twice.
        for (const RdmaRespResource& r : c.resources)
        {
            if (r.atomic && r.firstPsn == psn)
            {
                IbTransportHeaders a;
                a.bth.SetOpCode(IbOpcode::kRcAtomicAcknowledge);
                a.bth.SetPkey(QpPkey(*c.qp));
                a.bth.SetDestQp(c.qp->GetAttr().dest_qp_num);
                a.bth.SetPsn(psn);
                a.aeth = IbAethHeader::MakeAck(r.msn, CreditCode(c));
                IbAtomicAckEthHeader ack;
                ack.SetOriginalRemoteData(r.original);
                a.atomicAckEth = ack;
                QueueResponse(c, BuildPacket(a, nullptr, 0), ReplyAv(c));
                return;
            }
        }
        return;
    }
    // A duplicate SEND / WRITE: acknowledge what has been received (IBA vol. 1 §9.7.5.1.1).
    if (h.bth.GetAckReq())
    {
        SendAck(c, RdmaPsnAdd(c.ePsn, -1));
    }
}

void
RdmaEngine::RcResponder(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                        const RdmaRxInfo& info)
{
    const uint32_t psn = h.bth.GetPsn();
    const uint8_t opcode = h.bth.GetOpCode();
    const int32_t d = RdmaPsnDiff(psn, c.ePsn);
    if (c.respState == RdmaRespState::Error)
    {
        Drop(c.qpn, RdmaDropReason::QpState);
        return;
    }
    if (d > 0 && Selective())
    {
        HoldOutOfOrder(c, h, payload, info); // IRN: keep it, SACK it
        return;
    }
    if (d > 0)
    {
        // IBA vol. 1 §9.7.5.1.1: a PSN ahead of the expected one means packets were lost; one
        // NAK (PSN sequence error, carrying the expected PSN) until the expected one arrives.
        Drop(c.qpn, RdmaDropReason::OutOfSequence);
        if (!c.nakSent)
        {
            c.nakSent = true;
            SendNak(c, c.ePsn,
                    IbAethHeader::MakeNak(c.msn, IbNakCode::PsnSequenceError).GetSyndrome());
        }
        return;
    }
    if (d < 0)
    {
        RcDuplicate(c, h);
        return;
    }
    c.nakSent = false;
    const IbOpcodeInfo& oi = *h.info;
    const bool seqOk = c.haveLastOpcode
                           ? IbOpcodeSequenceValid(c.lastOpcode, opcode)
                           : (oi.Has(IbOpFlag::kFirst) || oi.Has(IbOpFlag::kOnly));
    if (!seqOk)
    {
        // IBA vol. 1 §9.8.3.1 (C9-xx): an opcode out of sequence is an invalid request.
        SendNak(c, psn, IbAethHeader::MakeNak(c.msn, IbNakCode::InvalidRequest).GetSyndrome());
        ResponderFatal(c, RdmaEventType::QP_REQ_ERR);
        return;
    }
    Ptr<RdmaQp> qp = c.qp;
    if (oi.Has(IbOpFlag::kRead) || oi.Has(IbOpFlag::kAtomic))
    {
        const bool atomic = oi.Has(IbOpFlag::kAtomic);
        const uint64_t va = atomic ? h.atomicEth->GetVirtualAddress()
                                   : h.reth->GetVirtualAddress();
        const uint32_t rkey = atomic ? h.atomicEth->GetRkey() : h.reth->GetRkey();
        const uint32_t len = atomic ? 8 : h.reth->GetDmaLength();
        const uint32_t right = atomic ? RDMA_ACCESS_REMOTE_ATOMIC : RDMA_ACCESS_REMOTE_READ;
        const uint32_t maxRes = std::max<uint32_t>(1, qp->GetAttr().max_dest_rd_atomic);
        if (atomic && va % 8 != 0)
        {
            // IBA vol. 1 §9.4.5: an atomic on a misaligned address is an invalid request.
            SendNak(c, psn,
                    IbAethHeader::MakeNak(c.msn, IbNakCode::InvalidRequest).GetSyndrome());
            ResponderFatal(c, RdmaEventType::QP_REQ_ERR);
            return;
        }
        Ptr<RdmaMr> mr;
        RdmaMrCheck chk = RdmaMrCheck::ACCESS_DENIED;
        if (qp->AllowsRemote(right))
        {
            // IBA vol. 1 C9-88: a zero-length RDMA READ's R_Key and VA are not checked; its
            // one response carries no data.
            chk = !atomic && len == 0
                      ? RdmaMrCheck::OK
                      : m_device->CheckRemoteAccess(qp->GetPd(), rkey, va, len, right, &mr);
        }
        if (chk != RdmaMrCheck::OK)
        {
            NS_LOG_INFO("QP " << c.qpn << ": " << (atomic ? "atomic" : "READ") << " refused ("
                              << RdmaMrCheckName(chk) << ")");
            SendNak(c, psn,
                    IbAethHeader::MakeNak(c.msn, IbNakCode::RemoteAccessError).GetSyndrome());
            ResponderFatal(c, RdmaEventType::QP_ACCESS_ERR);
            return;
        }
        RdmaRespResource r;
        r.atomic = atomic;
        r.firstPsn = psn;
        r.va = va;
        r.rkey = rkey;
        r.length = len;
        c.lastOpcode = opcode;
        c.haveLastOpcode = true;
        if (!atomic)
        {
            const uint32_t mtu = PathMtu(c);
            r.npkts = len == 0 ? 1 : (len + mtu - 1) / mtu;
            c.msn = (c.msn + 1) & IbAethHeader::kMaxMsn;
            r.msn = c.msn;
            c.ePsn = RdmaPsnAdd(c.ePsn, r.npkts);
            c.resources.push_back(r);
            while (c.resources.size() > maxRes)
            {
                c.resources.pop_front();
            }
            if (!SendReadResponses(c, mr, va, len, psn))
            {
                ResponderFatal(c, RdmaEventType::QP_FATAL);
            }
            return;
        }
        // The atomic itself: 8 bytes in the responder's host order (little-endian here).
        Ptr<RdmaMemory> mem = mr->GetMemory();
        const uint64_t addr = mr->ToMemoryAddress(va);
        uint64_t orig = 0;
        uint8_t buf[8];
        bool ok = mem->Read(addr, buf, 8);
        if (ok)
        {
            std::memcpy(&orig, buf, 8);
            uint64_t next = orig;
            if (opcode == IbOpcode::kRcCompareSwap)
            {
                if (orig == h.atomicEth->GetCompareData())
                {
                    next = h.atomicEth->GetSwapAddData();
                }
            }
            else
            {
                next = orig + h.atomicEth->GetSwapAddData();
            }
            std::memcpy(buf, &next, 8);
            ok = mem->Write(addr, buf, 8);
        }
        if (!ok)
        {
            SendNak(c, psn,
                    IbAethHeader::MakeNak(c.msn, IbNakCode::RemoteOperationalError)
                        .GetSyndrome());
            ResponderFatal(c, RdmaEventType::QP_FATAL);
            return;
        }
        c.msn = (c.msn + 1) & IbAethHeader::kMaxMsn;
        r.original = orig;
        r.msn = c.msn;
        c.ePsn = RdmaPsnAdd(c.ePsn, 1);
        c.resources.push_back(r);
        while (c.resources.size() > maxRes)
        {
            c.resources.pop_front();
        }
        c.ackPending = 0;
        c.ackTimer.Cancel();
        IbTransportHeaders a;
        a.bth.SetOpCode(IbOpcode::kRcAtomicAcknowledge);
        a.bth.SetPkey(QpPkey(*qp));
        a.bth.SetDestQp(qp->GetAttr().dest_qp_num);
        a.bth.SetPsn(psn);
        a.aeth = IbAethHeader::MakeAck(c.msn, CreditCode(c));
        IbAtomicAckEthHeader ack;
        ack.SetOriginalRemoteData(orig);
        a.atomicAckEth = ack;
        QueueResponse(c, BuildPacket(a, nullptr, 0), ReplyAv(c));
        return;
    }
    if (!ResponderData(c, h, payload, info, true) || c.dead)
    {
        return;
    }
    c.lastOpcode = opcode;
    c.haveLastOpcode = true;
    c.ePsn = RdmaPsnAdd(c.ePsn, 1);
    if (oi.Has(IbOpFlag::kLast) || oi.Has(IbOpFlag::kOnly))
    {
        c.msn = (c.msn + 1) & IbAethHeader::kMaxMsn;
    }
    if (h.bth.GetAckReq())
    {
        NoteAckReq(c);
    }
}

void
RdmaEngine::UcResponder(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                        const RdmaRxInfo& info)
{
    const uint32_t psn = h.bth.GetPsn();
    const IbOpcodeInfo& oi = *h.info;
    const bool starts = oi.Has(IbOpFlag::kFirst) || oi.Has(IbOpFlag::kOnly);
    const bool inMessage =
        c.respState == RdmaRespState::InSend || c.respState == RdmaRespState::InWrite;
    if (RdmaPsnDiff(psn, c.ePsn) != 0)
    {
        // IBA vol. 1 §9.8.2: UC has no retransmission; a gap loses the message in progress.
        // A First/Only starts afresh at its PSN; anything else is dropped until one comes.
        Drop(c.qpn, RdmaDropReason::OutOfSequence);
        c.writeMr = nullptr;
        c.respState = RdmaRespState::UcDropping;
        c.ePsn = RdmaPsnAdd(psn, 1);
        if (!starts)
        {
            return;
        }
        c.ePsn = psn;
    }
    else if (inMessage && starts)
    {
        // A new message while one was in progress: the old one lost its last packet.
        c.writeMr = nullptr;
        c.respState = RdmaRespState::Idle;
    }
    else if (!inMessage && !starts)
    {
        Drop(c.qpn, RdmaDropReason::OutOfSequence);
        c.respState = RdmaRespState::UcDropping;
        c.ePsn = RdmaPsnAdd(psn, 1);
        return;
    }
    else if (inMessage && !IbOpcodeSequenceValid(c.lastOpcode, h.bth.GetOpCode()))
    {
        Drop(c.qpn, RdmaDropReason::OutOfSequence);
        c.writeMr = nullptr;
        c.respState = RdmaRespState::UcDropping;
        c.ePsn = RdmaPsnAdd(psn, 1);
        return;
    }
    c.ePsn = RdmaPsnAdd(psn, 1);
    if (!ResponderData(c, h, payload, info, false) || c.dead)
    {
        return;
    }
    c.lastOpcode = h.bth.GetOpCode();
    c.haveLastOpcode = true;
    if (oi.Has(IbOpFlag::kLast) || oi.Has(IbOpFlag::kOnly))
    {
        c.msn = (c.msn + 1) & IbAethHeader::kMaxMsn;
    }
}

void
RdmaEngine::UdResponder(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                        const RdmaRxInfo& info)
{
    Ptr<RdmaQp> qp = c.qp;
    // IBA vol. 1 §10.2.4 / §9.6.1.2: a UD packet whose Q_Key is not the QP's is dropped and
    // counted (PortInfo Q_KeyViolations).
    if (h.deth->GetQkey() != qp->GetAttr().qkey)
    {
        m_counters.qkeyViolations++;
        Drop(c.qpn, RdmaDropReason::QkeyMismatch);
        return;
    }
    RdmaRecvWqe recv;
    if (!qp->TakeRecv(recv))
    {
        Drop(c.qpn, RdmaDropReason::NoReceiveWqe);
        return;
    }
    RdmaWc wc;
    wc.wr_id = recv.wr.wr_id;
    wc.opcode = RdmaWcOpcode::RECV;
    wc.qp_num = c.qpn;
    wc.src_qp = h.deth->GetSrcQp();
    wc.slid = info.slid;
    wc.sl = info.sl;
    wc.pkey_index = qp->GetAttr().pkey_index;
    wc.byte_len = kUdGrhSpace + h.payloadLength;
    if (h.immDt)
    {
        wc.imm_data = h.immDt->GetImmediateData();
        wc.wc_flags |= RDMA_WC_WITH_IMM;
    }
    if (wc.byte_len > recv.length)
    {
        // The buffer cannot hold GRH space + payload: the WQE completes in error.
        Drop(c.qpn, RdmaDropReason::LengthError);
        wc.status = RdmaWcStatus::LOC_LEN_ERR;
        PushRecvWc(c, wc, false);
        return;
    }
    RdmaWcStatus st = RdmaWcStatus::SUCCESS;
    if (info.global)
    {
        wc.wc_flags |= RDMA_WC_GRH;
        wc.network_hdr_type = info.networkHdr; // RoCEv2: IPv4 or IPv6 (annex A17.4.5.1)
        st = ScatterSgl(qp->GetPd(), recv.wr.sg_list, 0, info.grhBytes.data(), kUdGrhSpace);
    }
    if (st == RdmaWcStatus::SUCCESS && h.payloadLength)
    {
        st = ScatterSgl(qp->GetPd(), recv.wr.sg_list, kUdGrhSpace, payload, h.payloadLength);
    }
    wc.status = st;
    PushRecvWc(c, wc, h.bth.GetSe());
}

} // namespace ns3
