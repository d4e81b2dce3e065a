#include "rack-device.h"

#include "rs485-device.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/pointer.h"
#include "ns3/string.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RackDevice");
NS_OBJECT_ENSURE_REGISTERED(RackDevice);

uint8_t
RackAddressing::Orv3Psu(uint8_t rackPins, uint8_t slot)
{
    NS_ABORT_MSG_IF(rackPins > 7 || slot > 7, "ORv3 rack pins and slot are 3 bits each");
    return static_cast<uint8_t>(0xC0 | (rackPins << 3) | slot);
}

uint8_t
RackAddressing::Orv3Bbu(uint8_t rackPins, uint8_t slot)
{
    NS_ABORT_MSG_IF(rackPins > 7 || slot > 7, "ORv3 rack pins and slot are 3 bits each");
    return static_cast<uint8_t>(0x40 | (rackPins << 3) | slot);
}

uint8_t
RackAddressing::HprPsu(uint8_t shelf, uint8_t slot)
{
    static const uint8_t base[] = {0x90, 0x9A, 0xAA, 0xBA};
    NS_ABORT_MSG_IF(shelf > 3 || slot > 5, "HPR: 4 PSU shelves of 6 slots");
    return static_cast<uint8_t>(base[shelf] + slot);
}

uint8_t
RackAddressing::HprBbu(uint8_t shelf, uint8_t slot)
{
    static const uint8_t base[] = {0x30, 0x3A, 0x5A, 0x6A};
    NS_ABORT_MSG_IF(shelf > 3 || slot > 5, "HPR: 4 BBU shelves of 6 slots");
    return static_cast<uint8_t>(base[shelf] + slot);
}

uint8_t
RackAddressing::HprPmmPsu(uint8_t shelf)
{
    NS_ABORT_MSG_IF(shelf > 3, "HPR: 4 PSU shelves");
    return static_cast<uint8_t>(0x20 + shelf);
}

uint8_t
RackAddressing::HprPmmBbu(uint8_t shelf)
{
    NS_ABORT_MSG_IF(shelf > 3, "HPR: 4 BBU shelves");
    return static_cast<uint8_t>(0x10 + shelf);
}

double
RackToMapUnit(double si, const std::string& unit)
{
    if (unit == "mV" || unit == "mA" || unit == "mAh" || unit == "mW")
    {
        return si * 1000.0;
    }
    if (unit == "10mA")
    {
        return si * 100.0;
    }
    if (unit == "dK")
    {
        return (si + 273.15) * 10.0; // deg C to deci-Kelvin (Smart Battery Data units)
    }
    if (unit == "K")
    {
        return si + 273.15;
    }
    if (unit == "min")
    {
        return si / 60.0;
    }
    if (unit == "h")
    {
        return si / 3600.0;
    }
    if (unit == "kW")
    {
        return si / 1000.0;
    }
    return si;
}

TypeId
RackDevice::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RackDevice")
            .SetParent<ModbusRegisterBank>()
            .SetGroupName("Cnuas")
            .AddConstructor<RackDevice>()
            .AddAttribute("WriteProtectException",
                          "Exception code answered to a write of a WP register while the "
                          "write-enable bit is clear (1 ILLEGAL FUNCTION, 2, 3 or 4).",
                          UintegerValue(1),
                          MakeUintegerAccessor(&RackDevice::m_writeProtectException),
                          MakeUintegerChecker<uint8_t>(1, 4))
            .AddAttribute("ChatterGap",
                          "Silence between two garbage bursts of a chattering device, seconds.",
                          StringValue("ns3::ExponentialRandomVariable[Mean=0.05]"),
                          MakePointerAccessor(&RackDevice::m_chatterGap),
                          MakePointerChecker<RandomVariableStream>())
            .AddAttribute("ChatterMaxBurst",
                          "Most bytes in one garbage burst (each burst: 1 to this many).",
                          UintegerValue(12),
                          MakeUintegerAccessor(&RackDevice::m_chatterMaxBurst),
                          MakeUintegerChecker<uint32_t>(1, 300))
            .AddTraceSource("RegistersRead",
                            "A master read registers: (slave address, start, count).",
                            MakeTraceSourceAccessor(&RackDevice::m_readTrace),
                            "ns3::RackDevice::RegistersCallback")
            .AddTraceSource("RegistersWritten",
                            "A master wrote registers: (slave address, start, count).",
                            MakeTraceSourceAccessor(&RackDevice::m_writeTrace),
                            "ns3::RackDevice::RegistersCallback")
            .AddTraceSource("WriteRefused",
                            "A write was refused: (slave address, start, count, exception).",
                            MakeTraceSourceAccessor(&RackDevice::m_refusedTrace),
                            "ns3::RackDevice::RefusedCallback")
            .AddTraceSource("Fault",
                            "A fault of this device was injected or cleared: (slave address, "
                            "fault, on).",
                            MakeTraceSourceAccessor(&RackDevice::m_faultTrace),
                            "ns3::RackDevice::FaultCallback");
    return tid;
}

RackDevice::RackDevice()
{
    m_chatterRng = CreateObject<UniformRandomVariable>();
}

RackDevice::~RackDevice() = default;

void
RackDevice::DoDispose()
{
    m_chatterEvent.Cancel();
    m_slave = nullptr;
    m_chatterGap = nullptr;
    m_chatterRng = nullptr;
    ModbusRegisterBank::DoDispose();
}

void
RackDevice::SetMap(const RackRegisterMap& map)
{
    m_map = map;
    uint32_t top = 0;
    for (const auto& r : map.registers)
    {
        top = std::max<uint32_t>(top, r.address + r.length);
    }
    m_regs.assign(top, 0);
    m_specAt.assign(top, -1);
    for (std::size_t i = 0; i < map.registers.size(); ++i)
    {
        const auto& r = map.registers[i];
        for (uint32_t a = r.address; a < r.address + r.length; ++a)
        {
            m_specAt[a] = static_cast<int32_t>(i);
        }
    }
}

void
RackDevice::SetSlave(Ptr<ModbusSlave> slave)
{
    m_slave = slave;
}

Ptr<ModbusSlave>
RackDevice::GetSlave() const
{
    return m_slave;
}

uint8_t
RackDevice::GetModbusAddress() const
{
    return m_slave ? m_slave->GetAddress() : 0;
}

int64_t
RackDevice::AssignStreams(int64_t stream)
{
    m_chatterRng->SetStream(stream);
    if (m_chatterGap)
    {
        m_chatterGap->SetStream(stream + 1);
    }
    return 2;
}

uint16_t
RackDevice::GetRaw(uint16_t address) const
{
    NS_ABORT_MSG_IF(address >= m_regs.size() || m_specAt[address] < 0,
                    m_map.name << ": no register at " << address);
    return m_regs[address];
}

RackRegisterValue
RackDevice::Get(const std::string& name) const
{
    const RackRegisterSpec* s = m_map.Find(name);
    NS_ABORT_MSG_IF(!s, m_map.name << " has no register " << name);
    return RackDecodeRegister(*s, &m_regs[s->address]);
}

RackRegisterValue
RackDevice::Sample(const std::string& name)
{
    Refresh();
    return Get(name);
}

bool
RackDevice::HasRegister(const std::string& name) const
{
    return m_map.Find(name) != nullptr;
}

void
RackDevice::SetWords(const RackRegisterSpec& spec, const std::vector<uint16_t>& words)
{
    std::copy(words.begin(), words.end(), m_regs.begin() + spec.address);
}

void
RackDevice::SetNumber(const std::string& name, double siValue)
{
    if (const RackRegisterSpec* s = m_map.Find(name))
    {
        SetWords(*s, s->Encode(RackToMapUnit(siValue, s->unit)));
    }
}

void
RackDevice::SetString(const std::string& name, const std::string& text)
{
    if (const RackRegisterSpec* s = m_map.Find(name))
    {
        for (uint16_t i = 0; i < s->length; ++i)
        {
            const std::size_t k = 2u * i;
            const uint8_t hi = k < text.size() ? static_cast<uint8_t>(text[k]) : 0;
            const uint8_t lo = k + 1 < text.size() ? static_cast<uint8_t>(text[k + 1]) : 0;
            m_regs[s->address + i] = static_cast<uint16_t>((hi << 8) | lo);
        }
    }
}

namespace
{
int
BitOf(const RackRegisterSpec& s, const std::string& bit)
{
    for (const auto& [n, name] : s.bits)
    {
        if (name == bit)
        {
            return static_cast<int>(n);
        }
    }
    return -1;
}
} // namespace

void
RackDevice::SetFlag(const std::string& name, const std::string& bit, bool on)
{
    const RackRegisterSpec* s = m_map.Find(name);
    if (!s)
    {
        return;
    }
    const int b = BitOf(*s, bit);
    if (b < 0)
    {
        return;
    }
    // Bit 0 is the LSB of the last (least significant) register of the field.
    const uint16_t word = static_cast<uint16_t>(s->address + s->length - 1 - b / 16);
    const uint16_t mask = static_cast<uint16_t>(1u << (b % 16));
    m_regs[word] = on ? (m_regs[word] | mask) : (m_regs[word] & ~mask);
}

void
RackDevice::ClearFlag(const std::string& name, const std::string& bit)
{
    SetFlag(name, bit, false);
}

void
RackDevice::SetFlagsRaw(const std::string& name, uint32_t bits)
{
    if (const RackRegisterSpec* s = m_map.Find(name))
    {
        SetWords(*s, s->Encode(bits));
    }
}

bool
RackDevice::GetFlag(const std::string& name, const std::string& bit) const
{
    const RackRegisterSpec* s = m_map.Find(name);
    if (!s)
    {
        return false;
    }
    const int b = BitOf(*s, bit);
    if (b < 0)
    {
        return false;
    }
    const uint16_t word = static_cast<uint16_t>(s->address + s->length - 1 - b / 16);
    return (m_regs[word] >> (b % 16)) & 1u;
}

uint32_t
RackDevice::GetUnixTime() const
{
    return m_unixSetValue +
           static_cast<uint32_t>((Simulator::Now() - m_unixSetAt).GetSeconds());
}

void
RackDevice::FireFault(const std::string& fault, bool on)
{
    m_faultTrace(GetModbusAddress(), fault, on);
}

void
RackDevice::Refresh()
{
}

void
RackDevice::Written(uint16_t, uint16_t)
{
}

ModbusExceptionCode
RackDevice::ReadHoldingRegisters(uint16_t start, uint16_t count, std::vector<uint16_t>& out)
{
    out.clear();
    for (uint32_t a = start; a < static_cast<uint32_t>(start) + count; ++a)
    {
        if (a >= m_regs.size() || m_specAt[a] < 0)
        {
            return ModbusExceptionCode::IllegalDataAddress;
        }
    }
    if (m_map.hasUnixTime && m_unixSetAt.IsStrictlyPositive())
    {
        // The device's clock runs on from the BMC's last Unix-time write.
        const RackRegisterSpec* u = m_map.At(m_map.unixTimeRegister);
        SetWords(*u, u->Encode(GetUnixTime()));
    }
    Refresh();
    out.assign(m_regs.begin() + start, m_regs.begin() + start + count);
    m_readTrace(GetModbusAddress(), start, count);
    return ModbusExceptionCode::None;
}

ModbusExceptionCode
RackDevice::WriteHoldingRegisters(uint16_t start, const std::vector<uint16_t>& values)
{
    const uint32_t end = static_cast<uint32_t>(start) + values.size();
    auto refuse = [&](ModbusExceptionCode c) {
        m_refusedTrace(GetModbusAddress(),
                       start,
                       static_cast<uint16_t>(values.size()),
                       static_cast<uint8_t>(c));
        return c;
    };
    bool enabled = true;
    if (m_map.hasWriteEnable)
    {
        enabled = (m_regs[m_map.writeEnableRegister] >> m_map.writeEnableBit) & 1u;
    }
    // Every register is checked before any changes (MODBUS Application Protocol §6.12: the
    // write is carried out entirely or refused).
    for (uint32_t a = start; a < end; ++a)
    {
        if (a >= m_regs.size() || m_specAt[a] < 0)
        {
            return refuse(ModbusExceptionCode::IllegalDataAddress);
        }
        const RackRegisterSpec& s = m_map.registers[m_specAt[a]];
        if (s.access == RackRegisterAccess::ReadOnly)
        {
            return refuse(ModbusExceptionCode::IllegalDataAddress);
        }
        if (s.access == RackRegisterAccess::WriteProtected && !enabled)
        {
            return refuse(static_cast<ModbusExceptionCode>(m_writeProtectException));
        }
    }
    std::copy(values.begin(), values.end(), m_regs.begin() + start);
    if (m_map.hasUnixTime && start <= m_map.unixTimeRegister + 1 && end > m_map.unixTimeRegister)
    {
        const RackRegisterSpec* u = m_map.At(m_map.unixTimeRegister);
        m_unixSetValue = static_cast<uint32_t>(u->Decode(&m_regs[u->address]));
        m_unixSetAt = Simulator::Now();
        if (!m_unixSetAt.IsStrictlyPositive())
        {
            m_unixSetAt = PicoSeconds(1); // "set" is told by a positive time
        }
    }
    Written(start, static_cast<uint16_t>(values.size()));
    m_writeTrace(GetModbusAddress(), start, static_cast<uint16_t>(values.size()));
    return ModbusExceptionCode::None;
}

void
RackDevice::SetDead(bool dead)
{
    NS_ABORT_MSG_IF(!m_slave, "RackDevice::SetDead needs the slave (SetSlave)");
    m_dead = dead;
    m_slave->SetOffline(dead);
    FireFault("Dead", dead);
}

void
RackDevice::SetChattering(bool on)
{
    NS_ABORT_MSG_IF(!m_slave, "RackDevice::SetChattering needs the slave (SetSlave)");
    m_chattering = on;
    m_chatterEvent.Cancel();
    if (on)
    {
        ScheduleChatter();
    }
    FireFault("Chattering", on);
}

void
RackDevice::ScheduleChatter()
{
    const double gap = std::max(0.0, m_chatterGap->GetValue());
    m_chatterEvent =
        Simulator::Schedule(PicoSeconds(std::llround(gap * 1e12)), &RackDevice::Chatter, this);
}

void
RackDevice::Chatter()
{
    Ptr<Rs485Device> dev = m_slave->GetDevice();
    if (!m_chattering || !dev)
    {
        return;
    }
    const uint32_t n = m_chatterRng->GetInteger(1, m_chatterMaxBurst);
    std::vector<uint8_t> junk(n);
    for (auto& b : junk)
    {
        b = static_cast<uint8_t>(m_chatterRng->GetInteger(0, 255));
    }
    m_chatterBytes += n;
    dev->Send(junk);
    ScheduleChatter();
}

} // namespace ns3
