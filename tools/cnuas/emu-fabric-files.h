// The names and files of an emulated fabric that its daemon (`cnuas up`, in the simulator's
// module, sim-commands.cc) and the commands that reach it from outside (`exec`, `rsh`, `down`,
// `capture`, `sm`, `status`, in the `cnuas` program itself) agree on. No ns-3 here: the
// program that has these does not load the simulator (main.cc).
#ifndef CNUAS_TOOLS_EMU_FABRIC_FILES_H
#define CNUAS_TOOLS_EMU_FABRIC_FILES_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cnuas
{

/// A hybrid fabric's hosts have ib0 at 10.1.0.<i+1>/16 beside eth0's 10.0.0.<i+1>/16.
constexpr uint32_t kHybridIbOffset = 0x00010000u;

/// The interfaces a host's kernel sees: its RoCE NIC (and the network device of its GIDs), and
/// IPoIB on its InfiniBand HCA.
constexpr const char* kRoceInterface = "eth0";
constexpr const char* kIpoibInterface = "ib0";

/// The fabric a command means when none is named and none or several are up.
extern const char* const kDefaultFabric;

/// A number of seconds from the command line: the whole text a finite decimal number, not
/// negative (nor 0 unless `zeroAllowed`), at most a day (longer is a typing error, and a wall
/// deadline of it would overflow). Nothing for anything else.
std::optional<double> ParseSeconds(const std::string& text, bool zeroAllowed);

std::string FabricStatePath(const std::string& dir, const std::string& name);

std::string FabricSocketPath(const std::string& dir, const std::string& name);

/// The Unix socket through which the processes of `host` reach its emulated HCA.
std::string HcaSocketPath(const std::string& dir, const std::string& name, const std::string& host);

std::string FabricLogPath(const std::string& dir, const std::string& name);

/// The /etc/hosts and /etc/resolv.conf that `cnuas exec` shows in the hosts of fabric `name`
/// (written by exec, removed by down).
std::string FabricEtcHostsPath(const std::string& dir, const std::string& name);

std::string FabricResolvConfPath(const std::string& dir, const std::string& name);

/// The link to cnuas named FABRIC.cnuas-rsh that exec names to MPICH's hydra as its remote
/// shell (main() takes a cnuas called so for `cnuas rsh`; removed by down).
std::string FabricRshLinkPath(const std::string& dir, const std::string& name);

/// Where `cnuas exec` writes each host's own variables, by its network namespace's inode:
/// PREFIX<inode>.env (host/abi/cnuas-host-env.h; removed by down).
std::string FabricHostMapPrefix(const std::string& dir, const std::string& name);

/// Makes `path` hold `text` (WriteFileAtomically), writing only when it differs.
bool WriteFileIfChanged(const std::string& path, const std::string& text);

/// The namespace of a host: its own name for the default fabric (`cnuas exec h0`, as the
/// topology names it), prefixed by the fabric's name for any other, so that fabrics coexist.
std::string NetnsName(const std::string& fabric, const std::string& host);

bool ValidFabricName(const std::string& n);

std::string Ipv4Text(uint32_t a);

std::string MacText(uint64_t m);

/// The fabric files in the state directory, by fabric name.
std::vector<std::string> FabricNames(const std::string& dir);

/// The fabric a command means: --name, else $CNUAS_FABRIC, else the only one up, else the
/// default name.
std::string ChooseFabric(const std::string& explicitName, const std::string& dir);

/// Says that fabric `fabric` is not up, and what is: with several fabrics up and none named,
/// the command could not guess which (the default name is not among them).
void SayNotUp(const char* verb, const std::string& fabric, const std::string& dir);

/// Removes what the daemon made. Called by the daemon on its way out and by `cnuas down` for a
/// daemon that cannot (killed). Returns lines describing what was removed.
std::vector<std::string> CleanUpFabric(const nlohmann::json& state, const std::string& dir);

} // namespace cnuas

#endif
