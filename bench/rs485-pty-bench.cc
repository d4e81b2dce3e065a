// What the pty bridge adds to a Modbus transaction: a client on the host writes an FC 03 request
// to the pty and reads the whole answer; the simulated bus (real-time scheduler, in its own
// thread) carries both at the baud rate. Reported per transaction:
//   wall_us  - wall-clock time from the client's write() to its last read() byte;
//   bus_us   - the same transaction in simulated time, from the request's arrival at the bridge
//              to the answer's last character handed to the pty (wire time + t3.5 + the slave's
//              ResponseDelay: what a real segment would take);
//   added_us - wall_us - bus_us: what the bridge, the real-time scheduler and the pty add
//              (mean; added_p50_us and added_p90_us: median and 90th percentile);
//   held     - requests the bridge held back for t3.5 (0: the 5 ms gap keeps it out).
// Manual time is wall_us, so "Time" in the table is the client's transaction time.
#include "bench/bench-util.h"
#include "helpers/rack/modbus-helper.h"
#include "helpers/rack/rs485-bus-helper.h"
#include "helpers/rack/rs485-pty-bridge-helper.h"
#include "models/rack/modbus-rtu.h"

#include "ns3/node-container.h"
#include "ns3/simulator.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <termios.h>
#include <thread>
#include <unistd.h>

using namespace ns3;

namespace
{

/// A segment with one slave (address 200, 125 registers) and the bridge, at one baud rate,
/// simulated in a thread of its own for as long as the benchmark runs.
class Segment
{
  public:
    explicit Segment(uint32_t baud)
    {
        m_thread = std::thread([this, baud]() { Simulate(baud); });
        std::unique_lock<std::mutex> lock(m_mutex);
        m_cv.wait(lock, [this]() { return m_ready; });
    }

    ~Segment() { Finish(); }

    /// Stops the simulation; the bridge's counters are then in `counters`.
    void Finish()
    {
        if (m_thread.joinable())
        {
            Simulator::ScheduleWithContext(Simulator::NO_CONTEXT, Time(0), []() {
                Simulator::Stop();
            });
            m_thread.join();
        }
    }

    Rs485PtyBridgeCounters counters;

    const std::string& Port() const { return m_port; }

    std::atomic<int64_t> fromClientPs{0};
    std::atomic<int64_t> lastToClientPs{0};
    std::atomic<uint64_t> toClient{0};

  private:
    void Simulate(uint32_t baud)
    {
        Rs485PtyBridgeHelper::EnableRealtime();
        NodeContainer nodes;
        nodes.Create(2);
        Rs485BusHelper bh;
        Rs485Format f;
        f.baudRate = baud;
        bh.SetFormat(f);
        Ptr<Rs485Channel> bus = bh.CreateBus();
        Ptr<ModbusMemoryRegisterBank> bank = CreateObject<ModbusMemoryRegisterBank>();
        bank->DefineHoldingRegisters(0, 125, 0x1234);
        ModbusHelper mh;
        mh.InstallSlave(bh.Install(nodes.Get(0), bus), 200, bank);
        Rs485PtyBridgeHelper ph;
        ph.SetFormat(f);
        Ptr<Rs485PtyBridge> bridge = ph.Install(nodes.Get(1), bus);
        bridge->TraceConnectWithoutContext("FromClient", MakeCallback(&Segment::FromClient, this));
        bridge->TraceConnectWithoutContext("ToClient", MakeCallback(&Segment::ToClient, this));
        if (!bridge->Start())
        {
            fprintf(stderr, "bridge: %s\n", bridge->GetError().c_str());
            std::abort();
        }
        m_port = bridge->GetPortPath();
        Simulator::Stop(Seconds(3600));
        Simulator::Schedule(MilliSeconds(10), [this]() {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_ready = true;
            m_cv.notify_all();
        });
        Simulator::Run();
        counters = bridge->GetCounters();
        Simulator::Destroy();
        Rs485PtyBridgeHelper::DisableRealtime();
    }

    void FromClient(const std::vector<uint8_t>&, const Rs485Format&)
    {
        fromClientPs = Simulator::Now().GetPicoSeconds();
    }
    void ToClient(uint8_t)
    {
        lastToClientPs = Simulator::Now().GetPicoSeconds();
        toClient++;
    }

    std::thread m_thread;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_ready = false;
    std::string m_port;
};

void
BM_PtyTransaction(benchmark::State& state)
{
    const uint32_t baud = static_cast<uint32_t>(state.range(0));
    const uint16_t regs = static_cast<uint16_t>(state.range(1));
    Segment seg(baud);
    const int fd = open(seg.Port().c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
    {
        state.SkipWithError("cannot open the pty");
        return;
    }
    struct termios t = {};
    cfsetspeed(&t, baud == 115200 ? B115200 : B19200);
    t.c_cflag = CS8 | CLOCAL | CREAD | PARENB;
    t.c_iflag = INPCK;
    t.c_cc[VMIN] = 1;
    cfsetspeed(&t, baud == 115200 ? B115200 : B19200);
    tcsetattr(fd, TCSAFLUSH, &t);

    const std::vector<uint8_t> req = ModbusRtuBuildAdu(
        200, {0x03, 0x00, 0x00, static_cast<uint8_t>(regs >> 8), static_cast<uint8_t>(regs)});
    const size_t want = 5 + 2 * regs;
    double wallSum = 0, busSum = 0;
    std::vector<double> added;
    uint64_t n = 0;
    uint8_t buf[512];
    for (auto _ : state)
    {
        // A master leaves the line quiet between transactions (rackmon's min_delay); 5 ms is
        // more than t3.5 at any rate here, so the bridge never holds the request back.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const uint64_t before = seg.toClient.load();
        const auto t0 = std::chrono::steady_clock::now();
        if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size()))
        {
            state.SkipWithError("write failed");
            break;
        }
        size_t got = 0;
        while (got < want)
        {
            pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, 2000) <= 0)
            {
                break;
            }
            const ssize_t r = read(fd, buf, sizeof buf);
            if (r <= 0)
            {
                break;
            }
            got += r;
        }
        const auto t1 = std::chrono::steady_clock::now();
        if (got != want)
        {
            state.SkipWithError("short answer");
            break;
        }
        while (seg.toClient.load() < before + want)
        {
            std::this_thread::yield(); // the trace runs just after the byte is written
        }
        const double wall = std::chrono::duration<double>(t1 - t0).count();
        const double bus = (seg.lastToClientPs.load() - seg.fromClientPs.load()) * 1e-12;
        state.SetIterationTime(wall);
        wallSum += wall;
        busSum += bus;
        added.push_back(wall - bus);
        n++;
    }
    close(fd);
    seg.Finish();
    state.counters["held"] = static_cast<double>(seg.counters.heldForSilence);
    if (n > 0)
    {
        state.counters["wall_us"] = wallSum / n * 1e6;
        state.counters["bus_us"] = busSum / n * 1e6;
        state.counters["added_us"] = (wallSum - busSum) / n * 1e6;
        std::sort(added.begin(), added.end());
        state.counters["added_p50_us"] = added[added.size() / 2] * 1e6;
        state.counters["added_p90_us"] = added[added.size() * 9 / 10] * 1e6;
    }
}
BENCHMARK(BM_PtyTransaction)
    ->Args({19200, 1})
    ->Args({19200, 125})
    ->Args({115200, 1})
    ->Args({115200, 125})
    ->UseManualTime()
    ->Iterations(200)
    ->Unit(benchmark::kMillisecond);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
