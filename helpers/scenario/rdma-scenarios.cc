// Built-in RDMA-over-InfiniBand traffic scenarios for `cnuas run`: rdma-pingpong, rdma-incast,
// rdma-fct (docs/rdma-transport.md, "Traffic applications and scenarios").
#include "helpers/rdma/rdma-traffic-run.h"
#include "helpers/scenario/scenario.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace ns3
{

namespace
{

/// The largest RDMA message IBA allows (2^31 bytes), also RdmaDevice's MaxMessageSize default.
constexpr uint64_t kMaxMessageBytes = 1ULL << 31;

RdmaWrOpcode
ParseOp(const std::string& s, bool pingPong)
{
    const std::pair<const char*, RdmaWrOpcode> ops[] = {
        {"send", RdmaWrOpcode::SEND},
        {"send-imm", RdmaWrOpcode::SEND_WITH_IMM},
        {"write", RdmaWrOpcode::RDMA_WRITE},
        {"write-imm", RdmaWrOpcode::RDMA_WRITE_WITH_IMM},
        {"read", RdmaWrOpcode::RDMA_READ},
        {"cmp-swap", RdmaWrOpcode::ATOMIC_CMP_AND_SWP},
        {"fetch-add", RdmaWrOpcode::ATOMIC_FETCH_AND_ADD}};
    for (const auto& [name, op] : ops)
    {
        if (s == name)
        {
            if (pingPong && op != RdmaWrOpcode::SEND && op != RdmaWrOpcode::SEND_WITH_IMM &&
                op != RdmaWrOpcode::RDMA_WRITE_WITH_IMM)
            {
                throw std::invalid_argument("ping-pong needs an operation the peer sees "
                                            "(send, send-imm, write-imm), not '" + s + "'");
            }
            return op;
        }
    }
    throw std::invalid_argument("op must be send, send-imm, write, write-imm, read, cmp-swap "
                                "or fetch-add, not '" + s + "'");
}

RdmaQpType
ParseQpType(const std::string& s)
{
    if (s == "rc")
    {
        return RdmaQpType::RC;
    }
    if (s == "uc")
    {
        return RdmaQpType::UC;
    }
    if (s == "ud")
    {
        return RdmaQpType::UD;
    }
    throw std::invalid_argument("qp must be rc, uc or ud, not '" + s + "'");
}

/// Fill the parameters every RDMA scenario has.
RdmaTrafficSpec
CommonSpec(const ScenarioOptions& o, const ScenarioInfo& info, bool pingPong)
{
    CheckScenarioParams(o, info);
    RdmaTrafficSpec s;
    s.topology = ScenarioParamString(o, info, "topology");
    // Built here once only to check it, so that a bad spec is reported against where it was
    // given (RunRdmaTraffic builds it again).
    ScenarioParamTopology(o, info);
    s.rate = ScenarioParamString(o, info, "rate");
    s.qpType = ParseQpType(ScenarioParamString(o, info, "qp"));
    s.op = ParseOp(ScenarioParamString(o, info, "op"), pingPong);
    s.mtu = RdmaMtuFromBytes(
        ScenarioParamUintOneOf(o, info, "mtu", {256, 512, 1024, 2048, 4096}));
    s.seed = o.seed;
    s.run = o.run;
    ApplyScenarioOutputs(o, s);
    return s;
}

std::vector<ScenarioParam>
CommonParams(const std::string& topology, const std::string& op)
{
    return {{"topology", topology, "fabric (see docs/cli.md)"},
            {"rate", "", "link rate for links the topology leaves open, e.g. 4xNDR (default: "
                         "the IbNetDevice attributes, 4x HDR)"},
            {"qp", "rc", "QP type: rc, uc or ud (ud: SEND only, one MTU)"},
            {"op", op, "operation: send, send-imm, write, write-imm, read, cmp-swap, fetch-add"},
            {"mtu", "4096", "path MTU, bytes (256 .. 4096)"}};
}

/// What RunRdmaTraffic sets on the applications it makes (helpers/rdma/rdma-traffic-run.cc).
void
RdmaRunSetsAttributes(ScenarioInfo& i)
{
    ScenarioSetsAttributes(i,
                           {{"ns3::RdmaMessageGenerator::Operation", "op"},
                            {"ns3::RdmaMessageGenerator::MessageSize", "size"},
                            {"ns3::RdmaMessageGenerator::Mode", ""},
                            {"ns3::RdmaMessageGenerator::InterArrival", "load"},
                            {"ns3::RdmaMessageGenerator::Outstanding", "outstanding"},
                            {"ns3::RdmaMessageGenerator::MaxPosted", ""},
                            {"ns3::RdmaPingPong::Role", ""},
                            {"ns3::RdmaPingPong::Operation", "op"},
                            {"ns3::RdmaPingPong::MessageSize", "size"},
                            {"ns3::RdmaPingPong::Iterations", "iterations"}});
}

/// After the scenario's own verdict: a run Ctrl-C stopped says so first and exits 130.
void
MarkIfInterrupted(ScenarioResult& r, const RdmaTrafficStats& st)
{
    if (st.interrupted)
    {
        ScenarioMarkInterrupted(r, st.simulated);
    }
}

void
AddCommonSummary(ScenarioResult& r, const RdmaTrafficSpec& spec, const RdmaTrafficStats& st)
{
    auto add = [&](const std::string& k, const std::string& v) { r.summary.emplace_back(k, v); };
    add("topology", spec.topology + " (" + std::to_string(st.hosts) + " hosts, " +
                        std::to_string(st.switches) + " switches)");
    add("link rate",
        st.linkRateName + " (" + ScenarioFixed(st.linkDataRate / 1e9, 1) + " Gb/s data)");
    add("simulated", ScenarioFixed(st.simulated.GetSeconds() * 1e6, 1) + " us in " +
                         ScenarioFixed(st.wallSeconds, 2) + " s wall");
    add("messages", std::to_string(st.messagesIssued) + " issued, " +
                        std::to_string(st.messagesCompleted) + " completed, " +
                        std::to_string(st.messagesFailed) + " failed, " +
                        std::to_string(st.postErrors) + " refused by the QP");
    add("transport packets", std::to_string(st.transportPackets) + " sent by the HCAs (" +
                                 std::to_string(st.retransmissions) + " retransmitted), " +
                                 std::to_string(st.packetHops) + " packet-hops");
    add("events", std::to_string(st.events) + " (" +
                      ScenarioFixed(double(st.events) /
                                        std::max<uint64_t>(1, st.transportPackets),
                                    2) +
                      " per transport packet)");
}

int
ExitCode(const RdmaTrafficStats& st)
{
    return (st.messagesFailed == 0 && st.postErrors == 0) ? 0 : 1;
}

ScenarioInfo
PingPongInfo()
{
    ScenarioInfo i;
    i.name = "rdma-pingpong";
    i.description = "RDMA ping-pong between the first and the last host: round-trip time of "
                    "SEND (or WRITE with immediate) messages";
    i.params = CommonParams("pair", "send");
    i.params.push_back({"size", "64", "message bytes"});
    i.params.push_back({"iterations", "1000", "round trips"});
    i.pcap = ScenarioPcap::Wire;
    i.run = [](const ScenarioOptions& o) {
        const ScenarioInfo& info = *ScenarioRegistry::Find("rdma-pingpong");
        RdmaTrafficSpec s = CommonSpec(o, info, true);
        s.pattern = RdmaTrafficSpec::Pattern::PingPong;
        s.size = ScenarioParamUint(o, info, "size", 0, kMaxMessageBytes);
        s.iterations =
            static_cast<uint32_t>(ScenarioParamUint(o, info, "iterations", 1, UINT32_MAX));
        // Long enough for any sane configuration; the run stops at the last round trip.
        s.duration = Seconds(1);
        RdmaTrafficStats st = RunRdmaTraffic(s);
        ScenarioResult r;
        AddCommonSummary(r, s, st);
        if (!st.rtts.empty())
        {
            std::vector<double> ns;
            for (const Time& t : st.rtts)
            {
                ns.push_back(t.GetPicoSeconds() / 1000.0);
            }
            const double mean = std::accumulate(ns.begin(), ns.end(), 0.0) / double(ns.size());
            r.summary.emplace_back("round trip",
                                   "first " + ScenarioFixed(ns.front(), 3) + " ns, mean " +
                                       ScenarioFixed(mean, 3) + " ns, min " +
                                       ScenarioFixed(*std::min_element(ns.begin(), ns.end()), 3) +
                                       " ns, max " +
                                       ScenarioFixed(*std::max_element(ns.begin(), ns.end()), 3) +
                                       " ns");
            r.summary.emplace_back("one-way latency (half the mean round trip)",
                                   ScenarioFixed(mean / 2, 3) + " ns");
        }
        r.artifacts = st.artifacts;
        r.exitCode = (ExitCode(st) == 0 && st.rtts.size() == s.iterations) ? 0 : 1;
        MarkIfInterrupted(r, st);
        return r;
    };
    RdmaRunSetsAttributes(i);
    return i;
}

ScenarioInfo
IncastInfo()
{
    ScenarioInfo i;
    i.name = "rdma-incast";
    i.description = "RDMA N-to-1 incast: senders run closed loops of WRITEs (or SENDs) to the "
                    "last host; credit flow control shares its link";
    i.params = CommonParams("star:hosts=9", "write");
    i.params.push_back({"senders", "8", "hosts sending to the last host (hosts 0 .. senders-1)"});
    i.params.push_back({"size", "65536", "message bytes"});
    i.params.push_back({"outstanding", "4", "messages in flight per sender"});
    i.params.push_back({"duration-us", "200", "how long messages are issued, microseconds"});
    i.pcap = ScenarioPcap::Wire;
    i.run = [](const ScenarioOptions& o) {
        const ScenarioInfo& info = *ScenarioRegistry::Find("rdma-incast");
        RdmaTrafficSpec s = CommonSpec(o, info, false);
        s.pattern = RdmaTrafficSpec::Pattern::Incast;
        s.senders = static_cast<uint32_t>(ScenarioParamUint(o, info, "senders", 1, UINT32_MAX));
        s.size = ScenarioParamUint(o, info, "size", 0, kMaxMessageBytes);
        s.outstanding =
            static_cast<uint32_t>(ScenarioParamUint(o, info, "outstanding", 1, 65536));
        s.duration = ScenarioParamMicroseconds(o, info, "duration-us", 1e-6, 1e9);
        RdmaTrafficStats st = RunRdmaTraffic(s);
        ScenarioResult r;
        AddCommonSummary(r, s, st);
        r.summary.emplace_back("goodput into the last host",
                               ScenarioFixed(st.goodputGbps, 2) + " Gb/s of messages (" +
                                   ScenarioFixed(100 * st.goodputGbps * 1e9 / st.linkDataRate, 1) +
                                   "% of the link's data rate), " +
                                   ScenarioFixed(st.messagesPerSecond / 1e6, 3) + " M messages/s");
        // Jain's fairness index of the senders' goodputs: 1 when the link is shared equally.
        double sum = 0, sq = 0;
        for (const auto& [name, gbps] : st.connectionGbps)
        {
            r.summary.emplace_back("sender " + name, ScenarioFixed(gbps, 2) + " Gb/s");
            sum += gbps;
            sq += gbps * gbps;
        }
        if (!st.connectionGbps.empty() && sq > 0)
        {
            r.summary.emplace_back("fairness (Jain's index)",
                                   ScenarioFixed(sum * sum /
                                                     (double(st.connectionGbps.size()) * sq),
                                                 4));
        }
        r.artifacts = st.artifacts;
        r.exitCode = ExitCode(st);
        MarkIfInterrupted(r, st);
        return r;
    };
    RdmaRunSetsAttributes(i);
    return i;
}

ScenarioInfo
FctInfo()
{
    ScenarioInfo i;
    i.name = "rdma-fct";
    i.description = "RDMA flow completion times: every host sends WRITEs to every other with "
                    "Poisson arrivals and sizes from a CDF; FCT CSV and slowdown plot";
    i.params = CommonParams("fat-tree:k=4", "write");
    i.params[2].help = "QP type: rc only (FCT ends at the acknowledgment)";
    i.params[3].help = "operation: write, write-imm, send or send-imm";
    i.params.push_back({"cdf", "websearch.cdf",
                        "message-size CDF: a file, or a name in data/cdf/ (websearch.cdf, "
                        "fb-hadoop.cdf; format: data/cdf/README.md)"});
    i.params.push_back({"load", "0.3", "offered load per host, fraction of its link rate"});
    i.params.push_back({"duration-us", "1000", "how long messages arrive, microseconds"});
    i.params.push_back({"drain-us", "20000", "longest wait for the last messages, microseconds"});
    i.params.push_back({"qps-per-pair", "1",
                        "RC QPs per (source, destination) pair, each with its share of the "
                        "arrivals (messages on one QP complete in order)"});
    i.pcap = ScenarioPcap::Wire;
    i.run = [](const ScenarioOptions& o) {
        const ScenarioInfo& info = *ScenarioRegistry::Find("rdma-fct");
        RdmaTrafficSpec s = CommonSpec(o, info, false);
        s.pattern = RdmaTrafficSpec::Pattern::Fct;
        // A flow completes with its acknowledgment: only RC has one (UC and UD sends complete
        // when handed to the port), and the ideal is worked out for data that flows from the
        // requester (SEND, WRITE), not for READ responses or atomics.
        if (s.qpType != RdmaQpType::RC)
        {
            throw std::invalid_argument("rdma-fct measures completion at the acknowledgment: "
                                        "qp must be rc");
        }
        if (s.op != RdmaWrOpcode::RDMA_WRITE && s.op != RdmaWrOpcode::RDMA_WRITE_WITH_IMM &&
            s.op != RdmaWrOpcode::SEND && s.op != RdmaWrOpcode::SEND_WITH_IMM)
        {
            throw std::invalid_argument("rdma-fct needs op write, write-imm, send or send-imm");
        }
        s.cdf = ScenarioParamString(o, info, "cdf");
        s.load = ScenarioParamDouble(o, info, "load", 1e-6, 1);
        s.duration = ScenarioParamMicroseconds(o, info, "duration-us", 1e-6, 1e9);
        s.drain = ScenarioParamMicroseconds(o, info, "drain-us", 0, 1e9);
        s.qps = static_cast<uint32_t>(ScenarioParamUint(o, info, "qps-per-pair", 1, 64));
        RdmaTrafficStats st = RunRdmaTraffic(s);
        ScenarioResult r;
        AddCommonSummary(r, s, st);
        r.summary.emplace_back("connections", std::to_string(st.connections) + " QP pairs");
        r.summary.emplace_back("FCT slowdown (fct / ideal)",
                               "p50 " + ScenarioFixed(st.fctP50, 2) + ", p95 " +
                                   ScenarioFixed(st.fctP95, 2) + ", p99 " +
                                   ScenarioFixed(st.fctP99, 2));
        const uint64_t open = st.messagesIssued - st.messagesCompleted - st.messagesFailed -
                              st.postErrors;
        r.summary.emplace_back("unfinished", std::to_string(open) +
                                                 " messages still in flight at the end");
        r.artifacts = st.artifacts;
        r.exitCode = (ExitCode(st) == 0 && open == 0) ? 0 : 1;
        MarkIfInterrupted(r, st);
        return r;
    };
    RdmaRunSetsAttributes(i);
    return i;
}

} // namespace

CNUAS_REGISTER_SCENARIO(PingPongInfo());
CNUAS_REGISTER_SCENARIO(IncastInfo());
CNUAS_REGISTER_SCENARIO(FctInfo());

} // namespace ns3
