// ORv3 device models: register maps from the data files, the electrical model as the
// registers show it, faults, write protection. Expected values come from the design notes
// (register scaling, rackmon2's measured spans) and from the physics written out here, never
// from the code under test.
#include "helpers/rack/rack-helper.h"

#include "models/rack/rack-register-map.h"

#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace ns3;

namespace
{
using Spans = std::vector<std::pair<uint16_t, uint16_t>>;

/// Raw holding registers of a device, read as a master would (through the bank).
std::vector<uint16_t>
Regs(Ptr<RackDevice> d, uint16_t start, uint16_t count)
{
    std::vector<uint16_t> out;
    EXPECT_EQ(d->ReadHoldingRegisters(start, count, out), ModbusExceptionCode::None);
    return out;
}

uint16_t
Reg(Ptr<RackDevice> d, uint16_t a)
{
    return Regs(d, a, 1).at(0);
}

bool
Bit(Ptr<RackDevice> d, uint16_t a, int bit)
{
    return (Reg(d, a) >> bit) & 1;
}

/// Runs the simulator to `t` and calls `f` there.
void
At(Time t, std::function<void()> f)
{
    Simulator::Schedule(t - Simulator::Now(), f);
}

RackConfig
NoBmc(bool hpr = false)
{
    RackConfig c;
    c.hpr = hpr;
    c.bmc = false;
    return c;
}
} // namespace

// ---- maps ---------------------------------------------------------------------------------

TEST(RackOrv3Map, ShippedMapsCarryTheRackmonFacts)
{
    const RackRegisterMap psu = RackRegisterMap::LoadType("ORV3_PSU");
    EXPECT_EQ(psu.baudRate, 19200u);
    EXPECT_EQ(psu.parity, Rs485Parity::Even);
    EXPECT_EQ(psu.probeRegister, 8);
    EXPECT_EQ(psu.unixTimeRegister, 98);
    EXPECT_EQ(psu.unixTimePeriodSeconds, 3600u);
    EXPECT_EQ(psu.registers.size(), 50u) << "rackmon's first reload: 50 transactions";
    EXPECT_TRUE(psu.Covers(200) && psu.Covers(237) && psu.Covers(242));
    EXPECT_FALSE(psu.Covers(206) || psu.Covers(243));
    // rack-modbus-orv3.md §2.1, measured: steady state for an ORv3 PSU is 4 reads.
    EXPECT_EQ(psu.Spans(120), (Spans{{0, 58}, {60, 5}, {67, 24}, {92, 18}}));
    const RackRegisterSpec* v = psu.Find("PSU_Output_Voltage");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->address, 79);
    const uint16_t raw = 52224; // the note's example: 51.0 V at 2^-10
    EXPECT_DOUBLE_EQ(v->Decode(&raw), 51.0);
    EXPECT_EQ(v->Encode(51.0), std::vector<uint16_t>{52224});
    const RackRegisterSpec* s = psu.Find("PSU_Setting_Register");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->bits.at(0), "PSU_Write_Enable");
    EXPECT_EQ(s->bits.at(9), "Output_Voltage_Setting_51V_48V");
    EXPECT_TRUE(psu.hasWriteEnable);

    const RackRegisterMap bbu = RackRegisterMap::LoadType("ORV3_BBU");
    EXPECT_EQ(bbu.unixTimeRegister, 302);
    EXPECT_TRUE(bbu.Covers(64) && bbu.Covers(101) && !bbu.Covers(70));
    const RackRegisterMap hpr = RackRegisterMap::LoadType("ORV3_HPR_PSU");
    EXPECT_EQ(hpr.baudRate, 115200u);
    EXPECT_EQ(hpr.probeRegister, 0);
    EXPECT_EQ(hpr.unixTimeRegister, 90);
    EXPECT_TRUE(hpr.Covers(0x90) && hpr.Covers(255));
    const RackRegisterMap pmm = RackRegisterMap::LoadType("ORV3_HPR_PMM_PSU");
    EXPECT_EQ(pmm.addressRanges, (std::vector<std::pair<uint8_t, uint8_t>>{{32, 42}}));
    EXPECT_EQ(pmm.unixTimeRegister, 80);
    const RackRegisterMap pmmB = RackRegisterMap::LoadType("ORV3_HPR_PMM_BBU");
    EXPECT_EQ(pmmB.addressRanges, (std::vector<std::pair<uint8_t, uint8_t>>{{16, 26}}));
    const RackRegisterMap hbbu = RackRegisterMap::LoadType("ORV3_HPR_BBU");
    EXPECT_EQ(hbbu.unixTimeRegister, 101);
}

TEST(RackOrv3Map, FixedPointFormatsFollowRackmonScaling)
{
    RackRegisterSpec t;
    t.format = RackRegisterFormat::Float;
    t.precision = 7;
    t.isSigned = true;
    // -5.5 deg C at 2^-7: -704, two's complement 0xFD40.
    EXPECT_EQ(t.Encode(-5.5), std::vector<uint16_t>{0xFD40});
    const uint16_t raw = 0xFD40;
    EXPECT_DOUBLE_EQ(t.Decode(&raw), -5.5);
    // HPR BBU temperature: raw x 0.1 - 273.15 (deci-Kelvin).
    RackRegisterSpec k;
    k.format = RackRegisterFormat::Float;
    k.scale = 0.1;
    k.shift = -273.15;
    EXPECT_EQ(k.Encode(25.05), std::vector<uint16_t>{2982}); // (25.05 + 273.15) / 0.1
    const uint16_t kr = 2982;
    EXPECT_NEAR(k.Decode(&kr), 25.05, 1e-9);
    // A 2-register integer is big-endian, first register high.
    RackRegisterSpec u;
    u.length = 2;
    EXPECT_EQ(u.Encode(0x12345678), (std::vector<uint16_t>{0x1234, 0x5678}));
    // Out of range values clamp, they do not wrap.
    RackRegisterSpec p;
    p.format = RackRegisterFormat::Float;
    p.precision = 3;
    EXPECT_EQ(p.Encode(1e9), std::vector<uint16_t>{0xFFFF});
    EXPECT_EQ(p.Encode(-3), std::vector<uint16_t>{0});
    const uint16_t str[] = {0x4543, 0x4431, 0x3500, 0x0000};
    EXPECT_EQ(RackRegisterSpec::DecodeString(str, 4), "ECD15");
}

TEST(RackOrv3Map, InvalidMapsAreRefusedWithAReason)
{
    const std::string head = "device X\nbaud 19200\nprobe 0\n";
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"", "no 'device' line"},
        {"baud 19200\n", "t:1: the first directive must be 'device"},
        {"device X\nreg 0 1 integer RO A\n", "no 'baud' line"},
        {"device X\nbaud 19200\n", "no registers"},
        {head + "reg 0 1 integr RO A\n", "t:4: unknown format 'integr'"},
        {head + "reg 0 1 integer RX A\n", "t:4: unknown access 'RX'"},
        {head + "reg 0 0 integer RO A\n", "t:4: bad length '0'"},
        {head + "reg 0 126 string RO A\n", "t:4: bad length '126'"},
        {head + "reg 65535 2 integer RO A\n", "t:4: bad length"},
        {head + "reg 0 5 integer RO A\n", "at most 4 registers"},
        {head + "reg -1 1 integer RO A\n", "t:4: bad register address '-1'"},
        {head + "reg 0 2 integer RO A\nreg 1 1 integer RO B\n", "A (0, 2) and B (1) overlap"},
        {head + "reg 0 1 integer RO A\nreg 1 1 integer RO A\n", "t:5: register name A used twice"},
        {head + "reg 0 1 integer RO A\n  bit 0 X\n", "t:5: 'bit' must follow a flags register"},
        {head + "reg 0 1 flags RO A\n  bit 16 X\n", "t:5: expected 'bit <0..15> <name>'"},
        {head + "reg 0 1 flags RO A\n  bit 1 X\n  bit 1 Y\n", "t:6: bit 1 of A named twice"},
        {head + "reg 0 1 float RO A precision=32\n", "precision must be 0..31"},
        {head + "reg 0 1 float RO A scale=0\n", "scale must be a non-zero number"},
        {head + "reg 0 1 integer RO A precision=3\n", "option 'precision=3' is not valid"},
        {head + "reg 0 1 integer WP A\n", "WP registers need a 'write_enable' line"},
        {head + "reg 0 1 integer RO A\nwrite_enable 0 0\n", "must be an RW register"},
        {head + "reg 0 1 integer RO A\nunix_time 0 3600\n", "must be a writable 2-register"},
        {"device X\nbaud 19200\nprobe 9\nreg 0 1 integer RO A\n", "probe register 9 is not"},
        {head + "range 10 5\nreg 0 1 integer RO A\n", "t:4: expected 'range <first> <last>'"},
        {head + "range 0 5\nreg 0 1 integer RO A\n", "t:4: expected 'range"},
        {head + "parity mark\n", "t:4: expected 'parity even|odd|none'"},
        {head + "baud 1e5\n", "t:4: expected 'baud"},
        {head + "frobnicate 1\n", "t:4: unknown directive 'frobnicate'"},
        {"device X Y\n", "t:1: expected 'device <TYPE>'"},
    };
    for (const auto& [text, why] : bad)
    {
        RackRegisterMap m;
        std::string error;
        EXPECT_FALSE(RackRegisterMap::Parse(text, "t", m, error)) << text;
        EXPECT_NE(error.find(why), std::string::npos) << "got: " << error << "\nwant: " << why;
    }
    RackRegisterMap m;
    std::string error;
    EXPECT_TRUE(RackRegisterMap::Parse(head + "reg 0 1 integer RO A # comment\n", "t", m, error))
        << error;
    EXPECT_FALSE(RackRegisterMap::Load("/nonexistent/x.map", m, error));
    EXPECT_NE(error.find("cannot open"), std::string::npos);
}

// A user map with fewer registers and other units works: the device shows what it has.
TEST(RackOrv3Map, UserMapWithOtherUnitsIsHonoured)
{
    const std::string text = "device MY_PSU\nbaud 19200\nprobe 0\n"
                             "reg 0 1 integer RO PSU_Output_Voltage unit=mV\n"
                             "reg 1 2 integer RO PSU_Output_Power unit=mW\n";
    RackRegisterMap map;
    std::string error;
    ASSERT_TRUE(RackRegisterMap::Parse(text, "user", map, error)) << error;
    Ptr<RackElectricalModel> power = CreateObject<RackElectricalModel>();
    power->AddPsuShelf(2);
    Ptr<RackConstantLoad> load = CreateObject<RackConstantLoad>();
    load->SetAttribute("Power", DoubleValue(1000));
    power->SetLoadProfile(load);
    Ptr<RackPsu> psu = CreateObject<RackPsu>();
    psu->SetMap(map);
    psu->Bind(power, 0, 0, 1);
    const auto r = Regs(psu, 0, 3);
    EXPECT_EQ(r[0], 51000) << "51 V in millivolts";
    EXPECT_EQ((uint32_t(r[1]) << 16) | r[2], 500000u) << "half of 1000 W, in milliwatts";
    std::vector<uint16_t> out;
    EXPECT_EQ(psu->ReadHoldingRegisters(2, 2, out), ModbusExceptionCode::IllegalDataAddress);
    Simulator::Destroy();
}

TEST(RackOrv3Addressing, PinsGiveTheRackmonAddresses)
{
    // rackmon2 DESIGN.md: T1T0 R2R1R0 D2D1D0, PSU T = 11, BBU T = 01.
    EXPECT_EQ(RackAddressing::Orv3Psu(1, 0), 200);
    EXPECT_EQ(RackAddressing::Orv3Psu(1, 5), 205);
    EXPECT_EQ(RackAddressing::Orv3Psu(5, 0), 232);
    EXPECT_EQ(RackAddressing::Orv3Psu(0, 0), 0xC0);
    EXPECT_EQ(RackAddressing::Orv3Bbu(0, 0), 64);
    EXPECT_EQ(RackAddressing::Orv3Bbu(4, 5), 101);
    // Ventura2 HPR rack: PSUs 0x90-95, 0x9A-9F, 0xAA-AF, 0xBA-BF; PMMs 0x20-0x23 and
    // 0x10-0x13; BBUs 0x30-35, 0x3A-3F, 0x5A-5F, 0x6A-6F.
    EXPECT_EQ(RackAddressing::HprPsu(0, 0), 0x90);
    EXPECT_EQ(RackAddressing::HprPsu(3, 5), 0xBF);
    EXPECT_EQ(RackAddressing::HprBbu(2, 0), 0x5A);
    EXPECT_EQ(RackAddressing::HprPmmPsu(3), 0x23);
    EXPECT_EQ(RackAddressing::HprPmmBbu(0), 0x10);
    // Every address the helper builds is one the shipped maps' ranges cover.
    RackHelper h;
    for (bool hpr : {false, true})
    {
        Rack r = h.Build(NoBmc(hpr));
        for (std::size_t i = 0; i < r.devices.size(); ++i)
        {
            EXPECT_TRUE(r.devices[i]->GetMap().Covers(r.slaves[i]->GetAddress()))
                << r.devices[i]->GetMap().name << " at " << int(r.slaves[i]->GetAddress());
        }
        Simulator::Destroy();
    }
}

// ---- electrical model through the registers -------------------------------------------------

namespace
{
struct PsuReading
{
    double v, i, ishare, p, pin;
};

/// Decodes the PSU's output registers with the ORv3 map's scaling (rackmon2:
/// V 2^-10, I 2^-6, P 2^-3, input power 2^-3), written out here from the note.
PsuReading
ReadPsu(Ptr<RackDevice> d)
{
    const auto r = Regs(d, 79, 9);
    return {r[0] / 1024.0, r[1] / 64.0, r[2] / 64.0, r[3] / 8.0, r[8] / 8.0};
}
} // namespace

TEST(RackOrv3Psu, OutputPowerIsVoltsTimesAmpsAndTheShelvesShareTheLoad)
{
    RackHelper h;
    Rack r = h.Build(NoBmc());
    Ptr<RackConstantLoad> load = CreateObject<RackConstantLoad>();
    load->SetAttribute("Power", DoubleValue(12000));
    r.power->SetLoadProfile(load);
    At(Seconds(1), [&]() {
        double sum = 0;
        for (auto& p : r.psus)
        {
            const PsuReading x = ReadPsu(p);
            EXPECT_NEAR(x.v, 51.0, 1.0 / 1024);
            // 12 PSUs on one busbar share 12 kW: 1 kW each, 1000 / 51 A.
            EXPECT_NEAR(x.i, 1000.0 / 51, 1.0 / 64);
            EXPECT_NEAR(x.ishare, x.i, 1.0 / 64);
            EXPECT_NEAR(x.p, 1000.0, 1.0 / 8);
            // P = V x I within the registers' quantisation.
            EXPECT_NEAR(x.p, x.v * x.i, 0.125 + 51.0 / 64 + 20.0 / 1024);
            EXPECT_GT(x.pin, x.p) << "input exceeds output by the losses";
            EXPECT_LT(x.pin, x.p / 0.9);
            sum += x.p;
        }
        EXPECT_NEAR(sum, 12000, 12 * 0.125);
    });
    Simulator::Run();
    Simulator::Destroy();
}

TEST(RackOrv3Psu, ALoadStepChangesEveryShare)
{
    RackHelper h;
    Rack r = h.Build(NoBmc());
    Ptr<RackStepLoad> load = CreateObject<RackStepLoad>();
    load->SetAttribute("InitialPower", DoubleValue(6000));
    load->AddStep(Seconds(10), 18000);
    r.power->SetLoadProfile(load);
    std::vector<double> before;
    At(Seconds(5), [&]() {
        for (auto& p : r.psus)
        {
            before.push_back(ReadPsu(p).i);
        }
    });
    At(Seconds(15), [&]() {
        for (std::size_t k = 0; k < r.psus.size(); ++k)
        {
            const double after = ReadPsu(r.psus[k]).i;
            EXPECT_NEAR(before[k], 6000.0 / 12 / 51, 1.0 / 64);
            EXPECT_NEAR(after, 18000.0 / 12 / 51, 1.0 / 64);
        }
    });
    Simulator::Run();
    ASSERT_EQ(before.size(), 12u);
    Simulator::Destroy();
}

TEST(RackOrv3Psu, AFailedPsuMovesItsShareAndLatchesItsFaultBits)
{
    RackHelper h;
    Rack r = h.Build(NoBmc());
    Ptr<RackConstantLoad> load = CreateObject<RackConstantLoad>();
    load->SetAttribute("Power", DoubleValue(11000));
    r.power->SetLoadProfile(load);
    Ptr<RackDevice> bad = r.psus[2];
    std::vector<std::string> faults;
    r.power->TraceConnectWithoutContext(
        "Fault",
        MakeCallback(+[](std::vector<std::string>* v, const std::string& f, uint32_t, uint32_t,
                        bool on) { v->push_back(f + (on ? "+" : "-")); })
            .Bind(&faults));
    At(Seconds(1), [&]() {
        EXPECT_EQ(Reg(bad, 60), 0) << "no alarm yet";
        r.power->SetPsuFailed(0, 2, true);
    });
    At(Seconds(2), [&]() {
        for (std::size_t k = 0; k < r.psus.size(); ++k)
        {
            const PsuReading x = ReadPsu(r.psus[k]);
            // The other 11 carry 11 kW: 1 kW each.
            EXPECT_NEAR(x.p, k == 2 ? 0.0 : 1000.0, 0.125) << k;
        }
        // General_Alarm: DCDC (b1) and DCDC_Converter_Failure (b9); DCDC_Alarm: DCDC_Fail (b8).
        EXPECT_TRUE(Bit(bad, 60, 1));
        EXPECT_TRUE(Bit(bad, 60, 9));
        EXPECT_TRUE(Bit(bad, 62, 8));
        EXPECT_EQ(Reg(bad, 90), 1) << "PSU_Fault_Counter";
        EXPECT_EQ(Reg(r.psus[3], 60), 0) << "a healthy neighbour shows nothing";
        r.power->SetPsuFailed(0, 2, false);
    });
    At(Seconds(3), [&]() {
        EXPECT_NEAR(ReadPsu(bad).p, 11000.0 / 12, 0.125) << "back in the share";
        EXPECT_TRUE(Bit(bad, 62, 8)) << "latched until cleared";
        // PSU_Setting_Register b14 Clear_Faults_Latch (RW: no write enable needed).
        const uint16_t setting = Reg(bad, 94);
        EXPECT_EQ(bad->WriteHoldingRegisters(94, {uint16_t(setting | 0x4000)}),
                  ModbusExceptionCode::None);
        EXPECT_EQ(Reg(bad, 62), 0);
        EXPECT_EQ(Reg(bad, 60), 0);
        EXPECT_EQ(Reg(bad, 94), setting) << "the clear bit reads back 0";
    });
    Simulator::Run();
    EXPECT_EQ(faults, (std::vector<std::string>{"PsuFailure+", "PsuFailure-"}));
    Simulator::Destroy();
}

TEST(RackOrv3Psu, AFanFailureHeatsThePsuAndRaisesItsAlarms)
{
    RackHelper h;
    h.SetElectricalAttribute("ThermalTimeConstant", TimeValue(Seconds(10)));
    Rack r = h.Build(NoBmc());
    Ptr<RackConstantLoad> load = CreateObject<RackConstantLoad>();
    load->SetAttribute("Power", DoubleValue(24000)); // 2 kW per PSU
    r.power->SetLoadProfile(load);
    Ptr<RackDevice> p = r.psus[0];
    auto outlet = [&]() { return int16_t(Reg(p, 70)) / 128.0; };
    auto lossOf = [&]() {
        const PsuReading x = ReadPsu(p);
        return x.pin - x.p;
    };
    double normal = 0;
    At(Seconds(200), [&]() {
        // 20 time constants: at the steady state 25 + 0.15 K/W x losses.
        normal = outlet();
        EXPECT_NEAR(normal, 25 + 0.15 * lossOf(), 0.1);
        EXPECT_GT(Reg(p, 67), 0) << "fan turning";
        r.power->SetPsuFanFailed(0, 0, true);
    });
    At(Seconds(400), [&]() {
        EXPECT_EQ(Reg(p, 67), 0) << "PSU_RPM_Fan0";
        EXPECT_NEAR(outlet(), 25 + 3 * 0.15 * lossOf(), 0.1) << "thermal resistance x 3";
        EXPECT_GT(outlet(), normal + 10);
        EXPECT_TRUE(Bit(p, 63, 8)) << "Temperature_Alarm Fan_Failure";
        EXPECT_TRUE(Bit(p, 60, 11)) << "General Fan_Alarm";
        EXPECT_GE(int16_t(Reg(p, 71)) / 128.0, outlet()) << "PSU_Max_Temp";
    });
    Simulator::Run();
    Simulator::Destroy();
}

// ---- BBUs -----------------------------------------------------------------------------------

TEST(RackOrv3Bbu, AcLossMakesTheBbusCarryTheLoadAndSayItInTheirRegisters)
{
    RackHelper h;
    Rack r = h.Build(NoBmc());
    const double loadW = 9000;
    Ptr<RackConstantLoad> load = CreateObject<RackConstantLoad>();
    load->SetAttribute("Power", DoubleValue(loadW));
    r.power->SetLoadProfile(load);
    std::vector<std::tuple<uint32_t, bool, bool>> modes;
    r.power->TraceConnectWithoutContext(
        "BbuMode",
        MakeCallback(+[](std::vector<std::tuple<uint32_t, bool, bool>>* v, uint32_t b, bool c,
                        bool d) { v->emplace_back(b, c, d); })
            .Bind(&modes));
    Ptr<RackDevice> b = r.bbus[0];
    double socBefore = 0;
    At(Seconds(10), [&]() {
        EXPECT_EQ(Reg(b, 126), 100) << "RSOC: full";
        EXPECT_TRUE(Bit(b, 108, 5)) << "Fully_Charged";
        EXPECT_EQ(Reg(b, 107) & 3, 0) << "neither charging nor discharging";
        EXPECT_EQ(Reg(b, 167), 0) << "no discharge event yet";
        socBefore = Reg(b, 131) / 1000.0; // Remaining_Capacity, mAh
        r.power->SetRackAcLoss(true);
    });
    At(Seconds(70), [&]() {
        EXPECT_TRUE(Bit(b, 107, 1)) << "BBU_Mode Discharge";
        EXPECT_TRUE(Bit(b, 108, 6)) << "Battery_Status Discharging";
        EXPECT_EQ(Reg(b, 167), 1) << "Count_of_Discharge_Events";
        // Pack: 11 cells at 3.3 + 0.85 x SoC V; six BBUs share 9 kW; current in 10 mA units,
        // negative while discharging.
        const double packV = Reg(b, 128) / 1000.0;
        const double amps = int16_t(Reg(b, 129)) / 100.0;
        EXPECT_NEAR(packV, 11 * (3.3 + 0.85 * Reg(b, 126) / 100.0), 11 * 0.85 * 0.006);
        EXPECT_NEAR(amps, -loadW / 6 / packV, 0.02);
        EXPECT_NEAR(Reg(b, 146) / 100.0, -amps, 0.02) << "Discharge_Current";
        // 60 s at about that current out of 6 Ah.
        const double used = socBefore - Reg(b, 131) / 1000.0;
        EXPECT_NEAR(used, -amps * 60 / 3600, 0.01);
        EXPECT_NEAR(Reg(b, 147) / 1000.0, 48.0, 0.001) << "Shelf_Busbar_Voltage on backup";
        // Run time to empty at this rate, minutes.
        EXPECT_NEAR(Reg(b, 133), Reg(b, 131) / 1000.0 / -amps * 60, 1.0);
        // The PSUs: AC_Not_OK (PFC_Alarm b8), General PFC (b0), no output, no input.
        for (auto& p : r.psus)
        {
            EXPECT_TRUE(Bit(p, 61, 8));
            EXPECT_TRUE(Bit(p, 60, 0));
            EXPECT_EQ(Reg(p, 82), 0);
            EXPECT_EQ(Reg(p, 88), 0) << "no AC input voltage";
            EXPECT_EQ(Reg(p, 57), 1) << "AC_Outage_Counter";
        }
        r.power->SetRackAcLoss(false);
    });
    At(Seconds(80), [&]() {
        EXPECT_TRUE(Bit(b, 107, 0)) << "recharging";
        EXPECT_FALSE(Bit(b, 107, 1));
        EXPECT_GT(int16_t(Reg(b, 129)), 0) << "current positive while charging";
        EXPECT_FALSE(Bit(r.psus[0], 61, 8)) << "AC back";
        // The PSUs now carry load plus six chargers at 1.5 A each.
        const double packV = Reg(b, 128) / 1000.0;
        double sum = 0;
        for (auto& p : r.psus)
        {
            sum += ReadPsu(p).p;
        }
        EXPECT_NEAR(sum, loadW + 6 * 1.5 * packV, 12 * 0.125 + 6 * 1.5 * 0.011);
    });
    Simulator::Run();
    ASSERT_EQ(modes.size(), 12u) << "6 start discharging, 6 switch to charging";
    EXPECT_EQ(modes[0], std::make_tuple(0u, false, true));
    EXPECT_EQ(modes[6], std::make_tuple(0u, true, false));
    Simulator::Destroy();
}

TEST(RackOrv3Bbu, EmptyBbusDropTheBusbar)
{
    RackHelper h;
    h.SetElectricalAttribute("BbuCapacity", DoubleValue(0.1)); // a 0.1 Ah pack empties quickly
    Rack r = h.Build(NoBmc());
    Ptr<RackConstantLoad> load = CreateObject<RackConstantLoad>();
    load->SetAttribute("Power", DoubleValue(12000));
    r.power->SetLoadProfile(load);
    r.power->SetRackAcLoss(true);
    At(Seconds(120), [&]() {
        // 2 kW per pack at about 40 V is about 50 A: 0.1 Ah lasts some 7 s.
        EXPECT_EQ(r.power->GetBusbarVoltage(), 0.0);
        EXPECT_EQ(r.power->GetUnservedPower(), 12000.0);
        EXPECT_EQ(Reg(r.bbus[0], 126), 0);
        EXPECT_TRUE(Bit(r.bbus[0], 108, 4)) << "Fully_Discharged";
        EXPECT_TRUE(Bit(r.bbus[0], 108, 11)) << "Terminate_Discharge_Alarm";
    });
    Simulator::Run();
    Simulator::Destroy();
}

// ---- writes over the bus ---------------------------------------------------------------------

TEST(RackOrv3Psu, ProtectedWritesAreRefusedUntilWriteEnable)
{
    RackHelper h;
    RackConfig c = NoBmc();
    c.psuShelves = 1;
    c.bbuShelves = 0;
    Rack r = h.Build(c);
    std::vector<ModbusTransaction> res;
    auto cb = MakeCallback(+[](std::vector<ModbusTransaction>* v, const ModbusTransaction& t) {
                  v->push_back(t);
              }).Bind(&res);
    const uint8_t a = 200;
    r.master->Submit(a, ModbusRequest::WriteSingleRegister(96, 50), cb);     // WP, locked
    r.master->Submit(a, ModbusRequest::ReadHoldingRegisters(94, 1), cb);     // setting
    r.master->Submit(a, ModbusRequest::WriteSingleRegister(79, 1), cb);      // RO voltage
    r.master->Submit(a, ModbusRequest::WriteSingleRegister(58, 1), cb);      // a gap
    r.master->Submit(a, ModbusRequest::WriteMultipleRegisters(95, {1, 50}), cb); // WP pair
    Simulator::Schedule(Seconds(1), [&]() {
        const uint16_t setting = res.at(1).response.registers.at(0);
        r.master->Submit(a, ModbusRequest::WriteSingleRegister(94, setting | 1), cb);
        r.master->Submit(a, ModbusRequest::WriteSingleRegister(96, 50), cb);
        r.master->Submit(a, ModbusRequest::ReadHoldingRegisters(96, 1), cb);
        r.master->Submit(a, ModbusRequest::WriteSingleRegister(94, setting), cb); // lock again
        r.master->Submit(a, ModbusRequest::WriteSingleRegister(96, 0), cb);
    });
    Simulator::Run();
    ASSERT_EQ(res.size(), 10u);
    EXPECT_EQ(res[0].status, ModbusResultStatus::Exception);
    EXPECT_EQ(res[0].response.exception, ModbusExceptionCode::IllegalFunction);
    EXPECT_EQ(res[1].response.registers.at(0) & 1, 0) << "write enable off at power-up";
    EXPECT_EQ(res[2].response.exception, ModbusExceptionCode::IllegalDataAddress);
    EXPECT_EQ(res[3].response.exception, ModbusExceptionCode::IllegalDataAddress);
    EXPECT_EQ(res[4].response.exception, ModbusExceptionCode::IllegalFunction);
    EXPECT_EQ(res[5].status, ModbusResultStatus::Ok);
    EXPECT_EQ(res[6].status, ModbusResultStatus::Ok);
    EXPECT_EQ(res[7].response.registers.at(0), 50);
    EXPECT_EQ(res[8].status, ModbusResultStatus::Ok);
    EXPECT_EQ(res[9].response.exception, ModbusExceptionCode::IllegalFunction);
    EXPECT_EQ(r.psus[0]->GetRaw(95), 1) << "the refused pair changed nothing";
    Simulator::Destroy();
}

// The fabric feeds host load through a callback; the PSUs follow it at every read.
TEST(RackOrv3Psu, ACallbackLoadIsFollowedAtEveryRead)
{
    RackHelper h;
    RackConfig c = NoBmc();
    c.psuShelves = 1;
    Rack r = h.Build(c);
    Ptr<RackCallbackLoad> load = CreateObject<RackCallbackLoad>();
    load->SetFunction(MakeCallback(+[](Time t) { return 600.0 * t.GetSeconds(); }));
    r.power->SetLoadProfile(load);
    for (double s : {1.0, 2.5, 7.0})
    {
        At(Seconds(s), [&r, s]() {
            // 6 PSUs, all at 600 W x t / 6. (BBUs are full: no charging power.)
            EXPECT_NEAR(ReadPsu(r.psus[0]).p, 100.0 * s, 0.125) << s;
        });
    }
    // A callback that returns nonsense is not fatal: logged and taken as no load.
    At(Seconds(8), [&]() {
        load->SetFunction(MakeCallback(+[](Time) { return -1.0; }));
        EXPECT_EQ(ReadPsu(r.psus[0]).p, 0.0);
    });
    Simulator::Run();
    Simulator::Destroy();
}

// Register reads, writes and refused writes are traced with the slave's address.
TEST(RackOrv3Psu, ReadsWritesAndRefusalsAreTraced)
{
    RackHelper h;
    RackConfig c = NoBmc();
    c.psuShelves = 1;
    c.bbuShelves = 0;
    Rack r = h.Build(c);
    std::vector<std::string> events;
    Ptr<RackDevice> d = r.psus[1];
    d->TraceConnectWithoutContext(
        "RegistersRead",
        MakeCallback(+[](std::vector<std::string>* v, uint8_t a, uint16_t s, uint16_t n) {
            v->push_back("R " + std::to_string(a) + " " + std::to_string(s) + "+" +
                         std::to_string(n));
        }).Bind(&events));
    d->TraceConnectWithoutContext(
        "RegistersWritten",
        MakeCallback(+[](std::vector<std::string>* v, uint8_t a, uint16_t s, uint16_t n) {
            v->push_back("W " + std::to_string(a) + " " + std::to_string(s) + "+" +
                         std::to_string(n));
        }).Bind(&events));
    d->TraceConnectWithoutContext(
        "WriteRefused",
        MakeCallback(+[](std::vector<std::string>* v, uint8_t a, uint16_t s, uint16_t n,
                        uint8_t e) {
            v->push_back("X " + std::to_string(a) + " " + std::to_string(s) + "+" +
                         std::to_string(n) + " " + std::to_string(e));
        }).Bind(&events));
    r.master->Submit(201, ModbusRequest::ReadHoldingRegisters(79, 4));
    r.master->Submit(201, ModbusRequest::WriteMultipleRegisters(98, {0x6B49, 0xD200}));
    r.master->Submit(201, ModbusRequest::WriteSingleRegister(97, 1));
    r.master->Submit(201, ModbusRequest::ReadHoldingRegisters(57, 2)); // 58 is a gap
    Simulator::Run();
    EXPECT_EQ(events, (std::vector<std::string>{"R 201 79+4", "W 201 98+2", "X 201 97+1 1"}));
    Simulator::Destroy();
}
