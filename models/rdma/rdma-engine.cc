// Engine plumbing: hooks to the verbs side, the QP scheduler, packet I/O and dispatch. The
// requester, completer and responder are in rdma-requester.cc, rdma-completer.cc and
// rdma-responder.cc.
#include "rdma-engine.h"

#include "models/common/event-tail.h"
#include "models/common/sim-clock.h"
#include "ns3/boolean.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaEngine");
NS_OBJECT_ENSURE_REGISTERED(RdmaEngine);

const char*
RdmaDropReasonName(RdmaDropReason r)
{
    switch (r)
    {
    case RdmaDropReason::Malformed:
        return "malformed";
    case RdmaDropReason::UnknownQp:
        return "unknown QP";
    case RdmaDropReason::BadOpcode:
        return "opcode not allowed for the QP type";
    case RdmaDropReason::QpState:
        return "QP state";
    case RdmaDropReason::PkeyMismatch:
        return "P_Key mismatch";
    case RdmaDropReason::QkeyMismatch:
        return "Q_Key mismatch";
    case RdmaDropReason::OutOfSequence:
        return "PSN out of sequence";
    case RdmaDropReason::Duplicate:
        return "duplicate PSN";
    case RdmaDropReason::NoReceiveWqe:
        return "no receive WQE";
    case RdmaDropReason::UnexpectedResponse:
        return "unexpected response";
    case RdmaDropReason::LengthError:
        return "length error";
    case RdmaDropReason::AccessError:
        return "access error";
    default:
        return "?";
    }
}

const char*
RdmaReqStateName(RdmaReqState s)
{
    static const char* names[] = {"Idle", "Ready", "WaitPort", "WaitRate", "WaitWindow",
                                  "WaitRdAtomic", "WaitFence", "RnrWait", "Error",
                                  "WaitCredit"};
    return names[static_cast<int>(s)];
}

const char*
RdmaRespStateName(RdmaRespState s)
{
    static const char* names[] = {"Idle", "InSend", "InWrite", "UcDropping", "Error"};
    return names[static_cast<int>(s)];
}

TypeId
RdmaEngine::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaEngine")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaEngine>()
            .AddAttribute("AckCoalesceCount",
                          "RC responder: acknowledge after this many packets that asked for "
                          "an acknowledgment (AckReq), or when AckCoalesceDelay expires.",
                          UintegerValue(1),
                          MakeUintegerAccessor(&RdmaEngine::m_ackCoalesceCount),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("AckCoalesceDelay",
                          "RC responder: longest time an AckReq packet waits for its "
                          "coalesced acknowledgment (time).",
                          TimeValue(MicroSeconds(1)),
                          MakeTimeAccessor(&RdmaEngine::m_ackCoalesceDelay),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("AckReqEveryPackets",
                          "RC requester: set AckReq on every Nth packet as well as on the "
                          "last packet of each message (0: last packets only), packets.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaEngine::m_ackReqEvery),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("RxProcessingDelay",
                          "Time between a packet's arrival from the port and its processing "
                          "(time; 0 processes it in the arrival event).",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&RdmaEngine::m_rxProcessingDelay),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("CnpInterval",
                          "Least time between two congestion notifications (CNPs) a responder "
                          "QP sends when congestion control asks for them (time).",
                          TimeValue(MicroSeconds(50)),
                          MakeTimeAccessor(&RdmaEngine::m_cnpInterval),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("IbBecnByCnp",
                          "InfiniBand RC responder: return each BECN at once in a CNP (opcode "
                          "0x80, IBA annex A10) instead of in the next ACK; with ACKs coalesced "
                          "per message the next ACK may be many packets away.",
                          BooleanValue(false),
                          MakeBooleanAccessor(&RdmaEngine::m_ibBecnByCnp),
                          MakeBooleanChecker())
            .AddAttribute("WindowBytes",
                          "Requester window: bytes a QP may have sent and not had "
                          "acknowledged (0 = unlimited); congestion control may lower it.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaEngine::m_windowBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("MaxResponseQueue",
                          "Responses (ACKs, READ responses) waiting for the port, packets; "
                          "beyond it they are dropped (the requester recovers).",
                          UintegerValue(65536),
                          MakeUintegerAccessor(&RdmaEngine::m_maxResponseQueue),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("EndToEndCredits",
                          "RC requester: obey the responder's end-to-end credits (AETH "
                          "credit count, IBA vol. 1 §9.7.7.2) before starting a SEND or RDMA "
                          "WRITE with immediate; false ignores them.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&RdmaEngine::m_e2eCredits),
                          MakeBooleanChecker())
            .AddAttribute("CreditProbeDelay",
                          "RC requester out of end-to-end credits: time after the last credit "
                          "report before it sends the one message the spec allows as a probe "
                          "(time; 0 probes at once).",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&RdmaEngine::m_creditProbeDelay),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("LineRate",
                          "Port rate given to congestion control at QP start, bit/s.",
                          UintegerValue(200000000000ULL),
                          MakeUintegerAccessor(&RdmaEngine::m_lineRateBps),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("LossRecovery",
                          "RC loss recovery: GoBackN (IBA vol. 1 §9.7.5: the responder drops "
                          "packets after a gap, NAKs once, the requester resends from there) "
                          "or Selective (IRN, SIGCOMM 2018: the responder keeps them and SACKs "
                          "each, the requester resends only the missing ones). Both ends of a "
                          "connection must use the same.",
                          EnumValue(RDMA_RECOVERY_GO_BACK_N),
                          MakeEnumAccessor(&RdmaEngine::m_lossRecovery),
                          MakeEnumChecker(RDMA_RECOVERY_GO_BACK_N, "GoBackN",
                                          RDMA_RECOVERY_SELECTIVE, "Selective"))
            .AddAttribute("RtoHigh",
                          "RC retransmission timeout (time) used instead of the QP's local ACK "
                          "timeout (4.096 us x 2^timeout, IBA vol. 1 §9.7.6.1.3); 0 keeps the "
                          "local ACK timeout. IRN's RTO_high.",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&RdmaEngine::m_rtoHigh),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("RtoLow",
                          "With RtoHigh set: the timeout while at most RtoLowPackets packets "
                          "are in flight (time; 0 = always RtoHigh). IRN's RTO_low.",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&RdmaEngine::m_rtoLow),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("RtoLowPackets",
                          "IRN's N: RtoLow applies while at most this many packets are in "
                          "flight, packets.",
                          UintegerValue(3),
                          MakeUintegerAccessor(&RdmaEngine::m_rtoLowPackets),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("MaxInflightPackets",
                          "RC requester: at most this many packets sent and not acknowledged "
                          "(IRN's BDP cap; 0 = no cap), packets.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaEngine::m_maxInflightPackets),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("SackWindow",
                          "Selective recovery: out-of-order packets a responder keeps ahead of "
                          "its expected PSN, and so the requester's in-flight cap and the "
                          "range a SACK may name, packets.",
                          UintegerValue(1024),
                          MakeUintegerAccessor(&RdmaEngine::m_sackWindow),
                          MakeUintegerChecker<uint32_t>(1, 1u << 22))
            .AddTraceSource("PacketSent",
                            "A transport packet went to the port: (qpn, opcode, PSN, bytes, "
                            "retransmission).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_sentTrace),
                            "ns3::RdmaEngine::PacketSentCallback")
            .AddTraceSource("CreditUpdate",
                            "An RC requester took an ACK's end-to-end credits: (qpn, MSN, "
                            "credits; 0xFFFFFFFF = unlimited).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_creditTrace),
                            "ns3::RdmaEngine::CreditCallback")
            .AddTraceSource("PacketReceived",
                            "A transport packet arrived for a QP: (qpn, opcode, PSN, bytes).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_rxTrace),
                            "ns3::RdmaEngine::PacketCallback")
            .AddTraceSource("Retransmission",
                            "The requester goes back to a PSN (NAK, timeout, RNR): (qpn, PSN).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_retransmitTrace),
                            "ns3::RdmaEngine::QpPsnCallback")
            .AddTraceSource("NakSent",
                            "The responder sent a NAK or RNR NAK: (qpn, syndrome, PSN).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_nakSentTrace),
                            "ns3::RdmaEngine::NakCallback")
            .AddTraceSource("NakReceived",
                            "The completer received a NAK or RNR NAK: (qpn, syndrome, PSN).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_nakRxTrace),
                            "ns3::RdmaEngine::NakCallback")
            .AddTraceSource("Timeout",
                            "The local ACK timer expired: (qpn, oldest unacknowledged PSN).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_timeoutTrace),
                            "ns3::RdmaEngine::QpPsnCallback")
            .AddTraceSource("Completion",
                            "A work completion was pushed: (wc, receive).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_completionTrace),
                            "ns3::RdmaEngine::CompletionCallback")
            .AddTraceSource("Drop",
                            "A received packet was discarded: (qpn, RdmaDropReason).",
                            MakeTraceSourceAccessor(&RdmaEngine::m_dropTrace),
                            "ns3::RdmaEngine::DropCallback");
    return tid;
}

RdmaEngine::RdmaEngine()
    : m_cc(CreateObject<RdmaCcNone>())
{
}

RdmaEngine::~RdmaEngine() = default;

void
RdmaEngine::DoDispose()
{
    if (m_device)
    {
        m_device->SetTransportHooks(RdmaDevice::QpCallback(),
                                    RdmaDevice::QpStateCallback(),
                                    RdmaDevice::QpCallback());
        m_device->SetGidLookup(RdmaDevice::GidLookup());
    }
    for (auto& p : m_ports)
    {
        p->SetReceiveCallback(RdmaLinkPort::ReceiveCallback());
        p->SetTxReadyCallback(Callback<void>());
    }
    for (auto& [qpn, c] : m_ctx)
    {
        c->wakeEvent.Cancel();
        c->retryTimer.Cancel();
        c->ackTimer.Cancel();
    }
    m_ctx.clear();
    m_ctxByQpn.Clear();
    m_graveyard.clear();
    m_buryEvent.Cancel();
    m_pump.Cancel();
    m_pumpDeferred = false;
    EventTail::Forget(this);
    m_device = nullptr;
    m_ports.clear();
    m_cc = nullptr;
    Object::DoDispose();
}

void
RdmaEngine::SetDevice(Ptr<RdmaDevice> device)
{
    m_device = device;
    device->SetTransportHooks(MakeCallback(&RdmaEngine::OnDoorbell, this),
                              MakeCallback(&RdmaEngine::OnQpState, this),
                              MakeCallback(&RdmaEngine::OnQpDestroy, this));
    device->SetGidLookup(MakeCallback(&RdmaEngine::HasGid, this));
}

bool
RdmaEngine::HasGid(uint8_t portNum, uint8_t index) const
{
    RdmaGid gid;
    const Ptr<RdmaLinkPort> port = PortOf(portNum);
    return port && port->GetGid(index, gid);
}

Ptr<RdmaDevice>
RdmaEngine::GetDevice() const
{
    return m_device;
}

void
RdmaEngine::AddPort(Ptr<RdmaLinkPort> port)
{
    m_ports.push_back(port);
    port->SetReceiveCallback(MakeCallback(&RdmaEngine::Receive, this));
    port->SetTxReadyCallback(MakeCallback(&RdmaEngine::OnTxReady, this));
}

Ptr<RdmaLinkPort>
RdmaEngine::GetPort(uint8_t portNum) const
{
    return PortOf(portNum);
}

Ptr<RdmaLinkPort>
RdmaEngine::PortOf(uint8_t portNum) const
{
    if (portNum < 1 || portNum > m_ports.size())
    {
        return nullptr;
    }
    return m_ports[portNum - 1];
}

void
RdmaEngine::SetCongestionControl(Ptr<RdmaCongestionControl> cc)
{
    m_cc = cc ? cc : Ptr<RdmaCongestionControl>(CreateObject<RdmaCcNone>());
}

Ptr<RdmaCongestionControl>
RdmaEngine::GetCongestionControl() const
{
    return m_cc;
}

RdmaReqState
RdmaEngine::GetRequesterState(uint32_t qpn) const
{
    auto it = m_ctx.find(qpn);
    return it == m_ctx.end() ? RdmaReqState::Idle : it->second->reqState;
}

RdmaRespState
RdmaEngine::GetResponderState(uint32_t qpn) const
{
    auto it = m_ctx.find(qpn);
    return it == m_ctx.end() ? RdmaRespState::Idle : it->second->respState;
}

bool
RdmaEngine::HasUnsentRequests(uint32_t qpn) const
{
    auto it = m_ctx.find(qpn);
    if (it == m_ctx.end() || it->second->dead || !it->second->qp)
    {
        return false;
    }
    const RdmaQpContext& c = *it->second;
    switch (c.reqState)
    {
    case RdmaReqState::RnrWait:
    case RdmaReqState::WaitCredit:
    case RdmaReqState::Error:
        return false;
    default:
        break;
    }
    const RdmaQpState s = c.qp->GetState();
    if (s != RdmaQpState::RTS && s != RdmaQpState::SQD)
    {
        return false;
    }
    if (c.sendOp < c.sendOps.size())
    {
        return true; // a started WQE (or one rewound for a resend) has packets to go
    }
    // IBA vol. 1 §10.3.1: in SQD no new WQE starts.
    return s == RdmaQpState::RTS && c.sendOp < c.qp->GetSendQueue()->GetSize();
}

// ---- contexts and verbs hooks ----------------------------------------------------------------

RdmaQpContext*
RdmaEngine::FindContext(uint32_t qpn)
{
    RdmaQpContext* c;
    if (m_ctxByQpn.Lookup(qpn, &c))
    {
        return c;
    }
    auto it = m_ctx.find(qpn);
    return it == m_ctx.end() ? nullptr : it->second.get();
}

RdmaQpContext*
RdmaEngine::Context(Ptr<RdmaQp> qp)
{
    const uint32_t qpn = qp->GetQpNum();
    RdmaQpContext* c = FindContext(qpn);
    if (!c)
    {
        auto& slot = m_ctx[qpn];
        slot = std::make_unique<RdmaQpContext>();
        slot->qp = qp;
        slot->qpn = qpn;
        c = slot.get();
        m_ctxByQpn.Set(qpn, c);
    }
    const RdmaQpAttr& a = qp->GetAttr();
    const RdmaQpState s = a.qp_state;
    if (!c->respStarted && (s == RdmaQpState::RTR || s == RdmaQpState::RTS ||
                            s == RdmaQpState::SQD || s == RdmaQpState::SQE))
    {
        // IBA vol. 1 §9.7.1: the responder's expected PSN starts at the RTR rq_psn.
        c->respStarted = true;
        c->ePsn = a.rq_psn;
        c->msn = 0;
    }
    if (!c->reqStarted && (s == RdmaQpState::RTS || s == RdmaQpState::SQD))
    {
        // The requester's first PSN is the RTS sq_psn; the retry counters start full.
        c->reqStarted = true;
        c->nextNewPsn = a.sq_psn;
        c->maxSentNext = a.sq_psn;
        c->unackedPsn = a.sq_psn;
        c->retryLeft = a.retry_cnt;
        c->rnrRetryLeft = a.rnr_retry;
        m_cc->OnQpStart(c->qpn, m_lineRateBps);
    }
    return c;
}

void
RdmaEngine::DropContext(uint32_t qpn)
{
    auto it = m_ctx.find(qpn);
    if (it == m_ctx.end())
    {
        return;
    }
    RdmaQpContext& c = *it->second;
    c.wakeEvent.Cancel();
    c.retryTimer.Cancel();
    c.ackTimer.Cancel();
    if (c.reqStarted)
    {
        m_cc->OnQpStop(qpn);
    }
    // Responses already queued (a NAK that reports the error) still go out, as from an HCA
    // whose packet was built before the QP stopped.
    m_ready.erase(std::remove(m_ready.begin(), m_ready.end(), qpn), m_ready.end());
    m_readReady.erase(std::remove(m_readReady.begin(), m_readReady.end(), qpn),
                      m_readReady.end());
    // A pump turn in progress (the QP failed inside it) must not put it back either.
    m_deferredReady.erase(std::remove(m_deferredReady.begin(), m_deferredReady.end(), qpn),
                          m_deferredReady.end());
    m_deferredRead.erase(std::remove(m_deferredRead.begin(), m_deferredRead.end(), qpn),
                         m_deferredRead.end());
    c.readQueued = false;
    c.dead = true;
    c.queued = false;
    m_graveyard.push_back(std::move(it->second));
    m_ctx.erase(it);
    m_ctxByQpn.Erase(qpn);
    if (!m_buryEvent.IsRunning())
    {
        m_buryEvent = Simulator::ScheduleNow(&RdmaEngine::Bury, this);
    }
}

void
RdmaEngine::Bury()
{
    m_graveyard.clear();
}

void
RdmaEngine::OnDoorbell(Ptr<RdmaQp> qp)
{
    const RdmaQpState s = qp->GetState();
    if (s != RdmaQpState::RTS && s != RdmaQpState::SQD)
    {
        return;
    }
    RdmaQpContext* c = Context(qp);
    if (c->reqState == RdmaReqState::Idle)
    {
        Kick(*c);
    }
}

void
RdmaEngine::OnQpState(Ptr<RdmaQp> qp, RdmaQpState from, RdmaQpState to)
{
    NS_LOG_FUNCTION(this << qp->GetQpNum() << RdmaQpStateName(from) << RdmaQpStateName(to));
    switch (to)
    {
    case RdmaQpState::RESET:
    case RdmaQpState::ERR:
        // IBA vol. 1 §10.3.1: in Error (and Reset) nothing is sent or processed; the QP itself
        // flushes its queues, so everything the engine holds for it is forgotten.
        DropContext(qp->GetQpNum());
        break;
    case RdmaQpState::SQE: {
        RdmaQpContext* c = FindContext(qp->GetQpNum());
        if (c)
        {
            c->sendOps.clear();
            c->sendOp = 0;
            c->sendPkt = 0;
            c->sendBufOp = -1;
            c->reqState = RdmaReqState::Error;
            c->retryTimer.Cancel();
            c->wakeEvent.Cancel();
        }
        break;
    }
    case RdmaQpState::SQD:
        // IBA vol. 1 §10.3.1 (SQ Drain): no new WR starts; the QP has drained once the WRs in
        // progress complete. Checked after the QP has applied the state (it sets its draining
        // flag after this notification).
        Simulator::ScheduleNow(&RdmaEngine::CheckSqDrained, this, qp);
        break;
    case RdmaQpState::RTS: {
        // Entering or resuming RTS: a requester stopped by SQE starts again where the queue
        // now is; WRs posted before RTS (none can be) or during SQD go out now.
        RdmaQpContext* c = FindContext(qp->GetQpNum());
        if (c && c->reqState == RdmaReqState::Error)
        {
            c->reqState = RdmaReqState::Idle;
        }
        Simulator::ScheduleNow(&RdmaEngine::OnDoorbell, this, qp);
        break;
    }
    default:
        break;
    }
}

void
RdmaEngine::CheckSqDrained(Ptr<RdmaQp> qp)
{
    RdmaQpContext* c = FindContext(qp->GetQpNum());
    if (qp->GetState() == RdmaQpState::SQD && (!c || c->sendOps.empty()))
    {
        qp->NotifySqDrained();
    }
}

void
RdmaEngine::OnQpDestroy(Ptr<RdmaQp> qp)
{
    DropContext(qp->GetQpNum());
}

// ---- the QP scheduler ----------------------------------------------------------------------

void
RdmaEngine::Kick(RdmaQpContext& c)
{
    if (c.queued)
    {
        return;
    }
    c.queued = true;
    c.reqState = RdmaReqState::Ready;
    m_ready.push_back(c.qpn);
    SchedulePump();
}

void
RdmaEngine::SchedulePump()
{
    if (m_pumpDeferred || m_pump.IsRunning())
    {
        return;
    }
    // The pump runs at the end of the current event instead of in an event of its own when it
    // would be the very next event anyway (EventTail: the same run, one event fewer per call).
    if (EventTail::TryDefer(&RdmaEngine::RunDeferredPump, this))
    {
        m_pumpDeferred = true;
        return;
    }
    m_pump = Simulator::ScheduleNow(&RdmaEngine::Pump, this);
}

void
RdmaEngine::RunDeferredPump(void* engine)
{
    RdmaEngine* e = static_cast<RdmaEngine*>(engine);
    if (e->m_pumpDeferred)
    {
        e->m_pumpDeferred = false;
        e->Pump();
    }
}

void
RdmaEngine::OnTxReady()
{
    // The QPs that found a lane full are still on the ready list (the first of them at its
    // head): the pump resumes with them. A lane is full only for one pump turn, so every turn
    // asks the ports again.
    SchedulePump();
}

uint16_t
RdmaEngine::ResponderLane(const RdmaQpContext& c) const
{
    // ReplyAv's port and SL, without copying the address vector (this runs per packet).
    const RdmaQpAttr& a = c.qp->GetAttr();
    const uint8_t port = a.ah_attr.port_num ? a.ah_attr.port_num : (a.port_num ? a.port_num : 1);
    return LaneKey(port, a.ah_attr.sl);
}

bool
RdmaEngine::RequesterLane(const RdmaQpContext& c, uint16_t& key) const
{
    if (c.qp->GetType() != RdmaQpType::UD)
    {
        key = ResponderLane(c); // a connected QP's packets all take its path
        return true;
    }
    // UD: the next packet is the WQE at the cursor, addressed by its own AH (RequesterStep).
    Ptr<RdmaQueue<RdmaSendWqe>> sq = c.qp->GetSendQueue();
    if (c.sendOp >= sq->GetSize())
    {
        return false;
    }
    const RdmaAhAttr& ah = sq->At(c.sendOp).ah;
    key = LaneKey(ah.port_num ? ah.port_num : 1, ah.sl);
    return true;
}

bool
RdmaEngine::ResponseDue(const LaneSet& full) const
{
    if (m_responseCount == 0)
    {
        return false;
    }
    for (const ResponseLane& lane : m_responseLanes)
    {
        if (!lane.packets.empty() && !full[lane.key])
        {
            return true;
        }
    }
    return false;
}

void
RdmaEngine::SendResponses(LaneSet& full)
{
    for (ResponseLane& lane : m_responseLanes)
    {
        while (!lane.packets.empty())
        {
            OutPacket& p = lane.packets.front();
            Ptr<RdmaLinkPort> port = PortOf(p.av.port_num);
            if (!port)
            {
                lane.packets.pop_front();
                --m_responseCount;
                continue;
            }
            if (!port->CanSend(p.av.sl))
            {
                full.set(lane.key); // TxReady resumes it
                break;
            }
            const uint8_t opcode = p.bytes[0];
            const uint32_t psn =
                (uint32_t(p.bytes[9]) << 16) | (uint32_t(p.bytes[10]) << 8) | p.bytes[11];
            m_counters.packetsSent++;
            m_counters.bytesSent += p.bytes.size();
            if (!(p.intEcho ? port->SendWithIntEcho(p.bytes, p.av, *p.intEcho)
                            : port->Send(p.bytes, p.av)))
            {
                m_counters.txRefused++;
            }
            m_sentTrace(p.qpn, opcode, psn, static_cast<uint32_t>(p.bytes.size()), false);
            if (p.intEcho)
            {
                m_spareEchoes.push_back(std::move(p.intEcho));
            }
            lane.packets.pop_front();
            --m_responseCount;
        }
    }
}

void
RdmaEngine::Pump()
{
    EventTail::Scope scope; // a port that takes a frame at once asks for the next pump turn
    // The NIC's transmit scheduler, run whenever a port can take a packet again (TxReady) or
    // work arrives: the port holds only a short pipeline ahead of the wire (RoceRdmaPort
    // TxPipelineFrames; an InfiniBand port's HCA queue), so which QP goes next is decided
    // here, close to the moment the wire frees, as a NIC decides it (docs/roce.md §9, "NIC
    // transmit scheduling").
    //
    // Responses first: they release the peer's requester (IBA gives them no priority, but a
    // responder that starves its ACKs behind its own requests only slows both sides down).
    // A lane the port refuses is full for the rest of this turn; the others go on.
    LaneSet full;
    if (m_responseCount > 0)
    {
        SendResponses(full);
    }
    m_deferredReady.clear();
    m_deferredRead.clear();
    // Each QP is served once per turn before any is served again (round robin); QPs set aside
    // for a full lane give their turn back.
    size_t budget = m_ready.size() + m_readReady.size();
    while ((!m_ready.empty() || !m_readReady.empty()) && budget-- > 0)
    {
        // READ responses take turns with requests, one packet each, so that a long READ
        // does not hold the port for its whole length (IBA gives neither priority).
        // The turn passes only when a packet went, so that after a full port the side that
        // was refused goes first.
        const bool readTurn = !m_readReady.empty() && (m_ready.empty() || m_readTurn);
        if (readTurn)
        {
            const uint32_t rq = m_readReady.front();
            m_readReady.pop_front();
            RdmaQpContext* rc = FindContext(rq);
            if (!rc)
            {
                continue;
            }
            const uint16_t lane = ResponderLane(*rc);
            if (full[lane])
            {
                m_deferredRead.push_back(rq); // stays queued (readQueued) for its lane
                ++budget;
                continue;
            }
            rc->readQueued = false;
            const ReadStep st = ReadResponseStep(*rc);
            if (st == ReadStep::PortFull)
            {
                rc->readQueued = true;
                m_deferredRead.push_back(rq);
                full.set(lane); // TxReady resumes it
                ++budget;
                continue;
            }
            m_readTurn = false;
            if (st == ReadStep::More && !rc->dead)
            {
                rc->readQueued = true;
                m_readReady.push_back(rq);
                if (m_ready.empty())
                {
                    ++budget; // nobody else waits: fill the port in this event
                }
            }
            if (ResponseDue(full))
            {
                break;
            }
            continue;
        }
        const uint32_t qpn = m_ready.front();
        m_ready.pop_front();
        RdmaQpContext* c = FindContext(qpn);
        if (!c)
        {
            continue;
        }
        uint16_t lane = 0;
        const bool laneKnown = RequesterLane(*c, lane);
        if (laneKnown && full[lane])
        {
            m_deferredReady.push_back(qpn); // still queued, first in line when room comes
            ++budget;
            continue;
        }
        c->queued = false;
        const bool more = RequesterStep(*c);
        if (c->reqState != RdmaReqState::WaitPort)
        {
            m_readTurn = true;
        }
        if (more)
        {
            c->queued = true;
            c->reqState = RdmaReqState::Ready;
            m_ready.push_back(qpn);
        }
        else if (c->reqState == RdmaReqState::WaitPort)
        {
            // The port's queue for this lane is full: every QP behind on the same lane would
            // find the same. Keep this one first in line and wait for the port's TxReady (one
            // event, not one per QP); QPs on other lanes go on.
            c->queued = true;
            m_deferredReady.push_back(qpn);
            ++budget;
            if (laneKnown)
            {
                full.set(lane);
            }
        }
        if (ResponseDue(full))
        {
            break; // a response became due (e.g. a local error); send it first
        }
    }
    // The QPs set aside go back first in line, in their order.
    const size_t restReady = m_ready.size();
    const size_t restRead = m_readReady.size();
    if (!m_deferredReady.empty())
    {
        m_ready.insert(m_ready.begin(), m_deferredReady.begin(), m_deferredReady.end());
    }
    if (!m_deferredRead.empty())
    {
        m_readReady.insert(m_readReady.begin(), m_deferredRead.begin(), m_deferredRead.end());
    }
    if (restReady > 0 || restRead > 0 || ResponseDue(full))
    {
        // More work on lanes that may take it: continue in a fresh event so that arrivals at
        // this time interleave.
        SchedulePump();
    }
}

// ---- packet I/O ----------------------------------------------------------------------------

std::vector<uint8_t>
RdmaEngine::BuildPacket(IbTransportHeaders& h,
                        const uint8_t* payload,
                        uint32_t len,
                        uint32_t* zeroTail)
{
    // IBA vol. 1 §9.2: PadCnt brings the payload to a multiple of 4 bytes.
    const uint8_t pad = static_cast<uint8_t>((4 - len % 4) % 4);
    h.bth.SetPadCnt(pad);
    h.bth.SetTver(IbBthHeader::kTver);
    const uint32_t hl = IbTransportHeaderLength(h.bth.GetOpCode());
    // Zeros the caller did not build stay unbuilt: payload and pad become the zero tail.
    const uint32_t tail = !payload && zeroTail ? len + pad : 0;
    if (zeroTail)
    {
        *zeroTail = tail;
    }
    // The payload is appended, not written over zeros first (a memset of every payload was
    // 2 % of an emulated bulk transfer); only the pad, or a payload the caller did not give
    // and does not want as a tail, is zero-filled.
    const uint32_t size = hl + len + pad - tail;
    std::vector<uint8_t> out;
    out.reserve(size);
    out.resize(hl);
    const uint32_t written = h.Write(out.data(), hl);
    NS_ABORT_MSG_IF(written != hl, "RdmaEngine: header write failed for opcode "
                                       << int(h.bth.GetOpCode()));
    if (payload && len)
    {
        out.insert(out.end(), payload, payload + len);
    }
    out.resize(size);
    return out;
}

bool
RdmaEngine::Transmit(RdmaQpContext& c,
                     std::vector<uint8_t>&& bytes,
                     const RdmaAhAttr& av,
                     uint8_t opcode,
                     uint32_t psn,
                     bool retransmission,
                     uint32_t zeroTail)
{
    Ptr<RdmaLinkPort> port = PortOf(av.port_num);
    if (!port)
    {
        return false;
    }
    const uint32_t n = static_cast<uint32_t>(bytes.size()) + zeroTail;
    m_counters.packetsSent++;
    m_counters.bytesSent += n;
    if (retransmission)
    {
        m_counters.retransmittedPackets++;
    }
    m_cc->OnSend(c.qpn, n, retransmission);
    if (!port->Send(bytes, av, zeroTail))
    {
        m_counters.txRefused++;
    }
    m_sentTrace(c.qpn, opcode, psn, n, retransmission);
    return true;
}

void
RdmaEngine::QueueResponse(RdmaQpContext& c, std::vector<uint8_t>&& bytes, const RdmaAhAttr& av)
{
    if (!c.readJobs.empty())
    {
        // Responses leave in PSN order (IBA vol. 1 §9.7.5.1.3): this one waits for the READ
        // responses still to be sent ahead of it.
        if (c.heldResponses.size() >= m_maxResponseQueue)
        {
            m_counters.txRefused++;
            return;
        }
        c.heldResponses.push_back(RdmaHeldResponse{std::move(bytes), av});
        return;
    }
    if (m_responseCount >= m_maxResponseQueue)
    {
        m_counters.txRefused++;
        return;
    }
    if (c.becnPending && !bytes.empty())
    {
        // IBA annex A10: the responder returns congestion in BECN of a response.
        bytes[4] |= IbBthHeader::kBecnBit;
        c.becnPending = false;
    }
    OutPacket p;
    p.bytes = std::move(bytes);
    p.av = av;
    p.qpn = c.qpn;
    if (m_rxInt && !p.bytes.empty() && p.bytes[0] == IbOpcode::kRcAcknowledge)
    {
        // HPCC (Li et al. 2019 §3.2): the ACK carries the INT of the packet it acknowledges.
        // Its hops only, into a stack an earlier ACK used (SendResponses gives them back): a
        // new one would be zeroed in all 264 bytes first.
        if (m_spareEchoes.empty())
        {
            p.intEcho = std::make_unique<IntStack>();
        }
        else
        {
            p.intEcho = std::move(m_spareEchoes.back());
            m_spareEchoes.pop_back();
        }
        p.intEcho->CopyHopsFrom(*m_rxInt);
    }
    const uint16_t key = LaneKey(p.av.port_num, p.av.sl);
    auto lane = std::find_if(m_responseLanes.begin(), m_responseLanes.end(),
                             [key](const ResponseLane& l) { return l.key == key; });
    if (lane == m_responseLanes.end())
    {
        m_responseLanes.emplace_back();
        m_responseLanes.back().key = key;
        lane = m_responseLanes.end() - 1;
    }
    lane->packets.push_back(std::move(p));
    ++m_responseCount;
    SchedulePump();
}

void
RdmaEngine::Drop(uint32_t qpn, RdmaDropReason r)
{
    m_drops[static_cast<size_t>(r)]++;
    NS_LOG_LOGIC("QP " << qpn << ": drop (" << RdmaDropReasonName(r) << ")");
    m_dropTrace(qpn, static_cast<uint8_t>(r));
}

void
RdmaEngine::Receive(Ptr<RdmaLinkPort> port,
                    const uint8_t* data,
                    uint32_t length,
                    const RdmaRxInfo& info)
{
    if (m_rxProcessingDelay.IsStrictlyPositive() && info.intStack)
    {
        // The stack lives only as long as the port's receive call: keep a copy.
        auto stack = std::make_shared<IntStack>(*info.intStack);
        Simulator::Schedule(m_rxProcessingDelay,
                            [this, port, d = std::vector<uint8_t>(data, data + length),
                             in = RdmaRxInfo(info), stack]() mutable {
                                in.intStack = stack.get();
                                Dispatch(port, d.data(), static_cast<uint32_t>(d.size()), in);
                            });
        return;
    }
    if (m_rxProcessingDelay.IsStrictlyPositive())
    {
        Simulator::Schedule(m_rxProcessingDelay,
                            &RdmaEngine::ReceiveNow,
                            this,
                            port,
                            std::vector<uint8_t>(data, data + length),
                            info);
        return;
    }
    Dispatch(port, data, length, info);
}

void
RdmaEngine::ReceiveNow(Ptr<RdmaLinkPort> port, std::vector<uint8_t> data, RdmaRxInfo info)
{
    Dispatch(port, data.data(), static_cast<uint32_t>(data.size()), info);
}

uint16_t
RdmaEngine::QpPkey(const RdmaQp& qp) const
{
    uint16_t pkey = 0;
    Ptr<RdmaLinkPort> port = PortOf(qp.GetAttr().port_num ? qp.GetAttr().port_num : 1);
    if (!port || !port->GetPkey(qp.GetAttr().pkey_index, pkey))
    {
        return 0; // no valid key: nothing matches
    }
    return pkey;
}

namespace
{
IbQpType
ToIbQpType(RdmaQpType t)
{
    switch (t)
    {
    case RdmaQpType::UC:
        return IbQpType::Uc;
    case RdmaQpType::UD:
        return IbQpType::Ud;
    default:
        return IbQpType::Rc;
    }
}
} // namespace

void
RdmaEngine::Dispatch(Ptr<RdmaLinkPort> port,
                     const uint8_t* data,
                     uint32_t length,
                     const RdmaRxInfo& info)
{
    IbTransportHeaders h;
    uint32_t sackPsn = 0xFFFFFFFF;
    if (!h.Parse(data, length, port->GetIcrcSize()) &&
        !ParseSack(h, data, length, port->GetIcrcSize(), sackPsn))
    {
        Drop(0xFFFFFFFF, RdmaDropReason::Malformed);
        return;
    }
    const uint32_t qpn = h.bth.GetDestQp();
    if (qpn == kRdmaMulticastQpn && m_device)
    {
        DispatchMulticast(port, h, data, length, info);
        return;
    }
    Ptr<RdmaQp> qp = (qpn <= 1 || !m_device) ? nullptr : m_device->LookupQp(qpn);
    if (!qp)
    {
        Drop(qpn, RdmaDropReason::UnknownQp);
        return;
    }
    DispatchToQp(port, h, qp, qpn, data, length, info, sackPsn);
}

void
RdmaEngine::DispatchMulticast(Ptr<RdmaLinkPort> port, const IbTransportHeaders& h,
                              const uint8_t* data, uint32_t length, const RdmaRxInfo& info)
{
    // IBA vol. 1 §10.5 (multicast): a packet for the multicast QPN goes to every QP of the
    // receiving port attached to its group; only UD sends travel so (a UD service).
    m_mcastScratch.clear();
    uint8_t portNum = 0;
    for (size_t i = 0; i < m_ports.size(); ++i)
    {
        portNum = m_ports[i] == port ? static_cast<uint8_t>(i + 1) : portNum;
    }
    m_device->McastMembers(portNum, info.global, info.dgid, info.dlid, m_mcastScratch);
    if (!h.info->AllowedFor(IbQpType::Ud))
    {
        Drop(kRdmaMulticastQpn, RdmaDropReason::BadOpcode);
        return;
    }
    if (m_mcastScratch.empty())
    {
        // No QP here is in the group (the sender's own port gets its packets back; a CA
        // discards what no QP wants): counted, not a drop.
        m_counters.multicastNoMember++;
        return;
    }
    m_counters.multicastReceived++;
    // Each member takes its own copy from the same bytes; the list is copied first, as a
    // completion handler may attach or detach QPs.
    const std::vector<Ptr<RdmaQp>> members = m_mcastScratch;
    for (const Ptr<RdmaQp>& qp : members)
    {
        if (qp->IsAlive())
        {
            DispatchToQp(port, h, qp, qp->GetQpNum(), data, length, info, 0xFFFFFFFF);
        }
    }
}

void
RdmaEngine::DispatchToQp(Ptr<RdmaLinkPort> port, const IbTransportHeaders& h, Ptr<RdmaQp> qp,
                         uint32_t qpn, const uint8_t* data, uint32_t length,
                         const RdmaRxInfo& info, uint32_t sackPsn)
{
    m_counters.packetsReceived++;
    m_rxTrace(qpn, h.bth.GetOpCode(), h.bth.GetPsn(), length);
    const bool cnp = h.info->Has(IbOpFlag::kCnp);
    if (!cnp && !h.info->AllowedFor(ToIbQpType(qp->GetType())))
    {
        Drop(qpn, RdmaDropReason::BadOpcode);
        return;
    }
    // IBA vol. 1 §10.9.3: the BTH P_Key must match the QP's; a mismatch is dropped silently
    // and counted in the port's P_KeyViolations.
    if (!RdmaPkeyMatch(h.bth.GetPkey(), QpPkey(*qp)))
    {
        m_counters.pkeyViolations++;
        RdmaPkeyViolation v;
        v.pkey = h.bth.GetPkey();
        v.srcQp = h.deth ? h.deth->GetSrcQp() : qp->GetAttr().dest_qp_num;
        v.dstQp = h.bth.GetDestQp();
        v.rx = &info;
        port->NotifyPkeyViolation(v);
        Drop(qpn, RdmaDropReason::PkeyMismatch);
        return;
    }
    const RdmaQpState s = qp->GetState();
    if (cnp)
    {
        if (s == RdmaQpState::RTS || s == RdmaQpState::SQD)
        {
            m_cc->OnCnp(qpn);
        }
        return;
    }
    const uint8_t* payload = data + h.payloadOffset;
    if (h.info->Has(IbOpFlag::kResponse))
    {
        // IBA vol. 1 §10.3.1: responses are processed in RTS and SQD (and SQE for the
        // unreliable types, which get none).
        if (s != RdmaQpState::RTS && s != RdmaQpState::SQD)
        {
            Drop(qpn, RdmaDropReason::QpState);
            return;
        }
        RdmaQpContext* c = Context(qp);
        c->lastResponseAt = SimClock::Now(); // what an RTO learns about the path
        if (h.bth.GetBecn())
        {
            m_cc->OnBecn(qpn);
        }
        m_rxInt = info.intStack;
        if (sackPsn != 0xFFFFFFFF)
        {
            SackReceive(*c, h, payload, sackPsn);
            m_rxInt = nullptr;
            return;
        }
        CompleterReceive(*c, h, payload);
        m_rxInt = nullptr;
        return;
    }
    // Requests: the receive side works from RTR on (IBA vol. 1 §10.3.1).
    if (s != RdmaQpState::RTR && s != RdmaQpState::RTS && s != RdmaQpState::SQD &&
        s != RdmaQpState::SQE)
    {
        Drop(qpn, RdmaDropReason::QpState);
        return;
    }
    RdmaQpContext* c = Context(qp);
    if (info.ecnMarked || h.bth.GetFecn())
    {
        MaybeSendCnp(*c, h, info);
    }
    m_rxInt = info.intStack;
    ResponderReceive(*c, h, payload, info);
    m_rxInt = nullptr;
}

void
RdmaEngine::MaybeSendCnp(RdmaQpContext& c, const IbTransportHeaders& h, const RdmaRxInfo& info)
{
    if (!m_cc->OnEcnMarkedReceive(c.qpn))
    {
        return;
    }
    const Time now = SimClock::Now();
    if (c.lastCnp.IsPositive() && now - c.lastCnp < m_cnpInterval)
    {
        return;
    }
    c.lastCnp = now;
    Ptr<RdmaLinkPort> port = PortOf(c.qp->GetAttr().port_num);
    if (port && port->GetLinkLayer() == RdmaLinkLayer::INFINIBAND &&
        c.qp->GetType() == RdmaQpType::RC && !m_ibBecnByCnp)
    {
        c.becnPending = true; // IBA annex A10: BECN on the next response
        return;
    }
    // RoCEv2 annex A17: a CNP to the requester's QP. InfiniBand UC and UD have no responses to
    // carry BECN: annex A10 has the destination send a CNP (opcode 0x80) with BECN instead.
    uint32_t destQp = c.qp->GetAttr().dest_qp_num;
    if (h.deth)
    {
        destQp = h.deth->GetSrcQp();
    }
    IbTransportHeaders cnp;
    cnp.bth.SetOpCode(IbOpcode::kCnp);
    cnp.bth.SetPkey(h.bth.GetPkey());
    cnp.bth.SetDestQp(destQp);
    cnp.bth.SetBecn(true);
    RdmaAhAttr av = ReplyAv(c);
    if (info.global)
    {
        av.is_global = 1;
        av.grh.dgid = info.sgid;
    }
    if (info.slid != 0)
    {
        // InfiniBand: back to the sender's LID and SL (a UD QP has no address vector of its
        // own; for a connected QP this is its path anyway).
        av.dlid = info.slid;
        av.sl = info.sl;
    }
    m_counters.cnpsSent++;
    QueueResponse(c, BuildPacket(cnp, nullptr, 0), av);
}

RdmaAhAttr
RdmaEngine::ReplyAv(const RdmaQpContext& c) const
{
    RdmaAhAttr av = c.qp->GetAttr().ah_attr;
    if (av.port_num == 0)
    {
        av.port_num = c.qp->GetAttr().port_num ? c.qp->GetAttr().port_num : 1;
    }
    return av;
}

// ---- completions and SGE copies --------------------------------------------------------------

void
RdmaEngine::PushSendWc(RdmaQpContext& c, const RdmaWc& wc, bool signaled)
{
    // IBA vol. 1 §10.7.3.1 / ibv_post_send(3): unsignaled WRs that succeed leave no
    // completion; errors always complete.
    if (wc.status == RdmaWcStatus::SUCCESS && !signaled)
    {
        return;
    }
    m_counters.sendCompletions++;
    m_completionTrace(wc, false);
    c.qp->GetSendCq()->Push(wc);
}

void
RdmaEngine::PushRecvWc(RdmaQpContext& c, const RdmaWc& wc, bool solicited)
{
    m_counters.recvCompletions++;
    m_completionTrace(wc, true);
    c.qp->GetRecvCq()->Push(wc, solicited);
}

template <typename Visit>
RdmaWcStatus
RdmaEngine::ForEachSglPiece(Ptr<RdmaPd> pd,
                            const std::vector<RdmaSge>& sgl,
                            uint64_t offset,
                            uint64_t len,
                            bool write,
                            Visit visit) const
{
    uint64_t done = 0;
    for (const RdmaSge& sge : sgl)
    {
        if (done == len)
        {
            break;
        }
        if (offset >= sge.length)
        {
            offset -= sge.length;
            continue;
        }
        const uint64_t n = std::min<uint64_t>(len - done, sge.length - offset);
        Ptr<RdmaMr> mr;
        RdmaSge part{sge.addr + offset, static_cast<uint32_t>(n), sge.lkey};
        const RdmaMrCheck chk = m_device->CheckLocalAccess(pd, part, write, &mr);
        if (chk != RdmaMrCheck::OK)
        {
            return RdmaLocalCheckStatus(chk);
        }
        const RdmaWcStatus st = visit(*mr->GetMemory(), mr->ToMemoryAddress(part.addr), n, done);
        if (st != RdmaWcStatus::SUCCESS)
        {
            return st;
        }
        done += n;
        offset = 0;
    }
    return done == len ? RdmaWcStatus::SUCCESS : RdmaWcStatus::LOC_LEN_ERR;
}

RdmaWcStatus
RdmaEngine::GatherSgl(Ptr<RdmaPd> pd,
                      const std::vector<RdmaSge>& sgl,
                      uint64_t offset,
                      uint8_t* dst,
                      uint64_t len) const
{
    return ForEachSglPiece(pd, sgl, offset, len, false,
                           [dst](const RdmaMemory& m, uint64_t at, uint64_t n, uint64_t done) {
                               return m.Read(at, dst + done, n) ? RdmaWcStatus::SUCCESS
                                                                : RdmaWcStatus::LOC_PROT_ERR;
                           });
}

RdmaWcStatus
RdmaEngine::GatherSglUnlessZeros(Ptr<RdmaPd> pd,
                                 const std::vector<RdmaSge>& sgl,
                                 uint64_t offset,
                                 uint64_t len,
                                 std::vector<uint8_t>& out) const
{
    // One walk: every piece checked; a mapped piece of memory that reads as zeros
    // (RdmaMemory::ReadsAsZeros) is not read, and `out` is sized (zeros) only when a piece
    // must be; a read that would fault is left to Read to report.
    out.clear();
    return ForEachSglPiece(
        pd, sgl, offset, len, false,
        [&out, len](const RdmaMemory& m, uint64_t at, uint64_t n, uint64_t done) {
            if (m.ReadsAsZeros() && m.IsMapped(at, n))
            {
                return RdmaWcStatus::SUCCESS;
            }
            if (out.empty())
            {
                out.resize(len);
            }
            return m.Read(at, out.data() + done, n) ? RdmaWcStatus::SUCCESS
                                                     : RdmaWcStatus::LOC_PROT_ERR;
        });
}

RdmaWcStatus
RdmaEngine::ScatterSgl(Ptr<RdmaPd> pd,
                       const std::vector<RdmaSge>& sgl,
                       uint64_t offset,
                       const uint8_t* src,
                       uint64_t len) const
{
    // Check every piece first, so that a failing SGE leaves the earlier ones untouched.
    const RdmaWcStatus checked =
        ForEachSglPiece(pd, sgl, offset, len, true,
                        [](const RdmaMemory&, uint64_t, uint64_t, uint64_t) {
                            return RdmaWcStatus::SUCCESS;
                        });
    if (checked != RdmaWcStatus::SUCCESS)
    {
        return checked;
    }
    return ForEachSglPiece(pd, sgl, offset, len, true,
                           [src](RdmaMemory& m, uint64_t at, uint64_t n, uint64_t done) {
                               return m.Write(at, src + done, n) ? RdmaWcStatus::SUCCESS
                                                                 : RdmaWcStatus::LOC_PROT_ERR;
                           });
}

} // namespace ns3
