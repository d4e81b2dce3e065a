// Modbus RTU pcap (link type 252, "mbrtu"): record layout, what the capture records, and what
// tshark 4.0 makes of it.
#include "ib-test-packets.h"
#include "test-text-files.h"

#include "helpers/rack/modbus-helper.h"
#include "helpers/rack/rs485-bus-helper.h"
#include "helpers/trace/modbus-pcap-writer.h"
#include "models/rack/modbus-master.h"
#include "models/rack/modbus-register-bank.h"
#include "models/rack/modbus-slave.h"

#include "ns3/double.h"
#include "ns3/node-container.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

using namespace ns3;

namespace
{

std::string
ShellOutput(const std::string& cmd, int* status)
{
    std::string out;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p)
    {
        *status = -1;
        return out;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    {
        out.append(buf, n);
    }
    const int rc = pclose(p);
    *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return out;
}

std::vector<std::vector<std::string>>
Rows(const std::string& text)
{
    std::vector<std::vector<std::string>> rows;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line))
    {
        if (line.empty() || line.find("Running as user") != std::string::npos)
        {
            continue;
        }
        rows.push_back(cnuas_test::SplitTabs(line));
    }
    return rows;
}

struct Exchange
{
    std::vector<ModbusTransaction> t;
    void Add(const ModbusTransaction& x) { t.push_back(x); }
};

/**
 * A master and two slaves (200 = 0xC8, an ORv3 PSU address, and 1) exchange FC 03, 06, 10,
 * 2B/0E, 01, 05, 0F, 04, 17 and two exceptions, captured into `path`. Returns the transactions.
 */
std::vector<ModbusTransaction>
CaptureExchange(const std::string& path, uint32_t baud, bool corruptOne = false)
{
    NodeContainer nodes;
    nodes.Create(corruptOne ? 4 : 3);
    Rs485BusHelper bus;
    Rs485Format f;
    f.baudRate = baud;
    bus.SetFormat(f);
    Ptr<Rs485Channel> ch = bus.CreateBus();
    std::vector<Ptr<Rs485Device>> dev;
    for (uint32_t i = 0; i < nodes.GetN(); ++i)
    {
        dev.push_back(bus.Install(nodes.Get(i), ch));
    }
    ModbusHelper mb;
    mb.SetSlaveAttribute("ResponseDelay", TimeValue(MilliSeconds(4)));
    Ptr<ModbusMaster> m = mb.InstallMaster(dev[0]);
    m->SetAttribute("Retries", UintegerValue(0));
    m->SetAttribute("InterRequestDelay", TimeValue(MilliSeconds(3)));
    std::vector<Ptr<ModbusMemoryRegisterBank>> banks;
    for (int i = 0; i < 2; ++i)
    {
        Ptr<ModbusMemoryRegisterBank> b = CreateObject<ModbusMemoryRegisterBank>();
        b->DefineHoldingRegisters(0, 128, 0x1234);
        b->DefineInputRegisters(0, 16, 0x0042);
        b->DefineCoils(0, 32);
        b->SetHoldingString(8, 8, "ECD17020037");
        b->SetDeviceIdentificationObject(0, "Delta");
        b->SetDeviceIdentificationObject(1, "ECD17020037");
        b->SetDeviceIdentificationObject(2, "1.2");
        banks.push_back(b);
    }
    mb.InstallSlave(dev[1], 200, banks[0]);
    mb.InstallSlave(dev[2], 1, banks[1]);
    Ptr<ModbusBusCapture> cap = ModbusPcapHelper::EnablePcap(path, ch, {dev[0]});
    Exchange ex;
    auto cb = MakeCallback(&Exchange::Add, &ex);
    m->Submit(200, ModbusRequest::ReadHoldingRegisters(0x4F, 4), cb);
    m->Submit(200, ModbusRequest::WriteSingleRegister(0x5E, 0x0001), cb);
    m->Submit(200, ModbusRequest::WriteMultipleRegisters(0x62, {0x6552, 0x3A00}), cb);
    m->Submit(200, ModbusRequest::ReadDeviceIdentification(ModbusReadDeviceIdCode::Basic, 0), cb);
    m->Submit(200, ModbusRequest::ReadHoldingRegisters(900, 2), cb); // exception 02
    m->Submit(1, ModbusRequest::ReadCoils(0, 12), cb);
    m->Submit(1, ModbusRequest::WriteSingleCoil(4, true), cb);
    m->Submit(1, ModbusRequest::WriteMultipleCoils(8, {1, 1, 0, 1}), cb);
    m->Submit(1, ModbusRequest::ReadInputRegisters(0, 2), cb);
    m->Submit(1, ModbusRequest::ReadWriteMultipleRegisters(0, 2, 10, {7, 8, 9}), cb);
    // Exception 01 for a user-defined function. (It carries two data bytes: Wireshark 4.0's
    // mbrtu dissector ignores frames shorter than 5 bytes, packet-mbtcp.c.)
    m->Submit(1, ModbusRequest::Raw(0x41, {0x00, 0x01}), cb);
    if (corruptOne)
    {
        // A frame with a bad CRC on the line, from a fourth transceiver, after everything else.
        Ptr<Rs485Device> raw = dev[3];
        auto bad = ModbusRtuBuildAdu(200, ModbusRequest::ReadHoldingRegisters(0, 1).Encode());
        bad.back() ^= 0x55;
        Simulator::Schedule(Seconds(1), [raw, bad]() { raw->Send(bad); });
    }
    Simulator::Run();
    cap->Close();
    Simulator::Destroy();
    return ex.t;
}

bool
TsharkAvailable()
{
    int status = -1;
    ShellOutput("tshark --version", &status);
    return status == 0;
}

} // namespace

// The exact bytes of one record (see rack-modbus-orv3 notes §4 for the layout tshark 4.0 takes).
TEST(ModbusPcap, RecordLayout)
{
    const uint8_t frame[] = {0xC8, 0x03, 0x00, 0x4F, 0x00, 0x04, 0x64, 0x47};
    const std::vector<uint8_t> plain =
        ModbusPcapWriter::EncodeRecord(frame, sizeof frame, ModbusPcapWriter::Direction::Unknown);
    const std::vector<uint8_t> wantPlain = {
        0x00, 0x0C, 0x00, 0x08, 'm', 'b', 'r', 't', 'u', 0, 0, 0, // dissector name
        0x00, 0x00, 0x00, 0x00,                                    // end of options
        0xC8, 0x03, 0x00, 0x4F, 0x00, 0x04, 0x64, 0x47};
    EXPECT_EQ(plain, wantPlain);
    const std::vector<uint8_t> req =
        ModbusPcapWriter::EncodeRecord(frame, sizeof frame, ModbusPcapWriter::Direction::Request);
    const std::vector<uint8_t> wantReq = {
        0x00, 0x0C, 0x00, 0x08, 'm',  'b',  'r',  't',  'u', 0, 0, 0,
        0x00, 0x18, 0x00, 0x04, 0x00, 0x00, 0x00, 0x02, // port type TCP
        0x00, 0x19, 0x00, 0x04, 0x00, 0x00, 0x9C, 0x40, // source port 40000
        0x00, 0x1A, 0x00, 0x04, 0x00, 0x00, 0x01, 0xF6, // destination port 502
        0x00, 0x00, 0x00, 0x00,
        0xC8, 0x03, 0x00, 0x4F, 0x00, 0x04, 0x64, 0x47};
    EXPECT_EQ(req, wantReq);
    const std::vector<uint8_t> rsp =
        ModbusPcapWriter::EncodeRecord(frame, sizeof frame, ModbusPcapWriter::Direction::Response);
    EXPECT_EQ(rsp[27], 0xF6) << "source port 502";
    EXPECT_EQ(rsp[35], 0x40) << "destination port 40000";
}

// The capture writes one record per frame on the wire, stamped with its first start bit, in a
// nanosecond pcap of link type 252; the same run writes the same bytes.
TEST(ModbusPcap, OneRecordPerFrameAtItsFirstCharacter)
{
    const std::string a = std::string(CNUAS_BINARY_DIR) + "/test-rack-capture-a.pcap";
    const std::string b = std::string(CNUAS_BINARY_DIR) + "/test-rack-capture-b.pcap";
    const auto t = CaptureExchange(a, 19200);
    CaptureExchange(b, 19200);
    ASSERT_EQ(t.size(), 11u);
    const std::vector<uint8_t> bytes = ReadBytes(a);
    EXPECT_EQ(bytes, ReadBytes(b)) << "deterministic";
    ASSERT_GT(bytes.size(), 24u);
    // Nanosecond magic a1b23c4d (written in host order), link type 252.
    uint32_t magic;
    uint32_t linkType;
    std::memcpy(&magic, bytes.data(), 4);
    std::memcpy(&linkType, bytes.data() + 20, 4);
    EXPECT_EQ(magic, 0xa1b23c4du);
    EXPECT_EQ(linkType, 252u);
    // Walk the records: 22 frames (11 requests, 11 responses), first at the first request's
    // first start bit.
    size_t pos = 24;
    std::vector<uint64_t> stamps;
    while (pos + 16 <= bytes.size())
    {
        uint32_t sec, nsec, incl;
        std::memcpy(&sec, bytes.data() + pos, 4);
        std::memcpy(&nsec, bytes.data() + pos + 4, 4);
        std::memcpy(&incl, bytes.data() + pos + 8, 4);
        stamps.push_back(uint64_t(sec) * 1000000000ULL + nsec);
        pos += 16 + incl;
    }
    EXPECT_EQ(pos, bytes.size());
    ASSERT_EQ(stamps.size(), 22u);
    // The capture sees the line at the sender; the master heard the response one propagation
    // delay (10 m x 5 ns) later.
    const Time d = NanoSeconds(50);
    EXPECT_EQ(stamps[0], static_cast<uint64_t>(t[0].requestStart.GetNanoSeconds()));
    EXPECT_EQ(stamps[1], static_cast<uint64_t>((t[0].responseStart - d).GetNanoSeconds()));
    EXPECT_EQ(stamps[21], static_cast<uint64_t>((t[10].responseStart - d).GetNanoSeconds()));
    std::remove(a.c_str());
    std::remove(b.c_str());
}

// tshark decodes every frame as Modbus RTU with the right unit and function code, CRCs good,
// nothing malformed; a frame with a bad CRC is recorded as it was on the line and flagged.
TEST(ModbusPcap, TsharkDecodesEveryFrame)
{
    ASSERT_TRUE(TsharkAvailable()) << "tshark is required (Debian package tshark 4.0.x)";
    for (uint32_t baud : {19200u, 115200u})
    {
        SCOPED_TRACE(baud);
        const std::string path = std::string(CNUAS_BINARY_DIR) + "/test-rack-tshark.pcap";
        const auto t = CaptureExchange(path, baud);
        ASSERT_EQ(t.size(), 11u);
        int status = -1;
        const std::string out = ShellOutput("tshark -r '" + path +
                                        "' -o mbrtu.crc_verification:TRUE -o mbrtu.tcp.port:502"
                                        " -T fields -E separator=/t -e mbrtu.unit_id"
                                        " -e modbus.func_code -e mbrtu.crc16.status"
                                        " -e modbus.exception_code -e _ws.col.Info",
                                    &status);
        ASSERT_EQ(status, 0) << out;
        const auto rows = Rows(out);
        ASSERT_EQ(rows.size(), 22u) << out;
        for (size_t i = 0; i < t.size(); ++i)
        {
            for (int dir = 0; dir < 2; ++dir)
            {
                const auto& row = rows[2 * i + dir];
                ASSERT_GE(row.size(), 5u) << out;
                SCOPED_TRACE(row[4]);
                EXPECT_EQ(row[0], std::to_string(t[i].unit));
                EXPECT_EQ(row[1], std::to_string(t[i].request.function));
                EXPECT_EQ(row[2], "1") << "CRC status good";
                const bool exc = dir == 1 && t[i].status == ModbusResultStatus::Exception;
                EXPECT_EQ(row[3], exc ? std::to_string(int(t[i].response.exception)) : "");
                EXPECT_NE(row[4].find(dir == 0 ? "Query:" : "Response:"), std::string::npos)
                    << "direction from the port tags";
            }
        }
        const std::string expert =
            ShellOutput("tshark -r '" + path +
                            "' -o mbrtu.crc_verification:TRUE -q -z expert,error",
                &status);
        EXPECT_EQ(status, 0);
        EXPECT_EQ(expert.find("Malformed"), std::string::npos) << expert;
        EXPECT_EQ(expert.find("Error"), std::string::npos) << expert;
        // Not even a warning (a bad CRC would be one).
        const std::string warn =
            ShellOutput("tshark -r '" + path + "' -o mbrtu.crc_verification:TRUE -q -z expert,warn",
                        &status);
        EXPECT_EQ(warn.find("Warns"), std::string::npos) << warn;
        // Without any preference, unit and function code still decode.
        const std::string plain =
            ShellOutput("tshark -r '" + path + "' -T fields -E separator=/t -e mbrtu.unit_id"
                                       " -e modbus.func_code",
                &status);
        const auto plainRows = Rows(plain);
        ASSERT_EQ(plainRows.size(), 22u) << plain;
        for (size_t i = 0; i < plainRows.size(); ++i)
        {
            EXPECT_EQ(plainRows[i][0], std::to_string(t[i / 2].unit)) << plain;
        }
        std::remove(path.c_str());
    }
}

TEST(ModbusPcap, BadCrcFrameIsCapturedAsItWas)
{
    ASSERT_TRUE(TsharkAvailable()) << "tshark is required (Debian package tshark 4.0.x)";
    const std::string path = std::string(CNUAS_BINARY_DIR) + "/test-rack-badcrc.pcap";
    CaptureExchange(path, 19200, true);
    int status = -1;
    const std::string out =
        ShellOutput("tshark -r '" + path +
                    "' -o mbrtu.crc_verification:TRUE -T fields -E separator=/t"
                                   " -e mbrtu.unit_id -e mbrtu.crc16.status",
            &status);
    ASSERT_EQ(status, 0) << out;
    const auto rows = Rows(out);
    ASSERT_EQ(rows.size(), 23u) << out;
    EXPECT_EQ(rows[22][0], "200");
    EXPECT_EQ(rows[22][1], "0") << "the bad CRC is in the trace, flagged bad";
    for (size_t i = 0; i < 22; ++i)
    {
        EXPECT_EQ(rows[i][1], "1");
    }
    const std::string warn = ShellOutput(
        "tshark -r '" + path + "' -o mbrtu.crc_verification:TRUE -q -z expert,warn", &status);
    EXPECT_NE(warn.find("Incorrect CRC"), std::string::npos) << warn;
    std::remove(path.c_str());
}
