#include "emu-fabric-files.h"

#include "emu-host.h"
#include "state-files.h"

#include "helpers/formats/parse-util.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace cnuas
{

const char* const kDefaultFabric = "cnuas";

std::optional<double>
ParseSeconds(const std::string& text, bool zeroAllowed)
{
    double s = 0;
    if (!ns3::ParseFiniteDouble(text, &s) || s < 0 || (s == 0 && !zeroAllowed) || s > 86400)
    {
        return std::nullopt;
    }
    return s;
}

// ---- names and files ---------------------------------------------------------------------------

std::string
FabricStatePath(const std::string& dir, const std::string& name)
{
    return dir + "/fabric-" + name + ".json";
}

std::string
FabricSocketPath(const std::string& dir, const std::string& name)
{
    return dir + "/fabric-" + name + ".sock";
}

std::string
HcaSocketPath(const std::string& dir, const std::string& name, const std::string& host)
{
    return dir + "/" + name + "." + host + ".hca";
}

std::string
FabricLogPath(const std::string& dir, const std::string& name)
{
    return dir + "/fabric-" + name + ".log";
}

std::string
FabricEtcHostsPath(const std::string& dir, const std::string& name)
{
    return dir + "/" + name + ".hosts";
}

std::string
FabricResolvConfPath(const std::string& dir, const std::string& name)
{
    return dir + "/" + name + ".resolv.conf";
}

std::string
FabricRshLinkPath(const std::string& dir, const std::string& name)
{
    return dir + "/" + name + ".cnuas-rsh";
}

std::string
FabricHostMapPrefix(const std::string& dir, const std::string& name)
{
    return dir + "/" + name + ".netns-";
}

bool
WriteFileIfChanged(const std::string& path, const std::string& text)
{
    return ReadTextFile(path) == text || WriteFileAtomically(path, text);
}

std::string
NetnsName(const std::string& fabric, const std::string& host)
{
    return fabric == kDefaultFabric ? host : fabric + "-" + host;
}

bool
ValidFabricName(const std::string& n)
{
    if (n.empty() || n.size() > 32)
    {
        return false;
    }
    return std::all_of(n.begin(), n.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
}

std::string
Ipv4Text(uint32_t a)
{
    char b[20];
    std::snprintf(b, sizeof(b), "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255,
                  a & 255);
    return b;
}

std::string
MacText(uint64_t m)
{
    char b[20];
    std::snprintf(b, sizeof(b), "%02x:%02x:%02x:%02x:%02x:%02x",
                  static_cast<unsigned>(m >> 40) & 255, static_cast<unsigned>(m >> 32) & 255,
                  static_cast<unsigned>(m >> 24) & 255, static_cast<unsigned>(m >> 16) & 255,
                  static_cast<unsigned>(m >> 8) & 255, static_cast<unsigned>(m) & 255);
    return b;
}

std::vector<std::string>
FabricNames(const std::string& dir)
{
    std::vector<std::string> names;
    if (DIR* d = opendir(dir.c_str()))
    {
        while (dirent* e = readdir(d))
        {
            const std::string n = e->d_name;
            if (n.size() > 12 && n.compare(0, 7, "fabric-") == 0 &&
                n.compare(n.size() - 5, 5, ".json") == 0)
            {
                names.push_back(n.substr(7, n.size() - 12));
            }
        }
        closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string
ChooseFabric(const std::string& explicitName, const std::string& dir)
{
    if (!explicitName.empty())
    {
        return explicitName;
    }
    if (const char* e = std::getenv("CNUAS_FABRIC"); e != nullptr && *e != '\0')
    {
        return e;
    }
    const auto names = FabricNames(dir);
    return names.size() == 1 ? names[0] : kDefaultFabric;
}

void
SayNotUp(const char* verb, const std::string& fabric, const std::string& dir)
{
    std::string up; // a state file whose daemon is gone is not a fabric that is up
    for (const auto& n : FabricNames(dir))
    {
        const auto state = ReadState(FabricStatePath(dir, n));
        if (state && ProcessAlive(state->value("pid", 0)))
        {
            up += (up.empty() ? "" : ", ") + n;
        }
    }
    if (up.empty())
    {
        std::fprintf(stderr, "cnuas %s: fabric '%s' is not up ('cnuas up' starts one)\n", verb,
                     fabric.c_str());
    }
    else
    {
        std::fprintf(stderr,
                     "cnuas %s: fabric '%s' is not up; up: %s (name one with --name or "
                     "CNUAS_FABRIC)\n",
                     verb, fabric.c_str(), up.c_str());
    }
}


std::vector<std::string>
CleanUpFabric(const nlohmann::json& state, const std::string& dir)
{
    std::vector<std::string> done;
    std::vector<std::string> names;
    for (const auto& ns : state.value("namespaces", nlohmann::json::array()))
    {
        if (NetnsExists(ns.get<std::string>()))
        {
            names.push_back(ns.get<std::string>());
        }
    }
    std::vector<std::string> why;
    const std::vector<int> ended = DeleteNetnses(names, 1.0, &why);
    for (size_t i = 0; i < names.size(); ++i)
    {
        done.push_back(ended[i] < 0 ? "could not remove namespace " + names[i] + ": " + why[i]
                                    : "removed namespace " + names[i] +
                                          (ended[i] > 0 ? " (ended " + std::to_string(ended[i]) +
                                                              " processes)"
                                                        : ""));
    }
    const std::string name = state.value("name", "");
    std::vector<std::string> files = {FabricSocketPath(dir, name), FabricStatePath(dir, name)};
    for (const auto& h : state.value("hosts", nlohmann::json::array()))
    {
        for (const auto& path : h.value("hca_sockets", nlohmann::json::array()))
        {
            if (path.is_string())
            {
                files.push_back(path.get<std::string>());
            }
        }
        for (const char* key : {"umad_socket", "cm_socket"}) // umad: issue 14
        {
            if (h.contains(key))
            {
                files.push_back(h.value(key, ""));
            }
        }
    }
    for (const std::string& f : files)
    {
        if (unlink(f.c_str()) == 0)
        {
            done.push_back("removed " + f);
        }
    }
    return done;
}

} // namespace cnuas
