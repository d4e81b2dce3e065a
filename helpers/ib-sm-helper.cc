#include "ib-sm-helper.h"

#include "helpers/ib-fabric-helper.h"
#include "helpers/mgmt-helper.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sma-agent.h"
#include "models/mgmt/ib-subnet-manager.h"
#include "models/ib/ib-switch.h"

#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

uint64_t
IbFabricNodeGuid(uint32_t index)
{
    // Must match IbFabricHelper::Build.
    return 0x0002c90300000000ULL + (uint64_t(index + 1) << 8);
}

IbSmSubnet
IbSmSubnetFromTopology(const Topology& topology)
{
    IbSmSubnet s;
    for (uint32_t i = 0; i < topology.nodes.size(); ++i)
    {
        const TopoNode& tn = topology.nodes[i];
        const bool sw = tn.kind == TopoNodeKind::Switch;
        const uint64_t guid = IbFabricNodeGuid(i);
        int32_t idx = s.AddNode(guid, sw ? IbNodeType::Switch : IbNodeType::ChannelAdapter,
                                static_cast<uint8_t>(tn.ports));
        IbSmNode& n = s.Node(idx);
        n.description = tn.name;
        for (uint32_t p = 0; p <= tn.ports; ++p)
        {
            // A switch's ports all report the node's port 0 GUID; CA ports have their own.
            n.ports[p].guid = sw ? guid : guid + p;
        }
    }
    for (const TopoLink& l : topology.links)
    {
        s.Connect(static_cast<int32_t>(l.a), static_cast<uint8_t>(l.aPort),
                  static_cast<int32_t>(l.b), static_cast<uint8_t>(l.bPort));
    }
    return s;
}

namespace
{
/// The node's manager handler: subnet-management answers and traps go to the SM (GMP answers
/// are not the SM's).
void
DeliverToSm(Ptr<IbSubnetManager> sm, const IbReceivedMad& m)
{
    const uint8_t cls = m.view.mad[1];
    if (cls != IbMgmtClass::SubnLid && cls != IbMgmtClass::SubnDirected)
    {
        return;
    }
    IbSmp smp;
    smp.ReadFrom(m.view.mad.data());
    sm->ReceiveSmp(smp);
}
} // namespace

IbSmHelper::IbSmHelper()
{
    m_factory.SetTypeId(IbSubnetManager::GetTypeId());
}

void
IbSmHelper::SetSmAttribute(const std::string& name, const AttributeValue& value)
{
    m_factory.Set(name, value);
}

Ptr<IbSubnetManager>
IbSmHelper::Install(const IbFabric& fabric, Ptr<Node> node, Time start) const
{
    NodeContainer missing;
    for (uint32_t i = 0; i < fabric.nodes.GetN(); ++i)
    {
        if (!IbMgmtHelper::GetDispatcher(fabric.nodes.Get(i)))
        {
            missing.Add(fabric.nodes.Get(i));
        }
    }
    if (missing.GetN() > 0)
    {
        IbMgmtHelper().Install(missing);
    }
    Ptr<IbMadDispatcher> disp = IbMgmtHelper::GetDispatcher(node);
    NS_ABORT_MSG_IF(!disp, "IbSmHelper: node " << node->GetId() << " has no InfiniBand port");
    NS_ABORT_MSG_IF(GetSm(node), "IbSmHelper: node " << node->GetId() << " already has an SM");
    Ptr<IbSubnetManager> sm = m_factory.Create<IbSubnetManager>();
    if (Ptr<IbSwitch> sw = node->GetObject<IbSwitch>())
    {
        sm->SetGuid(sw->GetNodeGuid());
    }
    else
    {
        UintegerValue port;
        sm->GetAttribute("Port", port);
        Ptr<IbNetDevice> dev = disp->GetPort(static_cast<uint8_t>(port.Get()));
        NS_ABORT_MSG_IF(!dev, "IbSmHelper: node " << node->GetId() << " has no port "
                                                  << port.Get());
        sm->SetGuid(dev->GetPortGuid());
        if (Ptr<IbSmaAgent> sma = IbMgmtHelper::GetSma(node))
        {
            sma->SetIsSm(static_cast<uint8_t>(port.Get()), true);
        }
    }
    sm->SetSmpSender(MakeCallback(&IbMadDispatcher::SendDirectedSmp, disp));
    disp->SetManagerHandler(MakeBoundCallback(&DeliverToSm, sm));
    node->AggregateObject(sm);
    Simulator::Schedule(start, &IbSubnetManager::Start, sm);
    return sm;
}

Ptr<IbSubnetManager>
IbSmHelper::GetSm(Ptr<Node> node)
{
    return node->GetObject<IbSubnetManager>();
}

} // namespace ns3
