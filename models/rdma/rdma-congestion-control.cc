#include "rdma-congestion-control.h"

#include "ns3/uinteger.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaCongestionControl);
NS_OBJECT_ENSURE_REGISTERED(RdmaCcNone);
NS_OBJECT_ENSURE_REGISTERED(RdmaCcFixed);

TypeId
RdmaCongestionControl::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaCongestionControl").SetParent<Object>().SetGroupName("Cnuas");
    return tid;
}

RdmaCongestionControl::~RdmaCongestionControl() = default;

TypeId
RdmaCcNone::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaCcNone")
                            .SetParent<RdmaCongestionControl>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RdmaCcNone>();
    return tid;
}

void
RdmaCcNone::OnQpStart(uint32_t, uint64_t)
{
}

void
RdmaCcNone::OnQpStop(uint32_t)
{
}

void
RdmaCcNone::OnSend(uint32_t, uint32_t, bool)
{
}

void
RdmaCcNone::OnAck(uint32_t, uint32_t, Time)
{
}

void
RdmaCcNone::OnCnp(uint32_t)
{
    ++m_notifications;
}

void
RdmaCcNone::OnBecn(uint32_t)
{
    ++m_notifications;
}

bool
RdmaCcNone::OnEcnMarkedReceive(uint32_t)
{
    ++m_notifications;
    return false;
}

uint64_t
RdmaCcNone::GetRate(uint32_t) const
{
    return 0;
}

uint64_t
RdmaCcNone::GetWindow(uint32_t) const
{
    return 0;
}

TypeId
RdmaCcFixed::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaCcFixed")
            .SetParent<RdmaCcNone>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaCcFixed>()
            .AddAttribute("Rate",
                          "Sending rate every QP is held to, bit/s (0 = unlimited).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaCcFixed::m_rate),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("Window",
                          "Bytes every QP may have in flight, unacknowledged (0 = unlimited).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaCcFixed::m_window),
                          MakeUintegerChecker<uint64_t>());
    return tid;
}

uint64_t
RdmaCcFixed::GetRate(uint32_t) const
{
    return m_rate;
}

uint64_t
RdmaCcFixed::GetWindow(uint32_t) const
{
    return m_window;
}

} // namespace ns3
