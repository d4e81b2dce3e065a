#include "roce-traffic-run.h"

#include "helpers/rdma/rdma-qp-connect.h"
#include "helpers/scenario/sim-progress.h"
#include "helpers/trace/eth-pcap-writer.h"
#include "models/common/int-stack.h"
#include "models/rdma/rdma-cq.h"
#include "models/rdma/rdma-memory.h"
#include "models/rdma/rdma-selective-repeat.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/object-factory.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <unordered_map>

namespace ns3
{

namespace
{
constexpr uint64_t kBase = 0x7f0000000000ULL;
constexpr uint64_t kSpan = 1ULL << 31; ///< the largest single WRITE (2^31 bytes, IBA §9.4.1)
constexpr uint8_t kDataPriority = 3;

/**
 * Memory for load experiments: every address is mapped, reads give zeros and writes are
 * discarded, so a 320-host run does not hold gigabytes of payload nobody compares.
 */
class DiscardMemory : public RdmaMemory
{
  public:
    bool Read(uint64_t addr, uint8_t* dst, uint64_t len) const override
    {
        std::fill(dst, dst + len, 0);
        return !Wraps(addr, len);
    }

    bool Write(uint64_t addr, const uint8_t*, uint64_t len) override { return !Wraps(addr, len); }

    bool IsMapped(uint64_t addr, uint64_t len) const override { return !Wraps(addr, len); }
};

struct HostState
{
    Ptr<RdmaPd> pd;
    Ptr<RdmaMr> mr;
    Ptr<RdmaCq> cq;
};

struct Run
{
    const RoceRunSpec& spec;
    EthFabric fabric;
    std::vector<RoceHca> hcas;
    std::vector<HostState> hosts;
    RoceRunResult res;
    std::unordered_map<uint64_t, uint32_t> flowOfQp; ///< (host << 32 | qpn) -> flow
    std::vector<uint64_t> sentBytes;
    std::vector<uint64_t> sentAtLastSample;
    /// The two QPs of each flow (sender, receiver), released when the flow completes.
    std::vector<std::pair<Ptr<RdmaQp>, Ptr<RdmaQp>>> flowQps;
    uint32_t done = 0;

    explicit Run(const RoceRunSpec& s) : spec(s) {}

    Ptr<RdmaQp> NewQp(uint32_t host)
    {
        RdmaQpInitAttr init;
        init.send_cq = hosts[host].cq;
        init.recv_cq = hosts[host].cq;
        init.qp_type = RdmaQpType::RC;
        init.cap.max_send_wr = 4;
        init.cap.max_recv_wr = 1;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        Ptr<RdmaQp> qp = hcas[host].device->CreateQp(hosts[host].pd, init);
        if (!qp)
        {
            throw std::runtime_error("roce run: CreateQp: " + hcas[host].device->GetLastError());
        }
        return qp;
    }

    void StartFlow(uint32_t f)
    {
        const RoceFlowSpec& fs = spec.flows[f];
        Ptr<RdmaQp> s = NewQp(fs.src);
        Ptr<RdmaQp> d = NewQp(fs.dst);
        RdmaQpConnectOptions c;
        c.mtu = spec.pathMtu;
        c.access = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE;
        c.timeout = 8; // 4.096 us x 2^8 = 1.05 ms: tail losses recover within a run
        ConnectQpPair(s, RdmaAddressOf(*hcas[fs.src].port), d, RdmaAddressOf(*hcas[fs.dst].port),
                      c);
        if (spec.sampleInterval.IsStrictlyPositive())
        {
            flowOfQp[(uint64_t(fs.src) << 32) | s->GetQpNum()] = f;
        }
        flowQps[f] = {s, d};
        if (spec.onFlowStart)
        {
            spec.onFlowStart(fs, s->GetQpNum(), hcas[fs.src]);
        }
        RdmaSendWr wr;
        wr.wr_id = f;
        wr.opcode = RdmaWrOpcode::RDMA_WRITE;
        wr.send_flags = RDMA_SEND_SIGNALED;
        wr.sg_list = {RdmaSge{kBase, static_cast<uint32_t>(fs.bytes), hosts[fs.src].mr->GetLkey()}};
        wr.rdma.remote_addr = kBase;
        wr.rdma.rkey = hosts[fs.dst].mr->GetRkey();
        if (s->PostSend(wr) != 0)
        {
            throw std::runtime_error("roce run: PostSend: " + hcas[fs.src].device->GetLastError());
        }
    }

    void OnCompletion(Ptr<RdmaCq> cq)
    {
        for (const RdmaWc& wc : cq->Poll(1024))
        {
            if (wc.wr_id >= res.flows.size() || res.flows[wc.wr_id].fct.IsPositive())
            {
                continue;
            }
            RoceFlowResult& r = res.flows[wc.wr_id];
            r.fct = Simulator::Now() - r.spec.start;
            r.ok = wc.status == RdmaWcStatus::SUCCESS;
            // A finished flow's QPs go, as an application destroys them after its last
            // completion (HPCC's simulator likewise stops a finished QP's DCQCN timers): the
            // congestion-control ticks of thousands of finished flows would otherwise run, and
            // their contexts stay in every lookup, until the end of the run. After the last
            // ACK nothing of the flow is in flight but CNPs, which a destroyed QP ignores.
            // In a fresh event: the engine is still inside the completion's call chain.
            Simulator::ScheduleNow(&Run::ReleaseFlow, this, static_cast<uint32_t>(wc.wr_id));
            if (++done == res.flows.size())
            {
                Simulator::Stop();
            }
        }
        cq->ReqNotify(false);
    }

    void ReleaseFlow(uint32_t f)
    {
        const RoceFlowSpec& fs = spec.flows[f];
        auto& [s, d] = flowQps[f];
        if (s)
        {
            hcas[fs.src].device->DestroyQp(s);
            hcas[fs.dst].device->DestroyQp(d);
            s = nullptr;
            d = nullptr;
        }
    }

    void OnSent(uint32_t host, uint32_t qpn, uint8_t, uint32_t, uint32_t bytes, bool)
    {
        auto it = flowOfQp.find((uint64_t(host) << 32) | qpn);
        if (it != flowOfQp.end())
        {
            sentBytes[it->second] += bytes;
        }
    }

    void Sample()
    {
        const double dt = spec.sampleInterval.GetSeconds();
        res.sampleTimesUs.push_back(Simulator::Now().GetSeconds() * 1e6);
        for (size_t f = 0; f < sentBytes.size(); ++f)
        {
            res.flowRateGbps[f].push_back(8.0 * (sentBytes[f] - sentAtLastSample[f]) / dt / 1e9);
            sentAtLastSample[f] = sentBytes[f];
        }
        uint64_t q = 0;
        for (const auto& sw : fabric.Switches())
        {
            for (uint16_t p = 1; p <= sw->GetNPorts(); ++p)
            {
                q = std::max(q, sw->GetPort(p)->GetQueueBytes(kDataPriority));
            }
        }
        res.maxQueueBytes.push_back(q);
        uint64_t pauses = 0;
        for (const auto& port : fabric.AllPorts())
        {
            for (uint8_t p = 0; p < kEthPriorities; ++p)
            {
                pauses += port->GetCounters().pauseSent[p];
            }
        }
        res.pauseFramesSoFar.push_back(pauses);
        uint64_t marks = 0;
        for (const auto& sw : fabric.Switches())
        {
            marks += sw->GetEcnMarked();
        }
        res.ecnMarksSoFar.push_back(marks);
        uint64_t cnps = 0;
        for (const auto& h : hcas)
        {
            cnps += h.engine->GetCounters().cnpsSent;
        }
        res.cnpsSoFar.push_back(cnps);
        Simulator::Schedule(spec.sampleInterval, &Run::Sample, this);
    }
};

void
OnCqEvent(Run* run, Ptr<RdmaCq> cq)
{
    run->OnCompletion(cq);
}

void
OnPacketSent(Run* run, uint32_t host, uint32_t qpn, uint8_t op, uint32_t psn, uint32_t bytes,
             bool retx)
{
    run->OnSent(host, qpn, op, psn, bytes, retx);
}
} // namespace

double
JainIndex(const std::vector<double>& x)
{
    double s = 0;
    double s2 = 0;
    for (double v : x)
    {
        s += v;
        s2 += v * v;
    }
    return s2 > 0 ? s * s / (x.size() * s2) : 1.0;
}

RoceRunResult
RunRoceFlows(const RoceRunSpec& spec)
{
    Run run(spec);
    if (!spec.scheduler.empty())
    {
        ObjectFactory sched;
        sched.SetTypeId(spec.scheduler);
        Simulator::SetScheduler(sched);
    }
    EthFabricHelper fh;
    fh.SetHostLinkRate(spec.hostRate);
    fh.SetFabricLinkRate(spec.fabricRate);
    fh.SetPortAttribute("Mtu", UintegerValue(spec.ethMtu));
    fh.SetPortAttribute("PfcEnableMask", UintegerValue(spec.pfc ? 1u << kDataPriority : 0));
    fh.SetMmuAttribute("BufferBytes", UintegerValue(spec.bufferBytes));
    fh.SetMmuAttribute("EcnMode", EnumValue(spec.ecn ? 1 : 0));
    fh.SetMmuAttribute("KminBytes", UintegerValue(spec.kminBytes));
    fh.SetMmuAttribute("KmaxBytes", UintegerValue(spec.kmaxBytes));
    fh.SetMmuAttribute("Pmax", DoubleValue(spec.pmax));
    if (spec.configureFabric)
    {
        spec.configureFabric(fh);
    }
    run.fabric = fh.Build(spec.topology);
    // Fixed random streams per switch (ECN marking draws): a run's result depends on its spec
    // alone, not on what ran before it in the same process.
    int64_t stream = 1;
    for (const auto& sw : run.fabric.Switches())
    {
        stream += sw->GetMmu()->AssignStreams(stream);
    }
    for (uint32_t node : spec.misconfiguredSwitches)
    {
        Ptr<EthSwitch> sw = node < run.fabric.switchAt.size() ? run.fabric.switchAt[node] : nullptr;
        if (!sw)
        {
            throw std::invalid_argument("roce run: node " + std::to_string(node) +
                                        " is not a switch");
        }
        // The misconfiguration of the seed: this switch neither pauses nor honours pauses on
        // the RoCE class, and does not mark.
        for (uint16_t p = 1; p <= sw->GetNPorts(); ++p)
        {
            sw->GetPort(p)->SetAttribute("PfcEnableMask", UintegerValue(0));
        }
        sw->SetupMmu();
        sw->GetMmu()->SetAttribute("EcnMode", EnumValue(0));
    }
    RoceHelper rh;
    rh.SetCongestionControl(spec.cc);
    rh.SetEngineAttribute("AckReqEveryPackets", UintegerValue(spec.ackEveryPackets));
    if (spec.recovery != "gbn" && spec.recovery != "irn")
    {
        throw std::invalid_argument("roce run: recovery is gbn or irn, not '" + spec.recovery +
                                    "'");
    }
    if (spec.rtoLow.IsStrictlyNegative() || spec.rtoHigh.IsStrictlyNegative() ||
        (spec.rtoLow.IsStrictlyPositive() && spec.rtoLow > spec.rtoHigh))
    {
        throw std::invalid_argument("roce run: need 0 <= rto-low <= rto (rto-low needs rto)");
    }
    rh.SetEngineAttribute("LossRecovery", EnumValue(spec.recovery == "irn"
                                                        ? RDMA_RECOVERY_SELECTIVE
                                                        : RDMA_RECOVERY_GO_BACK_N));
    rh.SetEngineAttribute("RtoHigh", TimeValue(spec.rtoHigh));
    rh.SetEngineAttribute("RtoLow", TimeValue(spec.rtoLow));
    rh.SetEngineAttribute("MaxInflightPackets", UintegerValue(spec.maxInflightPackets));
    const uint32_t intHops = spec.intMaxHops != 0 ? spec.intMaxHops
                             : spec.cc == "ns3::RdmaCcHpcc" ? kIntDefaultMaxHops
                                                            : 0;
    if (intHops > kIntStackCapacity)
    {
        throw std::invalid_argument("roce run: intMaxHops " + std::to_string(intHops) +
                                    " exceeds the INT stack capacity " +
                                    std::to_string(kIntStackCapacity));
    }
    rh.SetPortAttribute("IntMaxHops", UintegerValue(intHops));
    if (spec.configureNics)
    {
        spec.configureNics(rh);
    }
    run.hcas = rh.Install(run.fabric);
    run.hosts.resize(run.hcas.size());
    for (uint32_t h = 0; h < run.hcas.size(); ++h)
    {
        HostState& hs = run.hosts[h];
        Ptr<RdmaMemory> mem = CreateObject<DiscardMemory>();
        hs.pd = run.hcas[h].device->AllocPd(mem);
        hs.mr = run.hcas[h].device->RegMr(hs.pd, kBase, kSpan,
                                          RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE);
        hs.cq = run.hcas[h].device->CreateCq(65536);
        if (!hs.pd || !hs.mr || !hs.cq)
        {
            throw std::runtime_error("roce run: verbs setup failed: " +
                                     run.hcas[h].device->GetLastError());
        }
        hs.cq->TraceConnectWithoutContext("CompletionEvent", MakeBoundCallback(&OnCqEvent, &run));
        hs.cq->ReqNotify(false);
        if (spec.sampleInterval.IsStrictlyPositive())
        {
            // Monitoring costs only when it samples: without a sample interval no per-packet
            // callback runs.
            run.hcas[h].engine->TraceConnectWithoutContext(
                "PacketSent",
                MakeBoundCallback(&OnPacketSent, &run, h));
        }
    }
    run.res.flows.resize(spec.flows.size());
    run.sentBytes.assign(spec.flows.size(), 0);
    run.sentAtLastSample.assign(spec.flows.size(), 0);
    run.flowQps.resize(spec.flows.size());
    run.res.flowRateGbps.resize(spec.flows.size());
    for (uint32_t f = 0; f < spec.flows.size(); ++f)
    {
        const RoceFlowSpec& fs = spec.flows[f];
        if (fs.src >= run.hcas.size() || fs.dst >= run.hcas.size() || fs.src == fs.dst ||
            fs.bytes == 0 || fs.bytes >= kSpan)
        {
            throw std::invalid_argument("roce run: flow " + std::to_string(f) +
                                        " has a bad host, or a size outside 1..2^31-1");
        }
        run.res.flows[f].spec = fs;
        Simulator::Schedule(fs.start, &Run::StartFlow, &run, f);
    }
    if (spec.sampleInterval.IsStrictlyPositive())
    {
        Simulator::Schedule(spec.sampleInterval, &Run::Sample, &run);
    }
    if (spec.beforeRun)
    {
        spec.beforeRun(run.fabric, run.hcas);
    }
    // The wire from time zero: nothing has been sent yet (the first flow starts in an event).
    std::vector<Ptr<PcapFileWrapper>> pcaps;
    if (!spec.pcapDir.empty())
    {
        std::vector<uint32_t> traced = spec.pcapHosts;
        if (traced.empty())
        {
            for (uint32_t h = 0; h < run.hcas.size(); ++h)
            {
                traced.push_back(h);
            }
        }
        std::error_code ec;
        std::filesystem::create_directories(spec.pcapDir, ec);
        for (uint32_t h : traced)
        {
            if (h >= run.fabric.hostNodes.size())
            {
                throw std::invalid_argument("roce run: pcap host " + std::to_string(h) +
                                            " does not exist (the fabric has " +
                                            std::to_string(run.fabric.hostNodes.size()) +
                                            " hosts, 0.." +
                                            std::to_string(run.fabric.hostNodes.size() - 1) +
                                            ")");
            }
            const std::string path =
                spec.pcapDir + "/" + spec.topology.nodes[run.fabric.hostNodes[h]].name + ".pcap";
            Ptr<PcapFileWrapper> file = EthPcapHelper::Enable(run.fabric.HostPort(h), path);
            if (!file)
            {
                throw std::runtime_error("cannot write " + path);
            }
            pcaps.push_back(file);
            run.res.pcaps.push_back(path);
        }
    }
    const uint64_t events0 = Simulator::GetEventCount();
    Simulator::Stop(spec.limit);
    SimProgress progress(spec.limit, spec.progress);
    const uint64_t flowCount = spec.flows.size();
    progress.SetWork([&run, flowCount]() { return std::make_pair(uint64_t(run.done), flowCount); },
                     "flows");
    if (spec.stopOnInterrupt)
    {
        progress.StopOnInterrupt();
    }
    if (!spec.flows.empty())
    {
        progress.Start();
        Simulator::Run();
        progress.Finish();
    }
    run.res.interrupted = progress.WasInterrupted();
    for (auto& file : pcaps)
    {
        file->Close(); // complete on disk before the caller reads it
    }
    RoceRunResult& r = run.res;
    r.end = Simulator::Now();
    r.events = Simulator::GetEventCount() - events0;
    r.allDone = run.done == spec.flows.size();
    for (auto& f : r.flows)
    {
        r.allDone &= f.ok;
    }
    for (const auto& port : run.fabric.AllPorts())
    {
        const EthPortCounters& c = port->GetCounters();
        for (uint8_t p = 0; p < kEthPriorities; ++p)
        {
            r.pauseFrames += c.pauseSent[p];
        }
        r.drops += port->GetTotalDrops();
        if (port->GetSwitch())
        {
            r.peakQueueBytes = std::max(r.peakQueueBytes, port->GetMaxQueueBytes(kDataPriority));
        }
    }
    for (const auto& sw : run.fabric.Switches())
    {
        r.ecnMarks += sw->GetEcnMarked();
    }
    for (const auto& h : run.hcas)
    {
        r.cnps += h.engine->GetCounters().cnpsSent;
        r.retransmittedPackets += h.engine->GetCounters().retransmittedPackets;
        r.packetsSent += h.port->GetPacketsSent();
    }
    RoceRunResult out = std::move(run.res);
    Simulator::Destroy();
    return out;
}

} // namespace ns3
