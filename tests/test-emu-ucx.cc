// UCX on emulated hosts: Debian's ucx-utils (ucx_info, ucx_perftest; UCX is the transport under
// Open MPI) through Cnuas's libibverbs, on an InfiniBand fabric and on a RoCE fabric; and Open
// MPI's mpirun across hosts over it (examples/mpi/mpi-pingpong, mpi-collectives). UCX asks
// more of an HCA than perftest does: it looks for /dev/infiniband/uverbsN, interposes mmap and
// mremap, flushes connections with zero-length RDMA WRITEs, puts 32-bit flow labels in its
// address handles, and judges two processes on one machine (same IPC namespace) able to share
// memory. Each of those stopped it once; the tests below hold them. Needs root.
#include "emu-test-util.h"

#include <regex>

using namespace cnuas_emu_test;

namespace
{

struct UcxFabricCase
{
    const char* name;
    const char* upArgs;
    const char* device; ///< UCX's name of the emulated adapter's port
    const char* h1ByName; ///< what `h1` resolves to in the hosts (IB: its management address)
    const char* leafSpineArgs; ///< four hosts, two on each of two leaves joined by two spines
};

// InfiniBand runs dilated in the emulation tests (idle links' flow control, issue 18); UCX's
// timeouts are long enough for it.
const UcxFabricCase kUcxIb{"ib", "--fabric ib --hosts 2 --dilation 10", "cnuas_0:1",
                           "10.255.0.2",
                           "--fabric ib --topology leaf-spine:leaves=2,spines=2,hosts=2 "
                           "--dilation 10"};
const UcxFabricCase kUcxRoce{"roce", "--fabric roce --hosts 2", "cnuas_0:1", "10.0.0.2",
                             "--fabric roce --topology leaf-spine:leaves=2,spines=2,hosts=2"};

constexpr int kPerftestPort = 13337; // ucx_perftest's default

class EmuUcx : public EmuFixture, public ::testing::WithParamInterface<UcxFabricCase>
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
            access("/usr/bin/ucx_perftest", X_OK) != 0)
        {
            GTEST_SKIP() << "needs Cnuas's libibverbs (libibverbs-dev at build time) and Debian's "
                            "ucx-utils (scripts/setup-debian.sh installs them)";
        }
        ShResult up = Up(GetParam().upArgs);
        ASSERT_EQ(up.exit, 0) << up.out;
        ASSERT_TRUE(WaitForIbPortsActive()) << "the SM's sweep (`up` returns before it)";
        ASSERT_TRUE(WaitForIpoibJoined()) << "rdma_cm resolves by IPoIB's ARP";
    }

    /// ucx_perftest between h1 (the server, `serverArgs`) and h0 (the client, `clientArgs`,
    /// h1 at 10.0.0.2): both must end well, without an error message. Returns the client's
    /// output.
    std::string Perftest(const std::string& serverArgs, const std::string& clientArgs)
    {
        static int n = 0;
        const std::string out = "ucx-server-" + std::to_string(++n) + ".txt";
        const std::string pid = (m_dir / (out + ".pid")).string();
        ExecBackground("h1",
                       "sh -c 'echo $$ > " + pid + "; timeout 120 ucx_perftest " + serverArgs +
                           "; echo server-exit=$?'",
                       out);
        EXPECT_TRUE(WaitListening(kPerftestPort)) << "ucx_perftest did not start listening";
        const ShResult c = Exec("h0", "timeout 120 ucx_perftest 10.0.0.2 " + clientArgs);
        EXPECT_EQ(c.exit, 0) << clientArgs << "\n" << c.out;
        EXPECT_TRUE(std::regex_search(c.out, std::regex("Final:\\s+\\d+\\s+[0-9.]+")))
            << clientArgs << ": no result line\n" << c.out;
        EXPECT_EQ(c.out.find("ERROR"), std::string::npos) << clientArgs << "\n" << c.out;
        std::string server;
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while ((server = ReadFile(m_dir / out)).find("server-exit=") == std::string::npos &&
               std::chrono::steady_clock::now() < end)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        EXPECT_NE(server.find("server-exit=0"), std::string::npos) << clientArgs << "\n"
                                                                    << server;
        // A server left waiting (its client failed) would hold the port from the next one.
        Sh("pkill -P \"$(cat " + pid + ")\" timeout");
        return c.out;
    }

    /// Counter `key` of host `host`'s `group` in the status (-1 when absent).
    int64_t HostCounter(const std::string& host, const char* group, const char* key)
    {
        const nlohmann::json status = Status(); // kept: the loop walks into it
        for (const auto& h : status["live"]["hosts"])
        {
            if (h.value("name", "") == host)
            {
                return h[group].value(key, int64_t{-1});
            }
        }
        ADD_FAILURE() << "no host " << host << " in the status";
        return -1;
    }

    /// Work requests host `host` has posted to its HCA since the fabric came up.
    int64_t SendWqes(const std::string& host) { return HostCounter(host, "verbs", "send_wqes"); }

    /// Runs mpi-collectives (`bin`) across four hosts on two leaves, started in h0 by `mpirun`
    /// (the launcher and its options up to the program): every rank on its own host, every element
    /// exact, each rank's share through its own HCA, nothing lost on the way.
    void CheckCollectivesAcrossFourHosts(const std::string& mpirun, const std::string& bin)
    {
        std::vector<int64_t> before;
        for (const char* h : {"h0", "h1", "h2", "h3"})
        {
            before.push_back(SendWqes(h));
        }
        const ShResult r = Exec("h0", "timeout 300 " + mpirun + " " + bin + " 3 65536");
        EXPECT_EQ(r.exit, 0) << r.out;
        EXPECT_NE(r.out.find("4 ranks: 0 on h0, 1 on h1, 2 on h2, 3 on h3"), std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find("\n0 bad elements"), std::string::npos) << r.out;
        // 3 operations x 6 sizes x 3 iterations: each rank sent its share through its own HCA
        // (TCP would post no work request on any).
        for (int i = 0; i < 4; ++i)
        {
            EXPECT_GE(SendWqes("h" + std::to_string(i)) - before[static_cast<size_t>(i)], 50)
                << "h" << i << "\n" << r.out;
        }
        // Nothing lost or repeated on the way (the adapters' transport counters, as a real one's
        // hw_counters): every packet sent, retransmissions included, was received, once the last
        // ACKs have landed.
        nlohmann::json transports;
        int64_t sent = 0;
        int64_t received = 0;
        for (int tries = 0; tries < 40; ++tries)
        {
            transports = nlohmann::json::array();
            sent = 0;
            received = 0;
            const nlohmann::json status = Status(); // kept: the loop walks into it
            for (const auto& h : status["live"]["hosts"])
            {
                const auto& tr = h["verbs"]["transport"];
                transports.push_back(tr);
                sent += tr.value("packets_sent", int64_t{0});
                received += tr.value("packets_received", int64_t{0});
            }
            if (sent > 0 && sent == received)
            {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        EXPECT_GT(sent, 1000) << transports.dump();
        EXPECT_EQ(sent, received) << transports.dump();
    }
};

TEST_P(EmuUcx, UcxFindsTheHcaAndEachHostIsAMachineOfItsOwn)
{
    // UCX lists a verbs device only when /dev/infiniband/<dev_name> is a character device.
    const ShResult info = Exec("h0", "ucx_info -d");
    ASSERT_EQ(info.exit, 0) << info.out;
    for (const char* tl : {"rc_verbs", "ud_verbs"})
    {
        EXPECT_TRUE(std::regex_search(info.out, std::regex(std::string("Transport: ") + tl +
                                                           "\\s*\\n#\\s*Device: " +
                                                           GetParam().device)))
            << tl << " on " << GetParam().device << " missing:\n" << info.out;
    }
    const ShResult dev = Exec("h0", "stat -c '%n %F %t:%T %a' /dev/infiniband/uverbs0");
    EXPECT_EQ(dev.out, "/dev/infiniband/uverbs0 character special file e7:c0 666\n");
    // The rest of /dev is the machine's, as before.
    EXPECT_EQ(Exec("h0", "sh -c 'echo x > /dev/null && test -c /dev/null && test -d /dev/pts'")
                  .exit,
              0);
    // Each host its hostname and IPC namespace; two programs in one host share them.
    const std::string q = "sh -c 'hostname; readlink /proc/self/ns/ipc'";
    const std::string h0 = Exec("h0", q).out;
    const std::string h1 = Exec("h1", q).out;
    EXPECT_EQ(h0.substr(0, 3), "h0\n");
    EXPECT_EQ(h1.substr(0, 3), "h1\n");
    EXPECT_NE(h0, h1);
    EXPECT_EQ(Exec("h0", q).out, h0);
    // The hosts know each other by name (launchers look names up), and `cnuas rsh` runs a
    // command in another host as ssh would: its words to sh -c.
    const std::string byName = Exec("h0", "getent ahostsv4 h1").out;
    EXPECT_EQ(byName.substr(0, byName.find(' ')), GetParam().h1ByName) << byName;
    // The fabric has no name server and the host's resolver says so: an IPv6-first lookup of a
    // name /etc/hosts has for IPv4 only goes on to DNS, and a name nobody has is not found
    // (with the machine's resolver both waited for its timeouts).
    const ShResult resolv = Exec("h0", "cat /etc/resolv.conf");
    EXPECT_NE(resolv.out.find("nameserver 127.0.0.1"), std::string::npos) << resolv.out;
    const std::string v6First = Exec("h0", "getent hosts h1").out;
    EXPECT_EQ(v6First.substr(0, v6First.find(' ')), GetParam().h1ByName) << v6First;
    EXPECT_EQ(Exec("h0", "getent hosts no-such-host.example").exit, 2);
    const ShResult rsh = Sh(Cnuas("rsh --name " + m_name + " h1 echo '$(hostname)' a b"));
    EXPECT_EQ(rsh.exit, 0) << rsh.out;
    EXPECT_EQ(rsh.out, "h1 a b\n");
}

TEST_P(EmuUcx, UctTransportsMoveDataAcrossTheFabric)
{
    const std::string dev = std::string("-d ") + GetParam().device;
    // put_lat: each side waits for the other's RDMA WRITE to change its buffer (the pages the
    // daemon writes must be the program's); am_lat: active messages, and the flush behind
    // them (a zero-length WRITE with R_Key 0); put_bw: 64 KiB RDMA WRITEs; ud_verbs: UCX's own
    // reliability over UD.
    for (const auto& [tl, test] : std::vector<std::pair<std::string, std::string>>{
             {"rc_verbs", "-t put_lat -n 300"},
             {"rc_verbs", "-t am_lat -n 300"},
             {"rc_verbs", "-t put_bw -D zcopy -s 65536 -n 100"},
             {"ud_verbs", "-t am_lat -n 300"}})
    {
        SCOPED_TRACE(tl + " " + test);
        Perftest(dev + " -x " + tl, dev + " -x " + tl + " " + test);
    }
}

TEST_P(EmuUcx, UcpWithItsDefaultTransportsCrossesTheFabricNotSharedMemory)
{
    // UCP picks transports itself: with both hosts on one machine it would pick shared memory
    // (posix, sysv, cma) unless each host is a machine of its own. Every message then crosses
    // the HCA: the work requests posted show it.
    const int64_t before = SendWqes("h0");
    Perftest("", "-t tag_bw -s 65536 -n 200");
    const int64_t after = SendWqes("h0");
    EXPECT_GE(after - before, 200) << "tag_bw's 200 messages did not go through h0's HCA";
    Perftest("", "-t tag_lat -n 300");
    Perftest("", "-t ucp_put_lat -n 300");
}

/// UCP's client-server API (ucp_listener, ucp_ep_create with a socket address), as in the
/// ucp_client_server example libucx-dev ships: connected through rdma_cm (UCX's rdmacm
/// connection manager: a connection made without a QP on the ID, the QP number in the
/// REQ/REP, the RTU sent by rdma_establish), then the messages over the adapters; the example
/// prints what its server received, checked here in full. Its tag API only: the client closes
/// its endpoint by force as soon as its last send completes, which for the stream and
/// active-message APIs is when the data is copied, not acknowledged; here the disconnect (a
/// DREQ on QP1, in no order with the data's QP) reaches the server's UCX before it has taken
/// the last message, and it drops it (every packet of it reached the server's adapter, by its
/// counters). A 100 KB tagged send is a rendezvous, complete only once the server has read it.
TEST_P(EmuUcx, UcpClientServerConnectsThroughRdmaCm)
{
    const std::string src = "/usr/share/doc/libucx-dev/examples/ucp_client_server.c";
    if (access(src.c_str(), R_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's libucx-dev (scripts/setup-debian.sh installs it)";
    }
    const std::string bin = (m_dir / "ucp_client_server").string();
    const ShResult cc = Sh("cc -O2 -o " + bin + " " + src +
                           " -I/usr/share/doc/libucx-dev/examples -lucp -lucs");
    ASSERT_EQ(cc.exit, 0) << cc.out;
    auto cmMads = [this](const std::string& host) {
        return HostCounter(host, "rdma_cm", "mads_sent");
    };
    constexpr int kSize = 100000; // beyond UCX's eager limit: the rendezvous protocol
    std::string expected(kSize - 1, 'A');
    for (int i = 0; i < kSize - 1; ++i)
    {
        expected[static_cast<size_t>(i)] = static_cast<char>('A' + i % 26);
    }
    // rdma_cm is UCX's first choice of connection manager already; the variable makes sure
    // that a failure is not hidden by its fallback to TCP.
    const std::string run = "env UCX_SOCKADDR_TLS_PRIORITY=rdmacm timeout 60 " + bin;
    const int64_t mads0 = cmMads("h0");
    const int64_t wqes0 = SendWqes("h0");
    const std::string args = " -c tag -i 2 -s " + std::to_string(kSize);
    const std::string out = "ucp-server.txt";
    const std::string pid = (m_dir / (out + ".pid")).string();
    // The example's server serves one client after another until it is stopped; line-buffered,
    // as its output is read while it runs.
    ExecBackground("h1",
                   "sh -c 'echo $$ > " + pid + "; stdbuf -oL " + run + args +
                       "; echo server-exit=$?'",
                   out);
    // Whether the server's output holds `what` `count` times, waiting up to `seconds`.
    auto waitFor = [&](const std::string& what, int count, int seconds) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        std::string text;
        while (true)
        {
            text = ReadFile(m_dir / out);
            int n = 0;
            for (size_t at = text.find(what); at != std::string::npos;
                 at = text.find(what, at + what.size()))
            {
                ++n;
            }
            if (n >= count || std::chrono::steady_clock::now() >= end)
            {
                return n >= count;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    };
    // Its listener is rdma_cm's, not a TCP socket: it says when it listens.
    ASSERT_TRUE(waitFor("server is listening", 1, 20)) << ReadFile(m_dir / out);
    const ShResult c = Exec("h0", run + " -a 10.0.0.2" + args);
    EXPECT_EQ(c.exit, 0) << c.out.substr(0, 3000);
    // The server prints the first and the last message it got, whole (nothing in the
    // example checks them), each with a success line.
    EXPECT_TRUE(waitFor("UCP TEST SUCCESS", 2, 30)) << ReadFile(m_dir / out).substr(0, 3000);
    EXPECT_TRUE(waitFor("\n" + expected + ".\n", 2, 1))
        << "the server did not get the client's messages";
    Sh("pkill -P \"$(cat " + pid + ")\" timeout");
    EXPECT_TRUE(waitFor("server-exit=", 1, 30));
    EXPECT_GE(cmMads("h0") - mads0, 2) << "no CM REQ and RTU from h0";
    EXPECT_GT(SendWqes("h0") - wqes0, 0) << "nothing went through h0's HCA";
}

TEST_P(EmuUcx, OpenMpiStartedInOneHostRunsItsRanksInTwoOverUcx)
{
    const std::string pingpong = CNUAS_BINARY_DIR "/bin/mpi-pingpong";
    if (access("/usr/bin/mpirun", X_OK) != 0 || access(pingpong.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's openmpi-bin and examples/mpi/mpi-pingpong "
                        "(libopenmpi-dev at build time; scripts/setup-debian.sh installs both)";
    }
    // mpirun reaches h1 through `cnuas rsh` (cnuas exec names it to Open MPI); Debian's Open
    // MPI turns its UCX layer off by default (/etc/openmpi/openmpi-mca-params.conf).
    const int64_t before = SendWqes("h0");
    const ShResult r = Exec("h0", "timeout 180 mpirun --allow-run-as-root --mca pml ucx -np 2 "
                                  "--host h0,h1 " + pingpong + " 5 262144");
    EXPECT_EQ(r.exit, 0) << r.out;
    EXPECT_NE(r.out.find("rank 0 on h0, rank 1 on h1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n0 bad bytes"), std::string::npos) << r.out;
    // 10 sizes, 5 round trips each: every message rank 0 sent went through h0's HCA.
    EXPECT_GE(SendWqes("h0") - before, 50) << r.out;
}

/// MPICH (Debian's runs over UCX too), started as a user starts it: `mpirun.mpich -np 2 -hosts
/// h0,h1` in h0. Its launcher, hydra, reaches h1 through the cnuas-rsh link exec names to it
/// (HYDRA_LAUNCHER_EXEC) and hands every rank mpiexec's own environment, h0's sockets
/// included: each rank must still use the adapter of the host it runs in
/// (host/abi/cnuas-host-env.h), not h0's.
TEST_P(EmuUcx, MpichStartedInOneHostRunsEachRankOnItsOwnHostsAdapter)
{
    if (access("/usr/bin/mpicc.mpich", X_OK) != 0 || access("/usr/bin/mpirun.mpich", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's mpich and libmpich-dev (scripts/setup-debian.sh "
                        "installs them)";
    }
    const std::string bin = (m_dir / "mpi-pingpong-mpich").string();
    const ShResult cc =
        Sh("mpicc.mpich -O2 -o " + bin + " " CNUAS_SOURCE_DIR "/examples/mpi/mpi-pingpong.c");
    ASSERT_EQ(cc.exit, 0) << cc.out;
    const int64_t before0 = SendWqes("h0");
    const int64_t before1 = SendWqes("h1");
    const ShResult r =
        Exec("h0", "timeout 180 mpirun.mpich -np 2 -hosts h0,h1 " + bin + " 5 262144");
    EXPECT_EQ(r.exit, 0) << r.out;
    EXPECT_NE(r.out.find("rank 0 on h0, rank 1 on h1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n0 bad bytes"), std::string::npos) << r.out;
    EXPECT_GE(SendWqes("h0") - before0, 50) << r.out;
    EXPECT_GE(SendWqes("h1") - before1, 50) << "rank 1 did not use h1's adapter\n" << r.out;
}

/// The collectives a training job spends its network time in, across four hosts on two leaves
/// (every exchange between the leaves crosses a spine): allreduce, all-to-all and broadcast
/// from 8 B to 64 KiB per rank, every element checked by every rank (mpi-collectives).
TEST_P(EmuUcx, OpenMpiCollectivesAcrossFourHostsOfALeafSpineAreExact)
{
    const std::string collectives = CNUAS_BINARY_DIR "/bin/mpi-collectives";
    if (access("/usr/bin/mpirun", X_OK) != 0 || access(collectives.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's openmpi-bin and examples/mpi/mpi-collectives "
                        "(libopenmpi-dev at build time; scripts/setup-debian.sh installs both)";
    }
    Sh(Cnuas("down --name " + m_name)); // the fixture's two hosts
    const ShResult up = Up(GetParam().leafSpineArgs);
    ASSERT_EQ(up.exit, 0) << up.out;
    // mpirun as a user types it on a cluster: exec sets Open MPI up for the adapters (UCX,
    // `cnuas rsh`, root allowed).
    CheckCollectivesAcrossFourHosts("mpirun -np 4 --host h0,h1,h2,h3", collectives);
}

/// The same collectives under MPICH (hydra's ranks on four hosts, each rank given mpiexec's
/// environment, each using its own host's adapter).
TEST_P(EmuUcx, MpichCollectivesAcrossFourHostsOfALeafSpineAreExact)
{
    if (access("/usr/bin/mpicc.mpich", X_OK) != 0 || access("/usr/bin/mpirun.mpich", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's mpich and libmpich-dev (scripts/setup-debian.sh "
                        "installs them)";
    }
    const std::string bin = (m_dir / "mpi-collectives-mpich").string();
    const ShResult cc =
        Sh("mpicc.mpich -O2 -o " + bin + " " CNUAS_SOURCE_DIR "/examples/mpi/mpi-collectives.c");
    ASSERT_EQ(cc.exit, 0) << cc.out;
    Sh(Cnuas("down --name " + m_name));
    const ShResult up = Up(GetParam().leafSpineArgs);
    ASSERT_EQ(up.exit, 0) << up.out;
    CheckCollectivesAcrossFourHosts("mpirun.mpich -np 4 -hosts h0,h1,h2,h3", bin);
}

INSTANTIATE_TEST_SUITE_P(Fabrics,
                         EmuUcx,
                         ::testing::Values(kUcxIb, kUcxRoce),
                         [](const ::testing::TestParamInfo<UcxFabricCase>& p) {
                             return std::string(p.param.name);
                         });

} // namespace
