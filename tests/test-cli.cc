// The `cnuas` command end to end (run as a child process), and the scenario file parser.
#include "helpers/scenario/scenario-file.h"
#include "cli-run.h"
#include "test-text-files.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ns3;

namespace
{

std::filesystem::path
TestDir()
{
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                ("cnuas-cli-" + std::to_string(getpid()) + "-" +
                                 info->test_suite_name() + "-" + info->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

/// The value of summary line `key: value`, "" if absent.
std::string
SummaryValue(const std::string& out, const std::string& key)
{
    std::smatch m;
    std::regex re("(^|\n)" + key + ": +([^\n]*)");
    return std::regex_search(out, m, re) ? m[2].str() : "";
}

class Cli : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        m_dir = TestDir();
    }

    void TearDown() override
    {
        std::filesystem::remove_all(m_dir);
    }

    CliResult Run(const std::string& args)
    {
        return RunCli(args, m_dir);
    }

    std::filesystem::path m_dir;
};

} // namespace

TEST_F(Cli, HelpListsSubcommands)
{
    for (const char* args : {"--help", "help", "-h"})
    {
        CliResult r = Run(args);
        EXPECT_EQ(r.status, 0) << args;
        EXPECT_TRUE(Contains(r.out, "usage: cnuas SUBCOMMAND")) << r.out;
        // Padding depends on the longest subcommand name, which other subcommands change.
        EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  run +run a built-in scenario")))
            << r.out;
    }
    // No subcommand at all is a usage error, with the same help on stderr.
    CliResult bare = Run("");
    EXPECT_EQ(bare.status, 2);
    EXPECT_TRUE(Contains(bare.err, "subcommands:")) << bare.err;
    CliResult version = Run("--version");
    EXPECT_EQ(version.status, 0);
    EXPECT_TRUE(Contains(version.out, "cnuas 0.1.0 (ns-3 3.37)")) << version.out;
}

/// The program links neither libcnuas nor ns-3 (tools/cnuas/sim-module.h): `cnuas exec` and
/// `cnuas status`, called hundreds of times by scripts and launchers, start without them, and
/// the simulator's subcommands come from the module beside it.
TEST_F(Cli, TheProgramLoadsTheSimulatorOnlyForItsSubcommands)
{
    int st = -1;
    std::string needed;
    ASSERT_TRUE(ShellRun("readelf -d '" + kCnuas + "' | grep NEEDED", needed, st)) << needed;
    EXPECT_NE(needed.find("libc.so"), std::string::npos) << needed;
    EXPECT_EQ(needed.find("libcnuas"), std::string::npos) << needed;
    EXPECT_EQ(needed.find("libns3"), std::string::npos) << needed;

    // A copy of the program without the module: what needs no simulator works, the rest says
    // what is missing (exit 1), and the help still lists what there is.
    const std::filesystem::path bin = m_dir / "bin";
    std::filesystem::create_directories(bin);
    std::filesystem::copy_file(kCnuas, bin / "cnuas");
    const std::string lone = "'" + (bin / "cnuas").string() + "'";
    std::string out;
    ASSERT_TRUE(ShellRun(lone + " status --state-dir '" + m_dir.string() + "' 2>&1", out, st));
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
    EXPECT_TRUE(Contains(out, "nothing is running")) << out;
    ASSERT_TRUE(ShellRun(lone + " run --list 2>&1", out, st));
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << out;
    EXPECT_TRUE(Contains(out, "cannot run 'run': the simulator's subcommands are missing: "))
        << out;
    const std::string absent = (bin / "../lib/cnuas/cnuas-sim-commands.so").string();
    EXPECT_TRUE(Contains(out, "there is no " + absent)) << out;
    ASSERT_TRUE(ShellRun(lone + " --help 2>&1", out, st));
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("\n  exec +run a command inside"))) << out;
    EXPECT_FALSE(std::regex_search(out, std::regex("\n  run +run a built-in scenario"))) << out;
    // An unknown subcommand is still a usage error when the module is there.
    CliResult r = Run("frobnicate");
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(Contains(r.err, "unknown subcommand 'frobnicate'")) << r.err;
}

TEST_F(Cli, TheStateDirectoryIsTheEnvironmentsElseRunForRootElseTmp)
{
    auto status = [this](const std::string& env) {
        // `status` names the directory it looked in, whether or not something runs there.
        const std::string cmd = "cd '" + m_dir.string() +
                                "' && env -u CNUAS_STATE_DIR -u XDG_RUNTIME_DIR " + env +
                                " '" CNUAS_BINARY_DIR "/bin/cnuas' status 2>&1";
        std::string out;
        int status;
        ShellRun(cmd, out, status);
        std::smatch m;
        return std::regex_search(out, m, std::regex(R"(state directory ([^)]+)\))"))
                   ? m[1].str()
                   : "(none in: " + out + ")";
    };
    EXPECT_EQ(status("CNUAS_STATE_DIR=" + m_dir.string() + "/s"), m_dir.string() + "/s");
    EXPECT_EQ(status("XDG_RUNTIME_DIR=" + m_dir.string()), m_dir.string() + "/cnuas");
    // Without either: root keeps it in /run (when it can write there), anyone else in /tmp.
    struct stat st = {};
    const bool run = getuid() == 0 && stat("/run", &st) == 0 && S_ISDIR(st.st_mode) &&
                     access("/run", W_OK) == 0;
    EXPECT_EQ(status(""), run ? "/run/cnuas" : "/tmp/cnuas-" + std::to_string(getuid()));
}

TEST_F(Cli, UnknownSubcommandOrOption)
{
    CliResult r = Run("frobnicate --now");
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(Contains(r.err, "unknown subcommand 'frobnicate'")) << r.err;
    CliResult o = Run("--frob");
    EXPECT_EQ(o.status, 2);
    EXPECT_TRUE(Contains(o.err, "unknown option '--frob'")) << o.err;
}

TEST_F(Cli, HelpSubcommandShowsItsUsage)
{
    CliResult r = Run("help run");
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(Contains(r.out, "usage: cnuas run NAME|FILE.scn")) << r.out;
    EXPECT_TRUE(Contains(r.out, "--set ATTRIBUTE=VALUE")) << r.out;
}

TEST_F(Cli, RunList)
{
    CliResult r = Run("run --list");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(Contains(r.out, "selftest-timer  Runner self-test")) << r.out;
    EXPECT_FALSE(Contains(r.out, "events=1000")) << "parameters only with -v";
    CliResult v = Run("run --list -v");
    EXPECT_EQ(v.status, 0);
    EXPECT_TRUE(Contains(v.out, "    events=1000")) << v.out;
    EXPECT_TRUE(Contains(v.out, "duration=10ms")) << v.out;
    CliResult h = Run("run selftest-timer --help");
    EXPECT_EQ(h.status, 0);
    EXPECT_TRUE(Contains(h.out, "usage: cnuas run selftest-timer")) << h.out;
    EXPECT_TRUE(Contains(h.out, "exists to test `cnuas run`")) << h.out;
    EXPECT_TRUE(Contains(h.out, "  exit-code=0")) << h.out;
}

TEST_F(Cli, UnknownScenario)
{
    CliResult r = Run("run no-such-scenario");
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(Contains(r.err, "unknown scenario 'no-such-scenario'")) << r.err;
    CliResult typo = Run("run selftest-timr");
    EXPECT_EQ(typo.status, 2);
    EXPECT_TRUE(Contains(typo.err, "did you mean 'selftest-timer'?")) << typo.err;
    CliResult none = Run("run");
    EXPECT_EQ(none.status, 2);
    EXPECT_TRUE(Contains(none.err, "missing the scenario NAME")) << none.err;
}

TEST_F(Cli, RunSelftestPrintsAlignedSummaryAndArtifacts)
{
    CliResult r = Run("run selftest-timer --no-progress --param events=123 --param duration=3us");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(SummaryValue(r.out, "events-requested"), "123");
    EXPECT_EQ(SummaryValue(r.out, "events-run"), "123");
    EXPECT_EQ(SummaryValue(r.out, "final-sim-time"), "3 us (3000000 ps)");
    EXPECT_EQ(SummaryValue(r.out, "check"), "ok");
    // Values start in one column.
    std::istringstream lines(r.out);
    std::string line;
    std::set<size_t> columns;
    int summaryLines = 0;
    while (std::getline(lines, line))
    {
        if (line.rfind("wrote: ", 0) == 0)
        {
            continue;
        }
        size_t colon = line.find(": ");
        ASSERT_NE(colon, std::string::npos) << line;
        columns.insert(line.find_first_not_of(' ', colon + 1));
        ++summaryLines;
    }
    EXPECT_EQ(summaryLines, 7);
    EXPECT_EQ(columns.size(), 1u) << r.out;
    // The artifact line, under the default ./out/NAME.
    EXPECT_TRUE(Contains(r.out, "wrote: out/selftest-timer/summary.csv")) << r.out;
    std::string csv = ReadFile(m_dir / "out/selftest-timer/summary.csv");
    EXPECT_TRUE(Contains(csv, "events-run,123\n")) << csv;
}

TEST_F(Cli, ProgressOutput)
{
    CliResult with = Run("run selftest-timer --param events=5000");
    EXPECT_EQ(with.status, 0) << with.err;
    std::regex finalLine(R"(\[##########\] 100% sim 10 ms / 10 ms, wall [0-9.]+ s, )"
                         R"(done, [0-9.]+ (k |M )?events/s)");
    EXPECT_TRUE(std::regex_search(with.err, finalLine)) << with.err;
    CliResult without = Run("run selftest-timer --param events=5000 --no-progress");
    EXPECT_EQ(without.status, 0);
    EXPECT_EQ(without.err, "");
}

TEST_F(Cli, ParamErrors)
{
    CliResult unknown = Run("run selftest-timer --param evnets=3");
    EXPECT_EQ(unknown.status, 2);
    EXPECT_TRUE(Contains(unknown.err, "has no parameter 'evnets' (it takes: events, duration, "
                                      "exit-code)"))
        << unknown.err;
    CliResult topo = Run("run selftest-timer --topology pair");
    EXPECT_EQ(topo.status, 2);
    EXPECT_TRUE(Contains(topo.err, "does not take a topology")) << topo.err;
    // A value the scenario cannot use, given on the command line: a usage error.
    CliResult bad = Run("run selftest-timer --param events=lots");
    EXPECT_EQ(bad.status, 2);
    EXPECT_TRUE(Contains(bad.err, "cnuas: error: scenario 'selftest-timer': parameter "
                                  "events='lots' is not a whole number"))
        << bad.err;
    CliResult dur = Run("run selftest-timer --param duration=10parsecs");
    EXPECT_EQ(dur.status, 2);
    EXPECT_TRUE(Contains(dur.err, "duration='10parsecs' is not a duration")) << dur.err;
    CliResult noEq = Run("run selftest-timer --param events");
    EXPECT_EQ(noEq.status, 2);
    EXPECT_TRUE(Contains(noEq.err, "--param needs KEY=VALUE")) << noEq.err;
}

TEST_F(Cli, ExitCodePropagates)
{
    CliResult r = Run("run selftest-timer --no-progress --param exit-code=3 --param events=2");
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(SummaryValue(r.out, "events-run"), "2") << "summary is printed before exiting";
}

TEST_F(Cli, SetAttributes)
{
    CliResult cls = Run("run selftest-timer --set NoSuchClass::Foo=1");
    EXPECT_EQ(cls.status, 2);
    EXPECT_TRUE(Contains(cls.err, "no ns-3 class 'ns3::NoSuchClass'")) << cls.err;
    CliResult attr = Run("run selftest-timer --set ns3::SimpleNetDevice::Speed=1");
    EXPECT_EQ(attr.status, 2);
    EXPECT_TRUE(Contains(attr.err, "class ns3::SimpleNetDevice has no attribute 'Speed' (it has:"))
        << attr.err;
    EXPECT_TRUE(Contains(attr.err, "DataRate")) << attr.err;
    CliResult value = Run("run selftest-timer --set SimpleNetDevice::DataRate=fast");
    EXPECT_EQ(value.status, 2);
    EXPECT_TRUE(Contains(value.err, "bad value 'fast' for ns3::SimpleNetDevice::DataRate"))
        << value.err;
    // Values ns-3 itself would abort on are errors, not crashes.
    CliResult timeValue = Run("run selftest-timer --set ns3::SimpleChannel::Delay=soon");
    EXPECT_EQ(timeValue.status, 2);
    EXPECT_TRUE(Contains(timeValue.err, "expects a time with a unit")) << timeValue.err;
    CliResult global = Run("run selftest-timer --set RngRun=abc");
    EXPECT_EQ(global.status, 2);
    EXPECT_TRUE(Contains(global.err, "bad value 'abc' for global value RngRun")) << global.err;
    CliResult noGlobal = Run("run selftest-timer --set Frobnication=1");
    EXPECT_EQ(noGlobal.status, 2);
    EXPECT_TRUE(Contains(noGlobal.err, "no ns-3 global value 'Frobnication'")) << noGlobal.err;

    CliResult ok = Run("run selftest-timer --no-progress --param events=3 "
                       "--set SimpleNetDevice::DataRate=100Gbps "
                       "--set ns3::SimpleChannel::Delay=5us --set RngRun=7");
    EXPECT_EQ(ok.status, 0) << ok.err;
    EXPECT_EQ(SummaryValue(ok.out, "run"), "7");
}

TEST_F(Cli, SeedAndRun)
{
    CliResult r = Run("run selftest-timer --no-progress --param events=1 --seed 42 --run=9");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(SummaryValue(r.out, "seed"), "42");
    EXPECT_EQ(SummaryValue(r.out, "run"), "9");
    // An explicit --seed wins over --set RngSeed.
    CliResult both = Run("run selftest-timer --no-progress --param events=1 --set RngSeed=5 "
                         "--seed 6");
    EXPECT_EQ(SummaryValue(both.out, "seed"), "6");
    CliResult zero = Run("run selftest-timer --seed 0");
    EXPECT_EQ(zero.status, 2);
    EXPECT_TRUE(Contains(zero.err, "--seed needs a whole number in 1..4294967295")) << zero.err;
    CliResult neg = Run("run selftest-timer --run -1");
    EXPECT_EQ(neg.status, 2);
}

TEST_F(Cli, PcapAndOutDirectories)
{
    CliResult r =
        Run("run selftest-timer --no-progress --param events=1 --pcap traces --out results/a");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(SummaryValue(r.out, "pcap"), "traces (no wire: nothing captured)");
    EXPECT_TRUE(std::filesystem::is_directory(m_dir / "traces"));
    EXPECT_TRUE(std::filesystem::exists(m_dir / "results/a/summary.csv"));
    CliResult missing = Run("run selftest-timer --pcap");
    EXPECT_EQ(missing.status, 2);
    EXPECT_TRUE(Contains(missing.err, "option --pcap needs a directory")) << missing.err;
    CliResult missing2 = Run("run selftest-timer --pcap --no-progress");
    EXPECT_EQ(missing2.status, 2);
    EXPECT_TRUE(Contains(missing2.err, "option --pcap needs a directory")) << missing2.err;
    // An output directory that cannot be created is a runtime error.
    WriteFile(m_dir / "afile", "x");
    CliResult blocked = Run("run selftest-timer --no-progress --out afile/sub");
    EXPECT_EQ(blocked.status, 1);
    EXPECT_TRUE(Contains(blocked.err, "cannot create directory 'afile/sub'")) << blocked.err;
}

TEST_F(Cli, PcapSubcommandUsage)
{
    // `cnuas pcap` comes from another part of the tool; test its usage contract when present.
    if (!Contains(Run("--help").out, "\n  pcap "))
    {
        GTEST_SKIP() << "the pcap subcommand is not built into this cnuas";
    }
    CliResult r = Run("pcap");
    EXPECT_EQ(r.status, 2);
    EXPECT_FALSE(r.err.empty());
    EXPECT_EQ(Run("pcap --help").status, 0);
}

TEST_F(Cli, ScenarioFileEndToEnd)
{
    std::filesystem::create_directories(m_dir / "scn");
    WriteFile(m_dir / "scn/timer.scn", "# a scenario file\n"
                                       "scenario selftest-timer\n"
                                       "seed 5\n"
                                       "run 3   # after a value\n"
                                       "param events=50\n"
                                       "param duration=2ms\n"
                                       "set ns3::SimpleChannel::Delay=1us\n"
                                       "pcap caps\n"
                                       "out results\n");
    CliResult r = Run("run scn/timer.scn --no-progress");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(SummaryValue(r.out, "events-run"), "50");
    EXPECT_EQ(SummaryValue(r.out, "final-sim-time"), "2 ms (2000000000 ps)");
    EXPECT_EQ(SummaryValue(r.out, "seed"), "5");
    EXPECT_EQ(SummaryValue(r.out, "run"), "3");
    EXPECT_EQ(SummaryValue(r.out, "pcap"), "caps (no wire: nothing captured)");
    EXPECT_TRUE(Contains(r.out, "wrote: results/summary.csv")) << r.out;

    // The command line overrides the file.
    CliResult o = Run("run scn/timer.scn --no-progress --param events=7 --run 4 --out other");
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(SummaryValue(o.out, "events-run"), "7");
    EXPECT_EQ(SummaryValue(o.out, "run"), "4");
    EXPECT_EQ(SummaryValue(o.out, "seed"), "5");
    EXPECT_TRUE(Contains(o.out, "wrote: other/summary.csv")) << o.out;

    WriteFile(m_dir / "scn/bad.scn", "scenario selftest-timer\n\nfrobnicate yes\n");
    // Everything wrong in the file is an input error (3), named with the file and line.
    CliResult bad = Run("run scn/bad.scn");
    EXPECT_EQ(bad.status, 3);
    EXPECT_TRUE(Contains(bad.err, "scn/bad.scn:3: unknown directive 'frobnicate'")) << bad.err;
    WriteFile(m_dir / "scn/noname.scn", "seed 3\n");
    CliResult noname = Run("run scn/noname.scn");
    EXPECT_EQ(noname.status, 3);
    EXPECT_TRUE(Contains(noname.err, "no 'scenario NAME' line")) << noname.err;
    WriteFile(m_dir / "scn/unknown.scn", "scenario warp-drive\n");
    CliResult unknown = Run("run scn/unknown.scn");
    EXPECT_EQ(unknown.status, 3);
    EXPECT_TRUE(Contains(unknown.err, "scn/unknown.scn: unknown scenario 'warp-drive'"))
        << unknown.err;
    WriteFile(m_dir / "scn/badset.scn", "scenario selftest-timer\nset Nope::X=1\n");
    CliResult badset = Run("run scn/badset.scn");
    EXPECT_EQ(badset.status, 3);
    EXPECT_TRUE(Contains(badset.err, "scn/badset.scn:2: set Nope::X=1: no ns-3 class"))
        << badset.err;
    CliResult missing = Run("run scn/absent.scn");
    EXPECT_EQ(missing.status, 3);
    EXPECT_TRUE(Contains(missing.err, "scn/absent.scn: cannot open scenario file")) << missing.err;
}

TEST(ScenarioFile, AllDirectives)
{
    ScenarioFile f = ParseScenarioText("# header comment\n"
                                       "\n"
                                       "scenario incast   # trailing comment\n"
                                       "seed 17\n"
                                       "run 4\n"
                                       "set ns3::Foo::Bar=1 2 3\n"
                                       "set RngRun=5\n"
                                       "param senders=8\n"
                                       "param label=run#2\n"
                                       "topology file:fabrics/x.topo\n"
                                       "pcap /tmp/caps\n"
                                       "out results/incast\n",
                                       "exp/a.scn",
                                       "exp");
    EXPECT_EQ(f.path, "exp/a.scn");
    EXPECT_EQ(f.scenario, "incast");
    EXPECT_EQ(f.seed, 17u);
    EXPECT_EQ(f.run, 4u);
    ASSERT_EQ(f.settings.size(), 2u);
    EXPECT_EQ(f.settings[0].name, "ns3::Foo::Bar");
    EXPECT_EQ(f.settings[0].value, "1 2 3");
    EXPECT_EQ(f.settings[0].where, "exp/a.scn:6");
    EXPECT_EQ(f.settings[1].name, "RngRun");
    EXPECT_EQ(f.params.at("senders"), "8");
    EXPECT_EQ(f.params.at("label"), "run#2");
    EXPECT_EQ(f.params.at("topology"), "file:exp/fabrics/x.topo");
    EXPECT_EQ(f.pcapDir, "/tmp/caps");
    EXPECT_EQ(f.outDir, "results/incast");
}

TEST(ScenarioFile, TopologySpecsResolveAgainstTheFile)
{
    EXPECT_EQ(ParseScenarioText("topology fat-tree:k=4\n", "a.scn", "d").params.at("topology"),
              "fat-tree:k=4");
    EXPECT_EQ(ParseScenarioText("topology file:/abs/x.topo\n", "a.scn", "d").params.at("topology"),
              "file:/abs/x.topo");
    EXPECT_EQ(ParseScenarioText("param topology=file:../x.topo\n", "a.scn", "d/e")
                  .params.at("topology"),
              "file:d/x.topo");
    EXPECT_EQ(ResolveTopologySpec("file:x.topo", "."), "file:x.topo");
}

TEST(ScenarioFile, FileIsReadFromDisk)
{
    std::filesystem::path dir = TestDir();
    WriteFile(dir / "s.scn", "scenario selftest-timer\ntopology file:net.topo\n");
    ScenarioFile f = ParseScenarioFile((dir / "s.scn").string());
    EXPECT_EQ(f.scenario, "selftest-timer");
    EXPECT_EQ(f.params.at("topology"), "file:" + (dir / "net.topo").string());
    EXPECT_THROW(ParseScenarioFile((dir / "none.scn").string()), std::invalid_argument);
    EXPECT_THROW(ParseScenarioFile(dir.string()), std::invalid_argument);
    std::filesystem::remove_all(dir);
}

TEST(ScenarioFile, ErrorsNameFileAndLine)
{
    auto error = [](const std::string& text) {
        try
        {
            ParseScenarioText(text, "t.scn", ".");
        }
        catch (const std::invalid_argument& e)
        {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    EXPECT_EQ(error("scenario a\nwarp 9\n"),
              "t.scn:2: unknown directive 'warp' (expected one of: scenario, seed, run, set, "
              "param, topology, pcap, out)");
    EXPECT_EQ(error("\n\nseed\n"), "t.scn:3: 'seed' needs a value");
    EXPECT_EQ(error("seed 0\n"), "t.scn:1: seed must be a whole number in 1..4294967295, got '0'");
    EXPECT_EQ(error("seed 4294967296\n"),
              "t.scn:1: seed must be a whole number in 1..4294967295, got '4294967296'");
    EXPECT_EQ(error("run -3\n"), "t.scn:1: run must be a whole number >= 0, got '-3'");
    EXPECT_EQ(error("scenario a\nscenario b\n"), "t.scn:2: scenario given twice (first at line 1)");
    EXPECT_EQ(error("scenario a b\n"), "t.scn:1: scenario name must be one word, got 'a b'");
    EXPECT_EQ(error("param x=1\nparam x=2\n"), "t.scn:2: param x given twice (first at line 1)");
    EXPECT_EQ(error("topology pair\nparam topology=star\n"),
              "t.scn:2: param topology given twice (first at line 1)");
    EXPECT_EQ(error("param novalue\n"), "t.scn:1: param needs KEY=VALUE, got 'novalue'");
    EXPECT_EQ(error("set =3\n"), "t.scn:1: set has an empty key in '=3'");
    EXPECT_EQ(error("out a\nout b\n"), "t.scn:2: out given twice (first at line 1)");
}

TEST(ScenarioFile, ApplyAttributeSettingRefusesBadInput)
{
    auto has = [](const std::string& msg, const std::string& what) {
        return msg.find(what) != std::string::npos;
    };
    EXPECT_TRUE(has(ApplyAttributeSetting("Nope::X", "1"), "no ns-3 class 'ns3::Nope'"));
    EXPECT_TRUE(has(ApplyAttributeSetting("ns3::SimpleChannel::Dleay", "1"),
                    "has no attribute 'Dleay' (it has: Delay"));
    // ns-3 would abort the process on these; they must come back as messages.
    EXPECT_TRUE(has(ApplyAttributeSetting("ns3::SimpleChannel::Delay", "1 parsec"),
                    "bad value '1 parsec'"));
    EXPECT_TRUE(has(ApplyAttributeSetting("RngRun", "x"), "bad value 'x' for global value RngRun"));
    EXPECT_TRUE(has(ApplyAttributeSetting("RngSeed", "0"), "a seed in 1..4294967295"));
    EXPECT_TRUE(has(ApplyAttributeSetting("ns3::SimpleNetDevice::TxQueue", "x"), "bad value"));
}
