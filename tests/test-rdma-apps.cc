// RDMA traffic applications: the message generator (closed and open loop, every operation on
// RC, UC and UD), ping-pong and the FCT recorder, checked against the wire arithmetic of
// docs/ib-link.md §2.1/§2.9 worked out here independently of the code under test.
#include "rdma-apps-fixture.h"

#include "models/rdma/apps/rdma-fct-recorder.h"
#include "models/rdma/apps/rdma-message-generator.h"
#include "models/rdma/apps/rdma-message-sink.h"
#include "models/rdma/apps/rdma-null-memory.h"
#include "models/rdma/apps/rdma-ping-pong.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/pointer.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

using namespace ns3;
using namespace cnuas_test;

namespace
{

// ---- The wire arithmetic, written out from docs/ib-link.md (4x HDR, 2 m cables, 5 ns/m,
// ---- cut-through switch with 100 ns latency: the defaults of the pair topology).

constexpr int64_t kColumnPs = 160;      ///< one 4-byte column on 4x HDR (symbol time)
constexpr int64_t kPropPs = 10000;      ///< 2 m x 5 ns/m
constexpr int64_t kSwitchPs = 100000;   ///< IbSwitch Latency
constexpr int64_t kCutThroughPs = 3 * kColumnPs; ///< LRH 8 bytes + start delimiter: 3 columns

/// Wire time of a packet whose transport part (BTH .. payload, before pad) is `transport`:
/// LRH 8 + transport + pad + ICRC 4 + VCRC 2 + 2 delimiter bytes, in whole columns of 4 bytes.
int64_t
SerPs(uint32_t transport)
{
    const uint32_t padded = (transport + 3) / 4 * 4;
    const uint32_t wire = 8 + padded + 4 + 2 + 2;
    return (wire + 3) / 4 * kColumnPs;
}

/// From the start of a packet at one host to its tail at the other, through one cut-through
/// switch: head at the switch after 3 columns, cable, latency; then its whole length on the
/// second link and that cable.
int64_t
OneWayPs(uint32_t transport)
{
    return kCutThroughPs + kPropPs + kSwitchPs + SerPs(transport) + kPropPs;
}

/// A channel adapter that has just received a data packet owes its link partner a credit
/// update: the flow-control packet (6 bytes + 2 delimiters = 2 columns) goes at the next
/// transmit opportunity ahead of any data (docs/ib-link.md §2.4, IBA vol. 1 §7.9.4.3), so a
/// packet a host sends in reaction to one it received starts this much later.
constexpr int64_t kFcPs = 2 * kColumnPs;

constexpr uint32_t kBth = 12, kReth = 16, kAeth = 4, kImm = 4, kDeth = 8;

Ptr<RdmaMessageGenerator>
MakeGenerator(const RdmaAppEndpoint& ep, RdmaWrOpcode op, uint64_t size)
{
    Ptr<RdmaMessageGenerator> g = CreateObject<RdmaMessageGenerator>();
    g->SetAttribute("Operation", EnumValue(static_cast<int>(op)));
    g->SetAttribute("MessageSize",
                    StringValue("ns3::ConstantRandomVariable[Constant=" + std::to_string(size) +
                                "]"));
    g->SetEndpoint(ep);
    return g;
}

} // namespace

TEST_F(RdmaAppsTest, ClosedLoopOneOutstandingWriteCompletesOnceEveryRoundTrip)
{
    Build();
    RdmaConnectOptions o;
    o.rqDepth = 1; // a generator posts no receives: a receive queue of one is never overrun
    traffic->SetOptions(o);
    auto [a, b] = traffic->Connect(0, 1);
    const uint32_t size = 1000;
    Ptr<RdmaMessageGenerator> g = MakeGenerator(a, RdmaWrOpcode::RDMA_WRITE, size);
    hcas[0].node->AddApplication(g);
    std::vector<Time> fcts;
    g->TraceConnectWithoutContext("Message", MakeCallback(+[](std::vector<Time>* v, uint64_t,
                                                              Time t) { v->push_back(t); })
                                                 .Bind(&fcts));
    const Time start = MicroSeconds(20);
    g->SetStartTime(start - Simulator::Now());
    // One WRITE Only packet (BTH + RETH + 1000 bytes) there, one ACK (BTH + AETH) back; the
    // next message is posted at the instant the completion is polled. Each turnaround (the ACK
    // at h1, the next WRITE at h0) waits for the credit update of the packet just received.
    const int64_t cycle =
        OneWayPs(kBth + kReth + size) + kFcPs + OneWayPs(kBth + kAeth) + kFcPs;
    const int n = 50;
    RunUntil(start + PicoSeconds(cycle * n - kFcPs + cycle / 2));
    ASSERT_EQ(fcts.size(), size_t(n));
    // The first WRITE is posted by the application's start, not in reaction to a packet: h0
    // owes no credit update yet.
    EXPECT_EQ(fcts[0].GetPicoSeconds(), cycle - kFcPs);
    for (int i = 1; i < n; ++i)
    {
        EXPECT_EQ(fcts[i].GetPicoSeconds(), cycle) << "message " << i;
    }
    EXPECT_EQ(g->GetIssued(), uint64_t(n + 1)); // the (n+1)th is in flight
    EXPECT_EQ(g->GetBytesCompleted(), uint64_t(n) * size);
    EXPECT_EQ(g->GetPostErrors(), 0u);
}

namespace
{
struct PingCase
{
    RdmaQpType type;
    RdmaWrOpcode op;
    uint32_t size;
};

std::string
PingName(const ::testing::TestParamInfo<PingCase>& p)
{
    const char* t = p.param.type == RdmaQpType::RC ? "Rc" : p.param.type == RdmaQpType::UC ? "Uc"
                                                                                          : "Ud";
    const char* o = p.param.op == RdmaWrOpcode::SEND            ? "Send"
                    : p.param.op == RdmaWrOpcode::SEND_WITH_IMM ? "SendImm"
                                                                : "WriteImm";
    return std::string(t) + o + std::to_string(p.param.size);
}
} // namespace

class RdmaAppsPingPong : public RdmaAppsTest, public ::testing::WithParamInterface<PingCase>
{
};

TEST_P(RdmaAppsPingPong, RoundTripEqualsTheWireArithmetic)
{
    const PingCase c = GetParam();
    Build();
    RdmaConnectOptions o;
    o.type = c.type;
    traffic->SetOptions(o);
    auto [a, b] = traffic->Connect(0, 1);
    Ptr<RdmaPingPong> client = CreateObject<RdmaPingPong>();
    Ptr<RdmaPingPong> server = CreateObject<RdmaPingPong>();
    client->SetEndpoint(a);
    server->SetEndpoint(b);
    server->SetAttribute("Role", EnumValue(RdmaPingPong::SERVER));
    for (auto app : {client, server})
    {
        app->SetAttribute("Operation", EnumValue(static_cast<int>(c.op)));
    }
    const uint32_t iterations = 20;
    client->SetAttribute("MessageSize", UintegerValue(c.size));
    client->SetAttribute("Iterations", UintegerValue(iterations));
    hcas[0].node->AddApplication(client);
    hcas[1].node->AddApplication(server);
    server->SetStartTime(MicroSeconds(15) - Simulator::Now());
    client->SetStartTime(MicroSeconds(20) - Simulator::Now());
    RunUntil(MicroSeconds(200));

    // The packet each way (IBA vol. 1 §9.2 header sequence per opcode, Only packets since the
    // message fits one MTU): BTH, then DETH on UD, RETH for an RDMA WRITE, ImmDt with an
    // immediate.
    uint32_t transport = kBth + c.size;
    if (c.type == RdmaQpType::UD)
    {
        transport += kDeth;
    }
    if (c.op == RdmaWrOpcode::RDMA_WRITE_WITH_IMM)
    {
        transport += kReth;
    }
    if (c.op != RdmaWrOpcode::SEND)
    {
        transport += kImm;
    }
    // A host answers a packet after the credit update it owes (kFcPs) and, on RC, after the
    // ACK of what it received (the responder's ACK is queued before the application polls).
    const int64_t turnaround = kFcPs + (c.type == RdmaQpType::RC ? SerPs(kBth + kAeth) : 0);
    const int64_t first = 2 * OneWayPs(transport) + turnaround;
    // From the second round on, the client's own turnaround after the pong delays the ping.
    const int64_t steady = first + turnaround;
    const auto& rtts = client->GetRtts();
    ASSERT_EQ(rtts.size(), iterations);
    EXPECT_EQ(rtts[0].GetPicoSeconds(), first);
    for (uint32_t i = 1; i < iterations; ++i)
    {
        EXPECT_EQ(rtts[i].GetPicoSeconds(), steady) << "round " << i;
    }
    EXPECT_EQ(server->GetSent(), iterations);
    EXPECT_EQ(client->GetPostErrors() + server->GetPostErrors(), 0u);
    EXPECT_EQ(client->GetErrorCompletions() + server->GetErrorCompletions(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Ops,
                         RdmaAppsPingPong,
                         ::testing::Values(PingCase{RdmaQpType::RC, RdmaWrOpcode::SEND, 64},
                                           PingCase{RdmaQpType::RC, RdmaWrOpcode::SEND, 4096},
                                           PingCase{RdmaQpType::RC, RdmaWrOpcode::SEND_WITH_IMM,
                                                    1},
                                           PingCase{RdmaQpType::RC,
                                                    RdmaWrOpcode::RDMA_WRITE_WITH_IMM, 1000},
                                           PingCase{RdmaQpType::UC, RdmaWrOpcode::SEND, 64},
                                           PingCase{RdmaQpType::UC,
                                                    RdmaWrOpcode::RDMA_WRITE_WITH_IMM, 333},
                                           PingCase{RdmaQpType::UD, RdmaWrOpcode::SEND, 64},
                                           PingCase{RdmaQpType::UD, RdmaWrOpcode::SEND_WITH_IMM,
                                                    2000}),
                         PingName);

namespace
{
struct OpCase
{
    RdmaQpType type;
    RdmaWrOpcode op;
};

std::string
OpName(const ::testing::TestParamInfo<OpCase>& p)
{
    const char* t = p.param.type == RdmaQpType::RC ? "Rc" : p.param.type == RdmaQpType::UC ? "Uc"
                                                                                          : "Ud";
    std::string o = RdmaWrOpcodeName(p.param.op);
    o.erase(std::remove(o.begin(), o.end(), '_'), o.end());
    return t + o;
}

/// Deterministic test bytes.
std::vector<uint8_t>
Pattern(size_t n, uint32_t seed)
{
    std::vector<uint8_t> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : v)
    {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = static_cast<uint8_t>(x);
    }
    return v;
}
} // namespace

class RdmaAppsOps : public RdmaAppsTest, public ::testing::WithParamInterface<OpCase>
{
};

TEST_P(RdmaAppsOps, GeneratorCarriesEveryOperationTheQpTypeAllows)
{
    const OpCase c = GetParam();
    Build("pair", /*realMemory=*/true, /*bufferBytes=*/1 << 20);
    RdmaConnectOptions o;
    o.type = c.type;
    o.mtu = RdmaMtu::MTU_1024; // multi-packet messages on RC and UC
    traffic->SetOptions(o);
    auto [a, b] = traffic->Connect(0, 1);
    const uint32_t size = c.type == RdmaQpType::UD ? 1000 : 3000;
    const auto srcData = Pattern(size, 1);
    const auto peerData = Pattern(size, 2);
    Ptr<RdmaMemory> ma = traffic->GetMemory(0);
    Ptr<RdmaMemory> mb = traffic->GetMemory(1);
    ASSERT_TRUE(ma->Write(a.localAddr, srcData.data(), size));
    ASSERT_TRUE(mb->Write(b.localAddr, peerData.data(), size));
    const uint64_t one = 1;
    const bool atomic =
        c.op == RdmaWrOpcode::ATOMIC_CMP_AND_SWP || c.op == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD;
    if (atomic)
    {
        // The target word starts at 1 (host byte order is the simulated memory's).
        ASSERT_TRUE(mb->Write(b.localAddr, reinterpret_cast<const uint8_t*>(&one), 8));
    }

    Ptr<RdmaFctRecorder> rec = CreateObject<RdmaFctRecorder>();
    Ptr<RdmaMessageGenerator> g = MakeGenerator(a, c.op, size);
    const uint32_t n = 5;
    g->SetAttribute("MaxMessages", UintegerValue(n));
    g->SetAttribute("Outstanding", UintegerValue(2));
    g->SetRecorder(rec);
    hcas[0].node->AddApplication(g);
    Ptr<RdmaMessageSink> sink = CreateObject<RdmaMessageSink>();
    sink->SetEndpoint(b);
    hcas[1].node->AddApplication(sink);
    sink->SetStartTime(MicroSeconds(15) - Simulator::Now());
    g->SetStartTime(MicroSeconds(20) - Simulator::Now());
    RunUntil(MicroSeconds(300));

    EXPECT_EQ(g->GetIssued(), n);
    EXPECT_EQ(g->GetCompleted(), n);
    EXPECT_EQ(g->GetPostErrors(), 0u);
    EXPECT_EQ(g->GetErrorCompletions(), 0u);
    EXPECT_EQ(rec->GetStarted(), n);
    EXPECT_EQ(rec->GetCompleted(), n);
    EXPECT_EQ(rec->GetBadCompletions(), 0u);
    const bool twoSided = c.op == RdmaWrOpcode::SEND || c.op == RdmaWrOpcode::SEND_WITH_IMM ||
                          c.op == RdmaWrOpcode::RDMA_WRITE_WITH_IMM;
    // One-sided operations never show at the peer's receive queue (seed 000 §3).
    EXPECT_EQ(sink->GetMessages(), twoSided ? n : 0u);
    // UD receive buffers start with 40 bytes for the GRH (IBA vol. 1 §11.4.1.2).
    const uint32_t grh = c.type == RdmaQpType::UD ? 40 : 0;
    EXPECT_EQ(sink->GetBytes(), twoSided ? uint64_t(n) * (size + grh) : 0u);

    std::vector<uint8_t> got(size);
    uint64_t word = 0;
    switch (c.op)
    {
    case RdmaWrOpcode::SEND:
    case RdmaWrOpcode::SEND_WITH_IMM:
    case RdmaWrOpcode::RDMA_WRITE:
    case RdmaWrOpcode::RDMA_WRITE_WITH_IMM:
        ASSERT_TRUE(mb->Read(b.localAddr + grh, got.data(), size));
        EXPECT_EQ(got, srcData);
        break;
    case RdmaWrOpcode::RDMA_READ:
        ASSERT_TRUE(ma->Read(a.localAddr, got.data(), size));
        EXPECT_EQ(got, peerData);
        break;
    case RdmaWrOpcode::ATOMIC_FETCH_AND_ADD:
        // Five adds of 1 (compare_add) to 1.
        ASSERT_TRUE(mb->Read(b.localAddr, reinterpret_cast<uint8_t*>(&word), 8));
        EXPECT_EQ(word, 1u + n);
        break;
    case RdmaWrOpcode::ATOMIC_CMP_AND_SWP:
        // The first compare (1) matches and swaps in wr_id 0; the next four find 0 and leave it.
        ASSERT_TRUE(mb->Read(b.localAddr, reinterpret_cast<uint8_t*>(&word), 8));
        EXPECT_EQ(word, 0u);
        break;
    default:
        FAIL();
    }
    // Every message is recorded once, in issue order, with its size and operation.
    std::set<uint64_t> ids;
    for (const auto& r : rec->GetRecords())
    {
        EXPECT_TRUE(r.done);
        EXPECT_EQ(r.status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(r.size, atomic ? 8u : size);
        EXPECT_EQ(r.opcode, c.op);
        EXPECT_EQ(r.src, 0u);
        EXPECT_EQ(r.dst, 1u);
        // RC completes at the acknowledgment (or response), after a round trip; the engine
        // completes UC and UD sends when the last packet is handed to the port, which is the
        // instant of the post when the port queue has room.
        if (c.type == RdmaQpType::RC)
        {
            EXPECT_GT(r.end, r.start);
        }
        else
        {
            EXPECT_GE(r.end, r.start);
        }
        ids.insert(r.id);
    }
    EXPECT_EQ(ids.size(), n);
}

INSTANTIATE_TEST_SUITE_P(
    Ops,
    RdmaAppsOps,
    ::testing::Values(OpCase{RdmaQpType::RC, RdmaWrOpcode::SEND},
                      OpCase{RdmaQpType::RC, RdmaWrOpcode::SEND_WITH_IMM},
                      OpCase{RdmaQpType::RC, RdmaWrOpcode::RDMA_WRITE},
                      OpCase{RdmaQpType::RC, RdmaWrOpcode::RDMA_WRITE_WITH_IMM},
                      OpCase{RdmaQpType::RC, RdmaWrOpcode::RDMA_READ},
                      OpCase{RdmaQpType::RC, RdmaWrOpcode::ATOMIC_CMP_AND_SWP},
                      OpCase{RdmaQpType::RC, RdmaWrOpcode::ATOMIC_FETCH_AND_ADD},
                      OpCase{RdmaQpType::UC, RdmaWrOpcode::SEND},
                      OpCase{RdmaQpType::UC, RdmaWrOpcode::SEND_WITH_IMM},
                      OpCase{RdmaQpType::UC, RdmaWrOpcode::RDMA_WRITE},
                      OpCase{RdmaQpType::UC, RdmaWrOpcode::RDMA_WRITE_WITH_IMM},
                      OpCase{RdmaQpType::UD, RdmaWrOpcode::SEND},
                      OpCase{RdmaQpType::UD, RdmaWrOpcode::SEND_WITH_IMM}),
    OpName);

TEST_F(RdmaAppsTest, OperationsTheQpTypeForbidsAreRefusedAndCounted)
{
    // UC has no READ or atomics, UD only SEND (IBA vol. 1 §9.4, table "operations per service"):
    // the QP refuses the WR; the generator counts it and records no completion.
    for (auto [type, op] : {std::pair{RdmaQpType::UC, RdmaWrOpcode::RDMA_READ},
                            std::pair{RdmaQpType::UC, RdmaWrOpcode::ATOMIC_FETCH_AND_ADD},
                            std::pair{RdmaQpType::UD, RdmaWrOpcode::RDMA_WRITE}})
    {
        Build();
        RdmaConnectOptions o;
        o.type = type;
        traffic->SetOptions(o);
        auto [a, b] = traffic->Connect(0, 1);
        Ptr<RdmaMessageGenerator> g = MakeGenerator(a, op, 100);
        g->SetAttribute("MaxMessages", UintegerValue(3));
        Ptr<RdmaFctRecorder> rec = CreateObject<RdmaFctRecorder>();
        g->SetRecorder(rec);
        hcas[0].node->AddApplication(g);
        g->SetStartTime(MicroSeconds(20) - Simulator::Now());
        RunUntil(MicroSeconds(100));
        EXPECT_EQ(g->GetPostErrors(), 1u) << RdmaWrOpcodeName(op);
        EXPECT_EQ(g->GetCompleted(), 0u);
        EXPECT_EQ(rec->GetCompleted(), 0u);
        TearDown();
    }
}

TEST_F(RdmaAppsTest, UdMessageLargerThanTheMtuIsRefusedNotCut)
{
    Build();
    RdmaConnectOptions o;
    o.type = RdmaQpType::UD;
    traffic->SetOptions(o);
    auto [a, b] = traffic->Connect(0, 1);
    Ptr<RdmaMessageGenerator> g = MakeGenerator(a, RdmaWrOpcode::SEND, 4097);
    g->SetAttribute("MaxMessages", UintegerValue(2));
    g->SetAttribute("Outstanding", UintegerValue(2));
    hcas[0].node->AddApplication(g);
    Ptr<RdmaMessageSink> sink = CreateObject<RdmaMessageSink>();
    sink->SetEndpoint(b);
    hcas[1].node->AddApplication(sink);
    g->SetStartTime(MicroSeconds(20) - Simulator::Now());
    RunUntil(MicroSeconds(100));
    EXPECT_EQ(g->GetIssued(), 2u);
    EXPECT_EQ(g->GetCompleted() + g->GetErrorCompletions() + g->GetPostErrors(), 2u);
    EXPECT_EQ(g->GetCompleted(), 0u);
    EXPECT_EQ(sink->GetMessages(), 0u);
}

TEST(RdmaAppsFctRecorder, EachMessageOnceBadCompletionsCountedCsvRows)
{
    Ptr<RdmaFctRecorder> r = CreateObject<RdmaFctRecorder>();
    uint64_t ids[3];
    Simulator::Schedule(NanoSeconds(10), [&]() {
        ids[0] = r->Start(0, 1, 7, RdmaWrOpcode::RDMA_WRITE, 1000);
        ids[1] = r->Start(2, 1, 8, RdmaWrOpcode::SEND, 64);
        ids[2] = r->Start(3, 1, 9, RdmaWrOpcode::RDMA_READ, 5);
    });
    Simulator::Schedule(NanoSeconds(250), [&]() {
        EXPECT_TRUE(r->Complete(ids[1], RdmaWcStatus::SUCCESS));
        EXPECT_FALSE(r->Complete(ids[1], RdmaWcStatus::SUCCESS)); // twice
        EXPECT_FALSE(r->Complete(99, RdmaWcStatus::SUCCESS));     // never started
    });
    Simulator::Schedule(NanoSeconds(1010), [&]() {
        EXPECT_TRUE(r->Complete(ids[0], RdmaWcStatus::RETRY_EXC_ERR));
    });
    Simulator::Run();
    Simulator::Destroy();
    EXPECT_EQ(r->GetStarted(), 3u);
    EXPECT_EQ(r->GetCompleted(), 2u);
    EXPECT_EQ(r->GetFailed(), 1u);
    EXPECT_EQ(r->GetBadCompletions(), 2u);
    EXPECT_EQ(r->GetRecords()[ids[1]].end - r->GetRecords()[ids[1]].start, NanoSeconds(240));

    const std::string path = std::string(CNUAS_BINARY_DIR) + "/test-fct-recorder.csv";
    ASSERT_TRUE(r->WriteCsv(path, [](const RdmaFctRecorder::Record& rec) {
        return NanoSeconds(rec.size / 10); // any ideal: 100 ns and 6 ns here
    }));
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);)
    {
        lines.push_back(l);
    }
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[0], "id,src,dst,qpn,opcode,size_bytes,start_ns,end_ns,fct_ns,ideal_ns,"
                        "slowdown,status");
    EXPECT_EQ(lines[1], "0,0,1,7,RDMA_WRITE,1000,10.000,1010.000,1000.000,100.000,10.0000,"
                        "transport retry counter exceeded");
    EXPECT_EQ(lines[2], "1,2,1,8,SEND,64,10.000,250.000,240.000,6.000,40.0000,success");
    EXPECT_EQ(lines[3], "# 1 messages issued and not completed");
}

TEST_F(RdmaAppsTest, OpenLoopFixedIntervalIssuesOnScheduleAndEachFindsAnIdlePath)
{
    Build();
    auto [a, b] = traffic->Connect(0, 1);
    const uint32_t size = 512;
    Ptr<RdmaMessageGenerator> g = MakeGenerator(a, RdmaWrOpcode::RDMA_WRITE, size);
    g->SetAttribute("Mode", EnumValue(RdmaMessageGenerator::OPEN_LOOP));
    g->SetAttribute("InterArrival", StringValue("ns3::ConstantRandomVariable[Constant=1e-6]"));
    Ptr<RdmaFctRecorder> rec = CreateObject<RdmaFctRecorder>();
    g->SetRecorder(rec);
    hcas[0].node->AddApplication(g);
    const Time start = MicroSeconds(20);
    g->SetStartTime(start - Simulator::Now());
    g->SetStopTime(start + NanoSeconds(29500) - Simulator::Now());
    RunUntil(MicroSeconds(60));
    // Arrivals at 1, 2, ..., 29 us after the start (the first a gap after it); each finds h0
    // idle (no credit update owed: the previous ACK's went out long before), so its FCT is the
    // bare round trip.
    ASSERT_EQ(rec->GetStarted(), 29u);
    const int64_t rtt = OneWayPs(kBth + kReth + size) + kFcPs + OneWayPs(kBth + kAeth);
    for (const auto& r : rec->GetRecords())
    {
        EXPECT_EQ((r.start - start).GetPicoSeconds(), int64_t(r.id + 1) * 1000000);
        ASSERT_TRUE(r.done);
        EXPECT_EQ((r.end - r.start).GetPicoSeconds(), rtt) << r.id;
    }
}

TEST_F(RdmaAppsTest, OpenLoopPoissonArrivalsHaveTheConfiguredMean)
{
    Build();
    auto [a, b] = traffic->Connect(0, 1);
    Ptr<RdmaMessageGenerator> g = MakeGenerator(a, RdmaWrOpcode::RDMA_WRITE, 64);
    g->SetAttribute("Mode", EnumValue(RdmaMessageGenerator::OPEN_LOOP));
    g->SetAttribute("InterArrival", StringValue("ns3::ExponentialRandomVariable[Mean=2e-6]"));
    g->SetAttribute("MaxMessages", UintegerValue(3000));
    g->AssignStreams(17);
    Ptr<RdmaFctRecorder> rec = CreateObject<RdmaFctRecorder>();
    g->SetRecorder(rec);
    hcas[0].node->AddApplication(g);
    g->SetStartTime(MicroSeconds(20) - Simulator::Now());
    RunUntil(MilliSeconds(10));
    const auto& recs = rec->GetRecords();
    ASSERT_EQ(recs.size(), 3000u);
    EXPECT_EQ(rec->GetCompleted(), 3000u);
    const double span = (recs.back().start - recs.front().start).GetSeconds();
    const double mean = span / double(recs.size() - 1);
    // Exponential gaps: the mean of 2999 has a standard deviation of 2 us / sqrt(2999).
    EXPECT_NEAR(mean, 2e-6, 5 * 2e-6 / std::sqrt(2999.0));
    // Memorylessness shows as a coefficient of variation near 1 (a fixed interval gives 0).
    double sq = 0;
    for (size_t i = 1; i < recs.size(); ++i)
    {
        const double gap = (recs[i].start - recs[i - 1].start).GetSeconds();
        sq += (gap - mean) * (gap - mean);
    }
    EXPECT_NEAR(std::sqrt(sq / double(recs.size() - 2)) / mean, 1.0, 0.1);
}

TEST(RdmaAppsNullMemory, WindowReadsZerosDiscardsWritesAndFaultsOutside)
{
    Ptr<RdmaNullMemory> m = CreateObject<RdmaNullMemory>();
    m->SetAttribute("Base", UintegerValue(0x1000));
    m->SetAttribute("Size", UintegerValue(0x100));
    uint8_t buf[0x101];
    std::memset(buf, 0xAB, sizeof(buf));
    EXPECT_TRUE(m->Write(0x1000, buf, 0x100));
    EXPECT_EQ(m->GetBytesWritten(), 0x100u);
    EXPECT_TRUE(m->Read(0x1000, buf, 0x100));
    EXPECT_EQ(std::count(buf, buf + 0x100, 0), 0x100);
    EXPECT_EQ(buf[0x100], 0xAB); // nothing past the requested length
    // One byte before, one byte after, straddling the end, a range that wraps: all fault and
    // change nothing.
    EXPECT_FALSE(m->IsMapped(0xFFF, 1));
    EXPECT_FALSE(m->IsMapped(0x1100, 1));
    EXPECT_FALSE(m->Write(0x10FF, buf, 2));
    EXPECT_FALSE(m->Read(0x10FF, buf, 2));
    EXPECT_FALSE(m->IsMapped(UINT64_MAX, 2));
    EXPECT_TRUE(m->IsMapped(0x10FF, 1));
    EXPECT_TRUE(m->IsMapped(0x1100, 0)); // an empty range at the end
    EXPECT_EQ(m->GetBytesWritten(), 0x100u);
}

TEST_F(RdmaAppsTest, HelperRefusesAnUnknownHostWithItsReason)
{
    Build();
    try
    {
        traffic->Connect(0, 7);
        FAIL() << "host 7 of 2 accepted";
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_NE(std::string(e.what()).find("no host 7 (2 hosts)"), std::string::npos)
            << e.what();
    }
}

TEST_F(RdmaAppsTest, GeneratorWithoutEndpointStopsWithAMessage)
{
    Build();
    Ptr<RdmaMessageGenerator> g = CreateObject<RdmaMessageGenerator>();
    hcas[0].node->AddApplication(g);
    g->SetStartTime(MicroSeconds(1));
    EXPECT_DEATH(RunUntil(MicroSeconds(20)), "no endpoint set");
}
