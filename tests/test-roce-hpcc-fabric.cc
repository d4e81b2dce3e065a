// HPCC on the Ethernet fabric: switches push INT hop records into the frames of INT flows (and
// charge their bytes on the wire, without putting them in captures), receivers echo the stack
// in their ACKs, and the sender's policy steers by it: flows sharing a bottleneck converge with
// the queue near zero, far below DCQCN's, and an incast pauses far less.
#include "ib-test-packets.h"
#include "test-roce-util.h"

#include "helpers/roce/roce-traffic-run.h"
#include "helpers/trace/eth-pcap-writer.h"
#include "models/rdma/rdma-cc-hpcc.h"
#include "models/roce/eth-switch.h"

#include "ns3/nstime.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace ns3;
using namespace cnuas_test;

namespace
{
/// `senders` hosts (1..senders) each writing `bytes` into host 0 through one 100G switch.
RoceRunSpec
StarRun(const std::string& cc, uint32_t senders, uint64_t bytes, Time stagger = Time(0))
{
    RoceRunSpec spec;
    spec.topology = MakeStar(senders + 1);
    for (auto& l : spec.topology.links)
    {
        l.lengthMeters = 200; // 1 us, the links of the HPCC paper's fat-tree
    }
    spec.hostRate = DataRate("100Gbps");
    spec.fabricRate = spec.hostRate;
    spec.cc = cc;
    for (uint32_t i = 0; i < senders; ++i)
    {
        spec.flows.push_back({i + 1, 0, bytes, stagger * i});
    }
    spec.limit = MilliSeconds(20);
    spec.sampleInterval = MicroSeconds(5);
    if (cc == "ns3::RdmaCcHpcc")
    {
        // T is the path's base RTT (HPCC paper §3.3): 4 cables of 1 us, a 1148-byte data
        // frame serialized twice at 100 Gb/s (2 x 92 ns) and the ACK twice (2 x 10 ns).
        spec.configureNics = [](RoceHelper& h) {
            h.SetCongestionControlAttribute("BaseRtt", TimeValue(NanoSeconds(4204)));
        };
    }
    return spec;
}

double
Median(std::vector<uint64_t> v)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return static_cast<double>(v[v.size() / 2]);
}

/// The sampled largest switch queue from `fromUs` until the first flow ends.
std::vector<uint64_t>
QueueSamples(const RoceRunResult& r, double fromUs)
{
    double firstEnd = 1e18;
    for (const auto& f : r.flows)
    {
        if (f.fct.IsPositive())
        {
            firstEnd = std::min(firstEnd, (f.spec.start + f.fct).GetSeconds() * 1e6);
        }
    }
    std::vector<uint64_t> q;
    for (size_t i = 0; i < r.sampleTimesUs.size(); ++i)
    {
        if (r.sampleTimesUs[i] > fromUs && r.sampleTimesUs[i] < firstEnd)
        {
            q.push_back(r.maxQueueBytes[i]);
        }
    }
    return q;
}

double
Mean(const std::vector<uint64_t>& v)
{
    return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

struct HopLog
{
    std::vector<IntHop> hops;
};

void
LogHop(HopLog* log, uint16_t, const IntHop& h)
{
    log->hops.push_back(h);
}

void
CountFrame(uint64_t* n, uint64_t* intBytes, const EthFrame& f)
{
    if (f.kind == EthFrameKind::Udp && f.intRec)
    {
        (*n)++;
        *intBytes = f.intBytes;
    }
}
} // namespace

TEST(RoceHpccFabric, IntBytesAreChargedOnTheWireButNotCaptured)
{
    EthFabric fab = MakeEthPair("100Gbps");
    Ptr<EthNetDevice> a = fab.HostPort(0);
    Ptr<EthNetDevice> b = fab.HostPort(1);
    std::vector<uint32_t> sizes;
    std::vector<int64_t> arrivals;
    std::vector<size_t> captured;
    b->SetEthReceiveCallback(MakeBoundCallback(
        +[](std::vector<uint32_t>* s, std::vector<int64_t>* t, std::vector<size_t>* c,
            Ptr<EthNetDevice>, const EthFrame& f) {
            s->push_back(f.bytes);
            t->push_back(Simulator::Now().GetPicoSeconds());
            std::vector<uint8_t> bytes;
            f.Materialize(bytes, true);
            c->push_back(bytes.size());
        },
        &sizes, &arrivals, &captured));
    EthUdpFlow plain;
    plain.dstIp = b->GetIpv4();
    plain.ecn = kEcnEct0;
    EthUdpFlow withInt = plain;
    withInt.intMaxHops = 5;
    Simulator::Schedule(NanoSeconds(0), [&]() { a->SendUdp(plain, 1000, nullptr); });
    Simulator::Schedule(MicroSeconds(1), [&]() { a->SendUdp(withInt, 1000, nullptr); });
    Simulator::Run();
    Simulator::Destroy();
    ASSERT_EQ(sizes.size(), 2u);
    // HPCC simulator's IntHeader: 5 hop words of 8 bytes and a 2-byte count.
    EXPECT_EQ(sizes[1], sizes[0] + 42);
    // Both frames sit the same 1 us apart on arrival, plus the extra 42 bytes' wire time at
    // 100 Gb/s (3.36 ns).
    EXPECT_EQ(arrivals[1] - arrivals[0], 1000000 + 3360);
    // The capture shows the frame without the INT bytes.
    EXPECT_EQ(captured[0], sizes[0]);
    EXPECT_EQ(captured[1], sizes[0]);
}

TEST(RoceHpccFabric, SwitchesPushOneHopPerEgressAndAcksEchoIt)
{
    RoceRunSpec spec = StarRun("ns3::RdmaCcHpcc", 1, 200000);
    HopLog log;
    uint64_t ackWithInt = 0;
    uint64_t ackIntBytes = 0;
    uint64_t dataWithInt = 0;
    uint64_t dataIntBytes = 0;
    uint64_t utilSamples = 0;
    std::vector<RoceHca> keep;
    Ptr<EthSwitch> sw;
    spec.beforeRun = [&](const EthFabric& f, const std::vector<RoceHca>& hcas) {
        sw = f.Switches().at(0);
        sw->TraceConnectWithoutContext("IntHop", MakeBoundCallback(&LogHop, &log));
        // ACKs arrive at the sender (host 1), data at the receiver (host 0).
        f.HostPort(1)->TraceConnectWithoutContext(
            "Rx", MakeBoundCallback(&CountFrame, &ackWithInt, &ackIntBytes));
        f.HostPort(0)->TraceConnectWithoutContext(
            "Rx", MakeBoundCallback(&CountFrame, &dataWithInt, &dataIntBytes));
        hcas[1].cc->TraceConnectWithoutContext(
            "Utilization",
            MakeBoundCallback(+[](uint64_t* n, uint32_t, double) { (*n)++; }, &utilSamples));
        keep = hcas;
    };
    const RoceRunResult r = RunRoceFlows(spec);
    ASSERT_TRUE(r.allDone);
    const uint64_t dataSent = keep[1].port->GetPacketsSent();
    // Every data packet crossed one switch egress and got exactly one hop; ACKs got none.
    EXPECT_EQ(dataWithInt, dataSent);
    EXPECT_EQ(log.hops.size(), dataSent);
    EXPECT_EQ(sw->GetIntHopsPushed(), dataSent);
    EXPECT_EQ(sw->GetIntOverflows(), 0u);
    // One ACK per data packet (ackEveryPackets 1), each carrying the echo, charged at the
    // sender's 5 slots.
    EXPECT_EQ(ackWithInt, dataSent);
    EXPECT_EQ(ackIntBytes, 42u);
    EXPECT_EQ(dataIntBytes, 42u);
    EXPECT_GT(utilSamples, dataSent / 2);
    // The records: the egress port's rate, time and transmitted bytes moving forward.
    for (size_t i = 0; i < log.hops.size(); ++i)
    {
        EXPECT_EQ(log.hops[i].lineRateBps, 100000000000ULL);
        if (i > 0)
        {
            EXPECT_GT(log.hops[i].timePs, log.hops[i - 1].timePs);
            // At least the previous data frame went out in between (with preamble and gap).
            EXPECT_GE(log.hops[i].txBytes, log.hops[i - 1].txBytes + 1024 + 20);
        }
    }
    keep.clear();
    Simulator::Destroy();
}

/// Checks each INT hop a switch pushes against its egress port's per-priority counters.
struct HopAudit
{
    Ptr<EthSwitch> sw;
    std::vector<IntHop> pending; ///< pushed, frame not yet seen on the port's Tx trace
    uint64_t hops = 0;
    uint64_t queuedHops = 0; ///< hops that saw a queue behind the frame
    uint64_t mismatches = 0;
};

uint64_t
WireBytesSentOverPriorities(const EthNetDevice& port)
{
    const EthPortCounters& c = port.GetCounters();
    uint64_t sum = 0;
    for (uint8_t p = 0; p < kEthPriorities; ++p)
    {
        sum += c.txBytes[p] + c.txFrames[p] * kEthWireOverheadBytes;
    }
    return sum;
}

void
AuditHop(HopAudit* a, uint16_t portNumber, const IntHop& h)
{
    Ptr<EthNetDevice> port = a->sw->GetPort(portNumber);
    uint64_t queued = 0;
    for (uint8_t p = 0; p < kEthPriorities; ++p)
    {
        queued += port->GetQueueBytes(p);
    }
    a->mismatches += h.qlenBytes != queued;
    a->mismatches += h.lineRateBps != port->GetDataRate().GetBitRate();
    a->queuedHops += h.qlenBytes > 0;
    a->pending.push_back(h);
    a->hops++;
}

void
AuditTx(HopAudit* a, EthNetDevice* port, const EthFrame& f)
{
    // The port's Tx trace follows the push for the same frame: the hop's txBytes are the wire
    // bytes sent before this frame, over every priority.
    if (f.kind != EthFrameKind::Udp || !f.intPush || a->pending.empty())
    {
        return;
    }
    const IntHop h = a->pending.back();
    a->pending.pop_back();
    a->mismatches += h.txBytes + f.bytes + kEthWireOverheadBytes != WireBytesSentOverPriorities(*port);
}

TEST(RoceHpccFabric, IntHopsRecordThePortsTotalsOverAllPriorities)
{
    // Four senders into one receiver, so that the switch's port to it queues: every hop's
    // queue bytes, bytes sent and rate must be the sums over the port's priorities at the
    // moment the frame leaves (EthSwitch::PushIntHop reads running totals of them).
    RoceRunSpec spec = StarRun("ns3::RdmaCcHpcc", 4, 100000);
    HopAudit audit;
    spec.beforeRun = [&](const EthFabric& f, const std::vector<RoceHca>&) {
        audit.sw = f.Switches().at(0);
        audit.sw->TraceConnectWithoutContext("IntHop", MakeBoundCallback(&AuditHop, &audit));
        for (uint16_t n = 1; n <= audit.sw->GetNPorts(); ++n)
        {
            // A raw pointer: a Ptr bound into the port's own trace would keep the port alive.
            Ptr<EthNetDevice> port = audit.sw->GetPort(n);
            port->TraceConnectWithoutContext("Tx",
                                             MakeBoundCallback(&AuditTx, &audit, PeekPointer(port)));
        }
    };
    const RoceRunResult r = RunRoceFlows(spec);
    ASSERT_TRUE(r.allDone);
    EXPECT_GT(audit.hops, 200u);
    EXPECT_GT(audit.queuedHops, 10u);
    EXPECT_TRUE(audit.pending.empty());
    EXPECT_EQ(audit.mismatches, 0u);
    audit.sw = nullptr;
    Simulator::Destroy();
}

TEST(RoceHpccFabric, PcapOfAnIntRunDecodesWithNothingMalformed)
{
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/roce-hpcc-fabric";
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    RoceRunSpec spec = StarRun("ns3::RdmaCcHpcc", 2, 20000);
    Ptr<PcapFileWrapper> p0;
    Ptr<PcapFileWrapper> p1;
    spec.beforeRun = [&](const EthFabric& f, const std::vector<RoceHca>&) {
        p0 = EthPcapHelper::Enable(f.HostPort(0), dir + "/h0.pcap");
        p1 = EthPcapHelper::Enable(f.HostPort(1), dir + "/h1.pcap");
    };
    const RoceRunResult r = RunRoceFlows(spec);
    ASSERT_TRUE(r.allDone);
    p0 = nullptr;
    p1 = nullptr;
    for (const char* h : {"h0", "h1"})
    {
        const std::string path = dir + "/" + h + ".pcap";
        int status = -1;
        const auto bad = TsharkFieldRows(
            path, {"frame.number"}, "-Y '_ws.malformed || _ws.expert.severity >= error'",
            &status);
        EXPECT_EQ(status, 0) << path;
        EXPECT_TRUE(bad.empty()) << path << ": " << bad.size() << " bad frames";
        const auto ib = TsharkFieldRows(path, {"infiniband.bth.opcode"}, "-Y infiniband",
                                        &status);
        EXPECT_GT(ib.size(), 20u) << path; // data one way, ACKs the other: all decode as BTH
    }
}

TEST(RoceHpccFabric, TwoFlowsConvergeWithTheQueueNearZeroFarBelowDcqcn)
{
    const uint64_t bytes = 4000000;
    const Time stagger = MicroSeconds(50);
    const RoceRunResult h = RunRoceFlows(StarRun("ns3::RdmaCcHpcc", 2, bytes, stagger));
    const RoceRunResult d = RunRoceFlows(StarRun("ns3::RdmaCcDcqcnPaper", 2, bytes, stagger));
    ASSERT_TRUE(h.allDone);
    ASSERT_TRUE(d.allDone);
    EXPECT_EQ(h.drops, 0u);
    // Shares while both run, after a settling time of 100 us from the second start.
    std::vector<double> share(2, 0);
    const double from = 150;
    double until = 1e18;
    for (const auto& f : h.flows)
    {
        until = std::min(until, (f.spec.start + f.fct).GetSeconds() * 1e6);
    }
    ASSERT_GT(until, from + 100);
    double n = 0;
    for (size_t i = 0; i < h.sampleTimesUs.size(); ++i)
    {
        if (h.sampleTimesUs[i] > from && h.sampleTimesUs[i] < until)
        {
            share[0] += h.flowRateGbps[0][i];
            share[1] += h.flowRateGbps[1][i];
            n += 1;
        }
    }
    EXPECT_GT(JainIndex(share), 0.98) << share[0] / n << " vs " << share[1] / n;
    // Together they use the link: HPCC steers the wire to eta = 95 %; of that the payload
    // is 1024 of every 1148 bytes (about 85 Gb/s).
    EXPECT_GT((share[0] + share[1]) / n, 75.0);
    // Near zero once settled: the median sampled queue is under 4 frames.
    EXPECT_LT(Median(QueueSamples(h, from)), 4600);
    // And far below DCQCN's in the same setup, over the whole time both flows run (DCQCN
    // builds hundreds of KB before its cuts take hold), at its peak too.
    const double hq = Mean(QueueSamples(h, stagger.GetMicroSeconds()));
    const double dq = Mean(QueueSamples(d, stagger.GetMicroSeconds()));
    EXPECT_LT(hq * 5, dq) << "mean queue HPCC " << hq << " DCQCN " << dq;
    EXPECT_LT(h.peakQueueBytes * 5, d.peakQueueBytes)
        << "peak HPCC " << h.peakQueueBytes << " DCQCN " << d.peakQueueBytes;
    RecordProperty("hpcc_mean_queue", std::to_string(hq));
    RecordProperty("dcqcn_mean_queue", std::to_string(dq));
}

TEST(RoceHpccFabric, IncastKeepsQueueAndPausesWellBelowDcqcn)
{
    const uint32_t senders = 8;
    const uint64_t bytes = 1000000;
    // A 2 MB shared buffer, so that a standing queue of a few hundred KB reaches the
    // ingress pause thresholds.
    RoceRunSpec hs = StarRun("ns3::RdmaCcHpcc", senders, bytes);
    RoceRunSpec ds = StarRun("ns3::RdmaCcDcqcnPaper", senders, bytes);
    hs.bufferBytes = ds.bufferBytes = 2 * 1024 * 1024;
    const RoceRunResult h = RunRoceFlows(hs);
    const RoceRunResult d = RunRoceFlows(ds);
    ASSERT_TRUE(h.allDone);
    ASSERT_TRUE(d.allDone);
    EXPECT_EQ(h.drops, 0u);
    // All eight start at line rate: the first round trip's burst is the same for both; HPCC
    // drains it within a few round trips and then holds the queue near zero.
    const double hq = Mean(QueueSamples(h, 0));
    const double dq = Mean(QueueSamples(d, 0));
    EXPECT_LT(hq * 4, dq) << "mean queue HPCC " << hq << " DCQCN " << dq;
    EXPECT_LT(Median(QueueSamples(h, 100)), 4600);
    EXPECT_GT(d.pauseFrames, 0u);
    EXPECT_LE(h.pauseFrames * 2, d.pauseFrames) << h.pauseFrames << " vs " << d.pauseFrames;
    EXPECT_EQ(d.drops, 0u);
    RecordProperty("hpcc_peak", std::to_string(h.peakQueueBytes));
    RecordProperty("dcqcn_peak", std::to_string(d.peakQueueBytes));
    RecordProperty("hpcc_pauses", std::to_string(h.pauseFrames));
    RecordProperty("dcqcn_pauses", std::to_string(d.pauseFrames));
}

TEST(RoceHpccFabric, EchoSurvivesAReceiveProcessingDelay)
{
    // With RxProcessingDelay the engine handles a packet after the port's receive call has
    // returned: the stack must be copied, not referenced.
    RoceRunSpec spec = StarRun("ns3::RdmaCcHpcc", 1, 100000);
    auto base = spec.configureNics;
    spec.configureNics = [base](RoceHelper& h) {
        base(h);
        h.SetEngineAttribute("RxProcessingDelay", TimeValue(NanoSeconds(300)));
    };
    uint64_t acks = 0;
    uint64_t ackBytes = 0;
    uint64_t updates = 0;
    std::vector<RoceHca> keep;
    spec.beforeRun = [&](const EthFabric& f, const std::vector<RoceHca>& hcas) {
        f.HostPort(1)->TraceConnectWithoutContext("Rx",
                                                  MakeBoundCallback(&CountFrame, &acks, &ackBytes));
        hcas[1].cc->TraceConnectWithoutContext(
            "Utilization",
            MakeBoundCallback(+[](uint64_t* n, uint32_t, double) { (*n)++; }, &updates));
        keep = hcas;
    };
    const RoceRunResult r = RunRoceFlows(spec);
    ASSERT_TRUE(r.allDone);
    const uint64_t dataSent = keep[1].port->GetPacketsSent();
    EXPECT_EQ(acks, dataSent);
    // Every echo after the first is differenced against its predecessor: one update each.
    EXPECT_EQ(updates, dataSent - 1);
    keep.clear();
}
