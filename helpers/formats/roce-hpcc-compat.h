// Reading the input files of the HPCC ns-3 simulator (alibaba-edu/High-Precision-Congestion-
// Control, the simulator most RoCE congestion-control papers use) and writing its FCT output
// format, so that the same experiment runs in both and the results line up column for column.
// Formats (from its mix/ directory): topology "nodes switches links" / switch ids / "a b rate
// delay error"; flows "count" / "src dst priority dport size start_s"; configuration "KEY value"
// lines; FCT output "sip dip sport dport size start_ns fct_ns standalone_fct_ns".
#ifndef CNUAS_ROCE_HPCC_COMPAT_H
#define CNUAS_ROCE_HPCC_COMPAT_H

#include "helpers/formats/topology.h"
#include "helpers/roce/roce-traffic-run.h"

#include <map>
#include <string>
#include <vector>

namespace ns3
{

/// An HPCC-format topology as a Cnuas Topology, plus what the format says about its links.
struct HpccTopology
{
    Topology topology;
    std::vector<uint32_t> hostOfNode; ///< HPCC node id -> host index (UINT32_MAX: switch)
    std::vector<uint32_t> nodeOfHost; ///< host index -> HPCC node id
    std::string hostRate;             ///< rate of host-switch links ("100Gbps")
    std::string fabricRate;           ///< rate of switch-switch links (= hostRate if none)
    double linkDelaySeconds = 0;      ///< the (single) link delay
};

/**
 * Parses an HPCC topology file. Hosts are the nodes not listed as switches, numbered in node
 * order; each link becomes a cable of the length whose propagation delay (5 ns/m, the
 * EthChannel default) equals the file's delay. Throws std::invalid_argument with the line
 * number on a malformed file, mixed host-link rates, mixed fabric rates or mixed delays.
 */
HpccTopology ReadHpccTopology(const std::string& path);

/**
 * Parses an HPCC flow file into flows between host indices. `timeOffset` is subtracted from
 * every start time (the simulator's flows start at t = 2 s). Throws std::invalid_argument with
 * the line number on a malformed line, a switch as an end point, or a count that disagrees.
 */
std::vector<RoceFlowSpec> ReadHpccFlows(const std::string& path, const HpccTopology& topo,
                                        double timeOffset);

/**
 * The `KEY value...` lines of an HPCC configuration file, with where each key was read, so that
 * a value ApplyHpccConfig refuses is reported with its file and line.
 */
struct HpccConfig : std::map<std::string, std::string>
{
    std::string path;                     ///< the file as named ("" if built in code)
    std::map<std::string, size_t> lines;  ///< key -> its line in `path`
    /// "path:line" for a key read from the file, else "HPCC config".
    std::string Where(const std::string& key) const;
};

/// What ReadHpccConfig does with a key neither Cnuas nor the HPCC simulator knows.
enum class HpccUnknownKeys
{
    Error, ///< refuse the file (a misspelt key would otherwise drop its setting silently)
    Warn,  ///< leave the key out and describe it in `warnings`
};

/**
 * Reads an HPCC configuration file: `KEY value...` lines, blank lines and `#` comments
 * skipped. Throws InputError ("path:line: ...") for a key given twice and, with
 * HpccUnknownKeys::Error, for a key that is not one of the HPCC simulator's (third.cc); with
 * Warn such keys are left out and each gets a line in `warnings`. Keys the simulator knows but
 * Cnuas has no equivalent for are kept: ApplyHpccConfig lists them as ignored.
 */
HpccConfig ReadHpccConfig(const std::string& path,
                          HpccUnknownKeys unknown = HpccUnknownKeys::Error,
                          std::vector<std::string>* warnings = nullptr);

/**
 * Applies the configuration keys that have a Cnuas equivalent to `spec` and returns the keys it
 * used; the rest are listed in `ignored`. CC_MODE 1 selects ns3::RdmaCcDcqcnMlx with
 * EWMA_GAIN, ALPHA_RESUME_INTERVAL, RATE_DECREASE_INTERVAL, RP_TIMER, FAST_RECOVERY_TIMES,
 * RATE_AI, RATE_HAI, MIN_RATE, CLAMP_TARGET_RATE; CC_MODE 8 selects ns3::RdmaCcDctcp with
 * EWMA_GAIN, DCTCP_RATE_AI and MIN_RATE; HAS_WIN 1 gives the policy a Window of the largest
 * base-RTT BDP over all host pairs (GLOBAL_T 1) or, GLOBAL_T 0, each flow's sender QP its own
 * pair's BDP (through RoceRunSpec::onFlowStart, DCQCN and DCTCP policies), VAR_WIN its
 * VariableWindow; BUFFER_SIZE (MB) sets the switch buffer; KMIN_MAP/KMAX_MAP/PMAX_MAP set
 * every switch's EcnRateMap (thresholds per port speed) and the host-rate entry as the
 * fallback set; PACKET_PAYLOAD_SIZE picks the RoCE path MTU (the IB MTU nearest to it);
 * L2_ACK_INTERVAL the ACK request interval. CC_MODE 3 selects ns3::RdmaCcHpcc (with INT on
 * every NIC) with U_TARGET, MI_THRESH, RATE_AI, MIN_RATE, HAS_WIN, VAR_WIN, FAST_REACT and
 * GLOBAL_T 1 (BaseRtt = HpccMaxBaseRtt); INT_MULTI only scales the simulator's quantization of
 * INT fields, which Cnuas does not quantize, so it is listed as without equivalent;
 * MULTI_RATE or SAMPLE_FEEDBACK other than 0 and, for HPCC, GLOBAL_T 0 are refused. CC_MODE
 * values Cnuas does not implement (7 TIMELY, 10 HPCC-PINT), and values outside what a key means
 * (a negative gain, a zero rate or buffer, a probability above 1, a flag other than 0 or 1),
 * throw InputError naming the key's file and line.
 */
std::vector<std::string> ApplyHpccConfig(const HpccConfig& cfg,
                                         const HpccTopology& topo, RoceRunSpec& spec,
                                         std::vector<std::string>* ignored);

/**
 * The base round-trip time, integer ns, of a path of `hops` links between two hosts of `topo`
 * as the HPCC simulator computes it (its third.cc): twice the one-way propagation delay plus
 * the serialization of `payloadBytes` (no header bytes) on every link of the path (host links
 * at the host rate, the others at the fabric rate).
 */
uint64_t HpccPairBaseRttNs(const HpccTopology& topo, uint32_t hops, uint32_t payloadBytes);

/// The largest HpccPairBaseRttNs between two hosts of `topo` (GLOBAL_T 1).
Time HpccMaxBaseRtt(const HpccTopology& topo, uint32_t payloadBytes);

/**
 * The HPCC simulator's standalone FCT (third.cc qp_finish), integer ns: the pair's base RTT
 * plus the flow's bytes and 48 header bytes per `payloadBytes` packet at the path's slowest
 * link rate. Not the model's ideal (StandaloneFctSeconds): what the simulator divides by.
 */
uint64_t HpccStandaloneFctNs(const HpccTopology& topo, uint64_t bytes, uint32_t payloadBytes,
                             uint32_t hops);

/// PACKET_PAYLOAD_SIZE, or the simulator's default 1000 when the configuration has none.
uint32_t HpccPayloadBytes(const HpccConfig& cfg);

/**
 * Writes the flows in the HPCC simulator's FCT format, one line a finished flow:
 * "sip dip sport dport size start_ns fct_ns standalone_fct_ns" with addresses in hex as it
 * prints them (Cnuas's 10.0.0.x addresses), dport 100 and sport the flow's index, and as the
 * standalone FCT the simulator's own (HpccStandaloneFctNs with `referencePayloadBytes`), so
 * that slowdowns from the two files compare. (Cnuas's own CSV divides by the model's exact
 * ideal instead, RoceIdealFctPs.)
 */
void WriteHpccFct(const std::string& path, const RoceRunResult& r, const HpccTopology& topo,
                  double timeOffset, uint32_t referencePayloadBytes);

} // namespace ns3

#endif
