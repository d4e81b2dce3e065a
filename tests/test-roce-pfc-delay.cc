// EthNetDevice PfcResponseDelay: a received PFC frame takes effect only after the receiver's
// response time (802.1Qbb Annex O); frames started within it still go out, none after it.
#include "test-roce-util.h"

#include "ns3/nstime.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>
#include <cmath>
#include <vector>

using namespace ns3;
using namespace cnuas_test;

namespace
{

/// Keeps one priority of a host port full.
struct Filler
{
    Ptr<EthNetDevice> port;
    uint32_t dst = 0;
    int64_t stopPs = 0;
    void Start()
    {
        port->SetTxReadyCallback(MakeCallback(&Filler::Ready, this));
        Fill();
    }
    void Ready(Ptr<EthNetDevice>, uint8_t) { Fill(); }
    void Fill()
    {
        while (Simulator::Now().GetPicoSeconds() < stopPs && port->CanSend(3))
        {
            EthUdpFlow f;
            f.dstIp = dst;
            f.priority = 3;
            f.dscp = 3 << 3;
            port->SendUdp(f, 1000);
        }
    }
};

struct Starts
{
    std::vector<int64_t> ps;
    void Tx(const EthFrame& f)
    {
        if (f.kind == EthFrameKind::Udp)
        {
            ps.push_back(Simulator::Now().GetPicoSeconds());
        }
    }
};

void
InjectPause(Ptr<EthNetDevice> port, uint16_t quanta)
{
    EthFrame f;
    f.kind = EthFrameKind::Pfc;
    f.dstMac = kEthMacControlDst;
    f.srcMac = 0x02AABBCCDDEEULL;
    f.pfc.classEnable = 0x08;
    f.pfc.quanta[3] = quanta;
    f.ComputeSize();
    std::vector<uint8_t> b;
    f.Materialize(b, true);
    port->InjectReceivedBytes(b.data(), b.size());
}

/// Runs a saturated priority-3 sender at 100 Gb/s that gets a 1000-quanta PFC at `atPs`, and
/// returns its frame start times; with `downPs` > 0 the cable goes down then and up 200 ns
/// later.
std::vector<int64_t>
RunWithDelay(Time delay, int64_t atPs, int64_t downPs = 0, uint64_t* pauses = nullptr)
{
    EthFabric fab = MakeEthPair("100Gbps");
    Ptr<EthNetDevice> a = fab.HostPort(0);
    a->SetAttribute("PfcResponseDelay", TimeValue(delay));
    Filler src;
    src.port = a;
    src.dst = fab.HostIp(1);
    src.stopPs = MicroSeconds(100).GetPicoSeconds();
    Starts log;
    a->TraceConnectWithoutContext("Tx", MakeCallback(&Starts::Tx, &log));
    Simulator::Schedule(Time(0), &Filler::Start, &src);
    Simulator::Schedule(PicoSeconds(atPs), &InjectPause, a, uint16_t(1000));
    if (downPs > 0)
    {
        Ptr<EthChannel> cable = a->GetEthChannel();
        Simulator::Schedule(PicoSeconds(downPs), &EthChannel::SetUp, cable, false);
        Simulator::Schedule(PicoSeconds(downPs + 200000), &EthChannel::SetUp, cable, true);
    }
    Simulator::Stop(MicroSeconds(150));
    Simulator::Run();
    if (pauses)
    {
        *pauses = a->GetCounters().pauseReceived[3];
    }
    else
    {
        EXPECT_EQ(a->GetCounters().pauseReceived[3], 1u);
    }
    Simulator::Destroy();
    return log.ps;
}

} // namespace

TEST(RocePfcResponseDelay, FramesWithinTheDelayGoOutNoneAfter)
{
    const int64_t at = NanoSeconds(10000).GetPicoSeconds() + 300;
    const int64_t delay = MicroSeconds(1).GetPicoSeconds();
    // 1000 quanta x 512 bit times at 100 Gb/s, counted from when the pause takes effect.
    const int64_t pausePs = std::llround(1000 * 512.0 / 100e9 * 1e12);
    const std::vector<int64_t> s = RunWithDelay(PicoSeconds(delay), at);
    uint32_t within = 0;
    int64_t firstAfter = -1;
    for (int64_t t : s)
    {
        if (t >= at && t < at + delay)
        {
            within++;
        }
        if (t >= at + delay && firstAfter < 0)
        {
            firstAfter = t;
        }
    }
    // Back-to-back 1046-byte frames at 100 Gb/s start every ~84 ns: about 11 in 1 us.
    EXPECT_GE(within, 10u);
    EXPECT_EQ(firstAfter, at + delay + pausePs);
}

TEST(RocePfcResponseDelay, ZeroKeepsTheImmediateResponse)
{
    const int64_t at = NanoSeconds(10000).GetPicoSeconds() + 300;
    const int64_t pausePs = std::llround(1000 * 512.0 / 100e9 * 1e12);
    const std::vector<int64_t> s = RunWithDelay(Time(0), at);
    int64_t firstAfter = -1;
    for (int64_t t : s)
    {
        if (t >= at)
        {
            firstAfter = t;
            break;
        }
    }
    EXPECT_EQ(firstAfter, at + pausePs);
}

TEST(RocePfcResponseDelay, AFrameReceivedBeforeALinkDownIsForgotten)
{
    // The link goes down 300 ns after the PFC arrives and is back 200 ns later, before the
    // 1 us response delay ends: the pause never takes effect (counted nowhere, no stall).
    const int64_t at = NanoSeconds(10000).GetPicoSeconds() + 300;
    const int64_t delay = MicroSeconds(1).GetPicoSeconds();
    uint64_t pauses = 99;
    const std::vector<int64_t> s =
        RunWithDelay(PicoSeconds(delay), at, at + NanoSeconds(300).GetPicoSeconds(), &pauses);
    EXPECT_EQ(pauses, 0u);
    int64_t firstAfter = -1;
    for (int64_t t : s)
    {
        if (t >= at + delay)
        {
            firstAfter = t;
            break;
        }
    }
    ASSERT_GT(firstAfter, 0);
    EXPECT_LT(firstAfter, at + delay + NanoSeconds(100).GetPicoSeconds()); // back to back
}
