#include "sim-progress.h"

#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <unistd.h>

namespace ns3
{

namespace
{
constexpr int kBarWidth = 10;
constexpr int kMaxTicks = 200;
constexpr int kInterruptChecks = 20000; ///< per run, with StopOnInterrupt
constexpr double kPlainLineSeconds = 5.0;

volatile std::sig_atomic_t g_interrupted = 0;

void
OnInterrupt(int)
{
    g_interrupted = 1;
    // A second Ctrl-C ends the process as usual (signal() is async-signal-safe).
    std::signal(SIGINT, SIG_DFL);
}
} // namespace

SimProgress::SimProgress(Time end, bool enabled, std::FILE* out)
    : m_end(end),
      m_interval(end / kMaxTicks),
      m_enabled(enabled && end.IsStrictlyPositive() && out != nullptr),
      m_out(out),
      m_tty(out != nullptr && isatty(fileno(out)) == 1)
{
    // Below 200 resolution steps the division gives 0; one step is then the finest interval.
    if (m_interval.IsZero())
    {
        m_interval = TimeStep(1);
    }
}

SimProgress::~SimProgress()
{
    // EventId::Cancel rather than Simulator::Cancel: after Simulator::Destroy the latter would
    // create a new simulator just to cancel.
    m_event.Cancel();
    RestoreSignal();
}

void
SimProgress::SetWork(std::function<std::pair<uint64_t, uint64_t>()> work, std::string label)
{
    m_work = std::move(work);
    m_workLabel = std::move(label);
}

void
SimProgress::StopOnInterrupt()
{
    if (m_started || !m_end.IsStrictlyPositive())
    {
        return;
    }
    m_stopOnInterrupt = true;
    const Time check = m_end / kInterruptChecks;
    m_interval = check.IsZero() ? TimeStep(1) : check;
    m_ticksPerDraw = kInterruptChecks / kMaxTicks;
}

void
SimProgress::RestoreSignal()
{
    if (m_signalInstalled)
    {
        sigaction(SIGINT, &m_oldAction, nullptr);
        m_signalInstalled = false;
    }
}

void
SimProgress::Start()
{
    if ((!m_enabled && !m_stopOnInterrupt) || m_started)
    {
        return;
    }
    struct sigaction current = {};
    if (m_stopOnInterrupt && sigaction(SIGINT, nullptr, &current) == 0 &&
        current.sa_handler != SIG_IGN)
    {
        // (A process started with SIGINT ignored, as a shell starts a background job, keeps
        // ignoring it.)
        g_interrupted = 0;
        struct sigaction sa = {};
        sa.sa_handler = &OnInterrupt;
        sigemptyset(&sa.sa_mask);
        m_signalInstalled = sigaction(SIGINT, &sa, &m_oldAction) == 0;
    }
    m_started = true;
    m_wallStart = std::chrono::steady_clock::now();
    m_eventsAtStart = Simulator::GetEventCount();
    m_event = Simulator::Schedule(m_interval, &SimProgress::Tick, this);
    ++m_ticks;
}

void
SimProgress::Tick()
{
    if (m_stopOnInterrupt && g_interrupted)
    {
        m_interrupted = true;
        Simulator::Stop();
        return;
    }
    if (m_enabled && m_ticks % m_ticksPerDraw == 0)
    {
        Draw(false);
    }
    // The current event is already off the queue: if nothing else is pending the simulation is
    // over, and rescheduling would only move its final time forward.
    if (!Simulator::IsFinished() && Simulator::Now() + m_interval <= m_end)
    {
        m_event = Simulator::Schedule(m_interval, &SimProgress::Tick, this);
        ++m_ticks;
    }
}

void
SimProgress::Finish()
{
    if (!m_started)
    {
        return;
    }
    Simulator::Cancel(m_event);
    RestoreSignal();
    if (m_enabled)
    {
        Draw(true);
    }
    m_started = false;
}

void
SimProgress::Draw(bool final)
{
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - m_wallStart).count();
    if (!final && !m_tty && wall - m_lastPlainLine < kPlainLineSeconds)
    {
        return;
    }
    Time now = Simulator::Now();
    double fraction = std::clamp(now.GetDouble() / m_end.GetDouble(), 0.0, 1.0);
    std::string work;
    if (m_work)
    {
        const auto [done, total] = m_work();
        fraction = total > 0 ? std::clamp(double(done) / double(total), 0.0, 1.0) : 0.0;
        work = ", " + std::to_string(done) + "/" + std::to_string(total) + " " + m_workLabel;
    }
    double eta = -1;
    if (final && !m_interrupted)
    {
        // The run is over even if it stopped before `end` (or with work left: the limit).
        fraction = m_work ? fraction : 1.0;
    }
    else if (!final)
    {
        eta = fraction > 0 ? wall * (1 - fraction) / fraction : std::nan("");
    }
    uint64_t events = Simulator::GetEventCount() - m_eventsAtStart;
    double rate = wall > 0 ? static_cast<double>(events) / wall : 0;
    std::string line = FormatLine(fraction, now, m_end, wall, eta, rate);
    if (!work.empty())
    {
        line.insert(line.find(", wall "), work);
    }
    if (final && m_interrupted)
    {
        line.replace(line.rfind(", done, "), 8, ", interrupted, ");
    }
    if (m_tty)
    {
        // "\033[K" clears what a longer previous line left behind.
        std::fprintf(m_out, "\r%s\033[K%s", line.c_str(), final ? "\n" : "");
    }
    else
    {
        std::fprintf(m_out, "%s\n", line.c_str());
        m_lastPlainLine = wall;
    }
    std::fflush(m_out);
}

std::string
SimProgress::FormatSimTime(Time t)
{
    double ps = std::fabs(static_cast<double>(t.GetPicoSeconds()));
    static const std::pair<double, const char*> kUnits[] = {
        {1e12, "s"}, {1e9, "ms"}, {1e6, "us"}, {1e3, "ns"}, {1, "ps"}};
    for (const auto& [scale, unit] : kUnits)
    {
        // 0.9995: a value that would print as "1e+03 ms" is shown as "1 s".
        if (ps >= scale * 0.9995 || scale == 1)
        {
            char buf[48];
            double v = static_cast<double>(t.GetPicoSeconds()) / scale;
            std::snprintf(buf, sizeof(buf), std::fabs(v) >= 999.5 ? "%.0f %s" : "%.3g %s", v,
                          ps == 0 ? "s" : unit);
            return buf;
        }
    }
    return "";
}

std::string
SimProgress::FormatWall(double seconds)
{
    char buf[48];
    if (seconds < 60)
    {
        std::snprintf(buf, sizeof(buf), "%.1f s", seconds);
    }
    else if (seconds < 3600)
    {
        auto s = static_cast<long>(seconds);
        std::snprintf(buf, sizeof(buf), "%ld min %02ld s", s / 60, s % 60);
    }
    else
    {
        auto m = static_cast<long>(seconds / 60);
        std::snprintf(buf, sizeof(buf), "%ld h %02ld min", m / 60, m % 60);
    }
    return buf;
}

std::string
SimProgress::FormatLine(double fraction,
                        Time simNow,
                        Time simEnd,
                        double wallSeconds,
                        double etaSeconds,
                        double eventsPerSecond)
{
    fraction = std::clamp(fraction, 0.0, 1.0);
    int filled = static_cast<int>(fraction * kBarWidth + 1e-9);
    std::string bar = "[" + std::string(filled, '#') + std::string(kBarWidth - filled, ' ') + "]";
    char pct[8];
    std::snprintf(pct, sizeof(pct), "%d%%", static_cast<int>(fraction * 100 + 1e-9));
    std::string eta;
    if (etaSeconds < 0)
    {
        eta = "done";
    }
    else if (std::isnan(etaSeconds))
    {
        eta = "ETA ?";
    }
    else
    {
        eta = "ETA " + FormatWall(etaSeconds);
    }
    char rate[48];
    if (eventsPerSecond >= 1e6)
    {
        std::snprintf(rate, sizeof(rate), "%.3g M events/s", eventsPerSecond / 1e6);
    }
    else if (eventsPerSecond >= 1e3)
    {
        std::snprintf(rate, sizeof(rate), "%.3g k events/s", eventsPerSecond / 1e3);
    }
    else
    {
        std::snprintf(rate, sizeof(rate), "%.3g events/s", eventsPerSecond);
    }
    return bar + " " + pct + " sim " + FormatSimTime(simNow) + " / " + FormatSimTime(simEnd) +
           ", wall " + FormatWall(wallSeconds) + ", " + eta + ", " + rate;
}

} // namespace ns3
