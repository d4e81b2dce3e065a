// Scenario files (*.scn): the options of `cnuas run` written down, one directive per line, so a
// run can be kept in version control and repeated exactly.
#ifndef CNUAS_HELPERS_SCENARIO_FILE_H
#define CNUAS_HELPERS_SCENARIO_FILE_H

#include "ns3/attribute.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ns3
{

/// An ns-3 attribute default or GlobalValue to set, with where it came from (for messages).
struct AttributeSetting
{
    std::string name;  ///< "ns3::Class::Attribute", "Class::Attribute" or a GlobalValue name
    std::string value;
    std::string where; ///< "file.scn:7" or "--set"
};

/// The contents of a scenario file. Absent directives stay empty/nullopt.
struct ScenarioFile
{
    std::string path;                        ///< the file as named by the user
    std::string scenario;                    ///< `scenario NAME`
    std::optional<uint64_t> seed;            ///< `seed N`
    std::optional<uint64_t> run;             ///< `run N`
    std::vector<AttributeSetting> settings;  ///< `set ATTR=VALUE`, in file order
    std::map<std::string, std::string> params; ///< `param KEY=VALUE` and `topology SPEC`
    std::map<std::string, std::string> paramWhere; ///< param key -> "file.scn:7", for messages
    std::optional<std::string> pcapDir;      ///< `pcap DIR`
    std::optional<std::string> outDir;       ///< `out DIR`
};

/**
 * Reads a scenario file. Directives, one per line, `#` starts a comment (at the start of a line
 * or after whitespace):
 *
 *     scenario NAME        seed N          run N           pcap DIR        out DIR
 *     set ATTR=VALUE       param KEY=VALUE topology SPEC
 *
 * `topology SPEC` is shorthand for `param topology=SPEC`; a relative `file:` path in SPEC is
 * made relative to the directory of the scenario file. Throws InputError (parse-util.h;
 * "path:line: message") on an unreadable file, an unknown directive, a missing or malformed
 * value, or a directive given twice.
 */
ScenarioFile ParseScenarioFile(const std::string& path);
/// As ParseScenarioFile, from text; `baseDir` is where relative `topology file:` paths point.
ScenarioFile ParseScenarioText(const std::string& text,
                               const std::string& sourceName,
                               const std::string& baseDir);

/// Splits "KEY=VALUE" at the first '='; throws std::invalid_argument (naming `what`) if there is
/// no '=' or the key is empty.
std::pair<std::string, std::string> SplitAssignment(const std::string& text,
                                                    const std::string& what);

/// Rewrites a relative `file:` topology spec to be relative to baseDir; other specs unchanged.
std::string ResolveTopologySpec(const std::string& spec, const std::string& baseDir);

/**
 * "" if `value` is a valid value for an attribute with this checker, else what it expects
 * ("a time with a unit, e.g. 10us"). Stricter than ns-3 where ns-3 is silently wrong: a Time
 * needs a unit, a DataRate must be positive. Values ns-3 would abort the process on are tried
 * in a child process, so they come back as a message too.
 */
std::string CheckAttributeValue(Ptr<const AttributeChecker> checker, const std::string& value);

/**
 * Applies one setting: an attribute default through Config::SetDefaultFailSafe (a name without
 * the "ns3::" prefix gets it), or, for a name without "::", an ns-3 GlobalValue (RngSeed,
 * RngRun, SchedulerType, ...). Returns "" on success, else a message saying whether the class,
 * the attribute or the value was wrong (listing what exists where that helps).
 */
std::string ApplyAttributeSetting(const std::string& name, const std::string& value);

/**
 * The checks ApplyAttributeSetting makes on an attribute `ns3::Class::Attribute=value`, without
 * setting anything: "" if it could be set, else the same message. `declaredName` (if given)
 * receives the attribute's name on the class that declares it ("ns3::Class::Attribute"). A name
 * without "::" (a GlobalValue) is refused: only attributes are checked here.
 */
std::string CheckAttributeSetting(const std::string& name,
                                  const std::string& value,
                                  std::string* declaredName);

} // namespace ns3

#endif
