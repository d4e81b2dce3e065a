// `cnuas run ib-cc-incast`: the ib-incast dumbbell with RDMA WRITE flows, with InfiniBand
// congestion control (IBA vol. 1 annex A10) off or on. With cc=iba the built-in SM's heavy
// sweep is followed by the CC manager's Set MADs to every switch and CA.
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-cc-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/rdma/rdma-qp-connect.h"
#include "helpers/scenario/scenario.h"
#include "helpers/scenario/sim-progress.h"
#include "helpers/trace/ib-trace-helper.h"

#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"
#include "models/rdma/rdma-cc-iba.h"
#include "models/rdma/rdma-cq.h"
#include "models/rdma/rdma-device.h"
#include "models/rdma/rdma-engine.h"
#include "models/rdma/rdma-memory.h"
#include "models/rdma/rdma-mr.h"
#include "models/rdma/rdma-pd.h"
#include "models/rdma/rdma-qp.h"

#include "ns3/boolean.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>

namespace ns3
{

namespace
{

constexpr uint64_t kBase = 0x7f3a12340000ULL;
constexpr uint64_t kRegion = 4u << 20;
constexpr uint32_t kMessage = 65536;

std::string
Fixed(double v, int digits)
{
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
}

struct Host
{
    Ptr<RdmaPd> pd;
    Ptr<RdmaMr> mr;
    Ptr<RdmaCq> cq;
};

struct Meter
{
    Time from;
    Time to;
    Time bin;
    std::map<uint32_t, uint64_t> bytes;                ///< qpn -> bytes in [from, to)
    std::map<uint32_t, std::map<int64_t, uint64_t>> bins; ///< qpn -> bin -> bytes
};

void
NoteRx(Meter* m, uint32_t qpn, uint8_t, uint32_t, uint32_t bytes)
{
    const Time now = Simulator::Now();
    if (now >= m->from && now < m->to)
    {
        m->bytes[qpn] += bytes;
    }
    m->bins[qpn][now.GetPicoSeconds() / m->bin.GetPicoSeconds()] += bytes;
}

Ptr<RdmaQp>
MakeQp(const RdmaHca& hca, const Host& h, uint32_t depth)
{
    RdmaQpInitAttr init;
    init.send_cq = h.cq;
    init.recv_cq = h.cq;
    init.qp_type = RdmaQpType::RC;
    init.cap.max_send_wr = depth;
    init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    return hca.device->CreateQp(h.pd, init);
}

ScenarioInfo RdmaIncastInfo();

ScenarioResult
RunRdmaIncast(const ScenarioOptions& o)
{
    static const ScenarioInfo info = RdmaIncastInfo();
    CheckScenarioParams(o, info);
    const std::string cc = ScenarioParamChoice(o, info, "cc", {"none", "iba"});
    const bool iba = cc == "iba";
    const uint32_t senders = static_cast<uint32_t>(ScenarioParamUint(o, info, "senders", 1, 8));
    const double durationUs = ScenarioParamDouble(o, info, "duration-us", 50, 100000);
    // The ranges of the CC manager's attributes (Threshold is 4 bits in the MADs, the others
    // 16), which would abort the process rather than refuse a value outside them.
    const uint64_t threshold = ScenarioParamUint(o, info, "threshold", 0, 15);
    const uint64_t cctiTimer = ScenarioParamUint(o, info, "ccti-timer", 0, 65535);
    const uint64_t cctStep = ScenarioParamUint(o, info, "cct-step", 0, 65535);

    IbFabric fabric = IbFabricHelper().Build(BuildTopologyFromSpec("dumbbell:left=2,right=9"));
    Ptr<IbSubnetManager> sm = IbSmHelper().Install(fabric, fabric.hosts.Get(0), MicroSeconds(2));
    RdmaHelper rh;
    if (iba)
    {
        rh.SetCongestionControl("ns3::RdmaCcIba");
        rh.SetEngineAttribute("CnpInterval", TimeValue(Time(0)));
        rh.SetEngineAttribute("IbBecnByCnp", BooleanValue(true));
    }
    std::vector<RdmaHca> hcas = rh.Install(fabric);
    Ptr<IbCcManager> mgr;
    if (iba)
    {
        IbCcHelper ch;
        ch.SetManagerAttribute("Threshold", UintegerValue(threshold));
        ch.SetManagerAttribute("CctiTimer", UintegerValue(cctiTimer));
        ch.SetManagerAttribute("CctStep", UintegerValue(cctStep));
        ch.InstallAgents(fabric, hcas);
        mgr = ch.InstallManager(fabric.hosts.Get(0));
    }
    // --pcap: every host port from time zero, so that the SM's sweep and the CC MADs are in
    // the traces with the data; host 0's flow-control packets in a trace of their own (see
    // IbPcapHelper::EnableFlowControl).
    IbPcapHelper pcap;
    std::vector<std::string> pcaps;
    if (!o.pcapDir.empty())
    {
        pcaps = EnableHostPcaps(pcap, fabric, o.pcapDir);
        const std::string fcPath = o.pcapDir + "/" +
                                   fabric.topology.nodes[fabric.topology.Hosts()[0]].name +
                                   "-flow-control.pcap";
        if (!pcap.EnableFlowControl(fabric.HostPort(0), fcPath))
        {
            throw std::runtime_error("cannot write " + fcPath);
        }
        pcaps.push_back(fcPath);
    }
    // The subnet comes up (and, with cc=iba, the CC MADs follow at once).
    Time t = MicroSeconds(0);
    while (sm->GetLastSubnetUp() < Seconds(0) && t < MilliSeconds(20))
    {
        t += MicroSeconds(20);
        Simulator::Stop(MicroSeconds(20));
        Simulator::Run();
    }
    if (sm->GetLastSubnetUp() < Seconds(0))
    {
        throw std::runtime_error("ib-cc-incast: the subnet did not come up in 20 ms");
    }
    Simulator::Stop(MicroSeconds(20));
    Simulator::Run();
    const Time start = Simulator::Now();

    const uint32_t n = fabric.hosts.GetN();
    std::vector<Host> hosts(n);
    for (uint32_t h = 0; h < n; ++h)
    {
        hcas[h].memory->Map(kBase, kRegion);
        hosts[h].pd = hcas[h].device->AllocPd(hcas[h].memory);
        hosts[h].mr = hcas[h].device->RegMr(hosts[h].pd, kBase, kRegion,
                                            RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE);
        hosts[h].cq = hcas[h].device->CreateCq(1 << 16);
    }
    // h1 -> h9 is the victim; h0 and h2.. write to the hot spot (the last host).
    const uint32_t hot = n - 1;
    std::vector<std::pair<uint32_t, uint32_t>> flows = {{1, hot - 1}, {0, hot}};
    for (uint32_t h = 2; h < 1 + senders; ++h)
    {
        flows.push_back({h, hot});
    }
    const Time duration = PicoSeconds(std::llround(durationUs * 1e6));
    const uint32_t depth = static_cast<uint32_t>(
        std::min<double>(8192, durationUs * 1e-6 * 200e9 / 8 / kMessage + 4));
    std::map<uint32_t, uint32_t> rxQpOf; // sender -> receiver QP number
    std::vector<Ptr<RdmaQp>> senderQps;
    for (auto [src, dst] : flows)
    {
        Ptr<RdmaQp> s = MakeQp(hcas[src], hosts[src], depth);
        Ptr<RdmaQp> r = MakeQp(hcas[dst], hosts[dst], 4);
        if (!s || !r)
        {
            throw std::runtime_error("ib-cc-incast: QP creation failed");
        }
        RdmaQpConnectOptions c;
        c.mtu = RdmaMtu::MTU_4096;
        c.access = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE;
        ConnectQpPair(s, RdmaLidAddress(fabric.HostPort(src)->GetLid()), r,
                      RdmaLidAddress(fabric.HostPort(dst)->GetLid()), c);
        rxQpOf[src] = r->GetQpNum();
        senderQps.push_back(s);
        for (uint32_t w = 0; w < depth; ++w)
        {
            RdmaSendWr wr;
            wr.wr_id = w;
            wr.opcode = RdmaWrOpcode::RDMA_WRITE;
            wr.sg_list = {RdmaSge{kBase, kMessage, hosts[src].mr->GetLkey()}};
            wr.rdma.remote_addr = kBase + kMessage * (src % 32);
            wr.rdma.rkey = hosts[dst].mr->GetRkey();
            s->PostSend(wr);
        }
    }
    // Measure the last three quarters: the first covers the start and CC's convergence.
    Meter hotMeter{start + duration / 4, start + duration, MicroSeconds(10), {}, {}};
    Meter victimMeter = hotMeter;
    hcas[hot].engine->TraceConnectWithoutContext("PacketReceived",
                                                 MakeBoundCallback(&NoteRx, &hotMeter));
    hcas[hot - 1].engine->TraceConnectWithoutContext("PacketReceived",
                                                     MakeBoundCallback(&NoteRx, &victimMeter));
    // Switch buffer occupancy, sampled every microsecond over the measurement window.
    double occupancySum = 0;
    uint64_t samples = 0;
    uint32_t occupancyMax = 0;
    for (Time at = hotMeter.from; at < hotMeter.to; at += MicroSeconds(1))
    {
        Simulator::Schedule(at - Simulator::Now(), [&]() {
            uint32_t total = 0;
            for (uint32_t i = 0; i < fabric.switches.GetN(); ++i)
            {
                Ptr<IbSwitch> sw = fabric.switches.Get(i)->GetObject<IbSwitch>();
                for (uint8_t p = 1; p <= sw->GetNPorts(); ++p)
                {
                    total += sw->GetPort(p)->GetReceiveBufferUsed(0);
                }
            }
            occupancySum += total;
            occupancyMax = std::max(occupancyMax, total);
            ++samples;
        });
    }
    SimProgress progress(start + duration, o.progress);
    if (o.stopOnInterrupt)
    {
        progress.StopOnInterrupt();
    }
    progress.Start();
    Simulator::Stop(duration);
    Simulator::Run();
    progress.Finish();
    pcap.Close();
    if (progress.WasInterrupted())
    {
        // The window ends where the run did; with nothing of it left, the rates read 0.
        hotMeter.to = std::min(hotMeter.to, Simulator::Now());
        victimMeter.to = hotMeter.to;
    }

    const double secs = std::max(0.0, (hotMeter.to - hotMeter.from).GetSeconds());
    auto gbps = [secs](uint64_t b) { return secs > 0 ? b * 8 / secs / 1e9 : 0.0; };
    const double victim = gbps(victimMeter.bytes[rxQpOf[1]]);
    const double h0 = gbps(hotMeter.bytes[rxQpOf[0]]);
    double hotTotal = 0;
    for (auto& [qpn, b] : hotMeter.bytes)
    {
        hotTotal += gbps(b);
    }
    uint64_t marked = 0;
    for (uint32_t i = 0; i < fabric.switches.GetN(); ++i)
    {
        marked += fabric.switches.Get(i)->GetObject<IbSwitch>()->GetFecnMarked();
    }

    ScenarioResult r;
    auto add = [&](const std::string& k, const std::string& v) { r.summary.emplace_back(k, v); };
    add("topology", "dumbbell:left=2,right=9, 4x HDR, RC RDMA WRITEs of 64 KiB, MTU 4096");
    add("congestion control", iba ? "IBA annex A10 (threshold " +
                                        std::to_string(threshold) +
                                        ", CCTI_Timer " +
                                        std::to_string(cctiTimer) +
                                        ", CCT step " +
                                        std::to_string(cctStep) +
                                        " ns)"
                                  : "none");
    if (mgr)
    {
        add("CC manager", std::to_string(mgr->GetMadsSent()) + " Set MADs sent after the sweep");
    }
    add("measured", Fixed(hotMeter.from.GetSeconds() * 1e6, 0) + ".." +
                        Fixed(hotMeter.to.GetSeconds() * 1e6, 0) + " us");
    add("victim h1 -> h9", Fixed(victim, 2) + " Gb/s");
    add("h0 -> hot spot", Fixed(h0, 2) + " Gb/s");
    add("into the hot spot", Fixed(hotTotal, 2) + " Gb/s");
    add("FECN marked", std::to_string(marked) + " packets");
    add("switch buffer occupancy", Fixed(samples ? occupancySum / samples : 0, 0) +
                                       " blocks mean, " + std::to_string(occupancyMax) +
                                       " max (all switch input buffers, 64 B blocks)");
    if (!o.outDir.empty())
    {
        const std::string csv = ScenarioOutputFile(o, "ib-cc-incast-" + cc + ".csv");
        std::ofstream f(csv);
        f << "time_us,victim_gbps,h0_gbps,hotspot_gbps\n";
        const int64_t bins = (start + duration).GetPicoSeconds() / hotMeter.bin.GetPicoSeconds();
        const double binSecs = hotMeter.bin.GetSeconds();
        for (int64_t b = start.GetPicoSeconds() / hotMeter.bin.GetPicoSeconds(); b < bins; ++b)
        {
            uint64_t hb = 0;
            for (auto& [qpn, m] : hotMeter.bins)
            {
                auto it = m.find(b);
                hb += it == m.end() ? 0 : it->second;
            }
            auto v = victimMeter.bins[rxQpOf[1]].find(b);
            auto z = hotMeter.bins[rxQpOf[0]].find(b);
            f << Fixed((b * binSecs - start.GetSeconds()) * 1e6, 0) << ","
              << Fixed((v == victimMeter.bins[rxQpOf[1]].end() ? 0 : v->second) * 8 / binSecs /
                           1e9,
                       2)
              << ","
              << Fixed((z == hotMeter.bins[rxQpOf[0]].end() ? 0 : z->second) * 8 / binSecs / 1e9,
                       2)
              << "," << Fixed(hb * 8 / binSecs / 1e9, 2) << "\n";
        }
        r.artifacts.push_back(csv);
    }
    r.artifacts.insert(r.artifacts.end(), pcaps.begin(), pcaps.end());
    if (progress.WasInterrupted())
    {
        ScenarioMarkInterrupted(r, Simulator::Now());
    }
    Simulator::Destroy();
    return r;
}

ScenarioInfo
RdmaIncastInfo()
{
    ScenarioInfo i;
    i.name = "ib-cc-incast";
    i.description = "ib-incast with RC RDMA WRITE flows and InfiniBand congestion control "
                    "(annex A10) off or on: the victim flow's throughput";
    i.params = {{"cc", "none", "none, or iba (FECN/BECN/CCT, configured by CC MADs)"},
                {"senders", "8", "hosts writing to the hot spot (h0 and h2..)"},
                {"duration-us",
                 "1000",
                 "how long the flows run, microseconds (the last three quarters are measured)"},
                {"threshold", "14", "cc=iba: switch Threshold (1..15)"},
                {"ccti-timer", "2", "cc=iba: CCTI_Timer, units of 1.024 us"},
                {"cct-step", "64", "cc=iba: CCT entry i delays i * cct-step ns"}};
    i.pcap = ScenarioPcap::Wire;
    i.run = RunRdmaIncast;
    ScenarioSetsAttributes(i, {{"ns3::IbCcManager::Threshold", "threshold"},
                               {"ns3::IbCcManager::CctiTimer", "ccti-timer"},
                               {"ns3::IbCcManager::CctStep", "cct-step"},
                               {"ns3::RdmaEngine::CnpInterval", ""},
                               {"ns3::RdmaEngine::IbBecnByCnp", ""}});
    return i;
}

} // namespace

CNUAS_REGISTER_SCENARIO(RdmaIncastInfo());

} // namespace ns3
