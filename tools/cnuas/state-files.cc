// The state files every Cnuas process that runs in the background (a fabric's daemon, a rack)
// leaves in the state directory, and the process checks `status`, `down` and `up` share.
#include "state-files.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace cnuas
{

std::string
StateDirectory(const std::string& explicitDir)
{
    if (!explicitDir.empty())
    {
        return explicitDir;
    }
    if (const char* d = std::getenv("CNUAS_STATE_DIR"); d != nullptr && *d != '\0')
    {
        return d;
    }
    if (const char* d = std::getenv("XDG_RUNTIME_DIR"); d != nullptr && *d != '\0')
    {
        return std::string(d) + "/cnuas";
    }
    // root (sudo clears XDG_RUNTIME_DIR) keeps its runtime state where system daemons keep
    // theirs (FHS /run): a tmpfs on Debian, so a large InfiniBand fabric's four files a host
    // are made in memory, and never cleaned behind a fabric that runs for weeks, as
    // systemd-tmpfiles cleans /tmp.
    struct stat st = {};
    if (getuid() == 0 && stat("/run", &st) == 0 && S_ISDIR(st.st_mode) && access("/run", W_OK) == 0)
    {
        return "/run/cnuas";
    }
    return "/tmp/cnuas-" + std::to_string(getuid());
}

bool
EnsureStateDirectory(const std::string& dir, std::string* why)
{
    if (mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST)
    {
        struct stat st = {};
        if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        {
            return true;
        }
        *why = dir + " exists and is not a directory";
        return false;
    }
    *why = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
}

std::string
ReadTextFile(const std::string& path)
{
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool
WriteFileAtomically(const std::string& path, const std::string& text, std::string* why)
{
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << text;
        if (!out)
        {
            if (why)
            {
                *why = "cannot write " + tmp;
            }
            std::remove(tmp.c_str());
            return false;
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
    {
        if (why)
        {
            *why = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
        }
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

bool
WriteState(const std::string& path, const nlohmann::json& state, std::string* why)
{
    return WriteFileAtomically(path, state.dump(2) + "\n", why);
}

std::optional<nlohmann::json>
ReadState(const std::string& path)
{
    // A missing or unreadable file reads as "", which does not parse.
    nlohmann::json j = nlohmann::json::parse(ReadTextFile(path), nullptr, false);
    if (j.is_discarded() || !j.is_object())
    {
        return std::nullopt;
    }
    return j;
}

void
RemoveStateIfOurs(const std::string& path, int pid)
{
    auto s = ReadState(path);
    if (s && s->value("pid", 0) == pid)
    {
        std::remove(path.c_str());
    }
}

bool
ProcessAlive(int pid)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
    {
        return false;
    }
    // A process that has exited but is not yet reaped by its parent (a zombie) still answers
    // kill(pid, 0); proc(5): the state letter follows the ")" that ends the command name.
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    std::getline(stat, text);
    const std::size_t close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size())
    {
        const char state = text[close + 2];
        return state != 'Z' && state != 'X';
    }
    return true;
}

bool
StopProcess(int pid, double timeoutSeconds)
{
    if (kill(pid, SIGTERM) != 0)
    {
        return !ProcessAlive(pid);
    }
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000));
    while (std::chrono::steady_clock::now() < end)
    {
        if (!ProcessAlive(pid))
        {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGKILL);
    return false;
}

} // namespace cnuas
