// Reproducibility: the same scenario with the same seed writes byte-identical traces, equal to
// the reference traces kept in pcaps/.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace
{
std::vector<char>
ReadAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

int
RunCommand(const std::string& cmd)
{
    int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

const std::string kPairArgs =
    " run ib-pair --param duration-us=1 --set ns3::IbNetDevice::TxQueuePackets=4 --no-progress "
    "--no-plots";
} // namespace

TEST(ReferencePcaps, IbPairMatchesReferenceByteForByte)
{
    const std::string cnuas = std::string(CNUAS_BINARY_DIR) + "/bin/cnuas";
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-out/ref-ib-pair";
    std::filesystem::remove_all(dir);
    ASSERT_EQ(RunCommand(cnuas + kPairArgs + " --pcap " + dir + "/a --out " + dir + "/out-a"), 0);
    ASSERT_EQ(RunCommand(cnuas + kPairArgs + " --pcap " + dir + "/b --out " + dir + "/out-b"), 0);
    for (const char* host : {"h0", "h1", "h0-flow-control"})
    {
        auto a = ReadAll(dir + "/a/" + host + ".pcap");
        auto b = ReadAll(dir + "/b/" + host + ".pcap");
        auto ref = ReadAll(std::string(CNUAS_SOURCE_DIR) + "/pcaps/ib-pair/" + host + ".pcap");
        ASSERT_GT(a.size(), 24u + 16 + 16 + 6) << host << ": no record in the trace";
        EXPECT_TRUE(a == b) << host << ": two runs with the same seed differ";
        EXPECT_TRUE(a == ref) << host << ": differs from pcaps/ib-pair/" << host
                              << ".pcap (regenerate it with the command in pcaps/README.md "
                                 "if the model change is intended)";
    }
}

namespace
{
std::string
Capture(const std::string& cmd, int* status)
{
    std::string out;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p)
    {
        *status = -1;
        return out;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    {
        out.append(buf, n);
    }
    int rc = pclose(p);
    *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return out;
}
} // namespace

// The scenario's trace as Wireshark sees it: LRH fields decoded, nothing malformed; and every
// CRC right by `cnuas pcap check`.
TEST(ReferencePcaps, TsharkDecodesLrhAndCnuasChecksEveryCrc)
{
    const std::string trace = std::string(CNUAS_SOURCE_DIR) + "/pcaps/ib-pair/h0.pcap";
    int status = 0;
    std::string fields = Capture("tshark -r " + trace +
                                     " -T fields -e infiniband.lrh.slid -e infiniband.lrh.dlid"
                                     " -e infiniband.lrh.lnh -e infiniband.bth.opcode",
                                 &status);
    ASSERT_EQ(status, 0) << "tshark is required: " << fields;
    size_t lines = 0;
    std::istringstream in(fields);
    std::string line;
    while (std::getline(in, line))
    {
        if (line.find("Running as user") != std::string::npos || line.empty())
        {
            continue;
        }
        EXPECT_EQ(line, "1\t2\t0x02\t100") << "LRH SLID 1, DLID 2, LNH 2 (BTH next), UD SEND Only";
        lines++;
    }
    EXPECT_GE(lines, 10u);
    std::string expert = Capture("tshark -r " + trace + " -q -z expert,error", &status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(expert.find("Malformed"), std::string::npos) << expert;
    std::string check =
        Capture(std::string(CNUAS_BINARY_DIR) + "/bin/cnuas pcap check " + trace, &status);
    EXPECT_EQ(status, 0) << check;
}

// A scenario file with a topology file in ibnetdiscover format runs end to end.
TEST(ReferencePcaps, ScenarioFileWithTopologyFileRuns)
{
    int status = 0;
    std::string out = Capture(std::string(CNUAS_BINARY_DIR) + "/bin/cnuas run " +
                                  CNUAS_SOURCE_DIR + "/examples/scenarios/two-leaf-incast.scn" +
                                  " --no-progress --no-plots --out " + CNUAS_BINARY_DIR +
                                  "/test-out/two-leaf",
                              &status);
    EXPECT_EQ(status, 0) << out;
    EXPECT_NE(out.find("8 hosts, 4 switches"), std::string::npos) << out;
    EXPECT_NE(out.find(" 0 dropped"), std::string::npos) << out;
}
