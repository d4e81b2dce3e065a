// Ctrl-C during `cnuas run`: every scenario stops its simulation cleanly, prints the summary of
// what finished with "interrupted" first, leaves every file it wrote complete, runs no further
// points of a sweep, and exits 130 (docs/cli.md, "Exit status"). Issue 15's last line.
#include "test-text-files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace
{

size_t
Lines(const std::string& text)
{
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// `cnuas run ARGS` started in the background in `dir`, stdout and stderr to files there.
class BackgroundRun
{
  public:
    BackgroundRun(const std::filesystem::path& dir, std::vector<std::string> args)
        : m_out(dir / "out.txt"),
          m_err(dir / "err.txt")
    {
        args.insert(args.begin(), {"cnuas", "run"});
        m_pid = fork();
        if (m_pid == 0)
        {
            if (chdir(dir.c_str()) != 0 || !freopen(m_out.c_str(), "w", stdout) ||
                !freopen(m_err.c_str(), "w", stderr))
            {
                _exit(127);
            }
            // SIGINT as a terminal delivers it, whatever the test runner set.
            signal(SIGINT, SIG_DFL);
            std::vector<char*> argv;
            for (auto& a : args)
            {
                argv.push_back(a.data());
            }
            argv.push_back(nullptr);
            execv(CNUAS_BINARY_DIR "/bin/cnuas", argv.data());
            _exit(127);
        }
    }

    ~BackgroundRun()
    {
        if (m_pid > 0 && !m_reaped)
        {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, nullptr, 0);
        }
    }

    pid_t Pid() const
    {
        return m_pid;
    }

    /**
     * Waits until the simulation is under way with Ctrl-C handled: the process catches SIGINT
     * (SigCgt in /proc/PID/status, bit 1), which only SimProgress::StopOnInterrupt's handler
     * does, from just before Simulator::Run. Polls for up to `seconds`; false if the process
     * ended first or never got there.
     */
    bool WaitUntilSigintIsCaught(double seconds)
    {
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
        while (std::chrono::steady_clock::now() < deadline)
        {
            std::ifstream status("/proc/" + std::to_string(m_pid) + "/status");
            std::string line;
            while (std::getline(status, line))
            {
                if (line.rfind("SigCgt:", 0) == 0 &&
                    (std::stoull(line.substr(7), nullptr, 16) & (1ULL << (SIGINT - 1))) != 0)
                {
                    return true;
                }
            }
            if (!Running())
            {
                return false;
            }
            usleep(10 * 1000);
        }
        return false;
    }

    /// Whether the process has not ended yet.
    bool Running()
    {
        if (!m_reaped && waitpid(m_pid, nullptr, WNOHANG) == m_pid)
        {
            m_reaped = true;
        }
        return !m_reaped;
    }

    /// Sends SIGINT and waits for the end: the exit status, or 256 + the signal that ended it
    /// (not 128 + it, which would read as a clean exit 130 after SIGINT).
    int Interrupt()
    {
        kill(m_pid, SIGINT);
        int st = 0;
        waitpid(m_pid, &st, 0);
        m_reaped = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 256 + WTERMSIG(st);
    }

    std::string Out() const
    {
        return ReadFile(m_out);
    }

    std::string Err() const
    {
        return ReadFile(m_err);
    }

  private:
    std::filesystem::path m_out;
    std::filesystem::path m_err;
    pid_t m_pid = -1;
    bool m_reaped = false;
};

class CliInterrupt : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = std::string(info->name());
        std::replace(name.begin(), name.end(), '/', '-');
        m_dir = std::filesystem::temp_directory_path() /
                ("cnuas-int-" + std::to_string(getpid()) + "-" + name);
        std::filesystem::remove_all(m_dir);
        std::filesystem::create_directories(m_dir);
    }

    void TearDown() override
    {
        std::filesystem::remove_all(m_dir);
    }

    std::filesystem::path m_dir;
};

/// One scenario run long enough (minutes if let be) to be interrupted.
struct LongRun
{
    std::string scenario;
    std::vector<std::string> params;
    std::string csv;       ///< a file in --out that must be complete ("" for none)
    std::string notInSummary; ///< a later sweep point that must not have run ("" for none)
};

class CliInterruptEveryScenario : public CliInterrupt,
                                  public ::testing::WithParamInterface<LongRun>
{
};

TEST_P(CliInterruptEveryScenario, StopsWithAPartialSummaryAndExit130)
{
    const LongRun& run = GetParam();
    std::vector<std::string> args = {run.scenario, "--no-plots", "--out", "run"};
    for (const auto& p : run.params)
    {
        args.push_back("--param");
        args.push_back(p);
    }
    BackgroundRun r(m_dir, args);
    ASSERT_GT(r.Pid(), 0);
    ASSERT_TRUE(r.WaitUntilSigintIsCaught(300))
        << "the run ended (or never started its simulation) before Ctrl-C:\n"
        << r.Out() << r.Err();
    const int status = r.Interrupt();
    const std::string out = r.Out();
    const std::string err = r.Err();
    ASSERT_EQ(status, 130) << out << err;
    // The summary is printed, and says first that it is partial.
    EXPECT_TRUE(std::regex_search(out, std::regex("^interrupted: +Ctrl-C at [0-9.]+ ms "
                                                  "simulated: partial results\n")))
        << out;
    // The progress line (stderr is a file: plain lines) ends with the interruption.
    EXPECT_TRUE(Contains(err, ", interrupted, ")) << err;
    EXPECT_FALSE(Contains(err, "internal error")) << err;
    if (!run.csv.empty())
    {
        // Complete: a header and whole lines, nothing cut off mid-line.
        const std::string csv = ReadFile(m_dir / "run" / run.csv);
        EXPECT_GE(Lines(csv), 1u) << run.csv;
        EXPECT_TRUE(!csv.empty() && csv.back() == '\n') << csv;
    }
    if (!run.notInSummary.empty())
    {
        EXPECT_FALSE(Contains(out, run.notInSummary))
            << "the sweep went on after Ctrl-C:\n"
            << out;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios,
    CliInterruptEveryScenario,
    ::testing::Values(
        LongRun{"ib-fat-tree", {"duration-us=100000"}, "throughput.csv", ""},
        LongRun{"ib-incast", {"duration-us=100000"}, "throughput.csv", ""},
        LongRun{"ib-cc-incast", {"duration-us=100000"}, "ib-cc-incast-none.csv", ""},
        LongRun{"ib-fct", {"duration=1s", "limit=2s"}, "ib-fct.csv", ""},
        LongRun{"rdma-incast", {"duration-us=1000000"}, "", ""},
        LongRun{"rdma-fct", {"duration-us=100000"}, "fct.csv", ""},
        LongRun{"roce-fairness", {"bytes=2000000000", "limit=1s"}, "roce-fairness.csv", ""},
        LongRun{"roce-incast",
                {"senders=8,16", "modes=pfc", "bytes=2000000000", "limit=1s"},
                "roce-incast.csv",
                "N=16"},
        LongRun{"roce-collapse",
                {"configs=consistent,pfc-off", "loads=0.7", "arrivals=100ms", "limit=1s"},
                "roce-collapse.csv",
                "pfc-off load"},
        LongRun{"roce-fct", {"duration=1s", "limit=2s"}, "roce-fct.csv", ""},
        LongRun{"selftest-timer", {"events=100000000", "duration=1000s"}, "summary.csv", ""}),
    [](const ::testing::TestParamInfo<LongRun>& info) {
        std::string name = info.param.scenario;
        name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
        return name;
    });

TEST_F(CliInterrupt, RoceHpccKeepsTheFlowsThatFinishedInBothFctFiles)
{
    // A 1 KB flow that finishes at once and 20 of 2 GB sharing one 100 Gb/s link (3.2 s
    // simulated, more than the 1 s limit: minutes of wall time); SIGINT once the progress line
    // shows the run under way (drawn every 1/200 of the limit, printed after 5 s of wall time),
    // so that the finished flow has been written.
    std::filesystem::create_directories(m_dir / "hpcc");
    std::ofstream(m_dir / "hpcc/topo.txt")
        << "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n";
    std::string flows = "21\n0 1 3 100 1000 2.0\n";
    for (int i = 0; i < 20; ++i)
    {
        flows += "0 1 3 " + std::to_string(101 + i) + " 2000000000 2.0\n";
    }
    std::ofstream(m_dir / "hpcc/flows.txt") << flows;
    BackgroundRun r(m_dir,
                    {"roce-hpcc", "--no-plots", "--out", "run", "--param", "dir=hpcc", "--param",
                     "topology-file=topo.txt", "--param", "flow-file=flows.txt", "--param",
                     "config-file=", "--param", "limit=1s"});
    ASSERT_GT(r.Pid(), 0);
    bool running = false;
    for (int i = 0; i < 1200 && !running; ++i)
    {
        running = Contains(r.Err(), " flows, wall ");
        if (!running)
        {
            ASSERT_TRUE(r.Running()) << "ended early:\n" << r.Err();
            usleep(100 * 1000);
        }
    }
    ASSERT_TRUE(running) << r.Err();
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(r.Interrupt(), 130) << r.Out() << r.Err();
    const double stopSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string summary = r.Out();
    EXPECT_TRUE(Contains(summary, "interrupted:")) << summary;
    EXPECT_TRUE(std::regex_search(summary, std::regex("flows done: +1/21"))) << summary;
    EXPECT_TRUE(Contains(r.Err(), ", interrupted, ")) << r.Err();
    // What was written is complete: the finished flow's line in both FCT files.
    const std::string fct = ReadFile(m_dir / "run/fct.txt");
    EXPECT_EQ(Lines(fct), 1u) << fct;
    const std::string csv = ReadFile(m_dir / "run/roce-hpcc-fct.csv");
    EXPECT_EQ(Lines(csv), 2u) << csv;
    EXPECT_TRUE(Contains(csv, "\n0,0,1,1000,")) << csv;
    EXPECT_LT(stopSeconds, 30.0);
}

} // namespace
