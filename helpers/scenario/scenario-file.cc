#include "scenario-file.h"

#include "helpers/formats/parse-util.h"
#include "scenario.h"

#include "ns3/config.h"
#include "ns3/global-value.h"
#include "ns3/object-factory.h"
#include "ns3/string.h"
#include "ns3/type-id.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace ns3
{

namespace
{

/// Drops a `#` comment: the whole line if it starts with '#', else from a '#' that follows
/// whitespace (so values such as `param label=run#2` keep their '#').
std::string
StripComment(const std::string& line)
{
    std::string t = TrimSpace(line);
    if (!t.empty() && t[0] == '#')
    {
        return "";
    }
    for (size_t i = 1; i < t.size(); ++i)
    {
        if (t[i] == '#' && t[i - 1] != '\0' &&
            std::strchr(kBlankChars, t[i - 1]) != nullptr)
        {
            return TrimSpace(t.substr(0, i));
        }
    }
    return t;
}

std::string
AttributeList(TypeId tid)
{
    std::string names;
    for (TypeId t = tid;; t = t.GetParent())
    {
        for (uint32_t i = 0; i < t.GetAttributeN(); ++i)
        {
            names += (names.empty() ? "" : ", ") + t.GetAttribute(i).name;
        }
        if (t == t.GetParent())
        {
            break;
        }
    }
    return names.empty() ? "none" : names;
}

/// The TypeId in tid's ancestry that declares `attr`: initial values live there, and
/// Config::SetDefaultFailSafe only looks at the named TypeId's own attributes.
TypeId
DeclaringTypeId(TypeId tid, const std::string& attr)
{
    for (TypeId t = tid;; t = t.GetParent())
    {
        for (uint32_t i = 0; i < t.GetAttributeN(); ++i)
        {
            if (t.GetAttribute(i).name == attr)
            {
                return t;
            }
        }
        if (t == t.GetParent())
        {
            return tid;
        }
    }
}

/**
 * Runs `trial` in a child process and returns whether it returned true. ns-3 rejects some bad
 * input by aborting the process (UintegerValue, TimeValue, attribute setters that parse a
 * string) or by crashing (PointerValue); in a child, a death only means the input is bad, and
 * the user gets a message instead of a core dump.
 */
bool
SucceedsInChild(const std::function<bool()>& trial)
{
    std::fflush(nullptr); // the child must not flush our buffered output a second time
    pid_t pid = fork();
    if (pid < 0)
    {
        return false;
    }
    if (pid == 0)
    {
        // ns-3's abort message would only confuse next to our own.
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
        {
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
        }
        // The child dies of ns-3's abort quietly even inside a program with crash handlers of
        // its own (Python's faulthandler, which pytest turns on, writes to a saved stderr).
        for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
        {
            signal(sig, SIG_DFL);
        }
        _exit(trial() ? 0 : 1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
    {
        if (errno != EINTR)
        {
            return false;
        }
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// True if `value` converts to a valid value for `checker` (tried in a child process).
bool
ValueConverts(Ptr<const AttributeChecker> checker, const std::string& value)
{
    return SucceedsInChild(
        [&checker, &value]() { return checker->CreateValidValue(StringValue(value)) != nullptr; });
}

std::string
ApplyGlobalValue(const std::string& name, const std::string& value)
{
    std::string known;
    for (auto it = GlobalValue::Begin(); it != GlobalValue::End(); ++it)
    {
        known += (known.empty() ? "" : ", ") + (*it)->GetName();
        if ((*it)->GetName() != name)
        {
            continue;
        }
        Ptr<const AttributeChecker> checker = (*it)->GetChecker();
        // A zero seed would leave MRG32k3a's state all zeros, which it cannot leave.
        bool zeroSeed = name == "RngSeed" && !value.empty() &&
                        value.find_first_not_of('0') == std::string::npos;
        if (zeroSeed || !ValueConverts(checker, value) ||
            !GlobalValue::BindFailSafe(name, StringValue(value)))
        {
            return "bad value '" + value + "' for global value " + name + " (expects " +
                   (zeroSeed ? std::string("a seed in 1..4294967295")
                             : checker->GetUnderlyingTypeInformation()) +
                   ")";
        }
        return "";
    }
    return "no ns-3 global value '" + name +
           "' (attributes are written [ns3::]Class::Attribute; global values are: " + known + ")";
}

} // namespace

std::string
CheckAttributeValue(Ptr<const AttributeChecker> checker, const std::string& value)
{
    // Times and rates are held to Cnuas's rules, stricter than ns-3's: a Time needs its unit
    // (ns-3 reads a bare number as seconds), and a rate must be positive (ns-3 takes zero,
    // which no link can run at, and wraps negative numbers around).
    const std::string type = checker->GetValueTypeName();
    const bool isTime = type == "ns3::TimeValue";
    // ns-3 names the DataRate checker's value type without its namespace.
    const bool isRate = type == "ns3::DataRateValue" || type == "DataRateValue";
    Time unusedTime;
    uint64_t unusedBps = 0;
    const bool ok = isTime   ? ParseTimeString(value, &unusedTime)
                    : isRate ? ParseDataRateBps(value, &unusedBps)
                             : true;
    if (ok && ValueConverts(checker, value))
    {
        return "";
    }
    return isTime   ? "a time with a unit, e.g. 10us"
           : isRate ? "a positive data rate with a unit, e.g. 100Gbps"
                    : checker->GetUnderlyingTypeInformation();
}

std::pair<std::string, std::string>
SplitAssignment(const std::string& text, const std::string& what)
{
    size_t eq = text.find('=');
    if (eq == std::string::npos)
    {
        throw std::invalid_argument(what + " needs KEY=VALUE, got '" + text + "'");
    }
    std::string key = TrimSpace(text.substr(0, eq));
    if (key.empty())
    {
        throw std::invalid_argument(what + " has an empty key in '" + text + "'");
    }
    return {key, TrimSpace(text.substr(eq + 1))};
}

std::string
ResolveTopologySpec(const std::string& spec, const std::string& baseDir)
{
    if (spec.rfind("file:", 0) != 0)
    {
        return spec;
    }
    std::filesystem::path p(spec.substr(5));
    if (p.empty() || p.is_absolute())
    {
        return spec;
    }
    return "file:" + (std::filesystem::path(baseDir) / p).lexically_normal().string();
}

ScenarioFile
ParseScenarioText(const std::string& text,
                  const std::string& sourceName,
                  const std::string& baseDir)
{
    ScenarioFile f;
    f.path = sourceName;
    std::map<std::string, int> firstLine; // single-valued directive or param key -> line
    std::istringstream in(text);
    std::string raw;
    int lineNo = 0;
    while (std::getline(in, raw))
    {
        ++lineNo;
        std::string where = sourceName + ":" + std::to_string(lineNo);
        auto fail = [&](const std::string& message) { throw InputError(where + ": " + message); };
        std::string line = StripComment(raw);
        if (line.empty())
        {
            continue;
        }
        size_t sp = line.find_first_of(kBlankChars);
        std::string directive = line.substr(0, sp);
        std::string arg = sp == std::string::npos ? "" : TrimSpace(line.substr(sp));
        auto once = [&](const std::string& key) {
            auto [it, inserted] = firstLine.emplace(key, lineNo);
            if (!inserted)
            {
                fail(key + " given twice (first at line " + std::to_string(it->second) + ")");
            }
        };
        static const char* const kDirectives =
            "scenario, seed, run, set, param, topology, pcap, out";
        bool known = false;
        for (const char* d : {"scenario", "seed", "run", "set", "param", "topology", "pcap", "out"})
        {
            known = known || directive == d;
        }
        if (!known)
        {
            fail("unknown directive '" + directive + "' (expected one of: " + kDirectives + ")");
        }
        if (arg.empty())
        {
            fail("'" + directive + "' needs a value");
        }
        try
        {
            if (directive == "scenario")
            {
                if (arg.find_first_of(kBlankChars) != std::string::npos)
                {
                    fail("scenario name must be one word, got '" + arg + "'");
                }
                once("scenario");
                f.scenario = arg;
            }
            else if (directive == "seed" || directive == "run")
            {
                // RngSeedManager seeds are 32-bit and must not be zero; run numbers are 64-bit.
                uint64_t v = 0;
                bool isSeed = directive == "seed";
                uint64_t max = isSeed ? 4294967295u : UINT64_MAX;
                if (!ParseDecimalUint(arg, max, &v) || (isSeed && v == 0))
                {
                    fail(directive + " must be a whole number " +
                         (isSeed ? "in 1..4294967295" : ">= 0") + ", got '" + arg + "'");
                }
                once(directive);
                (isSeed ? f.seed : f.run) = v;
            }
            else if (directive == "set")
            {
                auto [name, value] = SplitAssignment(arg, "set");
                f.settings.push_back(AttributeSetting{name, value, where});
            }
            else if (directive == "param" || directive == "topology")
            {
                std::pair<std::string, std::string> kv =
                    directive == "param" ? SplitAssignment(arg, "param")
                                         : std::pair<std::string, std::string>{"topology", arg};
                once("param " + kv.first);
                if (kv.first == "topology")
                {
                    kv.second = ResolveTopologySpec(kv.second, baseDir);
                }
                f.params[kv.first] = kv.second;
                f.paramWhere[kv.first] = where;
            }
            else if (directive == "pcap")
            {
                once("pcap");
                f.pcapDir = arg;
            }
            else
            {
                once("out");
                f.outDir = arg;
            }
        }
        catch (const std::invalid_argument& e)
        {
            std::string what = e.what();
            if (what.rfind(where + ":", 0) == 0)
            {
                throw;
            }
            fail(what);
        }
    }
    return f;
}

ScenarioFile
ParseScenarioFile(const std::string& path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
    {
        throw InputError(path + ": is a directory, not a scenario file");
    }
    std::ifstream in(path);
    if (!in)
    {
        throw InputError(path + ": cannot open scenario file");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string dir = std::filesystem::path(path).parent_path().string();
    return ParseScenarioText(ss.str(), path, dir.empty() ? "." : dir);
}

std::string
CheckAttributeSetting(const std::string& name, const std::string& value, std::string* declaredName)
{
    size_t pos = name.rfind("::");
    if (pos == std::string::npos)
    {
        return "'" + name + "' is not an attribute name (write ns3::Class::Attribute, e.g. "
                            "ns3::SimpleNetDevice::DataRate)";
    }
    std::string cls = name.substr(0, pos);
    std::string attr = name.substr(pos + 2);
    TypeId tid;
    bool found = TypeId::LookupByNameFailSafe(cls, &tid);
    if (!found && cls.rfind("ns3::", 0) != 0)
    {
        cls = "ns3::" + cls;
        found = TypeId::LookupByNameFailSafe(cls, &tid);
    }
    if (!found)
    {
        return "no ns-3 class '" + cls + "' for attribute '" + name +
               "' (write ns3::Class::Attribute, e.g. ns3::SimpleNetDevice::DataRate)";
    }
    TypeId::AttributeInformation info;
    if (attr.empty() || !tid.LookupAttributeByName(attr, &info))
    {
        return "class " + cls + " has no attribute '" + attr + "' (it has: " +
               AttributeList(tid) + ")";
    }
    if ((info.flags & TypeId::ATTR_CONSTRUCT) == 0)
    {
        return "attribute " + cls + "::" + attr + " cannot be set (it is not a construction-time "
                                                   "attribute)";
    }
    if (std::string expects = CheckAttributeValue(info.checker, value); !expects.empty())
    {
        return "bad value '" + value + "' for " + cls + "::" + attr + " (expects " + expects + ")";
    }
    std::string declared = DeclaringTypeId(tid, attr).GetName() + "::" + attr;
    // A string attribute's format is the class's own: its setter parses it, and some setters
    // abort on what they cannot read (RackElectricalModel::EfficiencyCurve). Build one object
    // with the value, in a child process, before the real run meets it.
    const std::string type = info.checker->GetValueTypeName();
    const bool isString = type == "ns3::StringValue" || type == "StringValue";
    if (isString && tid.HasConstructor() &&
        !SucceedsInChild([&tid, &declared, &value]() {
            if (!Config::SetDefaultFailSafe(declared, StringValue(value)))
            {
                return false;
            }
            ObjectFactory factory;
            factory.SetTypeId(tid);
            return factory.Create() != nullptr;
        }))
    {
        return "bad value '" + value + "' for " + cls + "::" + attr + " (the class refuses it; " +
               "the attribute: " + info.help + ")";
    }
    if (declaredName != nullptr)
    {
        *declaredName = declared;
    }
    return "";
}

std::string
ApplyAttributeSetting(const std::string& name, const std::string& value)
{
    if (name.rfind("::") == std::string::npos)
    {
        return ApplyGlobalValue(name, value);
    }
    std::string declared;
    if (std::string problem = CheckAttributeSetting(name, value, &declared); !problem.empty())
    {
        return problem;
    }
    if (!Config::SetDefaultFailSafe(declared, StringValue(value)))
    {
        return "could not set " + declared + " to '" + value + "'";
    }
    return "";
}

} // namespace ns3
