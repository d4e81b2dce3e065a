// Reproducibility: the same scenario with the same seed writes byte-identical traces, equal to
// the reference traces kept in pcaps/.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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
    for (const char* host : {"h0", "h1"})
    {
        auto a = ReadAll(dir + "/a/" + host + ".pcap");
        auto b = ReadAll(dir + "/b/" + host + ".pcap");
        auto ref = ReadAll(std::string(CNUAS_SOURCE_DIR) + "/pcaps/ib-pair/" + host + ".pcap");
        ASSERT_GT(a.size(), 1000u) << host;
        EXPECT_TRUE(a == b) << host << ": two runs with the same seed differ";
        EXPECT_TRUE(a == ref) << host << ": differs from pcaps/ib-pair/" << host
                              << ".pcap (regenerate it with the command in pcaps/README.md "
                                 "if the model change is intended)";
    }
}
