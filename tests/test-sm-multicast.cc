// Multicast from the built-in SM: hosts of a fat-tree join a group through the SA (SubnAdmSet of
// MCMemberRecord, as the kernel's multicast.c does for IPoIB or rdma_join_multicast), the SM
// writes the switches' MulticastForwardingTables over the wire, and a packet sent to the MLID at
// any member's switch reaches every other member once. Leaves prune the tree; the last one frees
// the MLID. Bad requests get SA statuses.
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-gmp.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sa-records.h"
#include "models/mgmt/ib-sm-multicast.h"
#include "models/rdma/ib-wire-bytes.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

using namespace ns3;

namespace
{

using Mcmr = IbMcMemberRecord;

/// What creating a group needs (opensm's REQUIRED_MC_CREATE_COMP_MASK).
constexpr uint64_t kCreateMask = Mcmr::kCreateMask;
constexpr uint64_t kJoinMask = Mcmr::kCompMgid | Mcmr::kCompPortGid | Mcmr::kCompJoinState;

/// The switch a host's port is cabled to, and that switch's port to it.
std::pair<Ptr<IbSwitch>, uint8_t>
EdgeOf(Ptr<IbNetDevice> hostPort)
{
    Ptr<IbNetDevice> peer = hostPort->GetPeer();
    return {peer->GetNode()->GetObject<IbSwitch>(), peer->GetPortNumber()};
}

/// Where a multicast packet from a host goes when every switch forwards it to each port of its
/// MFT entry but the one it came in by (§18.2.4.3).
struct Flood
{
    std::map<uint32_t, uint32_t> hostCopies; ///< by node ID: copies that reached the host
    uint32_t switchRevisits = 0;             ///< a switch reached again: a loop or a duplicate
    uint32_t switchesCrossed = 0;
};

Flood
FloodFrom(Ptr<IbNetDevice> hostPort, uint16_t mlid)
{
    Flood out;
    std::set<IbSwitch*> seen;
    std::vector<std::pair<Ptr<IbSwitch>, uint8_t>> todo{EdgeOf(hostPort)};
    while (!todo.empty() && out.switchesCrossed < 1000)
    {
        auto [sw, in] = todo.back();
        todo.pop_back();
        if (!seen.insert(PeekPointer(sw)).second)
        {
            out.switchRevisits++;
            continue;
        }
        out.switchesCrossed++;
        for (uint8_t p = 1; p <= sw->GetNPorts(); ++p)
        {
            if (p == in || !sw->IsMftMember(mlid, p))
            {
                continue;
            }
            Ptr<IbNetDevice> peer = sw->GetPort(p)->GetPeer();
            if (!peer)
            {
                continue;
            }
            Ptr<IbSwitch> next = peer->GetNode()->GetObject<IbSwitch>();
            if (next)
            {
                todo.push_back({next, peer->GetPortNumber()});
            }
            else
            {
                out.hostCopies[peer->GetNode()->GetId()]++;
            }
        }
    }
    return out;
}

/// A k=4 fat-tree brought up by an SM on h0; hosts ask the SA and collect its answers.
struct McFabric
{
    struct Answer
    {
        uint32_t host;
        IbSaMad mad;
        /// For a GetResp to a join: was the joining host's own switch port already in the MFT
        /// entry of the answer's MLID when the answer arrived?
        bool ownPortProgrammed = false;
    };

    IbFabric f;
    Ptr<IbSubnetManager> sm;
    std::vector<Answer> got;
    uint64_t tid = 0x3C00;

    /// `ipoibGroup`: whether the SM makes IPoIB's broadcast group (its default); the tests of
    /// groups in general leave it out so that theirs are the only ones.
    explicit McFabric(bool ipoibGroup = false)
    {
        f = IbFabricHelper().Build(BuildTopologyFromSpec("fat-tree:k=4"));
        Config::SetDefault("ns3::IbSubnetManager::IpoibBroadcastGroup", BooleanValue(ipoibGroup));
        sm = IbBringUpWithSm(f, 1).sm;
        Config::SetDefault("ns3::IbSubnetManager::IpoibBroadcastGroup", BooleanValue(true));
        for (uint32_t h = 1; h < f.hosts.GetN(); ++h)
        {
            IbMgmtHelper::GetDispatcher(f.hosts.Get(h))
                ->SetManagerHandler(IbMadDispatcher::MadHandler(
                    [this, h](const IbReceivedMad& m) { Receive(h, m); }));
        }
    }

    void Receive(uint32_t host, const IbReceivedMad& m)
    {
        if (m.view.mad[1] != IbMgmtClass::SubnAdm)
        {
            return;
        }
        Answer a{host, IbSaMad{}, false};
        a.mad.ReadFrom(m.view.mad.data());
        if (a.mad.Mad().GetAttributeId() == IbSaAttr::McMemberRecord &&
            a.mad.Mad().GetMethod() == IbMadMethod::GetResp && a.mad.Mad().GetStatus() == 0)
        {
            Mcmr r;
            r.ReadFrom(a.mad.Data());
            auto [sw, port] = EdgeOf(f.HostPort(host));
            a.ownPortProgrammed = sw->IsMftMember(r.mlid, port);
        }
        got.push_back(a);
    }

    Ptr<IbNetDevice> Port(uint32_t host) const { return f.HostPort(host); }
    IbGid Gid(uint32_t host) const { return IbPortGid(Port(host)->GetPortGuid()); }

    /// Sends `q` from `host` to the SA and runs until its answer is in (null if none came).
    const Answer* Ask(uint32_t host, IbSaMad q)
    {
        q.Mad().SetTransactionId(++tid);
        uint8_t bytes[kIbMadBytes];
        q.WriteTo(bytes);
        const size_t before = got.size();
        EXPECT_TRUE(IbMgmtHelper::GetDispatcher(f.hosts.Get(host))
                        ->SendGmp(1, bytes, sm->GetSmLid(), kIbGsiQp, 0));
        Simulator::Stop(MicroSeconds(500));
        Simulator::Run();
        if (got.size() != before + 1)
        {
            return nullptr;
        }
        EXPECT_EQ(got.back().mad.Mad().GetTransactionId(), tid);
        return &got.back();
    }

    const Answer* Send(uint32_t host, uint8_t method, uint64_t mask, const Mcmr& r)
    {
        IbSaMad q = IbSaMad::Make(method, IbSaAttr::McMemberRecord, 0, 0);
        q.SetComponentMask(mask);
        r.WriteTo(q.Data());
        return Ask(host, q);
    }

    /// A join from `host` for its own port; the group's parameters are given when `create`.
    const Answer* Join(uint32_t host, const IbGid& mgid, bool create, uint8_t joinState = 1)
    {
        Mcmr r;
        r.mgid = mgid;
        r.portGid = Gid(host);
        r.joinState = joinState;
        r.qkey = 0x80010000;
        r.pkey = 0xFFFF;
        r.sl = 0;
        r.flowLabel = 0;
        r.tClass = 0;
        return Send(host, IbMadMethod::Set, create ? kCreateMask : kJoinMask, r);
    }

    const Answer* Leave(uint32_t host, const IbGid& mgid, uint8_t joinState = 1)
    {
        Mcmr r;
        r.mgid = mgid;
        r.portGid = Gid(host);
        r.joinState = joinState;
        return Send(host, IbMadMethod::Delete, kJoinMask, r);
    }

    /// The records of a GetTable (one MAD: a few groups fit), `status` its MAD status.
    std::vector<Mcmr> Table(uint32_t host, uint64_t mask, const Mcmr& q, uint64_t smKey,
                            uint16_t* status)
    {
        IbSaMad m = IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::McMemberRecord, 0, 0);
        m.SetComponentMask(mask);
        m.SetSmKey(smKey);
        q.WriteTo(m.Data());
        std::vector<Mcmr> out;
        const Answer* a = Ask(host, m);
        *status = a ? a->mad.Mad().GetStatus() : 0xFFFF;
        if (!a || a->mad.Mad().GetMethod() != IbMadMethod::GetTableResp)
        {
            return out;
        }
        EXPECT_EQ(a->mad.GetRmppTimeFlags() & 0x07, 0x07) << "one RMPP segment";
        const uint32_t stride = a->mad.GetAttributeOffset() * 8u;
        EXPECT_EQ(stride, 56u) << "52 bytes at 8-byte-word strides";
        const uint32_t data = a->mad.GetRmppData2() - 20;
        for (uint32_t at = 0; stride != 0 && at + stride <= data; at += stride)
        {
            out.emplace_back();
            out.back().ReadFrom(a->mad.Data() + at);
        }
        return out;
    }

    /// Switches whose MFT entry for `mlid` has any port.
    uint32_t SwitchesWithEntry(uint16_t mlid) const
    {
        uint32_t n = 0;
        for (uint32_t i = 0; i < f.switches.GetN(); ++i)
        {
            Ptr<IbSwitch> sw = f.switches.Get(i)->GetObject<IbSwitch>();
            for (uint8_t p = 0; p <= sw->GetNPorts(); ++p)
            {
                if (sw->IsMftMember(mlid, p))
                {
                    n++;
                    break;
                }
            }
        }
        return n;
    }

    /// Checks that a packet from each of `members` reaches each other member once, no other
    /// host, and no switch twice.
    void ExpectTreeReaches(uint16_t mlid, const std::vector<uint32_t>& members)
    {
        for (uint32_t from : members)
        {
            const Flood fl = FloodFrom(Port(from), mlid);
            EXPECT_EQ(fl.switchRevisits, 0u) << "from host " << from << ": a loop or duplicate";
            std::map<uint32_t, uint32_t> want;
            for (uint32_t to : members)
            {
                if (to != from)
                {
                    want[f.hosts.Get(to)->GetId()] = 1;
                }
            }
            EXPECT_EQ(fl.hostCopies, want) << "from host " << from;
            // Every switch that holds the group is crossed, and no other: no branch leads
            // nowhere.
            EXPECT_EQ(fl.switchesCrossed, SwitchesWithEntry(mlid)) << "from host " << from;
        }
    }
};

class SmMulticast : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST(SmMulticastRecords, McMemberRecordLayoutIsTheSpecs)
{
    Mcmr r;
    for (int i = 0; i < 16; ++i)
    {
        r.mgid[i] = static_cast<uint8_t>(0xF0 + i);
    }
    r.portGid = IbPortGid(0x0102030405060708ULL);
    r.qkey = 0x80010000;
    r.mlid = 0xC012;
    r.mtuSelector = 2;
    r.mtu = 4;
    r.tClass = 0x35;
    r.pkey = 0xFFFF;
    r.rateSelector = 2;
    r.rate = 17;
    r.packetLifeTimeSelector = 1;
    r.packetLifeTime = 18;
    r.sl = 7;
    r.flowLabel = 0xABCDE;
    r.hopLimit = 0x40;
    r.scope = 2;
    r.joinState = 5;
    r.proxyJoin = true;
    uint8_t b[Mcmr::kSize];
    r.WriteTo(b);
    // IBA vol. 1 §15.2.5.17, as opensm's ib_member_rec_t lays it out.
    const uint8_t tail[20] = {0x80, 0x01, 0x00, 0x00, // Q_Key
                              0xC0, 0x12,             // MLID
                              0x84, 0x35,             // MTUSelector|MTU, TClass
                              0xFF, 0xFF,             // P_Key
                              0x91, 0x52,             // RateSelector|Rate, PLTSelector|PLT
                              0x7A, 0xBC, 0xDE, 0x40, // SL|FlowLabel|HopLimit
                              0x25, 0x80, 0x00, 0x00}; // Scope|JoinState, ProxyJoin|reserved
    EXPECT_EQ(b[0], 0xF0);
    EXPECT_EQ(b[15], 0xFF);
    EXPECT_EQ(b[16], 0xFE);
    EXPECT_EQ(b[24], 0x01);
    EXPECT_EQ(b[31], 0x08);
    for (int i = 0; i < 20; ++i)
    {
        EXPECT_EQ(b[32 + i], tail[i]) << "byte " << 32 + i;
    }
    Mcmr back;
    back.ReadFrom(b);
    uint8_t again[Mcmr::kSize];
    back.WriteTo(again);
    EXPECT_EQ(std::memcmp(b, again, Mcmr::kSize), 0);
    // The field list the ComponentMask bits select: one field a bit, in layout order, covering
    // the 52 bytes, each reading what the struct wrote (libibmad's IB_SA_MCM_* offsets).
    const std::vector<IbSaField>& l = IbSaLayout::kMcMemberRecord;
    ASSERT_EQ(l.size(), 19u);
    uint32_t bit = 0;
    for (const IbSaField& fld : l)
    {
        EXPECT_EQ(fld.bit, bit);
        bit += fld.width;
    }
    EXPECT_EQ(bit, Mcmr::kSize * 8);
    EXPECT_EQ(IbSaFieldValue(b, l[2]), r.qkey);
    EXPECT_EQ(IbSaFieldValue(b, l[3]), r.mlid);
    EXPECT_EQ(IbSaFieldValue(b, l[5]), r.mtu);
    EXPECT_EQ(IbSaFieldValue(b, l[7]), r.pkey);
    EXPECT_EQ(IbSaFieldValue(b, l[9]), r.rate);
    EXPECT_EQ(IbSaFieldValue(b, l[12]), r.sl);
    EXPECT_EQ(IbSaFieldValue(b, l[13]), r.flowLabel);
    EXPECT_EQ(IbSaFieldValue(b, l[14]), r.hopLimit);
    EXPECT_EQ(IbSaFieldValue(b, l[15]), r.scope);
    EXPECT_EQ(IbSaFieldValue(b, l[16]), r.joinState);
    EXPECT_EQ(IbSaFieldValue(b, l[17]), 1u);
    EXPECT_EQ(Mcmr::kCompJoinState, 1u << 16);
    EXPECT_EQ(Mcmr::kCompProxyJoin, 1u << 17);
    EXPECT_EQ(IbSaLayout::kMftRecord.size(), 6u);
}

TEST_F(SmMulticast, ThreeHostsJoinAndTheMftsFormATreeReachingEachMemberOnce)
{
    McFabric s;
    const uint64_t writtenBefore = s.sm->GetMftBlocksWritten();
    // Host 3 creates a group with an all-zero MGID: the SA makes the MGID and picks the MLID.
    const McFabric::Answer* a = s.Join(3, IbGid{}, true);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->mad.Mad().GetMethod(), IbMadMethod::GetResp);
    ASSERT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    Mcmr r;
    r.ReadFrom(a->mad.Data());
    EXPECT_GE(r.mlid, 0xC000);
    EXPECT_LE(r.mlid, 0xCFFF);
    EXPECT_EQ(r.mgid[0], 0xFF);
    EXPECT_EQ(r.mgid[1], 0x12) << "transient, link-local";
    EXPECT_EQ(r.mgid[2], 0xA0);
    EXPECT_EQ(r.mgid[3], 0x1B) << "the SA-assigned signature";
    EXPECT_EQ(r.portGid, s.Gid(3));
    EXPECT_EQ(r.joinState, 1);
    EXPECT_EQ(r.qkey, 0x80010000u);
    EXPECT_EQ(r.pkey, 0xFFFF);
    EXPECT_EQ(r.mtuSelector, 2);
    EXPECT_EQ(r.mtu, 5) << "the port's 4096";
    EXPECT_EQ(r.rateSelector, 2);
    EXPECT_EQ(r.rate, 17) << "4x HDR";
    EXPECT_EQ(r.scope, 2);
    EXPECT_TRUE(a->ownPortProgrammed) << "answered once the MFTs were written";
    const IbGid mgid = r.mgid;
    const uint16_t mlid = r.mlid;

    for (uint32_t host : {6u, 13u})
    {
        a = s.Join(host, mgid, false);
        ASSERT_NE(a, nullptr);
        ASSERT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok) << "host " << host;
        Mcmr j;
        j.ReadFrom(a->mad.Data());
        EXPECT_EQ(j.mlid, mlid);
        EXPECT_EQ(j.mgid, mgid);
        EXPECT_EQ(j.qkey, 0x80010000u);
        EXPECT_EQ(j.portGid, s.Gid(host));
        EXPECT_TRUE(a->ownPortProgrammed) << "host " << host;
    }
    EXPECT_GT(s.sm->GetMftBlocksWritten(), writtenBefore);
    EXPECT_EQ(s.sm->GetHeldSaAnswers(), 0u);
    s.ExpectTreeReaches(mlid, {3, 6, 13});
    // Nothing else carries the group: no other MLID, no port to a non-member host.
    EXPECT_EQ(s.SwitchesWithEntry(mlid + 1), 0u);
    for (uint32_t h = 1; h < s.f.hosts.GetN(); ++h)
    {
        auto [sw, port] = EdgeOf(s.Port(h));
        EXPECT_EQ(sw->IsMftMember(mlid, port), h == 3 || h == 6 || h == 13) << "host " << h;
    }
    // A second join of a member changes nothing on the wire and is answered at once.
    const uint64_t written = s.sm->GetMftBlocksWritten();
    a = s.Join(6, mgid, false);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    EXPECT_EQ(s.sm->GetMftBlocksWritten(), written);
    // A light sweep later the tables are as they were (nothing rewritten, nothing lost).
    Simulator::Stop(MilliSeconds(25));
    Simulator::Run();
    EXPECT_EQ(s.sm->GetMftBlocksWritten(), written);
    s.ExpectTreeReaches(mlid, {3, 6, 13});
}

TEST_F(SmMulticast, LeavesPruneTheTreeAndTheLastOneFreesTheMlid)
{
    McFabric s;
    const McFabric::Answer* a = s.Join(3, IbGid{}, true);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    Mcmr r;
    r.ReadFrom(a->mad.Data());
    const IbGid mgid = r.mgid;
    const uint16_t mlid = r.mlid;
    ASSERT_EQ(s.Join(6, mgid, false)->mad.Mad().GetStatus(), IbMadStatus::Ok);
    ASSERT_EQ(s.Join(13, mgid, false)->mad.Mad().GetStatus(), IbMadStatus::Ok);
    const uint32_t treeOfThree = s.SwitchesWithEntry(mlid);

    // Host 13 leaves: DeleteResp, its branch is gone, the others still reach each other.
    a = s.Leave(13, mgid);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->mad.Mad().GetMethod(), IbMadMethod::DeleteResp);
    EXPECT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    Mcmr left;
    left.ReadFrom(a->mad.Data());
    EXPECT_EQ(left.mgid, mgid);
    EXPECT_EQ(left.portGid, s.Gid(13));
    EXPECT_EQ(left.joinState, 0) << "no JoinState bit left";
    auto [edge13, port13] = EdgeOf(s.Port(13));
    EXPECT_FALSE(edge13->IsMftMember(mlid, port13));
    for (uint8_t p = 0; p <= edge13->GetNPorts(); ++p)
    {
        EXPECT_FALSE(edge13->IsMftMember(mlid, p)) << "host 13's switch is off the tree, port "
                                                   << int(p);
    }
    EXPECT_LT(s.SwitchesWithEntry(mlid), treeOfThree);
    s.ExpectTreeReaches(mlid, {3, 6});

    // The last two leave: every entry is cleared and the group is gone.
    ASSERT_EQ(s.Leave(3, mgid)->mad.Mad().GetStatus(), IbMadStatus::Ok);
    ASSERT_EQ(s.Leave(6, mgid)->mad.Mad().GetStatus(), IbMadStatus::Ok);
    EXPECT_EQ(s.SwitchesWithEntry(mlid), 0u);
    EXPECT_TRUE(s.sm->GetMulticast().Groups().empty());
    uint16_t status = 0;
    EXPECT_TRUE(s.Table(5, 0, Mcmr{}, 0, &status).empty());
    EXPECT_EQ(status, IbMadStatus::Ok);
    // A leave of a group that is gone is refused.
    a = s.Leave(6, mgid);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->mad.Mad().GetStatus(), IbSaStatus::ReqInvalid);

    // The MLID is free again: the next group gets it.
    a = s.Join(9, IbGid{}, true);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    Mcmr again;
    again.ReadFrom(a->mad.Data());
    EXPECT_EQ(again.mlid, mlid);
    EXPECT_NE(again.mgid, mgid) << "a new MGID";
    auto [edge9, port9] = EdgeOf(s.Port(9));
    EXPECT_TRUE(edge9->IsMftMember(mlid, port9));
    EXPECT_EQ(s.SwitchesWithEntry(mlid), 1u) << "one member: its own switch only";
}

/// As opensm with its default partition policy (`Default=0x7fff, ipoib`), the SM makes IPoIB's
/// IPv4 broadcast group when it starts; interfaces join it as the kernel's ipoib_mcast_join does
/// (MGID, PortGID, P_Key, JoinState: no parameters, no creating), and it stays when they leave.
TEST_F(SmMulticast, TheSmMakesIpoibsBroadcastGroupAndKeepsItWhenItsMembersLeave)
{
    McFabric s(true);
    const Mcmr want = IbIpoibBroadcastGroup();
    uint16_t status = 0;
    std::vector<Mcmr> groups = s.Table(2, 0, Mcmr{}, 0, &status);
    ASSERT_EQ(groups.size(), 1u);
    // What `saquery MCMR` reads from opensm: MLID 0xc000, Q_Key 0xb1b, MTU 0x84, rate 0x83,
    // pkt_life 0x92, P_Key 0xffff, SL 0, scope 2.
    const Mcmr& g = groups[0];
    EXPECT_EQ(g.mgid, want.mgid);
    EXPECT_EQ(g.mgid[0], 0xFF);
    EXPECT_EQ(g.mgid[1], 0x12);
    EXPECT_EQ(g.mgid[2], 0x40);
    EXPECT_EQ(g.mgid[3], 0x1B);
    EXPECT_EQ(g.mlid, 0xC000);
    EXPECT_EQ(g.qkey, 0x0B1Bu);
    EXPECT_EQ((g.mtuSelector << 6) | g.mtu, 0x84);
    EXPECT_EQ((g.rateSelector << 6) | g.rate, 0x83);
    EXPECT_EQ((g.packetLifeTimeSelector << 6) | g.packetLifeTime, 0x92);
    EXPECT_EQ(g.pkey, 0xFFFF);
    EXPECT_EQ(g.scope, 2);
    EXPECT_EQ(s.SwitchesWithEntry(0xC000), 0u) << "no member, no tree";

    // Three interfaces join with the kernel's components and get the group's parameters.
    const uint64_t kernelMask = kJoinMask | Mcmr::kCompPkey;
    for (uint32_t h : {3u, 6u, 13u})
    {
        Mcmr r;
        r.mgid = want.mgid;
        r.portGid = s.Gid(h);
        r.pkey = 0xFFFF;
        r.joinState = Mcmr::kFullMember;
        const McFabric::Answer* a = s.Send(h, IbMadMethod::Set, kernelMask, r);
        ASSERT_NE(a, nullptr);
        ASSERT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok) << "host " << h;
        Mcmr joined;
        joined.ReadFrom(a->mad.Data());
        EXPECT_EQ(joined.mlid, 0xC000);
        EXPECT_EQ(joined.qkey, 0x0B1Bu);
        EXPECT_TRUE(a->ownPortProgrammed) << "the MFTs are written before the answer";
    }
    s.ExpectTreeReaches(0xC000, {3, 6, 13});
    // A group made by a join takes the next MLID.
    const McFabric::Answer* other = s.Join(9, IbGid{}, true);
    ASSERT_NE(other, nullptr);
    Mcmr made;
    made.ReadFrom(other->mad.Data());
    EXPECT_EQ(made.mlid, 0xC001);

    // All three leave: the tree goes, the group stays with its MLID.
    for (uint32_t h : {3u, 6u, 13u})
    {
        ASSERT_EQ(s.Leave(h, want.mgid)->mad.Mad().GetStatus(), IbMadStatus::Ok);
    }
    EXPECT_EQ(s.SwitchesWithEntry(0xC000), 0u);
    Mcmr byMgid;
    byMgid.mgid = want.mgid;
    groups = s.Table(2, Mcmr::kCompMgid, byMgid, 0, &status);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].mlid, 0xC000);
    // The SM's own group cannot be made twice.
    IbSmMulticast m;
    EXPECT_EQ(m.AddWellKnown(want), 0xC000);
    EXPECT_EQ(m.AddWellKnown(want), 0);
}

TEST_F(SmMulticast, BadJoinsAndLeavesGetSaStatusesAndChangeNothing)
{
    McFabric s;
    const McFabric::Answer* a = s.Join(3, IbGid{}, true);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    Mcmr g;
    g.ReadFrom(a->mad.Data());
    const uint64_t written = s.sm->GetMftBlocksWritten();
    auto statusOf = [&](const McFabric::Answer* x) -> uint16_t {
        EXPECT_NE(x, nullptr);
        return x ? x->mad.Mad().GetStatus() : 0xFFFF;
    };
    Mcmr r;
    r.mgid = g.mgid;
    r.portGid = s.Gid(5);
    r.joinState = 1;
    r.qkey = g.qkey;
    r.pkey = 0xFFFF;
    // A join without JoinState: ERR_REQ_INSUFFICIENT_COMPONENTS.
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set, Mcmr::kCompMgid | Mcmr::kCompPortGid, r)),
              IbSaStatus::InsufficientComponents);
    // Creating a group without its Q_Key: the same.
    Mcmr create = r;
    create.mgid = IbGid{};
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set, kCreateMask & ~Mcmr::kCompQkey, create)),
              IbSaStatus::InsufficientComponents);
    // A non-member may not create a group.
    create.joinState = 2;
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set, kCreateMask, create)), IbSaStatus::ReqInvalid);
    // JoinState 0 joins nothing.
    Mcmr zero = r;
    zero.joinState = 0;
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set, kJoinMask, zero)), IbSaStatus::ReqInvalid);
    // A port GUID the subnet does not have; a GID of another subnet.
    Mcmr stranger = r;
    stranger.portGid = IbPortGid(0x00DEAD00BEEF0001ULL);
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set, kJoinMask, stranger)), IbSaStatus::ReqInvalid);
    stranger.portGid[0] = 0x20;
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set, kJoinMask, stranger)), IbSaStatus::InvalidGid);
    // Joining the group with another Q_Key, or asking for an MTU other than its own.
    Mcmr wrongKey = r;
    wrongKey.qkey = 0x12345678;
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set, kJoinMask | Mcmr::kCompQkey, wrongKey)),
              IbSaStatus::ReqInvalid);
    Mcmr wrongMtu = r;
    wrongMtu.mtuSelector = 2;
    wrongMtu.mtu = 3;
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set,
                              kJoinMask | Mcmr::kCompMtuSelector | Mcmr::kCompMtu, wrongMtu)),
              IbSaStatus::ReqInvalid);
    Mcmr badMtu = r;
    badMtu.mtuSelector = 2;
    badMtu.mtu = 9;
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set,
                              kJoinMask | Mcmr::kCompMtuSelector | Mcmr::kCompMtu, badMtu)),
              IbSaStatus::ReqInvalid);
    // A requested MGID that is not a multicast GID.
    Mcmr notMc = r;
    notMc.mgid = s.Gid(5);
    EXPECT_EQ(statusOf(s.Send(5, IbMadMethod::Set, kCreateMask, notMc)), IbSaStatus::ReqInvalid);
    // Leaving a group the port is not in; leaving with bits the member does not hold.
    EXPECT_EQ(statusOf(s.Leave(5, g.mgid)), IbSaStatus::ReqInvalid);
    EXPECT_EQ(statusOf(s.Leave(3, g.mgid, 2)), IbSaStatus::ReqInvalid);
    EXPECT_EQ(statusOf(s.Send(3, IbMadMethod::Delete, Mcmr::kCompMgid, r)),
              IbSaStatus::InsufficientComponents);
    // Set of another record: not supported; an unknown method: not supported.
    IbSaMad nodeSet = IbSaMad::Make(IbMadMethod::Set, IbSaAttr::NodeRecord, 0, 0);
    EXPECT_EQ(statusOf(s.Ask(5, nodeSet)), IbMadStatus::UnsupportedMethodAttr);
    IbSaMad send = IbSaMad::Make(IbMadMethod::Send, IbSaAttr::McMemberRecord, 0, 0);
    EXPECT_EQ(statusOf(s.Ask(5, send)), IbMadStatus::UnsupportedMethod);

    // Nothing changed: one group, one member, no MFT written, the SM still the master.
    ASSERT_EQ(s.sm->GetMulticast().Groups().size(), 1u);
    const IbMcGroup& group = s.sm->GetMulticast().Groups().begin()->second;
    ASSERT_EQ(group.members.size(), 1u);
    EXPECT_EQ(group.members.begin()->second.joinState, 1);
    EXPECT_EQ(s.sm->GetMftBlocksWritten(), written);
    EXPECT_EQ(s.sm->GetSmState(), IbSmState::Master);
    // And the group still works for a proper join.
    a = s.Join(5, g.mgid, false);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    s.ExpectTreeReaches(g.mlid, {3, 5});
}

TEST_F(SmMulticast, GetTableListsTheGroupsAndTheirMembersToATrustedRequester)
{
    McFabric s;
    const McFabric::Answer* a = s.Join(2, IbGid{}, true);
    ASSERT_NE(a, nullptr);
    Mcmr g1;
    g1.ReadFrom(a->mad.Data());
    ASSERT_EQ(s.Join(7, g1.mgid, false)->mad.Mad().GetStatus(), IbMadStatus::Ok);
    // A second group with an MGID of the requester's choosing (IPoIB's broadcast group).
    IbGid ipoib{0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF};
    a = s.Join(11, ipoib, true);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    Mcmr g2;
    g2.ReadFrom(a->mad.Data());
    EXPECT_EQ(g2.mgid, ipoib);
    EXPECT_NE(g2.mlid, g1.mlid);

    // Untrusted (no SM_Key): one record per group, PortGID and JoinState hidden.
    uint16_t status = 0;
    std::vector<Mcmr> t = s.Table(5, 0, Mcmr{}, 0, &status);
    EXPECT_EQ(status, IbMadStatus::Ok);
    ASSERT_EQ(t.size(), 2u);
    std::set<uint16_t> mlids;
    for (const Mcmr& r : t)
    {
        mlids.insert(r.mlid);
        EXPECT_EQ(r.portGid, IbGid{});
        EXPECT_EQ(r.joinState, 0);
        EXPECT_EQ(r.qkey, 0x80010000u);
    }
    EXPECT_EQ(mlids, (std::set<uint16_t>{g1.mlid, g2.mlid}));
    // Trusted (the SM's SM_Key, 1 by default): a record per member.
    t = s.Table(5, 0, Mcmr{}, 1, &status);
    ASSERT_EQ(t.size(), 3u);
    std::set<IbGid> ports;
    for (const Mcmr& r : t)
    {
        ports.insert(r.portGid);
        EXPECT_EQ(r.joinState, 1);
    }
    EXPECT_EQ(ports, (std::set<IbGid>{s.Gid(2), s.Gid(7), s.Gid(11)}));
    // Selected by MLID; by MGID and PortGID (a member's own record).
    Mcmr q;
    q.mlid = g2.mlid;
    t = s.Table(5, Mcmr::kCompMlid, q, 1, &status);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].mgid, ipoib);
    q.mgid = g1.mgid;
    q.portGid = s.Gid(7);
    IbSaMad get = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::McMemberRecord, 0, 0);
    get.SetComponentMask(Mcmr::kCompMgid | Mcmr::kCompPortGid);
    get.SetSmKey(1);
    q.WriteTo(get.Data());
    a = s.Ask(5, get);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    Mcmr mine;
    mine.ReadFrom(a->mad.Data());
    EXPECT_EQ(mine.mlid, g1.mlid);
    EXPECT_EQ(mine.portGid, s.Gid(7));
    // A port that is no member: no record.
    q.portGid = s.Gid(8);
    q.WriteTo(get.Data());
    a = s.Ask(5, get);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->mad.Mad().GetStatus(), IbSaStatus::NoRecords);
    // A Q_Key no group has selects nothing.
    q.qkey = 0x1111;
    t = s.Table(5, Mcmr::kCompQkey, q, 0, &status);
    EXPECT_EQ(status, IbMadStatus::Ok);
    EXPECT_TRUE(t.empty());

    // MulticastForwardingTableRecords: host 11's switch, block 0, position 0 holds the port.
    auto [edge11, port11] = EdgeOf(s.Port(11));
    IbSaMad mft = IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::MftRecord, 0, 0);
    mft.SetComponentMask(1u << 0); // LID
    IbMadStore16(mft.Data(), edge11->GetLid());
    a = s.Ask(5, mft);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->mad.Mad().GetStatus(), IbMadStatus::Ok);
    EXPECT_EQ(a->mad.GetAttributeOffset(), 9);
    EXPECT_EQ(IbMadLoad16(a->mad.Data()), edge11->GetLid());
    EXPECT_EQ(IbMadLoad16(a->mad.Data() + 2), 0) << "position 0, block 0";
    const uint16_t entry = IbMadLoad16(a->mad.Data() + 8 + 2 * (g2.mlid - 0xC000));
    EXPECT_TRUE((entry >> port11) & 1);
    uint16_t onSwitch[32];
    edge11->GetMftBlock(0, 0, onSwitch);
    EXPECT_EQ(entry, onSwitch[g2.mlid - 0xC000]) << "the record is what the switch holds";
}

TEST_F(SmMulticast, AHeavySweepAfterALinkOnTheTreeFailsMovesTheTreeAroundIt)
{
    McFabric s;
    const McFabric::Answer* a = s.Join(3, IbGid{}, true);
    ASSERT_NE(a, nullptr);
    Mcmr g;
    g.ReadFrom(a->mad.Data());
    ASSERT_EQ(s.Join(6, g.mgid, false)->mad.Mad().GetStatus(), IbMadStatus::Ok);
    ASSERT_EQ(s.Join(13, g.mgid, false)->mad.Mad().GetStatus(), IbMadStatus::Ok);
    // The tree link that leaves host 3's switch upwards.
    auto [edge, hostPort] = EdgeOf(s.Port(3));
    uint8_t up = 0;
    for (uint8_t p = 1; p <= edge->GetNPorts() && up == 0; ++p)
    {
        Ptr<IbNetDevice> peer = edge->GetPort(p)->GetPeer();
        if (p != hostPort && edge->IsMftMember(g.mlid, p) && peer &&
            peer->GetNode()->GetObject<IbSwitch>())
        {
            up = p;
        }
    }
    ASSERT_NE(up, 0) << "host 3's switch has a tree link up";
    const uint64_t heavy = s.sm->GetHeavySweeps();
    edge->GetPort(up)->SetPhysicalLinkDown();
    for (int i = 0; i < 300 && !(s.sm->GetHeavySweeps() > heavy &&
                                 s.sm->GetPhase() == IbSweepPhase::Up);
         ++i)
    {
        Simulator::Stop(MicroSeconds(100));
        Simulator::Run();
    }
    ASSERT_GT(s.sm->GetHeavySweeps(), heavy);
    Simulator::Stop(MicroSeconds(500)); // the MFT SMPs that follow the sweep
    Simulator::Run();
    EXPECT_FALSE(edge->IsMftMember(g.mlid, up)) << "the dead link is off the tree";
    EXPECT_TRUE(edge->IsMftMember(g.mlid, hostPort));
    s.ExpectTreeReaches(g.mlid, {3, 6, 13});
    EXPECT_EQ(s.sm->GetMulticast().Groups().begin()->second.members.size(), 3u);
}
