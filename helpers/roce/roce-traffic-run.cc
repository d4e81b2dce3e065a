#include "roce-traffic-run.h"

#include "helpers/scenario/sim-progress.h"
#include "helpers/trace/eth-pcap-writer.h"
#include "models/common/int-stack.h"
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

namespace ns3
{

namespace
{
constexpr uint8_t kDataPriority = 3;

struct Run
{
    const RoceRunSpec& spec;
    EthFabric fabric;
    std::vector<RoceHca> hcas;
    std::unique_ptr<RdmaFlowDriver> flows;
    RoceRunResult res;
    std::vector<uint64_t> sentAtLastSample;
    /// The ports portNames names, in that order.
    std::vector<Ptr<EthNetDevice>> tracedPorts;

    explicit Run(const RoceRunSpec& s) : spec(s) {}

    void Sample()
    {
        const double dt = spec.sampleInterval.GetSeconds();
        res.sampleTimesUs.push_back(Simulator::Now().GetSeconds() * 1e6);
        for (uint32_t f = 0; f < sentAtLastSample.size(); ++f)
        {
            const uint64_t sent = flows->SentBytes(f);
            res.flowRateGbps[f].push_back(8.0 * (sent - sentAtLastSample[f]) / dt / 1e9);
            sentAtLastSample[f] = sent;
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
        for (size_t p = 0; p < tracedPorts.size(); ++p)
        {
            res.portQueueBytes[p].push_back(tracedPorts[p]->GetQueueBytes(kDataPriority));
        }
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
    const bool sampling = spec.sampleInterval.IsStrictlyPositive();
    std::vector<RdmaFlowHost> flowHosts;
    for (const RoceHca& h : run.hcas)
    {
        flowHosts.push_back({h.device, h.engine, h.port});
    }
    run.flows = std::make_unique<RdmaFlowDriver>(std::move(flowHosts), spec.flows, spec.pathMtu,
                                                 sampling);
    if (spec.onFlowStart)
    {
        run.flows->SetOnFlowStart([&run](const RdmaFlowSpec& fs, uint32_t srcQpn) {
            run.spec.onFlowStart(fs, srcQpn, run.hcas[fs.src]);
        });
    }
    run.flows->Install();
    run.sentAtLastSample.assign(spec.flows.size(), 0);
    run.res.flowRateGbps.resize(spec.flows.size());
    if (sampling)
    {
        // Every port, host ports first, then switch ports, each group in topology order.
        for (bool switches : {false, true})
        {
            for (uint32_t n = 0; n < run.fabric.ports.size(); ++n)
            {
                if ((run.fabric.switchAt[n] != nullptr) != switches)
                {
                    continue;
                }
                for (uint32_t p = 0; p < run.fabric.ports[n].size(); ++p)
                {
                    if (run.fabric.ports[n][p])
                    {
                        run.tracedPorts.push_back(run.fabric.ports[n][p]);
                        run.res.portNames.push_back(spec.topology.nodes[n].name + ":" +
                                                    std::to_string(p + 1));
                    }
                }
            }
        }
        run.res.portQueueBytes.resize(run.tracedPorts.size());
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
    progress.SetWork(
        [&run, flowCount]() {
            return std::make_pair(uint64_t(run.flows->FlowsDone()), flowCount);
        },
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
    r.flows = std::move(run.flows->Results());
    r.allDone = run.flows->FlowsDone() == spec.flows.size();
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
            r.packetHops += c.txFrames[p];
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
