// The rdma-* scenarios of `cnuas run`: ping-pong summary, RTT CSV and pcap (tshark decodes it,
// one record per expected transport packet); incast goodput against the link's capacity for
// the message's packets worked out here; FCT CSV (every message once, never faster than the
// ideal, the fastest within the credit-update turnarounds of it), the plot script, and bad
// CDF files and parameters refused with their reason by the command.
#include "ib-test-packets.h"

#include "helpers/rdma/rdma-traffic-run.h"
#include "helpers/scenario/scenario.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace ns3;
using namespace cnuas_test;

namespace
{

std::string
TmpDir(const std::string& name)
{
    const std::string d = std::string(CNUAS_BINARY_DIR) + "/test-rdma-scenarios/" + name;
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
}

ScenarioResult
RunNamed(const std::string& name, std::map<std::string, std::string> params,
         const std::string& outDir, const std::string& pcapDir = "")
{
    ScenarioOptions o;
    o.name = name;
    o.params = std::move(params);
    o.outDir = outDir;
    o.pcapDir = pcapDir;
    o.progress = false;
    o.plots = false;
    return ScenarioRegistry::Find(name)->run(o);
}

std::string
Summary(const ScenarioResult& r, const std::string& key)
{
    for (const auto& [k, v] : r.summary)
    {
        if (k == key)
        {
            return v;
        }
    }
    return "";
}

std::vector<std::vector<std::string>>
ReadCsv(const std::string& path)
{
    std::vector<std::vector<std::string>> rows;
    std::ifstream in(path);
    std::string line;
    std::getline(in, line); // header
    while (std::getline(in, line))
    {
        if (line.empty() || line[0] == '#')
        {
            continue;
        }
        std::vector<std::string> cols;
        std::stringstream ss(line);
        std::string c;
        while (std::getline(ss, c, ','))
        {
            cols.push_back(c);
        }
        rows.push_back(cols);
    }
    return rows;
}

} // namespace

TEST(RdmaAppsScenarios, PingPongWritesRttsAndADecodablePcap)
{
    const std::string out = TmpDir("pingpong");
    const ScenarioResult r = RunNamed("rdma-pingpong", {{"iterations", "10"}, {"size", "100"}},
                                      out, out + "/pcap");
    EXPECT_EQ(r.exitCode, 0);
    EXPECT_NE(Summary(r, "round trip").find("first "), std::string::npos);
    const auto rows = ReadCsv(out + "/rtt.csv");
    ASSERT_EQ(rows.size(), 10u);
    // h0's port trace holds what it sent and what it received: 10 pings and the ACKs of the
    // 10 pongs out, 10 pongs and the ACKs of the 10 pings in, all RC SEND Only (0x04) or
    // Acknowledge (0x11), each decoded by Wireshark's InfiniBand dissector without errors.
    const std::string pcap = out + "/pcap/h0.pcap";
    int st = -1;
    const auto pkts = TsharkFieldRows(pcap, {"infiniband.bth.opcode", "infiniband.bth.destqp"},
                                      "--disable-protocol rpcordma", &st);
    ASSERT_EQ(st, 0);
    ASSERT_EQ(pkts.size(), 40u);
    int sends = 0, acks = 0;
    for (const auto& p : pkts)
    {
        sends += p[0] == "4";
        acks += p[0] == "17";
    }
    EXPECT_EQ(sends, 20);
    EXPECT_EQ(acks, 20);
    const std::string expert =
        RunCommand("tshark -r '" + pcap + "' --disable-protocol rpcordma -q -z expert,error "
                   "2>&1");
    EXPECT_EQ(expert.find("Malformed"), std::string::npos) << expert;
    EXPECT_EQ(expert.find("Error"), std::string::npos) << expert;
}

TEST(RdmaAppsScenarios, IncastGoodputIsTheLinkCapacityForItsPackets)
{
    const std::string out = TmpDir("incast");
    const ScenarioResult r = RunNamed("rdma-incast", {{"size", "65536"}}, out);
    ASSERT_EQ(r.exitCode, 0);
    const std::string g = Summary(r, "goodput into the last host");
    const double gbps = std::stod(g);
    // A 64 KiB WRITE at MTU 4096 is 16 packets of 4096 payload bytes: LRH 8 + BTH 12 (+ RETH
    // 16 on the first) + 4096 + ICRC 4 + VCRC 2 + 2 delimiters, 4 bytes a column of 160 ps.
    const double first = std::ceil((8 + 12 + 16 + 4096 + 4 + 2 + 2) / 4.0) * 160e-12;
    const double other = std::ceil((8 + 12 + 4096 + 4 + 2 + 2) / 4.0) * 160e-12;
    const double capacity = 65536 * 8 / (first + 15 * other) / 1e9;
    EXPECT_LE(gbps, capacity) << g;
    // Eight senders with four messages each keep the hot link busy from the first round trip
    // on (the window includes that start).
    EXPECT_GE(gbps, 0.9 * capacity) << g;
    // Eight senders listed, their goodputs adding up to the hot spot's; credit flow control and
    // the switch's round robin share the link equally (Jain's index 1 for equal shares).
    double sum = 0;
    int senders = 0;
    for (const auto& [k, v] : r.summary)
    {
        if (k.rfind("sender h", 0) == 0)
        {
            senders++;
            sum += std::stod(v);
            EXPECT_NE(k.find(" -> h8"), std::string::npos) << k;
        }
    }
    EXPECT_EQ(senders, 8);
    EXPECT_NEAR(sum, gbps, 0.01 * 8);
    EXPECT_GE(std::stod(Summary(r, "fairness (Jain's index)")), 0.99);
}

TEST(RdmaAppsScenarios, UnreliableGoodputIsCountedAtTheReceiver)
{
    // UC sends complete when handed to the port, so the fabric's buffers could make a sender-side
    // count exceed the link; what the receiver completes cannot. A 4096-byte UC SEND Only is
    // LRH 8 + BTH 12 + 4096 + ICRC 4 + VCRC 2 + 2 delimiters = 4124 bytes, 1031 columns.
    const std::string out = TmpDir("incast-uc");
    const ScenarioResult r =
        RunNamed("rdma-incast", {{"qp", "uc"}, {"op", "send"}, {"size", "4096"}}, out);
    ASSERT_EQ(r.exitCode, 0);
    const double gbps = std::stod(Summary(r, "goodput into the last host"));
    const double capacity = 4096 * 8 / (1031 * 160e-12) / 1e9;
    EXPECT_LE(gbps, capacity);
    EXPECT_GE(gbps, 0.9 * capacity);
    Simulator::Destroy();
    // A UC WRITE's arrival is invisible to applications: refused rather than mis-measured.
    EXPECT_THROW(RunNamed("rdma-incast", {{"qp", "uc"}, {"op", "write"}}, out),
                 std::invalid_argument);
    Simulator::Destroy();
}

TEST(RdmaAppsScenarios, FctCsvHasEveryMessageOnceAndNoneBeatsTheIdeal)
{
    const std::string out = TmpDir("fct");
    // Small flows (the FB_Hadoop CDF) at 10 % load on the default k=4 fat-tree for 300 us.
    const ScenarioResult r = RunNamed(
        "rdma-fct",
        {{"cdf", std::string(CNUAS_SOURCE_DIR) + "/data/cdf/fb-hadoop.cdf"},
         {"load", "0.1"},
         {"duration-us", "300"},
         {"qps-per-pair", "2"}},
        out);
    ASSERT_EQ(r.exitCode, 0) << Summary(r, "messages");
    EXPECT_EQ(Summary(r, "connections"), "480 QP pairs"); // 16 x 15 pairs, 2 QPs each
    const auto rows = ReadCsv(out + "/fct.csv");
    ASSERT_GT(rows.size(), 50u);
    std::set<std::string> ids;
    double minExcess = 1e18;
    for (const auto& c : rows)
    {
        ASSERT_EQ(c.size(), 12u);
        ids.insert(c[0]);
        EXPECT_NE(c[1], c[2]) << "source is destination";
        const double fct = std::stod(c[8]);
        const double ideal = std::stod(c[9]);
        EXPECT_NEAR(std::stod(c[7]) - std::stod(c[6]), fct, 1e-3);
        EXPECT_NEAR(std::stod(c[10]), fct / ideal, 1e-3 + 1e-4 * fct / ideal);
        EXPECT_GE(fct, ideal) << "message " << c[0];
        minExcess = std::min(minExcess, fct - ideal);
        EXPECT_EQ(c[11], "success");
    }
    EXPECT_EQ(ids.size(), rows.size());
    // The luckiest message finds its path idle: it loses only the two credit-update
    // turnarounds (0.32 ns each) the ideal leaves out.
    EXPECT_LE(minExcess, 0.641);
    EXPECT_NE(Summary(r, "messages").find(std::to_string(rows.size()) + " completed"),
              std::string::npos)
        << Summary(r, "messages");

    // The plot script reads the CSV: its table counts every message once.
    int st = -1;
    const std::string table =
        RunCommand(std::string(CNUAS_PYTHON) + " " + CNUAS_SOURCE_DIR + "/tools/plot/plot-fct.py " +
                       out + "/fct.csv " + out + "/fct.png t",
                   &st);
    ASSERT_EQ(st, 0) << table;
    EXPECT_TRUE(std::filesystem::exists(out + "/fct.png"));
    std::istringstream lines(table);
    std::string line;
    std::getline(lines, line);
    EXPECT_EQ(line, "bucket,messages,p50,p95,p99");
    size_t counted = 0;
    while (std::getline(lines, line))
    {
        counted += std::stoul(line.substr(line.find(',') + 1));
    }
    EXPECT_EQ(counted, rows.size());
}

TEST(RdmaAppsScenarios, BadCdfFileAndBadParametersAreRefusedWithTheReason)
{
    const std::string out = TmpDir("bad");
    std::ofstream(out + "/bad.cdf") << "0 0\n100 0.7\n50 1\n";
    try
    {
        RunNamed("rdma-fct", {{"cdf", out + "/bad.cdf"}}, out);
        FAIL() << "a bad CDF was accepted";
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_NE(std::string(e.what()).find("bad.cdf:3: sizes must not decrease"),
                  std::string::npos)
            << e.what();
    }
    Simulator::Destroy();
    EXPECT_THROW(RunNamed("rdma-fct", {{"load", "1.5"}}, out), std::invalid_argument);
    Simulator::Destroy();
    EXPECT_THROW(RunNamed("rdma-fct", {{"qp", "ud"}, {"op", "send"}}, out),
                 std::invalid_argument);
    EXPECT_THROW(RunNamed("rdma-fct", {{"op", "read"}}, out), std::invalid_argument);
    EXPECT_THROW(RunNamed("rdma-fct", {{"qps-per-pair", "0"}}, out), std::invalid_argument);
    EXPECT_THROW(RunNamed("rdma-pingpong", {{"op", "read"}}, out), std::invalid_argument);
    EXPECT_THROW(RunNamed("rdma-incast", {{"qp", "xrc"}}, out), std::invalid_argument);
    EXPECT_THROW(RunNamed("rdma-incast", {{"mtu", "1500"}}, out), std::invalid_argument);
    EXPECT_THROW(RunNamed("rdma-incast", {{"senders", "9"}}, out), std::invalid_argument);
    Simulator::Destroy();
    EXPECT_THROW(RunNamed("rdma-incast", {{"no-such-key", "1"}}, out), std::invalid_argument);

    // Through the command: the message and a non-zero exit status.
    int st = 0;
    const std::string cmd = std::string(CNUAS_BINARY_DIR) + "/bin/cnuas run rdma-fct " +
                            "--no-progress --out " + out + "/cli --param cdf=" + out +
                            "/bad.cdf 2>&1";
    const std::string msg = RunCommand(cmd, &st);
    EXPECT_NE(st, 0);
    EXPECT_NE(msg.find("sizes must not decrease"), std::string::npos) << msg;
}
