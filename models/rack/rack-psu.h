// An ORv3 power supply (rectifier) module: ORV3_PSU (19200 baud) or ORV3_HPR_PSU (115200).
#ifndef CNUAS_RACK_PSU_H
#define CNUAS_RACK_PSU_H

#include "rack-device.h"
#include "rack-electrical-model.h"

namespace ns3
{

/**
 * \brief An ORv3 PSU: its registers follow one PSU of the RackElectricalModel.
 *
 * On every read: output voltage, current, I-share, power, input AC voltage/current/power/
 * frequency/power factor, temperatures, fan speeds, up time, counters (AC outages, faults,
 * the slave's CRC errors and incomplete frames) and the alarm registers:
 *  - converter failure: DCDC_Alarm DCDC_Fail, General DCDC and DCDC_Converter_Failure;
 *  - fan failure: Temperature_Alarm Fan_Failure, General Fan_Alarm and Temperature;
 *  - outlet over TemperatureAlarm: Temperature_Alarm Outlet_Temp_Alarm, General Temp_Alarm;
 *  - AC loss: PFC_Alarm AC_Not_OK, AC_UVP, Bulk_Not_Ok, Input_Relay_Off, General PFC (HPR:
 *    Hardware_Signal AC_Loss_L low);
 *  - Communication_Alarm Modbus_Active always.
 * Converter and fan alarms latch: they stay set after the fault clears until the master writes
 * PSU_Setting_Register with Clear_Faults_Latch (bit 14, which then reads back 0), as the
 * register's name says real units do.
 */
class RackPsu : public RackDevice
{
  public:
    static TypeId GetTypeId();
    RackPsu();

    /// Follows PSU `slot` of PSU shelf `shelf` of `model`; `shelfPins` are the shelf's address
    /// pins (reported in the HPR Hardware_Signal and Shelf_Location registers).
    void Bind(Ptr<RackElectricalModel> model, uint32_t shelf, uint32_t slot, uint8_t shelfPins);
    uint32_t GetShelf() const { return m_shelf; }
    uint32_t GetSlot() const { return m_slot; }

  protected:
    void DoDispose() override;
    void Refresh() override;
    void Written(uint16_t start, uint16_t count) override;

  private:
    Ptr<RackElectricalModel> m_model;
    uint32_t m_shelf = 0;
    uint32_t m_slot = 0;
    uint8_t m_shelfPins = 0;
    double m_tempAlarm = 70.0;
    bool m_latchedDcdc = false;
    bool m_latchedFan = false;
    bool m_latchedTemp = false;
    double m_maxTemp = -1e9;
    double m_minTemp = 1e9;
};

} // namespace ns3

#endif
