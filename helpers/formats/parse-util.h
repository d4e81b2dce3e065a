// Small strict text-parsing helpers shared by the Cnuas file formats and the command line.
#ifndef CNUAS_HELPERS_PARSE_UTIL_H
#define CNUAS_HELPERS_PARSE_UTIL_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ns3
{

/**
 * A file the user gave is unreadable or invalid (a topology, scenario, configuration, flow or
 * rack file); what() names the file, and the line where there is one. `cnuas` exits with
 * status 3 on it, 2 on any other std::invalid_argument (a bad command-line value): it derives
 * from std::invalid_argument so that code catching bad input in general still catches it.
 */
class InputError : public std::invalid_argument
{
  public:
    using std::invalid_argument::invalid_argument;
};

/// The characters TrimSpace and SplitWords treat as blank: those std::isspace and `istream >>`
/// skip in the C locale, so that a trim and a word split never disagree about a line.
extern const char* const kBlankChars;

/// `s` without leading and trailing blanks (space, tab, CR, LF, form feed, vertical tab).
std::string TrimSpace(const std::string& s);

/// The blank-separated words of `s` (empty for a blank line).
std::vector<std::string> SplitWords(const std::string& s);

/**
 * Parses the whole of `s` as a decimal unsigned integer no larger than `max`. No sign, no
 * spaces, no hex: user input such as "-1", "1e3" or "0x10" is refused rather than half-read.
 */
bool ParseDecimalUint(const std::string& s, uint64_t max, uint64_t* out);

/**
 * Parses the whole of `s` as a finite decimal number (strtod syntax, no trailing characters).
 * Range checks are the caller's: it knows what the value means.
 */
bool ParseFiniteDouble(const std::string& s, double* out);

/**
 * Parses a data rate as ns-3's DataRate writes it ("40Gbps", "100Mb/s", "2.5GB/s", "1000bps";
 * SI prefixes k K M G T, "bps"/"b/s" bits, "Bps"/"B/s" bytes, also kibi forms "Kibps") into bits
 * per second. False for anything else, and for rates that are not positive or do not fit ns-3's
 * 64-bit bit rate: DataRate's own parser aborts the process on malformed text and wraps
 * negative numbers around.
 */
bool ParseDataRateBps(const std::string& s, uint64_t* bps);

} // namespace ns3

#endif
