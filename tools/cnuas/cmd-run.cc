// `cnuas run`: runs a registered scenario, named on the command line or by a scenario file.
#include "command.h"

#include "helpers/formats/parse-util.h"
#include "helpers/scenario/scenario-file.h"
#include "helpers/scenario/scenario.h"

#include "ns3/rng-seed-manager.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cnuas
{

namespace
{

const char* const kUsage =
    "usage: cnuas run NAME|FILE.scn [options]\n"
    "       cnuas run --list [-v]\n"
    "       cnuas run NAME --help\n"
    "\n"
    "Runs a built-in scenario, or the one a scenario file names (see docs/cli.md).\n"
    "Options given here override the scenario file.\n"
    "\n"
    "options:\n"
    "  --list                 list the scenarios (-v: with their parameters)\n"
    "  --param KEY=VALUE      set a scenario parameter (repeatable)\n"
    "  --topology SPEC        same as --param topology=SPEC\n"
    "  --set ATTRIBUTE=VALUE  set an ns-3 attribute default, [ns3::]Class::Attribute=VALUE,\n"
    "                         or a GlobalValue such as RngRun=3 (repeatable)\n"
    "  --seed N               random seed (1..4294967295), default 1\n"
    "  --run N                random run number, default 1\n"
    "  --pcap DIR             write pcap traces into DIR\n"
    "  --out DIR              write summaries, CSV traces and plots into DIR\n"
    "                         (default ./out/NAME)\n"
    "  --no-progress          no progress bar on stderr\n"
    "  --no-plots             do not render PNG plots\n"
    "  -h, --help             this help, or a scenario's parameters with NAME\n"
    "\n"
    "Exit status: the scenario's (0 when its run checked out, 1 when it failed), 2 on a\n"
    "usage error, 3 on an input error (a scenario, topology or data file named with the line).\n";

struct Request
{
    std::string target;
    std::optional<std::string> pcap;
    std::optional<std::string> out;
    std::optional<uint64_t> seed;
    std::optional<uint64_t> run;
    std::vector<ns3::AttributeSetting> settings;
    std::vector<std::pair<std::string, std::string>> params; ///< in order: later wins
    bool progress = true;
    bool plots = true;
    bool list = false;
    bool verbose = false;
    bool help = false;
};

int
UsageError(const std::string& message)
{
    std::fprintf(stderr, "cnuas run: %s\n", message.c_str());
    return kExitUsage;
}

/// A file the user gave (the scenario file, or one a parameter names) is unreadable or invalid.
int
InputFailure(const std::string& message)
{
    std::fprintf(stderr, "cnuas run: %s\n", message.c_str());
    return kExitInput;
}

size_t
EditDistance(const std::string& a, const std::string& b)
{
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
    {
        row[j] = j;
    }
    for (size_t i = 1; i <= a.size(); ++i)
    {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
        {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

std::string
UnknownScenarioMessage(const std::string& name)
{
    std::string message = "unknown scenario '" + name + "'";
    std::string best;
    size_t bestDistance = std::max<size_t>(2, name.size() / 3) + 1;
    for (const ns3::ScenarioInfo& info : ns3::ScenarioRegistry::All())
    {
        size_t d = EditDistance(name, info.name);
        if (d < bestDistance)
        {
            best = info.name;
            bestDistance = d;
        }
    }
    if (!best.empty())
    {
        message += "; did you mean '" + best + "'?";
    }
    return message + " ('cnuas run --list' lists the scenarios)";
}

void
PrintParams(const ns3::ScenarioInfo& info, const char* indent)
{
    size_t width = 0;
    for (const ns3::ScenarioParam& p : info.params)
    {
        width = std::max(width, p.key.size() + 1 + p.defaultValue.size());
    }
    for (const ns3::ScenarioParam& p : info.params)
    {
        std::string kv = p.key + "=" + p.defaultValue;
        std::printf("%s%-*s  %s\n", indent, static_cast<int>(width), kv.c_str(), p.help.c_str());
    }
}

int
List(bool verbose)
{
    std::vector<ns3::ScenarioInfo> all = ns3::ScenarioRegistry::All();
    size_t width = 0;
    for (const ns3::ScenarioInfo& info : all)
    {
        width = std::max(width, info.name.size());
    }
    for (const ns3::ScenarioInfo& info : all)
    {
        std::printf("%-*s  %s\n", static_cast<int>(width), info.name.c_str(),
                    info.description.c_str());
        if (verbose)
        {
            if (info.params.empty())
            {
                std::printf("    (no parameters)\n");
            }
            PrintParams(info, "    ");
        }
    }
    if (all.empty())
    {
        std::printf("(no scenarios are registered)\n");
    }
    return 0;
}

void
PrintScenarioHelp(const ns3::ScenarioInfo& info)
{
    std::printf("usage: cnuas run %s [--param KEY=VALUE ...] [options]\n\n%s\n\n",
                info.name.c_str(), info.description.c_str());
    if (info.params.empty())
    {
        std::printf("parameters: none\n");
    }
    else
    {
        std::printf("parameters (KEY=DEFAULT):\n");
        PrintParams(info, "  ");
    }
    switch (info.pcap)
    {
    case ns3::ScenarioPcap::Wire:
        std::printf("\n--pcap DIR: writes the modelled wire as pcap traces into DIR.\n");
        break;
    case ns3::ScenarioPcap::NoWire:
        std::printf("\n--pcap DIR: this scenario models no wire; nothing is captured.\n");
        break;
    default:
        std::printf("\n--pcap DIR: not supported by this scenario (refused).\n");
        break;
    }
    std::printf("\n'cnuas run --help' lists the options every scenario takes.\n");
}

/// Parses the arguments; returns an exit status when it has nothing more to do.
std::optional<int>
ParseArgs(const std::vector<std::string>& args, Request* r)
{
    for (size_t i = 0; i < args.size(); ++i)
    {
        std::string a = args[i];
        std::optional<std::string> inlineValue;
        if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos)
        {
            inlineValue = a.substr(a.find('=') + 1);
            a = a.substr(0, a.find('='));
        }
        auto value = [&]() -> std::optional<std::string> {
            if (inlineValue)
            {
                return inlineValue;
            }
            // An option right after another option is a missing value, not the value.
            if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
            {
                return args[++i];
            }
            return std::nullopt;
        };
        bool flag = a == "--help" || a == "-h" || a == "--list" || a == "-v" ||
                    a == "--verbose" || a == "--no-progress" || a == "--no-plots";
        if (flag && inlineValue)
        {
            return UsageError("option " + a + " takes no value");
        }
        if (a == "--help" || a == "-h")
        {
            r->help = true;
        }
        else if (a == "--list")
        {
            r->list = true;
        }
        else if (a == "-v" || a == "--verbose")
        {
            r->verbose = true;
        }
        else if (a == "--no-progress")
        {
            r->progress = false;
        }
        else if (a == "--no-plots")
        {
            r->plots = false;
        }
        else if (a == "--pcap" || a == "--out" || a == "--seed" || a == "--run" ||
                 a == "--set" || a == "--param" || a == "--topology")
        {
            std::optional<std::string> v = value();
            if (!v || v->empty())
            {
                const char* what = a == "--pcap" || a == "--out" ? "a directory"
                                   : a == "--seed" || a == "--run" ? "a number"
                                   : a == "--topology"             ? "a topology spec"
                                                                   : "KEY=VALUE";
                return UsageError("option " + a + " needs " + what);
            }
            try
            {
                if (a == "--pcap")
                {
                    r->pcap = *v;
                }
                else if (a == "--out")
                {
                    r->out = *v;
                }
                else if (a == "--seed" || a == "--run")
                {
                    // RngSeedManager seeds are 32-bit and must not be zero.
                    bool isSeed = a == "--seed";
                    uint64_t n = 0;
                    if (!ns3::ParseDecimalUint(*v, isSeed ? 4294967295u : UINT64_MAX, &n) ||
                        (isSeed && n == 0))
                    {
                        return UsageError(a + " needs a whole number " +
                                          (isSeed ? "in 1..4294967295" : ">= 0") + ", got '" +
                                          *v + "'");
                    }
                    (isSeed ? r->seed : r->run) = n;
                }
                else if (a == "--set")
                {
                    auto [name, val] = ns3::SplitAssignment(*v, "--set");
                    r->settings.push_back(ns3::AttributeSetting{name, val, "--set"});
                }
                else if (a == "--param")
                {
                    r->params.push_back(ns3::SplitAssignment(*v, "--param"));
                }
                else
                {
                    r->params.emplace_back("topology", *v);
                }
            }
            catch (const std::invalid_argument& e)
            {
                return UsageError(e.what());
            }
        }
        else if (!a.empty() && a[0] == '-')
        {
            return UsageError("unknown option '" + a + "' ('cnuas run --help' lists them)");
        }
        else if (r->target.empty())
        {
            r->target = a;
        }
        else
        {
            return UsageError("unexpected argument '" + a + "' after '" + r->target + "'");
        }
    }
    return std::nullopt;
}

bool
EndsWith(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void
PrintResult(const ns3::ScenarioResult& result)
{
    size_t width = 0;
    for (const auto& [key, value] : result.summary)
    {
        width = std::max(width, key.size());
    }
    for (const auto& [key, value] : result.summary)
    {
        std::string label = key + ":";
        std::printf("%-*s %s\n", static_cast<int>(width + 1), label.c_str(), value.c_str());
    }
    for (const std::string& path : result.artifacts)
    {
        std::printf("wrote: %s\n", path.c_str());
    }
    std::fflush(stdout);
}

int
Run(const std::vector<std::string>& args)
{
    Request req;
    if (std::optional<int> done = ParseArgs(args, &req))
    {
        return *done;
    }
    if (req.list)
    {
        if (!req.target.empty())
        {
            return UsageError("--list takes no scenario name");
        }
        return List(req.verbose);
    }
    if (req.target.empty())
    {
        if (req.help)
        {
            std::fputs(kUsage, stdout);
            return 0;
        }
        std::fputs(kUsage, stderr);
        return UsageError("missing the scenario NAME or FILE.scn");
    }

    ns3::ScenarioFile file;
    std::string name = req.target;
    std::error_code ec;
    bool isFile = EndsWith(req.target, ".scn") ||
                  (ns3::ScenarioRegistry::Find(req.target) == nullptr &&
                   std::filesystem::is_regular_file(req.target, ec));
    if (isFile)
    {
        try
        {
            file = ns3::ParseScenarioFile(req.target);
        }
        catch (const std::invalid_argument& e)
        {
            return InputFailure(e.what());
        }
        if (file.scenario.empty())
        {
            return InputFailure(req.target + ": no 'scenario NAME' line says what to run");
        }
        name = file.scenario;
    }
    const ns3::ScenarioInfo* info = ns3::ScenarioRegistry::Find(name);
    if (info == nullptr)
    {
        return isFile ? InputFailure(req.target + ": " + UnknownScenarioMessage(name))
                      : UsageError(UnknownScenarioMessage(name));
    }
    if (req.help)
    {
        PrintScenarioHelp(*info);
        return 0;
    }

    ns3::ScenarioOptions o;
    o.name = name;
    o.params = file.params;
    for (const auto& [key, value] : req.params)
    {
        o.params[key] = value;
    }
    o.pcapDir = req.pcap.value_or(file.pcapDir.value_or(""));
    o.outDir = req.out.value_or(file.outDir.value_or("out/" + name));
    o.progress = req.progress;
    o.plots = req.plots;
    // Ctrl-C ends the simulation, not the process: the summary of what finished is printed and
    // every file is complete (docs/cli.md, exit status 130).
    o.stopOnInterrupt = true;
    // Where each parameter came from: a file line, unless the command line replaced it.
    std::map<std::string, std::string> fileWhere;
    for (const auto& [key, where] : file.paramWhere)
    {
        bool overridden = false;
        for (const auto& kv : req.params)
        {
            overridden = overridden || kv.first == key;
        }
        if (!overridden)
        {
            fileWhere[key] = where;
        }
    }
    try
    {
        // The file's keys first, so that a misspelt one is reported against its line.
        ns3::ScenarioOptions fromFile = o;
        fromFile.params.clear();
        for (const auto& [key, where] : fileWhere)
        {
            fromFile.params[key] = o.params.at(key);
            try
            {
                ns3::CheckScenarioParams(fromFile, *info);
            }
            catch (const std::invalid_argument& e)
            {
                return InputFailure(where + ": " + e.what());
            }
        }
        ns3::CheckScenarioParams(o, *info);
    }
    catch (const std::invalid_argument& e)
    {
        return UsageError(e.what());
    }
    // --pcap to a scenario that cannot capture its wire is refused before anything runs,
    // reported against where it was asked for.
    try
    {
        ns3::CheckScenarioPcapRequest(o, *info);
    }
    catch (const std::invalid_argument& e)
    {
        return req.pcap ? UsageError(e.what())
                        : InputFailure(req.target + ": pcap " + o.pcapDir + ": " + e.what());
    }

    // File settings first, so that the command line overrides them.
    std::vector<ns3::AttributeSetting> settings = file.settings;
    settings.insert(settings.end(), req.settings.begin(), req.settings.end());
    for (const ns3::AttributeSetting& s : settings)
    {
        // A default the scenario itself overrides on the objects it builds would be ignored
        // without a word: refused, naming the parameter that does the job.
        std::string problem;
        if (s.name.find("::") != std::string::npos) // an attribute, not a GlobalValue
        {
            std::string declared;
            problem = ns3::CheckAttributeSetting(s.name, s.value, &declared);
            if (problem.empty())
            {
                problem = ns3::ScenarioOwnAttributeProblem(*info, declared);
            }
        }
        if (problem.empty())
        {
            problem = ns3::ApplyAttributeSetting(s.name, s.value);
        }
        if (!problem.empty())
        {
            // "--set A=V: problem" from the command line, "file.scn:7: set A=V: problem" from a
            // scenario file.
            if (s.where == "--set")
            {
                return UsageError("--set " + s.name + "=" + s.value + ": " + problem);
            }
            return InputFailure(s.where + ": set " + s.name + "=" + s.value + ": " + problem);
        }
    }
    // After the settings: an explicit --seed/--run beats `--set RngSeed=...`.
    if (std::optional<uint64_t> seed = req.seed ? req.seed : file.seed)
    {
        ns3::RngSeedManager::SetSeed(static_cast<uint32_t>(*seed));
    }
    if (std::optional<uint64_t> run = req.run ? req.run : file.run)
    {
        ns3::RngSeedManager::SetRun(*run);
    }
    o.seed = ns3::RngSeedManager::GetSeed();
    o.run = ns3::RngSeedManager::GetRun();

    for (const std::string& dir : {o.outDir, o.pcapDir})
    {
        if (!dir.empty() && !std::filesystem::create_directories(dir, ec) && ec)
        {
            std::fprintf(stderr, "cnuas: error: cannot create directory '%s': %s\n", dir.c_str(),
                         ec.message().c_str());
            return kExitFailed;
        }
    }

    ns3::ScenarioResult result;
    // What went wrong decides the status: a parameter value is reported against where it was
    // given (the command line: usage; the scenario file: input, with its line), a bad file the
    // run read is an input error, anything else the run's failure.
    auto fail = [](int status, const std::string& message) {
        std::fflush(stdout);
        std::fprintf(stderr, "cnuas: error: %s\n", message.c_str());
        return status;
    };
    try
    {
        result = info->run(o);
    }
    catch (const ns3::ScenarioParamError& e)
    {
        auto where = fileWhere.find(e.Key());
        if (where != fileWhere.end())
        {
            return fail(kExitInput, where->second + ": " + e.what());
        }
        return fail(kExitUsage, e.what());
    }
    catch (const ns3::InputError& e)
    {
        return fail(kExitInput, e.what());
    }
    catch (const std::invalid_argument& e)
    {
        return fail(kExitUsage, e.what());
    }
    catch (const std::exception& e)
    {
        return fail(kExitFailed, e.what());
    }
    PrintResult(result);
    try
    {
        // The framework's side of the promise: a scenario that takes --pcap wrote a trace.
        ns3::CheckScenarioPcapsWritten(o, *info, result);
    }
    catch (const std::exception& e)
    {
        return fail(kExitFailed, e.what());
    }
    return result.exitCode;
}

} // namespace

CNUAS_COMMAND("run", "run a built-in scenario or a .scn scenario file (--list lists them)", Run);

} // namespace cnuas
