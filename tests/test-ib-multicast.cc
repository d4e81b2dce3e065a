// InfiniBand multicast on the data path: a switch replicates a packet whose DLID is a multicast
// LID to every port of its MulticastForwardingTable entry but the one it came in by (IBA vol. 1
// §18.2.4.3, §14.2.5.12), a channel adapter hands it to every UD QP of the port attached to
// the group (§10.5), and the sending adapter loops it back to its own members. The MFTs here
// are set directly, as a subnet manager's SubnSet(MulticastForwardingTable) would set them
// (test-sm-multicast.cc has the SM do it with SMPs).
#include "rdma-engine-fixture.h"

#include "models/ib/ib-switch.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

using namespace ns3;
using namespace cnuas_test;

namespace
{

constexpr uint16_t kMlid = 0xC001;
constexpr uint32_t kQkey = 0x11111111;

/// ff12:601b:ffff::1 (a link-local group, as IPoIB's all-nodes group is shaped).
RdmaGid
Mgid()
{
    RdmaGid g{};
    g[0] = 0xFF;
    g[1] = 0x12;
    g[2] = 0x60;
    g[3] = 0x1B;
    g[4] = 0xFF;
    g[5] = 0xFF;
    g[15] = 0x01;
    return g;
}

/// Sets the MFT entry of kMlid on `sw` to `ports`, as a SubnSet(MulticastForwardingTable) of
/// block 0, position 0 does.
void
SetMftEntry(Ptr<IbSwitch> sw, std::vector<uint8_t> ports)
{
    std::array<uint16_t, 32> masks{};
    for (uint8_t p : ports)
    {
        masks[kMlid - IbSwitch::kMulticastLidBase] |= static_cast<uint16_t>(1u << p);
    }
    ASSERT_TRUE(sw->SetMftBlock(0, 0, masks.data()));
}

/// Four hosts on a two-leaf, two-spine fabric (h0, h1 on leaf0; h2, h3 on leaf1), a UD QP
/// each, and a multicast tree through spine0 reaching h0, h1 and h2.
class IbMulticast : public RdmaPairTest
{
  protected:
    void SetUp() override
    {
        fabric = IbFabricHelper().Build(BuildTopologyFromSpec("leaf-spine:leaves=2,spines=2,hosts=2"));
        subnet.Configure(fabric.nodes);
        hcas = RdmaHelper().Install(fabric);
        RunFor(MicroSeconds(10));
        opts.type = RdmaQpType::UD;
        opts.qkey = kQkey;
        sides.resize(4);
        for (uint32_t h = 0; h < 4; ++h)
        {
            MakeSide(sides[h], h, opts);
            Connect(sides[h].qp, sides[h].lid, 0, 0, opts); // UD: INIT (Q_Key), RTR, RTS
        }
        // Nodes: h0..h3 (0-3), leaf0 (4), leaf1 (5), spine0 (6), spine1 (7). A leaf's ports 1-2
        // go to its hosts, 3 to spine0, 4 to spine1; spine0's port l+1 to leaf l.
        SetMftEntry(Switch(4), {1, 2, 3});
        SetMftEntry(Switch(5), {1, 3});
        SetMftEntry(Switch(6), {1, 2});
    }

    Ptr<IbSwitch> Switch(uint32_t node) const
    {
        return fabric.nodes.Get(node)->GetObject<IbSwitch>();
    }

    /// Host `h` sends `len` bytes from its region's offset 0 to the group.
    void SendToGroup(uint32_t h, uint32_t len, uint64_t wrId)
    {
        Side& s = sides[h];
        RdmaAhAttr av;
        av.dlid = kMlid;
        av.port_num = 1;
        av.is_global = 1;
        av.grh.dgid = Mgid();
        av.grh.hop_limit = 1;
        Ptr<RdmaAh> ah = s.hca.device->CreateAh(s.pd, av);
        ASSERT_TRUE(ah) << s.hca.device->GetLastError();
        ahs.push_back(ah);
        RdmaSendWr w = Wr(wrId, RdmaWrOpcode::SEND, {s.Sge(0, len)});
        w.ud.ah = PeekPointer(ah);
        w.ud.remote_qpn = kRdmaMulticastQpn;
        w.ud.remote_qkey = kQkey;
        ASSERT_EQ(s.qp->PostSend(w), 0) << s.hca.device->GetLastError();
    }

    /// Every switch input buffer is empty again (each copy left, and the credit came back).
    void ExpectSwitchBuffersEmpty() const
    {
        for (uint32_t node = 4; node < 8; ++node)
        {
            for (const Ptr<IbNetDevice>& port : fabric.ports[node])
            {
                for (uint8_t vl = 0; vl < port->GetOperationalVls(); ++vl)
                {
                    EXPECT_EQ(port->GetReceiveQueue(vl).frames.size(), 0u);
                    EXPECT_EQ(port->GetReceiveQueue(vl).usedBlocks, 0u);
                }
            }
        }
    }

    std::vector<Side> sides;
    std::vector<Ptr<RdmaAh>> ahs;
};

TEST_F(IbMulticast, ASendReachesEveryAttachedQpOnceAndNoOtherPort)
{
    const RdmaGid mgid = Mgid();
    for (uint32_t h : {0u, 1u, 2u})
    {
        ASSERT_EQ(sides[h].hca.device->AttachMcast(sides[h].qp, mgid, kMlid), 0);
    }
    // A second QP on h2's port in the same group gets its own copy.
    Ptr<RdmaQp> second = CreateQp(sides[2], opts);
    ASSERT_TRUE(second);
    Connect(second, sides[2].lid, 0, 0, opts);
    ASSERT_EQ(sides[2].hca.device->AttachMcast(second, mgid, kMlid), 0);
    // h3 has a UD QP with the same Q_Key but did not join; its port is not in the tree either.
    const auto payload = TestBytes(900, 3);
    sides[0].Write(0, payload);
    for (uint32_t h = 0; h < 4; ++h)
    {
        ASSERT_EQ(sides[h].PostRecv(100 + h, 65536, 4096), 0);
    }
    RdmaRecvWr extra;
    extra.wr_id = 200;
    extra.sg_list = {sides[2].Sge(131072, 4096)};
    ASSERT_EQ(second->PostRecv(extra), 0);

    SendToGroup(0, 900, 1);
    RunFor(MicroSeconds(100));

    auto sent = sides[0].PollSend();
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].status, RdmaWcStatus::SUCCESS);
    // h0 (by loopback), h1 and both of h2's QPs; h3 nothing.
    for (uint32_t h : {0u, 1u, 2u})
    {
        auto got = sides[h].PollRecv();
        ASSERT_EQ(got.size(), h == 2 ? 2u : 1u) << "host " << h;
        for (const RdmaWc& wc : got)
        {
            EXPECT_EQ(wc.status, RdmaWcStatus::SUCCESS);
            EXPECT_EQ(wc.byte_len, 40u + 900u);
            EXPECT_TRUE(wc.wc_flags & RDMA_WC_GRH);
            EXPECT_EQ(wc.src_qp, sides[0].qp->GetQpNum());
            EXPECT_EQ(wc.slid, sides[0].lid);
        }
        EXPECT_EQ(sides[h].Read(65536 + 40, 900), payload) << "host " << h;
        // The GRH in the first 40 bytes names the group as its destination GID.
        const auto grh = sides[h].Read(65536, 40);
        EXPECT_EQ(std::vector<uint8_t>(grh.begin() + 24, grh.end()),
                  std::vector<uint8_t>(mgid.begin(), mgid.end()));
    }
    EXPECT_EQ(sides[2].Read(131072 + 40, 900), payload);
    EXPECT_TRUE(sides[3].PollRecv().empty());
    EXPECT_EQ(sides[3].hca.engine->GetCounters().packetsReceived, 0u);
    // Copies: leaf0 sends to h1 and spine0 (one copy beyond the first), spine0 only to leaf1,
    // leaf1 only to h2.
    EXPECT_EQ(Switch(4)->GetMulticastCopies(), 1u);
    EXPECT_EQ(Switch(5)->GetMulticastCopies(), 0u);
    EXPECT_EQ(Switch(6)->GetMulticastCopies(), 0u);
    EXPECT_EQ(Switch(7)->GetForwardedPackets(), 0u); // spine1 is not in the tree
    ExpectSwitchBuffersEmpty();
    // The PMA's PortCountersExtended tell multicast from unicast (IBA vol. 1 §16.1.4.11).
    EXPECT_EQ(fabric.HostPort(0)->GetCounters().extMulticastXmitPkts, 1u);
    EXPECT_EQ(fabric.HostPort(1)->GetCounters().extMulticastRcvPkts, 1u);
    EXPECT_EQ(fabric.HostPort(3)->GetCounters().extMulticastRcvPkts, 0u);
    EXPECT_EQ(fabric.Port(4, 3)->GetCounters().extMulticastXmitPkts, 1u); // leaf0 to spine0

    // Detached, h1 takes no more copies (its port still does: the engine counts it); the QP
    // cannot be destroyed while attached.
    EXPECT_EQ(sides[1].hca.device->DestroyQp(sides[1].qp), EBUSY);
    ASSERT_EQ(sides[1].hca.device->DetachMcast(sides[1].qp, mgid, kMlid), 0);
    EXPECT_EQ(sides[1].hca.device->DetachMcast(sides[1].qp, mgid, kMlid), EINVAL);
    ASSERT_EQ(sides[1].PostRecv(101, 65536, 4096), 0);
    ASSERT_EQ(sides[2].PostRecv(102, 65536, 4096), 0);
    SendToGroup(0, 900, 2);
    RunFor(MicroSeconds(100));
    EXPECT_TRUE(sides[1].PollRecv().empty());
    EXPECT_EQ(sides[1].hca.engine->GetCounters().multicastNoMember, 1u);
    // h2's first QP takes it; its second has no receive WQE left: dropped there and counted.
    EXPECT_EQ(sides[2].PollRecv().size(), 1u);
    EXPECT_EQ(sides[2].hca.engine->GetDropCount(RdmaDropReason::NoReceiveWqe), 1u);
}

TEST_F(IbMulticast, ABurstFromEveryLeafCrossesTheTreeWithoutLossOrStuckBuffers)
{
    // Every member sends 64 full-MTU messages at once, so multicast heads wait behind each
    // other (and for credit) in the switches' input buffers; each member then takes every
    // other member's 64 and its own 64 (loopback), in order per sender, and unicast traffic
    // still flows afterwards.
    const RdmaGid mgid = Mgid();
    const std::vector<uint32_t> members = {0, 1, 2};
    constexpr uint32_t kPerSender = 64;
    for (uint32_t h : members)
    {
        ASSERT_EQ(sides[h].hca.device->AttachMcast(sides[h].qp, mgid, kMlid), 0);
        sides[h].Write(0, std::vector<uint8_t>(1024, static_cast<uint8_t>(0x10 + h)));
        for (uint32_t i = 0; i < kPerSender * members.size(); ++i)
        {
            ASSERT_EQ(sides[h].PostRecv(i, 65536 + i * 1100ull, 1100), 0);
        }
    }
    for (uint32_t i = 0; i < kPerSender; ++i)
    {
        for (uint32_t h : members)
        {
            SendToGroup(h, 1024, i);
        }
    }
    RunFor(MilliSeconds(2));
    for (uint32_t h : members)
    {
        auto sent = sides[h].PollSend();
        EXPECT_EQ(sent.size(), kPerSender) << "host " << h;
        auto got = sides[h].PollRecv();
        ASSERT_EQ(got.size(), kPerSender * members.size()) << "host " << h;
        std::array<uint32_t, 4> fromEach{};
        for (const RdmaWc& wc : got)
        {
            ASSERT_EQ(wc.status, RdmaWcStatus::SUCCESS);
            const auto first = sides[h].Read(65536 + wc.wr_id * 1100 + 40, 1);
            const uint32_t sender = first[0] - 0x10u;
            ASSERT_LT(sender, 3u);
            EXPECT_EQ(wc.src_qp, sides[sender].qp->GetQpNum());
            ++fromEach[sender];
        }
        for (uint32_t s : members)
        {
            EXPECT_EQ(fromEach[s], kPerSender) << "host " << h << " from " << s;
        }
    }
    ExpectSwitchBuffersEmpty();
    // A unicast UD send between the same hosts afterwards.
    RdmaAhAttr av;
    av.dlid = sides[3].lid;
    av.port_num = 1;
    Ptr<RdmaAh> ah = sides[0].hca.device->CreateAh(sides[0].pd, av);
    ASSERT_TRUE(ah);
    ASSERT_EQ(sides[3].PostRecv(7, 0, 2048), 0);
    RdmaSendWr w = Wr(9, RdmaWrOpcode::SEND, {sides[0].Sge(0, 1000)});
    w.ud.ah = PeekPointer(ah);
    w.ud.remote_qpn = sides[3].qp->GetQpNum();
    w.ud.remote_qkey = kQkey;
    ASSERT_EQ(sides[0].qp->PostSend(w), 0);
    RunFor(MicroSeconds(100));
    EXPECT_EQ(sides[3].PollRecv().size(), 1u);
}

TEST_F(IbMulticast, AMemberWhosePortIsDownCostsOnlyItsOwnCopy)
{
    const RdmaGid mgid = Mgid();
    for (uint32_t h : {0u, 1u, 2u})
    {
        ASSERT_EQ(sides[h].hca.device->AttachMcast(sides[h].qp, mgid, kMlid), 0);
        ASSERT_EQ(sides[h].PostRecv(h, 65536, 4096), 0);
    }
    // leaf0's port to h1 goes down: the copy for it is skipped, the others go on.
    fabric.Port(4, 2)->SetPhysicalLinkDown();
    RunFor(MicroSeconds(10));
    SendToGroup(2, 500, 1);
    RunFor(MicroSeconds(100));
    EXPECT_EQ(sides[0].PollRecv().size(), 1u);
    EXPECT_TRUE(sides[1].PollRecv().empty());
    EXPECT_EQ(sides[2].PollRecv().size(), 1u); // loopback
    ExpectSwitchBuffersEmpty();
}

TEST_F(IbMulticast, AttachIsForUdQpsAndMulticastGidsOnly)
{
    QpOptions rc;
    Ptr<RdmaQp> rcQp = CreateQp(sides[0], rc);
    ASSERT_TRUE(rcQp);
    EXPECT_EQ(sides[0].hca.device->AttachMcast(rcQp, Mgid(), kMlid), EINVAL);
    RdmaGid unicast{};
    unicast[0] = 0xFE;
    unicast[1] = 0x80;
    EXPECT_EQ(sides[0].hca.device->AttachMcast(sides[0].qp, unicast, kMlid), EINVAL);
    // RoCE v2's names for IPv4 addresses (::ffff:a.b.c.d): a group (224.0.0.0/4) is multicast,
    // a host address is not.
    RdmaGid v4{};
    v4[10] = 0xFF;
    v4[11] = 0xFF;
    v4[12] = 10;
    EXPECT_EQ(sides[0].hca.device->AttachMcast(sides[0].qp, v4, kMlid), EINVAL);
    v4[12] = 224;
    v4[15] = 7;
    EXPECT_EQ(sides[0].hca.device->AttachMcast(sides[0].qp, v4, 0xFFFF), 0);
    EXPECT_EQ(sides[0].hca.device->DetachMcast(sides[0].qp, v4, 0xFFFF), 0);
    EXPECT_EQ(sides[0].hca.device->AttachMcast(sides[0].qp, Mgid(), kMlid), 0);
    EXPECT_EQ(sides[0].hca.device->AttachMcast(sides[0].qp, Mgid(), kMlid), 0); // again: no-op
    EXPECT_EQ(sides[0].hca.device->GetMcastAttachments(sides[0].qp), 1u);
    sides[0].hca.device->DetachAllMcast(sides[0].qp);
    EXPECT_EQ(sides[0].hca.device->GetMcastAttachments(sides[0].qp), 0u);
}

} // namespace
