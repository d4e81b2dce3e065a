// The simulator's subcommands (`up`, `run`, `fabric`, `rack`, `pcap`) live in a module that the
// `cnuas` program loads only when one of them is asked for (main.cc): they need libcnuas and
// ns-3, while `exec`, `rsh`, `down`, `capture`, `sm` and `status`, which scripts and MPI
// launchers run hundreds of times, need neither. Loading libcnuas costs 0.03 s in a Release
// build and about 0.3 s of CPU in the sanitizer build (its 128 MB of UBSan check records and
// their ASan redzones are relocated and registered at every start): a fifth of the sanitizer
// test pass went there, in the tests' `cnuas exec` and `cnuas status` calls
// (docs/performance.md, the test suite, session 40).
#ifndef CNUAS_TOOLS_SIM_MODULE_H
#define CNUAS_TOOLS_SIM_MODULE_H

#include "command.h"

#include <vector>

namespace cnuas
{

/// What the module's entry point returns.
struct SimModule
{
    /// kSimModuleAbi of the module's build: a module of another build is refused, not called.
    int abi;
    /// The module's subcommands, sorted by name.
    std::vector<Command> (*commands)();
};

/// Changes whenever SimModule or Command changes.
constexpr int kSimModuleAbi = 1;

/// The module's entry point: `extern "C" const SimModule* cnuas_sim_module()`, which also
/// prepares ns-3 (CnuasInit) before any of the subcommands runs.
constexpr const char* kSimModuleEntry = "cnuas_sim_module";

/// The module's file name; main.cc looks for it in ../lib/cnuas beside the program's directory
/// (the build tree) and in the installation's library directory.
constexpr const char* kSimModuleFile = "cnuas-sim-commands.so";

} // namespace cnuas

#endif
