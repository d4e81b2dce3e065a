// The congestion-control seam: the engine calls the policy per packet and per acknowledgment,
// and enforces the rate and the window it returns (per QP).
#include "rdma-engine-fixture.h"

#include "ns3/nstime.h"
#include "ns3/uinteger.h"

#include <map>

using namespace ns3;
using namespace cnuas_test;

namespace
{
/// A policy that records every call and imposes nothing.
class CountingCc : public RdmaCcNone
{
  public:
    uint64_t sends = 0;
    uint64_t retransmissions = 0;
    uint64_t ackedPackets = 0;
    uint64_t starts = 0;
    uint64_t stops = 0;

    void OnQpStart(uint32_t, uint64_t) override
    {
        ++starts;
    }

    void OnQpStop(uint32_t) override
    {
        ++stops;
    }

    void OnSend(uint32_t, uint32_t, bool retrans) override
    {
        ++sends;
        retransmissions += retrans;
    }

    void OnAck(uint32_t, uint32_t n, Time) override
    {
        ackedPackets += n;
    }
};

/// Tracks request PSNs in flight at a requester: sent and not yet acknowledged by a response.
struct InFlight
{
    uint32_t highestSentNext = 0;
    uint32_t acked = 0;
    bool started = false;
    int32_t max = 0;

    void Sent(uint32_t, uint8_t op, uint32_t psn, uint32_t, bool)
    {
        if (op > IbOpcode::kRcRdmaWriteOnlyWithImm)
        {
            return;
        }
        if (!started)
        {
            acked = psn;
            started = true;
        }
        highestSentNext = std::max(highestSentNext, psn + 1);
        max = std::max<int32_t>(max, int32_t(highestSentNext - acked));
    }

    void Received(uint32_t, uint8_t op, uint32_t psn, uint32_t)
    {
        if (op == IbOpcode::kRcAcknowledge)
        {
            acked = std::max(acked, psn + 1);
        }
    }
};

Time
WriteTime(RdmaPairTest& t, Side& a, Side& b, uint32_t bytes)
{
    RdmaSendWr w;
    w.wr_id = 1;
    w.opcode = RdmaWrOpcode::RDMA_WRITE;
    w.send_flags = RDMA_SEND_SIGNALED;
    w.sg_list = {a.Sge(0, bytes)};
    w.rdma.remote_addr = kRegionBase;
    w.rdma.rkey = b.mr->GetRkey();
    const Time start = Simulator::Now();
    Time done;
    struct Watch
    {
        Time* done;

        void On(const RdmaWc&, bool recv)
        {
            if (!recv)
            {
                *done = Simulator::Now();
            }
        }
    } watch{&done};
    a.hca.engine->TraceConnectWithoutContext("Completion", MakeCallback(&Watch::On, &watch));
    EXPECT_EQ(a.qp->PostSend(w), 0);
    Simulator::Stop(MilliSeconds(50));
    Simulator::Run();
    EXPECT_EQ(a.PollSend().size(), 1u);
    a.hca.engine->TraceDisconnectWithoutContext("Completion",
                                                MakeCallback(&Watch::On, &watch));
    (void)t;
    return done - start;
}
} // namespace

class RdmaEngineCc : public RdmaPairTest
{
};

TEST_F(RdmaEngineCc, ThePolicyHearsEverySendAndAcknowledgment)
{
    Setup();
    Ptr<CountingCc> cc = CreateObject<CountingCc>();
    a.hca.engine->SetCongestionControl(cc);
    a.Write(0, TestBytes(20000, 1));
    ASSERT_EQ(b.PostRecv(1, 0, 20000), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 20000)})), 0);
    RunFor(MilliSeconds(1));
    ASSERT_EQ(a.PollSend().size(), 1u);
    const uint64_t packets = (20000 + 1023) / 1024;
    EXPECT_EQ(cc->sends, packets);
    EXPECT_EQ(cc->retransmissions, 0u);
    EXPECT_EQ(cc->ackedPackets, packets);
}

TEST_F(RdmaEngineCc, TheRateLimiterHoldsAQpToThePolicysRate)
{
    RdmaHelper limited;
    limited.SetCongestionControl("ns3::RdmaCcFixed");
    limited.SetCongestionControlAttribute("Rate", UintegerValue(10000000000ULL)); // 10 Gb/s
    Setup(QpOptions(), limited);
    const uint32_t bytes = 1 << 20;
    const Time t = WriteTime(*this, a, b, bytes);
    // Transport bytes (headers included) at 10 Gb/s, computed from the packet count.
    const uint32_t packets = bytes / 1024;
    const double wire = double(bytes) + packets * 12.0 + 16.0; // BTH each, RETH once
    const double expected = wire * 8 / 10e9;
    EXPECT_NEAR(t.GetSeconds(), expected, expected * 0.05) << t.GetMicroSeconds() << " us";
}

TEST_F(RdmaEngineCc, WithoutALimitTheSameWriteRunsAtTheLinkRate)
{
    Setup();
    const Time t = WriteTime(*this, a, b, 1 << 20);
    // 4x HDR (200 Gb/s): well under the 10 Gb/s figure of the limited run.
    EXPECT_LT(t.GetSeconds(), (1 << 20) * 8 / 10e9 / 5);
}

TEST_F(RdmaEngineCc, TheWindowBoundsThePacketsInFlight)
{
    for (uint64_t window : {0ULL, 4096ULL})
    {
        RdmaHelper h;
        h.SetEngineAttribute("WindowBytes", UintegerValue(window));
        h.SetEngineAttribute("AckReqEveryPackets", UintegerValue(1)); // ACK every packet
        Setup(QpOptions(), h);
        InFlight f;
        a.hca.engine->TraceConnectWithoutContext("PacketSent", MakeCallback(&InFlight::Sent, &f));
        a.hca.engine->TraceConnectWithoutContext("PacketReceived",
                                                 MakeCallback(&InFlight::Received, &f));
        WriteTime(*this, a, b, 64 * 1024);
        if (window)
        {
            EXPECT_LE(f.max, int32_t(window / 1024)) << "window " << window;
        }
        else
        {
            EXPECT_GT(f.max, 8) << "without a window the requester runs ahead";
        }
        Simulator::Destroy();
    }
}

TEST_F(RdmaEngineCc, RxProcessingDelayAddsToEveryPacketsHandling)
{
    // A 100-byte WRITE is one request and one ACK: each is processed RxProcessingDelay later,
    // so the completion comes 2 x 5 us later than without the delay (within a few ns: the
    // link's flow-control packets fall differently against the shifted traffic).
    Time t[2];
    for (int i = 0; i < 2; ++i)
    {
        RdmaHelper h;
        h.SetEngineAttribute("RxProcessingDelay", TimeValue(MicroSeconds(i * 5)));
        Setup(QpOptions(), h);
        t[i] = WriteTime(*this, a, b, 100);
        Simulator::Destroy();
    }
    EXPECT_NEAR((t[1] - t[0]).GetNanoSeconds(), 10000, 5);
}
