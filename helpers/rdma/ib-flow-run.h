// An InfiniBand RDMA load experiment end to end, the InfiniBand counterpart of RunRoceFlows
// (helpers/roce/roce-traffic-run.h): an InfiniBand fabric brought up by the built-in subnet
// manager (or configured statically), an HCA on every host, optionally InfiniBand congestion
// control (IBA vol. 1 annex A10: FECN marking in the switches, BECN, CCT throttling at the
// sources, configured by the CC manager's MADs), one RC QP pair per flow doing one RDMA WRITE
// (RdmaFlowDriver, the same code as on RoCE), and what a study reads out: flow completion times,
// per-flow rates, per-port buffer use, transmit credits and credit stalls per port and VL.
// The ib-fct scenario runs it.
#ifndef CNUAS_IB_FLOW_RUN_H
#define CNUAS_IB_FLOW_RUN_H

#include "helpers/formats/topology.h"
#include "helpers/rdma/rdma-flow-driver.h"
#include "models/ib/ib-link-rate.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

struct IbFlowRunSpec
{
    Topology topology;
    /// Rate of the links the topology leaves open ("4xHDR"); "" = the ports' LinkWidth and
    /// LinkSpeed attributes (4x HDR unless changed).
    std::string rate;
    /// Operational data VLs (PortInfo.OperationalVLs: 1, 2, 4, 8 or 15). The flows use SL 0,
    /// mapped to VL 0; more VLs divide nothing (each VL has its own VlBufferBytes) but give the
    /// credit traces a column per VL.
    uint8_t vls = 1;
    /// Receive buffer per data VL and port, bytes (IbNetDevice VlBufferBytes: a multiple of 64,
    /// at most 131072, IBA vol. 1 §7.9.4.3).
    uint32_t vlBufferBytes = 65536;
    RdmaMtu pathMtu = RdmaMtu::MTU_4096;
    /// "builtin": the subnet manager on host 0 sweeps the fabric with SMPs first; "static":
    /// LIDs, forwarding tables and port states are set directly (no SMPs, min-hop routes).
    std::string subnetManager = "builtin";
    /// The built-in SM's routing engine: "updown" or "minhop" (IbSubnetManager RoutingEngine).
    std::string routing = "updown";
    /// InfiniBand congestion control (annex A10) on every switch and HCA; needs the built-in
    /// SM (the CC manager beside it configures switches and CAs with CC MADs after its sweep).
    bool congestionControl = false;
    /// The CC manager's profile (IbCcManager attributes of the same names).
    uint32_t ccThreshold = 14;
    uint32_t ccMarkingRate = 0;
    uint32_t ccCctiTimer = 2;
    uint32_t ccCctiIncrease = 1;
    uint32_t ccCctiLimit = 127;
    uint32_t ccCctStep = 64;
    /// RdmaEngine AckReqEveryPackets: an ACK every N packets (1, as on RoCE: a long message
    /// acknowledged only at its end would run out its transport timer under an incast).
    uint32_t ackEveryPackets = 1;
    std::vector<RdmaFlowSpec> flows; ///< start times count from the traffic start
    Time limit = MilliSeconds(100);  ///< the traffic stops here, counted from its start
    Time sampleInterval;             ///< 0: no time series
    std::string pcapDir;             ///< "" = none; else one ERF pcap per host port
    bool progress = false;
    bool stopOnInterrupt = false;
};

struct IbFlowRunResult
{
    std::vector<RdmaFlowResult> flows;
    /// Simulated time at which the traffic started (after bring-up): flow starts, FCTs and
    /// sample times count from here.
    Time trafficStart;
    Time subnetUp;     ///< when the built-in SM's first sweep had the subnet up (static: 0)
    uint64_t smps = 0; ///< SMPs the SM sent until then
    uint64_t ccMads = 0; ///< CC MADs the CC manager sent (congestion control on)
    Time end;          ///< since the traffic start, when the run stopped
    IbLinkRate hostRate;
    double hostDataRateBps = 0;
    Time cableDelay;
    Time switchLatency;
    /// Links on the programmed route of each flow (LFT walk), for the ideal FCT.
    std::vector<uint32_t> flowHops;

    std::vector<double> sampleTimesUs; ///< since the traffic start
    std::vector<std::vector<double>> flowRateGbps; ///< [flow][sample]
    /// Largest receive-buffer use (bytes, all data VLs) of any switch port, per sample: an
    /// InfiniBand switch queues at its input (credit flow control keeps it lossless).
    std::vector<uint64_t> maxQueueBytes;
    std::vector<uint64_t> fecnMarksSoFar; ///< FECN marks by all switches so far
    std::vector<uint64_t> cnpsSoFar;      ///< BECN notifications (CNPs) sent by all HCAs
    /// Every port, host ports first, then switch ports, in topology order ("h0:1", "sw0:3").
    std::vector<std::string> portNames;
    /// [port][sample]: receive-buffer bytes in use, all data VLs.
    std::vector<std::vector<uint64_t>> portQueueBytes;
    /// [port][vl][sample]: transmit credits available, 64-byte blocks.
    std::vector<std::vector<std::vector<uint32_t>>> portCredits;
    /// [port][vl][sample]: the port's credit-stall time so far (data waiting for credit), us;
    /// a stall counts when it ends.
    std::vector<std::vector<std::vector<double>>> portCreditStallUs;

    uint64_t fecnMarks = 0;
    uint64_t cnps = 0;
    uint64_t peakQueueBytes = 0; ///< largest receive-buffer use of a switch port's VL, bytes
    double creditStallUs = 0;    ///< every port's credit-stall time, summed
    uint64_t drops = 0;
    uint64_t retransmittedPackets = 0;
    uint64_t packetsSent = 0;    ///< transport packets the HCAs sent
    uint64_t events = 0;         ///< simulator events of the traffic phase
    bool allDone = false;
    bool interrupted = false;
    std::vector<std::string> pcaps;
};

/// Builds, brings up, runs and reads out one experiment (Simulator::Destroy at the end).
/// Throws std::invalid_argument for a spec that cannot run (congestion control without the
/// built-in SM, a bad flow), std::runtime_error when the fabric does not come up.
IbFlowRunResult RunIbFlows(const IbFlowRunSpec& spec);

} // namespace ns3

#endif
