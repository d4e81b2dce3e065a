// Subcommands of the `cnuas` command register themselves here; main() dispatches on argv[1].
#ifndef CNUAS_TOOLS_COMMAND_H
#define CNUAS_TOOLS_COMMAND_H

#include <string>
#include <vector>

namespace cnuas
{

/// A subcommand: `cnuas NAME ARGS...`. run() receives the arguments after NAME and returns the
/// process exit status (0 success, 1 failure found, 2 usage error).
struct Command
{
    std::string name;
    std::string summary; ///< one line for `cnuas --help`
    int (*run)(const std::vector<std::string>& args);
};

/// Registers a subcommand (call from a static initializer, see CNUAS_COMMAND).
bool RegisterCommand(const Command& command);
/// All registered subcommands, sorted by name.
std::vector<Command> Commands();

} // namespace cnuas

#define CNUAS_COMMAND_CONCAT2(a, b) a##b
#define CNUAS_COMMAND_CONCAT(a, b) CNUAS_COMMAND_CONCAT2(a, b)
/// Register a subcommand from a .cc file under tools/cnuas.
#define CNUAS_COMMAND(name, summary, fn)                                                           \
    static const bool CNUAS_COMMAND_CONCAT(cnuasCommandRegistered_, __LINE__) =                   \
        ::cnuas::RegisterCommand(::cnuas::Command{name, summary, fn})

#endif
