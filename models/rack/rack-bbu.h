// An ORv3 battery backup unit: ORV3_BBU (19200 baud) or ORV3_HPR_BBU (115200).
#ifndef CNUAS_RACK_BBU_H
#define CNUAS_RACK_BBU_H

#include "rack-device.h"
#include "rack-electrical-model.h"

namespace ns3
{

/**
 * \brief An ORv3 BBU: its registers follow one BBU of the RackElectricalModel (Smart-Battery
 * style values: state of charge, pack and cell voltages, signed pack current, capacities, run
 * time to empty, temperatures, busbar voltage) and show its mode:
 *  - charging: BBU_Mode Charging;
 *  - discharging (AC loss, hold-up): BBU_Mode Discharge, Battery_Status Discharging, a
 *    negative Battery_Current, Discharge_Current, Count_of_Discharge_Events counting each
 *    start, Run_Time_To_Empty at the present rate;
 *  - full: Battery_Status Fully_Charged; empty: Fully_Discharged and Terminate_Discharge_Alarm;
 *  - failed: BBU_Status Discharge_Not_Allowed and Charge_Not_Allowed.
 * Address pins: BBU_Module_Hardware_Signals A0-A2 (slot) and RS485_Addr0-2 / Shelf_Addr_int
 * (shelf).
 */
class RackBbu : public RackDevice
{
  public:
    static TypeId GetTypeId();
    RackBbu();

    void Bind(Ptr<RackElectricalModel> model, uint32_t bbu, uint32_t slot, uint8_t shelfPins);
    uint32_t GetBbuIndex() const { return m_bbu; }

  protected:
    void DoDispose() override;
    void Refresh() override;

  private:
    Ptr<RackElectricalModel> m_model;
    uint32_t m_bbu = 0;
    uint32_t m_slot = 0;
    uint8_t m_shelfPins = 0;
};

} // namespace ns3

#endif
