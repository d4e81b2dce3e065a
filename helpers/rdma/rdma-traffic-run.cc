#include "rdma-traffic-run.h"

#include "helpers/formats/parse-util.h"
#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/rdma/rdma-traffic-helper.h"
#include "helpers/scenario/scenario.h"
#include "helpers/scenario/sim-progress.h"
#include "helpers/trace/ib-trace-helper.h"
#include "models/common/data-directory.h"
#include "models/ib/ib-channel.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-port-counters.h"
#include "models/ib/ib-switch.h"
#include "models/rdma/apps/empirical-size-distribution.h"
#include "models/rdma/apps/rdma-fct-recorder.h"
#include "models/rdma/apps/rdma-message-generator.h"
#include "models/rdma/apps/rdma-message-sink.h"
#include "models/rdma/apps/rdma-ping-pong.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/node.h"
#include "ns3/pointer.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <stdexcept>

namespace ns3
{

namespace
{
bool
TwoSided(RdmaWrOpcode op)
{
    return op == RdmaWrOpcode::SEND || op == RdmaWrOpcode::SEND_WITH_IMM ||
           op == RdmaWrOpcode::RDMA_WRITE_WITH_IMM;
}

double
Percentile(std::vector<double> v, double p)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    // Nearest rank (the smallest value with at least p of the sample at or below it).
    const size_t rank = static_cast<size_t>(std::ceil(p * double(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}
} // namespace

std::string
RdmaShippedCdf(const std::string& name)
{
    return CnuasDataFile("cdf/" + name);
}

std::string
RdmaResolveCdf(const std::string& value)
{
    std::error_code ec;
    if (std::filesystem::is_regular_file(value, ec))
    {
        return value;
    }
    if (value.find('/') == std::string::npos && !value.empty())
    {
        try
        {
            return RdmaShippedCdf(value);
        }
        catch (const std::runtime_error& e)
        {
            throw InputError("cdf: " + std::string(e.what()));
        }
    }
    // The file the user named is not there: an input error, as for any file they give.
    throw InputError("cdf: no such file '" + value +
                     "' (a path, or the name of a CDF shipped in data/cdf/)");
}

Time
RdmaIdealFct(uint64_t size, RdmaWrOpcode op, uint32_t mtu, int hops, const IbLinkRate& rate,
             Time propagation, Time switchLatency, uint32_t cutThroughBytes,
             uint32_t delimiterBytes)
{
    // IBA vol. 1 §9.2: a SEND carries BTH (+ ImmDt on its last packet); a WRITE's first packet
    // carries the RETH (+ ImmDt on the last for WRITE with immediate).
    auto wire = [&](uint32_t transport) {
        return rate.SerializationTime(RdmaIbWireBytes((transport + 3) / 4 * 4, delimiterBytes));
    };
    const bool write =
        op == RdmaWrOpcode::RDMA_WRITE || op == RdmaWrOpcode::RDMA_WRITE_WITH_IMM;
    const bool imm =
        op == RdmaWrOpcode::SEND_WITH_IMM || op == RdmaWrOpcode::RDMA_WRITE_WITH_IMM;
    const uint64_t packets = size == 0 ? 1 : (size + mtu - 1) / mtu;
    Time data(0);
    Time last(0);
    for (uint64_t i = 0; i < packets; ++i)
    {
        const uint64_t payload = std::min<uint64_t>(mtu, size - i * mtu);
        uint32_t t = 12 + static_cast<uint32_t>(payload);
        t += (write && i == 0) ? 16 : 0;
        t += (imm && i + 1 == packets) ? 4 : 0;
        last = wire(t);
        data += last;
    }
    // Cut-through: a switch routes a packet once its LRH (and the start delimiter) is in.
    const Time head = rate.SerializationTime(cutThroughBytes + delimiterBytes / 2);
    const int switches = std::max(0, hops - 1);
    const Time perSwitch = head + propagation + switchLatency;
    const Time oneWayTail = switches * perSwitch + propagation; // after the tail leaves
    const Time ack = switches * perSwitch + wire(12 + 4) + propagation;
    return data + oneWayTail + ack;
}

RdmaTrafficStats
RunRdmaTraffic(const RdmaTrafficSpec& spec)
{
    using Pattern = RdmaTrafficSpec::Pattern;
    if (spec.duration <= Time(0) && spec.pattern != Pattern::PingPong)
    {
        throw std::invalid_argument("the traffic duration must be positive");
    }
    if (spec.pattern == Pattern::Fct && !(spec.load > 0 && spec.load <= 1))
    {
        throw std::invalid_argument("load must be in (0, 1], not " + std::to_string(spec.load));
    }
    RngSeedManager::SetSeed(static_cast<uint32_t>(spec.seed));
    RngSeedManager::SetRun(spec.run);
    Ptr<EmpiricalSizeDistribution> cdf;
    if (spec.pattern == Pattern::Fct)
    {
        cdf = CreateObject<EmpiricalSizeDistribution>();
        std::string err;
        if (!cdf->LoadFile(RdmaResolveCdf(spec.cdf), &err))
        {
            throw InputError(err); // names the file and line
        }
    }

    Topology topo = BuildTopologyFromSpec(spec.topology);
    IbFabricHelper fh;
    fh.SetDefaultRate(spec.rate);
    IbFabric f = fh.Build(topo);
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    const uint32_t nHosts = f.hosts.GetN();
    auto hostName = [&](uint32_t i) { return topo.nodes[f.hostNodes[i]].name; };
    if (nHosts < 2)
    {
        throw std::invalid_argument("the topology has fewer than two hosts");
    }
    if ((spec.pattern == Pattern::Incast || spec.pattern == Pattern::Qps) &&
        spec.qpType != RdmaQpType::RC && !TwoSided(spec.op))
    {
        // A UC WRITE completes when handed to the port and nothing tells an application at
        // the target that it arrived: its goodput cannot be measured.
        throw std::invalid_argument("on UC only operations the target sees (send, send-imm, "
                                    "write-imm) have a measurable goodput");
    }
    if (spec.pattern == Pattern::Incast && (spec.senders < 1 || spec.senders >= nHosts))
    {
        throw std::invalid_argument("incast needs 1.." + std::to_string(nHosts - 1) +
                                    " senders for " + std::to_string(nHosts) + " hosts");
    }
    std::vector<RdmaHca> hcas = RdmaHelper().Install(f);

    RdmaTrafficStats st;
    st.hosts = nHosts;
    st.switches = f.switches.GetN();
    IbPcapHelper pcap;
    if (!spec.pcapDir.empty())
    {
        for (const std::string& path : EnableHostPcaps(pcap, f, spec.pcapDir))
        {
            st.artifacts.push_back(path);
        }
    }

    // Bring the ports up (training, then Init -> Armed -> Active as the subnet manager would),
    // then connect: the LIDs are known.
    Simulator::Stop(MicroSeconds(10));
    Simulator::Run();
    // Ports that are not Active by now (still training, say) would carry nothing, and a run
    // that moved no data is no measurement.
    if (const std::string notActive = IbFabricNotActive(f); !notActive.empty())
    {
        throw std::runtime_error("the fabric did not come up: after 10 us, " + notActive);
    }
    const Time start = MicroSeconds(20);
    const Time stop = start + spec.duration;

    RdmaTrafficHelper traffic(hcas, /*realMemory=*/false);
    RdmaConnectOptions opts;
    opts.type = spec.qpType;
    opts.mtu = spec.mtu;
    opts.psnSeed = spec.seed;
    if (spec.pattern == Pattern::Qps && spec.qps > 64)
    {
        // Many QPs on one HCA: small queues keep the host memory per QP small.
        opts.sqDepth = std::max<uint32_t>(spec.outstanding, 4);
        opts.rqDepth = 4;
    }
    opts.sqDepth = std::max(opts.sqDepth, spec.outstanding);
    traffic.SetOptions(opts);

    Ptr<RdmaFctRecorder> recorder = CreateObject<RdmaFctRecorder>();
    std::vector<Ptr<RdmaMessageGenerator>> gens;
    std::vector<Ptr<RdmaMessageSink>> sinks;
    Ptr<RdmaPingPong> client;
    Ptr<RdmaPingPong> server;
    uint64_t windowMessages = 0;
    uint64_t windowBytes = 0;
    // Per connection; a deque keeps the counters' addresses stable for the trace sinks.
    std::deque<std::pair<std::string, uint64_t>> perConnection;
    int64_t stream = 100;

    auto addGenerator = [&](uint32_t s, uint32_t d, Ptr<RandomVariableStream> size,
                            Ptr<RandomVariableStream> gap) {
        auto [a, b] = traffic.Connect(s, d);
        st.connections++;
        Ptr<RdmaMessageGenerator> g = CreateObject<RdmaMessageGenerator>();
        g->SetAttribute("Operation", EnumValue(static_cast<int>(spec.op)));
        g->SetAttribute("MessageSize", PointerValue(size));
        if (gap)
        {
            g->SetAttribute("Mode", EnumValue(RdmaMessageGenerator::OPEN_LOOP));
            g->SetAttribute("InterArrival", PointerValue(gap));
        }
        else
        {
            g->SetAttribute("Outstanding", UintegerValue(spec.outstanding));
        }
        g->SetAttribute("MaxPosted", UintegerValue(opts.sqDepth));
        g->SetEndpoint(a);
        g->AssignStreams(stream);
        stream += 2;
        if (spec.pattern == Pattern::Fct)
        {
            g->SetRecorder(recorder);
        }
        perConnection.emplace_back(hostName(s) + " -> " + hostName(d), 0);
        uint64_t* mine = &perConnection.back().second;
        // Goodput is counted where delivery is known: at the receiver's completion for the
        // operations that consume a receive WQE, at the requester's for one-sided ones (RC: it
        // comes with the acknowledgment or the response).
        if (!TwoSided(spec.op))
        {
            g->TraceConnectWithoutContext(
                "Message",
                MakeCallback(+[](uint64_t* n, uint64_t* bytes, uint64_t* mine, Time end,
                                 uint64_t size, Time) {
                    if (Simulator::Now() <= end)
                    {
                        (*n)++;
                        *bytes += size;
                        *mine += size;
                    }
                }).Bind(&windowMessages, &windowBytes, mine, stop));
        }
        hcas[s].node->AddApplication(g);
        g->SetStartTime(start - Simulator::Now());
        g->SetStopTime(stop - Simulator::Now());
        gens.push_back(g);
        if (TwoSided(spec.op))
        {
            Ptr<RdmaMessageSink> k = CreateObject<RdmaMessageSink>();
            k->SetEndpoint(b);
            if (spec.pattern == Pattern::Qps && spec.qps > 64)
            {
                k->SetAttribute("ReceiveDepth", UintegerValue(opts.rqDepth));
            }
            hcas[d].node->AddApplication(k);
            k->SetStartTime(MicroSeconds(15) - Simulator::Now());
            sinks.push_back(k);
            // UD receive completions count the 40-byte GRH area (IBA vol. 1 §11.4.1.2).
            const uint32_t grh = spec.qpType == RdmaQpType::UD ? 40 : 0;
            k->TraceConnectWithoutContext(
                "Rx",
                MakeCallback(+[](uint64_t* n, uint64_t* bytes, uint64_t* mine, Time end,
                                 uint32_t grh, const RdmaWc& wc) {
                    if (Simulator::Now() <= end)
                    {
                        (*n)++;
                        const uint64_t b = wc.byte_len >= grh ? wc.byte_len - grh : 0;
                        *bytes += b;
                        *mine += b;
                    }
                }).Bind(&windowMessages, &windowBytes, mine, stop, grh));
        }
    };
    auto constSize = [&]() {
        Ptr<ConstantRandomVariable> c = CreateObject<ConstantRandomVariable>();
        c->SetAttribute("Constant", DoubleValue(double(spec.size)));
        return c;
    };

    switch (spec.pattern)
    {
    case Pattern::PingPong: {
        auto [a, b] = traffic.Connect(0, nHosts - 1);
        st.connections = 1;
        client = CreateObject<RdmaPingPong>();
        server = CreateObject<RdmaPingPong>();
        client->SetEndpoint(a);
        server->SetEndpoint(b);
        server->SetAttribute("Role", EnumValue(RdmaPingPong::SERVER));
        for (auto app : {client, server})
        {
            app->SetAttribute("Operation", EnumValue(static_cast<int>(spec.op)));
        }
        client->SetAttribute("MessageSize", UintegerValue(spec.size));
        client->SetAttribute("Iterations", UintegerValue(spec.iterations));
        hcas[0].node->AddApplication(client);
        hcas[nHosts - 1].node->AddApplication(server);
        server->SetStartTime(MicroSeconds(15) - Simulator::Now());
        client->SetStartTime(start - Simulator::Now());
        break;
    }
    case Pattern::Incast:
        for (uint32_t s = 0; s < spec.senders; ++s)
        {
            addGenerator(s, nHosts - 1, constSize(), nullptr);
        }
        break;
    case Pattern::Qps:
        for (uint32_t q = 0; q < spec.qps; ++q)
        {
            addGenerator(0, 1, constSize(), nullptr);
        }
        break;
    case Pattern::Fct: {
        // Poisson arrivals at each host with uniformly random destinations are the same process
        // as an independent Poisson stream per (source, destination) pair at 1/(N-1) of the rate
        // (splitting a Poisson process), which needs no per-message choice of QP; `qps` QPs
        // per pair split it once more (messages on different QPs do not wait for each other).
        const double hostRate = f.HostPort(0)->GetActiveRate().DataRate();
        const double perHostMsgsPerSec = spec.load * hostRate / (8.0 * cdf->Mean());
        const uint32_t perPair = std::max<uint32_t>(1, spec.qps);
        const double qpMean = double(nHosts - 1) * perPair / perHostMsgsPerSec;
        for (uint32_t s = 0; s < nHosts; ++s)
        {
            for (uint32_t d = 0; d < nHosts; ++d)
            {
                for (uint32_t q = 0; q < perPair && s != d; ++q)
                {
                    Ptr<EmpiricalSizeDistribution> sz = CreateObject<EmpiricalSizeDistribution>();
                    std::string err;
                    sz->SetPoints(cdf->GetPoints(), &err);
                    Ptr<ExponentialRandomVariable> gap = CreateObject<ExponentialRandomVariable>();
                    gap->SetAttribute("Mean", DoubleValue(qpMean));
                    addGenerator(s, d, sz, gap);
                }
            }
        }
        break;
    }
    }

    // Run: issue until `stop`; then let what was issued finish (Fct: up to `drain`; closed
    // loops: one drain of 10 us for what is in flight).
    const Time hardStop = spec.pattern == Pattern::PingPong
                              ? start + spec.duration
                              : stop + (spec.pattern == Pattern::Fct ? spec.drain
                                                                     : MicroSeconds(10));
    if (spec.pattern == Pattern::Fct || spec.pattern == Pattern::PingPong)
    {
        // Stop as soon as everything issued has completed (the fabric's flow-control refresh
        // timers would otherwise run to hardStop).
        struct Check
        {
            static void Run(Ptr<RdmaFctRecorder> r, Ptr<RdmaPingPong> c, uint32_t iters, Time stop)
            {
                const bool done = c ? c->GetRtts().size() >= iters
                                    : (Simulator::Now() >= stop &&
                                       r->GetCompleted() == r->GetStarted());
                if (done)
                {
                    Simulator::Stop();
                    return;
                }
                Simulator::Schedule(MicroSeconds(1), &Check::Run, r, c, iters, stop);
            }
        };
        Simulator::Schedule(start - Simulator::Now(), &Check::Run, recorder, client,
                            spec.iterations, stop);
    }
    const auto wallStart = std::chrono::steady_clock::now();
    const uint64_t eventsBefore = Simulator::GetEventCount();
    SimProgress progress(hardStop, spec.progress);
    if (spec.stopOnInterrupt)
    {
        progress.StopOnInterrupt();
    }
    progress.Start();
    Simulator::Stop(hardStop - Simulator::Now());
    Simulator::Run();
    progress.Finish();
    st.interrupted = progress.WasInterrupted();
    st.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    st.events = Simulator::GetEventCount() - eventsBefore;
    st.simulated = Simulator::Now();
    st.linkDataRate = f.HostPort(0)->GetActiveRate().DataRate();
    st.linkRateName = f.HostPort(0)->GetActiveRate().ToString();
    // After Ctrl-C the window is what was issued before the run stopped.
    st.window = st.interrupted ? std::min(spec.duration, Simulator::Now() - start) : spec.duration;
    const double windowSeconds = st.window.IsStrictlyPositive() ? st.window.GetSeconds() : 1e300;

    for (auto& g : gens)
    {
        st.messagesIssued += g->GetIssued();
        st.messagesCompleted += g->GetCompleted();
        st.messagesFailed += g->GetErrorCompletions();
        st.postErrors += g->GetPostErrors();
        st.bytesCompleted += g->GetBytesCompleted();
    }
    for (auto& k : sinks)
    {
        st.postErrors += k->GetPostErrors();
    }
    if (client)
    {
        st.rtts = client->GetRtts();
        st.messagesIssued = client->GetSent();
        st.messagesCompleted = st.rtts.size();
        st.postErrors = client->GetPostErrors() + server->GetPostErrors();
        st.messagesFailed = client->GetErrorCompletions() + server->GetErrorCompletions();
    }
    if (perConnection.size() <= 64)
    {
        for (const auto& [name, bytes] : perConnection)
        {
            st.connectionGbps.emplace_back(name,
                                           double(bytes) * 8 / windowSeconds / 1e9);
        }
    }
    st.messagesPerSecond = double(windowMessages) / windowSeconds;
    st.goodputGbps = double(windowBytes) * 8 / windowSeconds / 1e9;
    for (const auto& h : hcas)
    {
        st.transportPackets += h.engine->GetCounters().packetsSent;
        st.retransmissions += h.engine->GetCounters().retransmittedPackets;
    }
    for (const auto& p : f.AllPorts())
    {
        st.packetHops += p->GetCounters().portXmitPkts;
    }

    if (spec.pattern == Pattern::Fct)
    {
        const IbLinkRate rate = f.HostPort(0)->GetActiveRate();
        TimeValue prop;
        f.cables[0]->GetAttribute("DelayPerMeter", prop);
        DoubleValue len;
        f.cables[0]->GetAttribute("Length", len);
        const Time propagation = PicoSeconds(std::llround(prop.Get().GetPicoSeconds() * len.Get()));
        TimeValue lat(NanoSeconds(100));
        if (f.switches.GetN() > 0)
        {
            f.switches.Get(0)->GetObject<IbSwitch>()->GetAttribute("Latency", lat);
        }
        const uint32_t mtu = RdmaMtuBytes(spec.mtu);
        std::vector<uint16_t> lids(nHosts);
        for (uint32_t i = 0; i < nHosts; ++i)
        {
            lids[i] = subnet.GetLid(f.hosts.Get(i));
        }
        auto ideal = [&](const RdmaFctRecorder::Record& r) {
            return RdmaIdealFct(r.size, r.opcode, mtu,
                                subnet.GetRouteHops(lids[r.src], lids[r.dst]), rate,
                                propagation, lat.Get());
        };
        std::vector<double> slow;
        for (const auto& r : recorder->GetRecords())
        {
            if (r.done && r.status == RdmaWcStatus::SUCCESS)
            {
                slow.push_back((r.end - r.start).GetDouble() / ideal(r).GetDouble());
            }
        }
        st.fctP50 = Percentile(slow, 0.5);
        st.fctP95 = Percentile(slow, 0.95);
        st.fctP99 = Percentile(slow, 0.99);
        if (!spec.outDir.empty())
        {
            std::filesystem::create_directories(spec.outDir);
            const std::string csv = spec.outDir + "/fct.csv";
            if (!recorder->WriteCsv(csv, ideal))
            {
                throw std::runtime_error("cannot write " + csv);
            }
            st.artifacts.push_back(csv);
            if (spec.plots && RunPlotScript("plot-fct.py", csv, spec.outDir + "/fct.png",
                                            spec.title + ": FCT slowdown by size"))
            {
                st.artifacts.push_back(spec.outDir + "/fct.png");
            }
        }
    }
    if (spec.pattern == Pattern::PingPong && !spec.outDir.empty())
    {
        std::filesystem::create_directories(spec.outDir);
        const std::string csv = spec.outDir + "/rtt.csv";
        std::FILE* fcsv = std::fopen(csv.c_str(), "w");
        if (!fcsv)
        {
            throw std::runtime_error("cannot write " + csv);
        }
        std::fprintf(fcsv, "round,rtt_ns\n");
        for (size_t i = 0; i < st.rtts.size(); ++i)
        {
            std::fprintf(fcsv, "%zu,%.3f\n", i, st.rtts[i].GetPicoSeconds() / 1000.0);
        }
        std::fclose(fcsv);
        st.artifacts.push_back(csv);
    }
    Simulator::Destroy();
    return st;
}

} // namespace ns3
