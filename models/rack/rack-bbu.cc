#include "rack-bbu.h"

#include "ns3/simulator.h"

#include <cmath>
#include <cstdio>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RackBbu);

TypeId
RackBbu::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RackBbu")
                            .SetParent<RackDevice>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RackBbu>();
    return tid;
}

RackBbu::RackBbu() = default;

void
RackBbu::DoDispose()
{
    m_model = nullptr;
    RackDevice::DoDispose();
}

void
RackBbu::Bind(Ptr<RackElectricalModel> model, uint32_t bbu, uint32_t slot, uint8_t shelfPins)
{
    m_model = model;
    m_bbu = bbu;
    m_slot = slot;
    m_shelfPins = shelfPins;
    char serial[32];
    std::snprintf(serial, sizeof(serial), "CNUASB%02X%02X", shelfPins, slot);
    SetString("Manufacture_Name", "CNUAS");
    SetString("Manufacture_Model", GetMap().name == "ORV3_HPR_BBU" ? "BJB3C0001" : "BJA3C0002");
    SetString("Manufacture_Date", "2026-W40");
    SetString("Facebook_Part_Number", "03-100044");
    SetString("Build_Revision", "A1");
    SetString("HW_Revision", "A01");
    SetString("FW_Revision", "1.05");
    SetString("Workorder", "WO02");
    SetString("MFR_Serial", serial);
    SetString("Device_Chemistry", "LION");
    SetString("Manufacturer_Name", "CNUAS");
    SetString("Device_Name", "ORV3-BBU");
    SetNumber("Design_Capacity", model->GetBbuCapacity());
    SetNumber("Design_Voltage", 3.7 * model->GetBbuCells()); // 3.7 V nominal per Li-ion cell
    SetNumber("SOH", 100);
    SetNumber("Number_of_Installed_BBUs", model->GetBbuCount());
    SetNumber("Size_Module_Reg_Map", GetMap().registers.back().address + 1);
    SetFlag("Battery_Status", "Initialized", true);
}

void
RackBbu::Refresh()
{
    if (!m_model)
    {
        return;
    }
    const RackBbuState b = m_model->GetBbu(m_bbu);
    const double full = b.capacityAh;
    const double remaining = full * b.stateOfCharge;
    SetNumber("Relative_State_Of_Charge", std::round(100 * b.stateOfCharge));
    SetNumber("Absolute_State_Of_Charge", std::round(100 * b.stateOfCharge));
    SetNumber("Battery_Voltage", b.packVoltage);
    SetNumber("Battery_Current", b.current);
    SetNumber("Average_Current", b.current);
    SetNumber("Remaining_Capacity", remaining);
    SetNumber("Full_Charge_Capacity", full);
    for (uint32_t i = 1; i <= 12; ++i)
    {
        SetNumber("Cell_Voltage" + std::to_string(i), b.cellVoltage);
    }
    for (uint32_t i = 1; i <= 4; ++i)
    {
        SetNumber("Temp" + std::to_string(i), b.temperature);
    }
    const double ambient = m_model->GetAmbientTemperature();
    SetNumber("Inlet_Ambient_Temperature", ambient);
    SetNumber("Outlet_Ambient_Temperature", b.temperature);
    SetNumber("Charge_Buck_Temperature", b.temperature);
    SetNumber("Discharge_Buck_Temperature", b.temperature);
    SetNumber("Shelf_Busbar_Voltage", m_model->GetBusbarVoltage());
    SetNumber("BBU_Discharger_Output_Voltage_Inside_Oring", m_model->GetBusbarVoltage());
    SetNumber("Charging_Current", b.charging ? b.current : 0);
    SetNumber("Charging_Voltage", b.charging ? b.packVoltage : 0);
    SetNumber("Discharge_Current", b.discharging ? -b.current : 0);
    SetNumber("Count_of_Discharge_Events", b.dischargeEvents);
    SetNumber("Fan_Speed", b.present ? 6000 : 0);
    // Smart Battery convention: 65535 (the register's top) when not discharging.
    const double runSeconds =
        b.discharging && b.current < 0 ? remaining / -b.current * 3600.0 : 1e9;
    SetNumber("Run_Time_To_Empty", runSeconds);
    SetNumber("Average_Time_To_Empty", runSeconds);

    SetFlag("BBU_Mode", "Charging", b.charging);
    SetFlag("BBU_Mode", "Discharge", b.discharging);
    SetFlag("Battery_Status", "Discharging", b.discharging);
    SetFlag("Battery_Status", "Fully_Charged", b.stateOfCharge >= 1.0);
    SetFlag("Battery_Status", "Fully_Discharged", b.stateOfCharge <= 0.0);
    SetFlag("Battery_Status", "Terminate_Discharge_Alarm", b.stateOfCharge <= 0.0);
    SetFlag("BBU_Status", "Discharge_Not_Allowed", b.failed);
    SetFlag("BBU_Status", "Charge_Not_Allowed", b.failed);
    SetFlag("LED_Status", "Power_Good_LED_On", !b.failed);
    SetFlag("LED_Status", "FAULT_LOC_LED_On", b.failed);
    for (uint32_t i = 0; i < 3; ++i)
    {
        const std::string n = std::to_string(i);
        SetFlag("BBU_Module_Hardware_Signals", "A" + n, (m_slot >> i) & 1u);
        SetFlag("BBU_Module_Hardware_Signals", "RS485_Addr" + n, (m_shelfPins >> i) & 1u);
        SetFlag("BBU_Module_Hardware_Signals", "Shelf_Addr_int_" + n, (m_shelfPins >> i) & 1u);
    }
}

} // namespace ns3
