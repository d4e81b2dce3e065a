// Ethernet fabric behaviour: PFC keeps an incast lossless, drops without it are counted, a NIC
// pauses its switch when it cannot keep up, ECN marking, ECMP, link failure.
#include "test-roce-util.h"

#include "helpers/roce/eth-fabric-helper.h"
#include "helpers/roce/eth-traffic-run.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

using namespace ns3;

namespace
{

/// 4-to-1 incast through one switch at 100 Gb/s with a 1 MiB buffer, so PFC must act.
EthTrafficSpec
SmallBufferIncast(bool pfc)
{
    EthTrafficSpec spec;
    spec.topology = "star:hosts=5";
    spec.pattern = EthTrafficSpec::Pattern::Incast;
    spec.duration = MicroSeconds(200);
    spec.pfc = pfc;
    spec.configure = [](EthFabricHelper& h) {
        h.SetMmuAttribute("BufferBytes", UintegerValue(1024 * 1024));
    };
    return spec;
}

/// Greedy 1000-byte sources on hosts first .. last-1, all to host 0 on priority 3 (DSCP 26) for
/// `sendFor`, started at time 0: the incast of the PFC tests.
std::vector<std::unique_ptr<EthGreedySource>>
StartIncastToHost0(EthFabric& fab, uint32_t first, uint32_t last, Time sendFor)
{
    std::vector<std::unique_ptr<EthGreedySource>> srcs;
    EthUdpFlow flow;
    flow.priority = 3;
    flow.dscp = 26;
    for (uint32_t i = first; i < last; ++i)
    {
        srcs.push_back(std::make_unique<EthGreedySource>(
            fab.HostPort(i), std::vector<uint32_t>{fab.HostIp(0)}, flow, 1000, sendFor));
        Simulator::Schedule(Time(0), &EthGreedySource::Start, srcs.back().get());
    }
    return srcs;
}

} // namespace

TEST(RoceFabric, LosslessIncastWithPfcDropsNothing)
{
    const EthTrafficStats st = RunEthTraffic(SmallBufferIncast(true));
    std::printf("incast 4:1 PFC: sent %llu received %llu drops %llu pauses %llu pfc frames %llu "
                "max egress %llu B max headroom %llu B events %llu\n",
                (unsigned long long)st.sent, (unsigned long long)st.received,
                (unsigned long long)st.drops, (unsigned long long)st.pausesSent,
                (unsigned long long)st.pfcFramesSent, (unsigned long long)st.maxEgressQueueBytes,
                (unsigned long long)st.maxHeadroomUsed, (unsigned long long)st.events);
    EXPECT_GT(st.sent, 1000u);
    EXPECT_EQ(st.drops, 0u);
    EXPECT_EQ(st.received, st.sent);
    EXPECT_GT(st.pausesSent, 0u);
}

TEST(RoceFabric, LossyIncastCountsEveryDrop)
{
    const EthTrafficStats st = RunEthTraffic(SmallBufferIncast(false));
    std::printf("incast 4:1 no PFC: sent %llu received %llu drops %llu\n",
                (unsigned long long)st.sent, (unsigned long long)st.received,
                (unsigned long long)st.drops);
    EXPECT_GT(st.drops, 0u);
    EXPECT_EQ(st.drops, st.sent - st.received);
    EXPECT_EQ(st.dropsByReason[static_cast<int>(EthDropReason::BufferFull)], st.drops);
    EXPECT_EQ(st.pfcFramesSent, 0u);
}


namespace
{
/// Greatest bytes one ingress (port, priority) can hold: reserved + its shared threshold at its
/// largest + headroom, per the MMU's configuration.
uint64_t
IngressBound(Ptr<SharedBufferMmu> mmu, uint16_t port, bool dynamic)
{
    UintegerValue rsv;
    mmu->GetAttribute("ReservedBytes", rsv);
    uint64_t shared;
    if (dynamic)
    {
        DoubleValue alpha;
        mmu->GetAttribute("Alpha", alpha);
        shared = static_cast<uint64_t>(alpha.Get() * mmu->GetSharedPoolBytes());
    }
    else
    {
        UintegerValue xoff;
        mmu->GetAttribute("XoffBytes", xoff);
        shared = xoff.Get();
    }
    return rsv.Get() + shared + mmu->GetHeadroom(port);
}

struct IncastObserver
{
    uint64_t maxEgress = 0;
    void Queue(uint8_t, uint64_t bytes) { maxEgress = std::max(maxEgress, bytes); }
};
} // namespace

TEST(RoceFabric, IncastQueuesStayWithinThresholds)
{
    for (bool dynamic : {false, true})
    {
        // 6 senders to one host through one switch, 2 MiB buffer.
        Topology t = MakeStar(7);
        EthFabricHelper h;
        h.SetMmuAttribute("BufferBytes", UintegerValue(2 * 1024 * 1024));
        h.SetMmuAttribute("ThresholdMode", EnumValue(dynamic ? 1 : 0));
        h.SetMmuAttribute("XoffBytes", UintegerValue(48 * 1024));
        h.SetMmuAttribute("XonBytes", UintegerValue(24 * 1024));
        EthFabric fab = h.Build(t);
        Ptr<EthSwitch> sw = fab.Switch(7);
        Ptr<EthNetDevice> toTarget = sw->GetPort(1);
        IncastObserver obs;
        toTarget->TraceConnectWithoutContext("QueueDepth",
                                             MakeCallback(&IncastObserver::Queue, &obs));
        std::vector<std::unique_ptr<EthGreedySource>> srcs =
            StartIncastToHost0(fab, 1, 7, MicroSeconds(300));
        uint64_t got = 0;
        cnuas_test::CountEthRx(fab.HostPort(0), &got);
        Simulator::Stop(MilliSeconds(5));
        Simulator::Run();
        uint64_t sent = 0;
        for (auto& s : srcs)
        {
            sent += s->GetSent();
        }
        uint64_t drops = 0;
        uint64_t pauses = 0;
        uint64_t bound = 0;
        for (uint16_t p = 2; p <= 7; ++p)
        {
            drops += sw->GetPort(p)->GetTotalDrops();
            pauses += sw->GetPort(p)->GetCounters().pauseSent[3];
            bound += IngressBound(sw->GetMmu(), p - 1, dynamic);
            EXPECT_LE(sw->GetMmu()->GetHeadroomUsed(p - 1, 3), sw->GetMmu()->GetHeadroom(p - 1));
        }
        std::printf("%s thresholds: sent %llu got %llu pauses %llu max egress %llu bound %llu "
                    "max headroom used %llu of %llu\n",
                    dynamic ? "dynamic" : "static", (unsigned long long)sent,
                    (unsigned long long)got, (unsigned long long)pauses,
                    (unsigned long long)obs.maxEgress, (unsigned long long)bound,
                    (unsigned long long)sw->GetMmu()->GetMaxHeadroomUsed(),
                    (unsigned long long)sw->GetMmu()->GetHeadroom(1));
        EXPECT_EQ(drops, 0u);
        EXPECT_EQ(got, sent);
        EXPECT_GT(pauses, 0u);
        // The egress queue holds only what the six ingress (port, priority)s admitted.
        EXPECT_LE(obs.maxEgress, bound);
        // ... and PFC let it fill to near the thresholds rather than stopping early: at least
        // the six shared thresholds' worth at XON level.
        EXPECT_GT(obs.maxEgress, 6u * 24 * 1024 / (dynamic ? 4 : 1));
        Simulator::Destroy();
    }
}

TEST(RoceFabric, NicPausesSwitchWhenItCannotKeepUpAndPausePropagates)
{
    for (bool nicPfc : {true, false})
    {
        Topology t = MakeTwoHostsOneSwitch();
        EthFabricHelper h;
        EthFabric fab = h.Build(t);
        Ptr<EthNetDevice> a = fab.HostPort(0);
        Ptr<EthNetDevice> b = fab.HostPort(1);
        // The receiver consumes 40 Gb/s of a 100 Gb/s link.
        b->SetAttribute("RxDrainRate", DataRateValue(DataRate("40Gbps")));
        b->SetAttribute("PfcEnableMask", UintegerValue(nicPfc ? 0x08 : 0));
        ASSERT_EQ(b->Validate(), "");
        // A small switch buffer, so that the switch in turn must pause the sender.
        Ptr<EthSwitch> sw = fab.Switch(2);
        sw->GetMmu()->SetAttribute("BufferBytes", UintegerValue(512 * 1024));
        sw->SetupMmu();
        ASSERT_EQ(sw->Validate(), "");
        EthUdpFlow flow;
        flow.priority = 3;
        flow.dscp = 26;
        EthGreedySource src(a, {fab.HostIp(1)}, flow, 1000, MicroSeconds(400));
        uint64_t got = 0;
        cnuas_test::CountEthRx(b, &got);
        Simulator::Schedule(Time(0), &EthGreedySource::Start, &src);
        Simulator::Stop(MilliSeconds(10));
        Simulator::Run();
        uint64_t drops = 0;
        for (auto& p : fab.AllPorts())
        {
            drops += p->GetTotalDrops();
        }
        std::printf("NIC PFC %s: sent %llu got %llu drops %llu; NIC pauses %llu, switch pauses "
                    "to sender %llu, sender paused %.1f us, NIC buffer max %llu\n",
                    nicPfc ? "on" : "off", (unsigned long long)src.GetSent(),
                    (unsigned long long)got, (unsigned long long)drops,
                    (unsigned long long)b->GetCounters().pauseSent[3],
                    (unsigned long long)sw->GetPort(1)->GetCounters().pauseSent[3],
                    a->GetPausedTime(3).GetSeconds() * 1e6,
                    (unsigned long long)b->GetRxBufferMaxUsed());
        EXPECT_EQ(src.GetSent(), got + drops);
        if (nicPfc)
        {
            EXPECT_EQ(drops, 0u);
            EXPECT_GT(b->GetCounters().pauseSent[3], 0u);
            EXPECT_EQ(sw->GetPort(2)->GetCounters().pauseReceived[3],
                      b->GetCounters().pauseSent[3]);
            // Propagation: the switch, held back by the NIC, pauses the sender.
            EXPECT_GT(sw->GetPort(1)->GetCounters().pauseSent[3], 0u);
            EXPECT_GT(a->GetPausedTime(3), Time(0));
            UintegerValue rxBuf;
            b->GetAttribute("RxBufferBytes", rxBuf);
            EXPECT_LE(b->GetRxBufferMaxUsed(), rxBuf.Get());
        }
        else
        {
            EXPECT_GT(b->GetDropCount(EthDropReason::RxBufferFull), 0u);
            EXPECT_EQ(drops, b->GetDropCount(EthDropReason::RxBufferFull));
        }
        Simulator::Destroy();
    }
}

TEST(RoceFabric, EcmpSpreadsFlowsAndKeepsEachOnOnePath)
{
    Topology t = MakeLeafSpine(2, 4, 8);
    EthFabricHelper h;
    EthFabric fab = h.Build(t);
    // Every host of leaf 0 sends to every host of leaf 1: 64 flows over 4 spines.
    std::vector<std::unique_ptr<EthGreedySource>> srcs;
    EthUdpFlow flow;
    flow.priority = 3;
    flow.dscp = 26;
    for (uint32_t i = 0; i < 8; ++i)
    {
        std::vector<uint32_t> dst;
        for (uint32_t j = 8; j < 16; ++j)
        {
            dst.push_back(fab.HostIp(j));
        }
        srcs.push_back(std::make_unique<EthGreedySource>(fab.HostPort(i), dst, flow, 500,
                                                         MicroSeconds(30)));
        Simulator::Schedule(Time(0), &EthGreedySource::Start, srcs.back().get());
    }
    // Which uplink of leaf 0 each (source, destination, source port) flow used.
    struct Paths
    {
        std::map<std::tuple<uint32_t, uint32_t, uint16_t>, std::set<uint16_t>> used;
        uint16_t port;
        void Tx(const EthFrame& f)
        {
            if (f.kind == EthFrameKind::Udp)
            {
                used[{f.srcIp, f.dstIp, f.srcPort}].insert(port);
            }
        }
    };
    std::vector<std::unique_ptr<Paths>> paths;
    const uint32_t leaf0 = *t.Find("leaf0");
    // Leaf ports 9..12 go to spines 0..3.
    for (uint16_t p = 9; p <= 12; ++p)
    {
        paths.push_back(std::make_unique<Paths>());
        paths.back()->port = p;
        fab.Port(leaf0, p)->TraceConnectWithoutContext(
            "Tx", MakeCallback(&Paths::Tx, paths.back().get()));
    }
    Simulator::Run();
    std::map<std::tuple<uint32_t, uint32_t, uint16_t>, int> portsPerFlow;
    std::vector<uint64_t> perSpine;
    for (auto& ps : paths)
    {
        perSpine.push_back(ps->used.size());
        for (auto& [k, v] : ps->used)
        {
            portsPerFlow[k] += static_cast<int>(v.size());
        }
    }
    EXPECT_EQ(portsPerFlow.size(), 64u);
    for (auto& [k, n] : portsPerFlow)
    {
        EXPECT_EQ(n, 1); // a flow never changes path (no reordering)
    }
    // 64 flows hashed over 4 paths: each gets some; a uniform hash puts 16 +- 3.5 (1 sigma)
    // on each, so 4..28 holds with overwhelming probability.
    for (size_t s = 0; s < perSpine.size(); ++s)
    {
        EXPECT_GE(perSpine[s], 4u) << "spine " << s;
        EXPECT_LE(perSpine[s], 28u) << "spine " << s;
    }
    Simulator::Destroy();
}

TEST(RoceFabric, DestinationsWithTheSameNextHopsShareOneListAndOthersKeepTheirOwn)
{
    // The switch's dense route table keeps one copy of each distinct next-hop list; a frame
    // must still leave only by its own destination's hops, and reach each of them.
    Ptr<EthSwitch> sw = CreateObject<EthSwitch>();
    sw->SetAttribute("EcmpSeed", UintegerValue(7));
    for (int p = 0; p < 6; ++p)
    {
        sw->AddPort(CreateObject<EthNetDevice>());
    }
    const uint32_t base = 0x0A000000;
    const std::map<uint32_t, std::vector<uint16_t>> routes = {
        {base + 1, {1, 2}}, {base + 2, {3, 4}}, {base + 3, {1, 2}}, {base + 4, {5}},
        {base + 5, {2, 1}}, {base + 7, {3, 4, 6}}, {base + 8, {1, 2}}};
    for (const auto& [ip, hops] : routes)
    {
        for (uint16_t h : hops)
        {
            sw->AddRoute(ip, h);
        }
    }
    EthFrame f;
    f.kind = EthFrameKind::Udp;
    f.srcIp = base + 100;
    f.dstPort = 4791;
    for (const auto& [ip, hops] : routes)
    {
        f.dstIp = ip;
        std::set<uint16_t> seen;
        for (uint16_t sport = 49152; sport < 49152 + 400; ++sport)
        {
            f.srcPort = sport;
            const uint16_t out = sw->EgressPort(f);
            EXPECT_NE(std::find(hops.begin(), hops.end(), out), hops.end())
                << "destination " << ip - base << " left by port " << out;
            seen.insert(out);
            // The pick is the hash's, over the destination's own list in the order added.
            EXPECT_EQ(out, hops[EthSwitch::FlowHash(f, 7) % hops.size()]);
        }
        EXPECT_EQ(seen.size(), hops.size()) << "destination " << ip - base;
    }
    f.dstIp = base + 6; // inside the table's range, no route
    EXPECT_EQ(sw->EgressPort(f), 0);
    f.dstIp = base + 9; // past it
    EXPECT_EQ(sw->EgressPort(f), 0);
    sw->Dispose();
}

TEST(RoceFabric, EcmpHashIsUniformAndSeedDependent)
{
    const int n = 40000;
    const int buckets = 4;
    std::vector<int> count(buckets, 0);
    int differ = 0;
    EthFrame f;
    for (int i = 0; i < n; ++i)
    {
        f.srcIp = 0x0A000001 + (i % 200);
        f.dstIp = 0x0A000101 + (i / 200);
        f.srcPort = static_cast<uint16_t>(49152 + (i * 7919) % 16384);
        f.dstPort = 4791;
        count[EthSwitch::FlowHash(f, 1) % buckets]++;
        differ += EthSwitch::FlowHash(f, 1) % buckets != EthSwitch::FlowHash(f, 2) % buckets;
    }
    // Uniform: each bucket 10000 +- 5 sigma (sigma = sqrt(n p (1-p)) = 86.6).
    for (int b = 0; b < buckets; ++b)
    {
        EXPECT_NEAR(count[b], n / buckets, 5 * 86.6) << "bucket " << b;
    }
    // Independent seeds agree on a bucket a quarter of the time.
    EXPECT_NEAR(differ, n * 0.75, 5 * std::sqrt(n * 0.75 * 0.25));
}

TEST(RoceFabric, SwitchClassifiesByDscpTableOrTrustedPcp)
{
    for (int mode = 0; mode < 3; ++mode)
    {
        // mode 0: untagged, default table (DSCP 26 -> 3); 1: untagged, DSCP 26 remapped to 6;
        // 2: tagged with PCP 5 and a switch that trusts PCP.
        EthFabricHelper h;
        h.SetPortAttribute("PfcEnableMask", UintegerValue(0));
        if (mode == 2)
        {
            h.SetPortAttribute("VlanTag", BooleanValue(true));
            h.SetSwitchAttribute("TrustPcp", BooleanValue(true));
        }
        EthFabric fab = h.Build(MakeTwoHostsOneSwitch());
        if (mode == 1)
        {
            fab.Switch(2)->SetDscpToPriority(26, 6);
        }
        EthUdpFlow flow;
        flow.dstIp = fab.HostIp(1);
        flow.dscp = 26;
        flow.priority = mode == 2 ? 5 : 0;
        for (int i = 0; i < 10; ++i)
        {
            ASSERT_TRUE(fab.HostPort(0)->SendUdp(flow, 100));
        }
        Simulator::Run();
        const uint8_t want = mode == 0 ? 3 : mode == 1 ? 6 : 5;
        const EthPortCounters& out = fab.Switch(2)->GetPort(2)->GetCounters();
        EXPECT_EQ(out.txFrames[want], 10u) << "mode " << mode;
        // The receiving host classifies by the tag's PCP, or by DSCP 26's class selector (3).
        EXPECT_EQ(fab.HostPort(1)->GetCounters().rxFrames[mode == 2 ? 5 : 3], 10u)
            << "mode " << mode;
        Simulator::Destroy();
    }
}

TEST(RoceFabric, Ipv6FlowsAreRoutedSpreadAndDelivered)
{
    Topology t = MakeLeafSpine(2, 4, 4);
    EthFabricHelper h;
    EthFabric fab = h.Build(t);
    uint64_t got = 0;
    uint64_t got6 = 0;
    struct Rx
    {
        uint64_t* n;
        uint64_t* n6;
        void Cb(Ptr<EthNetDevice>, const EthFrame& f)
        {
            (*n)++;
            *n6 += f.ipv6;
        }
    } rx{&got, &got6};
    uint64_t sent = 0;
    for (uint32_t i = 0; i < 8; ++i)
    {
        fab.HostPort(i)->SetEthReceiveCallback(MakeCallback(&Rx::Cb, &rx));
    }
    // Every host of leaf 0 sends 3 datagrams to every host of leaf 1, each pair its own flow.
    for (uint32_t i = 0; i < 4; ++i)
    {
        for (uint32_t j = 4; j < 8; ++j)
        {
            EthUdpFlow flow;
            flow.ipv6 = true;
            flow.dstIp6 = fab.HostIp6(j);
            flow.srcPort = static_cast<uint16_t>(50000 + j);
            flow.dscp = 26;
            for (int k = 0; k < 3; ++k)
            {
                sent += fab.HostPort(i)->SendUdp(flow, 512);
            }
        }
    }
    Simulator::Run();
    EXPECT_EQ(sent, 48u);
    EXPECT_EQ(got, sent);
    EXPECT_EQ(got6, sent);
    // The 16 flows used more than one of leaf 0's four uplinks.
    const uint32_t leaf0 = *t.Find("leaf0");
    int used = 0;
    for (uint16_t p = 5; p <= 8; ++p)
    {
        used += fab.Port(leaf0, p)->GetCounters().txFrames[3] > 0;
    }
    EXPECT_GE(used, 2);
    Simulator::Destroy();
}

TEST(RoceFabric, LosslessFatTreeUnderAllToAllDropsNothing)
{
    // k=4 fat-tree, every host to every other at 100 Gb/s, 600 KiB buffers: the uplinks are
    // oversubscribed in bursts and PFC must hold traffic back at all three tiers.
    EthTrafficSpec spec;
    spec.topology = "fat-tree:k=4";
    spec.pattern = EthTrafficSpec::Pattern::AllToAll;
    spec.duration = MicroSeconds(100);
    spec.configure = [](EthFabricHelper& h) {
        h.SetMmuAttribute("BufferBytes", UintegerValue(600 * 1024));
    };
    const EthTrafficStats st = RunEthTraffic(spec);
    std::printf("fat-tree k=4 all-to-all, 600 KiB buffers: sent %llu received %llu drops %llu "
                "XOFF %llu PFC frames %llu max egress %llu B\n",
                (unsigned long long)st.sent, (unsigned long long)st.received,
                (unsigned long long)st.drops, (unsigned long long)st.pausesSent,
                (unsigned long long)st.pfcFramesSent,
                (unsigned long long)st.maxEgressQueueBytes);
    EXPECT_GT(st.sent, 10000u);
    EXPECT_GT(st.pausesSent, 0u);
    EXPECT_EQ(st.drops, 0u);
    EXPECT_EQ(st.received, st.sent);
    // The same load without PFC loses frames, and counts every one.
    spec.pfc = false;
    const EthTrafficStats lossy = RunEthTraffic(spec);
    EXPECT_GT(lossy.drops, 0u);
    EXPECT_EQ(lossy.drops, lossy.sent - lossy.received);
}

TEST(RoceFabric, PausePropagatesAcrossSwitches)
{
    // Dumbbell: the other three hosts on the left and the four on the right all send to h0.
    // The left switch's buffer fills behind h0's link and pauses its ingresses, the
    // inter-switch link among them (switch-to-switch PFC); the right switch, paused on top of
    // its own 4:1 congestion, pauses its hosts. Nothing is lost anywhere.
    EthFabricHelper h;
    h.SetMmuAttribute("BufferBytes", UintegerValue(768 * 1024));
    EthFabric fab = h.Build(MakeDumbbell(4, 4));
    const uint32_t swL = *fab.topology.Find("swL");
    const uint32_t swR = *fab.topology.Find("swR");
    std::vector<std::unique_ptr<EthGreedySource>> srcs =
        StartIncastToHost0(fab, 1, 8, MicroSeconds(300));
    uint64_t got = 0;
    cnuas_test::CountEthRx(fab.HostPort(0), &got);
    Simulator::Run();
    uint64_t sent = 0;
    for (auto& s : srcs)
    {
        sent += s->GetSent();
    }
    uint64_t drops = 0;
    for (auto& p : fab.AllPorts())
    {
        drops += p->GetTotalDrops();
    }
    // swL port 5 faces swR; swR ports 1..4 face its hosts.
    const uint64_t interSwitch = fab.Port(swL, 5)->GetCounters().pauseSent[3];
    uint64_t toHosts = 0;
    for (uint32_t p = 1; p <= 4; ++p)
    {
        toHosts += fab.Port(swR, p)->GetCounters().pauseSent[3];
    }
    std::printf("dumbbell 7:1 across two switches: sent %llu got %llu drops %llu; XOFF on the "
                "inter-switch link %llu, from the far switch to its hosts %llu\n",
                (unsigned long long)sent, (unsigned long long)got, (unsigned long long)drops,
                (unsigned long long)interSwitch, (unsigned long long)toHosts);
    EXPECT_EQ(drops, 0u);
    EXPECT_EQ(got, sent);
    EXPECT_GT(interSwitch, 0u);
    EXPECT_GT(toHosts, 0u);
    EXPECT_EQ(fab.Port(swR, 5)->GetCounters().pauseReceived[3], interSwitch);
    Simulator::Destroy();
}
