// `cnuas status`: what Cnuas emulations run on this machine, from their state files.
#include "command.h"
#include "emu-control.h"
#include "state-files.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

namespace cnuas
{

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
