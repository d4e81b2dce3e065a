// The speed-ups of the RoCE run change nothing that is simulated: a small fat-tree under the
// firmware DCQCN gives the same flow completion times to the picosecond, the same packets, marks
// and CNPs whichever event scheduler runs it, whether the ICRC is computed lazily or eagerly,
// and whether per-flow monitoring samples or not; and a finished flow leaves no QP behind.
#include "helpers/roce/roce-traffic-run.h"
#include "models/common/event-tail.h"
#include "models/common/fifo-heap-scheduler.h"
#include "models/ib/ib-crc.h"
#include "models/roce/eth-frame.h"
#include "models/rdma/rdma-device.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/object-factory.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

/// 48 flows on a k=4 fat-tree (16 hosts), sizes 1 KB..300 KB and starts within 60 us from a
/// fixed linear congruential sequence, firmware DCQCN with an aggressive RED curve so that
/// marks, CNPs and the per-QP rate timers all take part.
RoceRunSpec
SmallFatTree()
{
    RoceRunSpec s;
    s.topology = MakeFatTree(4);
    s.hostRate = DataRate("40Gbps");
    s.fabricRate = DataRate("40Gbps");
    s.cc = "ns3::RdmaCcDcqcnMlx";
    s.kminBytes = 4000;
    s.kmaxBytes = 40000;
    s.pmax = 0.2;
    s.ethMtu = 9000;
    s.limit = MilliSeconds(20);
    uint64_t x = 12345;
    auto next = [&x]() {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<uint32_t>(x >> 33);
    };
    for (uint32_t f = 0; f < 48; ++f)
    {
        RoceFlowSpec fs;
        fs.src = next() % 16;
        fs.dst = (fs.src + 1 + next() % 15) % 16;
        fs.bytes = 1000 + next() % 300000;
        fs.start = NanoSeconds(next() % 60000);
        s.flows.push_back(fs);
    }
    return s;
}

struct Outcome
{
    std::vector<int64_t> fctPs;
    uint64_t packets = 0;
    uint64_t marks = 0;
    uint64_t cnps = 0;
    uint64_t drops = 0;
    uint64_t events = 0; ///< not compared: the speed-ups are meant to change it
    bool allDone = false;
};

Outcome
RunIt(const RoceRunSpec& spec)
{
    const RoceRunResult r = RunRoceFlows(spec);
    Outcome o;
    for (const auto& f : r.flows)
    {
        o.fctPs.push_back(f.fct.GetPicoSeconds());
    }
    o.packets = r.packetsSent;
    o.marks = r.ecnMarks;
    o.cnps = r.cnps;
    o.drops = r.drops;
    o.events = r.events;
    o.allDone = r.allDone;
    return o;
}

void
ExpectSame(const Outcome& a, const Outcome& b, const std::string& what)
{
    EXPECT_EQ(a.fctPs, b.fctPs) << what;
    EXPECT_EQ(a.packets, b.packets) << what;
    EXPECT_EQ(a.marks, b.marks) << what;
    EXPECT_EQ(a.cnps, b.cnps) << what;
    EXPECT_EQ(a.drops, b.drops) << what;
}

class RocePerf : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        m_ref = SmallFatTree();
        m_ref.scheduler = "ns3::MapScheduler";
    }

    void TearDown() override
    {
        Config::Reset();
    }

    /// The reference run (map scheduler, defaults), checked to exercise what the others vary.
    Outcome Reference()
    {
        const Outcome o = RunIt(m_ref);
        EXPECT_TRUE(o.allDone);
        EXPECT_GT(o.marks, 0u);
        EXPECT_GT(o.cnps, 0u);
        EXPECT_EQ(o.drops, 0u);
        return o;
    }

    RoceRunSpec m_ref;
};

} // namespace

TEST_F(RocePerf, SchedulerChoiceChangesNoOutcome)
{
    // Every ns-3 scheduler orders events by (time, insertion number): the same total order.
    const Outcome ref = Reference();
    for (const char* s : {"ns3::FifoHeapScheduler",
                          "ns3::PriorityQueueScheduler",
                          "ns3::HeapScheduler",
                          "ns3::CalendarScheduler"})
    {
        RoceRunSpec spec = m_ref;
        spec.scheduler = s;
        ExpectSame(ref, RunIt(spec), s);
    }
}

TEST_F(RocePerf, PumpTurnsAtTheEndOfAnEventChangeNoOutcome)
{
    // Under FifoHeapScheduler the NIC scheduler's pump runs at the end of the event that asks
    // for it whenever it would have been the next event (EventTail): the same outcome, and
    // every pump run that way is exactly one event fewer than under a scheduler that never
    // allows it (MapScheduler: the reference).
    const Outcome ref = Reference();
    RoceRunSpec spec = m_ref;
    spec.scheduler = "ns3::FifoHeapScheduler";
    const uint64_t before = EventTail::GetRunCount();
    const Outcome o = RunIt(spec);
    const uint64_t deferred = EventTail::GetRunCount() - before;
    ExpectSame(ref, o, "FifoHeapScheduler with EventTail");
    EXPECT_GT(deferred, ref.packets / 2); // most pump turns need no event of their own
    EXPECT_EQ(o.events + deferred, ref.events);
}

TEST_F(RocePerf, PumpTurnsAtTheEndOfAnEventChangeNoOutcomeUnderPfc)
{
    // The same with a small shared buffer, so that ports pause and resume (PFC): a resumed host
    // port takes a frame in a PFC event or from Kick inside another handler, and the pump it asks
    // for must wait for the end of that event as its own event would.
    m_ref.bufferBytes = 600 * 1024;
    const Outcome ref = RunIt(m_ref);
    const RoceRunResult mapRun = RunRoceFlows(m_ref);
    ASSERT_GT(mapRun.pauseFrames, 0u);
    RoceRunSpec spec = m_ref;
    spec.scheduler = "ns3::FifoHeapScheduler";
    const uint64_t before = EventTail::GetRunCount();
    const RoceRunResult fifoRun = RunRoceFlows(spec);
    const uint64_t deferred = EventTail::GetRunCount() - before;
    const Outcome o = RunIt(spec);
    ExpectSame(ref, o, "FifoHeapScheduler with EventTail, PFC");
    EXPECT_EQ(fifoRun.pauseFrames, mapRun.pauseFrames);
    EXPECT_GT(deferred, 0u);
    EXPECT_EQ(fifoRun.events + deferred, mapRun.events);
}

TEST_F(RocePerf, LazyIcrcChangesNoOutcome)
{
    // Model-made packets are correct by construction: not computing their ICRC at the sender
    // and not checking it at the receiver cannot change a decision (docs/architecture.md §6.7).
    const Outcome lazy = Reference();
    Config::SetDefault("ns3::RoceRdmaPort::LazyIcrc", BooleanValue(false));
    ExpectSame(lazy, RunIt(m_ref), "eager ICRC");
}

TEST_F(RocePerf, SamplingObservesWithoutPerturbing)
{
    const Outcome quiet = Reference();
    RoceRunSpec spec = m_ref;
    spec.sampleInterval = MicroSeconds(5);
    const RoceRunResult r = RunRoceFlows(spec);
    Outcome sampled;
    for (const auto& f : r.flows)
    {
        sampled.fctPs.push_back(f.fct.GetPicoSeconds());
    }
    sampled.packets = r.packetsSent;
    sampled.marks = r.ecnMarks;
    sampled.cnps = r.cnps;
    sampled.drops = r.drops;
    ExpectSame(quiet, sampled, "sampled every 5 us");
    ASSERT_FALSE(r.sampleTimesUs.empty());
    // The samples saw the flows' bytes: their rates integrate to what was sent.
    double bits = 0;
    for (const auto& rates : r.flowRateGbps)
    {
        for (double g : rates)
        {
            bits += g * 1e9 * 5e-6;
        }
    }
    EXPECT_GT(bits, 0.0);
}

TEST_F(RocePerf, FinishedFlowsLeaveNoQpBehind)
{
    std::vector<Ptr<RdmaDevice>> devices;
    m_ref.beforeRun = [&devices](const EthFabric&, const std::vector<RoceHca>& hcas) {
        for (const auto& h : hcas)
        {
            devices.push_back(h.device);
        }
    };
    const Outcome o = RunIt(m_ref);
    ASSERT_TRUE(o.allDone);
    ASSERT_EQ(devices.size(), 16u);
    uint32_t left = 0;
    for (const auto& d : devices)
    {
        left += d->GetNQps();
    }
    EXPECT_EQ(left, 0u) << "QPs of finished flows still exist";
}

/// Takes every event left in `q`, each of which must be the next of `ref`, (timestamp,
/// insertion number) pairs in order; then `q` must be empty.
void
DrainInReferenceOrder(Ptr<Scheduler> q, std::set<std::pair<uint64_t, uint32_t>>& ref)
{
    while (!ref.empty())
    {
        const Scheduler::Event ev = q->RemoveNext();
        ASSERT_EQ(ev.key.m_ts, ref.begin()->first);
        ASSERT_EQ(ev.key.m_uid, ref.begin()->second);
        ref.erase(ref.begin());
    }
    EXPECT_TRUE(q->IsEmpty());
}

/// A scheduler against a reference ordered set: inserts for the current time, the near future
/// (many ties) and far ahead, idle gaps; arbitrary removals; the current time advancing as
/// events leave.
void
CheckOrderAgainstReference(Ptr<Scheduler> q, uint64_t farSpan, uint64_t seed)
{
    std::set<std::pair<uint64_t, uint32_t>> ref;
    uint64_t x = seed;
    auto next = [&x]() {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<uint32_t>(x >> 33);
    };
    uint32_t uid = 0;
    uint64_t now = 0;
    uint32_t removedArbitrarily = 0;
    auto insert = [&](uint64_t ts) {
        Scheduler::Event ev;
        ev.impl = nullptr;
        ev.key.m_ts = ts;
        ev.key.m_uid = ++uid;
        ev.key.m_context = 0;
        q->Insert(ev);
        ref.insert({ts, uid});
    };
    for (int step = 0; step < 40000; ++step)
    {
        const uint32_t r = next() % 12;
        if (r < 3)
        {
            insert(now); // the current time
        }
        else if (r < 6)
        {
            insert(now + 1 + next() % 8); // near future, many ties
        }
        else if (r == 6)
        {
            insert(now + next() % farSpan); // anywhere up to farSpan ahead
        }
        else if (r == 7 && !ref.empty())
        {
            // Simulator::Remove of some pending event.
            auto it = ref.begin();
            std::advance(it, next() % ref.size());
            Scheduler::Event ev;
            ev.impl = nullptr;
            ev.key.m_ts = it->first;
            ev.key.m_uid = it->second;
            ev.key.m_context = 0;
            q->Remove(ev);
            ref.erase(it);
            ++removedArbitrarily;
        }
        else if (!ref.empty())
        {
            ASSERT_FALSE(q->IsEmpty());
            const Scheduler::Event peek = q->PeekNext();
            const Scheduler::Event ev = q->RemoveNext();
            ASSERT_EQ(peek.key.m_uid, ev.key.m_uid);
            ASSERT_EQ(ev.key.m_ts, ref.begin()->first) << "step " << step;
            ASSERT_EQ(ev.key.m_uid, ref.begin()->second) << "step " << step;
            ref.erase(ref.begin());
            now = ev.key.m_ts;
        }
        else
        {
            ASSERT_TRUE(q->IsEmpty());
            now += next() % (4 * farSpan); // idle: the next event may be far away
        }
    }
    DrainInReferenceOrder(q, ref);
    EXPECT_GT(removedArbitrarily, 100u);
}

namespace
{

std::vector<std::string> g_tailLog;
bool g_useTail = false;
uint64_t g_deferred = 0;

void
LogTag(void* tag)
{
    g_tailLog.emplace_back(static_cast<const char*>(tag));
}

/// What a model does to run `tag` now: at the end of this event if EventTail allows it (and
/// g_useTail), else in an event of its own.
void
RunNow(const char* tag)
{
    if (g_useTail && EventTail::TryDefer(&LogTag, const_cast<char*>(tag)))
    {
        ++g_deferred;
        return;
    }
    Simulator::ScheduleNow(&LogTag, static_cast<void*>(const_cast<char*>(tag)));
}

/// Deferred work that asks for more work now (as a pump whose port took a frame at once).
void
LogAndChain(void* tag)
{
    LogTag(tag);
    RunNow("chained");
}

void
Handler(const char* name)
{
    EventTail::Scope scope;
    g_tailLog.emplace_back(name);
    const std::string n = name;
    if (n == "alone")
    {
        // Nothing else at this instant: deferred, and what the deferred work asks for too.
        if (g_useTail && EventTail::TryDefer(&LogAndChain, const_cast<char*>("first")))
        {
            ++g_deferred;
        }
        else
        {
            Simulator::ScheduleNow(&LogAndChain, static_cast<void*>(const_cast<char*>("first")));
        }
        RunNow("second"); // queues behind "first", as its event would
    }
    else if (n == "tied-1")
    {
        RunNow("behind-tied-2"); // "tied-2" is pending at this instant: an event
    }
    else if (n == "then-event")
    {
        RunNow("before-event"); // deferred
        Simulator::ScheduleNow(&LogTag, static_cast<void*>(const_cast<char*>("event")));
        RunNow("after-event"); // an event is now pending before it: an event too
    }
    else if (n == "stopping")
    {
        Simulator::Stop();
        RunNow("after-stop"); // stays pending, runs when the simulation resumes
    }
    g_tailLog.emplace_back(n + " end");
}

std::vector<std::string>
RunTailScenario(bool useTail)
{
    g_tailLog.clear();
    g_useTail = useTail;
    g_deferred = 0;
    Simulator::SetScheduler(ObjectFactory("ns3::FifoHeapScheduler"));
    Simulator::Schedule(MicroSeconds(1), &Handler, "alone");
    Simulator::Schedule(MicroSeconds(2), &Handler, "tied-1");
    Simulator::Schedule(MicroSeconds(2), &Handler, "tied-2");
    Simulator::Schedule(MicroSeconds(3), &Handler, "then-event");
    Simulator::Schedule(MicroSeconds(4), &Handler, "stopping");
    Simulator::Schedule(MicroSeconds(5), &Handler, "last");
    Simulator::Run();
    g_tailLog.emplace_back("resumed");
    Simulator::Run();
    Simulator::Destroy();
    return g_tailLog;
}

} // namespace

TEST(EventTail, RunsWorkAtTheEndOfAnEventOnlyWhereItsEventWouldBeNext)
{
    const std::vector<std::string> events = RunTailScenario(false);
    EXPECT_EQ(g_deferred, 0u);
    const std::vector<std::string> tail = RunTailScenario(true);
    EXPECT_EQ(tail, events);
    // "first", "second", "chained" (asked for by "first" at its end), "before-event" and
    // "after-stop" (scheduled as an event at the stop); "behind-tied-2" and "after-event" had an
    // event ahead of them.
    EXPECT_EQ(g_deferred, 5u);
    const std::vector<std::string> expected = {
        "alone", "alone end", "first", "second", "chained",
        "tied-1", "tied-1 end", "tied-2", "tied-2 end", "behind-tied-2",
        "then-event", "then-event end", "before-event", "event", "after-event",
        "stopping", "stopping end", "resumed", "after-stop", "last", "last end"};
    EXPECT_EQ(tail, expected);
}

TEST(FifoHeapScheduler, RemovesInTimestampThenInsertionOrder)
{
    CheckOrderAgainstReference(CreateObject<FifoHeapScheduler>(), 64, 99);
    CheckOrderAgainstReference(CreateObject<FifoHeapScheduler>(), 1u << 20, 7);
}

TEST(FifoHeapScheduler, CalendarKeepsTheOrderWhateverItsBucketsAndWindow)
{
    // Buckets of 1 to 16 ps and windows of 2 to 64 buckets: events land in the current bucket
    // after its sort, in later buckets, beyond the window (the far heap, moved into the
    // calendar as the window reaches them) and the ring wraps many times; Remove finds events
    // in every one of those places. The order must be the reference's throughout.
    for (uint32_t widthLog2 : {0u, 2u, 4u})
    {
        for (uint32_t countLog2 : {1u, 3u, 6u})
        {
            for (uint64_t farSpan : {uint64_t{64}, uint64_t{1} << 12, uint64_t{1} << 20})
            {
                SCOPED_TRACE("width 2^" + std::to_string(widthLog2) + " ps, 2^" +
                             std::to_string(countLog2) + " buckets, span " +
                             std::to_string(farSpan));
                ObjectFactory factory("ns3::FifoHeapScheduler");
                factory.Set("BucketWidthLog2", UintegerValue(widthLog2));
                factory.Set("BucketCountLog2", UintegerValue(countLog2));
                CheckOrderAgainstReference(factory.Create<Scheduler>(),
                                           farSpan,
                                           widthLog2 * 31 + countLog2 * 7 + farSpan);
            }
        }
    }
}

TEST(FifoHeapScheduler, CrowdedBucketsKeepTheOrderOfTies)
{
    // A busy fabric's calendar: buckets of hundreds of events, many at the same picosecond
    // (ports in lockstep), inserted out of time order, some handed over by the far heap, some
    // removed from their bucket before its turn. Ties must come out in insertion order; each
    // width (the default 2^13 ps among them) is checked against the reference order.
    for (uint32_t widthLog2 : {3u, 9u, 13u, 16u, 17u})
    {
        SCOPED_TRACE("width 2^" + std::to_string(widthLog2) + " ps");
        ObjectFactory factory("ns3::FifoHeapScheduler");
        factory.Set("BucketWidthLog2", UintegerValue(widthLog2));
        factory.Set("BucketCountLog2", UintegerValue(4));
        Ptr<Scheduler> q = factory.Create<Scheduler>();
        std::set<std::pair<uint64_t, uint32_t>> ref;
        uint64_t x = 12345 + widthLog2;
        auto next = [&x]() {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            return static_cast<uint32_t>(x >> 33);
        };
        uint32_t uid = 0;
        uint64_t now = 0;
        const uint64_t width = uint64_t{1} << widthLog2;
        size_t removed = 0;
        for (int round = 0; round < 200; ++round)
        {
            // 300 events over the next 40 buckets (the window is 16: the rest go to the far
            // heap first), on 25 distinct instants a bucket: ties everywhere.
            for (int k = 0; k < 300; ++k)
            {
                const uint64_t bucket = 1 + next() % 40;
                const uint64_t ts = now + bucket * width + (next() % 25) * (width / 25);
                Scheduler::Event ev;
                ev.impl = nullptr;
                ev.key = {ts, ++uid, 0};
                q->Insert(ev);
                ref.insert({ts, uid});
            }
            for (int k = 0; k < 5 && !ref.empty(); ++k)
            {
                auto it = ref.begin();
                std::advance(it, next() % ref.size());
                Scheduler::Event ev;
                ev.impl = nullptr;
                ev.key = {it->first, it->second, 0};
                q->Remove(ev);
                ref.erase(it);
                removed++;
            }
            for (int k = 0; k < 290 && !ref.empty(); ++k)
            {
                const Scheduler::Event ev = q->RemoveNext();
                ASSERT_EQ(ev.key.m_ts, ref.begin()->first) << "round " << round;
                ASSERT_EQ(ev.key.m_uid, ref.begin()->second) << "round " << round;
                ref.erase(ref.begin());
                now = ev.key.m_ts;
            }
        }
        DrainInReferenceOrder(q, ref);
        EXPECT_EQ(removed, 1000u);
    }
}

TEST(RoceLazyIcrc, MaterializeFillsTheIcrcOverIpv4AndIpv6)
{
    // A RoCE packet as RoceRdmaPort makes it lazily: BTH (RC SEND Only) + 8 payload bytes + a
    // zero ICRC placeholder. The bytes made from the frame must carry the ICRC of annex
    // A17.4.5.3 (recomputed here over the materialized IP packet) and, over IPv6, a UDP
    // checksum that covers the filled-in ICRC (EthFrame::Parse verifies it).
    std::vector<uint8_t> transport = {0x04, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x12,
                                      0x80, 0x00, 0x00, 0x07, 1,    2,    3,    4,
                                      5,    6,    7,    8,    0,    0,    0,    0};
    for (bool ipv6 : {false, true})
    {
        EthFrame f;
        f.kind = EthFrameKind::Udp;
        f.dstMac = 0x020000000002ULL;
        f.srcMac = 0x020000000001ULL;
        f.ipv6 = ipv6;
        f.srcIp = 0x0A000001;
        f.dstIp = 0x0A000002;
        f.srcIp6 = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        f.dstIp6 = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
        f.flowLabel = 0x12345;
        f.srcPort = 0xC123;
        f.dstPort = 4791;
        f.dscp = 26;
        f.ecn = kEcnEct0;
        f.ipId = 77;
        f.payloadBytes = static_cast<uint32_t>(transport.size());
        f.payload = Create<Packet>(transport.data(), f.payloadBytes);
        f.ComputeSize();
        const uint32_t ipAt = kEthHeaderBytes;
        const uint32_t ipLen = (ipv6 ? kIpv6HeaderBytes : kIpv4HeaderBytes) + kUdpHeaderBytes +
                               f.payloadBytes;
        std::vector<uint8_t> bytes;
        f.icrcPending = false;
        f.Materialize(bytes, true);
        EXPECT_EQ(IbLoadIcrc(bytes.data() + ipAt + ipLen - 4), 0u) << "placeholder kept";
        f.icrcPending = true;
        f.Materialize(bytes, true);
        const uint8_t* ip = bytes.data() + ipAt;
        EXPECT_EQ(IbLoadIcrc(ip + ipLen - 4), IbComputeRoceIcrc(ip, ipLen - 4)) << ipv6;
        EXPECT_NE(IbLoadIcrc(ip + ipLen - 4), 0u);
        EthFrame g;
        g.icrcPending = true; // Parse must clear it: bytes from outside are checked
        ASSERT_EQ(EthFrame::Parse(bytes.data(), static_cast<uint32_t>(bytes.size()), g),
                  EthParseError::None)
            << ipv6;
        EXPECT_FALSE(g.icrcPending);
    }
}

TEST(RoceFrameStorage, InlinePacketAndImpliedZerosMaterializeTheSameBytes)
{
    // The same RoCE payload (a transport part, then zeros, then the ICRC placeholder) stored
    // three ways: all of it in a Packet, its leading bytes in a Packet, its leading bytes in
    // the frame record (up to kInlinePayloadBytes; one byte more goes to a Packet). Every way
    // must read back and materialize to the same bytes, with the same ICRC and FCS.
    constexpr uint32_t kInline = EthFrame::kInlinePayloadBytes;
    for (uint32_t lead : {12u, 40u, kInline, kInline + 1})
    {
        std::vector<uint8_t> full(1028, 0);
        for (uint32_t i = 0; i < lead; ++i)
        {
            full[i] = static_cast<uint8_t>(0x40 + i);
        }
        auto make = [&full](EthFrame& f) {
            f.kind = EthFrameKind::Udp;
            f.dstMac = 0x020000000002ULL;
            f.srcMac = 0x020000000001ULL;
            f.srcIp = 0x0A000001;
            f.dstIp = 0x0A000002;
            f.srcPort = 0xC123;
            f.dstPort = 4791;
            f.ecn = kEcnEct0;
            f.ipId = 5;
            f.icrcPending = true;
            f.payloadBytes = static_cast<uint32_t>(full.size());
            f.ComputeSize();
        };
        EthFrame whole;
        make(whole);
        whole.payload = Create<Packet>(full.data(), static_cast<uint32_t>(full.size()));
        EthFrame leading;
        make(leading);
        leading.payload = Create<Packet>(full.data(), lead);
        EthFrame stored;
        make(stored);
        stored.StorePayload(full.data(), lead);
        EXPECT_EQ(stored.inlineLength != 0, lead <= EthFrame::kInlinePayloadBytes) << lead;
        EXPECT_EQ(stored.payload == nullptr, lead <= EthFrame::kInlinePayloadBytes) << lead;
        EXPECT_EQ(stored.StoredPayloadBytes(), lead);
        std::vector<uint8_t> back(full.size(), 0xEE);
        EXPECT_EQ(stored.CopyPayload(back.data(), static_cast<uint32_t>(back.size())), lead);
        EXPECT_TRUE(std::equal(back.begin(), back.begin() + lead, full.begin()));
        std::vector<uint8_t> a;
        std::vector<uint8_t> b;
        std::vector<uint8_t> c;
        whole.Materialize(a, true);
        leading.Materialize(b, true);
        stored.Materialize(c, true);
        EXPECT_EQ(a, b) << lead;
        EXPECT_EQ(a, c) << lead;
        EthFrame parsed;
        ASSERT_EQ(EthFrame::Parse(c.data(), static_cast<uint32_t>(c.size()), parsed),
                  EthParseError::None);
        EXPECT_EQ(parsed.inlineLength, 0u); // bytes from outside keep all of their payload
        EXPECT_EQ(parsed.StoredPayloadBytes(), full.size());
    }
}
