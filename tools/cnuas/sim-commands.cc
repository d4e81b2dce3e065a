// The entry point of the simulator's module (sim-module.h): the subcommands its other files
// register (cmd-up.cc, cmd-run.cc, cmd-fabric.cc, cmd-rack.cc, cmd-pcap.cc) with this module's
// own copy of the registry (command.cc).
#include "sim-module.h"

#include "models/common/cnuas-init.h"

extern "C" __attribute__((visibility("default"))) const cnuas::SimModule*
cnuas_sim_module()
{
    // Before any subcommand creates a Time: fixes the picosecond resolution.
    static const bool initialised = (ns3::CnuasInit(), true);
    (void)initialised;
    static const cnuas::SimModule module{cnuas::kSimModuleAbi, &cnuas::Commands};
    return &module;
}
