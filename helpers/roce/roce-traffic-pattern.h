// The traffic patterns of RoCE load experiments as lists of flows for RunRoceFlows: all-to-all,
// a random permutation and N-to-1 incast, each host (incast: the receiver) loaded to a chosen
// fraction of its link by Poisson flow arrivals whose sizes come from a flow-size CDF (WebSearch,
// FB_Hadoop or a user's file, format data/cdf/README.md). The roce-fct scenario runs them.
#ifndef CNUAS_ROCE_TRAFFIC_PATTERN_H
#define CNUAS_ROCE_TRAFFIC_PATTERN_H

#include "helpers/formats/topology.h"
#include "helpers/roce/roce-traffic-run.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

enum class RocePattern
{
    AllToAll,    ///< every host sends to uniformly chosen other hosts
    Permutation, ///< every host sends to one partner; the partners are a derangement
    Incast,      ///< `incastSenders` hosts send to host `incastTarget`
};

/// "all-to-all", "permutation" or "incast"; throws std::invalid_argument otherwise.
RocePattern ParseRocePattern(const std::string& name);

struct RoceTrafficSpec
{
    RocePattern pattern = RocePattern::AllToAll;
    uint32_t hosts = 0;
    /// Link rate of a host, bit/s: the load is a fraction of it.
    double linkBps = 40e9;
    /// Offered load: of every sender's link (all-to-all, permutation) or of the receiver's link
    /// (incast, where the senders share it evenly). Flow bytes only, headers not counted, as
    /// the HPCC simulator's traffic generator counts them.
    double load = 0.3;
    Time duration = MilliSeconds(1); ///< flows arrive in [0, duration)
    std::string cdfFile;             ///< flow-size CDF (a path)
    uint64_t maxBytes = (1ULL << 31) - 1; ///< sizes above are cut to it (one WRITE's limit)
    uint32_t incastSenders = 8;      ///< incast: hosts incastTarget+1, +2, ... (mod hosts)
    uint32_t incastTarget = 0;
    uint64_t seed = 1;               ///< the same seed gives the same flows
};

struct RoceTraffic
{
    std::vector<RoceFlowSpec> flows;   ///< sorted by start time
    std::vector<uint32_t> partner;     ///< permutation: partner[h] is h's destination
    double meanBytes = 0;              ///< mean of the CDF (before the cap)
    double arrivalsPerSecond = 0;      ///< Poisson rate of one sender
    uint32_t senders = 0;
};

/**
 * Draws the flows. Every sender is a Poisson process of rate load * linkBps / (8 * mean size)
 * (incast: that rate split over the senders); sizes are drawn from the CDF by inversion and
 * rounded to whole bytes (at least 1). Throws std::invalid_argument for an unreadable CDF, fewer
 * than two hosts, a load outside (0, 1], or an incast that asks for more senders than there are
 * other hosts.
 */
RoceTraffic MakeRoceTraffic(const RoceTrafficSpec& spec);

} // namespace ns3

#endif
