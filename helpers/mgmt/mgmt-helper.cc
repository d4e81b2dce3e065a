#include "mgmt-helper.h"

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
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
    uint32_t n = 0;
    for (auto it = nodes.Begin(); it != nodes.End(); ++it)
    {
        Ptr<Node> node = *it;
        if (IbPortsOf(node).empty() || node->GetObject<IbMadDispatcher>())
        {
            continue;
        }
        Ptr<IbMadDispatcher> d = CreateObject<IbMadDispatcher>();
        node->AggregateObject(d);
        d->Install(node);
        Ptr<IbSmaAgent> sma = m_sma.Create<IbSmaAgent>();
        node->AggregateObject(sma);
        sma->Install(d);
        Ptr<IbPmaAgent> pma = m_pma.Create<IbPmaAgent>();
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
