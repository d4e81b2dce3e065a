#include "modbus-rtu.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ModbusRtu");

namespace
{
/// The eight shift/XOR steps of Modbus over serial line v1.02 §6.2.2 (steps 3-5) applied to one
/// register value.
uint16_t
CrcShift8(uint16_t crc)
{
    for (int bit = 0; bit < 8; ++bit)
    {
        const bool lsb = (crc & 1u) != 0;
        crc = static_cast<uint16_t>(crc >> 1);
        if (lsb)
        {
            crc ^= 0xA001; // the polynomial value of step 4
        }
    }
    return crc;
}

/// Those steps for each possible low byte, computed once: the byte-at-a-time form.
struct CrcTable
{
    uint16_t t[256];
    CrcTable()
    {
        for (int i = 0; i < 256; ++i)
        {
            t[i] = CrcShift8(static_cast<uint16_t>(i));
        }
    }
};
} // namespace

uint16_t
ModbusCrc16(const uint8_t* data, std::size_t n)
{
    // Modbus over serial line v1.02 §6.2.2: preset 0xFFFF (step 1), XOR each byte into the low
    // byte (step 2), eight shifts with the polynomial (steps 3-5). The high byte only shifts
    // down, so the eight steps equal (crc >> 8) XOR table[low byte].
    static const CrcTable table;
    uint16_t crc = 0xFFFF;
    for (std::size_t i = 0; i < n; ++i)
    {
        crc = static_cast<uint16_t>((crc >> 8) ^ table.t[(crc ^ data[i]) & 0xFF]);
    }
    return crc;
}

std::vector<uint8_t>
ModbusRtuBuildAdu(uint8_t address, const std::vector<uint8_t>& pdu)
{
    std::vector<uint8_t> adu;
    adu.reserve(pdu.size() + 3);
    adu.push_back(address);
    adu.insert(adu.end(), pdu.begin(), pdu.end());
    const uint16_t crc = ModbusCrc16(adu.data(), adu.size());
    adu.push_back(static_cast<uint8_t>(crc & 0xFF)); // low byte first (§2.5.1.2)
    adu.push_back(static_cast<uint8_t>(crc >> 8));
    return adu;
}

bool
ModbusRtuCrcOk(const uint8_t* adu, std::size_t n)
{
    if (n < 3)
    {
        return false;
    }
    const uint16_t crc = ModbusCrc16(adu, n - 2);
    return adu[n - 2] == static_cast<uint8_t>(crc & 0xFF) &&
           adu[n - 1] == static_cast<uint8_t>(crc >> 8);
}

ModbusRtuTiming
ModbusRtuTiming::ForFormat(const Rs485Format& f)
{
    ModbusRtuTiming t;
    if (f.baudRate > 19200)
    {
        // Modbus over serial line v1.02 §2.5.1.1 remark: fixed values above 19200 bps.
        t.t15 = MicroSeconds(750);
        t.t35 = MicroSeconds(1750);
    }
    else
    {
        // 1.5 and 3.5 character times, rounded once to the picosecond.
        t.t15 = f.HalfCharactersTime(3);
        t.t35 = f.HalfCharactersTime(7);
    }
    return t;
}

const char*
ModbusFrameStatusName(ModbusFrameStatus s)
{
    switch (s)
    {
    case ModbusFrameStatus::Ok:
        return "ok";
    case ModbusFrameStatus::Overrun:
        return "overrun";
    case ModbusFrameStatus::Incomplete:
        return "incomplete";
    case ModbusFrameStatus::CharacterError:
        return "character-error";
    case ModbusFrameStatus::TooShort:
        return "too-short";
    case ModbusFrameStatus::BadCrc:
        return "bad-crc";
    }
    return "?";
}

std::vector<uint8_t>
ModbusRtuFrame::Pdu() const
{
    if (bytes.size() < 3)
    {
        return {};
    }
    return std::vector<uint8_t>(bytes.begin() + 1, bytes.end() - 2);
}

ModbusRtuFramer::ModbusRtuFramer()
{
    m_timing = ModbusRtuTiming::ForFormat(Rs485Format());
}

ModbusRtuFramer::~ModbusRtuFramer()
{
    m_t35.Cancel();
}

void
ModbusRtuFramer::SetTiming(const ModbusRtuTiming& t)
{
    m_timing = t;
}

void
ModbusRtuFramer::SetFrameCallback(FrameCallback cb)
{
    m_frameCb = cb;
}

void
ModbusRtuFramer::SetArrivalQuery(Callback<bool> query)
{
    m_arriving = query;
}

void
ModbusRtuFramer::Start()
{
    m_t35.Cancel();
    m_frame = ModbusRtuFrame();
    m_state = State::Initial;
    // Figure 14: "Initial State" goes to "Idle" on t3.5 expiry, which insures the inter-frame
    // delay after power-up.
    m_lastEnd = Simulator::Now();
    m_t35 = Simulator::Schedule(m_timing.t35, &ModbusRtuFramer::T35Expired, this);
}

void
ModbusRtuFramer::Stop()
{
    m_t35.Cancel();
    m_frame = ModbusRtuFrame();
    m_state = State::Stopped;
}

bool
ModbusRtuFramer::Arriving() const
{
    return !m_arriving.IsNull() && m_arriving();
}

ModbusRtuFramer::State
ModbusRtuFramer::GetState() const
{
    if (m_state == State::Reception && !Arriving() &&
        Simulator::Now() - m_lastEnd > m_timing.t15)
    {
        return State::ControlAndWaiting; // t1.5 has expired
    }
    return m_state;
}

bool
ModbusRtuFramer::IsReceiving() const
{
    return m_state == State::Reception;
}

void
ModbusRtuFramer::Receive(const Rs485Character& c)
{
    switch (m_state)
    {
    case State::Stopped:
        return;
    case State::Initial:
        // Figure 14: "Character received / init. and start t3.5".
        m_counters.initialDiscarded++;
        break;
    case State::Idle:
        // "First character received / init. and start t1.5, t3.5".
        m_frame = ModbusRtuFrame();
        m_frame.start = c.start;
        m_incomplete = false;
        m_overrun = false;
        m_state = State::Reception;
        break;
    case State::Reception:
    case State::ControlAndWaiting:
        // §2.5.1.1: "If a silent interval of more than 1.5 character times occurs between two
        // characters, the message frame is declared incomplete".
        if (c.start - m_lastEnd > m_timing.t15)
        {
            m_incomplete = true;
        }
        break;
    }
    if (m_state == State::Reception)
    {
        m_frame.characters++;
        if (c.status != Rs485RxStatus::Ok)
        {
            m_frame.characterErrors++;
        }
        if (m_frame.bytes.size() < kModbusRtuMaxAdu)
        {
            m_frame.bytes.push_back(c.byte);
        }
        else
        {
            m_overrun = true; // §6.1.2: more than the maximum number of characters
        }
        m_frame.end = c.end;
    }
    m_lastEnd = std::max(m_lastEnd, c.end);
    // "init. and start t3.5": the timer runs from this character's end. One event at a time:
    // if one is pending it re-arms itself for the remainder when it fires, which costs one
    // event per t3.5 rather than one per character and receiver.
    if (!m_t35.IsRunning())
    {
        m_t35 = Simulator::Schedule(m_lastEnd + m_timing.t35 - Simulator::Now(),
                                    &ModbusRtuFramer::T35Expired,
                                    this);
    }
}

void
ModbusRtuFramer::T35Expired()
{
    const Time due = m_lastEnd + m_timing.t35;
    if (Simulator::Now() < due)
    {
        m_t35 = Simulator::Schedule(due - Simulator::Now(), &ModbusRtuFramer::T35Expired, this);
        return;
    }
    if (Arriving())
    {
        // A start bit came before the silence reached t3.5: the character's delivery restarts
        // the wait.
        return;
    }
    switch (m_state)
    {
    case State::Initial:
        m_state = State::Idle;
        break;
    case State::Reception:
    case State::ControlAndWaiting:
        EndFrame();
        break;
    case State::Stopped:
    case State::Idle:
        break;
    }
}

void
ModbusRtuFramer::EndFrame()
{
    m_state = State::Idle;
    ModbusRtuFrame f = std::move(m_frame);
    m_frame = ModbusRtuFrame();
    // Checks in the order of the counters diagram of §6.1.2 (overrun, character error, length,
    // CRC), with the incomplete-frame rule of §2.5.1.1 before the character check.
    if (m_overrun)
    {
        f.status = ModbusFrameStatus::Overrun;
        m_counters.overrun++;
    }
    else if (m_incomplete)
    {
        f.status = ModbusFrameStatus::Incomplete;
        m_counters.incomplete++;
    }
    else if (f.characterErrors > 0)
    {
        f.status = ModbusFrameStatus::CharacterError;
        m_counters.characterError++;
    }
    else if (f.bytes.size() < kModbusRtuMinAdu)
    {
        // §6.1.2 draws "length < 3 bytes"; a 3-byte frame has no function code either.
        f.status = ModbusFrameStatus::TooShort;
        m_counters.tooShort++;
    }
    else if (!ModbusRtuCrcOk(f.bytes.data(), f.bytes.size()))
    {
        f.status = ModbusFrameStatus::BadCrc;
        m_counters.badCrc++;
    }
    else
    {
        f.status = ModbusFrameStatus::Ok;
        m_counters.ok++;
    }
    m_counters.frames++;
    NS_LOG_LOGIC("frame of " << f.characters << " characters: "
                             << ModbusFrameStatusName(f.status));
    if (!m_frameCb.IsNull())
    {
        m_frameCb(f);
    }
}

} // namespace ns3
