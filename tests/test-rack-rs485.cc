// RS-485 bus: character timing, local echo, turnaround, contention, format mismatch, noise.
#include "helpers/rack/rs485-bus-helper.h"
#include "models/rack/rs485-channel.h"
#include "models/rack/rs485-character.h"
#include "models/rack/rs485-device.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/error-model.h"
#include "ns3/node-container.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <vector>

using namespace ns3;

namespace
{

Rs485Format
Fmt(uint32_t baud, Rs485Parity p, uint8_t stop = 1, uint8_t data = 8)
{
    Rs485Format f;
    f.baudRate = baud;
    f.parity = p;
    f.stopBits = stop;
    f.dataBits = data;
    return f;
}

struct Bus
{
    NodeContainer nodes;
    std::vector<Ptr<Rs485Device>> dev;
    Ptr<Rs485Channel> ch;
};

Bus
MakeBus(uint32_t n, const Rs485Format& f, double lengthM = 10.0)
{
    Bus b;
    b.nodes.Create(n);
    Rs485BusHelper h;
    h.SetFormat(f);
    h.SetChannelAttribute("Length", DoubleValue(lengthM));
    b.ch = h.CreateBus();
    for (uint32_t i = 0; i < n; ++i)
    {
        b.dev.push_back(h.Install(b.nodes.Get(i), b.ch));
    }
    return b;
}

/// Everything one transceiver's upper layer received.
struct Sink
{
    std::vector<Rs485Character> chars;
    void Rx(const Rs485Character& c) { chars.push_back(c); }
    std::vector<uint8_t> Bytes() const
    {
        std::vector<uint8_t> v;
        for (const auto& c : chars)
        {
            v.push_back(c.byte);
        }
        return v;
    }
    size_t Errors() const
    {
        size_t n = 0;
        for (const auto& c : chars)
        {
            n += c.status != Rs485RxStatus::Ok ? 1 : 0;
        }
        return n;
    }
};

struct TxLog
{
    std::vector<Time> starts;
    std::vector<Time> ends;
    void Tx(uint8_t, Time s, Time e)
    {
        starts.push_back(s);
        ends.push_back(e);
    }
};

const std::vector<uint8_t> kRequest = {0x01, 0x03, 0x00, 0x00, 0x00, 0x0A, 0xC5, 0xCD};

} // namespace

TEST(Rs485Character, BitsPerCharacterAndExactTimes)
{
    EXPECT_EQ(Fmt(19200, Rs485Parity::Even).BitsPerCharacter(), 11u);
    EXPECT_EQ(Fmt(19200, Rs485Parity::None).BitsPerCharacter(), 10u);
    EXPECT_EQ(Fmt(19200, Rs485Parity::None, 2).BitsPerCharacter(), 11u);
    EXPECT_EQ(Fmt(19200, Rs485Parity::Odd, 2, 7).BitsPerCharacter(), 11u);
    // 8 x 11 / 19200 s = 4583333333.33 ps, rounded once.
    EXPECT_EQ(Fmt(19200, Rs485Parity::Even).CharactersTime(8).GetPicoSeconds(), 4583333333);
    // 572.916666.. us per character at 19200 8E1, 95.486.. us at 115200 8E1.
    EXPECT_EQ(Fmt(19200, Rs485Parity::Even).CharacterTime().GetPicoSeconds(), 572916667);
    EXPECT_EQ(Fmt(115200, Rs485Parity::Even).CharacterTime().GetPicoSeconds(), 95486111);
    EXPECT_EQ(Fmt(19200, Rs485Parity::Even).BitTime().GetPicoSeconds(), 52083333);
    // A million characters still come out exact (no 64-bit overflow, no accumulation).
    EXPECT_EQ(Fmt(115200, Rs485Parity::Even).CharactersTime(1000000).GetPicoSeconds(),
              95486111111111);
    EXPECT_EQ(Fmt(19200, Rs485Parity::Even).ToString(), "19200 8E1");
}

TEST(Rs485Character, WaveformRoundTripsInEveryFormat)
{
    for (auto p : {Rs485Parity::None, Rs485Parity::Even, Rs485Parity::Odd})
    {
        for (uint8_t stop : {1, 2})
        {
            const Rs485Format f = Fmt(19200, p, stop);
            for (int b = 0; b < 256; ++b)
            {
                const uint32_t w = Rs485EncodeWaveform(f, static_cast<uint8_t>(b));
                EXPECT_EQ(w & 1u, 0u) << "start bit is a space";
                EXPECT_EQ((w >> (f.BitsPerCharacter() - 1)) & 1u, 1u) << "stop bit is a mark";
                const Rs485Decoded d = Rs485DecodeWaveform(w, f, f);
                EXPECT_EQ(d.byte, b);
                EXPECT_EQ(d.status, Rs485RxStatus::Ok);
            }
        }
    }
    // Modbus over serial line v1.02 §2.6.1: data 1100 0101 has four 1 bits: even parity bit 0,
    // odd parity bit 1.
    EXPECT_EQ(Rs485ParityBit(Rs485Parity::Even, 0xC5, 8), 0);
    EXPECT_EQ(Rs485ParityBit(Rs485Parity::Odd, 0xC5, 8), 1);
    // Flipping one data bit under even parity is a parity error; flipping the stop bit a framing
    // error.
    const Rs485Format e = Fmt(19200, Rs485Parity::Even);
    const uint32_t w = Rs485EncodeWaveform(e, 0x5A);
    EXPECT_EQ(Rs485DecodeWaveform(w ^ (1u << 3), e, e).status, Rs485RxStatus::ParityError);
    EXPECT_EQ(Rs485DecodeWaveform(w ^ (1u << 10), e, e).status, Rs485RxStatus::FramingError);
    EXPECT_EQ(Rs485DecodeWaveform(w ^ 1u, e, e).status, Rs485RxStatus::FramingError);
}

TEST(Rs485Character, FormatCompatibility)
{
    const Rs485Format e = Fmt(19200, Rs485Parity::Even);
    EXPECT_TRUE(Rs485FormatsCompatible(e, e));
    EXPECT_TRUE(Rs485FormatsCompatible(e, Fmt(19200, Rs485Parity::Even, 2))); // stop bits
    EXPECT_TRUE(Rs485FormatsCompatible(e, Fmt(19584, Rs485Parity::Even)));    // +2 %
    EXPECT_FALSE(Rs485FormatsCompatible(e, Fmt(19600, Rs485Parity::Even)));   // +2.1 %
    EXPECT_FALSE(Rs485FormatsCompatible(e, Fmt(9600, Rs485Parity::Even)));
    EXPECT_FALSE(Rs485FormatsCompatible(e, Fmt(19200, Rs485Parity::Odd)));
    EXPECT_FALSE(Rs485FormatsCompatible(e, Fmt(19200, Rs485Parity::None)));
    EXPECT_FALSE(Rs485FormatsCompatible(e, Fmt(19200, Rs485Parity::Even, 1, 7)));
}

// A request of 8 characters at 19200 8E1 occupies the line for exactly 8 x 11 / 19200 s, and
// every other transceiver gets it one propagation delay later, byte for byte.
TEST(Rs485Bus, EightByteRequestTakesEightCharacterTimes)
{
    Bus b = MakeBus(3, Fmt(19200, Rs485Parity::Even), 100.0); // 100 m: 500 ns
    TxLog tx;
    b.dev[0]->TraceConnectWithoutContext("TxCharacter", MakeCallback(&TxLog::Tx, &tx));
    Sink s1, s2, s0;
    b.dev[0]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s0));
    b.dev[1]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s1));
    b.dev[2]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s2));
    Simulator::Schedule(MilliSeconds(1), [&]() { b.dev[0]->Send(kRequest); });
    Simulator::Run();

    ASSERT_EQ(tx.starts.size(), 8u);
    EXPECT_EQ(tx.starts[0], MilliSeconds(1));
    const int64_t exactPs = 4583333333; // 88 / 19200 s
    EXPECT_NEAR((tx.ends[7] - tx.starts[0]).GetPicoSeconds(), exactPs, 1);
    for (size_t i = 1; i < 8; ++i)
    {
        EXPECT_EQ(tx.starts[i], tx.ends[i - 1]) << "back to back";
    }
    EXPECT_EQ(s1.Bytes(), kRequest);
    EXPECT_EQ(s2.Bytes(), kRequest);
    EXPECT_EQ(s1.Errors(), 0u);
    ASSERT_EQ(s1.chars.size(), 8u);
    EXPECT_EQ(s1.chars[0].start, MilliSeconds(1) + NanoSeconds(500));
    EXPECT_EQ(s1.chars[7].end, tx.ends[7] + NanoSeconds(500));
    EXPECT_TRUE(s0.chars.empty()) << "SuppressEcho is on by default";
    EXPECT_EQ(b.dev[0]->GetCounters().rxEcho, 8u);
    EXPECT_EQ(b.dev[0]->GetCounters().rxEchoSuppressed, 8u);
    EXPECT_EQ(b.ch->GetCharacterCount(), 8u);
    EXPECT_EQ(b.ch->GetCollidedCharacterCount(), 0u);
    EXPECT_EQ(b.ch->GetBusyTime().GetPicoSeconds(), exactPs);
    EXPECT_FALSE(b.dev[0]->IsDriverEnabled());
    Simulator::Destroy();
}

// On a two-wire bus the sender hears itself, with no delay, when SuppressEcho is off.
TEST(Rs485Bus, LocalEchoReachesTheSenderWhenNotSuppressed)
{
    Bus b = MakeBus(2, Fmt(19200, Rs485Parity::Even), 100.0);
    b.dev[0]->SetAttribute("SuppressEcho", BooleanValue(false));
    Sink s0;
    b.dev[0]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s0));
    TxLog tx;
    b.dev[0]->TraceConnectWithoutContext("TxCharacter", MakeCallback(&TxLog::Tx, &tx));
    b.dev[0]->Send(kRequest);
    Simulator::Run();
    EXPECT_EQ(s0.Bytes(), kRequest);
    ASSERT_EQ(s0.chars.size(), 8u);
    EXPECT_TRUE(s0.chars[0].ownTransmission);
    EXPECT_EQ(s0.chars[7].end, tx.ends[7]) << "the echo has no propagation delay";
    Simulator::Destroy();
}

// Driver enable leads the first start bit by TxEnableDelay and outlasts the last stop bit by
// TxDisableDelay; bytes queued during the hold go out with no new enable delay.
TEST(Rs485Bus, TurnaroundDelaysFrameTheBurst)
{
    Bus b = MakeBus(2, Fmt(19200, Rs485Parity::Even));
    b.dev[0]->SetAttribute("TxEnableDelay", TimeValue(MicroSeconds(100)));
    b.dev[0]->SetAttribute("TxDisableDelay", TimeValue(MicroSeconds(300)));
    std::vector<std::pair<Time, bool>> de;
    b.dev[0]->TraceConnectWithoutContext(
        "Driver",
        MakeBoundCallback(+[](std::vector<std::pair<Time, bool>>* v, bool on) {
            v->emplace_back(Simulator::Now(), on);
        },
                          &de));
    TxLog tx;
    b.dev[0]->TraceConnectWithoutContext("TxCharacter", MakeCallback(&TxLog::Tx, &tx));
    const Rs485Format f = b.dev[0]->GetFormat();
    b.dev[0]->Send(std::vector<uint8_t>{1, 2});
    // Two characters end at 100 us + 2c; more bytes 100 us later, within the 300 us hold.
    const Time more = MicroSeconds(100) + f.CharactersTime(2) + MicroSeconds(100);
    Simulator::Schedule(more, [&]() { b.dev[0]->Send(std::vector<uint8_t>{3}); });
    Simulator::Run();
    ASSERT_EQ(de.size(), 2u);
    EXPECT_EQ(de[0].first, Time(0));
    EXPECT_TRUE(de[0].second);
    ASSERT_EQ(tx.starts.size(), 3u);
    EXPECT_EQ(tx.starts[0], MicroSeconds(100));
    EXPECT_EQ(tx.starts[2], more) << "no enable delay while the driver is still on";
    EXPECT_EQ(de[1].first, tx.ends[2] + MicroSeconds(300));
    EXPECT_FALSE(de[1].second);
    EXPECT_EQ(b.dev[0]->GetCounters().driverEnables, 1u);
    EXPECT_EQ(b.ch->GetContentionCount(), 0u);
    Simulator::Destroy();
}

// Two drivers talking at once: every overlapping character reaches everyone as a framing error.
TEST(Rs485Bus, OverlappingDriversCorruptTheOverlappingCharacters)
{
    Bus b = MakeBus(3, Fmt(19200, Rs485Parity::Even));
    Sink s2;
    b.dev[2]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s2));
    const Rs485Format f = b.dev[0]->GetFormat();
    // dev0 sends 4 characters; dev1 starts 2.5 characters later with 4 of its own: dev0's
    // characters 2 and 3 and dev1's characters 0 and 1 overlap (and dev1's driver is on from
    // 2.5c, so dev0's character 2 is hit as well).
    b.dev[0]->Send(std::vector<uint8_t>{0x11, 0x22, 0x33, 0x44});
    const Time t1 = PicoSeconds(f.CharactersTime(5).GetPicoSeconds() / 2);
    Simulator::Schedule(t1, [&]() {
        b.dev[1]->Send(std::vector<uint8_t>{0xF0, 0xF1, 0xF2, 0xF3});
    });
    Simulator::Run();
    ASSERT_EQ(s2.chars.size(), 8u);
    size_t collided = 0;
    for (const auto& c : s2.chars)
    {
        if (c.cause == Rs485RxCause::Collision)
        {
            collided++;
            EXPECT_EQ(c.status, Rs485RxStatus::FramingError);
        }
    }
    // dev0: characters 2 and 3; dev1: characters 0 and 1 (its char 1 ends at 4.5c > 4c).
    EXPECT_EQ(collided, 4u);
    EXPECT_EQ(b.ch->GetCollidedCharacterCount(), 4u);
    EXPECT_EQ(b.ch->GetContentionCount(), 1u);
    EXPECT_EQ(b.dev[2]->GetCounters().rxCollided, 4u);
    EXPECT_EQ(s2.chars[0].byte, 0x11);
    EXPECT_EQ(s2.chars[0].status, Rs485RxStatus::Ok);
    Simulator::Destroy();
}

// A driver left enabled with nothing to send (a stuck DE line) still destroys others' traffic;
// a driver enabled exactly when the other's last character ends touches nothing.
TEST(Rs485Bus, IdleEnabledDriverCollidesAndAdjacentDriversDoNot)
{
    {
        Bus b = MakeBus(3, Fmt(19200, Rs485Parity::Even));
        Sink s2;
        b.dev[2]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s2));
        b.dev[1]->ForceDriverEnable(true);
        b.dev[0]->Send(kRequest);
        Simulator::Schedule(MilliSeconds(20), [&]() { b.dev[1]->ForceDriverEnable(false); });
        Simulator::Run();
        EXPECT_EQ(s2.chars.size(), 8u);
        EXPECT_EQ(s2.Errors(), 8u);
        EXPECT_EQ(b.ch->GetCollidedCharacterCount(), 8u);
        Simulator::Destroy();
    }
    {
        Bus b = MakeBus(3, Fmt(19200, Rs485Parity::Even));
        Sink s2;
        b.dev[2]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s2));
        const Time end = b.dev[0]->GetFormat().CharactersTime(8);
        b.dev[0]->Send(kRequest);
        Simulator::Schedule(end, [&]() { b.dev[1]->Send(kRequest); });
        Simulator::Run();
        EXPECT_EQ(s2.chars.size(), 16u);
        EXPECT_EQ(s2.Errors(), 0u);
        EXPECT_EQ(b.ch->GetCollidedCharacterCount(), 0u);
        Simulator::Destroy();
    }
}

// A receiver whose baud rate, data bits or parity differ from the sender's gets errors, never
// clean bytes; within the 2 % baud tolerance, or with other stop bits, it reads clean.
TEST(Rs485Bus, FormatMismatchGivesErrorsNotCleanBytes)
{
    struct Case
    {
        Rs485Format rx;
        bool clean;
        Rs485RxStatus status; // when not clean
    };
    const std::vector<Case> cases = {
        {Fmt(19200, Rs485Parity::Even), true, Rs485RxStatus::Ok},
        {Fmt(19200, Rs485Parity::Even, 2), true, Rs485RxStatus::Ok},
        {Fmt(19500, Rs485Parity::Even), true, Rs485RxStatus::Ok},
        {Fmt(9600, Rs485Parity::Even), false, Rs485RxStatus::Ok},
        {Fmt(115200, Rs485Parity::Even), false, Rs485RxStatus::Ok},
        {Fmt(19200, Rs485Parity::Odd), false, Rs485RxStatus::ParityError},
        {Fmt(19200, Rs485Parity::None), false, Rs485RxStatus::Ok},
        {Fmt(19200, Rs485Parity::Even, 1, 7), false, Rs485RxStatus::Ok},
    };
    Bus b = MakeBus(1 + cases.size(), Fmt(19200, Rs485Parity::Even));
    std::vector<Sink> sinks(cases.size());
    for (size_t i = 0; i < cases.size(); ++i)
    {
        b.dev[i + 1]->SetFormat(cases[i].rx);
        b.dev[i + 1]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &sinks[i]));
    }
    std::vector<uint8_t> all;
    for (int v = 0; v < 256; ++v)
    {
        all.push_back(static_cast<uint8_t>(v));
    }
    b.dev[0]->Send(all);
    Simulator::Run();
    for (size_t i = 0; i < cases.size(); ++i)
    {
        SCOPED_TRACE(cases[i].rx.ToString());
        ASSERT_EQ(sinks[i].chars.size(), 256u) << "one received character per sent character";
        if (cases[i].clean)
        {
            EXPECT_EQ(sinks[i].Bytes(), all);
            EXPECT_EQ(sinks[i].Errors(), 0u);
            continue;
        }
        EXPECT_EQ(sinks[i].Errors(), 256u);
        EXPECT_EQ(b.dev[i + 1]->GetCounters().rxFormatMismatch, 256u);
        if (cases[i].status == Rs485RxStatus::ParityError)
        {
            // Same baud, odd instead of even parity: the data is right, every parity bit wrong.
            EXPECT_EQ(sinks[i].Bytes(), all);
            EXPECT_EQ(b.dev[i + 1]->GetCounters().rxParityErrors, 256u);
        }
    }
    // At half the sender's baud rate the receiver's samples skip sender bits: not the bytes
    // that were sent.
    EXPECT_NE(sinks[3].Bytes(), all);
    Simulator::Destroy();
}

// Line noise: with parity, flipped bits show as parity or framing errors; without parity, a
// flipped data bit passes as a wrong byte with status Ok (the CRC has to catch it).
TEST(Rs485Bus, NoiseFlipsBitsIntoParityAndFramingErrors)
{
    for (auto parity : {Rs485Parity::Even, Rs485Parity::None})
    {
        Bus b = MakeBus(2, Fmt(19200, parity));
        b.dev[1]->SetAttribute("BitErrorRate", DoubleValue(0.01));
        b.dev[1]->AssignStreams(7);
        Sink s;
        b.dev[1]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s));
        std::vector<uint8_t> data(2000, 0x55);
        b.dev[0]->Send(data);
        Simulator::Run();
        ASSERT_EQ(s.chars.size(), 2000u);
        const auto& c = b.dev[1]->GetCounters();
        size_t wrongButOk = 0;
        size_t noisy = 0;
        for (const auto& ch : s.chars)
        {
            noisy += ch.cause == Rs485RxCause::Noise ? 1 : 0;
            if (ch.status == Rs485RxStatus::Ok && ch.byte != 0x55)
            {
                wrongButOk++;
            }
        }
        // P(character hit) = 1 - 0.99^bits: about 10 % of 2000.
        EXPECT_GT(noisy, 120u);
        EXPECT_LT(noisy, 320u);
        EXPECT_EQ(c.rxNoise, noisy);
        if (parity == Rs485Parity::Even)
        {
            EXPECT_GT(c.rxParityErrors, 50u);
            // Only an even number of flips among data+parity can pass the parity check.
            EXPECT_LT(wrongButOk, 20u);
        }
        else
        {
            EXPECT_EQ(c.rxParityErrors, 0u);
            EXPECT_GT(wrongButOk, 50u);
        }
        EXPECT_GT(c.rxFramingErrors, 0u);
        Simulator::Destroy();
    }
}

// An ns-3 ErrorModel that hits every character flips one bit of each.
TEST(Rs485Bus, ErrorModelHitFlipsOneBit)
{
    Bus b = MakeBus(2, Fmt(19200, Rs485Parity::Even));
    Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
    em->SetAttribute("ErrorRate", DoubleValue(1.0));
    em->SetAttribute("ErrorUnit", EnumValue(RateErrorModel::ERROR_UNIT_PACKET));
    b.dev[1]->SetAttribute("ReceiveErrorModel", PointerValue(em));
    Sink s;
    b.dev[1]->SetCharacterReceiveCallback(MakeCallback(&Sink::Rx, &s));
    b.dev[0]->Send(std::vector<uint8_t>(100, 0xA5));
    Simulator::Run();
    ASSERT_EQ(s.chars.size(), 100u);
    // One flipped bit is always seen: a data/parity bit by the parity check, a start or stop
    // bit as a framing error.
    EXPECT_EQ(s.Errors(), 100u);
    Simulator::Destroy();
}
