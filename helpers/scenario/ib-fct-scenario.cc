// `cnuas run ib-fct`: flow completion times on an InfiniBand fabric, the counterpart of
// roce-fct with the same traffic (all-to-all, permutation or incast at a load from a flow-size
// CDF, or an explicit flows file) and the same per-flow CSV, so that a study compares the two
// fabrics flow for flow. InfiniBand's own tunables: link rate, data VLs, the per-VL receive
// buffer (credits), the subnet manager and its routing engine, and congestion control
// (IBA vol. 1 annex A10) with the CC manager's parameters. With `sample` it also records per-port
// buffer use and, per port and VL, transmit credits and credit-stall time (the Python module's
// Result.traces).
#include "helpers/formats/topology.h"
#include "helpers/rdma/ib-flow-run.h"
#include "helpers/rdma/rdma-traffic-run.h"
#include "helpers/scenario/flow-scenario.h"
#include "helpers/scenario/scenario.h"
#include "models/ib/ib-vl-counts.h"

#include <cmath>
#include <stdexcept>

namespace ns3
{

namespace
{

/// The receive buffer a data packet of the largest size needs, bytes: LRH 8, BTH 12, RETH 16,
/// the payload, ICRC 4 and VCRC 2 (IBA vol. 1 §5.4 / §9.2), in whole 64-byte credits (§7.9.4).
uint64_t
MaxPacketBufferBytes(uint32_t mtu)
{
    const uint64_t bytes = 8 + 12 + 16 + uint64_t(mtu) + 4 + 2;
    return (bytes + 63) / 64 * 64;
}

/// The data rate of host 0's link: its own rate in the topology, else the `rate` parameter
/// (the load is a fraction of it, as on RoCE).
IbLinkRate
HostLinkRate(const Topology& topology, const std::string& rate)
{
    const std::vector<uint32_t> hosts = topology.Hosts();
    std::string text = rate;
    if (!hosts.empty())
    {
        if (auto link = topology.LinkAt(hosts[0], 1); link && !topology.links[*link].rate.empty())
        {
            text = topology.links[*link].rate;
        }
    }
    IbLinkRate r;
    IbLinkRate::Parse(text, r); // checked by the caller (rate) or the topology's Validate
    return r;
}

ScenarioResult
RunIbFct(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("ib-fct");
    CheckScenarioParams(o, info);
    IbFlowRunSpec spec;
    spec.topology = ScenarioParamTopology(o, info);
    spec.rate = ScenarioParamString(o, info, "rate");
    IbLinkRate parsed;
    if (!IbLinkRate::Parse(spec.rate, parsed))
    {
        throw ScenarioParamError("rate", "scenario 'ib-fct': parameter rate='" + spec.rate +
                                             "' is not an InfiniBand link rate WIDTHxSPEED "
                                             "(1x..12x; SDR, DDR, QDR, FDR10, FDR, EDR, HDR, "
                                             "NDR, XDR), e.g. 4xHDR");
    }
    // The data-VL counts PortInfo.OperationalVLs can encode (IBA vol. 1 §14.2.5.6).
    spec.vls = static_cast<uint8_t>(ScenarioParamUintOneOf(o, info, "vls", IbDataVlCounts()));
    // IbNetDevice VlBufferBytes: whole 64-byte credit blocks, at most the 2048 blocks a
    // receiver can advertise (IBA vol. 1 §7.9.4.3).
    const uint64_t buffer = ScenarioParamUint(o, info, "buffer", 64, 131072);
    if (buffer % 64 != 0)
    {
        throw ScenarioParamError("buffer", "scenario 'ib-fct': parameter buffer='" +
                                               std::to_string(buffer) +
                                               "' is not a multiple of 64 bytes (one credit)");
    }
    spec.vlBufferBytes = static_cast<uint32_t>(buffer);
    spec.pathMtu = RdmaMtuFromBytes(
        ScenarioParamUintOneOf(o, info, "mtu", {256, 512, 1024, 2048, 4096}));
    // A VL buffer smaller than the largest packet never gives it credit: the flows would hang
    // (IBA vol. 1 §7.9.4: a packet goes only with credit for all its blocks).
    const uint64_t largestPacket = MaxPacketBufferBytes(RdmaMtuBytes(spec.pathMtu));
    if (buffer < largestPacket)
    {
        throw ScenarioParamError(
            "buffer", "scenario 'ib-fct': parameter buffer='" + std::to_string(buffer) +
                          "' is smaller than one packet of the path MTU (" +
                          std::to_string(largestPacket) + " bytes of credit): nothing could "
                          "ever be sent");
    }
    spec.subnetManager = ScenarioParamChoice(o, info, "sm", {"builtin", "static"});
    spec.routing = ScenarioParamChoice(o, info, "routing", {"updown", "minhop"});
    if (spec.subnetManager == "static" && ScenarioParamString(o, info, "routing") != "updown")
    {
        throw ScenarioParamError("routing", "scenario 'ib-fct': routing applies to the built-in "
                                            "subnet manager (sm=builtin); sm=static programs "
                                            "min-hop routes itself");
    }
    spec.congestionControl = ScenarioParamChoice(o, info, "cc", {"none", "iba"}) == "iba";
    if (spec.congestionControl && spec.subnetManager != "builtin")
    {
        throw ScenarioParamError("cc", "scenario 'ib-fct': cc=iba needs sm=builtin (the CC "
                                       "manager beside the SM configures the switches and "
                                       "HCAs with CC MADs after its sweep)");
    }
    // The CC manager's attribute ranges (Threshold is 4 bits in the MADs, CCTI_Limit indexes a
    // 128-entry table, the others 8 or 16 bits), refused here rather than aborting in ns-3.
    spec.ccThreshold = static_cast<uint32_t>(ScenarioParamUint(o, info, "threshold", 0, 15));
    spec.ccMarkingRate =
        static_cast<uint32_t>(ScenarioParamUint(o, info, "marking-rate", 0, 65535));
    spec.ccCctiTimer = static_cast<uint32_t>(ScenarioParamUint(o, info, "ccti-timer", 0, 65535));
    spec.ccCctiIncrease =
        static_cast<uint32_t>(ScenarioParamUint(o, info, "ccti-increase", 0, 255));
    spec.ccCctiLimit = static_cast<uint32_t>(ScenarioParamUint(o, info, "ccti-limit", 0, 127));
    spec.ccCctStep = static_cast<uint32_t>(ScenarioParamUint(o, info, "cct-step", 0, 65535));
    spec.limit = ScenarioParamTime(o, info, "limit", PicoSeconds(1), Seconds(1000));
    spec.sampleInterval = ScenarioParamTime(o, info, "sample", Time(0), Seconds(1000));

    const IbLinkRate hostRate = HostLinkRate(spec.topology, spec.rate);
    const ScenarioTraffic traffic =
        ReadScenarioTraffic(o, info, static_cast<uint32_t>(spec.topology.Hosts().size()),
                            hostRate.DataRate());
    spec.flows = traffic.flows;
    spec.pcapDir = o.pcapDir;
    spec.progress = o.progress;
    spec.stopOnInterrupt = o.stopOnInterrupt;
    const IbFlowRunResult r = RunIbFlows(spec);

    // The ideal: the message alone on its programmed route through cut-through switches and
    // its acknowledgment back (RdmaIdealFct, docs/ib-link.md §2.1, §2.9).
    const uint32_t mtu = RdmaMtuBytes(spec.pathMtu);
    const std::string csvPath = ScenarioOutputFile(o, "ib-fct.csv");
    ScenarioResult res;
    const FctTableSummary table = WriteFctTable(
        csvPath, r.flows,
        [&](size_t i) {
            return RdmaIdealFct(r.flows[i].spec.bytes, RdmaWrOpcode::RDMA_WRITE, mtu,
                                static_cast<int>(r.flowHops[i]), r.hostRate, r.cableDelay,
                                r.switchLatency)
                .GetSeconds();
        },
        res);

    res.counters = {{"fecn_marks", static_cast<double>(r.fecnMarks)},
                    {"cnps", static_cast<double>(r.cnps)},
                    {"credit_stall_us", r.creditStallUs},
                    {"drops", static_cast<double>(r.drops)},
                    {"retransmitted_packets", static_cast<double>(r.retransmittedPackets)},
                    {"peak_queue_bytes", static_cast<double>(r.peakQueueBytes)},
                    {"packets_sent", static_cast<double>(r.packetsSent)},
                    {"events", static_cast<double>(r.events)},
                    {"sim_time_us", r.end.GetPicoSeconds() / 1e6},
                    {"traffic_start_us", r.trafficStart.GetPicoSeconds() / 1e6},
                    {"smps", static_cast<double>(r.smps)},
                    {"cc_mads", static_cast<double>(r.ccMads)}};
    ScenarioTraces& t = res.traces;
    t.timeUs = r.sampleTimesUs;
    t.maxQueueBytes.assign(r.maxQueueBytes.begin(), r.maxQueueBytes.end());
    t.cnps.assign(r.cnpsSoFar.begin(), r.cnpsSoFar.end());
    for (const auto& rates : r.flowRateGbps)
    {
        t.flowRateGbps.insert(t.flowRateGbps.end(), rates.begin(), rates.end());
    }
    t.portNames = r.portNames;
    if (!r.sampleTimesUs.empty())
    {
        t.series.push_back({"fecn_marks",
                            std::vector<double>(r.fecnMarksSoFar.begin(), r.fecnMarksSoFar.end()),
                            {r.sampleTimesUs.size()}});
        t.AddPerRow("port_queue_bytes", r.portQueueBytes);
        // Ports x VLs x samples.
        ScenarioTraces::Series credits{"credits_blocks",
                                       {},
                                       {r.portNames.size(), spec.vls, r.sampleTimesUs.size()}};
        ScenarioTraces::Series stalls{"credit_stall_us", {}, credits.shape};
        for (size_t p = 0; p < r.portNames.size(); ++p)
        {
            for (uint8_t vl = 0; vl < spec.vls; ++vl)
            {
                credits.values.insert(credits.values.end(), r.portCredits[p][vl].begin(),
                                      r.portCredits[p][vl].end());
                stalls.values.insert(stalls.values.end(), r.portCreditStallUs[p][vl].begin(),
                                     r.portCreditStallUs[p][vl].end());
            }
        }
        t.series.push_back(std::move(credits));
        t.series.push_back(std::move(stalls));
    }

    res.summary.push_back({"pattern", traffic.patternText});
    res.summary.push_back({"flows done", std::to_string(table.done) + "/" +
                                             std::to_string(r.flows.size())});
    res.summary.push_back({"offered load (requested / generated)", traffic.offeredLoadText});
    res.summary.push_back({"host link", r.hostRate.ToString() + " (" +
                                            ScenarioFixed(r.hostDataRateBps / 1e9, 1) +
                                            " Gb/s data)"});
    res.summary.push_back(
        {"subnet manager",
         spec.subnetManager == "builtin"
             ? "built-in on h0 (" + spec.routing + "): subnet up at " +
                   ScenarioFixed(r.subnetUp.GetSeconds() * 1e6, 1) + " us after " +
                   std::to_string(r.smps) + " SMPs"
             : std::string("static (configured directly, no SMPs)")});
    res.summary.push_back(
        {"congestion control",
         spec.congestionControl
             ? "IBA annex A10 (threshold " + std::to_string(spec.ccThreshold) + ", CCTI_Timer " +
                   std::to_string(spec.ccCctiTimer) + ", CCT step " +
                   std::to_string(spec.ccCctStep) + " ns; " + std::to_string(r.ccMads) +
                   " CC MADs)"
             : std::string("none")});
    res.summary.push_back({"traffic start", ScenarioFixed(r.trafficStart.GetSeconds() * 1e6, 1) +
                                                " us (flow times count from here)"});
    res.summary.push_back({"simulated time (ms)", ScenarioFixed(r.end.GetSeconds() * 1e3, 3)});
    AddSlowdownSummary(table, res);
    res.summary.push_back({"FECN marks / BECN CNPs",
                           std::to_string(r.fecnMarks) + " / " + std::to_string(r.cnps)});
    res.summary.push_back({"credit stall (all ports)", ScenarioFixed(r.creditStallUs, 2) + " us"});
    res.summary.push_back({"peak switch VL buffer", std::to_string(r.peakQueueBytes) + " of " +
                                                        std::to_string(spec.vlBufferBytes) +
                                                        " bytes"});
    res.summary.push_back({"drops", std::to_string(r.drops)});
    FinishFctResult(o, table, r.flows.size(), csvPath, r.pcaps, "ib-fct.png",
                    "InfiniBand FCT slowdown by flow size", r.interrupted, r.end, res);
    return res;
}

ScenarioInfo
IbFctInfo()
{
    ScenarioInfo i;
    i.name = "ib-fct";
    i.description = "InfiniBand flow completion times: the traffic of roce-fct (a pattern at a "
                    "load from a CDF, or a flows file) as RC RDMA WRITEs over credit flow "
                    "control, with IB congestion control off or on; FCT CSV with slowdown";
    i.params = {{"topology", "leaf-spine:leaves=4,spines=2,hosts=4",
                 "fabric (leaf-spine:..., fat-tree:k=..., any topology spec)"}};
    const std::vector<ScenarioParam> traffic = FlowScenarioTrafficParams();
    i.params.insert(i.params.end(), traffic.begin(), traffic.end());
    const std::vector<ScenarioParam> own = {
        {"rate", "4xHDR", "link rate for links the topology leaves open (WIDTHxSPEED)"},
        {"vls", "1", "operational data VLs (1, 2, 4, 8, 15); the flows use VL 0"},
        {"buffer", "65536", "receive buffer per VL and port, bytes (credits; multiple of 64, "
                            "<= 131072)"},
        {"mtu", "4096", "path MTU, bytes (256 .. 4096)"},
        {"sm", "builtin", "subnet manager: builtin (an SM on h0 sweeps with SMPs) or static"},
        {"routing", "updown", "the built-in SM's routing engine: updown or minhop"},
        {"cc", "none", "congestion control: none, or iba (annex A10: FECN/BECN/CCT, set up by "
                       "CC MADs)"},
        {"threshold", "14",
         "cc=iba: switch Threshold (0 off .. 15 most aggressive; 14 as in ib-cc-incast)"},
        {"marking-rate", "0", "cc=iba: eligible packets skipped between FECN marks"},
        {"ccti-timer", "2", "cc=iba: CCTI_Timer, units of 1.024 us"},
        {"ccti-increase", "1", "cc=iba: CCTI_Increase per BECN"},
        {"ccti-limit", "127", "cc=iba: CCTI_Limit (0 .. 127)"},
        {"cct-step", "64", "cc=iba: CCT entry i delays i * cct-step ns"},
        {"limit", "200ms", "simulated time limit, from the traffic start"},
        {"sample", "0s", "rate, buffer and credit sampling interval (0s: none)"}};
    i.params.insert(i.params.end(), own.begin(), own.end());
    i.params.push_back(FlowsFileParam());
    i.pcap = ScenarioPcap::Wire;
    i.run = RunIbFct;
    ScenarioSetsAttributes(i, {{"ns3::IbNetDevice::VlBufferBytes", "buffer"},
                               {"ns3::IbNetDevice::LinkWidth", "rate"},
                               {"ns3::IbNetDevice::LinkSpeed", "rate"},
                               {"ns3::IbSubnetManager::OperationalVls", "vls"},
                               {"ns3::IbSubnetManager::RoutingEngine", "routing"},
                               {"ns3::IbCcManager::Threshold", "threshold"},
                               {"ns3::IbCcManager::MarkingRate", "marking-rate"},
                               {"ns3::IbCcManager::CctiTimer", "ccti-timer"},
                               {"ns3::IbCcManager::CctiIncrease", "ccti-increase"},
                               {"ns3::IbCcManager::CctiLimit", "ccti-limit"},
                               {"ns3::IbCcManager::CctStep", "cct-step"},
                               {"ns3::RdmaEngine::AckReqEveryPackets", ""},
                               {"ns3::RdmaEngine::CnpInterval", ""},
                               {"ns3::RdmaEngine::IbBecnByCnp", ""}});
    return i;
}

} // namespace

CNUAS_REGISTER_SCENARIO(IbFctInfo());

} // namespace ns3
