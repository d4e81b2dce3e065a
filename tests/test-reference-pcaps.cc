// Reproducibility: the same scenario with the same seed writes byte-identical traces, equal to
// the reference traces kept in pcaps/.
#include "ib-test-packets.h"

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

/// Runs a command quietly; its exit status.
int
RunQuietly(const std::string& cmd)
{
    int status = -1;
    cnuas_test::RunCommand(cmd + " >/dev/null 2>&1", &status);
    return status;
}

/// Every built-in scenario's reference trace and the arguments that made it (pcaps/README.md).
struct Reference
{
    const char* scenario;
    const char* args;
};

// sm=static: the references are data-path traces, recorded before the built-in SM existed
// (its SMPs would come first in h0's trace and move every later timestamp).
const Reference kReferences[] = {
    {"ib-pair", " --param duration-us=1 --param sm=static"
                " --set ns3::IbNetDevice::TxQueuePackets=4"},
    {"ib-incast", " --param duration-us=0.2 --param payload=256 --param sm=static"
                  " --set ns3::IbNetDevice::TxQueuePackets=2"},
    {"ib-fat-tree", " --param duration-us=0.2 --param payload=256 --param sm=static"
                    " --set ns3::IbNetDevice::TxQueuePackets=2"},
};
} // namespace

TEST(ReferencePcaps, EveryScenarioMatchesItsReferenceByteForByte)
{
    const std::string cnuas = std::string(CNUAS_BINARY_DIR) + "/bin/cnuas";
    for (const Reference& ref : kReferences)
    {
        const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-out/ref-" + ref.scenario;
        const std::string refDir = std::string(CNUAS_SOURCE_DIR) + "/pcaps/" + ref.scenario;
        std::filesystem::remove_all(dir);
        const std::string base = cnuas + " run " + ref.scenario + ref.args +
                                 " --no-progress --no-plots --pcap " + dir;
        ASSERT_EQ(RunQuietly(base + "/a --out " + dir + "/out-a"), 0) << ref.scenario;
        ASSERT_EQ(RunQuietly(base + "/b --out " + dir + "/out-b"), 0) << ref.scenario;
        size_t compared = 0;
        for (const auto& entry : std::filesystem::directory_iterator(refDir))
        {
            if (entry.path().extension() != ".pcap")
            {
                continue;
            }
            const std::string name = entry.path().filename().string();
            auto a = ReadAll(dir + "/a/" + name);
            auto b = ReadAll(dir + "/b/" + name);
            auto expected = ReadAll(entry.path().string());
            ASSERT_GT(a.size(), 24u + 16 + 16 + 6) << name << ": no record in the trace";
            EXPECT_TRUE(a == b) << ref.scenario << "/" << name
                                << ": two runs with the same seed differ";
            EXPECT_TRUE(a == expected)
                << ref.scenario << "/" << name << " differs from pcaps/" << ref.scenario << "/"
                << name << " (regenerate it with the command in pcaps/README.md if the model "
                << "change is intended)";
            compared++;
        }
        EXPECT_GE(compared, 3u) << ref.scenario;
        // Every trace the run wrote has a reference: none is forgotten.
        size_t written = 0;
        for (const auto& entry : std::filesystem::directory_iterator(dir + "/a"))
        {
            written += entry.path().extension() == ".pcap";
        }
        EXPECT_EQ(written, compared) << ref.scenario;
    }
}

namespace
{
/// Runs a command; its standard output and error together.
std::string
Capture(const std::string& cmd, int* status)
{
    return cnuas_test::RunCommand(cmd + " 2>&1", status);
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
