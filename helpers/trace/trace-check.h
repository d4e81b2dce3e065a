// Offline checker of the pcap traces Cnuas writes (and of real captures in the same encodings):
// framing, header consistency and every CRC Wireshark does not verify. Backs `cnuas pcap check`.
#ifndef CNUAS_TRACE_CHECK_H
#define CNUAS_TRACE_CHECK_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ns3
{

/// What CheckTrace found in one file.
struct TraceCheckReport
{
    /// Most problems kept verbatim in firstProblems (all are counted in errors/errorsByKind).
    static constexpr size_t kMaxProblems = 100;

    std::string path;     ///< the file checked
    std::string linkType; ///< e.g. "ERF (197)"; empty if the file could not be opened
    uint64_t packets = 0; ///< pcap records read
    uint64_t errors = 0;  ///< problems found (a packet can have several)
    /// Problems by kind: "vcrc", "icrc", "lpcrc", "lrh.pktlen", "erf.rlen", "pcap.record",
    /// "modbus.crc", ...
    std::map<std::string, uint64_t> errorsByKind;
    /// The first kMaxProblems problems, each naming the packet (1-based, as Wireshark numbers
    /// frames) and the field, e.g. "packet 3: VCRC mismatch: stored 0x1234, computed 0x5678".
    std::vector<std::string> firstProblems;
    uint64_t crcsChecked = 0; ///< ICRCs, VCRCs, LPCRCs and Modbus CRC-16s verified (good or bad)

    bool ok() const;
    /// One line: "PATH: N packets, linktype ERF (197), all CRCs good (M checked)" or the counts
    /// of problems by kind.
    std::string Summary() const;
};

/**
 * Read a pcap or pcapng file with libpcap (nanosecond precision) and check every record:
 *  * link type 197 (ERF): the ERF header (rlen = record length, wlen within it, flags, loss
 *    counter, extension headers, timestamp = pcap timestamp); record type 21 (InfiniBand):
 *    LRH (LVer 0, PktLen*4+2 = packet bytes), GRH (IPVer, NxtHdr, PayLen) and BTH (TVer) when
 *    present, VCRC, and the ICRC when LNH is 2 or 3; record type 25 (link flow control):
 *    length 6, Op not reserved, LPCRC;
 *  * link type 247 (InfiniBand starting at the LRH): the same packet checks without ERF;
 *  * link type 1 (Ethernet): frames are counted; IPv4 or IPv6 / UDP destination port 4791
 *    (RoCEv2) frames get their lengths and ICRC checked with the RoCEv2 masking;
 *  * link type 252 (Wireshark upper PDU, as ModbusPcapWriter writes Modbus RTU): the exported
 *    PDU tags (lengths, END_OF_OPT, dissector name "mbrtu"), then the RTU frame: 4..256 bytes
 *    (Modbus over serial line v1.02 §2.5.1), slave address 0..247, and its CRC-16 (§2.5.1.2).
 * Any other link type is reported as "unsupported link type N". Garbage, truncated and non-pcap
 * files are reported as errors, never crash the checker.
 */
TraceCheckReport CheckTrace(const std::string& path);

} // namespace ns3

#endif
