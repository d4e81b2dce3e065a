// PacketLossModel: each mode picks the packets it says, the rates come out as configured, bad
// configuration is an error, and on an IbNetDevice a Drop hit vanishes while a Corrupt hit is
// caught by the VCRC and counted.
#include "rdma-engine-fixture.h"

#include "models/common/packet-loss-model.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/packet.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace ns3;

namespace
{
std::vector<bool>
Draw(Ptr<PacketLossModel> m, uint32_t n)
{
    std::vector<bool> hits;
    Ptr<Packet> p = Create<Packet>(100);
    for (uint32_t i = 0; i < n; ++i)
    {
        hits.push_back(m->IsCorrupt(p));
    }
    return hits;
}
} // namespace

TEST(PacketLossModel, EveryNthAndListPickExactlyThosePackets)
{
    Ptr<PacketLossModel> m = CreateObject<PacketLossModel>();
    m->SetAttribute("Mode", EnumValue(PacketLossModel::EVERY_NTH));
    m->SetAttribute("N", UintegerValue(4));
    auto h = Draw(m, 20);
    for (uint32_t i = 0; i < 20; ++i)
    {
        EXPECT_EQ(h[i], (i + 1) % 4 == 0) << i;
    }
    EXPECT_EQ(m->GetHits(), 5u);
    Ptr<PacketLossModel> l = CreateObject<PacketLossModel>();
    l->SetAttribute("Mode", EnumValue(PacketLossModel::LIST));
    l->SetAttribute("Indices", StringValue("0, 3,7 ,19"));
    h = Draw(l, 20);
    for (uint32_t i = 0; i < 20; ++i)
    {
        EXPECT_EQ(h[i], i == 0 || i == 3 || i == 7 || i == 19) << i;
    }
}

TEST(PacketLossModel, RandomAndBurstHitTheConfiguredFractionAndBurstsHaveTheirMeanLength)
{
    for (auto mode : {PacketLossModel::RANDOM, PacketLossModel::BURST})
    {
        Ptr<PacketLossModel> m = CreateObject<PacketLossModel>();
        m->SetAttribute("Mode", EnumValue(mode));
        m->SetAttribute("Rate", DoubleValue(0.05));
        m->SetAttribute("MeanBurstLength", DoubleValue(5.0));
        m->AssignStreams(3);
        const uint32_t n = 400000;
        auto h = Draw(m, n);
        uint64_t hits = 0;
        uint64_t bursts = 0;
        for (uint32_t i = 0; i < n; ++i)
        {
            hits += h[i];
            bursts += h[i] && (i == 0 || !h[i - 1]);
        }
        EXPECT_NEAR(double(hits) / n, 0.05, 0.005) << mode;
        const double meanBurst = double(hits) / bursts;
        if (mode == PacketLossModel::BURST)
        {
            EXPECT_NEAR(meanBurst, 5.0, 0.3);
        }
        else
        {
            EXPECT_NEAR(meanBurst, 1.0 / 0.95, 0.05); // independent losses: geometric, p=0.05
        }
    }
}

TEST(PacketLossModel, ABadIndexListIsAnErrorNotIgnored)
{
    EXPECT_THROW(PacketLossModel::ParseIndices("1,x"), std::invalid_argument);
    EXPECT_THROW(PacketLossModel::ParseIndices("-1"), std::invalid_argument);
    EXPECT_THROW(PacketLossModel::ParseIndices("99999999999999999999999"),
                 std::invalid_argument);
    EXPECT_EQ(PacketLossModel::ParseIndices("").size(), 0u);
    EXPECT_EQ(PacketLossModel::ParseIndices("5,5,6").size(), 2u);
    Ptr<PacketLossModel> m = CreateObject<PacketLossModel>();
    EXPECT_FALSE(m->SetAttributeFailSafe("Rate", DoubleValue(1.5)));
}

// On an IbNetDevice: a Drop hit vanishes (InjectedLoss, no PortCounters counter), a Corrupt hit
// arrives with a flipped bit and the VCRC check discards it (BadVcrc, PortRcvErrors).
class PacketLossOnIbPort : public cnuas_test::RdmaPairTest,
                           public ::testing::WithParamInterface<PacketLossModel::Action>
{
};

TEST_P(PacketLossOnIbPort, HitsAreDroppedOrCaughtByTheVcrcAndCounted)
{
    using namespace cnuas_test;
    QpOptions o;
    o.type = RdmaQpType::UD;
    Setup(o);
    Ptr<PacketLossModel> m = CreateObject<PacketLossModel>();
    m->SetAttribute("Mode", EnumValue(PacketLossModel::LIST));
    m->SetAttribute("Indices", StringValue("1,3,4"));
    m->SetAttribute("Action", EnumValue(GetParam()));
    SetLoss(m, nullptr);
    RdmaAhAttr av;
    av.dlid = b.lid;
    av.port_num = 1;
    Ptr<RdmaAh> ah = a.hca.device->CreateAh(a.pd, av);
    for (uint32_t i = 0; i < 8; ++i)
    {
        ASSERT_EQ(b.PostRecv(i, i * 256, 256), 0);
        RdmaSendWr w = Wr(i, RdmaWrOpcode::SEND, {a.Sge(0, 100)});
        w.ud.ah = PeekPointer(ah);
        w.ud.remote_qpn = b.qp->GetQpNum();
        w.ud.remote_qkey = o.qkey;
        ASSERT_EQ(a.qp->PostSend(w), 0);
    }
    const uint64_t rcvErrors0 = fabric.HostPort(1)->GetCounters().portRcvErrors;
    RunFor(MilliSeconds(1));
    EXPECT_EQ(m->GetHits(), 3u);
    EXPECT_EQ(b.PollRecv().size(), 5u);
    Ptr<IbNetDevice> port = fabric.HostPort(1);
    const bool drop = GetParam() == PacketLossModel::DROP;
    EXPECT_EQ(port->GetDropCount(IbDropReason::InjectedLoss), drop ? 3u : 0u);
    EXPECT_EQ(port->GetDropCount(IbDropReason::BadVcrc), drop ? 0u : 3u);
    EXPECT_EQ(port->GetCounters().portRcvErrors - rcvErrors0, drop ? 0u : 3u);
}

INSTANTIATE_TEST_SUITE_P(Actions,
                         PacketLossOnIbPort,
                         ::testing::Values(PacketLossModel::DROP, PacketLossModel::CORRUPT),
                         [](const ::testing::TestParamInfo<PacketLossModel::Action>& p) {
                             return std::string(p.param == PacketLossModel::DROP ? "Drop"
                                                                                 : "Corrupt");
                         });
