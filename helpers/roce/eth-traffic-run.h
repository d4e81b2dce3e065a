// A UDP traffic experiment on an Ethernet fabric, end to end: build, load with greedy sources,
// run until everything sent has arrived or been dropped, and count. Shared by tests and bench.
#ifndef CNUAS_ETH_TRAFFIC_RUN_H
#define CNUAS_ETH_TRAFFIC_RUN_H

#include "helpers/roce/eth-fabric-helper.h"

#include "ns3/data-rate.h"
#include "ns3/nstime.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \brief A greedy UDP source on a host port: keeps the port's transmit queue for its priority
 * full, sending to its destinations in turn (one UDP source port per destination, so each
 * (source, destination) pair is one ECMP flow), until its stop time.
 *
 * To the RoCEv2 port (4791, the template's default) the datagrams are RoCEv2 packets as a
 * capture must show them: a BTH (UC SEND Only), zeros, and the ICRC, which the frame fills when
 * its bytes are made (EthUdpFlow::icrcPending); such a payload must hold BTH + ICRC (16 bytes).
 */
class EthGreedySource
{
  public:
    EthGreedySource(Ptr<EthNetDevice> port, std::vector<uint32_t> dstIps, EthUdpFlow tmpl,
                    uint32_t payloadBytes, Time stop);
    void Start();
    /// Sends over IPv6 to these addresses instead (one per destination, in the same order).
    void SetIpv6Destinations(std::vector<Ipv6Bytes> dst6) { m_dst6 = std::move(dst6); }
    uint64_t GetSent() const { return m_sent; }

  private:
    void Fill();
    void OnTxReady(Ptr<EthNetDevice>, uint8_t priority);

    Ptr<EthNetDevice> m_port;
    std::vector<uint32_t> m_dst;
    std::vector<Ipv6Bytes> m_dst6;
    EthUdpFlow m_flow;
    uint32_t m_payload;
    int64_t m_stopPs;
    size_t m_next = 0;
    uint64_t m_sent = 0;
    uint32_t m_psn = 0; ///< BTH PSN of the next RoCEv2 packet (24 bits)
};

struct EthTrafficSpec
{
    enum class Pattern
    {
        Incast,  ///< every host but `incastTarget` sends to it
        AllToAll ///< every host sends to every other host in turn
    };
    std::string topology = "star:hosts=5";
    Pattern pattern = Pattern::Incast;
    uint32_t incastTarget = 0;
    uint32_t payloadBytes = 1000;
    Time duration = MicroSeconds(100); ///< sources stop sending after this
    Time limit = MilliSeconds(50);     ///< the run stops here even if frames are still queued
    DataRate hostRate = DataRate("100Gbps");
    DataRate fabricRate = DataRate("100Gbps");
    bool pfc = true;
    uint8_t priority = 3;
    uint8_t dscp = 26; ///< class selector 3: priority 3 at the switches
    bool ecnCapable = false;
    bool ipv6 = false; ///< send over IPv6 (fd00::/8 host addresses) instead of IPv4
    /// Further configuration before Build (attributes of ports, switches, MMUs, cables).
    std::function<void(EthFabricHelper&)> configure;
    std::string pcapDir; ///< "" = no pcap; else one file per host port
    /// ns-3 event scheduler TypeId for this run ("" = leave the current one).
    std::string scheduler;
};

struct EthTrafficStats
{
    uint32_t hosts = 0;
    uint64_t sent = 0;     ///< frames the sources queued
    uint64_t received = 0; ///< frames delivered at destination hosts
    uint64_t drops = 0;    ///< over all ports and reasons
    std::array<uint64_t, static_cast<int>(EthDropReason::Count)> dropsByReason{};
    uint64_t pfcFramesSent = 0;
    uint64_t pausesSent = 0; ///< (frame, priority) XOFF
    uint64_t ecnMarked = 0;
    uint64_t receivedCe = 0;
    uint64_t packetHops = 0; ///< data frame transmissions, all ports
    uint64_t events = 0;
    uint64_t maxEgressQueueBytes = 0; ///< any switch port, any class
    uint64_t maxHeadroomUsed = 0;     ///< any switch, any (port, priority)
    uint64_t framesCreated = 0;       ///< frame records the pool holds
    double wallSeconds = 0;
    double cpuSeconds = 0; ///< process CPU time of Simulator::Run
    Time simulated;        ///< when the last frame was delivered
    double aggregateGbps = 0; ///< received bytes x 8 / duration
};

EthTrafficStats RunEthTraffic(const EthTrafficSpec& spec);

} // namespace ns3

#endif
