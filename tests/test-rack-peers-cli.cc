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
