// The lazy flow-control refresh (docs/architecture.md §6.9): an idle InfiniBand link costs no
// event, and everything a run shows is what the all-events refresh shows.
#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/ib/ib-packet-source.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "models/ib/ib-channel.h"
#include "models/ib/ib-net-device.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

/// Everything a run shows, as text lines so that a difference prints readably.
struct Observed
{
    std::vector<std::string> lines;    ///< traces, in order
    std::vector<std::string> counters; ///< per-port state at the end
    std::vector<std::string> notes;    ///< what differs by design (whether a timer slept)
    uint64_t events = 0;               ///< Simulator events executed
    uint64_t refreshEvents = 0;
    uint64_t lazyRefreshes = 0;
    uint64_t lazySkipped = 0; ///< of lazyRefreshes, accounted a whole period at a time
    uint64_t fcSent = 0;
};

std::string
PortName(const IbFabric& f, const Ptr<IbNetDevice>& p)
{
    std::ostringstream os;
    os << "n" << p->GetNode()->GetId() << "p" << +p->GetPortNumber();
    return os.str();
}

/// Connects the trace sources that do not observe flow-control packets (connecting them keeps
/// the refresh lazy) on every port.
void
ConnectPassiveTraces(const IbFabric& f, Observed* o)
{
    for (auto& p : f.AllPorts())
    {
        std::string name = PortName(f, p);
        auto* lines = &o->lines;
        p->TraceConnectWithoutContext(
            "Rx",
            MakeCallback(+[](std::vector<std::string>* l, std::string n, Ptr<const Packet> pkt,
                             uint8_t vl) {
                std::ostringstream os;
                os << Simulator::Now().GetPicoSeconds() << " rx " << n << " vl" << +vl << " "
                   << pkt->GetSize();
                l->push_back(os.str());
            }).Bind(lines, name));
        p->TraceConnectWithoutContext(
            "Tx",
            MakeCallback(+[](std::vector<std::string>* l, std::string n, Ptr<const Packet> pkt,
                             uint8_t vl) {
                std::ostringstream os;
                os << Simulator::Now().GetPicoSeconds() << " tx " << n << " vl" << +vl << " "
                   << pkt->GetSize();
                l->push_back(os.str());
            }).Bind(lines, name));
        p->TraceConnectWithoutContext(
            "CreditStall",
            MakeCallback(+[](std::vector<std::string>* l, std::string n, uint8_t vl, Time d) {
                std::ostringstream os;
                os << Simulator::Now().GetPicoSeconds() << " stall " << n << " vl" << +vl << " "
                   << d.GetPicoSeconds();
                l->push_back(os.str());
            }).Bind(lines, name));
        p->TraceConnectWithoutContext(
            "PortState",
            MakeCallback(+[](std::vector<std::string>* l, std::string n, uint8_t a, uint8_t b) {
                std::ostringstream os;
                os << Simulator::Now().GetPicoSeconds() << " state " << n << " " << +a << "->"
                   << +b;
                l->push_back(os.str());
            }).Bind(lines, name));
        p->TraceConnectWithoutContext(
            "Drop",
            MakeCallback(+[](std::vector<std::string>* l, std::string n, Ptr<const Packet>,
                             uint8_t r) {
                std::ostringstream os;
                os << Simulator::Now().GetPicoSeconds() << " drop " << n << " " << +r;
                l->push_back(os.str());
            }).Bind(lines, name));
    }
}

/// Connects the flow-control and credit traces of one port (this makes its link eager).
void
ConnectFlowControlTraces(const IbFabric& f, Ptr<IbNetDevice> p, Observed* o)
{
    std::string name = PortName(f, p);
    auto* lines = &o->lines;
    auto fc = +[](std::vector<std::string>* l, std::string what, uint8_t op, uint8_t vl,
                  uint16_t fctbs, uint16_t fccl) {
        std::ostringstream os;
        os << Simulator::Now().GetPicoSeconds() << " " << what << " op" << +op << " vl" << +vl
           << " fctbs " << fctbs << " fccl " << fccl;
        l->push_back(os.str());
    };
    p->TraceConnectWithoutContext("FlowControlTx", MakeCallback(fc).Bind(lines, name + " fctx"));
    p->TraceConnectWithoutContext("FlowControlRx", MakeCallback(fc).Bind(lines, name + " fcrx"));
    p->TraceConnectWithoutContext(
        "Credits",
        MakeCallback(+[](std::vector<std::string>* l, std::string n, uint8_t vl, uint32_t c) {
            std::ostringstream os;
            os << Simulator::Now().GetPicoSeconds() << " credits " << n << " vl" << +vl << " "
               << c;
            l->push_back(os.str());
        }).Bind(lines, name));
}

/// The end state of every port, read through the public accessors (each catches up first).
void
RecordEnd(const IbFabric& f, Observed* o)
{
    for (auto& p : f.AllPorts())
    {
        std::ostringstream os;
        os << PortName(f, p) << " fcSent " << p->GetFlowControlPacketsSent() << " fcEvents "
           << p->GetFlowControlEvents() << " stashed " << p->GetFlowControlStashed()
           << " state " << +static_cast<uint8_t>(p->GetPortState());
        for (uint8_t vl = 0; vl < p->GetOperationalVls(); ++vl)
        {
            os << " | vl" << +vl << " fctbs " << p->GetFctbs(vl) << " fccl " << p->GetFccl(vl)
               << " credits " << p->GetCreditsAvailable(vl) << " stall "
               << p->GetCreditStallTime(vl).GetPicoSeconds() << " used "
               << p->GetReceiveBufferUsed(vl);
        }
        const IbPortCounters& c = p->GetCounters();
        os << " | xmitPkts " << c.portXmitPkts << " rcvPkts " << c.portRcvPkts << " xmitWait "
           << c.portXmitWait << " xmitDiscards " << c.portXmitDiscards << " linkDowned "
           << +c.linkDownedCounter;
        o->counters.push_back(os.str());
        o->fcSent += p->GetFlowControlPacketsSent();
        o->refreshEvents += p->GetRefreshEvents();
        o->lazyRefreshes += p->GetLazyRefreshes();
        o->lazySkipped += p->GetLazyRefreshesSkipped();
    }
}

/// Runs the simulation to `stop`, records every port's end state into `o` (the object the
/// run's events write to, hence by reference), and tears the simulator and the attribute
/// defaults down for the next run; returns what was observed.
Observed
RunAndRecordEnd(const IbFabric& f, Observed& o, Time stop)
{
    Simulator::Stop(stop);
    Simulator::Run();
    RecordEnd(f, &o);
    Simulator::Destroy();
    Config::Reset();
    return o;
}

void
SetLazy(bool lazy)
{
    Config::SetDefault("ns3::IbNetDevice::LazyFlowControlRefresh", BooleanValue(lazy));
}

void
ExpectSame(const Observed& lazy, const Observed& eager)
{
    ASSERT_EQ(lazy.lines.size(), eager.lines.size());
    for (size_t i = 0; i < lazy.lines.size(); ++i)
    {
        ASSERT_EQ(lazy.lines[i], eager.lines[i]) << "trace line " << i;
    }
    ASSERT_EQ(lazy.counters.size(), eager.counters.size());
    for (size_t i = 0; i < lazy.counters.size(); ++i)
    {
        EXPECT_EQ(lazy.counters[i], eager.counters[i]);
    }
    EXPECT_EQ(lazy.fcSent, eager.fcSent);
    // Every refresh tick of the all-events run is there, as an event or accounted lazily.
    EXPECT_EQ(lazy.refreshEvents + lazy.lazyRefreshes, eager.refreshEvents);
    EXPECT_EQ(eager.lazyRefreshes, 0u);
}

/// Two hosts through a switch, Active with OperationalVLs `vls` (LIDs, routes and port states
/// set directly), every port's passive traces connected into `o`.
IbFabric
BuildActiveTwoHosts(uint8_t vls, Observed* o)
{
    IbFabric f = IbFabricHelper().Build(MakeTwoHostsOneSwitch());
    IbStaticSubnetHelper subnet;
    subnet.SetOperationalVls(vls);
    subnet.Configure(f.nodes);
    ConnectPassiveTraces(f, o);
    return f;
}

/// Two hosts through a switch, OperationalVLs `vls`, held idle (Active, no traffic) until `end`.
Observed
RunIdle(bool lazy, uint8_t vls, Time end, bool traceHost0)
{
    SetLazy(lazy);
    Observed o;
    IbFabric f = BuildActiveTwoHosts(vls, &o);
    if (traceHost0)
    {
        ConnectFlowControlTraces(f, f.HostPort(0), &o);
    }
    const uint64_t before = Simulator::GetEventCount();
    Simulator::Stop(end);
    Simulator::Run();
    o.events = Simulator::GetEventCount() - before;
    RecordEnd(f, &o);
    Simulator::Destroy();
    Config::Reset();
    return o;
}

} // namespace

// An idle link held for about 1,000 refresh periods: the refresh costs (almost) no event, while
// the counters show every flow-control packet an all-events run sends.
TEST(IbIdle, IdleLinkRefreshCostsNoEventsButCountsEveryPacket)
{
    const Time end = MilliSeconds(10); // 953 periods of 10.49 us (4x HDR, 65,536 symbols)
    Observed lazy = RunIdle(true, 4, end, false);
    Observed eager = RunIdle(false, 4, end, false);
    ExpectSame(lazy, eager);
    std::printf("idle link, 10 ms, 4 VLs: flow-control packets %llu lazy, %llu eager; events "
                "%llu lazy, %llu eager; refresh events %llu lazy (+%llu lazy ticks), %llu eager\n",
                (unsigned long long)lazy.fcSent, (unsigned long long)eager.fcSent,
                (unsigned long long)lazy.events, (unsigned long long)eager.events,
                (unsigned long long)lazy.refreshEvents, (unsigned long long)lazy.lazyRefreshes,
                (unsigned long long)eager.refreshEvents);
    // 4 ports, 4 VLs: each refresh tick sends 4 packets per port.
    const uint64_t period = 65536ull * 160; // symbol time 160 ps on HDR
    const uint64_t ticks = 10'000'000'000ull / period;
    EXPECT_GE(eager.fcSent, 4 * 4 * (ticks - 1));
    EXPECT_LE(eager.fcSent, 4 * 4 * (ticks + 2));
    EXPECT_GE(eager.refreshEvents, 4 * (ticks - 1));
    // Lazy: a few ticks around activation run as events, then the timers sleep.
    EXPECT_LE(lazy.refreshEvents, 4u * 4u);
    EXPECT_GE(lazy.lazyRefreshes, 4 * (ticks - 5));
    // The whole simulation: the all-events run pays about 4 events per port per tick.
    EXPECT_GT(eager.events, 12 * ticks);
    EXPECT_LT(lazy.events, 200u);
}

// A flow-control sink on a port keeps that link's refresh as events: the trace shows a packet at
// every refresh time, exactly as the all-events run does, and the other links stay lazy.
TEST(IbIdle, TracedPortShowsEveryRefreshPacket)
{
    const Time end = MicroSeconds(500);
    Observed lazy = RunIdle(true, 2, end, true);
    Observed eager = RunIdle(false, 2, end, true);
    ExpectSame(lazy, eager);
    // Host 0 sends one refresh packet per VL per period (after the Init packets).
    std::vector<int64_t> fctx;
    for (auto& l : lazy.lines)
    {
        if (l.find(" fctx op0 vl0 ") != std::string::npos)
        {
            fctx.push_back(std::stoll(l.substr(0, l.find(' '))));
        }
    }
    ASSERT_GT(fctx.size(), 40u);
    const int64_t period = 65536 * 160;
    for (size_t i = 1; i < fctx.size(); ++i)
    {
        EXPECT_EQ(fctx[i] - fctx[i - 1], period) << i;
    }
    // The untraced link (host 1 - switch) slept.
    EXPECT_GT(lazy.lazyRefreshes, 40u);
}

namespace
{

/// Traffic with credit stalls over a 2-level fabric, idle gaps in between (so that timers sleep
/// and wake), one data packet handed to host 0 while a refresh is on its wire.
Observed
RunTraffic(bool lazy, int64_t injectPs, bool traceHost0Fc, std::vector<int64_t>* host0FcTx)
{
    SetLazy(lazy);
    Config::SetDefault("ns3::IbNetDevice::VlBufferBytes", UintegerValue(8 * 4160));
    Observed o;
    IbFabricHelper h;
    IbFabric f = h.Build(MakeLeafSpine(2, 2, 3)); // 6 hosts, 4 switches
    IbStaticSubnetHelper subnet;
    subnet.SetOperationalVls(2);
    subnet.Configure(f.nodes);
    ConnectPassiveTraces(f, &o);
    // The credit trace of one host, as `cnuas run` connects it.
    f.HostPort(3)->TraceConnectWithoutContext(
        "Credits",
        MakeCallback(+[](std::vector<std::string>* l, uint8_t vl, uint32_t c) {
            std::ostringstream os;
            os << Simulator::Now().GetPicoSeconds() << " credits h3 vl" << +vl << " " << c;
            l->push_back(os.str());
        }).Bind(&o.lines));
    if (traceHost0Fc)
    {
        f.HostPort(0)->TraceConnectWithoutContext(
            "FlowControlTx",
            MakeCallback(+[](std::vector<int64_t>* v, uint8_t, uint8_t vl, uint16_t, uint16_t) {
                if (vl == 0)
                {
                    v->push_back(Simulator::Now().GetPicoSeconds());
                }
            }).Bind(host0FcTx));
    }
    // Bursts: hosts 0-2 (leaf 0) into host 3 (leaf 1): incast, stalls; then silence; then host 4
    // to host 1 on SL 1 (VL 1); then silence again.
    const uint16_t lid3 = subnet.GetLid(f.hosts.Get(3));
    const uint16_t lid1 = subnet.GetLid(f.hosts.Get(1));
    for (uint32_t i = 0; i < 3; ++i)
    {
        Ptr<IbPacketSource> s = CreateObject<IbPacketSource>();
        s->SetAttribute("DestinationLid", UintegerValue(lid3));
        s->SetAttribute("MaxBytes", UintegerValue(40 * 4096));
        f.hosts.Get(i)->AddApplication(s);
        s->SetStartTime(MicroSeconds(20 + i));
        s->SetStopTime(MicroSeconds(60));
    }
    Ptr<IbPacketSource> s = CreateObject<IbPacketSource>();
    s->SetAttribute("DestinationLid", UintegerValue(lid1));
    s->SetAttribute("MaxBytes", UintegerValue(20 * 4096));
    s->SetAttribute("ServiceLevel", UintegerValue(1));
    f.hosts.Get(4)->AddApplication(s);
    s->SetStartTime(MicroSeconds(150));
    s->SetStopTime(MicroSeconds(200));
    for (uint32_t i = 0; i < 6; ++i)
    {
        Ptr<IbPacketSink> k = CreateObject<IbPacketSink>();
        f.hosts.Get(i)->AddApplication(k);
        k->SetStartTime(Seconds(0));
    }
    // One packet that becomes ready at host 0 at `injectPs` (long after the bursts).
    if (injectPs > 0)
    {
        Ptr<IbNetDevice> h0 = f.HostPort(0);
        Simulator::Schedule(PicoSeconds(injectPs), [h0, lid3, &o]() {
            o.notes.push_back(std::string("dormant before inject ") +
                              (h0->IsRefreshDormant() ? "yes" : "no"));
            h0->SendIb(Create<Packet>(1024), lid3, 0);
        });
    }
    return RunAndRecordEnd(f, o, MicroSeconds(400));
}

} // namespace

// Stalls, recoveries, arrivals and credits at the same picosecond with and without the lazy
// refresh, including a data packet that becomes ready while refresh packets are on the wire.
TEST(IbIdle, TrafficWithStallsIsIdenticalToAllEventsRefresh)
{
    // Where host 0's refresh packets go (an all-events run, traced).
    std::vector<int64_t> fcTx;
    RunTraffic(false, 0, true, &fcTx);
    int64_t inject = -1;
    for (int64_t t : fcTx)
    {
        if (t > 300'000'000) // 300 us: long after the traffic, host 0's link idle
        {
            inject = t + 1; // 1 ps into VL 0's refresh packet; VL 1's is due right after it
            break;
        }
    }
    ASSERT_GT(inject, 0);
    Observed lazy = RunTraffic(true, inject, false, nullptr);
    Observed eager = RunTraffic(false, inject, false, nullptr);
    ExpectSame(lazy, eager);
    EXPECT_GT(lazy.lazyRefreshes, 20u); // the timers did sleep between the bursts
    // The stalls happened (the test exercises credit), and the injected packet waited for both
    // refresh packets on host 0's wire: it starts at the end of the second, not at `inject`.
    size_t stalls = 0;
    int64_t injectedTx = -1;
    bool dormant = false;
    for (auto& l : lazy.notes)
    {
        dormant |= l == "dormant before inject yes";
    }
    for (auto& l : lazy.lines)
    {
        stalls += l.find(" stall ") != std::string::npos;
        if (injectedTx < 0 && l.find(" tx n") != std::string::npos &&
            std::stoll(l.substr(0, l.find(' '))) >= inject)
        {
            injectedTx = std::stoll(l.substr(0, l.find(' ')));
        }
    }
    EXPECT_GT(stalls, 5u);
    EXPECT_TRUE(dormant);
    // 4x HDR: a flow-control packet (6 bytes + 2 delimiter bytes) takes 8 x 160 / 4 = 320 ps.
    EXPECT_EQ(injectedTx, inject - 1 + 2 * 320);
}

namespace
{

/// An idle link (no subnet manager: ports stay Init) whose OperationalVLs change, and a link
/// that goes down and comes back, all while idle.
Observed
RunIdleChanges(bool lazy)
{
    SetLazy(lazy);
    Observed o;
    IbFabricHelper h;
    IbFabric f = h.Build(MakeTwoHostsOneSwitch());
    ConnectPassiveTraces(f, &o);
    Ptr<IbNetDevice> h0 = f.HostPort(0);
    Ptr<IbNetDevice> sw0 = h0->GetPeer();
    Ptr<IbNetDevice> h1 = f.HostPort(1);
    auto note = [&o](std::string what) {
        o.lines.push_back(std::to_string(Simulator::Now().GetPicoSeconds()) + " " + what);
    };
    Simulator::Schedule(MicroSeconds(100) + PicoSeconds(7), [=, &o]() {
        o.notes.push_back(std::string("h0 dormant ") + (h0->IsRefreshDormant() ? "yes" : "no"));
        note("h0 sent " + std::to_string(h0->GetFlowControlPacketsSent()));
        EXPECT_TRUE(h0->SetOperationalVls(4));
        EXPECT_TRUE(sw0->SetOperationalVls(4));
    });
    Simulator::Schedule(MicroSeconds(203) + PicoSeconds(11), [=]() {
        note("h1 down, sent " + std::to_string(h1->GetFlowControlPacketsSent()));
        h1->SetPhysicalLinkDown();
    });
    Simulator::Schedule(MicroSeconds(240), [=]() { h1->SetPhysicalLinkUp(); });
    Simulator::Schedule(MicroSeconds(360), [=]() {
        note("credits h0 vl3 " + std::to_string(h0->GetCreditsAvailable(3)) + " h1 vl0 " +
             std::to_string(h1->GetCreditsAvailable(0)));
    });
    return RunAndRecordEnd(f, o, MicroSeconds(500));
}

} // namespace

TEST(IbIdle, OperationalVlsChangeAndLinkFlapWhileIdleBehaveTheSame)
{
    Observed lazy = RunIdleChanges(true);
    Observed eager = RunIdleChanges(false);
    ExpectSame(lazy, eager);
    EXPECT_GT(lazy.lazyRefreshes, 20u);
    bool sawDormant = false;
    for (auto& l : lazy.notes)
    {
        sawDormant |= l == "h0 dormant yes";
    }
    EXPECT_TRUE(sawDormant);
}

namespace
{

/// A sink connected to a sleeping port's FlowControlTx (and its peer's FlowControlRx) in the
/// middle of an idle stretch: from then on every refresh packet appears, as in the all-events run.
Observed
RunConnectWhileIdle(bool lazy)
{
    SetLazy(lazy);
    Observed o;
    IbFabric f = BuildActiveTwoHosts(2, &o);
    Ptr<IbNetDevice> h0 = f.HostPort(0);
    // In the middle of an idle stretch: both ends have slept for about 8 periods.
    Simulator::Schedule(MicroSeconds(100) + PicoSeconds(13), [&f, &o, h0]() {
        o.notes.push_back(std::string("h0 dormant ") + (h0->IsRefreshDormant() ? "yes" : "no"));
        ConnectFlowControlTraces(f, h0, &o);
        ConnectFlowControlTraces(f, h0->GetPeer(), &o);
    });
    return RunAndRecordEnd(f, o, MicroSeconds(300));
}

} // namespace

TEST(IbIdle, SinkConnectingToASleepingPortSeesEveryLaterPacket)
{
    Observed lazy = RunConnectWhileIdle(true);
    Observed eager = RunConnectWhileIdle(false);
    ExpectSame(lazy, eager);
    size_t fcLines = 0;
    for (auto& l : lazy.lines)
    {
        fcLines += l.find(" fctx ") != std::string::npos;
    }
    EXPECT_GT(fcLines, 30u); // 2 ports x 2 VLs x 19 periods
    bool dormant = false;
    for (auto& l : lazy.notes)
    {
        dormant |= l == "h0 dormant yes";
    }
    EXPECT_TRUE(dormant);
}

namespace
{

/// The built-in SM brings a 2-level fabric up (every SMP a packet on the wire), then data
/// bursts run while the SM's light sweeps keep sending SMPs over the same links (SweepInterval
/// 20 us), one of them into a credit stall. `atUp` gets the refresh events and lazy ticks of the
/// whole fabric when the subnet came up.
Observed
RunSmSweepAndTraffic(bool lazy, uint64_t* refreshEventsAtUp, uint64_t* lazyTicksAtUp)
{
    SetLazy(lazy);
    Config::SetDefault("ns3::IbSubnetManager::SweepInterval", TimeValue(MicroSeconds(20)));
    Config::SetDefault("ns3::IbNetDevice::VlBufferBytes", UintegerValue(8 * 4160));
    // A refresh every 4,096 symbol times (655 ns) instead of 65,536: the sweep (about 15 us
    // here) spans some 20 periods, as a large fabric's spans thousands.
    Config::SetDefault("ns3::IbNetDevice::FlowControlRefreshSymbols", UintegerValue(4096));
    Observed o;
    IbFabricHelper h;
    IbFabric f = h.Build(MakeLeafSpine(2, 2, 3)); // 6 hosts, 4 switches
    ConnectPassiveTraces(f, &o);
    const IbSmBringUp up = IbBringUpWithSm(f, 2);
    o.notes.push_back("up at " + std::to_string(up.upAt.GetPicoSeconds()) + " ps, " +
                      std::to_string(up.smps) + " SMPs");
    *refreshEventsAtUp = 0;
    *lazyTicksAtUp = 0;
    for (auto& p : f.AllPorts())
    {
        *refreshEventsAtUp += p->GetRefreshEvents();
        *lazyTicksAtUp += p->GetLazyRefreshes();
    }
    const Time now = Simulator::Now();
    const uint16_t lid3 = f.HostPort(3)->GetLid();
    const uint16_t lid1 = f.HostPort(1)->GetLid();
    for (uint32_t i = 0; i < 3; ++i)
    {
        Ptr<IbPacketSource> s = CreateObject<IbPacketSource>();
        s->SetAttribute("DestinationLid", UintegerValue(lid3));
        s->SetAttribute("MaxBytes", UintegerValue(30 * 4096));
        f.hosts.Get(i)->AddApplication(s);
        s->SetStartTime(now + MicroSeconds(10 + i));
        s->SetStopTime(now + MicroSeconds(60));
    }
    Ptr<IbPacketSource> s = CreateObject<IbPacketSource>();
    s->SetAttribute("DestinationLid", UintegerValue(lid1));
    s->SetAttribute("MaxBytes", UintegerValue(10 * 4096));
    s->SetAttribute("ServiceLevel", UintegerValue(1));
    f.hosts.Get(4)->AddApplication(s);
    s->SetStartTime(now + MicroSeconds(130));
    s->SetStopTime(now + MicroSeconds(160));
    for (uint32_t i = 0; i < 6; ++i)
    {
        Ptr<IbPacketSink> k = CreateObject<IbPacketSink>();
        f.hosts.Get(i)->AddApplication(k);
        k->SetStartTime(now);
    }
    return RunAndRecordEnd(f, o, now + MicroSeconds(300));
}

} // namespace

// A subnet manager's sweep sends one SMP at a time over otherwise idle links: VL15 needs no
// credit, so those hops leave the links' refresh timers asleep, and every SMP, data packet,
// credit and counter is where the all-events refresh puts it, during the sweep and while later
// sweeps' SMPs share the links with data.
TEST(IbIdle, SubnetManagerSweepLeavesTheRefreshAsleepAndChangesNothing)
{
    uint64_t lazyAtUp = 0;
    uint64_t lazyTicksAtUp = 0;
    uint64_t eagerAtUp = 0;
    uint64_t eagerTicksAtUp = 0;
    Observed lazy = RunSmSweepAndTraffic(true, &lazyAtUp, &lazyTicksAtUp);
    Observed eager = RunSmSweepAndTraffic(false, &eagerAtUp, &eagerTicksAtUp);
    ASSERT_EQ(lazy.notes.size(), 1u);
    EXPECT_EQ(lazy.notes, eager.notes); // the same bring-up time and SMP count
    ExpectSame(lazy, eager);
    size_t smpLines = 0;
    for (auto& l : lazy.lines)
    {
        smpLines += l.find(" vl15") != std::string::npos;
    }
    std::printf("SM sweep on a leaf-spine fabric (20 ports): %s, %zu VL15 trace lines; refresh "
                "events at Active %llu lazy (+%llu lazy ticks), %llu eager\n",
                lazy.notes[0].c_str(), smpLines, (unsigned long long)lazyAtUp,
                (unsigned long long)lazyTicksAtUp, (unsigned long long)eagerAtUp);
    EXPECT_GT(smpLines, 500u);
    EXPECT_EQ(lazyAtUp + lazyTicksAtUp, eagerAtUp);
    // A port's first ticks after training run as events until the link is idle; after that
    // only a link that carries several SMPs at once (the SM's four outstanding ones share the
    // few cables of this fabric) wakes. Measured: 71 refresh events at Active (3.5 per port,
    // 240 when every SMP woke its link, 560 all events); on a k=16 fat-tree about one per port.
    EXPECT_LE(lazyAtUp, 5u * 20u);
    EXPECT_GT(eagerAtUp, 5 * lazyAtUp);
}

namespace
{

/// Two hosts through a switch, refresh every 4,096 symbol times (655 ns), idle until every timer
/// sleeps; then host 0 is handed three 4 KiB packets at 10 us + `offsetPs`, so that for some
/// offsets a refresh tick of the sleeping link falls while the first is on the wire and the
/// others wait behind it.
Observed
RunBurstOnSleepingLink(bool lazy, int64_t offsetPs)
{
    SetLazy(lazy);
    Config::SetDefault("ns3::IbNetDevice::FlowControlRefreshSymbols", UintegerValue(4096));
    Observed o;
    IbFabric f = BuildActiveTwoHosts(2, &o);
    Ptr<IbNetDevice> h0 = f.HostPort(0);
    const uint16_t lid1 = f.HostPort(1)->GetLid();
    Simulator::Schedule(MicroSeconds(10) + PicoSeconds(offsetPs), [h0, lid1, &o]() {
        o.notes.push_back(std::string("dormant ") + (h0->IsRefreshDormant() ? "yes" : "no"));
        for (int i = 0; i < 3; ++i)
        {
            h0->SendIb(Create<Packet>(4096), lid1, i % 2);
        }
    });
    return RunAndRecordEnd(f, o, MicroSeconds(20));
}

} // namespace

// Data handed to a port whose link sleeps wakes the link before anything is sent (only a lone
// VL15 packet may go without waking it): over offsets spanning a refresh period, the packets,
// refresh packets and credits are where the all-events refresh puts them.
TEST(IbIdle, DataOnASleepingLinkWakesItFirst)
{
    int dormantStarts = 0;
    for (int64_t offset = 0; offset < 655'360; offset += 13'107)
    {
        SCOPED_TRACE("offset " + std::to_string(offset) + " ps");
        Observed lazy = RunBurstOnSleepingLink(true, offset);
        Observed eager = RunBurstOnSleepingLink(false, offset);
        ExpectSame(lazy, eager);
        dormantStarts += !lazy.notes.empty() && lazy.notes[0] == "dormant yes";
    }
    EXPECT_GE(dormantStarts, 40); // the bursts did start on a sleeping link
}

namespace
{

/// A credit stall that begins on a sleeping link: host 4 fills its switch port's VL1 buffer
/// with packets that cannot leave (the switch's port to host 3 is configured to serve VL0 only),
/// its link goes to sleep, then host 4 is handed more VL1 packets and stalls for want of credit;
/// 4 us later the port serves VL1 again (a VL0 packet from host 5 kicks it) and all drain.
Observed
RunStallOnSleepingLink(bool lazy)
{
    SetLazy(lazy);
    Config::SetDefault("ns3::IbNetDevice::FlowControlRefreshSymbols", UintegerValue(4096));
    Config::SetDefault("ns3::IbNetDevice::VlBufferBytes", UintegerValue(8 * 4160));
    Observed o;
    IbFabricHelper h;
    IbFabric f = h.Build(MakeLeafSpine(2, 2, 3)); // hosts 3-5 on leaf 1
    IbStaticSubnetHelper subnet;
    subnet.SetOperationalVls(2);
    subnet.Configure(f.nodes);
    ConnectPassiveTraces(f, &o);
    Ptr<IbNetDevice> h4 = f.HostPort(4);
    Ptr<IbNetDevice> toH3 = f.HostPort(3)->GetPeer();
    const uint16_t lid3 = subnet.GetLid(f.hosts.Get(3));
    toH3->GetVlArbiter().SetTables({}, {{0, 255}}, 0); // VL1 is never chosen
    Simulator::Schedule(MicroSeconds(2), [h4, lid3]() {
        for (int i = 0; i < 8; ++i)
        {
            h4->SendIb(Create<Packet>(4096), lid3, 1);
        }
    });
    Simulator::Schedule(MicroSeconds(8), [h4, lid3, &o]() {
        o.notes.push_back(std::string("h4 dormant ") + (h4->IsRefreshDormant() ? "yes" : "no") +
                          ", credits " + std::to_string(h4->GetCreditsAvailable(1)));
        for (int i = 0; i < 3; ++i)
        {
            h4->SendIb(Create<Packet>(4096), lid3, 1);
        }
    });
    Ptr<IbNetDevice> h5 = f.HostPort(5);
    Simulator::Schedule(MicroSeconds(12), [toH3, h5, lid3]() {
        toH3->GetVlArbiter().SetDefault(2);
        h5->SendIb(Create<Packet>(4096), lid3, 0);
    });
    return RunAndRecordEnd(f, o, MicroSeconds(30));
}

} // namespace

// The stall's flow-control packets from the switch come as events while host 4 waits (the
// all-events refresh sends them every period, and a stalled transmitter processes each one):
// data handed to a sleeping link must wake it before the transmitter decides, whether or not
// it can send.
TEST(IbIdle, StallThatBeginsOnASleepingLinkIsIdenticalToAllEventsRefresh)
{
    Observed lazy = RunStallOnSleepingLink(true);
    Observed eager = RunStallOnSleepingLink(false);
    ASSERT_EQ(lazy.notes.size(), 1u);
    EXPECT_EQ(lazy.notes[0], "h4 dormant yes, credits 0");
    ExpectSame(lazy, eager);
    size_t h4Rx = 0;
    for (auto& l : lazy.lines)
    {
        h4Rx += l.find(" rx ") != std::string::npos && l.find(" vl1 ") != std::string::npos;
    }
    EXPECT_GE(h4Rx, 11u); // every VL1 packet reached somewhere once the port served VL1 again
}


namespace
{

/// Two hosts through a switch with 8 data VLs: a packet each way (the credit updates they set
/// off put VL0's refresh out of step with the other VLs' on every link they cross), `idle` of
/// silence, then the same again.
Observed
RunTrafficIdleTraffic(bool lazy, Time idle)
{
    SetLazy(lazy);
    Observed o;
    IbFabric f = BuildActiveTwoHosts(8, &o);
    Ptr<IbNetDevice> h0 = f.HostPort(0);
    Ptr<IbNetDevice> h1 = f.HostPort(1);
    auto burst = [h0, h1]() {
        h0->SendIb(Create<Packet>(100), h1->GetLid(), 0);
        h1->SendIb(Create<Packet>(2048), h0->GetLid(), 0);
    };
    Simulator::Schedule(MicroSeconds(3), burst);
    Simulator::Schedule(MicroSeconds(3) + idle, burst);
    return RunAndRecordEnd(f, o, MicroSeconds(3) + idle + MicroSeconds(20));
}

} // namespace

// A link that sleeps after traffic has VLs refreshed at different offsets in the period, so a
// period holds more than one tick. The catch-up used to step through every one of them: a
// second of idle cost 17 ms of CPU at the next packet on a 2-host, 8-VL fabric, and an
// emulated IPoIB ping after 2 s of silence took 12-50 ms. It now recognises that the period
// repeats and accounts for whole periods at once, with every trace and counter as before.
TEST(IbIdle, ALongIdleStretchAfterTrafficIsCaughtUpAPeriodAtATime)
{
    const Time idle = MilliSeconds(20); // 1,907 periods of 10.49 us
    Observed lazy = RunTrafficIdleTraffic(true, idle);
    Observed eager = RunTrafficIdleTraffic(false, idle);
    ExpectSame(lazy, eager);
    const uint64_t periods = 20'000'000'000ull / (65536ull * 160);
    // Four ports, more than one tick a period on those the traffic crossed.
    EXPECT_GT(lazy.lazyRefreshes, 4 * (periods - 10));
    EXPECT_GT(lazy.lazyRefreshes, 5 * periods) << "the traffic did not split the phases";
    // Nearly all accounted by whole periods: a few periods around each wake are stepped.
    EXPECT_GT(lazy.lazySkipped, lazy.lazyRefreshes - 200) << lazy.lazySkipped << " of "
                                                          << lazy.lazyRefreshes;
    EXPECT_EQ(eager.lazySkipped, 0u);
}
