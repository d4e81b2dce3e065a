// Reliability of the RDMA engine: RC delivers every message intact and in order through 1%
// and 5% loss; PSN sequence error NAKs, duplicates (re-acknowledged, READs re-executed,
// atomics answered from the saved result), RNR NAKs with min_rnr_timer and rnr_retry, and
// retry_cnt exhaustion (RETRY_EXC_ERR, QP in ERR, later WRs flushed). UC drops a message that
// lost a packet. Losses come from PacketLossModel on the hosts' ports.
#include "rdma-engine-fixture.h"

#include "models/common/packet-loss-model.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <cstring>
#include <random>

using namespace ns3;
using namespace cnuas_test;

namespace
{
Ptr<PacketLossModel>
Loss(PacketLossModel::Mode mode, PacketLossModel::Action action, double rate,
     const std::string& indices = "", int64_t stream = 1)
{
    Ptr<PacketLossModel> m = CreateObject<PacketLossModel>();
    m->SetAttribute("Mode", EnumValue(mode));
    m->SetAttribute("Action", EnumValue(action));
    m->SetAttribute("Rate", DoubleValue(rate));
    m->SetAttribute("Indices", StringValue(indices));
    m->AssignStreams(stream);
    return m;
}

/// Collects (syndrome, PSN) of the NAKs an engine sends.
struct NakLog
{
    std::vector<std::pair<uint8_t, uint32_t>> naks;
    uint32_t timeouts = 0;

    void Nak(uint32_t, uint8_t syndrome, uint32_t psn)
    {
        naks.emplace_back(syndrome, psn);
    }

    void Timeout(uint32_t, uint32_t)
    {
        ++timeouts;
    }
};
} // namespace

/// (loss rate, action, mode)
using LossParam = std::tuple<double, PacketLossModel::Action, PacketLossModel::Mode>;

class RdmaEngineLoss : public RdmaPairTest, public ::testing::WithParamInterface<LossParam>
{
};

TEST_P(RdmaEngineLoss, RcDeliversEveryMessageIntactAndInOrder)
{
    const double rate = std::get<0>(GetParam());
    const auto action = std::get<1>(GetParam());
    const auto mode = std::get<2>(GetParam());
    QpOptions o;
    o.timeout = 4; // 65.5 us
    o.retryCnt = 7;
    o.mtu = RdmaMtu::MTU_1024;
    Setup(o);
    auto toB = Loss(mode, action, rate, "", 11);
    auto toA = Loss(mode, action, rate, "", 12);
    SetLoss(toB, toA);

    // A mix of SENDs (checked through the receive side), WRITEs, READs and FETCH_ADDs (each
    // on its own 8-byte target holding a known value).
    std::mt19937 rng(7);
    const uint32_t n = 150;
    std::vector<uint32_t> len(n);
    std::vector<RdmaWrOpcode> op(n);
    std::vector<uint64_t> srcOff(n);
    std::vector<uint64_t> dstOff(n);
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; ++i)
    {
        len[i] = 1 + rng() % 12000;
        const uint32_t k = rng() % 5;
        op[i] = k < 2    ? RdmaWrOpcode::SEND
                : k == 2 ? RdmaWrOpcode::RDMA_WRITE
                : k == 3 ? RdmaWrOpcode::RDMA_READ
                         : RdmaWrOpcode::ATOMIC_FETCH_AND_ADD;
        off = (off + 7) & ~uint64_t(7);
        srcOff[i] = off;
        dstOff[i] = off;
        if (op[i] == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD)
        {
            len[i] = 8;
        }
        off += len[i] + 8;
        ASSERT_LT(off, kRegionBytes);
        if (op[i] == RdmaWrOpcode::RDMA_READ || op[i] == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD)
        {
            b.Write(srcOff[i], TestBytes(len[i], 1000 + i));
        }
        else
        {
            a.Write(srcOff[i], TestBytes(len[i], 1000 + i));
        }
    }
    uint32_t recvs = 0;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (op[i] == RdmaWrOpcode::SEND)
        {
            ASSERT_EQ(b.PostRecv(i, dstOff[i], len[i]), 0);
            ++recvs;
        }
        RdmaSendWr w;
        if (op[i] == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD)
        {
            w = Wr(i, op[i], {a.Sge(dstOff[i], 8)});
            w.atomic.remote_addr = kRegionBase + srcOff[i];
            w.atomic.rkey = b.mr->GetRkey();
            w.atomic.compare_add = i + 1;
        }
        else if (op[i] == RdmaWrOpcode::RDMA_READ)
        {
            w = Wr(i, op[i], {a.Sge(dstOff[i], len[i])});
            w.rdma.remote_addr = kRegionBase + srcOff[i];
        }
        else
        {
            w = Wr(i, op[i], {a.Sge(srcOff[i], len[i])});
            w.rdma.remote_addr = kRegionBase + dstOff[i];
        }
        w.rdma.rkey = b.mr->GetRkey();
        ASSERT_EQ(a.qp->PostSend(w), 0);
    }
    RunFor(Seconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), n);
    for (uint32_t i = 0; i < n; ++i)
    {
        EXPECT_EQ(sc[i].wr_id, i) << "completions out of order";
        EXPECT_EQ(sc[i].status, RdmaWcStatus::SUCCESS) << RdmaWcStatusStr(sc[i].status);
    }
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), recvs);
    size_t r = 0;
    for (uint32_t i = 0; i < n; ++i)
    {
        const auto want = TestBytes(len[i], 1000 + i);
        if (op[i] == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD)
        {
            // Executed exactly once: the original value came back, the target grew by i+1.
            uint64_t orig;
            uint64_t now;
            std::memcpy(&orig, want.data(), 8);
            std::memcpy(&now, b.Read(srcOff[i], 8).data(), 8);
            EXPECT_EQ(a.Read(dstOff[i], 8), want) << "FETCH_ADD " << i;
            EXPECT_EQ(now, orig + i + 1) << "FETCH_ADD " << i;
            continue;
        }
        if (op[i] == RdmaWrOpcode::RDMA_READ)
        {
            EXPECT_EQ(a.Read(dstOff[i], len[i]), want) << "READ " << i;
            continue;
        }
        EXPECT_EQ(b.Read(dstOff[i], len[i]), want) << "message " << i;
        if (op[i] == RdmaWrOpcode::SEND)
        {
            EXPECT_EQ(rc[r].wr_id, i);
            EXPECT_EQ(rc[r].byte_len, len[i]);
            EXPECT_EQ(rc[r].status, RdmaWcStatus::SUCCESS);
            ++r;
        }
    }
    // The losses happened and were recovered from.
    EXPECT_GT(toB->GetHits() + toA->GetHits(), 0u);
    EXPECT_GT(a.hca.engine->GetCounters().retransmittedPackets, 0u);
    const double seen = double(toB->GetPacketsSeen() + toA->GetPacketsSeen());
    EXPECT_NEAR((toB->GetHits() + toA->GetHits()) / seen, rate, rate * 0.5);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::RTS);
    EXPECT_EQ(b.qp->GetState(), RdmaQpState::RTS);
}

INSTANTIATE_TEST_SUITE_P(
    Rates,
    RdmaEngineLoss,
    ::testing::Values(LossParam(0.01, PacketLossModel::CORRUPT, PacketLossModel::RANDOM),
                      LossParam(0.05, PacketLossModel::CORRUPT, PacketLossModel::RANDOM),
                      LossParam(0.01, PacketLossModel::DROP, PacketLossModel::RANDOM),
                      LossParam(0.05, PacketLossModel::DROP, PacketLossModel::RANDOM),
                      LossParam(0.05, PacketLossModel::DROP, PacketLossModel::BURST)),
    [](const ::testing::TestParamInfo<LossParam>& p) {
        return std::string(std::get<2>(p.param) == PacketLossModel::BURST ? "Burst" : "") +
               (std::get<1>(p.param) == PacketLossModel::DROP ? "Drop" : "Corrupt") +
               std::to_string(int(std::get<0>(p.param) * 100)) + "Percent";
    });

class RdmaEngineRecovery : public RdmaPairTest
{
};

TEST_F(RdmaEngineRecovery, ALostMiddlePacketIsNakedWithPsnSequenceErrorAndResent)
{
    Setup();
    NakLog log;
    b.hca.engine->TraceConnectWithoutContext("NakSent", MakeCallback(&NakLog::Nak, &log));
    // b's port sees only a's requests: packet 2 is the third packet of the SEND.
    SetLoss(Loss(PacketLossModel::LIST, PacketLossModel::DROP, 0, "2"), nullptr);
    a.Write(0, TestBytes(8000, 3));
    ASSERT_EQ(b.PostRecv(1, 100000, 8000), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 8000)})), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.Read(100000, 8000), TestBytes(8000, 3));
    // One NAK (IBA vol. 1 §9.7.5.1.1: once per gap), syndrome 0x60, carrying the lost PSN.
    ASSERT_EQ(log.naks.size(), 1u);
    EXPECT_EQ(log.naks[0].first, 0x60);
    EXPECT_EQ(log.naks[0].second, (opts.sqPsn + 2) & 0xFFFFFF);
    EXPECT_EQ(a.hca.engine->GetCounters().naksReceived, 1u);
    EXPECT_EQ(a.hca.engine->GetCounters().timeouts, 0u); // recovered without waiting
}

TEST_F(RdmaEngineRecovery, ALostAckCausesATimeoutAndDuplicatesAreAcknowledgedNotRedelivered)
{
    Setup();
    NakLog log;
    a.hca.engine->TraceConnectWithoutContext("Timeout", MakeCallback(&NakLog::Timeout, &log));
    // a's port sees only b's responses: lose the first ACK.
    SetLoss(nullptr, Loss(PacketLossModel::LIST, PacketLossModel::DROP, 0, "0"));
    a.Write(0, TestBytes(3000, 4));
    ASSERT_EQ(b.PostRecv(1, 100000, 3000), 0);
    ASSERT_EQ(b.PostRecv(2, 200000, 3000), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 3000)})), 0);
    RunFor(MilliSeconds(5));
    EXPECT_EQ(log.timeouts, 1u);
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    // The resent SEND was a duplicate: acknowledged, not delivered into the second WQE.
    EXPECT_EQ(b.PollRecv().size(), 1u);
    EXPECT_EQ(b.hca.engine->GetDropCount(RdmaDropReason::Duplicate), 3u); // 3 packets resent
    EXPECT_EQ(b.Read(200000, 3000), std::vector<uint8_t>(3000, 0));
}

TEST_F(RdmaEngineRecovery, ADuplicateAtomicIsAnsweredFromTheSavedResultNotExecutedTwice)
{
    Setup();
    SetLoss(nullptr, Loss(PacketLossModel::LIST, PacketLossModel::DROP, 0, "0"));
    const uint64_t v0 = 1000;
    std::vector<uint8_t> init(8);
    std::memcpy(init.data(), &v0, 8);
    b.Write(64, init);
    RdmaSendWr w = Wr(1, RdmaWrOpcode::ATOMIC_FETCH_AND_ADD, {a.Sge(0, 8)});
    w.atomic.remote_addr = kRegionBase + 64;
    w.atomic.rkey = b.mr->GetRkey();
    w.atomic.compare_add = 5;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(5));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    uint64_t got = 0;
    uint64_t now = 0;
    std::memcpy(&got, a.Read(0, 8).data(), 8);
    std::memcpy(&now, b.Read(64, 8).data(), 8);
    EXPECT_EQ(got, v0);
    EXPECT_EQ(now, v0 + 5); // once, although the request arrived twice
    EXPECT_EQ(a.hca.engine->GetCounters().timeouts, 1u);
}

TEST_F(RdmaEngineRecovery, ALostReadResponseIsAskedForAgainFromWhereItStopped)
{
    Setup();
    // a's port sees b's READ responses 0, 1, 2, ...: lose the second.
    SetLoss(nullptr, Loss(PacketLossModel::LIST, PacketLossModel::DROP, 0, "1"));
    b.Write(0, TestBytes(5000, 9));
    RdmaSendWr r = Wr(1, RdmaWrOpcode::RDMA_READ, {a.Sge(10000, 5000)});
    r.rdma.remote_addr = kRegionBase;
    r.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(r), 0);
    std::vector<uint32_t> readLengths;
    struct Tap
    {
        std::vector<uint32_t>* psns;

        void On(uint32_t, uint8_t op, uint32_t psn, uint32_t, bool)
        {
            if (op == IbOpcode::kRcRdmaReadRequest)
            {
                psns->push_back(psn);
            }
        }
    } tap{&readLengths};
    a.hca.engine->TraceConnectWithoutContext("PacketSent", MakeCallback(&Tap::On, &tap));
    RunFor(MilliSeconds(5));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(a.Read(10000, 5000), TestBytes(5000, 9));
    // The second request starts at the lost response's PSN (IBA vol. 1 §9.7.4.1.3).
    ASSERT_EQ(readLengths.size(), 2u);
    EXPECT_EQ(readLengths[1], (readLengths[0] + 1) & 0xFFFFFF);
}

TEST_F(RdmaEngineRecovery, RetryExhaustionFailsTheWrMovesTheQpToErrorAndFlushesTheRest)
{
    QpOptions o;
    o.retryCnt = 2;
    o.timeout = 6; // 262 us
    Setup(o);
    NakLog log;
    a.hca.engine->TraceConnectWithoutContext("Timeout", MakeCallback(&NakLog::Timeout, &log));
    SetLoss(Loss(PacketLossModel::RANDOM, PacketLossModel::DROP, 1.0), nullptr);
    const auto before = b.Read(0, kRegionBytes);
    for (int i = 0; i < 4; ++i)
    {
        RdmaSendWr w = Wr(i, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 100)});
        w.rdma.remote_addr = kRegionBase;
        w.rdma.rkey = b.mr->GetRkey();
        ASSERT_EQ(a.qp->PostSend(w), 0);
    }
    RunFor(MilliSeconds(10));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 4u);
    EXPECT_EQ(sc[0].wr_id, 0u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::RETRY_EXC_ERR);
    for (int i = 1; i < 4; ++i)
    {
        EXPECT_EQ(sc[i].wr_id, uint64_t(i));
        EXPECT_EQ(sc[i].status, RdmaWcStatus::WR_FLUSH_ERR);
    }
    // The first try plus retry_cnt retries, each ended by the local ACK timeout.
    EXPECT_EQ(log.timeouts, 3u);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::ERR);
    // Later WRs complete at once with a flush error.
    ASSERT_EQ(a.qp->PostSend(Wr(9, RdmaWrOpcode::SEND, {a.Sge(0, 4)})), 0);
    sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::WR_FLUSH_ERR);
    EXPECT_TRUE(b.Read(0, kRegionBytes) == before);
}

TEST_F(RdmaEngineRecovery, RnrNakWaitsForAReceiveAndRetriesUntilOnceIsPosted)
{
    QpOptions o;
    o.minRnrTimer = 14; // 1.28 ms (IBA vol. 1 §9.7.5.2.8, RNR timer table)
    o.rnrRetry = 7;     // infinite
    Setup(o);
    NakLog log;
    b.hca.engine->TraceConnectWithoutContext("NakSent", MakeCallback(&NakLog::Nak, &log));
    a.Write(0, TestBytes(2000, 5));
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 2000)})), 0);
    Simulator::Schedule(MilliSeconds(5), [this]() { b.PostRecv(7, 50000, 4096); });
    RunFor(MilliSeconds(20));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.Read(50000, 2000), TestBytes(2000, 5));
    ASSERT_FALSE(log.naks.empty());
    // Every NAK is an RNR NAK (syndrome 01x xxxx) carrying the responder's min_rnr_timer,
    // and the requester waited at least that long between tries.
    for (auto& [syn, psn] : log.naks)
    {
        EXPECT_EQ(syn, 0x20 | o.minRnrTimer);
        EXPECT_EQ(psn, opts.sqPsn);
    }
    const double wait = IbAethHeader::RnrTimerMicroSeconds(o.minRnrTimer) * 1e-3; // ms
    EXPECT_LE(log.naks.size(), size_t(5.0 / wait) + 1);
    EXPECT_GE(log.naks.size(), size_t(5.0 / wait / 2));
}

TEST_F(RdmaEngineRecovery, RnrRetryExhaustionCompletesWithRnrRetryExceeded)
{
    QpOptions o;
    o.minRnrTimer = 1;
    o.rnrRetry = 2;
    Setup(o);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 10)})), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(2, RdmaWrOpcode::SEND, {a.Sge(0, 10)})), 0);
    RunFor(MilliSeconds(5));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::RNR_RETRY_EXC_ERR);
    EXPECT_EQ(sc[1].status, RdmaWcStatus::WR_FLUSH_ERR);
    EXPECT_EQ(a.hca.engine->GetCounters().rnrNaksReceived, 3u); // first try + 2 retries
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::ERR);
}

TEST_F(RdmaEngineRecovery, UcLosesTheMessageWithTheLostPacketAndDeliversTheNext)
{
    QpOptions o;
    o.type = RdmaQpType::UC;
    o.qpAccess = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE;
    Setup(o);
    SetLoss(Loss(PacketLossModel::LIST, PacketLossModel::DROP, 0, "1"), nullptr);
    a.Write(0, TestBytes(3000, 1));
    a.Write(10000, TestBytes(3000, 2));
    ASSERT_EQ(b.PostRecv(1, 100000, 3000), 0);
    ASSERT_EQ(b.PostRecv(2, 200000, 3000), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 3000)})), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(2, RdmaWrOpcode::SEND, {a.Sge(10000, 3000)})), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u); // UC completes at the sender regardless (IBA vol. 1 §9.8.1)
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 1u);
    // The first message's WQE is used by the second message, which arrives intact.
    EXPECT_EQ(rc[0].wr_id, 1u);
    EXPECT_EQ(rc[0].byte_len, 3000u);
    EXPECT_EQ(b.Read(100000, 3000), TestBytes(3000, 2));
    EXPECT_GT(b.hca.engine->GetDropCount(RdmaDropReason::OutOfSequence), 0u);
}
