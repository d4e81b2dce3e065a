// A loaded RS-485 bus: a master polling every slave continuously, as a BMC does, for minutes of
// simulated time. Checks what the simulation must produce (every transaction answered, never
// two drivers at once, the utilisation the arithmetic gives) and prints how fast it ran (not
// asserted: wall-clock time depends on the machine).
#include "helpers/rack/modbus-helper.h"
#include "helpers/rack/rs485-bus-helper.h"

#include "ns3/node-container.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <iostream>

using namespace ns3;

namespace
{

struct LoadResult
{
    uint64_t ok = 0;
    uint64_t other = 0;
    uint64_t characters = 0;
    double busy = 0; ///< fraction of time characters were on the line
    uint64_t contentions = 0;
    double wallSeconds = 0;
};

/**
 * `n` slaves (ORv3 BBU-style addresses from 0x40) at `baud` 8E1, each polled with the four span
 * reads rackmon makes of an ORv3 PSU (58 + 5 + 24 + 12 registers), cycle after cycle, for
 * `seconds` of simulated time. Slaves answer 3 ms after a request; the master waits 2 ms
 * between transactions (rackmon's min_delay).
 */
LoadResult
PollContinuously(uint32_t baud, uint32_t n, double seconds)
{
    Rs485Format f;
    f.baudRate = baud;
    NodeContainer nodes;
    nodes.Create(n + 1);
    Rs485BusHelper bus;
    bus.SetFormat(f);
    Ptr<Rs485Channel> ch = bus.CreateBus();
    std::vector<Ptr<Rs485Device>> dev;
    for (uint32_t i = 0; i <= n; ++i)
    {
        dev.push_back(bus.Install(nodes.Get(i), ch));
    }
    ModbusHelper mb;
    mb.SetSlaveAttribute("ResponseDelay", TimeValue(MilliSeconds(3)));
    mb.SetMasterAttribute("InterRequestDelay", TimeValue(MilliSeconds(2)));
    Ptr<ModbusMaster> m = mb.InstallMaster(dev[0]);
    for (uint32_t i = 0; i < n; ++i)
    {
        Ptr<ModbusMemoryRegisterBank> b = CreateObject<ModbusMemoryRegisterBank>();
        b->DefineHoldingRegisters(0, 128);
        mb.InstallSlave(dev[1 + i], static_cast<uint8_t>(0x40 + i), b);
    }
    LoadResult r;
    auto count = [&r](const ModbusTransaction& t) {
        (t.status == ModbusResultStatus::Ok ? r.ok : r.other)++;
    };
    std::function<void(const ModbusTransaction&)> countFn = count;
    auto cb = MakeCallback(&std::function<void(const ModbusTransaction&)>::operator(), &countFn);
    const Time end = Seconds(seconds);
    std::function<void()> watch = [&]() {
        if (Simulator::Now() >= end)
        {
            return;
        }
        if (m->IsIdle())
        {
            for (uint32_t i = 0; i < n; ++i)
            {
                const auto a = static_cast<uint8_t>(0x40 + i);
                m->Submit(a, ModbusRequest::ReadHoldingRegisters(0, 58), cb);
                m->Submit(a, ModbusRequest::ReadHoldingRegisters(60, 5), cb);
                m->Submit(a, ModbusRequest::ReadHoldingRegisters(67, 24), cb);
                m->Submit(a, ModbusRequest::ReadHoldingRegisters(94, 12), cb);
            }
        }
        Simulator::Schedule(MilliSeconds(10), watch);
    };
    Simulator::Schedule(MilliSeconds(1), watch);
    Simulator::Stop(end);
    const auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    r.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.characters = ch->GetCharacterCount();
    r.busy = ch->GetBusyTime().GetSeconds() / seconds;
    r.contentions = ch->GetContentionCount();
    std::cout << "[ load     ] " << n << " slaves at " << f.ToString() << ", " << seconds
              << " s simulated: " << r.ok << " transactions, " << r.characters
              << " characters, line busy " << 100 * r.busy << " %; " << r.wallSeconds
              << " s wall clock (" << seconds / r.wallSeconds << "x real time, "
              << r.characters / r.wallSeconds << " characters/s)\n";
    Simulator::Destroy();
    return r;
}

/// Transactions one poll cycle of one slave makes, and its duration by the arithmetic.
Time
CycleTime(uint32_t baud)
{
    Rs485Format f;
    f.baudRate = baud;
    const Time t35 = ModbusRtuTiming::ForFormat(f).t35;
    const Time gap = std::max(MilliSeconds(3), t35);
    const Time d = NanoSeconds(50); // 10 m
    Time total;
    for (uint32_t regs : {58u, 5u, 24u, 12u})
    {
        total += f.CharactersTime(8) + d + gap + f.CharactersTime(5 + 2 * regs) + d + t35 +
                 MilliSeconds(2);
    }
    return total;
}

} // namespace

TEST(RackBusLoad, ContinuousPollOf33SlavesAt19200)
{
    const LoadResult r = PollContinuously(19200, 33, 60);
    EXPECT_EQ(r.other, 0u);
    EXPECT_EQ(r.contentions, 0u);
    // A cycle of 33 slaves x 4 spans; the transactions in 60 s follow from its length (the
    // watcher restarts a cycle within 10 ms of the previous one's end).
    const double cycle = 33 * CycleTime(19200).GetSeconds();
    EXPECT_NEAR(static_cast<double>(r.ok), 132 * 60 / (cycle + 0.005), 140);
    // Utilisation: of each cycle, characters fill (4 x 8 + 58+5+24+12 x 2 + 4 x 5) x 11 bits.
    const double charTime = 11.0 / 19200;
    EXPECT_NEAR(r.busy, 33 * (32 + 198 + 20) * charTime / (cycle + 0.005), 0.02);
}

TEST(RackBusLoad, ContinuousPollOf33SlavesAt115200)
{
    const LoadResult r = PollContinuously(115200, 33, 60);
    EXPECT_EQ(r.other, 0u);
    EXPECT_EQ(r.contentions, 0u);
    const double cycle = 33 * CycleTime(115200).GetSeconds();
    EXPECT_NEAR(static_cast<double>(r.ok), 132 * 60 / (cycle + 0.005), 140);
}

// The size of a loaded HPR rack bus (178 devices on one port, entity-manager's Ventura2 config).
// Run with --gtest_also_run_disabled_tests for the throughput figure in docs/rack.md.
TEST(RackBusLoad, DISABLED_ContinuousPollOf178SlavesAt115200)
{
    const LoadResult r = PollContinuously(115200, 178, 600);
    EXPECT_EQ(r.other, 0u);
    EXPECT_EQ(r.contentions, 0u);
}
