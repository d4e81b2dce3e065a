// Security of the RDMA engine: a request with a forged R_Key, outside the registered range,
// or without the access right (in the MR or in the QP's access flags) is refused with a
// remote access error and leaves the target memory unchanged byte for byte; a P_Key mismatch
// is dropped and counted; management QPs (0, 1) never reach the engine. Over the wire and from
// raw bytes an attacker forges (IbNetDevice::InjectReceivedBytes): an R_Key of another PD, a
// forged R_Key, a WRITE whose packets carry more than its RETH announced; each leaves every
// byte outside the regions the QP may write unchanged.
#include "ib-test-packets.h"
#include "rdma-engine-fixture.h"

#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "models/ib/ib-net-device.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-smp-attributes.h"
#include "models/mgmt/ib-subnet-manager.h"
#include "models/rdma/ib-opcode.h"
#include "models/rdma/ib-reth-header.h"

#include <cstring>

using namespace ns3;
using namespace cnuas_test;

namespace
{
struct AccessCase
{
    const char* name;
    RdmaWrOpcode op;
    uint32_t rkeyXor;      ///< forge the R_Key
    uint64_t remoteOffset; ///< from the region start
    uint32_t length;
    uint32_t mrAccess;     ///< the target MR's rights
    uint32_t qpAccess;     ///< the target QP's qp_access_flags
};

/// gtest prints a case by its name.
void
PrintTo(const AccessCase& c, std::ostream* os)
{
    *os << c.name;
}

constexpr uint32_t kAllMr = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                            RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC;
constexpr uint32_t kAllQp = kAllMr;

const AccessCase kCases[] = {
    {"WriteForgedRkey", RdmaWrOpcode::RDMA_WRITE, 0x1, 0, 512, kAllMr, kAllQp},
    {"ReadForgedRkey", RdmaWrOpcode::RDMA_READ, 0x80000000, 0, 512, kAllMr, kAllQp},
    {"AtomicForgedRkey", RdmaWrOpcode::ATOMIC_FETCH_AND_ADD, 0x100, 0, 8, kAllMr, kAllQp},
    {"WriteEndsPastTheRegion", RdmaWrOpcode::RDMA_WRITE, 0, kRegionBytes - 100, 200, kAllMr,
     kAllQp},
    {"WriteStartsBeforeTheRegion", RdmaWrOpcode::RDMA_WRITE, 0, uint64_t(-64), 128, kAllMr,
     kAllQp},
    {"ReadPastTheRegion", RdmaWrOpcode::RDMA_READ, 0, kRegionBytes, 1, kAllMr, kAllQp},
    {"AtomicPastTheRegion", RdmaWrOpcode::ATOMIC_CMP_AND_SWP, 0, kRegionBytes, 8, kAllMr,
     kAllQp},
    {"WriteWithoutRemoteWriteInTheMr", RdmaWrOpcode::RDMA_WRITE, 0, 0, 64,
     RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_READ, kAllQp},
    {"ReadWithoutRemoteReadInTheMr", RdmaWrOpcode::RDMA_READ, 0, 0, 64,
     RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE, kAllQp},
    {"AtomicWithoutRemoteAtomicInTheMr", RdmaWrOpcode::ATOMIC_FETCH_AND_ADD, 0, 0, 8,
     RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE | RDMA_ACCESS_REMOTE_READ, kAllQp},
    {"WriteWithoutRemoteWriteInTheQp", RdmaWrOpcode::RDMA_WRITE, 0, 0, 64, kAllMr,
     RDMA_ACCESS_REMOTE_READ},
    {"ReadWithoutRemoteReadInTheQp", RdmaWrOpcode::RDMA_READ, 0, 0, 64, kAllMr,
     RDMA_ACCESS_REMOTE_WRITE},
    {"AtomicWithoutRemoteAtomicInTheQp", RdmaWrOpcode::ATOMIC_CMP_AND_SWP, 0, 0, 8, kAllMr,
     RDMA_ACCESS_REMOTE_WRITE | RDMA_ACCESS_REMOTE_READ},
};
} // namespace

class RdmaEngineAccess : public RdmaPairTest, public ::testing::WithParamInterface<AccessCase>
{
};

TEST_P(RdmaEngineAccess, IsRefusedWithARemoteAccessErrorAndTouchesNoByte)
{
    const AccessCase& k = GetParam();
    BuildFabric();
    QpOptions oa;
    MakeSide(a, 0, oa);
    QpOptions ob;
    ob.mrAccess = k.mrAccess;
    ob.qpAccess = k.qpAccess;
    MakeSide(b, 1, ob);
    Connect(a.qp, b.lid, b.qp->GetQpNum(), oa.sqPsn, oa);
    Connect(b.qp, a.lid, a.qp->GetQpNum(), oa.sqPsn, ob);
    std::vector<RdmaAsyncEvent> events;
    struct Ev
    {
        std::vector<RdmaAsyncEvent>* v;

        void On(const RdmaAsyncEvent& e)
        {
            v->push_back(e);
        }
    } ev{&events};
    b.hca.device->TraceConnectWithoutContext("AsyncEvent", MakeCallback(&Ev::On, &ev));

    // Known contents on both sides.
    a.Write(0, TestBytes(4096, 1));
    b.Write(0, TestBytes(kRegionBytes, 2));
    const auto targetBefore = b.Read(0, kRegionBytes);
    const auto localBefore = a.Read(0, 8192);

    RdmaSendWr w = Wr(1, k.op, {a.Sge(k.op == RdmaWrOpcode::RDMA_READ ? 4096 : 0, k.length)});
    w.rdma.remote_addr = kRegionBase + k.remoteOffset;
    w.rdma.rkey = b.mr->GetRkey() ^ k.rkeyXor;
    w.atomic.remote_addr = w.rdma.remote_addr;
    w.atomic.rkey = w.rdma.rkey;
    w.atomic.compare_add = 0; // a CmpSwap that would match the stored bytes if it ran
    std::memcpy(&w.atomic.compare_add, targetBefore.data(), 8);
    w.atomic.swap = 0xBADBADBADULL;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(2, RdmaWrOpcode::SEND, {a.Sge(0, 16)})), 0);
    RunFor(MilliSeconds(2));

    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::REM_ACCESS_ERR) << RdmaWcStatusStr(sc[0].status);
    EXPECT_EQ(sc[1].status, RdmaWcStatus::WR_FLUSH_ERR);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::ERR);
    // IBA vol. 1 §9.9.3.1: the responder's QP enters Error too, with an access error event.
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::ERR);
    bool accessEvent = false;
    for (auto& e : events)
    {
        accessEvent |= e.event_type == RdmaEventType::QP_ACCESS_ERR && e.qp == b.qp;
    }
    EXPECT_TRUE(accessEvent);
    EXPECT_TRUE(b.Read(0, kRegionBytes) == targetBefore) << "target memory changed";
    EXPECT_TRUE(a.Read(0, 8192) == localBefore) << "requester memory changed";
    EXPECT_EQ(b.PollRecv().size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Cases,
                         RdmaEngineAccess,
                         ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<AccessCase>& p) {
                             return std::string(p.param.name);
                         });

class RdmaEngineSecurity : public RdmaPairTest
{
};

TEST_F(RdmaEngineSecurity, TheUnmodifiedRequestOfTheAccessCasesSucceeds)
{
    // The control for RdmaEngineAccess: the same requests with the right key, range and
    // rights go through, so the refusals above are caused by what each case changes.
    Setup();
    b.Write(0, TestBytes(8192, 2));
    for (const AccessCase& k : kCases)
    {
        if (k.rkeyXor || k.remoteOffset)
        {
            continue;
        }
        RdmaSendWr w = Wr(1, k.op, {a.Sge(4096, k.length)});
        w.rdma.remote_addr = kRegionBase;
        w.rdma.rkey = b.mr->GetRkey();
        w.atomic.remote_addr = kRegionBase;
        w.atomic.rkey = b.mr->GetRkey();
        ASSERT_EQ(a.qp->PostSend(w), 0);
    }
    RunFor(MilliSeconds(2));
    for (auto& wc : a.PollSend())
    {
        EXPECT_EQ(wc.status, RdmaWcStatus::SUCCESS);
    }
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::RTS);
}

TEST_F(RdmaEngineSecurity, ZeroLengthWriteAndReadNeedTheQpsRightButNoKey)
{
    // IBA vol. 1 C9-88: the R_Key and VA of a zero-length RDMA WRITE or READ are not checked.
    // UCX's rc_verbs flushes a connection with a zero-length WRITE whose R_Key is 0; with the
    // key checked, every UCX active-message test ended in "remote access error".
    Setup();
    const auto before = b.Read(0, kRegionBytes);
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {});
    w.rdma.remote_addr = 0;
    w.rdma.rkey = 0;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RdmaSendWr r = Wr(2, RdmaWrOpcode::RDMA_READ, {});
    r.rdma.remote_addr = 0x1234;
    r.rdma.rkey = b.mr->GetRkey() ^ 0x55;
    ASSERT_EQ(a.qp->PostSend(r), 0);
    RdmaSendWr wi = Wr(3, RdmaWrOpcode::RDMA_WRITE_WITH_IMM, {});
    wi.rdma.rkey = 0;
    wi.imm_data = 0xC988;
    ASSERT_EQ(b.PostRecv(7, 0, 16), 0);
    ASSERT_EQ(a.qp->PostSend(wi), 0);
    RunFor(MilliSeconds(2));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 3u);
    for (const auto& wc : sc)
    {
        EXPECT_EQ(wc.status, RdmaWcStatus::SUCCESS) << wc.wr_id << ": "
                                                    << RdmaWcStatusStr(wc.status);
    }
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 1u) << "the zero-length WRITE with immediate takes a receive WQE";
    EXPECT_EQ(rc[0].opcode, RdmaWcOpcode::RECV_RDMA_WITH_IMM);
    EXPECT_EQ(rc[0].byte_len, 0u);
    EXPECT_EQ(rc[0].imm_data, 0xC988u);
    EXPECT_TRUE(b.Read(0, kRegionBytes) == before);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::RTS);
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::RTS);
}

TEST_F(RdmaEngineSecurity, AZeroLengthWriteStillNeedsTheQpsRemoteWriteRight)
{
    BuildFabric();
    QpOptions oa;
    MakeSide(a, 0, oa);
    QpOptions ob;
    ob.qpAccess = RDMA_ACCESS_REMOTE_READ;
    MakeSide(b, 1, ob);
    Connect(a.qp, b.lid, b.qp->GetQpNum(), oa.sqPsn, oa);
    Connect(b.qp, a.lid, a.qp->GetQpNum(), oa.sqPsn, ob);
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {});
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(2));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::REM_ACCESS_ERR) << RdmaWcStatusStr(sc[0].status);
}

TEST_F(RdmaEngineSecurity, AWrongPkeyIsDroppedCountedAndChangesNothing)
{
    QpOptions o;
    o.retryCnt = 1;
    o.timeout = 4;
    BuildFabric();
    // b's port is a limited member of partition 0x0001 only; a sends with the default
    // partition 0xFFFF: the low 15 bits differ (IBA vol. 1 §10.9.3).
    hcas[1].port->SetPkeyTable({0x0001});
    MakeSide(a, 0, o);
    MakeSide(b, 1, o);
    Connect(a.qp, b.lid, b.qp->GetQpNum(), o.sqPsn, o);
    Connect(b.qp, a.lid, a.qp->GetQpNum(), o.sqPsn, o);
    a.Write(0, TestBytes(500, 1));
    const auto before = b.Read(0, kRegionBytes);
    ASSERT_EQ(b.PostRecv(1, 0, 4096), 0);
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 500)});
    w.rdma.remote_addr = kRegionBase;
    w.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(2, RdmaWrOpcode::SEND, {a.Sge(0, 500)})), 0);
    RunFor(MilliSeconds(5));
    EXPECT_TRUE(b.Read(0, kRegionBytes) == before);
    EXPECT_TRUE(b.PollRecv().empty());
    // Nothing answers a dropped packet: the requester runs out of retries.
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::RETRY_EXC_ERR);
    // Every arriving request was a violation: (1 try + 1 retry) x 2 packets.
    EXPECT_EQ(b.hca.port->GetPkeyViolations(), 4u);
    EXPECT_EQ(b.hca.engine->GetCounters().pkeyViolations, 4u);
    EXPECT_EQ(b.hca.engine->GetDropCount(RdmaDropReason::PkeyMismatch), 4u);
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::RTS); // silently dropped, the QP unaffected
}

/// The partitions an SM writes are the ones the transport enforces: a SubnSet(P_KeyTable)
/// through the node's SMA changes the table the HCA checks packets against (they were two
/// tables, and opensm's partitions never reached the data path), a packet from outside the
/// receiver's partition is counted in its PortInfo.P_KeyViolations and reported to the SM in
/// Trap 257 (one trap for a burst), and once the sender's port is in the partition too the same
/// send arrives.
TEST_F(RdmaEngineSecurity, ThePartitionTheSmWritesIsTheOneTheTransportEnforces)
{
    QpOptions o;
    o.type = RdmaQpType::UD;
    Setup(o);
    ASSERT_GE(IbMgmtHelper().Install(fabric), 3u);
    // h0 plays the SM: its manager gets the answers and the traps; h1's port reports to it.
    Ptr<IbMadDispatcher> sm = IbMgmtHelper::GetDispatcher(fabric.hosts.Get(0));
    std::vector<IbReceivedMad> got;
    sm->SetManagerHandler(
        Callback<void, const IbReceivedMad&>([&got](const IbReceivedMad& m) { got.push_back(m); }));
    fabric.HostPort(1)->SetSmLid(a.lid);
    uint64_t tid = 1;
    // Entry 0 of a port's table: h1's LID-routed, h0's own over a directed route of no hops.
    auto setPkey0 = [&](uint16_t dlid, uint16_t pkey) {
        IbPKeyTableBlock block;
        block.pkey[0] = pkey;
        IbSmp set = dlid == a.lid ? IbSmp::MakeDirected(IbMadMethod::Set, IbSmAttr::PKeyTable, 0,
                                                        tid++, nullptr, 0)
                                  : IbSmp::MakeLidRouted(IbMadMethod::Set, IbSmAttr::PKeyTable, 0,
                                                         tid++);
        block.WriteTo(set.Data());
        const size_t answers = got.size();
        ASSERT_TRUE(dlid == a.lid ? sm->SendDirectedSmp(set) : sm->SendLidRoutedSmp(1, set, dlid));
        RunFor(MicroSeconds(50));
        ASSERT_EQ(got.size(), answers + 1);
        ASSERT_EQ(got.back().smp.GetSmpStatus(), 0);
    };
    // h1 only in partition 0x0001, as a full member; h0 keeps the default partition 0xFFFF.
    setPkey0(b.lid, 0x8001);
    uint16_t key = 0;
    ASSERT_TRUE(b.hca.port->GetPkey(0, key));
    EXPECT_EQ(key, 0x8001);
    EXPECT_EQ(fabric.HostPort(1)->GetPkeyTable().size(), 128u); // PartitionCap, a ConnectX's

    RdmaAhAttr av;
    av.dlid = b.lid;
    av.port_num = 1;
    Ptr<RdmaAh> ah = a.hca.device->CreateAh(a.pd, av);
    ASSERT_TRUE(ah);
    auto send = [&](uint64_t id) {
        RdmaSendWr w = Wr(id, RdmaWrOpcode::SEND, {a.Sge(0, 64)});
        w.ud.ah = PeekPointer(ah);
        w.ud.remote_qpn = b.qp->GetQpNum();
        w.ud.remote_qkey = o.qkey;
        return a.qp->PostSend(w);
    };
    for (uint64_t id = 1; id <= 3; ++id)
    {
        ASSERT_EQ(b.PostRecv(id, 4096 * id, 4096), 0);
        ASSERT_EQ(send(id), 0);
    }
    const size_t beforeTrap = got.size();
    RunFor(MilliSeconds(1));
    EXPECT_TRUE(b.PollRecv().empty());
    EXPECT_EQ(b.hca.port->GetPkeyViolations(), 3u);
    EXPECT_EQ(b.hca.engine->GetDropCount(RdmaDropReason::PkeyMismatch), 3u);
    // One trap for the three (the first is still repeated, not repressed).
    ASSERT_EQ(got.size(), beforeTrap + 1);
    const IbReceivedMad& trap = got.back();
    EXPECT_EQ(trap.smp.Mad().GetMethod(), IbMadMethod::Trap);
    EXPECT_EQ(trap.view.lrh.GetSlid(), b.lid);
    IbNotice n;
    n.ReadFrom(trap.smp.Data());
    EXPECT_EQ(n.trapNumber, 257);
    EXPECT_EQ(n.type, 2); // security
    EXPECT_EQ(n.producerType, 1u);
    EXPECT_EQ(n.issuerLid, b.lid);
    const uint8_t* d = n.dataDetails.data();
    EXPECT_EQ((d[2] << 8) | d[3], a.lid); // LIDADDR1: the sender
    EXPECT_EQ((d[4] << 8) | d[5], b.lid); // LIDADDR2: where it was sent
    EXPECT_EQ((d[8] << 8) | d[9], 0xFFFF); // the P_Key it carried
    EXPECT_EQ(static_cast<uint32_t>((d[11] << 16) | (d[12] << 8) | d[13]), a.qp->GetQpNum());
    EXPECT_EQ(static_cast<uint32_t>((d[15] << 16) | (d[16] << 8) | d[17]), b.qp->GetQpNum());
    // PortInfo.P_KeyViolations says as much.
    IbSmp get = IbSmp::MakeLidRouted(IbMadMethod::Get, IbSmAttr::PortInfo, 0, tid++);
    ASSERT_TRUE(sm->SendLidRoutedSmp(1, get, b.lid));
    RunFor(MicroSeconds(50));
    IbPortInfo pi;
    pi.ReadFrom(got.back().smp.Data());
    EXPECT_EQ(got.back().smp.Mad().GetAttributeId(), IbSmAttr::PortInfo);
    EXPECT_EQ(pi.pKeyViolations, 3);

    // h0's port joins partition 0x0001 (as a limited member: h1 is the full one): its QP's
    // packets carry 0x0001 now and arrive.
    setPkey0(a.lid, 0x0001);
    ASSERT_EQ(send(4), 0);
    RunFor(MilliSeconds(1));
    const auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.hca.port->GetPkeyViolations(), 3u);
}

/// The built-in SM takes a Trap 257 for what it is, a refused packet: repressed and counted,
/// without a sweep (it swept the subnet after every trap, so a program sending outside its
/// partition would have had it sweep after each repressed one).
TEST_F(RdmaEngineSecurity, TheBuiltInSmRepressesABadPkeyTrapWithoutSweeping)
{
    fabric = IbFabricHelper().Build(BuildTopologyFromSpec("pair"));
    Ptr<IbSubnetManager> sm = IbSmHelper().Install(fabric, fabric.hosts.Get(0), MicroSeconds(2));
    hcas = RdmaHelper().Install(fabric);
    RunFor(MilliSeconds(2));
    ASSERT_GE(sm->GetLastSubnetUp(), Seconds(0));
    QpOptions o;
    o.type = RdmaQpType::UD;
    MakeSide(a, 0, o);
    MakeSide(b, 1, o);
    a.lid = hcas[0].port->GetLid();
    b.lid = hcas[1].port->GetLid();
    ASSERT_NE(b.lid, 0);
    for (Ptr<RdmaQp> qp : {a.qp, b.qp})
    {
        ASSERT_EQ(TryConnectQp(qp, RdmaLidAddress(0), 0, QpConnectOptions(o, 0)), "");
    }
    // h1's port is in partition 0x0001 only, as an SM's partitions could leave it.
    hcas[1].port->SetPkeyTable({0x8001});
    const uint64_t sweeps = sm->GetHeavySweeps();
    const uint64_t traps = sm->GetTrapsReceived();
    RdmaAhAttr av;
    av.dlid = b.lid;
    av.port_num = 1;
    Ptr<RdmaAh> ah = a.hca.device->CreateAh(a.pd, av);
    ASSERT_TRUE(ah);
    RdmaSendWr w = Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 64)});
    w.ud.ah = PeekPointer(ah);
    w.ud.remote_qpn = b.qp->GetQpNum();
    w.ud.remote_qkey = o.qkey;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    // Past the SMA's repeat interval (100 ms): a trap the SM did not repress comes again.
    RunFor(MilliSeconds(300));
    EXPECT_EQ(b.hca.port->GetPkeyViolations(), 1u);
    EXPECT_EQ(sm->GetTrapsReceived() - traps, 1u); // repressed at once: not repeated
    EXPECT_EQ(sm->GetSecurityTrapsReceived(), 1u);
    EXPECT_EQ(sm->GetHeavySweeps(), sweeps);
}

TEST(RdmaPkey, MatchRulesOfIba10_9_3)
{
    EXPECT_TRUE(RdmaPkeyMatch(0xFFFF, 0xFFFF));
    EXPECT_TRUE(RdmaPkeyMatch(0xFFFF, 0x7FFF)); // full + limited member
    EXPECT_FALSE(RdmaPkeyMatch(0x7FFF, 0x7FFF)); // two limited members
    EXPECT_TRUE(RdmaPkeyMatch(0x8001, 0x0001));
    EXPECT_FALSE(RdmaPkeyMatch(0x8001, 0x8002));
    EXPECT_FALSE(RdmaPkeyMatch(0x8000, 0x8000)); // the invalid P_Key
    EXPECT_FALSE(RdmaPkeyMatch(0x0000, 0x8000));
}

TEST_F(RdmaEngineSecurity, PacketsForQp0AndQp1AreLeftToManagementAndCounted)
{
    Setup();
    // A UD SEND to QP1 and one to QP0 from a's QP (raw headers through the port).
    IbTransportHeaders h;
    h.bth.SetOpCode(IbOpcode::kUdSendOnly);
    h.bth.SetDestQp(1);
    IbDethHeader deth;
    deth.SetQkey(IbDethHeader::kGsiQkey);
    deth.SetSrcQp(a.qp->GetQpNum());
    h.deth = deth;
    std::vector<uint8_t> bytes(IbTransportHeaderLength(IbOpcode::kUdSendOnly) + 256);
    ASSERT_GT(h.Write(bytes.data(), bytes.size()), 0u);
    RdmaAhAttr av;
    av.dlid = b.lid;
    av.port_num = 1;
    ASSERT_TRUE(a.hca.port->Send(bytes, av));
    h.bth.SetDestQp(0);
    h.Write(bytes.data(), bytes.size());
    ASSERT_TRUE(a.hca.port->Send(bytes, av));
    RunFor(MicroSeconds(100));
    EXPECT_EQ(b.hca.port->GetManagementDropped(), 2u);
    EXPECT_EQ(b.hca.engine->GetCounters().packetsReceived, 0u);
}

// ---------------------------------------------------------------------------------------------
// Over the wire: another PD's region, and raw packets an attacker forges

namespace
{

/// The responder's async events (trace source AsyncEvent).
struct EventLog
{
    std::vector<RdmaAsyncEvent> v;

    void On(const RdmaAsyncEvent& e)
    {
        v.push_back(e);
    }

    bool Has(RdmaEventType t, Ptr<RdmaQp> qp) const
    {
        for (const RdmaAsyncEvent& e : v)
        {
            if (e.event_type == t && e.qp == qp)
            {
                return true;
            }
        }
        return false;
    }
};

/// Where the first byte that differs is, for a failure message ("none" if equal).
std::string
FirstDifference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b)
{
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    {
        if (a[i] != b[i])
        {
            return "offset " + std::to_string(i);
        }
    }
    return a.size() == b.size() ? "none" : "length";
}

constexpr uint32_t kLocalOnly = RDMA_ACCESS_LOCAL_WRITE;
constexpr uint32_t kRemoteWritable = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE;

} // namespace

/// Raw packets into b's port. RC or UC: the engine refuses by NAK and QP error (RC) or by
/// dropping the message (UC).
class WireFixture : public RdmaPairTest
{
  public:
    /**
     * a and b connected; b's own region (all of b's 4 MiB) is registered for local access
     * only, so that every byte of b outside `writable` (registered with remote write, in b's
     * PD) is memory no remote peer may change.
     */
    void SetUpWire(uint64_t writableOffset, uint64_t writableBytes)
    {
        QpOptions o;
        o.type = type;
        o.retryCnt = 1;
        o.timeout = 4;
        BuildFabric();
        MakeSide(a, 0, o);
        QpOptions ob = o;
        ob.mrAccess = kLocalOnly;
        MakeSide(b, 1, ob);
        Connect(a.qp, b.lid, b.qp->GetQpNum(), o.sqPsn, o);
        Connect(b.qp, a.lid, a.qp->GetQpNum(), o.sqPsn, ob);
        if (writableBytes)
        {
            writable = b.hca.device->RegMr(b.pd, kRegionBase + writableOffset, writableBytes,
                                          kRemoteWritable);
            ASSERT_TRUE(writable) << b.hca.device->GetLastError();
        }
        b.hca.device->TraceConnectWithoutContext("AsyncEvent",
                                                 MakeCallback(&EventLog::On, &events));
        b.Write(0, TestBytes(kRegionBytes, 7));
        before = b.Read(0, kRegionBytes);
        psn = o.sqPsn; // what b's QP expects first
    }

    bool Reliable() const
    {
        return type == RdmaQpType::RC;
    }

    /// An RDMA WRITE packet from a's QP to b's as an attacker writes it: right LIDs, QPN,
    /// P_Key, PSN and CRCs. `first` and `only` carry a RETH.
    std::vector<uint8_t> WritePacket(char kind, uint64_t va, uint32_t rkey, uint32_t dmaLen,
                                     const std::vector<uint8_t>& payload)
    {
        const bool rc = Reliable();
        TestPacketSpec s;
        s.withDeth = false;
        s.dlid = b.lid;
        s.slid = a.lid;
        s.destQp = b.qp->GetQpNum();
        s.psn = psn++ & 0xFFFFFF;
        switch (kind)
        {
        case 'F':
            s.opCode = rc ? IbOpcode::kRcRdmaWriteFirst : IbOpcode::kUcRdmaWriteFirst;
            break;
        case 'M':
            s.opCode = rc ? IbOpcode::kRcRdmaWriteMiddle : IbOpcode::kUcRdmaWriteMiddle;
            break;
        case 'L':
            s.opCode = rc ? IbOpcode::kRcRdmaWriteLast : IbOpcode::kUcRdmaWriteLast;
            break;
        default:
            s.opCode = rc ? IbOpcode::kRcRdmaWriteOnly : IbOpcode::kUcRdmaWriteOnly;
            break;
        }
        if (kind == 'F' || kind == 'O')
        {
            IbRethHeader reth;
            reth.SetVirtualAddress(va);
            reth.SetRkey(rkey);
            reth.SetDmaLength(dmaLen);
            s.ext.resize(IbRethHeader::kSize);
            reth.WriteTo(s.ext.data());
        }
        s.payload = payload;
        return BuildPacket(s);
    }

    /// Hands the packets to b's port as if they had arrived on its cable, then runs.
    void Inject(const std::vector<std::vector<uint8_t>>& packets)
    {
        Ptr<IbNetDevice> port = fabric.HostPort(1);
        for (const auto& p : packets)
        {
            port->InjectReceivedBytes(p.data(), static_cast<uint32_t>(p.size()));
        }
        RunFor(MicroSeconds(200));
    }

    RdmaQpType type = RdmaQpType::RC;
    Ptr<RdmaMr> writable;
    EventLog events;
    std::vector<uint8_t> before;
    uint32_t psn = 0;
};

class RdmaEngineWire : public WireFixture, public ::testing::WithParamInterface<RdmaQpType>
{
  protected:
    void SetUp() override
    {
        type = GetParam();
    }
};

static std::string
QpTypeName(RdmaQpType t)
{
    return t == RdmaQpType::RC ? "RC" : "UC";
}

TEST_P(RdmaEngineWire, AWriteLongerThanItsRethStopsAtTheRethLength)
{
    // IBA vol. 1 §9.7.5.1.3: the packets of an RDMA WRITE carry exactly the DMA length
    // of its RETH. A FIRST announces 1040 bytes ending at the end of the only remotely writable
    // region and carries 1024 (one PMTU); the LAST then carries 1024 more instead of 16: had the
    // responder trusted the packets, 1008 bytes would land past the region, in memory no peer
    // may write.
    constexpr uint64_t kWritableOffset = 64 * 1024;
    constexpr uint32_t kWritable = 4096;
    SetUpWire(kWritableOffset, kWritable);
    constexpr uint32_t kDmaLen = 1040;
    const uint64_t va = kRegionBase + kWritableOffset + kWritable - kDmaLen;
    const auto first = TestBytes(1024, 11);
    Inject({WritePacket('F', va, writable->GetRkey(), kDmaLen, first),
            WritePacket('L', 0, 0, 0, TestBytes(1024, 12))});

    // No byte outside the writable region changed; inside it, only the FIRST's bytes landed,
    // where the RETH said.
    const auto after = b.Read(0, kRegionBytes);
    const auto outside = [&](const std::vector<uint8_t>& m) {
        std::vector<uint8_t> o(m.begin(), m.begin() + kWritableOffset);
        o.insert(o.end(), m.begin() + kWritableOffset + kWritable, m.end());
        return o;
    };
    EXPECT_TRUE(outside(after) == outside(before))
        << "memory outside the writable region changed (at "
        << FirstDifference(outside(after), outside(before)) << " of the rest)";
    std::vector<uint8_t> expected = before;
    std::memcpy(expected.data() + (va - kRegionBase), first.data(), first.size());
    EXPECT_TRUE(after == expected) << "memory outside the FIRST's bytes changed at "
                                   << FirstDifference(after, expected);
    if (Reliable())
    {
        // Invalid request NAK, the responder's QP in Error with a request error event.
        EXPECT_EQ(b.hca.engine->GetCounters().naksSent, 1u);
        EXPECT_EQ(b.qp->GetState(), RdmaQpState::ERR);
        EXPECT_TRUE(events.Has(RdmaEventType::QP_REQ_ERR, b.qp));
    }
    else
    {
        EXPECT_EQ(b.hca.engine->GetDropCount(RdmaDropReason::LengthError), 1u);
        EXPECT_EQ(b.qp->GetState(), RdmaQpState::RTS);
    }
}

TEST_P(RdmaEngineWire, TheSameWriteWithTheRethsLengthLands)
{
    // The control: the same FIRST with a LAST of the 16 bytes its RETH left is accepted, so
    // the refusal above is the length's doing, and injected packets do reach memory.
    constexpr uint64_t kWritableOffset = 64 * 1024;
    constexpr uint32_t kWritable = 4096;
    SetUpWire(kWritableOffset, kWritable);
    constexpr uint32_t kDmaLen = 1040;
    const uint64_t va = kRegionBase + kWritableOffset + kWritable - kDmaLen;
    const auto first = TestBytes(1024, 11);
    const auto last = TestBytes(16, 12);
    Inject({WritePacket('F', va, writable->GetRkey(), kDmaLen, first),
            WritePacket('L', 0, 0, 0, last)});
    std::vector<uint8_t> expected = before;
    std::memcpy(expected.data() + (va - kRegionBase), first.data(), first.size());
    std::memcpy(expected.data() + (va - kRegionBase) + first.size(), last.data(), last.size());
    const auto after = b.Read(0, kRegionBytes);
    EXPECT_TRUE(after == expected) << FirstDifference(after, expected);
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::RTS);
    EXPECT_EQ(b.hca.engine->GetCounters().naksSent, 0u);
    EXPECT_EQ(b.hca.engine->GetDropCount(RdmaDropReason::LengthError), 0u);
}

namespace
{
/// A forged R_Key, made from the region's real keys.
struct Forgery
{
    const char* name;
    uint32_t (*make)(Ptr<RdmaMr> mr);
};

const Forgery kForgeries[] = {
    {"OneBitFlipped", [](Ptr<RdmaMr> mr) { return mr->GetRkey() ^ 0x1u; }},
    {"TopBitFlipped", [](Ptr<RdmaMr> mr) { return mr->GetRkey() ^ 0x80000000u; }},
    {"TheLkey", [](Ptr<RdmaMr> mr) { return mr->GetLkey(); }}, // local key used remotely
    {"Zero", [](Ptr<RdmaMr>) { return 0u; }},
};

void
PrintTo(const Forgery& f, std::ostream* os)
{
    *os << f.name;
}
} // namespace

class RdmaEngineForgedRkey
    : public WireFixture,
      public ::testing::WithParamInterface<std::tuple<RdmaQpType, Forgery>>
{
  protected:
    void SetUp() override
    {
        type = std::get<0>(GetParam());
    }
};

/// Three packets of one 3 KiB RDMA WRITE to b's writable region at offset 4096.
static std::vector<std::vector<uint8_t>>
ThreePacketWrite(WireFixture& f, uint32_t rkey, const std::vector<uint8_t>& data)
{
    const uint64_t va = kRegionBase + 4096;
    const auto part = [&](int i) {
        return std::vector<uint8_t>(data.begin() + 1024 * i, data.begin() + 1024 * (i + 1));
    };
    // The calls in order: each takes the next PSN.
    std::vector<std::vector<uint8_t>> p;
    p.push_back(f.WritePacket('F', va, rkey, 3072, part(0)));
    p.push_back(f.WritePacket('M', 0, 0, 0, part(1)));
    p.push_back(f.WritePacket('L', 0, 0, 0, part(2)));
    return p;
}

TEST_P(RdmaEngineForgedRkey, InjectedPacketsChangeNoByte)
{
    // Raw packets, right in every field but the R_Key (the attacker knows the QPN, the PSN and
    // the address), go through the port's parser to the responder: a FIRST with the forged key,
    // then a MIDDLE and a LAST without one, hoping the responder keeps writing. Nothing lands.
    SetUpWire(0, 64 * 1024);
    const Forgery& f = std::get<1>(GetParam());
    const uint32_t rkey = f.make(writable);
    ASSERT_NE(rkey, writable->GetRkey());
    Inject(ThreePacketWrite(*this, rkey, TestBytes(3072, 21)));
    const auto after = b.Read(0, kRegionBytes);
    EXPECT_TRUE(after == before) << "memory changed at " << FirstDifference(after, before);
    if (Reliable())
    {
        // A remote access error NAK; the responder's QP in Error with an access error event.
        EXPECT_EQ(b.hca.engine->GetCounters().naksSent, 1u);
        EXPECT_EQ(b.qp->GetState(), RdmaQpState::ERR);
        EXPECT_TRUE(events.Has(RdmaEventType::QP_ACCESS_ERR, b.qp));
    }
    else
    {
        EXPECT_EQ(b.hca.engine->GetDropCount(RdmaDropReason::AccessError), 1u);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases,
    RdmaEngineForgedRkey,
    ::testing::Combine(::testing::Values(RdmaQpType::RC, RdmaQpType::UC),
                       ::testing::ValuesIn(kForgeries)),
    [](const ::testing::TestParamInfo<std::tuple<RdmaQpType, Forgery>>& p) {
        return QpTypeName(std::get<0>(p.param)) + std::get<1>(p.param).name;
    });

TEST_P(RdmaEngineWire, InjectedPacketsWithTheRealRkeyLand)
{
    // The control for RdmaEngineForgedRkey: the same three packets with the region's real key
    // write the 3 KiB, so the refusals there are the key's doing.
    SetUpWire(0, 64 * 1024);
    const auto data = TestBytes(3072, 21);
    Inject(ThreePacketWrite(*this, writable->GetRkey(), data));
    std::vector<uint8_t> expected = before;
    std::memcpy(expected.data() + 4096, data.data(), data.size());
    const auto after = b.Read(0, kRegionBytes);
    EXPECT_TRUE(after == expected) << FirstDifference(after, expected);
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::RTS);
    EXPECT_EQ(b.hca.engine->GetCounters().naksSent, 0u);
}

INSTANTIATE_TEST_SUITE_P(Types,
                         RdmaEngineWire,
                         ::testing::Values(RdmaQpType::RC, RdmaQpType::UC),
                         [](const ::testing::TestParamInfo<RdmaQpType>& p) {
                             return QpTypeName(p.param);
                         });

namespace
{
struct PdCase
{
    const char* name;
    RdmaWrOpcode op;
};

void
PrintTo(const PdCase& c, std::ostream* os)
{
    *os << c.name;
}

const PdCase kPdCases[] = {
    {"Write", RdmaWrOpcode::RDMA_WRITE},
    {"Read", RdmaWrOpcode::RDMA_READ},
    {"FetchAndAdd", RdmaWrOpcode::ATOMIC_FETCH_AND_ADD},
};
} // namespace

class RdmaEnginePd : public RdmaPairTest, public ::testing::WithParamInterface<PdCase>
{
};

TEST_P(RdmaEnginePd, AnRkeyOfAnotherPdIsRefusedOverTheWire)
{
    // IBA vol. 1 §10.6.3.3: an R_Key names a region of the responder QP's
    // own protection domain. b holds two PDs on one HCA: its QP's, whose region allows no remote
    // access, and a second one whose region allows everything (another application's). a uses
    // the second region's real key, address and length: refused with a remote access error;
    // neither b's memory nor a's local buffer (a READ's or an atomic's destination) changes.
    QpOptions o;
    BuildFabric();
    MakeSide(a, 0, o);
    QpOptions ob = o;
    ob.mrAccess = kLocalOnly;
    MakeSide(b, 1, ob);
    Connect(a.qp, b.lid, b.qp->GetQpNum(), o.sqPsn, o);
    Connect(b.qp, a.lid, a.qp->GetQpNum(), o.sqPsn, ob);
    Ptr<RdmaPd> otherPd = b.hca.device->AllocPd(b.hca.memory);
    ASSERT_TRUE(otherPd);
    constexpr uint64_t kOtherOffset = 1 << 20;
    Ptr<RdmaMr> other =
        b.hca.device->RegMr(otherPd, kRegionBase + kOtherOffset, 64 * 1024, kAllMr);
    ASSERT_TRUE(other) << b.hca.device->GetLastError();
    EventLog events;
    b.hca.device->TraceConnectWithoutContext("AsyncEvent", MakeCallback(&EventLog::On, &events));

    const PdCase& k = GetParam();
    a.Write(0, TestBytes(8192, 1));
    b.Write(0, TestBytes(kRegionBytes, 2));
    const auto targetBefore = b.Read(0, kRegionBytes);
    const auto localBefore = a.Read(0, 8192);
    const uint32_t len = k.op == RdmaWrOpcode::RDMA_WRITE || k.op == RdmaWrOpcode::RDMA_READ
                             ? 2048
                             : 8;
    RdmaSendWr w = Wr(1, k.op, {a.Sge(k.op == RdmaWrOpcode::RDMA_WRITE ? 0 : 4096, len)});
    w.rdma.remote_addr = kRegionBase + kOtherOffset;
    w.rdma.rkey = other->GetRkey();
    w.atomic.remote_addr = w.rdma.remote_addr;
    w.atomic.rkey = w.rdma.rkey;
    w.atomic.compare_add = 0x0101010101010101ULL;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(2));

    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::REM_ACCESS_ERR) << RdmaWcStatusStr(sc[0].status);
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::ERR);
    EXPECT_TRUE(events.Has(RdmaEventType::QP_ACCESS_ERR, b.qp));
    const auto targetAfter = b.Read(0, kRegionBytes);
    EXPECT_TRUE(targetAfter == targetBefore)
        << "responder memory changed at " << FirstDifference(targetAfter, targetBefore);
    const auto localAfter = a.Read(0, 8192);
    EXPECT_TRUE(localAfter == localBefore)
        << "requester memory changed at " << FirstDifference(localAfter, localBefore);
}

TEST_P(RdmaEnginePd, TheSameRequestToARegionOfTheQpsPdSucceeds)
{
    // The control: the same region registered a second time in the QP's own PD, same rights:
    // the same request goes through, so the refusal above is the PD's doing.
    QpOptions o;
    BuildFabric();
    MakeSide(a, 0, o);
    QpOptions ob = o;
    ob.mrAccess = kLocalOnly;
    MakeSide(b, 1, ob);
    Connect(a.qp, b.lid, b.qp->GetQpNum(), o.sqPsn, o);
    Connect(b.qp, a.lid, a.qp->GetQpNum(), o.sqPsn, ob);
    constexpr uint64_t kOtherOffset = 1 << 20;
    Ptr<RdmaMr> same = b.hca.device->RegMr(b.pd, kRegionBase + kOtherOffset, 64 * 1024, kAllMr);
    ASSERT_TRUE(same) << b.hca.device->GetLastError();
    const PdCase& k = GetParam();
    a.Write(0, TestBytes(8192, 1));
    b.Write(0, TestBytes(kRegionBytes, 2));
    const auto targetBefore = b.Read(0, kRegionBytes);
    const uint32_t len = k.op == RdmaWrOpcode::RDMA_WRITE || k.op == RdmaWrOpcode::RDMA_READ
                             ? 2048
                             : 8;
    RdmaSendWr w = Wr(1, k.op, {a.Sge(k.op == RdmaWrOpcode::RDMA_WRITE ? 0 : 4096, len)});
    w.rdma.remote_addr = kRegionBase + kOtherOffset;
    w.rdma.rkey = same->GetRkey();
    w.atomic.remote_addr = w.rdma.remote_addr;
    w.atomic.rkey = w.rdma.rkey;
    w.atomic.compare_add = 0x0101010101010101ULL;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(2));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS) << RdmaWcStatusStr(sc[0].status);
    if (k.op == RdmaWrOpcode::RDMA_READ)
    {
        EXPECT_TRUE(a.Read(4096, len) == b.Read(kOtherOffset, len));
    }
    else
    {
        EXPECT_FALSE(b.Read(0, kRegionBytes) == targetBefore);
    }
}

INSTANTIATE_TEST_SUITE_P(Ops,
                         RdmaEnginePd,
                         ::testing::ValuesIn(kPdCases),
                         [](const ::testing::TestParamInfo<PdCase>& p) {
                             return std::string(p.param.name);
                         });
