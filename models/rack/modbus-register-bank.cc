#include "modbus-register-bank.h"

#include "ns3/abort.h"
#include "ns3/trace-source-accessor.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(ModbusRegisterBank);
NS_OBJECT_ENSURE_REGISTERED(ModbusMemoryRegisterBank);

TypeId
ModbusRegisterBank::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::ModbusRegisterBank").SetParent<Object>().SetGroupName("Cnuas");
    return tid;
}

ModbusExceptionCode
ModbusRegisterBank::ReadCoils(uint16_t, uint16_t, std::vector<bool>&)
{
    return ModbusExceptionCode::IllegalFunction;
}

ModbusExceptionCode
ModbusRegisterBank::ReadDiscreteInputs(uint16_t, uint16_t, std::vector<bool>&)
{
    return ModbusExceptionCode::IllegalFunction;
}

ModbusExceptionCode
ModbusRegisterBank::ReadHoldingRegisters(uint16_t, uint16_t, std::vector<uint16_t>&)
{
    return ModbusExceptionCode::IllegalFunction;
}

ModbusExceptionCode
ModbusRegisterBank::ReadInputRegisters(uint16_t, uint16_t, std::vector<uint16_t>&)
{
    return ModbusExceptionCode::IllegalFunction;
}

ModbusExceptionCode
ModbusRegisterBank::WriteCoils(uint16_t, const std::vector<bool>&)
{
    return ModbusExceptionCode::IllegalFunction;
}

ModbusExceptionCode
ModbusRegisterBank::WriteHoldingRegisters(uint16_t, const std::vector<uint16_t>&)
{
    return ModbusExceptionCode::IllegalFunction;
}

std::map<uint8_t, std::string>
ModbusRegisterBank::GetDeviceIdentification() const
{
    return {};
}

// ---- ModbusMemoryRegisterBank ------------------------------------------------------------------

TypeId
ModbusMemoryRegisterBank::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::ModbusMemoryRegisterBank")
            .SetParent<ModbusRegisterBank>()
            .SetGroupName("Cnuas")
            .AddConstructor<ModbusMemoryRegisterBank>()
            .AddTraceSource("CoilsWritten",
                            "A master wrote coils: (start, count).",
                            MakeTraceSourceAccessor(&ModbusMemoryRegisterBank::m_coilsWritten),
                            "ns3::ModbusMemoryRegisterBank::WriteCallback")
            .AddTraceSource("HoldingRegistersWritten",
                            "A master wrote holding registers: (start, count).",
                            MakeTraceSourceAccessor(&ModbusMemoryRegisterBank::m_holdingWritten),
                            "ns3::ModbusMemoryRegisterBank::WriteCallback");
    return tid;
}

ModbusMemoryRegisterBank::ModbusMemoryRegisterBank() = default;

namespace
{
template <typename T>
void
Define(std::map<uint16_t, T>& table, uint16_t start, uint32_t count, T value)
{
    NS_ABORT_MSG_IF(static_cast<uint32_t>(start) + count > 0x10000u,
                    "register range past 0xFFFF");
    for (uint32_t i = 0; i < count; ++i)
    {
        table[static_cast<uint16_t>(start + i)] = value;
    }
}

template <typename T>
void
SetDefined(std::map<uint16_t, T>& table, uint16_t a, T v)
{
    auto it = table.find(a);
    NS_ABORT_MSG_IF(it == table.end(), "address " << a << " is not defined");
    it->second = v;
}

template <typename T>
bool
AllDefined(const std::map<uint16_t, T>& table, uint16_t start, std::size_t count)
{
    if (start + count > 0x10000u)
    {
        return false;
    }
    for (std::size_t i = 0; i < count; ++i)
    {
        if (table.find(static_cast<uint16_t>(start + i)) == table.end())
        {
            return false;
        }
    }
    return true;
}
} // namespace

void
ModbusMemoryRegisterBank::DefineCoils(uint16_t start, uint32_t count, bool value)
{
    Define(m_coils, start, count, value);
}

void
ModbusMemoryRegisterBank::DefineDiscreteInputs(uint16_t start, uint32_t count, bool value)
{
    Define(m_discrete, start, count, value);
}

void
ModbusMemoryRegisterBank::DefineHoldingRegisters(uint16_t start, uint32_t count, uint16_t value)
{
    Define(m_holding, start, count, value);
}

void
ModbusMemoryRegisterBank::DefineInputRegisters(uint16_t start, uint32_t count, uint16_t value)
{
    Define(m_input, start, count, value);
}

void
ModbusMemoryRegisterBank::SetHoldingString(uint16_t start,
                                           uint16_t registers,
                                           const std::string& text)
{
    for (uint16_t i = 0; i < registers; ++i)
    {
        const std::size_t k = 2u * i;
        const uint8_t hi = k < text.size() ? static_cast<uint8_t>(text[k]) : 0;
        const uint8_t lo = k + 1 < text.size() ? static_cast<uint8_t>(text[k + 1]) : 0;
        m_holding[static_cast<uint16_t>(start + i)] = static_cast<uint16_t>((hi << 8) | lo);
    }
}

void
ModbusMemoryRegisterBank::SetCoil(uint16_t a, bool v)
{
    SetDefined(m_coils, a, v);
}

void
ModbusMemoryRegisterBank::SetDiscreteInput(uint16_t a, bool v)
{
    SetDefined(m_discrete, a, v);
}

void
ModbusMemoryRegisterBank::SetHoldingRegister(uint16_t a, uint16_t v)
{
    SetDefined(m_holding, a, v);
}

void
ModbusMemoryRegisterBank::SetInputRegister(uint16_t a, uint16_t v)
{
    SetDefined(m_input, a, v);
}

bool
ModbusMemoryRegisterBank::GetCoil(uint16_t a) const
{
    auto it = m_coils.find(a);
    NS_ABORT_MSG_IF(it == m_coils.end(), "coil " << a << " is not defined");
    return it->second;
}

uint16_t
ModbusMemoryRegisterBank::GetHoldingRegister(uint16_t a) const
{
    auto it = m_holding.find(a);
    NS_ABORT_MSG_IF(it == m_holding.end(), "holding register " << a << " is not defined");
    return it->second;
}

uint16_t
ModbusMemoryRegisterBank::GetInputRegister(uint16_t a) const
{
    auto it = m_input.find(a);
    NS_ABORT_MSG_IF(it == m_input.end(), "input register " << a << " is not defined");
    return it->second;
}

void
ModbusMemoryRegisterBank::SetDeviceIdentificationObject(uint8_t id, const std::string& value)
{
    m_deviceId[id] = value;
}

template <typename T>
ModbusExceptionCode
ModbusMemoryRegisterBank::Read(const std::map<uint16_t, T>& table,
                               uint16_t start,
                               uint16_t count,
                               std::vector<T>& out)
{
    out.clear();
    if (!AllDefined(table, start, count))
    {
        return ModbusExceptionCode::IllegalDataAddress;
    }
    for (uint16_t i = 0; i < count; ++i)
    {
        out.push_back(table.at(static_cast<uint16_t>(start + i)));
    }
    return ModbusExceptionCode::None;
}

ModbusExceptionCode
ModbusMemoryRegisterBank::ReadCoils(uint16_t start, uint16_t count, std::vector<bool>& out)
{
    return Read(m_coils, start, count, out);
}

ModbusExceptionCode
ModbusMemoryRegisterBank::ReadDiscreteInputs(uint16_t start, uint16_t count, std::vector<bool>& out)
{
    return Read(m_discrete, start, count, out);
}

ModbusExceptionCode
ModbusMemoryRegisterBank::ReadHoldingRegisters(uint16_t start,
                                               uint16_t count,
                                               std::vector<uint16_t>& out)
{
    return Read(m_holding, start, count, out);
}

ModbusExceptionCode
ModbusMemoryRegisterBank::ReadInputRegisters(uint16_t start,
                                             uint16_t count,
                                             std::vector<uint16_t>& out)
{
    return Read(m_input, start, count, out);
}

ModbusExceptionCode
ModbusMemoryRegisterBank::WriteCoils(uint16_t start, const std::vector<bool>& values)
{
    if (!AllDefined(m_coils, start, values.size()))
    {
        return ModbusExceptionCode::IllegalDataAddress; // nothing written
    }
    for (std::size_t i = 0; i < values.size(); ++i)
    {
        m_coils[static_cast<uint16_t>(start + i)] = values[i];
    }
    m_coilsWritten(start, static_cast<uint16_t>(values.size()));
    return ModbusExceptionCode::None;
}

ModbusExceptionCode
ModbusMemoryRegisterBank::WriteHoldingRegisters(uint16_t start, const std::vector<uint16_t>& values)
{
    if (!AllDefined(m_holding, start, values.size()))
    {
        return ModbusExceptionCode::IllegalDataAddress; // nothing written
    }
    for (std::size_t i = 0; i < values.size(); ++i)
    {
        m_holding[static_cast<uint16_t>(start + i)] = values[i];
    }
    m_holdingWritten(start, static_cast<uint16_t>(values.size()));
    return ModbusExceptionCode::None;
}

std::map<uint8_t, std::string>
ModbusMemoryRegisterBank::GetDeviceIdentification() const
{
    return m_deviceId;
}

} // namespace ns3
