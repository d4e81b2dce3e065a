// A hybrid fabric (the seed: "an InfiniBand fabric, a RoCE fabric, or a hybrid of the two"):
// every host has an InfiniBand HCA on an IB fabric and a RoCE NIC on an Ethernet fabric of the
// same topology, both modelled by one daemon, and the same unmodified verbs program runs on
// either adapter. Needs root (namespaces, TAP devices).
#include "emu-test-util.h"

#include <iterator>
#include <regex>
#include <set>

using namespace cnuas_emu_test;

namespace
{

class EmuHybrid : public EmuFixture
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
            access(CNUAS_BINARY_DIR "/bin/msgstream", X_OK) != 0 ||
            access("/usr/bin/ibv_devinfo", X_OK) != 0)
        {
            GTEST_SKIP() << "needs Cnuas's libibverbs, examples/rdma/msgstream and Debian's "
                            "ibverbs-utils (scripts/setup-debian.sh installs them)";
        }
    }

    /// msgstream on `device` between h1 (server) and h0, the handshake over eth0; both must
    /// say OK.
    void Msgstream(const std::string& device, int port)
    {
        const std::string bin = CNUAS_BINARY_DIR "/bin/msgstream -d " + device + " -p " +
                                std::to_string(port) + " -n 50 -t 30";
        const std::string out = "msgstream-" + device + ".txt";
        ExecBackground("h1", "timeout 90 " + bin, out);
        ASSERT_TRUE(WaitListening(port)) << ReadFile(m_dir / out);
        const ShResult client = Exec("h0", "timeout 90 " + bin + " 10.0.0.2");
        EXPECT_EQ(client.exit, 0) << client.out;
        EXPECT_NE(client.out.find("msgstream: OK"), std::string::npos) << client.out;
        std::string server;
        for (int i = 0; i < 200 && server.find("msgstream: OK") == std::string::npos; ++i)
        {
            server = ReadFile(m_dir / out);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        EXPECT_NE(server.find("msgstream: OK"), std::string::npos) << server;
    }

    /// A capture of h0's port on one of its fabrics, in the background until `stop` is
    /// written; returns the pcap's path.
    std::string StartCapture(const std::string& fabric, const std::string& tag)
    {
        return CaptureStart("--fabric " + fabric + " h0", tag + "-" + fabric);
    }
    void StopCapture(const std::string& fabric, const std::string& tag)
    {
        CaptureStop(tag + "-" + fabric);
    }
    int Frames(const std::string& pcap, const std::string& filter)
    {
        return CountLines(Tshark(pcap, filter));
    }
};

TEST_F(EmuHybrid, EveryHostHasAnHcaAndARoceNicAndOneVerbsProgramRunsOnEither)
{
    // Dilated as the InfiniBand verbs tests are (the sanitizer build is slow); both fabrics
    // run in the one simulation, so both are.
    const ShResult up = Up("--fabric hybrid --hosts 2 --dilation 5");
    ASSERT_EQ(up.exit, 0) << up.out;
    EXPECT_NE(up.out.find("hybrid"), std::string::npos) << up.out;
    EXPECT_NE(up.out.find("eth0 10.0.0.2"), std::string::npos) << up.out;
    EXPECT_NE(up.out.find("ib0 10.1.0.2"), std::string::npos) << up.out;
    EXPECT_NE(up.out.find("-- ping -c 3 10.1.0.2; "), std::string::npos) << up.out;

    // Two interfaces, each on its own fabric, and no management network (eth0 is one).
    const std::string addrs = Exec("h1", "ip -br -4 addr").out;
    EXPECT_TRUE(std::regex_search(addrs, std::regex("eth0 .*10\\.0\\.0\\.2/16"))) << addrs;
    EXPECT_TRUE(std::regex_search(addrs, std::regex("ib0 .*10\\.1\\.0\\.2/16"))) << addrs;
    EXPECT_EQ(addrs.find("mgmt0"), std::string::npos) << addrs;
    EXPECT_EQ(Sh("ip netns list | grep -c '^" + m_name + "-mgmt'").out, "0\n");
    for (const char* ip : {"10.0.0.2", "10.1.0.2"})
    {
        const ShResult ping = Exec("h0", std::string("ping -c 2 -W 5 ") + ip);
        EXPECT_EQ(ping.exit, 0) << ip << ": " << ping.out;
    }

    // Two adapters in the device list: the HCA first, then the NIC.
    const std::string devices = Exec("h0", "ibv_devices").out;
    EXPECT_TRUE(std::regex_search(devices, std::regex("cnuas_0[\\s\\S]*cnuas_1"))) << devices;
    const std::string hca = Exec("h0", "ibv_devinfo -d cnuas_0").out;
    EXPECT_NE(hca.find("link_layer:\t\tInfiniBand"), std::string::npos) << hca;
    EXPECT_NE(hca.find("PORT_ACTIVE"), std::string::npos) << hca;
    EXPECT_GT(NumberIn(hca, "port_lid:\\s+(\\d+)"), 0) << hca;
    const std::string nic = Exec("h0", "ibv_devinfo -d cnuas_1").out;
    EXPECT_NE(nic.find("link_layer:\t\tEthernet"), std::string::npos) << nic;
    EXPECT_EQ(NumberIn(nic, "port_lid:\\s+(\\d+)"), 0) << nic;
    // A third device does not exist.
    EXPECT_NE(Exec("h0", "ibv_devinfo -d cnuas_2").exit, 0);
    // libibumad and sysfs list both CAs, as on a node with a ConnectX in each mode: ibstat
    // (libibumad) and ibstatus (a script reading /sys/class/infiniband).
    const std::string stat = Exec("h0", "ibstat").out;
    EXPECT_TRUE(std::regex_search(
        stat, std::regex("CA 'cnuas_0'[\\s\\S]*Link layer: InfiniBand[\\s\\S]*CA 'cnuas_1'"
                         "[\\s\\S]*Base lid: 0[\\s\\S]*Link layer: Ethernet")))
        << stat;
    EXPECT_EQ(Exec("h0", "ibstat -l").out, "cnuas_0\ncnuas_1\n");
    const std::string status = Exec("h0", "ibstatus").out;
    EXPECT_TRUE(std::regex_search(status, std::regex("device 'cnuas_0' port 1 status:[\\s\\S]*"
                                                     "link_layer:\\s+InfiniBand[\\s\\S]*"
                                                     "device 'cnuas_1' port 1 status:[\\s\\S]*"
                                                     "link_layer:\\s+Ethernet")))
        << status;

    // The same binary on each adapter; each run's packets cross only its own fabric: the
    // InfiniBand run puts BTH packets on the HCA's link and no RoCEv2 on the NIC's, and the
    // RoCE run the other way round.
    for (const std::string device : {"cnuas_0", "cnuas_1"})
    {
        const bool ib = device == "cnuas_0";
        const std::string ibPcap = StartCapture("ib", device);
        const std::string rocePcap = StartCapture("roce", device);
        Msgstream(device, ib ? 18530 : 18531);
        StopCapture("ib", device);
        StopCapture("roce", device);
        // RC SEND and RDMA WRITE packets (opcodes 0x00-0x0B) between the two hosts' QPs.
        const int ibData = Frames(ibPcap, "infiniband.bth.opcode <= 11");
        const int roceData = Frames(rocePcap, "udp.dstport == 4791");
        if (ib)
        {
            EXPECT_GE(ibData, 100) << device;
            EXPECT_EQ(roceData, 0) << device;
        }
        else
        {
            EXPECT_GE(roceData, 100) << device;
            EXPECT_EQ(ibData, 0) << device;
        }
    }

    // The status shows both adapters of every host, each with its own counters.
    const nlohmann::json s = Status();
    ASSERT_TRUE(s.contains("live")) << s.dump();
    const auto& live = s["live"];
    EXPECT_EQ(live.value("fabric", ""), "hybrid");
    ASSERT_EQ(live["hosts"].size(), 2u) << live.dump();
    const auto& h0 = live["hosts"][0];
    EXPECT_EQ(h0.value("ip", ""), "10.0.0.1");
    EXPECT_EQ(h0["verbs"].value("device", ""), "cnuas_1");
    EXPECT_GE(h0["verbs"].value("send_wqes", 0), 100);
    ASSERT_TRUE(h0.contains("ib")) << h0.dump();
    EXPECT_EQ(h0["ib"].value("ip", ""), "10.1.0.1");
    EXPECT_EQ(h0["ib"].value("port_state", ""), "Active");
    EXPECT_EQ(h0["ib"]["verbs"].value("device", ""), "cnuas_0");
    EXPECT_GE(h0["ib"]["verbs"].value("send_wqes", 0), 100);
    EXPECT_TRUE(live.contains("sm") && live["sm"].value("running", false)) << live.dump();

    // A capture must say which of the two fabrics.
    const ShResult ambiguous = Sh(Cnuas("capture --name " + m_name + " h0 -w " +
                                        (m_dir / "x.pcap").string() + " --duration 1"));
    EXPECT_EQ(ambiguous.exit, 1) << ambiguous.out;
    EXPECT_NE(ambiguous.out.find("--fabric ib|roce"), std::string::npos) << ambiguous.out;

    // Down removes both adapters' sockets with the namespaces.
    const ShResult down = Sh(Cnuas("down --name " + m_name));
    EXPECT_EQ(down.exit, 0) << down.out;
    EXPECT_EQ(Sh("ip netns list | grep -c '^" + m_name + "-'").out, "0\n");
    int left = 0;
    for (const auto& e : std::filesystem::directory_iterator(m_dir / "state"))
    {
        left += e.path().filename().string().find(m_name) != std::string::npos;
    }
    EXPECT_EQ(left, 0);
}

// The seed's port story on the hybrid's InfiniBand side, while its Ethernet side carries on:
// without a subnet manager the HCA's port is Initializing with LID 0 and IPoIB has no path, but
// the RoCE NIC works; once an SM runs, the HCA is Active with a LID and carries traffic too.
TEST_F(EmuHybrid, WithoutASubnetManagerTheHcaWaitsWhileTheRoceNicWorks)
{
    // opensm, then IPoIB: its join timers shortened (kShortIpoibJoins).
    const ShResult up = Up(std::string("--fabric hybrid --hosts 2 --sm none --dilation 5") +
                           kShortIpoibJoins);
    ASSERT_EQ(up.exit, 0) << up.out;
    const std::string ibstat = Exec("h0", "ibstat cnuas_0").out;
    EXPECT_NE(ibstat.find("State: Initializing"), std::string::npos) << ibstat;
    EXPECT_NE(ibstat.find("Base lid: 0"), std::string::npos) << ibstat;
    EXPECT_NE(Exec("h0", "ping -c 1 -W 2 10.1.0.2").exit, 0);
    EXPECT_EQ(Exec("h0", "ping -c 2 -W 5 10.0.0.2").exit, 0);
    Msgstream("cnuas_1", 18532);

    const ShResult sm = Sh(Cnuas("sm start --name " + m_name));
    ASSERT_EQ(sm.exit, 0) << sm.out;
    std::string active;
    for (int i = 0; i < 100 && active.find("State: Active") == std::string::npos; ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        active = Exec("h0", "ibstat cnuas_0").out;
    }
    EXPECT_NE(active.find("State: Active"), std::string::npos) << active;
    EXPECT_GT(NumberIn(active, "Base lid: (\\d+)"), 0) << active;
    EXPECT_EQ(Exec("h0", "ping -c 2 -W 5 10.1.0.2").exit, 0);
    Msgstream("cnuas_0", 18533);
}

// Debian's opensm on a host with two CAs (its HCA and its RoCE NIC, both listed by libibumad)
// binds the HCA's port, the only one with an SM interface, and brings the InfiniBand side up.
TEST_F(EmuHybrid, OpensmOnAHostBindsItsHcaAndBringsTheInfinibandSideUp)
{
    if (access("/usr/sbin/opensm", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm";
    }
    // opensm, then IPoIB: its join timers shortened (kShortIpoibJoins).
    const ShResult up = Up(std::string("--fabric hybrid --hosts 2 --sm none --dilation 5") +
                           kShortIpoibJoins);
    ASSERT_EQ(up.exit, 0) << up.out;
    const std::string before = Exec("h1", "ibstat").out;
    EXPECT_NE(before.find("CA 'cnuas_1'"), std::string::npos) << before;
    std::smatch g;
    ASSERT_TRUE(std::regex_search(before, g, std::regex("Port GUID: (0x[0-9a-f]+)"))) << before;
    const uint64_t hcaPort = std::stoull(g[1], nullptr, 16);
    const std::string log = (m_dir / "opensm.log").string();
    ExecBackground("h1",
                   "env OSM_CACHE_DIR=" + m_dir.string() + " timeout 120 opensm -d2 -f " + log,
                   "opensm.out");
    std::string text;
    for (int i = 0; i < 600 && text.find("SUBNET UP") == std::string::npos; ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        text = ReadFile(log);
    }
    ASSERT_NE(text.find("SUBNET UP"), std::string::npos)
        << text << ReadFile(m_dir / "opensm.out");
    ASSERT_TRUE(std::regex_search(text, g, std::regex("binding to port GUID (0x[0-9a-f]+)")))
        << text;
    EXPECT_EQ(std::stoull(g[1], nullptr, 16), hcaPort) << "the HCA's port, the first CA's";
    std::string h0;
    for (int i = 0; i < 100 && h0.find("State: Active") == std::string::npos; ++i)
    {
        h0 = Exec("h0", "ibstat cnuas_0").out;
    }
    EXPECT_NE(h0.find("State: Active"), std::string::npos) << h0;
    EXPECT_GT(NumberIn(h0, "Base lid: (\\d+)"), 0) << h0;
    EXPECT_TRUE(WaitForIpoibJoined()) << Status().dump(); // opensm's broadcast group
    EXPECT_EQ(Exec("h0", "ping -c 2 -W 5 10.1.0.2").exit, 0);
}

// A dual-rail cluster's two fabrics need not have one shape: an InfiniBand fat-tree for compute
// beside an Ethernet leaf-spine, joining the same hosts.
TEST_F(EmuHybrid, ItsEthernetFabricCanHaveAShapeOfItsOwn)
{
    // The two must join the same hosts; and --roce-topology is a hybrid's only.
    const ShResult other = Up("--fabric hybrid --topology fat-tree:k=4 --roce-topology "
                              "star:hosts=3");
    EXPECT_EQ(other.exit, 2) << other.out;
    EXPECT_NE(other.out.find("same hosts"), std::string::npos) << other.out;
    const ShResult single = Up("--fabric roce --roce-topology star:hosts=2");
    EXPECT_EQ(single.exit, 2) << single.out;
    const ShResult bad = Up("--fabric hybrid --roce-topology leaf-spine:leaves=0");
    EXPECT_EQ(bad.exit, 2) << bad.out;
    EXPECT_NE(bad.out.find("--roce-topology: "), std::string::npos) << bad.out;

    // --mtu is the Ethernet fabric's: jumbo frames there, IPoIB's 2044 bytes on the HCA.
    const ShResult up = Up("--fabric hybrid --topology fat-tree:k=4 --roce-topology "
                           "leaf-spine:leaves=4,spines=2,hosts=4 --mtu 9000 --dilation 5");
    ASSERT_EQ(up.exit, 0) << up.out;
    const std::string links = Exec("h0", "ip -o link").out;
    EXPECT_TRUE(std::regex_search(links, std::regex("eth0: .* mtu 9000 "))) << links;
    EXPECT_TRUE(std::regex_search(links, std::regex("ib0: .* mtu 2044 "))) << links;
    EXPECT_NE(Exec("h0", "ibv_devinfo -d cnuas_1").out.find("active_mtu:\t\t4096 (5)"),
              std::string::npos);
    // The Ethernet switches are the leaf-spine's; the InfiniBand ones the fat-tree's.
    const nlohmann::json s = Status();
    std::set<std::string> eth;
    for (const auto& sw : s["live"]["switches"])
    {
        eth.insert(sw.value("name", ""));
    }
    EXPECT_EQ(eth, (std::set<std::string>{"leaf0", "leaf1", "leaf2", "leaf3", "spine0",
                                          "spine1"}));
    const std::string ib = Exec("h0", "ibnetdiscover").out;
    // ibnetdiscover's topology file: a "Switch" line for each switch it found.
    const std::regex switchLine("(^|\\n)Switch\\s");
    const auto switches = std::distance(std::sregex_iterator(ib.begin(), ib.end(), switchLine),
                                        std::sregex_iterator());
    EXPECT_EQ(switches, 20) << ib; // k=4: 8 edge, 8 aggregation, 4 core
    // The last host on both: across two leaves and a spine, and across the fat-tree's core.
    for (const char* ip : {"10.0.0.16", "10.1.0.16"})
    {
        const ShResult ping = Exec("h0", std::string("ping -c 2 -W 5 ") + ip);
        EXPECT_EQ(ping.exit, 0) << ip << ": " << ping.out;
    }
    // A switch port of either fabric, by its own name.
    for (const std::string& port : {std::string("--fabric roce leaf0:5"),
                                    std::string("--fabric ib edge0_0:3")})
    {
        const ShResult cap = Sh(Cnuas("capture --name " + m_name + " " + port + " -w " +
                                      (m_dir / "sw.pcap").string() + " --duration 1"));
        EXPECT_EQ(cap.exit, 0) << port << ": " << cap.out;
    }
}

// rdma_cm on a host with two adapters: one rdma_cm for both, as the kernel's; an ID is on the
// adapter its destination is reached through (10.1/16 the HCA's IPoIB subnet, 10.0/16 the NIC's),
// a listener bound to no address hears both, and each connection's QP is made on the device
// its ID is on (rping takes the ID's verbs context). The rdma_cm programs' own tests run on
// both adapters of a hybrid fabric too (test-emu-rdmacm.cc).
TEST_F(EmuHybrid, RdmaCmConnectsOverTheAdapterTheAddressIsOn)
{
    if (access(CNUAS_BINARY_DIR "/host/lib/librdmacm.so.1", R_OK) != 0 ||
        access("/usr/bin/rping", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Cnuas's librdmacm and Debian's rdmacm-utils";
    }
    const ShResult up = Up("--fabric hybrid --hosts 2 --dilation 5");
    ASSERT_EQ(up.exit, 0) << up.out;
    // The HCA's addresses resolve by IPoIB's ARP, which needs the SM's sweep and the join.
    ASSERT_TRUE(WaitForIpoibJoined());
    auto host = [this](int i) { return Status()["live"]["hosts"][i]; };
    auto sendWqes = [&host](bool ib) {
        const nlohmann::json h = host(0);
        return (ib ? h["ib"]["verbs"] : h["verbs"]).value("send_wqes", int64_t{-1});
    };
    for (const std::string ip : {"10.1.0.2", "10.0.0.2"})
    {
        const bool ib = ip == "10.1.0.2";
        const int64_t ibBefore = sendWqes(true);
        const int64_t roceBefore = sendWqes(false);
        // rping: ten pings each way, each checked by rping itself (-V). An rdma_cm server
        // prints nothing when it listens: h1's rdma_cm says when it does.
        const std::string out = "rping-" + ip + ".txt";
        ExecBackground("h1", "timeout 60 rping -s -V -v -C 10", out);
        int64_t listening = 0;
        for (int i = 0; i < 200 && listening < 1; ++i)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            listening = host(1)["rdma_cm"].value("listening", int64_t{0});
        }
        ASSERT_EQ(listening, 1) << ReadFile(m_dir / out);
        const ShResult client = Exec("h0", "timeout 60 rping -c -V -v -C 10 -a " + ip);
        EXPECT_EQ(client.exit, 0) << ip << ": " << client.out;
        EXPECT_NE(client.out.find("ping data: rdma-ping-9: "), std::string::npos) << client.out;
        EXPECT_NE(WaitForLines(out, 11, 30).find("server ping data: rdma-ping-9: "),
                  std::string::npos)
            << ReadFile(m_dir / out);
        for (int i = 0; i < 200 && host(1)["rdma_cm"].value("listening", 1) != 0; ++i)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        // The work went to that adapter only (rping's client posts two sends a ping).
        const int64_t ibWork = sendWqes(true) - ibBefore;
        const int64_t roceWork = sendWqes(false) - roceBefore;
        EXPECT_GE(ib ? ibWork : roceWork, 20) << ip;
        EXPECT_EQ(ib ? roceWork : ibWork, 0) << ip;
    }
    // An address on neither adapter's subnet has no route (ADDR_ERROR at once).
    const ShResult none = Exec("h0", "timeout 20 rping -c -a 10.2.0.2 -C 1");
    EXPECT_NE(none.exit, 0) << none.out;
    EXPECT_NE(none.out.find("ADDR_ERROR"), std::string::npos) << none.out;
}

} // namespace
