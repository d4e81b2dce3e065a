// Installs the management plane's per-node pieces: the SMI/GSI dispatcher, the SMA and the PMA.
#ifndef CNUAS_MGMT_HELPER_H
#define CNUAS_MGMT_HELPER_H

#include "ns3/node-container.h"
#include "ns3/object-factory.h"

#include <string>

namespace ns3
{

class IbMadDispatcher;
class IbSmaAgent;
class IbPmaAgent;
struct IbFabric;

/**
 * \brief Puts an IbMadDispatcher, an IbSmaAgent and an IbPmaAgent on every node (channel
 * adapters and switches), aggregated to the node so that `node->GetObject<IbSmaAgent>()` finds
 * them. Agent attributes come from the ns-3 defaults and can be overridden per helper.
 */
class IbMgmtHelper
{
  public:
    IbMgmtHelper();
    void SetSmaAttribute(const std::string& name, const AttributeValue& value);
    void SetPmaAttribute(const std::string& name, const AttributeValue& value);
    /// Installs on each node that has InfiniBand ports; returns how many got agents.
    uint32_t Install(const NodeContainer& nodes) const;
    uint32_t Install(const IbFabric& fabric) const;

    static Ptr<IbMadDispatcher> GetDispatcher(Ptr<Node> node);
    static Ptr<IbSmaAgent> GetSma(Ptr<Node> node);
    static Ptr<IbPmaAgent> GetPma(Ptr<Node> node);

  private:
    ObjectFactory m_sma;
    ObjectFactory m_pma;
};

} // namespace ns3

#endif
