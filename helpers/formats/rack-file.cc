// The rack-file reader and its checks (rack-file.h, docs/rack.md).
#include "rack-file.h"

#include "helpers/formats/parse-util.h"
#include "models/rack/rack-register-map.h"

#include "ns3/simulator.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ns3
{

namespace
{

[[noreturn]] void
ConfigError(const std::string& where, const std::string& what)
{
    throw std::invalid_argument(where + ": " + what);
}

} // namespace

double
ParseRackNumber(const std::string& text, const std::string& where, double min, double max)
{
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < min ||
        v > max)
    {
        std::ostringstream s;
        s << "'" << text << "' is not a number in [" << min << ", " << max << "]";
        ConfigError(where, s.str());
    }
    return v;
}

uint32_t
ParseRackCount(const std::string& text, const std::string& where, uint64_t max)
{
    uint64_t v = 0;
    if (!ParseDecimalUint(text, max, &v))
    {
        ConfigError(where, "'" + text + "' is not a whole number in [0, " + std::to_string(max) +
                               "]");
    }
    return static_cast<uint32_t>(v);
}

bool
ParseRackBool(const std::string& text, const std::string& where)
{
    if (text == "true" || text == "yes" || text == "1")
    {
        return true;
    }
    if (text == "false" || text == "no" || text == "0")
    {
        return false;
    }
    ConfigError(where, "'" + text + "' is not true/false");
}

/// The faults of a device's Modbus side (RackDevice::SetDead / SetChattering), by address.
bool
IsRackModbusFault(const std::string& a)
{
    return a == "dead" || a == "revive" || a == "chatter" || a == "quiet";
}

/// A Modbus address as a BMC developer writes it: decimal (200) or hex (0xC8); any 8-bit value
/// (the HPR maps use 248-255, which serial line v1.02 §2.2 reserves).
uint8_t
ParseModbusAddress(const std::string& text, const std::string& where)
{
    char* end = nullptr;
    errno = 0;
    const unsigned long v = std::strtoul(text.c_str(), &end, 0);
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) ||
        end != text.c_str() + text.size() || errno != 0 || v > 255)
    {
        ConfigError(where, "'" + text + "' is not a Modbus address (0-255, e.g. 200 or 0xC8)");
    }
    return static_cast<uint8_t>(v);
}

/// Applies a Modbus-side fault to the device at `address` now; false if there is none.
bool
ApplyRackModbusFault(const Rack& r, const std::string& action, uint8_t address)
{
    Ptr<RackDevice> d = r.Find(address);
    if (!d)
    {
        return false;
    }
    if (action == "dead" || action == "revive")
    {
        d->SetDead(action == "dead");
    }
    else
    {
        d->SetChattering(action == "chatter");
    }
    return true;
}

/// Checks an event's action and arguments (so a typo fails at start, not hours later).
void
CheckRackEvent(const RackFileEvent& e)
{
    auto need = [&](std::size_t n) {
        if (e.args.size() != n)
        {
            ConfigError(e.where, e.action + " takes " + std::to_string(n) + " argument(s)");
        }
    };
    if (e.action == "load")
    {
        need(1);
        ParseRackNumber(e.args[0], e.where, 0, 1e7);
    }
    else if (e.action == "psu_fail" || e.action == "psu_repair" || e.action == "psu_fan_fail" ||
             e.action == "psu_fan_repair")
    {
        need(2);
        ParseRackCount(e.args[0], e.where, 3);
        ParseRackCount(e.args[1], e.where, 7);
    }
    else if (e.action == "ac_loss" || e.action == "ac_restore")
    {
        need(1);
        if (e.args[0] != "rack")
        {
            ParseRackCount(e.args[0], e.where, 3);
        }
    }
    else if (e.action == "bbu_fail" || e.action == "bbu_repair")
    {
        need(1);
        ParseRackCount(e.args[0], e.where, 31);
    }
    else if (IsRackModbusFault(e.action))
    {
        need(1);
        ParseModbusAddress(e.args[0], e.where);
    }
    else
    {
        ConfigError(e.where, "unknown action '" + e.action +
                                 "' (load, psu_fail, psu_repair, psu_fan_fail, psu_fan_repair, "
                                 "ac_loss, ac_restore, bbu_fail, bbu_repair, dead, revive, "
                                 "chatter, quiet)");
    }
}

namespace
{
void
ReadRackFileLines(const std::string& path, RackFileConfig* c)
{
    std::ifstream in(path);
    if (!in)
    {
        throw std::invalid_argument(path + ": cannot be read");
    }
    std::string line;
    int n = 0;
    std::set<std::string> seen;
    while (std::getline(in, line))
    {
        ++n;
        const std::string where = path + ":" + std::to_string(n);
        const std::size_t hash = line.find('#');
        if (hash != std::string::npos)
        {
            line.resize(hash);
        }
        // TrimSpace and SplitWords agree on what is blank (a form feed too), so a line that
        // trims to something has at least one word.
        line = TrimSpace(line);
        const std::vector<std::string> w = SplitWords(line);
        if (w.empty())
        {
            continue;
        }
        if (w[0] == "at")
        {
            if (w.size() < 3)
            {
                ConfigError(where, "'at' needs a time and an action");
            }
            RackFileEvent e;
            e.at = ParseRackNumber(w[1], where, 0, 1e9);
            e.action = w[2];
            e.args.assign(w.begin() + 3, w.end());
            e.where = where;
            CheckRackEvent(e);
            c->events.push_back(e);
            continue;
        }
        if (w[0] == "set")
        {
            if (w.size() != 2)
            {
                ConfigError(where, "use 'set Class::Attribute=VALUE'");
            }
            auto [k, v] = SplitAssignment(w[1], where);
            c->settings.push_back({k, v, where});
            continue;
        }
        const std::size_t eq = line.find('=');
        if (eq == std::string::npos)
        {
            ConfigError(where, "expected 'key = value', 'at T ACTION ...' or 'set ATTR=VALUE'");
        }
        const std::string key = TrimSpace(line.substr(0, eq));
        const std::string value = TrimSpace(line.substr(eq + 1));
        if (!seen.insert(key).second)
        {
            ConfigError(where, "'" + key + "' given twice");
        }
        if (key == "hpr")
        {
            c->rack.hpr = ParseRackBool(value, where);
        }
        else if (key == "psu_shelves")
        {
            c->rack.psuShelves = ParseRackCount(value, where, 4);
        }
        else if (key == "psus_per_shelf")
        {
            c->rack.psusPerShelf = ParseRackCount(value, where, 8);
        }
        else if (key == "bbu_shelves")
        {
            c->rack.bbuShelves = ParseRackCount(value, where, 4);
        }
        else if (key == "bbus_per_shelf")
        {
            c->rack.bbusPerShelf = ParseRackCount(value, where, 8);
        }
        else if (key == "redfish_port")
        {
            c->redfishPort = static_cast<int>(ParseRackCount(value, where, 65535));
        }
        else if (key == "bmc")
        {
            c->rack.bmc = ParseRackBool(value, where);
        }
        else if (key == "pty_link")
        {
            c->ptyLink = value;
        }
        else if (key == "load")
        {
            c->load = ParseRackNumber(value, where, 0, 1e7);
        }
        else if (key == "monitor_interval")
        {
            c->monitor = ParseRackNumber(value, where, 0.1, 86400);
        }
        else if (key == "scan_passes")
        {
            c->scanPasses = ParseRackCount(value, where, 10);
        }
        else if (key == "response_delay_ms")
        {
            c->rack.responseDelay =
                PicoSeconds(std::llround(ParseRackNumber(value, where, 0, 1000) * 1e9));
        }
        else if (key == "duration")
        {
            c->duration = ParseRackNumber(value, where, 0, 1e9);
        }
        else
        {
            ConfigError(where, "unknown key '" + key +
                                   "' (hpr, psu_shelves, psus_per_shelf, bbu_shelves, "
                                   "bbus_per_shelf, bmc, redfish_port, pty_link, load, "
                                   "monitor_interval, scan_passes, response_delay_ms, duration)");
        }
    }
}

} // namespace

void
ReadRackFile(const std::string& path, RackFileConfig* c)
{
    try
    {
        ReadRackFileLines(path, c);
    }
    catch (const InputError&)
    {
        throw;
    }
    catch (const std::invalid_argument& e)
    {
        // Everything wrong in it is the file's (its messages name the line).
        throw InputError(e.what());
    }
}

/// Refuses (instead of letting RackHelper abort) a layout whose addresses the BMC's scan ranges
/// do not cover: with rackmon2's ORV3 maps a third PSU shelf (pins 6: 0xF0-) or a second BBU
/// shelf (pins 2: 0x50-) falls partly outside them.
void
CheckRackAddresses(const RackConfig& c)
{
    auto load = [&](const std::string& type) {
        const std::string file = RackRegisterMap::DefaultDirectory() + "/";
        std::string lower = type;
        for (char& ch : lower)
        {
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        }
        RackRegisterMap m;
        std::string error;
        if (!RackRegisterMap::Load(file + lower + ".map", m, error))
        {
            throw std::runtime_error(error);
        }
        return m;
    };
    const RackRegisterMap psu = load(c.hpr ? "ORV3_HPR_PSU" : "ORV3_PSU");
    const RackRegisterMap bbu = load(c.hpr ? "ORV3_HPR_BBU" : "ORV3_BBU");
    auto check = [&](const RackRegisterMap& m, uint8_t a, const char* what, uint32_t sh) {
        if (c.bmc && !m.Covers(a))
        {
            char b[200];
            std::snprintf(b, sizeof(b),
                          "%s shelf %u would put a device at 0x%02X, outside the %s scan ranges "
                          "the BMC probes; use fewer shelves (or --no-bmc)",
                          what, sh, a, m.name.c_str());
            throw std::invalid_argument(b);
        }
    };
    for (uint32_t sh = 0; sh < c.psuShelves; ++sh)
    {
        for (uint32_t slot = 0; slot < c.psusPerShelf; ++slot)
        {
            const auto s8 = static_cast<uint8_t>(slot);
            check(psu,
                  c.hpr ? RackAddressing::HprPsu(static_cast<uint8_t>(sh), s8)
                        : RackAddressing::Orv3Psu(c.psuShelfPins.at(sh), s8),
                  "PSU", sh);
        }
    }
    for (uint32_t sh = 0; sh < c.bbuShelves; ++sh)
    {
        for (uint32_t slot = 0; slot < c.bbusPerShelf; ++slot)
        {
            const auto s8 = static_cast<uint8_t>(slot);
            check(bbu,
                  c.hpr ? RackAddressing::HprBbu(static_cast<uint8_t>(sh), s8)
                        : RackAddressing::Orv3Bbu(c.bbuShelfPins.at(sh), s8),
                  "BBU", sh);
        }
    }
}

void
ScheduleRackEvent(const RackFileEvent& e,
                  const Rack& r,
                  Ptr<RackStepLoad> load,
                  std::function<void(const std::string& action, uint8_t address)> onModbusFault)
{
    const Time at = PicoSeconds(std::llround(e.at * 1e12));
    auto u = [&](std::size_t i) { return static_cast<uint32_t>(std::stoul(e.args[i])); };
    Ptr<RackElectricalModel> p = r.power;
    const std::string a = e.action;
    if (a == "load")
    {
        load->AddStep(at, std::stod(e.args[0]));
        return;
    }
    if (a.compare(0, 3, "psu") == 0)
    {
        const uint32_t shelf = u(0);
        const uint32_t slot = u(1);
        if (shelf >= p->GetPsuShelfCount() || slot >= p->GetPsuCount(shelf))
        {
            ConfigError(e.where, "no PSU " + e.args[0] + " " + e.args[1] + " in this rack");
        }
        const bool on = a == "psu_fail" || a == "psu_fan_fail";
        const bool fan = a.find("fan") != std::string::npos;
        Simulator::Schedule(at, [p, shelf, slot, on, fan]() {
            fan ? p->SetPsuFanFailed(shelf, slot, on) : p->SetPsuFailed(shelf, slot, on);
        });
        return;
    }
    if (IsRackModbusFault(a))
    {
        const uint8_t address = ParseModbusAddress(e.args[0], e.where);
        if (!r.Find(address))
        {
            ConfigError(e.where, "no device at Modbus address " + e.args[0] + " in this rack");
        }
        Simulator::Schedule(at, [r, a, address, onModbusFault]() {
            ApplyRackModbusFault(r, a, address);
            if (onModbusFault)
            {
                onModbusFault(a, address);
            }
        });
        return;
    }
    if (a == "ac_loss" || a == "ac_restore")
    {
        const bool lost = a == "ac_loss";
        if (e.args[0] == "rack")
        {
            Simulator::Schedule(at, [p, lost]() { p->SetRackAcLoss(lost); });
            return;
        }
        const uint32_t shelf = u(0);
        if (shelf >= p->GetPsuShelfCount())
        {
            ConfigError(e.where, "no PSU shelf " + e.args[0] + " in this rack");
        }
        Simulator::Schedule(at, [p, shelf, lost]() { p->SetAcLoss(shelf, lost); });
        return;
    }
    const uint32_t bbu = u(0);
    if (bbu >= p->GetBbuCount())
    {
        ConfigError(e.where, "no BBU " + e.args[0] + " in this rack");
    }
    const bool failed = a == "bbu_fail";
    Simulator::Schedule(at, [p, bbu, failed]() { p->SetBbuFailed(bbu, failed); });
}

} // namespace ns3
