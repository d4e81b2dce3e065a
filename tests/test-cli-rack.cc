// `cnuas rack up|down` and `cnuas status` end to end: the real command in real time, its
// Redfish service read with curl, its pty polled with mbpoll (a real Modbus master), stopped with
// SIGTERM, SIGINT or `cnuas rack down`. Every wait has a deadline and every child a --duration
// safety net, so a broken command fails the test instead of hanging it.
#include "rack-cli-process.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
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

/// One holding register read by mbpoll (PDU address `reg`), with retries: the BMC shares the bus
/// with the pty, and Modbus has no arbitration, so a request can collide now and then.
bool
MbpollRead(const std::string& port, int unit, int reg, long* value, std::string* log)
{
    for (int attempt = 0; attempt < 2; ++attempt)
    {
        int status = -1;
        const std::string out = RunCommand("timeout 20 mbpoll -m rtu -b 19200 -P even -a " +
                                               std::to_string(unit) + " -t 4 -0 -r " +
                                               std::to_string(reg) + " -c 1 -1 '" + port +
                                               "' 2>&1",
                                           &status);
        *log += out;
        std::smatch m;
        const std::regex re("\\[" + std::to_string(reg) + "\\]:\\s+(-?[0-9]+)");
        if (status == 0 && std::regex_search(out, m, re))
        {
            *value = std::stol(m[1]);
            return true;
        }
    }
    return false;
}

json
Curl(const std::string& url, int* status)
{
    return json::parse(RunCommand("timeout 10 curl -s -f '" + url + "'", status), nullptr, false);
}

} // namespace

TEST(RackCli, UpServesRedfishAndAModbusPtyAndStopsCleanlyOnSigterm)
{
    RackProcess p;
    p.dir = TempDir();
    ASSERT_FALSE(p.dir.empty());
    // A BMC cycle (the first one reads register by register, as rackmon2) every 30 s.
    ASSERT_TRUE(p.Start({"--set", "ns3::RackBmc::MonitorInterval=30s"}));
    const json state = p.WaitUp();
    ASSERT_TRUE(state.is_object()) << ReadFile(p.dir + "/up.log");
    EXPECT_EQ(state["pid"], p.pid);
    const std::string url = state["redfish"];
    const std::string pty = state["pty"];
    EXPECT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;
    EXPECT_EQ(pty.rfind("/dev/pts/", 0), 0u) << pty;

    // What it printed and what `cnuas status` shows: the pty and the Redfish URL.
    const std::string log = ReadFile(p.dir + "/up.log");
    EXPECT_NE(log.find(pty), std::string::npos) << log;
    EXPECT_NE(log.find(url), std::string::npos) << log;
    int st = -1;
    const std::string status = RunCommand("timeout 10 " + kCnuas + " status --state-dir " + p.dir,
                                          &st);
    EXPECT_EQ(st, 0);
    EXPECT_NE(status.find("rack: up (pid " + std::to_string(p.pid)), std::string::npos)
        << status;
    EXPECT_NE(status.find(pty), std::string::npos) << status;
    EXPECT_NE(status.find(url), std::string::npos) << status;

    // The BMC is a second master on the same bus and Modbus has no arbitration: read through
    // the pty right after a BMC monitoring cycle has ended (the server publishes at once), while
    // the bus is quiet until the next cycle (rackmon users pause rackmond for the same reason).
    int cs = -1;
    auto cyclesDone = [&]() {
        const json r = Curl(url, &cs);
        return cs == 0 && r.is_object() ? r["Oem"]["Cnuas"]["CompletedCycles"].get<int>() : -1;
    };
    auto waitCycleEnd = [&](int after) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (std::chrono::steady_clock::now() < until)
        {
            if (cyclesDone() > after)
            {
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    };
    long raw = -1;
    long volts = -1;
    std::string mbLog;
    double redfishWatts = -1;
    bool read = false;
    // Up to three quiet windows: on a loaded machine a window can be missed (the real-time
    // scheduler runs late and catches up), so a failed read waits for the next cycle's end.
    for (int window = 0; window < 3 && !read; ++window)
    {
        ASSERT_TRUE(waitCycleEnd(window == 0 ? 0 : cyclesDone()))
            << "no BMC cycle completed within 120 s";
        const json m = Curl(
            url + "/Chassis/PowerShelf1/PowerSubsystem/PowerSupplies/ORV3_PSU_C8/Metrics", &cs);
        ASSERT_EQ(cs, 0);
        ASSERT_TRUE(m["OutputPowerWatts"]["Reading"].is_number()) << m.dump();
        redfishWatts = m["OutputPowerWatts"]["Reading"].get<double>();
        // ORV3_PSU register 82, PSU_Output_Power: raw / 2^3 W; register 79, output voltage:
        // raw / 2^10 V (rackmon2 map).
        read = MbpollRead(p.dir + "/tty", 0xC8, 82, &raw, &mbLog) &&
               MbpollRead(p.dir + "/tty", 0xE8, 79, &volts, &mbLog);
    }
    ASSERT_TRUE(read) << mbLog;
    EXPECT_DOUBLE_EQ(raw / 8.0, redfishWatts);
    // The default load, 12 kW, shared by 12 PSUs, on the ORv3 51 V busbar.
    EXPECT_NEAR(redfishWatts, 12000.0 / 12, 0.125);
    EXPECT_NEAR(volts / 1024.0, 51.0, 1.0 / 1024);

    ASSERT_EQ(kill(p.pid, SIGTERM), 0);
    ASSERT_TRUE(p.Wait(20)) << "did not stop within 20 s of SIGTERM";
    ASSERT_TRUE(WIFEXITED(p.exitStatus));
    EXPECT_EQ(WEXITSTATUS(p.exitStatus), 0);
    EXPECT_FALSE(Exists(p.dir + "/rack.json")) << "state file left behind";
    EXPECT_FALSE(Exists(p.dir + "/tty")) << "pty link left behind";
    const std::string after = ReadFile(p.dir + "/up.log");
    EXPECT_NE(after.find("stopped after"), std::string::npos) << after;
    EXPECT_NE(after.find("SIGTERM"), std::string::npos) << after;
    // The Redfish port is closed.
    EXPECT_NE((Curl(url, &cs), cs), 0);
}

TEST(RackCli, DownStopsTheRackAndASecondUpIsRefusedMeanwhile)
{
    RackProcess p;
    p.dir = TempDir();
    ASSERT_TRUE(p.Start({"--config", CNUAS_SOURCE_DIR "/examples/rack/two-shelves.rack"}));
    const json state = p.WaitUp();
    ASSERT_TRUE(state.is_object()) << ReadFile(p.dir + "/up.log");
    EXPECT_EQ(state["psus"], 12);
    EXPECT_EQ(state["bbus"], 6);

    int st = -1;
    const std::string again = RunCommand("timeout 20 " + kCnuas + " rack up --state-dir " +
                                             p.dir + " --duration 1 2>&1",
                                         &st);
    EXPECT_EQ(st, 1) << again;
    EXPECT_NE(again.find("already up"), std::string::npos) << again;

    const std::string down =
        RunCommand("timeout 30 " + kCnuas + " rack down --state-dir " + p.dir + " 2>&1", &st);
    EXPECT_EQ(st, 0) << down;
    ASSERT_TRUE(p.Wait(20));
    ASSERT_TRUE(WIFEXITED(p.exitStatus));
    EXPECT_EQ(WEXITSTATUS(p.exitStatus), 0);
    const std::string status =
        RunCommand("timeout 10 " + kCnuas + " status --state-dir " + p.dir, &st);
    EXPECT_NE(status.find("nothing is running"), std::string::npos) << status;
    // `down` with nothing up says so.
    RunCommand("timeout 10 " + kCnuas + " rack down --state-dir " + p.dir + " 2>&1", &st);
    EXPECT_EQ(st, 1);
}

TEST(RackCli, WithoutABmcThePtyMasterHasTheBusAndSigintStopsIt)
{
    RackProcess p;
    p.dir = TempDir();
    ASSERT_TRUE(p.Start({"--shelves", "1", "--bbu-shelves", "0", "--no-bmc"}));
    const json state = p.WaitUp();
    ASSERT_TRUE(state.is_object()) << ReadFile(p.dir + "/up.log");
    EXPECT_EQ(state["psus"], 6);
    EXPECT_EQ(state["redfish"], "");
    // The only master on the bus: no waiting for a quiet moment. PSU 0xCD, the last slot:
    // PSU_Position_Number (registers 73-74, u32) is the slot number counted from 1.
    long position = -1;
    std::string mbLog;
    ASSERT_TRUE(MbpollRead(p.dir + "/tty", 0xCD, 74, &position, &mbLog)) << mbLog;
    EXPECT_EQ(position, 6);
    int st = -1;
    const std::string status =
        RunCommand("timeout 10 " + kCnuas + " status --state-dir " + p.dir, &st);
    EXPECT_NE(status.find("redfish: none"), std::string::npos) << status;
    ASSERT_EQ(kill(p.pid, SIGINT), 0);
    ASSERT_TRUE(p.Wait(20));
    ASSERT_TRUE(WIFEXITED(p.exitStatus));
    EXPECT_EQ(WEXITSTATUS(p.exitStatus), 0);
    EXPECT_NE(ReadFile(p.dir + "/up.log").find("SIGINT"), std::string::npos);

    // A state file whose process is gone (a rack that was killed -9).
    std::ofstream(p.dir + "/rack.json") << state.dump();
    const std::string stale =
        RunCommand("timeout 10 " + kCnuas + " status --state-dir " + p.dir, &st);
    EXPECT_NE(stale.find("not running (stale"), std::string::npos) << stale;
    const std::string js =
        RunCommand("timeout 10 " + kCnuas + " status --json --state-dir " + p.dir, &st);
    const json arr = json::parse(js, nullptr, false);
    ASSERT_TRUE(arr.is_array()) << js;
    ASSERT_EQ(arr.size(), 1u);
    EXPECT_FALSE(arr[0]["alive"].get<bool>());
    RunCommand("timeout 10 " + kCnuas + " rack down --state-dir " + p.dir + " 2>&1", &st);
    EXPECT_EQ(st, 0);
    EXPECT_FALSE(Exists(p.dir + "/rack.json"));
}

TEST(RackCli, BadRackFilesAreUsageErrorsWithFileAndLine)
{
    const std::string dir = TempDir();
    struct Case
    {
        std::string text;
        std::string message;
    };
    const std::vector<Case> cases = {
        {"psu_shelves = 2\ncolour = blue\n", ":2: unknown key 'colour'"},
        {"load = lots\n", ":1: 'lots' is not a number"},
        {"load = -5\n", ":1: '-5' is not a number"},
        {"psu_shelves = 9\n", ":1: '9' is not a whole number"},
        {"at 10 explode\n", ":1: unknown action 'explode'"},
        {"at 10 psu_fail 0\n", ":1: psu_fail takes 2 argument(s)"},
        {"psu_shelves = 1\nat 10 psu_fail 2 0\n", ":2: no PSU 2 0 in this rack"},
        {"hpr = maybe\n", ":1: 'maybe' is not true/false"},
        {"load = 1\nload = 2\n", ":2: 'load' given twice"},
        {"set ns3::RackBmc::NoSuchThing=1\n", "NoSuchThing"},
        {"just words\n", ":1: expected 'key = value'"},
        {"at 5 dead 0x99\n", ":1: no device at Modbus address 0x99"},
        {"at 5 chatter 300\n", ":1: '300' is not a Modbus address"},
        {"at 5 revive\n", ":1: revive takes 1 argument(s)"},
    };
    int i = 0;
    for (const Case& c : cases)
    {
        const std::string f = dir + "/bad" + std::to_string(i++) + ".rack";
        std::ofstream(f) << c.text;
        int st = -1;
        const std::string out = RunCommand("timeout 20 " + kCnuas + " rack up --state-dir " +
                                               dir + " --duration 1 --config " + f + " 2>&1",
                                           &st);
        // A bad rack file is an input error (docs/cli.md, "Exit status").
        EXPECT_EQ(st, 3) << c.text << out;
        EXPECT_NE(out.find(c.message), std::string::npos) << c.text << out;
    }
    int st = -1;
    RunCommand("timeout 10 " + kCnuas + " rack sideways 2>&1", &st);
    EXPECT_EQ(st, 2);
    RunCommand("timeout 10 " + kCnuas + " rack up --shelves 2 --hpr --bogus 2>&1", &st);
    EXPECT_EQ(st, 2);
    // Layouts the BMC could not discover (rackmon2's ORV3 scan ranges): refused, not aborted.
    for (const char* layout : {"--shelves 3", "--bbu-shelves 2"})
    {
        const std::string out = RunCommand("timeout 20 " + kCnuas + " rack up --state-dir " +
                                               dir + " --duration 1 " + layout + " 2>&1",
                                           &st);
        EXPECT_EQ(st, 2) << layout << out;
        EXPECT_NE(out.find("outside the ORV3_"), std::string::npos) << out;
    }
    RunCommand("rm -rf '" + dir + "'");
}
