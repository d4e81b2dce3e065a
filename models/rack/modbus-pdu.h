// Modbus PDUs (function code + data): requests and responses of the function codes Cnuas
// serves, and exception responses (MODBUS Application Protocol Specification V1.1b3).
#ifndef CNUAS_MODBUS_PDU_H
#define CNUAS_MODBUS_PDU_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/// Function codes (MODBUS Application Protocol V1.1b3 §5.1, §6).
enum class ModbusFunction : uint8_t
{
    ReadCoils = 0x01,                  ///< §6.1
    ReadDiscreteInputs = 0x02,         ///< §6.2
    ReadHoldingRegisters = 0x03,       ///< §6.3
    ReadInputRegisters = 0x04,         ///< §6.4
    WriteSingleCoil = 0x05,            ///< §6.5
    WriteSingleRegister = 0x06,        ///< §6.6
    Diagnostics = 0x08,                ///< §6.8 (serial line only)
    WriteMultipleCoils = 0x0F,         ///< §6.11
    WriteMultipleRegisters = 0x10,     ///< §6.12
    ReadWriteMultipleRegisters = 0x17, ///< §6.17
    EncapsulatedInterface = 0x2B,      ///< §6.19; MEI type 0x0E: read device identification
};

/// Exception codes (MODBUS Application Protocol V1.1b3 §7). None = no exception.
enum class ModbusExceptionCode : uint8_t
{
    None = 0x00,
    IllegalFunction = 0x01,
    IllegalDataAddress = 0x02,
    IllegalDataValue = 0x03,
    ServerDeviceFailure = 0x04,
    Acknowledge = 0x05,
    ServerDeviceBusy = 0x06,
    MemoryParityError = 0x08,
    GatewayPathUnavailable = 0x0A,
    GatewayTargetFailedToRespond = 0x0B,
};

const char* ModbusExceptionName(ModbusExceptionCode c);

/// An exception response carries the function code with its high bit set (§7).
constexpr uint8_t kModbusExceptionBit = 0x80;
/// MEI type of Read Device Identification (§6.21).
constexpr uint8_t kModbusMeiReadDeviceId = 0x0E;
/// The largest PDU: 256-byte RTU frame minus address and CRC (§4.1).
constexpr std::size_t kModbusMaxPdu = 253;

/// Quantity limits per request (§6.1-§6.17).
constexpr uint16_t kModbusMaxReadBits = 0x07D0;      ///< 2000, FC 01/02
constexpr uint16_t kModbusMaxReadRegisters = 0x007D; ///< 125, FC 03/04 and the read of FC 17
constexpr uint16_t kModbusMaxWriteCoils = 0x07B0;    ///< 1968, FC 0F
constexpr uint16_t kModbusMaxWriteRegisters = 0x007B; ///< 123, FC 10
constexpr uint16_t kModbusMaxRwWriteRegisters = 0x0079; ///< 121, the write of FC 17

/// Read Device ID codes (§6.21).
enum class ModbusReadDeviceIdCode : uint8_t
{
    Basic = 0x01,      ///< stream access, objects 0x00-0x02
    Regular = 0x02,    ///< stream access, objects 0x03-0x7F
    Extended = 0x03,   ///< stream access, objects 0x80-0xFF
    Individual = 0x04, ///< one specific object
};

/// Diagnostics sub-functions of FC 08 this model serves (§6.8; Modbus over serial line v1.02
/// §6.1, Appendix A for the counters).
enum class ModbusDiagnostic : uint16_t
{
    ReturnQueryData = 0x0000,
    ClearCounters = 0x000A,
    BusMessageCount = 0x000B,
    BusCommunicationErrorCount = 0x000C,
    BusExceptionErrorCount = 0x000D,
    ServerMessageCount = 0x000E,
    ServerNoResponseCount = 0x000F,
    ServerNakCount = 0x0010,
    ServerBusyCount = 0x0011,
    BusCharacterOverrunCount = 0x0012,
};

/// One device identification object: id and value (§6.21).
struct ModbusDeviceIdObject
{
    uint8_t id = 0;
    std::string value;
    bool operator==(const ModbusDeviceIdObject& o) const { return id == o.id && value == o.value; }
};

/**
 * \brief A request PDU, decoded. Which fields mean something depends on the function:
 *  - 01, 02, 03, 04: address (starting address), quantity;
 *  - 05: address (output address), bits[0] (ON = 0xFF00, OFF = 0x0000);
 *  - 06: address (register address), registers[0];
 *  - 0F: address, quantity, bits; 10: address, quantity, registers;
 *  - 17: address/quantity = the read, writeAddress/registers = the write;
 *  - 2B/0E: meiType, readDeviceIdCode, objectId;
 *  - 08: subFunction, data;
 *  - any other function: data (the bytes after the function code).
 */
struct ModbusRequest
{
    uint8_t function = 0;
    uint16_t address = 0;
    uint16_t quantity = 0;
    std::vector<uint16_t> registers;
    std::vector<bool> bits;
    uint16_t writeAddress = 0;
    uint8_t meiType = 0;
    uint8_t readDeviceIdCode = 0;
    uint8_t objectId = 0;
    uint16_t subFunction = 0;
    std::vector<uint8_t> data;
    /// Made by Raw(): encoded as function + data whatever the function (set by Raw only).
    bool raw = false;

    static ModbusRequest ReadCoils(uint16_t start, uint16_t quantity);
    static ModbusRequest ReadDiscreteInputs(uint16_t start, uint16_t quantity);
    static ModbusRequest ReadHoldingRegisters(uint16_t start, uint16_t quantity);
    static ModbusRequest ReadInputRegisters(uint16_t start, uint16_t quantity);
    static ModbusRequest WriteSingleCoil(uint16_t address, bool on);
    static ModbusRequest WriteSingleRegister(uint16_t address, uint16_t value);
    static ModbusRequest WriteMultipleCoils(uint16_t start, const std::vector<bool>& values);
    static ModbusRequest WriteMultipleRegisters(uint16_t start,
                                                const std::vector<uint16_t>& values);
    static ModbusRequest ReadWriteMultipleRegisters(uint16_t readStart,
                                                    uint16_t readQuantity,
                                                    uint16_t writeStart,
                                                    const std::vector<uint16_t>& values);
    static ModbusRequest ReadDeviceIdentification(ModbusReadDeviceIdCode code, uint8_t objectId);
    static ModbusRequest Diagnostics(ModbusDiagnostic sub, uint16_t data = 0);
    /// Any function code followed by `data` as given, unchecked (unserved functions, malformed
    /// requests for tests).
    static ModbusRequest Raw(uint8_t function, const std::vector<uint8_t>& data);

    /// The PDU bytes (function code first). Quantities are not checked: a master may send
    /// anything, and a test may want an illegal request.
    std::vector<uint8_t> Encode() const;
    /**
     * Decodes a request PDU as a server must check it (MODBUS Application Protocol V1.1b3 §6
     * state diagrams; Modbus over serial line v1.02 §6.1.2): an unknown or unserved function,
     * MEI type or diagnostic sub-function gives IllegalFunction (01); a wrong length, byte
     * count, quantity or coil value gives IllegalDataValue (03); a range past address 0xFFFF
     * gives IllegalDataAddress (02). Returns None when `out` holds a valid request.
     */
    static ModbusExceptionCode Decode(const uint8_t* pdu, std::size_t n, ModbusRequest& out);
    /// Whether the function writes (the only kind a broadcast may carry, serial line v1.02 §2.1).
    bool IsWrite() const;
};

/// A response PDU, decoded (fields as for ModbusRequest; `value` is the echoed register or
/// coil value of 05/06, `quantity` the echoed quantity of 0F/10).
struct ModbusResponse
{
    uint8_t function = 0; ///< without the exception bit
    ModbusExceptionCode exception = ModbusExceptionCode::None;
    uint16_t address = 0;
    uint16_t quantity = 0;
    uint16_t value = 0;
    std::vector<uint16_t> registers;
    std::vector<bool> bits;
    // 2B/0E
    uint8_t meiType = 0;
    uint8_t readDeviceIdCode = 0;
    uint8_t conformityLevel = 0;
    bool moreFollows = false;
    uint8_t nextObjectId = 0;
    std::vector<ModbusDeviceIdObject> objects;
    // 08
    uint16_t subFunction = 0;
    std::vector<uint8_t> data;

    bool IsException() const { return exception != ModbusExceptionCode::None; }
    static ModbusResponse Exception(uint8_t function, ModbusExceptionCode code);
    std::vector<uint8_t> Encode() const;
    /**
     * Decodes `pdu` as the answer to `req`: false (with the reason in `why`) if the function
     * differs, the length or byte count is wrong, or an echo (05, 06, 0F, 10, 08/00) does not
     * match the request.
     */
    static bool Decode(const ModbusRequest& req,
                       const uint8_t* pdu,
                       std::size_t n,
                       ModbusResponse& out,
                       std::string* why = nullptr);
};

/// Bits packed LSB first, 8 per byte (§6.1, §6.11).
std::vector<uint8_t> ModbusPackBits(const std::vector<bool>& bits);
std::vector<bool> ModbusUnpackBits(const uint8_t* bytes, std::size_t nBytes, std::size_t nBits);

} // namespace ns3

#endif
