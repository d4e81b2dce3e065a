#include "modbus-pcap-writer.h"

#include "models/rack/rs485-device.h"

#include "helpers/trace/pcap-file-open.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ModbusPcapWriter");
NS_OBJECT_ENSURE_REGISTERED(ModbusBusCapture);

namespace
{
void
PutTag(std::vector<uint8_t>& v, uint16_t tag, const uint8_t* value, uint16_t len)
{
    v.push_back(static_cast<uint8_t>(tag >> 8));
    v.push_back(static_cast<uint8_t>(tag));
    v.push_back(static_cast<uint8_t>(len >> 8));
    v.push_back(static_cast<uint8_t>(len));
    v.insert(v.end(), value, value + len);
}

void
PutTag32(std::vector<uint8_t>& v, uint16_t tag, uint32_t x)
{
    const uint8_t b[4] = {static_cast<uint8_t>(x >> 24),
                          static_cast<uint8_t>(x >> 16),
                          static_cast<uint8_t>(x >> 8),
                          static_cast<uint8_t>(x)};
    PutTag(v, tag, b, 4);
}
} // namespace

// ---- ModbusPcapWriter --------------------------------------------------------------------------

ModbusPcapWriter::~ModbusPcapWriter()
{
    Close();
}

bool
ModbusPcapWriter::Open(const std::string& path)
{
    Close();
    // snaplen 65535: the largest record either encapsulation's length fields describe.
    Ptr<PcapFileWrapper> file = OpenNanosecondPcap(path, kLinkTypeUpperPdu);
    if (!file)
    {
        return false;
    }
    m_file = file;
    m_records = 0;
    return true;
}

bool
ModbusPcapWriter::IsOpen() const
{
    return m_file != nullptr;
}

void
ModbusPcapWriter::Close()
{
    if (m_file)
    {
        m_file->Close();
        m_file = nullptr;
    }
}

std::vector<uint8_t>
ModbusPcapWriter::EncodeRecord(const uint8_t* frame, std::size_t n, Direction d)
{
    std::vector<uint8_t> v;
    v.reserve(n + 48);
    // EXP_PDU_TAG_DISSECTOR_NAME "mbrtu", value padded to a multiple of 4 bytes.
    const uint8_t name[8] = {'m', 'b', 'r', 't', 'u', 0, 0, 0};
    PutTag(v, kTagDissectorName, name, sizeof name);
    if (d != Direction::Unknown)
    {
        const bool request = d == Direction::Request;
        PutTag32(v, kTagPortType, kPortTypeTcp);
        PutTag32(v, kTagSrcPort, request ? kMasterPort : kSlavePort);
        PutTag32(v, kTagDstPort, request ? kSlavePort : kMasterPort);
    }
    PutTag(v, kTagEndOfOpt, nullptr, 0);
    v.insert(v.end(), frame, frame + n);
    return v;
}

void
ModbusPcapWriter::Write(Time t, const uint8_t* frame, std::size_t n, Direction d)
{
    if (!m_file)
    {
        return;
    }
    const std::vector<uint8_t> rec = EncodeRecord(frame, n, d);
    m_file->Write(t, rec.data(), static_cast<uint32_t>(rec.size()));
    m_records++;
}

// ---- ModbusBusCapture --------------------------------------------------------------------------

TypeId
ModbusBusCapture::GetTypeId()
{
    static TypeId tid = TypeId("ns3::ModbusBusCapture")
                            .SetParent<Object>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<ModbusBusCapture>();
    return tid;
}

ModbusBusCapture::ModbusBusCapture() = default;

ModbusBusCapture::~ModbusBusCapture()
{
    Close();
}

void
ModbusBusCapture::DoDispose()
{
    Close();
    Object::DoDispose();
}

bool
ModbusBusCapture::Open(const std::string& path, Ptr<Rs485Channel> bus, const Rs485Format& format)
{
    Close();
    if (!m_writer.Open(path))
    {
        return false;
    }
    m_bus = bus;
    m_timing = ModbusRtuTiming::ForFormat(format);
    m_frame.clear();
    m_connected =
        bus->TraceConnectWithoutContext("Character",
                                        MakeCallback(&ModbusBusCapture::OnCharacter, this));
    NS_ABORT_MSG_IF(!m_connected, "ModbusBusCapture: no Character trace on the bus");
    // Write the last frame when the run ends; the Ptr held by the event keeps this alive.
    Simulator::ScheduleDestroy(&ModbusBusCapture::Close, Ptr<ModbusBusCapture>(this));
    return true;
}

void
ModbusBusCapture::AddMaster(uint32_t index)
{
    m_masters.insert(index);
}

void
ModbusBusCapture::OnCharacter(const Rs485WireCharacter& c)
{
    if (!m_writer.IsOpen())
    {
        return;
    }
    // §2.5.1.1: a silence of at least t3.5 separates frames.
    if (!m_frame.empty() && c.start - m_lastEnd >= m_timing.t35)
    {
        Flush();
    }
    if (m_frame.empty())
    {
        m_frameStart = c.start;
        m_firstSender = c.sender;
    }
    if (c.start < m_frameStart)
    {
        m_frameStart = c.start; // a collided character that began before the one that ended first
    }
    m_frame.push_back(c.lineByte);
    m_lastEnd = std::max(m_lastEnd, c.end);
}

void
ModbusBusCapture::Flush()
{
    if (m_frame.empty())
    {
        return;
    }
    ModbusPcapWriter::Direction d = ModbusPcapWriter::Direction::Unknown;
    if (!m_masters.empty())
    {
        d = m_masters.count(m_firstSender) ? ModbusPcapWriter::Direction::Request
                                           : ModbusPcapWriter::Direction::Response;
    }
    m_writer.Write(m_frameStart, m_frame.data(), m_frame.size(), d);
    m_frame.clear();
}

void
ModbusBusCapture::Close()
{
    if (m_writer.IsOpen())
    {
        Flush();
        m_writer.Close();
    }
    if (m_bus && m_connected)
    {
        m_bus->TraceDisconnectWithoutContext("Character",
                                             MakeCallback(&ModbusBusCapture::OnCharacter, this));
        m_connected = false;
    }
    m_bus = nullptr;
}

// ---- ModbusPcapHelper --------------------------------------------------------------------------

Ptr<ModbusBusCapture>
ModbusPcapHelper::EnablePcap(const std::string& path,
                             Ptr<Rs485Channel> bus,
                             const std::vector<Ptr<NetDevice>>& masters)
{
    NS_ABORT_MSG_IF(!bus || bus->GetNDevices() == 0, "ModbusPcapHelper: empty bus");
    Ptr<ModbusBusCapture> cap = CreateObject<ModbusBusCapture>();
    NS_ABORT_MSG_IF(!cap->Open(path, bus, bus->GetRs485Device(0)->GetFormat()),
                    "ModbusPcapHelper: cannot write " << path);
    for (const auto& m : masters)
    {
        Ptr<Rs485Device> d = DynamicCast<Rs485Device>(m);
        NS_ABORT_MSG_IF(!d || d->GetRs485Channel() != bus,
                        "ModbusPcapHelper: a master is not a transceiver on this bus");
        cap->AddMaster(d->GetChannelIndex());
    }
    return cap;
}

} // namespace ns3
