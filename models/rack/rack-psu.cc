#include "rack-psu.h"

#include "ns3/double.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cstdio>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RackPsu);

TypeId
RackPsu::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RackPsu")
            .SetParent<RackDevice>()
            .SetGroupName("Cnuas")
            .AddConstructor<RackPsu>()
            .AddAttribute("TemperatureAlarm",
                          "Outlet temperature above which the PSU raises Outlet_Temp_Alarm, "
                          "deg C.",
                          DoubleValue(70.0),
                          MakeDoubleAccessor(&RackPsu::m_tempAlarm),
                          MakeDoubleChecker<double>());
    return tid;
}

RackPsu::RackPsu() = default;

void
RackPsu::DoDispose()
{
    m_model = nullptr;
    RackDevice::DoDispose();
}

void
RackPsu::Bind(Ptr<RackElectricalModel> model, uint32_t shelf, uint32_t slot, uint8_t shelfPins)
{
    m_model = model;
    m_shelf = shelf;
    m_slot = slot;
    m_shelfPins = shelfPins;
    char serial[32];
    std::snprintf(serial, sizeof(serial), "CNUAS%02X%02X", shelfPins, slot);
    SetString("PSU_FBPN", "03-100043");
    // The probe register holds the model string a discovery scan checks (rackmon2 probes it,
    // phosphor-modbus matches it to a profile).
    SetString("PSU_MFR_Model", GetMap().name == "ORV3_HPR_PSU" ? "ECD16010081" : "ECD15020066");
    SetString("PSU_MFR_Date", "2026-W40");
    SetString("PSU_MFR_Serial", serial);
    SetString("PSU_Workorder", "WO01");
    SetString("PSU_HW_Revision", "A01");
    SetString("PSU_FW_Revision", "1.02");
    SetString("PSU_FBL_FW_Revision", "1.00");
    SetNumber("PSU_Position_Number", slot + 1);
    SetNumber("Communication_Baud_Rate", GetMap().baudRate == 115200 ? 4 : 1);
    SetNumber("Vin_Min", 180);
    SetNumber("Vin_Max", 305);
    SetNumber("Vout_Setpoint_H", model->GetBusbarSetpoint());
    SetNumber("Vout_Setpoint_L", model->GetBusbarSetpoint());
    SetNumber("Vout_Setpoint", model->GetBusbarSetpoint());
    SetNumber("Size_Module_Reg_Map", GetMap().registers.back().address + 1);
    SetNumber("Shelf_Location", shelfPins);
    SetFlag("PSU_Setting_Register", "Active_Current_Sharing_Enable", true);
    SetFlag("PSU_Setting_Register", "PLS_Enable_Disable", true);
}

void
RackPsu::Written(uint16_t start, uint16_t count)
{
    const RackRegisterSpec* s = GetMap().Find("PSU_Setting_Register");
    if (s && start <= s->address && start + count > s->address &&
        GetFlag("PSU_Setting_Register", "Clear_Faults_Latch"))
    {
        // Clear_Faults_Latch: latched alarms drop if their cause is gone; the bit self-clears.
        m_latchedDcdc = m_latchedFan = m_latchedTemp = false;
        ClearFlag("PSU_Setting_Register", "Clear_Faults_Latch");
        FireFault("FaultsCleared", true);
    }
}

void
RackPsu::Refresh()
{
    if (!m_model)
    {
        return;
    }
    const RackPsuState p = m_model->GetPsu(m_shelf, m_slot);
    const Time now = Simulator::Now();
    SetNumber("Total_Up_Time", std::floor(now.GetSeconds()));
    SetNumber("Time_Since_Last_On", std::floor(now.GetSeconds()));
    SetNumber("AC_Outage_Counter", p.acOutages);
    SetNumber("AC_Power_Cycle_Counter", p.acOutages);
    SetNumber("PSU_Fault_Counter", p.faultCount);
    SetNumber("PSU_Output_Voltage", p.outputVoltage);
    SetNumber("PSU_Output_Current", p.outputCurrent);
    SetNumber("I_Share_Current_Value", p.shareCurrent);
    SetNumber("PSU_Output_Power", p.outputPower);
    SetNumber("PSU_Output_Voltage_ORing", p.outputVoltage);
    SetNumber("PSU_Bulk_Cap_Voltage", p.acOk ? 400.0 : 0.0);
    SetNumber("PSU_Input_Frequency_AC", p.inputFrequency);
    SetNumber("PSU_ITHD", p.delivering ? 0.05 : 0);
    SetNumber("PSU_Power_Factor", p.powerFactor);
    SetNumber("PSU_Input_Power", p.inputPower);
    SetNumber("PSU_Input_Power_Inst", p.inputPower);
    SetNumber("PSU_Input_Voltage_AC", p.inputVoltage);
    SetNumber("PSU_Input_Current_AC", p.inputCurrent);
    SetNumber("PSU_Input_Current_AC_Inst", p.inputCurrent);
    SetNumber("PSU_RPM_Fan0", p.fanRpm);
    SetNumber("PSU_RPM_Fan1", p.fanRpm);
    SetNumber("PSU_Temp0_Inlet", p.inletTemperature);
    SetNumber("PSU_Temp1_Outlet", p.outletTemperature);
    m_maxTemp = std::max({m_maxTemp, p.inletTemperature, p.outletTemperature});
    m_minTemp = std::min({m_minTemp, p.inletTemperature, p.outletTemperature});
    SetNumber("PSU_Max_Temp", m_maxTemp);
    SetNumber("PSU_Min_Temp", m_minTemp);
    SetNumber("Bus_Voltage_Max_Since_Power_On", m_model->GetBusbarSetpoint());
    SetNumber("Bus_Voltage_Min_Since_Power_On", p.outputVoltage);

    // Serial-line errors the module saw (its CRC_Error_Counter / Timeout_Error_Counter).
    if (Ptr<ModbusSlave> s = GetSlave())
    {
        const auto& c = s->GetFramerCounters();
        SetNumber("CRC_Error_Counter", static_cast<double>(c.badCrc + c.characterError));
        SetNumber("Timeout_Error_Counter", static_cast<double>(c.incomplete));
    }

    m_latchedDcdc = m_latchedDcdc || p.failed;
    m_latchedFan = m_latchedFan || p.fanFailed;
    const bool hot = p.outletTemperature > m_tempAlarm;
    m_latchedTemp = m_latchedTemp || hot;
    const bool acLoss = p.present && !p.acOk;

    SetFlag("DCDC_Alarm_Status_Register", "DCDC_Fail", m_latchedDcdc);
    SetFlag("Temperature_Alarm_Status_Register", "Fan_Failure", m_latchedFan);
    SetFlag("Temperature_Alarm_Status_Register", "Outlet_Temp_Alarm", m_latchedTemp);
    for (const char* bit : {"AC_Not_OK", "AC_UVP", "Bulk_Not_Ok", "Input_Relay_Off"})
    {
        SetFlag("PFC_Alarm_Status_Register", bit, acLoss);
    }
    SetFlag("General_Alarm_Status_Register", "PFC", acLoss);
    SetFlag("General_Alarm_Status_Register", "DCDC", m_latchedDcdc);
    SetFlag("General_Alarm_Status_Register", "DCDC_Converter_Failure", m_latchedDcdc);
    SetFlag("General_Alarm_Status_Register", "Fan_Alarm", m_latchedFan);
    SetFlag("General_Alarm_Status_Register", "Temperature", m_latchedFan || m_latchedTemp);
    SetFlag("General_Alarm_Status_Register", "Temp_Alarm", m_latchedTemp);
    SetFlag("Communication_Alarm_Status_Register", "Modbus_Active", true);

    // HPR Hardware_Signal: slot and shelf address pins, and the active-low AC-loss line.
    for (uint32_t b = 0; b < 3; ++b)
    {
        SetFlag("Hardware_Signal", "PSU_A" + std::to_string(b), (m_slot >> b) & 1u);
        SetFlag("Hardware_Signal", "Shelf_Addr_Int_A" + std::to_string(b), (m_shelfPins >> b) & 1u);
    }
    SetFlag("Hardware_Signal", "AC_Loss_L", !acLoss);
    SetFlag("Hardware_Signal", "Alert", m_latchedDcdc || m_latchedFan || acLoss);
}

} // namespace ns3
