// Modbus RTU: CRC, timing rules, PDUs, the RTU framer, master and slave on an RS-485 bus.
#include "helpers/rack/modbus-helper.h"
#include "helpers/rack/rs485-bus-helper.h"
#include "models/rack/modbus-master.h"
#include "models/rack/modbus-pdu.h"
#include "models/rack/modbus-register-bank.h"
#include "models/rack/modbus-rtu.h"
#include "models/rack/modbus-slave.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/node-container.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

using namespace ns3;

namespace
{

Rs485Format
Fmt(uint32_t baud, Rs485Parity p = Rs485Parity::Even, uint8_t stop = 1)
{
    Rs485Format f;
    f.baudRate = baud;
    f.parity = p;
    f.stopBits = stop;
    return f;
}

std::vector<uint8_t>
WithCrc(std::vector<uint8_t> v)
{
    const uint16_t crc = ModbusCrc16(v.data(), v.size());
    v.push_back(static_cast<uint8_t>(crc & 0xFF));
    v.push_back(static_cast<uint8_t>(crc >> 8));
    return v;
}

Ptr<ModbusMemoryRegisterBank>
MakeBank(uint16_t seed = 1000)
{
    Ptr<ModbusMemoryRegisterBank> b = CreateObject<ModbusMemoryRegisterBank>();
    b->DefineHoldingRegisters(0, 100);
    for (uint16_t i = 0; i < 100; ++i)
    {
        b->SetHoldingRegister(i, static_cast<uint16_t>(seed + i));
    }
    b->DefineInputRegisters(0, 10);
    for (uint16_t i = 0; i < 10; ++i)
    {
        b->SetInputRegister(i, static_cast<uint16_t>(0x4000 + i));
    }
    b->DefineCoils(0, 32);
    b->SetCoil(1, true);
    b->SetCoil(9, true);
    b->DefineDiscreteInputs(0, 16);
    b->SetDiscreteInput(0, true);
    b->SetDiscreteInput(4, true);
    b->SetDeviceIdentificationObject(0x00, "Cnuas");
    b->SetDeviceIdentificationObject(0x01, "PSU-EMU");
    b->SetDeviceIdentificationObject(0x02, "1.0");
    b->SetDeviceIdentificationObject(0x05, "ORV3_PSU");
    return b;
}

struct Results
{
    std::vector<ModbusTransaction> t;
    void Add(const ModbusTransaction& x) { t.push_back(x); }
};

/// A bus with a master (node 0), slaves (nodes 1..N) and, optionally, a bare transceiver
/// (last node) for injecting raw bytes.
struct Rig
{
    NodeContainer nodes;
    std::vector<Ptr<Rs485Device>> dev;
    Ptr<Rs485Channel> ch;
    Ptr<ModbusMaster> master;
    std::vector<Ptr<ModbusSlave>> slaves;
    std::vector<Ptr<ModbusMemoryRegisterBank>> banks;
    Ptr<Rs485Device> raw;
    Results res;

    ModbusMaster::ResultCallback Cb() { return MakeCallback(&Results::Add, &res); }
};

Rig
MakeRig(const Rs485Format& f,
        const std::vector<uint8_t>& addresses,
        bool withRaw = false,
        double lengthM = 10.0)
{
    Rig r;
    const uint32_t n = 1 + addresses.size() + (withRaw ? 1 : 0);
    r.nodes.Create(n);
    Rs485BusHelper bus;
    bus.SetFormat(f);
    bus.SetChannelAttribute("Length", DoubleValue(lengthM));
    r.ch = bus.CreateBus();
    for (uint32_t i = 0; i < n; ++i)
    {
        r.dev.push_back(bus.Install(r.nodes.Get(i), r.ch));
    }
    ModbusHelper mb;
    r.master = mb.InstallMaster(r.dev[0]);
    for (size_t i = 0; i < addresses.size(); ++i)
    {
        r.banks.push_back(MakeBank(static_cast<uint16_t>(1000 * (i + 1))));
        r.slaves.push_back(mb.InstallSlave(r.dev[1 + i], addresses[i], r.banks.back()));
    }
    if (withRaw)
    {
        r.raw = r.dev.back();
    }
    return r;
}

void
SendRawAt(Ptr<Rs485Device> d, Time at, std::vector<uint8_t> bytes)
{
    Simulator::Schedule(at - Simulator::Now(), [d, bytes]() { d->Send(bytes); });
}

} // namespace

// ---------------------------------------------------------------------------------------------
// CRC and timing

TEST(ModbusRtu, Crc16KnownVectors)
{
    // Read 10 holding registers from unit 1: CRC C5 CD on the wire.
    const std::vector<uint8_t> a = {0x01, 0x03, 0x00, 0x00, 0x00, 0x0A};
    const uint16_t crc = ModbusCrc16(a.data(), a.size());
    EXPECT_EQ(crc & 0xFF, 0xC5);
    EXPECT_EQ(crc >> 8, 0xCD);
    EXPECT_EQ(ModbusRtuBuildAdu(0x01, {0x03, 0x00, 0x00, 0x00, 0x0A}),
              (std::vector<uint8_t>{0x01, 0x03, 0x00, 0x00, 0x00, 0x0A, 0xC5, 0xCD}));
    // Modbus over serial line v1.02 §6.2.2 worked example: frame 02 07 -> CRC 0x1241, sent 41 12.
    const uint8_t b[] = {0x02, 0x07};
    EXPECT_EQ(ModbusCrc16(b, 2), 0x1241);
    // A captured ORv3 PSU poll (rackmon notes): c8 03 00 4f 00 04 64 47.
    const uint8_t c[] = {0xC8, 0x03, 0x00, 0x4F, 0x00, 0x04, 0x64, 0x47};
    EXPECT_TRUE(ModbusRtuCrcOk(c, sizeof c));
    uint8_t bad[sizeof c];
    std::copy(c, c + sizeof c, bad);
    bad[3] ^= 0x01;
    EXPECT_FALSE(ModbusRtuCrcOk(bad, sizeof bad));
    EXPECT_FALSE(ModbusRtuCrcOk(c, 2));
    EXPECT_EQ(ModbusCrc16(nullptr, 0), 0xFFFF);
}

TEST(ModbusRtu, SilentIntervalsPerBaudRate)
{
    // 19200 8E1: 1.5 x 11 / 19200 = 859.375 us, 3.5 x 11 / 19200 = 2005.208 us.
    ModbusRtuTiming t = ModbusRtuTiming::ForFormat(Fmt(19200));
    EXPECT_EQ(t.t15.GetPicoSeconds(), 859375000);
    EXPECT_EQ(t.t35.GetPicoSeconds(), 2005208333);
    // 19200 8N1: 10-bit characters.
    t = ModbusRtuTiming::ForFormat(Fmt(19200, Rs485Parity::None));
    EXPECT_EQ(t.t15.GetPicoSeconds(), 781250000);
    EXPECT_EQ(t.t35.GetPicoSeconds(), 1822916667);
    // 9600 8E1.
    t = ModbusRtuTiming::ForFormat(Fmt(9600));
    EXPECT_EQ(t.t15.GetPicoSeconds(), 1718750000);
    EXPECT_EQ(t.t35.GetPicoSeconds(), 4010416667);
    // Above 19200: fixed 750 us and 1.75 ms (§2.5.1.1 remark).
    for (uint32_t baud : {38400u, 57600u, 115200u})
    {
        t = ModbusRtuTiming::ForFormat(Fmt(baud));
        EXPECT_EQ(t.t15, MicroSeconds(750));
        EXPECT_EQ(t.t35, MicroSeconds(1750));
    }
}

// ---------------------------------------------------------------------------------------------
// PDUs

TEST(ModbusPdu, RequestsEncodeAndDecode)
{
    const std::vector<ModbusRequest> reqs = {
        ModbusRequest::ReadCoils(3, 19),
        ModbusRequest::ReadDiscreteInputs(0, 2000),
        ModbusRequest::ReadHoldingRegisters(0x4F, 4),
        ModbusRequest::ReadInputRegisters(0xFFFF, 1),
        ModbusRequest::WriteSingleCoil(0xAC, true),
        ModbusRequest::WriteSingleCoil(0xAD, false),
        ModbusRequest::WriteSingleRegister(1, 0x0003),
        ModbusRequest::WriteMultipleCoils(0x13, {1, 0, 1, 1, 0, 0, 1, 1, 1, 0}),
        ModbusRequest::WriteMultipleRegisters(1, {0x000A, 0x0102}),
        ModbusRequest::ReadWriteMultipleRegisters(3, 6, 0x0E, {0x00FF, 0x00FF, 0x00FF}),
        ModbusRequest::ReadDeviceIdentification(ModbusReadDeviceIdCode::Basic, 0),
        ModbusRequest::Diagnostics(ModbusDiagnostic::ReturnQueryData, 0xA537),
    };
    for (const auto& r : reqs)
    {
        const std::vector<uint8_t> pdu = r.Encode();
        ModbusRequest d;
        ASSERT_EQ(ModbusRequest::Decode(pdu.data(), pdu.size(), d), ModbusExceptionCode::None)
            << "function " << static_cast<int>(r.function);
        EXPECT_EQ(d.Encode(), pdu);
    }
    // The spec's examples (MODBUS Application Protocol V1.1b3 §6.11, §6.12).
    EXPECT_EQ(ModbusRequest::WriteMultipleCoils(0x13, {1, 0, 1, 1, 0, 0, 1, 1, 1, 0}).Encode(),
              (std::vector<uint8_t>{0x0F, 0x00, 0x13, 0x00, 0x0A, 0x02, 0xCD, 0x01}));
    EXPECT_EQ(ModbusRequest::WriteMultipleRegisters(1, {0x000A, 0x0102}).Encode(),
              (std::vector<uint8_t>{0x10, 0x00, 0x01, 0x00, 0x02, 0x04, 0x00, 0x0A, 0x01, 0x02}));
    EXPECT_EQ(ModbusRequest::WriteSingleCoil(0xAC, true).Encode(),
              (std::vector<uint8_t>{0x05, 0x00, 0xAC, 0xFF, 0x00}));
    EXPECT_EQ(ModbusRequest::ReadDeviceIdentification(ModbusReadDeviceIdCode::Basic, 0).Encode(),
              (std::vector<uint8_t>{0x2B, 0x0E, 0x01, 0x00}));
}

TEST(ModbusPdu, MalformedRequestsGetTheRightException)
{
    struct Case
    {
        std::vector<uint8_t> pdu;
        ModbusExceptionCode e;
    };
    const auto F = ModbusExceptionCode::IllegalFunction;
    const auto A = ModbusExceptionCode::IllegalDataAddress;
    const auto V = ModbusExceptionCode::IllegalDataValue;
    const std::vector<Case> cases = {
        {{}, F},
        {{0x07}, F},                                     // Read Exception Status: not served
        {{0x41, 0x00}, F},                               // user-defined function
        {{0x03, 0x00, 0x00, 0x00}, V},                   // truncated
        {{0x03, 0x00, 0x00, 0x00, 0x00}, V},             // quantity 0
        {{0x03, 0x00, 0x00, 0x00, 0x7E}, V},             // quantity 126
        {{0x01, 0x00, 0x00, 0x07, 0xD1}, V},             // 2001 coils
        {{0x03, 0xFF, 0xFF, 0x00, 0x02}, A},             // past 0xFFFF
        {{0x05, 0x00, 0x01, 0x12, 0x34}, V},             // coil value not 0000/FF00
        {{0x06, 0x00, 0x01, 0x00}, V},                   // truncated
        {{0x0F, 0x00, 0x00, 0x00, 0x0A, 0x01, 0xFF}, V}, // byte count 1 for 10 coils
        {{0x10, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00}, V}, // byte count 2, 1 data byte
        {{0x10, 0x00, 0x00, 0x00, 0x7C, 0xF8}, V},       // 124 registers
        {{0x17, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x7A, 0x02, 0x00, 0x00}, V},
        {{0x2B, 0x0D, 0x00}, F}, // CANopen MEI: not served
        {{0x2B, 0x0E, 0x05, 0x00}, V}, // Read Device ID code 5
        {{0x2B, 0x0E, 0x01}, V},
        {{0x08, 0x00, 0x03, 0x00, 0x00}, F}, // diagnostics sub-function not served
        {{0x08, 0x00, 0x0B, 0x12, 0x34}, V}, // counter sub-function wants 0000
    };
    for (const auto& c : cases)
    {
        ModbusRequest r;
        EXPECT_EQ(ModbusRequest::Decode(c.pdu.data(), c.pdu.size(), r), c.e)
            << "PDU of " << c.pdu.size() << " bytes, function "
            << (c.pdu.empty() ? -1 : static_cast<int>(c.pdu[0]));
    }
}

TEST(ModbusPdu, ResponsesDecodeAgainstTheirRequest)
{
    const ModbusRequest rd = ModbusRequest::ReadHoldingRegisters(0x6B, 3);
    ModbusResponse r;
    const std::vector<uint8_t> ok = {0x03, 0x06, 0x02, 0x2B, 0x00, 0x00, 0x00, 0x64};
    ASSERT_TRUE(ModbusResponse::Decode(rd, ok.data(), ok.size(), r));
    EXPECT_EQ(r.registers, (std::vector<uint16_t>{0x022B, 0x0000, 0x0064}));
    std::string why;
    const std::vector<uint8_t> shortCount = {0x03, 0x04, 0x02, 0x2B, 0x00, 0x00};
    EXPECT_FALSE(ModbusResponse::Decode(rd, shortCount.data(), shortCount.size(), r, &why));
    EXPECT_FALSE(why.empty());
    const std::vector<uint8_t> otherFn = {0x04, 0x06, 0, 0, 0, 0, 0, 0};
    EXPECT_FALSE(ModbusResponse::Decode(rd, otherFn.data(), otherFn.size(), r));
    const std::vector<uint8_t> exc = {0x83, 0x02};
    ASSERT_TRUE(ModbusResponse::Decode(rd, exc.data(), exc.size(), r));
    EXPECT_EQ(r.exception, ModbusExceptionCode::IllegalDataAddress);
    // An FC 06 echo must repeat the request.
    const ModbusRequest wr = ModbusRequest::WriteSingleRegister(1, 3);
    const std::vector<uint8_t> echo = {0x06, 0x00, 0x01, 0x00, 0x03};
    const std::vector<uint8_t> wrong = {0x06, 0x00, 0x01, 0x00, 0x04};
    EXPECT_TRUE(ModbusResponse::Decode(wr, echo.data(), echo.size(), r));
    EXPECT_FALSE(ModbusResponse::Decode(wr, wrong.data(), wrong.size(), r));
    // Device identification objects must stay inside the PDU.
    const ModbusRequest id =
        ModbusRequest::ReadDeviceIdentification(ModbusReadDeviceIdCode::Basic, 0);
    const std::vector<uint8_t> idOk =
        {0x2B, 0x0E, 0x01, 0x81, 0x00, 0x00, 0x01, 0x00, 0x02, 'h', 'i'};
    ASSERT_TRUE(ModbusResponse::Decode(id, idOk.data(), idOk.size(), r));
    ASSERT_EQ(r.objects.size(), 1u);
    EXPECT_EQ(r.objects[0].value, "hi");
    const std::vector<uint8_t> idBad = {0x2B, 0x0E, 0x01, 0x81, 0x00, 0x00, 0x01, 0x00, 0x09, 'h'};
    EXPECT_FALSE(ModbusResponse::Decode(id, idBad.data(), idBad.size(), r));
}

// Random PDUs never crash the decoders or the slave's request processing.
TEST(ModbusPdu, FuzzedPdusNeverCrash)
{
    std::mt19937 rng(12345);
    Ptr<ModbusSlave> slave = CreateObject<ModbusSlave>();
    slave->SetRegisterBank(MakeBank());
    const uint8_t functions[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x08, 0x0F, 0x10, 0x17, 0x2B};
    size_t accepted = 0;
    for (int i = 0; i < 50000; ++i)
    {
        std::vector<uint8_t> pdu(rng() % 260);
        for (auto& b : pdu)
        {
            b = static_cast<uint8_t>(rng());
        }
        if (!pdu.empty() && (i & 1))
        {
            pdu[0] = functions[rng() % sizeof functions]; // mostly known functions
        }
        ModbusRequest req;
        if (ModbusRequest::Decode(pdu.data(), pdu.size(), req) == ModbusExceptionCode::None)
        {
            accepted++;
            ModbusResponse rsp;
            ModbusResponse::Decode(req, pdu.data(), pdu.size(), rsp);
        }
        const std::vector<uint8_t> out = slave->ProcessRequest(1, pdu);
        EXPECT_FALSE(out.empty()) << "a unicast request always gets an answer";
        EXPECT_LE(out.size(), kModbusMaxPdu);
    }
    EXPECT_GT(accepted, 0u);
    slave->Dispose();
}

// ---------------------------------------------------------------------------------------------
// Framing on the bus (a bare transceiver injects bytes; the slave's framer judges them)

namespace
{
struct GapCase
{
    double gapChars;       // silence inside the frame, in character times
    bool exactlyT15;       // use t1.5 exactly instead
    bool answered;
};
} // namespace

TEST(ModbusFraming, GapAboveT15InsideAFrameDiscardsIt)
{
    const std::vector<GapCase> cases = {{1.6, false, false}, {1.4, false, true}, {0, true, true}};
    for (const auto& gc : cases)
    {
        Rig r = MakeRig(Fmt(19200), {1}, true, 0.0);
        const Rs485Format f = Fmt(19200);
        const std::vector<uint8_t> adu =
            ModbusRtuBuildAdu(1, ModbusRequest::ReadHoldingRegisters(0, 2).Encode());
        const Time t0 = MilliSeconds(10);
        const Time gap = gc.exactlyT15 ? ModbusRtuTiming::ForFormat(f).t15
                                       : PicoSeconds(static_cast<int64_t>(
                                             gc.gapChars * f.CharacterTime().GetPicoSeconds()));
        SendRawAt(r.raw, t0, {adu.begin(), adu.begin() + 4});
        SendRawAt(r.raw, t0 + f.CharactersTime(4) + gap, {adu.begin() + 4, adu.end()});
        Simulator::Stop(MilliSeconds(100));
        Simulator::Run();
        SCOPED_TRACE(gc.gapChars);
        const auto& fc = r.slaves[0]->GetFramerCounters();
        EXPECT_EQ(fc.frames, 1u);
        EXPECT_EQ(r.slaves[0]->GetResponsesSent(), gc.answered ? 1u : 0u);
        EXPECT_EQ(fc.incomplete, gc.answered ? 0u : 1u);
        EXPECT_EQ(r.slaves[0]->GetDiagnostics().busCommunicationErrorCount, gc.answered ? 0u : 1u);
        Simulator::Destroy();
    }
}

// Two broadcast writes: a silence of exactly t3.5 makes them two frames; 3 character times of
// silence (more than t1.5, less than t3.5) makes one incomplete frame.
TEST(ModbusFraming, T35SilenceSeparatesFrames)
{
    for (bool separated : {true, false})
    {
        Rig r = MakeRig(Fmt(19200), {1, 2}, true, 0.0);
        const Rs485Format f = Fmt(19200);
        const auto a = ModbusRtuBuildAdu(0, ModbusRequest::WriteSingleRegister(0, 111).Encode());
        const auto b = ModbusRtuBuildAdu(0, ModbusRequest::WriteSingleRegister(1, 222).Encode());
        const Time t0 = MilliSeconds(10);
        const Time gap = separated ? ModbusRtuTiming::ForFormat(f).t35 : f.CharactersTime(3);
        SendRawAt(r.raw, t0, a);
        SendRawAt(r.raw, t0 + f.CharactersTime(a.size()) + gap, b);
        Simulator::Stop(MilliSeconds(100));
        Simulator::Run();
        SCOPED_TRACE(separated);
        for (size_t i = 0; i < 2; ++i)
        {
            EXPECT_EQ(r.banks[i]->GetHoldingRegister(0), separated ? 111 : 1000 * (i + 1));
            EXPECT_EQ(r.banks[i]->GetHoldingRegister(1), separated ? 222 : 1000 * (i + 1) + 1);
            EXPECT_EQ(r.slaves[i]->GetFramerCounters().frames, separated ? 2u : 1u);
            EXPECT_EQ(r.slaves[i]->GetResponsesSent(), 0u) << "a broadcast is never answered";
            EXPECT_EQ(r.slaves[i]->GetDiagnostics().serverNoResponseCount, separated ? 2u : 0u);
        }
        Simulator::Destroy();
    }
}

TEST(ModbusFraming, BadCrcIsDroppedAndCounted)
{
    Rig r = MakeRig(Fmt(19200), {1}, true);
    auto adu = ModbusRtuBuildAdu(1, ModbusRequest::ReadHoldingRegisters(0, 2).Encode());
    adu.back() ^= 0x40;
    SendRawAt(r.raw, MilliSeconds(10), adu);
    // A frame too short to hold a function code, then a good one.
    SendRawAt(r.raw, MilliSeconds(30), {0x01, 0x83, 0x02});
    SendRawAt(r.raw, MilliSeconds(50),
              ModbusRtuBuildAdu(1, ModbusRequest::ReadHoldingRegisters(0, 2).Encode()));
    Simulator::Stop(MilliSeconds(200));
    Simulator::Run();
    const auto& fc = r.slaves[0]->GetFramerCounters();
    EXPECT_EQ(fc.badCrc, 1u);
    EXPECT_EQ(fc.tooShort, 1u);
    EXPECT_EQ(fc.ok, 1u);
    const auto& d = r.slaves[0]->GetDiagnostics();
    EXPECT_EQ(d.busCommunicationErrorCount, 2u);
    EXPECT_EQ(d.busMessageCount, 1u);
    EXPECT_EQ(r.slaves[0]->GetResponsesSent(), 1u) << "only the good request is answered";
    Simulator::Destroy();
}

TEST(ModbusFraming, OverlongFrameIsAnOverrun)
{
    Rig r = MakeRig(Fmt(115200), {1}, true);
    SendRawAt(r.raw, MilliSeconds(5), std::vector<uint8_t>(300, 0x01));
    Simulator::Stop(MilliSeconds(100));
    Simulator::Run();
    EXPECT_EQ(r.slaves[0]->GetFramerCounters().overrun, 1u);
    EXPECT_EQ(r.slaves[0]->GetDiagnostics().busCharacterOverrunCount, 1u);
    EXPECT_EQ(r.slaves[0]->GetResponsesSent(), 0u);
    Simulator::Destroy();
}

// ---------------------------------------------------------------------------------------------
// Master and slave

TEST(ModbusMasterSlave, EveryFunctionCodeRoundTrips)
{
    Rig r = MakeRig(Fmt(19200), {1});
    Ptr<ModbusMemoryRegisterBank> bank = r.banks[0];
    // Extended objects long enough to need two transactions (More Follows).
    for (uint8_t id = 0x80; id < 0x84; ++id)
    {
        bank->SetDeviceIdentificationObject(id,
                                            std::string(80, static_cast<char>('A' + id - 0x80)));
    }
    auto m = r.master;
    m->Submit(1, ModbusRequest::ReadCoils(0, 10), r.Cb());
    m->Submit(1, ModbusRequest::ReadDiscreteInputs(0, 5), r.Cb());
    m->Submit(1, ModbusRequest::ReadHoldingRegisters(0, 4), r.Cb());
    m->Submit(1, ModbusRequest::ReadInputRegisters(1, 3), r.Cb());
    m->Submit(1, ModbusRequest::WriteSingleCoil(3, true), r.Cb());
    m->Submit(1, ModbusRequest::WriteSingleRegister(10, 0xBEEF), r.Cb());
    m->Submit(1, ModbusRequest::WriteMultipleCoils(16, {1, 0, 1, 1, 0, 0, 1, 0, 1}), r.Cb());
    m->Submit(1, ModbusRequest::WriteMultipleRegisters(20, {1, 2, 3}), r.Cb());
    m->Submit(1, ModbusRequest::ReadWriteMultipleRegisters(20, 3, 21, {9}), r.Cb());
    using Id = ModbusReadDeviceIdCode;
    m->Submit(1, ModbusRequest::ReadDeviceIdentification(Id::Basic, 0), r.Cb());
    m->Submit(1, ModbusRequest::ReadDeviceIdentification(Id::Regular, 0), r.Cb());
    m->Submit(1, ModbusRequest::ReadDeviceIdentification(Id::Individual, 5), r.Cb());
    m->Submit(1, ModbusRequest::ReadDeviceIdentification(Id::Extended, 0), r.Cb());
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 13u);
    for (const auto& t : r.res.t)
    {
        EXPECT_EQ(t.status, ModbusResultStatus::Ok)
            << "function " << static_cast<int>(t.request.function) << ": " << t.detail;
        EXPECT_EQ(t.attempts, 1u);
    }
    const auto& t = r.res.t;
    EXPECT_EQ(t[0].response.bits, (std::vector<bool>{0, 1, 0, 0, 0, 0, 0, 0, 0, 1}));
    EXPECT_EQ(t[1].response.bits, (std::vector<bool>{1, 0, 0, 0, 1}));
    EXPECT_EQ(t[2].response.registers, (std::vector<uint16_t>{1000, 1001, 1002, 1003}));
    EXPECT_EQ(t[3].response.registers, (std::vector<uint16_t>{0x4001, 0x4002, 0x4003}));
    EXPECT_TRUE(bank->GetCoil(3));
    EXPECT_EQ(bank->GetHoldingRegister(10), 0xBEEF);
    EXPECT_TRUE(bank->GetCoil(16));
    EXPECT_FALSE(bank->GetCoil(17));
    EXPECT_TRUE(bank->GetCoil(24));
    // FC 17 writes before it reads (§6.17).
    EXPECT_EQ(t[8].response.registers, (std::vector<uint16_t>{1, 9, 3}));
    ASSERT_EQ(t[9].response.objects.size(), 3u);
    EXPECT_EQ(t[9].response.objects[0].value, "Cnuas");
    EXPECT_EQ(t[9].response.conformityLevel, 0x83);
    EXPECT_EQ(t[10].response.objects.size(), 4u) << "regular: objects 0-2 and 5";
    ASSERT_EQ(t[11].response.objects.size(), 1u);
    EXPECT_EQ(t[11].response.objects[0].value, "ORV3_PSU");
    // Extended stream: 4 basic/regular objects + 4 x 82 bytes do not fit in 253 bytes.
    EXPECT_TRUE(t[12].response.moreFollows);
    const uint8_t next = t[12].response.nextObjectId;
    EXPECT_GE(next, 0x80);
    EXPECT_EQ(r.master->GetCounters().ok, 13u);
    EXPECT_EQ(r.ch->GetCollidedCharacterCount(), 0u);
    EXPECT_EQ(r.ch->GetContentionCount(), 0u);
    Simulator::Destroy();
}

TEST(ModbusMasterSlave, ExceptionResponses)
{
    Rig r = MakeRig(Fmt(19200), {1, 2});
    r.slaves[1]->SetRegisterBank(nullptr); // a device that cannot serve anything
    r.master->Submit(1, ModbusRequest::Raw(0x07, {}), r.Cb());                   // 01
    r.master->Submit(1, ModbusRequest::ReadHoldingRegisters(500, 2), r.Cb());    // 02
    r.master->Submit(1, ModbusRequest::ReadHoldingRegisters(98, 4), r.Cb());     // 02 (partly)
    r.master->Submit(1, ModbusRequest::ReadHoldingRegisters(0, 126), r.Cb());    // 03
    r.master->Submit(1, ModbusRequest::Raw(0x05, {0x00, 0x01, 0x12, 0x34}), r.Cb()); // 03
    r.master->Submit(
        1,
        ModbusRequest::ReadDeviceIdentification(ModbusReadDeviceIdCode::Individual, 0x42),
        r.Cb()); // 02
    r.master->Submit(1, ModbusRequest::WriteMultipleRegisters(99, {1, 2}), r.Cb()); // 02
    r.master->Submit(2, ModbusRequest::ReadHoldingRegisters(0, 1), r.Cb());      // 04
    Simulator::Run();
    const std::vector<ModbusExceptionCode> want = {
        ModbusExceptionCode::IllegalFunction,    ModbusExceptionCode::IllegalDataAddress,
        ModbusExceptionCode::IllegalDataAddress, ModbusExceptionCode::IllegalDataValue,
        ModbusExceptionCode::IllegalDataValue,   ModbusExceptionCode::IllegalDataAddress,
        ModbusExceptionCode::IllegalDataAddress, ModbusExceptionCode::ServerDeviceFailure,
    };
    ASSERT_EQ(r.res.t.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
    {
        EXPECT_EQ(r.res.t[i].status, ModbusResultStatus::Exception) << i;
        EXPECT_EQ(r.res.t[i].response.exception, want[i]) << i;
        EXPECT_EQ(r.res.t[i].attempts, 1u) << "an exception is an answer: no retry";
    }
    EXPECT_EQ(r.banks[0]->GetHoldingRegister(99), 1099) << "a refused write changes nothing";
    EXPECT_EQ(r.slaves[0]->GetDiagnostics().busExceptionErrorCount, 7u);
    EXPECT_EQ(r.master->GetCounters().exceptions, 8u);
    Simulator::Destroy();
}

namespace
{
/// A device that is busy for holding-register reads.
class BusyBank : public ModbusMemoryRegisterBank
{
  public:
    ModbusExceptionCode ReadHoldingRegisters(uint16_t, uint16_t, std::vector<uint16_t>&) override
    {
        return ModbusExceptionCode::ServerDeviceBusy;
    }
};
} // namespace

TEST(ModbusMasterSlave, BusyDeviceAnswersException06)
{
    Rig r = MakeRig(Fmt(19200), {1});
    r.slaves[0]->SetRegisterBank(CreateObject<BusyBank>());
    r.master->Submit(1, ModbusRequest::ReadHoldingRegisters(0, 1), r.Cb());
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 1u);
    EXPECT_EQ(r.res.t[0].status, ModbusResultStatus::Exception);
    EXPECT_EQ(r.res.t[0].response.exception, ModbusExceptionCode::ServerDeviceBusy);
    EXPECT_EQ(r.slaves[0]->GetDiagnostics().serverBusyCount, 1u);
    EXPECT_EQ(r.slaves[0]->GetDiagnostics().busExceptionErrorCount, 1u);
    Simulator::Destroy();
}

// A master talking at the wrong baud rate gets no answer (the slave hears errors only); after
// switching to the slave's rate it does. Per-request options give the probe its own timeout.
TEST(ModbusMasterSlave, WrongBaudRateGetsNoAnswerUntilTheMasterSwitches)
{
    Rig r = MakeRig(Fmt(19200), {0x40});
    r.dev[0]->SetFormat(Fmt(115200));
    ModbusSubmitOptions probe;
    probe.responseTimeout = MilliSeconds(70);
    probe.retries = 0;
    auto onProbe = [&r](const ModbusTransaction& t) {
        r.res.Add(t);
        if (t.status == ModbusResultStatus::Timeout && r.res.t.size() == 1)
        {
            r.master->SetLineFormat(Fmt(19200));
            r.master->Submit(0x40, ModbusRequest::ReadHoldingRegisters(8, 8), r.Cb());
        }
    };
    std::function<void(const ModbusTransaction&)> fn = onProbe;
    // 10 ms in: the slave has left its power-up wait (t3.5 at 19200 is longer than the
    // master's 1.75 ms at 115200; a request inside it would just be discarded).
    Simulator::Schedule(MilliSeconds(10), [&]() {
        r.master->Submit(
            0x40,
            ModbusRequest::ReadHoldingRegisters(8, 8),
            MakeCallback(&std::function<void(const ModbusTransaction&)>::operator(), &fn),
            probe);
    });
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 2u);
    EXPECT_EQ(r.res.t[0].status, ModbusResultStatus::Timeout);
    EXPECT_EQ(r.res.t[0].attempts, 1u);
    EXPECT_EQ(r.res.t[0].completed - r.res.t[0].requestEnd, MilliSeconds(70));
    EXPECT_EQ(r.res.t[1].status, ModbusResultStatus::Ok);
    EXPECT_EQ(r.res.t[1].response.registers.size(), 8u);
    EXPECT_EQ(r.slaves[0]->GetFramerCounters().characterError, 1u);
    EXPECT_EQ(r.slaves[0]->GetFramerCounters().initialDiscarded, 0u);
    EXPECT_EQ(r.dev[1]->GetCounters().rxFormatMismatch, 8u);
    Simulator::Destroy();
}

TEST(ModbusMasterSlave, BroadcastWriteGetsNoResponse)
{
    Rig r = MakeRig(Fmt(19200), {1, 2, 3});
    r.master->SetAttribute("TurnaroundDelay", TimeValue(MilliSeconds(150)));
    r.master->Submit(0, ModbusRequest::WriteSingleRegister(5, 77), r.Cb());
    r.master->Submit(0, ModbusRequest::ReadHoldingRegisters(0, 1), r.Cb()); // not a write
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 2u);
    for (const auto& t : r.res.t)
    {
        EXPECT_EQ(t.status, ModbusResultStatus::Broadcast);
        EXPECT_EQ(t.completed - t.requestEnd, MilliSeconds(150)) << "turnaround delay";
    }
    for (size_t i = 0; i < 3; ++i)
    {
        EXPECT_EQ(r.banks[i]->GetHoldingRegister(5), 77);
        EXPECT_EQ(r.slaves[i]->GetResponsesSent(), 0u);
        EXPECT_EQ(r.slaves[i]->GetDiagnostics().serverNoResponseCount, 2u);
        EXPECT_EQ(r.slaves[i]->GetDiagnostics().busExceptionErrorCount, 1u)
            << "a broadcast read is refused (§6.1.2), silently";
    }
    EXPECT_EQ(r.ch->GetCharacterCount(), 16u) << "only the two requests were on the line";
    EXPECT_EQ(r.master->GetCounters().broadcasts, 2u);
    Simulator::Destroy();
}

// Nobody at the address: the master times out, retries, and gives up, all on the arithmetic.
TEST(ModbusMasterSlave, MissingAddressTimesOutAfterRetries)
{
    Rig r = MakeRig(Fmt(19200), {1});
    r.master->SetAttribute("Retries", UintegerValue(2));
    r.master->SetAttribute("ResponseTimeout", TimeValue(MilliSeconds(50)));
    r.master->Submit(9, ModbusRequest::ReadHoldingRegisters(0, 1), r.Cb());
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 1u);
    const auto& t = r.res.t[0];
    EXPECT_EQ(t.status, ModbusResultStatus::Timeout);
    EXPECT_EQ(t.attempts, 3u);
    EXPECT_EQ(r.master->GetCounters().noResponse, 3u);
    EXPECT_EQ(r.master->GetCounters().timeouts, 1u);
    EXPECT_EQ(r.master->GetCounters().retries, 2u);
    // First request after the power-up t3.5; each attempt = 8 characters + the timeout.
    const Rs485Format f = Fmt(19200);
    const Time t35 = ModbusRtuTiming::ForFormat(f).t35;
    EXPECT_EQ(t.completed, t35 + 3 * (f.CharactersTime(8) + MilliSeconds(50)));
    EXPECT_EQ(r.slaves[0]->GetDiagnostics().busMessageCount, 3u) << "slave 1 saw all three";
    EXPECT_EQ(r.slaves[0]->GetResponsesSent(), 0u);
    Simulator::Destroy();
}

// A corrupted response is a frame error at the master: retried, then reported.
TEST(ModbusMasterSlave, BadCrcResponseIsRetriedThenReported)
{
    for (uint32_t retries : {0u, 1u})
    {
        Rig r = MakeRig(Fmt(19200), {}, true);
        r.master->SetAttribute("Retries", UintegerValue(retries));
        r.master->SetAttribute("ResponseTimeout", TimeValue(MilliSeconds(50)));
        // The bare transceiver answers every request for unit 7 with a bad CRC, 5 ms after the
        // request's end.
        r.master->TraceConnectWithoutContext(
            "FrameTx",
            MakeBoundCallback(+[](Ptr<Rs485Device> raw, const std::vector<uint8_t>& adu) {
                auto bad = ModbusRtuBuildAdu(7, {0x03, 0x02, 0x12, 0x34});
                bad[3] ^= 0xFF;
                const Rs485Format f = Fmt(19200);
                SendRawAt(raw,
                          Simulator::Now() + f.CharactersTime(adu.size()) + MilliSeconds(5),
                          bad);
            },
                              r.raw));
        r.master->Submit(7, ModbusRequest::ReadHoldingRegisters(0, 1), r.Cb());
        Simulator::Stop(Seconds(1));
        Simulator::Run();
        ASSERT_EQ(r.res.t.size(), 1u);
        EXPECT_EQ(r.res.t[0].status, ModbusResultStatus::FrameError);
        EXPECT_EQ(r.res.t[0].attempts, retries + 1);
        EXPECT_EQ(r.master->GetCounters().frameErrors, retries + 1);
        EXPECT_EQ(r.master->GetFramerCounters().badCrc, retries + 1);
        Simulator::Destroy();
    }
}

// Two slaves set to the same address answer together: their responses collide, the master sees
// frame errors; the channel counts the collided characters.
TEST(ModbusMasterSlave, DuplicateAddressesCollide)
{
    Rig r = MakeRig(Fmt(19200), {3, 3});
    for (auto& s : r.slaves)
    {
        s->SetAttribute("ResponseDelay", TimeValue(MilliSeconds(4)));
    }
    r.master->SetAttribute("Retries", UintegerValue(1));
    r.master->Submit(3, ModbusRequest::ReadHoldingRegisters(0, 2), r.Cb());
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 1u);
    EXPECT_EQ(r.res.t[0].status, ModbusResultStatus::FrameError);
    EXPECT_EQ(r.res.t[0].attempts, 2u);
    // 2 attempts x 2 responses x 9 characters, all overlapping.
    EXPECT_EQ(r.ch->GetCollidedCharacterCount(), 36u);
    EXPECT_EQ(r.ch->GetContentionCount(), 2u);
    EXPECT_EQ(r.master->GetFramerCounters().characterError, 2u);
    // Each slave sees the other's (collided) response as a bad frame.
    EXPECT_EQ(r.slaves[0]->GetDiagnostics().busCommunicationErrorCount, 2u);
    Simulator::Destroy();
}

// A master that holds its driver past the slave's turnaround collides with the response; with
// the hold shorter than the response delay the bus is never driven twice.
TEST(ModbusMasterSlave, TurnaroundViolationCollides)
{
    for (Time hold : {MilliSeconds(10), MilliSeconds(1)})
    {
        Rig r = MakeRig(Fmt(19200), {1});
        r.dev[0]->SetAttribute("TxDisableDelay", TimeValue(hold));
        r.slaves[0]->SetAttribute("ResponseDelay", TimeValue(MilliSeconds(3)));
        r.master->SetAttribute("Retries", UintegerValue(0));
        r.master->Submit(1, ModbusRequest::ReadHoldingRegisters(0, 2), r.Cb());
        Simulator::Run();
        ASSERT_EQ(r.res.t.size(), 1u);
        SCOPED_TRACE(hold.GetMilliSeconds());
        if (hold > MilliSeconds(3))
        {
            EXPECT_EQ(r.res.t[0].status, ModbusResultStatus::FrameError);
            EXPECT_EQ(r.ch->GetContentionCount(), 1u);
            EXPECT_EQ(r.ch->GetCollidedCharacterCount(), 9u);
        }
        else
        {
            EXPECT_EQ(r.res.t[0].status, ModbusResultStatus::Ok);
            EXPECT_EQ(r.ch->GetContentionCount(), 0u);
            EXPECT_EQ(r.ch->GetCollidedCharacterCount(), 0u);
        }
        Simulator::Destroy();
    }
}

// ---------------------------------------------------------------------------------------------
// Timing

// The response starts ResponseDelay after the request's last stop bit (plus propagation both
// ways), or t3.5 + TxEnableDelay after it when the delay asked for is shorter.
TEST(ModbusTiming, ResponseFollowsTheSlaveDelay)
{
    const Rs485Format f = Fmt(19200);
    const Time t35 = ModbusRtuTiming::ForFormat(f).t35;
    struct Case
    {
        Time delay;
        Time enable;
        Time expectGap; // response start - request end, before propagation
    };
    const std::vector<Case> cases = {
        {MilliSeconds(5), Time(0), MilliSeconds(5)},
        {Time(0), Time(0), t35},
        {Time(0), MicroSeconds(200), t35 + MicroSeconds(200)},
        {MilliSeconds(5), MicroSeconds(200), MilliSeconds(5)},
    };
    for (const auto& c : cases)
    {
        Rig r = MakeRig(f, {1}, false, 200.0); // 200 m: 1 us each way
        r.slaves[0]->SetAttribute("ResponseDelay", TimeValue(c.delay));
        r.dev[1]->SetAttribute("TxEnableDelay", TimeValue(c.enable));
        r.master->Submit(1, ModbusRequest::ReadHoldingRegisters(0x4F, 4), r.Cb());
        Simulator::Run();
        ASSERT_EQ(r.res.t.size(), 1u);
        const auto& t = r.res.t[0];
        ASSERT_EQ(t.status, ModbusResultStatus::Ok);
        EXPECT_EQ(t.requestStart, t35) << "the master keeps t3.5 of silence after power-up";
        EXPECT_EQ(t.requestEnd - t.requestStart, f.CharactersTime(8));
        EXPECT_EQ(t.responseStart - t.requestEnd, c.expectGap + MicroSeconds(2));
        EXPECT_EQ(t.responseEnd - t.responseStart, f.CharactersTime(13));
        EXPECT_EQ(t.completed, t.responseEnd + t35) << "complete after t3.5 of silence";
        Simulator::Destroy();
    }
}

namespace
{
/// Polls N slaves once (4 registers each) and checks the cycle time against the arithmetic.
void
CheckPollCycle(uint32_t baud, uint32_t n)
{
    const Rs485Format f = Fmt(baud);
    std::vector<uint8_t> addrs;
    for (uint32_t i = 0; i < n; ++i)
    {
        addrs.push_back(static_cast<uint8_t>(0xC8 + i)); // ORv3 PSU addresses 200..
    }
    Rig r = MakeRig(f, addrs, false, 20.0);
    const Time responseDelay = MilliSeconds(3);
    const Time enable = MicroSeconds(50);
    const Time hold = MicroSeconds(100);
    const Time interRequest = MilliSeconds(2);
    for (auto& d : r.dev)
    {
        d->SetAttribute("TxEnableDelay", TimeValue(enable));
        d->SetAttribute("TxDisableDelay", TimeValue(hold));
    }
    for (auto& s : r.slaves)
    {
        s->SetAttribute("ResponseDelay", TimeValue(responseDelay));
    }
    r.master->SetAttribute("InterRequestDelay", TimeValue(interRequest));
    for (uint8_t a : addrs)
    {
        r.master->Submit(a, ModbusRequest::ReadHoldingRegisters(0x4F, 4), r.Cb());
    }
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), n);
    for (const auto& t : r.res.t)
    {
        ASSERT_EQ(t.status, ModbusResultStatus::Ok);
    }
    const Time t35 = ModbusRtuTiming::ForFormat(f).t35;
    const Time d = r.ch->GetDelay();
    // One transaction: 8-character request, propagation, the slave's gap, 13-character
    // response, propagation, t3.5 until the master knows the response ended; between
    // transactions the master's inter-request delay and its driver enable delay.
    const Time gap = std::max(responseDelay, t35 + enable);
    const Time perTransaction = f.CharactersTime(8) + d + gap + f.CharactersTime(13) + d + t35;
    const Time cycle = r.res.t.back().completed - r.res.t.front().requestStart;
    const Time expected = n * perTransaction + (n - 1) * (interRequest + enable);
    EXPECT_EQ(cycle, expected) << "exact to the picosecond";
    // The same from the paper arithmetic in double precision, within one character time.
    const double c = 11.0 / baud;
    const double paper = n * (21 * c + 2 * 20 * 5e-9 + gap.GetSeconds() + t35.GetSeconds()) +
                         (n - 1) * (2e-3 + 50e-6);
    EXPECT_NEAR(cycle.GetSeconds(), paper, c);
    EXPECT_EQ(r.ch->GetContentionCount(), 0u) << "turnaround respected: one driver at a time";
    EXPECT_EQ(r.ch->GetCollidedCharacterCount(), 0u);
    std::cout << "[ poll     ] " << n << " slaves at " << f.ToString() << ": cycle "
              << cycle.GetMicroSeconds() << " us, per transaction "
              << perTransaction.GetMicroSeconds() << " us\n";
    Simulator::Destroy();
}
} // namespace

TEST(ModbusTiming, PollCycleAt19200MatchesTheArithmetic)
{
    CheckPollCycle(19200, 6);
}

TEST(ModbusTiming, PollCycleAt115200MatchesTheArithmetic)
{
    CheckPollCycle(115200, 6);
}

// ---------------------------------------------------------------------------------------------
// Echo, addresses, diagnostics, garbage

// With the local echo delivered, master and slave read their own characters back and go on
// as usual.
TEST(ModbusMasterSlave, LocalEchoModeWorks)
{
    Rig r = MakeRig(Fmt(19200), {1, 2});
    for (auto& d : r.dev)
    {
        d->SetAttribute("SuppressEcho", BooleanValue(false));
    }
    for (uint8_t a : {1, 2, 1})
    {
        r.master->Submit(a, ModbusRequest::WriteSingleRegister(7, 0x0700 + a), r.Cb());
    }
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 3u);
    for (const auto& t : r.res.t)
    {
        EXPECT_EQ(t.status, ModbusResultStatus::Ok);
    }
    EXPECT_EQ(r.master->GetEchoErrors(), 0u);
    EXPECT_EQ(r.dev[0]->GetCounters().rxEcho, 24u);
    EXPECT_EQ(r.dev[0]->GetCounters().rxEchoSuppressed, 0u);
    EXPECT_EQ(r.slaves[0]->GetResponsesSent(), 2u) << "the FC 06 echo is not taken as a request";
    Simulator::Destroy();
}

// ORv3 HPR devices use the reserved addresses 248-255.
TEST(ModbusMasterSlave, ReservedAddressesAnswer)
{
    Rig r = MakeRig(Fmt(115200), {248, 250, 255});
    for (uint8_t a : {248, 250, 255, 249})
    {
        r.master->Submit(a, ModbusRequest::ReadHoldingRegisters(0, 1), r.Cb());
    }
    r.master->SetAttribute("Retries", UintegerValue(0));
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 4u);
    EXPECT_EQ(r.res.t[0].response.registers[0], 1000);
    EXPECT_EQ(r.res.t[1].response.registers[0], 2000);
    EXPECT_EQ(r.res.t[2].response.registers[0], 3000);
    EXPECT_EQ(r.res.t[3].status, ModbusResultStatus::Timeout);
    Simulator::Destroy();
}

// The serial-line counters read over the bus with FC 08.
TEST(ModbusMasterSlave, DiagnosticCountersOverTheBus)
{
    Rig r = MakeRig(Fmt(19200), {1, 2}, true);
    auto bad = ModbusRtuBuildAdu(1, ModbusRequest::ReadHoldingRegisters(0, 1).Encode());
    bad[2] ^= 1;
    SendRawAt(r.raw, MilliSeconds(5), bad);
    auto sub = [&r](ModbusDiagnostic d) {
        r.master->Submit(1, ModbusRequest::Diagnostics(d), r.Cb());
    };
    Simulator::Schedule(MilliSeconds(20), [&]() {
        r.master->Submit(2, ModbusRequest::ReadHoldingRegisters(0, 1), r.Cb());
        r.master->Submit(1, ModbusRequest::ReadHoldingRegisters(900, 1), r.Cb());
        r.master->Submit(1, ModbusRequest::Diagnostics(ModbusDiagnostic::ReturnQueryData, 0xA537),
                         r.Cb());
        sub(ModbusDiagnostic::BusMessageCount);
        sub(ModbusDiagnostic::BusCommunicationErrorCount);
        sub(ModbusDiagnostic::BusExceptionErrorCount);
        sub(ModbusDiagnostic::ServerMessageCount);
        sub(ModbusDiagnostic::ClearCounters);
        sub(ModbusDiagnostic::BusMessageCount);
    });
    Simulator::Run();
    ASSERT_EQ(r.res.t.size(), 9u);
    auto value = [](const ModbusTransaction& t) {
        EXPECT_EQ(t.status, ModbusResultStatus::Ok);
        return t.response.data.size() == 2 ? (t.response.data[0] << 8) | t.response.data[1] : -1;
    };
    EXPECT_EQ(r.res.t[2].response.data, (std::vector<uint8_t>{0xA5, 0x37}));
    // Good frames slave 1 heard (not its own responses: its echo is suppressed): the request
    // to 2, slave 2's response, the request for 900, the query-data request, and this request.
    EXPECT_EQ(value(r.res.t[3]), 5);
    EXPECT_EQ(value(r.res.t[4]), 1) << "the injected bad CRC";
    EXPECT_EQ(value(r.res.t[5]), 1) << "exception 02 for register 900";
    EXPECT_EQ(value(r.res.t[6]), 6) << "messages for slave 1, this one included";
    EXPECT_EQ(value(r.res.t[8]), 1) << "cleared, then this request";
    Simulator::Destroy();
}

// Garbage of any length and timing, colliding with real traffic: nothing crashes, nothing
// stalls, and once the garbage stops the master's polls succeed again.
TEST(ModbusMasterSlave, GarbageNeverCrashesOrStallsTheBus)
{
    for (uint32_t baud : {19200u, 115200u})
    {
        Rig r = MakeRig(Fmt(baud), {1, 2}, true);
        r.master->SetAttribute("ResponseTimeout", TimeValue(MilliSeconds(40)));
        r.master->SetAttribute("Retries", UintegerValue(1));
        std::mt19937 rng(baud);
        const Rs485Format f = Fmt(baud);
        Time t = MilliSeconds(1);
        while (t < Seconds(2))
        {
            std::vector<uint8_t> burst(1 + rng() % 300);
            for (auto& b : burst)
            {
                b = static_cast<uint8_t>(rng());
            }
            if (rng() % 4 == 0 && burst.size() >= 4)
            {
                // Now and then a frame with a valid CRC for a real slave, or a broadcast.
                burst.resize(4 + rng() % 40);
                burst[0] = static_cast<uint8_t>(rng() % 3);
                burst = WithCrc(std::vector<uint8_t>(burst.begin(), burst.end() - 2));
            }
            // Split the burst at random points with random silences (0 to 5 characters).
            size_t pos = 0;
            Time at = t;
            while (pos < burst.size())
            {
                const size_t len = 1 + rng() % (burst.size() - pos);
                SendRawAt(r.raw, at, {burst.begin() + pos, burst.begin() + pos + len});
                at += f.CharactersTime(len) +
                      PicoSeconds(static_cast<int64_t>(rng() % 5000) *
                                  f.CharacterTime().GetPicoSeconds() / 1000);
                pos += len;
            }
            t = at + MicroSeconds(rng() % 30000);
        }
        // The master polls throughout and for a second and a half after the garbage.
        uint32_t polls = 0;
        std::function<void()> poll = [&]() {
            if (Simulator::Now() > Seconds(3.5))
            {
                return;
            }
            polls++;
            r.master->Submit(static_cast<uint8_t>(1 + polls % 2),
                             ModbusRequest::ReadHoldingRegisters(0, 4), r.Cb());
            Simulator::Schedule(MilliSeconds(50), poll);
        };
        Simulator::Schedule(MilliSeconds(3), poll);
        Simulator::Stop(Seconds(4.5));
        Simulator::Run();
        SCOPED_TRACE(baud);
        ASSERT_GT(r.res.t.size(), 40u);
        EXPECT_LE(r.res.t.size(), polls);
        size_t lateOk = 0;
        size_t late = 0;
        for (const auto& x : r.res.t)
        {
            if (x.submitted > Seconds(2.5)) // the last burst may run past 2 s
            {
                late++;
                lateOk += x.status == ModbusResultStatus::Ok ? 1 : 0;
            }
        }
        EXPECT_GT(late, 10u);
        EXPECT_EQ(lateOk, late) << "every poll after the garbage succeeds";
        EXPECT_TRUE(r.master->IsIdle() || r.master->GetPending() < 3);
        // The garbage did its job.
        const auto& fc = r.slaves[0]->GetFramerCounters();
        EXPECT_GT(fc.frames - fc.ok, 10u);
        EXPECT_EQ(fc.frames, fc.ok + fc.overrun + fc.incomplete + fc.characterError +
                                 fc.tooShort + fc.badCrc);
        EXPECT_GT(r.ch->GetCollidedCharacterCount(), 0u);
        Simulator::Destroy();
    }
}
