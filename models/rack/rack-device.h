// A rack device (ORv3 PSU, BBU, shelf PMM) as a Modbus register bank laid out from a map file.
#ifndef CNUAS_RACK_DEVICE_H
#define CNUAS_RACK_DEVICE_H

#include "modbus-register-bank.h"
#include "modbus-slave.h"
#include "rack-register-map.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/random-variable-stream.h"

#include <string>
#include <vector>

namespace ns3
{

/**
 * Modbus addresses from the rack's address pins.
 *
 * ORv3 (rackmon2 DESIGN.md, "ORv3 Register Address types"): bits T1 T0 R2 R1 R0 D2 D1 D0,
 * T = 11 PSU, 01 BBU; R = the rack (shelf) address pins; D = the slot. So shelf pins 1 give
 * PSUs 0xC8-0xCD, BBU shelf pins 0 give 0x40-0x45.
 *
 * HPR (Meta Ventura2 rack, entity-manager configuration): PSU shelves at 0x90, 0x9A, 0xAA,
 * 0xBA (+ slot), their PMMs at 0x20-0x23; BBU shelves at 0x30, 0x3A, 0x5A, 0x6A, their PMMs at
 * 0x10-0x13.
 */
struct RackAddressing
{
    static uint8_t Orv3Psu(uint8_t rackPins, uint8_t slot);
    static uint8_t Orv3Bbu(uint8_t rackPins, uint8_t slot);
    static uint8_t HprPsu(uint8_t shelf, uint8_t slot);
    static uint8_t HprBbu(uint8_t shelf, uint8_t slot);
    static uint8_t HprPmmPsu(uint8_t shelf);
    static uint8_t HprPmmBbu(uint8_t shelf);
};

/**
 * \brief A Modbus register bank laid out from a RackRegisterMap (holding registers, FC 03/06/10/
 * 17), with the behaviour every ORv3 device shares:
 *  - addresses outside the map's registers (the gaps) answer ILLEGAL DATA ADDRESS (02), as
 *    real units do (rackmon then stops reading them);
 *  - a write is checked register by register before anything changes: RO registers answer 02;
 *    WP registers answer WriteProtectException (default 01, ILLEGAL FUNCTION: "the server is in
 *    a wrong state to process a request of this type", MODBUS Application Protocol V1.1b3 §7)
 *    unless the map's write-enable bit is set (ORv3 PSU_Setting_Register bit 0);
 *  - before a read, Refresh() lets the concrete device write its live values (the electrical
 *    model's state at this instant), so every register of one response is from one instant;
 *  - faults of the device's Modbus side: Dead (the slave goes off line) and Chattering (the
 *    slave's transceiver sends bursts of random bytes at random times).
 *
 * Values are set by register name in SI units (V, A, W, deg C, s, Ah, fraction x 100 for %)
 * and converted to the unit the map declares (mV, 10mA, dK, min, mAh, ...), then encoded with
 * the map's format. A map without a register simply does not show it.
 */
class RackDevice : public ModbusRegisterBank
{
  public:
    static TypeId GetTypeId();
    RackDevice();
    ~RackDevice() override;

    /// Trace signatures.
    typedef void (*RegistersCallback)(uint8_t address, uint16_t start, uint16_t count);
    typedef void (*RefusedCallback)(uint8_t address, uint16_t start, uint16_t count, uint8_t code);
    typedef void (*FaultCallback)(uint8_t address, const std::string& fault, bool on);

    /// Lays the registers out (all zero) from `map`. Call once, before use.
    void SetMap(const RackRegisterMap& map);
    const RackRegisterMap& GetMap() const { return m_map; }
    /// The slave that serves this bank (for its address and counters, and the bus faults).
    void SetSlave(Ptr<ModbusSlave> slave);
    Ptr<ModbusSlave> GetSlave() const;
    uint8_t GetModbusAddress() const;

    /// The raw word at a mapped address (aborts on a gap).
    uint16_t GetRaw(uint16_t address) const;
    /// A register's decoded value as last stored (aborts if the map has no such register).
    RackRegisterValue Get(const std::string& name) const;
    /// The same after bringing live values up to now, without the read trace (what a shelf
    /// controller sees of its modules over the shelf's internal bus).
    RackRegisterValue Sample(const std::string& name);

    /// Dead device: the slave neither hears nor answers (ModbusSlave::SetOffline).
    void SetDead(bool dead);
    bool IsDead() const { return m_dead; }
    /// Chattering device: random bytes on the bus at random times while on.
    void SetChattering(bool on);
    uint64_t GetChatterBytes() const { return m_chatterBytes; }
    int64_t AssignStreams(int64_t stream);

    ModbusExceptionCode ReadHoldingRegisters(uint16_t start,
                                             uint16_t count,
                                             std::vector<uint16_t>& out) override;
    ModbusExceptionCode WriteHoldingRegisters(uint16_t start,
                                              const std::vector<uint16_t>& values) override;

  protected:
    void DoDispose() override;
    /// Writes live values before a read (default: nothing).
    virtual void Refresh();
    /// After a master's write changed registers [start, start + count).
    virtual void Written(uint16_t start, uint16_t count);

    /// Setters by register name; silently nothing if the map lacks the register.
    void SetNumber(const std::string& name, double siValue);
    void SetString(const std::string& name, const std::string& text);
    /// Sets a Flags register from (bit name -> on); bits not named keep their value.
    void SetFlag(const std::string& name, const std::string& bit, bool on);
    void SetFlagsRaw(const std::string& name, uint32_t bits);
    bool GetFlag(const std::string& name, const std::string& bit) const;
    bool HasRegister(const std::string& name) const;
    /// Clears the listed bit of a Flags register in the stored raw value (self-clearing bits).
    void ClearFlag(const std::string& name, const std::string& bit);
    /// Unix time as the device's clock says (BMC's last write + time since), seconds.
    uint32_t GetUnixTime() const;
    void FireFault(const std::string& fault, bool on);

  private:
    void ScheduleChatter();
    void Chatter();
    void SetWords(const RackRegisterSpec& spec, const std::vector<uint16_t>& words);

    RackRegisterMap m_map;
    std::vector<uint16_t> m_regs;
    std::vector<int32_t> m_specAt; ///< map register index per address, -1 for a gap
    Ptr<ModbusSlave> m_slave;
    uint8_t m_writeProtectException = 1;
    bool m_dead = false;
    bool m_chattering = false;
    uint64_t m_chatterBytes = 0;
    Time m_unixSetAt;
    uint32_t m_unixSetValue = 0;
    Ptr<RandomVariableStream> m_chatterGap;
    Ptr<UniformRandomVariable> m_chatterRng;
    uint32_t m_chatterMaxBurst = 12;
    EventId m_chatterEvent;

    TracedCallback<uint8_t, uint16_t, uint16_t> m_readTrace;
    TracedCallback<uint8_t, uint16_t, uint16_t> m_writeTrace;
    TracedCallback<uint8_t, uint16_t, uint16_t, uint8_t> m_refusedTrace;
    TracedCallback<uint8_t, const std::string&, bool> m_faultTrace;
};

/// SI value to the unit a map declares ("" and unknown units: unchanged).
double RackToMapUnit(double si, const std::string& unit);

} // namespace ns3

#endif
