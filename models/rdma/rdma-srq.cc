#include "rdma-srq.h"

#include "rdma-device.h"

#include "ns3/log.h"

#include <cerrno>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaSrq");
NS_OBJECT_ENSURE_REGISTERED(RdmaSrq);

TypeId
RdmaSrq::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaSrq")
                            .SetParent<RdmaResource>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RdmaSrq>();
    return tid;
}

RdmaSrq::RdmaSrq() = default;
RdmaSrq::~RdmaSrq() = default;

void
RdmaSrq::DoDispose()
{
    m_pd = nullptr;
    m_queue = nullptr;
    RdmaResource::DoDispose();
}

int
RdmaSrq::Refuse(int err, const char* why) const
{
    NS_LOG_DEBUG("SRQ " << m_srqn << ": " << why);
    if (m_device)
    {
        m_device->SetLastError(why);
    }
    return err;
}

int
RdmaSrq::PostRecv(const RdmaRecvWr& wr)
{
    if (!IsAlive())
    {
        return Refuse(EINVAL, "SRQ is not alive");
    }
    if (wr.sg_list.size() > m_maxSge)
    {
        return Refuse(EINVAL, "more SGEs than the SRQ's max_sge");
    }
    if (m_queue->IsFull())
    {
        return Refuse(ENOMEM, "SRQ is full");
    }
    RdmaRecvWqe wqe;
    wqe.wr = wr;
    for (const auto& sge : wr.sg_list)
    {
        wqe.length += sge.length;
    }
    m_queue->Push(wqe);
    return 0;
}

int
RdmaSrq::PostRecv(const std::vector<RdmaRecvWr>& wrs, std::size_t* badWr)
{
    return RdmaPostEach(wrs, badWr, [this](const RdmaRecvWr& wr) { return PostRecv(wr); });
}

int
RdmaSrq::Modify(const RdmaSrqAttr& attr, uint32_t attrMask)
{
    if (!IsAlive())
    {
        return Refuse(EINVAL, "SRQ is not alive");
    }
    if (attrMask & ~(RDMA_SRQ_MAX_WR | RDMA_SRQ_LIMIT))
    {
        return Refuse(EINVAL, "unknown ibv_srq_attr_mask bits");
    }
    if (attrMask & RDMA_SRQ_MAX_WR)
    {
        // The device does not report IBV_DEVICE_SRQ_RESIZE.
        return Refuse(EINVAL, "SRQ resizing (IBV_SRQ_MAX_WR) is not supported");
    }
    if ((attrMask & RDMA_SRQ_LIMIT) && attr.srq_limit > m_queue->GetCapacity())
    {
        return Refuse(EINVAL, "srq_limit larger than max_wr");
    }
    if (attrMask & RDMA_SRQ_LIMIT)
    {
        m_limit = attr.srq_limit;
    }
    return 0;
}

int
RdmaSrq::Query(RdmaSrqAttr& attr) const
{
    if (!IsAlive())
    {
        return Refuse(EINVAL, "SRQ is not alive");
    }
    attr.max_wr = m_queue->GetCapacity();
    attr.max_sge = m_maxSge;
    attr.srq_limit = m_limit;
    return 0;
}

bool
RdmaSrq::Take(RdmaRecvWqe& out)
{
    if (!IsAlive() || m_queue->IsEmpty())
    {
        return false;
    }
    out = m_queue->At(0);
    m_queue->Pop();
    // IBA vol. 1 §10.2.9.3: the limit event fires once when the SRQ drops below the limit.
    if (m_limit != 0 && m_queue->GetSize() < m_limit)
    {
        m_limit = 0;
        RdmaAsyncEvent ev;
        ev.event_type = RdmaEventType::SRQ_LIMIT_REACHED;
        ev.srq = this;
        m_device->RaiseAsyncEvent(ev);
    }
    return true;
}

} // namespace ns3
