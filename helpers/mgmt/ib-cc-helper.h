// Puts InfiniBand congestion control (IBA vol. 1 annex A10) on a fabric: a congestion point
// (FECN marker) in every switch, a CC agent on every node, and a CC manager beside the SM.
#ifndef CNUAS_IB_CC_HELPER_H
#define CNUAS_IB_CC_HELPER_H

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/rdma/rdma-helper.h"

#include "models/mgmt/ib-cc-agent.h"
#include "models/mgmt/ib-cc-manager.h"

#include "ns3/object-factory.h"

#include <vector>

namespace ns3
{

class IbCcHelper
{
  public:
    IbCcHelper();
    /// An attribute of the IbCcManager InstallManager creates (its fabric-wide profile).
    void SetManagerAttribute(const std::string& name, const AttributeValue& value);

    /**
     * Every switch gets an IbCcSwitchMarker (inactive until a SwitchCongestionSetting arrives)
     * and every node an IbCcAgent on its management dispatcher (installed with IbMgmtHelper if
     * missing); a host's agent serves its engine's RdmaCcIba when it runs one. Returns the
     * number of agents installed.
     */
    uint32_t InstallAgents(const IbFabric& fabric, const std::vector<RdmaHca>& hcas) const;
    /// The manager beside the SM on `node` (the SM must be installed there).
    Ptr<IbCcManager> InstallManager(Ptr<Node> node) const;

    static Ptr<IbCcAgent> GetAgent(Ptr<Node> node);

  private:
    ObjectFactory m_manager;
};

} // namespace ns3

#endif
