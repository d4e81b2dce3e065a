// Loss-recovery options of the RDMA engine: IRN-style selective repeat (LossRecovery Selective)
// and the RTO (RtoLow / RtoHigh / RtoLowPackets) beside IBA's go-back-N. Over the InfiniBand
// pair fixture: every WR completes in order with its bytes intact under random and bursty
// loss, selective repeat resends exactly the packets the loss model dropped while go-back-N
// resends more; a lost last packet is recovered by the RTO after RTO_low or RTO_high as the
// packets in flight say; malformed SACKs are counted and ignored. Over RoCE: tshark decodes the
// SACK NAKs without calling anything malformed, and a PFC-less incast that drops finishes
// sooner with selective repeat than with go-back-N.
#include "ib-test-packets.h"
#include "rdma-engine-fixture.h"
#include "test-roce-rdma-fixture.h"

#include "helpers/formats/topology.h"
#include "helpers/roce/roce-traffic-run.h"
#include "helpers/trace/eth-pcap-writer.h"
#include "helpers/trace/trace-check.h"
#include "models/common/packet-loss-model.h"
#include "models/rdma/rdma-selective-repeat.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <cstring>
#include <iostream>
#include <random>

using namespace ns3;
using namespace cnuas_test;

namespace
{
Ptr<PacketLossModel>
Loss(PacketLossModel::Mode mode, double rate, const std::string& indices, int64_t stream)
{
    Ptr<PacketLossModel> m = CreateObject<PacketLossModel>();
    m->SetAttribute("Mode", EnumValue(mode));
    m->SetAttribute("Action", EnumValue(PacketLossModel::DROP));
    m->SetAttribute("Rate", DoubleValue(rate));
    m->SetAttribute("Indices", StringValue(indices));
    m->AssignStreams(stream);
    return m;
}

void
SetRecovery(Ptr<RdmaEngine> e, int mode, Time rtoLow, Time rtoHigh)
{
    e->SetAttribute("LossRecovery", EnumValue(mode));
    e->SetAttribute("RtoLow", TimeValue(rtoLow));
    e->SetAttribute("RtoHigh", TimeValue(rtoHigh));
}

/// Times of a requester's first sends and of its timeouts.
struct TimeLog
{
    Time firstSent{Time(-1)};
    std::vector<Time> timeouts;

    void Sent(uint32_t, uint8_t opcode, uint32_t, uint32_t, bool)
    {
        if (opcode != IbOpcode::kRcAcknowledge && firstSent.IsStrictlyNegative())
        {
            firstSent = Simulator::Now();
        }
    }

    void Timeout(uint32_t, uint32_t)
    {
        timeouts.push_back(Simulator::Now());
    }
};

/// A NAK for `qpn` with the given cumulative PSN and a SACK extension (`ext` = its 4 bytes),
/// followed by a zero ICRC of `icrc` bytes (the engine does not check ICRCs; ports do).
std::vector<uint8_t>
SackBytes(uint32_t qpn, uint32_t cum, const std::vector<uint8_t>& ext, uint32_t icrc)
{
    IbTransportHeaders h;
    h.bth.SetOpCode(IbOpcode::kRcAcknowledge);
    h.bth.SetPkey(0xFFFF);
    h.bth.SetDestQp(qpn);
    h.bth.SetPsn(cum);
    h.aeth = IbAethHeader::MakeNak(0, IbNakCode::PsnSequenceError);
    std::vector<uint8_t> out(IbTransportHeaderLength(IbOpcode::kRcAcknowledge));
    EXPECT_EQ(h.Write(out.data(), out.size()), out.size());
    out.insert(out.end(), ext.begin(), ext.end());
    out.insert(out.end(), icrc, 0);
    return out;
}

void
RecordTime(Time* t, const RdmaWc&, bool)
{
    *t = Simulator::Now();
}

std::vector<uint8_t>
PsnExt(uint32_t psn)
{
    return {0, uint8_t(psn >> 16), uint8_t(psn >> 8), uint8_t(psn)};
}
} // namespace

// ---- the state object alone ----------------------------------------------------------------

TEST(RdmaSelectiveRepeatState, OnlyPacketsBeforeTheHighestSackAreLostAndEachIsResentOnce)
{
    RdmaSelectiveRepeat s;
    const uint32_t base = 0xFFFFFE; // crosses the 24-bit wrap
    s.Advance(base);
    const uint32_t end = RdmaPsnAdd(base, 10);
    // SACKs for base+3 and base+6: base..base+2, base+4, base+5 are lost; base+7.. are not.
    ASSERT_TRUE(s.OnSack(RdmaPsnAdd(base, 3), end, 64));
    ASSERT_TRUE(s.OnSack(RdmaPsnAdd(base, 6), end, 64));
    std::vector<uint32_t> resent;
    uint32_t psn = 0;
    while (s.NextLost(psn))
    {
        resent.push_back(psn);
        s.MarkResent(psn, 1);
    }
    const std::vector<uint32_t> want = {base, RdmaPsnAdd(base, 1), RdmaPsnAdd(base, 2),
                                        RdmaPsnAdd(base, 4), RdmaPsnAdd(base, 5)};
    EXPECT_EQ(resent, want);
    // A later SACK makes base+7 lost, and only it.
    ASSERT_TRUE(s.OnSack(RdmaPsnAdd(base, 8), end, 64));
    ASSERT_TRUE(s.NextLost(psn));
    EXPECT_EQ(psn, RdmaPsnAdd(base, 7));
    s.MarkResent(psn, 1);
    EXPECT_FALSE(s.NextLost(psn));
    // A timeout makes every un-SACKed packet sent before the timer started lost again,
    // resent or not; base+7, resent and younger than that, is left alone.
    s.Advance(RdmaPsnAdd(base, 2));
    s.OnTimeout(RdmaPsnAdd(base, 6));
    resent.clear();
    while (s.NextLost(psn))
    {
        resent.push_back(psn);
        s.MarkResent(psn, 1);
    }
    EXPECT_EQ(resent, (std::vector<uint32_t>{RdmaPsnAdd(base, 2), RdmaPsnAdd(base, 4),
                                             RdmaPsnAdd(base, 5)}));
}

TEST(RdmaSelectiveRepeatState, SacksOutsideTheWindowOrForUnsentPacketsAreRefused)
{
    RdmaSelectiveRepeat s;
    s.Advance(100);
    EXPECT_FALSE(s.OnSack(99, 200, 64));  // already acknowledged
    EXPECT_FALSE(s.OnSack(200, 200, 64)); // not sent
    EXPECT_FALSE(s.OnSack(164, 200, 64)); // beyond the window
    EXPECT_FALSE(s.HasState());
    EXPECT_TRUE(s.OnSack(163, 200, 64));
    EXPECT_TRUE(s.IsSacked(163));
}

// ---- InfiniBand pair -------------------------------------------------------------------------

namespace
{
struct LoadResult
{
    uint64_t hits = 0;          ///< requests the loss model dropped (the a -> b direction)
    uint64_t retransmitted = 0; ///< packets the requester resent
    uint64_t sacks = 0;
    uint64_t timeouts = 0;
    Time end;                   ///< when the last WR completed
};
} // namespace

class RdmaSelectiveRepeatIb : public RdmaPairTest
{
  protected:
    /// SENDs and WRITEs of 1 B .. 40 KB from a to b, losses on the requests only (so each
    /// resend answers a drop the loss model counted); checks every completion and byte.
    LoadResult RunLoad(int mode, PacketLossModel::Mode lossMode, double rate)
    {
        QpOptions o;
        o.timeout = 12; // 16.8 ms: any timeout below is the RTO attribute's
        Setup(o);
        for (auto* s : {&a, &b})
        {
            SetRecovery(s->hca.engine, mode, MicroSeconds(30), MicroSeconds(90));
            s->hca.engine->SetAttribute("AckReqEveryPackets", UintegerValue(1));
        }
        auto toB = Loss(lossMode, rate, "", 21);
        SetLoss(toB, nullptr);
        std::mt19937 rng(5);
        const uint32_t n = 120;
        std::vector<uint32_t> len(n);
        std::vector<RdmaWrOpcode> op(n);
        uint64_t off = 0;
        std::vector<uint64_t> at(n);
        for (uint32_t i = 0; i < n; ++i)
        {
            len[i] = 1 + rng() % 40000;
            op[i] = rng() % 2 ? RdmaWrOpcode::SEND : RdmaWrOpcode::RDMA_WRITE;
            at[i] = off;
            off += len[i];
            a.Write(at[i], TestBytes(len[i], 500 + i));
            if (op[i] == RdmaWrOpcode::SEND)
            {
                EXPECT_EQ(b.PostRecv(i, at[i], len[i]), 0);
            }
            RdmaSendWr w = Wr(i, op[i], {a.Sge(at[i], len[i])});
            w.rdma.remote_addr = kRegionBase + at[i];
            w.rdma.rkey = b.mr->GetRkey();
            EXPECT_EQ(a.qp->PostSend(w), 0);
        }
        LoadResult r;
        a.hca.engine->TraceConnectWithoutContext("Completion",
                                                 MakeBoundCallback(&RecordTime, &r.end));
        RunFor(MilliSeconds(200));
        const auto sc = a.PollSend();
        EXPECT_EQ(sc.size(), n);
        for (uint32_t i = 0; i < sc.size(); ++i)
        {
            EXPECT_EQ(sc[i].wr_id, i) << "completions out of order";
            EXPECT_EQ(sc[i].status, RdmaWcStatus::SUCCESS) << RdmaWcStatusStr(sc[i].status);
        }
        const auto rc = b.PollRecv();
        size_t k = 0;
        for (uint32_t i = 0; i < n; ++i)
        {
            EXPECT_EQ(b.Read(at[i], len[i]), TestBytes(len[i], 500 + i)) << "message " << i;
            if (op[i] == RdmaWrOpcode::SEND)
            {
                EXPECT_LT(k, rc.size());
                if (k < rc.size())
                {
                    EXPECT_EQ(rc[k].wr_id, i);
                    EXPECT_EQ(rc[k].byte_len, len[i]);
                }
                ++k;
            }
        }
        EXPECT_EQ(k, rc.size());
        r.hits = toB->GetHits();
        r.retransmitted = a.hca.engine->GetCounters().retransmittedPackets;
        r.sacks = a.hca.engine->GetCounters().sacksReceived;
        r.timeouts = a.hca.engine->GetCounters().timeouts;
        EXPECT_EQ(a.qp->GetState(), RdmaQpState::RTS);
        return r;
    }

    void Reset()
    {
        Simulator::Destroy();
        fabric = IbFabric();
        subnet = IbStaticSubnetHelper();
        hcas.clear();
        a = Side();
        b = Side();
    }
};

class RdmaSelectiveRepeatLoss
    : public RdmaSelectiveRepeatIb,
      public ::testing::WithParamInterface<PacketLossModel::Mode>
{
};

TEST_P(RdmaSelectiveRepeatLoss, ResendsExactlyTheDroppedPacketsWhereGoBackNResendsMore)
{
    const LoadResult sel = RunLoad(RDMA_RECOVERY_SELECTIVE, GetParam(), 0.02);
    Reset();
    const LoadResult gbn = RunLoad(RDMA_RECOVERY_GO_BACK_N, GetParam(), 0.02);
    std::cout << "[ loss " << (GetParam() == PacketLossModel::BURST ? "burst" : "random")
              << " 2% ] selective: " << sel.hits << " dropped, " << sel.retransmitted
              << " resent, " << sel.timeouts << " timeouts, done at " << sel.end.As(Time::US)
              << "; go-back-N: " << gbn.hits << " dropped, " << gbn.retransmitted
              << " resent, " << gbn.timeouts << " timeouts, done at " << gbn.end.As(Time::US)
              << "\n";
    ASSERT_GT(sel.hits, 10u) << "the load must lose packets";
    ASSERT_GT(gbn.hits, 10u);
    // Only requests are lost and ACKs/SACKs all arrive, so every resend answers one drop the
    // loss model counted (a lost resend is a drop of its own, resent again).
    EXPECT_EQ(sel.retransmitted, sel.hits);
    EXPECT_GT(sel.sacks, 0u);
    // Go-back-N resends the packets in flight behind each loss as well.
    EXPECT_GT(gbn.retransmitted, gbn.hits + gbn.hits / 2);
    EXPECT_EQ(gbn.sacks, 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes,
                         RdmaSelectiveRepeatLoss,
                         ::testing::Values(PacketLossModel::RANDOM, PacketLossModel::BURST),
                         [](const ::testing::TestParamInfo<PacketLossModel::Mode>& p) {
                             return std::string(p.param == PacketLossModel::BURST ? "Burst"
                                                                                  : "Random");
                         });

TEST_F(RdmaSelectiveRepeatIb, ReadsAtomicsSendsAndWritesSurviveLossBothWays)
{
    QpOptions o;
    o.timeout = 12;
    Setup(o);
    for (auto* s : {&a, &b})
    {
        SetRecovery(s->hca.engine, RDMA_RECOVERY_SELECTIVE, MicroSeconds(30), MicroSeconds(90));
    }
    auto toB = Loss(PacketLossModel::RANDOM, 0.03, "", 31);
    auto toA = Loss(PacketLossModel::BURST, 0.03, "", 32);
    SetLoss(toB, toA);
    std::mt19937 rng(9);
    const uint32_t n = 100;
    std::vector<uint32_t> len(n);
    std::vector<RdmaWrOpcode> op(n);
    std::vector<uint64_t> at(n);
    uint64_t off = 0;
    uint32_t recvs = 0;
    for (uint32_t i = 0; i < n; ++i)
    {
        const uint32_t kind = rng() % 4;
        op[i] = kind == 0   ? RdmaWrOpcode::SEND
                : kind == 1 ? RdmaWrOpcode::RDMA_WRITE
                : kind == 2 ? RdmaWrOpcode::RDMA_READ
                            : RdmaWrOpcode::ATOMIC_FETCH_AND_ADD;
        len[i] = op[i] == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD ? 8 : 1 + rng() % 9000;
        off = (off + 7) & ~uint64_t(7);
        at[i] = off;
        off += len[i] + 8;
        const bool fromB =
            op[i] == RdmaWrOpcode::RDMA_READ || op[i] == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD;
        (fromB ? b : a).Write(at[i], TestBytes(len[i], 70 + i));
        RdmaSendWr w;
        if (op[i] == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD)
        {
            w = Wr(i, op[i], {a.Sge(at[i] + 2000000, 8)});
            w.atomic.remote_addr = kRegionBase + at[i];
            w.atomic.rkey = b.mr->GetRkey();
            w.atomic.compare_add = i + 1;
        }
        else if (op[i] == RdmaWrOpcode::RDMA_READ)
        {
            w = Wr(i, op[i], {a.Sge(at[i] + 2000000, len[i])});
            w.rdma.remote_addr = kRegionBase + at[i];
            w.rdma.rkey = b.mr->GetRkey();
        }
        else
        {
            if (op[i] == RdmaWrOpcode::SEND)
            {
                ASSERT_EQ(b.PostRecv(i, at[i] + 2000000, len[i]), 0);
                ++recvs;
            }
            w = Wr(i, op[i], {a.Sge(at[i], len[i])});
            w.rdma.remote_addr = kRegionBase + at[i] + 2000000;
            w.rdma.rkey = b.mr->GetRkey();
        }
        ASSERT_EQ(a.qp->PostSend(w), 0);
    }
    ASSERT_LT(off + 2000000, kRegionBytes);
    RunFor(MilliSeconds(300));
    const auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), n);
    for (uint32_t i = 0; i < n; ++i)
    {
        EXPECT_EQ(sc[i].wr_id, i);
        EXPECT_EQ(sc[i].status, RdmaWcStatus::SUCCESS) << i << " " << RdmaWcStatusStr(sc[i].status);
        const auto want = TestBytes(len[i], 70 + i);
        if (op[i] == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD)
        {
            uint64_t orig;
            uint64_t now;
            std::memcpy(&orig, want.data(), 8);
            std::memcpy(&now, b.Read(at[i], 8).data(), 8);
            EXPECT_EQ(a.Read(at[i] + 2000000, 8), want) << "FETCH_ADD " << i;
            EXPECT_EQ(now, orig + i + 1) << "FETCH_ADD executed once " << i;
        }
        else if (op[i] == RdmaWrOpcode::RDMA_READ)
        {
            EXPECT_EQ(a.Read(at[i] + 2000000, len[i]), want) << "READ " << i;
        }
        else
        {
            EXPECT_EQ(b.Read(at[i] + 2000000, len[i]), want) << "message " << i;
        }
    }
    EXPECT_EQ(b.PollRecv().size(), recvs);
    EXPECT_GT(toB->GetHits() + toA->GetHits(), 5u);
    EXPECT_GT(b.hca.engine->GetCounters().heldOutOfOrder, 0u);
}

class RdmaSelectiveRepeatRto : public RdmaSelectiveRepeatIb,
                               public ::testing::WithParamInterface<uint32_t>
{
  protected:
    const Time rtoLow = MicroSeconds(40);
    const Time rtoHigh = MicroSeconds(300);

    void SetUpRto()
    {
        QpOptions o;
        o.timeout = 20; // 4.3 s: the RTO attributes replace it
        Setup(o);
        for (auto* s : {&a, &b})
        {
            SetRecovery(s->hca.engine, RDMA_RECOVERY_SELECTIVE, rtoLow, rtoHigh);
            s->hca.engine->SetAttribute("RtoLowPackets", UintegerValue(3));
            s->hca.engine->SetAttribute("AckReqEveryPackets", UintegerValue(1));
        }
        a.hca.engine->TraceConnectWithoutContext("PacketSent",
                                                 MakeCallback(&TimeLog::Sent, &log));
        a.hca.engine->TraceConnectWithoutContext("Timeout",
                                                 MakeCallback(&TimeLog::Timeout, &log));
        a.hca.engine->TraceConnectWithoutContext(
            "PacketReceived", MakeCallback(&RdmaSelectiveRepeatRto::OnRx, this));
        a.hca.engine->TraceConnectWithoutContext(
            "Timeout", MakeCallback(&RdmaSelectiveRepeatRto::OnTimeout, this));
    }

    void OnTimeout(uint32_t, uint32_t)
    {
        if (lastRxBeforeTimeout.IsStrictlyNegative())
        {
            lastRxBeforeTimeout = lastRx;
        }
    }

    void OnRx(uint32_t, uint8_t, uint32_t, uint32_t)
    {
        lastRx = Simulator::Now();
    }

    /// One SEND of `packets` full packets; returns whether it completed intact.
    void SendAndCheck(uint32_t packets)
    {
        const uint32_t bytes = packets * 1024;
        a.Write(0, TestBytes(bytes, 4));
        ASSERT_EQ(b.PostRecv(1, 100000, bytes), 0);
        ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, bytes)})), 0);
        RunFor(MilliSeconds(5));
        const auto sc = a.PollSend();
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(b.Read(100000, bytes), TestBytes(bytes, 4));
    }

    TimeLog log;
    Time lastRx{Time(-1)};
    Time lastRxBeforeTimeout{Time(-1)};
};

TEST_P(RdmaSelectiveRepeatRto, ALostLastPacketIsResentAfterRtoLow)
{
    const uint32_t packets = GetParam();
    SetUpRto();
    // The SEND's last packet is the one lost: nothing after it can reveal the gap.
    SetLoss(Loss(PacketLossModel::LIST, 0, std::to_string(packets - 1), 1), nullptr);
    SendAndCheck(packets);
    // The ACK of the packet before the lost one restarted the timer with one packet in
    // flight: RTO_low from that ACK's arrival.
    ASSERT_EQ(log.timeouts.size(), 1u);
    ASSERT_TRUE(lastRxBeforeTimeout.IsStrictlyPositive());
    EXPECT_EQ(log.timeouts[0] - lastRxBeforeTimeout, rtoLow);
    EXPECT_EQ(a.hca.engine->GetCounters().rtoExtensions, 0u);
    EXPECT_EQ(a.hca.engine->GetCounters().retransmittedPackets, 1u);
}

INSTANTIATE_TEST_SUITE_P(Packets,
                         RdmaSelectiveRepeatRto,
                         ::testing::Values(2u, 5u),
                         [](const ::testing::TestParamInfo<uint32_t>& p) {
                             return std::to_string(p.param) + "Packets";
                         });

TEST_F(RdmaSelectiveRepeatRto, SilenceWithManyPacketsInFlightWaitsRtoHigh)
{
    SetUpRto();
    // Every ACK of the first round is lost: the requester hears nothing with 6 packets in
    // flight. The timer started with one packet in flight (RTO_low), found 6 when it ran out
    // and went on to RTO_high from the same start.
    SetLoss(nullptr, Loss(PacketLossModel::LIST, 0, "0,1,2,3,4,5", 1));
    SendAndCheck(6);
    ASSERT_EQ(log.timeouts.size(), 1u);
    EXPECT_EQ(log.timeouts[0] - log.firstSent, rtoHigh);
    EXPECT_EQ(a.hca.engine->GetCounters().rtoExtensions, 1u);
    // Nothing was SACKed, so after the silence every packet counts as lost (RFC 6675 §5.1).
    EXPECT_EQ(a.hca.engine->GetCounters().retransmittedPackets, 6u);
}

TEST_F(RdmaSelectiveRepeatRto, ALostLastPacketWithoutPerPacketAcksWaitsRtoHigh)
{
    SetUpRto();
    a.hca.engine->SetAttribute("AckReqEveryPackets", UintegerValue(0));
    // Only the last packet asks for an ACK, and it is lost: the requester hears nothing with
    // 6 packets in flight, so RTO_high from the first packet; with no SACK to tell what
    // arrived, it resends all six (the responder acknowledges the five duplicates).
    SetLoss(Loss(PacketLossModel::LIST, 0, "5", 1), nullptr);
    SendAndCheck(6);
    ASSERT_EQ(log.timeouts.size(), 1u);
    EXPECT_EQ(log.timeouts[0] - log.firstSent, rtoHigh);
    EXPECT_EQ(a.hca.engine->GetCounters().rtoExtensions, 1u);
    EXPECT_EQ(a.hca.engine->GetCounters().retransmittedPackets, 6u);
    EXPECT_EQ(b.hca.engine->GetDropCount(RdmaDropReason::Duplicate), 5u);
}

TEST_F(RdmaSelectiveRepeatIb, GoBackNTakesTheRtoInsteadOfTheLocalAckTimeout)
{
    QpOptions o;
    o.timeout = 20; // 4.096 us x 2^20 = 4.3 s
    Setup(o);
    const Time rto = MicroSeconds(150);
    for (auto* s : {&a, &b})
    {
        SetRecovery(s->hca.engine, RDMA_RECOVERY_GO_BACK_N, Time(0), rto);
    }
    SetLoss(Loss(PacketLossModel::LIST, 0, "3", 1), nullptr);
    TimeLog log;
    a.hca.engine->TraceConnectWithoutContext("PacketSent", MakeCallback(&TimeLog::Sent, &log));
    a.hca.engine->TraceConnectWithoutContext("Timeout", MakeCallback(&TimeLog::Timeout, &log));
    a.Write(0, TestBytes(4096, 8));
    ASSERT_EQ(b.PostRecv(1, 100000, 4096), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 4096)})), 0);
    RunFor(MilliSeconds(2));
    const auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.Read(100000, 4096), TestBytes(4096, 8));
    ASSERT_EQ(log.timeouts.size(), 1u);
    EXPECT_EQ(log.timeouts[0] - log.firstSent, rto);
}

TEST_F(RdmaSelectiveRepeatIb, AGoBackNRequesterReadsASackNakAsAPlainNak)
{
    QpOptions o;
    o.timeout = 12;
    Setup(o);
    // Mixed ends: a (requester) goes back N, b (responder) SACKs.
    SetRecovery(a.hca.engine, RDMA_RECOVERY_GO_BACK_N, Time(0), Time(0));
    SetRecovery(b.hca.engine, RDMA_RECOVERY_SELECTIVE, Time(0), Time(0));
    SetLoss(Loss(PacketLossModel::LIST, 0, "2", 1), nullptr);
    a.Write(0, TestBytes(8000, 6));
    ASSERT_EQ(b.PostRecv(1, 100000, 8000), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 8000)})), 0);
    RunFor(MilliSeconds(2));
    const auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.Read(100000, 8000), TestBytes(8000, 6));
    EXPECT_GT(b.hca.engine->GetCounters().sacksSent, 0u);
    EXPECT_EQ(a.hca.engine->GetCounters().naksReceived, b.hca.engine->GetCounters().sacksSent);
    EXPECT_EQ(a.hca.engine->GetCounters().sacksReceived, 0u);
    EXPECT_EQ(a.hca.engine->GetDropCount(RdmaDropReason::Malformed), 0u);
    EXPECT_EQ(a.hca.engine->GetCounters().timeouts, 0u);
}

TEST_F(RdmaSelectiveRepeatIb, MalformedSacksAreCountedAndIgnored)
{
    QpOptions o;
    o.timeout = 12;
    Setup(o);
    for (auto* s : {&a, &b})
    {
        SetRecovery(s->hca.engine, RDMA_RECOVERY_SELECTIVE, MicroSeconds(30), MicroSeconds(90));
    }
    const uint32_t bytes = 400 * 1024;
    a.Write(0, TestBytes(bytes, 12));
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, bytes)});
    w.rdma.remote_addr = kRegionBase + 1000000;
    w.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    Ptr<RdmaEngine> e = a.hca.engine;
    const uint32_t qpn = a.qp->GetQpNum();
    const uint32_t icrc = a.hca.port->GetIcrcSize();
    const uint32_t first = o.sqPsn;
    uint64_t ignoredBefore = 0;
    uint64_t malformedBefore = 0;
    // Mid-transfer (a few packets acknowledged, many in flight), hand a's engine SACK NAKs
    // that no responder could send.
    Simulator::Schedule(MicroSeconds(5), [&]() {
        ignoredBefore = e->GetCounters().sacksIgnored;
        malformedBefore = e->GetDropCount(RdmaDropReason::Malformed);
        auto give = [&](const std::vector<uint8_t>& p) {
            e->Receive(a.hca.port, p.data(), static_cast<uint32_t>(p.size()), RdmaRxInfo());
        };
        const uint32_t cum = first + 2;
        give(SackBytes(qpn, cum, PsnExt(RdmaPsnAdd(first, 399)), icrc));  // never sent yet
        give(SackBytes(qpn, cum, PsnExt(cum), icrc));                     // not after cum
        give(SackBytes(qpn, cum, PsnExt(RdmaPsnAdd(cum, -5)), icrc));     // before cum
        give(SackBytes(qpn, RdmaPsnAdd(first, 5000), PsnExt(first + 1), icrc)); // ghost cum
        give(SackBytes(qpn, cum, PsnExt(RdmaPsnAdd(cum, 0x800000)), icrc)); // half the space
        std::vector<uint8_t> reserved = PsnExt(cum + 1);
        reserved[0] = 0x80; // reserved bits set: not a SACK extension
        give(SackBytes(qpn, cum, reserved, icrc));
        give(SackBytes(qpn, cum, {0, 0, 0, 1, 0, 0, 0, 2}, icrc)); // two extensions
        give(SackBytes(qpn, cum, {0, 0}, icrc));                   // half of one
    });
    RunFor(MilliSeconds(20));
    const auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.Read(1000000, bytes), TestBytes(bytes, 12));
    EXPECT_EQ(e->GetCounters().sacksIgnored - ignoredBefore, 5u);
    EXPECT_EQ(e->GetDropCount(RdmaDropReason::Malformed) - malformedBefore, 3u);
    // Nothing was lost, and nothing ignored caused a resend.
    EXPECT_EQ(e->GetCounters().retransmittedPackets, 0u);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::RTS);
}

// ---- RoCE ------------------------------------------------------------------------------------

class RdmaSelectiveRepeatRoce : public RocePairTest
{
};

TEST_F(RdmaSelectiveRepeatRoce, TsharkDecodesSackNaksWithNothingMalformed)
{
    Build(MakeStar(2));
    for (auto& h : hcas)
    {
        SetRecovery(h.engine, RDMA_RECOVERY_SELECTIVE, MicroSeconds(30), MicroSeconds(90));
    }
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/rdma-sack-pcap";
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    std::vector<Ptr<PcapFileWrapper>> files;
    for (uint32_t i = 0; i < 2; ++i)
    {
        files.push_back(
            EthPcapHelper::Enable(fabric.HostPort(i), dir + "/h" + std::to_string(i) + ".pcap"));
    }
    QpOptions o;
    RoceSide w;
    RoceSide r;
    Pair(w, 0, r, 1, o);
    fabric.HostPort(1)->SetAttribute("ReceiveErrorModel",
                                     PointerValue(Loss(PacketLossModel::LIST, 0, "5,9,40", 1)));
    const uint32_t bytes = 100 * 1024;
    w.Write(0, TestBytes(bytes, 2));
    RdmaSendWr wr = Wr(1, RdmaWrOpcode::RDMA_WRITE, {w.Sge(0, bytes)});
    wr.rdma.remote_addr = kRegionBase + 500000;
    wr.rdma.rkey = r.mr->GetRkey();
    ASSERT_EQ(w.qp->PostSend(wr), 0);
    RunFor(MilliSeconds(3));
    const auto sc = w.sendCq->Poll(10);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(r.Read(500000, bytes), TestBytes(bytes, 2));
    const uint64_t sacks = r.hca.engine->GetCounters().sacksSent;
    ASSERT_GT(sacks, 0u);
    EXPECT_EQ(w.hca.engine->GetCounters().sacksReceived, sacks);
    files.clear();
    Simulator::Destroy();

    // The responder's pcap (h1) holds the SACK NAKs it sent.
    const std::string path = dir + "/h1.pcap";
    int status = -1;
    const auto bad = TsharkFieldRows(
        path, {"frame.number"}, "-Y '_ws.malformed || _ws.expert.severity >= error'", &status);
    EXPECT_EQ(status, 0);
    EXPECT_TRUE(bad.empty()) << bad.size() << " malformed frames";
    const auto naks = TsharkFieldRows(path, {"infiniband.bth.opcode", "infiniband.aeth.syndrome",
                                             "infiniband.bth.psn", "udp.length"},
                                      "-Y 'infiniband.aeth.syndrome == 0x60'", &status);
    ASSERT_EQ(status, 0);
    EXPECT_EQ(naks.size(), sacks);
    for (const auto& n : naks)
    {
        ASSERT_EQ(n.size(), 4u);
        EXPECT_EQ(n[0], "17");
        // UDP header 8 + BTH 12 + AETH 4 + SACK 4 + ICRC 4.
        EXPECT_EQ(n[3], "32");
    }
    const TraceCheckReport rep = CheckTrace(path);
    EXPECT_TRUE(rep.ok()) << rep.Summary();
}

TEST(RdmaSelectiveRepeatIncast, WithoutPfcSelectiveRepeatBeatsGoBackN)
{
    auto run = [](const std::string& recovery) {
        RoceRunSpec spec;
        spec.topology = MakeStar(9);
        spec.cc = "ns3::RdmaCcNone"; // no congestion control: the buffer overflows
        spec.pfc = false;
        spec.ecn = false;
        spec.bufferBytes = 512 * 1024;
        spec.recovery = recovery;
        spec.rtoLow = MicroSeconds(100);
        spec.rtoHigh = MicroSeconds(300);
        spec.maxInflightPackets = recovery == "irn" ? 100 : 0;
        for (uint32_t i = 1; i <= 8; ++i)
        {
            spec.flows.push_back({i, 0, 1000000, Time(0)});
        }
        spec.limit = MilliSeconds(200);
        const RoceRunResult r = RunRoceFlows(spec);
        double last = 0;
        for (const auto& f : r.flows)
        {
            EXPECT_TRUE(f.ok) << recovery;
            last = std::max(last, f.fct.GetSeconds());
        }
        const double goodput = last > 0 ? 8 * 1000000 * 8.0 / last / 1e9 : 0;
        std::cout << "[ incast 8:1 40G no PFC ] " << recovery << ": goodput "
                  << goodput << " Gb/s, drops " << r.drops << ", resent "
                  << r.retransmittedPackets << "\n";
        EXPECT_GT(r.drops, 0u) << recovery;
        Simulator::Destroy();
        return goodput;
    };
    const double gbn = run("gbn");
    const double irn = run("irn");
    EXPECT_GT(irn, gbn * 1.5);
}

TEST(RdmaSelectiveRepeatIncast, BadRecoverySettingsAreRefused)
{
    RoceRunSpec spec;
    spec.topology = MakeStar(2);
    spec.flows.push_back({1, 0, 1000, Time(0)});
    spec.recovery = "sack";
    EXPECT_THROW(RunRoceFlows(spec), std::invalid_argument);
    spec.recovery = "irn";
    spec.rtoLow = MicroSeconds(500);
    spec.rtoHigh = MicroSeconds(100);
    EXPECT_THROW(RunRoceFlows(spec), std::invalid_argument);
    Simulator::Destroy();
}
