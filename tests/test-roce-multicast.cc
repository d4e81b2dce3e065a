// RoCEv2 multicast on the Ethernet fabric: EthMulticastRouter writes a group's tree into the
// switches' multicast routes (as IGMP snooping and PIM would have), a switch copies a frame to a
// group to every port of its route but the one it came in by (each copy admitted by the MMU on
// its own), copies keep the group's MAC (RFC 1112 §6.4, RFC 2464 §7), host NICs take group
// datagrams, the sending RoCE port loops its own back, and the engine hands the packet to every
// UD QP attached to the group's GID. The InfiniBand twin is test-ib-multicast.cc.
#include "test-roce-rdma-fixture.h"

#include "models/common/ip-address-bytes.h"
#include "models/roce/eth-multicast-router.h"

#include "ns3/boolean.h"
#include "ns3/enum.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>
#include <vector>

using namespace ns3;
using namespace cnuas_test;

namespace
{

constexpr uint32_t kGroupIp = 0xEF010203; // 239.1.2.3 (administratively scoped, RFC 2365)
constexpr uint32_t kQkey = 0x11111111;

/// A group as the router and a GID name it: ::ffff:a.b.c.d for IPv4, the address for IPv6.
RdmaGid
GroupGid(const Ipv6Bytes& group)
{
    RdmaGid g{};
    std::copy(group.begin(), group.end(), g.begin());
    return g;
}

/// ff0e::4:2, a global-scope IPv6 group (RFC 4291 §2.7).
Ipv6Bytes
Ipv6Group()
{
    Ipv6Bytes g{};
    g[0] = 0xFF;
    g[1] = 0x0E;
    g[13] = 0x04;
    g[15] = 0x02;
    return g;
}

/// Every frame a port sends or receives, as bytes (without FCS).
struct FrameLog
{
    std::vector<std::vector<uint8_t>> tx;
    std::vector<std::vector<uint8_t>> rx;
    void On(Time, const uint8_t* p, uint32_t n, bool transmit)
    {
        (transmit ? tx : rx).emplace_back(p, p + n);
    }
};

uint64_t
DstMac(const std::vector<uint8_t>& frame)
{
    uint64_t m = 0;
    for (int i = 0; i < 6; ++i)
    {
        m = m << 8 | frame[i];
    }
    return m;
}

/// Frames (data, not PFC) a host port received, over all priorities.
uint64_t
RxFrames(Ptr<EthNetDevice> port)
{
    const EthPortCounters c = port->GetCounters();
    uint64_t n = 0;
    for (uint8_t p = 0; p < kEthPriorities; ++p)
    {
        n += c.rxFrames[p];
    }
    return n;
}

/// Four hosts on two leaves and two spines (h0, h1 on leaf0; h2, h3 on leaf1), a UD QP each,
/// and a multicast router. Nodes: h0..h3 (0-3), leaf0 (4), leaf1 (5), spine0 (6), spine1 (7); a
/// leaf's ports 1-2 go to its hosts, 3 to spine0, 4 to spine1; spine s's port l+1 to leaf l.
class RoceMulticast : public RocePairTest
{
  protected:
    void SetUp() override
    {
        Build(BuildTopologyFromSpec("leaf-spine:leaves=2,spines=2,hosts=2"),
              RoceHelper(),
              [this](EthFabricHelper& h) { Configure(h); });
        router = CreateObject<EthMulticastRouter>();
        opts.type = RdmaQpType::UD;
        opts.qkey = kQkey;
        sides.resize(4);
        for (uint32_t h = 0; h < 4; ++h)
        {
            MakeSide(sides[h], h, opts);
            Connect(sides[h].qp, GidOf(h), 0, opts); // UD: INIT (Q_Key), RTR, RTS
        }
        group = EthMulticastRouter::GroupFromIpv4(kGroupIp);
    }

    virtual void Configure(EthFabricHelper&)
    {
    }

    Ptr<EthSwitch> Sw(uint32_t node) const
    {
        return fabric.Switch(node);
    }

    std::vector<uint16_t> Route(uint32_t node, const Ipv6Bytes& g) const
    {
        uint32_t ip4 = 0;
        const std::vector<uint16_t>* r =
            RoceGidToIpv4(GroupGid(g), ip4) ? Sw(node)->GetMulticastRoute(ip4)
                                         : Sw(node)->GetMulticastRoute6(g);
        return r ? *r : std::vector<uint16_t>();
    }

    void JoinAndAttach(uint32_t h, const Ipv6Bytes& g)
    {
        ASSERT_TRUE(router->Join(fabric.HostPort(h), g)) << "host " << h;
        ASSERT_EQ(sides[h].hca.device->AttachMcast(sides[h].qp, GroupGid(g), 0xFFFF), 0)
            << sides[h].hca.device->GetLastError();
    }

    /// Host `h` sends `len` bytes from its region's offset 0 to group `g`.
    void SendToGroup(uint32_t h, const Ipv6Bytes& g, uint32_t len, uint64_t wrId)
    {
        RoceSide& s = sides[h];
        RdmaAhAttr av;
        av.port_num = 1;
        av.is_global = 1;
        av.grh.dgid = GroupGid(g);
        av.grh.hop_limit = 64;
        av.grh.sgid_index = EthIsIpv6Multicast(g) ? 1 : 0;
        Ptr<RdmaAh> ah = s.hca.device->CreateAh(s.pd, av);
        ASSERT_TRUE(ah) << s.hca.device->GetLastError();
        ahs.push_back(ah);
        RdmaSendWr w = Wr(wrId, RdmaWrOpcode::SEND, {s.Sge(0, len)});
        w.ud.ah = PeekPointer(ah);
        w.ud.remote_qpn = kRdmaMulticastQpn;
        w.ud.remote_qkey = kQkey;
        ASSERT_EQ(s.qp->PostSend(w), 0) << s.hca.device->GetLastError();
    }

    /// Every switch's MMU holds nothing again and no port holds its peer paused.
    void ExpectBuffersEmpty() const
    {
        for (uint32_t node = 4; node < 8; ++node)
        {
            Ptr<SharedBufferMmu> mmu = Sw(node)->GetMmu();
            EXPECT_EQ(mmu->GetSharedUsed(), 0u) << "node " << node;
            for (uint16_t p = 0; p < Sw(node)->GetNPorts(); ++p)
            {
                for (uint8_t prio = 0; prio < kEthPriorities; ++prio)
                {
                    EXPECT_EQ(mmu->GetIngressBytes(p, prio), 0u) << node << ":" << p + 1;
                    EXPECT_EQ(mmu->GetHeadroomUsed(p, prio), 0u) << node << ":" << p + 1;
                    EXPECT_FALSE(Sw(node)->GetPort(p + 1)->IsPauseAsserted(prio));
                }
                EXPECT_EQ(Sw(node)->GetPort(p + 1)->GetQueuedBytes(), 0u);
            }
        }
    }

    uint64_t TotalDrops() const
    {
        uint64_t n = 0;
        for (const Ptr<EthNetDevice>& p : fabric.AllPorts())
        {
            n += p->GetTotalDrops();
        }
        return n;
    }

    Ptr<EthMulticastRouter> router;
    QpOptions opts;
    std::vector<RoceSide> sides;
    std::vector<Ptr<RdmaAh>> ahs;
    Ipv6Bytes group{};
};

/// What names a group, asked alike by ibv_attach_mcast, the RoCE port and the router (the
/// kernel's rdma_is_multicast_addr): ff00::/8, or IPv4-mapped 224.0.0.0/4; an IPv4-mapped
/// unicast address or an IPv6 unicast one that merely looks mapped is not.
TEST(MulticastAddress, AGroupIsAnIpv6OneOrAnIpv4MappedOne)
{
    auto v4 = [](uint32_t ip) {
        std::array<uint8_t, 16> a{};
        a[10] = a[11] = 0xFF;
        a[12] = static_cast<uint8_t>(ip >> 24);
        a[13] = static_cast<uint8_t>(ip >> 16);
        a[14] = static_cast<uint8_t>(ip >> 8);
        a[15] = static_cast<uint8_t>(ip);
        return a;
    };
    EXPECT_TRUE(IsMulticastAddress(v4(kGroupIp)));
    EXPECT_TRUE(IsMulticastAddress(v4(0xE0000001)));  // 224.0.0.1
    EXPECT_FALSE(IsMulticastAddress(v4(0xDFFFFFFF))); // 223.255.255.255
    EXPECT_FALSE(IsMulticastAddress(v4(0xF0000001))); // 240.0.0.1, reserved (RFC 1112 §4)
    EXPECT_FALSE(IsMulticastAddress(v4(0x0A000001))); // 10.0.0.1
    std::array<uint8_t, 16> ff02{0xFF, 0x02};
    ff02[15] = 1;
    EXPECT_TRUE(IsMulticastAddress(ff02));
    std::array<uint8_t, 16> fe80{0xFE, 0x80};
    EXPECT_FALSE(IsMulticastAddress(fe80));
    // ::ffff with a non-zero prefix is not IPv4-mapped: the IPv6 rule decides.
    std::array<uint8_t, 16> notMapped = v4(kGroupIp);
    notMapped[0] = 0x20;
    uint32_t ip = 0;
    EXPECT_FALSE(Ipv4FromMapped(notMapped, ip));
    EXPECT_FALSE(IsMulticastAddress(notMapped));
    ASSERT_TRUE(Ipv4FromMapped(v4(kGroupIp), ip));
    EXPECT_EQ(ip, kGroupIp);
}

TEST_F(RoceMulticast, TheRouterWritesAPrunedTreeThroughOneSpine)
{
    ASSERT_EQ(fabric.switchAt.size(), 8u);
    ASSERT_TRUE(Sw(4) && Sw(5) && Sw(6) && Sw(7));
    for (uint32_t h : {0u, 1u, 2u})
    {
        ASSERT_TRUE(router->Join(fabric.HostPort(h), group));
    }
    // The root is the first spine found (both are one hop from every member switch); the
    // tree is leaf0 (h0, h1, spine0), spine0 (leaf0, leaf1), leaf1 (h2, spine0); spine1 is out
    // of it, with one route toward it (for senders that are not members): its port to leaf0.
    EXPECT_EQ(router->GetRoot(group), Sw(6));
    EXPECT_EQ(Route(4, group), (std::vector<uint16_t>{1, 2, 3}));
    EXPECT_EQ(Route(5, group), (std::vector<uint16_t>{1, 3}));
    EXPECT_EQ(Route(6, group), (std::vector<uint16_t>{1, 2}));
    EXPECT_EQ(Route(7, group), (std::vector<uint16_t>{1}));
    EXPECT_EQ(router->GetTreeSwitches(group).size(), 3u);
    EXPECT_EQ(router->GetRouteSwitches(group).size(), 4u);
    EXPECT_EQ(router->GetNGroups(), 1u);
    EXPECT_EQ(router->GetJoins(), 3u);

    // The same members joined in another order give the same tree.
    Ptr<EthMulticastRouter> other = CreateObject<EthMulticastRouter>();
    const Ipv6Bytes g2 = EthMulticastRouter::GroupFromIpv4(kGroupIp + 1);
    for (uint32_t h : {2u, 1u, 0u})
    {
        ASSERT_TRUE(other->Join(fabric.HostPort(h), g2));
    }
    EXPECT_EQ(Route(4, g2), Route(4, group));
    EXPECT_EQ(Route(5, g2), Route(5, group));
    EXPECT_EQ(Route(6, g2), Route(6, group));

    // What is refused, changing nothing: a second join, a switch's port, an address that is
    // not a group, a host address v4-mapped, no port; leaving what was not joined.
    const uint64_t written = router->GetRoutesWritten();
    EXPECT_FALSE(router->Join(fabric.HostPort(0), group));
    EXPECT_FALSE(router->Join(fabric.Port(4, 1), group));
    EXPECT_FALSE(router->Join(fabric.HostPort(3), fabric.HostIp6(3)));
    EXPECT_FALSE(
        router->Join(fabric.HostPort(3), EthMulticastRouter::GroupFromIpv4(fabric.HostIp(0))));
    EXPECT_FALSE(router->Join(nullptr, group));
    EXPECT_FALSE(router->Leave(fabric.HostPort(3), group));
    EXPECT_FALSE(router->Leave(fabric.HostPort(0), EthMulticastRouter::GroupFromIpv4(0xEF000001)));
    EXPECT_EQ(router->GetRoutesWritten(), written);
    EXPECT_EQ(router->GetJoins(), 3u);
    EXPECT_EQ(router->GetNGroups(), 1u);

    // The switch's own checks: a group only, ports it has.
    EXPECT_FALSE(Sw(4)->SetMulticastRoute(fabric.HostIp(0), {1}));
    EXPECT_FALSE(Sw(4)->SetMulticastRoute(kGroupIp + 7, {9}));
    EXPECT_FALSE(Sw(4)->SetMulticastRoute6(fabric.HostIp6(0), {1}));
    EXPECT_EQ(Sw(4)->GetMulticastRoute(kGroupIp + 7), nullptr);
}

TEST_F(RoceMulticast, ASendReachesEveryAttachedQpOnceAndNoOtherHost)
{
    for (uint32_t h : {0u, 1u, 2u})
    {
        JoinAndAttach(h, group);
    }
    // A second QP on h2 in the same group gets its own copy.
    RoceSide second;
    second.hca = sides[2].hca;
    second.pd = sides[2].pd;
    second.mr = sides[2].mr;
    second.sendCq = sides[2].sendCq;
    second.recvCq = sides[2].hca.device->CreateCq(64);
    MakeSide(second, 2, opts);
    Connect(second.qp, GidOf(2), 0, opts);
    ASSERT_EQ(sides[2].hca.device->AttachMcast(second.qp, GroupGid(group), 0xFFFF), 0);
    // h3 has a UD QP with the same Q_Key but did not join.
    const auto payload = TestBytes(900, 3);
    sides[0].Write(0, payload);
    for (uint32_t h = 0; h < 4; ++h)
    {
        ASSERT_EQ(sides[h].PostRecv(100 + h, 65536, 4096), 0);
    }
    ASSERT_EQ(second.PostRecv(200, 131072, 4096), 0);
    FrameLog atH0;
    FrameLog atH1;
    fabric.HostPort(0)->AddSniffer(MakeCallback(&FrameLog::On, &atH0));
    fabric.HostPort(1)->AddSniffer(MakeCallback(&FrameLog::On, &atH1));

    SendToGroup(0, group, 900, 1);
    RunFor(MicroSeconds(100));

    auto sent = sides[0].sendCq->Poll(10);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].status, RdmaWcStatus::SUCCESS);
    // h0 (by loopback), h1 and both of h2's QPs; h3 nothing.
    for (uint32_t h : {0u, 1u, 2u})
    {
        auto got = sides[h].recvCq->Poll(10);
        ASSERT_EQ(got.size(), 1u) << "host " << h;
        EXPECT_EQ(got[0].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(got[0].byte_len, 40u + 900u);
        EXPECT_TRUE(got[0].wc_flags & RDMA_WC_GRH);
        EXPECT_EQ(got[0].src_qp, sides[0].qp->GetQpNum());
        EXPECT_EQ(sides[h].Read(65536 + 40, 900), payload) << "host " << h;
        // Annex A17.4.5.1: the IPv4 header in bytes 20..39, its destination the group.
        const auto grh = sides[h].Read(65536, 40);
        const uint32_t dst = uint32_t(grh[36]) << 24 | uint32_t(grh[37]) << 16 |
                             uint32_t(grh[38]) << 8 | grh[39];
        EXPECT_EQ(dst, kGroupIp) << "host " << h;
    }
    auto got2 = second.recvCq->Poll(10);
    ASSERT_EQ(got2.size(), 1u);
    EXPECT_EQ(sides[2].Read(131072 + 40, 900), payload);
    EXPECT_TRUE(sides[3].recvCq->Poll(10).empty());
    EXPECT_EQ(RxFrames(fabric.HostPort(3)), 0u);
    EXPECT_EQ(sides[3].hca.engine->GetCounters().packetsReceived, 0u);
    EXPECT_EQ(sides[0].hca.port->GetMulticastLoopedBack(), 1u);
    // The switches: leaf0 copies to h1 and spine0, spine0 to leaf1, leaf1 to h2; spine1 idle.
    EXPECT_EQ(Sw(4)->GetMulticastCopies(), 2u);
    EXPECT_EQ(Sw(6)->GetMulticastCopies(), 1u);
    EXPECT_EQ(Sw(5)->GetMulticastCopies(), 1u);
    EXPECT_EQ(Sw(7)->GetForwarded(), 0u);
    EXPECT_EQ(TotalDrops(), 0u);
    ExpectBuffersEmpty();
    // On the wire the group's MAC, 01:00:5e + the low 23 bits of 239.1.2.3 (RFC 1112 §6.4),
    // from the sender and after each switch; the source MAC is the last hop's, as for unicast.
    ASSERT_EQ(atH0.tx.size(), 1u);
    EXPECT_EQ(DstMac(atH0.tx[0]), 0x01005E010203ULL);
    ASSERT_EQ(atH1.rx.size(), 1u);
    EXPECT_EQ(DstMac(atH1.rx[0]), 0x01005E010203ULL);
    EXPECT_EQ(atH0.rx.size(), 0u); // never sent back down the sender's own port

    // Detached, h1 takes no copy (its NIC still gets the frame: the engine counts it).
    ASSERT_EQ(sides[1].hca.device->DetachMcast(sides[1].qp, GroupGid(group), 0xFFFF), 0);
    ASSERT_EQ(sides[2].PostRecv(102, 65536, 4096), 0);
    SendToGroup(0, group, 900, 2);
    RunFor(MicroSeconds(100));
    EXPECT_TRUE(sides[1].recvCq->Poll(10).empty());
    EXPECT_EQ(sides[1].hca.engine->GetCounters().multicastNoMember, 1u);
    EXPECT_EQ(sides[2].recvCq->Poll(10).size(), 1u);
}

/// The same fabric with a static PFC threshold low enough for a burst to cross it.
class RoceMulticastPfc : public RoceMulticast
{
  protected:
    void Configure(EthFabricHelper& h) override
    {
        h.SetMmuAttribute("ThresholdMode", EnumValue(0)); // Static
        h.SetMmuAttribute("XoffBytes", UintegerValue(20000));
        h.SetMmuAttribute("XonBytes", UintegerValue(10000));
    }
};

TEST_F(RoceMulticastPfc, ABurstFromThreeSendersCrossesTheTreeWithoutLossAndBuffersEmpty)
{
    // Every member sends 64 messages of 1 KiB at once: each host's link carries two other
    // senders' copies at its line rate's worth, so switch queues build, PFC pauses (priority 3
    // is lossless) and resumes, and every copy is charged and released on its own. Each member
    // then holds every other member's 64 and its own 64 (loopback), and the buffers are empty.
    const std::vector<uint32_t> members = {0, 1, 2};
    constexpr uint32_t kPerSender = 64;
    for (uint32_t h : members)
    {
        JoinAndAttach(h, group);
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
            SendToGroup(h, group, 1024, i);
        }
    }
    RunFor(MilliSeconds(2));
    for (uint32_t h : members)
    {
        EXPECT_EQ(sides[h].sendCq->Poll(1000).size(), kPerSender) << "host " << h;
        auto got = sides[h].recvCq->Poll(1000);
        ASSERT_EQ(got.size(), kPerSender * members.size()) << "host " << h;
        std::array<uint32_t, 3> fromEach{};
        for (const RdmaWc& wc : got)
        {
            ASSERT_EQ(wc.status, RdmaWcStatus::SUCCESS);
            const uint32_t sender = sides[h].Read(65536 + wc.wr_id * 1100 + 40, 1)[0] - 0x10u;
            ASSERT_LT(sender, 3u);
            EXPECT_EQ(wc.src_qp, sides[sender].qp->GetQpNum());
            ++fromEach[sender];
        }
        for (uint32_t s : members)
        {
            EXPECT_EQ(fromEach[s], kPerSender) << "host " << h << " from " << s;
        }
    }
    EXPECT_EQ(RxFrames(fabric.HostPort(3)), 0u);
    EXPECT_EQ(TotalDrops(), 0u);
    // Each sender's 64 frames are copied: leaf0 takes h0's and h1's (two copies each) and
    // h2's from spine0 (two copies); spine0 copies one each way; leaf1 h2's (one), others' (one).
    EXPECT_EQ(Sw(4)->GetMulticastCopies(), 3u * 2 * kPerSender);
    EXPECT_EQ(Sw(6)->GetMulticastCopies(), 3u * kPerSender);
    EXPECT_EQ(Sw(5)->GetMulticastCopies(), 3u * kPerSender);
    uint64_t pauses = 0;
    for (uint32_t node = 4; node < 8; ++node)
    {
        for (const Ptr<EthNetDevice>& p : fabric.ports[node])
        {
            pauses += p->GetCounters().pauseSent[3];
        }
    }
    EXPECT_GT(pauses, 0u) << "the burst was meant to make the switches pause";
    ExpectBuffersEmpty();
}

TEST_F(RoceMulticast, ALeavePrunesTheTreeAndTheLastLeaveClearsIt)
{
    for (uint32_t h : {0u, 1u, 2u})
    {
        JoinAndAttach(h, group);
    }
    ASSERT_TRUE(router->Leave(fabric.HostPort(2), group));
    // Only leaf0 is left in the tree: it is the root, with its two member ports and no
    // uplink; the spines and leaf1 hold only their one port toward it (for non-members).
    EXPECT_EQ(router->GetRoot(group), Sw(4));
    EXPECT_EQ(Route(4, group), (std::vector<uint16_t>{1, 2}));
    EXPECT_EQ(router->GetTreeSwitches(group).size(), 1u);
    EXPECT_EQ(Route(5, group).size(), 1u);
    EXPECT_EQ(Route(6, group).size(), 1u);
    EXPECT_EQ(Route(7, group).size(), 1u);
    EXPECT_EQ(router->GetLeaves(), 1u);
    EXPECT_FALSE(router->Leave(fabric.HostPort(2), group)); // again: nothing to do

    // h2's QP is still attached, but no frame reaches its port any more.
    for (uint32_t h = 0; h < 4; ++h)
    {
        ASSERT_EQ(sides[h].PostRecv(h, 65536, 4096), 0);
    }
    SendToGroup(0, group, 500, 1);
    RunFor(MicroSeconds(100));
    EXPECT_EQ(sides[0].recvCq->Poll(10).size(), 1u); // loopback
    EXPECT_EQ(sides[1].recvCq->Poll(10).size(), 1u);
    EXPECT_TRUE(sides[2].recvCq->Poll(10).empty());
    EXPECT_EQ(RxFrames(fabric.HostPort(2)), 0u);
    EXPECT_EQ(Sw(6)->GetForwarded(), 0u);
    EXPECT_EQ(Sw(4)->GetMulticastCopies(), 1u);

    // The last members leave (LeaveAll for one): the group and its entries are gone.
    EXPECT_EQ(router->LeaveAll(fabric.HostPort(0)), 1u);
    ASSERT_TRUE(router->Leave(fabric.HostPort(1), group));
    EXPECT_EQ(router->GetNGroups(), 0u);
    EXPECT_EQ(router->GetRoot(group), nullptr);
    for (uint32_t node = 4; node < 8; ++node)
    {
        EXPECT_EQ(Sw(node)->GetNMulticastRoutes(), 0u) << "node " << node;
    }
}

TEST_F(RoceMulticast, AGroupWithoutARouteIsACountedDrop)
{
    // No member at all: h0's frame dies at leaf0 as NoRoute; its own port still loops it back
    // (no QP of h0 is attached: the engine counts it and nothing completes).
    for (uint32_t h = 0; h < 4; ++h)
    {
        ASSERT_EQ(sides[h].PostRecv(h, 65536, 4096), 0);
    }
    SendToGroup(0, group, 300, 1);
    RunFor(MicroSeconds(100));
    EXPECT_EQ(fabric.Port(4, 1)->GetDropCount(EthDropReason::NoRoute), 1u);
    EXPECT_EQ(sides[0].hca.engine->GetCounters().multicastNoMember, 1u);
    for (uint32_t h = 0; h < 4; ++h)
    {
        EXPECT_TRUE(sides[h].recvCq->Poll(10).empty()) << "host " << h;
    }
    for (uint32_t h = 1; h < 4; ++h)
    {
        EXPECT_EQ(RxFrames(fabric.HostPort(h)), 0u) << "host " << h;
    }
    // h0 alone in the group: leaf0's entry is only the port the frame comes in by, which it
    // never sends back out of (counted as pruned, not as a drop: no other member exists);
    // h0's own QP gets its copy by loopback.
    JoinAndAttach(0, group);
    EXPECT_EQ(Route(4, group), (std::vector<uint16_t>{1}));
    SendToGroup(0, group, 300, 2);
    RunFor(MicroSeconds(100));
    EXPECT_EQ(fabric.Port(4, 1)->GetDropCount(EthDropReason::NoRoute), 1u);
    EXPECT_EQ(Sw(4)->GetMulticastPruned(), 1u);
    EXPECT_EQ(sides[0].recvCq->Poll(10).size(), 1u);
    EXPECT_EQ(Sw(4)->GetMulticastCopies(), 0u);
    ExpectBuffersEmpty();
}

/// IP multicast lets a host send to a group it is not in (RFC 1112 §4): h0, under a leaf that
/// is not in the group's tree (the members are both under leaf1), sends; leaf0's route toward
/// the tree takes the frame up to a spine and on to leaf1, which copies it to both members.
/// Without the routes toward the tree (SenderRoutes false) it dies at leaf0, counted.
TEST_F(RoceMulticast, AHostOutsideTheGroupSendsToItFromOffTheTree)
{
    for (uint32_t h : {2u, 3u})
    {
        JoinAndAttach(h, group);
    }
    EXPECT_EQ(router->GetTreeSwitches(group).size(), 1u); // leaf1 alone
    EXPECT_EQ(Route(4, group).size(), 1u);                // leaf0: toward the tree
    for (uint32_t h = 0; h < 4; ++h)
    {
        ASSERT_EQ(sides[h].PostRecv(h, 65536, 4096), 0);
    }
    const auto payload = TestBytes(600, 5);
    sides[0].Write(0, payload);
    SendToGroup(0, group, 600, 1);
    RunFor(MicroSeconds(100));
    for (uint32_t h : {2u, 3u})
    {
        auto got = sides[h].recvCq->Poll(10);
        ASSERT_EQ(got.size(), 1u) << "host " << h;
        EXPECT_EQ(sides[h].Read(65536 + 40, 600), payload) << "host " << h;
    }
    EXPECT_TRUE(sides[1].recvCq->Poll(10).empty());
    EXPECT_EQ(RxFrames(fabric.HostPort(1)), 0u);
    EXPECT_EQ(TotalDrops(), 0u);
    EXPECT_EQ(Sw(5)->GetMulticastCopies(), 2u);

    // Member-only trees: leaf0 holds no entry, and the next frame is a counted drop there.
    router->SetAttribute("SenderRoutes", BooleanValue(false));
    router->Recompute();
    EXPECT_TRUE(Route(4, group).empty());
    EXPECT_EQ(router->GetRouteSwitches(group).size(), 1u);
    SendToGroup(0, group, 600, 2);
    RunFor(MicroSeconds(100));
    EXPECT_EQ(fabric.Port(4, 1)->GetDropCount(EthDropReason::NoRoute), 1u);
    for (uint32_t h : {2u, 3u})
    {
        EXPECT_TRUE(sides[h].recvCq->Poll(10).empty()) << "host " << h;
    }
    ExpectBuffersEmpty();
}

TEST_F(RoceMulticast, AnIpv6GroupTravelsTheSameWayTo3333Macs)
{
    const Ipv6Bytes g6 = Ipv6Group();
    for (uint32_t h : {1u, 3u})
    {
        JoinAndAttach(h, g6);
    }
    for (uint32_t h = 0; h < 4; ++h)
    {
        ASSERT_EQ(sides[h].PostRecv(h, 65536, 4096), 0);
    }
    FrameLog atH3;
    fabric.HostPort(3)->AddSniffer(MakeCallback(&FrameLog::On, &atH3));
    // h0 is not a member but sends through leaf0, which is in the tree (h1's switch).
    const auto payload = TestBytes(700, 8);
    sides[0].Write(0, payload);
    SendToGroup(0, g6, 700, 1);
    RunFor(MicroSeconds(100));
    for (uint32_t h : {1u, 3u})
    {
        auto got = sides[h].recvCq->Poll(10);
        ASSERT_EQ(got.size(), 1u) << "host " << h;
        EXPECT_EQ(got[0].network_hdr_type, RDMA_NETWORK_IPV6);
        EXPECT_EQ(sides[h].Read(65536 + 40, 700), payload);
        const auto grh = sides[h].Read(65536, 40); // the IPv6 header: destination at 24
        EXPECT_EQ(std::vector<uint8_t>(grh.begin() + 24, grh.end()),
                  std::vector<uint8_t>(g6.begin(), g6.end()));
    }
    EXPECT_TRUE(sides[0].recvCq->Poll(10).empty()); // looped back, but h0's QP is no member
    EXPECT_TRUE(sides[2].recvCq->Poll(10).empty());
    EXPECT_EQ(RxFrames(fabric.HostPort(2)), 0u);
    ASSERT_EQ(atH3.rx.size(), 1u);
    EXPECT_EQ(DstMac(atH3.rx[0]), 0x333300040002ULL); // 33:33 + the last 4 bytes (RFC 2464 §7)
    EXPECT_EQ(Route(4, g6), (std::vector<uint16_t>{2, 3}));
    EXPECT_TRUE(Sw(4)->GetMulticastRoute(kGroupIp) == nullptr);
    ExpectBuffersEmpty();
}

/// On a k=4 fat-tree (20 switches, 16 hosts), following the routes the router writes from any
/// host's switch reaches every member but the sender exactly once, no non-member, and never
/// comes back to a (switch, port) it left by: a tree, whatever the members and the sender.
TEST(RoceMulticastTree, EveryMemberGetsEachFrameOnceOnAFatTree)
{
    EthFabricHelper fh;
    EthFabric fabric = fh.Build(BuildTopologyFromSpec("fat-tree:k=4"));
    Ptr<EthMulticastRouter> router = CreateObject<EthMulticastRouter>();
    const std::vector<std::vector<uint32_t>> memberSets = {
        {0, 1},
        {0, 5},
        {0, 15},
        {3, 4, 9, 14},
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}};
    uint32_t n = 0;
    for (const auto& set : memberSets)
    {
        const Ipv6Bytes g = EthMulticastRouter::GroupFromIpv4(0xEF000100 + n++);
        for (uint32_t h : set)
        {
            ASSERT_TRUE(router->Join(fabric.HostPort(h), g));
        }
        uint32_t ip4 = 0xEF000100 + n - 1;
        // Every host sends: the members along the tree, the others through the routes
        // toward it.
        for (uint32_t sender = 0; sender < 16; ++sender)
        {
            // Flood the frame along the routes, as the switches copy it.
            std::map<uint32_t, uint32_t> arrivals; // host index -> copies
            std::set<std::pair<EthSwitch*, uint16_t>> sentOn;
            struct Hop
            {
                EthSwitch* sw;
                uint16_t in;
            };
            Ptr<EthNetDevice> first = fabric.HostPort(sender)->GetPeer();
            std::vector<Hop> todo{{first->GetSwitch(), first->GetPortNumber()}};
            uint32_t steps = 0;
            while (!todo.empty() && ++steps < 10000)
            {
                Hop hop = todo.back();
                todo.pop_back();
                const std::vector<uint16_t>* r = hop.sw->GetMulticastRoute(ip4);
                if (!r)
                {
                    continue;
                }
                for (uint16_t p : *r)
                {
                    if (p == hop.in)
                    {
                        continue;
                    }
                    EXPECT_TRUE(sentOn.insert({hop.sw, p}).second) << "a loop";
                    Ptr<EthNetDevice> peer = hop.sw->GetPort(p)->GetPeer();
                    if (peer->GetSwitch())
                    {
                        todo.push_back({peer->GetSwitch(), peer->GetPortNumber()});
                    }
                    else
                    {
                        for (uint32_t h = 0; h < 16; ++h)
                        {
                            if (fabric.HostPort(h) == peer)
                            {
                                arrivals[h]++;
                            }
                        }
                    }
                }
            }
            for (uint32_t h = 0; h < 16; ++h)
            {
                const bool member = std::find(set.begin(), set.end(), h) != set.end();
                EXPECT_EQ(arrivals[h], member && h != sender ? 1u : 0u)
                    << "group " << n << " sender " << sender << " host " << h;
            }
        }
    }
    EXPECT_EQ(router->GetNGroups(), memberSets.size());
    // The two hosts under one edge switch: a tree of that switch alone.
    EXPECT_EQ(router->GetTreeSwitches(EthMulticastRouter::GroupFromIpv4(0xEF000100)).size(), 1u);
    Simulator::Destroy();
}

} // namespace
