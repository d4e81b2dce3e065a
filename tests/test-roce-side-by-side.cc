// validation/roce/hpcc-side-by-side.sh (issue 17): the script that runs Cnuas and HPCC's reference
// simulator together. The reference itself is not built here (half an hour); a stand-in takes its
// place at HPCC_SIM_DIR/build/scratch/third: it checks the config the script wrote for it (every
// file an absolute path that exists), runs Cnuas on that config and writes the FCT file where the
// config says. The report must then find no difference at all between the two, which a script
// that fed the two simulators different inputs, or compared the wrong files, would not.
#include "cli-run.h"
#include "emu-test-util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace
{
using cnuas_emu_test::Sh;
using cnuas_emu_test::ShResult;

const std::string kData = std::string(CNUAS_SOURCE_DIR) + "/../shared/data/hpcc-compat";
const std::string kScript =
    std::string(CNUAS_SOURCE_DIR) + "/validation/roce/hpcc-side-by-side.sh";

class RoceSideBySide : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        if (!std::ifstream(kData + "/fat.txt").good())
        {
            GTEST_SKIP() << kData << " not present";
        }
        m_dir = std::filesystem::path(CNUAS_BINARY_DIR) / "test-output" / "side-by-side" /
                ::testing::UnitTest::GetInstance()->current_test_info()->name();
        std::filesystem::remove_all(m_dir);
        std::filesystem::create_directories(m_dir / "sim" / "build" / "scratch");
        std::filesystem::create_directories(m_dir / "sim" / "mix");
        std::ofstream(m_dir / "sim" / "mix" / "trace.txt") << "0\n";
    }

    /// Puts a stand-in for the reference simulator in place; `exitStatus` non-zero makes it fail
    /// after checking its config.
    void WriteStandIn(int exitStatus = 0)
    {
        const auto third = m_dir / "sim" / "build" / "scratch" / "third";
        std::ofstream(third)
            << "#!/bin/sh\n"
               "set -e\n"
               "cfg=\"$1\"\n"
               "get() { awk -v k=\"$1\" '$1 == k { print $2 }' \"$cfg\"; }\n"
               "for k in TOPOLOGY_FILE FLOW_FILE TRACE_FILE FCT_OUTPUT_FILE PFC_OUTPUT_FILE; do\n"
               "  v=$(get $k)\n"
               "  case \"$v\" in /*) ;; *) echo \"$k is not absolute: $v\"; exit 3 ;; esac\n"
               "done\n"
               "for k in TOPOLOGY_FILE FLOW_FILE TRACE_FILE; do\n"
               "  [ -f \"$(get $k)\" ] || { echo \"$k does not exist\"; exit 4; }\n"
               "done\n"
               "[ \""
            << exitStatus
            << "\" = 0 ] || exit "
            << exitStatus
            << "\n"
               "out=$(dirname \"$(get FCT_OUTPUT_FILE)\")/stand-in\n"
               "\"$CNUAS\" run roce-hpcc --no-progress --out \"$out\" "
               "--param topology-file=\"$(get TOPOLOGY_FILE)\" "
               "--param flow-file=\"$(get FLOW_FILE)\" --param config-file=\"$cfg\"\n"
               "cp \"$out/fct.txt\" \"$(get FCT_OUTPUT_FILE)\"\n";
        std::filesystem::permissions(third, std::filesystem::perms::owner_all);
    }

    ShResult Run(const std::string& args, const std::string& env = "")
    {
        return Sh("env CNUAS='" + kCnuas + "' OUT='" + (m_dir / "out").string() + "' " + env +
                  " '" + kScript + "' " + args);
    }

    std::filesystem::path m_dir;
};

TEST_F(RoceSideBySide, ReportsNoDifferenceAgainstAStandInThatRunsTheSameInputs)
{
    WriteStandIn();
    ShResult r = Run("'" + (m_dir / "sim").string() + "' ws-dcqcn", "MAX_FLOWS=12");
    ASSERT_EQ(r.exit, 0) << r.out;
    const auto res = m_dir / "out" / "side-by-side";
    const std::string summary = ReadFile(res / "summary.md");
    EXPECT_NE(summary.find("| ws-dcqcn | 1 | 0/1 |"), std::string::npos) << summary;
    EXPECT_NE(summary.find("12/12"), std::string::npos) << "every flow done: " << summary;
    // Both ran the same 12 flows on the same config: the same FCT for every flow.
    const std::string table = ReadFile(res / "fct-compare.txt");
    EXPECT_NE(table.find("largest difference: 0.0 %"), std::string::npos) << table;
    EXPECT_NE(table.find("| <10KB | "), std::string::npos) << table;
    EXPECT_GT(std::filesystem::file_size(res / "speed.png"), 1000u);
    EXPECT_GT(std::filesystem::file_size(res / "fct-compare.png"), 1000u);
    // The flow file both read holds exactly the first 12 flows.
    const std::string flows = ReadFile(res / "ws-dcqcn" / "round1" / "flows.txt");
    EXPECT_EQ(flows.substr(0, 3), "12\n");
    EXPECT_EQ(cnuas_emu_test::CountLines(flows), 13);
}

TEST_F(RoceSideBySide, AFailingReferenceFailsTheRunWithItsName)
{
    WriteStandIn(7);
    ShResult r = Run("'" + (m_dir / "sim").string() + "' ws-hpcc", "MAX_FLOWS=5");
    EXPECT_NE(r.exit, 0) << r.out;
    EXPECT_NE(r.out.find("the reference failed on ws-hpcc"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(m_dir / "out" / "side-by-side" / "summary.md"));
}

TEST_F(RoceSideBySide, BadArgumentsAreClearErrors)
{
    ShResult r = Run("");
    EXPECT_EQ(r.exit, 2) << r.out;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
    r = Run("'" + (m_dir / "nowhere").string() + "'");
    EXPECT_EQ(r.exit, 2);
    EXPECT_NE(r.out.find("no such directory"), std::string::npos) << r.out;
    r = Run("'" + (m_dir / "sim").string() + "'"); // no build/scratch/third yet
    EXPECT_EQ(r.exit, 2);
    EXPECT_NE(r.out.find("build the reference first"), std::string::npos) << r.out;
    WriteStandIn();
    r = Run("'" + (m_dir / "sim").string() + "' ws-tcp");
    EXPECT_EQ(r.exit, 2);
    EXPECT_NE(r.out.find("unknown case 'ws-tcp'"), std::string::npos) << r.out;
    r = Run("'" + (m_dir / "sim").string() + "'", "CORES='1 1'");
    EXPECT_EQ(r.exit, 2);
    EXPECT_NE(r.out.find("CORES must name two different cores"), std::string::npos) << r.out;
    r = Run("'" + (m_dir / "sim").string() + "'", "MAX_FLOWS=many");
    EXPECT_EQ(r.exit, 2);
    EXPECT_NE(r.out.find("MAX_FLOWS must be a number"), std::string::npos) << r.out;
}

} // namespace
