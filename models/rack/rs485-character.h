// One asynchronous character on an RS-485 line: its format (baud, data bits, parity, stop bits),
// its bit pattern on the wire, and what a UART receiver makes of that pattern.
#ifndef CNUAS_RS485_CHARACTER_H
#define CNUAS_RS485_CHARACTER_H

#include "ns3/nstime.h"

#include <cstdint>
#include <string>

namespace ns3
{

/// Parity bit of an asynchronous character (Modbus over serial line v1.02 §2.5.1, §2.6.1).
enum class Rs485Parity : uint8_t
{
    None = 0,
    Even = 1,
    Odd = 2,
};

const char* Rs485ParityName(Rs485Parity p);

/**
 * \brief The character format a UART is set to: "8E1" = 8 data bits, even parity, 1 stop bit.
 *
 * A character is 1 start bit, DataBits data bits (least significant first), an optional parity
 * bit, then StopBits stop bits (Modbus over serial line v1.02 §2.5.1, figures 10 and 11): 8E1 is
 * 11 bits, 8N1 10 bits, 8N2 11 bits.
 */
struct Rs485Format
{
    uint32_t baudRate = 19200; ///< bit/s
    uint8_t dataBits = 8;      ///< 5..8
    Rs485Parity parity = Rs485Parity::Even;
    uint8_t stopBits = 1; ///< 1 or 2

    /// Bits on the wire per character: start + data + parity + stop.
    uint32_t BitsPerCharacter() const;
    /// One bit time.
    Time BitTime() const;
    /// One character time (BitsPerCharacter bit times).
    Time CharacterTime() const;
    /**
     * Time that `k` back-to-back characters occupy: k x bits / baud, computed exactly and rounded
     * once to the picosecond (so character boundaries of a burst never accumulate rounding: the
     * k-th boundary is within 0.5 ps of the exact rational value).
     */
    Time CharactersTime(uint64_t k) const;
    /// Time of `halves` half characters (7 for 3.5 characters), rounded once to the picosecond.
    Time HalfCharactersTime(uint64_t halves) const;
    /// "19200 8E1".
    std::string ToString() const;
    bool operator==(const Rs485Format& o) const;
    bool operator!=(const Rs485Format& o) const { return !(*this == o); }
};

/// What a UART reports with a received character.
enum class Rs485RxStatus : uint8_t
{
    Ok = 0,
    ParityError = 1,  ///< the parity bit disagrees with the data bits
    FramingError = 2, ///< no valid start or stop bit where one was expected
};

const char* Rs485RxStatusName(Rs485RxStatus s);

/// Why a received character is what it is (model knowledge: a real UART cannot tell).
enum class Rs485RxCause : uint8_t
{
    Clean = 0,          ///< the character as it was sent
    Collision = 1,      ///< another driver was enabled during the character
    FormatMismatch = 2, ///< the receiver's baud/data bits/parity differ from the sender's
    Noise = 3,          ///< bits flipped on the line (error model / bit-error rate)
};

const char* Rs485RxCauseName(Rs485RxCause c);

/// A character as one transceiver received it.
struct Rs485Character
{
    uint8_t byte = 0; ///< the data bits the receiver assembled
    Rs485RxStatus status = Rs485RxStatus::Ok;
    Rs485RxCause cause = Rs485RxCause::Clean;
    Time start; ///< leading edge of the start bit at this receiver
    Time end;   ///< end of the last stop bit at this receiver (when the UART delivers it)
    bool ownTransmission = false; ///< local echo of this transceiver's own driver
};

/**
 * \brief The character's bits in wire order, bit 0 first: start (0), data LSB first, parity,
 * stop bits (1). Up to 13 bits (1 + 8 + 1 + 2 + margin); the returned count is
 * BitsPerCharacter().
 */
uint32_t Rs485EncodeWaveform(const Rs485Format& f, uint8_t byte);

/// The parity bit of `data` under parity `p` (None: 1, which is what the line idles at).
uint8_t Rs485ParityBit(Rs485Parity p, uint8_t data, uint8_t dataBits);

/// What a receiver makes of one character.
struct Rs485Decoded
{
    uint8_t byte = 0;
    Rs485RxStatus status = Rs485RxStatus::Ok;
};

/**
 * \brief Decodes a waveform sent with format `tx` by a receiver set to format `rx`.
 *
 * The receiver samples the middle of each of its own bit times, starting at the sender's
 * falling start edge; past the sender's last bit the line idles at 1 (mark). A sampled start bit
 * of 1 or a first stop bit of 0 is a framing error (a UART checks only the first stop bit, as the
 * 16550 does); a wrong parity bit is a parity error. With equal formats this returns the sender's
 * byte; with a baud rate off by more than the receiver tolerates, it returns what the receiver's
 * samples happen to see.
 */
Rs485Decoded Rs485DecodeWaveform(uint32_t waveform,
                                 const Rs485Format& tx,
                                 const Rs485Format& rx);

/**
 * Whether a receiver set to `rx` reads characters sent with `tx` as they were meant: same data
 * bits and parity, and baud rates within 2 % of each other (a Modbus receiver "must accept an
 * error of 2 % in reception", Modbus over serial line v1.02 §3.2). The number of stop bits does
 * not matter: a receiver checks only the first one.
 */
bool Rs485FormatsCompatible(const Rs485Format& tx, const Rs485Format& rx);

} // namespace ns3

#endif
