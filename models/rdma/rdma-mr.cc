#include "rdma-mr.h"

#include "ns3/abort.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaMr);

const char*
RdmaMrCheckName(RdmaMrCheck c)
{
    switch (c)
    {
    case RdmaMrCheck::OK:
        return "ok";
    case RdmaMrCheck::INVALID_KEY:
        return "invalid-key";
    case RdmaMrCheck::PD_MISMATCH:
        return "pd-mismatch";
    case RdmaMrCheck::OUT_OF_RANGE:
        return "out-of-range";
    case RdmaMrCheck::ACCESS_DENIED:
        return "access-denied";
    }
    return "?";
}

RdmaWcStatus
RdmaLocalCheckStatus(RdmaMrCheck c)
{
    // IBA vol. 1 §10.6.3.2 / §11.4.2.1: an invalid L_Key, a PD mismatch, a range or a rights
    // violation on a local access is a Local Protection Error.
    return c == RdmaMrCheck::OK ? RdmaWcStatus::SUCCESS : RdmaWcStatus::LOC_PROT_ERR;
}

RdmaWcStatus
RdmaRemoteCheckStatus(RdmaMrCheck c)
{
    return c == RdmaMrCheck::OK ? RdmaWcStatus::SUCCESS : RdmaWcStatus::REM_ACCESS_ERR;
}

TypeId
RdmaMr::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaMr")
                            .SetParent<RdmaResource>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RdmaMr>();
    return tid;
}

RdmaMr::RdmaMr() = default;
RdmaMr::~RdmaMr() = default;

void
RdmaMr::DoDispose()
{
    m_pd = nullptr;
    RdmaResource::DoDispose();
}

Ptr<RdmaMemory>
RdmaMr::GetMemory() const
{
    return m_pd ? m_pd->GetMemory() : nullptr;
}

bool
RdmaMr::InRange(uint64_t iova, uint64_t len) const
{
    if (len == 0)
    {
        return true;
    }
    if (RdmaMemory::Wraps(iova, len))
    {
        return false;
    }
    // iova >= start and iova + len <= start + length, written so that nothing overflows (the
    // region itself never wraps: RegMr refuses that).
    return iova >= m_iova && len <= m_length && iova - m_iova <= m_length - len;
}

bool
RdmaMr::Invalidate()
{
    if (!IsAlive() || !m_invalidatable || m_invalidated)
    {
        return false;
    }
    m_invalidated = true;
    return true;
}

RdmaMrCheck
RdmaMr::CheckLocal(uint64_t iova, uint64_t len, bool needWrite) const
{
    // An invalidated region's keys are invalid (IBA vol. 1 §10.6.7: invalidation ends access).
    if (!IsAlive() || m_invalidated)
    {
        return RdmaMrCheck::INVALID_KEY;
    }
    if (!InRange(iova, len))
    {
        return RdmaMrCheck::OUT_OF_RANGE;
    }
    // IBA vol. 1 §10.6.3.1: local read access is always enabled; local write must be granted.
    if (needWrite && !(m_access & RDMA_ACCESS_LOCAL_WRITE))
    {
        return RdmaMrCheck::ACCESS_DENIED;
    }
    return RdmaMrCheck::OK;
}

RdmaMrCheck
RdmaMr::CheckRemote(uint64_t iova, uint64_t len, uint32_t requiredAccess) const
{
    NS_ABORT_MSG_IF(requiredAccess == 0 || (requiredAccess & ~kRdmaAccessRemoteAll),
                    "RdmaMr::CheckRemote: requiredAccess must be REMOTE_WRITE/READ/ATOMIC bits");
    if (!IsAlive() || m_invalidated)
    {
        return RdmaMrCheck::INVALID_KEY;
    }
    if (!InRange(iova, len))
    {
        return RdmaMrCheck::OUT_OF_RANGE;
    }
    if ((m_access & requiredAccess) != requiredAccess)
    {
        return RdmaMrCheck::ACCESS_DENIED;
    }
    return RdmaMrCheck::OK;
}

} // namespace ns3
