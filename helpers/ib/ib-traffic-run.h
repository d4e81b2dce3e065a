// One InfiniBand traffic experiment, end to end: build the fabric, bring it up, run a traffic
// pattern, measure. The built-in scenarios and the whole-simulation benchmarks share it.
#ifndef CNUAS_IB_TRAFFIC_RUN_H
#define CNUAS_IB_TRAFFIC_RUN_H

#include "ns3/nstime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/// What to run.
struct IbTrafficSpec
{
    enum class Pattern
    {
        Pair,     ///< host 0 -> host 1
        Incast,   ///< `senders` hosts -> the last host, plus an optional victim flow (see .cc)
        Shift,    ///< host i -> host (i + n/2) mod n
        AllToAll, ///< every host sends to every other host in turn, packet by packet
    };
    std::string topology = "pair"; ///< a topology spec (helpers/formats/topology.h)
    std::string rate;              ///< default link rate; "" = the ports' attributes
    /// "static": IbStaticSubnetHelper configures the fabric directly; "builtin": an
    /// IbSubnetManager on host 0 brings it up with SMPs and the traffic starts after that.
    std::string subnetManager = "static";
    Time duration = MicroSeconds(10);
    uint8_t vls = 1;
    Pattern pattern = Pattern::Pair;
    uint32_t senders = 8;
    bool victim = true;
    uint32_t payloadBytes = 4096;
    std::string pcapDir; ///< empty: no pcaps
    std::string outDir;  ///< empty: no CSV traces or plots
    bool plots = false;
    bool progress = false;
    /// Ctrl-C (SIGINT) stops the run cleanly (the stats' `interrupted`) instead of ending the
    /// process: the caller reports what was measured so far and its files are complete.
    bool stopOnInterrupt = false;
    std::string title;
};

/// What was measured.
struct IbTrafficStats
{
    std::string topology;
    uint32_t hosts = 0;
    uint32_t switches = 0;
    double linkDataRate = 0; ///< bit/s, of host 0's link
    std::string linkRateName; ///< "4xHDR"
    Time subnetUp;             ///< builtin SM: simulated time at which the subnet was up
    uint64_t smpsSent = 0;     ///< builtin SM: SMPs it sent to bring the subnet up
    double smWallSeconds = 0;  ///< builtin SM: wall-clock time of the bring-up
    uint64_t packetsSent = 0;
    uint64_t packetsReceived = 0;
    uint64_t drops = 0;
    uint64_t packetHops = 0;   ///< packets transmitted summed over all ports (every cable crossing)
    uint64_t events = 0;       ///< ns-3 events executed
    uint64_t wakeEvents = 0;   ///< transmitter wake-ups scheduled (packets queued behind others)
    uint64_t wakeData = 0;        ///< of them: those that sent a data packet
    uint64_t wakeFlowControl = 0; ///< a flow-control packet (data waiting behind it)
    uint64_t wakeManagement = 0;  ///< a VL15 packet
    uint64_t wakeNothing = 0;     ///< nothing (credit or a cut-through head not there yet)
    uint64_t flowControlEvents = 0;  ///< flow-control packets processed as arrival events
    uint64_t flowControlStashed = 0; ///< flow-control packets applied without an event
    uint64_t refreshEvents = 0;      ///< periodic flow-control refresh timers
    Time simulated;            ///< simulated time at the end (including the drain)
    double wallSeconds = 0;    ///< wall-clock time of the simulation proper
    uint32_t maxBufferUsed = 0;
    uint32_t bufferCapacity = 0;
    std::string hotName;
    double hotGbps = 0;        ///< throughput into the hot spot (Incast/Pair), wire bytes
    std::string victimName;
    double victimGbps = -1;    ///< victim flow throughput (-1: none)
    double aggregateGbps = 0;  ///< all sinks together
    Time creditStall;          ///< host 0's time waiting for credit
    bool ratesMeasured = true; ///< false if the traffic was too short for a rate window
    bool interrupted = false;  ///< Ctrl-C stopped it (IbTrafficSpec::stopOnInterrupt)
    struct Flow
    {
        std::string name; ///< "h0 -> h10"
        double gbps = 0;  ///< wire-byte throughput in the measurement window
    };
    std::vector<Flow> flows;   ///< every flow, when there are at most 64
    /// Index in `flows` of the hot-spot flow that crosses the victim's shared link (-1: none).
    int sharedWithVictim = -1;
    std::vector<std::string> artifacts;
};

/// Runs the experiment (calls Simulator::Destroy at the end). Throws std::invalid_argument for
/// an impossible spec (bad topology, too few hosts).
IbTrafficStats RunIbTraffic(const IbTrafficSpec& spec);

} // namespace ns3

#endif
