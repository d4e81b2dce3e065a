// Built-in InfiniBand link-layer scenarios for `cnuas run`.
#include "helpers/ib/ib-traffic-run.h"
#include "helpers/scenario/scenario.h"
#include "models/ib/ib-vl-counts.h"

#include <algorithm>
#include <stdexcept>

namespace ns3
{

namespace
{

ScenarioResult
RunScenario(const ScenarioOptions& o, const std::string& name, IbTrafficSpec::Pattern pattern)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find(name);
    CheckScenarioParams(o, info);
    IbTrafficSpec spec;
    spec.pattern = pattern;
    spec.topology = ScenarioParamString(o, info, "topology");
    // Built here once only to check it, so that a bad spec is reported against where it was
    // given (RunIbTraffic builds it again).
    ScenarioParamTopology(o, info);
    spec.rate = ScenarioParamString(o, info, "rate");
    spec.duration = ScenarioParamMicroseconds(o, info, "duration-us", 1e-6, 1e9);
    // The data-VL counts PortInfo.OperationalVLs can encode (IBA vol. 1 §14.2.5.6): a port
    // given another count keeps its old one, and the run would silently use fewer VLs.
    spec.vls = static_cast<uint8_t>(ScenarioParamUintOneOf(o, info, "vls", IbDataVlCounts()));
    // IbPacketSource's PayloadBytes: at most the 4096-byte IB MTU.
    spec.payloadBytes = static_cast<uint32_t>(ScenarioParamUint(o, info, "payload", 0, 4096));
    spec.subnetManager = ScenarioParamChoice(o, info, "sm", {"builtin", "static"});
    if (pattern == IbTrafficSpec::Pattern::Incast)
    {
        spec.senders = static_cast<uint32_t>(ScenarioParamUint(o, info, "senders", 0, 1000000));
        spec.victim = ScenarioParamUint(o, info, "victim", 0, 1) != 0;
    }
    if (pattern == IbTrafficSpec::Pattern::AllToAll || pattern == IbTrafficSpec::Pattern::Shift)
    {
        const std::string p = ScenarioParamChoice(o, info, "pattern", {"all-to-all", "shift"});
        spec.pattern = p == "all-to-all" ? IbTrafficSpec::Pattern::AllToAll
                                         : IbTrafficSpec::Pattern::Shift;
    }
    ApplyScenarioOutputs(o, spec);
    IbTrafficStats st = RunIbTraffic(spec);

    ScenarioResult r;
    auto add = [&](const std::string& k, const std::string& v) { r.summary.emplace_back(k, v); };
    add("topology", spec.topology + " (" + std::to_string(st.hosts) + " hosts, " +
                        std::to_string(st.switches) + " switches)");
    add("link rate", "host 0 trained to " + st.linkRateName + " (" +
                         ScenarioFixed(st.linkDataRate / 1e9, 1) + " Gb/s data)");
    if (spec.subnetManager == "builtin")
    {
        add("subnet manager", "built-in SM on host 0: subnet up at " +
                                  ScenarioFixed(st.subnetUp.GetSeconds() * 1e6, 1) + " us after " +
                                  std::to_string(st.smpsSent) + " SMPs (" +
                                  ScenarioFixed(st.smWallSeconds, 2) + " s wall)");
    }
    else
    {
        add("subnet manager", "static (configured directly, no SMPs)");
    }
    add("simulated", ScenarioFixed(st.simulated.GetSeconds() * 1e6, 1) + " us in " +
                         ScenarioFixed(st.wallSeconds, 2) + " s wall");
    add("packets", std::to_string(st.packetsSent) + " sent, " +
                       std::to_string(st.packetsReceived) + " received, " +
                       std::to_string(st.drops) + " dropped");
    add("events", std::to_string(st.events) + " (" +
                      ScenarioFixed(double(st.events) / std::max<uint64_t>(1, st.packetHops), 2) +
                      " per packet-hop, " + std::to_string(st.packetHops) + " packet-hops)");
    add("event breakdown", std::to_string(st.packetHops) + " arrivals, " +
                               std::to_string(st.wakeEvents) + " transmitter wake-ups (" +
                               std::to_string(st.wakeData) + " sent data, " +
                               std::to_string(st.wakeFlowControl) + " a flow-control packet, " +
                               std::to_string(st.wakeManagement) + " VL15, " +
                               std::to_string(st.wakeNothing) + " nothing), " +
                               std::to_string(st.flowControlEvents) + " flow-control arrivals (" +
                               std::to_string(st.flowControlStashed) + " more applied lazily), " +
                               std::to_string(st.refreshEvents) + " refresh timers");
    add("max VL buffer use", std::to_string(st.maxBufferUsed) + " of " +
                                 std::to_string(st.bufferCapacity) + " blocks (64 B)");
    if (!st.ratesMeasured)
    {
        add("throughput", "not measured: after the warm-up quarter the traffic covered no whole "
                          "sample bin (ns3::IbPacketSink::SampleInterval)");
    }
    else if (pattern == IbTrafficSpec::Pattern::Incast || pattern == IbTrafficSpec::Pattern::Pair)
    {
        add("throughput into " + st.hotName,
            ScenarioFixed(st.hotGbps, 2) + " Gb/s (" +
                ScenarioFixed(100 * st.hotGbps * 1e9 / st.linkDataRate, 1) +
                "% of the link's data rate, headers included)");
    }
    if (st.ratesMeasured &&
        (pattern == IbTrafficSpec::Pattern::Incast || pattern == IbTrafficSpec::Pattern::Pair))
    {
        for (const auto& fl : st.flows)
        {
            add("flow " + fl.name, ScenarioFixed(fl.gbps, 2) + " Gb/s");
        }
    }
    if (st.ratesMeasured && st.victimGbps >= 0)
    {
        std::string text = ScenarioFixed(st.victimGbps, 2) + " Gb/s to an idle host";
        if (st.sharedWithVictim >= 0 && size_t(st.sharedWithVictim) < st.flows.size())
        {
            // Max-min fair share of the link the victim shares with host 0's flow, which the
            // hot spot holds to its own share: what the victim would get without head-of-line
            // blocking (on a path where that link is the victim's bottleneck).
            const double fair = st.linkDataRate / 1e9 - st.flows[st.sharedWithVictim].gbps;
            text += "; max-min fair share of the link it shares with " +
                    st.flows[st.sharedWithVictim].name + ": " + ScenarioFixed(fair, 1) + " Gb/s";
            if (st.victimGbps < 0.95 * fair)
            {
                text += " (congestion spreading costs it " +
                        ScenarioFixed(100 * (1 - st.victimGbps / fair), 0) + "%)";
            }
        }
        add("victim flow " + st.victimName, text);
    }
    if (st.ratesMeasured)
    {
        add("aggregate throughput", ScenarioFixed(st.aggregateGbps, 1) + " Gb/s");
    }
    add("credit stall at host 0", ScenarioFixed(st.creditStall.GetSeconds() * 1e6, 2) + " us");
    r.artifacts = st.artifacts;
    r.exitCode = (st.drops == 0 && st.packetsReceived == st.packetsSent) ? 0 : 1;
    if (st.interrupted)
    {
        ScenarioMarkInterrupted(r, st.simulated);
    }
    return r;
}

/// What RunIbTraffic sets from its spec: the SM's OperationalVLs (or the static subnet's), the
/// sources' payload and destinations.
void
IbRunSetsAttributes(ScenarioInfo& i)
{
    ScenarioSetsAttributes(i, {{"ns3::IbSubnetManager::OperationalVls", "vls"},
                               {"ns3::IbPacketSource::PayloadBytes", "payload"},
                               {"ns3::IbPacketSource::DestinationLid", ""}});
}

std::vector<ScenarioParam>
CommonParams(const std::string& topology, const std::string& duration)
{
    return {{"topology", topology, "fabric (see docs/cli.md)"},
            {"rate", "", "link rate for links the topology leaves open, e.g. 4xNDR (default: "
                         "the IbNetDevice LinkWidth/LinkSpeed attributes, 4x HDR)"},
            {"duration-us", duration, "how long the sources send, microseconds"},
            {"vls", "1", "operational data VLs (1, 2, 4, 8, 15)"},
            {"payload", "4096", "payload bytes per packet (<= 4096)"},
            {"sm", "builtin",
             "subnet manager: builtin (an SM on host 0 sweeps with SMPs first) or static "
             "(LIDs, routes and port states set directly)"}};
}

ScenarioInfo
IncastInfo()
{
    ScenarioInfo i;
    i.name = "ib-incast";
    i.description = "InfiniBand N-to-1 incast with a victim flow: credit flow control keeps it "
                    "lossless and spreads the congestion to a flow bound elsewhere";
    i.params = CommonParams("dumbbell:left=2,right=9", "200");
    i.params.push_back({"senders", "8",
                        "hosts sending to the hot spot (the last host): host 0 across the "
                        "inter-switch link, the others beside the hot spot"});
    i.params.push_back({"victim", "1",
                        "1: host 1 sends to the idle host before the hot spot, across the "
                        "inter-switch link host 0 also uses"});
    i.pcap = ScenarioPcap::Wire;
    i.run = [](const ScenarioOptions& o) {
        return RunScenario(o, "ib-incast", IbTrafficSpec::Pattern::Incast);
    };
    IbRunSetsAttributes(i);
    return i;
}

ScenarioInfo
FatTreeInfo()
{
    ScenarioInfo i;
    i.name = "ib-fat-tree";
    i.description = "InfiniBand k-ary fat-tree under all-to-all (or shift-permutation) load on "
                    "min-hop routes";
    i.params = CommonParams("fat-tree:k=4", "50");
    i.params.push_back({"pattern", "all-to-all", "all-to-all or shift"});
    i.pcap = ScenarioPcap::Wire;
    i.run = [](const ScenarioOptions& o) {
        return RunScenario(o, "ib-fat-tree", IbTrafficSpec::Pattern::AllToAll);
    };
    IbRunSetsAttributes(i);
    return i;
}

ScenarioInfo
PairInfo()
{
    ScenarioInfo i;
    i.name = "ib-pair";
    i.description = "Two InfiniBand hosts through one switch: one greedy flow";
    i.params = CommonParams("pair", "5");
    i.pcap = ScenarioPcap::Wire;
    i.run = [](const ScenarioOptions& o) {
        return RunScenario(o, "ib-pair", IbTrafficSpec::Pattern::Pair);
    };
    IbRunSetsAttributes(i);
    return i;
}

} // namespace

CNUAS_REGISTER_SCENARIO(IncastInfo());
CNUAS_REGISTER_SCENARIO(FatTreeInfo());
CNUAS_REGISTER_SCENARIO(PairInfo());

} // namespace ns3
