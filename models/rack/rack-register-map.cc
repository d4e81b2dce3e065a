#include "rack-register-map.h"

#include "models/common/data-directory.h"

#include "ns3/abort.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ns3
{

const char*
RackRegisterFormatName(RackRegisterFormat f)
{
    switch (f)
    {
    case RackRegisterFormat::String:
        return "string";
    case RackRegisterFormat::Integer:
        return "integer";
    case RackRegisterFormat::Flags:
        return "flags";
    case RackRegisterFormat::Float:
        return "float";
    }
    return "?";
}

namespace
{
/// The raw words as one unsigned number, first register most significant (rackmon2 reads
/// multi-register integers big-endian).
uint64_t
RawNumber(const uint16_t* raw, uint16_t length)
{
    uint64_t v = 0;
    for (uint16_t i = 0; i < length && i < 4; ++i)
    {
        v = (v << 16) | raw[i];
    }
    return v;
}

double
SignedNumber(uint64_t v, uint16_t length, bool isSigned)
{
    const uint32_t bits = 16u * std::min<uint16_t>(length, 4);
    if (isSigned && bits < 64 && (v >> (bits - 1)) & 1u)
    {
        return static_cast<double>(static_cast<int64_t>(v) - (int64_t{1} << bits));
    }
    return static_cast<double>(v);
}
} // namespace

double
RackRegisterSpec::Decode(const uint16_t* raw) const
{
    const double n = SignedNumber(RawNumber(raw, length), length, isSigned);
    if (format == RackRegisterFormat::Float)
    {
        return std::ldexp(n, -static_cast<int>(precision)) * scale + shift;
    }
    return n;
}

std::vector<uint16_t>
RackRegisterSpec::Encode(double value) const
{
    const uint16_t n = std::min<uint16_t>(length, 4);
    std::vector<uint16_t> out(length, 0);
    if (format == RackRegisterFormat::String)
    {
        return out;
    }
    double steps = value;
    if (format == RackRegisterFormat::Float)
    {
        steps = std::ldexp((value - shift) / scale, static_cast<int>(precision));
    }
    const uint32_t bits = 16u * n;
    const double lo = isSigned ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double hi = isSigned ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
    steps = std::min(hi, std::max(lo, std::round(steps)));
    uint64_t v = steps < 0 ? static_cast<uint64_t>(static_cast<int64_t>(steps))
                           : static_cast<uint64_t>(steps);
    for (int i = n - 1; i >= 0; --i)
    {
        out[i] = static_cast<uint16_t>(v & 0xFFFF);
        v >>= 16;
    }
    return out;
}

std::string
RackRegisterSpec::DecodeString(const uint16_t* raw, uint16_t length)
{
    std::string s;
    for (uint16_t i = 0; i < length; ++i)
    {
        for (char c : {static_cast<char>(raw[i] >> 8), static_cast<char>(raw[i] & 0xFF)})
        {
            if (c == '\0')
            {
                return s;
            }
            s.push_back(c);
        }
    }
    return s;
}

RackRegisterValue
RackDecodeRegister(const RackRegisterSpec& spec, const uint16_t* raw)
{
    RackRegisterValue v;
    v.name = spec.name;
    v.address = spec.address;
    v.length = spec.length;
    v.format = spec.format;
    v.unit = spec.unit;
    v.raw.assign(raw, raw + spec.length);
    if (spec.format == RackRegisterFormat::String)
    {
        v.text = RackRegisterSpec::DecodeString(raw, spec.length);
        return v;
    }
    v.value = spec.Decode(raw);
    if (spec.format == RackRegisterFormat::Flags)
    {
        const uint64_t bits = RawNumber(raw, spec.length);
        for (const auto& [bit, name] : spec.bits)
        {
            if (bit < 64 && ((bits >> bit) & 1u))
            {
                v.flagsSet.push_back(name);
            }
        }
    }
    return v;
}

// ---- parsing -----------------------------------------------------------------------------------

namespace
{
bool
ParseUint(const std::string& s, uint64_t max, uint64_t& out)
{
    if (s.empty() || s.size() > 12 ||
        !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    {
        return false;
    }
    out = std::strtoull(s.c_str(), nullptr, 10);
    return out <= max;
}

bool
ParseReal(const std::string& s, double& out)
{
    if (s.empty())
    {
        return false;
    }
    errno = 0;
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return errno == 0 && end == s.c_str() + s.size() && std::isfinite(out);
}

bool
ValidName(const std::string& s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '-' || c == '.';
    });
}
} // namespace

bool
RackRegisterMap::Parse(const std::string& text,
                       const std::string& source,
                       RackRegisterMap& out,
                       std::string& error)
{
    out = RackRegisterMap();
    std::istringstream in(text);
    std::string line;
    uint32_t lineNo = 0;
    bool haveBaud = false;
    std::set<std::string> names;
    auto fail = [&](const std::string& why) {
        error = source + ":" + std::to_string(lineNo) + ": " + why;
        return false;
    };
    while (std::getline(in, line))
    {
        ++lineNo;
        const auto hash = line.find('#');
        if (hash != std::string::npos)
        {
            line.erase(hash);
        }
        std::istringstream ls(line);
        std::vector<std::string> f;
        for (std::string w; ls >> w;)
        {
            f.push_back(w);
        }
        if (f.empty())
        {
            continue;
        }
        const std::string& kw = f[0];
        uint64_t a = 0;
        uint64_t b = 0;
        if (out.name.empty() && kw != "device")
        {
            return fail("the first directive must be 'device <TYPE>'");
        }
        if (kw == "device")
        {
            if (f.size() != 2 || !ValidName(f[1]))
            {
                return fail("expected 'device <TYPE>' (letters, digits, '_', '-', '.')");
            }
            if (!out.name.empty())
            {
                return fail("a second 'device' line");
            }
            out.name = f[1];
        }
        else if (kw == "baud")
        {
            if (f.size() != 2 || !ParseUint(f[1], 10000000, a) || a < 300)
            {
                return fail("expected 'baud <300..10000000>'");
            }
            out.baudRate = static_cast<uint32_t>(a);
            haveBaud = true;
        }
        else if (kw == "parity")
        {
            if (f.size() != 2 || (f[1] != "even" && f[1] != "odd" && f[1] != "none"))
            {
                return fail("expected 'parity even|odd|none'");
            }
            out.parity = f[1] == "even"  ? Rs485Parity::Even
                         : f[1] == "odd" ? Rs485Parity::Odd
                                         : Rs485Parity::None;
        }
        else if (kw == "stop")
        {
            if (f.size() != 2 || (f[1] != "1" && f[1] != "2"))
            {
                return fail("expected 'stop 1|2'");
            }
            out.stopBits = static_cast<uint8_t>(f[1][0] - '0');
        }
        else if (kw == "probe")
        {
            if (f.size() != 2 || !ParseUint(f[1], 0xFFFF, a))
            {
                return fail("expected 'probe <register 0..65535>'");
            }
            out.probeRegister = static_cast<uint16_t>(a);
        }
        else if (kw == "range")
        {
            if (f.size() != 3 || !ParseUint(f[1], 255, a) || !ParseUint(f[2], 255, b) || a < 1 ||
                b < a)
            {
                return fail("expected 'range <first> <last>' with 1 <= first <= last <= 255");
            }
            out.addressRanges.emplace_back(static_cast<uint8_t>(a), static_cast<uint8_t>(b));
        }
        else if (kw == "unix_time")
        {
            if (f.size() != 3 || !ParseUint(f[1], 0xFFFE, a) || !ParseUint(f[2], 86400 * 366, b) ||
                b == 0)
            {
                return fail("expected 'unix_time <register> <period seconds > 0>'");
            }
            out.hasUnixTime = true;
            out.unixTimeRegister = static_cast<uint16_t>(a);
            out.unixTimePeriodSeconds = static_cast<uint32_t>(b);
        }
        else if (kw == "write_enable")
        {
            if (f.size() != 3 || !ParseUint(f[1], 0xFFFF, a) || !ParseUint(f[2], 15, b))
            {
                return fail("expected 'write_enable <register> <bit 0..15>'");
            }
            out.hasWriteEnable = true;
            out.writeEnableRegister = static_cast<uint16_t>(a);
            out.writeEnableBit = static_cast<uint8_t>(b);
        }
        else if (kw == "bit")
        {
            if (out.registers.empty() || out.registers.back().format != RackRegisterFormat::Flags)
            {
                return fail("'bit' must follow a flags register");
            }
            RackRegisterSpec& r = out.registers.back();
            if (f.size() != 3 || !ParseUint(f[1], 16u * r.length - 1, a) || !ValidName(f[2]))
            {
                return fail("expected 'bit <0.." + std::to_string(16u * r.length - 1) +
                            "> <name>'");
            }
            if (!r.bits.emplace(static_cast<uint32_t>(a), f[2]).second)
            {
                return fail("bit " + f[1] + " of " + r.name + " named twice");
            }
        }
        else if (kw == "reg")
        {
            if (f.size() < 6)
            {
                return fail("expected 'reg <address> <length> <format> <access> <name> "
                            "[options]'");
            }
            RackRegisterSpec r;
            if (!ParseUint(f[1], 0xFFFF, a))
            {
                return fail("bad register address '" + f[1] + "'");
            }
            if (!ParseUint(f[2], 125, b) || b == 0 || a + b > 0x10000)
            {
                return fail("bad length '" + f[2] + "' (1..125 registers, within 0..65535)");
            }
            r.address = static_cast<uint16_t>(a);
            r.length = static_cast<uint16_t>(b);
            if (f[3] == "string")
            {
                r.format = RackRegisterFormat::String;
            }
            else if (f[3] == "integer")
            {
                r.format = RackRegisterFormat::Integer;
            }
            else if (f[3] == "flags")
            {
                r.format = RackRegisterFormat::Flags;
            }
            else if (f[3] == "float")
            {
                r.format = RackRegisterFormat::Float;
            }
            else
            {
                return fail("unknown format '" + f[3] + "' (string|integer|flags|float)");
            }
            if (r.format != RackRegisterFormat::String && r.length > 4)
            {
                return fail("a numeric register is at most 4 registers long");
            }
            if (f[4] == "RO")
            {
                r.access = RackRegisterAccess::ReadOnly;
            }
            else if (f[4] == "RW")
            {
                r.access = RackRegisterAccess::ReadWrite;
            }
            else if (f[4] == "WP")
            {
                r.access = RackRegisterAccess::WriteProtected;
            }
            else
            {
                return fail("unknown access '" + f[4] + "' (RO|RW|WP)");
            }
            if (!ValidName(f[5]))
            {
                return fail("bad register name '" + f[5] + "'");
            }
            r.name = f[5];
            if (!names.insert(r.name).second)
            {
                return fail("register name " + r.name + " used twice");
            }
            for (std::size_t i = 6; i < f.size(); ++i)
            {
                const std::string& o = f[i];
                const auto eq = o.find('=');
                const std::string key = o.substr(0, eq);
                const std::string val = eq == std::string::npos ? "" : o.substr(eq + 1);
                if (o == "signed")
                {
                    r.isSigned = true;
                }
                else if (key == "precision" && r.format == RackRegisterFormat::Float)
                {
                    if (!ParseUint(val, 31, a))
                    {
                        return fail("precision must be 0..31");
                    }
                    r.precision = static_cast<uint32_t>(a);
                }
                else if (key == "scale" && r.format == RackRegisterFormat::Float)
                {
                    if (!ParseReal(val, r.scale) || r.scale == 0)
                    {
                        return fail("scale must be a non-zero number");
                    }
                }
                else if (key == "shift" && r.format == RackRegisterFormat::Float)
                {
                    if (!ParseReal(val, r.shift))
                    {
                        return fail("shift must be a number");
                    }
                }
                else if (key == "unit" && eq != std::string::npos && !val.empty())
                {
                    r.unit = val;
                }
                else
                {
                    return fail("option '" + o + "' is not valid for a " + f[3] + " register");
                }
            }
            out.registers.push_back(r);
        }
        else
        {
            return fail("unknown directive '" + kw + "'");
        }
    }
    if (out.name.empty())
    {
        error = source + ": no 'device' line";
        return false;
    }
    if (!haveBaud)
    {
        error = source + ": no 'baud' line";
        return false;
    }
    if (out.registers.empty())
    {
        error = source + ": no registers";
        return false;
    }
    std::stable_sort(out.registers.begin(),
                     out.registers.end(),
                     [](const RackRegisterSpec& x, const RackRegisterSpec& y) {
                         return x.address < y.address;
                     });
    for (std::size_t i = 1; i < out.registers.size(); ++i)
    {
        const auto& p = out.registers[i - 1];
        const auto& r = out.registers[i];
        if (p.address + p.length > r.address)
        {
            error = source + ": registers " + p.name + " (" + std::to_string(p.address) + ", " +
                    std::to_string(p.length) + ") and " + r.name + " (" +
                    std::to_string(r.address) + ") overlap";
            return false;
        }
    }
    if (out.hasUnixTime)
    {
        const RackRegisterSpec* u = out.At(out.unixTimeRegister);
        if (!u || u->address != out.unixTimeRegister || u->length != 2 ||
            u->access == RackRegisterAccess::ReadOnly)
        {
            error = source + ": unix_time register " + std::to_string(out.unixTimeRegister) +
                    " must be a writable 2-register entry of the map";
            return false;
        }
    }
    if (out.hasWriteEnable)
    {
        const RackRegisterSpec* w = out.At(out.writeEnableRegister);
        if (!w || w->access != RackRegisterAccess::ReadWrite)
        {
            error = source + ": write_enable register " +
                    std::to_string(out.writeEnableRegister) + " must be an RW register of the map";
            return false;
        }
    }
    else if (std::any_of(out.registers.begin(), out.registers.end(), [](const auto& r) {
                 return r.access == RackRegisterAccess::WriteProtected;
             }))
    {
        error = source + ": WP registers need a 'write_enable' line";
        return false;
    }
    if (!out.At(out.probeRegister))
    {
        error = source + ": probe register " + std::to_string(out.probeRegister) +
                " is not in the map";
        return false;
    }
    return true;
}

bool
RackRegisterMap::Load(const std::string& path, RackRegisterMap& out, std::string& error)
{
    std::ifstream f(path);
    if (!f)
    {
        error = path + ": cannot open";
        return false;
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    return Parse(ss.str(), path, out, error);
}

std::string
RackRegisterMap::DefaultDirectory()
{
    if (const char* env = std::getenv("CNUAS_RACK_MAPS"); env && *env)
    {
        return env;
    }
    // The shipped maps in the first data directory that has them
    // (models/common/data-directory.h); a relative data/rack/maps when none has, so the error
    // names a path the user can check.
    for (const std::string& d : CnuasDataSearchPath())
    {
        std::error_code ec;
        if (std::filesystem::is_directory(d + "/rack/maps", ec))
        {
            return d + "/rack/maps";
        }
    }
    return "data/rack/maps";
}

RackRegisterMap
RackRegisterMap::LoadType(const std::string& type, const std::string& directory)
{
    std::string file = type;
    std::transform(file.begin(), file.end(), file.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
    });
    const std::string path = (directory.empty() ? DefaultDirectory() : directory) + "/" + file +
                             ".map";
    RackRegisterMap m;
    std::string error;
    NS_ABORT_MSG_UNLESS(Load(path, m, error), "rack register map: " << error);
    NS_ABORT_MSG_UNLESS(m.name == type,
                        "rack register map " << path << " declares device " << m.name
                                             << ", expected " << type);
    return m;
}

Rs485Format
RackRegisterMap::Format() const
{
    Rs485Format f;
    f.baudRate = baudRate;
    f.parity = parity;
    f.stopBits = stopBits;
    return f;
}

bool
RackRegisterMap::Covers(uint8_t address) const
{
    return std::any_of(addressRanges.begin(), addressRanges.end(), [address](const auto& r) {
        return address >= r.first && address <= r.second;
    });
}

std::vector<uint8_t>
RackRegisterMap::Addresses() const
{
    std::vector<uint8_t> out;
    std::set<uint8_t> seen;
    for (const auto& [lo, hi] : addressRanges)
    {
        for (uint32_t a = lo; a <= hi; ++a)
        {
            if (seen.insert(static_cast<uint8_t>(a)).second)
            {
                out.push_back(static_cast<uint8_t>(a));
            }
        }
    }
    return out;
}

const RackRegisterSpec*
RackRegisterMap::Find(const std::string& registerName) const
{
    for (const auto& r : registers)
    {
        if (r.name == registerName)
        {
            return &r;
        }
    }
    return nullptr;
}

const RackRegisterSpec*
RackRegisterMap::At(uint16_t address) const
{
    auto it = std::upper_bound(registers.begin(),
                               registers.end(),
                               address,
                               [](uint16_t a, const RackRegisterSpec& r) { return a < r.address; });
    if (it == registers.begin())
    {
        return nullptr;
    }
    --it;
    return address < it->address + it->length ? &*it : nullptr;
}

std::vector<std::pair<uint16_t, uint16_t>>
RackRegisterMap::Spans(uint16_t maxSpan) const
{
    std::vector<std::pair<uint16_t, uint16_t>> out;
    for (const auto& r : registers)
    {
        if (!out.empty() && out.back().first + out.back().second == r.address &&
            out.back().second + r.length <= maxSpan)
        {
            out.back().second = static_cast<uint16_t>(out.back().second + r.length);
        }
        else
        {
            out.emplace_back(r.address, r.length);
        }
    }
    return out;
}

} // namespace ns3
