#include "rack-pmm.h"

#include "ns3/simulator.h"

#include <cmath>
#include <cstdio>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RackPmm);

TypeId
RackPmm::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RackPmm")
                            .SetParent<RackDevice>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RackPmm>();
    return tid;
}

RackPmm::RackPmm() = default;

void
RackPmm::DoDispose()
{
    m_modules.clear();
    RackDevice::DoDispose();
}

void
RackPmm::SetModules(const std::vector<Ptr<RackDevice>>& modules, uint8_t shelfLocation)
{
    m_modules = modules;
    m_location = shelfLocation;
    char serial[32];
    std::snprintf(serial, sizeof(serial), "CNUASP%02X", shelfLocation);
    SetString("PMM_FBPN", "03-100045");
    SetString("PMM_MFR_Name", "CNUAS");
    SetString("PMM_MFR_Model", "ECD70000017");
    SetString("PMM_MFR_Date", "2026-W40");
    SetString("PMM_MFR_Serial", serial);
    SetString("PMM_Workorder", "WO03");
    SetString("PMM_HW_Revision", "A01");
    SetString("PMM_FW_Revision", "1.10");
    SetNumber("Size_Module_Reg_Map", GetMap().registers.back().address + 1);
    SetNumber("Shelf_Type_ID", GetMap().name == "ORV3_HPR_PMM_BBU" ? 2 : 1);
    SetNumber("This_Shelf_Location", shelfLocation);
    SetNumber("Modbus_Baud_Rate", 4);
    SetNumber("ISHARE_Cable_Connected", 1);
    SetFlagsRaw("Module_Planned", (1u << modules.size()) - 1);
}

void
RackPmm::Refresh()
{
    SetNumber("Total_Up_Time", std::floor(Simulator::Now().GetSeconds()));
    SetNumber("Time_Since_Last_On", std::floor(Simulator::Now().GetSeconds()));
    SetNumber("This_PMM_Modbus_Address", GetModbusAddress());
    uint32_t present = 0;
    uint32_t alert = 0;
    uint32_t commFault = 0;
    for (std::size_t i = 0; i < m_modules.size(); ++i)
    {
        Ptr<RackDevice> m = m_modules[i];
        if (m->IsDead())
        {
            commFault |= 1u << i;
            continue;
        }
        present |= 1u << i;
        // The module's alarm summary as the PMM reads it over the shelf's internal bus.
        for (const char* reg : {"General_Alarm_Status_Register", "BBU_Status"})
        {
            if (m->GetMap().Find(reg) && m->Sample(reg).value != 0)
            {
                alert |= 1u << i;
            }
        }
    }
    const uint32_t planned = (1u << m_modules.size()) - 1;
    SetFlagsRaw("Module_Present", present);
    SetFlagsRaw("Module_Alert", alert);
    SetFlag("General_Alarm_Status_Register", "Missing_Modules", present != planned);
    SetFlag("General_Alarm_Status_Register", "Module_Alerts", alert != 0);
    SetFlag("General_Alarm_Status_Register", "Module_Modbus_Communication_Error", commFault != 0);
    for (std::size_t i = 0; i < m_modules.size() && i < 6; ++i)
    {
        SetFlag("Communication_Alarm_Status_Register",
                "Module" + std::to_string(i + 1) + "_Modbus_Fault",
                (commFault >> i) & 1u);
    }
}

} // namespace ns3
