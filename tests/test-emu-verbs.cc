// Unmodified verbs programs on emulated hosts (issue 13): Debian's ibverbs-utils and perftest,
// and examples/rdma/msgstream, on a RoCE fabric and on an InfiniBand fabric, through Cnuas's
// libibverbs and the daemon's HCA service. Needs root (namespaces, TAP devices).
#include "emu-test-util.h"

#include <algorithm>
#include <array>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <arpa/inet.h>

using namespace cnuas_emu_test;

namespace
{

struct FabricCase
{
    const char* name;
    const char* upArgs;
    const char* serverIp; ///< where the programs' TCP handshakes go
    int iterations;       ///< pingpong iterations: fewer where the model runs dilated
};

// InfiniBand's links exchange flow-control packets even when idle, and the model of that costs
// more than real time on this machine (issue 18): the InfiniBand fabric runs dilated so that
// everything the hosts see stays exact, only slower.
const FabricCase kRoce{"roce", "--fabric roce --hosts 2", "10.0.0.2", 200};
const FabricCase kIb{"ib", "--fabric ib --hosts 2 --dilation 10", "10.255.0.2", 40};

class EmuVerbs : public EmuFixture, public ::testing::WithParamInterface<FabricCase>
{
  protected:
    void SetUp() override
    {
        EmuFixture::SetUp();
        if (HasFatalFailure())
        {
            return;
        }
        if (access(CNUAS_BINARY_DIR "/host/lib/libibverbs.so.1", R_OK) != 0 ||
            access("/usr/bin/ibv_rc_pingpong", X_OK) != 0 || access("/usr/bin/ib_write_bw", X_OK) != 0)
        {
            GTEST_SKIP() << "needs Cnuas's libibverbs (libibverbs-dev at build time) and Debian's "
                            "ibverbs-utils and perftest (scripts/setup-debian.sh installs them)";
        }
        ShResult up = Up(GetParam().upArgs);
        ASSERT_EQ(up.exit, 0) << up.out;
        ASSERT_TRUE(WaitForIbPortsActive()) << "the SM's sweep (`up` returns before it)";
    }

    /// What h0's adapter counted that PostWithTheDaemonStopped looks at.
    struct EndCounts
    {
        int64_t sent = 0;     // transport: packets sent
        int64_t deferred = 0; // destroys (or closes) that waited for sends
        int64_t closed = 0;   // contexts closed
        std::string text;
    };

    EndCounts CountEnds(const std::string& end)
    {
        EndCounts n;
        const nlohmann::json st = Status();
        const auto& h0 = st["live"]["hosts"][0]["verbs"];
        n.sent = h0["transport"].value("packets_sent", int64_t{0});
        n.deferred = h0.value(end == "exit" ? "closes_deferred" : "destroys_deferred", int64_t{0});
        n.closed = h0.value("contexts_closed", int64_t{0});
        n.text = h0.dump();
        return n;
    }

    /// The PID the peer printed on its "ready PID" line (0 if none).
    static int PeerPid(const std::string& text)
    {
        std::smatch m;
        return std::regex_search(text, m, std::regex("ready ([0-9]+)")) ? std::stoi(m[1]) : 0;
    }

    /// Waits until process `pid` is in an interruptible sleep (state S in /proc/PID/stat),
    /// that is blocked in a call, for at most `seconds`.
    static bool WaitUntilSleeping(int pid, double seconds)
    {
        const auto until = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(static_cast<int>(seconds * 1000));
        while (pid > 0 && std::chrono::steady_clock::now() < until)
        {
            if (ProcessState("/proc/" + std::to_string(pid) + "/stat") == 'S')
            {
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return false;
    }

    /// A program posts 32 UD sends while the daemon is stopped (SIGSTOP) and then, still while
    /// it is stopped, destroys its QP (`end` "destroy") or exits ("exit"), so that the model
    /// reads the doorbell and the end in the same turn, as a lagging model does: all 32 must
    /// go on the wire. With the HCA service's DestroyDrainLimit 0 (the old behaviour) the end
    /// takes the sends with it, which is checked too (the premise).
    void PostWithTheDaemonStopped(const std::string& end)
    {
        const std::string bin = CNUAS_BINARY_DIR "/bin/cnuas-peer-verbs-destroy-after-post";
        if (access(bin.c_str(), X_OK) != 0)
        {
            GTEST_SKIP() << "the peer is built with libibverbs-dev";
        }
        constexpr int kSends = 32;
        int round = 0;
        // Returns through *after once the program's end has been taken and its sends have
        // had time to go (the destroy answered; or the context closed, then 32 sent or 2 s).
        auto postAndEnd = [&](EndCounts* before, EndCounts* after) {
            const std::string stateFile =
                (m_dir / "state" / ("fabric-" + m_name + ".json")).string();
            const int daemon = nlohmann::json::parse(Sh("cat " + stateFile).out).value("pid", 0);
            ASSERT_GT(daemon, 0);
            std::string dest = GetParam().serverIp;
            if (std::string(GetParam().name) != "roce")
            {
                dest = std::to_string(Status()["live"]["hosts"][1].value("lid", 0));
            }
            const std::string tag = end + "-" + std::to_string(++round);
            const std::filesystem::path go = m_dir / ("go-" + tag);
            const std::string out = "post-then-" + tag + ".txt";
            ExecBackground("h0",
                           "sh -c 'timeout 120 " + bin + " " + dest + " " +
                               std::to_string(kSends) + " " + go.string() +
                               (end == "exit" ? " exit" : "") + "; echo exit=$?'",
                           out);
            std::string text = WaitForLines(out, 1, 60);
            ASSERT_NE(text.find("ready"), std::string::npos) << text;
            *before = CountEnds(end);
            ASSERT_EQ(kill(daemon, SIGSTOP), 0);
            struct Resume
            {
                int pid;
                ~Resume() { kill(pid, SIGCONT); }
            } resume{daemon};
            // Only once it has stopped: a daemon still running when the program rings took
            // the doorbell alone and sent the 32 before the end came (a CI run, stop 47).
            ASSERT_TRUE(WaitUntilStopped(daemon, 30)) << "the daemon did not stop";
            std::ofstream(go.string()) << "go\n";
            text = WaitForLines(out, 2, 30);
            ASSERT_NE(text.find("posted"), std::string::npos) << text;
            // The daemon is resumed only once the end has reached it: the process gone (its
            // sockets hung up), or blocked on the destroy's answer (the request written). A
            // fixed wait here let a loaded machine resume the daemon first, which then sent
            // the 32 before the end came and had nothing to defer (stop 43).
            if (end == "exit")
            {
                text = WaitForLines(out, 3, 30);
                ASSERT_NE(text.find("exit=0"), std::string::npos) << text;
            }
            else
            {
                ASSERT_TRUE(WaitUntilSleeping(PeerPid(text), 30))
                    << "the program never blocked on its destroy\n" << text;
                // And the margin the test had before: a clean check here once saw the premise
                // half send all 32 right after the wait, as if the destroy had come in a later
                // turn than the doorbell; most likely the daemon had not stopped yet when the
                // program rang (WaitUntilStopped above now rules that out).
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
            kill(daemon, SIGCONT);
            text = WaitForLines(out, 3, 60);
            if (end == "exit")
            {
                // The resumed daemon may be far behind (a sanitizer build on a loaded
                // machine): up to 30 s for the hang-up to be taken, then 2 s for the sends a
                // drain lets go (1 ms of simulated time).
                auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                do
                {
                    std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    *after = CountEnds(end);
                } while (after->closed == before->closed && std::chrono::steady_clock::now() < until);
                until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
                while (after->sent - before->sent < kSends && std::chrono::steady_clock::now() < until)
                {
                    std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    *after = CountEnds(end);
                }
            }
            else
            {
                ASSERT_NE(text.find("destroyed"), std::string::npos) << text;
                *after = CountEnds(end);
            }
        };

        EndCounts before, after;
        postAndEnd(&before, &after);
        if (HasFatalFailure())
        {
            return;
        }
        EXPECT_GE(after.sent - before.sent, kSends) << after.text;
        EXPECT_EQ(after.deferred - before.deferred, 1) << after.text;

        // The premise: with the end taken at once, the same sequence loses the sends.
        Sh(Cnuas("down --name " + m_name));
        ShResult up = Sh("NS_ATTRIBUTE_DEFAULT=ns3::EmuHcaService::DestroyDrainLimit=0s " +
                         Cnuas("up --name " + m_name + " " + GetParam().upArgs));
        ASSERT_EQ(up.exit, 0) << up.out;
        postAndEnd(&before, &after);
        if (HasFatalFailure())
        {
            return;
        }
        EXPECT_EQ(after.deferred - before.deferred, 0) << after.text;
        EXPECT_LT(after.sent - before.sent, kSends / 2)
            << "the premise does not hold: the sends went before the " << end
            << " without waiting\n"
            << after.text;
    }

    /// Runs `server` in h1 and `client SERVER_IP` in h0; both must succeed. Returns the
    /// client's output; the server's is in *serverOut.
    std::string RunPair(const std::string& server,
                        const std::string& client,
                        int port,
                        std::string* serverOut = nullptr,
                        double seconds = 120)
    {
        static int n = 0;
        const std::string out = "server-" + std::to_string(++n) + ".txt";
        const std::string t = "timeout " + std::to_string(static_cast<int>(seconds)) + " ";
        Sh("(" + Cnuas("exec --name " + m_name + " h1 -- " + t + server) +
           "; echo server-exit=$?) > " + (m_dir / out).string() + " 2>&1 &");
        EXPECT_TRUE(WaitListening(port)) << server << " did not start listening";
        // The server's address goes where the client names "{ip}", else at the end.
        std::string cmd = client;
        const auto at = cmd.find("{ip}");
        if (at == std::string::npos)
        {
            cmd += std::string(" ") + GetParam().serverIp;
        }
        else
        {
            cmd.replace(at, 4, GetParam().serverIp);
        }
        ShResult c = Exec("h0", t + cmd);
        EXPECT_EQ(c.exit, 0) << client << "\n" << c.out;
        const std::string s = WaitForLines(out, 1, seconds);
        // The server's last line is its exit status.
        std::string all = s;
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (all.find("server-exit=") == std::string::npos &&
               std::chrono::steady_clock::now() < end)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            all = Sh("cat " + (m_dir / out).string()).out;
        }
        EXPECT_NE(all.find("server-exit=0"), std::string::npos) << server << "\n" << all;
        if (serverOut)
        {
            *serverOut = all;
        }
        return c.out;
    }
};

TEST_P(EmuVerbs, DevicesAndDevinfoShowThePlausibleHca)
{
    ShResult dev = Exec("h0", "ibv_devices");
    ASSERT_EQ(dev.exit, 0) << dev.out;
    EXPECT_NE(dev.out.find("cnuas_0"), std::string::npos) << dev.out;
    ShResult info = Exec("h0", "ibv_devinfo -v");
    ASSERT_EQ(info.exit, 0) << info.out;
    EXPECT_NE(info.out.find("hca_id:\tcnuas_0"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("PORT_ACTIVE (4)"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("LINK_UP (5)"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("node_guid:"), std::string::npos);
    EXPECT_EQ(info.out.find("node_guid:\t\t\t0000:0000:0000:0000"), std::string::npos)
        << "the node GUID must not be zero";
    ShResult stat = Exec("h0", "ibstat");
    if (std::string(GetParam().name) == "roce")
    {
        EXPECT_NE(info.out.find("link_layer:\t\tEthernet"), std::string::npos) << info.out;
        // The port's GID is its IPv4 address (RoCEv2), as the seed's table says.
        EXPECT_NE(info.out.find("::ffff:10.0.0.1, RoCE v2"), std::string::npos) << info.out;
        // ibstat lists a RoCE adapter as it does a ConnectX in Ethernet mode: Active, no LID,
        // no SM, link layer Ethernet, its port GUID GID 0's interface ID.
        for (const char* line : {"CA 'cnuas_0'", "State: Active", "Physical state: LinkUp",
                                 "Base lid: 0", "SM lid: 0", "Link layer: Ethernet",
                                 "Port GUID: 0x0000ffff0a000001"})
        {
            EXPECT_NE(stat.out.find(line), std::string::npos) << line << "\n" << stat.out;
        }
    }
    else
    {
        EXPECT_NE(info.out.find("link_layer:\t\tInfiniBand"), std::string::npos) << info.out;
        std::smatch m;
        ASSERT_TRUE(std::regex_search(info.out, m, std::regex("port_lid:\\s+(\\d+)")));
        EXPECT_GT(std::stoi(m[1]), 0) << "the subnet manager assigns a LID";
    }
    // One node GUID, whoever asks: verbs (ibv_devinfo) and ibstat (the SMA on InfiniBand).
    std::smatch v;
    std::smatch u;
    ASSERT_TRUE(std::regex_search(info.out, v, std::regex("node_guid:\\s+([0-9a-f:]+)")));
    ASSERT_TRUE(std::regex_search(stat.out, u, std::regex("Node GUID: 0x([0-9a-f]+)")))
        << stat.out;
    std::string verbsGuid = v[1];
    verbsGuid.erase(std::remove(verbsGuid.begin(), verbsGuid.end(), ':'), verbsGuid.end());
    EXPECT_EQ(verbsGuid, std::string(u[1]));
    // A host without the emulator's socket has no device, as a machine without an HCA.
    ShResult none = Exec("h0", "env -u CNUAS_HCA_SOCKET ibv_devices");
    EXPECT_EQ(none.out.find("cnuas_0"), std::string::npos) << none.out;
}

/// Programs that choose a RoCE v2 GID themselves (NCCL, many benchmarks) read the kernel's
/// sysfs GID table rather than ask libibverbs: gids/N for every entry of the table, and
/// gid_attrs/types/N and gid_attrs/ndevs/N for each GID in use. The host's view lists what
/// libibverbs reports (ibv_devinfo -v), entry for entry, and names the interface it has.
TEST_P(EmuVerbs, SysfsListsTheGidTableVerbsReports)
{
    const bool roce = std::string(GetParam().name) == "roce";
    std::ofstream(m_dir / "gids.sh")
        << "d=/sys/class/infiniband/cnuas_0/ports/1\n"
           "echo \"entries $(ls $d/gids | wc -l)\"\n"
           "for f in $d/gid_attrs/types/*; do\n"
           "  i=${f##*/}\n"
           "  echo \"$i|$(cat $f)|$(cat $d/gids/$i)|$(cat $d/gid_attrs/ndevs/$i 2>/dev/null)\"\n"
           "done\n";
    const ShResult sysfs = Exec("h0", "sh " + (m_dir / "gids.sh").string());
    ASSERT_EQ(sysfs.exit, 0) << sysfs.out;
    const ShResult info = Exec("h0", "ibv_devinfo -v");
    ASSERT_EQ(info.exit, 0) << info.out;
    EXPECT_EQ(NumberIn(sysfs.out, "entries (\\d+)"), NumberIn(info.out, "gid_tbl_len:\\s+(\\d+)"))
        << sysfs.out;
    // The same address whichever way it is written (ibv_devinfo shortens a RoCE GID only).
    auto address = [](const std::string& gid) {
        in6_addr a{};
        char text[INET6_ADDRSTRLEN] = "";
        EXPECT_EQ(inet_pton(AF_INET6, gid.c_str(), &a), 1) << gid;
        inet_ntop(AF_INET6, &a, text, sizeof(text));
        return std::string(text);
    };
    // index -> (type, address, network device)
    std::map<int, std::array<std::string, 3>> listed;
    const std::regex line("(\\d+)\\|([^|]*)\\|([0-9a-f:]+)\\|(\\S*)");
    for (auto it = std::sregex_iterator(sysfs.out.begin(), sysfs.out.end(), line);
         it != std::sregex_iterator(); ++it)
    {
        listed[std::stoi((*it)[1])] = {(*it)[2], address((*it)[3]), (*it)[4]};
    }
    int reported = 0;
    const std::regex gid("GID\\[\\s*(\\d+)\\]:\\s+([0-9a-f:.]+)");
    for (auto it = std::sregex_iterator(info.out.begin(), info.out.end(), gid);
         it != std::sregex_iterator(); ++it)
    {
        ++reported;
        const auto at = listed.find(std::stoi((*it)[1]));
        ASSERT_NE(at, listed.end()) << "GID " << (*it)[1] << " not in sysfs\n" << sysfs.out;
        EXPECT_EQ(at->second[1], address((*it)[2])) << sysfs.out;
        EXPECT_EQ(at->second[0], roce ? "RoCE v2" : "IB/RoCE v1") << sysfs.out;
        // A RoCE GID's device is the host's interface of that fabric; an InfiniBand GID has none.
        EXPECT_EQ(at->second[2], roce ? "eth0" : "") << sysfs.out;
    }
    EXPECT_GT(reported, 0) << info.out;
    EXPECT_EQ(static_cast<size_t>(reported), listed.size()) << "types for empty entries\n"
                                                             << sysfs.out;
    if (roce)
    {
        EXPECT_EQ(Exec("h0", "ip link show eth0").exit, 0) << "the GIDs' device exists";
    }
}

/// A launcher that hands its own environment to the processes it starts on other machines
/// (MPICH's hydra, Slurm's srun) gives a process in h1 the variables exec set in h0, h0's
/// sockets among them: the libraries still find h1's adapter (host/abi/cnuas-host-env.h). An
/// explicitly unset socket variable still means no device.
TEST_P(EmuVerbs, AnotherHostsEnvironmentDoesNotMoveAProgramToThatHostsAdapter)
{
    const ShResult env0 = Exec("h0", "env");
    ASSERT_EQ(env0.exit, 0) << env0.out;
    std::string carried; // h0's CNUAS_* variables, as `env` arguments
    for (const std::string v :
         {"CNUAS_HCA_SOCKET", "CNUAS_UMAD_SOCKET", "CNUAS_CM_SOCKET", "CNUAS_HOST_NETNS"})
    {
        std::smatch m;
        if (std::regex_search(env0.out, m, std::regex("(^|\\n)" + v + "=([^\\n]*)")))
        {
            carried += " " + v + "=" + m[2].str();
        }
    }
    ASSERT_NE(carried.find("CNUAS_HOST_NETNS="), std::string::npos) << env0.out;
    auto guid = [](const std::string& out) {
        std::smatch m;
        return std::regex_search(out, m, std::regex("node_guid:\\s+([0-9a-f:]+)")) ? m[1].str()
                                                                                    : "";
    };
    const std::string own1 = guid(Exec("h1", "ibv_devinfo").out);
    const std::string own0 = guid(Exec("h0", "ibv_devinfo").out);
    ASSERT_FALSE(own1.empty());
    ASSERT_NE(own0, own1);
    const ShResult moved = Exec("h1", "env" + carried + " ibv_devinfo");
    EXPECT_EQ(guid(moved.out), own1) << carried << "\n" << moved.out;
    // ibstat (libibumad) likewise.
    const ShResult stat = Exec("h1", "env" + carried + " ibstat");
    const ShResult ownStat = Exec("h1", "ibstat");
    EXPECT_EQ(stat.out, ownStat.out) << carried;
    // In its own host, a program without the variable has no device, as before.
    const ShResult none = Exec("h1", "env -u CNUAS_HCA_SOCKET ibv_devices");
    EXPECT_EQ(none.out.find("cnuas_0"), std::string::npos) << none.out;
}

TEST_P(EmuVerbs, DebianPingpongsCompleteWithVerifiedData)
{
    const std::string gid = std::string(GetParam().name) == "roce" ? " -g 0" : "";
    const std::string n = " -n " + std::to_string(GetParam().iterations);
    // -c: rc_pingpong checks every received buffer's content.
    for (const std::string& cmd :
         {"ibv_rc_pingpong -c" + gid + n, "ibv_rc_pingpong -e" + gid + n,
          "ibv_rc_pingpong -N" + gid + n, "ibv_rc_pingpong -t" + gid + n,
          "ibv_uc_pingpong" + gid + n, "ibv_ud_pingpong -s 1024" + gid + n,
          "ibv_srq_pingpong" + gid + n, "ibv_srq_pingpong -e" + gid + n})
    {
        SCOPED_TRACE(cmd);
        std::string server;
        const std::string client = RunPair(cmd, cmd, 18515, &server);
        EXPECT_NE(client.find(" iters in "), std::string::npos) << client;
        EXPECT_NE(server.find(" iters in "), std::string::npos) << server;
    }
}

TEST_P(EmuVerbs, PerftestCompletesOnBothPostSendPaths)
{
    const std::string n = " -n " + std::to_string(GetParam().iterations);
    for (const std::string& cmd :
         {"ib_write_bw" + n, "ib_write_bw --use_old_post_send" + n, "ib_read_bw" + n,
          "ib_send_bw" + n, "ib_send_bw --use_old_post_send" + n, "ib_write_lat" + n,
          "ib_send_lat" + n, "ib_read_lat" + n, "ib_atomic_bw" + n, "ib_atomic_lat" + n})
    {
        SCOPED_TRACE(cmd);
        const std::string client = RunPair(cmd, cmd, 18515);
        // The result table: a "#bytes" header followed by a line of figures.
        EXPECT_TRUE(std::regex_search(client, std::regex("#bytes.*\\n\\s*\\d+\\s+\\d+\\s+[0-9.]+")))
            << client;
    }
}

/// perftest's multicast (`ib_send_bw -c UD -g`): the server attaches its UD QP to perftest's
/// group with ibv_attach_mcast, the client sends 200 messages to it. On InfiniBand perftest
/// joins through the SA itself (libibumad) and the SM writes the switches' tables; on RoCE it
/// joins nothing (no IGMP from a verbs attach), and the attached QP's port becomes a member of
/// the fabric's routes for the group, as a switch floods a group nobody reported to every port
/// (docs/emulation.md §8.8), while the client, no member, sends through the route toward the
/// group. On RoCE the GID must be the IPv6 one (`-x 1`): perftest's group is an IPv6 GID, and
/// it refuses an IPv4 one beside it.
TEST_P(EmuVerbs, PerftestMulticastReachesTheAttachedServer)
{
    const bool roce = std::string(GetParam().name) == "roce";
    auto received = [this]() {
        return Status()["live"]["hosts"][1]["verbs"]["transport"].value("multicast_received",
                                                                         int64_t{0});
    };
    const int64_t before = received();
    const std::string cmd = std::string("ib_send_bw -c UD -g -n 200") + (roce ? " -x 1" : "");
    std::string server;
    const std::string client = RunPair(cmd, cmd, 18515, &server);
    EXPECT_TRUE(std::regex_search(client, std::regex("#bytes.*\\n\\s*\\d+\\s+200\\s+[0-9.]+")))
        << client;
    EXPECT_NE(server.find("Send BW Multicast Test"), std::string::npos) << server;
    EXPECT_EQ(received() - before, 200) << server;
    if (roce)
    {
        // Attached and detached again: the group held the server's port while it ran.
        const nlohmann::json mc = Status()["live"]["roce_multicast"];
        EXPECT_GE(mc.value("joins", 0), 1) << mc.dump();
        EXPECT_EQ(mc.value("groups", -1), 0) << mc.dump();
    }
}

/// A signal ends a wait in ibv_get_cq_event or ibv_get_async_event with EINTR, as rdma-core's
/// read of the uverbs descriptors does: a library that retried the read would keep a program
/// that waits for an event that never comes (qperf's event-driven tests after their SIGALRM)
/// there for ever.
TEST_P(EmuVerbs, ASignalEndsAWaitForACompletionOrAnAsyncEvent)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/cnuas-peer-verbs-signal-interrupts";
    if (access(bin.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "the peer is built with libibverbs-dev";
    }
    const ShResult r = Exec("h0", "timeout 20 " + bin);
    EXPECT_EQ(r.exit, 0) << r.out;
    EXPECT_NE(r.out.find("signals: OK"), std::string::npos) << r.out;
}

/// Debian's qperf: its RC tests, and on InfiniBand its UC and UD ones (they connect by LID
/// only, which a RoCE port has not: on RoCE qperf needs its rdma_cm mode, -cm1, which only its
/// RC tests have, as on a real RoCE NIC). Its event-driven tests end their wait with SIGALRM
/// (ASignalEndsAWaitForACompletionOrAnAsyncEvent): uc_rdma_write_lat hung in one run of two
/// before the library let the signal through.
TEST_P(EmuVerbs, QperfRunsItsTests)
{
    if (access("/usr/bin/qperf", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's qperf (scripts/setup-debian.sh installs it)";
    }
    const bool roce = std::string(GetParam().name) == "roce";
    // The server runs until stopped: stopped by its pid (a pkill by name would also stop the
    // qperf of a test running beside this one).
    const std::string pid = (m_dir / "qperf-server.pid").string();
    ExecBackground("h1", "sh -c 'echo $$ > " + pid + "; exec timeout 120 qperf'",
                   "qperf-server.txt");
    ASSERT_TRUE(WaitListening(19765)) << ReadFile(m_dir / "qperf-server.txt");
    const std::vector<std::string> tests =
        roce ? std::vector<std::string>{"rc_bw", "rc_lat", "rc_rdma_write_lat", "rc_rdma_read_lat",
                                        "rc_compare_swap_mr"}
             : std::vector<std::string>{"rc_bw", "rc_lat", "rc_rdma_write_lat", "uc_rdma_write_lat",
                                        "uc_rdma_write_lat", "uc_lat", "ud_lat", "ud_bw"};
    const std::string qperf =
        std::string("timeout 90 qperf -t 1 ") + (roce ? "-cm1 " : "") + GetParam().serverIp;
    // One result block per test: its name, then its first figure (latency, bw, send_bw or
    // msg_rate).
    const std::regex block("(^|\\n)[a-z_]+:\\s*\\n\\s+(latency|bw|send_bw|msg_rate)\\s+=");
    auto blocks = [&block](const std::string& out) {
        return std::distance(std::sregex_iterator(out.begin(), out.end(), block),
                             std::sregex_iterator());
    };
    if (!roce)
    {
        std::string cmd = qperf;
        for (const std::string& t : tests)
        {
            cmd += " " + t;
        }
        const ShResult c = Exec("h0", cmd);
        Sh("kill $(cat " + pid + ")");
        EXPECT_EQ(c.exit, 0) << c.out;
        EXPECT_EQ(c.out.find("failed"), std::string::npos) << c.out;
        EXPECT_EQ(blocks(c.out), static_cast<long>(tests.size())) << c.out;
        return;
    }
    // Debian's qperf 0.4.11 sends its rdma_cm port to the client before it calls rdma_listen
    // (strace: the port's write comes between rdma_bind_addr's and rdma_listen's requests), so
    // a client faster than the server's next step has its REQ rejected for want of a listener
    // (IBA vol. 1 §12.6.7.2, reason 8), here as against a kernel; under load one invocation in
    // 4 to 8 was. Upstream fixed the order after the release ("Fix rdmacm race", 118a571,
    // 2018). So each test is run alone and a rejection is tried again, counted; a listener
    // that never came would fail every try.
    int rejections = 0;
    for (const std::string& t : tests)
    {
        ShResult c;
        // Up to 12 tries: at one rejection in 4 tries, four in a row (the old limit) came about
        // once in 250 tests, a few in a hundred runs of the suite.
        for (int attempt = 0; attempt < 12; ++attempt)
        {
            c = Exec("h0", qperf + " " + t);
            if (c.out.find("unexpected event from RDMA CM: Event rejected") == std::string::npos)
            {
                break;
            }
            ++rejections;
        }
        EXPECT_EQ(c.exit, 0) << t << ":\n" << c.out;
        EXPECT_EQ(c.out.find("failed"), std::string::npos) << c.out;
        EXPECT_EQ(blocks(c.out), 1) << c.out;
    }
    Sh("kill $(cat " + pid + ")");
    RecordProperty("rejections", rejections);
}

/// A GID index with no GID behind it (`-x 3`, a ConnectX's IPv4 RoCE v2 entry; here a RoCE
/// port has two GIDs and an InfiniBand port one) is refused when the QP is given its address
/// (ibv_modify_qp to RTR fails, ENODATA, as the kernel's rdma_get_gid_attr refuses it), not
/// accepted to send packets from the zero GID until the retries run out.
TEST_P(EmuVerbs, AGidIndexWithNoGidBehindItIsRefusedWhenTheQpIsConnected)
{
    const std::string cmd = "timeout 60 ib_write_bw -x 3 -n 10";
    ExecBackground("h1", "sh -c '" + cmd + "; echo server-exit=$?'", "gid-index-server.txt");
    ASSERT_TRUE(WaitListening(18515)) << ReadFile(m_dir / "gid-index-server.txt");
    const ShResult c = Exec("h0", cmd + " " + GetParam().serverIp);
    EXPECT_NE(c.exit, 0) << c.out;
    EXPECT_NE(c.out.find("Failed to modify QP"), std::string::npos) << c.out;
    EXPECT_EQ(c.out.find("Completion with error"), std::string::npos) << c.out;
    std::string server;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((server = ReadFile(m_dir / "gid-index-server.txt")).find("server-exit=") ==
               std::string::npos &&
           std::chrono::steady_clock::now() < end)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_NE(server.find("Failed to modify QP"), std::string::npos) << server;
    EXPECT_EQ(server.find("server-exit=0"), std::string::npos) << server;
}

TEST_P(EmuVerbs, MsgstreamRunsUnmodifiedAndVerifiesItsData)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/msgstream";
    if (access(bin.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "msgstream is built with libibverbs-dev";
    }
    const bool roce = std::string(GetParam().name) == "roce";
    const std::string count = " -n " + std::to_string(GetParam().iterations);
    // Watching: tcpdump inside the server's host (RoCE: the seed's picture), and the daemon's
    // capture of the client's port (every packet, with its CRCs).
    const std::string pcap = CaptureStart("h0", "h0");
    if (roce)
    {
        // --immediate-mode: without it the kernel holds packets in its ring until a block fills
        // or a second passes, and a SIGINT in that time loses them (CI saw "812 packets
        // received by filter, 0 packets captured").
        ExecBackground("h1",
                       "timeout 120 tcpdump --immediate-mode -i eth0 -nn -l 'udp port 4791'",
                       "tcpdump.txt");
        WaitForTcpdump("tcpdump.txt");
    }
    std::string server;
    const std::string client = RunPair(bin + count, bin + count, 18520, &server);
    EXPECT_NE(client.find("msgstream: OK"), std::string::npos) << client;
    EXPECT_NE(server.find("msgstream: OK"), std::string::npos) << server;
    CaptureStop("h0");
    if (roce)
    {
        // Stopped only once it has printed the stream (its two header lines, then a line a
        // packet), so that the stop cannot cut what the assertions below look for.
        const std::string td = WaitForLines("tcpdump.txt", 2 + GetParam().iterations, 30);
        Sh("for p in $(ip netns pids " + m_name + "-h1); do [ \"$(cat /proc/$p/comm)\" = tcpdump ] "
           "&& kill -INT $p; done");
        // The seed's lines: 112-byte messages make 128-byte UDP payloads, ACKs 20.
        EXPECT_NE(td.find("10.0.0.1."), std::string::npos) << td;
        EXPECT_NE(td.find(" > 10.0.0.2.4791: UDP, length 128"), std::string::npos) << td;
        EXPECT_NE(td.find(" > 10.0.0.1.4791: UDP, length 20"), std::string::npos) << td;
    }
    // The daemon's capture decodes cleanly and every CRC in it is right.
    ShResult check = Sh(CNUAS_BINARY_DIR "/bin/cnuas pcap check " + pcap);
    EXPECT_EQ(check.exit, 0) << check.out;
    const std::string decoded =
        Tshark(pcap, roce ? "infiniband" : "infiniband.bth.opcode == 4 || infiniband.bth.opcode == 17");
    EXPECT_GE(CountLines(decoded), GetParam().iterations) << decoded.substr(0, 2000);
    EXPECT_EQ(Tshark(pcap, "_ws.malformed || _ws.expert.severity >= error"), "");
}

TEST_P(EmuVerbs, APeerThatDiesLeavesErrorCompletionsAndTheFabricWorking)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/msgstream";
    if (access(bin.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "msgstream is built with libibverbs-dev";
    }
    // A long stream; the server is killed with SIGKILL while it runs.
    ExecBackground("h1", "timeout 120 " + bin + " -n 1000000", "victim.txt");
    ASSERT_TRUE(WaitListening(18520));
    Sh("(" + Cnuas("exec --name " + m_name + " h0 -- timeout 120 " + bin + " -n 1000000 " +
                   GetParam().serverIp) +
       "; echo client-exit=$?) > " + (m_dir / "survivor.txt").string() + " 2>&1 &");
    // The stream is under way on both sides (not a fixed wait: a loaded machine may still be
    // connecting after seconds).
    ASSERT_TRUE(WaitForPostedWqes({0, 1}, 100)) << ReadFile(m_dir / "survivor.txt");
    // Only h1's: the namespaces share one PID namespace, so pkill inside a host would reach
    // the client too.
    Sh("for p in $(ip netns pids " + m_name + "-h1); do [ \"$(cat /proc/$p/comm)\" = msgstream ] "
       "&& kill -KILL $p; done");
    // The survivor learns from its completions (retries exceeded, then flushes), not by hanging.
    std::string out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (out.find("client-exit=") == std::string::npos &&
           std::chrono::steady_clock::now() < end)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        out = Sh("cat " + (m_dir / "survivor.txt").string()).out;
    }
    EXPECT_NE(out.find("client-exit="), std::string::npos) << "the survivor hung:\n" << out;
    EXPECT_EQ(out.find("client-exit=0"), std::string::npos) << out;
    EXPECT_TRUE(out.find("retry counter exceeded") != std::string::npos ||
                out.find("Flushed") != std::string::npos ||
                out.find("peer") != std::string::npos)
        << out;
    // The daemon and the other hosts go on: a fresh pair of programs works.
    const std::string gid = std::string(GetParam().name) == "roce" ? " -g 0" : "";
    const std::string cmd = "ibv_rc_pingpong -c -n 10" + gid;
    const std::string again = RunPair(cmd, cmd, 18515);
    EXPECT_NE(again.find(" iters in "), std::string::npos) << again;
}

INSTANTIATE_TEST_SUITE_P(Fabrics,
                         EmuVerbs,
                         ::testing::Values(kRoce, kIb),
                         [](const ::testing::TestParamInfo<FabricCase>& i) {
                             return std::string(i.param.name) == "roce" ? "RoCE" : "InfiniBand";
                         });

/// The seed's InfiniBand story: before a subnet manager runs the port has no LID, and a verbs
/// program says so and stops, instead of hanging.
class EmuVerbsNoSm : public EmuFixture
{
};

TEST_F(EmuVerbsNoSm, WithoutASubnetManagerMsgstreamFailsCleanly)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/msgstream";
    if (access(bin.c_str(), X_OK) != 0 ||
        access(CNUAS_BINARY_DIR "/host/lib/libibverbs.so.1", R_OK) != 0)
    {
        GTEST_SKIP() << "msgstream and Cnuas's libibverbs are built with libibverbs-dev";
    }
    ShResult up = Up("--fabric ib --hosts 2 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    ShResult info = Exec("h0", "ibv_devinfo");
    EXPECT_NE(info.out.find("PORT_INIT (2)"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("port_lid:\t\t0"), std::string::npos) << info.out;
    ShResult r = Exec("h0", "timeout 30 " + bin + " 10.255.0.2");
    EXPECT_NE(r.exit, 0) << r.out;
    EXPECT_NE(r.exit, 124) << "msgstream hung instead of failing: " << r.out;
    EXPECT_NE(r.out.find("not ACTIVE"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("subnet manager"), std::string::npos) << r.out;
}

/// The port's changes reach programs as asynchronous events, as an adapter reports them:
/// Debian's ibv_asyncwatch, started before any subnet manager, sees the LID and SM assigned
/// and the port become Active when the built-in SM starts, and the port leave Active when
/// ibportstate disables it.
TEST_F(EmuVerbsNoSm, PortEventsReachProgramsAsTheSubnetManagerAndAdministratorChangeThePort)
{
    if (access(CNUAS_BINARY_DIR "/host/lib/libibverbs.so.1", R_OK) != 0 ||
        access("/usr/bin/ibv_asyncwatch", X_OK) != 0 || access("/usr/sbin/ibportstate", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Cnuas's libibverbs, ibverbs-utils and infiniband-diags";
    }
    ShResult up = Up("--fabric ib --hosts 2 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    ExecBackground("h0", "timeout 60 stdbuf -oL ibv_asyncwatch", "asyncwatch.txt");
    ASSERT_NE(WaitForLines("asyncwatch.txt", 1, 20).find("async event FD"), std::string::npos);
    auto waitFor = [this](const std::string& what, int tries = 200) {
        std::string text;
        for (int i = 0; i < tries && text.find(what) == std::string::npos; ++i)
        {
            text = WaitForLines("asyncwatch.txt", 1, 1);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return text;
    };
    EXPECT_EQ(waitFor("IBV_EVENT", 10).find("IBV_EVENT"), std::string::npos)
        << "no event before a subnet manager runs";
    ASSERT_EQ(Sh(Cnuas("sm start --name " + m_name)).exit, 0);
    std::string text = waitFor("IBV_EVENT_PORT_ACTIVE");
    for (const char* e : {"IBV_EVENT_LID_CHANGE (11), port 1", "IBV_EVENT_SM_CHANGE (13), port 1",
                          "IBV_EVENT_PORT_ACTIVE (9), port 1"})
    {
        EXPECT_NE(text.find(e), std::string::npos) << e << "\n" << text;
    }
    EXPECT_EQ(text.find("PORT_ERR"), std::string::npos) << text;
    ShResult disable = Exec("h0", "ibportstate -D 0 1 disable");
    EXPECT_EQ(disable.exit, 0) << disable.out;
    text = waitFor("IBV_EVENT_PORT_ERR");
    EXPECT_NE(text.find("IBV_EVENT_PORT_ERR (10), port 1"), std::string::npos) << text;
    EXPECT_GE(Status()["live"]["hosts"][0]["verbs"].value("port_events", 0), 4);
}

} // namespace

namespace
{

/// What a buggy or hostile process can do to the emulated HCA is refused as hardware refuses
/// it, and no byte outside what the rules allow changes (both sides check their buffers).
TEST_P(EmuVerbs, HostileWorkRequestsAreRefusedAndTouchNoMemory)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/cnuas-peer-verbs-hostile";
    if (access(bin.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "built with libibverbs-dev";
    }
    for (const char* c :
         {"forged-rkey", "out-of-range", "bad-lkey", "unregistered", "garbage-wqe",
          "corrupt-doorbell", "bad-windows", "fork"})
    {
        SCOPED_TRACE(c);
        std::string server;
        const std::string client =
            RunPair(bin + " server", bin + " {ip} " + c, 18530, &server, 60);
        EXPECT_NE(client.find("refused as expected"), std::string::npos) << client;
        EXPECT_EQ(client.find("CHANGED"), std::string::npos) << client;
        EXPECT_NE(server.find("server buffer intact"), std::string::npos) << server;
    }
    // Every region above was moved into memory shared with the daemon (none fell back without
    // the tests knowing), and each of bad-windows' five descriptors was refused.
    const nlohmann::json st = Status();
    ASSERT_TRUE(st.contains("live")) << st.dump();
    const auto& hosts = st["live"]["hosts"];
    ASSERT_EQ(hosts.size(), 2u) << st.dump();
    const auto& client = hosts[0]["verbs"];
    const auto& server = hosts[1]["verbs"];
    EXPECT_GE(client.value("shared_mrs", 0), 9) << "8 cases' regions and bad-windows' good one"
                                                << client.dump();
    EXPECT_GE(server.value("shared_mrs", 0), 8) << server.dump();
    EXPECT_EQ(server.value("unshared_mrs", -1), 0) << server.dump();
    EXPECT_EQ(client.value("windows_refused", 0), 5) << client.dump();
    EXPECT_EQ(client.value("unshared_mrs", 0), 5) << "bad-windows' five registrations, and no other"
                                                  << client.dump();
}

/// Garbage on the HCA's control socket and in its shared queues (tests/peers/hca-control-garbage.c:
/// every request a process can send, with fields at their edges, handles made up or of the
/// wrong kind, regions nowhere, datagrams of the wrong size, connections dropped with objects
/// alive; garbage work requests and indices in the rings of the QPs, SRQs and CQs it made, and
/// the doorbell rung): the daemon answers each well-framed request, ends each connection whose
/// framing is broken, and after all of it serves the next process with no descriptor or context
/// left behind.
TEST_P(EmuVerbs, GarbageOnTheControlSocketIsAnsweredOrRefusedAndLeavesNothingBehind)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/cnuas-peer-hca-control-garbage";
    ASSERT_EQ(access(bin.c_str(), X_OK), 0) << bin;
    const nlohmann::json before = Status();
    const int pid = before.value("pid", 0);
    ASSERT_GT(pid, 0) << before.dump();
    // The daemon's open descriptors once they stop changing (a `cnuas status` connection
    // just answered may still be closing).
    auto fds = [pid]() {
        auto count = [pid]() {
            int n = 0;
            for (const auto& e : std::filesystem::directory_iterator(
                     "/proc/" + std::to_string(pid) + "/fd"))
            {
                (void)e;
                ++n;
            }
            return n;
        };
        int last = count();
        for (int i = 0; i < 40; ++i)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            const int now = count();
            if (now == last)
            {
                return now;
            }
            last = now;
        }
        return last;
    };
    const int fdsBefore = fds();
    const uint64_t requestsBefore = before["live"]["hosts"][0]["verbs"].value("requests", 0ull);
    const uint64_t doorbellsBefore =
        before["live"]["hosts"][0]["verbs"].value("doorbells", 0ull);
    const uint64_t malformedBefore =
        before["live"]["hosts"][0]["verbs"].value("malformed_requests", 0ull);
    int64_t malformed = 0;
    int64_t answered = 0;
    for (int seed : {1, 2, 3})
    {
        SCOPED_TRACE("seed " + std::to_string(seed));
        const std::string out = RunGarbagePeer("h0", bin, 20000, seed);
        answered += NumberIn(out, R"(, (\d+) answered)");
        // Most requests are refused, and enough are not that objects are made and used.
        EXPECT_GT(NumberIn(out, R"(answered \((\d+) errors)"), 10000) << out;
        EXPECT_GT(NumberIn(out, R"((\d+) objects made)"), 1000) << out;
        EXPECT_GT(NumberIn(out, R"(, (\d+) scribbles on shared)"), 100) << out;
        malformed += NumberIn(out, R"((\d+) malformed datagrams)");
    }
    const nlohmann::json after = Status();
    const auto& verbs = after["live"]["hosts"][0]["verbs"];
    EXPECT_GE(static_cast<int64_t>(verbs.value("requests", 0ull) - requestsBefore), answered)
        << verbs.dump();
    EXPECT_EQ(Eventually(
                  [this]() {
                      return Status()["live"]["hosts"][0]["verbs"].value("contexts_open", -1);
                  },
                  0),
              0)
        << verbs.dump();
    EXPECT_GT(verbs.value("doorbells", 0ull), doorbellsBefore) << verbs.dump();
    // Each datagram of the wrong size is counted where a user can see it.
    EXPECT_GT(malformed, 0);
    EXPECT_EQ(static_cast<int64_t>(verbs.value("malformed_requests", 0ull) - malformedBefore),
              malformed)
        << verbs.dump();
    EXPECT_EQ(fds(), fdsBefore) << "descriptors the daemon kept";
    // A real program still runs.
    const std::string gid = std::string(GetParam().name) == "roce" ? " -g 0" : "";
    RunPair("ibv_rc_pingpong -n 20" + gid, "ibv_rc_pingpong -n 20" + gid, 18515);
}

/// A program that finds its CQs empty for a while (CNUAS_POLL_SLEEP_AFTER_US) sleeps until the
/// daemon writes a completion (the daemon wakes it through a futex in the CQ's shared memory),
/// instead of spinning against the daemon for the CPU; CNUAS_POLL_SLEEP_AFTER_US=0 keeps it
/// spinning. Either way the latency tests complete (ib_send_lat polls a send CQ and a receive
/// CQ in turn: a completion on one wakes a poller asleep on the other).
TEST_P(EmuVerbs, PollersThatFindNothingSleepUntilTheDaemonWakesThem)
{
    const SpinningTestLock spinning; // its first half spins on both cores
    auto wakes = [this]() {
        const nlohmann::json st = Status();
        int64_t n = 0;
        for (const auto& h : st["live"]["hosts"])
        {
            // A completion that finds a poller asleep wakes it, or, while the model lags (a
            // loaded machine), defers the wake to the poller's own timeout: both count.
            n += h["verbs"].value("poller_wakes", int64_t{0}) +
                 h["verbs"].value("wakes_deferred", int64_t{0});
        }
        return n;
    };
    const std::string gid = std::string(GetParam().name) == "roce" ? " -g 0" : "";
    const std::string pp = "ibv_rc_pingpong -s 64 -n 300" + gid;
    const int64_t w0 = wakes();
    const std::string spin = "env CNUAS_POLL_SLEEP_AFTER_US=0 ";
    RunPair(spin + "ib_send_lat -s 64 -n 300", spin + "ib_send_lat -s 64 -n 300", 18515);
    RunPair(spin + pp, spin + pp, 18515);
    EXPECT_EQ(wakes(), w0) << "no poller slept";
    // By default a poller spins 20 us before it sleeps, about a round trip here: a faster
    // machine's completions could come before any poller slept. 1 us makes the sleep certain.
    const std::string sleepy = "env CNUAS_POLL_SLEEP_AFTER_US=1 ";
    RunPair(sleepy + "ib_send_lat -s 64 -n 300", sleepy + "ib_send_lat -s 64 -n 300", 18515);
    RunPair(sleepy + pp, sleepy + pp, 18515);
    EXPECT_GT(wakes(), w0) << "pollers slept and were woken by completions";
}

/// A bulk transfer runs the model behind the wall clock (it cannot simulate a 100-200 Gb/s link
/// in real time on any machine, docs/performance.md): while it lags by more than the HCA
/// service's WakeModerationLag (1 ms), completions do not wake the sleeping poller (a futex
/// wake per completion cost the daemon 11-13 % of its time); the poller's own timeout takes
/// them, and the transfer completes. The wakes the daemon would have made are counted.
TEST_P(EmuVerbs, WhileTheModelLagsCompletionsDoNotWakeThePollerOneByOne)
{
    // The fixture's InfiniBand fabric runs 10 times slower than the wall clock, and a fast
    // machine keeps up with that (CI's did: not one wake deferred). In real time no machine
    // simulates the transfer at the link's rate, so the model lags wherever this runs.
    if (std::string(GetParam().upArgs).find("--dilation") != std::string::npos)
    {
        Sh(Cnuas("down --name " + m_name));
        ShResult up = Up(std::string(GetParam().upArgs) + " --dilation 1");
        ASSERT_EQ(up.exit, 0) << up.out;
    }
    struct Counts
    {
        int64_t woken = 0;
        int64_t deferred = 0;
        int64_t lateEvents = 0; // events the loop ran more than 1 ms behind the wall clock
        std::string verbs;      // both adapters' counters, for a failure's message
    };
    auto counters = [this]() {
        const nlohmann::json st = Status();
        Counts n;
        for (const auto& h : st["live"]["hosts"])
        {
            n.woken += h["verbs"].value("poller_wakes", int64_t{0});
            n.deferred += h["verbs"].value("wakes_deferred", int64_t{0});
            n.verbs += h["verbs"].dump() + "\n";
        }
        n.lateEvents = st["live"]["lag"].value("late_events", int64_t{0});
        return n;
    };
    // The pollers sleep as soon as they find their CQ empty: by default they spin 20 us first,
    // and whether a completion then finds one asleep depends on the machine's speed (CI's
    // found none asleep in one run). Asleep, each completion is a wake made or deferred.
    const std::string bw = "env CNUAS_POLL_SLEEP_AFTER_US=1 ib_write_bw -n 1000 -s 65536";
    // How many of a transfer's completions find a poller asleep depends on the machine's load:
    // a poller waiting for a CPU is not asleep on its CQ (92 of 1,000 beside two busy loops,
    // 916 idle; 13 in one CI run of the sanitizer build beside another test). So transfers are
    // repeated until 20 completions have found a poller asleep while the loop lagged, or six
    // have run.
    const Counts before = counters();
    Counts after = before;
    int transfers = 0;
    while (transfers < 6)
    {
        const std::string client = RunPair(bw, bw, 18515);
        EXPECT_NE(client.find("65536"), std::string::npos) << client;
        ++transfers;
        after = counters();
        if (after.deferred - before.deferred >= 20)
        {
            break;
        }
    }
    const int64_t woken = after.woken - before.woken;
    const int64_t deferred = after.deferred - before.deferred;
    RecordProperty("transfers", transfers);
    RecordProperty("woken", std::to_string(woken));
    RecordProperty("deferred", std::to_string(deferred));
    // The premise, checked over the transfers themselves so that a machine fast enough to keep
    // up says so plainly.
    ASSERT_GT(after.lateEvents - before.lateEvents, 1000)
        << "the model did not lag by WakeModerationLag (1 ms) during the transfers";
    // Without the moderation every completion that finds a poller asleep is a wake (924 woken,
    // 0 deferred in one transfer; with WakeModerationLag 0 this fails). What share of the wakes
    // is moderated is not asserted: it depends on how often the loop catches up between bursts
    // (where a wake at once is right), which is the machine's speed and load. Idle here: 0-7
    // woken against 869-890 deferred per transfer; beside a busy loop 0 against 175-241; in
    // one CI run beside another test 22 against 30. The transfers completing shows that the
    // deferred completions were all taken (the pollers' own timeout).
    EXPECT_GE(deferred, 20) << "completions woke the poller while the model lagged: " << woken
                            << " woken, " << deferred << " deferred in " << transfers
                            << " transfers\n"
                            << after.verbs;
}

/// A program that destroys its QP right after posting sends, without waiting for a completion
/// (rdma-core's mckey does), still gets them on the wire: an adapter takes the destroy command
/// long after the doorbell. The daemon is stopped (SIGSTOP) while the program posts and asks
/// for the destroy, so that the model reads the doorbell and the destroy in the same turn, as a
/// lagging model does; with the HCA service's DestroyDrainLimit 0 (the old behaviour) the
/// destroy then takes the sends with it, which is checked too.
TEST_P(EmuVerbs, ADestroyRightAfterPostingLetsThePostedSendsGoFirst)
{
    PostWithTheDaemonStopped("destroy");
}

/// The same for a program that exits (or is killed) right after posting, without destroying
/// anything: the kernel tears the QP down as the process ends, and the adapter has sent what
/// was posted by then. The process is gone, so the sends' bytes come from the pages it shared
/// with the daemon (pinned pages, on hardware).
TEST_P(EmuVerbs, AProcessThatExitsRightAfterPostingStillSendsWhatItPosted)
{
    PostWithTheDaemonStopped("exit");
}

/// Cnuas's libibverbs moves a region's pages into memory shared with the daemon only where
/// nothing else can write them during the move: not pages a registration on the /proc/PID/mem
/// path touches (the daemon may be writing them), not while the program has another thread
/// (unless CNUAS_SHARE_MR=1 says it may). The peer checks its own /proc/self/maps.
TEST_P(EmuVerbs, RegionsAreMovedIntoSharedMemoryOnlyWhereNothingElseWritesTheirPages)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/cnuas-peer-verbs-share-rules";
    if (access(bin.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "built with libibverbs-dev";
    }
    const ShResult byDefault = Exec("h0", "env -u CNUAS_SHARE_MR " + bin);
    EXPECT_EQ(byDefault.exit, 0) << byDefault.out;
    EXPECT_NE(byDefault.out.find("share rules: OK"), std::string::npos) << byDefault.out;
    const ShResult promised = Exec("h0", "env CNUAS_SHARE_MR=1 " + bin + " --threaded-ok");
    EXPECT_EQ(promised.exit, 0) << promised.out;
    EXPECT_NE(promised.out.find("share rules: OK"), std::string::npos) << promised.out;
}

/// Registered memory reaches the daemon through a shared mapping (or, with CNUAS_SHARE_MR=0,
/// through /proc/PID/mem): either way ib_write_bw and ib_read_bw move their data, and the
/// status says which way each region went.
TEST_P(EmuVerbs, RegisteredMemoryIsSharedWithTheDaemonOrReachedThroughProcMem)
{
    for (const char* share : {"1", "0"})
    {
        SCOPED_TRACE(std::string("CNUAS_SHARE_MR=") + share);
        const nlohmann::json before = Status();
        const std::string env = std::string("env CNUAS_SHARE_MR=") + share + " ";
        // ib_read_bw checks no data: msgstream's check (SEND, WRITE, WRITE with immediate,
        // every byte compared) is the one that counts.
        RunPair(env + "ib_read_bw -n 200 -s 65536", env + "ib_read_bw -n 200 -s 65536", 18515);
        const std::string ms = CNUAS_BINARY_DIR "/bin/msgstream";
        if (access(ms.c_str(), X_OK) == 0)
        {
            std::string server;
            const std::string client = RunPair(env + ms + " -n 50", env + ms + " -n 50", 18520, &server);
            EXPECT_NE(client.find("msgstream: OK"), std::string::npos) << client;
            EXPECT_NE(server.find("msgstream: OK"), std::string::npos) << server;
        }
        const nlohmann::json after = Status();
        ASSERT_TRUE(after.contains("live")) << after.dump();
        for (size_t h = 0; h < 2; ++h)
        {
            const auto& b = before["live"]["hosts"][h]["verbs"];
            const auto& a = after["live"]["hosts"][h]["verbs"];
            const int shared = a.value("shared_mrs", 0) - b.value("shared_mrs", 0);
            const int unshared = a.value("unshared_mrs", 0) - b.value("unshared_mrs", 0);
            if (std::string(share) == "1")
            {
                EXPECT_GE(shared, 1) << a.dump();
                EXPECT_EQ(unshared, 0) << a.dump();
            }
            else
            {
                EXPECT_EQ(shared, 0) << a.dump();
                EXPECT_GE(unshared, 1) << a.dump();
            }
            EXPECT_EQ(a.value("windows_refused", 0), b.value("windows_refused", 0)) << a.dump();
        }
    }
}

} // namespace

namespace
{

class EmuVerbsJumbo : public EmuFixture
{
};

/// `cnuas up --mtu 9000`, as RoCE clusters run: the hosts' eth0 and every port take 9000-byte
/// frames, the HCA's active MTU is 4096, unfragmented jumbo pings cross the switch, and
/// msgstream's multi-packet messages arrive verified.
TEST_F(EmuVerbsJumbo, JumboFramesGiveA4096ByteRoceMtu)
{
    const std::string ms = CNUAS_BINARY_DIR "/bin/msgstream";
    if (access(CNUAS_BINARY_DIR "/host/lib/libibverbs.so.1", R_OK) != 0 ||
        access(ms.c_str(), X_OK) != 0 || access("/usr/bin/ibv_devinfo", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Cnuas's libibverbs and msgstream (libibverbs-dev) and Debian's "
                        "ibverbs-utils";
    }
    ShResult up = Up("--fabric roce --hosts 2 --mtu 9000");
    ASSERT_EQ(up.exit, 0) << up.out;
    EXPECT_NE(Exec("h0", "ip link show eth0").out.find("mtu 9000"), std::string::npos);
    ShResult info = Exec("h0", "ibv_devinfo");
    EXPECT_NE(info.out.find("active_mtu:\t\t4096 (5)"), std::string::npos) << info.out;
    ShResult ping = Exec("h0", "ping -c 3 -i 0.2 -M do -s 8972 10.0.0.2");
    EXPECT_EQ(ping.exit, 0) << ping.out;
    EXPECT_NE(ping.out.find("3 received"), std::string::npos) << ping.out;
    ExecBackground("h1", "timeout 60 " + ms + " -s 10000 -n 20", "jumbo-server.txt");
    ASSERT_TRUE(WaitListening(18520, 10));
    ShResult client = Exec("h0", "timeout 60 " + ms + " -s 10000 -n 20 10.0.0.2");
    EXPECT_EQ(client.exit, 0) << client.out;
    EXPECT_NE(client.out.find("msgstream: OK"), std::string::npos) << client.out;
    std::string server;
    for (int i = 0; i < 300 && server.find("msgstream: OK") == std::string::npos; ++i)
    {
        server = WaitForLines("jumbo-server.txt", 1, 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_NE(server.find("msgstream: OK"), std::string::npos) << server;
}

/// A daemon that dies (a crash, a restart) is reported by the library: programs in the middle
/// of a transfer get errors and a clear message, not an endless poll.
class EmuVerbsDaemonLoss : public EmuFixture
{
};

TEST_F(EmuVerbsDaemonLoss, ProgramsLearnThatTheHcaIsGoneInsteadOfHanging)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/msgstream";
    if (access(bin.c_str(), X_OK) != 0 ||
        access(CNUAS_BINARY_DIR "/host/lib/libibverbs.so.1", R_OK) != 0)
    {
        GTEST_SKIP() << "msgstream and Cnuas's libibverbs are built with libibverbs-dev";
    }
    ShResult up = Up("--fabric roce --hosts 2");
    ASSERT_EQ(up.exit, 0) << up.out;
    const std::string stateFile = (m_dir / "state" / ("fabric-" + m_name + ".json")).string();
    const int daemon = nlohmann::json::parse(Sh("cat " + stateFile).out).value("pid", 0);
    ASSERT_GT(daemon, 0);
    for (const char* h : {"h1", "h0"})
    {
        const std::string peer = std::string(h) == "h0" ? " 10.0.0.2" : "";
        Sh("(" + Cnuas("exec --name " + m_name + " " + h + " -- timeout 120 " + bin +
                       " -n 1000000" + peer) +
           "; echo exit=$?) > " + (m_dir / (std::string(h) + ".txt")).string() + " 2>&1 &");
        std::this_thread::sleep_for(std::chrono::milliseconds(700));
    }
    // Both programs are streaming before the daemon goes (not a fixed wait).
    ASSERT_TRUE(WaitForPostedWqes({0, 1}, 100)) << ReadFile(m_dir / "h0.txt");
    ASSERT_EQ(kill(daemon, SIGKILL), 0);
    for (const char* h : {"h0", "h1"})
    {
        SCOPED_TRACE(h);
        std::string out;
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (out.find("exit=") == std::string::npos && std::chrono::steady_clock::now() < end)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            out = Sh("cat " + (m_dir / (std::string(h) + ".txt")).string()).out;
        }
        ASSERT_NE(out.find("exit="), std::string::npos) << "hung:\n" << out;
        EXPECT_EQ(out.find("exit=0"), std::string::npos) << out;
        EXPECT_EQ(out.find("exit=124"), std::string::npos) << "ran into its timeout:\n" << out;
        EXPECT_NE(out.find("is gone"), std::string::npos) << out;
    }
}

} // namespace
