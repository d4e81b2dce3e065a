#include "scenario.h"

#include "models/common/data-directory.h"

#include "helpers/formats/parse-util.h"
#include "sim-progress.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ns3
{

namespace
{

// Scenarios register from static initializers in other translation units, whose order is
// unspecified; a function-local static is constructed on first use, so it exists in time.
std::map<std::string, ScenarioInfo>&
Registry()
{
    static std::map<std::string, ScenarioInfo> registry;
    return registry;
}

const ScenarioParam&
Documented(const ScenarioInfo& info, const std::string& key)
{
    for (const ScenarioParam& p : info.params)
    {
        if (p.key == key)
        {
            return p;
        }
    }
    // A scenario reading a key it does not document is a bug in the scenario, but it reaches
    // the user as an error message rather than a crash.
    throw std::invalid_argument("scenario '" + info.name + "' reads parameter '" + key +
                                "', which it does not document");
}

std::string
BadValue(const ScenarioInfo& info, const std::string& key, const std::string& value,
         const std::string& expected)
{
    return "scenario '" + info.name + "': parameter " + key + "='" + value + "' is not " +
           expected;
}

} // namespace

bool
ScenarioRegistry::Register(ScenarioInfo info)
{
    if (info.name.empty() || !info.run)
    {
        throw std::logic_error("a scenario was registered without a name or body");
    }
    // Each scenario says what --pcap does to it (ScenarioPcap), so that none can take the
    // option and quietly write nothing.
    if (info.pcap == ScenarioPcap::Unstated)
    {
        throw std::logic_error("scenario '" + info.name +
                               "' does not say what it does with --pcap (ScenarioInfo::pcap)");
    }
    // A parameter without a key, or documented twice, is a scenario built from something not
    // yet constructed (a global of another translation unit read during static initialisation)
    // or a copy-paste: either way `--param` could not reach it as documented.
    std::set<std::string> keys;
    for (const ScenarioParam& p : info.params)
    {
        if (p.key.empty() || !keys.insert(p.key).second)
        {
            throw std::logic_error("scenario '" + info.name + "' documents parameter '" + p.key +
                                   "' " + (p.key.empty() ? "without a key" : "twice"));
        }
    }
    std::string name = info.name;
    // Two scenarios under one name are a build error: which one `cnuas run NAME` ran would
    // depend on the static-initialisation order of libcnuas's object files.
    if (!Registry().emplace(name, std::move(info)).second)
    {
        throw std::logic_error("scenario '" + name + "' is registered twice");
    }
    return true;
}

bool
ScenarioRegistry::RegisterAtStartup(ScenarioInfo info)
{
    try
    {
        return Register(std::move(info));
    }
    catch (const std::logic_error& e)
    {
        // Static initialisation cannot report an error any other way; stopping here keeps a
        // libcnuas with a clash from running anything.
        std::fprintf(stderr, "cnuas: fatal: %s\n", e.what());
        std::fflush(stderr);
        std::_Exit(kDuplicateScenarioExit);
    }
}

std::vector<ScenarioInfo>
ScenarioRegistry::All()
{
    std::vector<ScenarioInfo> all;
    for (const auto& [name, info] : Registry())
    {
        all.push_back(info); // std::map iterates in name order
    }
    return all;
}

const ScenarioInfo*
ScenarioRegistry::Find(const std::string& name)
{
    auto it = Registry().find(name);
    return it == Registry().end() ? nullptr : &it->second;
}

std::string
ScenarioParamString(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key)
{
    const ScenarioParam& p = Documented(info, key);
    auto it = o.params.find(key);
    return it == o.params.end() ? p.defaultValue : it->second;
}

namespace
{
/// "[0, 1]" or "[1, 4096]": a range as messages print it.
template <typename T>
std::string
RangeText(T min, T max)
{
    std::ostringstream s;
    s << "[" << min << ", " << max << "]";
    return s.str();
}
/// "[1 us, 10 s]", or ">= 0 s" when there is no upper bound.
std::string
TimeRangeText(Time min, Time max)
{
    if (max == Time::Max())
    {
        return ">= " + SimProgress::FormatSimTime(min);
    }
    return "[" + SimProgress::FormatSimTime(min) + ", " + SimProgress::FormatSimTime(max) + "]";
}
} // namespace

double
ScenarioParamDouble(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key,
                    double min, double max)
{
    std::string s = ScenarioParamString(o, info, key);
    double v = 0;
    if (!ParseFiniteDouble(s, &v) || v < min || v > max)
    {
        throw ScenarioParamError(key, BadValue(info, key, s, "a number in " + RangeText(min, max)));
    }
    return v;
}

uint64_t
ScenarioParamUint(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key,
                  uint64_t min, uint64_t max)
{
    std::string s = ScenarioParamString(o, info, key);
    uint64_t v = 0;
    if (!ParseDecimalUint(s, max, &v) || v < min)
    {
        throw ScenarioParamError(
            key, BadValue(info, key, s, "a whole number in " + RangeText(min, max)));
    }
    return v;
}

uint64_t
ScenarioParamUintOneOf(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key,
                       const std::vector<uint64_t>& allowed)
{
    std::string s = ScenarioParamString(o, info, key);
    uint64_t v = 0;
    std::string list;
    for (uint64_t a : allowed)
    {
        if (ParseDecimalUint(s, UINT64_MAX, &v) && v == a)
        {
            return v;
        }
        list += (list.empty() ? "" : ", ") + std::to_string(a);
    }
    throw ScenarioParamError(key, BadValue(info, key, s, "one of " + list));
}

namespace
{
/// The comma-separated items of a list parameter, empty items skipped.
std::vector<std::string>
ListItems(const std::string& s)
{
    std::vector<std::string> items;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
    {
        item = TrimSpace(item);
        if (!item.empty())
        {
            items.push_back(item);
        }
    }
    return items;
}
} // namespace

std::vector<uint64_t>
ScenarioParamUintList(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key,
                      uint64_t min, uint64_t max)
{
    std::string s = ScenarioParamString(o, info, key);
    std::vector<uint64_t> out;
    for (const std::string& item : ListItems(s))
    {
        uint64_t v = 0;
        if (!ParseDecimalUint(item, max, &v) || v < min)
        {
            out.clear();
            break;
        }
        out.push_back(v);
    }
    if (out.empty())
    {
        throw ScenarioParamError(key, BadValue(info, key, s,
                                               "a comma-separated list of whole numbers in " +
                                                   RangeText(min, max)));
    }
    return out;
}

std::vector<double>
ScenarioParamDoubleList(const ScenarioOptions& o, const ScenarioInfo& info,
                        const std::string& key, double min, double max)
{
    std::string s = ScenarioParamString(o, info, key);
    std::vector<double> out;
    for (const std::string& item : ListItems(s))
    {
        double v = 0;
        if (!ParseFiniteDouble(item, &v) || v < min || v > max)
        {
            out.clear();
            break;
        }
        out.push_back(v);
    }
    if (out.empty())
    {
        throw ScenarioParamError(key, BadValue(info, key, s,
                                               "a comma-separated list of numbers in " +
                                                   RangeText(min, max)));
    }
    return out;
}

std::string
ScenarioParamChoice(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key,
                    const std::vector<std::string>& allowed)
{
    std::string s = ScenarioParamString(o, info, key);
    std::string list;
    for (const std::string& a : allowed)
    {
        if (s == a)
        {
            return s;
        }
        list += (list.empty() ? "" : ", ") + a;
    }
    throw ScenarioParamError(key, BadValue(info, key, s, "one of " + list));
}

DataRate
ScenarioParamDataRate(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key)
{
    std::string s = ScenarioParamString(o, info, key);
    uint64_t bps = 0;
    if (!ParseDataRateBps(s, &bps))
    {
        throw ScenarioParamError(
            key,
            BadValue(info, key, s, "a positive data rate with a unit (e.g. 40Gbps, 100Mb/s)"));
    }
    return DataRate(bps);
}

void
CheckScenarioParams(const ScenarioOptions& o, const ScenarioInfo& info)
{
    std::string unknown;
    bool topology = false;
    for (const auto& [key, value] : o.params)
    {
        bool known = false;
        for (const ScenarioParam& p : info.params)
        {
            known = known || p.key == key;
        }
        if (!known)
        {
            topology = topology || key == "topology";
            unknown += (unknown.empty() ? "'" : ", '") + key + "'";
        }
    }
    if (unknown.empty())
    {
        return;
    }
    std::string takes;
    for (const ScenarioParam& p : info.params)
    {
        takes += (takes.empty() ? "" : ", ") + p.key;
    }
    std::string message = "scenario '" + info.name + "' has no parameter " + unknown;
    if (topology)
    {
        // `topology` is also a scenario-file directive, so say plainly what is wrong.
        message += "; it builds its own fabric and does not take a topology";
    }
    message += takes.empty() ? " (it takes no parameters)" : " (it takes: " + takes + ")";
    throw std::invalid_argument(message);
}

std::string
ScenarioOwnAttributeProblem(const ScenarioInfo& info, const std::string& declaredName)
{
    for (const ScenarioOwnAttribute& a : info.ownAttributes)
    {
        if (a.attribute == declaredName)
        {
            return "scenario '" + info.name + "' sets " + a.attribute +
                   " itself, so a default given here would be overridden; use " + a.instead;
        }
    }
    return "";
}

void
ScenarioSetsAttributes(ScenarioInfo& info,
                       const std::vector<std::pair<std::string, std::string>>& fromParams,
                       const std::string& otherwise)
{
    for (const auto& [attribute, param] : fromParams)
    {
        // Captured by name, not as the structured binding: C++17 lets no lambda capture one
        // (GCC accepts it; clang, which builds the fuzz targets, does not).
        const std::string& key = param;
        const bool has = std::any_of(info.params.begin(), info.params.end(),
                                     [&key](const ScenarioParam& p) { return p.key == key; });
        info.ownAttributes.push_back({attribute, has ? "--param " + param : otherwise});
    }
}

void
ScenarioMarkInterrupted(ScenarioResult& result, Time at)
{
    result.exitCode = 130;
    result.summary.insert(result.summary.begin(),
                          {"interrupted", "Ctrl-C at " + ScenarioFixed(at.GetSeconds() * 1e3, 3) +
                                              " ms simulated: partial results"});
}

std::string
ScenarioOutputFile(const ScenarioOptions& o, const std::string& name)
{
    const std::string dir = o.outDir.empty() ? "." : o.outDir;
    std::error_code ec;
    if (!std::filesystem::create_directories(dir, ec) && ec)
    {
        throw std::runtime_error("cannot create the output directory '" + dir +
                                 "': " + ec.message());
    }
    return (std::filesystem::path(dir) / name).string();
}

void
CheckScenarioPcapRequest(const ScenarioOptions& o, const ScenarioInfo& info)
{
    if (!o.pcapDir.empty() && info.pcap == ScenarioPcap::Refused)
    {
        throw std::invalid_argument("scenario '" + info.name +
                                    "' cannot write pcap traces; run it without --pcap");
    }
}

void
CheckScenarioPcapsWritten(const ScenarioOptions& o, const ScenarioInfo& info,
                          const ScenarioResult& result)
{
    if (o.pcapDir.empty() || info.pcap != ScenarioPcap::Wire)
    {
        return;
    }
    // A pcap counts if it lies under the requested folder (a scenario of several runs writes
    // one subfolder per run) and exists.
    const std::filesystem::path dir = std::filesystem::absolute(o.pcapDir).lexically_normal();
    for (const std::string& a : result.artifacts)
    {
        const std::filesystem::path p = std::filesystem::absolute(a).lexically_normal();
        const std::string rel = p.lexically_relative(dir).generic_string();
        std::error_code ec;
        if (p.extension() == ".pcap" && !rel.empty() && rel.compare(0, 2, "..") != 0 &&
            std::filesystem::is_regular_file(p, ec))
        {
            return;
        }
    }
    throw std::runtime_error("scenario '" + info.name + "' was asked for pcap traces in '" +
                             o.pcapDir + "' but wrote none");
}

bool
ParseTimeString(const std::string& text, Time* out)
{
    // ns-3's Time(string) reads the longest prefix of "+-0123456789.eE" as the number and the
    // remainder as the unit, aborting the process on an unknown unit; accept only what it reads
    // cleanly.
    size_t n = text.find_first_not_of("+-0123456789.eE");
    std::string number = text.substr(0, n);
    double v = 0;
    if (!ParseFiniteDouble(number, &v))
    {
        return false;
    }
    // No unit: ns-3 would read seconds. Only a zero means the same in every unit.
    if (n == std::string::npos && v != 0)
    {
        return false;
    }
    std::string unit = n == std::string::npos ? "s" : text.substr(n);
    struct UnitInfo
    {
        const char* name;
        Time::Unit unit;
        double seconds;
    };
    static const UnitInfo kUnits[] = {
        {"y", Time::Y, 365 * 86400.0}, {"d", Time::D, 86400.0}, {"h", Time::H, 3600.0},
        {"min", Time::MIN, 60.0},      {"s", Time::S, 1.0},     {"ms", Time::MS, 1e-3},
        {"us", Time::US, 1e-6},        {"ns", Time::NS, 1e-9},  {"ps", Time::PS, 1e-12},
        {"fs", Time::FS, 1e-15},
    };
    double resolutionSeconds = 0;
    for (const UnitInfo& u : kUnits)
    {
        if (u.unit == Time::GetResolution())
        {
            resolutionSeconds = u.seconds;
        }
    }
    for (const UnitInfo& u : kUnits)
    {
        if (unit == u.name)
        {
            // Time counts resolution steps in an int64_t: refuse what would overflow it.
            if (resolutionSeconds > 0 && std::fabs(v) * u.seconds / resolutionSeconds >= 9.2e18)
            {
                return false;
            }
            *out = Time::FromDouble(v, u.unit);
            return true;
        }
    }
    return false;
}

Time
ScenarioParamTime(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key,
                  Time min, Time max)
{
    std::string s = ScenarioParamString(o, info, key);
    Time t;
    const bool parsed = ParseTimeString(s, &t);
    if (!parsed || t < min || t > max)
    {
        throw ScenarioParamError(
            key, BadValue(info, key, s,
                          "a duration with a unit (s ms us ns ps, e.g. 10ms)" +
                              (parsed ? " in " + TimeRangeText(min, max) : std::string())));
    }
    return t;
}

Time
ScenarioParamMicroseconds(const ScenarioOptions& o, const ScenarioInfo& info,
                          const std::string& key, double minUs, double maxUs)
{
    return PicoSeconds(std::llround(ScenarioParamDouble(o, info, key, minUs, maxUs) * 1e6));
}

std::string
ScenarioFixed(double v, int digits)
{
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
}

bool
RunPlotScript(const std::string& script, const std::string& csv, const std::string& png,
              const std::string& title)
{
    const std::string path = CnuasShareFile("tools/plot/" + script);
    if (path.empty())
    {
        return false;
    }
    const std::string cmd = std::string("/usr/bin/python3 '") + path + "' '" + csv + "' '" + png +
                            "' '" + title + "' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 && std::filesystem::exists(png);
}

Topology
ScenarioParamTopology(const ScenarioOptions& o, const ScenarioInfo& info)
{
    try
    {
        return BuildTopologyFromSpec(ScenarioParamString(o, info, "topology"));
    }
    catch (const InputError&)
    {
        throw; // the topology file's own error, with its line
    }
    catch (const std::invalid_argument& e)
    {
        // A spec that does not parse is the parameter's value: reported where it was given.
        throw ScenarioParamError("topology", e.what());
    }
}

} // namespace ns3
