// Real Modbus masters (libmodbus, mbpoll) drive the ORv3 PSU model itself (RackPsu from the
// shipped ORV3_PSU map, assembled by RackHelper) through the pty bridge, and share the segment
// with the simulated BMC while it is paused (RackBmc::Pause, rackmoncli pause).
#include "ib-test-packets.h"
#include "test-emu-pty-util.h"

#include "helpers/rack-helper.h"
#include "models/rack/rack-bmc.h"
#include "models/rack/rack-electrical-model.h"
#include "models/rack/rack-psu.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/nstime.h"
#include "ns3/uinteger.h"

#include <atomic>
#include <map>
#include <sstream>

using namespace ns3;
using namespace cnuas_test;

namespace
{

std::vector<std::string>
SplitLines(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
    {
        out.push_back(line);
    }
    return out;
}

/// mbpoll's "[REG]: VALUE" lines, the 16-bit value as unsigned.
std::map<int, uint16_t>
ParseMbpollLines(const std::string& out)
{
    std::map<int, uint16_t> v;
    for (const std::string& line : SplitLines(out))
    {
        int reg;
        long value;
        if (std::sscanf(line.c_str(), "[%d]: %ld", &reg, &value) == 2)
        {
            v[reg] = static_cast<uint16_t>(value);
        }
    }
    return v;
}

/// A rack of one ORv3 PSU shelf (no BBUs) carrying `load` W, with the pty bridge on its bus.
struct PeerRack
{
    Rack rack;
    Ptr<Rs485PtyBridge> bridge;

    void Build(bool bmc, uint32_t psus, double load, const RackHelper& h = RackHelper())
    {
        RackConfig c;
        c.psuShelves = 1;
        c.psusPerShelf = psus;
        c.bbuShelves = 0;
        c.bmc = bmc;
        c.responseDelay = MilliSeconds(1); // as `cnuas rack up`: below t3.5 (docs/rack.md §11.2)
        rack = h.Build(c);
        Ptr<RackStepLoad> l = CreateObject<RackStepLoad>();
        l->SetAttribute("InitialPower", DoubleValue(load));
        rack.power->SetLoadProfile(l);
        Rs485PtyBridgeHelper bh;
        bh.SetFormat(rack.psus[0]->GetMap().Format());
        bridge = bh.Install(CreateObject<Node>(), rack.bus);
    }

    /// Runs the simulation in real time while `peer` works in another thread.
    void Run(const std::function<void()>& peer, Time guard)
    {
        Simulator::Stop(guard);
        std::thread t;
        Simulator::Schedule(MilliSeconds(20), [&t, &peer]() {
            t = std::thread([&peer]() {
                peer();
                Simulator::ScheduleWithContext(Simulator::NO_CONTEXT, Time(0), []() {
                    Simulator::Stop();
                });
            });
        });
        Simulator::Run();
        if (t.joinable())
        {
            t.join();
        }
    }
};

bool
Executable(const std::string& path)
{
    return access(path.c_str(), X_OK) == 0;
}

/// Waits (polling, with a deadline) until `done` holds; false at the deadline.
bool
WaitFor(const std::function<bool()>& done, double seconds)
{
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int>(seconds * 1000));
    while (!done())
    {
        if (std::chrono::steady_clock::now() > end)
        {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

const std::string kMbpoll = "timeout -k 2 20 mbpoll -m rtu -b 19200 -P even -t 4 -r 79 -c 4 "
                            "-0 -1 -o 1 ";

/// Checks mbpoll's 79..82 against the physics: `watts` per PSU at 51 V, decoded with the
/// ORV3_PSU map's precision (V = raw / 2^10, A = raw / 2^6, W = raw / 2^3).
void
ExpectPsuReading(const std::map<int, uint16_t>& v, double watts)
{
    ASSERT_EQ(v.size(), 4u);
    EXPECT_NEAR(std::ldexp(v.at(79), -10), 51.0, 1.0 / 1024);
    EXPECT_NEAR(std::ldexp(v.at(80), -6), watts / 51.0, 1.0 / 64);
    EXPECT_NEAR(std::ldexp(v.at(82), -3), watts, 1.0 / 8);
}

/// The pty fixture (real-time scheduler on, torn down after) under this file's suite name.
class RackPeers : public PtyBridgeTest
{
};

} // namespace

TEST_F(RackPeers, LibmodbusUnlocksAProtectedPsuRegisterWithTheWriteEnableBit)
{
    const std::string client = std::string(CNUAS_BINARY_DIR) + "/bin/cnuas-peer-modbus-client";
    if (!Executable(client))
    {
        GTEST_SKIP() << "the libmodbus peer was not built (libmodbus-dev missing at configure)";
    }
    PeerRack r;
    r.Build(false, 2, 2000.0); // two PSUs at 200 and 201 sharing 2 kW: 1000 W each
    Ptr<RackPsu> psu = r.rack.psus[0];
    ASSERT_EQ(psu->GetModbusAddress(), 200);
    std::vector<uint8_t> refusedCodes;
    psu->TraceConnectWithoutContext(
        "WriteRefused",
        MakeCallback(+[](std::vector<uint8_t>* codes, uint8_t, uint16_t, uint16_t, uint8_t code) {
            codes->push_back(code);
        }).Bind(&refusedCodes));
    ASSERT_TRUE(r.bridge->Start()) << r.bridge->GetError();
    constexpr int kOpens = 4;
    std::string out;
    int status = -1;
    std::vector<std::string> mb(3);
    std::vector<int> mbStatus(3, -1);
    const bool haveMbpoll = Executable("/usr/bin/mbpoll");
    r.Run(
        [&]() {
            // Register 100 (Configurable_PLS_Timing) is WP; 94 bit 0 is PSU_Write_Enable.
            out = RunCommand("timeout -k 2 60 " + client + " " + r.bridge->GetPortPath() +
                                 " 19200 E 200 " + std::to_string(kOpens) +
                                 " 79 4 100 100 94 0 2>&1",
                             &status);
            for (std::size_t i = 0; haveMbpoll && i < mb.size(); ++i)
            {
                mb[i] = RunCommand(kMbpoll + "-a 200 " + r.bridge->GetPortPath() + " 2>&1",
                                   &mbStatus[i]);
            }
        },
        Seconds(120));
    SCOPED_TRACE("libmodbus client output:\n" + out);
    EXPECT_EQ(status, 0);
    const std::vector<std::string> lines = PeerClientStepLines(out);
    ASSERT_EQ(lines.size(), 6u * kOpens);
    for (int k = 0; k < kOpens; ++k)
    {
        const std::string open = "open " + std::to_string(k) + " ";
        const std::string& read = lines[6 * k];
        ASSERT_EQ(read.rfind(open + "read 79:", 0), 0u) << read;
        unsigned v[4];
        ASSERT_EQ(std::sscanf(read.c_str() + open.size() + 8, "%u %u %u %u", &v[0], &v[1], &v[2],
                              &v[3]),
                  4);
        ExpectPsuReading({{79, v[0]}, {80, v[1]}, {81, v[2]}, {82, v[3]}}, 1000.0);
        // The model's WriteProtectException default: ILLEGAL FUNCTION (docs/rack.md §9.2).
        EXPECT_EQ(lines[6 * k + 1], open + "write 100: exception 1");
        EXPECT_EQ(lines[6 * k + 2], open + "enable 94: ok 1");
        EXPECT_EQ(lines[6 * k + 3], open + "write 100: ok " + std::to_string(1000 + k));
        EXPECT_EQ(lines[6 * k + 4], open + "readback 100: " + std::to_string(1000 + k));
        EXPECT_EQ(lines[6 * k + 5], open + "disable 94: ok 0");
    }
    EXPECT_EQ(refusedCodes, std::vector<uint8_t>(kOpens, 0x01));
    EXPECT_EQ(psu->GetRaw(100), 1000 + kOpens - 1);
    EXPECT_EQ(psu->GetRaw(94) & 1u, 0u); // the client cleared the bit again
    EXPECT_GE(r.bridge->GetCounters().clientOpens, static_cast<uint64_t>(kOpens));
    if (!haveMbpoll)
    {
        GTEST_SKIP() << "mbpoll is not installed (the libmodbus part ran)";
    }
    for (std::size_t i = 0; i < mb.size(); ++i)
    {
        SCOPED_TRACE("mbpoll run " + std::to_string(i) + ":\n" + mb[i]);
        EXPECT_EQ(mbStatus[i], 0);
        ExpectPsuReading(ParseMbpollLines(mb[i]), 1000.0);
    }
}

TEST_F(RackPeers, MbpollHasTheBusWhileTheBmcIsPausedAndTheBmcResumes)
{
    if (!Executable("/usr/bin/mbpoll"))
    {
        GTEST_SKIP() << "mbpoll is not installed (apt-get install mbpoll)";
    }
    RackHelper h;
    // A BMC that keeps the bus busy: a new cycle every 200 ms, one start-up scan pass.
    h.SetBmcAttribute("MonitorInterval", TimeValue(MilliSeconds(200)));
    h.SetBmcAttribute("ScanPasses", UintegerValue(1));
    h.SetBmcAttribute("FirstReloadPerRegister", BooleanValue(false));
    PeerRack r;
    r.Build(true, 6, 6000.0, h);
    std::atomic<uint64_t> polls{0};
    std::atomic<bool> held{false};
    r.rack.bmc->TraceConnectWithoutContext(
        "Poll",
        MakeCallback(+[](std::atomic<uint64_t>* n, uint8_t, uint16_t, uint16_t, bool) {
            (*n)++;
        }).Bind(&polls));
    r.rack.bmc->TraceConnectWithoutContext(
        "Held",
        MakeCallback(+[](std::atomic<bool>* f, bool h) { *f = h; }).Bind(&held));
    ASSERT_TRUE(r.bridge->Start()) << r.bridge->GetError();
    constexpr int kRuns = 5;
    std::vector<std::string> out(kRuns);
    std::vector<int> status(kRuns, -1);
    bool busy = false;
    bool wasHeld = false;
    bool resumed = false;
    uint64_t atHold = 0;
    uint64_t afterRuns = 0;
    r.Run(
        [&]() {
            busy = WaitFor([&]() { return polls.load() > 30; }, 30);
            Simulator::ScheduleWithContext(Simulator::NO_CONTEXT, Time(0), [&r]() {
                r.rack.bmc->Pause();
            });
            wasHeld = WaitFor([&]() { return held.load(); }, 10);
            atHold = polls.load();
            for (int i = 0; wasHeld && i < kRuns; ++i)
            {
                out[i] = RunCommand(kMbpoll + "-a " + std::to_string(200 + i) + " " +
                                        r.bridge->GetPortPath() + " 2>&1",
                                    &status[i]);
            }
            afterRuns = polls.load();
            Simulator::ScheduleWithContext(Simulator::NO_CONTEXT, Time(0), [&r]() {
                r.rack.bmc->Resume();
            });
            resumed = WaitFor([&]() { return polls.load() > afterRuns + 20; }, 30);
        },
        Seconds(200));
    ASSERT_TRUE(busy) << "the BMC never polled";
    ASSERT_TRUE(wasHeld) << "the BMC did not release the bus";
    for (int i = 0; i < kRuns; ++i)
    {
        SCOPED_TRACE("mbpoll run " + std::to_string(i) + ":\n" + out[i]);
        EXPECT_EQ(status[i], 0);
        ExpectPsuReading(ParseMbpollLines(out[i]), 1000.0); // 6 kW over 6 PSUs
    }
    EXPECT_EQ(afterRuns, atHold) << "the BMC polled while paused";
    EXPECT_TRUE(resumed) << "the BMC did not poll again after Resume";
    EXPECT_FALSE(held.load());
    EXPECT_EQ(r.rack.bmc->GetCounters().pauses, 1u);
    EXPECT_EQ(r.bridge->GetCounters().rxErrors, 0u);
}
