// One RDMA traffic experiment over InfiniBand, end to end: build the fabric, bring it up, put an
// HCA on every host, connect QPs, run the traffic applications, measure. The rdma-* scenarios
// of `cnuas run` and bench/rdma-traffic-bench.cc share it.
#ifndef CNUAS_RDMA_TRAFFIC_RUN_H
#define CNUAS_RDMA_TRAFFIC_RUN_H

#include "models/ib/ib-link-rate.h"
#include "models/rdma/rdma-types.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ns3
{

/// What to run.
struct RdmaTrafficSpec
{
    enum class Pattern
    {
        PingPong, ///< host 0 pings the last host `iterations` times
        Incast,   ///< hosts 0..senders-1 each run a closed loop to the last host
        Fct,      ///< every host sends to every other, Poisson arrivals, sizes from a CDF
        Qps,      ///< `qps` QPs from host 0 to host 1, a closed loop on each
    };
    Pattern pattern = Pattern::PingPong;
    std::string topology = "pair"; ///< a topology spec (helpers/formats/topology.h)
    std::string rate;              ///< default link rate; "" = the ports' attributes
    RdmaQpType qpType = RdmaQpType::RC;
    RdmaWrOpcode op = RdmaWrOpcode::RDMA_WRITE;
    RdmaMtu mtu = RdmaMtu::MTU_4096;
    uint64_t size = 4096;          ///< fixed message size, bytes (PingPong, Incast, Qps)
    std::string cdf;               ///< Fct: size CDF file (RdmaResolveCdf)
    double load = 0.3;             ///< Fct: offered load per host, fraction of its link rate
    uint32_t senders = 8;          ///< Incast
    uint32_t qps = 1;              ///< Qps: QPs from host 0 to host 1; Fct: QPs per pair
    uint32_t outstanding = 1;      ///< closed loops: messages in flight per QP
    uint32_t iterations = 1000;    ///< PingPong
    Time duration = MicroSeconds(100); ///< how long messages are issued
    Time drain = MilliSeconds(50);     ///< Fct: longest wait for issued messages afterwards
    uint64_t seed = 1;
    uint64_t run = 1;
    std::string pcapDir; ///< empty: no pcaps
    std::string outDir;  ///< empty: no CSV or plots
    bool plots = false;
    bool progress = false;
    /// Ctrl-C (SIGINT) stops the run cleanly (the stats' `interrupted`) instead of ending the
    /// process: the caller reports what was measured so far and its files are complete.
    bool stopOnInterrupt = false;
    std::string title;
};

/// What was measured.
struct RdmaTrafficStats
{
    uint32_t hosts = 0;
    uint32_t switches = 0;
    double linkDataRate = 0;   ///< bit/s of host 0's link
    std::string linkRateName;
    uint64_t connections = 0;  ///< QP pairs
    uint64_t messagesIssued = 0;
    uint64_t messagesCompleted = 0;
    uint64_t messagesFailed = 0;  ///< completed with an error status
    uint64_t postErrors = 0;
    uint64_t bytesCompleted = 0;
    Time window;               ///< the measurement window (issue period)
    /// Messages delivered in the window per simulated second: counted at the receiver's
    /// completion for SEND and WRITE with immediate, at the requester's completion for
    /// one-sided operations (RC only: acknowledged or answered).
    double messagesPerSecond = 0;
    double goodputGbps = 0;    ///< their message bytes (headers excluded), Gb/s
    uint64_t transportPackets = 0;   ///< packets the engines sent (requests and responses)
    uint64_t retransmissions = 0;
    uint64_t packetHops = 0;   ///< packets over all cables (PortXmitPkts summed)
    uint64_t events = 0;
    Time simulated;
    double wallSeconds = 0;
    bool interrupted = false;  ///< Ctrl-C stopped it (RdmaTrafficSpec::stopOnInterrupt)
    /// Goodput of each connection in the window, Gb/s (when there are at most 64), named
    /// "h0 -> h8".
    std::vector<std::pair<std::string, double>> connectionGbps;
    std::vector<Time> rtts;    ///< PingPong
    double fctP50 = 0, fctP95 = 0, fctP99 = 0; ///< slowdown percentiles (Fct)
    std::vector<std::string> artifacts;
};

/// The path of a CDF file shipped in data/cdf/ ("websearch.cdf"), found by CnuasDataFile
/// (models/common/data-directory.h); throws std::runtime_error when no data directory has it.
std::string RdmaShippedCdf(const std::string& name);

/**
 * A `cdf` parameter's file: `value` itself when it names a file, else (a bare name such as
 * "fb-hadoop.cdf") the shipped CDF of that name. Throws std::invalid_argument naming the
 * parameter when neither exists.
 */
std::string RdmaResolveCdf(const std::string& value);

/// Runs the experiment (calls Simulator::Destroy at the end). Throws std::invalid_argument for
/// an impossible spec (bad topology, too few hosts, unreadable CDF) with the reason.
RdmaTrafficStats RunRdmaTraffic(const RdmaTrafficSpec& spec);

/**
 * The ideal completion time of an RDMA WRITE or SEND of `size` bytes on an idle path of `hops`
 * cables through cut-through switches, every link at `columnPs` picoseconds per 4-byte column
 * (4x links): the message's packets back to back at the source, the last one's tail through
 * the switches, and the acknowledgment back (docs/ib-link.md §2.1 and §2.9 arithmetic; the
 * credit updates a turnaround waits for are left out, 0.32 ns each on 4x HDR). Every link runs
 * at `rate`; `propagation` is one cable's delay.
 */
Time RdmaIdealFct(uint64_t size, RdmaWrOpcode op, uint32_t mtu, int hops, const IbLinkRate& rate,
                  Time propagation, Time switchLatency, uint32_t cutThroughBytes = 8,
                  uint32_t delimiterBytes = 2);

} // namespace ns3

#endif
