// The state directory of running Cnuas emulations (`cnuas rack up` writes rack.json there;
// `cnuas status` reads every *.json in it).
#ifndef CNUAS_TOOLS_STATE_FILES_H
#define CNUAS_TOOLS_STATE_FILES_H

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace cnuas
{

/**
 * The state directory: `explicitDir` if not empty, else $CNUAS_STATE_DIR, else
 * $XDG_RUNTIME_DIR/cnuas (the per-user runtime directory of the XDG base directory spec), else
 * /tmp/cnuas-UID.
 */
std::string StateDirectory(const std::string& explicitDir = "");
/// Creates the directory (mode 0700) if needed; false with the reason otherwise.
bool EnsureStateDirectory(const std::string& dir, std::string* why);
/// The whole of text file `path`; "" if it cannot be read.
std::string ReadTextFile(const std::string& path);
/// Writes `text` to `path` atomically (a temporary file beside it renamed over it: a reader
/// never sees half); false, with the reason when `why` is given, otherwise.
bool WriteFileAtomically(const std::string& path, const std::string& text,
                         std::string* why = nullptr);
/// Writes `state` to `path` atomically (WriteFileAtomically).
bool WriteState(const std::string& path, const nlohmann::json& state, std::string* why);
/// The state in `path`, or nothing if it is missing or not a JSON object.
std::optional<nlohmann::json> ReadState(const std::string& path);
/// Removes `path` if it records process `pid` (a newer instance may have replaced it).
void RemoveStateIfOurs(const std::string& path, int pid);
/// Whether a process with this id exists (kill(pid, 0)).
bool ProcessAlive(int pid);
/// SIGTERM, then waits up to `timeoutSeconds` for the process to end; SIGKILL and false if it
/// did not.
bool StopProcess(int pid, double timeoutSeconds);

} // namespace cnuas

#endif
