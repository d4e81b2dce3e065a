// Subnet administration from the built-in SM: a host asks the SA on QP1 for a PathRecord and a
// NodeRecord, as a verbs program resolving a path would, and gets the LIDs, rate and MTU of the
// route the SM programmed; bad requests get statuses. The answer decodes in tshark.
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "helpers/trace/ib-trace-helper.h"
#include "ib-test-packets.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-gmp.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sa-records.h"

#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <unistd.h>

using namespace ns3;

namespace
{

void
Collect(std::vector<IbSaMad>* got, const IbReceivedMad& m)
{
    if (m.view.mad[1] == IbMgmtClass::SubnAdm)
    {
        IbSaMad r;
        r.ReadFrom(m.view.mad.data());
        got->push_back(r);
    }
}

/// A k=4 fat-tree brought up by an SM on h0; `client` receives SA answers.
struct SaFabric
{
    IbFabric f;
    Ptr<IbSubnetManager> sm;
    Ptr<IbMadDispatcher> client;
    std::vector<IbSaMad> got;
    uint64_t tid = 0x5A00;

    explicit SaFabric(uint32_t clientHost, const std::string& pcap = "")
    {
        f = IbFabricHelper().Build(BuildTopologyFromSpec("fat-tree:k=4"));
        if (!pcap.empty())
        {
            pcapHelper.Enable(f.HostPort(clientHost), pcap);
        }
        sm = IbBringUpWithSm(f, 1).sm;
        client = IbMgmtHelper::GetDispatcher(f.hosts.Get(clientHost));
        client->SetManagerHandler(MakeBoundCallback(&Collect, &got));
    }

    /// Sends `q` to the SA (the SM's LID, QP1) and runs until an answer is in.
    const IbSaMad* Ask(IbSaMad q)
    {
        q.Mad().SetTransactionId(++tid);
        uint8_t bytes[kIbMadBytes];
        q.WriteTo(bytes);
        const size_t before = got.size();
        EXPECT_TRUE(client->SendGmp(1, bytes, sm->GetSmLid(), kIbGsiQp, 0));
        Simulator::Stop(MicroSeconds(50));
        Simulator::Run();
        if (got.size() != before + 1)
        {
            return nullptr;
        }
        EXPECT_EQ(got.back().Mad().GetTransactionId(), tid);
        return &got.back();
    }

    IbPcapHelper pcapHelper;
};

IbSaMad
PathQuery(uint64_t mask, const IbPathRecord& r, uint8_t method = IbMadMethod::Get)
{
    IbSaMad q = IbSaMad::Make(method, IbSaAttr::PathRecord, 0, 0);
    q.SetComponentMask(mask);
    r.WriteTo(q.Data());
    return q;
}

} // namespace

TEST(SmSaRecords, PathRecordLayoutIsTheSpecs)
{
    IbPathRecord r;
    r.dgid = IbPortGid(0x1122334455667788ULL);
    r.sgid = IbPortGid(0x0102030405060708ULL);
    r.dlid = 0x0203;
    r.slid = 0x0405;
    r.flowLabel = 0xABCDE;
    r.hopLimit = 0x40;
    r.tClass = 0x12;
    r.reversible = true;
    r.numbPath = 3;
    r.pkey = 0xFFFF;
    r.qosClass = 0xABC;
    r.sl = 7;
    r.mtuSelector = 2;
    r.mtu = 5;
    r.rateSelector = 2;
    r.rate = 17;
    r.packetLifeTimeSelector = 2;
    r.packetLifeTime = 18;
    r.preference = 9;
    uint8_t b[64];
    r.WriteTo(b);
    // IBA vol. 1 Table 201, byte by byte.
    const uint8_t want[64] = {
        0,    0,    0,    0,    0,    0,    0,    0,                                     // rsvd
        0xFE, 0x80, 0,    0,    0,    0,    0,    0,    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
        0x88,                                                                               // DGID
        0xFE, 0x80, 0,    0,    0,    0,    0,    0,    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
        0x08,                                                                               // SGID
        0x02, 0x03, 0x04, 0x05,                                 // DLID, SLID
        0x0A, 0xBC, 0xDE, 0x40,                                 // Raw|rsvd|FlowLabel|HopLimit
        0x12, 0x83, 0xFF, 0xFF,                                 // TClass, Rev|NumbPath, P_Key
        0xAB, 0xC7, 0x85, 0x91, 0x92, 0x09,                     // QoS|SL, MTU, Rate, PLT, Pref
        0,    0,    0,    0,    0,    0};
    for (int i = 0; i < 64; ++i)
    {
        EXPECT_EQ(b[i], want[i]) << "byte " << i;
    }
    IbPathRecord back;
    back.ReadFrom(b);
    uint8_t again[64];
    back.WriteTo(again);
    EXPECT_EQ(std::memcmp(b, again, 64), 0);
    EXPECT_EQ(IbGidPortGuid(r.dgid), 0x1122334455667788ULL);
    EXPECT_EQ(IbSaRateCode(200), 17);
    EXPECT_EQ(IbSaRateCode(56), 12);
    EXPECT_EQ(IbSaRateCode(7), 0);
}

class SmSa : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

TEST_F(SmSa, PathRecordByGidsGivesTheProgrammedRoute)
{
    SaFabric s(7);
    IbPathRecord q;
    q.sgid = IbPortGid(s.f.HostPort(7)->GetPortGuid());
    q.dgid = IbPortGid(s.f.HostPort(12)->GetPortGuid());
    const IbSaMad* a =
        s.Ask(PathQuery(IbPathRecord::kCompSgid | IbPathRecord::kCompDgid, q));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetMethod(), IbMadMethod::GetResp);
    EXPECT_EQ(a->Mad().GetStatus(), IbMadStatus::Ok);
    IbPathRecord r;
    r.ReadFrom(a->Data());
    EXPECT_EQ(r.slid, s.f.HostPort(7)->GetLid());
    EXPECT_EQ(r.dlid, s.f.HostPort(12)->GetLid());
    EXPECT_EQ(r.sgid, q.sgid);
    EXPECT_EQ(r.dgid, q.dgid);
    EXPECT_EQ(r.rate, 17); // 4x HDR = 200 Gb/s on every cable
    EXPECT_EQ(r.mtu, 5);   // 4096 (the ports' Mtu attribute)
    EXPECT_EQ(r.pkey, 0xFFFF);
    EXPECT_TRUE(r.reversible);
    EXPECT_EQ(s.sm->GetSaAnswered(), 1u);

    // By LIDs, to a switch, as a GetTable: one RMPP segment with the record at offset 8 words.
    IbPathRecord q2;
    q2.slid = s.f.HostPort(7)->GetLid();
    q2.dlid = s.f.switches.Get(19)->GetObject<IbSwitch>()->GetLid();
    a = s.Ask(PathQuery(IbPathRecord::kCompSlid | IbPathRecord::kCompDlid, q2,
                        IbMadMethod::GetTable));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetMethod(), IbMadMethod::GetTableResp);
    EXPECT_EQ(a->Mad().GetStatus(), IbMadStatus::Ok);
    EXPECT_EQ(a->GetAttributeOffset(), 8);
    EXPECT_EQ(a->GetRmppTimeFlags() & 0x07, 0x07);
    EXPECT_EQ(a->GetRmppData2(), 20u + 64u);
    r.ReadFrom(a->Data());
    EXPECT_EQ(r.dlid, q2.dlid);
}

TEST_F(SmSa, NodeRecordByLidAndBadRequestsGetStatuses)
{
    SaFabric s(3);
    Ptr<IbSwitch> core = s.f.nodes.Get(*s.f.topology.Find("core1"))->GetObject<IbSwitch>();
    IbSaMad q = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::NodeRecord, 0, 0);
    q.SetComponentMask(IbNodeRecord::kCompLid);
    IbNodeRecord nr;
    nr.lid = core->GetLid();
    nr.WriteTo(q.Data());
    const IbSaMad* a = s.Ask(q);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbMadStatus::Ok);
    IbNodeRecord r;
    r.ReadFrom(a->Data());
    EXPECT_EQ(r.lid, core->GetLid());
    EXPECT_EQ(r.nodeInfo.nodeType, IbNodeType::Switch);
    EXPECT_EQ(r.nodeInfo.nodeGuid, core->GetNodeGuid());
    EXPECT_EQ(r.description.text, "core1");

    // A LID nobody has.
    nr.lid = 0x0BAD;
    nr.WriteTo(q.Data());
    a = s.Ask(q);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbSaStatus::NoRecords);
    // Get without a component: every node matches, too many for a Get.
    q.SetComponentMask(0);
    a = s.Ask(q);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbSaStatus::TooManyRecords);
    // A PathRecord with no destination.
    IbPathRecord pq;
    pq.slid = s.f.HostPort(3)->GetLid();
    a = s.Ask(PathQuery(IbPathRecord::kCompSlid, pq));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbSaStatus::InsufficientComponents);
    // SA class version 1 (the SA is version 2).
    IbSaMad old = PathQuery(IbPathRecord::kCompSlid | IbPathRecord::kCompDlid, pq);
    old.Mad().SetClassVersion(1);
    a = s.Ask(old);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbMadStatus::BadVersion);
    // An attribute the SA does not serve (LinkRecord).
    IbSaMad link = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::LinkRecord, 0, 0);
    a = s.Ask(link);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbMadStatus::UnsupportedMethodAttr);
}

TEST_F(SmSa, PathRecordAnswerDecodesInTshark)
{
    if (system("command -v tshark >/dev/null 2>&1") != 0)
    {
        GTEST_SKIP() << "tshark not installed";
    }
    const std::string path = "/tmp/cnuas-sm-sa-" + std::to_string(getpid()) + ".pcap";
    uint16_t slid = 0;
    uint16_t dlid = 0;
    {
        SaFabric s(9, path);
        IbPathRecord q;
        q.slid = slid = s.f.HostPort(9)->GetLid();
        q.dlid = dlid = s.f.HostPort(2)->GetLid();
        ASSERT_NE(s.Ask(PathQuery(IbPathRecord::kCompSlid | IbPathRecord::kCompDlid, q)),
                  nullptr);
        s.pcapHelper.Close();
    }
    int st = -1;
    auto rows = cnuas_test::TsharkFieldRows(
        path,
        {"_ws.col.Info", "infiniband.pathrecord.slid", "infiniband.pathrecord.dlid",
         "infiniband.pathrecord.rate", "infiniband.pathrecord.mtu", "_ws.malformed"},
        "-Y \"infiniband.mad.mgmtclass == 0x03\"", &st);
    ASSERT_EQ(st, 0);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_NE(rows[0][0].find("SubnAdmGet(PathRecord)"), std::string::npos) << rows[0][0];
    EXPECT_NE(rows[1][0].find("SubnAdmGetResp(PathRecord)"), std::string::npos) << rows[1][0];
    for (const auto& r : rows)
    {
        EXPECT_EQ(r[5], "");
    }
    EXPECT_EQ(std::stoi(rows[1][1], nullptr, 0), slid);
    EXPECT_EQ(std::stoi(rows[1][2], nullptr, 0), dlid);
    EXPECT_EQ(std::stoi(rows[1][3], nullptr, 0), 17);
    EXPECT_EQ(std::stoi(rows[1][4], nullptr, 0), 5);
    unlink(path.c_str());
}

// ---- min-hop on a ring: the SA's PathRecord SLs split the routes into deadlock-free layers ------

namespace
{
using CableDir = std::pair<uint32_t, uint8_t>; // (ns-3 node id, output port)

bool
HasCycle(const std::map<CableDir, std::set<CableDir>>& deps)
{
    std::map<CableDir, int> color; // 0 new, 1 on the stack, 2 done
    std::function<bool(const CableDir&)> visit = [&](const CableDir& c) {
        color[c] = 1;
        auto it = deps.find(c);
        if (it != deps.end())
        {
            for (const CableDir& d : it->second)
            {
                if (color[d] == 1 || (color[d] == 0 && visit(d)))
                {
                    return true;
                }
            }
        }
        color[c] = 2;
        return false;
    };
    for (const auto& [c, unused] : deps)
    {
        if (color[c] == 0 && visit(c))
        {
            return true;
        }
    }
    return false;
}
} // namespace

TEST_F(SmSa, MinHopRoutesOnARingGetSlsThatMakeEachLayerDeadlockFree)
{
    // Five switches in a ring, a host on each (switch i port 2 -> switch i+1 port 3).
    Topology t;
    for (uint32_t i = 0; i < 5; ++i)
    {
        t.AddNode("h" + std::to_string(i), TopoNodeKind::Host, 1);
    }
    for (uint32_t i = 0; i < 5; ++i)
    {
        t.AddNode("sw" + std::to_string(i), TopoNodeKind::Switch, 3);
        t.AddLink(i, 1, 5 + i, 1);
    }
    for (uint32_t i = 0; i < 5; ++i)
    {
        t.AddLink(5 + i, 2, 5 + (i + 1) % 5, 3);
    }
    ASSERT_EQ(t.Validate(), "");
    IbFabric f = IbFabricHelper().Build(t);
    IbSmHelper smh;
    smh.SetSmAttribute("RoutingEngine", EnumValue(static_cast<int>(IbRoutingAlgorithm::MinHop)));
    smh.SetSmAttribute("OperationalVls", UintegerValue(4));
    Ptr<IbSubnetManager> sm = smh.Install(f, f.hosts.Get(0), MicroSeconds(2));
    while (sm->GetPhase() != IbSweepPhase::Up && Simulator::Now() < MilliSeconds(20))
    {
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
    }
    ASSERT_EQ(sm->GetPhase(), IbSweepPhase::Up);
    EXPECT_EQ(sm->GetVlLayers().error, "");
    EXPECT_EQ(f.HostPort(3)->GetOperationalVls(), 4);

    std::vector<IbSaMad> got;
    Ptr<IbMadDispatcher> client = IbMgmtHelper::GetDispatcher(f.hosts.Get(2));
    client->SetManagerHandler(MakeBoundCallback(&Collect, &got));
    std::map<uint8_t, std::map<CableDir, std::set<CableDir>>> bySl;
    std::map<CableDir, std::set<CableDir>> all;
    uint64_t tid = 0x77;
    for (uint32_t a = 0; a < 5; ++a)
    {
        for (uint32_t b = 0; b < 5; ++b)
        {
            if (a == b)
            {
                continue;
            }
            IbPathRecord q;
            q.slid = f.HostPort(a)->GetLid();
            q.dlid = f.HostPort(b)->GetLid();
            IbSaMad m = PathQuery(IbPathRecord::kCompSlid | IbPathRecord::kCompDlid, q);
            m.Mad().SetTransactionId(++tid);
            uint8_t bytes[kIbMadBytes];
            m.WriteTo(bytes);
            ASSERT_TRUE(client->SendGmp(1, bytes, sm->GetSmLid(), kIbGsiQp, 0));
            Simulator::Stop(MicroSeconds(50));
            Simulator::Run();
            ASSERT_FALSE(got.empty());
            ASSERT_EQ(got.back().Mad().GetStatus(), IbMadStatus::Ok);
            IbPathRecord r;
            r.ReadFrom(got.back().Data());
            // The route as the switches' LFTs give it, independently of the SM's tables.
            const auto hops = IbFabricRoute(f, a, q.dlid);
            ASSERT_FALSE(hops.empty());
            for (size_t k = 1; k < hops.size(); ++k)
            {
                const CableDir from{hops[k - 1].node, hops[k - 1].port};
                const CableDir to{hops[k].node, hops[k].port};
                bySl[r.sl][from].insert(to);
                all[from].insert(to);
            }
        }
    }
    EXPECT_TRUE(HasCycle(all)) << "one VL would deadlock: layers were needed";
    EXPECT_GE(bySl.size(), 2u);
    for (const auto& [sl, deps] : bySl)
    {
        EXPECT_LT(sl, 4);
        EXPECT_FALSE(HasCycle(deps)) << "SL " << unsigned(sl);
    }
}

// The layers of the test above are deadlock-free only if SL l travels on VL l at every hop: the
// SM writes the SLtoVLMappingTables (IBA vol. 1 §14.2.5.8) instead of trusting each switch's
// power-on map. Here every table starts all-VL0 (a power-on map that would put every layer
// back on one VL); after the SM every linked switch port pair and every CA port maps SL l to
// VL l for each layer. One layer (up/down on a fat-tree) costs no SLtoVL SMP at all.
TEST_F(SmSa, TheSmProgramsSlToVlWhenRoutesUseLayers)
{
    Topology t;
    for (uint32_t i = 0; i < 5; ++i)
    {
        t.AddNode("h" + std::to_string(i), TopoNodeKind::Host, 1);
    }
    for (uint32_t i = 0; i < 5; ++i)
    {
        t.AddNode("sw" + std::to_string(i), TopoNodeKind::Switch, 3);
        t.AddLink(i, 1, 5 + i, 1);
    }
    for (uint32_t i = 0; i < 5; ++i)
    {
        t.AddLink(5 + i, 2, 5 + (i + 1) % 5, 3);
    }
    IbFabric f = IbFabricHelper().Build(t);
    const std::array<uint8_t, 16> allVl0{};
    for (uint32_t i = 0; i < f.switches.GetN(); ++i)
    {
        Ptr<IbSwitch> sw = f.switches.Get(i)->GetObject<IbSwitch>();
        for (uint8_t in = 1; in <= 3; ++in)
        {
            for (uint8_t out = 1; out <= 3; ++out)
            {
                sw->SetSlToVl(in, out, allVl0);
            }
        }
    }
    for (uint32_t h = 0; h < f.hosts.GetN(); ++h)
    {
        f.HostPort(h)->SetSlToVl(allVl0);
    }
    IbSmHelper smh;
    smh.SetSmAttribute("RoutingEngine", EnumValue(static_cast<int>(IbRoutingAlgorithm::MinHop)));
    smh.SetSmAttribute("OperationalVls", UintegerValue(4));
    Ptr<IbSubnetManager> sm = smh.Install(f, f.hosts.Get(0), MicroSeconds(2));
    uint64_t slVlSets = 0;
    sm->TraceConnectWithoutContext(
        "SmpSent", Callback<void, uint16_t, uint8_t, uint32_t>(
                       [&slVlSets](uint16_t attr, uint8_t method, uint32_t) {
                           slVlSets += attr == IbSmAttr::SlToVlMappingTable &&
                                       method == IbMadMethod::Set;
                       }));
    while (sm->GetPhase() != IbSweepPhase::Up && Simulator::Now() < MilliSeconds(20))
    {
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
    }
    ASSERT_EQ(sm->GetPhase(), IbSweepPhase::Up);
    const uint32_t layers = sm->GetVlLayers().layers;
    ASSERT_GE(layers, 2u);
    ASSERT_EQ(sm->GetVlLayers().error, "");
    // 5 switches x 3 linked ports x 2 other inputs, and 5 CA ports.
    EXPECT_EQ(slVlSets, 5u * 3 * 2 + 5);
    for (uint32_t i = 0; i < f.switches.GetN(); ++i)
    {
        Ptr<IbSwitch> sw = f.switches.Get(i)->GetObject<IbSwitch>();
        for (uint8_t in = 1; in <= 3; ++in)
        {
            for (uint8_t out = 1; out <= 3; ++out)
            {
                for (uint8_t sl = 0; sl < layers && in != out; ++sl)
                {
                    EXPECT_EQ(sw->MapSlToVl(in, out, sl), sl)
                        << "switch " << i << " " << unsigned(in) << "->" << unsigned(out);
                }
            }
        }
    }
    for (uint32_t h = 0; h < f.hosts.GetN(); ++h)
    {
        for (uint8_t sl = 0; sl < layers; ++sl)
        {
            EXPECT_EQ(f.HostPort(h)->MapSlToVl(sl), sl) << "host " << h;
        }
    }
    // Later sweeps do not write them again.
    const uint64_t firstSweep = slVlSets;
    sm->SetAttribute("SweepInterval", TimeValue(MicroSeconds(100)));
    f.HostPort(4)->SetPhysicalLinkDown(); // a heavy sweep, through a trap
    Simulator::Stop(MilliSeconds(2));
    Simulator::Run();
    EXPECT_GE(sm->GetHeavySweeps(), 2u);
    EXPECT_EQ(slVlSets, firstSweep);
    Simulator::Destroy();

    // Up/down on a fat-tree: one layer, no SLtoVL SMP.
    IbFabric ft = IbFabricHelper().Build(BuildTopologyFromSpec("fat-tree:k=4"));
    Ptr<IbSubnetManager> sm2 = IbSmHelper().Install(ft, ft.hosts.Get(0), MicroSeconds(2));
    uint64_t ftSets = 0;
    sm2->TraceConnectWithoutContext(
        "SmpSent", Callback<void, uint16_t, uint8_t, uint32_t>(
                       [&ftSets](uint16_t attr, uint8_t, uint32_t) {
                           ftSets += attr == IbSmAttr::SlToVlMappingTable;
                       }));
    while (sm2->GetPhase() != IbSweepPhase::Up && Simulator::Now() < MilliSeconds(20))
    {
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
    }
    ASSERT_EQ(sm2->GetPhase(), IbSweepPhase::Up);
    EXPECT_EQ(sm2->GetVlLayers().layers, 1u);
    EXPECT_EQ(ftSets, 0u);
}

// A GetTable of every NodeRecord of a k=4 fat-tree (36 nodes, 112 bytes apart) is 4032 bytes of
// records: 21 RMPP DATA segments of 200 (IBA vol. 1 §13.6.3), in order, Active on each, First on
// the first and Last on the last, PayloadLength the whole payload first and the last one's share
// last; put together they hold every node once (what saquery shows through libibumad, which
// reassembles them as the kernel does).
TEST_F(SmSa, ATableLargerThanAMadComesAsRmppSegments)
{
    SaFabric s(5);
    IbSaMad q = IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::NodeRecord, 0, 0);
    q.Mad().SetTransactionId(0x7777);
    uint8_t bytes[kIbMadBytes];
    q.WriteTo(bytes);
    ASSERT_TRUE(s.client->SendGmp(1, bytes, s.sm->GetSmLid(), kIbGsiQp, 0));
    Simulator::Stop(MicroSeconds(100));
    Simulator::Run();
    ASSERT_EQ(s.got.size(), 21u);
    std::vector<uint8_t> stream;
    for (size_t i = 0; i < s.got.size(); ++i)
    {
        const IbSaMad& seg = s.got[i];
        EXPECT_EQ(seg.Mad().GetMethod(), IbMadMethod::GetTableResp);
        EXPECT_EQ(seg.Mad().GetTransactionId(), 0x7777u);
        EXPECT_EQ(seg.Mad().GetStatus(), IbMadStatus::Ok);
        EXPECT_EQ(seg.GetAttributeOffset(), 14);
        EXPECT_EQ(seg.GetRmppType(), 1);
        EXPECT_EQ(seg.GetRmppData1(), i + 1); // SegmentNumber
        const uint8_t flags = seg.GetRmppTimeFlags() & 0x07;
        EXPECT_EQ(flags, 0x01 | (i == 0 ? 0x02 : 0) | (i == 20 ? 0x04 : 0)) << i;
        const uint32_t pad = 21 * 200 - 36 * 112;
        EXPECT_EQ(seg.GetRmppData2(), i == 0 ? 21 * 220 - pad : (i == 20 ? 220 - pad : 0)) << i;
        stream.insert(stream.end(), seg.Data(), seg.Data() + IbSaMad::kDataBytes);
    }
    std::set<uint16_t> lids;
    for (size_t n = 0; n < 36; ++n)
    {
        IbNodeRecord r;
        r.ReadFrom(stream.data() + n * 112);
        lids.insert(r.lid);
    }
    EXPECT_EQ(lids.size(), 36u);
    EXPECT_EQ(lids.count(0), 0u);
}
