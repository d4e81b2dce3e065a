// Issue 15, "Hardening what exists": what used to crash the `cnuas` command or run silently wrong
// now ends with a message and the exit status of its kind (docs/cli.md, "Exit status"): 1 the
// run failed, 2 a usage error on the command line, 3 an input error in a file the user gave.
#include "helpers/formats/parse-util.h"
#include "helpers/formats/roce-hpcc-compat.h"
#include "cli-run.h"
#include "test-text-files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace ns3;

namespace
{

/// A clear refusal: the status, a message with `what`, and none of the runtime's own words.
::testing::AssertionResult
Refused(const CliResult& r, int status, const std::string& what)
{
    if (r.status != status || !Contains(r.err, what) ||
        Contains(r.err, "terminate called") || Contains(r.err, "internal error"))
    {
        return ::testing::AssertionFailure()
               << "status " << r.status << " (expected " << status << "), stderr:\n"
               << r.err << "(expected it to contain '" << what << "')";
    }
    return ::testing::AssertionSuccess();
}

class CliHardening : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        m_dir = std::filesystem::temp_directory_path() /
                ("cnuas-hard-" + std::to_string(getpid()) + "-" + info->name());
        std::filesystem::remove_all(m_dir);
        std::filesystem::create_directories(m_dir);
    }

    void TearDown() override
    {
        std::filesystem::remove_all(m_dir);
    }

    CliResult Run(const std::string& args)
    {
        return RunCli(args, m_dir);
    }

    /// A two-host HPCC topology and one 10 KB flow, for the config tests.
    void WriteHpccInputs(const std::filesystem::path& dir)
    {
        std::filesystem::create_directories(dir);
        WriteFile(dir / "topo.txt", "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n");
        WriteFile(dir / "flows.txt", "1\n0 1 3 100 10000 2.0\n");
    }

    /// `cnuas run roce-hpcc` on WriteHpccInputs's files and a config of `config` text.
    CliResult RunHpcc(const std::string& config, const std::string& extra = "")
    {
        WriteHpccInputs(m_dir / "hpcc");
        WriteFile(m_dir / "hpcc/config.txt", config);
        return Run("run roce-hpcc --no-progress --no-plots --param dir=hpcc "
                   "--param topology-file=topo.txt --param flow-file=flows.txt "
                   "--param config-file=config.txt --param limit=5ms " +
                   extra);
    }

    std::filesystem::path m_dir;
};

const char* const kSwitchesOnly = "Switch 2 \"sw0\"\n"
                                  "[1] \"sw1\"[1]\n"
                                  "Switch 2 \"sw1\"\n";

} // namespace

// ---- 1. crashes -----------------------------------------------------------------------------

TEST_F(CliHardening, FabricShowWithTheStaticSubnetOnEveryTopology)
{
    // The helper was a temporary whose activation event ran after it was gone.
    for (const char* spec : {"pair", "star:hosts=3", "dumbbell:left=1,right=2",
                             "leaf-spine:leaves=2,spines=1,hosts=1", "fat-tree:k=2"})
    {
        CliResult r = Run(std::string("fabric show --sm static --view ibstat --topology ") + spec);
        EXPECT_EQ(r.status, 0) << spec << "\n" << r.err;
        EXPECT_TRUE(Contains(r.out, "State: Active")) << spec << "\n" << r.out;
        EXPECT_FALSE(Contains(r.out, "State: Initializing")) << spec << "\n" << r.out;
    }
}

TEST_F(CliHardening, TopologyWithoutHostsIsAnInputError)
{
    WriteFile(m_dir / "switches.topo", kSwitchesOnly);
    const std::string what = "switches.topo: topology has no hosts";
    EXPECT_TRUE(Refused(Run("fabric show --topology file:switches.topo"), 3, what));
    EXPECT_TRUE(Refused(Run("fabric show --sm static --topology file:switches.topo"), 3, what));
    EXPECT_TRUE(Refused(Run("run ib-pair --no-progress --topology file:switches.topo"), 3, what));
    EXPECT_TRUE(
        Refused(Run("run ib-fat-tree --no-progress --topology file:switches.topo"), 3, what));
}

TEST_F(CliHardening, OutOfRangeParamsAreUsageErrors)
{
    struct Case
    {
        const char* args;
        const char* what;
    };
    for (const Case& c : {
             Case{"run roce-fairness --param rate=-40Gbps", "rate='-40Gbps' is not a positive"},
             Case{"run roce-fairness --param rate=fast", "rate='fast' is not a positive"},
             Case{"run roce-fairness --param rate=0Gbps", "rate='0Gbps' is not a positive"},
             Case{"run roce-fairness --param pmax=2", "pmax='2' is not a number in [0, 1]"},
             Case{"run roce-fct --param fabric-rate=0Gbps", "fabric-rate='0Gbps'"},
             Case{"run roce-fairness --param cc-attrs=RateAi=0Gbps",
                  "not a valid RateAi (expects a positive data rate"},
             Case{"run roce-fairness --param cc-attrs=AlphaInterval=55",
                  "(expects a time with a unit"},
             Case{"run ib-pair --param payload=5000", "payload='5000' is not a whole number in"},
             Case{"run ib-pair --param vls=3", "vls='3' is not one of 1, 2, 4, 8, 15"},
             Case{"run ib-pair --param vls=257", "vls='257' is not one of"},
             Case{"run rdma-pingpong --param mtu=1000", "mtu='1000' is not one of"},
             Case{"run ib-fct --param buffer=4096", "smaller than one packet of the path MTU"},
             Case{"run ib-fct --param buffer=1000", "not a multiple of 64 bytes"},
             Case{"run ib-fct --param rate=200Gbps", "is not an InfiniBand link rate"},
             Case{"run ib-fct --param cc=iba --param sm=static", "cc=iba needs sm=builtin"},
             Case{"run ib-fct --param threshold=16", "threshold='16' is not a whole number"},
         })
    {
        CliResult r = Run(std::string(c.args) + " --no-progress --no-plots");
        EXPECT_TRUE(Refused(r, 2, c.what)) << c.args;
        EXPECT_TRUE(Contains(r.err, "cnuas: error: ")) << c.args << "\n" << r.err;
    }
}

TEST_F(CliHardening, DownRefusesATimeoutThatIsNotSeconds)
{
    // Before, std::stod took "nan", "-1" and "5s" (as 5): a NaN or negative wait for the
    // daemon to stop.
    for (const char* v : {"nan", "-1", "5s", "inf", ""})
    {
        EXPECT_TRUE(Refused(Run(std::string("down --name nobody --timeout '") + v + "'"), 2,
                            "--timeout '" + std::string(v) + "' is not a number of seconds"))
            << v;
    }
}

TEST_F(CliHardening, UpAndCaptureRefuseSecondsAndFactorsThatAreNotNumbers)
{
    // Before, std::stod read "5s" as 5 and took "nan" and "-1": up waited a NaN or negative
    // time for its hosts; capture ran forever on a negative duration and stopped at once on 0
    // while saying Ctrl-C stops it. Refused before anything is made.
    for (const char* v : {"nan", "-1", "0", "5s", "inf", "1e9", ""})
    {
        EXPECT_TRUE(Refused(Run(std::string("up --name nobody --timeout '") + v + "'"), 2,
                            "--timeout takes seconds, above 0 and at most 86400, not '" +
                                std::string(v) + "'"))
            << v;
        EXPECT_TRUE(Refused(Run(std::string("capture --name nobody h0 -w x.pcap --duration '") +
                                v + "'"),
                            2, "--duration '" + std::string(v) + "' is not a number of seconds"))
            << v;
    }
    for (const char* v : {"2x", "nan", "0", " 5"})
    {
        EXPECT_TRUE(Refused(Run(std::string("up --name nobody --dilation '") + v + "'"), 2,
                            "--dilation takes a factor in 0.001..1e6, not '" + std::string(v) +
                                "'"))
            << v;
    }
}

TEST_F(CliHardening, AParamValueFromAScenarioFileNamesItsLine)
{
    WriteFile(m_dir / "fair.scn", "scenario roce-fairness\n"
                                  "param flows=2\n"
                                  "param rate=-40Gbps\n");
    EXPECT_TRUE(Refused(Run("run fair.scn --no-progress"), 3,
                        "fair.scn:3: scenario 'roce-fairness': parameter rate='-40Gbps'"));
    // The command line replaces the file's value, and then it is the command line's mistake.
    EXPECT_TRUE(Refused(Run("run fair.scn --no-progress --param rate=fast"), 2, "rate='fast'"));
    // So is a topology spec that does not parse.
    WriteFile(m_dir / "tree.scn", "scenario ib-fat-tree\ntopology fat-tree:k=3\n");
    EXPECT_TRUE(Refused(Run("run tree.scn --no-progress"), 3, "tree.scn:2: topology spec"));
    // An unknown key in the file is the file's, with its line.
    WriteFile(m_dir / "typo.scn", "scenario selftest-timer\n\nparam evnets=3\n");
    EXPECT_TRUE(Refused(Run("run typo.scn"), 3, "typo.scn:3: scenario 'selftest-timer' has no "
                                                "parameter 'evnets'"));
}

TEST_F(CliHardening, HpccConfigValuesOutOfRangeNameFileAndLine)
{
    for (const auto& [config, what] : std::vector<std::pair<std::string, std::string>>{
             {"CC_MODE 1\nEWMA_GAIN -0.5\n", "config.txt:2: EWMA_GAIN '-0.5' is not a number in"},
             {"CC_MODE 1\nKMAX_MAP 1 100000000000 1600\nKMIN_MAP 1 100000000000 400\n"
              "PMAX_MAP 1 100000000000 1.5\n",
              "config.txt:4: PMAX_MAP value '1.5' is not in [0, 1]"},
             {"BUFFER_SIZE -1\n", "config.txt:1: BUFFER_SIZE '-1'"},
             {"PACKET_PAYLOAD_SIZE 0\n", "config.txt:1: PACKET_PAYLOAD_SIZE '0'"},
             {"CC_MODE 1\nMIN_RATE 0Mb/s\n", "config.txt:2: MIN_RATE '0Mb/s' is not a positive"},
             {"CC_MODE 1\nMIN_RATE 0\n", "config.txt:2: MIN_RATE '0' is not a positive"},
             {"CC_MODE 1\nHAS_WIN 2\n", "config.txt:2: HAS_WIN '2' is not a whole number in"},
         })
    {
        EXPECT_TRUE(Refused(RunHpcc(config), 3, what)) << config;
    }
}

TEST_F(CliHardening, HpccConfigUnknownAndDuplicatedKeys)
{
    const std::string ecn = "CC_MODE 1\nKMAX_MAP 1 100000000000 1600\n"
                            "KMIN_MAPP 1 100000000000 400\nPMAX_MAP 1 100000000000 0.2\n";
    EXPECT_TRUE(Refused(RunHpcc(ecn), 3,
                        "config.txt:3: unknown key 'KMIN_MAPP' (did you mean KMIN_MAP?)"));
    // Asked to, Cnuas skips the key with a warning; the maps are then incomplete, which is
    // refused rather than running without ECN.
    EXPECT_TRUE(Refused(RunHpcc(ecn, "--param config-unknown-keys=warn"), 3,
                        "KMAX_MAP is given without KMIN_MAP"));
    CliResult warned = RunHpcc("CC_MODE 1\nFROBNICATE 1\n", "--param config-unknown-keys=warn");
    EXPECT_EQ(warned.status, 0) << warned.err;
    EXPECT_TRUE(Contains(warned.err, "cnuas: warning: ")) << warned.err;
    EXPECT_TRUE(Contains(warned.err, "config.txt:2: unknown key 'FROBNICATE'")) << warned.err;
    EXPECT_TRUE(Refused(RunHpcc("CC_MODE 1\nCC_MODE 3\n"), 3,
                        "config.txt:2: CC_MODE given twice (first at line 1)"));
    // Known to the HPCC simulator, without a Cnuas equivalent: listed, not refused.
    CliResult listed = RunHpcc("CC_MODE 1\nACK_HIGH_PRIO 1\n");
    EXPECT_EQ(listed.status, 0) << listed.err;
    EXPECT_TRUE(std::regex_search(listed.out,
                                  std::regex("config keys without equivalent: +ACK_HIGH_PRIO")))
        << listed.out;
    // A file key is the scenario's option (here --out): not listed.
    CliResult file = RunHpcc("CC_MODE 1\nTRACE_FILE mix/trace.txt\n");
    EXPECT_EQ(file.status, 0) << file.err;
    EXPECT_TRUE(std::regex_search(file.out, std::regex("config keys without equivalent: +-")))
        << file.out;
}

TEST_F(CliHardening, HpccFilesTakeAbsolutePathsAsGiven)
{
    WriteHpccInputs(m_dir / "in");
    WriteFile(m_dir / "in/config.txt", "CC_MODE 1\n");
    const std::string abs = (m_dir / "in").string();
    // All three absolute, and a `dir` that does not exist: it is not needed.
    CliResult r = Run("run roce-hpcc --no-progress --no-plots --param dir=nowhere "
                      "--param topology-file=" + abs + "/topo.txt --param flow-file=" + abs +
                      "/flows.txt --param config-file=" + abs + "/config.txt --param limit=5ms");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("flows done: +1/1"))) << r.out;
    // Relative names are in `dir`, itself relative to the current directory.
    CliResult rel = Run("run roce-hpcc --no-progress --no-plots --param dir=in "
                        "--param topology-file=topo.txt --param flow-file=flows.txt "
                        "--param config-file=config.txt --param limit=5ms");
    EXPECT_EQ(rel.status, 0) << rel.err;
    EXPECT_TRUE(Refused(Run("run roce-hpcc --no-progress --param dir=in "
                            "--param topology-file=topo.txt --param flow-file=" +
                            abs + "/none.txt"),
                        3, abs + "/none.txt: cannot open"));
}

TEST_F(CliHardening, RackFileLinesOfFormFeedsAreBlank)
{
    // A form feed or vertical tab alone used to trim to a non-empty line with no words. The
    // reader must go on to line 4 and refuse it there, before any rack starts.
    WriteFile(m_dir / "x.rack", "\f\n\v\n \f\t\v \nfrobnicate = 1\n");
    EXPECT_TRUE(Refused(Run("rack up --config x.rack --state-dir state"), 3,
                        "x.rack:4: unknown key 'frobnicate'"));
}

TEST(ParseUtil, BlankMeansWhatIsspaceSays)
{
    EXPECT_EQ(TrimSpace("\f\v \t\r\n"), "");
    EXPECT_EQ(TrimSpace("\fa b\v"), "a b");
    EXPECT_TRUE(SplitWords("\f\v").empty());
    EXPECT_EQ(SplitWords(" a\fb\vc\td "), (std::vector<std::string>{"a", "b", "c", "d"}));
    uint64_t bps = 0;
    EXPECT_TRUE(ParseDataRateBps("40Gbps", &bps));
    EXPECT_EQ(bps, 40000000000ULL);
    for (const char* bad : {"-40Gbps", "0Gbps", "fast", "40", "", "1e30Gbps"})
    {
        EXPECT_FALSE(ParseDataRateBps(bad, &bps)) << bad;
    }
}

// ---- silently wrong -------------------------------------------------------------------------

TEST_F(CliHardening, ATimeNeedsItsUnit)
{
    EXPECT_TRUE(Refused(Run("run selftest-timer --set ns3::SimpleChannel::Delay=5"), 2,
                        "expects a time with a unit"));
    EXPECT_TRUE(Refused(Run("run ib-pair --set ns3::IbNetDevice::TrainingTime=5"), 2,
                        "expects a time with a unit"));
    EXPECT_TRUE(Refused(Run("run selftest-timer --param duration=2"), 2,
                        "duration='2' is not a duration with a unit"));
    // Zero is zero in every unit.
    EXPECT_EQ(Run("run selftest-timer --no-progress --param events=1 "
                  "--set ns3::SimpleChannel::Delay=0")
                  .status,
              0);
}

TEST_F(CliHardening, RatesMustBePositiveInSetToo)
{
    // A string attribute's setter may abort on what it cannot parse: tried in a child first.
    EXPECT_TRUE(
        Refused(Run("run selftest-timer --set ns3::RackElectricalModel::EfficiencyCurve=bad"), 2,
                "bad value 'bad' for ns3::RackElectricalModel::EfficiencyCurve"));
    EXPECT_EQ(Run("run selftest-timer --no-progress --param events=1 "
                  "--set 'ns3::RackElectricalModel::EfficiencyCurve=0:0.9;1:0.95'")
                  .status,
              0);
    EXPECT_TRUE(Refused(Run("run selftest-timer --set ns3::SimpleNetDevice::DataRate=0Gbps"), 2,
                        "expects a positive data rate"));
}

TEST_F(CliHardening, AVlCountMustBeOneIbaCanEncode)
{
    // PortInfo.OperationalVLs encodes 1, 2, 4, 8 or 15 data VLs (IBA vol. 1 §14.2.5.6): 3 is
    // refused with the values there are, as --param vls=3 is.
    EXPECT_TRUE(Refused(Run("run ib-pair --set ns3::IbSubnetManager::OperationalVls=3"), 2,
                        "uint8_t, one of 1, 2, 4, 8, 15"));
    EXPECT_TRUE(Refused(Run("run ib-pair --set ns3::IbSubnetManager::OperationalVls=16"), 2,
                        "one of 1, 2, 4, 8, 15"));
    // The scenario's own vls parameter is what sets the SM's OperationalVLs.
    EXPECT_TRUE(Refused(Run("run ib-pair --no-progress --no-plots --param sm=builtin "
                            "--set ns3::IbSubnetManager::OperationalVls=2"),
                        2, "use --param vls"));
    EXPECT_EQ(Run("run ib-pair --no-progress --no-plots --param sm=builtin --param vls=2").status,
              0);
    // The port's VLCap is the same field's encoding.
    EXPECT_TRUE(Refused(Run("run ib-pair --set ns3::IbNetDevice::VlCap=3"), 2,
                        "uint8_t, one of 1, 2, 4, 8, 15"));
    EXPECT_EQ(Run("run ib-pair --no-progress --no-plots --set ns3::IbNetDevice::VlCap=4").status,
              0);
}

TEST_F(CliHardening, AFabricThatNeverCameUpFailsTheRun)
{
    for (const char* sm : {"static", "builtin"})
    {
        CliResult r = Run(std::string("run ib-pair --no-progress --no-plots --param sm=") + sm +
                          " --set ns3::IbNetDevice::TrainingTime=5s");
        EXPECT_EQ(r.status, 1) << sm << "\n" << r.out << r.err;
        EXPECT_TRUE(Contains(r.err, "did not") && Contains(r.err, "up")) << sm << "\n" << r.err;
    }
    CliResult show = Run("fabric show --sm static --topology pair "
                         "--set ns3::IbNetDevice::TrainingTime=1ms");
    EXPECT_TRUE(Refused(show, 1, "did not bring the fabric up"));
}

// ---- one rule for exit statuses -------------------------------------------------------------

TEST_F(CliHardening, SameMistakeSameStatusInEverySubcommand)
{
    WriteFile(m_dir / "bad.topo", "Switch 2 \"sw\"\n[3] \"h0\"[1]\nHca 1 \"h0\"\n");
    // A bad topology file: 3 in `run` and `fabric show` alike.
    EXPECT_TRUE(Refused(Run("run ib-pair --no-progress --topology file:bad.topo"), 3,
                        "bad.topo:2:"));
    EXPECT_TRUE(Refused(Run("fabric show --topology file:bad.topo"), 3, "bad.topo:2:"));
    EXPECT_TRUE(Refused(Run("fabric show --topology file:absent.topo"), 3, "absent.topo"));
    // A bad topology spec on the command line: 2 in both.
    EXPECT_TRUE(Refused(Run("run ib-pair --topology fat-tree:k=3"), 2, "k must be even"));
    EXPECT_TRUE(Refused(Run("fabric show --topology fat-tree:k=3"), 2, "k must be even"));
    // A bad --param and a bad --set: both 2.
    EXPECT_TRUE(Refused(Run("run selftest-timer --param events=lots"), 2, "events='lots'"));
    EXPECT_TRUE(Refused(Run("run selftest-timer --set NoSuchClass::Foo=1"), 2, "NoSuchClass"));
    EXPECT_TRUE(Refused(Run("fabric show --set NoSuchClass::Foo=1"), 2, "NoSuchClass"));
    // A bad scenario file, a bad rack file: 3.
    WriteFile(m_dir / "bad.scn", "scenario selftest-timer\nfrobnicate 1\n");
    EXPECT_TRUE(Refused(Run("run bad.scn"), 3, "bad.scn:2: unknown directive"));
    EXPECT_TRUE(Refused(Run("run absent.scn"), 3, "absent.scn: cannot open"));
    WriteFile(m_dir / "bad.rack", "psu_shelves = lots\n");
    EXPECT_TRUE(Refused(Run("rack up --config bad.rack --state-dir state"), 3, "bad.rack:1:"));
    EXPECT_TRUE(Refused(Run("rack up --shelves lots --state-dir state"), 2, "lots"));
    // A flow-size CDF that is not there: the file the user named, 3.
    EXPECT_TRUE(Refused(Run("run roce-fct --no-progress --param cdf=./absent.cdf"), 3,
                        "cdf: no such file"));
    // A trace that cannot be read: 3; unknown action: 2.
    WriteFile(m_dir / "notapcap.pcap", "hello\n");
    EXPECT_EQ(Run("pcap check notapcap.pcap").status, 3);
    EXPECT_EQ(Run("pcap check absent.pcap").status, 3);
    EXPECT_EQ(Run("pcap frobnicate").status, 2);
}

/// exec and rsh read the same arguments (one parser): a usage mistake is 2 with the reason,
/// before any fabric is looked for; a fabric that is not up is 1.
TEST_F(CliHardening, ExecAndRshRefuseTheSameMistakesAlike)
{
    for (const char* verb : {"exec", "rsh"})
    {
        const std::string v(verb);
        EXPECT_TRUE(Refused(Run(v), 2, "cnuas " + v + ": which host?")) << v;
        EXPECT_TRUE(Refused(Run(v + " --frob h0 true"), 2, "unknown option '--frob'")) << v;
        EXPECT_TRUE(Refused(Run(v + " -x h0 true"), 2, "unknown option '-x'")) << v;
        EXPECT_TRUE(Refused(Run(v + " --name nobody h0"), 2, "no command to run in h0")) << v;
        EXPECT_TRUE(Refused(Run(v + " --name nobody --state-dir state h0 true"), 1,
                            "cnuas " + v + ": fabric 'nobody' is not up"))
            << v;
        EXPECT_EQ(Run(v + " --help").status, 0) << v;
    }
    // exec takes "--" between the host and the command; rsh, as ssh, runs what follows.
    EXPECT_TRUE(Refused(Run("exec --name nobody h0 --"), 2, "no command to run in h0"));
}

TEST(HpccFiles, NegativeNumbersAreRefusedNotWrappedAround)
{
    // `istream >> uint64_t` reads "-1" as 2^64 - 1: an 18 EB flow instead of an error.
    const auto dir = std::filesystem::temp_directory_path() /
                     ("cnuas-hard-hpcc-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    WriteFile(dir / "topo.txt", "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n");
    const HpccTopology t = ReadHpccTopology((dir / "topo.txt").string());
    WriteFile(dir / "flows.txt", "1\n0 1 3 100 -1 2.0\n");
    EXPECT_THROW(ReadHpccFlows((dir / "flows.txt").string(), t, 2.0), InputError);
    WriteFile(dir / "neg.txt", "-3 1 2\n2\n");
    EXPECT_THROW(ReadHpccTopology((dir / "neg.txt").string()), InputError);
    WriteFile(dir / "zero.txt", "3 1 2\n2\n0 2 0Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n");
    EXPECT_THROW(ReadHpccTopology((dir / "zero.txt").string()), InputError);
    std::filesystem::remove_all(dir);
}

TEST_F(CliHardening, AnAttributeTheScenarioSetsItselfIsRefusedWithItsParameter)
{
    // roce-fct builds every switch buffer with its kmin/kmax parameters: a --set default of the
    // same attribute would be overridden without a word, so it is refused, naming the parameter.
    EXPECT_TRUE(Refused(Run("run roce-fct --set ns3::SharedBufferMmu::KmaxBytes=100000"), 2,
                        "use --param kmax"));
    EXPECT_TRUE(Refused(Run("run roce-fct --set SharedBufferMmu::KminBytes=1000"), 2,
                        "use --param kmin"));
    // The same from a scenario file: an input error with the file's line.
    WriteFile(m_dir / "own.scn", "scenario roce-fairness\nset ns3::EthNetDevice::Mtu=9000\n");
    EXPECT_TRUE(Refused(Run("run own.scn"), 3, "own.scn:2"));
    EXPECT_TRUE(Refused(Run("run own.scn"), 3, "sets ns3::EthNetDevice::Mtu itself"));
    // roce-hpcc takes them from its configuration file.
    EXPECT_TRUE(Refused(Run("run roce-hpcc --set ns3::SharedBufferMmu::Pmax=0.5"), 2,
                        "the HPCC configuration file"));
    // Attributes the scenario leaves alone still take effect (the DCQCN preset's G).
    EXPECT_EQ(Run("run roce-fairness --no-progress --no-plots --param limit=100us "
                  "--set ns3::RdmaCcDcqcnPaper::G=0.00390625")
                  .status,
              0);
}
