// Real hosts on an emulated InfiniBand fabric: the seed's port story with real processes. With
// no subnet manager the hosts' ports stay Initializing with LID 0 and no data flows; the built-in
// SM brings them Active with LIDs, and the hosts' IP (IPoIB on ib0) crosses the fabric. The
// management network beside the fabric (mgmt0) carries TCP either way. Root, as for EmuRoce.
#include "emu-test-util.h"

namespace
{
using namespace cnuas_emu_test;

class EmuIb : public EmuFixture
{
  protected:
    /// The live status of this fabric's hosts.
    nlohmann::json Hosts()
    {
        nlohmann::json s = Status();
        if (!s.contains("live") || !s["live"].contains("hosts"))
        {
            ADD_FAILURE() << "no live status: " << s.dump();
            return nlohmann::json::array();
        }
        return s["live"]["hosts"];
    }
};

TEST_F(EmuIb, WithoutASubnetManagerPortsStayInitializingAndNoDataFlows)
{
    ShResult up = Up("--fabric ib --hosts 2 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // links train meanwhile
    for (const auto& h : Hosts())
    {
        EXPECT_EQ(h.value("port_state", ""), "Initializing") << h.dump();
        EXPECT_EQ(h.value("lid", -1), 0) << h.dump();
    }
    // IP over the fabric goes nowhere: no SM made the broadcast group or gave a LID, so IPoIB
    // has not joined (as the kernel's interface has no carrier until it has) and sends nothing.
    ShResult ping = Exec("h0", "ping -c 2 -i 0.2 -W 1 10.0.0.2");
    EXPECT_NE(ping.exit, 0) << ping.out;
    const auto hosts = Hosts();
    EXPECT_GT(hosts[0].value("dropped_not_joined", 0), 0) << hosts[0].dump();
    EXPECT_EQ(hosts[0].value("broadcast_joins", 1), 0) << "no SM to ask: " << hosts[0].dump();
    EXPECT_EQ(hosts[0].value("broadcast_mlid", 1), 0) << hosts[0].dump();
    EXPECT_EQ(hosts[1].value("ipoib_received", 1), 0) << hosts[1].dump();
    // The management network beside the fabric works regardless: the TCP bootstrap. IPv4
    // only, on it as on ib0 (no router solicitation or MLD flooded to every host by the
    // bridge); lo keeps ::1.
    EXPECT_EQ(Exec("h0", "ping -c 1 -W 2 10.255.0.2").exit, 0);
    EXPECT_EQ(Exec("h0", "ip -6 -o addr show").out.find("mgmt0"), std::string::npos);
    EXPECT_EQ(Exec("h0", "ip -6 -o addr show").out.find("ib0"), std::string::npos);
    EXPECT_NE(Exec("h0", "ip -6 -o addr show dev lo").out.find("::1/128"), std::string::npos);
    EXPECT_EQ(Sh("ip -n " + m_name + "-mgmt -6 -o addr show").out, "");
    TcpTransfer("h0", "h1", "10.255.0.2", 5001, 300000);
    ShResult text = Sh(Cnuas("status"));
    EXPECT_NE(text.out.find("port Initializing, LID 0"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("subnet manager: none"), std::string::npos) << text.out;
}

TEST_F(EmuIb, TheBuiltInSmBringsPortsActiveAndIpoibCarriesTcp)
{
    const std::string pcaps = (m_dir / "pcap").string();
    ShResult up = Up("--fabric ib --hosts 2 --sm builtin --pcap " + pcaps);
    ASSERT_EQ(up.exit, 0) << up.out;
    EXPECT_NE(up.out.find("mgmt0 10.255.0.1"), std::string::npos) << up.out;
    // Ports reach Active once the SM's sweep is done (microseconds of simulated time).
    std::set<int> lids;
    for (int tries = 0; tries < 50; ++tries)
    {
        lids.clear();
        bool active = true;
        for (const auto& h : Hosts())
        {
            active = active && h.value("port_state", "") == "Active";
            lids.insert(h.value("lid", 0));
        }
        if (active)
        {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(lids.size(), 2u);
    EXPECT_EQ(lids.count(0), 0u) << "every port has a LID";
    ShResult ping = Exec("h0", "ping -c 3 -i 0.2 -W 3 10.0.0.2");
    EXPECT_EQ(ping.exit, 0) << ping.out;
    TcpTransfer("h1", "h0", "10.0.0.1", 5002, 500000); // TCP over IPoIB on the simulated wire
    TcpTransfer("h0", "h1", "10.255.0.2", 5003, 300000); // and over the management network
    const auto hosts = Hosts();
    EXPECT_GT(hosts[1].value("ipoib_sent", 0), 200) << hosts[1].dump();
    EXPECT_EQ(hosts[0].value("dropped_no_path", 1), 0) << hosts[0].dump();
    // Each host asked the SA once for the path to the other (ARP's first packet waited for
    // it), and used the answer from then on.
    for (const auto& h : hosts)
    {
        EXPECT_EQ(h.value("path_queries", 0), 1) << h.dump();
        EXPECT_EQ(h.value("path_errors", 1), 0) << h.dump();
        EXPECT_GE(h.value("waited_for_path", 0), 1) << h.dump();
    }
    ASSERT_EQ(Sh(Cnuas("down --name " + m_name)).exit, 0);
    // The capture starts at time zero: the SM's directed-route SMPs (class 0x81), then IPoIB.
    const std::string f = pcaps + "/h0.pcap";
    EXPECT_GT(CountLines(Tshark(f, "infiniband.mad.mgmtclass == 0x81")), 4) << f;
    // IPoIB's path query on the wire, as the kernel's path_rec_start: SubnAdmGet(PathRecord)
    // with DGID, SGID, TClass, NumbPath and P_Key (ComponentMask 0x340c), and the SA's answer.
    EXPECT_EQ(CountLines(Tshark(f, "infiniband.mad.attributeid == 0x0035 && "
                                   "infiniband.mad.method == 0x01 && "
                                   "infiniband.sa.componentmask == 0x340c")),
              1)
        << f;
    EXPECT_GE(CountLines(Tshark(f, "infiniband.mad.attributeid == 0x0035 && "
                                   "infiniband.mad.method == 0x81")),
              1)
        << f;
    // IPoIB's broadcast group, as the kernel's ipoib_mcast_join: one SubnAdmSet(MCMemberRecord)
    // per host with MGID, PortGID, P_Key and JoinState (ComponentMask 0x10083), answered with
    // the group the SM made (MLID 0xc000, Q_Key 0x0B1B); a host's first join may come before
    // the SM's sweep is done, and is answered once it is.
    for (const auto& h : hosts)
    {
        EXPECT_EQ(h.value("broadcast_mlid", 0), 0xC000) << h.dump();
        EXPECT_EQ(h.value("broadcast_joins", 0), 1) << h.dump();
        EXPECT_EQ(h.value("broadcast_join_errors", 1), 0) << h.dump();
    }
    EXPECT_EQ(CountLines(Tshark(f, "infiniband.mad.attributeid == 0x0038 && "
                                   "infiniband.mad.method == 0x02 && "
                                   "infiniband.sa.componentmask == 0x10083 && "
                                   "infiniband.mcmemberrecord.mgid == ff12:401b:ffff::ffff:ffff")),
              1)
        << f;
    EXPECT_EQ(CountLines(Tshark(f, "infiniband.mad.attributeid == 0x0038 && "
                                   "infiniband.mad.method == 0x81 && infiniband.mad.status == 0 "
                                   "&& infiniband.mcmemberrecord.mlid == 0xc000 && "
                                   "infiniband.mcmemberrecord.q_key == 0x0b1b")),
              1)
        << f;
    // ARP in IPoIB's form (RFC 4391 §9.1: hardware type 32, 20-byte link addresses): h0's
    // request to the broadcast group (its MLID, a GRH to its MGID, QPN 0xFFFFFF, the group's
    // Q_Key) and h1's unicast reply to h0's QPN, carrying h1's QPN and GID.
    EXPECT_GE(CountLines(Tshark(f, "arp.opcode == 1 && arp.hw.type == 32 && arp.hw.size == 20 "
                                   "&& infiniband.lrh.dlid == 0xc000 && "
                                   "infiniband.grh.dgid == ff12:401b:ffff::ffff:ffff && "
                                   "infiniband.bth.destqp == 0xffffff && "
                                   "infiniband.deth.q_key == 0x0b1b")),
              1)
        << f;
    const std::string reply =
        Sh("tshark -r " + f + " -n -T fields -e arp.src.hw -Y 'arp.opcode == 2 && "
           "arp.hw.type == 32 && infiniband.bth.destqp == 0xff && infiniband.lrh.lnh == 2' "
           "2>/dev/null")
            .out;
    EXPECT_NE(reply.find("000000fffe80000000000000"), std::string::npos)
        << "h1's QPN 0xff and a link-local GID, unicast without a GRH: " << reply;
    EXPECT_EQ(CountLines(Tshark(f, "arp.hw.type == 1")), 0) << "no Ethernet-form ARP on IB";
    EXPECT_GE(CountLines(Tshark(f, "icmp")), 6) << f;
    // Every data segment of the 500 KB transfer is on the wire (at most 2,004 payload bytes each
    // at IPoIB's MTU of 2044); how many ACKs join them depends on timing (a loaded machine's
    // run had 290 packets in all).
    EXPECT_GE(CountLines(Tshark(f, "tcp")), 500000 / 2004) << f;
    EXPECT_EQ(Tshark(f, "_ws.malformed"), "") << f;
}

/// TCP at full speed over IPoIB fills the HCA port's send queue (the model cannot take a
/// 200 Gb/s link's packets in real time): the bridge then stops reading the host's interface
/// until the queue has room, as an IPoIB driver stops its netdev queue, and no datagram is lost
/// on the way in. Before, each one that found the queue full was dropped (and counted as "port
/// not Active"): iperf3 saw some 17,000 retransmissions a second.
TEST_F(EmuIb, IpoibAtFullSpeedWaitsForTheHcaQueueInsteadOfDropping)
{
    ShResult up = Up("--fabric ib --hosts 2 --sm builtin");
    ASSERT_EQ(up.exit, 0) << up.out;
    ASSERT_TRUE(WaitForIbPortsActive());
    ASSERT_EQ(Exec("h0", "ping -c 1 -W 3 10.0.0.2").exit, 0);
    // A fixed amount, not a fixed time: how much a model that cannot keep a 200 Gb/s link's
    // pace moves in a given wall time is the machine's (a sanitizer build on a loaded one).
    Sh(Cnuas("exec --name " + m_name + " h1 -- timeout 120 iperf3 -s -1 >/dev/null 2>&1 &"));
    ShResult client;
    for (int tries = 0; tries < 20; ++tries)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        client = Exec("h0", "timeout 100 iperf3 -c 10.0.0.2 -n 20M -J");
        if (client.exit == 0)
        {
            break;
        }
    }
    ASSERT_EQ(client.exit, 0) << client.out;
    const auto report = nlohmann::json::parse(client.out, nullptr, false);
    ASSERT_FALSE(report.is_discarded()) << client.out;
    // All of it sent (iperf3's receiver report may leave out what was still in flight; the
    // datagram counts below must match once it landed).
    EXPECT_GE(report["end"]["sum_sent"].value("bytes", 0.0), 20.0 * 1024 * 1024) << client.out;
    // The last segments may still be crossing a model that runs behind the wall clock.
    nlohmann::json hosts;
    for (int tries = 0; tries < 50; ++tries)
    {
        hosts = Hosts();
        if (hosts.size() == 2 &&
            hosts[0].value("ipoib_sent", 0) == hosts[1].value("ipoib_received", 1))
        {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_EQ(hosts.size(), 2u);
    EXPECT_EQ(hosts[0].value("dropped_port_not_active", -1), 0) << hosts[0].dump();
    EXPECT_EQ(hosts[0].value("dropped_refused", -1), 0) << hosts[0].dump();
    EXPECT_GT(hosts[0].value("held_queue_full", 0), 0) << "the queue filled: " << hosts[0].dump();
    EXPECT_EQ(hosts[0].value("ipoib_sent", 0), hosts[1].value("ipoib_received", 1))
        << "every datagram sent arrived (InfiniBand loses none)";
}

/// In an emulated fabric the built-in SM sweeps as a management daemon does, once a second of
/// wall time (a light sweep: SwitchInfo of every switch), not at the simulation's default of
/// every 10 ms of simulated time, which in real time was 100 sweeps a second (on an idle k=8
/// fat-tree, 8,040 SMPs a second).
TEST_F(EmuIb, KnownPathsOutliveTheSubnetManagerAndANewOneWaitsForIt)
{
    // As with the kernel's IPoIB: a path the SA gave stays in use when the SM goes, a new one
    // cannot be found without it (the query times out after PathQueryTimeout, 1 s, and what
    // waited for it is dropped), and is found once an SM answers again.
    ASSERT_EQ(Up("--fabric ib --hosts 3").exit, 0);
    ASSERT_TRUE(WaitForIbPortsActive());
    ASSERT_EQ(Exec("h0", "ping -c 2 -i 0.2 -W 3 10.0.0.2").exit, 0);
    ASSERT_EQ(Sh(Cnuas("sm stop --name " + m_name)).exit, 0);
    EXPECT_EQ(Exec("h0", "ping -c 2 -i 0.2 -W 3 10.0.0.2").exit, 0) << "the known path";
    // h0's ARP request still reaches h2 through the broadcast group (the switches keep their
    // MFTs), but h2 has no path back to h0 to answer with.
    ShResult lost = Exec("h0", "ping -c 2 -i 0.5 -W 2 10.0.0.3");
    EXPECT_NE(lost.exit, 0) << lost.out;
    nlohmann::json h2 = Hosts()[2];
    EXPECT_GE(h2.value("ipoib_received", 0), 1) << "the ARP request: " << h2.dump();
    EXPECT_GE(h2.value("path_errors", 0), 1) << h2.dump();
    EXPECT_GE(h2.value("dropped_no_path", 0), 1) << h2.dump();
    EXPECT_EQ(Hosts()[0].value("path_queries", 0), 1) << "h0 got no answer to ask a path for";
    ASSERT_EQ(Sh(Cnuas("sm start --name " + m_name)).exit, 0);
    bool reached = false;
    for (int tries = 0; tries < 20 && !reached; ++tries)
    {
        reached = Exec("h0", "ping -c 1 -W 2 10.0.0.3").exit == 0;
    }
    EXPECT_TRUE(reached) << Hosts().dump();
}

/// A verbs program on one host sends another's IPoIB what no kernel would (a wrong Q_Key, cut
/// and malformed ARP, Ethernet-form ARP, other EtherTypes, thousands of made-up neighbours,
/// random bytes to the broadcast group): every one is a counted drop or an ARP the kernel
/// ignores, and IPoIB goes on working.
TEST_F(EmuIb, MalformedIpoibFromAVerbsProgramIsCountedAndHarmsNothing)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/cnuas-peer-ipoib-garbage";
    if (access(bin.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "the peer is built with libibverbs-dev";
    }
    ASSERT_EQ(Up("--fabric ib --hosts 3").exit, 0);
    ASSERT_TRUE(WaitForIbPortsActive());
    ASSERT_TRUE(WaitForIpoibJoined()) << Status().dump();
    ASSERT_EQ(Exec("h0", "ping -c 2 -i 0.2 -W 3 10.0.0.2").exit, 0);
    const int h1Lid = Hosts()[1].value("lid", 0);
    const uint64_t before = Hosts()[1].value("dropped_not_ipoib", uint64_t{0});
    ShResult run = Exec("h2", "timeout 120 " + bin + " " + std::to_string(h1Lid) + " 7");
    ASSERT_EQ(run.exit, 0) << run.out;
    EXPECT_NE(run.out.find("sent 2227"), std::string::npos) << run.out;
    // At least the ones no reading can take: 2 wrong Q_Keys, 4 short, 3 EtherTypes, 2 Ethernet
    // ARPs, 12 cut ARPs, 4 bad ARPs, and the 150 of 200 random group datagrams with the
    // group's Q_Key whose EtherType is neither IPv4 nor ARP (all but a few in 65,536).
    auto counted = [&]() {
        return Hosts()[1].value("dropped_not_ipoib", uint64_t{0}) - before >= 27 + 140;
    };
    EXPECT_TRUE(Eventually(counted, true, 30)) << Hosts()[1].dump();
    // The 2,000 ARP requests from made-up neighbours reached the kernel, which ignores them
    // (nobody has 10.0.255.254); IPoIB works on, both ways and from the sender's host.
    EXPECT_GE(Hosts()[1].value("ipoib_received", 0), 2000) << Hosts()[1].dump();
    EXPECT_EQ(Exec("h0", "ping -c 2 -i 0.2 -W 3 10.0.0.2").exit, 0);
    EXPECT_EQ(Exec("h1", "ping -c 2 -i 0.2 -W 3 10.0.0.3").exit, 0);
    EXPECT_EQ(Exec("h1", "ip neigh show 10.0.255.253").out, "");
}

TEST_F(EmuIb, TheBuiltInSmSweepsOnceASecondOfWallTime)
{
    ShResult up = Up("--fabric ib --topology dumbbell:left=2,right=1");
    ASSERT_EQ(up.exit, 0) << up.out;
    auto sm = [this]() {
        const nlohmann::json st = Status();
        return st.contains("live") ? st["live"].value("sm", nlohmann::json::object())
                                   : nlohmann::json::object();
    };
    for (int tries = 0; tries < 100 && sm().value("phase", "") != "up"; ++tries)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_EQ(sm().value("phase", ""), "up") << sm().dump();
    const int64_t before = sm().value("smps_sent", int64_t{-1});
    // Two switches: two SwitchInfo Gets a sweep, about six in 3 s; the old default sent about
    // 600. The interval is simulated time, which a loaded machine's daemon may keep behind the
    // wall clock: watch for at least 3 s, longer (up to 30 s) until a sweep has come.
    const auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    int64_t sent = 0;
    do
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        sent = sm().value("smps_sent", int64_t{-1}) - before;
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while ((seconds < 3 || sent < 1) && seconds < 30);
    EXPECT_GE(sent, 1);
    EXPECT_LE(sent, 20 * seconds) << "in " << seconds << " s";
}

TEST_F(EmuIb, CaptureOfARunningFabricHoldsTheIpoibPackets)
{
    ASSERT_EQ(Up("--fabric ib --hosts 2").exit, 0);
    ASSERT_TRUE(WaitForIbPortsActive()); // the first ping's packets would find no path
    const std::string f = CaptureStart("sw0:1", "sw0-1");
    EXPECT_EQ(Exec("h1", "ping -c 3 -i 0.2 -W 3 10.0.0.1").exit, 0);
    CaptureStop("sw0-1");
    EXPECT_EQ(CountLines(Tshark(f, "icmp")), 6) << "sw0 port 1 faces h0: requests and replies";
    EXPECT_EQ(Tshark(f, "_ws.malformed"), "");
    EXPECT_EQ(Sh(CNUAS_BINARY_DIR "/bin/cnuas pcap check " + f).exit, 0) << "CRCs and lengths";
}

TEST_F(EmuIb, AThousandAndTwentyFourHostsShareOneManagementNetworkAndStopAtOnce)
{
    // A Linux bridge takes at most 1,023 ports: the management network of a k=16 fat-tree spans
    // two bridges (emu-host.cc, RaiseManagementPorts), and is still one network. (`up` failed
    // here with "Exchange full" before.) The hosts' TAPs are persistent and go with their
    // namespaces, all in one batch of the kernel's.
    ShResult up = Up("--fabric ib --topology fat-tree:k=16");
    ASSERT_EQ(up.exit, 0) << up.out.substr(0, 2000);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(up.out, m,
                                  std::regex(R"(h1023 +netns \S+ +ib0 (\S+) .* mgmt0 (\S+))")))
        << up.out.substr(up.out.size() > 2000 ? up.out.size() - 2000 : 0);
    const std::string lastIpoib = m[1];
    const std::string lastMgmt = m[2];
    EXPECT_EQ(lastMgmt, "10.255.4.0");
    EXPECT_EQ(Sh("ip -n " + m_name + "-mgmt -o link show type bridge | wc -l").out, "2\n");
    ShResult there = Exec("h0", "ping -c 1 -W 5 " + lastMgmt);
    EXPECT_EQ(there.exit, 0) << there.out;
    ShResult back = Exec("h1023", "ping -c 1 -W 5 10.255.0.1");
    EXPECT_EQ(back.exit, 0) << back.out;
    // And IPoIB across the fabric, once the built-in SM has swept 1,344 nodes' ports.
    ShResult ipoib;
    for (int tries = 0; tries < 30; ++tries)
    {
        ipoib = Exec("h0", "ping -c 1 -W 1 " + lastIpoib);
        if (ipoib.exit == 0)
        {
            break;
        }
    }
    EXPECT_EQ(ipoib.exit, 0) << ipoib.out;
    ShResult down = Sh(Cnuas("down --name " + m_name));
    EXPECT_EQ(down.exit, 0) << down.out;
    EXPECT_NE(down.out.find("stopped (pid"), std::string::npos) << "not killed: " << down.out;
    EXPECT_EQ(Sh("ip netns list | grep -c '^" + m_name + "-' || true").out, "0\n");
}

TEST_F(EmuIb, MistakesAreRefused)
{
    EXPECT_EQ(Up("--fabric ib --sm opensm").exit, 2);
    EXPECT_EQ(Up("--fabric ib --host-rate 10Gbps").exit, 2);
    EXPECT_EQ(Up("--sm none").exit, 2) << "--sm is for InfiniBand";
}

} // namespace
