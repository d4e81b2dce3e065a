#include "ib-sm-helper.h"

#include "helpers/ib-fabric-helper.h"
#include "helpers/mgmt-helper.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sma-agent.h"
#include "models/mgmt/ib-subnet-manager.h"
#include "models/ib/ib-switch.h"

#include "ns3/simulator.h"

#include <chrono>
#include <set>
#include <stdexcept>
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

IbSmBringUp
IbBringUpWithSm(const IbFabric& fabric, uint8_t vls, Time limit)
{
    IbSmBringUp r;
    IbSmHelper h;
    h.SetSmAttribute("OperationalVls", UintegerValue(vls));
    r.sm = h.Install(fabric, fabric.hosts.Get(0), MicroSeconds(2));
    const auto wallStart = std::chrono::steady_clock::now();
    // Stop the run at the end of the first heavy sweep that brings the subnet up.
    Ptr<IbSubnetManager> sm = r.sm;
    const Time end = Simulator::Now() + limit;
    while (sm->GetLastSubnetUp() < Seconds(0) && Simulator::Now() < end)
    {
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
    }
    r.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    if (sm->GetLastSubnetUp() < Seconds(0))
    {
        throw std::runtime_error("the subnet manager did not bring the subnet up within " +
                                 std::to_string(limit.GetSeconds()) + " s (phase " +
                                 IbSweepPhaseName(sm->GetPhase()) + ")");
    }
    r.upAt = sm->GetLastSubnetUp();
    r.smps = sm->GetSmpsSent();
    return r;
}

std::vector<IbRouteHop>
IbFabricRoute(const IbFabric& fabric, uint32_t fromHost, uint16_t dlid)
{
    Ptr<IbNetDevice> src = fabric.HostPort(fromHost);
    if (!src || !src->GetPeer())
    {
        return {};
    }
    std::vector<IbRouteHop> route{{src->GetNode()->GetId(), src->GetPortNumber()}};
    Ptr<IbNetDevice> at = src->GetPeer();
    std::set<uint32_t> seen;
    while (at->IsSwitchPort())
    {
        Ptr<IbSwitch> sw = at->GetNode()->GetObject<IbSwitch>();
        if (sw->GetLid() == dlid)
        {
            return route;
        }
        if (!seen.insert(at->GetNode()->GetId()).second)
        {
            return {};
        }
        const uint8_t out = sw->GetLftEntry(dlid);
        if (out == 0 || out > sw->GetNPorts() || !sw->GetPort(out)->GetPeer())
        {
            return {};
        }
        route.push_back({at->GetNode()->GetId(), out});
        at = sw->GetPort(out)->GetPeer();
    }
    return at->GetLid() == dlid ? route : std::vector<IbRouteHop>{};
}

} // namespace ns3
