#include "ib-cc-helper.h"

#include "ib-sm-helper.h"
#include "mgmt-helper.h"

#include "models/ib/ib-switch.h"

#include "ns3/abort.h"
#include "ns3/uinteger.h"

namespace ns3
{

IbCcHelper::IbCcHelper()
{
    m_manager.SetTypeId("ns3::IbCcManager");
}

void
IbCcHelper::SetManagerAttribute(const std::string& name, const AttributeValue& value)
{
    m_manager.Set(name, value);
}

uint32_t
IbCcHelper::InstallAgents(const IbFabric& fabric, const std::vector<RdmaHca>& hcas) const
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
    uint32_t n = 0;
    for (uint32_t i = 0; i < fabric.switches.GetN(); ++i)
    {
        Ptr<Node> node = fabric.switches.Get(i);
        Ptr<IbSwitch> sw = node->GetObject<IbSwitch>();
        Ptr<IbMadDispatcher> disp = IbMgmtHelper::GetDispatcher(node);
        if (!sw || !disp || GetAgent(node))
        {
            continue;
        }
        Ptr<IbCcSwitchMarker> marker = CreateObject<IbCcSwitchMarker>();
        sw->SetCcMarker(marker);
        Ptr<IbCcAgent> agent = CreateObject<IbCcAgent>();
        agent->InstallSwitch(disp, marker);
        node->AggregateObject(agent);
        ++n;
    }
    for (const RdmaHca& h : hcas)
    {
        Ptr<IbMadDispatcher> disp = IbMgmtHelper::GetDispatcher(h.node);
        Ptr<RdmaCcIba> policy = DynamicCast<RdmaCcIba>(h.engine->GetCongestionControl());
        if (!disp || !policy || GetAgent(h.node))
        {
            continue; // a CA without IBA CC has no CC agent: its MADs are dropped (NoAgent)
        }
        Ptr<IbCcAgent> agent = CreateObject<IbCcAgent>();
        agent->InstallCa(disp, policy);
        h.node->AggregateObject(agent);
        ++n;
    }
    return n;
}

Ptr<IbCcManager>
IbCcHelper::InstallManager(Ptr<Node> node) const
{
    Ptr<IbSubnetManager> sm = IbSmHelper::GetSm(node);
    NS_ABORT_MSG_IF(!sm, "IbCcHelper: no subnet manager on node " << node->GetId());
    Ptr<IbMadDispatcher> disp = IbMgmtHelper::GetDispatcher(node);
    UintegerValue port;
    sm->GetAttribute("Port", port);
    const uint8_t from = node->GetObject<IbSwitch>() ? 0 : static_cast<uint8_t>(port.Get());
    Ptr<IbCcManager> mgr = m_manager.Create<IbCcManager>();
    mgr->Install(sm, disp, from);
    mgr->SetLocalAgent(GetAgent(node));
    node->AggregateObject(mgr);
    return mgr;
}

Ptr<IbCcAgent>
IbCcHelper::GetAgent(Ptr<Node> node)
{
    return node->GetObject<IbCcAgent>();
}

} // namespace ns3
