// Modbus RTU frames in a pcap file that Wireshark decodes with no preference: link type 252
// (LINKTYPE_WIRESHARK_UPPER_PDU) with the dissector name "mbrtu"; and a capture that records
// every frame on an RS-485 bus.
#ifndef CNUAS_MODBUS_PCAP_WRITER_H
#define CNUAS_MODBUS_PCAP_WRITER_H

#include "models/rack/modbus-rtu.h"
#include "models/rack/rs485-channel.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/pcap-file-wrapper.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \brief Writes Modbus RTU frames (address .. CRC) as pcap records of link type 252.
 *
 * Each record is a list of exported-PDU tags (Wireshark wsutil/exported_pdu_tlvs.h; every field
 * big-endian) followed by the raw RTU frame:
 *  * tag 12 EXP_PDU_TAG_DISSECTOR_NAME, length 8: "mbrtu" padded with NULs to 4 bytes;
 *  * optionally tag 24 PORT_TYPE (2 = TCP), tag 25 SRC_PORT, tag 26 DST_PORT, 4 bytes each:
 *    master to slave as 40000 -> 502, slave to master as 502 -> 40000. Wireshark's mbrtu
 *    dissector uses them to tell a query from a response (for FC 05 and 06, whose request and
 *    response look alike, it cannot tell otherwise), when given `-o mbrtu.tcp.port:502`;
 *  * tag 0 END_OF_OPT with length 0.
 * Timestamps are nanoseconds (pcap magic a1b23c4d), written through ns-3's PcapFileWrapper;
 * nothing depends on the wall clock, so a run always writes the same bytes.
 */
class ModbusPcapWriter
{
  public:
    /// LINKTYPE_WIRESHARK_UPPER_PDU.
    static constexpr uint32_t kLinkTypeUpperPdu = 252;
    static constexpr uint16_t kTagEndOfOpt = 0;
    static constexpr uint16_t kTagDissectorName = 12;
    static constexpr uint16_t kTagPortType = 24;
    static constexpr uint16_t kTagSrcPort = 25;
    static constexpr uint16_t kTagDstPort = 26;
    static constexpr uint32_t kPortTypeTcp = 2;
    static constexpr uint32_t kSlavePort = 502;    ///< Modbus/TCP's registered port
    static constexpr uint32_t kMasterPort = 40000; ///< an arbitrary client port

    /// Who sent a frame, for the port tags.
    enum class Direction : uint8_t
    {
        Unknown,  ///< no port tags
        Request,  ///< master to slave
        Response, ///< slave to master
    };

    ModbusPcapWriter() = default;
    ~ModbusPcapWriter();
    ModbusPcapWriter(const ModbusPcapWriter&) = delete;
    ModbusPcapWriter& operator=(const ModbusPcapWriter&) = delete;

    /// Create (or truncate) path and write the pcap file header. False if it cannot be opened.
    bool Open(const std::string& path);
    /// Append one frame captured at time t (the start of its first character).
    void Write(Time t, const uint8_t* frame, std::size_t n, Direction d);
    void Close();
    bool IsOpen() const;
    /// Records written.
    uint64_t GetRecords() const { return m_records; }

    /// The record bytes (tags + frame) for one frame.
    static std::vector<uint8_t> EncodeRecord(const uint8_t* frame, std::size_t n, Direction d);

  private:
    Ptr<PcapFileWrapper> m_file;
    uint64_t m_records = 0;
};

/**
 * \brief Records every frame on an RS-485 bus into a ModbusPcapWriter.
 *
 * It listens to the channel's Character trace (the line's view: collided characters carry
 * what the line carried) and delimits frames as a receiver in the bus's format would: a new
 * frame starts after a silence of at least t3.5 (Modbus over serial line v1.02 §2.5.1.1). Every
 * frame is written, whatever its CRC, with the time of its first character's start bit. Frames
 * whose first character came from a transceiver marked as a master are requests, the others
 * responses (port tags); with no master marked there are no port tags.
 *
 * The last frame is written when the next one proves it ended, at Close(), or when the
 * simulator is destroyed (the capture keeps itself alive until then).
 */
class ModbusBusCapture : public Object
{
  public:
    static TypeId GetTypeId();
    ModbusBusCapture();
    ~ModbusBusCapture() override;

    /**
     * Starts capturing `bus` into `path`. `format` is the character format whose t3.5 splits
     * frames. Returns false if the file cannot be written.
     */
    bool Open(const std::string& path, Ptr<Rs485Channel> bus, const Rs485Format& format);
    /// Frames whose first character comes from transceiver `index` (on the bus) are requests.
    void AddMaster(uint32_t index);
    /// Writes the pending frame and closes the file.
    void Close();
    uint64_t GetFramesWritten() const { return m_writer.GetRecords(); }

  protected:
    void DoDispose() override;

  private:
    void OnCharacter(const Rs485WireCharacter& c);
    void Flush();

    ModbusPcapWriter m_writer;
    Ptr<Rs485Channel> m_bus;
    ModbusRtuTiming m_timing;
    std::set<uint32_t> m_masters;
    std::vector<uint8_t> m_frame;
    Time m_frameStart;
    Time m_lastEnd;
    uint32_t m_firstSender = 0;
    bool m_connected = false;
};

/// Attaches a capture to a bus: pcap of every Modbus RTU frame, see ModbusBusCapture.
class ModbusPcapHelper
{
  public:
    /**
     * Captures `bus` into `path`, framing with the format of the bus's first transceiver and
     * marking `masters` (their transceivers) as masters. Aborts if the file cannot be opened.
     */
    static Ptr<ModbusBusCapture> EnablePcap(const std::string& path,
                                            Ptr<Rs485Channel> bus,
                                            const std::vector<Ptr<NetDevice>>& masters = {});
};

} // namespace ns3

#endif
