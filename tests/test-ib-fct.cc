// The InfiniBand flow run (RunIbFlows) and the ib-fct scenario: a flow alone on its path finishes
// at its worked-out ideal, an incast through credit flow control loses nothing and stalls its
// senders for credit, the per-port and per-VL traces have the shapes they document, and the
// same flows run on RoCE and on InfiniBand through the one flow driver.
#include "helpers/formats/topology.h"
#include "helpers/rdma/ib-flow-run.h"
#include "helpers/rdma/rdma-traffic-run.h"
#include "helpers/scenario/scenario.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace ns3;

namespace
{
RdmaFlowSpec
Flow(uint32_t src, uint32_t dst, uint64_t bytes, Time start = Time(0))
{
    RdmaFlowSpec f;
    f.src = src;
    f.dst = dst;
    f.bytes = bytes;
    f.start = start;
    return f;
}
} // namespace

TEST(IbFlowRun, AFlowAloneFinishesAtItsIdeal)
{
    // One 1 MB WRITE across a leaf-spine (4 cables, 3 cut-through switches): its packets back
    // to back at 4x HDR, the tail through the switches and the last ACK back. The worked-out
    // ideal leaves out only the credit updates a turnaround waits for (docs/ib-link.md §2.9).
    IbFlowRunSpec spec;
    spec.topology = BuildTopologyFromSpec("leaf-spine:leaves=2,spines=1,hosts=2");
    spec.flows = {Flow(0, 3, 1000000)};
    const IbFlowRunResult r = RunIbFlows(spec);
    ASSERT_EQ(r.flows.size(), 1u);
    ASSERT_TRUE(r.flows[0].ok);
    ASSERT_EQ(r.flowHops, std::vector<uint32_t>{4});
    const Time ideal = RdmaIdealFct(1000000, RdmaWrOpcode::RDMA_WRITE, 4096, 4, r.hostRate,
                                    r.cableDelay, r.switchLatency);
    const double ratio = r.flows[0].fct.GetSeconds() / ideal.GetSeconds();
    EXPECT_GE(ratio, 1.0);
    EXPECT_LT(ratio, 1.005) << r.flows[0].fct << " against " << ideal;
    EXPECT_EQ(r.hostRate.ToString(), "4xHDR");
    EXPECT_GT(r.smps, 0u);        // the built-in SM swept the fabric first
    EXPECT_GT(r.trafficStart, r.subnetUp);
}

TEST(IbFlowRun, AnIncastIsLosslessAndStallsItsSendersForCredit)
{
    IbFlowRunSpec spec;
    spec.topology = BuildTopologyFromSpec("star:hosts=5");
    spec.vls = 2;
    spec.vlBufferBytes = 8192;
    spec.sampleInterval = MicroSeconds(5);
    for (uint32_t h = 1; h < 5; ++h)
    {
        spec.flows.push_back(Flow(h, 0, 500000));
    }
    const IbFlowRunResult r = RunIbFlows(spec);
    ASSERT_TRUE(r.allDone);
    EXPECT_EQ(r.drops, 0u);
    EXPECT_EQ(r.retransmittedPackets, 0u);
    // Four senders share h0's link: the last finishes after four flows' worth of its time.
    Time last(0);
    for (const auto& f : r.flows)
    {
        last = std::max(last, f.fct);
    }
    EXPECT_GT(last.GetSeconds(), 4 * 500000 * 8 / r.hostDataRateBps);
    EXPECT_GT(r.creditStallUs, 10.0);
    // The switch port into h0 buffers at most what its VL has, never beyond it.
    EXPECT_GT(r.peakQueueBytes, 0u);
    EXPECT_LE(r.peakQueueBytes, 8192u);
    // Traces: 5 host ports and 5 switch ports, 2 VLs, one sample every 5 us.
    const size_t samples = r.sampleTimesUs.size();
    ASSERT_GT(samples, 10u);
    ASSERT_EQ(r.portNames.size(), 10u);
    EXPECT_EQ(r.portNames.front(), "h0:1");
    ASSERT_EQ(r.portCredits.size(), 10u);
    for (size_t p = 0; p < r.portNames.size(); ++p)
    {
        ASSERT_EQ(r.portCredits[p].size(), 2u);
        ASSERT_EQ(r.portCredits[p][0].size(), samples);
        ASSERT_EQ(r.portQueueBytes[p].size(), samples);
        // VL 1 carries nothing: its stall time stays zero.
        EXPECT_EQ(r.portCreditStallUs[p][1].back(), 0.0) << r.portNames[p];
        for (uint32_t credits : r.portCredits[p][0])
        {
            EXPECT_LE(credits, 8192u / 64);
        }
    }
    EXPECT_DOUBLE_EQ(r.sampleTimesUs.front(), 5.0); // counted from the traffic start
}

TEST(IbFlowRun, CongestionControlNeedsTheBuiltInSubnetManager)
{
    IbFlowRunSpec spec;
    spec.topology = BuildTopologyFromSpec("star:hosts=3");
    spec.flows = {Flow(1, 0, 1000)};
    spec.subnetManager = "static";
    spec.congestionControl = true;
    EXPECT_THROW(RunIbFlows(spec), std::invalid_argument);
    spec.congestionControl = false;
    const IbFlowRunResult r = RunIbFlows(spec);
    EXPECT_TRUE(r.allDone);
    EXPECT_EQ(r.smps, 0u);
}

TEST(IbFct, WritesTheFctTableOfRoceFct)
{
    const std::string out = (std::filesystem::temp_directory_path() /
                             ("cnuas-ib-fct-" + std::to_string(getpid())))
                                .string();
    ScenarioOptions o;
    o.name = "ib-fct";
    o.outDir = out;
    o.plots = false;
    o.progress = false;
    o.params = {{"topology", "star:hosts=5"}, {"pattern", "incast"}, {"senders", "4"},
                {"load", "0.8"},          {"cdf", "fb-hadoop.cdf"}, {"duration", "50us"}};
    const ScenarioInfo* info = ScenarioRegistry::Find("ib-fct");
    ASSERT_NE(info, nullptr);
    const ScenarioResult r = info->run(o);
    EXPECT_EQ(r.exitCode, 0);
    std::ifstream csv(out + "/ib-fct.csv");
    std::string header;
    std::getline(csv, header);
    EXPECT_EQ(header, "id,src,dst,size_bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,status");
    size_t rows = 0;
    for (std::string line; std::getline(csv, line); ++rows)
    {
        EXPECT_NE(line.find(",0,"), std::string::npos) << line; // every flow into h0
        EXPECT_NE(line.find("success"), std::string::npos) << line;
    }
    EXPECT_EQ(rows, r.flows.src.size());
    EXPECT_GT(rows, 4u);
    for (size_t i = 0; i < rows; ++i)
    {
        EXPECT_GE(r.flows.slowdown[i], 0.999);
    }
    std::filesystem::remove_all(out);
}
