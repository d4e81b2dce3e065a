// RDMA traffic applications: the message generator (closed and open loop, every operation on
// RC, UC and UD), ping-pong and the FCT recorder, checked against the wire arithmetic of
// docs/ib-link.md §2.1/§2.9 worked out here independently of the code under test.
#include "rdma-apps-fixture.h"

#include "models/rdma/apps/rdma-fct-recorder.h"
#include "models/rdma/apps/rdma-message-generator.h"
#include "models/rdma/apps/rdma-message-sink.h"
#include "models/rdma/apps/rdma-ping-pong.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/pointer.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <cmath>

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
