#include "ib-cm-agent.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbCmAgent");
NS_OBJECT_ENSURE_REGISTERED(IbCmAgent);

const char*
IbCmEventTypeName(IbCmEventType t)
{
    switch (t)
    {
    case IbCmEventType::ReqReceived:
        return "REQ received";
    case IbCmEventType::RepReceived:
        return "REP received";
    case IbCmEventType::RtuReceived:
        return "RTU received";
    case IbCmEventType::RejReceived:
        return "REJ received";
    case IbCmEventType::DreqReceived:
        return "DREQ received";
    case IbCmEventType::DrepReceived:
        return "DREP received";
    case IbCmEventType::Timeout:
        return "timeout";
    case IbCmEventType::SidrReqReceived:
        return "SIDR_REQ received";
    case IbCmEventType::SidrRepReceived:
        return "SIDR_REP received";
    }
    return "?";
}

TypeId
IbCmAgent::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbCmAgent")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbCmAgent>()
            .AddAttribute("ResponseTimeout",
                          "How long a REQ, REP, DREQ or SIDR_REQ waits for its answer before it is "
                          "sent again: 4.096 us x 2^value (IBA vol. 1 §12.6.5; the Linux rdma_cm "
                          "uses 20, 4.3 s). Also the REQ's Local and Remote CM Response Timeout.",
                          UintegerValue(20),
                          MakeUintegerAccessor(&IbCmAgent::m_responseTimeout),
                          MakeUintegerChecker<uint8_t>(0, 31))
            .AddAttribute("MaxRetries",
                          "How many times an unanswered REQ, REP, DREQ or SIDR_REQ is sent again "
                          "before the handshake times out (the REQ's Max CM Retries, 4 bits; "
                          "the Linux rdma_cm uses 15).",
                          UintegerValue(15),
                          MakeUintegerAccessor(&IbCmAgent::m_maxRetries),
                          MakeUintegerChecker<uint8_t>(0, 15))
            .AddTraceSource("MadTx",
                            "A CM MAD sent: (attribute ID, local communication ID, 256 bytes).",
                            MakeTraceSourceAccessor(&IbCmAgent::m_txTrace),
                            "ns3::IbCmAgent::MadTracedCallback")
            .AddTraceSource("MadRx",
                            "A CM MAD taken: (attribute ID, local communication ID or 0, bytes).",
                            MakeTraceSourceAccessor(&IbCmAgent::m_rxTrace),
                            "ns3::IbCmAgent::MadTracedCallback");
    return tid;
}

IbCmAgent::IbCmAgent() = default;
IbCmAgent::~IbCmAgent() = default;

void
IbCmAgent::DoDispose()
{
    for (auto& [id, c] : m_conns)
    {
        c.timer.Cancel();
    }
    m_conns.clear();
    m_listeners.clear();
    m_send = SendCallback();
    Object::DoDispose();
}

void
IbCmAgent::SetSendCallback(SendCallback cb)
{
    m_send = cb;
}

void
IbCmAgent::SetCaGuid(uint64_t guid)
{
    m_caGuid = guid;
    // Communication IDs differ between ports (a peer tells connections apart by ID and GUID)
    // and are deterministic for a given fabric.
    m_nextCommId = static_cast<uint32_t>(guid * 0x9E3779B97F4A7C15ULL >> 40) | 1;
    m_nextTid = (guid & 0xFFFF) << 32 | 1;
}

uint32_t
IbCmAgent::NewCommId()
{
    uint32_t id;
    do
    {
        id = m_nextCommId++;
    } while (id == 0 || m_conns.count(id) != 0);
    return id;
}

uint64_t
IbCmAgent::NewTransactionId()
{
    return m_nextTid++;
}

Time
IbCmAgent::ResponseWait() const
{
    // IBA vol. 1 §12.6.5: 4.096 us x 2^timeout.
    return NanoSeconds(int64_t{4096} << m_responseTimeout);
}

IbCmAgent::Conn*
IbCmAgent::Find(uint32_t commId)
{
    auto it = m_conns.find(commId);
    return it == m_conns.end() ? nullptr : &it->second;
}

bool
IbCmAgent::Send(Conn& c, const IbCmMessage& m, uint32_t commId)
{
    c.lastSent = m;
    const auto mad = m.Encode();
    ++m_counters.sent;
    m_txTrace(m.attrId, commId, mad.data());
    NS_LOG_INFO("CM " << IbCmAttrName(m.attrId) << " comm " << commId << " to LID " << c.peer.lid);
    return !m_send.IsNull() && m_send(mad.data(), c.peer);
}

void
IbCmAgent::Arm(uint32_t commId)
{
    Conn* c = Find(commId);
    if (!c)
    {
        return;
    }
    c->timer.Cancel();
    c->timer = Simulator::Schedule(ResponseWait(), &IbCmAgent::OnTimeout, this, commId);
}

void
IbCmAgent::OnTimeout(uint32_t commId)
{
    Conn* c = Find(commId);
    if (!c)
    {
        return;
    }
    if (c->retriesLeft > 0)
    {
        --c->retriesLeft;
        ++m_counters.retransmitted;
        const IbCmMessage again = c->lastSent;
        Send(*c, again, commId);
        Arm(commId);
        return;
    }
    ++m_counters.timeouts;
    const IbCmMessage unanswered = c->lastSent;
    const IbCmAddress peer = c->peer;
    if (c->state == State::ReqSent)
    {
        // §12.9.5.1: the active side that gives up tells the passive side (REJ, Timeout).
        IbCmMessage rej;
        rej.attrId = IbCmAttr::Rej;
        rej.transactionId = c->transactionId;
        rej.localCommId = commId;
        rej.remoteCommId = 0;
        rej.messageRejected = 0;
        rej.reason = IbCmRejReason::Timeout;
        Send(*c, rej, commId);
    }
    Notify(commId, IbCmEventType::Timeout, unanswered, peer);
    Forget(commId);
}

void
IbCmAgent::Notify(uint32_t commId, IbCmEventType type, const IbCmMessage& m,
                  const IbCmAddress& from)
{
    Conn* c = Find(commId);
    if (!c || c->cb.IsNull())
    {
        return;
    }
    EventCallback cb = c->cb; // the callback may destroy the connection
    IbCmEvent ev;
    ev.type = type;
    ev.commId = commId;
    ev.msg = m;
    ev.from = from;
    cb(ev);
}

void
IbCmAgent::Forget(uint32_t commId)
{
    auto it = m_conns.find(commId);
    if (it != m_conns.end())
    {
        it->second.timer.Cancel();
        m_conns.erase(it);
    }
}

bool
IbCmAgent::Listen(uint64_t serviceId, EventCallback cb)
{
    return m_listeners.emplace(serviceId, cb).second;
}

void
IbCmAgent::StopListening(uint64_t serviceId)
{
    m_listeners.erase(serviceId);
}

void
IbCmAgent::SetConnectionCallback(uint32_t commId, EventCallback cb)
{
    if (Conn* c = Find(commId))
    {
        c->cb = cb;
    }
}

uint32_t
IbCmAgent::SendReq(IbCmMessage req, const IbCmAddress& to, EventCallback cb)
{
    const uint32_t id = NewCommId();
    Conn& c = m_conns[id];
    c.state = req.attrId == IbCmAttr::SidrReq ? State::SidrReqSent : State::ReqSent;
    c.peer = to;
    c.cb = cb;
    c.serviceId = req.serviceId;
    c.transactionId = NewTransactionId();
    c.retriesLeft = m_maxRetries;
    req.transactionId = c.transactionId;
    req.localCommId = id;
    if (req.attrId == IbCmAttr::Req)
    {
        req.localCaGuid = m_caGuid;
        req.remoteCmResponseTimeout = m_responseTimeout;
        req.localCmResponseTimeout = m_responseTimeout;
        req.maxCmRetries = m_maxRetries;
    }
    Send(c, req, id);
    Arm(id);
    return id;
}

bool
IbCmAgent::SendRep(uint32_t commId, IbCmMessage rep)
{
    Conn* c = Find(commId);
    if (!c || c->state != State::ReqRcvd)
    {
        return false;
    }
    rep.attrId = IbCmAttr::Rep;
    rep.transactionId = c->transactionId;
    rep.localCommId = commId;
    rep.remoteCommId = c->remoteCommId;
    rep.localCaGuid = m_caGuid;
    c->state = State::RepSent;
    c->retriesLeft = m_maxRetries;
    Send(*c, rep, commId);
    Arm(commId);
    return true;
}

bool
IbCmAgent::SendRtu(uint32_t commId, const std::vector<uint8_t>& privateData)
{
    Conn* c = Find(commId);
    if (!c || c->state != State::RepRcvd)
    {
        return false;
    }
    IbCmMessage rtu;
    rtu.attrId = IbCmAttr::Rtu;
    rtu.transactionId = c->transactionId;
    rtu.localCommId = commId;
    rtu.remoteCommId = c->remoteCommId;
    rtu.privateData = privateData;
    c->state = State::Established;
    c->timer.Cancel();
    Send(*c, rtu, commId);
    return true;
}

bool
IbCmAgent::SendRej(uint32_t commId, uint16_t reason, const std::vector<uint8_t>& privateData)
{
    Conn* c = Find(commId);
    if (!c || (c->state != State::ReqRcvd && c->state != State::RepRcvd))
    {
        return false;
    }
    IbCmMessage rej;
    rej.attrId = IbCmAttr::Rej;
    rej.transactionId = c->transactionId;
    rej.localCommId = commId;
    rej.remoteCommId = c->remoteCommId;
    rej.messageRejected = c->state == State::ReqRcvd ? 0 : 1;
    rej.reason = reason;
    rej.privateData = privateData;
    Send(*c, rej, commId);
    Forget(commId);
    return true;
}

bool
IbCmAgent::SendSidrRep(uint32_t commId, uint8_t status, uint32_t qpn, uint32_t qkey,
                       const std::vector<uint8_t>& privateData)
{
    Conn* c = Find(commId);
    if (!c || c->state != State::SidrReqRcvd)
    {
        return false;
    }
    IbCmMessage rep;
    rep.attrId = IbCmAttr::SidrRep;
    rep.transactionId = c->transactionId;
    rep.localCommId = c->remoteCommId; // the requester's RequestID
    rep.sidrStatus = status;
    rep.localQpn = qpn;
    rep.localQkey = qkey;
    rep.serviceId = c->serviceId;
    rep.privateData = privateData;
    Send(*c, rep, commId);
    Forget(commId);
    return true;
}

bool
IbCmAgent::SendDreq(uint32_t commId, const std::vector<uint8_t>& privateData)
{
    Conn* c = Find(commId);
    if (!c || c->state != State::Established)
    {
        return false;
    }
    IbCmMessage dreq;
    dreq.attrId = IbCmAttr::Dreq;
    dreq.transactionId = NewTransactionId();
    c->transactionId = dreq.transactionId;
    dreq.localCommId = commId;
    dreq.remoteCommId = c->remoteCommId;
    dreq.localQpn = c->remoteQpn;
    dreq.privateData = privateData;
    c->state = State::DreqSent;
    c->retriesLeft = m_maxRetries;
    Send(*c, dreq, commId);
    Arm(commId);
    return true;
}

bool
IbCmAgent::SendDrep(uint32_t commId, const std::vector<uint8_t>& privateData)
{
    Conn* c = Find(commId);
    if (!c || c->state != State::DreqRcvd)
    {
        return false;
    }
    IbCmMessage drep;
    drep.attrId = IbCmAttr::Drep;
    drep.transactionId = c->transactionId;
    drep.localCommId = commId;
    drep.remoteCommId = c->remoteCommId;
    drep.privateData = privateData;
    Send(*c, drep, commId);
    Forget(commId);
    return true;
}

void
IbCmAgent::Destroy(uint32_t commId)
{
    Conn* c = Find(commId);
    if (!c)
    {
        return;
    }
    c->cb = EventCallback();
    switch (c->state)
    {
    case State::ReqSent:
    case State::RepSent: {
        // The kernel's cm_destroy_id: a handshake this side started or answered is refused
        // (REJ Timeout for a REQ sent, Consumer Reject for a REP sent).
        IbCmMessage rej;
        rej.attrId = IbCmAttr::Rej;
        rej.transactionId = c->transactionId;
        rej.localCommId = commId;
        rej.remoteCommId = c->remoteCommId;
        rej.messageRejected = c->state == State::ReqSent ? 0 : 1;
        rej.reason = c->state == State::ReqSent ? IbCmRejReason::Timeout
                                                : IbCmRejReason::ConsumerReject;
        Send(*c, rej, commId);
        break;
    }
    case State::ReqRcvd:
    case State::RepRcvd:
        SendRej(commId, IbCmRejReason::ConsumerReject, {});
        return;
    case State::Established: {
        IbCmMessage dreq;
        dreq.attrId = IbCmAttr::Dreq;
        dreq.transactionId = NewTransactionId();
        dreq.localCommId = commId;
        dreq.remoteCommId = c->remoteCommId;
        dreq.localQpn = c->remoteQpn;
        Send(*c, dreq, commId);
        break;
    }
    case State::DreqRcvd:
        SendDrep(commId, {});
        return;
    case State::SidrReqRcvd:
        SendSidrRep(commId, IbCmSidrStatus::Rejected, 0, 0, {});
        return;
    case State::DreqSent:
    case State::SidrReqSent:
        break;
    }
    Forget(commId);
}

void
IbCmAgent::Reject(const IbCmMessage& req, const IbCmAddress& to, uint16_t reason, uint8_t which)
{
    IbCmMessage rej;
    rej.attrId = IbCmAttr::Rej;
    rej.transactionId = req.transactionId;
    rej.localCommId = 0;
    rej.remoteCommId = req.localCommId;
    rej.messageRejected = which;
    rej.reason = reason;
    const auto mad = rej.Encode();
    ++m_counters.sent;
    m_txTrace(rej.attrId, 0, mad.data());
    if (!m_send.IsNull())
    {
        m_send(mad.data(), to);
    }
}

void
IbCmAgent::Receive(const uint8_t* mad, const IbCmAddress& from)
{
    IbCmMessage m;
    if (!IbCmMessage::Decode(mad, m))
    {
        ++m_counters.malformed;
        return;
    }
    ++m_counters.received;
    switch (m.attrId)
    {
    case IbCmAttr::Req:
    case IbCmAttr::SidrReq: {
        const bool sidr = m.attrId == IbCmAttr::SidrReq;
        // A REQ seen before (same remote ID and CA GUID; SIDR: same RequestID and sender) is a
        // retry: answer it again if the answer is out, else wait for the consumer.
        for (auto& [id, c] : m_conns)
        {
            if (c.remoteCommId == m.localCommId && (sidr || c.remoteCaGuid == m.localCaGuid) &&
                (c.state == State::ReqRcvd || c.state == State::RepSent ||
                 c.state == State::SidrReqRcvd || c.state == State::Established))
            {
                ++m_counters.duplicates;
                m_rxTrace(m.attrId, id, mad);
                if (c.state == State::RepSent)
                {
                    const IbCmMessage again = c.lastSent;
                    Send(c, again, id);
                }
                return;
            }
        }
        auto l = m_listeners.find(m.serviceId);
        if (l == m_listeners.end())
        {
            ++m_counters.noListener;
            NS_LOG_INFO("CM REQ for service ID 0x" << std::hex << m.serviceId << std::dec
                                                   << ": nobody listens");
            m_rxTrace(m.attrId, 0, mad);
            if (sidr)
            {
                IbCmMessage rep;
                rep.attrId = IbCmAttr::SidrRep;
                rep.transactionId = m.transactionId;
                rep.localCommId = m.localCommId;
                rep.sidrStatus = IbCmSidrStatus::ServiceIdNotSupported;
                rep.serviceId = m.serviceId;
                const auto out = rep.Encode();
                ++m_counters.sent;
                m_txTrace(rep.attrId, 0, out.data());
                if (!m_send.IsNull())
                {
                    m_send(out.data(), from);
                }
            }
            else
            {
                // IBA vol. 1 §12.6.7.2: reason 8, Invalid Service ID (the kernel's answer when
                // no rdma_cm listens on the port).
                Reject(m, from, IbCmRejReason::InvalidServiceId, 0);
            }
            return;
        }
        const uint32_t id = NewCommId();
        Conn& c = m_conns[id];
        c.state = sidr ? State::SidrReqRcvd : State::ReqRcvd;
        c.peer = from;
        c.remoteCommId = m.localCommId;
        c.remoteCaGuid = m.localCaGuid;
        c.remoteQpn = m.localQpn;
        c.transactionId = m.transactionId;
        c.serviceId = m.serviceId;
        c.cb = l->second;
        m_rxTrace(m.attrId, id, mad);
        Notify(id, sidr ? IbCmEventType::SidrReqReceived : IbCmEventType::ReqReceived, m, from);
        return;
    }
    case IbCmAttr::SidrRep: {
        Conn* c = Find(m.localCommId); // RequestID: ours
        m_rxTrace(m.attrId, c ? m.localCommId : 0, mad);
        if (!c || c->state != State::SidrReqSent)
        {
            ++m_counters.unmatched;
            return;
        }
        c->timer.Cancel();
        const uint32_t id = m.localCommId;
        Notify(id, IbCmEventType::SidrRepReceived, m, from);
        Forget(id);
        return;
    }
    default:
        break;
    }
    // Every other message names our ID as its Remote Communication ID.
    const uint32_t id = m.remoteCommId;
    Conn* c = Find(id);
    m_rxTrace(m.attrId, c ? id : 0, mad);
    if (!c)
    {
        if (m.attrId == IbCmAttr::Dreq)
        {
            // §12.9.6: a DREQ for a connection no longer here is answered with a DREP.
            IbCmMessage drep;
            drep.attrId = IbCmAttr::Drep;
            drep.transactionId = m.transactionId;
            drep.localCommId = 0;
            drep.remoteCommId = m.localCommId;
            const auto out = drep.Encode();
            ++m_counters.sent;
            m_txTrace(drep.attrId, 0, out.data());
            if (!m_send.IsNull())
            {
                m_send(out.data(), from);
            }
            return;
        }
        ++m_counters.unmatched;
        return;
    }
    switch (m.attrId)
    {
    case IbCmAttr::Rep:
        if (c->state == State::Established && c->lastSent.attrId == IbCmAttr::Rtu)
        {
            ++m_counters.duplicates; // our RTU was lost: send it again
            const IbCmMessage again = c->lastSent;
            Send(*c, again, id);
            return;
        }
        if (c->state != State::ReqSent)
        {
            ++m_counters.unmatched;
            return;
        }
        c->timer.Cancel();
        c->state = State::RepRcvd;
        c->remoteCommId = m.localCommId;
        c->remoteCaGuid = m.localCaGuid;
        c->remoteQpn = m.localQpn;
        Notify(id, IbCmEventType::RepReceived, m, from);
        return;
    case IbCmAttr::Rtu:
        if (c->state != State::RepSent)
        {
            ++m_counters.unmatched;
            return;
        }
        c->timer.Cancel();
        c->state = State::Established;
        Notify(id, IbCmEventType::RtuReceived, m, from);
        return;
    case IbCmAttr::Rej:
        if (c->state != State::ReqSent && c->state != State::RepSent &&
            c->state != State::RepRcvd)
        {
            ++m_counters.unmatched;
            return;
        }
        c->timer.Cancel();
        Notify(id, IbCmEventType::RejReceived, m, from);
        Forget(id);
        return;
    case IbCmAttr::Dreq:
        if (c->state == State::DreqSent)
        {
            // Both sides disconnect at once (§12.9.6): answer, and count ours as answered.
            IbCmMessage drep;
            drep.attrId = IbCmAttr::Drep;
            drep.transactionId = m.transactionId;
            drep.localCommId = id;
            drep.remoteCommId = c->remoteCommId;
            Send(*c, drep, id);
            c->timer.Cancel();
            Notify(id, IbCmEventType::DrepReceived, m, from);
            Forget(id);
            return;
        }
        if (c->state != State::Established && c->state != State::RepSent)
        {
            ++m_counters.unmatched;
            return;
        }
        c->timer.Cancel();
        c->state = State::DreqRcvd;
        c->transactionId = m.transactionId;
        Notify(id, IbCmEventType::DreqReceived, m, from);
        return;
    case IbCmAttr::Drep:
        if (c->state != State::DreqSent)
        {
            ++m_counters.unmatched;
            return;
        }
        c->timer.Cancel();
        Notify(id, IbCmEventType::DrepReceived, m, from);
        Forget(id);
        return;
    default:
        ++m_counters.unmatched;
        return;
    }
}

} // namespace ns3
