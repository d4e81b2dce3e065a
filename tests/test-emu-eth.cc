// Unit tests of the emulation's model side: frames from a real host's kernel (EthFrame
// ParseFromHost / Verbatim) crossing a simulated Ethernet fabric, and the real-time simulator.
#include "helpers/roce/eth-fabric-helper.h"
#include "models/common/cnuas-init.h"
#include "models/emu/emu-realtime-simulator-impl.h"
#include "models/roce/eth-frame.h"
#include "models/roce/eth-net-device.h"

#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/global-value.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <fcntl.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace ns3;

namespace
{

void
Put16(std::vector<uint8_t>& b, size_t at, uint16_t v)
{
    b[at] = static_cast<uint8_t>(v >> 8);
    b[at + 1] = static_cast<uint8_t>(v);
}

void
Put32(std::vector<uint8_t>& b, size_t at, uint32_t v)
{
    Put16(b, at, static_cast<uint16_t>(v >> 16));
    Put16(b, at + 2, static_cast<uint16_t>(v));
}

/// An Ethernet + IPv4 + TCP segment as a kernel would hand it to a TAP: no FCS, no padding.
std::vector<uint8_t>
KernelTcpFrame(uint32_t src, uint32_t dst, uint8_t tos, uint8_t ttl, uint32_t payload)
{
    std::vector<uint8_t> b(14 + 20 + 20 + payload, 0);
    for (int i = 0; i < 6; ++i)
    {
        b[i] = static_cast<uint8_t>(0x02 + i);     // destination MAC
        b[6 + i] = static_cast<uint8_t>(0x12 + i); // source MAC
    }
    Put16(b, 12, kEthTypeIpv4);
    b[14] = 0x45;
    b[15] = tos;
    Put16(b, 16, static_cast<uint16_t>(40 + payload));
    Put16(b, 18, 0x1234);
    Put16(b, 20, 0x4000);
    b[22] = ttl;
    b[23] = kIpProtoTcp;
    Put32(b, 26, src);
    Put32(b, 30, dst);
    Put16(b, 24, InternetChecksum(b.data() + 14, 20));
    Put16(b, 34, 40000); // TCP ports
    Put16(b, 36, 5201);
    b[46] = 0x50; // data offset 5
    for (uint32_t i = 0; i < payload; ++i)
    {
        b[54 + i] = static_cast<uint8_t>(i * 7);
    }
    return b;
}

std::vector<uint8_t>
KernelArpRequest(uint32_t sender, uint32_t target)
{
    std::vector<uint8_t> b(14 + 28, 0);
    for (int i = 0; i < 6; ++i)
    {
        b[i] = 0xFF;
        b[6 + i] = static_cast<uint8_t>(0x12 + i);
        b[22 + i] = static_cast<uint8_t>(0x12 + i); // sender hardware address
    }
    Put16(b, 12, kEthTypeArp);
    Put16(b, 14, 1);
    Put16(b, 16, kEthTypeIpv4);
    b[18] = 6;
    b[19] = 4;
    Put16(b, 20, 1); // request
    Put32(b, 28, sender);
    Put32(b, 38, target);
    return b;
}

} // namespace

TEST(EmuEthFrame, KernelTcpSegmentParsesAndMaterializesAsSent)
{
    const auto bytes = KernelTcpFrame(0x0A000001, 0x0A000002, 0x02 /* ECT(0) */, 64, 100);
    EthFrame f;
    ASSERT_EQ(EthFrame::ParseFromHost(bytes.data(), bytes.size(), f), EthParseError::None);
    EXPECT_EQ(f.kind, EthFrameKind::Verbatim);
    EXPECT_EQ(f.srcIp, 0x0A000001u);
    EXPECT_EQ(f.dstIp, 0x0A000002u);
    EXPECT_EQ(f.srcPort, 40000);
    EXPECT_EQ(f.dstPort, 5201);
    EXPECT_EQ(f.ecn, kEcnEct0);
    EXPECT_EQ(f.ipProtocol, kIpProtoTcp);
    EXPECT_EQ(f.payloadBytes, 140u);
    EXPECT_EQ(f.bytes, bytes.size() + kEthFcsBytes);
    std::vector<uint8_t> out;
    f.Materialize(out, false);
    EXPECT_EQ(out, bytes) << "unchanged fields must come back byte for byte";
    f.Materialize(out, true);
    const uint32_t fcs = EthCrc32(out.data(), out.size() - 4);
    EXPECT_EQ(out[out.size() - 4], static_cast<uint8_t>(fcs));
}

TEST(EmuEthFrame, SwitchChangesToTtlAndEcnAreWrittenBackWithAValidChecksum)
{
    const auto bytes = KernelTcpFrame(0x0A000001, 0x0A000002, 0x02, 64, 10);
    EthFrame f;
    ASSERT_EQ(EthFrame::ParseFromHost(bytes.data(), bytes.size(), f), EthParseError::None);
    f.ttl = 62;
    f.ecn = kEcnCe;
    std::vector<uint8_t> out;
    f.Materialize(out, false);
    EXPECT_EQ(out[15] & 3, kEcnCe);
    EXPECT_EQ(out[22], 62);
    EXPECT_EQ(InternetChecksum(out.data() + 14, 20), 0) << "header checksum after the rewrite";
    // Everything but TOS, TTL and checksum is as sent.
    for (size_t i = 0; i < bytes.size(); ++i)
    {
        if (i != 15 && i != 22 && i != 24 && i != 25)
        {
            ASSERT_EQ(out[i], bytes[i]) << "byte " << i;
        }
    }
}

TEST(EmuEthFrame, ArpTravelsByItsTargetAddressAndShortFramesArePadded)
{
    const auto bytes = KernelArpRequest(0x0A000001, 0x0A000003);
    EthFrame f;
    ASSERT_EQ(EthFrame::ParseFromHost(bytes.data(), bytes.size(), f), EthParseError::None);
    EXPECT_EQ(f.kind, EthFrameKind::Verbatim);
    EXPECT_EQ(f.etherType, kEthTypeArp);
    EXPECT_EQ(f.dstIp, 0x0A000003u);
    EXPECT_EQ(f.bytes, kEthMinFrameBytes);
    std::vector<uint8_t> out;
    f.Materialize(out, false);
    ASSERT_EQ(out.size(), 60u);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), out.begin()));
}

TEST(EmuEthFrame, MalformedHostFramesAreRefusedWithTheirReason)
{
    EthFrame f;
    const uint8_t tiny[5] = {1, 2, 3, 4, 5};
    EXPECT_EQ(EthFrame::ParseFromHost(tiny, sizeof(tiny), f), EthParseError::Runt);
    auto bad = KernelTcpFrame(1, 2, 0, 64, 10);
    bad[24] ^= 0xFF; // header checksum
    EXPECT_EQ(EthFrame::ParseFromHost(bad.data(), bad.size(), f), EthParseError::BadIpv4);
    auto longer = KernelTcpFrame(1, 2, 0, 64, 10);
    Put16(longer, 16, 2000); // total length beyond the bytes
    Put16(longer, 24, 0);
    Put16(longer, 24, InternetChecksum(longer.data() + 14, 20));
    EXPECT_EQ(EthFrame::ParseFromHost(longer.data(), longer.size(), f), EthParseError::BadIpv4);
    auto arp = KernelArpRequest(1, 2);
    arp[19] = 16; // protocol address length 16: not IPv4
    EXPECT_EQ(EthFrame::ParseFromHost(arp.data(), arp.size(), f), EthParseError::BadArp);
    auto other = KernelArpRequest(1, 2);
    Put16(other, 12, 0x88CC); // LLDP
    EXPECT_EQ(EthFrame::ParseFromHost(other.data(), other.size(), f),
              EthParseError::UnknownEthertype);
    // Every truncation of a good frame is refused or parsed, never read past its end (ASan).
    const auto good = KernelTcpFrame(1, 2, 0, 64, 30);
    for (size_t n = 0; n <= good.size(); ++n)
    {
        std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
        EthFrame g;
        EthFrame::ParseFromHost(cut.data(), static_cast<uint32_t>(cut.size()), g);
    }
}

namespace
{
struct Delivered
{
    std::vector<std::vector<uint8_t>> frames;
    void On(Ptr<EthNetDevice>, const EthFrame& f)
    {
        std::vector<uint8_t> b;
        f.Materialize(b, false);
        frames.push_back(b);
    }
};
} // namespace

TEST(EmuEthFabric, KernelFramesCrossTheSwitchesAndAreCountedWhenRefused)
{
    // h0 and h1 on one switch: a kernel's ARP and TCP from h0 reach h1 with TTL lowered by
    // one switch hop; a malformed frame and an oversize one are counted drops at h0's port.
    Config::Reset();
    EthFabric fab = EthFabricHelper().Build(MakeTwoHostsOneSwitch());
    Delivered atH1;
    fab.HostPort(1)->SetEthReceiveCallback(MakeCallback(&Delivered::On, &atH1));
    const uint32_t ip0 = fab.HostIp(0);
    const uint32_t ip1 = fab.HostIp(1);
    const auto arp = KernelArpRequest(ip0, ip1);
    const auto tcp = KernelTcpFrame(ip0, ip1, 0x02, 64, 1000);
    auto bad = tcp;
    bad[24] ^= 1;
    const auto huge = KernelTcpFrame(ip0, ip1, 0, 64, 1600);
    const auto stray = KernelTcpFrame(ip0, 0x0A0000FE, 0, 64, 10); // nobody has .254
    Simulator::Schedule(MicroSeconds(1), [&]() {
        EXPECT_TRUE(fab.HostPort(0)->SendFromHost(arp.data(), arp.size()));
        EXPECT_TRUE(fab.HostPort(0)->SendFromHost(tcp.data(), tcp.size()));
        EXPECT_FALSE(fab.HostPort(0)->SendFromHost(bad.data(), bad.size()));
        EXPECT_FALSE(fab.HostPort(0)->SendFromHost(huge.data(), huge.size()));
        EXPECT_TRUE(fab.HostPort(0)->SendFromHost(stray.data(), stray.size()));
    });
    Simulator::Stop(MilliSeconds(1));
    Simulator::Run();
    ASSERT_EQ(atH1.frames.size(), 2u);
    EXPECT_EQ(atH1.frames[0].size(), 60u); // the ARP request, padded
    // A routing switch sends from its own MAC to the next hop's; the rest is as sent.
    EXPECT_TRUE(std::equal(arp.begin() + 12, arp.end(), atH1.frames[0].begin() + 12));
    ASSERT_EQ(atH1.frames[1].size(), tcp.size());
    EXPECT_EQ(atH1.frames[1][22], 63) << "TTL after one switch";
    EXPECT_EQ(InternetChecksum(atH1.frames[1].data() + 14, 20), 0);
    EXPECT_TRUE(std::equal(tcp.begin() + 34, tcp.end(), atH1.frames[1].begin() + 34))
        << "the TCP segment is carried as sent";
    EXPECT_EQ(fab.HostPort(0)->GetDropCount(EthDropReason::BadIpv4), 1u);
    EXPECT_EQ(fab.HostPort(0)->GetDropCount(EthDropReason::Oversize), 1u);
    uint64_t noRoute = 0;
    for (const auto& p : fab.AllPorts())
    {
        noRoute += p->GetDropCount(EthDropReason::NoRoute);
    }
    EXPECT_EQ(noRoute, 1u);
    Simulator::Destroy();
}

TEST(EmuEthFabric, EcnMarkOfAKernelFrameReachesTheReceiverAsCe)
{
    // A queue above Kmin at the switch marks ECT frames (threshold mode: every one): the
    // receiving kernel must see CE in the bytes, with a valid header checksum.
    Config::Reset();
    EthFabricHelper helper;
    helper.SetMmuAttribute("EcnMode", StringValue("Threshold"));
    helper.SetMmuAttribute("KminBytes", UintegerValue(1));
    helper.SetMmuAttribute("KmaxBytes", UintegerValue(2));
    helper.SetHostLinkRate(DataRate("10Gbps"));
    EthFabric fab = helper.Build(MakeStar(3));
    Delivered atH2;
    fab.HostPort(2)->SetEthReceiveCallback(MakeCallback(&Delivered::On, &atH2));
    std::vector<std::vector<uint8_t>> frames;
    for (uint32_t s = 0; s < 2; ++s)
    {
        frames.push_back(KernelTcpFrame(fab.HostIp(s), fab.HostIp(2), 0x02, 64, 1400));
    }
    Simulator::Schedule(MicroSeconds(1), [&]() {
        for (int k = 0; k < 20; ++k)
        {
            for (uint32_t s = 0; s < 2; ++s)
            {
                fab.HostPort(s)->SendFromHost(frames[s].data(), frames[s].size());
            }
        }
    });
    Simulator::Stop(MilliSeconds(1));
    Simulator::Run();
    ASSERT_EQ(atH2.frames.size(), 40u);
    size_t ce = 0;
    for (const auto& b : atH2.frames)
    {
        ce += (b[15] & 3) == kEcnCe;
        EXPECT_EQ(InternetChecksum(b.data() + 14, 20), 0);
    }
    EXPECT_GT(ce, 10u) << "two senders into one port at the same rate queue up";
    EXPECT_EQ(fab.Switch(fab.topology.Switches()[0])->GetEcnMarked(), ce);
    Simulator::Destroy();
}

// ---- the real-time simulator ----------------------------------------------------------------

namespace
{
/// Runs `body` with EmuRealtimeSimulatorImpl as the simulator, restoring the default after.
template <class F>
void
WithEmuSimulator(double dilation, F body)
{
    Config::Reset();
    GlobalValue::Bind("SimulatorImplementationType",
                      StringValue("ns3::EmuRealtimeSimulatorImpl"));
    Config::SetDefault("ns3::EmuRealtimeSimulatorImpl::TimeDilation", DoubleValue(dilation));
    body();
    Simulator::Destroy();
    GlobalValue::Bind("SimulatorImplementationType", StringValue(kCnuasSimulatorImplementation));
    Config::Reset();
}
} // namespace

TEST(EmuRealtimeSimulator, RunsEventsInOrderNoEarlierThanTheDilatedWallClock)
{
    WithEmuSimulator(5.0, []() {
        std::vector<int> order;
        EventId cancelled;
        for (int i = 0; i < 10; ++i)
        {
            Simulator::Schedule(MilliSeconds(10 - i), [&order, i]() { order.push_back(i); });
        }
        cancelled = Simulator::Schedule(MilliSeconds(5), [&order]() { order.push_back(99); });
        Simulator::Schedule(MilliSeconds(1), [&cancelled]() { cancelled.Cancel(); });
        Simulator::Stop(MilliSeconds(20));
        const auto t0 = std::chrono::steady_clock::now();
        Simulator::Run();
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_EQ(order, (std::vector<int>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
        EXPECT_EQ(Simulator::Now(), MilliSeconds(20));
        // 20 ms simulated at dilation 5 cannot take less than 100 ms of wall time (a lower
        // bound only: how much longer depends on the machine).
        EXPECT_GE(wall, 0.0999);
        auto impl = EmuRealtimeSimulatorImpl::Current();
        ASSERT_TRUE(impl);
        EXPECT_EQ(impl->GetLagStats().dilation, 5.0);
        EXPECT_GE(impl->GetLagStats().events, 11u);
    });
}

TEST(EmuRealtimeSimulator, RecentLagForgetsABurstThatIsOver)
{
    // A bring-up burst, as a large fabric's at time zero: an event that holds the thread for
    // 200 ms of wall time makes the fifty behind it that late. Then regular events, on time
    // unless the machine stalls. The since-start figures keep the burst for ever; the recent
    // ones (the last whole LagWindow and the one in progress) are the fabric's lag now.
    WithEmuSimulator(1.0, []() {
        auto impl = EmuRealtimeSimulatorImpl::Current();
        ASSERT_TRUE(impl);
        impl->SetAttribute("LagWindow", TimeValue(MilliSeconds(200)));
        Simulator::ScheduleNow([]() {
            const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
            while (std::chrono::steady_clock::now() < until)
            {
            }
        });
        for (int i = 1; i <= 50; ++i)
        {
            Simulator::Schedule(MicroSeconds(i), []() {});
        }
        for (int ms = 700; ms < 1100; ms += 5)
        {
            Simulator::Schedule(MilliSeconds(ms), []() {});
        }
        EmuLagStats at;
        Simulator::Schedule(MilliSeconds(1100), [&at, impl]() { at = impl->GetLagStats(); });
        Simulator::Stop(MilliSeconds(1101));
        Simulator::Run();
        // Since the start: the burst's fifty, each at least 199.9 ms late.
        EXPECT_GE(at.maxLagNs, 199'000'000);
        EXPECT_GE(at.lateEvents, 50u);
        // Recent: the window [800, 1000) ms and [1000, 1100) ms: the regular events only.
        EXPECT_GE(at.recentWindowS, 0.2);
        EXPECT_LE(at.recentWindowS, 0.4);
        EXPECT_GE(at.recentEvents, 40u);
        EXPECT_LE(at.recentEvents, at.events - 50);
        // The burst's lag was 200 ms; a stall of the machine in the window may add some.
        EXPECT_LT(at.recentMaxLagNs, 150'000'000) << "the burst is not recent";
        EXPECT_LT(at.recentMeanLagNs, at.meanLagNs);
    });
}

TEST(EmuRealtimeSimulator, OnlyArmedIdleHooksRunAndEachUntilItHasNothingHeld)
{
    // A thousand bridges' hooks, as a k=16 fabric has: all of them ran at every idle turn, and
    // every event of the fabric came later the more hosts it had. Now only an armed hook runs,
    // and it stays armed while it returns true.
    WithEmuSimulator(1.0, []() {
        auto impl = EmuRealtimeSimulatorImpl::Current();
        ASSERT_TRUE(impl);
        std::vector<int> calls(1000, 0);
        std::vector<uint64_t> ids;
        for (size_t i = 0; i < calls.size(); ++i)
        {
            // Hook 7 holds work for three turns; the others have none.
            ids.push_back(
                impl->AddIdleHook([&calls, i](int64_t) { return ++calls[i] < 3 && i == 7; }));
        }
        EXPECT_EQ(impl->GetArmedIdleHooks(), 0u);
        // Armed from inside the simulation (as a bridge arms its hook when it holds a read),
        // twice (the second is no new entry); hook 9 armed and removed before it runs.
        Simulator::Schedule(MilliSeconds(1), [&]() {
            impl->ArmIdleHook(ids[7]);
            impl->ArmIdleHook(ids[7]);
            impl->ArmIdleHook(ids[9]);
            impl->ArmIdleHook(ids[11]);
            impl->RemoveIdleHook(ids[9]);
        });
        // Idle turns between events, for 200 ms: enough for hook 7's three turns even if the
        // machine takes the CPU away for a while.
        for (int ms = 2; ms < 200; ++ms)
        {
            Simulator::Schedule(MilliSeconds(ms), []() {});
        }
        Simulator::Stop(MilliSeconds(200));
        Simulator::Run();
        EXPECT_EQ(calls[7], 3) << "armed until it returned false";
        EXPECT_EQ(calls[11], 1) << "armed once, nothing held";
        EXPECT_EQ(calls[9], 0) << "removed";
        int others = 0;
        for (size_t i = 0; i < calls.size(); ++i)
        {
            others += (i == 7 || i == 9 || i == 11) ? 0 : calls[i];
        }
        EXPECT_EQ(others, 0);
        EXPECT_EQ(impl->GetArmedIdleHooks(), 0u);
    });
}

TEST(EmuRealtimeSimulator, EventsFromAnotherThreadEnterAtTheirWallTime)
{
    WithEmuSimulator(1.0, []() {
        std::vector<Time> seen;
        Simulator::Stop(Seconds(10)); // a guard: the event stops the run
        std::thread other;
        // The thread starts once the clock runs (at simulated 0), so its 100 ms are the clock's.
        Simulator::ScheduleNow([&other, &seen]() {
            other = std::thread([&seen]() {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                Simulator::ScheduleWithContext(Simulator::NO_CONTEXT, Time(0), [&seen]() {
                    seen.push_back(Simulator::Now());
                    Simulator::Stop();
                });
            });
        });
        Simulator::Run();
        other.join();
        ASSERT_EQ(seen.size(), 1u);
        // Handed in after 100 ms of wall time: stamped no earlier than that.
        EXPECT_GE(seen[0], MilliSeconds(100));
        EXPECT_LT(seen[0], Seconds(10));
        EXPECT_EQ(EmuRealtimeSimulatorImpl::Current()->GetLagStats().foreignEvents, 1u);
    });
}

namespace
{
/// Watches a pipe whose one byte is written at simulated 10 ms, runs 400 ms with
/// `idleSpin` after input, no spin before deadlines and `preemptedGap`, and returns the lag
/// figures (spin time and back-offs).
EmuLagStats
RunOneInputWithIdleSpin(Time idleSpin, Time preemptedGap)
{
    EmuLagStats stats;
    WithEmuSimulator(1.0, [&]() {
        Config::SetDefault("ns3::EmuRealtimeSimulatorImpl::IdleSpin", TimeValue(idleSpin));
        Config::SetDefault("ns3::EmuRealtimeSimulatorImpl::SpinWindow", TimeValue(Time(0)));
        Config::SetDefault("ns3::EmuRealtimeSimulatorImpl::SpinPreemptedGap",
                           TimeValue(preemptedGap));
        int fds[2];
        ASSERT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
        int reads = 0;
        Simulator::ScheduleNow([&]() {
            ASSERT_TRUE(EmuRealtimeSimulatorImpl::Current()->WatchFd(fds[0], 0, [&]() {
                char c;
                while (read(fds[0], &c, 1) == 1)
                {
                    ++reads;
                }
            }));
        });
        Simulator::Schedule(MilliSeconds(10), [&]() {
            const char c = 'x';
            ASSERT_EQ(write(fds[1], &c, 1), 1);
        });
        Simulator::Stop(MilliSeconds(400));
        Simulator::Run();
        EXPECT_EQ(reads, 1);
        stats = EmuRealtimeSimulatorImpl::Current()->GetLagStats();
        EmuRealtimeSimulatorImpl::Current()->UnwatchFd(fds[0]);
        close(fds[0]);
        close(fds[1]);
    });
    return stats;
}
} // namespace

TEST(EmuRealtimeSimulator, SpinsOnlyIdleSpinAfterInputThenSleeps)
{
    // Never backing off, the spin after the one input lasts IdleSpin (20 ms) of wall time and
    // no longer: the other 370 ms of the run are slept, so an idle fabric costs no CPU. (The
    // bound leaves room for the machine taking the CPU away mid-spin; spinning on would be
    // 390 ms.)
    const EmuLagStats s = RunOneInputWithIdleSpin(MilliSeconds(20), Time(0));
    EXPECT_GE(s.spinNs, 10'000'000);
    EXPECT_LE(s.spinNs, 200'000'000);
    EXPECT_EQ(s.spinBackoffs, 0u);
    // Without IdleSpin (and SpinWindow 0) nothing is spun at all.
    EXPECT_EQ(RunOneInputWithIdleSpin(Time(0), Time(0)).spinNs, 0);
}

TEST(EmuRealtimeSimulator, ASpinFoundPreemptedBacksOffToSleeping)
{
    // A preempted-gap of 1 ns: the second turn of any spin looks preempted, so the simulator
    // backs off at once and spins no further for SpinBackoff (100 ms, longer than the 20 ms
    // spin would have lasted).
    const EmuLagStats s = RunOneInputWithIdleSpin(MilliSeconds(20), NanoSeconds(1));
    EXPECT_EQ(s.spinBackoffs, 1u);
    EXPECT_EQ(s.spinNs, 0);
}

TEST(EmuEthFabric, ASteadyStreamOfKernelFramesIsNeitherDroppedNorHeldInTheSwitch)
{
    // 3,000 full-size segments at 1 Gb/s through a 100 Gb/s switch: the buffer stays nearly
    // empty and every segment arrives (the switch MMU accounts Verbatim frames like any other).
    Config::Reset();
    EthFabric fab = EthFabricHelper().Build(MakeTwoHostsOneSwitch());
    Delivered atH1;
    fab.HostPort(1)->SetEthReceiveCallback(MakeCallback(&Delivered::On, &atH1));
    const auto tcp = KernelTcpFrame(fab.HostIp(0), fab.HostIp(1), 0, 64, 1460);
    for (int k = 0; k < 3000; ++k)
    {
        Simulator::Schedule(MicroSeconds(12 * k + 1), [&]() {
            EXPECT_TRUE(fab.HostPort(0)->SendFromHost(tcp.data(), tcp.size()));
        });
    }
    Simulator::Stop(MilliSeconds(40));
    Simulator::Run();
    EXPECT_EQ(atH1.frames.size(), 3000u);
    for (const auto& p : fab.AllPorts())
    {
        for (int r = 0; r < static_cast<int>(EthDropReason::Count); ++r)
        {
            EXPECT_EQ(p->GetDropCount(static_cast<EthDropReason>(r)), 0u)
                << EthDropReasonName(static_cast<EthDropReason>(r));
        }
    }
    Simulator::Destroy();
}
