// What every fabric's HCA helper configures the same way: the factories of the verbs device, the
// packet engine, the fabric's link port and the congestion-control policy, and the assembly of
// one host's HCA from them. RdmaHelper (InfiniBand) and RoceHelper (RoCEv2) differ only in the
// port type and its net device.
#ifndef CNUAS_RDMA_HCA_FACTORIES_H
#define CNUAS_RDMA_HCA_FACTORIES_H

#include "models/rdma/rdma-congestion-control.h"
#include "models/rdma/rdma-device.h"
#include "models/rdma/rdma-engine.h"
#include "models/rdma/rdma-link-port.h"

#include "ns3/node.h"
#include "ns3/object-factory.h"

#include <string>

namespace ns3
{

class RdmaHcaFactories
{
  public:
    void SetDeviceAttribute(const std::string& name, const AttributeValue& value);
    void SetEngineAttribute(const std::string& name, const AttributeValue& value);
    void SetPortAttribute(const std::string& name, const AttributeValue& value);
    /// The congestion-control policy's TypeId name (default "ns3::RdmaCcNone"); one instance
    /// per engine.
    void SetCongestionControl(const std::string& typeId);
    void SetCongestionControlAttribute(const std::string& name, const AttributeValue& value);

  protected:
    /// Factories with the defaults shared by every fabric; `portTypeId` is the RdmaLinkPort.
    explicit RdmaHcaFactories(const std::string& portTypeId);

    /// The parts of host `index`'s HCA, bound together and aggregated to `node`: a device with
    /// deterministic key streams (AssignStreams(1000 + index)), an engine on that device with
    /// `port` and a fresh congestion-control instance. A non-zero `lineRateBps` becomes the
    /// engine's LineRate before anything is bound (congestion control starts QPs at it).
    struct Parts
    {
        Ptr<RdmaDevice> device;
        Ptr<RdmaEngine> engine;
        Ptr<RdmaCongestionControl> cc;
    };

    Parts Assemble(Ptr<Node> node,
                   uint32_t index,
                   Ptr<RdmaLinkPort> port,
                   uint64_t lineRateBps = 0) const;

    ObjectFactory m_deviceFactory;
    ObjectFactory m_engineFactory;
    ObjectFactory m_portFactory;
    ObjectFactory m_ccFactory;
};

} // namespace ns3

#endif
