// Shared by the pty-bridge tests: a simulated ORv3-like segment behind an Rs485PtyBridge, run on
// the real-time scheduler while a peer (raw termios client or a real Modbus master) works in
// another thread, and a raw serial client for the slave side.
#ifndef CNUAS_TEST_EMU_PTY_UTIL_H
#define CNUAS_TEST_EMU_PTY_UTIL_H

#include "helpers/rack/modbus-helper.h"
#include "helpers/rack/rs485-bus-helper.h"
#include "helpers/rack/rs485-pty-bridge-helper.h"
#include "models/emu/rs485-pty-bridge.h"
#include "models/rack/modbus-register-bank.h"
#include "models/rack/modbus-rtu.h"
#include "models/rack/modbus-slave.h"

#include "ns3/node-container.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <functional>
#include <future>
#include <memory>
#include <poll.h>
#include <string>
#include <termios.h>
#include <thread>
#include <unistd.h>
#include <sstream>
#include <vector>

namespace cnuas_test
{

using namespace ns3;

/// ORv3 PSU registers the tests read, with the rackmon2 map's fixed-point precision
/// (orv3_psu.json: value = raw / 2^precision): (register, physical value, precision).
struct PsuValue
{
    uint16_t reg;
    double value;
    int precision;
};

inline const std::vector<PsuValue>&
PsuValues()
{
    static const std::vector<PsuValue> v = {
        {69, 25.5, 7},       // PSU_Temp0_Inlet, degC (signed)
        {79, 51.0, 10},      // PSU_Output_Voltage, V
        {80, 58.796875, 6},  // PSU_Output_Current, A
        {81, 9.75, 6},       // I_Share_Current_Value, A
        {82, 3000.0, 3},     // PSU_Output_Power, W
    };
    return v;
}

inline uint16_t
PsuRaw(const PsuValue& p)
{
    return static_cast<uint16_t>(std::lround(std::ldexp(p.value, p.precision)));
}

/**
 * A PSU-like bank: holding registers 0..119; the telemetry block (0..93) is read-only and a
 * write to it is refused with IllegalDataAddress (exception 02), the way a device refuses a
 * register it does not let the master write; 94..119 (settings, Unix time) are writable.
 */
class WriteProtectedBank : public ModbusMemoryRegisterBank
{
  public:
    static constexpr uint16_t kFirstWritable = 94;
    uint64_t refusedWrites = 0;

    ModbusExceptionCode WriteHoldingRegisters(uint16_t start,
                                              const std::vector<uint16_t>& values) override
    {
        if (start < kFirstWritable)
        {
            refusedWrites++;
            return ModbusExceptionCode::IllegalDataAddress;
        }
        return ModbusMemoryRegisterBank::WriteHoldingRegisters(start, values);
    }
};

inline Ptr<WriteProtectedBank>
MakePsuBank(uint16_t unitSeed)
{
    Ptr<WriteProtectedBank> b = CreateObject<WriteProtectedBank>();
    b->DefineHoldingRegisters(0, 120);
    for (uint16_t r = 0; r < 120; ++r)
    {
        b->SetHoldingRegister(r, static_cast<uint16_t>(unitSeed + r));
    }
    b->SetHoldingString(8, 8, "ECD17020037");
    for (const PsuValue& p : PsuValues())
    {
        b->SetHoldingRegister(p.reg, PsuRaw(p));
    }
    return b;
}

inline Rs485Format
Format(uint32_t baud, Rs485Parity p = Rs485Parity::Even)
{
    Rs485Format f;
    f.baudRate = baud;
    f.parity = p;
    return f;
}

/// A segment: slaves on in-memory PSU banks plus the bridge, on the real-time scheduler.
class PtySegment
{
  public:
    NodeContainer nodes;
    Ptr<Rs485Channel> bus;
    std::vector<Ptr<ModbusSlave>> slaves;
    std::vector<Ptr<WriteProtectedBank>> banks;
    Ptr<Rs485PtyBridge> bridge;

    /// Builds the segment (call after EnableRealtime, before any Simulator call).
    void Build(const Rs485Format& busFormat,
               const std::vector<uint8_t>& addresses,
               Rs485PtyBridgeHelper bridgeHelper = Rs485PtyBridgeHelper())
    {
        nodes.Create(addresses.size() + 1);
        Rs485BusHelper bh;
        bh.SetFormat(busFormat);
        bus = bh.CreateBus();
        ModbusHelper mh;
        for (size_t i = 0; i < addresses.size(); ++i)
        {
            Ptr<Rs485Device> d = bh.Install(nodes.Get(i), bus);
            banks.push_back(MakePsuBank(static_cast<uint16_t>(1000 * (i + 1))));
            slaves.push_back(mh.InstallSlave(d, addresses[i], banks.back()));
        }
        bridgeHelper.SetFormat(busFormat);
        bridge = bridgeHelper.Install(nodes.Get(addresses.size()), bus);
    }

    /**
     * Runs the real-time simulation in this thread and `peer` in another; the simulation stops
     * when the peer returns (or at `guard`, so a broken bridge cannot hang the suite).
     */
    void Run(const std::function<void()>& peer, Time guard = Seconds(60))
    {
        Simulator::Stop(guard);
        std::thread t;
        // The peer starts once the devices have been up for a while: a Modbus receiver that has
        // just started discards what it hears before its first t3.5 of silence (Modbus over
        // serial line v1.02 §2.5.1.1, figure 14, Initial state).
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

/// Test fixture: real-time scheduler on, everything torn down after.
class PtyBridgeTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        Simulator::Destroy();
        Rs485PtyBridgeHelper::EnableRealtime();
    }
    void TearDown() override
    {
        Simulator::Destroy();
        Rs485PtyBridgeHelper::DisableRealtime();
    }
};

/// How a raw client configures the port.
struct RawSettings
{
    speed_t speed = B19200;
    bool parity = true;  ///< PARENB
    bool odd = false;    ///< PARODD
    bool inpck = true;   ///< INPCK (libmodbus and rackmon set it with parity)
    bool ignpar = false; ///< IGNPAR
    bool twoStop = false;
    uint8_t vmin = 1; ///< VMIN (rackmon 1, phosphor-modbus 0), VTIME is 0
    bool parmrk = false; ///< PARMRK
    /// tcsetattr with TCSAFLUSH (rackmon, phosphor-modbus), which discards what the port held
    /// before; false: TCSANOW (libmodbus, pyserial), which keeps it.
    bool flush = true;
};

/**
 * A serial client as rackmon and phosphor-modbus write one: termios built from zero (raw,
 * CS8|CLOCAL|CREAD, parity bits), applied with tcsetattr(TCSAFLUSH) (or TCSANOW, see
 * RawSettings::flush).
 */
class RawClient
{
  public:
    ~RawClient() { Close(); }

    /// Opens and configures; returns the tcsetattr result (0, or -1 with errno in *err).
    int Open(const std::string& path, const RawSettings& s, int* err = nullptr)
    {
        Close();
        m_fd = open(path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (m_fd < 0)
        {
            if (err)
            {
                *err = errno;
            }
            return -1;
        }
        return Configure(s, err);
    }

    int Configure(const RawSettings& s, int* err = nullptr)
    {
        struct termios t = {};
        cfsetspeed(&t, s.speed);
        t.c_cflag |= CS8 | CLOCAL | CREAD;
        if (s.parity)
        {
            t.c_cflag |= PARENB;
        }
        if (s.odd)
        {
            t.c_cflag |= PARODD;
        }
        if (s.twoStop)
        {
            t.c_cflag |= CSTOPB;
        }
        if (s.inpck)
        {
            t.c_iflag |= INPCK;
        }
        if (s.ignpar)
        {
            t.c_iflag |= IGNPAR;
        }
        if (s.parmrk)
        {
            t.c_iflag |= PARMRK;
        }
        t.c_cc[VMIN] = s.vmin;
        t.c_cc[VTIME] = 0;
        const int r = tcsetattr(m_fd, s.flush ? TCSAFLUSH : TCSANOW, &t);
        if (err)
        {
            *err = r == 0 ? 0 : errno;
        }
        return r;
    }

    bool IsOpen() const { return m_fd >= 0; }
    int Fd() const { return m_fd; }

    void Close()
    {
        if (m_fd >= 0)
        {
            close(m_fd);
            m_fd = -1;
        }
    }

    void Write(const std::vector<uint8_t>& b)
    {
        size_t off = 0;
        while (off < b.size())
        {
            const ssize_t n = write(m_fd, b.data() + off, b.size() - off);
            if (n > 0)
            {
                off += n;
            }
            else if (n < 0 && errno == EAGAIN)
            {
                // The pty's buffer is full: wait until the bridge has read some (no busy loop,
                // which would starve the reader on a loaded machine).
                pollfd p = {m_fd, POLLOUT, 0};
                poll(&p, 1, 100);
            }
            else if (n < 0 && errno != EINTR)
            {
                return;
            }
        }
    }

    /**
     * Reads until `want` bytes came or the line has been quiet for `quietMs` after the last
     * byte (or `firstMs` before the first one), as a master's response and byte timeouts do.
     * The defaults are generous (a read ends as soon as `want` bytes came): the bridge writes
     * an answer byte by byte in simulated time, which a loaded machine may stall mid-frame.
     * A test that expects silence passes its own short `firstMs`.
     */
    std::vector<uint8_t> Read(size_t want, int firstMs = 2000, int quietMs = 1000)
    {
        std::vector<uint8_t> out;
        while (out.size() < want)
        {
            pollfd p = {m_fd, POLLIN, 0};
            const int r = poll(&p, 1, out.empty() ? firstMs : quietMs);
            if (r <= 0)
            {
                break;
            }
            uint8_t buf[512];
            const ssize_t n = read(m_fd, buf, sizeof buf);
            if (n <= 0)
            {
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                {
                    continue;
                }
                break;
            }
            out.insert(out.end(), buf, buf + n);
        }
        return out;
    }

  private:
    int m_fd = -1;
};

/// FC 03 request ADU (address, start, count) with its CRC.
inline std::vector<uint8_t>
ReadHoldingAdu(uint8_t unit, uint16_t start, uint16_t count)
{
    return ModbusRtuBuildAdu(unit,
                             {0x03,
                              static_cast<uint8_t>(start >> 8),
                              static_cast<uint8_t>(start & 0xFF),
                              static_cast<uint8_t>(count >> 8),
                              static_cast<uint8_t>(count & 0xFF)});
}

/// The registers of a normal FC 03 response, or empty if it is not one (length, CRC, fields).
inline std::vector<uint16_t>
ParseReadHoldingResponse(const std::vector<uint8_t>& adu, uint8_t unit, uint16_t count)
{
    const size_t len = 5 + 2 * count;
    if (adu.size() != len || adu[0] != unit || adu[1] != 0x03 || adu[2] != 2 * count ||
        !ModbusRtuCrcOk(adu.data(), adu.size()))
    {
        return {};
    }
    std::vector<uint16_t> regs;
    for (uint16_t i = 0; i < count; ++i)
    {
        regs.push_back(static_cast<uint16_t>(adu[3 + 2 * i] << 8 | adu[4 + 2 * i]));
    }
    return regs;
}

inline void
SleepMs(int ms)
{
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

/**
 * Waits (polling every 10 ms) until `done` holds; false at the deadline. For a state the test
 * can observe, instead of a sleep that guesses how long the other threads take.
 */
inline bool
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

/**
 * From the peer thread, while the real-time simulation runs: the bridge's counters read in the
 * simulation thread (the thread that writes most of them; GetCounters is not for other threads).
 */
inline Rs485PtyBridgeCounters
CountersFromSimulation(Ptr<Rs485PtyBridge> bridge)
{
    auto done = std::make_shared<std::promise<Rs485PtyBridgeCounters>>();
    std::future<Rs485PtyBridgeCounters> f = done->get_future();
    Simulator::ScheduleWithContext(Simulator::NO_CONTEXT, Time(0), [bridge, done]() {
        done->set_value(bridge->GetCounters());
    });
    return f.get();
}

/// The step lines ("open K ...") of tests/peers/modbus-rtu-client.c's output; the "note:"
/// lines it writes to stderr for retried timeouts are left out.
inline std::vector<std::string>
PeerClientStepLines(const std::string& out)
{
    std::vector<std::string> lines;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line))
    {
        if (line.rfind("open ", 0) == 0)
        {
            lines.push_back(line);
        }
    }
    return lines;
}

} // namespace cnuas_test

#endif
