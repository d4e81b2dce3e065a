#include "rdma-pd.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaPd);
NS_OBJECT_ENSURE_REGISTERED(RdmaAh);

TypeId
RdmaPd::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaPd")
                            .SetParent<RdmaResource>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RdmaPd>();
    return tid;
}

RdmaPd::RdmaPd() = default;
RdmaPd::~RdmaPd() = default;

void
RdmaPd::DoDispose()
{
    m_memory = nullptr;
    RdmaResource::DoDispose();
}

TypeId
RdmaAh::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaAh")
                            .SetParent<RdmaResource>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RdmaAh>();
    return tid;
}

RdmaAh::RdmaAh() = default;
RdmaAh::~RdmaAh() = default;

void
RdmaAh::DoDispose()
{
    m_pd = nullptr;
    RdmaResource::DoDispose();
}

} // namespace ns3
