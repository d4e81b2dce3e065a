// `cnuas SUBCOMMAND ...`: the command-line front end of Cnuas. Subcommands live in their own
// files under tools/cnuas and register themselves (see command.h). The ones that reach a
// running emulation from outside are part of this program; the simulator's own are in a module
// loaded when one of them is asked for (sim-module.h), so that `cnuas exec` and `cnuas status`
// start without loading libcnuas and ns-3.
#include "command.h"
#include "sim-module.h"

#include "helpers/formats/parse-util.h"

#include "ns3/version-defines.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace
{

/// The simulator's module, loaded on first use: its subcommands, or why there are none.
struct LoadedSimModule
{
    std::vector<cnuas::Command> commands;
    std::string error;
};

const LoadedSimModule&
SimModule()
{
    static const LoadedSimModule loaded = []() {
        LoadedSimModule m;
        const std::string self = cnuas::SelfExecutable();
        const std::string bin = self.substr(0, self.rfind('/'));
        // The build tree's lib/cnuas, then the installation's (bin/../LIBDIR/cnuas).
        std::string path;
        std::string looked;
        for (const std::string& dir :
             {bin + "/../lib/cnuas", bin + "/../" CNUAS_INSTALL_LIBDIR "/cnuas"})
        {
            const std::string cand = dir + "/" + cnuas::kSimModuleFile;
            if (access(cand.c_str(), R_OK) == 0)
            {
                path = cand;
                break;
            }
            if (looked.find(cand) == std::string::npos) // LIBDIR may be lib: one place
            {
                looked += (looked.empty() ? "" : " nor ") + cand;
            }
        }
        if (path.empty())
        {
            m.error = "there is no " + looked;
            return m;
        }
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr)
        {
            m.error = dlerror();
            return m;
        }
        using Entry = const cnuas::SimModule* (*)();
        const auto entry = reinterpret_cast<Entry>(dlsym(handle, cnuas::kSimModuleEntry));
        const cnuas::SimModule* module = entry != nullptr ? entry() : nullptr;
        if (module == nullptr || module->abi != cnuas::kSimModuleAbi)
        {
            m.error = path + " is not the module of this build of cnuas";
            return m;
        }
        m.commands = module->commands();
        return m;
    }();
    return loaded;
}

/// Every subcommand, this program's and the module's, sorted by name; says on stderr when the
/// module's are missing.
std::vector<cnuas::Command>
AllCommands()
{
    std::vector<cnuas::Command> all = cnuas::Commands();
    const LoadedSimModule& sim = SimModule();
    if (!sim.error.empty())
    {
        std::fprintf(stderr, "cnuas: the simulator's subcommands are missing: %s\n",
                     sim.error.c_str());
    }
    all.insert(all.end(), sim.commands.begin(), sim.commands.end());
    std::sort(all.begin(), all.end(), [](const cnuas::Command& a, const cnuas::Command& b) {
        return a.name < b.name;
    });
    return all;
}

void
PrintHelp(std::FILE* out)
{
    std::fprintf(out,
                 "usage: cnuas SUBCOMMAND [ARGS...]\n"
                 "       cnuas help SUBCOMMAND | cnuas --help | cnuas --version\n"
                 "\n"
                 "Cnuas: packet-accurate emulation of InfiniBand/RoCE cluster fabrics on ns-3.\n"
                 "\n"
                 "subcommands:\n");
    const std::vector<cnuas::Command> commands = AllCommands();
    size_t width = 0;
    for (const cnuas::Command& c : commands)
    {
        width = std::max(width, c.name.size());
    }
    for (const cnuas::Command& c : commands)
    {
        std::fprintf(out, "  %-*s  %s\n", static_cast<int>(width), c.name.c_str(),
                     c.summary.c_str());
    }
    std::fprintf(out, "\n'cnuas SUBCOMMAND --help' describes a subcommand.\n");
}

/**
 * Reached when ns-3 aborts (NS_FATAL_ERROR and NS_ABORT_MSG call std::terminate after printing
 * their message) or an exception escapes where none may (an ns-3 event, a noexcept function).
 * Either is a Cnuas bug, input it should have refused, so say so, with the exception if there
 * is one, instead of the C++ runtime's "terminate called without an active exception" and a
 * core dump.
 */
[[noreturn]] void
OnTerminate()
{
    std::string what = "ns-3 stopped the process (its message is above)";
    if (std::exception_ptr current = std::current_exception())
    {
        try
        {
            std::rethrow_exception(current);
        }
        catch (const std::exception& e)
        {
            what = std::string("uncaught exception: ") + e.what();
        }
        catch (...)
        {
            what = "uncaught exception of an unknown type";
        }
    }
    std::fflush(stdout);
    std::fprintf(stderr,
                 "cnuas: internal error: %s; this input should have been refused with a "
                 "message, please report it\n",
                 what.c_str());
    std::fflush(stderr);
    std::_Exit(cnuas::kExitInternal);
}

const cnuas::Command*
FindCommand(const std::vector<cnuas::Command>& commands, const std::string& name)
{
    for (const cnuas::Command& c : commands)
    {
        if (c.name == name)
        {
            return &c;
        }
    }
    return nullptr;
}

int
Dispatch(const std::string& name, const std::vector<std::string>& args)
{
    // This program's own first: they do not need the module.
    std::vector<cnuas::Command> commands = cnuas::Commands();
    const cnuas::Command* command = FindCommand(commands, name);
    if (command == nullptr)
    {
        const LoadedSimModule& sim = SimModule();
        command = FindCommand(sim.commands, name);
        if (command == nullptr && !sim.error.empty())
        {
            std::fprintf(stderr,
                         "cnuas: cannot run '%s': the simulator's subcommands are missing: %s\n",
                         name.c_str(), sim.error.c_str());
            return cnuas::kExitFailed;
        }
    }
    if (command == nullptr)
    {
        std::fprintf(stderr,
                     "cnuas: unknown subcommand '%s'; 'cnuas --help' lists the subcommands\n",
                     name.c_str());
        return cnuas::kExitUsage;
    }
    return command->run(args);
}

} // namespace

int
main(int argc, char** argv)
{
    std::set_terminate(&OnTerminate);
    std::vector<std::string> args(argv + 1, argv + argc);
    // Called through a link whose name ends in "cnuas-rsh" (FABRIC.cnuas-rsh, which `cnuas
    // exec` makes for launchers that take one program as their remote shell, as MPICH's hydra
    // does): `cnuas rsh`.
    const std::string self = argv[0];
    if (self.size() >= 9 && self.compare(self.size() - 9, 9, "cnuas-rsh") == 0)
    {
        args.insert(args.begin(), "rsh");
    }
    try
    {
        if (args.empty())
        {
            PrintHelp(stderr);
            return 2;
        }
        const std::string& first = args[0];
        if (first == "--help" || first == "-h" || (first == "help" && args.size() == 1))
        {
            PrintHelp(stdout);
            return 0;
        }
        if (first == "help")
        {
            return Dispatch(args[1], {"--help"});
        }
        if (first == "--version")
        {
            std::printf("cnuas %s (ns-3 %d.%d)\n", CNUAS_VERSION, NS3_VERSION_MAJOR,
                        NS3_VERSION_MINOR);
            return 0;
        }
        if (!first.empty() && first[0] == '-')
        {
            std::fprintf(stderr, "cnuas: unknown option '%s'; 'cnuas --help' shows the usage\n",
                         first.c_str());
            return 2;
        }
        return Dispatch(first, std::vector<std::string>(args.begin() + 1, args.end()));
    }
    // What a subcommand did not catch itself, by the same rule as everywhere (command.h).
    catch (const ns3::InputError& e)
    {
        std::fprintf(stderr, "cnuas: error: %s\n", e.what());
        return cnuas::kExitInput;
    }
    catch (const std::invalid_argument& e)
    {
        std::fprintf(stderr, "cnuas: error: %s\n", e.what());
        return cnuas::kExitUsage;
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "cnuas: error: %s\n", e.what());
        return cnuas::kExitFailed;
    }
}
