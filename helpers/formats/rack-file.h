// Rack files (*.rack): the rack `cnuas rack up --config` runs, written down: `key = value`
// lines (the rack's layout, the BMC's polling, the load), `at T ACTION ARGS...` events (load
// steps, PSU/BBU/AC faults, dead and chattering Modbus devices) and `set ATTR=VALUE` attribute
// defaults, with '#' comments (docs/rack.md, examples/rack/*.rack). The reader, the checks and
// the scheduling of the events live here, beside the other file formats; the command only
// dispatches.
#ifndef CNUAS_HELPERS_RACK_FILE_H
#define CNUAS_HELPERS_RACK_FILE_H

#include "helpers/rack/rack-helper.h"
#include "helpers/scenario/scenario-file.h"

#include "ns3/ptr.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ns3
{

class RackStepLoad;

/// A timed action of a rack file (`at T ACTION ARGS...`).
struct RackFileEvent
{
    double at = 0; ///< s
    std::string action;
    std::vector<std::string> args;
    std::string where; ///< "file.rack:7", for messages
};

/// What a rack file says; `cnuas rack up`'s options override it.
struct RackFileConfig
{
    RackConfig rack;
    int redfishPort = 0;
    std::string ptyLink;
    double load = 12000;     ///< W
    double duration = 0;     ///< s, 0 = until stopped
    double monitor = 10;     ///< s, BMC polling period
    uint32_t scanPasses = 1; ///< BMC start-up scan passes
    std::vector<RackFileEvent> events;
    std::vector<AttributeSetting> settings;
};

/**
 * Reads a rack file into `c`: the keys it names replace what `c` holds, its events and
 * settings are appended. Every event is checked (CheckRackEvent), so a typo fails at start.
 * Throws InputError naming the file and line.
 */
void ReadRackFile(const std::string& path, RackFileConfig* c);

/// Checks an event's action and arguments; throws std::invalid_argument ("WHERE: why").
void CheckRackEvent(const RackFileEvent& e);

/**
 * Refuses (std::invalid_argument) a layout whose addresses the BMC's scan ranges do not cover
 * (with rackmon2's ORV3 maps a third PSU shelf or a second BBU shelf falls partly outside
 * them), instead of letting RackHelper abort; std::runtime_error if a register map cannot be
 * read.
 */
void CheckRackAddresses(const RackConfig& c);

/**
 * Schedules a checked event on a built rack (its time from now); throws std::invalid_argument
 * ("WHERE: why") when the rack has no such PSU, shelf, BBU or Modbus address.
 * `onModbusFault` (may be empty) runs after a dead/revive/chatter/quiet event has been applied.
 */
void ScheduleRackEvent(const RackFileEvent& e,
                       const Rack& r,
                       Ptr<RackStepLoad> load,
                       std::function<void(const std::string& action, uint8_t address)>
                           onModbusFault = nullptr);

/// The faults of a device's Modbus side (RackDevice::SetDead / SetChattering): dead, revive,
/// chatter, quiet.
bool IsRackModbusFault(const std::string& action);

/// Applies a Modbus-side fault to the device at `address` now; false if there is none.
bool ApplyRackModbusFault(const Rack& r, const std::string& action, uint8_t address);

// The rack file's values, shared with `cnuas rack`'s options. Each throws
// std::invalid_argument("WHERE: why") for text that is not one.

/// A decimal number in [min, max].
double ParseRackNumber(const std::string& text, const std::string& where, double min, double max);
/// A whole number in [0, max].
uint32_t ParseRackCount(const std::string& text, const std::string& where, uint64_t max);
/// true/yes/1 or false/no/0.
bool ParseRackBool(const std::string& text, const std::string& where);
/// A Modbus address as a BMC developer writes it: decimal (200) or hex (0xC8); any 8-bit value
/// (the HPR maps use 248-255, which serial line v1.02 §2.2 reserves).
uint8_t ParseModbusAddress(const std::string& text, const std::string& where);

} // namespace ns3

#endif
