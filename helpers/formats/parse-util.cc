#include "parse-util.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace ns3
{

// The C locale's isspace set; `istream >> word` skips exactly these.
const char* const kBlankChars = " \t\n\v\f\r";

std::string
TrimSpace(const std::string& s)
{
    size_t b = s.find_first_not_of(kBlankChars);
    if (b == std::string::npos)
    {
        return "";
    }
    size_t e = s.find_last_not_of(kBlankChars);
    return s.substr(b, e - b + 1);
}

std::vector<std::string>
SplitWords(const std::string& s)
{
    std::vector<std::string> words;
    size_t b = s.find_first_not_of(kBlankChars);
    while (b != std::string::npos)
    {
        size_t e = s.find_first_of(kBlankChars, b);
        words.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
        b = e == std::string::npos ? e : s.find_first_not_of(kBlankChars, e);
    }
    return words;
}

bool
ParseDecimalUint(const std::string& s, uint64_t max, uint64_t* out)
{
    if (s.empty())
    {
        return false;
    }
    uint64_t v = 0;
    for (char c : s)
    {
        if (c < '0' || c > '9')
        {
            return false;
        }
        auto d = static_cast<uint64_t>(c - '0');
        // v * 10 + d <= max, written so that nothing can wrap around.
        if (v > max / 10 || (v == max / 10 && d > max % 10))
        {
            return false;
        }
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

bool
ParseFiniteDouble(const std::string& s, double* out)
{
    // strtod skips leading blanks and reads "inf"/"nan"/hex floats; none of these is what a
    // user means by a number in a file or on the command line.
    if (s.empty() || s.find_first_not_of("+-0123456789.eE") != std::string::npos)
    {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
    {
        return false;
    }
    *out = v;
    return true;
}

bool
ParseDataRateBps(const std::string& s, uint64_t* bps)
{
    // The units ns-3's DataRate reads (data-rate.cc), with their factors in bits per second.
    struct Unit
    {
        const char* name;
        double factor;
    };
    static const Unit kUnits[] = {
        {"bps", 1},          {"b/s", 1},          {"Bps", 8},          {"B/s", 8},
        {"kbps", 1e3},       {"kb/s", 1e3},       {"Kbps", 1e3},       {"Kb/s", 1e3},
        {"kBps", 8e3},       {"kB/s", 8e3},       {"KBps", 8e3},       {"KB/s", 8e3},
        {"Kib/s", 1024.0},   {"KiB/s", 8192.0},   {"Mbps", 1e6},       {"Mb/s", 1e6},
        {"MBps", 8e6},       {"MB/s", 8e6},       {"Mib/s", 1048576.0}, {"MiB/s", 8388608.0},
        {"Gbps", 1e9},       {"Gb/s", 1e9},       {"GBps", 8e9},       {"GB/s", 8e9},
        {"Gib/s", 1073741824.0}, {"GiB/s", 8589934592.0}, {"Tbps", 1e12}, {"Tb/s", 1e12},
    };
    const size_t n = s.find_first_not_of("0123456789.eE+-");
    if (n == 0 || n == std::string::npos)
    {
        return false; // no number, or no unit: a bare number is ambiguous (bits? Gb/s?)
    }
    double v = 0;
    if (!ParseFiniteDouble(s.substr(0, n), &v))
    {
        return false;
    }
    const std::string unit = s.substr(n);
    for (const Unit& u : kUnits)
    {
        if (unit == u.name)
        {
            const double r = v * u.factor;
            // Below one bit per second rounds to a zero rate; 1.8e19 overflows uint64_t.
            if (!(r >= 1) || r >= 1.8e19)
            {
                return false;
            }
            *bps = static_cast<uint64_t>(std::round(r));
            return true;
        }
    }
    return false;
}

} // namespace ns3
