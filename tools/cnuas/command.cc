#include "command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace cnuas
{

namespace
{
// Commands register from static initializers in other translation units, in unspecified order;
// a function-local static is constructed on first use, so it always exists in time.
std::vector<Command>&
Registry()
{
    static std::vector<Command> commands;
    return commands;
}
} // namespace

bool
RegisterCommand(const Command& command)
{
    if (command.name.empty() || command.run == nullptr)
    {
        std::fprintf(stderr, "cnuas: ignoring a subcommand registered without a name or body\n");
        return false;
    }
    for (const Command& c : Registry())
    {
        if (c.name == command.name)
        {
            std::fprintf(stderr, "cnuas: subcommand '%s' registered twice; keeping the first\n",
                         command.name.c_str());
            return false;
        }
    }
    Registry().push_back(command);
    return true;
}

std::vector<Command>
Commands()
{
    std::vector<Command> sorted = Registry();
    std::sort(sorted.begin(), sorted.end(), [](const Command& a, const Command& b) {
        return a.name < b.name;
    });
    return sorted;
}

std::string
SelfExecutable()
{
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    return n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
}

} // namespace cnuas
