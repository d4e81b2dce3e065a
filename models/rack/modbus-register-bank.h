// What a Modbus slave serves: its four data tables and its identification objects.
#ifndef CNUAS_MODBUS_REGISTER_BANK_H
#define CNUAS_MODBUS_REGISTER_BANK_H

#include "modbus-pdu.h"

#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <map>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \brief The data a Modbus server exposes (MODBUS Application Protocol V1.1b3 §4.3: coils,
 * discrete inputs, holding registers, input registers) and its device identification objects
 * (§6.21).
 *
 * ModbusSlave asks the bank for every read and write after checking the request's form; the
 * bank decides which addresses exist and what they hold. Each call returns None or the exception
 * the slave must answer: IllegalDataAddress (02) for an address the device does not have,
 * ServerDeviceFailure (04) or ServerDeviceBusy (06) as the device sees fit. A write must check
 * every address before changing any. The defaults answer IllegalFunction (01): a device model
 * overrides what it serves.
 *
 * Device models (ORv3 PSU, BBU, power shelf) implement this interface.
 */
class ModbusRegisterBank : public Object
{
  public:
    static TypeId GetTypeId();

    virtual ModbusExceptionCode ReadCoils(uint16_t start, uint16_t count, std::vector<bool>& out);
    virtual ModbusExceptionCode ReadDiscreteInputs(uint16_t start,
                                                   uint16_t count,
                                                   std::vector<bool>& out);
    virtual ModbusExceptionCode ReadHoldingRegisters(uint16_t start,
                                                     uint16_t count,
                                                     std::vector<uint16_t>& out);
    virtual ModbusExceptionCode ReadInputRegisters(uint16_t start,
                                                   uint16_t count,
                                                   std::vector<uint16_t>& out);
    virtual ModbusExceptionCode WriteCoils(uint16_t start, const std::vector<bool>& values);
    virtual ModbusExceptionCode WriteHoldingRegisters(uint16_t start,
                                                      const std::vector<uint16_t>& values);
    /**
     * Device identification objects by id (0x00 VendorName, 0x01 ProductCode,
     * 0x02 MajorMinorRevision, 0x03-0x06 regular, 0x80-0xFF extended). Empty: the device does
     * not serve FC 2B/0E (exception 01).
     */
    virtual std::map<uint8_t, std::string> GetDeviceIdentification() const;
};

/**
 * \brief A register bank held in memory: addresses exist once defined, everything else answers
 * IllegalDataAddress. For tests, and as the storage of simple device models.
 */
class ModbusMemoryRegisterBank : public ModbusRegisterBank
{
  public:
    static TypeId GetTypeId();
    ModbusMemoryRegisterBank();

    /// Write traces: (start, count).
    typedef void (*WriteCallback)(uint16_t start, uint16_t count);

    void DefineCoils(uint16_t start, uint32_t count, bool value = false);
    void DefineDiscreteInputs(uint16_t start, uint32_t count, bool value = false);
    void DefineHoldingRegisters(uint16_t start, uint32_t count, uint16_t value = 0);
    void DefineInputRegisters(uint16_t start, uint32_t count, uint16_t value = 0);
    /// Defines (if needed) and sets holding registers from `start` to a string, 2 characters
    /// per register, big-endian, NUL padded to `registers` (the ASCII fields of ORv3 maps).
    void SetHoldingString(uint16_t start, uint16_t registers, const std::string& text);

    void SetCoil(uint16_t a, bool v);
    void SetDiscreteInput(uint16_t a, bool v);
    void SetHoldingRegister(uint16_t a, uint16_t v);
    void SetInputRegister(uint16_t a, uint16_t v);
    /// Value of a defined address (aborts on an undefined one).
    bool GetCoil(uint16_t a) const;
    uint16_t GetHoldingRegister(uint16_t a) const;
    uint16_t GetInputRegister(uint16_t a) const;
    void SetDeviceIdentificationObject(uint8_t id, const std::string& value);

    ModbusExceptionCode ReadCoils(uint16_t start, uint16_t count, std::vector<bool>& out) override;
    ModbusExceptionCode ReadDiscreteInputs(uint16_t start,
                                           uint16_t count,
                                           std::vector<bool>& out) override;
    ModbusExceptionCode ReadHoldingRegisters(uint16_t start,
                                             uint16_t count,
                                             std::vector<uint16_t>& out) override;
    ModbusExceptionCode ReadInputRegisters(uint16_t start,
                                           uint16_t count,
                                           std::vector<uint16_t>& out) override;
    ModbusExceptionCode WriteCoils(uint16_t start, const std::vector<bool>& values) override;
    ModbusExceptionCode WriteHoldingRegisters(uint16_t start,
                                              const std::vector<uint16_t>& values) override;
    std::map<uint8_t, std::string> GetDeviceIdentification() const override;

  private:
    template <typename T>
    static ModbusExceptionCode Read(const std::map<uint16_t, T>& table,
                                    uint16_t start,
                                    uint16_t count,
                                    std::vector<T>& out);

    std::map<uint16_t, bool> m_coils;
    std::map<uint16_t, bool> m_discrete;
    std::map<uint16_t, uint16_t> m_holding;
    std::map<uint16_t, uint16_t> m_input;
    std::map<uint8_t, std::string> m_deviceId;

    TracedCallback<uint16_t, uint16_t> m_coilsWritten;
    TracedCallback<uint16_t, uint16_t> m_holdingWritten;
};

} // namespace ns3

#endif
