// A RoCE RDMA load experiment end to end: an Ethernet fabric with RoCE NICs, one RC QP pair per
// flow doing one RDMA WRITE of the flow's size at its start time, congestion control on every
// NIC, and what validation and benchmarks read out: flow completion times, sampled per-flow
// rates and switch queues, PFC, ECN, CNP and drop counts. Shared by the roce-* scenarios,
// validation/roce and bench.
#ifndef CNUAS_ROCE_TRAFFIC_RUN_H
#define CNUAS_ROCE_TRAFFIC_RUN_H

#include "helpers/roce/eth-fabric-helper.h"
#include "helpers/rdma/rdma-flow-driver.h"
#include "helpers/roce/roce-helper.h"

#include "ns3/data-rate.h"
#include "ns3/nstime.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ns3
{

/// One flow: `bytes` written by host `src` into host `dst`, posted at `start` (the flows run
/// through RdmaFlowDriver, the same on both fabrics).
using RoceFlowSpec = RdmaFlowSpec;
using RoceFlowResult = RdmaFlowResult;

struct RoceRunSpec
{
    Topology topology;
    DataRate hostRate = DataRate("40Gbps");
    DataRate fabricRate = DataRate("40Gbps");
    /// Congestion-control TypeId on every NIC ("ns3::RdmaCcNone" for PFC only).
    std::string cc = "ns3::RdmaCcDcqcnPaper";
    bool pfc = true;             ///< PFC on priority 3 everywhere (else that class is lossy)
    bool ecn = true;             ///< switches mark ECT packets (RED, KminBytes..KmaxBytes, Pmax)
    uint64_t kminBytes = 5000;   ///< DCQCN paper: Kmin 5 KB
    uint64_t kmaxBytes = 200000; ///< Kmax 200 KB
    double pmax = 0.01;          ///< Pmax 1 %
    uint64_t bufferBytes = 12 * 1024 * 1024; ///< shared buffer per switch
    /// Switch node indices (topology order) configured inconsistently: PFC off on their ports
    /// and ECN off in their MMU while the rest of the fabric has both.
    std::vector<uint32_t> misconfiguredSwitches;
    RdmaMtu pathMtu = RdmaMtu::MTU_1024;
    /// RdmaEngine AckReqEveryPackets: the requester asks for an ACK every N packets (1: every
    /// packet is acknowledged, as the HPCC simulator does; without it a long message is only
    /// acknowledged at its end and its transport timer runs out).
    uint32_t ackEveryPackets = 1;
    /// RC loss recovery on every NIC: "gbn" (IBA go-back-N) or "irn" (IRN-style selective
    /// repeat; RdmaEngine LossRecovery).
    std::string recovery = "gbn";
    /// RdmaEngine RtoHigh / RtoLow (0: the QPs' local ACK timeout, 4.096 us x 2^8).
    Time rtoHigh;
    Time rtoLow;
    /// RdmaEngine MaxInflightPackets (IRN's BDP cap; 0 = none).
    uint32_t maxInflightPackets = 0;
    /// INT hop slots on every NIC's request packets (RoceRdmaPort IntMaxHops; HPCC paper
    /// §3.2). 0 = none, except that ns3::RdmaCcHpcc always gets kIntDefaultMaxHops (5).
    uint32_t intMaxHops = 0;
    uint16_t ethMtu = 1500;
    std::vector<RoceFlowSpec> flows;
    Time limit = MilliSeconds(100); ///< the run stops here even if flows are unfinished
    Time sampleInterval;            ///< 0: no time series
    /// ns-3 event scheduler TypeId for this run ("" = leave the current one).
    std::string scheduler;
    /// "" = no pcap; else an Ethernet pcap (link type 1, EthPcapHelper) of each traced host
    /// port, from time zero, as `<pcapDir>/<host>.pcap` (the directory is created).
    std::string pcapDir;
    /// The hosts (indices in topology order) traced when pcapDir is set; empty: every host.
    std::vector<uint32_t> pcapHosts;
    /// Further configuration before Build (fabric) and before Install (NICs).
    std::function<void(EthFabricHelper&)> configureFabric;
    std::function<void(RoceHelper&)> configureNics;
    /// Called after the fabric and NICs exist and before the run (e.g. to enable pcap).
    std::function<void(const EthFabric&, const std::vector<RoceHca>&)> beforeRun;
    /// Called when a flow has its QPs connected, before its WRITE is posted, with the sender's
    /// QP number and HCA (e.g. to give that QP its own congestion window).
    std::function<void(const RoceFlowSpec& flow, uint32_t srcQpn, const RoceHca& src)>
        onFlowStart;
    /// A progress bar on stderr (SimProgress): flows finished of all, simulated time, ETA.
    bool progress = false;
    /// Ctrl-C (SIGINT) stops the run cleanly (RoceRunResult::interrupted) instead of ending the
    /// process: the caller reports the finished flows and closes its files.
    bool stopOnInterrupt = false;
};

struct RoceRunResult
{
    std::vector<RoceFlowResult> flows;
    std::vector<double> sampleTimesUs;
    /// flowRateGbps[f][i]: bytes the sender of flow f sent during sample i, as Gb/s.
    std::vector<std::vector<double>> flowRateGbps;
    /// Largest egress queue (bytes, priority 3) over all switch ports, per sample.
    std::vector<uint64_t> maxQueueBytes;
    /// Per sample, the run's counts so far: PFC frames sent (quanta > 0) by any port, ECN marks
    /// by any switch, CNPs sent by any NIC (what pauseFrames, ecnMarks and cnps total).
    std::vector<uint64_t> pauseFramesSoFar;
    std::vector<uint64_t> ecnMarksSoFar;
    std::vector<uint64_t> cnpsSoFar;
    /// Every port of the fabric, host ports first, then switch ports, in topology order:
    /// "h0:1", "sw0:3" (node name, port number).
    std::vector<std::string> portNames;
    /// portQueueBytes[p][i]: bytes in port p's egress queue on the RoCE priority at sample i.
    std::vector<std::vector<uint64_t>> portQueueBytes;
    uint64_t peakQueueBytes = 0; ///< largest queue any switch port reached (whole run)
    uint64_t pauseFrames = 0;    ///< PFC frames with quanta > 0 sent by any port
    uint64_t drops = 0;          ///< frames any port dropped
    uint64_t ecnMarks = 0;
    uint64_t cnps = 0;
    uint64_t retransmittedPackets = 0;
    uint64_t packetsSent = 0; ///< RoCE packets the NICs sent (data, ACK, CNP)
    /// Frames any port transmitted, PFC frames aside: one per frame per cable it crossed, the
    /// Ethernet counterpart of the InfiniBand runs' packet-hops (sum of PortXmitPkts).
    uint64_t packetHops = 0;
    uint64_t events = 0;
    Time end; ///< simulated time when the run stopped
    bool allDone = false;
    bool interrupted = false; ///< Ctrl-C stopped it (RoceRunSpec::stopOnInterrupt)
    std::vector<std::string> pcaps; ///< the pcap files written (pcapDir), in host order
};

/// Builds, runs and reads out one experiment. Throws std::invalid_argument on a bad spec.
RoceRunResult RunRoceFlows(const RoceRunSpec& spec);

/// Jain's fairness index of `x` (1 = all equal; 1/n = one takes all).
double JainIndex(const std::vector<double>& x);

} // namespace ns3

#endif
