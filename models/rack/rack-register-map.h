// An ORv3 device type's Modbus register map, read from a data file (data/rack/maps/*.map).
#ifndef CNUAS_RACK_REGISTER_MAP_H
#define CNUAS_RACK_REGISTER_MAP_H

#include "rs485-character.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ns3
{

/// How a register's raw words are read (the formats of rackmon2's register maps).
enum class RackRegisterFormat : uint8_t
{
    String,  ///< ASCII, 2 characters per register, big-endian, NUL padded
    Integer, ///< unsigned (or signed) big-endian integer of 1-4 registers
    Flags,   ///< a bit field; bit names from the map
    Float,   ///< fixed point: raw / 2^precision x scale + shift
};

const char* RackRegisterFormatName(RackRegisterFormat f);

/// Who may write a register.
enum class RackRegisterAccess : uint8_t
{
    ReadOnly,       ///< "RO": writes answer exception 02
    ReadWrite,      ///< "RW": always writable
    WriteProtected, ///< "WP": writable only while the map's write-enable bit is set
};

/// One register (or multi-register field) of a map.
struct RackRegisterSpec
{
    uint16_t address = 0;
    uint16_t length = 1; ///< registers
    std::string name;
    RackRegisterFormat format = RackRegisterFormat::Integer;
    RackRegisterAccess access = RackRegisterAccess::ReadOnly;
    uint32_t precision = 0; ///< Float: raw / 2^precision
    double scale = 1.0;     ///< Float: then x scale
    double shift = 0.0;     ///< Float: then + shift
    bool isSigned = false;  ///< two's complement raw value
    std::string unit;       ///< unit of the decoded value ("V", "mV", "C", "dK", "%"...)
    std::map<uint32_t, std::string> bits; ///< Flags: bit number (0 = LSB) to name

    /// The decoded number of Integer/Float/Flags registers from their raw words.
    double Decode(const uint16_t* raw) const;
    /// Raw words for a decoded value (rounded to the nearest step, clamped to the range).
    std::vector<uint16_t> Encode(double value) const;
    /// The text of a String register.
    static std::string DecodeString(const uint16_t* raw, uint16_t length);
};

/// A decoded register value, as a BMC reports it.
struct RackRegisterValue
{
    std::string name;
    uint16_t address = 0;
    uint16_t length = 0;
    RackRegisterFormat format = RackRegisterFormat::Integer;
    std::string unit;
    double value = 0;            ///< Integer, Float, Flags (the raw bit field)
    std::string text;            ///< String
    std::vector<std::string> flagsSet; ///< Flags: names of the bits that are set
    std::vector<uint16_t> raw;
};

/// Decodes one register of `spec` from its raw words.
RackRegisterValue RackDecodeRegister(const RackRegisterSpec& spec, const uint16_t* raw);

/**
 * \brief A device type's register map: serial settings, discovery address ranges, the
 * Unix-time register rackmon writes, the write-enable bit, and the registers.
 *
 * File format (one directive per line, '#' starts a comment, fields separated by blanks):
 *
 *     device ORV3_PSU               type name (required, first directive)
 *     baud 19200                    line rate (required)
 *     parity even                   even | odd | none (8 data bits)
 *     stop 1                        stop bits, 1 (default) or 2
 *     probe 8                       register a discovery probe reads (FC 03, 1 register)
 *     range 200 205                 addresses a BMC scans (any number of lines)
 *     unix_time 98 3600             register (u32) and period of the BMC's time write
 *     write_enable 94 0             register and bit that unlock WP registers
 *     reg 79 1 float RO PSU_Output_Voltage precision=10 unit=V
 *       bit 0 PSU_Write_Enable      (after a flags reg) one named bit
 *
 * reg: address, length (1-125 registers), format (string | integer | flags | float), access
 * (RO | RW | WP), name, then options: precision=N (float, 0-31), scale=X, shift=X (float),
 * signed, unit=TEXT. Registers must not overlap. Anything else is refused with the file name,
 * line number and reason.
 */
class RackRegisterMap
{
  public:
    std::string name;
    uint32_t baudRate = 19200;
    Rs485Parity parity = Rs485Parity::Even;
    uint8_t stopBits = 1;
    uint16_t probeRegister = 0;
    std::vector<std::pair<uint8_t, uint8_t>> addressRanges; ///< inclusive
    bool hasUnixTime = false;
    uint16_t unixTimeRegister = 0;
    uint32_t unixTimePeriodSeconds = 3600;
    bool hasWriteEnable = false;
    uint16_t writeEnableRegister = 0;
    uint8_t writeEnableBit = 0;
    std::vector<RackRegisterSpec> registers; ///< sorted by address

    /// Parses map text; on error returns false with "source:line: reason" in `error`.
    static bool Parse(const std::string& text,
                      const std::string& source,
                      RackRegisterMap& out,
                      std::string& error);
    /// Reads and parses a file (false with the reason if it cannot be read or parsed).
    static bool Load(const std::string& path, RackRegisterMap& out, std::string& error);
    /// Loads `<directory>/<lower-case type>.map`; aborts with the reason on failure.
    static RackRegisterMap LoadType(const std::string& type, const std::string& directory = "");
    /// The directory maps are read from by default: $CNUAS_RACK_MAPS, else the source tree's
    /// data/rack/maps.
    static std::string DefaultDirectory();

    /// The line format the devices of this type use.
    Rs485Format Format() const;
    /// Whether `address` falls in one of the ranges.
    bool Covers(uint8_t address) const;
    /// Every address of the ranges, in file order, without duplicates.
    std::vector<uint8_t> Addresses() const;
    /// The register with this name, or nullptr.
    const RackRegisterSpec* Find(const std::string& registerName) const;
    /// The register that contains `address`, or nullptr.
    const RackRegisterSpec* At(uint16_t address) const;
    /**
     * Read spans as rackmon2 merges them: registers that follow each other without a gap form
     * one span, up to `maxSpan` registers (a register is never split). (start, count) pairs.
     */
    std::vector<std::pair<uint16_t, uint16_t>> Spans(uint16_t maxSpan = 120) const;
};

} // namespace ns3

#endif
