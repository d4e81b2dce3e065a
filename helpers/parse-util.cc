#include "parse-util.h"

namespace ns3
{

std::string
TrimSpace(const std::string& s)
{
    size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
    {
        return "";
    }
    size_t e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
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

} // namespace ns3
