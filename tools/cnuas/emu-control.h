// Talking to a running emulation daemon (`cnuas up`): its control socket, and how `cnuas
// status` shows a fabric.
#ifndef CNUAS_TOOLS_EMU_CONTROL_H
#define CNUAS_TOOLS_EMU_CONTROL_H

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace cnuas
{

/// The daemon's answer to one request line ("status", ...), or nothing (with the reason in
/// *why) if it cannot be reached or does not answer within `timeoutSeconds`.
std::optional<nlohmann::json> QueryFabric(const std::string& socketPath,
                                          const std::string& request,
                                          double timeoutSeconds,
                                          std::string* why);
/// Prints a running fabric for `cnuas status`: its hosts, lag and counters (`live` is the
/// daemon's status answer, or null when it did not answer).
void PrintFabricStatus(const nlohmann::json& state, const nlohmann::json* live);

} // namespace cnuas

#endif
