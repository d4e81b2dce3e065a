// End-to-end credits (IBA vol. 1 §9.7.7.2): the RC requester starts a SEND only while the
// responder's last AETH credit report leaves a receive WQE for it, or as the one probe it may
// send when out of credits; an SRQ responder advertises "invalid" (no limit).
#include "rdma-engine-fixture.h"

#include "models/rdma/ib-aeth-header.h"
#include "models/rdma/ib-opcode.h"

#include "ns3/boolean.h"
#include "ns3/callback.h"
#include "ns3/nstime.h"

namespace cnuas_test
{
namespace
{

constexpr uint32_t kMsgBytes = 3000; // three packets at MTU 1024
constexpr uint32_t kMessages = 6;

struct CreditLog
{
    std::vector<std::pair<uint32_t, uint32_t>> reports; ///< (MSN, credits)
    void Credit(uint32_t, uint32_t msn, uint32_t credits)
    {
        reports.emplace_back(msn, credits);
    }

    /// Request packets that start a SEND, with the time they left.
    std::vector<Time> sendStarts;
    void Sent(uint32_t, uint8_t opcode, uint32_t, uint32_t, bool retrans)
    {
        if (!retrans && (opcode == IbOpcode::kRcSendFirst || opcode == IbOpcode::kRcSendOnly))
        {
            sendStarts.push_back(Simulator::Now());
        }
    }
};

class RdmaEngineCredits : public RdmaPairTest
{
  protected:
    /// a sends kMessages SENDs to b, which has `early` receives posted at the start and the
    /// rest posted at `lateAt`.
    void Run(bool credits, uint32_t early, Time lateAt)
    {
        RdmaHelper helper;
        helper.SetEngineAttribute("EndToEndCredits", BooleanValue(credits));
        helper.SetEngineAttribute("CreditProbeDelay", TimeValue(MicroSeconds(20)));
        QpOptions o;
        o.minRnrTimer = 1; // 10 us
        Setup(o, helper);
        a.hca.engine->TraceConnectWithoutContext("CreditUpdate",
                                                 MakeCallback(&CreditLog::Credit, &log));
        a.hca.engine->TraceConnectWithoutContext("PacketSent",
                                                 MakeCallback(&CreditLog::Sent, &log));
        for (uint32_t i = 0; i < early; ++i)
        {
            ASSERT_EQ(b.PostRecv(100 + i, 100000 + i * 4096, 4096), 0);
        }
        Simulator::Schedule(lateAt, [this, early]() {
            for (uint32_t i = early; i < kMessages; ++i)
            {
                b.PostRecv(100 + i, 100000 + i * 4096, 4096);
            }
        });
        for (uint32_t i = 0; i < kMessages; ++i)
        {
            a.Write(i * 4096, TestBytes(kMsgBytes, 40 + i));
            ASSERT_EQ(a.qp->PostSend(Wr(i, RdmaWrOpcode::SEND, {a.Sge(i * 4096, kMsgBytes)})),
                      0);
        }
        RunFor(MilliSeconds(3));
    }

    /// Every SEND completed at both ends, in order, with the bytes that were posted.
    void ExpectAllDelivered()
    {
        auto sc = a.PollSend();
        ASSERT_EQ(sc.size(), kMessages);
        auto rc = b.PollRecv();
        ASSERT_EQ(rc.size(), kMessages);
        for (uint32_t i = 0; i < kMessages; ++i)
        {
            EXPECT_EQ(sc[i].status, RdmaWcStatus::SUCCESS);
            EXPECT_EQ(rc[i].status, RdmaWcStatus::SUCCESS);
            EXPECT_EQ(rc[i].wr_id, 100u + i);
            EXPECT_EQ(rc[i].byte_len, kMsgBytes);
            EXPECT_EQ(b.Read(100000 + i * 4096, kMsgBytes), TestBytes(kMsgBytes, 40 + i));
        }
    }

    CreditLog log;
};

TEST_F(RdmaEngineCredits, SenderWaitsForCreditsInsteadOfCollectingRnrNaks)
{
    // Two receives at the start, four more 5 us later (before the 20 us probe delay ends).
    Run(true, 2, MicroSeconds(5));
    ExpectAllDelivered();
    EXPECT_EQ(b.hca.engine->GetCounters().rnrNaksSent, 0u);
    EXPECT_EQ(a.hca.engine->GetCounters().rnrNaksReceived, 0u);
    EXPECT_GT(a.hca.engine->GetCounters().creditStalls, 0u);
    // The first SEND goes out as a probe (no report yet); its ACK (MSN 1) reports the one
    // receive left; the second's ACK (MSN 2) reports none; the probe after the delay finds
    // the four new receives: one used, three left.
    ASSERT_GE(log.reports.size(), 3u);
    EXPECT_EQ(log.reports[0], std::make_pair(1u, 1u));
    EXPECT_EQ(log.reports[1], std::make_pair(2u, 0u));
    EXPECT_EQ(log.reports[2], std::make_pair(3u, 3u));
    EXPECT_EQ(a.hca.engine->GetCounters().creditProbes, 2u);
    // The third SEND waited for the probe delay after the report of no credits.
    ASSERT_EQ(log.sendStarts.size(), kMessages);
    EXPECT_GE(log.sendStarts[2] - log.sendStarts[1], MicroSeconds(20));
}

TEST_F(RdmaEngineCredits, WithoutCreditsTheSameTrafficCollectsRnrNaks)
{
    // The control: the attribute off, the sender runs into the empty receive queue.
    Run(false, 2, MicroSeconds(5));
    ExpectAllDelivered();
    EXPECT_GT(b.hca.engine->GetCounters().rnrNaksSent, 0u);
    EXPECT_EQ(a.hca.engine->GetCounters().creditStalls, 0u);
    EXPECT_EQ(a.hca.engine->GetCounters().creditProbes, 0u);
    EXPECT_TRUE(log.reports.empty());
}

TEST_F(RdmaEngineCredits, AProbeThatFindsNoReceiveIsRnrNakedAndTheRestWaits)
{
    // No receives for 500 us: the probe (third SEND) collects RNR NAKs and retries; no other
    // SEND starts until its answer brings credits.
    Run(true, 2, MicroSeconds(500));
    ExpectAllDelivered();
    EXPECT_GT(a.hca.engine->GetCounters().rnrNaksReceived, 0u);
    ASSERT_EQ(log.sendStarts.size(), kMessages);
    for (uint32_t i = 3; i < kMessages; ++i)
    {
        EXPECT_GT(log.sendStarts[i], MicroSeconds(500)) << "SEND " << i;
    }
}

TEST_F(RdmaEngineCredits, SrqResponderAdvertisesNoLimitAndTheSenderNeverWaits)
{
    QpOptions o;
    BuildFabric();
    MakeSide(a, 0, o);
    MakeSide(b, 1, o);
    RdmaSrqAttr sa;
    sa.max_wr = 64;
    sa.max_sge = 1;
    Ptr<RdmaSrq> srq = b.hca.device->CreateSrq(b.pd, sa);
    ASSERT_TRUE(srq);
    RdmaQpInitAttr init;
    init.send_cq = b.sendCq;
    init.recv_cq = b.recvCq;
    init.srq = srq;
    init.qp_type = RdmaQpType::RC;
    init.cap.max_send_wr = 16;
    init.cap.max_send_sge = 1;
    b.qp = b.hca.device->CreateQp(b.pd, init);
    ASSERT_TRUE(b.qp) << b.hca.device->GetLastError();
    Connect(a.qp, b.lid, b.qp->GetQpNum(), o.sqPsn, o);
    Connect(b.qp, a.lid, a.qp->GetQpNum(), o.sqPsn, o);
    a.hca.engine->TraceConnectWithoutContext("CreditUpdate",
                                             MakeCallback(&CreditLog::Credit, &log));
    for (uint32_t i = 0; i < kMessages; ++i)
    {
        RdmaRecvWr wr;
        wr.wr_id = 100 + i;
        wr.sg_list = {b.Sge(100000 + i * 4096, 4096)};
        ASSERT_EQ(srq->PostRecv(wr), 0);
    }
    for (uint32_t i = 0; i < kMessages; ++i)
    {
        a.Write(i * 4096, TestBytes(kMsgBytes, 40 + i));
        ASSERT_EQ(a.qp->PostSend(Wr(i, RdmaWrOpcode::SEND, {a.Sge(i * 4096, kMsgBytes)})), 0);
    }
    RunFor(MilliSeconds(1));
    ExpectAllDelivered();
    ASSERT_FALSE(log.reports.empty());
    for (const auto& r : log.reports)
    {
        EXPECT_EQ(r.second, IbAethHeader::kUnlimitedCredits);
    }
    // Only the very first SEND went without a report; none waited after it.
    EXPECT_EQ(a.hca.engine->GetCounters().creditProbes, 1u);
    EXPECT_LE(a.hca.engine->GetCounters().creditStalls, 1u);
}

} // namespace
} // namespace cnuas_test
