// Security of the RDMA engine: a request with a forged R_Key, outside the registered range,
// or without the access right (in the MR or in the QP's access flags) is refused with a
// remote access error and leaves the target memory unchanged byte for byte; a P_Key mismatch
// is dropped and counted; management QPs (0, 1) never reach the engine.
#include "rdma-engine-fixture.h"

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
