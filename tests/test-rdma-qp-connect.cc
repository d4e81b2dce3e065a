// The fabric-neutral QP connect (helpers/rdma/rdma-qp-connect.h): the address vector it builds for an
// InfiniBand and a RoCE port, RC/UC/UD QPs taken to RTS on both fabrics, a refused transition
// reported with its name, and RdmaTrafficHelper driving RoCE NICs (bytes compared).
#include "rdma-engine-fixture.h"
#include "test-roce-rdma-fixture.h"

#include "helpers/rdma/rdma-qp-connect.h"
#include "helpers/rdma/rdma-traffic-helper.h"

#include <gtest/gtest.h>

using namespace ns3;
using namespace cnuas_test;

namespace
{
class RoceConnect : public RocePairTest
{
};

class IbConnect : public RdmaPairTest
{
};
} // namespace

TEST_F(IbConnect, AddressOfAnIbPortIsItsLid)
{
    Setup();
    const RdmaAhAttr av = RdmaAddressOf(*hcas[1].port, 5);
    EXPECT_EQ(av.dlid, b.lid);
    EXPECT_NE(av.dlid, 0);
    EXPECT_EQ(av.sl, 5);
    EXPECT_EQ(av.is_global, 0);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::RTS);
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::RTS);
}

TEST_F(RoceConnect, AddressOfARocePortIsItsGid)
{
    Build(MakeTwoHostsOneSwitch());
    const RdmaAhAttr av = RdmaAddressOf(*hcas[1].port);
    EXPECT_EQ(av.is_global, 1);
    EXPECT_EQ(av.dlid, 0);
    uint32_t ip = 0;
    ASSERT_TRUE(RoceGidToIpv4(av.grh.dgid, ip));
    EXPECT_EQ(ip, EthFabricHelper::HostAddress(1));
    EXPECT_GT(av.grh.hop_limit, 0);
    // Index 1 is the IPv6 address; an index the port does not have is refused, not guessed.
    const RdmaAhAttr av6 = RdmaAddressOf(*hcas[1].port, 0, 1);
    const Ipv6Bytes want6 = EthFabricHelper::HostAddress6(1);
    EXPECT_TRUE(std::equal(want6.begin(), want6.end(), av6.grh.dgid.begin()));
    EXPECT_THROW(RdmaAddressOf(*hcas[1].port, 0, 7), std::invalid_argument);
}

TEST_F(RoceConnect, EveryQpTypeReachesRtsWithTheRequestedAttributes)
{
    Build(MakeTwoHostsOneSwitch());
    for (RdmaQpType type : {RdmaQpType::RC, RdmaQpType::UC, RdmaQpType::UD})
    {
        QpOptions o;
        o.type = type;
        RoceSide x;
        RoceSide y;
        MakeSide(x, 0, o);
        MakeSide(y, 1, o);
        RdmaQpConnectOptions c;
        c.sqPsn = 0x123456;
        c.rqPsn = 0x654321;
        c.timeout = 9;
        c.maxRdAtomic = 3;
        c.mtu = RdmaMtu::MTU_2048;
        ConnectQpPair(x.qp, RdmaAddressOf(*hcas[0].port), y.qp, RdmaAddressOf(*hcas[1].port), c);
        for (Ptr<RdmaQp> qp : {x.qp, y.qp})
        {
            EXPECT_EQ(qp->GetState(), RdmaQpState::RTS) << int(type);
        }
        RdmaQpAttr attr;
        RdmaQpInitAttr init;
        ASSERT_EQ(x.qp->Query(attr, 0, init), 0);
        EXPECT_EQ(attr.sq_psn, 0x123456u);
        ASSERT_EQ(y.qp->Query(attr, 0, init), 0);
        EXPECT_EQ(attr.sq_psn, 0x654321u) << "the pair's second QP starts at the first's rq PSN";
        if (type != RdmaQpType::UD)
        {
            EXPECT_EQ(attr.rq_psn, 0x123456u);
            EXPECT_EQ(attr.dest_qp_num, x.qp->GetQpNum());
            EXPECT_EQ(attr.path_mtu, RdmaMtu::MTU_2048);
            EXPECT_EQ(attr.ah_attr.grh.dgid, GidOf(0));
        }
        if (type == RdmaQpType::RC)
        {
            EXPECT_EQ(attr.timeout, 9);
            EXPECT_EQ(attr.max_rd_atomic, 3);
        }
        else if (type == RdmaQpType::UD)
        {
            EXPECT_EQ(attr.qkey, c.qkey);
        }
    }
}

TEST_F(RoceConnect, RefusedTransitionIsNamedAndThrown)
{
    Build(MakeTwoHostsOneSwitch());
    QpOptions o;
    RoceSide x;
    RoceSide y;
    Pair(x, 0, y, 1, o);
    // RTS -> INIT is not a transition ibv_modify_qp allows (IBA vol. 1 §10.3.1).
    const std::string err = TryConnectQp(x.qp, RdmaAddressOf(*hcas[1].port), y.qp->GetQpNum(),
                                         RdmaQpConnectOptions());
    EXPECT_EQ(err.rfind("modify_qp to INIT: ", 0), 0u) << err;
    EXPECT_GT(err.size(), std::string("modify_qp to INIT: ").size()) << "with the reason";
    EXPECT_THROW(ConnectQp(x.qp, RdmaAddressOf(*hcas[1].port), y.qp->GetQpNum(),
                           RdmaQpConnectOptions()),
                 std::runtime_error);
    EXPECT_EQ(TryConnectQp(nullptr, RdmaAhAttr(), 1, RdmaQpConnectOptions()), "no QP");
}

TEST_F(RoceConnect, TrafficHelperConnectsRoceNicsRcAndUd)
{
    Build(MakeLeafSpine(2, 2, 2));
    RdmaTrafficHelper traffic(hcas, /*realMemory=*/true, 1 << 20);
    RdmaConnectOptions opts;
    opts.mtu = RdmaMtu::MTU_1024;
    traffic.SetOptions(opts);
    auto [s, r] = traffic.Connect(0, 3); // across the spines
    const auto data = TestBytes(50000, 7);
    traffic.GetMemory(0)->Write(RdmaTrafficHelper::kBufferBase, data.data(), data.size());
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE,
                      {RdmaSge{s.localAddr, static_cast<uint32_t>(data.size()), s.lkey}});
    w.rdma.remote_addr = s.remoteAddr + 4096;
    w.rdma.rkey = s.rkey;
    ASSERT_EQ(s.qp->PostSend(w), 0);

    opts.type = RdmaQpType::UD;
    traffic.SetOptions(opts);
    auto [u, v] = traffic.Connect(1, 2);
    ASSERT_TRUE(u.ah);
    const auto msg = TestBytes(900, 8);
    traffic.GetMemory(1)->Write(RdmaTrafficHelper::kBufferBase, msg.data(), msg.size());
    RdmaRecvWr rw;
    rw.wr_id = 9;
    rw.sg_list = {RdmaSge{v.localAddr, 40 + 900, v.lkey}};
    ASSERT_EQ(v.qp->PostRecv(rw), 0);
    RdmaSendWr sw = Wr(2, RdmaWrOpcode::SEND, {RdmaSge{u.localAddr, 900, u.lkey}});
    sw.ud.ah = PeekPointer(u.ah);
    sw.ud.remote_qpn = u.remoteQpn;
    sw.ud.remote_qkey = u.remoteQkey;
    ASSERT_EQ(u.qp->PostSend(sw), 0);
    RunFor(MilliSeconds(1));

    auto sc = s.sendCq->Poll(10);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    std::vector<uint8_t> got(data.size());
    traffic.GetMemory(3)->Read(RdmaTrafficHelper::kBufferBase + 4096, got.data(), got.size());
    EXPECT_EQ(got, data);
    auto rc = v.recvCq->Poll(10);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(rc[0].byte_len, 40u + 900u); // the GRH area, then the message
    std::vector<uint8_t> body(900);
    traffic.GetMemory(2)->Read(RdmaTrafficHelper::kBufferBase + 40, body.data(), body.size());
    EXPECT_EQ(body, msg);
}
