// DCQCN rate arithmetic, rule by rule, in hand-reasoned scenarios for both presets (the paper's
// reaction point and the NIC-firmware one), the notification point's CNP interval, and CNPs on
// a RoCE fabric appearing exactly where switches marked packets.
#include "ib-test-packets.h"
#include "test-roce-rdma-fixture.h"

#include "helpers/trace/eth-pcap-writer.h"
#include "models/rdma/rdma-cc-dcqcn.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"

#include <cmath>

using namespace ns3;
using namespace cnuas_test;

namespace
{
constexpr double G = 1e9;

/// Runs `f` at simulated time `us` microseconds.
template <typename F>
void
At(double us, F f)
{
    Simulator::Schedule(PicoSeconds(std::llround(us * 1e6)), f);
}

struct DcqcnUnit : public ::testing::Test
{
    void TearDown() override
    {
        Simulator::Destroy();
    }
};
} // namespace

TEST_F(DcqcnUnit, PaperCutAlphaFastRecoveryAdditiveAndHyperIncrease)
{
    Ptr<RdmaCcDcqcn> cc = CreateObject<RdmaCcDcqcnPaper>();
    cc->SetAttribute("G", DoubleValue(0.5));
    cc->SetAttribute("AlphaInterval", TimeValue(MicroSeconds(50))); // K
    cc->SetAttribute("IncreaseTimer", TimeValue(MicroSeconds(60))); // T
    cc->SetAttribute("ByteCounter", UintegerValue(1000000));        // B
    cc->SetAttribute("F", UintegerValue(2));
    cc->SetAttribute("RateAi", DataRateValue(DataRate("1Gbps")));
    cc->SetAttribute("RateHai", DataRateValue(DataRate("4Gbps")));
    const uint32_t qp = 7;
    std::vector<std::tuple<double, double, double, double>> got; // t, Rc, Rt, alpha
    auto sample = [&](double t) {
        At(t, [&, t]() {
            got.emplace_back(t, cc->GetCurrentRate(qp), cc->GetTargetRate(qp),
                             cc->GetAlpha(qp));
        });
    };
    cc->OnQpStart(qp, 40000000000ULL);
    EXPECT_EQ(cc->GetRate(qp), 40000000000ULL); // starts at line rate
    EXPECT_DOUBLE_EQ(cc->GetAlpha(qp), 1.0);
    At(10, [&]() { cc->OnCnp(qp); });
    sample(11);
    sample(61);
    sample(71);
    At(80, [&]() { cc->OnSend(qp, 1000000, false); });
    sample(81);
    sample(111);
    At(120, [&]() { cc->OnCnp(qp); });
    sample(121);
    sample(171);
    sample(181);
    At(185, [&]() { cc->OnSend(qp, 2000000, false); });
    sample(186);
    sample(241);
    At(245, [&]() { cc->OnSend(qp, 1000000, false); });
    sample(246);
    sample(301);
    Simulator::Stop(MicroSeconds(302));
    Simulator::Run();

    // Reasoned by hand from the rules (paper §3.1), line 40 G, g 1/2, F 2:
    const std::vector<std::tuple<double, double, double, double>> want = {
        // CNP at 10: Rt = Rc = 40; Rc = 40 (1 - 1/2) = 20; alpha = 1/2 + 1/2 = 1.
        {11, 20 * G, 40 * G, 1.0},
        // K = 50 after the CNP without another: alpha = 1/2.
        {61, 20 * G, 40 * G, 0.5},
        // T = 60 after the CNP: timer round 1 < F: fast recovery, Rc = (40 + 20) / 2.
        {71, 30 * G, 40 * G, 0.5},
        // B bytes sent: byte round 1, max(1, 1) < F: fast recovery again, (40 + 30) / 2.
        {81, 35 * G, 40 * G, 0.5},
        {111, 35 * G, 40 * G, 0.25},
        // CNP at 120: Rt = 35; Rc = 35 (1 - 0.25/2) = 30.625; alpha = 0.125 + 0.5.
        {121, 30.625 * G, 35 * G, 0.625},
        {171, 30.625 * G, 35 * G, 0.3125},
        // Timer round 1: fast recovery, (35 + 30.625) / 2.
        {181, 32.8125 * G, 35 * G, 0.3125},
        // 2 MB: byte round 1 -> fast, (35 + 32.8125)/2 = 33.90625; byte round 2 = F with
        // the timer at 1: additive, Rt = 36, Rc = (36 + 33.90625) / 2.
        {186, 34.953125 * G, 36 * G, 0.3125},
        // Timer round 2: min(2, 2) = F, not past it: additive, Rt = 37.
        {241, 35.9765625 * G, 37 * G, 0.15625}, // alpha decayed at 220
        // Byte round 3, timer still 2: additive, Rt = 38.
        {246, 36.98828125 * G, 38 * G, 0.15625},
        // Timer round 3: both past F: hyper, Rt = min(40, 38 + 4) = 40.
        {301, 38.494140625 * G, 40 * G, 0.078125}, // alpha decayed at 270
    };
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
    {
        const double t = std::get<0>(want[i]);
        EXPECT_DOUBLE_EQ(std::get<1>(got[i]), std::get<1>(want[i])) << "Rc at " << t;
        EXPECT_DOUBLE_EQ(std::get<2>(got[i]), std::get<2>(want[i])) << "Rt at " << t;
        EXPECT_DOUBLE_EQ(std::get<3>(got[i]), std::get<3>(want[i])) << "alpha at " << t;
    }
    EXPECT_EQ(cc->GetCnpsReceived(), 2u);
    EXPECT_EQ(cc->GetRateDecreases(), 2u);
}

TEST_F(DcqcnUnit, FirmwareTicksCutOncePerPeriodAndIncreaseByTimerOnly)
{
    Ptr<RdmaCcDcqcn> cc = CreateObject<RdmaCcDcqcnMlx>();
    cc->SetAttribute("G", DoubleValue(0.5));
    cc->SetAttribute("AlphaInterval", TimeValue(MicroSeconds(1)));
    cc->SetAttribute("DecreaseInterval", TimeValue(NanoSeconds(4200)));
    cc->SetAttribute("IncreaseTimer", TimeValue(MicroSeconds(10)));
    cc->SetAttribute("F", UintegerValue(1));
    cc->SetAttribute("RateAi", DataRateValue(DataRate("1Gbps")));
    cc->SetAttribute("RateHai", DataRateValue(DataRate("5Gbps")));
    cc->SetAttribute("MinRate", DataRateValue(DataRate("1Gbps")));
    const uint32_t qp = 3;
    cc->OnQpStart(qp, 100000000000ULL);
    std::vector<std::pair<double, double>> rc; // (t, Rc)
    std::vector<std::pair<double, double>> rt;
    std::vector<std::pair<double, double>> al;
    auto sample = [&](double t) {
        At(t, [&, t]() {
            rc.emplace_back(t, cc->GetCurrentRate(qp));
            rt.emplace_back(t, cc->GetTargetRate(qp));
            al.emplace_back(t, cc->GetAlpha(qp));
        });
    };
    // Bytes sent never matter here (no byte counter).
    At(0.2, [&]() { cc->OnSend(qp, 50000000, false); });
    At(0.5, [&]() { cc->OnCnp(qp); });
    At(0.6, [&]() { cc->OnCnp(qp); }); // same periods: no second cut
    sample(4.6);
    sample(4.8);
    At(6.0, [&]() { cc->OnCnp(qp); });
    sample(9.0);
    sample(19.0);
    sample(29.0);
    At(30.0, [&]() { cc->OnCnp(qp); });
    sample(34.2);
    sample(44.2);
    sample(54.2);
    sample(64.2);
    Simulator::Stop(MicroSeconds(65));
    Simulator::Run();

    // Alpha ticks at 1.5, 2.5, ...: 1 at 1.5 (a CNP in the period: (1-g) 1 + g), then halves
    // each tick without one; decrease ticks at 4.7, 8.9, ..., 29.9, 34.1.
    const double a45 = 0.125;                  // ticks 2.5, 3.5, 4.5
    const double rc1 = 100 * G * (1 - a45 / 2); // cut at 4.7; Rt stays 100 (round 0, no clamp)
    const double a65 = 0.5 * (a45 / 2) + 0.5;  // 5.5 halves, 6.5 sees the CNP of 6.0
    const double a85 = a65 / 4;                // 7.5, 8.5
    const double rc2 = rc1 * (1 - a85 / 2);    // cut at 8.9
    const double rc3 = (100 * G + rc2) / 2;    // 18.9: round 0 < F: fast recovery
    const double rc4 = (100 * G + rc3) / 2;    // 28.9: round 1 = F: Rt = min(100, 101)
    const double a295 = a65 / std::pow(2, 23); // 7.5 .. 29.5 without CNPs
    const double a335 = (0.5 * a295 + 0.5) / 8; // 30.5 sees the CNP of 30.0; 31.5 .. 33.5
    const double rt5 = rc4;                    // cut at 34.1 after rounds: Rt = Rc
    const double rc5 = rc4 * (1 - a335 / 2);
    const double rc6 = (rt5 + rc5) / 2;        // 44.1: round 0: fast
    const double rt7 = rt5 + 1 * G;            // 54.1: round 1 = F: additive
    const double rc7 = (rt7 + rc6) / 2;
    const double rt8 = 100 * G; // 64.1: round 2 > F: hyper, rt7 + 5 G capped at the line
    const double rc8 = (rt8 + rc7) / 2;
    const std::vector<double> wantRc = {100 * G, rc1, rc2, rc3, rc4, rc5, rc6, rc7, rc8};
    const std::vector<double> wantRt = {100 * G, 100 * G, 100 * G, 100 * G, 100 * G,
                                        rt5,     rt5,     rt7,     rt8};
    ASSERT_EQ(rc.size(), wantRc.size());
    for (size_t i = 0; i < wantRc.size(); ++i)
    {
        EXPECT_DOUBLE_EQ(rc[i].second, wantRc[i]) << "Rc at " << rc[i].first;
        EXPECT_DOUBLE_EQ(rt[i].second, wantRt[i]) << "Rt at " << rt[i].first;
    }
    EXPECT_DOUBLE_EQ(al[0].second, a45); // 4.6: after the 4.5 tick
    EXPECT_DOUBLE_EQ(al[2].second, a85); // 9.0: after the 8.5 tick
    EXPECT_EQ(cc->GetRateDecreases(), 3u);
    EXPECT_EQ(cc->GetCnpsReceived(), 4u);
}

TEST_F(DcqcnUnit, NotificationPointSendsAtMostOneCnpPerIntervalPerQp)
{
    Ptr<RdmaCcDcqcn> cc = CreateObject<RdmaCcDcqcnPaper>(); // N = 50 us
    std::vector<std::pair<double, bool>> got;
    for (double t : {0.0, 10.0, 49.999, 50.0, 99.0, 120.0})
    {
        At(t, [&, t]() { got.emplace_back(t, cc->OnEcnMarkedReceive(5)); });
    }
    At(20.0, [&]() { got.emplace_back(-1, cc->OnEcnMarkedReceive(6)); }); // another QP
    Simulator::Run();
    const std::vector<std::pair<double, bool>> want = {{0.0, true},    {10.0, false},
                                                       {-1, true},     {49.999, false},
                                                       {50.0, true},   {99.0, false},
                                                       {120.0, true}};
    EXPECT_EQ(got, want);
    EXPECT_EQ(cc->GetCnpsRequested(), 4u);
    EXPECT_EQ(cc->GetCnpsSuppressed(), 3u);
}

namespace
{
struct IncastResult
{
    uint64_t marks = 0;
    uint64_t ceAtReceiver = 0;
    uint64_t cnpsSent = 0;      ///< by the receiver's engine
    uint64_t cnpsRequested = 0; ///< by the receiver's notification point
    uint64_t cnpsReceived = 0;  ///< by the senders' reaction points
    uint64_t decreases = 0;
    bool allDone = true;
    Time runTime;
};

class DcqcnFabric : public RocePairTest
{
  protected:
    /// Two writers of 2 MB each into host 0 through one switch at 40 Gb/s, DCQCN (paper) on
    /// every NIC, the switch marking on its egress queue when `ecn`.
    IncastResult Run(bool ecn, const std::string& pcap)
    {
        RoceHelper rh;
        rh.SetCongestionControl("ns3::RdmaCcDcqcnPaper");
        Build(MakeStar(3), rh, [ecn](EthFabricHelper& h) {
            h.SetMmuAttribute("EcnMode", EnumValue(ecn ? 1 : 0));
            h.SetMmuAttribute("KminBytes", UintegerValue(5000));
            h.SetMmuAttribute("KmaxBytes", UintegerValue(100000));
            h.SetMmuAttribute("Pmax", DoubleValue(0.2));
        });
        Ptr<PcapFileWrapper> file;
        if (!pcap.empty())
        {
            file = EthPcapHelper::Enable(fabric.HostPort(0), pcap);
        }
        QpOptions o;
        RoceSide w1;
        RoceSide w2;
        RoceSide r1;
        RoceSide r2;
        Pair(w1, 1, r1, 0, o);
        r2.pd = r1.pd;
        r2.mr = r1.mr;
        r2.sendCq = r1.sendCq;
        r2.recvCq = r1.recvCq;
        Pair(w2, 2, r2, 0, o);
        uint32_t k = 0;
        for (RoceSide* w : {&w1, &w2})
        {
            w->Write(0, TestBytes(2000000, 20 + k));
            RdmaSendWr wr = Wr(k, RdmaWrOpcode::RDMA_WRITE, {w->Sge(0, 2000000)});
            wr.rdma.remote_addr = kRegionBase + 2000000 * k;
            wr.rdma.rkey = r1.mr->GetRkey();
            EXPECT_EQ(w->qp->PostSend(wr), 0);
            ++k;
        }
        RunFor(MilliSeconds(3));
        IncastResult res;
        for (RoceSide* w : {&w1, &w2})
        {
            auto sc = w->sendCq->Poll(10);
            res.allDone &= sc.size() == 1 && sc[0].status == RdmaWcStatus::SUCCESS;
        }
        res.allDone &= r1.Read(0, 2000000) == TestBytes(2000000, 20) &&
                       r1.Read(2000000, 2000000) == TestBytes(2000000, 21);
        res.marks = fabric.Switches()[0]->GetEcnMarked();
        res.ceAtReceiver = hcas[0].port->GetEcnMarkedReceived();
        res.cnpsSent = hcas[0].engine->GetCounters().cnpsSent;
        res.cnpsRequested = DynamicCast<RdmaCcDcqcn>(hcas[0].cc)->GetCnpsRequested();
        for (uint32_t h : {1u, 2u})
        {
            auto cc = DynamicCast<RdmaCcDcqcn>(hcas[h].cc);
            res.cnpsReceived += cc->GetCnpsReceived();
            res.decreases += cc->GetRateDecreases();
        }
        file = nullptr;
        return res;
    }
};
} // namespace

TEST_F(DcqcnFabric, CnpsFollowMarksOnlyAndSlowTheSenders)
{
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/roce-dcqcn-cnp";
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    const std::string pcap = dir + "/h0.pcap";
    const IncastResult on = Run(true, pcap);
    Simulator::Destroy();
    EXPECT_TRUE(on.allDone);
    ASSERT_GT(on.marks, 0u);
    // Every mark reaches the receiver (lossless, marks only on the congested egress to h0).
    EXPECT_EQ(on.ceAtReceiver, on.marks);
    EXPECT_GT(on.cnpsSent, 0u);
    EXPECT_LE(on.cnpsSent, on.ceAtReceiver);
    EXPECT_EQ(on.cnpsSent, on.cnpsRequested);
    EXPECT_EQ(on.cnpsReceived, on.cnpsSent); // none lost, each reaches its QP's sender
    EXPECT_EQ(on.decreases, on.cnpsReceived); // the paper's RP cuts on each CNP

    // In the capture at the receiver: each CNP (BTH opcode 0x81, Not-ECT) leaves after a
    // CE-marked packet from the host it goes to, and two CNPs for one sender are >= 50 us apart.
    int status = -1;
    const auto rows = TsharkFieldRows(pcap,
                                      {"frame.time_relative", "ip.src", "ip.dst",
                                       "ip.dsfield.ecn", "infiniband.bth.opcode"},
                                      "-Y infiniband", &status);
    ASSERT_EQ(status, 0);
    std::map<std::string, double> lastCe;  // by sender IP
    std::map<std::string, double> lastCnp; // by sender IP
    uint64_t cnps = 0;
    for (const auto& r : rows)
    {
        ASSERT_EQ(r.size(), 5u);
        const double t = std::stod(r[0]);
        if (r[4] == "129")
        {
            cnps++;
            EXPECT_EQ(r[3], "0") << "CNPs are Not-ECT";
            ASSERT_TRUE(lastCe.count(r[2])) << "CNP to " << r[2] << " before any mark";
            EXPECT_LT(t - lastCe[r[2]], 5e-6) << "CNP long after the mark";
            if (lastCnp.count(r[2]))
            {
                EXPECT_GE(t - lastCnp[r[2]], 50e-6 - 1e-9);
            }
            lastCnp[r[2]] = t;
        }
        else if (r[3] == "3")
        {
            lastCe[r[1]] = t;
        }
    }
    EXPECT_EQ(cnps, on.cnpsSent);

    const IncastResult off = Run(false, "");
    EXPECT_TRUE(off.allDone);
    EXPECT_EQ(off.marks, 0u);
    EXPECT_EQ(off.cnpsSent, 0u);
    EXPECT_EQ(off.decreases, 0u);
}
