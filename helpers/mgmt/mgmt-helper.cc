#include "mgmt-helper.h"

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "models/ib/ib-net-device.h" // complete types for the agents' copy constructors
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-pma-agent.h"
#include "models/mgmt/ib-sma-agent.h"

#include "ns3/node.h"

namespace ns3
{

IbMgmtHelper::IbMgmtHelper()
{
    m_sma.SetTypeId(IbSmaAgent::GetTypeId());
    m_pma.SetTypeId(IbPmaAgent::GetTypeId());
}

void
IbMgmtHelper::SetSmaAttribute(const std::string& name, const AttributeValue& value)
{
    m_sma.Set(name, value);
}

void
IbMgmtHelper::SetPmaAttribute(const std::string& name, const AttributeValue& value)
{
    m_pma.Set(name, value);
}

uint32_t
IbMgmtHelper::Install(const NodeContainer& nodes) const
{
    // Every node's dispatcher and agents have the same attribute values, so each is built once
    // through ns-3's attribute construction (ObjectBase::ConstructSelf sets every attribute from
    // its initial value and serializes it to a string on the way, some 6,000 instructions an
    // attribute: 12 of them a node, 5 % of a k=16 bring-up) and every node gets a copy of that
    // one (CopyObject: the copy constructor, i.e. the same attribute values and the same empty
    // state, not yet installed anywhere). The prototypes are never installed or aggregated.
    Ptr<IbMadDispatcher> dispPrototype;
    Ptr<IbSmaAgent> smaPrototype;
    Ptr<IbPmaAgent> pmaPrototype;
    uint32_t n = 0;
    for (auto it = nodes.Begin(); it != nodes.End(); ++it)
    {
        Ptr<Node> node = *it;
        if (IbPortsOf(node).empty() || node->GetObject<IbMadDispatcher>())
        {
            continue;
        }
        if (!dispPrototype)
        {
            dispPrototype = CreateObject<IbMadDispatcher>();
            smaPrototype = m_sma.Create<IbSmaAgent>();
            pmaPrototype = m_pma.Create<IbPmaAgent>();
        }
        Ptr<IbMadDispatcher> d = CopyObject(dispPrototype);
        node->AggregateObject(d);
        d->Install(node);
        Ptr<IbSmaAgent> sma = CopyObject(smaPrototype);
        node->AggregateObject(sma);
        sma->Install(d);
        Ptr<IbPmaAgent> pma = CopyObject(pmaPrototype);
        node->AggregateObject(pma);
        pma->Install(d);
        n++;
    }
    return n;
}

uint32_t
IbMgmtHelper::Install(const IbFabric& fabric) const
{
    return Install(fabric.nodes);
}

Ptr<IbMadDispatcher>
IbMgmtHelper::GetDispatcher(Ptr<Node> node)
{
    return node->GetObject<IbMadDispatcher>();
}

Ptr<IbSmaAgent>
IbMgmtHelper::GetSma(Ptr<Node> node)
{
    return node->GetObject<IbSmaAgent>();
}

Ptr<IbPmaAgent>
IbMgmtHelper::GetPma(Ptr<Node> node)
{
    return node->GetObject<IbPmaAgent>();
}

} // namespace ns3
