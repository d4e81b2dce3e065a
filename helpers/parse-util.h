// Small strict text-parsing helpers shared by the Cnuas file formats and the command line.
#ifndef CNUAS_HELPERS_PARSE_UTIL_H
#define CNUAS_HELPERS_PARSE_UTIL_H

#include <cstdint>
#include <string>

namespace ns3
{

/// `s` without leading and trailing spaces, tabs, CR and LF.
std::string TrimSpace(const std::string& s);

/**
 * Parses the whole of `s` as a decimal unsigned integer no larger than `max`. No sign, no
 * spaces, no hex: user input such as "-1", "1e3" or "0x10" is refused rather than half-read.
 */
bool ParseDecimalUint(const std::string& s, uint64_t max, uint64_t* out);

} // namespace ns3

#endif
