// The BMC poller on a whole rack: discovery, poll-cycle wire time against the character and gap
// arithmetic (computed here from frame sizes, independently of the model), values against the
// electrical model, dead and chattering devices.
#include "ib-test-packets.h"

#include "helpers/rack/rack-helper.h"
#include "helpers/trace/modbus-pcap-writer.h"

#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>

using namespace ns3;
using cnuas_test::RunCommand;
using cnuas_test::TsharkFieldRows;

namespace
{
using Span = std::pair<uint16_t, uint16_t>;

// Spans of one monitoring pass, derived by hand from the register tables of the design note
// orv3-register-maps.md (contiguous registers merged, at most 120). The ORv3 PSU's are the
// four reads rackmon2 was measured to make (rack-modbus-orv3.md §2.1).
const std::vector<Span> kOrv3Psu = {{0, 58}, {60, 5}, {67, 24}, {92, 18}};
const std::vector<Span> kOrv3Bbu = {{0, 32},
                                    {48, 2},
                                    {52, 29},
                                    {104, 16},
                                    {121, 48},
                                    {179, 45},
                                    {288, 9},
                                    {298, 11},
                                    {310, 4}};
// HPR PSU: 60-99 run on without a gap (the Unix time at 90 follows 89), 104 is a gap.
const std::vector<Span> kHprPsu = {{0, 58}, {60, 40}, {101, 3}, {105, 18}, {124, 2}};
// HPR PMM: register 91 is a gap.
const std::vector<Span> kHprPmm = {{0, 60}, {76, 15}, {92, 16}, {112, 13}};

struct Log
{
    std::vector<ModbusTransaction> t;
    std::vector<std::tuple<uint64_t, Time, Time>> cycles;
    std::vector<std::pair<Time, uint8_t>> dormant;
    std::vector<std::pair<Time, uint8_t>> revived;
    std::vector<std::pair<uint8_t, std::string>> changed;
};

void
Attach(Rack& r, Log& log)
{
    r.master->TraceConnectWithoutContext(
        "Transaction",
        MakeCallback(+[](Log* l, const ModbusTransaction& t) { l->t.push_back(t); }).Bind(&log));
    r.bmc->TraceConnectWithoutContext(
        "MonitorCycle",
        MakeCallback(+[](Log* l, uint64_t c, Time s, Time e) { l->cycles.emplace_back(c, s, e); })
            .Bind(&log));
    r.bmc->TraceConnectWithoutContext(
        "Dormant",
        MakeCallback(+[](Log* l, uint8_t a, const std::string&) {
            l->dormant.emplace_back(Simulator::Now(), a);
        }).Bind(&log));
    r.bmc->TraceConnectWithoutContext(
        "Revived",
        MakeCallback(+[](Log* l, uint8_t a, const std::string&) {
            l->revived.emplace_back(Simulator::Now(), a);
        }).Bind(&log));
    r.bmc->TraceConnectWithoutContext(
        "Changed",
        MakeCallback(+[](Log* l, uint8_t a, const std::string& n) {
            l->changed.emplace_back(a, n);
        }).Bind(&log));
}

/**
 * Measures the second monitoring cycle (the first after discovery carries the Unix-time writes)
 * and compares it with the wire arithmetic: per transaction an 8-character FC 03 request, the
 * propagation delay, the device's turnaround, a (5 + 2n)-character response, propagation, and
 * t3.5 before the master knows the response ended; between transactions the BMC's min_delay.
 */
void
CheckCycle(const RackConfig& c, uint32_t baud, const std::map<uint8_t, std::vector<Span>>& expect)
{
    struct Guard
    {
        ~Guard() { Simulator::Destroy(); } // also when an ASSERT returns early
    } guard;
    RackHelper h;
    h.SetBmcAttribute("MonitorInterval", TimeValue(Seconds(60)));
    Rack r = h.Build(c);
    Log log;
    Attach(r, log);
    Simulator::Stop(Seconds(200));
    Simulator::Run();
    ASSERT_GE(log.cycles.size(), 2u);
    const auto [n, start, end] = log.cycles[1];
    EXPECT_EQ(n, 2u);
    std::vector<ModbusTransaction> cyc;
    for (const auto& t : log.t)
    {
        if (t.submitted >= start && t.completed <= end)
        {
            cyc.push_back(t);
        }
    }
    // The transactions are exactly the expected span reads.
    std::multiset<std::tuple<uint8_t, uint16_t, uint16_t>> want;
    std::multiset<std::tuple<uint8_t, uint16_t, uint16_t>> got;
    for (const auto& [a, spans] : expect)
    {
        for (const auto& s : spans)
        {
            want.emplace(a, s.first, s.second);
        }
    }
    for (const auto& t : cyc)
    {
        EXPECT_EQ(t.status, ModbusResultStatus::Ok);
        EXPECT_EQ(t.request.function, 0x03);
        got.emplace(t.unit, t.request.address, t.request.quantity);
    }
    ASSERT_EQ(got, want);

    // Paper arithmetic, in double precision: 11-bit characters (8E1), t3.5 = 3.5 characters up
    // to 19200 baud and 1.75 ms above (Modbus over serial line v1.02 §2.5.1.1), 10 m of bus at
    // 5 ns/m, 3 ms device turnaround (longer than t3.5), 2 ms between transactions.
    const double ch = 11.0 / baud;
    const double t35 = baud > 19200 ? 1.75e-3 : 3.5 * ch;
    const double d = 10 * 5e-9;
    const double turnaround = std::max(3e-3, t35);
    double paper = 0;
    for (const auto& [a, spans] : expect)
    {
        for (const auto& s : spans)
        {
            paper += 8 * ch + d + turnaround + (5 + 2 * s.second) * ch + d + t35;
        }
    }
    paper += (cyc.size() - 1) * 2e-3;
    const double measured = (cyc.back().completed - cyc.front().requestStart).GetSeconds();
    std::cout << "[ cycle    ] " << cyc.size() << " transactions at " << baud
              << " 8E1: " << measured * 1e3 << " ms simulated, " << paper * 1e3
              << " ms by the arithmetic\n";
    EXPECT_NEAR(measured, paper, ch) << "within one character time";
    EXPECT_EQ(r.bus->GetContentionCount(), 0u);
}
} // namespace

TEST(RackBmc, PollCycleOfAFullOrv3RackAt19200IsTheWireTime)
{
    RackConfig c; // 2 PSU shelves x 6, 1 BBU shelf x 6
    std::map<uint8_t, std::vector<Span>> expect;
    for (uint8_t slot = 0; slot < 6; ++slot)
    {
        expect[0xC8 + slot] = kOrv3Psu;
        expect[0xE8 + slot] = kOrv3Psu;
        expect[0x40 + slot] = kOrv3Bbu;
    }
    CheckCycle(c, 19200, expect);
}

TEST(RackBmc, PollCycleOfAnHprShelfAt115200IsTheWireTime)
{
    RackConfig c;
    c.hpr = true;
    c.psuShelves = 1;
    c.bbuShelves = 0;
    std::map<uint8_t, std::vector<Span>> expect;
    for (uint8_t slot = 0; slot < 6; ++slot)
    {
        expect[0x90 + slot] = kHprPsu;
    }
    expect[0x20] = kHprPmm;
    CheckCycle(c, 115200, expect);
}

TEST(RackBmc, DiscoversTheRackAndReadsWhatTheElectricalModelSays)
{
    RackHelper h;
    h.SetBmcAttribute("MonitorInterval", TimeValue(Seconds(30)));
    Rack r = h.Build(RackConfig());
    Ptr<RackStepLoad> load = CreateObject<RackStepLoad>();
    load->SetAttribute("InitialPower", DoubleValue(6000));
    load->AddStep(Seconds(50), 18000);
    r.power->SetLoadProfile(load);
    Log log;
    Attach(r, log);
    std::vector<std::pair<uint8_t, std::string>> discovered;
    r.bmc->TraceConnectWithoutContext(
        "Discovered",
        MakeCallback(+[](std::vector<std::pair<uint8_t, std::string>>* v, uint8_t a,
                        const std::string& t) { v->emplace_back(a, t); })
            .Bind(&discovered));
    double wattsBefore = 0;
    std::size_t changedBefore = 0;
    Simulator::Schedule(Seconds(45), [&]() {
        const RackBmcDevice* d = r.bmc->GetDevice(0xC8);
        ASSERT_NE(d, nullptr);
        wattsBefore = d->Find("PSU_Output_Power")->value;
        changedBefore = log.changed.size();
    });
    Simulator::Stop(Seconds(100));
    Simulator::Run();

    // Discovery: the 18 addresses the pins give, each once, in the first pass's order.
    std::set<uint8_t> want;
    for (uint8_t s = 0; s < 6; ++s)
    {
        want.insert({uint8_t(0x40 + s), uint8_t(0xC8 + s), uint8_t(0xE8 + s)});
    }
    std::set<uint8_t> seen;
    for (const auto& [a, t] : discovered)
    {
        EXPECT_TRUE(seen.insert(a).second) << "discovered twice: " << int(a);
        EXPECT_EQ(t, a < 0x80 ? "ORV3_BBU" : "ORV3_PSU");
    }
    EXPECT_EQ(seen, want);
    EXPECT_TRUE(r.bmc->IsScanComplete());
    // rackmon2's full scan: pass 1 probes all 30 candidates, passes 2 and 3 the 12 unanswered.
    EXPECT_EQ(r.bmc->GetCounters().probes, 30u + 12u + 12u);
    EXPECT_EQ(r.bmc->GetCounters().probeAnswers, 18u);
    ASSERT_GE(log.cycles.size(), 2u);
    std::cout << "[ orv3 rack] start-up scan " << std::get<1>(log.cycles[0]).GetSeconds()
              << " s; first reload (register by register) "
              << (std::get<2>(log.cycles[0]) - std::get<1>(log.cycles[0])).GetSeconds() << " s\n";

    const auto inv = r.bmc->GetInventory();
    ASSERT_EQ(inv.size(), 18u);
    for (const auto& d : inv)
    {
        EXPECT_FALSE(d.dormant);
        EXPECT_GT(d.lastSeen, Seconds(60));
        for (const auto& reg : d.registers)
        {
            EXPECT_TRUE(reg.valid) << d.name << " " << reg.name;
        }
        // The device's clock was set by the BMC's Unix-time write (FC 10) and runs on.
        Ptr<RackDevice> dev = r.Find(d.address);
        const uint16_t ut = d.type == "ORV3_PSU" ? 98 : 302;
        const uint32_t deviceTime = (uint32_t(dev->GetRaw(ut)) << 16) | dev->GetRaw(ut + 1);
        EXPECT_NEAR(double(deviceTime), double(r.bmc->GetUnixTime()), 31.0) << d.name;
        EXPECT_GE(deviceTime, 1800000000u);
    }
    const RackBmcDevice* psu = r.bmc->GetDevice(0xCA);
    ASSERT_NE(psu, nullptr);
    EXPECT_EQ(psu->name, "ORV3_PSU_CA");
    EXPECT_EQ(psu->Find("PSU_MFR_Model")->text, "ECD15020066");
    const RackBmcRegister* v = psu->Find("PSU_Output_Voltage");
    EXPECT_DOUBLE_EQ(v->value, 51.0);
    EXPECT_EQ(v->unit, "V");
    const RackBmcRegister* comm = psu->Find("Communication_Alarm_Status_Register");
    EXPECT_EQ(comm->flagsSet, std::vector<std::string>{"Modbus_Active"});
    // The load step at 50 s: 6 kW, then 18 kW over 12 PSUs.
    EXPECT_NEAR(wattsBefore, 6000.0 / 12, 0.125);
    const RackBmcRegister* p = psu->Find("PSU_Output_Power");
    EXPECT_NEAR(p->value, 18000.0 / 12, 0.125);
    EXPECT_EQ(p->unit, "W");
    EXPECT_GT(p->updated, Seconds(50));
    std::set<uint8_t> powerChanged;
    for (std::size_t i = changedBefore; i < log.changed.size(); ++i)
    {
        if (log.changed[i].second == "PSU_Output_Power")
        {
            powerChanged.insert(log.changed[i].first);
        }
    }
    EXPECT_EQ(powerChanged.size(), 12u) << "every PSU's power changed after the step";
    const RackBmcDevice* bbu = r.bmc->GetDevice(0x43);
    ASSERT_NE(bbu, nullptr);
    EXPECT_EQ(bbu->Find("Relative_State_Of_Charge")->value, 100);
    EXPECT_EQ(bbu->Find("Battery_Voltage")->unit, "mV");
    Simulator::Destroy();
}

TEST(RackBmc, ADeadDeviceGoesDormantAndIsFoundAgainWhenItComesBack)
{
    RackHelper h;
    h.SetBmcAttribute("MonitorInterval", TimeValue(Seconds(10)));
    h.SetBmcAttribute("DormantReprobe", TimeValue(Seconds(30)));
    h.SetBmcAttribute("CommandRetries", UintegerValue(1));
    RackConfig c;
    c.psuShelves = 1;
    Rack r = h.Build(c);
    Log log;
    Attach(r, log);
    Ptr<RackDevice> victim = r.Find(0xC9);
    ASSERT_NE(victim, nullptr);
    Simulator::Schedule(Seconds(20), [&]() { victim->SetDead(true); });
    Simulator::Schedule(Seconds(100), [&]() { victim->SetDead(false); });
    bool dormantAt90 = false;
    Simulator::Schedule(Seconds(90), [&]() {
        dormantAt90 = r.bmc->GetDevice(0xC9)->dormant;
    });
    Simulator::Stop(Seconds(150));
    Simulator::Run();
    ASSERT_EQ(log.dormant.size(), 1u);
    EXPECT_EQ(log.dormant[0].second, 0xC9);
    EXPECT_GT(log.dormant[0].first, Seconds(20));
    EXPECT_LT(log.dormant[0].first, Seconds(60)) << "10 failed reads: about 3 cycles";
    EXPECT_TRUE(dormantAt90);
    ASSERT_EQ(log.revived.size(), 1u);
    EXPECT_EQ(log.revived[0].second, 0xC9);
    EXPECT_GT(log.revived[0].first, Seconds(100));
    EXPECT_LT(log.revived[0].first, Seconds(115)) << "found at the next monitor tick";
    const RackBmcDevice* d = r.bmc->GetDevice(0xC9);
    EXPECT_FALSE(d->dormant);
    EXPECT_GT(d->lastSeen, Seconds(100));
    EXPECT_GT(d->Find("PSU_Output_Voltage")->updated, Seconds(100));
    // No read of another device failed, and dormant reads were not attempted: the failures are
    // the victim's reads until it went dormant.
    EXPECT_EQ(r.bmc->GetCounters().readFailures, d->failures);
    EXPECT_EQ(d->failures, 10u);
    for (const auto& other : r.bmc->GetInventory())
    {
        if (other.address != 0xC9)
        {
            EXPECT_EQ(other.failures, 0u) << other.name;
        }
    }
    Simulator::Destroy();
}

TEST(RackBmc, AChatteringDeviceIsCountedNotFatal)
{
    RackHelper h;
    h.SetBmcAttribute("MonitorInterval", TimeValue(Seconds(5)));
    h.SetBmcAttribute("DormantFailures", UintegerValue(1000));
    Rack r = h.Build(RackConfig());
    Log log;
    Attach(r, log);
    Ptr<RackDevice> noisy = r.Find(0x41);
    noisy->AssignStreams(7);
    Simulator::Schedule(Seconds(20), [&]() { noisy->SetChattering(true); });
    Simulator::Schedule(Seconds(50), [&]() { noisy->SetChattering(false); });
    uint64_t readsAt60 = 0;
    uint64_t failuresAt60 = 0;
    Simulator::Schedule(Seconds(60), [&]() {
        readsAt60 = r.bmc->GetCounters().reads;
        failuresAt60 = r.bmc->GetCounters().readFailures;
    });
    Simulator::Stop(Seconds(80));
    Simulator::Run();
    EXPECT_GT(noisy->GetChatterBytes(), 100u);
    const auto& mc = r.master->GetCounters();
    const auto& fc = r.master->GetFramerCounters();
    std::cout << "[ chatter  ] " << noisy->GetChatterBytes() << " garbage bytes; master: "
              << mc.frameErrors << " frame errors, " << mc.noResponse << " timeouts, "
              << mc.retries << " retries, " << mc.unexpectedFrames << " unexpected frames; "
              << fc.badCrc << " bad CRC, " << fc.characterError << " character errors, "
              << r.bus->GetContentionCount() << " contentions; BMC read failures "
              << r.bmc->GetCounters().readFailures << "\n";
    // The garbage shows in the counters.
    EXPECT_GT(fc.badCrc + fc.characterError + fc.tooShort + fc.incomplete, 0u);
    uint64_t slaveErrors = 0;
    for (auto& s : r.slaves)
    {
        slaveErrors += s->GetDiagnostics().busCommunicationErrorCount;
    }
    EXPECT_GT(slaveErrors, 0u);
    EXPECT_EQ(r.bmc->GetInventory().size(), 18u) << "no phantom device";
    // After the chatter stopped, every device is read cleanly again.
    EXPECT_GT(failuresAt60, 0u) << "the chatter did cost reads";
    EXPECT_EQ(r.bmc->GetCounters().readFailures, failuresAt60);
    EXPECT_GE(r.bmc->GetCounters().reads - readsAt60, 2 * (12 * 4 + 6 * 9) + 0u);
    for (const auto& d : r.bmc->GetInventory())
    {
        EXPECT_FALSE(d.dormant);
        EXPECT_GT(d.lastSeen, Seconds(70)) << d.name;
    }
    Simulator::Destroy();
}

TEST(RackBmc, HprShelfControllerReportsItsModules)
{
    RackHelper h;
    RackConfig c;
    c.hpr = true;
    c.psuShelves = 1;
    c.bbuShelves = 1;
    c.bmc = false;
    Rack r = h.Build(c);
    ASSERT_EQ(r.pmms.size(), 2u);
    Ptr<RackPmm> pmm = r.pmms[0];
    std::vector<uint16_t> v;
    auto read = [&](uint16_t a) {
        EXPECT_EQ(pmm->ReadHoldingRegisters(a, 1, v), ModbusExceptionCode::None);
        return v.at(0);
    };
    EXPECT_EQ(read(87), 0x3F) << "Module_Present: 6 modules";
    EXPECT_EQ(read(90), 0x3F) << "Module_Planned";
    EXPECT_EQ(read(88), 0) << "no alert";
    EXPECT_EQ(read(113), 0x20) << "This_PMM_Modbus_Address";
    r.psus[4]->SetDead(true);
    r.power->SetPsuFailed(0, 1, true);
    EXPECT_EQ(read(87), 0x3F & ~(1 << 4)) << "module 5 no longer answers the PMM";
    EXPECT_EQ(read(88), 1 << 1) << "module 2 alerts";
    EXPECT_EQ(read(89) & 0x101, 0x101) << "Missing_Modules and Module_Alerts";
    EXPECT_EQ(read(93), 1 << 5) << "Module5_Modbus_Fault";
    EXPECT_EQ(r.pmms[1]->GetMap().name, "ORV3_HPR_PMM_BBU");
    Simulator::Destroy();
}

// A BMC that also knows the HPR maps probes their addresses at 115200 on a 19200 segment, as
// rackmon switches rates while it scans: the ORv3 devices hear the fast probes as garbage
// (counted, not answered) and are still all found at 19200.
TEST(RackBmc, ScanningAtTwoRatesFindsOnlyTheDevicesThatAnswer)
{
    RackHelper h;
    Rack r = h.Build(RackConfig());
    std::vector<uint32_t> rates;
    r.master->TraceConnectWithoutContext(
        "Transaction",
        MakeCallback(+[](std::vector<uint32_t>* v, Rack* rk, const ModbusTransaction&) {
            v->push_back(rk->master->GetDevice()->GetFormat().baudRate);
        }).Bind(&rates, &r));
    for (const char* t : {"ORV3_HPR_PSU", "ORV3_HPR_BBU"})
    {
        r.bmc->AddMap(RackRegisterMap::LoadType(t));
    }
    Simulator::Stop(Seconds(120));
    Simulator::Run();
    EXPECT_EQ(r.bmc->GetInventory().size(), 18u);
    for (const auto& d : r.bmc->GetInventory())
    {
        EXPECT_TRUE(d.type == "ORV3_PSU" || d.type == "ORV3_BBU") << d.name;
    }
    EXPECT_GT(std::count(rates.begin(), rates.end(), 115200u), 100);
    EXPECT_GT(std::count(rates.begin(), rates.end(), 19200u), 100);
    uint64_t mismatched = 0;
    for (auto& s : r.slaves)
    {
        mismatched += s->GetDevice()->GetCounters().rxFormatMismatch;
    }
    EXPECT_GT(mismatched, 0u) << "the 115200 probes reached the 19200 devices as garbage";
    EXPECT_EQ(r.bmc->GetCounters().readFailures, 0u);
    Simulator::Destroy();
}

// Settings that cannot work are refused with a message, before anything runs.
TEST(RackBmcDeathTest, InvalidSettingsAreRefusedWithAReason)
{
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    EXPECT_DEATH(
        {
            Ptr<RackElectricalModel> m = CreateObject<RackElectricalModel>();
            m->SetAttribute("EfficiencyCurve", StringValue("0.5:1.7"));
        },
        "EfficiencyCurve: bad pair '0.5:1.7'");
    EXPECT_DEATH(
        {
            RackConfig c;
            c.psuShelves = 3; // pins 6: openbmc's ORV3_PSU ranges hold only 240-242
            RackHelper().Build(c);
        },
        "ORV3_PSU at address 243 is outside the map's scan ranges");
    EXPECT_DEATH(RackRegisterMap::LoadType("NO_SUCH_DEVICE"), "no_such_device.map: cannot open");
}

// The BMC's session on a full ORv3 rack, captured and decoded by tshark 4.0: every frame is
// Modbus RTU with a good CRC, the probes, time writes and span reads are all there, and the
// PSU output voltage Wireshark decodes from the wire is 51.0 V (52224 at 2^-10).
TEST(RackBmc, TsharkDecodesTheBmcSession)
{
    int status = -1;
    RunCommand("tshark --version 2>/dev/null", &status);
    ASSERT_EQ(status, 0) << "tshark is required (Debian package tshark 4.0.x)";
    const std::string path = std::string(CNUAS_BINARY_DIR) + "/test-rack-bmc-session.pcap";
    {
        RackHelper h;
        h.SetBmcAttribute("MonitorInterval", TimeValue(Seconds(100)));
        Rack r = h.Build(RackConfig());
        Ptr<ModbusBusCapture> cap =
            ModbusPcapHelper::EnablePcap(path, r.bus, {r.master->GetDevice()});
        Simulator::Stop(Seconds(60));
        Simulator::Run();
        cap->Close();
        Simulator::Destroy();
    }
    const std::string prefs = "-o mbrtu.crc_verification:TRUE -o mbrtu.tcp.port:502";
    const auto rows = TsharkFieldRows(
        path,
        {"mbrtu.unit_id", "modbus.func_code", "mbrtu.crc16.status", "_ws.col.Info"},
        prefs,
        &status);
    ASSERT_EQ(status, 0);
    // 54 probes of which 36 go unanswered, 18 answered; 18 time writes; the first reload reads
    // every register separately: 50 per PSU (rackmon: "50 transactions for an ORv3 PSU"), 106
    // per BBU (the rows of the ORV3_BBU table); each with its response.
    const std::size_t frames = 54 + 18 + 2 * (18 + 12 * 50 + 6 * 106);
    ASSERT_EQ(rows.size(), frames);
    std::size_t fc16 = 0;
    for (const auto& row : rows)
    {
        ASSERT_GE(row.size(), 4u);
        EXPECT_EQ(row[2], "1") << "CRC good: " << row[3];
        fc16 += row[1] == "16";
    }
    EXPECT_EQ(fc16, 2u * 18) << "Unix-time writes and their echoes";
    // Every register of the response: the numbers and the values, comma-separated, in order.
    const std::string out = RunCommand("tshark -r '" + path + "' " + prefs +
                                           " -Y 'mbrtu.unit_id==200 && modbus.regnum16==79'"
                                           " -T fields -E occurrence=a -e modbus.regnum16"
                                           " -e modbus.regval_uint16 2>/dev/null",
                                       &status);
    std::vector<std::vector<std::string>> span;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
    {
        span.push_back(cnuas_test::SplitTabs(line));
    }
    ASSERT_EQ(span.size(), 1u) << "one read of register 79: " << out;
    ASSERT_EQ(span[0].size(), 2u);
    EXPECT_EQ(span[0][0], "79");
    EXPECT_EQ(span[0][1], "52224");
    // The first span read of that PSU, in a second capture with the reload done by then.
    {
        RackHelper h;
        h.SetBmcAttribute("MonitorInterval", TimeValue(Seconds(40)));
        Rack r = h.Build(RackConfig());
        Simulator::Stop(Seconds(50));
        Ptr<ModbusBusCapture> cap =
            ModbusPcapHelper::EnablePcap(path, r.bus, {r.master->GetDevice()});
        Simulator::Run();
        cap->Close();
        Simulator::Destroy();
    }
    const std::string out2 = RunCommand("tshark -r '" + path + "' " + prefs +
                                            " -Y 'mbrtu.unit_id==200 && modbus.regnum16==79'"
                                            " -T fields -E occurrence=a -e modbus.regnum16"
                                            " -e modbus.regval_uint16 2>/dev/null",
                                        &status);
    span.clear();
    std::istringstream lines2(out2);
    for (std::string line; std::getline(lines2, line);)
    {
        span.push_back(cnuas_test::SplitTabs(line));
    }
    ASSERT_FALSE(span.empty()) << out2;
    span.erase(span.begin(), span.end() - 1); // the last one: the span read
    ASSERT_EQ(span[0].size(), 2u);
    auto split = [](const std::string& s) {
        std::vector<std::string> out;
        std::istringstream in(s);
        for (std::string x; std::getline(in, x, ',');)
        {
            out.push_back(x);
        }
        return out;
    };
    const auto numbers = split(span[0][0]);
    const auto values = split(span[0][1]);
    ASSERT_EQ(numbers.size(), 24u) << span[0][0];
    ASSERT_EQ(values.size(), 24u) << span[0][1];
    EXPECT_EQ(numbers[0], "67");
    EXPECT_EQ(numbers[79 - 67], "79");
    EXPECT_EQ(values[79 - 67], "52224");
    std::remove(path.c_str());
}

// A full HPR rack as Meta's Ventura2 (4 PSU shelves, 4 BBU shelves, a PMM each: 56 devices) at
// 115200: the BMC finds every device of every type, reads every register, and nothing fails.
TEST(RackBmc, DiscoversAFullHprRack)
{
    RackHelper h;
    h.SetBmcAttribute("MonitorInterval", TimeValue(Seconds(120)));
    RackConfig c;
    c.hpr = true;
    c.psuShelves = 4;
    c.bbuShelves = 4;
    Rack r = h.Build(c);
    Log log;
    Attach(r, log);
    Simulator::Stop(Seconds(400));
    Simulator::Run();
    ASSERT_EQ(r.devices.size(), 56u);
    const auto inv = r.bmc->GetInventory();
    ASSERT_EQ(inv.size(), 56u);
    std::map<std::string, int> types;
    for (const auto& d : inv)
    {
        types[d.type]++;
        EXPECT_FALSE(d.dormant);
        EXPECT_EQ(d.failures, 0u);
        EXPECT_EQ(d.type, r.Find(d.address)->GetMap().name);
        for (const auto& reg : d.registers)
        {
            EXPECT_TRUE(reg.valid) << d.name << " " << reg.name;
        }
    }
    EXPECT_EQ(types["ORV3_HPR_PSU"], 24);
    EXPECT_EQ(types["ORV3_HPR_BBU"], 24);
    EXPECT_EQ(types["ORV3_HPR_PMM_PSU"], 4);
    EXPECT_EQ(types["ORV3_HPR_PMM_BBU"], 4);
    ASSERT_GE(log.cycles.size(), 3u);
    const Time scan = std::get<1>(log.cycles[0]);
    const Time reload = std::get<2>(log.cycles[0]) - std::get<1>(log.cycles[0]);
    const Time steady = std::get<2>(log.cycles[1]) - std::get<1>(log.cycles[1]);
    std::cout << "[ hpr rack ] " << r.bmc->GetCounters().probes << " probes, start-up scan "
              << scan.GetSeconds() << " s; first reload " << reload.GetSeconds()
              << " s; steady cycle " << steady.GetSeconds() << " s\n";
    EXPECT_EQ(r.bus->GetContentionCount(), 0u);
    Simulator::Destroy();
}
