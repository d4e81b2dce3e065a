#include "modbus-pdu.h"

#include <algorithm>

namespace ns3
{

namespace
{
void
Put16(std::vector<uint8_t>& v, uint16_t x)
{
    v.push_back(static_cast<uint8_t>(x >> 8)); // Modbus is big-endian (§4.2)
    v.push_back(static_cast<uint8_t>(x & 0xFF));
}

uint16_t
Get16(const uint8_t* p)
{
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

void
Fail(std::string* why, const char* text)
{
    if (why)
    {
        *why = text;
    }
}

/// Whether start .. start + quantity - 1 stays within 0x0000..0xFFFF.
bool
RangeFits(uint16_t start, uint16_t quantity)
{
    return static_cast<uint32_t>(start) + quantity <= 0x10000u;
}

/**
 * The function codes whose request names a range (start address, quantity) and, for the
 * write-multiple ones, carries the values after a byte count: one row a code, read by the
 * request encoder and decoder and by the response coder (MODBUS Application Protocol V1.1b3
 * §6.1-§6.4, §6.11, §6.12).
 */
struct RangeFunction
{
    ModbusFunction function;
    bool bits;          ///< coils / discrete inputs (packed 8 a byte), else 16-bit registers
    bool carriesValues; ///< request: quantity, byte count and the values follow the address
    uint16_t maxQuantity;
};

constexpr RangeFunction kRangeFunctions[] = {
    {ModbusFunction::ReadCoils, true, false, kModbusMaxReadBits},                   // §6.1
    {ModbusFunction::ReadDiscreteInputs, true, false, kModbusMaxReadBits},          // §6.2
    {ModbusFunction::ReadHoldingRegisters, false, false, kModbusMaxReadRegisters},  // §6.3
    {ModbusFunction::ReadInputRegisters, false, false, kModbusMaxReadRegisters},    // §6.4
    {ModbusFunction::WriteMultipleCoils, true, true, kModbusMaxWriteCoils},         // §6.11
    {ModbusFunction::WriteMultipleRegisters, false, true, kModbusMaxWriteRegisters}, // §6.12
};

const RangeFunction*
FindRangeFunction(uint8_t function)
{
    for (const RangeFunction& f : kRangeFunctions)
    {
        if (static_cast<uint8_t>(f.function) == function)
        {
            return &f;
        }
    }
    return nullptr;
}

/// Appends a byte count and the values: packed bits or big-endian registers.
void
PutValues(std::vector<uint8_t>& v, bool bits, const std::vector<bool>& b,
          const std::vector<uint16_t>& regs)
{
    if (bits)
    {
        const std::vector<uint8_t> packed = ModbusPackBits(b);
        v.push_back(static_cast<uint8_t>(packed.size()));
        v.insert(v.end(), packed.begin(), packed.end());
        return;
    }
    v.push_back(static_cast<uint8_t>(2 * regs.size()));
    for (uint16_t r : regs)
    {
        Put16(v, r);
    }
}

/// The byte count `quantity` values take: bits packed 8 a byte, registers 2 bytes each.
uint32_t
ValueBytes(bool bits, uint16_t quantity)
{
    return bits ? (quantity + 7u) / 8u : 2u * quantity;
}
} // namespace

const char*
ModbusExceptionName(ModbusExceptionCode c)
{
    switch (c)
    {
    case ModbusExceptionCode::None:
        return "none";
    case ModbusExceptionCode::IllegalFunction:
        return "illegal-function";
    case ModbusExceptionCode::IllegalDataAddress:
        return "illegal-data-address";
    case ModbusExceptionCode::IllegalDataValue:
        return "illegal-data-value";
    case ModbusExceptionCode::ServerDeviceFailure:
        return "server-device-failure";
    case ModbusExceptionCode::Acknowledge:
        return "acknowledge";
    case ModbusExceptionCode::ServerDeviceBusy:
        return "server-device-busy";
    case ModbusExceptionCode::MemoryParityError:
        return "memory-parity-error";
    case ModbusExceptionCode::GatewayPathUnavailable:
        return "gateway-path-unavailable";
    case ModbusExceptionCode::GatewayTargetFailedToRespond:
        return "gateway-target-failed-to-respond";
    }
    return "unknown";
}

std::vector<uint8_t>
ModbusPackBits(const std::vector<bool>& bits)
{
    std::vector<uint8_t> out((bits.size() + 7) / 8, 0);
    for (std::size_t i = 0; i < bits.size(); ++i)
    {
        if (bits[i])
        {
            out[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
        }
    }
    return out;
}

std::vector<bool>
ModbusUnpackBits(const uint8_t* bytes, std::size_t nBytes, std::size_t nBits)
{
    std::vector<bool> out;
    out.reserve(nBits);
    for (std::size_t i = 0; i < nBits && i / 8 < nBytes; ++i)
    {
        out.push_back(((bytes[i / 8] >> (i % 8)) & 1u) != 0);
    }
    return out;
}

// ---- requests ----------------------------------------------------------------------------------

namespace
{
ModbusRequest
MakeRange(ModbusFunction f, uint16_t start, uint16_t quantity)
{
    ModbusRequest r;
    r.function = static_cast<uint8_t>(f);
    r.address = start;
    r.quantity = quantity;
    return r;
}
} // namespace

ModbusRequest
ModbusRequest::ReadCoils(uint16_t start, uint16_t quantity)
{
    return MakeRange(ModbusFunction::ReadCoils, start, quantity);
}

ModbusRequest
ModbusRequest::ReadDiscreteInputs(uint16_t start, uint16_t quantity)
{
    return MakeRange(ModbusFunction::ReadDiscreteInputs, start, quantity);
}

ModbusRequest
ModbusRequest::ReadHoldingRegisters(uint16_t start, uint16_t quantity)
{
    return MakeRange(ModbusFunction::ReadHoldingRegisters, start, quantity);
}

ModbusRequest
ModbusRequest::ReadInputRegisters(uint16_t start, uint16_t quantity)
{
    return MakeRange(ModbusFunction::ReadInputRegisters, start, quantity);
}

ModbusRequest
ModbusRequest::WriteSingleCoil(uint16_t address, bool on)
{
    ModbusRequest r = MakeRange(ModbusFunction::WriteSingleCoil, address, 1);
    r.bits = {on};
    return r;
}

ModbusRequest
ModbusRequest::WriteSingleRegister(uint16_t address, uint16_t value)
{
    ModbusRequest r = MakeRange(ModbusFunction::WriteSingleRegister, address, 1);
    r.registers = {value};
    return r;
}

ModbusRequest
ModbusRequest::WriteMultipleCoils(uint16_t start, const std::vector<bool>& values)
{
    ModbusRequest r = MakeRange(ModbusFunction::WriteMultipleCoils, start,
                                static_cast<uint16_t>(values.size()));
    r.bits = values;
    return r;
}

ModbusRequest
ModbusRequest::WriteMultipleRegisters(uint16_t start, const std::vector<uint16_t>& values)
{
    ModbusRequest r = MakeRange(ModbusFunction::WriteMultipleRegisters, start,
                                static_cast<uint16_t>(values.size()));
    r.registers = values;
    return r;
}

ModbusRequest
ModbusRequest::ReadWriteMultipleRegisters(uint16_t readStart,
                                          uint16_t readQuantity,
                                          uint16_t writeStart,
                                          const std::vector<uint16_t>& values)
{
    ModbusRequest r = MakeRange(ModbusFunction::ReadWriteMultipleRegisters, readStart,
                                readQuantity);
    r.writeAddress = writeStart;
    r.registers = values;
    return r;
}

ModbusRequest
ModbusRequest::ReadDeviceIdentification(ModbusReadDeviceIdCode code, uint8_t objectId)
{
    ModbusRequest r;
    r.function = static_cast<uint8_t>(ModbusFunction::EncapsulatedInterface);
    r.meiType = kModbusMeiReadDeviceId;
    r.readDeviceIdCode = static_cast<uint8_t>(code);
    r.objectId = objectId;
    return r;
}

ModbusRequest
ModbusRequest::Diagnostics(ModbusDiagnostic sub, uint16_t data)
{
    ModbusRequest r;
    r.function = static_cast<uint8_t>(ModbusFunction::Diagnostics);
    r.subFunction = static_cast<uint16_t>(sub);
    Put16(r.data, data);
    return r;
}

ModbusRequest
ModbusRequest::Raw(uint8_t function, const std::vector<uint8_t>& data)
{
    ModbusRequest r;
    r.function = function;
    r.data = data;
    r.raw = true;
    return r;
}

bool
ModbusRequest::IsWrite() const
{
    switch (static_cast<ModbusFunction>(function))
    {
    case ModbusFunction::WriteSingleCoil:
    case ModbusFunction::WriteSingleRegister:
    case ModbusFunction::WriteMultipleCoils:
    case ModbusFunction::WriteMultipleRegisters:
        return true;
    default:
        return false;
    }
}

std::vector<uint8_t>
ModbusRequest::Encode() const
{
    std::vector<uint8_t> v;
    v.push_back(function);
    if (raw)
    {
        v.insert(v.end(), data.begin(), data.end());
        return v;
    }
    if (const RangeFunction* rf = FindRangeFunction(function))
    {
        Put16(v, address);
        Put16(v, quantity);
        if (rf->carriesValues)
        {
            PutValues(v, rf->bits, bits, registers);
        }
        return v;
    }
    switch (static_cast<ModbusFunction>(function))
    {
    case ModbusFunction::WriteSingleCoil:
        Put16(v, address);
        Put16(v, !bits.empty() && bits[0] ? 0xFF00 : 0x0000);
        break;
    case ModbusFunction::WriteSingleRegister:
        Put16(v, address);
        Put16(v, registers.empty() ? 0 : registers[0]);
        break;
    case ModbusFunction::ReadWriteMultipleRegisters:
        Put16(v, address);
        Put16(v, quantity);
        Put16(v, writeAddress);
        Put16(v, static_cast<uint16_t>(registers.size()));
        PutValues(v, false, bits, registers);
        break;
    case ModbusFunction::EncapsulatedInterface:
        v.push_back(meiType);
        if (meiType == kModbusMeiReadDeviceId)
        {
            v.push_back(readDeviceIdCode);
            v.push_back(objectId);
        }
        else
        {
            v.insert(v.end(), data.begin(), data.end());
        }
        break;
    case ModbusFunction::Diagnostics:
        Put16(v, subFunction);
        v.insert(v.end(), data.begin(), data.end());
        break;
    default:
        v.insert(v.end(), data.begin(), data.end());
        break;
    }
    return v;
}

ModbusExceptionCode
ModbusRequest::Decode(const uint8_t* pdu, std::size_t n, ModbusRequest& out)
{
    out = ModbusRequest();
    if (n < 1)
    {
        return ModbusExceptionCode::IllegalFunction;
    }
    out.function = pdu[0];
    const uint8_t* d = pdu + 1;
    const std::size_t len = n - 1;
    constexpr auto kBadValue = ModbusExceptionCode::IllegalDataValue;
    if (const RangeFunction* rf = FindRangeFunction(out.function))
    {
        // Reads are exactly address + quantity; writes add a byte count and the values.
        if (rf->carriesValues ? len < 5 : len != 4)
        {
            return kBadValue;
        }
        out.address = Get16(d);
        out.quantity = Get16(d + 2);
        if (out.quantity < 1 || out.quantity > rf->maxQuantity)
        {
            return kBadValue; // quantity check -> exception 03
        }
        if (rf->carriesValues &&
            (d[4] != ValueBytes(rf->bits, out.quantity) || len != 5u + d[4]))
        {
            return kBadValue; // byte count check -> exception 03
        }
        if (!RangeFits(out.address, out.quantity))
        {
            return ModbusExceptionCode::IllegalDataAddress;
        }
        if (rf->carriesValues && rf->bits)
        {
            out.bits = ModbusUnpackBits(d + 5, d[4], out.quantity);
        }
        else if (rf->carriesValues)
        {
            for (uint16_t i = 0; i < out.quantity; ++i)
            {
                out.registers.push_back(Get16(d + 5 + 2 * i));
            }
        }
        return ModbusExceptionCode::None;
    }
    switch (static_cast<ModbusFunction>(out.function))
    {
    case ModbusFunction::WriteSingleCoil: {
        if (len != 4)
        {
            return kBadValue;
        }
        out.address = Get16(d);
        const uint16_t value = Get16(d + 2);
        if (value != 0xFF00 && value != 0x0000)
        {
            return kBadValue; // §6.5: only 0x0000 and 0xFF00 are valid
        }
        out.quantity = 1;
        out.bits = {value == 0xFF00};
        return ModbusExceptionCode::None;
    }
    case ModbusFunction::WriteSingleRegister:
        if (len != 4)
        {
            return kBadValue;
        }
        out.address = Get16(d);
        out.quantity = 1;
        out.registers = {Get16(d + 2)};
        return ModbusExceptionCode::None;
    case ModbusFunction::ReadWriteMultipleRegisters: {
        if (len < 9)
        {
            return kBadValue;
        }
        out.address = Get16(d);
        out.quantity = Get16(d + 2);
        out.writeAddress = Get16(d + 4);
        const uint16_t writeQuantity = Get16(d + 6);
        const uint8_t byteCount = d[8];
        if (out.quantity < 1 || out.quantity > kModbusMaxReadRegisters || writeQuantity < 1 ||
            writeQuantity > kModbusMaxRwWriteRegisters || byteCount != 2 * writeQuantity ||
            len != 9u + byteCount)
        {
            return kBadValue; // §6.17
        }
        if (!RangeFits(out.address, out.quantity) || !RangeFits(out.writeAddress, writeQuantity))
        {
            return ModbusExceptionCode::IllegalDataAddress;
        }
        for (uint16_t i = 0; i < writeQuantity; ++i)
        {
            out.registers.push_back(Get16(d + 9 + 2 * i));
        }
        return ModbusExceptionCode::None;
    }
    case ModbusFunction::EncapsulatedInterface:
        if (len < 1)
        {
            return kBadValue;
        }
        out.meiType = d[0];
        if (out.meiType != kModbusMeiReadDeviceId)
        {
            out.data.assign(d + 1, d + len);
            return ModbusExceptionCode::IllegalFunction; // only MEI 0x0E is served
        }
        if (len != 3)
        {
            return kBadValue;
        }
        out.readDeviceIdCode = d[1];
        out.objectId = d[2];
        if (out.readDeviceIdCode < 1 || out.readDeviceIdCode > 4)
        {
            return kBadValue; // §6.21: illegal Read Device ID code -> exception 03
        }
        return ModbusExceptionCode::None;
    case ModbusFunction::Diagnostics: {
        if (len < 2)
        {
            return kBadValue;
        }
        out.subFunction = Get16(d);
        out.data.assign(d + 2, d + len);
        switch (static_cast<ModbusDiagnostic>(out.subFunction))
        {
        case ModbusDiagnostic::ReturnQueryData:
            return ModbusExceptionCode::None; // any data, echoed
        case ModbusDiagnostic::ClearCounters:
        case ModbusDiagnostic::BusMessageCount:
        case ModbusDiagnostic::BusCommunicationErrorCount:
        case ModbusDiagnostic::BusExceptionErrorCount:
        case ModbusDiagnostic::ServerMessageCount:
        case ModbusDiagnostic::ServerNoResponseCount:
        case ModbusDiagnostic::ServerNakCount:
        case ModbusDiagnostic::ServerBusyCount:
        case ModbusDiagnostic::BusCharacterOverrunCount:
            // §6.8: these take a data field of 0x0000.
            if (out.data.size() != 2 || out.data[0] != 0 || out.data[1] != 0)
            {
                return kBadValue;
            }
            return ModbusExceptionCode::None;
        }
        return ModbusExceptionCode::IllegalFunction; // sub-function not served
    }
    default:
        out.data.assign(d, d + len);
        return ModbusExceptionCode::IllegalFunction;
    }
}

// ---- responses ---------------------------------------------------------------------------------

ModbusResponse
ModbusResponse::Exception(uint8_t function, ModbusExceptionCode code)
{
    ModbusResponse r;
    r.function = static_cast<uint8_t>(function & ~kModbusExceptionBit);
    r.exception = code;
    return r;
}

std::vector<uint8_t>
ModbusResponse::Encode() const
{
    std::vector<uint8_t> v;
    if (IsException())
    {
        v.push_back(static_cast<uint8_t>(function | kModbusExceptionBit));
        v.push_back(static_cast<uint8_t>(exception));
        return v;
    }
    v.push_back(function);
    switch (static_cast<ModbusFunction>(function))
    {
    case ModbusFunction::ReadCoils:
    case ModbusFunction::ReadDiscreteInputs:
        PutValues(v, true, bits, registers);
        break;
    case ModbusFunction::ReadHoldingRegisters:
    case ModbusFunction::ReadInputRegisters:
    case ModbusFunction::ReadWriteMultipleRegisters:
        PutValues(v, false, bits, registers);
        break;
    case ModbusFunction::WriteSingleCoil:
    case ModbusFunction::WriteSingleRegister:
        Put16(v, address);
        Put16(v, value);
        break;
    case ModbusFunction::WriteMultipleCoils:
    case ModbusFunction::WriteMultipleRegisters:
        Put16(v, address);
        Put16(v, quantity);
        break;
    case ModbusFunction::EncapsulatedInterface:
        v.push_back(meiType);
        v.push_back(readDeviceIdCode);
        v.push_back(conformityLevel);
        v.push_back(moreFollows ? 0xFF : 0x00);
        v.push_back(nextObjectId);
        v.push_back(static_cast<uint8_t>(objects.size()));
        for (const auto& o : objects)
        {
            v.push_back(o.id);
            v.push_back(static_cast<uint8_t>(o.value.size()));
            v.insert(v.end(), o.value.begin(), o.value.end());
        }
        break;
    case ModbusFunction::Diagnostics:
        Put16(v, subFunction);
        v.insert(v.end(), data.begin(), data.end());
        break;
    default:
        v.insert(v.end(), data.begin(), data.end());
        break;
    }
    return v;
}

bool
ModbusResponse::Decode(const ModbusRequest& req,
                       const uint8_t* pdu,
                       std::size_t n,
                       ModbusResponse& out,
                       std::string* why)
{
    out = ModbusResponse();
    if (n < 1)
    {
        Fail(why, "empty PDU");
        return false;
    }
    const uint8_t fc = pdu[0];
    out.function = static_cast<uint8_t>(fc & ~kModbusExceptionBit);
    if (out.function != req.function)
    {
        Fail(why, "function code differs from the request's");
        return false;
    }
    const uint8_t* d = pdu + 1;
    const std::size_t len = n - 1;
    if (fc & kModbusExceptionBit)
    {
        if (len != 1 || d[0] == 0)
        {
            Fail(why, "malformed exception response");
            return false;
        }
        out.exception = static_cast<ModbusExceptionCode>(d[0]);
        return true;
    }
    switch (static_cast<ModbusFunction>(fc))
    {
    case ModbusFunction::ReadCoils:
    case ModbusFunction::ReadDiscreteInputs:
        if (len < 1 || d[0] != (req.quantity + 7) / 8 || len != 1u + d[0])
        {
            Fail(why, "byte count does not match the quantity requested");
            return false;
        }
        out.bits = ModbusUnpackBits(d + 1, d[0], req.quantity);
        return true;
    case ModbusFunction::ReadHoldingRegisters:
    case ModbusFunction::ReadInputRegisters:
    case ModbusFunction::ReadWriteMultipleRegisters:
        if (len < 1 || d[0] != 2 * req.quantity || len != 1u + d[0])
        {
            Fail(why, "byte count does not match the quantity requested");
            return false;
        }
        for (uint16_t i = 0; i < req.quantity; ++i)
        {
            out.registers.push_back(Get16(d + 1 + 2 * i));
        }
        return true;
    case ModbusFunction::WriteSingleCoil:
    case ModbusFunction::WriteSingleRegister: {
        if (len != 4)
        {
            Fail(why, "wrong length for a write echo");
            return false;
        }
        out.address = Get16(d);
        out.value = Get16(d + 2);
        const std::vector<uint8_t> sent = req.Encode();
        if (sent.size() != n || !std::equal(sent.begin(), sent.end(), pdu))
        {
            Fail(why, "echo differs from the request");
            return false;
        }
        return true;
    }
    case ModbusFunction::WriteMultipleCoils:
    case ModbusFunction::WriteMultipleRegisters:
        if (len != 4)
        {
            Fail(why, "wrong length for a write-multiple response");
            return false;
        }
        out.address = Get16(d);
        out.quantity = Get16(d + 2);
        if (out.address != req.address || out.quantity != req.quantity)
        {
            Fail(why, "address or quantity differs from the request");
            return false;
        }
        return true;
    case ModbusFunction::EncapsulatedInterface: {
        if (len < 6 || d[0] != kModbusMeiReadDeviceId)
        {
            Fail(why, "malformed read device identification response");
            return false;
        }
        out.meiType = d[0];
        out.readDeviceIdCode = d[1];
        out.conformityLevel = d[2];
        if (d[3] != 0x00 && d[3] != 0xFF)
        {
            Fail(why, "More Follows is neither 00 nor FF");
            return false;
        }
        out.moreFollows = d[3] == 0xFF;
        out.nextObjectId = d[4];
        const uint8_t count = d[5];
        std::size_t pos = 6;
        for (uint8_t i = 0; i < count; ++i)
        {
            if (pos + 2 > len || pos + 2 + d[pos + 1] > len)
            {
                Fail(why, "device identification object runs past the PDU");
                return false;
            }
            ModbusDeviceIdObject o;
            o.id = d[pos];
            o.value.assign(reinterpret_cast<const char*>(d + pos + 2), d[pos + 1]);
            out.objects.push_back(o);
            pos += 2u + d[pos + 1];
        }
        if (pos != len)
        {
            Fail(why, "bytes after the last device identification object");
            return false;
        }
        return true;
    }
    case ModbusFunction::Diagnostics:
        if (len < 2)
        {
            Fail(why, "diagnostics response too short");
            return false;
        }
        out.subFunction = Get16(d);
        out.data.assign(d + 2, d + len);
        if (out.subFunction != req.subFunction)
        {
            Fail(why, "sub-function differs from the request's");
            return false;
        }
        if (out.subFunction == static_cast<uint16_t>(ModbusDiagnostic::ReturnQueryData) &&
            out.data != req.data)
        {
            Fail(why, "query data not echoed");
            return false;
        }
        return true;
    default:
        out.data.assign(d, d + len);
        return true;
    }
}

} // namespace ns3
