// Real Modbus masters (libmodbus, mbpoll) drive the ORv3 PSU model itself (RackPsu from the
// shipped ORV3_PSU map, assembled by RackHelper) through the pty bridge, and share the segment
// with the simulated BMC while it is paused (RackBmc::Pause, rackmoncli pause).
#include "ib-test-packets.h"
#include "test-emu-pty-util.h"

#include "helpers/rack/rack-helper.h"
#include "models/rack/rack-bmc.h"
#include "models/rack/rack-electrical-model.h"
#include "models/rack/rack-psu.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/nstime.h"
#include "ns3/uinteger.h"

#include <algorithm>
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
        if (rack.arbiter)
        {
            bridge->SetArbiter(rack.arbiter); // as `cnuas rack up` does
        }
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

// ---- issue 15: the pty's master shares the bus with a BMC that keeps polling ----------------

namespace
{

/// A rack whose BMC starts a new cycle every 200 ms: the bus is hardly ever quiet.
PeerRack
BusyRack(uint32_t psus = 6)
{
    RackHelper h;
    h.SetBmcAttribute("MonitorInterval", TimeValue(MilliSeconds(200)));
    h.SetBmcAttribute("ScanPasses", UintegerValue(1));
    h.SetBmcAttribute("FirstReloadPerRegister", BooleanValue(false));
    PeerRack r;
    r.Build(true, psus, 1000.0 * psus, h);
    return r;
}

void
CountPolls(Ptr<RackBmc> bmc, std::atomic<uint64_t>* polls)
{
    bmc->TraceConnectWithoutContext(
        "Poll",
        MakeCallback(+[](std::atomic<uint64_t>* n, uint8_t, uint16_t, uint16_t, bool) {
            (*n)++;
        }).Bind(polls));
}

} // namespace

TEST_F(RackPeers, MbpollSucceedsEveryTimeWhileTheBmcKeepsPolling)
{
    // Two masters behind one arbiter, as behind a gateway: mbpoll's request waits for the
    // BMC's transaction in progress, the BMC waits for mbpoll's, and mbpoll hears only the
    // answer to its own request (before: "Invalid CRC", "Response not from requested slave").
    if (!Executable("/usr/bin/mbpoll"))
    {
        GTEST_SKIP() << "mbpoll is not installed (apt-get install mbpoll)";
    }
    PeerRack r = BusyRack();
    std::atomic<uint64_t> polls{0};
    CountPolls(r.rack.bmc, &polls);
    ASSERT_TRUE(r.bridge->Start()) << r.bridge->GetError();
    constexpr int kRuns = 8;
    std::vector<std::string> out(kRuns);
    std::vector<int> status(kRuns, -1);
    bool busy = false;
    uint64_t before = 0;
    uint64_t after = 0;
    r.Run(
        [&]() {
            busy = WaitFor([&]() { return polls.load() > 30; }, 60);
            before = polls.load();
            for (int i = 0; busy && i < kRuns; ++i)
            {
                // One try, no retry (-1 -o 1 in kMbpoll): any stray byte fails the run.
                out[i] = RunCommand(kMbpoll + "-a " + std::to_string(200 + i % 6) + " " +
                                        r.bridge->GetPortPath() + " 2>&1",
                                    &status[i]);
            }
            after = polls.load();
        },
        Seconds(200));
    ASSERT_TRUE(busy) << "the BMC never polled";
    for (int i = 0; i < kRuns; ++i)
    {
        SCOPED_TRACE("mbpoll run " + std::to_string(i) + ":\n" + out[i]);
        EXPECT_EQ(status[i], 0);
        ExpectPsuReading(ParseMbpollLines(out[i]), 1000.0);
    }
    EXPECT_GT(after, before) << "the BMC stopped polling while mbpoll ran";
    EXPECT_EQ(r.rack.bmc->GetCounters().readFailures, 0u) << "a master's transaction collided";
    const Rs485PtyBridgeCounters c = r.bridge->GetCounters();
    EXPECT_GE(c.clientTransactions, static_cast<uint64_t>(kRuns));
    EXPECT_GT(c.rxOtherMaster, 0u) << "the BMC's traffic should have been kept from the pty";
    EXPECT_EQ(c.rxErrors, 0u);
}

TEST_F(RackPeers, AnOpenClientHearsNothingOfTheBmcAndThenItsOwnAnswer)
{
    PeerRack r = BusyRack(2);
    std::atomic<uint64_t> polls{0};
    CountPolls(r.rack.bmc, &polls);
    ASSERT_TRUE(r.bridge->Start()) << r.bridge->GetError();
    std::vector<uint8_t> idle;
    std::vector<uint8_t> answer;
    uint64_t whileOpen = 0;
    int cfg = -1;
    r.Run(
        [&]() {
            if (!WaitFor([&]() { return polls.load() > 10; }, 60))
            {
                return;
            }
            RawClient c;
            cfg = c.Open(r.bridge->GetPortPath(), RawSettings());
            const uint64_t at = polls.load();
            // Open, configured, not writing: a second of BMC transactions goes by.
            WaitFor([&]() { return polls.load() > at + 5; }, 30);
            whileOpen = polls.load() - at;
            idle = c.Read(1, 300, 100);
            c.Write(ReadHoldingAdu(200, 79, 4));
            answer = c.Read(5 + 2 * 4, 2000, 200);
        },
        Seconds(200));
    EXPECT_EQ(cfg, 0);
    EXPECT_GT(whileOpen, 5u);
    EXPECT_TRUE(idle.empty()) << idle.size() << " bytes of the BMC's traffic reached the pty";
    const std::vector<uint16_t> regs = ParseReadHoldingResponse(answer, 200, 4);
    ASSERT_EQ(regs.size(), 4u) << "not the answer alone: " << answer.size() << " bytes";
    ExpectPsuReading({{79, regs[0]}, {80, regs[1]}, {81, regs[2]}, {82, regs[3]}}, 1000.0);
}

TEST_F(RackPeers, BytesAClientLeftUnreadAreNotTheNextClientsFirstBytes)
{
    // No BMC: the segment is the pty's alone; the answer the first client abandons must not
    // be what the next client reads first.
    PeerRack r;
    r.Build(false, 1, 1000.0);
    ASSERT_TRUE(r.bridge->Start()) << r.bridge->GetError();
    std::vector<uint8_t> stale;
    std::vector<uint8_t> answer;
    r.Run(
        [&]() {
            {
                RawClient first;
                first.Open(r.bridge->GetPortPath(), RawSettings());
                first.Write(ReadHoldingAdu(200, 79, 4));
                // The answer (13 characters, ~8 ms at 19200) arrives and is left unread.
                WaitFor([&]() { return CountersFromSimulation(r.bridge).bytesToClient >= 13; },
                        10);
            }
            WaitFor([&]() { return CountersFromSimulation(r.bridge).inputFlushes > 0; }, 10);
            RawClient next;
            // O_NONBLOCK open and a configuration without flushing (TCSANOW as libmodbus): a
            // TCSAFLUSH of its own would hide what the bridge left in the port.
            RawSettings noFlush;
            noFlush.flush = false;
            next.Open(r.bridge->GetPortPath(), noFlush);
            stale = next.Read(1, 300, 100);
            next.Write(ReadHoldingAdu(200, 80, 1));
            answer = next.Read(7, 2000, 200);
        },
        Seconds(60));
    EXPECT_TRUE(stale.empty()) << stale.size() << " stale bytes reached the next client";
    EXPECT_EQ(ParseReadHoldingResponse(answer, 200, 1).size(), 1u);
    EXPECT_GE(r.bridge->GetCounters().inputFlushes, 1u);
}

TEST_F(RackPeers, AClientWritingFasterThanTheBusOverrunsTheFifoNotTheBus)
{
    // 64 KiB at once would be 37 s of line time at 19200 8E1; the bridge keeps at most
    // TxBufferSize (256 bytes) waiting and drops the rest, so the bus is free again at once
    // and a read works. How many bytes go on the line before the rest is dropped depends on
    // how fast the machine hands the 64 KiB over (the line drains 1745 bytes/s meanwhile), so
    // the test checks the model's guarantees, not a count: the backlog never exceeds the
    // buffer, every byte is either dropped or accepted, every accepted byte either went on
    // the line or was dropped as stale when mbpoll opened the port.
    if (!Executable("/usr/bin/mbpoll"))
    {
        GTEST_SKIP() << "mbpoll is not installed (apt-get install mbpoll)";
    }
    PeerRack r = BusyRack(2);
    std::atomic<uint64_t> polls{0};
    CountPolls(r.rack.bmc, &polls);
    struct Fifo
    {
        Ptr<Rs485PtyBridge> bridge;
        uint64_t accepted = 0;
        std::size_t maxBacklog = 0;
        uint64_t onLine = 0;
        // Simulation thread: FromClient fires before the accepted bytes join the backlog.
        void Accepted(const std::vector<uint8_t>& b, const Rs485Format&)
        {
            accepted += b.size();
            maxBacklog = std::max(maxBacklog, bridge->GetTxBacklog() + b.size());
        }
        void Sent(uint8_t, Time, Time) { onLine++; }
    } fifo;
    fifo.bridge = r.bridge;
    r.bridge->TraceConnectWithoutContext("FromClient", MakeCallback(&Fifo::Accepted, &fifo));
    r.bridge->GetDevice()->TraceConnectWithoutContext("TxCharacter",
                                                      MakeCallback(&Fifo::Sent, &fifo));
    ASSERT_TRUE(r.bridge->Start()) << r.bridge->GetError();
    constexpr uint64_t kFlood = 64 * 1024;
    std::string out;
    int status = -1;
    bool drained = false;
    r.Run(
        [&]() {
            if (!WaitFor([&]() { return polls.load() > 10; }, 60))
            {
                return;
            }
            {
                RawClient flood;
                flood.Open(r.bridge->GetPortPath(), RawSettings());
                flood.Write(std::vector<uint8_t>(kFlood, 0x55));
                // Until the simulation has taken all of it (accepted or dropped).
                drained = WaitFor(
                    [&]() { return CountersFromSimulation(r.bridge).bytesFromClient >= kFlood; },
                    30);
            }
            // mbpoll's own 1 s timeout, one try: fails if the flood still holds the line.
            out = RunCommand(kMbpoll + "-a 200 " + r.bridge->GetPortPath() + " 2>&1", &status);
        },
        Seconds(200));
    ASSERT_TRUE(drained) << "the bridge did not read the client's 64 KiB";
    const Rs485PtyBridgeCounters c = r.bridge->GetCounters();
    std::ostringstream k;
    k << "bridge: from client " << c.bytesFromClient << ", accepted " << fifo.accepted
      << ", overruns " << c.txOverruns << ", on the line " << fifo.onLine << ", stale dropped "
      << c.txStaleDropped << ", max backlog " << fifo.maxBacklog << ", transactions "
      << c.clientTransactions << ", timeouts " << c.clientTimeouts << ", to client "
      << c.bytesToClient << ", other master " << c.rxOtherMaster << ", while closed "
      << c.rxWhileClosed << ", flushes " << c.inputFlushes << ", opens " << c.clientOpens
      << "; BMC read failures " << r.rack.bmc->GetCounters().readFailures;
    SCOPED_TRACE("mbpoll:\n" + out + "\n" + k.str());
    // The FIFO bound (TxBufferSize, 256 by default), whatever the machine's speed.
    EXPECT_LE(fifo.maxBacklog, 256u);
    // Every byte the client wrote (the flood and mbpoll's request) was accepted or dropped.
    EXPECT_GE(c.bytesFromClient, kFlood);
    EXPECT_EQ(fifo.accepted + c.txOverruns, c.bytesFromClient);
    // Every accepted byte went on the line, or was dropped when mbpoll opened the port.
    EXPECT_EQ(fifo.accepted, fifo.onLine + c.txStaleDropped + r.bridge->GetTxBacklog());
    // The flood was handed over within 30 s, less than the 37 s the line needs for it: some
    // of it must have been dropped.
    EXPECT_GT(c.txOverruns, 0u);
    EXPECT_EQ(status, 0);
    ExpectPsuReading(ParseMbpollLines(out), 1000.0);
}
