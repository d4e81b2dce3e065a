// An ORv3 HPR shelf's power monitoring module (PMM): ORV3_HPR_PMM_PSU or ORV3_HPR_PMM_BBU.
#ifndef CNUAS_RACK_PMM_H
#define CNUAS_RACK_PMM_H

#include "rack-device.h"

#include <vector>

namespace ns3
{

/**
 * \brief The shelf controller of an HPR PSU or BBU shelf. Its registers summarise the shelf's
 * modules (the RackDevices given to SetModules, slot order): Module_Present (a module not dead,
 * i.e. answering on the shelf's internal bus), Module_Planned (every slot), Module_Alert (a
 * module with a General alarm bit or BBU failure bit set), General_Alarm Missing_Modules and
 * Module_Alerts, and Communication_Alarm ModuleN_Modbus_Fault for dead modules; its own
 * address, shelf location and Modbus port.
 */
class RackPmm : public RackDevice
{
  public:
    static TypeId GetTypeId();
    RackPmm();

    void SetModules(const std::vector<Ptr<RackDevice>>& modules, uint8_t shelfLocation);

  protected:
    void DoDispose() override;
    void Refresh() override;

  private:
    std::vector<Ptr<RackDevice>> m_modules;
    uint8_t m_location = 0;
};

} // namespace ns3

#endif
