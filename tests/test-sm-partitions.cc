// The built-in SM's partition policy: opensm's partitions.conf format read (and refused, line by
// line, where it is wrong), and the P_Key tables the SM writes from it into every adapter port.
#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "models/ib/ib-net-device.h"
#include "models/mgmt/ib-gmp.h"
#include "models/mgmt/ib-mad-header.h"
#include "models/mgmt/ib-sa-records.h"
#include "models/mgmt/ib-sm-partitions.h"
#include "models/mgmt/ib-subnet-manager.h"

#include "ns3/simulator.h"
#include "ns3/string.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ns3;

namespace
{

const char* const kPolicy = R"(# two tenants beside the default partition
Default=0x7fff, ipoib, rate=7, mtu=4 : ALL=full, SELF=full ;
TenantA = 0x0001, defmember=full :
    0x0002c90300000101,   # h0
    0x0002c90300000201 ;
TenantB=0x0002,indx0 : 0x0002c90300000201=limited, 0x0002c90300000301=both ;
Admins=0x0003 : SELF ;
)";

TEST(SmPartitions, OpensmsFormatGivesEachPortItsKeysDefaultFirst)
{
    IbPartitionPolicy p;
    std::string why;
    ASSERT_TRUE(p.Parse(kPolicy, &why)) << why;
    ASSERT_EQ(p.Partitions().size(), 4u);
    EXPECT_EQ(p.Partitions()[0].name, "Default");
    EXPECT_TRUE(p.Partitions()[0].ipoib);
    EXPECT_EQ(p.Partitions()[1].name, "TenantA");
    EXPECT_EQ(p.Partitions()[1].pkey, 0x0001);
    EXPECT_EQ(p.Partitions()[1].members.size(), 2u);
    // defmember=full: h0 and h1 are full members of TenantA.
    EXPECT_EQ(p.CaPortPkeys(0x0002c90300000101, false),
              (std::vector<uint16_t>{0xFFFF, 0x8001}));
    EXPECT_EQ(p.CaPortPkeys(0x0002c90300000201, false),
              (std::vector<uint16_t>{0xFFFF, 0x8001, 0x0002}));
    // "both": the limited and the full key.
    EXPECT_EQ(p.CaPortPkeys(0x0002c90300000301, false),
              (std::vector<uint16_t>{0xFFFF, 0x0002, 0x8002}));
    // SELF is the SM's port; its default member line names no membership: limited.
    EXPECT_EQ(p.CaPortPkeys(0x0002c90300000401, true),
              (std::vector<uint16_t>{0xFFFF, 0x0003}));
    EXPECT_EQ(p.CaPortPkeys(0x0002c90300000401, false), (std::vector<uint16_t>{0xFFFF}));
}

TEST(SmPartitions, APortInNoPartitionGetsNoKeyAndTheDefaultComesFirstWhereverItIsDefined)
{
    IbPartitionPolicy p;
    std::string why;
    ASSERT_TRUE(p.Parse("A=0x0010 : 0x11=full ;\nDefault=0x7fff : 0x11, 0x22=full ;", &why))
        << why;
    EXPECT_EQ(p.CaPortPkeys(0x11, false), (std::vector<uint16_t>{0x7FFF, 0x8010}));
    EXPECT_EQ(p.CaPortPkeys(0x22, false), (std::vector<uint16_t>{0xFFFF}));
    EXPECT_TRUE(p.CaPortPkeys(0x33, false).empty());
}

TEST(SmPartitions, EveryFaultIsAnErrorNamingItsLine)
{
    const std::string def = "Default=0x7fff : ALL=full ;\n";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "line 1: the default partition is not defined"},
        {"A=0x1 : ALL ;", "line 1: the default partition is not defined"},
        {def + "A=0x1 : ALL", "line 2: a definition without its closing ';'"},
        {def + "A=0x1 ALL ;", "line 2: no ':' between the partition and its members"},
        {def + "=0x1 : ALL ;", "line 2: a partition without a name"},
        {def + "A : ALL ;", "line 2: partition 'A' has no P_Key"},
        {def + "A=0x8001 : ALL ;", "line 2: partition 'A': P_Key '0x8001' is not in"},
        {def + "A=0 : ALL ;", "line 2: partition 'A': P_Key '0' is not in"},
        {def + "A=zz : ALL ;", "line 2: partition 'A': P_Key 'zz' is not in"},
        {def + "A=0x1 : ALL ;\nB=1 : ALL ;", "line 3: P_Key 1 is defined twice"},
        {def + "A=0x1, frob : ALL ;", "line 2: unknown flag 'frob' of partition 'A'"},
        {def + "A=0x1, rate : ALL ;", "line 2: unknown flag 'rate'"},
        {def + "A=0x1, defmember=most : ALL ;", "line 2: defmember must be full, limited"},
        {def + "A=0x1 : ALL=half ;", "line 2: membership of 'ALL' must be full"},
        {def + "A=0x1 : h0=full ;", "line 2: unknown member 'h0'"},
        {def + "A=0x1 : 0x12, , 0x13 ;", "line 2: unknown member ''"},
        {def + "\n\n# c\nA=0x1 :\n 0x12,\n mgid=ff12::1 ;", "line 5: unknown member 'mgid'"},
    };
    for (const auto& [text, want] : cases)
    {
        IbPartitionPolicy p;
        std::string why;
        EXPECT_FALSE(p.Parse(text, &why)) << text;
        EXPECT_EQ(why.rfind(want, 0), 0u) << "for:\n" << text << "\ngot: " << why;
        EXPECT_TRUE(p.Empty());
    }
}

/// The built-in SM writes every adapter port's table from the policy in its heavy sweep, and in
/// later sweeps only what changed (nothing here).
TEST(SmPartitions, TheBuiltInSmWritesEachAdaptersTableFromThePolicy)
{
    IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("star:hosts=3"));
    std::vector<uint64_t> guid;
    for (uint32_t h = 0; h < 3; ++h)
    {
        guid.push_back(f.HostPort(h)->GetPortGuid());
    }
    const std::string file = "/tmp/cnuas-sm-partitions-" + std::to_string(getpid()) + ".conf";
    std::ofstream(file) << "Default=0x7fff : ALL=full ;\nA=0x0001 : 0x" << std::hex << guid[1]
                        << "=full, 0x" << guid[2] << " ;\n";
    IbSmHelper smh;
    smh.SetSmAttribute("PartitionConfig", StringValue(file));
    smh.SetSmAttribute("SweepInterval", TimeValue(MilliSeconds(1)));
    Ptr<IbSubnetManager> sm = smh.Install(f, f.hosts.Get(0), MicroSeconds(2));
    Simulator::Stop(MilliSeconds(5));
    Simulator::Run();
    unlink(file.c_str());
    ASSERT_GE(sm->GetLastSubnetUp(), Seconds(0));
    EXPECT_EQ(sm->GetPartitionError(), "");
    EXPECT_EQ(sm->GetPartitions().Partitions().size(), 2u);
    const std::vector<std::vector<uint16_t>> want = {
        {0xFFFF, 0}, {0xFFFF, 0x8001}, {0xFFFF, 0x0001}};
    for (uint32_t h = 0; h < 3; ++h)
    {
        const std::vector<uint16_t>& t = f.HostPort(h)->GetPkeyTable();
        ASSERT_GE(t.size(), 32u) << "host " << h;
        EXPECT_EQ(std::vector<uint16_t>(t.begin(), t.begin() + 2), want[h]) << "host " << h;
    }
    // One block per port in the one heavy sweep; light sweeps write nothing.
    EXPECT_EQ(sm->GetPkeyBlocksWritten(), 3u);
    // The SA's P_KeyTableRecord of host 1 is what the SM wrote (`saquery PKTR`).
    IbSaMad q = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::PKeyTableRecord, 0, 1);
    q.SetComponentMask(1u << 0);
    IbMadStore16(q.Data(), f.HostPort(1)->GetLid());
    uint8_t request[kIbMadBytes];
    uint8_t response[kIbMadBytes];
    q.WriteTo(request);
    ASSERT_TRUE(sm->AnswerSa(request, response));
    IbSaMad a;
    a.ReadFrom(response);
    EXPECT_EQ(a.Mad().GetStatus(), IbMadStatus::Ok);
    EXPECT_EQ(IbMadLoad16(a.Data() + 8), 0xFFFF);
    EXPECT_EQ(IbMadLoad16(a.Data() + 10), 0x8001);
    EXPECT_EQ(IbMadLoad16(a.Data() + 12), 0);
    // PathRecords in a partition: only between ends that share it (h1 full, h2 limited: yes;
    // h0 is not in it: no path), carrying the P_Key asked for; without one, a key both share.
    auto path = [&](uint32_t from, uint32_t to, int pkey, IbPathRecord* out) {
        IbSaMad p = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::PathRecord, 0, 2);
        IbPathRecord r;
        r.slid = f.HostPort(from)->GetLid();
        r.dlid = f.HostPort(to)->GetLid();
        uint64_t mask = IbPathRecord::kCompSlid | IbPathRecord::kCompDlid;
        if (pkey >= 0)
        {
            r.pkey = static_cast<uint16_t>(pkey);
            mask |= IbPathRecord::kCompPkey;
        }
        r.WriteTo(p.Data());
        p.SetComponentMask(mask);
        p.WriteTo(request);
        EXPECT_TRUE(sm->AnswerSa(request, response));
        IbSaMad answer;
        answer.ReadFrom(response);
        out->ReadFrom(answer.Data());
        return answer.Mad().GetStatus();
    };
    IbPathRecord got;
    EXPECT_EQ(path(1, 2, 0x8001, &got), IbMadStatus::Ok);
    EXPECT_EQ(got.pkey, 0x8001);
    EXPECT_EQ(path(2, 1, 0x0001, &got), IbMadStatus::Ok);
    EXPECT_EQ(got.pkey, 0x0001);
    EXPECT_NE(path(0, 1, 0x8001, &got), IbMadStatus::Ok); // h0 is no member
    EXPECT_EQ(path(0, 1, -1, &got), IbMadStatus::Ok);     // the default partition
    EXPECT_EQ(got.pkey, 0xFFFF);
    EXPECT_EQ(path(0, 1, 0xFFFF, &got), IbMadStatus::Ok);
    Simulator::Destroy();
}

TEST(SmPartitions, AnUnreadablePolicyIsReportedAndLeavesThePortsAlone)
{
    IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("pair"));
    IbSmHelper smh;
    smh.SetSmAttribute("PartitionConfig", StringValue("/nonexistent/partitions.conf"));
    Ptr<IbSubnetManager> sm = smh.Install(f, f.hosts.Get(0), MicroSeconds(2));
    Simulator::Stop(MilliSeconds(2));
    Simulator::Run();
    ASSERT_GE(sm->GetLastSubnetUp(), Seconds(0));
    EXPECT_EQ(sm->GetPartitionError(), "/nonexistent/partitions.conf: cannot be read");
    EXPECT_EQ(sm->GetPkeyBlocksWritten(), 0u);
    EXPECT_EQ(f.HostPort(1)->GetPkeyTable()[0], 0xFFFF);
    Simulator::Destroy();
}

} // namespace
