#include "rdma-cq.h"

#include "rdma-device.h"

#include "ns3/log.h"
#include "ns3/trace-source-accessor.h"

#include <cerrno>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaCq");
NS_OBJECT_ENSURE_REGISTERED(RdmaCq);

TypeId
RdmaCq::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaCq")
            .SetParent<RdmaResource>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaCq>()
            .AddTraceSource("CompletionEvent",
                            "The armed CQ got a completion that matches its arming "
                            "(ibv_req_notify_cq); the CQ is disarmed.",
                            MakeTraceSourceAccessor(&RdmaCq::m_completionEvent),
                            "ns3::RdmaCq::CompletionEventCallback")
            .AddTraceSource("Drop",
                            "A completion was dropped: the CQ was full (overrun) or already in "
                            "error.",
                            MakeTraceSourceAccessor(&RdmaCq::m_drop),
                            "ns3::RdmaCq::DropCallback");
    return tid;
}

RdmaCq::RdmaCq() = default;
RdmaCq::~RdmaCq() = default;

void
RdmaCq::DoDispose()
{
    m_ring = nullptr;
    m_externalArm = Callback<int>();
    RdmaResource::DoDispose();
}

uint32_t
RdmaCq::GetCqe() const
{
    return m_ring ? m_ring->GetCapacity() : 0;
}

uint32_t
RdmaCq::GetSize() const
{
    return m_ring ? m_ring->GetSize() : 0;
}

int
RdmaCq::Poll(int numEntries, RdmaWc* wc)
{
    if (!IsAlive() || numEntries < 0 || (numEntries > 0 && wc == nullptr))
    {
        return -EINVAL;
    }
    int n = 0;
    while (n < numEntries && !m_ring->IsEmpty())
    {
        wc[n++] = m_ring->At(0);
        m_ring->Pop();
    }
    return n;
}

std::vector<RdmaWc>
RdmaCq::Poll(int numEntries)
{
    std::vector<RdmaWc> out(numEntries > 0 ? static_cast<std::size_t>(numEntries) : 0);
    const int n = Poll(numEntries, out.data());
    out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return out;
}

int
RdmaCq::ReqNotify(bool solicitedOnly)
{
    if (!IsAlive())
    {
        return EINVAL;
    }
    // IBA vol. 1 §11.4.2.2: a request for "next completion" overrides one for "solicited".
    if (!solicitedOnly)
    {
        m_arm = Arm::NEXT;
    }
    else if (m_arm == Arm::NONE)
    {
        m_arm = Arm::SOLICITED;
    }
    return 0;
}

bool
RdmaCq::Push(const RdmaWc& wc, bool solicited)
{
    if (!IsAlive() || m_error)
    {
        ++m_dropped;
        m_drop(wc);
        return false;
    }
    if (m_ring->IsFull())
    {
        // IBA vol. 1 §10.2.6 / §11.6.3.1: CQ overrun is an affiliated asynchronous error; the
        // CQ enters error and its QPs can no longer complete (they go to ERR, QP_FATAL).
        NS_LOG_WARN("CQ " << m_handle << " overrun (" << GetCqe() << " entries)");
        m_error = true;
        ++m_dropped;
        m_drop(wc);
        m_device->HandleCqOverrun(this);
        return false;
    }
    m_ring->Push(wc);
    if (!m_externalArm.IsNull())
    {
        const int request = m_externalArm();
        if (request == 1)
        {
            m_arm = Arm::NEXT;
        }
        else if (request == 2 && m_arm == Arm::NONE)
        {
            m_arm = Arm::SOLICITED;
        }
    }
    // IBA vol. 1 §11.4.2.2: "solicited" notification fires on a solicited completion or on an
    // unsuccessful one.
    const bool wakesSolicited = solicited || wc.status != RdmaWcStatus::SUCCESS;
    const bool fire = m_arm == Arm::NEXT || (m_arm == Arm::SOLICITED && wakesSolicited);
    if (fire)
    {
        m_arm = Arm::NONE;
        m_completionEvent(this);
    }
    return true;
}

} // namespace ns3
