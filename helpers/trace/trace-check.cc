#include "trace-check.h"

#include "models/ib/ib-crc.h"
#include "models/rack/modbus-rtu.h"

#include <pcap/pcap.h>

#include <cinttypes>
#include <cstdio>
#include <sstream>

namespace ns3
{

namespace
{

// pcap link types (tcpdump.org/linktypes.html); libpcap's DLT values are the same for these.
constexpr int kLinkTypeEthernet = 1;
constexpr int kLinkTypeErf = 197;
constexpr int kLinkTypeInfiniband = 247;
constexpr int kLinkTypeUpperPdu = 252; ///< LINKTYPE_WIRESHARK_UPPER_PDU (Modbus RTU traces)
// Exported-PDU tags (Wireshark wsutil/exported_pdu_tlvs.h), as ModbusPcapWriter writes them.
constexpr uint16_t kExpPduEndOfOpt = 0;
constexpr uint16_t kExpPduDissectorName = 12;
constexpr uint8_t kModbusMaxSlaveAddress = 247; ///< Modbus over serial line v1.02 §2.2

// ERF record types and flags (ERF_TYPE_INFINIBAND, ERF_TYPE_INFINIBAND_LINK; the ERF flags byte:
// bits 0-1 capture interface, 2 variable length, 3 truncated, 4 rx error, 5 DS error).
constexpr uint8_t kErfTypeInfiniband = 21;
constexpr uint8_t kErfTypeInfinibandLink = 25;
constexpr uint8_t kErfTypeMask = 0x7F;
constexpr uint8_t kErfExtHeaderBit = 0x80;
constexpr uint8_t kErfFlagTruncated = 0x08;
constexpr uint8_t kErfFlagRxError = 0x10;
constexpr uint8_t kErfFlagDsError = 0x20;
constexpr size_t kErfHeaderSize = 16;
constexpr size_t kErfExtHeaderSize = 8;
/// Tolerated difference between the ERF and the pcap timestamp: a microsecond-precision pcap
/// legitimately differs from a nanosecond ERF time by up to 1 us.
constexpr uint64_t kErfTsToleranceNs = 1000;

// InfiniBand (IBA vol. 1 §7.7 LRH, §8.3 GRH, §9.2 BTH, §7.8 CRCs, §7.9.4 flow control).
constexpr size_t kLrhSize = 8;
constexpr size_t kGrhSize = 40;
constexpr size_t kBthSize = 12;
constexpr size_t kFlowControlSize = 6;
constexpr uint8_t kGrhIpVer = 6;
constexpr uint8_t kGrhNxtHdrIba = 0x1B;

// Ethernet / IP / UDP for RoCEv2 (IBA vol. 1 annex A17).
constexpr size_t kEthHeaderSize = 14;
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint16_t kEtherTypeVlan = 0x8100;
constexpr uint16_t kEtherTypeQinQ = 0x88A8;
constexpr size_t kVlanTagSize = 4;
constexpr size_t kIpv4MinHeader = 20;
constexpr size_t kIpv6Header = 40;
constexpr size_t kUdpHeader = 8;
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint16_t kRoceV2Port = 4791;

inline uint16_t
Be16(const uint8_t* p)
{
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

std::string
Hex(uint64_t v, int width)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "0x%0*" PRIx64, width, v);
    return buf;
}

/// Walks one file and fills a report.
class TraceChecker
{
  public:
    explicit TraceChecker(TraceCheckReport& report)
        : m_report(report)
    {
    }

    void Run(const std::string& path);

  private:
    void Problem(const std::string& kind, const std::string& what);
    void PacketProblem(const std::string& kind, const std::string& what);

    void CheckErfRecord(const pcap_pkthdr& hdr, const uint8_t* data);
    void CheckIbPacket(const uint8_t* pkt, size_t len);
    void CheckFlowControlPacket(const uint8_t* pkt, size_t len);
    void CheckEthernetFrame(const uint8_t* frame, size_t len);
    void CheckRoceV2(const uint8_t* ip, size_t ipLen, size_t udpOffset, const char* family);
    void CheckUpperPduRecord(const uint8_t* rec, size_t len);

    TraceCheckReport& m_report;
    uint64_t m_packetNumber{0}; ///< 1-based number of the record being checked
};

void
TraceChecker::Problem(const std::string& kind, const std::string& what)
{
    ++m_report.errors;
    ++m_report.errorsByKind[kind];
    if (m_report.firstProblems.size() < TraceCheckReport::kMaxProblems)
    {
        m_report.firstProblems.push_back(what);
    }
}

void
TraceChecker::PacketProblem(const std::string& kind, const std::string& what)
{
    Problem(kind, "packet " + std::to_string(m_packetNumber) + ": " + what);
}

void
TraceChecker::Run(const std::string& path)
{
    m_report.path = path;
    char errbuf[PCAP_ERRBUF_SIZE] = {0};
    pcap_t* pc = pcap_open_offline_with_tstamp_precision(path.c_str(),
                                                          PCAP_TSTAMP_PRECISION_NANO,
                                                          errbuf);
    if (pc == nullptr)
    {
        Problem("file", std::string("cannot read as pcap: ") + errbuf);
        return;
    }
    const int linkType = pcap_datalink(pc);
    const char* name = pcap_datalink_val_to_name(linkType);
    if (name == nullptr && linkType == kLinkTypeUpperPdu)
    {
        name = "WIRESHARK_UPPER_PDU"; // Debian 12's libpcap 1.10 has no name for it
    }
    m_report.linkType =
        (name ? std::string(name) : std::string("unknown")) + " (" + std::to_string(linkType) + ")";
    const bool supported = linkType == kLinkTypeErf || linkType == kLinkTypeInfiniband ||
                           linkType == kLinkTypeEthernet || linkType == kLinkTypeUpperPdu;
    if (!supported)
    {
        Problem("linktype", "unsupported link type " + std::to_string(linkType));
    }

    while (true)
    {
        pcap_pkthdr* hdr = nullptr;
        const u_char* data = nullptr;
        const int rc = pcap_next_ex(pc, &hdr, &data);
        if (rc == PCAP_ERROR_BREAK || rc == 0)
        {
            break; // end of file (0 cannot happen offline, but would loop forever)
        }
        m_packetNumber = m_report.packets + 1;
        if (rc != 1)
        {
            PacketProblem("pcap.record", std::string("unreadable record: ") + pcap_geterr(pc));
            break;
        }
        ++m_report.packets;
        if (!supported)
        {
            continue;
        }
        if (hdr->caplen < hdr->len)
        {
            PacketProblem("pcap.snaplen", "only " + std::to_string(hdr->caplen) + " of " +
                                              std::to_string(hdr->len) +
                                              " bytes captured (snapshot length)");
            continue;
        }
        switch (linkType)
        {
        case kLinkTypeErf:
            CheckErfRecord(*hdr, data);
            break;
        case kLinkTypeInfiniband:
            CheckIbPacket(data, hdr->caplen);
            break;
        case kLinkTypeEthernet:
            CheckEthernetFrame(data, hdr->caplen);
            break;
        case kLinkTypeUpperPdu:
            CheckUpperPduRecord(data, hdr->caplen);
            break;
        default:
            break;
        }
    }
    pcap_close(pc);
}

void
TraceChecker::CheckErfRecord(const pcap_pkthdr& hdr, const uint8_t* data)
{
    const size_t caplen = hdr.caplen;
    if (caplen < kErfHeaderSize)
    {
        PacketProblem("erf.header", "record of " + std::to_string(caplen) +
                                        " bytes is shorter than the 16-byte ERF header");
        return;
    }
    uint64_t ts = 0;
    for (int i = 7; i >= 0; --i)
    {
        ts = (ts << 8) | data[i]; // ERF ts is little-endian
    }
    const uint8_t typeByte = data[8];
    const uint8_t type = typeByte & kErfTypeMask;
    const uint8_t flags = data[9];
    const uint16_t rlen = Be16(data + 10);
    const uint16_t lctr = Be16(data + 12);
    const uint16_t wlen = Be16(data + 14);

    if (rlen != caplen)
    {
        PacketProblem("erf.rlen", "ERF rlen " + std::to_string(rlen) + " but the record has " +
                                      std::to_string(caplen) + " bytes");
    }
    if (flags & kErfFlagTruncated)
    {
        PacketProblem("erf.flags", "ERF flags " + Hex(flags, 2) + ": record marked truncated");
    }
    if (flags & (kErfFlagRxError | kErfFlagDsError))
    {
        PacketProblem("erf.flags", "ERF flags " + Hex(flags, 2) + ": receive/DS error marked");
    }
    if (lctr != 0)
    {
        PacketProblem("erf.lctr", "ERF lctr " + std::to_string(lctr) + ": records were lost");
    }
    // The pcap record time and the ERF time describe the same instant.
    const uint64_t erfNs =
        (ts >> 32) * 1000000000ULL + (((ts & 0xFFFFFFFFULL) * 1000000000ULL + 0x80000000ULL) >> 32);
    // With nanosecond precision requested, libpcap puts nanoseconds in tv_usec.
    const uint64_t pcapNs = static_cast<uint64_t>(hdr.ts.tv_sec) * 1000000000ULL +
                            static_cast<uint64_t>(hdr.ts.tv_usec);
    const uint64_t diff = erfNs > pcapNs ? erfNs - pcapNs : pcapNs - erfNs;
    if (diff > kErfTsToleranceNs)
    {
        PacketProblem("erf.ts", "ERF timestamp " + std::to_string(erfNs) +
                                    " ns differs from the pcap timestamp " +
                                    std::to_string(pcapNs) + " ns");
    }

    // Extension headers: 8 bytes each, the top bit of the first byte says another follows.
    size_t off = kErfHeaderSize;
    bool more = (typeByte & kErfExtHeaderBit) != 0;
    while (more)
    {
        if (off + kErfExtHeaderSize > caplen)
        {
            PacketProblem("erf.ext", "ERF extension header runs past the record end");
            return;
        }
        more = (data[off] & kErfExtHeaderBit) != 0;
        off += kErfExtHeaderSize;
    }
    const size_t avail = caplen - off;
    if (wlen > avail)
    {
        PacketProblem("erf.wlen", "ERF wlen " + std::to_string(wlen) + " but only " +
                                      std::to_string(avail) +
                                      " packet bytes in the record (truncated)");
        return;
    }
    // Bytes after wlen are alignment padding (DAG cards pad records to 8 bytes).
    switch (type)
    {
    case kErfTypeInfiniband:
        CheckIbPacket(data + off, wlen);
        break;
    case kErfTypeInfinibandLink:
        CheckFlowControlPacket(data + off, wlen);
        break;
    default:
        PacketProblem("erf.type", "unsupported ERF record type " + std::to_string(type));
        break;
    }
}

void
TraceChecker::CheckIbPacket(const uint8_t* pkt, size_t len)
{
    if (len < kLrhSize + kIbVcrcSize)
    {
        PacketProblem("lrh.length", "packet of " + std::to_string(len) +
                                        " bytes is shorter than LRH + VCRC (10 bytes)");
        return;
    }
    // IBA vol. 1 §7.7: LVer is 0 at this spec level.
    const uint8_t lver = pkt[0] & 0x0F;
    if (lver != 0)
    {
        PacketProblem("lrh.lver", "LRH LVer " + std::to_string(lver) + ", expected 0");
    }
    // IBA vol. 1 §7.7: PktLen = 4-byte words from the LRH through the ICRC (VCRC excluded).
    const uint8_t lnh = pkt[1] & 0x03;
    const size_t pktLenWords = static_cast<size_t>(((pkt[4] & 0x07) << 8) | pkt[5]);
    if (pktLenWords * 4 + kIbVcrcSize != len)
    {
        PacketProblem("lrh.pktlen", "LRH PktLen " + std::to_string(pktLenWords) + " words (" +
                                        std::to_string(pktLenWords * 4 + kIbVcrcSize) +
                                        " bytes with VCRC) but the packet has " +
                                        std::to_string(len) + " bytes");
    }

    // IBA vol. 1 §7.8.2: the VCRC covers everything before it.
    ++m_report.crcsChecked;
    const uint16_t vcrcStored = IbLoadVcrc(pkt + len - kIbVcrcSize);
    const uint16_t vcrcComputed = IbComputeVcrc(pkt, len - kIbVcrcSize);
    if (vcrcStored != vcrcComputed)
    {
        PacketProblem("vcrc", "VCRC mismatch: stored " + Hex(vcrcStored, 4) + ", computed " +
                                  Hex(vcrcComputed, 4));
    }

    if (lnh < 2)
    {
        return; // raw packet (IBA vol. 1 §7.7): no IBA transport headers, no ICRC
    }
    const size_t grhSize = lnh == 3 ? kGrhSize : 0;
    const size_t minLen = kLrhSize + grhSize + kBthSize + kIbIcrcSize + kIbVcrcSize;
    if (len < minLen)
    {
        PacketProblem("lrh.lnh", "LNH " + std::to_string(lnh) + " needs at least " +
                                     std::to_string(minLen) + " bytes, packet has " +
                                     std::to_string(len));
        return;
    }
    if (lnh == 3)
    {
        const uint8_t* grh = pkt + kLrhSize;
        const uint8_t ipVer = grh[0] >> 4;
        if (ipVer != kGrhIpVer)
        {
            PacketProblem("grh.ipver", "GRH IPVer " + std::to_string(ipVer) + ", expected 6");
        }
        if (grh[6] != kGrhNxtHdrIba)
        {
            PacketProblem("grh.nxthdr", "GRH NxtHdr " + Hex(grh[6], 2) + ", expected 0x1b");
        }
        // IBA vol. 1 §8.3: PayLen = bytes after the GRH through the ICRC.
        const size_t payLen = Be16(grh + 4);
        const size_t expected = len - kLrhSize - kGrhSize - kIbVcrcSize;
        if (payLen != expected)
        {
            PacketProblem("grh.paylen", "GRH PayLen " + std::to_string(payLen) + " but " +
                                            std::to_string(expected) +
                                            " bytes follow the GRH up to the VCRC");
        }
    }
    const uint8_t* bth = pkt + kLrhSize + grhSize;
    const uint8_t tver = bth[1] & 0x0F;
    if (tver != 0)
    {
        PacketProblem("bth.tver", "BTH TVer " + std::to_string(tver) + ", expected 0");
    }
    // IBA vol. 1 §7.8.1: the ICRC covers the invariant fields up to the ICRC.
    ++m_report.crcsChecked;
    const size_t icrcAt = len - kIbVcrcSize - kIbIcrcSize;
    const uint32_t icrcStored = IbLoadIcrc(pkt + icrcAt);
    const uint32_t icrcComputed = IbComputeIcrc(pkt, icrcAt);
    if (icrcStored != icrcComputed)
    {
        PacketProblem("icrc", "ICRC mismatch: stored " + Hex(icrcStored, 8) + ", computed " +
                                  Hex(icrcComputed, 8));
    }
}

void
TraceChecker::CheckFlowControlPacket(const uint8_t* pkt, size_t len)
{
    // IBA vol. 1 §7.9.4: a flow-control packet is exactly 6 bytes.
    if (len != kFlowControlSize)
    {
        PacketProblem("fc.length", "flow-control packet of " + std::to_string(len) +
                                       " bytes, expected 6");
        return;
    }
    const uint8_t op = pkt[0] >> 4;
    if (op > 1)
    {
        PacketProblem("fc.op", "flow-control Op " + std::to_string(op) + " is reserved");
    }
    ++m_report.crcsChecked;
    const uint16_t stored = IbLoadVcrc(pkt + 4);
    const uint16_t computed = IbComputeLpcrc(pkt);
    if (stored != computed)
    {
        PacketProblem("lpcrc", "LPCRC mismatch: stored " + Hex(stored, 4) + ", computed " +
                                   Hex(computed, 4));
    }
}

void
TraceChecker::CheckEthernetFrame(const uint8_t* frame, size_t len)
{
    if (len < kEthHeaderSize)
    {
        PacketProblem("eth.length", "Ethernet frame of " + std::to_string(len) +
                                        " bytes is shorter than its 14-byte header");
        return;
    }
    size_t off = kEthHeaderSize;
    uint16_t etherType = Be16(frame + 12);
    while ((etherType == kEtherTypeVlan || etherType == kEtherTypeQinQ) &&
           off + kVlanTagSize <= len)
    {
        etherType = Be16(frame + off + 2);
        off += kVlanTagSize;
    }
    const uint8_t* ip = frame + off;
    const size_t avail = len - off;
    if (etherType == kEtherTypeIpv4)
    {
        if (avail < kIpv4MinHeader || (ip[0] >> 4) != 4 || 4u * (ip[0] & 0x0F) < kIpv4MinHeader)
        {
            PacketProblem("ipv4.header", "malformed or truncated IPv4 header");
            return;
        }
        const size_t ihl = 4u * (ip[0] & 0x0F);
        const size_t totalLen = Be16(ip + 2);
        if (totalLen < ihl || totalLen > avail)
        {
            PacketProblem("ipv4.length", "IPv4 total length " + std::to_string(totalLen) +
                                             " does not fit the " + std::to_string(avail) +
                                             " bytes after the Ethernet header");
            return;
        }
        const bool fragment = (Be16(ip + 6) & 0x3FFF) != 0; // MF flag or a fragment offset
        if (ip[9] != kIpProtoUdp || fragment || totalLen < ihl + kUdpHeader)
        {
            return;
        }
        CheckRoceV2(ip, totalLen, ihl, "IPv4");
    }
    else if (etherType == kEtherTypeIpv6)
    {
        if (avail < kIpv6Header || (ip[0] >> 4) != 6)
        {
            PacketProblem("ipv6.header", "malformed or truncated IPv6 header");
            return;
        }
        const size_t totalLen = kIpv6Header + Be16(ip + 4);
        if (totalLen > avail)
        {
            PacketProblem("ipv6.length", "IPv6 payload length " +
                                             std::to_string(totalLen - kIpv6Header) +
                                             " does not fit the frame");
            return;
        }
        // Only UDP directly after the fixed header; extension headers are not followed.
        if (ip[6] != kIpProtoUdp || totalLen < kIpv6Header + kUdpHeader)
        {
            return;
        }
        CheckRoceV2(ip, totalLen, kIpv6Header, "IPv6");
    }
}

void
TraceChecker::CheckRoceV2(const uint8_t* ip, size_t ipLen, size_t udpOffset, const char* family)
{
    const uint8_t* udp = ip + udpOffset;
    if (Be16(udp + 2) != kRoceV2Port)
    {
        return;
    }
    const size_t udpLen = Be16(udp + 4);
    if (udpLen != ipLen - udpOffset)
    {
        PacketProblem("udp.length", std::string("UDP length ") + std::to_string(udpLen) +
                                        " but the " + family + " packet carries " +
                                        std::to_string(ipLen - udpOffset) + " UDP bytes");
        return;
    }
    if (udpLen < kUdpHeader + kBthSize + kIbIcrcSize)
    {
        PacketProblem("roce.length", "RoCEv2 UDP payload of " +
                                         std::to_string(udpLen - kUdpHeader) +
                                         " bytes cannot hold BTH + ICRC");
        return;
    }
    const uint8_t tver = udp[kUdpHeader + 1] & 0x0F;
    if (tver != 0)
    {
        PacketProblem("bth.tver", "BTH TVer " + std::to_string(tver) + ", expected 0");
    }
    ++m_report.crcsChecked;
    const size_t icrcAt = ipLen - kIbIcrcSize;
    const uint32_t stored = IbLoadIcrc(ip + icrcAt);
    const uint32_t computed = IbComputeRoceIcrc(ip, icrcAt);
    if (stored != computed)
    {
        PacketProblem("icrc", "RoCEv2 ICRC mismatch: stored " + Hex(stored, 8) + ", computed " +
                                  Hex(computed, 8));
    }
}

void
TraceChecker::CheckUpperPduRecord(const uint8_t* rec, size_t len)
{
    // The exported-PDU tags: 2-byte tag, 2-byte length, value, all big-endian, up to END_OF_OPT
    // (Wireshark wsutil/exported_pdu_tlvs.h); the PDU follows. Cnuas writes Modbus RTU behind
    // the dissector name "mbrtu" (ModbusPcapWriter); another protocol's PDU is counted only.
    size_t off = 0;
    std::string dissector;
    while (true)
    {
        if (off + 4 > len)
        {
            PacketProblem("exppdu.tags", "exported-PDU tags run past the record (no END_OF_OPT)");
            return;
        }
        const uint16_t tag = Be16(rec + off);
        const uint16_t tagLen = Be16(rec + off + 2);
        off += 4;
        if (off + tagLen > len)
        {
            PacketProblem("exppdu.tags", "exported-PDU tag " + std::to_string(tag) + " of " +
                                             std::to_string(tagLen) +
                                             " bytes runs past the record");
            return;
        }
        if (tag == kExpPduEndOfOpt)
        {
            if (tagLen != 0)
            {
                PacketProblem("exppdu.tags", "END_OF_OPT with length " + std::to_string(tagLen));
            }
            off += tagLen;
            break;
        }
        if (tag == kExpPduDissectorName)
        {
            // A NUL-padded string (padded to a multiple of 4 bytes by the writer).
            dissector.assign(reinterpret_cast<const char*>(rec + off), tagLen);
            dissector = dissector.substr(0, dissector.find('\0'));
        }
        off += tagLen;
    }
    if (dissector != "mbrtu")
    {
        return;
    }
    // Modbus over serial line v1.02 §2.5.1: an RTU frame is address, PDU (function code and
    // data, at most 253 bytes) and CRC: 4 to 256 bytes.
    const uint8_t* adu = rec + off;
    const size_t n = len - off;
    if (n < kModbusRtuMinAdu || n > kModbusRtuMaxAdu)
    {
        PacketProblem("modbus.length", "Modbus RTU frame of " + std::to_string(n) +
                                           " bytes (4..256 allowed)");
        return;
    }
    if (adu[0] > kModbusMaxSlaveAddress)
    {
        // §2.2: 0 is broadcast, 1..247 slaves, 248..255 reserved.
        PacketProblem("modbus.address", "slave address " + std::to_string(adu[0]) +
                                            " is reserved (0..247 allowed)");
    }
    // §2.5.1.2 and §6.2.2: CRC-16 (polynomial 0xA001 reflected, initial 0xFFFF) over the
    // address and PDU, sent low byte first.
    ++m_report.crcsChecked;
    const uint16_t stored = static_cast<uint16_t>(adu[n - 2] | (adu[n - 1] << 8));
    const uint16_t computed = ModbusCrc16(adu, n - 2);
    if (stored != computed)
    {
        PacketProblem("modbus.crc", "Modbus RTU CRC mismatch: stored " + Hex(stored, 4) +
                                        ", computed " + Hex(computed, 4));
    }
}

} // namespace

bool
TraceCheckReport::ok() const
{
    return errors == 0;
}

std::string
TraceCheckReport::Summary() const
{
    std::ostringstream os;
    os << path << ": ";
    if (linkType.empty())
    {
        os << (firstProblems.empty() ? std::string("unreadable") : firstProblems.front());
        return os.str();
    }
    os << packets << (packets == 1 ? " packet" : " packets") << ", linktype " << linkType << ", ";
    if (ok())
    {
        if (crcsChecked > 0)
        {
            os << "all CRCs good (" << crcsChecked << " checked)";
        }
        else
        {
            os << "no errors (no CRC-carrying packets)";
        }
        return os.str();
    }
    os << errors << (errors == 1 ? " error" : " errors") << " (";
    bool first = true;
    for (const auto& [kind, count] : errorsByKind)
    {
        os << (first ? "" : ", ") << kind << ": " << count;
        first = false;
    }
    os << ")";
    return os.str();
}

TraceCheckReport
CheckTrace(const std::string& path)
{
    TraceCheckReport report;
    TraceChecker(report).Run(path);
    return report;
}

} // namespace ns3
