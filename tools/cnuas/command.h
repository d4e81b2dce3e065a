// Subcommands of the `cnuas` command register themselves here; main() dispatches on argv[1].
#ifndef CNUAS_TOOLS_COMMAND_H
#define CNUAS_TOOLS_COMMAND_H

#include <string>
#include <vector>

namespace cnuas
{

/**
 * Exit statuses, the same for every subcommand (docs/cli.md, "Exit status"): what kind of
 * mistake it was decides the status, not which subcommand found it.
 */
enum ExitStatus : int
{
    kExitOk = 0,        ///< done; for `run`, the scenario's own checks passed
    kExitFailed = 1,    ///< the run failed: its checks, a fabric that did not come up, I/O
    kExitUsage = 2,     ///< the command line: unknown subcommand, option, parameter, attribute,
                        ///< or a malformed or out-of-range value given on it
    kExitInput = 3,     ///< a file the user gave is unreadable or invalid (named, with the line)
    kExitInternal = 70, ///< a Cnuas bug: ns-3 aborted on something Cnuas should have refused
    kExitInterrupted = 130, ///< Ctrl-C (128 + SIGINT); the run printed its partial summary
};

/// A subcommand: `cnuas NAME ARGS...`. run() receives the arguments after NAME and returns the
/// process exit status (an ExitStatus, or a scenario's own exit code).
struct Command
{
    std::string name;
    std::string summary; ///< one line for `cnuas --help`
    int (*run)(const std::vector<std::string>& args);
};

/// Registers a subcommand (call from a static initializer, see CNUAS_COMMAND).
bool RegisterCommand(const Command& command);
/// The subcommands registered in this program, or in the simulator's module for the module's
/// own copy (sim-module.h), sorted by name.
std::vector<Command> Commands();

/// This program's own path ("" if the kernel will not say).
std::string SelfExecutable();

} // namespace cnuas

#define CNUAS_COMMAND_CONCAT2(a, b) a##b
#define CNUAS_COMMAND_CONCAT(a, b) CNUAS_COMMAND_CONCAT2(a, b)
/// Register a subcommand from a .cc file under tools/cnuas.
#define CNUAS_COMMAND(name, summary, fn)                                                           \
    static const bool CNUAS_COMMAND_CONCAT(cnuasCommandRegistered_, __LINE__) =                   \
        ::cnuas::RegisterCommand(::cnuas::Command{name, summary, fn})

#endif
