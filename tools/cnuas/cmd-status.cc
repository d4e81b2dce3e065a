// `cnuas status`: what Cnuas emulations run on this machine, from their state files.
#include "cmd-status.h"

#include "command.h"
#include "emu-control.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

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

namespace
{

const char* const kUsage = "usage: cnuas status [--name FABRIC] [--json] [--state-dir DIR]\n"
                           "\n"
                           "Shows the Cnuas emulations running on this machine (for a rack: its\n"
                           "pid, the pty a Modbus master opens and the Redfish base URL), from\n"
                           "the state files in the state directory ($CNUAS_STATE_DIR, else\n"
                           "$XDG_RUNTIME_DIR/cnuas, else /run/cnuas for root, else\n"
                           "/tmp/cnuas-UID). A state file whose process is gone is reported as\n"
                           "stale. --json prints the states as a JSON array, each with\n"
                           "\"alive\". --name shows only that fabric (with --json, its\n"
                           "state as one JSON object). Exit status 0, 1 when no fabric has\n"
                           "that name, or 2 on a usage error.\n";

std::string
Uptime(long long started)
{
    const long long now = static_cast<long long>(std::time(nullptr));
    const long long s = std::max<long long>(0, now - started);
    char b[32];
    std::snprintf(b, sizeof(b), "%02lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
    return b;
}

int
RunStatus(const std::vector<std::string>& args)
{
    bool asJson = false;
    std::string dirArg;
    std::string onlyName;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        if (args[i] == "--json")
        {
            asJson = true;
        }
        else if (args[i] == "--state-dir" && i + 1 < args.size())
        {
            dirArg = args[++i];
        }
        else if (args[i] == "--name" && i + 1 < args.size())
        {
            onlyName = args[++i];
        }
        else if (args[i] == "--help" || args[i] == "-h")
        {
            std::fputs(kUsage, stdout);
            return 0;
        }
        else
        {
            std::fprintf(stderr, "cnuas status: unknown option '%s'\n%s", args[i].c_str(),
                         kUsage);
            return 2;
        }
    }
    const std::string dir = StateDirectory(dirArg);
    std::vector<std::string> files;
    if (DIR* d = opendir(dir.c_str()))
    {
        while (dirent* e = readdir(d))
        {
            const std::string n = e->d_name;
            if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0)
            {
                files.push_back(dir + "/" + n);
            }
        }
        closedir(d);
    }
    std::sort(files.begin(), files.end());
    nlohmann::json all = nlohmann::json::array();
    for (const auto& f : files)
    {
        auto s = ReadState(f);
        if (!s)
        {
            continue;
        }
        if (!onlyName.empty() &&
            (s->value("kind", "") != "fabric" || s->value("name", "") != onlyName))
        {
            continue; // nor is its daemon asked
        }
        (*s)["alive"] = ProcessAlive(s->value("pid", 0));
        (*s)["state_file"] = f;
        if (s->value("kind", "") == "fabric" && (*s)["alive"].get<bool>())
        {
            // A fabric's live figures (lag, counters) come from its daemon.
            std::string why;
            auto live = QueryFabric(s->value("socket", ""), "status", 5.0, &why);
            (*s)["live"] = live ? *live : nlohmann::json{{"error", why}};
        }
        all.push_back(*s);
    }
    if (!onlyName.empty() && all.empty())
    {
        std::fprintf(stderr,
                     "cnuas status: no fabric named '%s' in %s ('cnuas status' lists what runs)\n",
                     onlyName.c_str(), dir.c_str());
        return 1;
    }
    if (asJson)
    {
        std::printf("%s\n", (onlyName.empty() ? all : all[0]).dump(2).c_str());
        return 0;
    }
    if (all.empty())
    {
        std::printf("nothing is running (state directory %s)\n", dir.c_str());
        return 0;
    }
    for (const auto& s : all)
    {
        const std::string kind = s.value("kind", "?");
        const int pid = s.value("pid", 0);
        if (!s["alive"].get<bool>())
        {
            const std::string down = kind == "fabric" ? "cnuas down --name " + s.value("name", "")
                                                      : "cnuas " + kind + " down";
            std::printf("%s: not running (stale state of pid %d in %s; '%s' removes it)\n",
                        kind.c_str(), pid, s["state_file"].get<std::string>().c_str(),
                        down.c_str());
            continue;
        }
        std::printf("%s%s%s: up (pid %d, for %s)\n", kind.c_str(),
                    kind == "fabric" ? " " : "", kind == "fabric" ? s.value("name", "").c_str() : "",
                    pid, Uptime(s.value("started", 0LL)).c_str());
        if (kind == "fabric")
        {
            PrintFabricStatus(s, s.contains("live") ? &s["live"] : nullptr);
        }
        if (kind == "rack")
        {
            const std::string link = s.value("pty_link", "");
            std::printf("  pty:     %s%s%s, %d baud, parity %s\n",
                        s.value("pty", "").c_str(), link.empty() ? "" : " (link ",
                        link.empty() ? "" : (link + ")").c_str(), s.value("baud", 0),
                        s.value("parity", "").c_str());
            const std::string url = s.value("redfish", "");
            std::printf("  redfish: %s\n", url.empty() ? "none (no simulated BMC)" : url.c_str());
            std::printf("  devices: %d PSUs, %d BBUs, %d PMMs at %s\n", s.value("psus", 0),
                        s.value("bbus", 0), s.value("pmms", 0),
                        s.value("addresses", "").c_str());
        }
    }
    // Where these came from: another state directory ($CNUAS_STATE_DIR) has others.
    std::printf("(state directory %s)\n", dir.c_str());
    return 0;
}

} // namespace

CNUAS_COMMAND("status", "show the running emulations (fabrics: hosts, lag, counters; rack: pty, Redfish URL)", RunStatus);

} // namespace cnuas
