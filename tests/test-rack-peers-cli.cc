// `cnuas rack pause|resume` end to end: the real `cnuas rack up` with a BMC that keeps the bus
// busy, paused so that mbpoll on the pty succeeds every time, then resumed. Every wait has a
// deadline, the child has a --duration safety net and is killed if the test fails early.
#include "rack-cli-process.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace cnuas_test;
using nlohmann::json;

namespace
{

bool
Until(const std::function<bool()>& done, int seconds)
{
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < end)
    {
        if (done())
        {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

} // namespace

TEST(RackPeersCli, PauseGivesThePtyMasterTheBusAndResumeRestartsTheBmc)
{
    if (access("/usr/bin/mbpoll", X_OK) != 0)
    {
        GTEST_SKIP() << "mbpoll is not installed";
    }
    RackProcess p;
    p.dir = TempDir();
    // A new BMC cycle every 200 ms: the bus is never quiet for long while the BMC runs.
    ASSERT_TRUE(p.Start({"--set", "ns3::RackBmc::MonitorInterval=200ms", "--set",
                         "ns3::RackBmc::FirstReloadPerRegister=false"}));
    ASSERT_TRUE(Until([&]() { return p.State().is_object(); }, 30)) << ReadFile(p.dir + "/up.log");
    const json state = p.State();
    EXPECT_EQ(state["bmc_paused"], false);
    const std::string url = state["redfish"];
    auto reads = [&]() {
        int cs = -1;
        const json r = json::parse(RunCommand("timeout 10 curl -s -f '" + url + "'", &cs),
                                   nullptr, false);
        const json::json_pointer at("/Oem/Cnuas/Reads");
        return cs == 0 && r.is_object() && r.contains(at) ? r.at(at).get<long>() : -1L;
    };
    ASSERT_TRUE(Until([&]() { return reads() > 50; }, 60)) << "the BMC is not polling";

    int st = -1;
    const std::string stateDir = " --state-dir " + p.dir;
    const std::string paused =
        RunCommand("timeout 30 " + kCnuas + " rack pause --timeout 20" + stateDir + " 2>&1",
                   &st);
    ASSERT_EQ(st, 0) << paused;
    EXPECT_EQ(p.State()["bmc_paused"], true);

    constexpr int kRuns = 5;
    for (int i = 0; i < kRuns; ++i)
    {
        // At once, one try each, no retry: with the BMC held nothing else talks on the bus (the
        // BMC is always inside a 4 s cycle when paused, so a pause that let it finish the cycle
        // would collide here).
        const std::string out = RunCommand(
            "timeout 20 mbpoll -m rtu -b 19200 -P even -a " + std::to_string(0xC8 + i % 6) +
                " -t 4 -0 -r 82 -c 1 -1 '" + p.dir + "/tty' 2>&1",
            &st);
        SCOPED_TRACE("mbpoll run " + std::to_string(i) + ":\n" + out);
        EXPECT_EQ(st, 0);
        std::smatch m;
        ASSERT_TRUE(std::regex_search(out, m, std::regex("\\[82\\]:\\s+(-?[0-9]+)")));
        // 12 kW over 12 PSUs; PSU_Output_Power is raw / 2^3 W (rackmon2 ORV3_PSU map).
        EXPECT_NEAR(static_cast<uint16_t>(std::stol(m[1])) / 8.0, 1000.0, 1.0 / 8);
    }
    // No new reads while paused: two snapshots 2 s apart (the server publishes new reads within
    // its PublishInterval, 1 s) carry the same count.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const long atPause = reads();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    EXPECT_EQ(reads(), atPause) << "the BMC read while paused";

    const std::string resumed =
        RunCommand("timeout 30 " + kCnuas + " rack resume --timeout 20" + stateDir + " 2>&1",
                   &st);
    ASSERT_EQ(st, 0) << resumed;
    EXPECT_EQ(p.State()["bmc_paused"], false);
    EXPECT_TRUE(Until([&]() { return reads() > atPause + 20; }, 30))
        << "the BMC did not poll again";

    kill(p.pid, SIGTERM);
    ASSERT_TRUE(Until([&]() { return waitpid(p.pid, &p.exitStatus, WNOHANG) == p.pid; }, 20));
    p.pid = -1;
    EXPECT_TRUE(WIFEXITED(p.exitStatus) && WEXITSTATUS(p.exitStatus) == 0)
        << ReadFile(p.dir + "/up.log");
}

TEST(RackPeersCli, PauseWithoutARackOrWithoutABmcIsAnError)
{
    char t[] = "/tmp/cnuas-rack-peers-XXXXXX";
    const std::string dir = mkdtemp(t);
    int st = -1;
    const std::string none =
        RunCommand("timeout 10 " + kCnuas + " rack pause --state-dir " + dir + " 2>&1", &st);
    EXPECT_NE(none.find("no rack is up"), std::string::npos) << none;
    EXPECT_EQ(st, 1);
    const std::string bad =
        RunCommand("timeout 10 " + kCnuas + " rack resume --bogus 2>&1", &st);
    EXPECT_EQ(st, 2) << bad;
    RunCommand("rm -rf '" + dir + "'");
}

namespace
{

/// The commands `cnuas rack up` prints under "try:" (the mbpoll line, then the pymodbus line).
std::vector<std::string>
TryLines(const std::string& log)
{
    std::vector<std::string> out;
    std::istringstream in(log);
    std::string line;
    bool inTry = false;
    while (std::getline(in, line))
    {
        if (line.rfind("  try:", 0) == 0)
        {
            inTry = true;
            out.push_back(line.substr(6));
        }
        else if (inTry && line.rfind("             ", 0) == 0)
        {
            out.push_back(line);
        }
        else
        {
            inTry = false;
        }
    }
    for (std::string& l : out)
    {
        l.erase(0, l.find_first_not_of(' '));
    }
    return out;
}

} // namespace

TEST(RackPeersCli, ThePrintedTryLinesWorkWhileTheBmcPolls)
{
    // Issue 15: a person following the lines `cnuas rack up` prints must succeed, with the BMC
    // polling (not paused) and with the default rack's parity, for mbpoll and for pymodbus.
    if (access("/usr/bin/mbpoll", X_OK) != 0)
    {
        GTEST_SKIP() << "mbpoll is not installed";
    }
    const bool havePymodbus =
        std::system("python3 -c 'import pymodbus.client, serial' >/dev/null 2>&1") == 0;
    RackProcess p;
    p.dir = TempDir();
    ASSERT_TRUE(p.Start({"--set", "ns3::RackBmc::MonitorInterval=200ms", "--set",
                         "ns3::RackBmc::FirstReloadPerRegister=false"}));
    ASSERT_TRUE(Until([&]() { return p.State().is_object(); }, 30)) << ReadFile(p.dir + "/up.log");
    const std::string url = p.State()["redfish"];
    auto reads = [&]() {
        int cs = -1;
        const json r = json::parse(RunCommand("timeout 10 curl -s -f '" + url + "'", &cs),
                                   nullptr, false);
        const json::json_pointer at("/Oem/Cnuas/Reads");
        return cs == 0 && r.is_object() && r.contains(at) ? r.at(at).get<long>() : -1L;
    };
    ASSERT_TRUE(Until([&]() { return reads() > 50; }, 60)) << "the BMC is not polling";
    const std::vector<std::string> tries = TryLines(ReadFile(p.dir + "/up.log"));
    ASSERT_GE(tries.size(), 2u) << ReadFile(p.dir + "/up.log");
    ASSERT_EQ(tries[0].rfind("mbpoll ", 0), 0u) << tries[0];
    ASSERT_EQ(tries[1].rfind("python3 -c ", 0), 0u) << tries[1];

    int st = -1;
    for (int i = 0; i < 6; ++i)
    {
        const std::string out = RunCommand("timeout 20 " + tries[0] + " 2>&1", &st);
        SCOPED_TRACE("run " + std::to_string(i) + " of: " + tries[0] + "\n" + out);
        EXPECT_EQ(st, 0);
        EXPECT_TRUE(std::regex_search(out, std::regex("\\[8\\]:\\s+0x[0-9A-Fa-f]{4}")));
    }
    const long atEnd = reads();
    if (havePymodbus)
    {
        for (int i = 0; i < 3; ++i)
        {
            const std::string out = RunCommand("timeout 30 " + tries[1] + " 2>&1", &st);
            SCOPED_TRACE("run " + std::to_string(i) + " of: " + tries[1] + "\n" + out);
            EXPECT_EQ(st, 0);
            EXPECT_TRUE(std::regex_search(out, std::regex("^\\[(\\d+, ){7}\\d+\\]")));
        }
        // pymodbus with its defaults (parity N, strict) on the 8E1 rack: the pty carries no
        // parity, so the rack's bridge takes the segment's format (docs/rack.md §10).
        const std::string out = RunCommand(
            "timeout 60 python3 " CNUAS_SOURCE_DIR "/tests/peers/pymodbus-client.py '" + p.dir +
                "/tty' 19200 N 200 79 4 2 2>&1",
            &st);
        SCOPED_TRACE(out);
        EXPECT_EQ(st, 0);
        EXPECT_EQ(out.find("error"), std::string::npos);
        EXPECT_NE(out.find("open 1: "), std::string::npos);
    }
    EXPECT_TRUE(Until([&]() { return reads() > atEnd; }, 30)) << "the BMC stopped polling";

    kill(p.pid, SIGTERM);
    ASSERT_TRUE(Until([&]() { return waitpid(p.pid, &p.exitStatus, WNOHANG) == p.pid; }, 20));
    p.pid = -1;
    EXPECT_TRUE(WIFEXITED(p.exitStatus) && WEXITSTATUS(p.exitStatus) == 0)
        << ReadFile(p.dir + "/up.log");
}

TEST(RackPeersCli, DeadAndChatteringDevicesFromTheRackFileAndAtRunTime)
{
    // Issue 15: dead and chattering devices were only in the C++ API. A rack file kills 0xC9
    // from the start; `cnuas rack fault` kills and revives 0xCA while the rack runs, and makes
    // 0x40 chatter and go quiet again. mbpoll on the pty sees each device as the faults say.
    if (access("/usr/bin/mbpoll", X_OK) != 0)
    {
        GTEST_SKIP() << "mbpoll is not installed";
    }
    RackProcess p;
    p.dir = TempDir();
    const std::string rackFile = p.dir + "/dead.rack";
    std::ofstream(rackFile) << "psu_shelves = 1\nbbu_shelves = 1\nmonitor_interval = 1\n"
                               "at 0 dead 0xC9   # from the start\n";
    ASSERT_TRUE(p.Start({"--config", rackFile}));
    ASSERT_TRUE(Until([&]() { return p.State().is_object(); }, 30)) << ReadFile(p.dir + "/up.log");
    const std::string sd = " --state-dir " + p.dir;
    auto poll = [&](int address, int* st) {
        return RunCommand("timeout 20 mbpoll -m rtu -b 19200 -P even -a " +
                              std::to_string(address) + " -t 4 -0 -r 79 -c 1 -1 -o 1 '" +
                              p.dir + "/tty' 2>&1",
                          st);
    };
    auto fault = [&](const std::string& what, int* st) {
        return RunCommand("timeout 30 " + kCnuas + " rack fault " + what + sd + " 2>&1", st);
    };
    int st = -1;
    ASSERT_TRUE(Until([&]() { return p.State()["dead"] == json::array({0xC9}); }, 20))
        << p.State().dump();
    std::string out = poll(0xC9, &st);
    EXPECT_NE(st, 0) << "a dead device answered:\n" << out;
    out = poll(0xC8, &st);
    EXPECT_EQ(st, 0) << out;

    out = fault("dead 0xCA", &st);
    ASSERT_EQ(st, 0) << out;
    EXPECT_EQ(p.State()["dead"], json::array({0xC9, 0xCA}));
    out = poll(0xCA, &st);
    EXPECT_NE(st, 0) << "0xCA answered after 'fault dead':\n" << out;
    out = fault("revive 202", &st);
    ASSERT_EQ(st, 0) << out;
    out = poll(0xCA, &st);
    EXPECT_EQ(st, 0) << "0xCA did not answer after 'fault revive':\n" << out;
    EXPECT_EQ(p.State()["dead"], json::array({0xC9}));

    out = fault("chatter 0x40", &st);
    ASSERT_EQ(st, 0) << out;
    EXPECT_EQ(p.State()["chattering"], json::array({0x40}));
    out = fault("quiet 0x40", &st);
    ASSERT_EQ(st, 0) << out;
    EXPECT_EQ(p.State()["chattering"], json::array());

    out = fault("dead 0x99", &st);
    EXPECT_EQ(st, 1) << out;
    EXPECT_NE(out.find("no device at Modbus address 0x99"), std::string::npos) << out;
    out = fault("explode 0xC8", &st);
    EXPECT_EQ(st, 2) << out;

    kill(p.pid, SIGTERM);
    ASSERT_TRUE(Until([&]() { return waitpid(p.pid, &p.exitStatus, WNOHANG) == p.pid; }, 20));
    p.pid = -1;
    EXPECT_TRUE(WIFEXITED(p.exitStatus) && WEXITSTATUS(p.exitStatus) == 0)
        << ReadFile(p.dir + "/up.log");
    out = fault("dead 0xC8", &st); // no rack any more
    EXPECT_NE(out.find("no rack is up"), std::string::npos) << out;
    EXPECT_EQ(st, 1);
}
