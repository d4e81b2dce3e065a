// Wire captures end to end (issue 15): every scenario honours `cnuas run --pcap`, the traces
// pass `cnuas pcap check` and decode in tshark, InfiniBand traces start at time zero (the subnet
// manager's sweep is in them), and `cnuas rack up --pcap` writes the RS-485 bus as Modbus RTU.
#include "cli-run.h"
#include "ib-test-packets.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace cnuas_test;

namespace
{


std::string
FreshDir(const std::string& name)
{
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/cli-pcap-" + name +
                            "-" + std::to_string(getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

/// Every .pcap file under `dir`, sorted.
std::vector<std::string>
PcapsUnder(const std::string& dir)
{
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    {
        if (e.is_regular_file() && e.path().extension() == ".pcap")
        {
            files.push_back(e.path().string());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

bool
HaveTshark()
{
    return system("command -v tshark >/dev/null 2>&1") == 0;
}

/// Frames tshark flags as malformed or with an error-level expert item.
size_t
TsharkBadFrames(const std::string& path, const std::string& options = "")
{
    int status = -1;
    const auto bad = TsharkFieldRows(path, {"frame.number"},
                                     options +
                                         " -Y '_ws.malformed || _ws.expert.severity >= error'",
                                     &status);
    EXPECT_EQ(status, 0) << path;
    return bad.size();
}

/// `cnuas pcap check` on every file: its output; `status` gets its exit status.
std::string
PcapCheck(const std::vector<std::string>& files, int* status)
{
    std::string cmd = kCnuas + " pcap check";
    for (const auto& f : files)
    {
        cmd += " '" + f + "'";
    }
    return RunCommand(cmd + " 2>&1", status);
}

struct ScenarioRun
{
    std::string name;
    std::string params;
};

} // namespace

// Issue 15, item 1: the roce-* scenarios and ib-cc-incast took --pcap and wrote nothing. Each
// now writes its wire (Ethernet for RoCE, ERF for InfiniBand), lists the files, and every
// file passes `cnuas pcap check` (item 2: the RoCE frames carry real ICRCs).
TEST(CliPcap, EveryNetworkScenarioWritesItsWireAndItChecksClean)
{
    const std::vector<ScenarioRun> runs = {
        {"roce-fairness", "--param flows=2 --param bytes=20000 --param stagger=5us "
                          "--param limit=2ms"},
        {"roce-incast", "--param senders=2 --param modes=pfc,dcqcn --param bytes=20000 "
                        "--param limit=2ms"},
        {"roce-collapse", "--param loads=0.2 --param configs=consistent --param arrivals=20us "
                          "--param max-flow-bytes=20000 --param limit=2ms --param pcap-hosts=0,5"},
        {"roce-fct", "--param topology=star:hosts=4 --param pattern=incast --param senders=3 "
                     "--param duration=500us --param load=0.5 --param max-flows=6 --param limit=5ms"},
        // The first four flows of ws30_5ms.txt: 13 -> 293, 9 -> 139, 15 -> 32, 127 -> 257.
        {"roce-hpcc", "--param max-flows=4 --param limit=3ms --param pcap-hosts=15,32,127,257"},
        {"ib-cc-incast", "--param duration-us=50 --param senders=1"},
        {"ib-fct", "--param topology=star:hosts=4 --param pattern=incast --param senders=3 "
                   "--param duration=100us --param load=0.5 --param max-flows=6 --param limit=5ms"},
        {"ib-pair", "--param duration-us=1"},
        {"rdma-pingpong", "--param iterations=3"},
    };
    const std::string base = FreshDir("scenarios");
    for (const ScenarioRun& r : runs)
    {
        SCOPED_TRACE(r.name);
        const std::string pcapDir = base + "/" + r.name + "/pcap";
        int status = -1;
        const std::string out =
            RunCommand("cd '" + base + "' && " + kCnuas + " run " + r.name + " " + r.params +
                           " --pcap '" + pcapDir + "' --out '" + base + "/" + r.name +
                           "/out' --no-progress --no-plots 2>&1",
                       &status);
        if (r.name == "roce-hpcc" && out.find("dir: ") != std::string::npos &&
            out.find("hpcc-compat") != std::string::npos && status != 0)
        {
            continue; // the HPCC inputs are not installed here (DataDirectory tests cover it)
        }
        ASSERT_EQ(status, 0) << out;
        const std::vector<std::string> files = PcapsUnder(pcapDir);
        ASSERT_FALSE(files.empty()) << out;
        for (const std::string& f : files)
        {
            // Each file written is listed with the run's artifacts.
            EXPECT_NE(out.find(f), std::string::npos) << f << " not listed in\n" << out;
        }
        const std::string check = PcapCheck(files, &status);
        EXPECT_EQ(status, 0) << check;
        // Traffic in the traces (a host without flows may have an empty one) and CRCs checked.
        size_t empty = 0;
        for (size_t at = check.find(": 0 packets"); at != std::string::npos;
             at = check.find(": 0 packets", at + 1))
        {
            ++empty;
        }
        EXPECT_LT(empty, files.size()) << check;
        EXPECT_NE(check.find("all CRCs good"), std::string::npos) << check;
        if (HaveTshark())
        {
            for (const std::string& f : files)
            {
                if (f.find("flow-control") != std::string::npos)
                {
                    continue; // Wireshark 4.0 misparses ERF type 25 (pcaps/README.md)
                }
                EXPECT_EQ(TsharkBadFrames(f), 0u) << f;
            }
        }
    }
    // Several runs of one scenario go to one subfolder each, none overwriting another.
    EXPECT_TRUE(std::filesystem::exists(base + "/roce-incast/pcap/pfc-n2/h0.pcap"));
    EXPECT_TRUE(std::filesystem::exists(base + "/roce-incast/pcap/dcqcn-n2/h0.pcap"));
    // pcap-hosts picks the traced hosts.
    EXPECT_EQ(PcapsUnder(base + "/roce-collapse/pcap").size(), 2u);
}

TEST(CliPcap, PcapHostsOutsideTheFabricIsAUsageError)
{
    const std::string dir = FreshDir("bad-hosts");
    int status = -1;
    const std::string out = RunCommand(
        "cd '" + dir + "' && " + kCnuas +
            " run roce-fairness --param flows=2 --param bytes=2000 --param pcap-hosts=9 "
            "--pcap p --out o --no-progress --no-plots 2>&1",
        &status);
    EXPECT_EQ(status, 2) << out;
    EXPECT_NE(out.find("pcap host 9 does not exist"), std::string::npos) << out;
    const std::string bad = RunCommand(
        "cd '" + dir + "' && " + kCnuas +
            " run roce-fairness --param pcap-hosts=first --pcap p --out o --no-progress 2>&1",
        &status);
    EXPECT_EQ(status, 2) << bad;
}

// Issue 15, item 3: the built-in subnet manager's sweep happens before the traffic; the trace
// began after it, so no SMP was ever in a `cnuas run --pcap` trace. It starts at time zero now.
TEST(CliPcap, InfinibandTraceStartsAtTimeZeroWithTheSmSweep)
{
    if (!HaveTshark())
    {
        GTEST_SKIP() << "tshark not installed";
    }
    const std::string dir = FreshDir("sm-sweep");
    int status = -1;
    const std::string out = RunCommand("cd '" + dir + "' && " + kCnuas +
                                           " run ib-pair --param duration-us=1 --pcap p --out o "
                                           "--no-progress --no-plots 2>&1",
                                       &status);
    ASSERT_EQ(status, 0) << out;
    // Directed-route SMPs (management class 0x81) from the SM on h0, and their answers.
    const auto smps = TsharkFieldRows(dir + "/p/h0.pcap",
                                      {"frame.number", "infiniband.smpdirected.hopcount"},
                                      "-Y infiniband.smpdirected.hopcount", &status);
    EXPECT_EQ(status, 0);
    EXPECT_GT(smps.size(), 4u) << "no SMPs in the trace: the capture started after bring-up";
    // The sweep comes first: the first record is an SMP.
    const auto first = TsharkFieldRows(dir + "/p/h0.pcap", {"infiniband.smpdirected.hopcount"},
                                       "-c 1", &status);
    ASSERT_FALSE(first.empty());
    EXPECT_NE(first[0][0], "") << "the first packet of the trace is not an SMP";
    EXPECT_EQ(TsharkBadFrames(dir + "/p/h0.pcap"), 0u);
    PcapCheck({dir + "/p/h0.pcap", dir + "/p/h1.pcap"}, &status);
    EXPECT_EQ(status, 0);
}

// Issue 15, item 4: `cnuas rack up --pcap` writes the bus as Modbus RTU (link type 252), which
// `cnuas pcap check` validates frame by frame (it refused the link type before).
TEST(CliPcap, RackUpWritesTheBusAndPcapCheckValidatesIt)
{
    const std::string dir = FreshDir("rack");
    int status = -1;
    const std::string out = RunCommand("timeout 30 " + kCnuas + " rack up --state-dir '" + dir +
                                           "/state' --duration 1.5 --pcap '" + dir +
                                           "/caps' 2>&1",
                                       &status);
    ASSERT_EQ(status, 0) << out;
    const std::string pcap = dir + "/caps/rs485-bus.pcap";
    EXPECT_NE(out.find("pcap:      " + pcap), std::string::npos) << out;
    ASSERT_TRUE(std::filesystem::exists(pcap)) << out;
    const std::string check = PcapCheck({pcap}, &status);
    EXPECT_EQ(status, 0) << check;
    EXPECT_NE(check.find("(252)"), std::string::npos) << check;
    EXPECT_EQ(check.find(": 0 packets"), std::string::npos) << check;
    EXPECT_NE(check.find("all CRCs good"), std::string::npos) << check;
    EXPECT_EQ(check.find("unsupported"), std::string::npos) << check;
    if (HaveTshark())
    {
        EXPECT_EQ(TsharkBadFrames(pcap, "-o mbrtu.crc_verification:TRUE -o mbrtu.tcp.port:502"),
                  0u);
        const auto frames =
            TsharkFieldRows(pcap, {"mbrtu.unit_id"}, "-o mbrtu.tcp.port:502 -Y mbrtu", &status);
        EXPECT_GT(frames.size(), 3u) << "the BMC's start-up scan is not in the trace";
    }
    // A file name ending in .pcap is the file itself.
    const std::string again = RunCommand("timeout 30 " + kCnuas + " rack up --state-dir '" +
                                             dir + "/state' --duration 0.5 --pcap '" + dir +
                                             "/bus.pcap' 2>&1",
                                         &status);
    ASSERT_EQ(status, 0) << again;
    PcapCheck({dir + "/bus.pcap"}, &status);
    EXPECT_EQ(status, 0);
}
