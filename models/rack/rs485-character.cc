#include "rs485-character.h"

#include <sstream>

namespace ns3
{

const char*
Rs485ParityName(Rs485Parity p)
{
    switch (p)
    {
    case Rs485Parity::None:
        return "None";
    case Rs485Parity::Even:
        return "Even";
    case Rs485Parity::Odd:
        return "Odd";
    }
    return "?";
}

const char*
Rs485RxStatusName(Rs485RxStatus s)
{
    switch (s)
    {
    case Rs485RxStatus::Ok:
        return "ok";
    case Rs485RxStatus::ParityError:
        return "parity-error";
    case Rs485RxStatus::FramingError:
        return "framing-error";
    }
    return "?";
}

const char*
Rs485RxCauseName(Rs485RxCause c)
{
    switch (c)
    {
    case Rs485RxCause::Clean:
        return "clean";
    case Rs485RxCause::Collision:
        return "collision";
    case Rs485RxCause::FormatMismatch:
        return "format-mismatch";
    case Rs485RxCause::Noise:
        return "noise";
    }
    return "?";
}

uint32_t
Rs485Format::BitsPerCharacter() const
{
    return 1u + dataBits + (parity == Rs485Parity::None ? 0u : 1u) + stopBits;
}

Time
Rs485Format::CharactersTime(uint64_t k) const
{
    // k x bits / baud seconds, in picoseconds, rounded to nearest once. 128-bit arithmetic: k x
    // bits x 1e12 overflows 64 bits after about 8e5 characters.
    const unsigned __int128 num =
        static_cast<unsigned __int128>(k) * BitsPerCharacter() * 1000000000000ULL;
    const unsigned __int128 ps = (num + baudRate / 2) / baudRate;
    return PicoSeconds(static_cast<int64_t>(ps));
}

Time
Rs485Format::HalfCharactersTime(uint64_t halves) const
{
    const unsigned __int128 num =
        static_cast<unsigned __int128>(halves) * BitsPerCharacter() * 1000000000000ULL;
    const unsigned __int128 den = 2ULL * baudRate;
    return PicoSeconds(static_cast<int64_t>((num + den / 2) / den));
}

Time
Rs485Format::BitTime() const
{
    const uint64_t ps = (1000000000000ULL + baudRate / 2) / baudRate;
    return PicoSeconds(static_cast<int64_t>(ps));
}

Time
Rs485Format::CharacterTime() const
{
    return CharactersTime(1);
}

std::string
Rs485Format::ToString() const
{
    std::ostringstream s;
    s << baudRate << ' ' << static_cast<int>(dataBits)
      << (parity == Rs485Parity::None ? 'N' : (parity == Rs485Parity::Even ? 'E' : 'O'))
      << static_cast<int>(stopBits);
    return s.str();
}

bool
Rs485Format::operator==(const Rs485Format& o) const
{
    return baudRate == o.baudRate && dataBits == o.dataBits && parity == o.parity &&
           stopBits == o.stopBits;
}

uint8_t
Rs485ParityBit(Rs485Parity p, uint8_t data, uint8_t dataBits)
{
    const uint8_t mask = static_cast<uint8_t>((1u << dataBits) - 1u);
    const uint8_t ones = static_cast<uint8_t>(__builtin_popcount(data & mask) & 1);
    switch (p)
    {
    case Rs485Parity::Even:
        return ones; // makes the count of 1 bits even (Modbus over serial line v1.02 §2.6.1)
    case Rs485Parity::Odd:
        return static_cast<uint8_t>(ones ^ 1u);
    case Rs485Parity::None:
        break;
    }
    return 1;
}

uint32_t
Rs485EncodeWaveform(const Rs485Format& f, uint8_t byte)
{
    // Bit 0 = start bit (space, 0); then data bits least significant first; then parity; then
    // stop bits (mark, 1). Modbus over serial line v1.02 §2.5.1, figure 10.
    uint32_t w = 0;
    uint32_t pos = 1;
    for (uint8_t i = 0; i < f.dataBits; ++i, ++pos)
    {
        w |= static_cast<uint32_t>((byte >> i) & 1u) << pos;
    }
    if (f.parity != Rs485Parity::None)
    {
        w |= static_cast<uint32_t>(Rs485ParityBit(f.parity, byte, f.dataBits)) << pos;
        ++pos;
    }
    for (uint8_t i = 0; i < f.stopBits; ++i, ++pos)
    {
        w |= 1u << pos;
    }
    return w;
}

Rs485Decoded
Rs485DecodeWaveform(uint32_t waveform, const Rs485Format& tx, const Rs485Format& rx)
{
    const uint32_t txBits = tx.BitsPerCharacter();
    // The receiver samples its bit k at (k + 1/2) of its own bit times after the start edge;
    // that instant falls in the sender's bit floor((2k + 1) x txBaud / (2 x rxBaud)).
    auto sample = [&](uint32_t k) -> uint32_t {
        const uint64_t idx = (static_cast<uint64_t>(2 * k + 1) * tx.baudRate) /
                             (2ULL * static_cast<uint64_t>(rx.baudRate));
        if (idx >= txBits)
        {
            return 1; // the line idles at mark after the sender's stop bits
        }
        return (waveform >> idx) & 1u;
    };
    Rs485Decoded d;
    bool framing = sample(0) != 0; // no start bit where the receiver samples it
    uint8_t data = 0;
    uint32_t k = 1;
    for (uint8_t i = 0; i < rx.dataBits; ++i, ++k)
    {
        data |= static_cast<uint8_t>(sample(k) << i);
    }
    bool parityError = false;
    if (rx.parity != Rs485Parity::None)
    {
        parityError = sample(k) != Rs485ParityBit(rx.parity, data, rx.dataBits);
        ++k;
    }
    // Only the first stop bit is checked (16550-compatible UARTs).
    framing = framing || sample(k) == 0;
    d.byte = data;
    d.status = framing       ? Rs485RxStatus::FramingError
               : parityError ? Rs485RxStatus::ParityError
                             : Rs485RxStatus::Ok;
    return d;
}

bool
Rs485FormatsCompatible(const Rs485Format& tx, const Rs485Format& rx)
{
    if (tx.dataBits != rx.dataBits || tx.parity != rx.parity)
    {
        return false;
    }
    // |rx - tx| <= 2 % of tx (Modbus over serial line v1.02 §3.2: a receiver must accept 2 %).
    const uint64_t a = tx.baudRate;
    const uint64_t b = rx.baudRate;
    const uint64_t diff = a > b ? a - b : b - a;
    return diff * 50 <= a;
}

} // namespace ns3
