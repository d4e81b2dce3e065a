// SEND with invalidate and local invalidate (IBA vol. 1 §9.4.1.1, §10.6.7; libibverbs
// IBV_WR_SEND_WITH_INV / IBV_WR_LOCAL_INV, IBV_WC_WITH_INV and invalidated_rkey, which shares
// imm_data's union in both ibv_send_wr and ibv_wc).
#include "rdma-engine-fixture.h"

#include "models/rdma/ib-opcode.h"

#include "ns3/callback.h"

namespace cnuas_test
{
namespace
{

constexpr uint64_t kTargetOffset = 1u << 20; ///< the second, invalidatable region on b
constexpr uint32_t kTargetBytes = 65536;

struct OpcodeLog
{
    std::vector<uint8_t> opcodes;
    void Sent(uint32_t, uint8_t opcode, uint32_t, uint32_t, bool)
    {
        opcodes.push_back(opcode);
    }
};

class RdmaEngineInvalidate : public RdmaPairTest
{
  protected:
    /// Setup plus a second region on b over [kTargetOffset, +kTargetBytes) with remote write.
    void Build(bool invalidatable)
    {
        Setup();
        target = b.hca.device->RegMr(b.pd, kRegionBase + kTargetOffset, kTargetBytes,
                                     RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE);
        ASSERT_TRUE(target) << b.hca.device->GetLastError();
        ASSERT_NE(target->GetRkey(), b.mr->GetRkey());
        target->SetInvalidatable(invalidatable);
        a.hca.engine->TraceConnectWithoutContext("PacketSent",
                                                 MakeCallback(&OpcodeLog::Sent, &sent));
    }

    RdmaSendWr WriteToTarget(uint64_t id, uint32_t len) const
    {
        RdmaSendWr w = Wr(id, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, len)});
        w.rdma.remote_addr = kRegionBase + kTargetOffset;
        w.rdma.rkey = target->GetRkey();
        return w;
    }

    RdmaSendWr SendInv(uint64_t id, uint32_t len, uint32_t rkey) const
    {
        RdmaSendWr w = Wr(id, RdmaWrOpcode::SEND_WITH_INV, {a.Sge(8192, len)});
        w.imm_data = rkey; // invalidate_rkey
        return w;
    }

    Ptr<RdmaMr> target;
    OpcodeLog sent;
};

TEST_F(RdmaEngineInvalidate, SendWithInvalidateInvalidatesTheKeyAndLaterAccessesFail)
{
    Build(true);
    a.Write(0, TestBytes(512, 1));
    a.Write(8192, TestBytes(3000, 2));
    ASSERT_EQ(b.PostRecv(7, 200000, 4096), 0);
    ASSERT_EQ(a.qp->PostSend(WriteToTarget(1, 512)), 0); // allowed before the invalidation
    ASSERT_EQ(a.qp->PostSend(SendInv(2, 3000, target->GetRkey())), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(sc[1].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(sc[1].opcode, RdmaWcOpcode::SEND);
    EXPECT_EQ(b.Read(kTargetOffset, 512), TestBytes(512, 1));
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(rc[0].opcode, RdmaWcOpcode::RECV);
    EXPECT_EQ(rc[0].byte_len, 3000u);
    EXPECT_EQ(rc[0].wc_flags & (RDMA_WC_WITH_INV | RDMA_WC_WITH_IMM), RDMA_WC_WITH_INV);
    EXPECT_EQ(rc[0].imm_data, target->GetRkey()); // invalidated_rkey
    EXPECT_EQ(b.Read(200000, 3000), TestBytes(3000, 2));
    EXPECT_TRUE(target->IsInvalidated());
    EXPECT_FALSE(b.mr->IsInvalidated());
    // Three packets at MTU 1024: First, Middle, Last with Invalidate (IBA vol. 1 §9.2).
    const std::vector<uint8_t> sendOps(sent.opcodes.end() - 3, sent.opcodes.end());
    EXPECT_EQ(sendOps, (std::vector<uint8_t>{IbOpcode::kRcSendFirst, IbOpcode::kRcSendMiddle,
                                             IbOpcode::kRcSendLastWithInvalidate}));

    // The key is gone: the same WRITE now fails its R_Key check and changes nothing.
    a.Write(0, TestBytes(512, 3));
    ASSERT_EQ(a.qp->PostSend(WriteToTarget(3, 512)), 0);
    RunFor(MilliSeconds(1));
    sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::REM_ACCESS_ERR);
    EXPECT_EQ(b.Read(kTargetOffset, 512), TestBytes(512, 1));
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::ERR);
}

TEST_F(RdmaEngineInvalidate, OneShortPacketIsSendOnlyWithInvalidate)
{
    Build(true);
    ASSERT_EQ(b.PostRecv(7, 200000, 4096), 0);
    a.Write(8192, TestBytes(100, 4));
    ASSERT_EQ(a.qp->PostSend(SendInv(1, 100, target->GetRkey())), 0);
    RunFor(MilliSeconds(1));
    ASSERT_FALSE(sent.opcodes.empty());
    EXPECT_EQ(sent.opcodes.front(), IbOpcode::kRcSendOnlyWithInvalidate);
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_TRUE(rc[0].wc_flags & RDMA_WC_WITH_INV);
    EXPECT_TRUE(target->IsInvalidated());
}

TEST_F(RdmaEngineInvalidate, ARegionNotMadeForInvalidationIsRefused)
{
    Build(false); // a plain ibv_reg_mr region
    ASSERT_EQ(b.PostRecv(7, 200000, 4096), 0);
    a.Write(8192, TestBytes(100, 4));
    ASSERT_EQ(a.qp->PostSend(SendInv(1, 100, target->GetRkey())), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::REM_ACCESS_ERR);
    auto rc = b.PollRecv();
    ASSERT_GE(rc.size(), 1u);
    EXPECT_NE(rc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_FALSE(rc[0].wc_flags & RDMA_WC_WITH_INV);
    EXPECT_FALSE(target->IsInvalidated());
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::ERR);
}

TEST_F(RdmaEngineInvalidate, AnUnknownKeyIsRefused)
{
    Build(true);
    ASSERT_EQ(b.PostRecv(7, 200000, 4096), 0);
    ASSERT_EQ(a.qp->PostSend(SendInv(1, 100, target->GetRkey() ^ 0x5A5A00)), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::REM_ACCESS_ERR);
    EXPECT_FALSE(target->IsInvalidated());
}

TEST_F(RdmaEngineInvalidate, LocalInvalidateEndsLocalUseOfTheKey)
{
    Build(true);
    Ptr<RdmaMr> local = a.hca.device->RegMr(a.pd, kRegionBase + kTargetOffset, kTargetBytes,
                                            RDMA_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(local);
    local->SetInvalidatable(true);
    a.Write(kTargetOffset, TestBytes(256, 9));
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE,
                      {RdmaSge{kRegionBase + kTargetOffset, 256, local->GetLkey()}});
    w.rdma.remote_addr = kRegionBase + 300000;
    w.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RdmaSendWr inv = Wr(2, RdmaWrOpcode::LOCAL_INV, {});
    inv.imm_data = local->GetRkey(); // invalidate_rkey
    ASSERT_EQ(a.qp->PostSend(inv), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(sc[1].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(sc[1].opcode, RdmaWcOpcode::LOCAL_INV);
    EXPECT_EQ(b.Read(300000, 256), TestBytes(256, 9)); // the WRITE before it went through
    EXPECT_TRUE(local->IsInvalidated());
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::RTS);
    // A WR using the invalidated L_Key fails locally.
    w.wr_id = 3;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(1));
    sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::LOC_PROT_ERR);
}

TEST_F(RdmaEngineInvalidate, LocalInvalidateOfAPlainRegionFails)
{
    Build(false);
    RdmaSendWr inv = Wr(1, RdmaWrOpcode::LOCAL_INV, {});
    inv.imm_data = a.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(inv), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::LOC_PROT_ERR);
    EXPECT_FALSE(a.mr->IsInvalidated());
    EXPECT_TRUE(sent.opcodes.empty()); // nothing went on the wire
}

} // namespace
} // namespace cnuas_test
