// Opening a pcap for writing the way every Cnuas trace does: nanosecond timestamps, one link
// type, through ns-3's PcapFileWrapper (so a run twice writes byte-identical files).
#ifndef CNUAS_HELPERS_PCAP_FILE_OPEN_H
#define CNUAS_HELPERS_PCAP_FILE_OPEN_H

#include "ns3/pcap-file-wrapper.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <string>

namespace ns3
{

/**
 * Creates `path` as a pcap with nanosecond timestamps (magic a1b23c4d: the simulator runs in
 * picoseconds and back-to-back records are nanoseconds apart), link type `linkType` and snaplen
 * 65535. Returns null, having logged why, if the file cannot be created or written.
 */
Ptr<PcapFileWrapper> OpenNanosecondPcap(const std::string& path, uint32_t linkType);

} // namespace ns3

#endif
