// HPCC-simulator configuration keys of the cc work: CC_MODE 8 (DCTCP) with DCTCP_RATE_AI,
// HAS_WIN/VAR_WIN/GLOBAL_T as a BDP window, and KMIN_MAP/KMAX_MAP/PMAX_MAP applied per port
// speed (host and fabric ports get their own thresholds).
#include "ib-test-packets.h"

#include "helpers/formats/roce-hpcc-compat.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace ns3;
using namespace cnuas_test;

namespace
{
std::string
WriteTemp(const std::string& name, const std::string& text)
{
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/roce-hpcc-cc";
    RunCommand("mkdir -p '" + dir + "'");
    const std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
}

/// Hosts 0, 1 on switch 4 and hosts 2, 3 on switch 5 at 100 G; the switches joined at 400 G;
/// 1 us per link.
HpccTopology
TwoTiers()
{
    return ReadHpccTopology(WriteTemp("topo.txt", "6 2 5\n4 5\n"
                                                  "0 4 100Gbps 1000ns 0\n"
                                                  "1 4 100Gbps 1000ns 0\n"
                                                  "2 5 100Gbps 1000ns 0\n"
                                                  "3 5 100Gbps 1000ns 0\n"
                                                  "4 5 400Gbps 1000ns 0\n"));
}

std::string
ErrorOf(const std::function<void()>& f)
{
    try
    {
        f();
    }
    catch (const std::invalid_argument& e)
    {
        return e.what();
    }
    return "";
}

const char* kDctcp = "CC_MODE 8\n"
                     "EWMA_GAIN 0.0625\n"
                     "DCTCP_RATE_AI 1000Mb/s\n"
                     "RATE_AI 20Mb/s\n"
                     "PACKET_PAYLOAD_SIZE 1000\n"
                     "HAS_WIN 1\n"
                     "GLOBAL_T 1\n"
                     "VAR_WIN 0\n"
                     "KMAX_MAP 2 100000000000 120 400000000000 480\n"
                     "KMIN_MAP 2 100000000000 120 400000000000 480\n"
                     "PMAX_MAP 2 100000000000 1.0 400000000000 1.0\n";
} // namespace

TEST(RoceHpccCc, DctcpModeWindowAndPerSpeedThresholds)
{
    const HpccTopology t = TwoTiers();
    RoceRunSpec spec;
    std::vector<std::string> ignored;
    const auto cfg = ReadHpccConfig(WriteTemp("dctcp.txt", kDctcp));
    const auto used = ApplyHpccConfig(cfg, t, spec, &ignored);
    EXPECT_EQ(spec.cc, "ns3::RdmaCcDctcp");
    EXPECT_EQ(used.size() + ignored.size(), cfg.size());
    // RATE_AI is DCQCN's and HPCC's: without effect in CC_MODE 8, in the simulator as here.
    EXPECT_TRUE(ignored.empty());
    for (const char* k : {"DCTCP_RATE_AI", "HAS_WIN", "GLOBAL_T", "VAR_WIN", "KMIN_MAP", "RATE_AI"})
    {
        EXPECT_NE(std::find(used.begin(), used.end(), k), used.end()) << k;
    }
    // The largest base RTT: 3 links there and back, plus a 1000-byte packet's serialization
    // at 100 G on the two host links and 400 G on the fabric link; BDP at the host rate.
    const double rtt = 2 * 3 * 1e-6 + 2 * 8000 / 100e9 + 8000 / 400e9;
    const uint64_t bdp = static_cast<uint64_t>(rtt * 100e9 / 8);
    EXPECT_EQ(bdp, 77250u);
    RoceHelper rh;
    rh.SetCongestionControl(spec.cc);
    spec.configureNics(rh);
    EthFabricHelper fh;
    fh.SetHostLinkRate(DataRate(t.hostRate));
    fh.SetFabricLinkRate(DataRate(t.fabricRate));
    fh.SetMmuAttribute("EcnMode", EnumValue(1));
    spec.configureFabric(fh);
    {
        const EthFabric fab = fh.Build(t.topology);
        const auto hcas = rh.Install(fab);
        EXPECT_EQ(hcas[0].cc->GetInstanceTypeId().GetName(), "ns3::RdmaCcDctcp");
        DataRateValue ai;
        hcas[0].cc->GetAttribute("RateAi", ai);
        EXPECT_EQ(ai.Get(), DataRate("1000Mbps"));
        DoubleValue g;
        hcas[0].cc->GetAttribute("G", g);
        EXPECT_DOUBLE_EQ(g.Get(), 0.0625);
        UintegerValue w;
        hcas[0].cc->GetAttribute("Window", w);
        EXPECT_EQ(w.Get(), bdp);
        BooleanValue vw;
        hcas[0].cc->GetAttribute("VariableWindow", vw);
        EXPECT_FALSE(vw.Get());
        // Switch 4: ports 1, 2 to hosts (100 G, K = 120 KB), port 3 to switch 5 (400 G,
        // K = 480 KB); Kmin = Kmax and Pmax 1 make it a threshold.
        Ptr<SharedBufferMmu> mmu = fab.Switches()[0]->GetMmu();
        EXPECT_EQ(mmu->MarkProbability(120000, 0), 0.0);
        EXPECT_EQ(mmu->MarkProbability(120001, 0), 1.0);
        EXPECT_EQ(mmu->MarkProbability(479999, 2), 0.0);
        EXPECT_EQ(mmu->MarkProbability(480001, 2), 1.0);
        Simulator::Destroy();
    }
}

TEST(RoceHpccCc, VariableAndPerPairWindowsAndARefusedMap)
{
    const HpccTopology t = TwoTiers();
    std::string text = kDctcp;
    text.replace(text.find("VAR_WIN 0"), 9, "VAR_WIN 1");
    RoceRunSpec spec;
    ApplyHpccConfig(ReadHpccConfig(WriteTemp("vwin.txt", text)), t, spec, nullptr);
    RoceHelper rh;
    rh.SetCongestionControl(spec.cc);
    spec.configureNics(rh);
    {
        const auto hcas = rh.Install(EthFabricHelper().Build(MakeTwoHostsOneSwitch()));
        BooleanValue vw;
        hcas[0].cc->GetAttribute("VariableWindow", vw);
        EXPECT_TRUE(vw.Get());
        Simulator::Destroy();
    }
    // GLOBAL_T 0: each flow's sender QP gets its own pair's BDP as the flow starts. Hosts 0
    // and 1 share switch 4 (2 links), host 0 to host 2 crosses the 400 G link (3 links).
    std::string perPair = kDctcp;
    perPair.replace(perPair.find("GLOBAL_T 1"), 10, "GLOBAL_T 0");
    RoceRunSpec s2;
    s2.topology = t.topology;
    s2.hostRate = DataRate(t.hostRate);
    s2.fabricRate = DataRate(t.fabricRate);
    s2.flows = {{0, 1, 100000, Time(0)}, {0, 2, 100000, Time(0)}};
    s2.limit = MilliSeconds(1);
    ApplyHpccConfig(ReadHpccConfig(WriteTemp("pp.txt", perPair)), t, s2, nullptr);
    ASSERT_TRUE(s2.onFlowStart);
    std::vector<uint64_t> windows;
    auto setWindows = s2.onFlowStart;
    s2.onFlowStart = [&](const RoceFlowSpec& fs, uint32_t qpn, const RoceHca& src) {
        setWindows(fs, qpn, src);
        windows.push_back(src.cc->GetWindow(qpn));
    };
    const RoceRunResult r = RunRoceFlows(s2);
    Simulator::Destroy();
    EXPECT_TRUE(r.allDone);
    const uint64_t two = static_cast<uint64_t>((2 * 2 * 1e-6 + 2 * 8000 / 100e9) * 100e9 / 8);
    const uint64_t three =
        static_cast<uint64_t>((2 * 3 * 1e-6 + 2 * 8000 / 100e9 + 8000 / 400e9) * 100e9 / 8);
    ASSERT_EQ(windows.size(), 2u);
    EXPECT_EQ(windows[0], two); // 52000 bytes
    EXPECT_EQ(windows[1], three);
    // A Kmin map above the Kmax map for the fabric speed is refused by the switches.
    std::string bad = kDctcp;
    bad.replace(bad.find("KMIN_MAP 2 100000000000 120 400000000000 480"), 44,
                "KMIN_MAP 2 100000000000 120 400000000000 999");
    RoceRunSpec s3;
    ApplyHpccConfig(ReadHpccConfig(WriteTemp("bad.txt", bad)), t, s3, nullptr);
    EthFabricHelper fh;
    fh.SetHostLinkRate(DataRate(t.hostRate));
    fh.SetFabricLinkRate(DataRate(t.fabricRate));
    fh.SetMmuAttribute("EcnMode", EnumValue(1));
    s3.configureFabric(fh);
    const std::string e = ErrorOf([&]() { fh.Build(t.topology); });
    EXPECT_NE(e.find("above Kmax"), std::string::npos) << e;
    EXPECT_NE(e.find("400 Gb/s"), std::string::npos) << e;
    Simulator::Destroy();
}
