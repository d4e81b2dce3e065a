// Ethernet pcap traces of an EthNetDevice: every frame it sends and receives, PFC included.
#ifndef CNUAS_ETH_PCAP_WRITER_H
#define CNUAS_ETH_PCAP_WRITER_H

#include "models/roce/eth-net-device.h"

#include "ns3/pcap-file-wrapper.h"

#include <string>

namespace ns3
{

/// pcap link type of Ethernet frames (LINKTYPE_ETHERNET, tcpdump.org link-layer header types).
constexpr uint32_t kLinkTypeEthernet = 1;

/**
 * \brief Writes a port's frames to a pcap with nanosecond timestamps and link type 1, the way a
 * capture on the host shows them: destination MAC through the padding, without preamble and
 * without FCS. Wireshark decodes PFC frames as "MAC Control" / "PFC" and the rest as
 * IPv4/UDP (and, once RoCEv2 sits on UDP port 4791, as InfiniBand BTH).
 */
class EthPcapHelper
{
  public:
    /**
     * Starts tracing `port` into `path`; returns the open file (close it, or let the run's
     * Simulator::Destroy drop the last reference, to flush), or null if it cannot be created.
     */
    static Ptr<PcapFileWrapper> Enable(Ptr<EthNetDevice> port, const std::string& path);
    /// As Enable, and gives the sniffer's handle (EthNetDevice::RemoveSniffer ends the capture).
    static Ptr<PcapFileWrapper> Enable(Ptr<EthNetDevice> port,
                                       const std::string& path,
                                       uint32_t* snifferHandle);
};

} // namespace ns3

#endif
