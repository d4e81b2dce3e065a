// Modbus RTU framing: CRC-16, the ADU, the t1.5/t3.5 timing rules, and the receiver state
// machine that turns a character stream into frames (Modbus over serial line v1.02 §2.5.1).
#ifndef CNUAS_MODBUS_RTU_H
#define CNUAS_MODBUS_RTU_H

#include "rs485-character.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ns3
{

/// The largest RTU frame, address to CRC (Modbus over serial line v1.02 §2.5.1, figure 12).
constexpr std::size_t kModbusRtuMaxAdu = 256;
/// The smallest frame that carries a function code: address, function, CRC low, CRC high.
constexpr std::size_t kModbusRtuMinAdu = 4;
/// Address 0 is the broadcast address (Modbus over serial line v1.02 §2.2).
constexpr uint8_t kModbusBroadcastAddress = 0;

/**
 * CRC-16 of Modbus RTU (Modbus over serial line v1.02 §2.5.1.2 and §6.2.2): register preset to
 * 0xFFFF, each byte XORed into the low byte, eight right shifts each followed by XOR with 0xA001
 * when the bit shifted out was 1. On the wire the low byte goes first.
 */
uint16_t ModbusCrc16(const uint8_t* data, std::size_t n);

/// An RTU frame (ADU): address, PDU, CRC low byte, CRC high byte.
std::vector<uint8_t> ModbusRtuBuildAdu(uint8_t address, const std::vector<uint8_t>& pdu);
/// Whether the last two bytes of `adu` are the CRC of the bytes before them (n >= 3).
bool ModbusRtuCrcOk(const uint8_t* adu, std::size_t n);

/// The silent intervals of RTU framing for one character format.
struct ModbusRtuTiming
{
    Time t15; ///< more silence than this between two characters: the frame is incomplete
    Time t35; ///< at least this much silence separates frames

    /**
     * Modbus over serial line v1.02 §2.5.1.1: 1.5 and 3.5 character times, "strictly
     * respected" at 19200 baud and below; above 19200, fixed values of 750 us and 1.750 ms. The
     * character time is the format's own (11 bits for 8E1 and 8N2, 10 for 8N1).
     */
    static ModbusRtuTiming ForFormat(const Rs485Format& f);
};

/// How a received frame ended up (the reason it was discarded, or Ok).
enum class ModbusFrameStatus : uint8_t
{
    Ok = 0,
    Overrun = 1,        ///< more than 256 characters before a 3.5-character silence
    Incomplete = 2,     ///< a silence of more than 1.5 character times inside the frame
    CharacterError = 3, ///< a character arrived with a parity or framing error
    TooShort = 4,       ///< fewer than 4 bytes: no room for address, function and CRC
    BadCrc = 5,         ///< the CRC does not match
};

const char* ModbusFrameStatusName(ModbusFrameStatus s);

/// A frame as the receiver delimited it.
struct ModbusRtuFrame
{
    std::vector<uint8_t> bytes; ///< as received, CRC included (at most 256 kept)
    Time start;                 ///< start bit of the first character
    Time end;                   ///< end of the last character
    ModbusFrameStatus status = ModbusFrameStatus::Ok;
    uint32_t characters = 0;      ///< characters received, including any beyond 256
    uint32_t characterErrors = 0; ///< characters with a parity or framing error

    uint8_t Address() const { return bytes.empty() ? 0 : bytes[0]; }
    /// The PDU: function code and data, without address and CRC (valid when status is Ok).
    std::vector<uint8_t> Pdu() const;
};

/// Frames delimited since the framer was created, by outcome.
struct ModbusRtuFramerCounters
{
    uint64_t frames = 0;
    uint64_t ok = 0;
    uint64_t overrun = 0;
    uint64_t incomplete = 0;
    uint64_t characterError = 0;
    uint64_t tooShort = 0;
    uint64_t badCrc = 0;
    uint64_t initialDiscarded = 0; ///< characters heard before the first 3.5-character silence
};

/**
 * \brief The RTU reception state machine of Modbus over serial line v1.02 §2.5.1.1, figure 14.
 *
 * States: Initial (after start: waits for a t3.5 silence, restarting on every character), Idle,
 * Reception, Control-and-Waiting. The first character in Idle opens a frame; a character whose
 * start bit comes more than t1.5 after the previous character's end (Reception has become
 * Control-and-Waiting) flags the frame "not OK" (incomplete); a silence of t3.5 after the last
 * character ends the frame, which is then checked (characters, length, CRC) and handed to the
 * frame callback, good or bad. Silences are measured exactly, from the end of one character's
 * stop bit to the start bit of the next, using the transceiver's start-bit detection
 * (Rs485Device::IsCharacterArriving) so that the end of a frame is declared exactly t3.5 after
 * its last character, and a character that starts exactly t3.5 after the previous one begins a
 * new frame. Characters that come in Control-and-Waiting restart the t3.5 wait (the frame ends
 * only after a real t3.5 silence; they are part of the discarded frame).
 *
 * Any byte sequence is accepted; nothing here trusts the content.
 */
class ModbusRtuFramer
{
  public:
    enum class State : uint8_t
    {
        Stopped,
        Initial,
        Idle,
        Reception,
        ControlAndWaiting,
    };

    typedef Callback<void, const ModbusRtuFrame&> FrameCallback;

    ModbusRtuFramer();
    ~ModbusRtuFramer();
    ModbusRtuFramer(const ModbusRtuFramer&) = delete;
    ModbusRtuFramer& operator=(const ModbusRtuFramer&) = delete;

    void SetTiming(const ModbusRtuTiming& t);
    const ModbusRtuTiming& GetTiming() const { return m_timing; }
    void SetFrameCallback(FrameCallback cb);
    /// Asks whether a character's start bit has arrived but the character is not yet delivered.
    void SetArrivalQuery(Callback<bool> query);

    /// Enters the Initial state (power-up): the first t3.5 silence leads to Idle.
    void Start();
    /// Drops any partial frame and stops.
    void Stop();
    /// A character from the UART.
    void Receive(const Rs485Character& c);

    State GetState() const;
    /// Whether a frame is being received (Reception or Control-and-Waiting).
    bool IsReceiving() const;
    const ModbusRtuFramerCounters& GetCounters() const { return m_counters; }

  private:
    void T35Expired();
    void EndFrame();
    bool Arriving() const;

    ModbusRtuTiming m_timing;
    FrameCallback m_frameCb;
    Callback<bool> m_arriving;
    State m_state = State::Stopped;
    ModbusRtuFrame m_frame;
    bool m_incomplete = false;
    bool m_overrun = false;
    Time m_lastEnd;
    EventId m_t35;
    ModbusRtuFramerCounters m_counters;
};

} // namespace ns3

#endif
