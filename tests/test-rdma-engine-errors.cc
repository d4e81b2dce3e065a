// Error paths of the RDMA engine: a SEND longer than the receive buffer (invalid request NAK,
// LOC_LEN_ERR at the receiver), a memory fault at the responder (remote operational error),
// and malformed or misdirected packets (counted drops, no state change, no crash).
#include "rdma-engine-fixture.h"

using namespace ns3;
using namespace cnuas_test;

class RdmaEngineErrors : public RdmaPairTest
{
};

TEST_F(RdmaEngineErrors, ASendLongerThanTheReceiveBufferIsAnInvalidRequest)
{
    Setup();
    a.Write(0, TestBytes(3000, 1));
    b.Write(0, std::vector<uint8_t>(8192, 0x5A));
    ASSERT_EQ(b.PostRecv(1, 0, 2048), 0);
    ASSERT_EQ(b.PostRecv(2, 4096, 2048), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 3000)})), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::REM_INV_REQ_ERR);
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 2u);
    EXPECT_EQ(rc[0].wr_id, 1u);
    EXPECT_EQ(rc[0].status, RdmaWcStatus::LOC_LEN_ERR);
    EXPECT_EQ(rc[1].status, RdmaWcStatus::WR_FLUSH_ERR); // the responder QP went to ERR
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::ERR);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::ERR);
}

TEST_F(RdmaEngineErrors, AMemoryFaultAtTheResponderIsARemoteOperationalError)
{
    Setup();
    // The target pages disappear under a registered MR (a real process could munmap them):
    // the R_Key check passes, the write faults.
    ASSERT_TRUE(b.hca.memory->Unmap(kRegionBase + 65536, 4096));
    a.Write(0, TestBytes(100, 2));
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 100)});
    w.rdma.remote_addr = kRegionBase + 65536;
    w.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::REM_OP_ERR);
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::ERR);
}

TEST_F(RdmaEngineErrors, MalformedAndMisdirectedPacketsAreCountedDropsThatChangeNothing)
{
    Setup();
    RdmaAhAttr av;
    av.dlid = b.lid;
    av.port_num = 1;
    const uint32_t qpn = b.qp->GetQpNum();
    auto bth = [&](uint8_t opcode, uint32_t destQp, uint8_t pad, size_t total) {
        std::vector<uint8_t> p(total, 0);
        p[0] = opcode;
        p[1] = static_cast<uint8_t>(pad << 4);
        p[2] = 0xFF;
        p[3] = 0xFF;
        p[5] = static_cast<uint8_t>(destQp >> 16);
        p[6] = static_cast<uint8_t>(destQp >> 8);
        p[7] = static_cast<uint8_t>(destQp);
        p[9] = static_cast<uint8_t>(opts.sqPsn >> 16);
        p[10] = static_cast<uint8_t>(opts.sqPsn >> 8);
        p[11] = static_cast<uint8_t>(opts.sqPsn);
        return p;
    };
    // Unknown opcode; a WRITE First cut short of its RETH; a pad count larger than the
    // payload; a UD opcode to an RC QP; an RC request to a QP that does not exist.
    const std::vector<std::vector<uint8_t>> bad = {
        bth(0x1F, qpn, 0, 16),
        bth(IbOpcode::kRcRdmaWriteFirst, qpn, 0, 20),
        bth(IbOpcode::kRcSendOnly, qpn, 3, 12),
        bth(IbOpcode::kUdSendOnly, qpn, 0, 32),
        bth(IbOpcode::kRcSendOnly, 0xABCDE, 0, 16),
    };
    for (const auto& p : bad)
    {
        ASSERT_TRUE(a.hca.port->Send(p, av));
    }
    RunFor(MicroSeconds(200));
    auto& e = *b.hca.engine;
    EXPECT_EQ(e.GetDropCount(RdmaDropReason::Malformed), 3u);
    EXPECT_EQ(e.GetDropCount(RdmaDropReason::BadOpcode), 1u);
    EXPECT_EQ(e.GetDropCount(RdmaDropReason::UnknownQp), 1u);
    EXPECT_EQ(e.GetCounters().packetsSent, 0u); // nothing answered
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::RTS);
    // And the QP still works.
    a.Write(0, TestBytes(64, 3));
    ASSERT_EQ(b.PostRecv(1, 0, 64), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 64)})), 0);
    RunFor(MilliSeconds(1));
    ASSERT_EQ(b.PollRecv().size(), 1u);
    EXPECT_EQ(b.Read(0, 64), TestBytes(64, 3));
}

TEST_F(RdmaEngineErrors, SqdLetsStartedWrsFinishHoldsTheRestAndResumesInRts)
{
    Setup();
    std::vector<RdmaAsyncEvent> events;
    struct Ev
    {
        std::vector<RdmaAsyncEvent>* v;

        void On(const RdmaAsyncEvent& e)
        {
            v->push_back(e);
        }
    } ev{&events};
    a.hca.device->TraceConnectWithoutContext("AsyncEvent", MakeCallback(&Ev::On, &ev));
    a.Write(0, TestBytes(200000, 4));
    auto write = [&](uint64_t id, uint32_t len) {
        RdmaSendWr w = Wr(id, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, len)});
        w.rdma.remote_addr = kRegionBase;
        w.rdma.rkey = b.mr->GetRkey();
        return a.qp->PostSend(w);
    };
    ASSERT_EQ(write(1, 200000), 0);
    RunFor(MicroSeconds(1)); // the first WRITE is under way
    ASSERT_EQ(write(2, 100), 0);
    ASSERT_EQ(write(3, 100), 0);
    RdmaQpAttr attr;
    attr.qp_state = RdmaQpState::SQD;
    attr.en_sqd_async_notify = 1;
    ASSERT_EQ(a.qp->Modify(attr, RDMA_QP_STATE | RDMA_QP_EN_SQD_ASYNC_NOTIFY), 0)
        << a.hca.device->GetLastError();
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u); // only the WR in progress finished
    EXPECT_EQ(sc[0].wr_id, 1u);
    EXPECT_FALSE(a.qp->IsSqDraining());
    bool drained = false;
    for (auto& e : events)
    {
        drained |= e.event_type == RdmaEventType::SQ_DRAINED;
    }
    EXPECT_TRUE(drained);
    attr.qp_state = RdmaQpState::RTS;
    ASSERT_EQ(a.qp->Modify(attr, RDMA_QP_STATE), 0) << a.hca.device->GetLastError();
    RunFor(MilliSeconds(1));
    sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].wr_id, 2u);
    EXPECT_EQ(sc[1].wr_id, 3u);
    EXPECT_EQ(b.Read(0, 200000), TestBytes(200000, 4));
}
