// Shared by the emulation tests: running `cnuas` and shell commands, Python peers, and a
// fixture that gives each test its own fabric name and state directory.
#ifndef CNUAS_TESTS_EMU_TEST_UTIL_H
#define CNUAS_TESTS_EMU_TEST_UTIL_H

#include "test-text-files.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace cnuas_emu_test
{

struct ShResult
{
    std::string out;
    int exit = -1;
};

inline ShResult
Sh(const std::string& cmd)
{
    ShResult r;
    // Error output with the rest, unless the command sends it elsewhere itself.
    const bool ownStderr = cmd.find("2>") != std::string::npos;
    int status;
    if (!ShellRun(ownStderr ? cmd : cmd + " 2>&1", r.out, status))
    {
        ADD_FAILURE() << "popen failed: " << cmd;
        return r;
    }
    r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

inline int
CountLines(const std::string& s)
{
    int n = 0;
    std::istringstream in(s);
    std::string line;
    while (std::getline(in, line))
    {
        n += !line.empty();
    }
    return n;
}

/// The state letter of a process or thread (R, S, T, ...) from its `stat` file in /proc, '?'
/// if it cannot be read. The state follows the command name, which is in parentheses and may
/// hold any character: it is read after the last ')'.
inline char
ProcessState(const std::filesystem::path& stat)
{
    std::ifstream in(stat);
    std::string line;
    std::getline(in, line);
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
}

/// Waits until every thread of process `pid` is stopped (state T or t in
/// /proc/PID/task/*/stat), for at most `seconds`. kill(SIGSTOP) returns once the signal is
/// queued: the thread chosen to take it, on a loaded machine, may run only milliseconds
/// later, and the other threads keep running until it has begun the group stop.
inline bool
WaitUntilStopped(int pid, double seconds)
{
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int>(seconds * 1000));
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    while (pid > 0 && std::chrono::steady_clock::now() < until)
    {
        bool all = true;
        int seen = 0;
        std::error_code ec;
        for (const auto& t : std::filesystem::directory_iterator(tasks, ec))
        {
            const char state = ProcessState(t.path() / "stat");
            ++seen;
            all = all && (state == 'T' || state == 't');
        }
        if (!ec && seen > 0 && all)
        {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

/// A TCP receiver and sender in Python (Debian's python3): the receiver prints the byte count
/// and SHA-256 of what it got; the sender sends seeded pseudo-random bytes and prints theirs.
const char* const kTcpScript = R"PY(
import hashlib, random, socket, sys, time
mode = sys.argv[1]
if mode == "recv":
    port = int(sys.argv[2])
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port)); s.listen(1)
    print("listening", flush=True)
    c, _ = s.accept(); h = hashlib.sha256(); n = 0
    while True:
        b = c.recv(65536)
        if not b: break
        h.update(b); n += len(b)
    print(n, h.hexdigest(), flush=True)
else:
    host, port, size, tos = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    rng = random.Random(port); h = hashlib.sha256()
    deadline = time.time() + 15
    while True:
        s = socket.socket()
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        try:
            s.connect((host, port)); break
        except OSError:
            s.close()
            if time.time() > deadline: raise
            time.sleep(0.1)
    left = size
    while left > 0:
        chunk = rng.randbytes(min(left, 1 << 20)); h.update(chunk); s.sendall(chunk)
        left -= len(chunk)
    s.shutdown(socket.SHUT_WR); s.recv(1); s.close()
    print(size, h.hexdigest(), flush=True)
)PY";

/// A UDP flood for `seconds`: as fast as the kernel takes datagrams; prints how many it sent.
const char* const kFloodScript = R"PY(
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + float(sys.argv[2]); n = 0; payload = bytes(1000)
while time.time() < end:
    try:
        s.sendto(payload, (sys.argv[1], 9)); n += 1
    except OSError:
        pass
print(n, flush=True)
)PY";

/**
 * Held by a test whose programs spin on both cores (pollers told not to sleep): while one is
 * held, no other such test of this machine runs (an exclusive flock on one file), since two of
 * them beside each other starve both daemons and take twenty times as long (5 s alone, 105 s
 * when ctest ran the RoCE and the InfiniBand case together under the sanitizers).
 */
class SpinningTestLock
{
  public:
    SpinningTestLock()
        : m_fd(open("/tmp/cnuas-spinning-tests.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666))
    {
        if (m_fd >= 0)
        {
            while (flock(m_fd, LOCK_EX) != 0 && errno == EINTR)
            {
            }
        }
    }
    ~SpinningTestLock()
    {
        if (m_fd >= 0)
        {
            close(m_fd); // releases the lock
        }
    }
    SpinningTestLock(const SpinningTestLock&) = delete;
    SpinningTestLock& operator=(const SpinningTestLock&) = delete;

  private:
    int m_fd;
};

/// `cnuas up` options that shorten IPoIB's broadcast join timers (the kernel's 3 s timeout and
/// 1 s backoff) to 100 ms, for the tests that start opensm and then use IPoIB: opensm ignores the
/// SA requests it gets in its first sweep as master (osm_sa_mad_ctrl.c, C15-0.1.3), and a host's
/// join at PORT_ACTIVE or at an SM change is one, so with the kernel's timers IPoIB would carry
/// nothing for 4 s of simulated time (40 s of wall time at dilation 10). The tests of IPoIB
/// itself keep the kernel's.
inline const char* const kShortIpoibJoins = " --set ns3::IbIpoibBridge::JoinTimeout=100ms "
                                            "--set ns3::IbIpoibBridge::JoinBackoff=100ms ";

class EmuFixture : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        ASSERT_EQ(geteuid(), 0u) << "the emulation tests need root (network namespaces, TAP "
                                    "devices); CI runs them as root";
        m_name = "t" + std::to_string(getpid());
        m_dir = std::filesystem::temp_directory_path() / ("cnuas-emu-" + m_name);
        std::filesystem::remove_all(m_dir);
        std::filesystem::create_directories(m_dir);
        std::ofstream(m_dir / "tcp.py") << kTcpScript;
        std::ofstream(m_dir / "flood.py") << kFloodScript;
    }
    void TearDown() override
    {
        Sh(Cnuas("down --name " + m_name));
        std::filesystem::remove_all(m_dir);
    }
    std::string Cnuas(const std::string& args) const
    {
        return "CNUAS_STATE_DIR=" + (m_dir / "state").string() + " " CNUAS_BINARY_DIR
               "/bin/cnuas " + args;
    }
    ShResult Up(const std::string& args)
    {
        return Sh(Cnuas("up --name " + m_name + " " + args));
    }
    ShResult Exec(const std::string& host, const std::string& cmd)
    {
        return Sh(Cnuas("exec --name " + m_name + " " + host + " -- " + cmd));
    }
    /// Runs a garbage peer (tests/peers/*-control-garbage.c) in `host`: `requests` requests from
    /// seed `seed`. It must end well: exit 0, "daemon alive", no answer late. Returns its line.
    std::string RunGarbagePeer(const std::string& host, const std::string& bin, int requests,
                               int seed)
    {
        const ShResult r = Exec(host, "timeout 120 " + bin + " " + std::to_string(requests) +
                                          " " + std::to_string(seed));
        EXPECT_EQ(r.exit, 0) << r.out;
        EXPECT_NE(r.out.find("daemon alive"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find(" 0 timeouts"), std::string::npos) << r.out;
        return r.out;
    }
    /// The number that the first group of regular expression `pattern` finds in `text`; a
    /// failure of the test, and -1, when it finds none.
    static int64_t NumberIn(const std::string& text, const std::string& pattern)
    {
        std::smatch m;
        if (!std::regex_search(text, m, std::regex(pattern)))
        {
            ADD_FAILURE() << "no match for '" << pattern << "' in: " << text;
            return -1;
        }
        return std::stoll(m[1]);
    }
    /// Starts a command in a host in the background, its output to `outFile`.
    void ExecBackground(const std::string& host, const std::string& cmd, const std::string& out)
    {
        Sh("(" + Cnuas("exec --name " + m_name + " " + host + " -- " + cmd) + " > " +
           (m_dir / out).string() + " 2>&1 &)");
    }
    /// Waits until `file` has at least `lines` lines (or `seconds` pass); returns its text.
    std::string WaitForLines(const std::string& file, int lines, double seconds)
    {
        const auto end = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<int>(seconds * 1000));
        std::string text;
        while (std::chrono::steady_clock::now() < end)
        {
            text = ReadFile(m_dir / file);
            if (CountLines(text) >= lines)
            {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return text;
    }
    nlohmann::json Status()
    {
        ShResult r = Sh(Cnuas("status --json --name " + m_name));
        if (r.exit == 1)
        {
            return {}; // not up (a test that downed its fabric asks too)
        }
        auto s = nlohmann::json::parse(r.out, nullptr, false);
        if (r.exit != 0 || s.is_discarded() || !s.is_object())
        {
            ADD_FAILURE() << "status --json --name " << m_name << ": " << r.out;
            return {};
        }
        // A daemon that did not answer leaves {"error": ...} where its counters would be: say
        // so, or a test comparing counters would read zeros as a result.
        if (s.contains("live") && s["live"].contains("error"))
        {
            ADD_FAILURE() << "status --json: the daemon did not answer: " << s["live"];
        }
        return s;
    }
    /// Calls `value()` until it returns `want` or `seconds` pass; returns what it last
    /// returned. For what the daemon does after a program has gone (a hang-up taken in its
    /// next turn), which a test would otherwise read a moment too early.
    template <class F>
    static auto Eventually(F value, decltype(value()) want, double seconds = 30)
    {
        const auto end = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<int>(seconds * 1000));
        auto got = value();
        while (got != want && std::chrono::steady_clock::now() < end)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            got = value();
        }
        return got;
    }
    /// Waits until each host in `hosts` (indices) has posted at least `wqes` work requests
    /// (sends and receives) on its HCA: verbs programs are under way there. At most `seconds`.
    bool WaitForPostedWqes(const std::vector<int>& hosts, int64_t wqes, double seconds = 60)
    {
        auto posted = [&]() {
            const nlohmann::json s = Status();
            bool all = s.contains("live") && s["live"].contains("hosts");
            for (int i : hosts)
            {
                const nlohmann::json v =
                    all && static_cast<size_t>(i) < s["live"]["hosts"].size()
                        ? s["live"]["hosts"][i].value("verbs", nlohmann::json::object())
                        : nlohmann::json::object();
                all = all && v.value("send_wqes", int64_t{0}) + v.value("recv_wqes", int64_t{0}) >=
                                 wqes;
            }
            return all;
        };
        return Eventually(posted, true, seconds);
    }
    /// Waits until the output file `out` of a tcpdump started with ExecBackground says it is
    /// capturing ("listening on", written once its capture is open), for at most 30 s.
    void WaitForTcpdump(const std::string& out)
    {
        std::string text;
        for (int lines = 1; lines <= 2 && text.find("listening on") == std::string::npos; ++lines)
        {
            text = WaitForLines(out, lines, 30);
        }
        EXPECT_NE(text.find("listening on"), std::string::npos) << text;
    }
    /// Starts `cnuas capture WHAT -w m_dir/TAG.pcap` in the background, running until
    /// CaptureStop (SIGINT), and waits until it captures; returns the pcap's path. Not
    /// `--duration`: a fixed window of wall time may close before a loaded machine has
    /// carried the traffic a test sends into it.
    std::string CaptureStart(const std::string& what, const std::string& tag)
    {
        const std::string pcap = (m_dir / (tag + ".pcap")).string();
        Sh("(" + Cnuas("capture --name " + m_name + " " + what + " -w " + pcap) + " > " +
           (m_dir / (tag + ".log")).string() + " 2>&1 & echo $! > " +
           (m_dir / (tag + ".pid")).string() + ")");
        EXPECT_NE(WaitForLines(tag + ".log", 1, 30).find("capturing"), std::string::npos)
            << ReadFile(m_dir / (tag + ".log"));
        return pcap;
    }
    /// Ends CaptureStart's capture `tag` and waits until its pcap is written.
    void CaptureStop(const std::string& tag)
    {
        Sh("kill -INT " + ReadFile(m_dir / (tag + ".pid")));
        EXPECT_NE(WaitForLines(tag + ".log", 2, 30).find("wrote"), std::string::npos)
            << ReadFile(m_dir / (tag + ".log"));
    }
    /// Waits until `ok` holds for every InfiniBand host port of the fabric (the status object
    /// of an InfiniBand host, or of a hybrid host's HCA, as told by its `port_state`), for at
    /// most `seconds`. True at once for a RoCE fabric (no InfiniBand port) once it is up.
    template <typename F>
    bool WaitForEveryIbHost(F ok, double seconds)
    {
        auto all = [this, &ok]() {
            const nlohmann::json s = Status();
            bool every = s.contains("live") && s["live"].contains("hosts") &&
                         !s["live"]["hosts"].empty();
            for (const auto& h : every ? s["live"]["hosts"] : nlohmann::json::array())
            {
                const auto& ib = h.contains("ib") ? h["ib"] : h; // a hybrid host's HCA
                if (ib.contains("port_state"))
                {
                    every = every && ok(ib);
                }
            }
            return every;
        };
        return Eventually(all, true, seconds);
    }
    /// Waits until every InfiniBand host port of the fabric is Active with a LID (the SM's
    /// sweep done: `up` returns before it), for at most `seconds`.
    bool WaitForIbPortsActive(double seconds = 60)
    {
        return WaitForEveryIbHost(
            [](const nlohmann::json& ib) {
                return ib.value("port_state", "") == "Active" && ib.value("lid", 0) != 0;
            },
            seconds);
    }
    /// Waits until every InfiniBand host's IPoIB has joined its broadcast group from its
    /// port's LID through its SM, the one at `smLid` if not 0 (after an SM change the hosts
    /// join the new SM's group), for at most `seconds`.
    bool WaitForIpoibJoined(int smLid = 0, double seconds = 60)
    {
        return WaitForEveryIbHost(
            [smLid](const nlohmann::json& ib) {
                return ib.value("broadcast_mlid", 0) != 0 &&
                       (smLid == 0 || ib.value("sm_lid", 0) == smLid);
            },
            seconds);
    }
    std::string Ns(const std::string& host) const { return m_name + "-" + host; }
    /// Waits until `host` listens on TCP `port` (a server program is ready for its client).
    bool WaitListening(int port, double seconds = 20, const std::string& host = "h1")
    {
        const auto end = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<int>(seconds * 1000));
        const std::regex re(":" + std::to_string(port) + "\\b");
        while (std::chrono::steady_clock::now() < end)
        {
            if (std::regex_search(Exec(host, "ss -ltn").out, re))
            {
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return false;
    }
    /// A verified TCP transfer of `bytes` from `from` to the host at `toIp` (port `port`).
    void TcpTransfer(const std::string& from,
                     const std::string& to,
                     const std::string& toIp,
                     int port,
                     int bytes,
                     int tos = 0)
    {
        const std::string py = "python3 " + (m_dir / "tcp.py").string();
        const std::string rx = "rx-" + std::to_string(port);
        ExecBackground(to, "timeout 60 " + py + " recv " + std::to_string(port), rx);
        ASSERT_NE(WaitForLines(rx, 1, 10).find("listening"), std::string::npos);
        ShResult tx = Exec(from, "timeout 60 " + py + " send " + toIp + " " +
                                     std::to_string(port) + " " + std::to_string(bytes) + " " +
                                     std::to_string(tos));
        ASSERT_EQ(tx.exit, 0) << tx.out;
        const std::string got = WaitForLines(rx, 2, 20);
        std::istringstream sent(tx.out);
        std::string n, sha;
        sent >> n >> sha;
        EXPECT_EQ(n, std::to_string(bytes));
        EXPECT_NE(got.find(n + " " + sha), std::string::npos)
            << "received: " << got << " sent: " << tx.out;
    }
    std::string Tshark(const std::string& pcap, const std::string& filter)
    {
        // The test programs' TCP ports carry random bytes, which heuristic dissectors (Thrift,
        // for one) sometimes claim and then call malformed: decode them as plain data.
        // RDMA SEND payloads likewise: RPC-over-RDMA's heuristic claims some and calls them
        // malformed (ib-verbs-umad-wireshark.md §6).
        return Sh("tshark -r " + pcap + " -n -d tcp.port==5001-5010,data --disable-protocol "
                  "rpcordma -Y '" + filter +
                  "' 2>/dev/null")
            .out;
    }

    std::string m_name;
    std::filesystem::path m_dir;
};

} // namespace cnuas_emu_test

#endif
