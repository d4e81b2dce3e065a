// The RoCE NIC's transmit scheduling (docs/roce.md §9, "NIC transmit scheduling"): the engine
// picks the next packet per QP as the wire can take it, responses (ACKs, CNPs) first, behind a
// pipeline of RoceRdmaPort TxPipelineFrames frames per traffic class; a priority PFC stops
// holds at most that many and stops no other. Each test that can tell the old model (one
// 64-frame FIFO per class ahead of the wire, shared by every QP and by the responses) runs it
// too and checks that it fails there, so that the bound is known to measure something.
#include "test-roce-rdma-fixture.h"

#include "helpers/formats/roce-hpcc-compat.h"
#include "helpers/roce/roce-ideal-fct.h"
#include "helpers/roce/roce-traffic-run.h"

#include "ns3/double.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace ns3;
using namespace cnuas_test;

namespace
{
/// The old model's depth: EthNetDevice TxQueueFrames' default, which was the NIC's FIFO.
constexpr uint32_t kOldFifoFrames = 64;
/// A full data frame on the wire at 100 Gb/s: 1024 payload + BTH 12 + ICRC 4 + UDP 8 + IPv4 20
/// + Ethernet 14 + FCS 4 + preamble 8 + gap 12 = 1106 bytes.
const double kFrameNs = 1106 * 8 / 100.0;

/// Three hosts on one switch at 100 Gb/s with 1 us cables (200 m), the HPCC fat-tree's links.
RoceRunSpec
Star3(uint32_t pipelineFrames, const std::string& cc)
{
    RoceRunSpec spec;
    spec.topology = MakeStar(3);
    for (TopoLink& l : spec.topology.links)
    {
        l.lengthMeters = 200;
    }
    spec.hostRate = DataRate("100Gbps");
    spec.fabricRate = spec.hostRate;
    spec.cc = cc;
    spec.configureNics = [pipelineFrames](RoceHelper& h) {
        h.SetPortAttribute("TxPipelineFrames", UintegerValue(pipelineFrames));
    };
    return spec;
}

/// The transport header fields a test reads from a RoCE frame.
struct Bth
{
    uint8_t opcode = 0;
    uint32_t psn = 0;
};

bool
ReadBth(const EthFrame& f, Bth& b)
{
    if (f.kind != EthFrameKind::Udp || f.dstPort != kRoceV2UdpPort || f.payloadBytes < 12)
    {
        return false;
    }
    uint8_t h[12] = {};
    f.CopyPayload(h, 12);
    b.opcode = h[0];
    b.psn = (uint32_t(h[9]) << 16) | (uint32_t(h[10]) << 8) | h[11];
    return true;
}

constexpr uint8_t kAckOpcode = 0x11; ///< RC Acknowledge
constexpr uint8_t kCnpOpcode = 0x81; ///< RoCEv2 CNP

/// Largest time a response of host 1 waited for the wire, ns.
struct ResponseDelays
{
    double maxAckNs = 0;
    double maxCnpNs = 0;
    uint32_t acks = 0;
    uint32_t cnps = 0;
};

/**
 * Host 1 receives two long flows (hosts 0 and 2, so its downlink is congested and marks) and
 * sends two long flows of its own (so its port always has data to send). For every ACK
 * it puts on the wire: the time since the data packet it acknowledges arrived; for every CNP:
 * the time since the CE-marked packet that asked for it (DCQCN firmware preset with a CNP per
 * marked packet, so the k-th CNP to a host answers its k-th marked packet).
 */
ResponseDelays
MeasureResponseDelays(uint32_t pipelineFrames)
{
    RoceRunSpec spec = Star3(pipelineFrames, "ns3::RdmaCcDcqcnMlx");
    spec.kminBytes = 20000;
    spec.kmaxBytes = 200000;
    spec.pmax = 0.2;
    auto nics = spec.configureNics;
    spec.configureNics = [nics](RoceHelper& h) {
        nics(h);
        h.SetCongestionControlAttribute("CnpInterval", TimeValue(Time(0)));
    };
    // Host 1's own two flows want twice its link: its port always has data waiting.
    spec.flows = {{0, 1, 8000000, Time(0)},
                  {2, 1, 8000000, Time(0)},
                  {1, 0, 8000000, Time(0)},
                  {1, 2, 8000000, Time(0)}};
    spec.limit = MicroSeconds(300);
    auto st = std::make_shared<ResponseDelays>();
    auto arrived = std::make_shared<std::map<std::pair<uint32_t, uint32_t>, double>>();
    auto marked = std::make_shared<std::map<uint32_t, std::vector<double>>>();
    auto cnpsTo = std::make_shared<std::map<uint32_t, size_t>>();
    spec.beforeRun = [st, arrived, marked, cnpsTo](const EthFabric& f,
                                                   const std::vector<RoceHca>&) {
        Ptr<EthNetDevice> port = f.HostPort(1);
        port->TraceConnectWithoutContext(
            "Rx", MakeCallback(+[](decltype(arrived) a, decltype(marked) m, const EthFrame& fr) {
                Bth b;
                if (ReadBth(fr, b) && b.opcode != kAckOpcode && b.opcode != kCnpOpcode)
                {
                    const double now = Simulator::Now().GetNanoSeconds();
                    (*a)[{fr.srcIp, b.psn}] = now;
                    if (fr.ecn == kEcnCe)
                    {
                        (*m)[fr.srcIp].push_back(now);
                    }
                }
            }).Bind(arrived, marked));
        port->TraceConnectWithoutContext(
            "Tx",
            MakeCallback(+[](decltype(st) s, decltype(arrived) a, decltype(marked) m,
                             decltype(cnpsTo) c, const EthFrame& fr) {
                Bth b;
                if (!ReadBth(fr, b))
                {
                    return;
                }
                const double now = Simulator::Now().GetNanoSeconds();
                if (b.opcode == kAckOpcode)
                {
                    auto it = a->find({fr.dstIp, b.psn});
                    ASSERT_NE(it, a->end()) << "an ACK for a packet that never arrived";
                    s->maxAckNs = std::max(s->maxAckNs, now - it->second);
                    s->acks++;
                }
                else if (b.opcode == kCnpOpcode)
                {
                    const size_t k = (*c)[fr.dstIp]++;
                    ASSERT_LT(k, (*m)[fr.dstIp].size()) << "a CNP without a marked packet";
                    s->maxCnpNs = std::max(s->maxCnpNs, now - (*m)[fr.dstIp][k]);
                    s->cnps++;
                }
            }).Bind(st, arrived, marked, cnpsTo));
    };
    RunRoceFlows(spec);
    return *st;
}
} // namespace

TEST(RoceNicScheduling, TwoQpsFromOneHostShareItsLinkEqually)
{
    // Host 0 writes to hosts 1 and 2 at once, no congestion control: its link is the only
    // bottleneck, and the scheduler's round robin gives each QP half of it.
    RoceRunSpec spec = Star3(2, "ns3::RdmaCcNone");
    spec.flows = {{0, 1, 4000000, Time(0)}, {0, 2, 4000000, Time(0)}};
    spec.sampleInterval = MicroSeconds(20);
    spec.limit = MicroSeconds(300);
    const RoceRunResult r = RunRoceFlows(spec);
    ASSERT_EQ(r.flowRateGbps.size(), 2u);
    double a = 0;
    double b = 0;
    uint32_t n = 0;
    // The samples after the first 20 us (both started) up to the end of the window.
    for (size_t i = 1; i < r.sampleTimesUs.size(); ++i)
    {
        a += r.flowRateGbps[0][i];
        b += r.flowRateGbps[1][i];
        n++;
    }
    ASSERT_GT(n, 5u);
    a /= n;
    b /= n;
    EXPECT_LT(std::abs(a - b), 0.02 * (a + b)) << a << " vs " << b << " Gb/s";
    // Together they fill the link (transport bytes of 1040 per 1106 on the wire).
    EXPECT_GT(a + b, 0.97 * 100 * 1040 / 1106) << a << " + " << b << " Gb/s";
}

TEST(RoceNicScheduling, ShortFlowBehindALongOneFromTheSameHostFinishesNearItsIdeal)
{
    // A long flow 0 -> 1 keeps host 0's link busy; 20 us later a short flow 0 -> 2 starts on
    // an otherwise idle path. It shares host 0's link with the long one from its first packet
    // on: its FCT is its ideal plus its own serialization once more (half the link), plus the
    // few frames the pipeline had queued. The old 64-frame FIFO made it wait behind 64 frames
    // of the long flow first (5.7 us at 100 Gb/s).
    const uint64_t shortBytes = 8192;
    auto run = [shortBytes](uint32_t pipeline) {
        RoceRunSpec spec = Star3(pipeline, "ns3::RdmaCcNone");
        spec.flows = {{0, 1, 20000000, Time(0)}, {0, 2, shortBytes, MicroSeconds(20)}};
        spec.limit = MicroSeconds(200);
        const RoceRunResult r = RunRoceFlows(spec);
        EXPECT_TRUE(r.flows.at(1).ok);
        return r.flows.at(1).fct.GetNanoSeconds() * 1.0;
    };
    // The model's ideal (the roce-hpcc CSV's): alone on a 2-link path of 1 us cables.
    const RoceIdealLink link{100000000000ULL, 1000000};
    const double ideal =
        RoceIdealFctPs(shortBytes, RoceIdealRoute::Symmetric({link, link}), {1024, 1}) * 1e-3;
    const double serialization = shortBytes * (1106.0 / 1024) * 8 / 100.0;
    const double bound = ideal + serialization + 3 * kFrameNs;
    const double fct = run(2);
    EXPECT_LT(fct, bound) << "ideal " << ideal << " ns";
    EXPECT_GT(fct, ideal * 0.95);
    // The same run with the old FIFO depth misses the bound by the 64 frames it waited behind.
    EXPECT_GT(run(kOldFifoFrames), bound + 40 * kFrameNs);
}

TEST(RoceNicScheduling, AcksAndCnpsLeaveAheadOfTheHostsOwnData)
{
    // With a pipeline of 2 a response waits for at most the frame on the wire and the two
    // queued: 3 frame times (+1 ns of rounding).
    const ResponseDelays d = MeasureResponseDelays(2);
    EXPECT_GT(d.acks, 200u);
    EXPECT_GT(d.cnps, 10u) << "the incast at host 1 should have marked packets";
    EXPECT_LE(d.maxAckNs, 3 * kFrameNs + 1);
    EXPECT_LE(d.maxCnpNs, 3 * kFrameNs + 1);
    // Behind the old FIFO both waited for up to 64 frames of host 1's own data.
    const ResponseDelays old = MeasureResponseDelays(kOldFifoFrames);
    EXPECT_GT(old.maxAckNs, 40 * kFrameNs);
    EXPECT_GT(old.maxCnpNs, 40 * kFrameNs);
}

class RoceNicPfc : public RocePairTest
{
};

TEST_F(RoceNicPfc, APausedPriorityHoldsAtMostThePipelineAndStopsNoOtherPriority)
{
    // Host 0 has one QP on priority 3 (to host 1) and one on priority 1 (to host 2, address
    // vector SL 1). The switch pauses priority 3 towards host 0; both QPs then post a 256 KB
    // WRITE. The priority-1 QP finishes while the pause lasts; the priority-3 QP has at most
    // TxPipelineFrames frames in host 0's class-3 queue (802.1Qbb §36.1.3: a paused priority
    // stops only itself), and finishes after the pause ends.
    Build(MakeStar(3));
    QpOptions o;
    RoceSide a3;
    RoceSide b3;
    Pair(a3, 0, b3, 1, o);
    RoceSide a1;
    RoceSide b1;
    a1.pd = a3.pd; // the same host: its PD, memory region and CQs
    a1.mr = a3.mr;
    a1.sendCq = a3.sendCq;
    a1.recvCq = a3.recvCq;
    MakeSide(a1, 0, o);
    MakeSide(b1, 2, o);
    RdmaAhAttr toHost2 = RdmaGidAddress(GidOf(2), 64);
    toHost2.sl = 1;
    RdmaAhAttr toHost0 = RdmaGidAddress(GidOf(0), 64);
    toHost0.sl = 1;
    ASSERT_EQ(TryConnectQp(a1.qp, toHost2, b1.qp->GetQpNum(), QpConnectOptions(o, o.sqPsn)), "");
    ASSERT_EQ(TryConnectQp(b1.qp, toHost0, a1.qp->GetQpNum(), QpConnectOptions(o, o.sqPsn)), "");

    // The pause comes as the switch would send it (a PFC frame, 802.1Qbb §36.1.3, with the
    // largest quanta: 839 us at 40 Gb/s), but from the test: the switch's own MMU would resume
    // as soon as it saw its buffer empty.
    Ptr<EthNetDevice> host0 = fabric.HostPort(0);
    auto pfc = [&host0](uint16_t quanta) {
        EthFrame f;
        f.kind = EthFrameKind::Pfc;
        f.dstMac = kEthMacControlDst;
        f.srcMac = host0->GetPeer()->GetMac();
        f.pfc.classEnable = 1u << 3;
        f.pfc.quanta[3] = quanta;
        f.ComputeSize();
        std::vector<uint8_t> bytes;
        f.Materialize(bytes, true);
        host0->InjectReceivedBytes(bytes.data(), static_cast<uint32_t>(bytes.size()));
    };
    pfc(0xFFFF);
    const uint32_t bytes = 256 * 1024;
    a3.Write(0, TestBytes(bytes, 7));
    auto post = [&](RoceSide& s, RoceSide& peer, uint64_t id) {
        RdmaSendWr w = Wr(id, RdmaWrOpcode::RDMA_WRITE, {s.Sge(0, bytes)});
        w.rdma.remote_addr = kRegionBase + 1000000;
        w.rdma.rkey = peer.mr->GetRkey();
        ASSERT_EQ(s.qp->PostSend(w), 0);
    };
    uint32_t maxClass3 = 0;
    std::function<void()> watch = [&]() {
        maxClass3 = std::max(maxClass3, host0->GetQueuedFrames(3));
        Simulator::Schedule(NanoSeconds(50), watch);
    };
    Simulator::Schedule(MicroSeconds(5), [&]() {
        post(a3, b3, 3);
        post(a1, b1, 1);
        watch();
    });
    RunFor(MicroSeconds(300));
    auto done = a3.sendCq->Poll(10); // a1 shares the CQ
    ASSERT_EQ(done.size(), 1u) << "the priority-1 WRITE should finish during the pause";
    EXPECT_EQ(done[0].wr_id, 1u);
    EXPECT_EQ(done[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_TRUE(host0->IsPaused(3));
    EXPECT_GE(maxClass3, 1u);
    UintegerValue pipeline;
    hcas[0].port->GetAttribute("TxPipelineFrames", pipeline);
    EXPECT_LE(maxClass3, pipeline.Get());

    pfc(0); // resume
    RunFor(MicroSeconds(600));
    done = a3.sendCq->Poll(10);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, 3u);
    EXPECT_EQ(done[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b3.Read(1000000, bytes), TestBytes(bytes, 7));
    EXPECT_EQ(b1.Read(1000000, bytes), TestBytes(bytes, 7));
}

class RoceNicInjectedBurst : public RocePairTest, public ::testing::WithParamInterface<std::string>
{
};

TEST_P(RoceNicInjectedBurst, AllFramesOfOneEventAreSeenBeforeThePumpRuns)
{
    // A bridge from a real host hands the fabric every frame it read in one event
    // (InjectReceivedBytes, one after another). The NIC's next transmit decision must see them
    // all, as the event that ScheduleNow makes of it would: here a duplicate WRITE, which asks
    // for an ACK (IBA vol. 1 §9.7.5.1.1), and then a PFC pause of every priority (802.1Qbb
    // §36.1.3), so the ACK waits for the resume. Under FifoHeapScheduler the pump may run at
    // the end of an event instead of in its own (EventTail); only the event handlers of the
    // port open that scope, so a pump asked for inside InjectReceivedBytes still runs after the
    // caller's later frames. A scope opened inside the injection would send the ACK at once.
    Simulator::SetScheduler(ObjectFactory(GetParam()));
    Build(MakeStar(2));
    QpOptions o;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 1, o);
    Ptr<EthNetDevice> host1 = fabric.HostPort(1);

    struct Seen
    {
        std::vector<uint8_t> firstWrite; ///< the first WRITE host 1 received, as on the wire
        std::vector<double> ackNs;       ///< when host 1 sent each ACK
    };
    auto seen = std::make_shared<Seen>();
    host1->TraceConnectWithoutContext(
        "Rx", MakeCallback(+[](std::shared_ptr<Seen> s, const EthFrame& f) {
                  Bth bth;
                  if (s->firstWrite.empty() && ReadBth(f, bth) && bth.opcode != kAckOpcode)
                  {
                      f.Materialize(s->firstWrite, true);
                  }
              }).Bind(seen));
    host1->TraceConnectWithoutContext(
        "Tx", MakeCallback(+[](std::shared_ptr<Seen> s, const EthFrame& f) {
                  Bth bth;
                  if (ReadBth(f, bth) && bth.opcode == kAckOpcode)
                  {
                      s->ackNs.push_back(Simulator::Now().GetNanoSeconds());
                  }
              }).Bind(seen));

    // One WRITE of a single packet, acknowledged and completed.
    a.Write(0, TestBytes(512, 3));
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 512)});
    w.rdma.remote_addr = kRegionBase + 4096;
    w.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MicroSeconds(20));
    ASSERT_EQ(a.sendCq->Poll(4).size(), 1u);
    ASSERT_FALSE(seen->firstWrite.empty());
    ASSERT_EQ(seen->ackNs.size(), 1u);

    auto pfc = [&host1](uint16_t quanta) {
        EthFrame f;
        f.kind = EthFrameKind::Pfc;
        f.dstMac = kEthMacControlDst;
        f.srcMac = host1->GetPeer()->GetMac();
        f.pfc.classEnable = 0xFF;
        for (uint16_t& q : f.pfc.quanta)
        {
            q = quanta;
        }
        f.ComputeSize();
        std::vector<uint8_t> bytes;
        f.Materialize(bytes, true);
        host1->InjectReceivedBytes(bytes.data(), static_cast<uint32_t>(bytes.size()));
    };
    // The burst: the WRITE again (its PSN is behind the expected one), then the pause.
    const double burstNs = Simulator::Now().GetNanoSeconds() + 1000;
    Simulator::Schedule(NanoSeconds(1000), [&]() {
        host1->InjectReceivedBytes(seen->firstWrite.data(),
                                   static_cast<uint32_t>(seen->firstWrite.size()));
        pfc(0xFFFF);
    });
    RunFor(MicroSeconds(50));
    EXPECT_TRUE(host1->IsPaused(3));
    EXPECT_EQ(seen->ackNs.size(), 1u) << "the duplicate's ACK left at "
                                      << (seen->ackNs.empty() ? 0 : seen->ackNs.back() - burstNs)
                                      << " ns after the burst, ahead of the pause in it";
    const double resumeNs = Simulator::Now().GetNanoSeconds();
    pfc(0);
    RunFor(MicroSeconds(20));
    ASSERT_EQ(seen->ackNs.size(), 2u) << "the duplicate WRITE is acknowledged after the resume";
    EXPECT_GE(seen->ackNs[1], resumeNs);
    EXPECT_EQ(b.Read(4096, 512), TestBytes(512, 3));
}

INSTANTIATE_TEST_SUITE_P(Schedulers,
                         RoceNicInjectedBurst,
                         ::testing::Values("ns3::MapScheduler", "ns3::FifoHeapScheduler"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                             return i.param.substr(5); // without "ns3::"
                         });
