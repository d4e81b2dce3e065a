// The progress bar: its line format, and that it neither costs events when disabled nor
// stretches a simulation beyond its last real event.
#include "helpers/scenario/sim-progress.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <utility>

using namespace ns3;

namespace
{

std::string
Contents(std::FILE* f)
{
    std::fflush(f);
    std::rewind(f);
    std::string s;
    char buf[1024];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    {
        s.append(buf, n);
    }
    return s;
}

void
Nothing()
{
}

} // namespace

TEST(SimProgress, LineFormat)
{
    EXPECT_EQ(SimProgress::FormatLine(0.42, MicroSeconds(4200), MilliSeconds(10), 3.1, 4.3,
                                      1.2e6),
              "[####      ] 42% sim 4.2 ms / 10 ms, wall 3.1 s, ETA 4.3 s, 1.2 M events/s");
    EXPECT_EQ(SimProgress::FormatLine(1.0, MilliSeconds(10), MilliSeconds(10), 75, -1, 850),
              "[##########] 100% sim 10 ms / 10 ms, wall 1 min 15 s, done, 850 events/s");
    EXPECT_EQ(SimProgress::FormatLine(0, Seconds(0), Seconds(2), 0, std::nan(""), 0),
              "[          ] 0% sim 0 s / 2 s, wall 0.0 s, ETA ?, 0 events/s");
    EXPECT_EQ(SimProgress::FormatSimTime(PicoSeconds(40)), "40 ps");
    EXPECT_EQ(SimProgress::FormatSimTime(NanoSeconds(999)), "999 ns");
    EXPECT_EQ(SimProgress::FormatSimTime(PicoSeconds(999999)), "1 us");
    EXPECT_EQ(SimProgress::FormatSimTime(Seconds(1234)), "1234 s");
    EXPECT_EQ(SimProgress::FormatWall(7300), "2 h 01 min");
}

TEST(SimProgress, DisabledSchedulesNothing)
{
    std::FILE* out = std::tmpfile();
    SimProgress p(MilliSeconds(10), false, out);
    p.Start();
    EXPECT_TRUE(Simulator::IsFinished()) << "no event may be scheduled";
    Simulator::Run();
    p.Finish();
    EXPECT_EQ(p.GetTicks(), 0u);
    EXPECT_EQ(Contents(out), "");
    Simulator::Destroy();
    std::fclose(out);
}

TEST(SimProgress, TicksAtMost200AndPrintsFinalLine)
{
    std::FILE* out = std::tmpfile(); // not a terminal: plain lines only
    Simulator::Schedule(MilliSeconds(10), &Nothing);
    SimProgress p(MilliSeconds(10), true, out);
    p.Start();
    Simulator::Run();
    p.Finish();
    EXPECT_GE(p.GetTicks(), 199u);
    EXPECT_LE(p.GetTicks(), 200u);
    std::string s = Contents(out);
    // A fast run prints just the final line: the periodic plain line waits 5 s of wall time.
    EXPECT_EQ(s.find('\n'), s.size() - 1) << s;
    EXPECT_EQ(s.rfind("[##########] 100% sim 10 ms / 10 ms, wall ", 0), 0u) << s;
    EXPECT_NE(s.find(", done, "), std::string::npos) << s;
    Simulator::Destroy();
    std::fclose(out);
}

TEST(SimProgress, DoesNotOutliveTheSimulation)
{
    std::FILE* out = std::tmpfile();
    Simulator::Schedule(MicroSeconds(1200), &Nothing);
    SimProgress p(MilliSeconds(100), true, out); // a generous estimate of the end
    p.Start();
    Simulator::Run();
    // Ticks every 0.5 ms stop at the first one that finds nothing else pending.
    EXPECT_EQ(Simulator::Now(), MicroSeconds(1500));
    EXPECT_EQ(p.GetTicks(), 3u);
    p.Finish();
    EXPECT_NE(Contents(out).find("100% sim 1.5 ms / 100 ms"), std::string::npos);
    Simulator::Destroy();
    std::fclose(out);
}

TEST(SimProgress, WorkUnitsDriveTheBarAndTheLine)
{
    std::FILE* out = std::tmpfile();
    Simulator::Schedule(MilliSeconds(1), &Nothing);
    uint64_t done = 3;
    SimProgress p(MilliSeconds(10), true, out);
    p.SetWork([&done]() { return std::make_pair(done, uint64_t(4)); }, "flows");
    p.Start();
    Simulator::Run();
    p.Finish();
    const std::string s = Contents(out);
    // A run that ends with work left shows what was done, not 100 %.
    EXPECT_EQ(s.rfind("[#######   ] 75% sim 1 ms / 10 ms, 3/4 flows, wall ", 0), 0u) << s;
    EXPECT_NE(s.find(", done, "), std::string::npos) << s;
    Simulator::Destroy();
    std::fclose(out);
}

namespace
{
void
RaiseSigint()
{
    std::raise(SIGINT);
}
} // namespace

TEST(SimProgress, CtrlCStopsTheRunCleanlyAndTheHandlerIsRestored)
{
    struct sigaction before = {};
    sigaction(SIGINT, nullptr, &before);
    std::FILE* out = std::tmpfile();
    for (int ms = 1; ms <= 10; ++ms)
    {
        Simulator::Schedule(MilliSeconds(ms), &Nothing);
    }
    Simulator::Schedule(MilliSeconds(2), &RaiseSigint);
    SimProgress p(MilliSeconds(10), true, out);
    p.StopOnInterrupt();
    p.Start();
    Simulator::Run();
    // Stopped at the first check after 2 ms (checks every 10 ms / 20,000 = 0.5 us).
    EXPECT_TRUE(p.WasInterrupted());
    EXPECT_GE(Simulator::Now(), MilliSeconds(2));
    EXPECT_LE(Simulator::Now(), MilliSeconds(2) + MicroSeconds(1));
    p.Finish();
    const std::string s = Contents(out);
    EXPECT_NE(s.find(", interrupted, "), std::string::npos) << s;
    EXPECT_EQ(s.find(", done, "), std::string::npos) << s;
    // One line only: drawing stays at most every 1/200 of the run, not every check.
    EXPECT_EQ(s.find('\n'), s.size() - 1) << s;
    struct sigaction after = {};
    sigaction(SIGINT, nullptr, &after);
    EXPECT_EQ(after.sa_handler, before.sa_handler);
    Simulator::Destroy();
    std::fclose(out);
}

TEST(SimProgress, CtrlCIsCaughtWithTheBarDisabled)
{
    Simulator::Schedule(MilliSeconds(5), &Nothing);
    Simulator::Schedule(MilliSeconds(1), &RaiseSigint);
    SimProgress p(MilliSeconds(5), false, stderr);
    p.StopOnInterrupt();
    p.Start();
    Simulator::Run();
    p.Finish();
    EXPECT_TRUE(p.WasInterrupted());
    EXPECT_LT(Simulator::Now(), MilliSeconds(5));
    Simulator::Destroy();
}
