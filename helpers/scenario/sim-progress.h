// A progress bar for long simulations, drawn from inside the simulation by a periodic event.
#ifndef CNUAS_HELPERS_SIM_PROGRESS_H
#define CNUAS_HELPERS_SIM_PROGRESS_H

#include "ns3/event-id.h"
#include "ns3/nstime.h"

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

namespace ns3
{

/**
 * \brief Reports simulated time, wall time, ETA and event rate of a run on stderr.
 *
 * Start() schedules an event every end/200 of simulated time (so at most ~200 per run, a
 * negligible load) that redraws
 *
 *     [#####     ] 42% sim 4.2 ms / 10 ms, wall 3.1 s, ETA 4.3 s, 1.2 M events/s
 *
 * in place with '\r' when the stream is a terminal, and otherwise (logs, pipes) prints it as a
 * plain line at most every 5 s of wall time, so logs stay short. The event stops rescheduling
 * once no other event is pending, so it never keeps a finished simulation running.
 * Finish() prints the final line. When disabled nothing is scheduled or printed.
 *
 * SetWork shows the share of the work done (e.g. flows finished) instead of simulated time:
 * a run that ends when its flows do rarely reaches its time limit. StopOnInterrupt makes
 * Ctrl-C (SIGINT) stop the run cleanly at the next check, so that the caller prints what it
 * has and closes what it wrote; a second Ctrl-C kills the process as usual.
 *
 * Use: construct, Start() before Simulator::Run(), Finish() after it and before
 * Simulator::Destroy().
 */
class SimProgress
{
  public:
    /// `out` is the stream to draw on; whether it is a terminal decides the drawing style.
    SimProgress(Time end, bool enabled, std::FILE* out = stderr);
    /// Cancels a pending tick: it holds `this`, and a run that throws skips Finish().
    ~SimProgress();
    SimProgress(const SimProgress&) = delete;
    SimProgress& operator=(const SimProgress&) = delete;

    void Start();
    void Finish();

    /**
     * Progress as `work()` = (done, total) units of `label` ("flows") instead of simulated
     * time: the bar, the percentage and the ETA follow done/total, and the line shows
     * "done/total label". Before Start().
     */
    void SetWork(std::function<std::pair<uint64_t, uint64_t>()> work, std::string label);

    /**
     * From Start() to Finish(), SIGINT stops the simulation (Simulator::Stop) at the next check
     * instead of ending the process; checks run every end/20,000 of simulated time (the line is
     * still drawn at most 200 times). The previous SIGINT disposition is restored by Finish()
     * or the destructor, and by the first SIGINT itself, so a second Ctrl-C kills. Works with
     * the bar disabled too; a process that was started with SIGINT ignored keeps ignoring it.
     * Before Start().
     */
    void StopOnInterrupt();
    /// Whether SIGINT stopped the run (valid after Simulator::Run returned).
    bool WasInterrupted() const
    {
        return m_interrupted;
    }

    /// Progress events scheduled so far (for tests: 0 when disabled).
    uint32_t GetTicks() const
    {
        return m_ticks;
    }

    /// One status line (no '\r' or newline). `fraction` in [0, 1]; `eta` < 0 prints "done".
    static std::string FormatLine(double fraction,
                                  Time simNow,
                                  Time simEnd,
                                  double wallSeconds,
                                  double etaSeconds,
                                  double eventsPerSecond);
    /// "4.2 ms", "10 ms", "0 s": three significant digits in the largest fitting unit.
    static std::string FormatSimTime(Time t);
    /// "3.1 s", "2 min 05 s", "1 h 02 min".
    static std::string FormatWall(double seconds);

  private:
    void Tick();
    void Draw(bool final);
    void RestoreSignal();

    Time m_end;
    Time m_interval;
    bool m_enabled;
    std::FILE* m_out;
    bool m_tty;
    EventId m_event;
    uint32_t m_ticks = 0;
    bool m_started = false;
    std::chrono::steady_clock::time_point m_wallStart;
    double m_lastPlainLine = 0; ///< wall seconds of the last plain (non-terminal) line
    uint64_t m_eventsAtStart = 0;
    std::function<std::pair<uint64_t, uint64_t>()> m_work;
    std::string m_workLabel;
    bool m_stopOnInterrupt = false;
    bool m_interrupted = false;
    bool m_signalInstalled = false;
    struct sigaction m_oldAction = {};
    uint32_t m_ticksPerDraw = 1; ///< with interrupt checks, draw on every Nth tick only
};

} // namespace ns3

#endif
