#include "rdma-resource.h"

#include "rdma-device.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaResource);

TypeId
RdmaResource::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaResource").SetParent<Object>().SetGroupName("Cnuas");
    return tid;
}

RdmaResource::RdmaResource() = default;
RdmaResource::~RdmaResource() = default;

Ptr<RdmaDevice>
RdmaResource::GetDevice() const
{
    return Ptr<RdmaDevice>(m_device);
}

} // namespace ns3
