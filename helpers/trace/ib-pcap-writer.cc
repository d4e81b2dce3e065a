#include "ib-pcap-writer.h"

#include "helpers/trace/pcap-file-open.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"

#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbErfPcapWriter");

IbErfPcapWriter::~IbErfPcapWriter()
{
    Close();
}

bool
IbErfPcapWriter::Open(const std::string& path)
{
    Close();
    // snaplen 65535: the largest record either encapsulation's length fields describe.
    Ptr<PcapFileWrapper> file = OpenNanosecondPcap(path, kLinkTypeErf);
    if (!file)
    {
        return false;
    }
    m_file = file;
    return true;
}

bool
IbErfPcapWriter::IsOpen() const
{
    return m_file != nullptr;
}

void
IbErfPcapWriter::Close()
{
    if (m_file)
    {
        m_file->Close();
        m_file = nullptr;
    }
}

uint64_t
IbErfPcapWriter::ErfTimestamp(Time t)
{
    // ERF timestamp: seconds in the upper 32 bits, the fraction of a second in units of 2^-32 s
    // in the lower 32 bits. It is derived from the same whole nanoseconds the pcap record
    // header carries, rounded to the nearest 2^-32 s (0.23 ns): Wireshark shows the ERF time
    // (converted back to nanoseconds with rounding), and this way it shows exactly the pcap time.
    const int64_t ns = t.GetNanoSeconds();
    if (ns <= 0)
    {
        return 0;
    }
    constexpr uint64_t kNsPerSecond = 1000000000ULL;
    const uint64_t seconds = static_cast<uint64_t>(ns) / kNsPerSecond;
    const uint64_t rem = static_cast<uint64_t>(ns) % kNsPerSecond;
    const uint64_t frac = ((rem << 32) + kNsPerSecond / 2) / kNsPerSecond; // < 2^32: rem < 1e9
    return (seconds << 32) | frac;
}

void
IbErfPcapWriter::EncodeErfHeader(uint8_t* out, Time t, uint8_t erfType, uint16_t wireLen)
{
    const uint64_t ts = ErfTimestamp(t);
    for (int i = 0; i < 8; ++i)
    {
        out[i] = static_cast<uint8_t>(ts >> (8 * i)); // ts is little-endian in ERF
    }
    out[8] = erfType;
    out[9] = kErfFlagVarLen;
    const uint32_t rlen = kErfHeaderSize + wireLen;
    out[10] = static_cast<uint8_t>(rlen >> 8); // rlen, lctr and wlen are big-endian
    out[11] = static_cast<uint8_t>(rlen);
    out[12] = 0;
    out[13] = 0;
    out[14] = static_cast<uint8_t>(wireLen >> 8);
    out[15] = static_cast<uint8_t>(wireLen);
}

void
IbErfPcapWriter::Write(Time t, const uint8_t* pkt, uint32_t len)
{
    Write(t, pkt, len, kErfTypeInfiniband);
}

void
IbErfPcapWriter::Write(Time t, const uint8_t* pkt, uint32_t len, uint8_t erfType)
{
    NS_ABORT_MSG_IF(len > kMaxPacket, "InfiniBand packet of " << len << " bytes exceeds ERF rlen");
    if (!m_file)
    {
        return;
    }
    m_record.resize(kErfHeaderSize + len);
    EncodeErfHeader(m_record.data(), t, erfType, static_cast<uint16_t>(len));
    std::memcpy(m_record.data() + kErfHeaderSize, pkt, len);
    m_file->Write(t, m_record.data(), static_cast<uint32_t>(m_record.size()));
}

} // namespace ns3
