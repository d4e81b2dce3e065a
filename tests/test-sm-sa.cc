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
#include "models/mgmt/ib-sm-info.h"
#include "models/rdma/ib-wire-bytes.h"

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

    /// Sends GetTable `q` to the SA and returns the records of its answer (the RMPP segments put
    /// together), each `bytes` long; `status` gets the answer's MAD status (0xFFFF: none came).
    std::vector<std::vector<uint8_t>> AskTable(IbSaMad q, uint32_t bytes, uint16_t* status)
    {
        q.Mad().SetMethod(IbMadMethod::GetTable);
        q.Mad().SetTransactionId(++tid);
        uint8_t raw[kIbMadBytes];
        q.WriteTo(raw);
        const size_t before = got.size();
        EXPECT_TRUE(client->SendGmp(1, raw, sm->GetSmLid(), kIbGsiQp, 0));
        Simulator::Stop(MilliSeconds(2));
        Simulator::Run();
        *status = 0xFFFF;
        std::vector<std::vector<uint8_t>> records;
        if (got.size() == before)
        {
            return records;
        }
        std::vector<uint8_t> stream;
        uint32_t payload = 0;
        uint16_t stride = 0;
        for (size_t i = before; i < got.size(); ++i)
        {
            const IbSaMad& seg = got[i];
            EXPECT_EQ(seg.Mad().GetTransactionId(), tid);
            EXPECT_EQ(seg.Mad().GetMethod(), IbMadMethod::GetTableResp);
            EXPECT_EQ(seg.GetRmppData1(), i - before + 1) << "segments in order";
            if (i == before)
            {
                *status = seg.Mad().GetStatus();
                payload = seg.GetRmppData2();
                stride = seg.GetAttributeOffset();
            }
            stream.insert(stream.end(), seg.Data(), seg.Data() + IbSaMad::kDataBytes);
        }
        const uint32_t segments = static_cast<uint32_t>(got.size() - before);
        // PayloadLength of the first segment: every segment's SA header (20 bytes) and the
        // records; the data proper is what follows the headers.
        const uint32_t data = payload - 20 * segments;
        EXPECT_EQ(stride, (bytes + 7) / 8) << "AttributeOffset";
        for (uint32_t at = 0; stride != 0 && at + stride * 8u <= data; at += stride * 8u)
        {
            records.emplace_back(stream.begin() + at, stream.begin() + at + bytes);
        }
        return records;
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
    // A PathRecord Get with no destination: a path to every endport, too many for a Get; with
    // neither end it names no path at all.
    IbPathRecord pq;
    pq.slid = s.f.HostPort(3)->GetLid();
    a = s.Ask(PathQuery(IbPathRecord::kCompSlid, pq));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbSaStatus::TooManyRecords);
    a = s.Ask(PathQuery(0, pq));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbSaStatus::InsufficientComponents);
    // SA class version 1 (the SA is version 2).
    IbSaMad old = PathQuery(IbPathRecord::kCompSlid | IbPathRecord::kCompDlid, pq);
    old.Mad().SetClassVersion(1);
    a = s.Ask(old);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbMadStatus::BadVersion);
    // An attribute the SA does not serve (TraceRecord, 0x0039).
    IbSaMad trace = IbSaMad::Make(IbMadMethod::Get, 0x0039, 0, 0);
    a = s.Ask(trace);
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

// ---- The records administrators query (saquery, ibqueryerrors) ------------------------------

TEST(SmSaRecords, FieldListsAgreeWithTheAttributesTheyEmbed)
{
    // PortInfoRecord: EndportLID, PortNum, Options, then PortInfo's 55 fields in order, so that
    // ComponentMask bit i selects the i-th (CapabilityMask is bit 7, LinkSpeedExtEnabled 57,
    // as libibmad's IB_PIR_COMPMASK_* number them). Each field set to a distinctive value reads
    // back through its list entry from the bytes IbPortInfo writes.
    ASSERT_EQ(IbSaLayout::kPortInfoRecord.size(), 58u);
    IbPortInfo pi;
    pi.mKey = 0x1122334455667788ULL;
    pi.lid = 0x0ABC;
    pi.masterSmLid = 0x0DEF;
    pi.capabilityMask = 0xA5A50F0F;
    pi.localPortNum = 7;
    pi.portState = 4;
    pi.portPhysicalState = 5;
    pi.lmc = 5;
    pi.neighborMtu = 5;
    pi.vlCap = 4;
    pi.operationalVls = 3;
    pi.hoqLife = 0x13;
    pi.guidCap = 0x21;
    pi.clientReregister = true;
    pi.subnetTimeOut = 0x11;
    pi.respTimeValue = 0x0E;
    pi.linkRoundTripLatency = 0xABCDEF;
    pi.capabilityMask2 = 0x1234;
    pi.linkSpeedExtEnabled = 0x1E;
    uint8_t rec[IbSaRecordBytes::PortInfoRecord] = {};
    pi.WriteTo(rec + 4);
    const auto& f = IbSaLayout::kPortInfoRecord;
    EXPECT_EQ(IbSaFieldValue(rec, f[3]), pi.mKey);
    EXPECT_EQ(IbSaFieldValue(rec, f[5]), pi.lid);
    EXPECT_EQ(IbSaFieldValue(rec, f[6]), pi.masterSmLid);
    EXPECT_EQ(IbSaFieldValue(rec, f[7]), pi.capabilityMask);
    EXPECT_EQ(IbSaFieldValue(rec, f[10]), pi.localPortNum);
    EXPECT_EQ(IbSaFieldValue(rec, f[15]), pi.portState);
    EXPECT_EQ(IbSaFieldValue(rec, f[16]), pi.portPhysicalState);
    EXPECT_EQ(IbSaFieldValue(rec, f[20]), pi.lmc);
    EXPECT_EQ(IbSaFieldValue(rec, f[23]), pi.neighborMtu);
    EXPECT_EQ(IbSaFieldValue(rec, f[25]), pi.vlCap);
    EXPECT_EQ(IbSaFieldValue(rec, f[33]), pi.hoqLife);
    EXPECT_EQ(IbSaFieldValue(rec, f[34]), pi.operationalVls);
    EXPECT_EQ(IbSaFieldValue(rec, f[42]), pi.guidCap);
    EXPECT_EQ(IbSaFieldValue(rec, f[43]), 1u);
    EXPECT_EQ(IbSaFieldValue(rec, f[45]), pi.subnetTimeOut);
    EXPECT_EQ(IbSaFieldValue(rec, f[47]), pi.respTimeValue);
    EXPECT_EQ(IbSaFieldValue(rec, f[52]), pi.linkRoundTripLatency);
    EXPECT_EQ(IbSaFieldValue(rec, f[53]), pi.capabilityMask2);
    EXPECT_EQ(IbSaFieldValue(rec, f[57]), pi.linkSpeedExtEnabled);
    // The fields tile the record: each starts where the one before ends, and PortInfo ends at
    // byte 68 (4 bytes of padding follow).
    for (const auto* list : {&IbSaLayout::kNodeRecord, &IbSaLayout::kPortInfoRecord,
                             &IbSaLayout::kLinkRecord, &IbSaLayout::kSwitchInfoRecord,
                             &IbSaLayout::kLftRecord, &IbSaLayout::kGuidInfoRecord,
                             &IbSaLayout::kPKeyTableRecord, &IbSaLayout::kSmInfoRecord})
    {
        for (size_t i = 1; i < list->size(); ++i)
        {
            EXPECT_EQ((*list)[i].bit, (*list)[i - 1].bit + (*list)[i - 1].width) << i;
        }
    }
    EXPECT_EQ(f.back().bit + f.back().width, 68 * 8);
    EXPECT_EQ(IbSaLayout::kNodeRecord.back().bit + IbSaLayout::kNodeRecord.back().width,
              IbNodeRecord::kSize * 8);
    EXPECT_EQ(IbSaLayout::kSwitchInfoRecord.back().bit +
                  IbSaLayout::kSwitchInfoRecord.back().width,
              IbSaRecordBytes::SwitchInfoRecord * 8);

    // Matching: a selected field must agree; the capability-mask components as subsets.
    uint8_t query[IbSaRecordBytes::PortInfoRecord] = {};
    IbPortInfo want;
    want.capabilityMask = 0x00000002; // IsSM
    want.WriteTo(query + 4);
    EXPECT_TRUE(IbSaComponentsMatch(rec, query, 1u << 7, f, 1u << 7));
    EXPECT_FALSE(IbSaComponentsMatch(rec, query, 1u << 7, f)) << "equality without subset";
    want.capabilityMask = 0x00000010;
    want.WriteTo(query + 4);
    EXPECT_FALSE(IbSaComponentsMatch(rec, query, 1u << 7, f, 1u << 7));
    EXPECT_TRUE(IbSaComponentsMatch(rec, query, 0, f)) << "no component: everything";
    IbMadStore16(query, 0x0ABC);
    IbMadStore16(rec, 0x0ABC);
    EXPECT_TRUE(IbSaComponentsMatch(rec, query, 1u << 0, f));
    IbMadStore16(rec, 0x0ABD);
    EXPECT_FALSE(IbSaComponentsMatch(rec, query, 1u << 0, f));
    EXPECT_EQ(IbSaRateGbps(17), 200);
    EXPECT_EQ(IbSaRateGbps(5), 5);
    EXPECT_EQ(IbSaRateGbps(0), 0);
}

TEST_F(SmSa, PathRecordTablesFromOneEndToAllAndBetweenAll)
{
    // ibqueryerrors asks for the paths from its own port to every endport (SGID only); saquery
    // -p for every pair. k=4: 16 hosts and 20 switches, 36 LIDs.
    SaFabric s(6);
    IbPathRecord q;
    q.sgid = IbPortGid(s.f.HostPort(6)->GetPortGuid());
    q.numbPath = 1;
    q.reversible = true;
    uint16_t status = 0;
    auto recs = s.AskTable(PathQuery(IbPathRecord::kCompSgid | (1u << 11) | (1u << 12), q), 64,
                           &status);
    EXPECT_EQ(status, IbMadStatus::Ok);
    ASSERT_EQ(recs.size(), 36u);
    std::set<uint16_t> dlids;
    for (const auto& b : recs)
    {
        IbPathRecord r;
        r.ReadFrom(b.data());
        EXPECT_EQ(r.slid, s.f.HostPort(6)->GetLid());
        EXPECT_EQ(r.rate, 17);
        EXPECT_EQ(r.mtu, 5);
        dlids.insert(r.dlid);
    }
    EXPECT_EQ(dlids.size(), 36u);
    EXPECT_EQ(dlids.count(s.f.HostPort(6)->GetLid()), 1u) << "the path to itself too";

    // The reverse half: every source to one destination, by DLID.
    IbPathRecord q2;
    q2.dlid = s.f.HostPort(0)->GetLid();
    recs = s.AskTable(PathQuery(IbPathRecord::kCompDlid, q2), 64, &status);
    EXPECT_EQ(status, IbMadStatus::Ok);
    EXPECT_EQ(recs.size(), 36u);

    // Every pair whose route arrives: all but the switch pairs up/down routing leaves without a
    // legal route (core to core would turn down then up), the same pairs as source by source;
    // hundreds of RMPP segments, none lost.
    recs = s.AskTable(PathQuery(0, IbPathRecord{}), 64, &status);
    EXPECT_EQ(status, IbMadStatus::Ok);
    size_t bySource = 0;
    size_t fromHosts = 0;
    for (uint32_t h = 0; h < 16; ++h)
    {
        IbPathRecord one;
        one.slid = s.f.HostPort(h)->GetLid();
        fromHosts += s.AskTable(PathQuery(IbPathRecord::kCompSlid, one), 64, &status).size();
    }
    EXPECT_EQ(fromHosts, 16u * 36u) << "a host reaches every endport";
    for (uint16_t lid = 1; lid <= 36; ++lid)
    {
        IbPathRecord one;
        one.slid = lid;
        bySource += s.AskTable(PathQuery(IbPathRecord::kCompSlid, one), 64, &status).size();
    }
    EXPECT_EQ(recs.size(), bySource);
    EXPECT_GT(recs.size(), 16u * 36u + 20u * 16u);
    EXPECT_LE(recs.size(), 36u * 36u);

    // Components narrow it: another partition, an SL no route uses, a rate above the links',
    // an MTU below 4096: none; a rate "less than 400 Gb/s": all.
    q.pkey = 0x8001;
    recs = s.AskTable(PathQuery(IbPathRecord::kCompSgid | IbPathRecord::kCompPkey, q), 64, &status);
    EXPECT_EQ(status, IbMadStatus::Ok) << "an empty table is an answer";
    EXPECT_EQ(recs.size(), 0u);
    q.pkey = 0xFFFF;
    q.sl = 3;
    recs = s.AskTable(PathQuery(IbPathRecord::kCompSgid | IbPathRecord::kCompSl, q), 64, &status);
    EXPECT_EQ(recs.size(), 0u);
    q.sl = 0;
    q.rate = 21; // 400 Gb/s, exactly
    recs = s.AskTable(PathQuery(IbPathRecord::kCompSgid | IbPathRecord::kCompRate, q), 64, &status);
    EXPECT_EQ(recs.size(), 0u);
    q.rateSelector = 1; // less than
    recs = s.AskTable(PathQuery(IbPathRecord::kCompSgid | IbPathRecord::kCompRate |
                                    IbPathRecord::kCompRateSelector,
                                q),
                      64, &status);
    EXPECT_EQ(recs.size(), 36u);
    q.mtu = 4; // 2048: "exactly" fails, "greater than" holds
    recs = s.AskTable(PathQuery(IbPathRecord::kCompSgid | IbPathRecord::kCompMtu, q), 64, &status);
    EXPECT_EQ(recs.size(), 0u);
    q.mtuSelector = 0;
    recs = s.AskTable(PathQuery(IbPathRecord::kCompSgid | IbPathRecord::kCompMtu |
                                    IbPathRecord::kCompMtuSelector,
                                q),
                      64, &status);
    EXPECT_EQ(recs.size(), 36u);
}

TEST_F(SmSa, PortInfoLinkAndSwitchRecordsDescribeTheFabricTheSmSwept)
{
    SaFabric s(2);
    const uint16_t smLid = s.sm->GetSmLid();
    uint16_t status = 0;

    // PortInfoRecords with the IsSM capability bit (saquery -s): the SM's port alone.
    IbSaMad pir = IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::PortInfoRecord, 0, 0);
    pir.SetComponentMask(1u << 7);
    IbPortInfo isSm;
    isSm.capabilityMask = IbPortCap::IsSm;
    isSm.WriteTo(pir.Data() + 4);
    auto recs = s.AskTable(pir, IbSaRecordBytes::PortInfoRecord, &status);
    EXPECT_EQ(status, IbMadStatus::Ok);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(IbMadLoad16(recs[0].data()), smLid);
    IbPortInfo got;
    got.ReadFrom(recs[0].data() + 4);
    EXPECT_EQ(got.lid, smLid);
    EXPECT_EQ(got.portState, 4) << "Active";
    EXPECT_EQ(got.mKey, 0u) << "hidden from an untrusted requester";
    // Every port: 16 host ports, and 20 switches' ports 0..4.
    pir.SetComponentMask(0);
    recs = s.AskTable(pir, IbSaRecordBytes::PortInfoRecord, &status);
    EXPECT_EQ(recs.size(), 16u + 20u * 5u);
    // By LID and port: a host's port 1.
    pir.SetComponentMask(0x3);
    std::memset(pir.Data(), 0, IbSaMad::kDataBytes);
    IbMadStore16(pir.Data(), s.f.HostPort(9)->GetLid());
    pir.Data()[2] = 1;
    recs = s.AskTable(pir, IbSaRecordBytes::PortInfoRecord, &status);
    ASSERT_EQ(recs.size(), 1u);
    got.ReadFrom(recs[0].data() + 4);
    EXPECT_EQ(got.lid, s.f.HostPort(9)->GetLid());
    EXPECT_EQ(got.masterSmLid, smLid);

    // LinkRecords: each of the 48 cables from both ends; from one host, its edge switch.
    IbSaMad lr = IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::LinkRecord, 0, 0);
    recs = s.AskTable(lr, IbSaRecordBytes::LinkRecord, &status);
    EXPECT_EQ(status, IbMadStatus::Ok);
    EXPECT_EQ(recs.size(), 96u);
    lr.SetComponentMask(1u << 0);
    IbMadStore16(lr.Data(), s.f.HostPort(9)->GetLid());
    recs = s.AskTable(lr, IbSaRecordBytes::LinkRecord, &status);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0][2], 1); // FromPort
    const uint16_t edgeLid = IbMadLoad16(recs[0].data() + 4);
    const uint8_t edgePort = recs[0][3];

    // SwitchInfoRecords: 20, LinearFDBTop the highest LID; the edge switch's LFT sends the
    // host's LID out of the port the link record named, and its own LID to port 0.
    IbSaMad sw = IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::SwitchInfoRecord, 0, 0);
    recs = s.AskTable(sw, IbSaRecordBytes::SwitchInfoRecord, &status);
    ASSERT_EQ(recs.size(), 20u);
    IbSwitchInfo si;
    uint8_t siBytes[IbSwitchInfo::kSize] = {};
    std::memcpy(siBytes, recs[0].data() + 4, IbSaRecordBytes::SwitchInfoRecord - 4);
    si.ReadFrom(siBytes);
    EXPECT_EQ(si.linearFdbTop, 36);
    IbSaMad lft = IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::LftRecord, 0, 0);
    lft.SetComponentMask(1u << 0);
    IbMadStore16(lft.Data(), edgeLid);
    recs = s.AskTable(lft, IbSaRecordBytes::LftRecord, &status);
    ASSERT_EQ(recs.size(), 1u) << "LIDs 1-36: one block";
    EXPECT_EQ(recs[0][8 + s.f.HostPort(9)->GetLid()], edgePort);
    EXPECT_EQ(recs[0][8 + edgeLid], 0);
    EXPECT_EQ(recs[0][8 + 0], kIbLftNoRoute);

    // GUIDInfo and P_Key table of a host; the SM itself; the SA's ClassPortInfo.
    IbSaMad gir = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::GuidInfoRecord, 0, 0);
    gir.SetComponentMask(1u << 0);
    IbMadStore16(gir.Data(), s.f.HostPort(9)->GetLid());
    const IbSaMad* a = s.Ask(gir);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbMadStatus::Ok);
    EXPECT_EQ(IbWireLoad64(a->Data() + 8), s.f.HostPort(9)->GetPortGuid());
    IbSaMad pk = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::PKeyTableRecord, 0, 0);
    pk.SetComponentMask(1u << 0);
    IbMadStore16(pk.Data(), s.f.HostPort(9)->GetLid());
    a = s.Ask(pk);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(IbMadLoad16(a->Data() + 8), 0xFFFF);
    IbSaMad smi = IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::SmInfoRecord, 0, 0);
    recs = s.AskTable(smi, IbSaRecordBytes::SmInfoRecord, &status);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(IbMadLoad16(recs[0].data()), smLid);
    IbSmInfo info;
    uint8_t infoBytes[IbSmInfo::kSize] = {};
    std::memcpy(infoBytes, recs[0].data() + 4, 21);
    info.ReadFrom(infoBytes);
    EXPECT_EQ(info.guid, s.sm->GetGuid());
    EXPECT_EQ(info.smState, static_cast<uint8_t>(IbSmState::Master));
    EXPECT_EQ(info.smKey, 0u) << "hidden";
    a = s.Ask(IbSaMad::Make(IbMadMethod::Get, IbSaAttr::ClassPortInfo, 0, 0));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbMadStatus::Ok);
    EXPECT_EQ(a->Data()[1], 2) << "SA class version";
    EXPECT_EQ(IbMadLoad16(a->Data() + 2), 1u << 13) << "CapabilityMask: subset matching";

    // Records this SA holds none of: an empty table to GetTable, ERR_NO_RECORDS to a Get.
    recs = s.AskTable(IbSaMad::Make(IbMadMethod::GetTable, IbSaAttr::ServiceRecord, 0, 0), 176,
                      &status);
    EXPECT_EQ(status, IbMadStatus::Ok);
    EXPECT_EQ(recs.size(), 0u);
    // (An MCMemberRecord of a group nobody made: the SM's one group is IPoIB's broadcast group.)
    IbSaMad mcmr = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::McMemberRecord, 0, 0);
    IbMcMemberRecord noGroup;
    noGroup.mgid = IbIpoibBroadcastGroup().mgid;
    noGroup.mgid[15] = 0xFE;
    noGroup.WriteTo(mcmr.Data());
    mcmr.SetComponentMask(IbMcMemberRecord::kCompMgid);
    a = s.Ask(mcmr);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbSaStatus::NoRecords);
    // A record selected by a LID nobody has.
    pir.Mad().SetMethod(IbMadMethod::Get);
    IbMadStore16(pir.Data(), 0x0BAD);
    a = s.Ask(pir);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->Mad().GetStatus(), IbSaStatus::NoRecords);
}
