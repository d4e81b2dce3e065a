// Debian's infiniband-diags, unmodified, on emulated InfiniBand hosts (issue 14), through
// Cnuas's libibumad and the daemon's umad service: ibstat answers from the port's own SMA, and
// the other diagnostics' MADs travel as packets on the simulated wire to the agents of the
// model. Needs root (namespaces), as the other emulation tests.
#include "emu-test-util.h"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

using namespace cnuas_emu_test;

namespace
{

// InfiniBand runs dilated, as in the verbs tests: an idle fabric keeps up in real time
// (docs/emulation.md §3), but a sweep or a transfer on a loaded 2-core CI machine may not, and
// dilation keeps everything the hosts see exact, only slower.
// These tests start opensm and then use IPoIB: its join timers are shortened (kShortIpoibJoins).
const std::string kIbUp = std::string("--fabric ib --dilation 10") + kShortIpoibJoins;

class EmuUmad : public EmuFixture
{
  protected:
    void SetUp() override
    {
        EmuFixture::SetUp();
        if (HasFatalFailure())
        {
            return;
        }
        if (access(CNUAS_BINARY_DIR "/host/lib/libibumad.so.3", R_OK) != 0 ||
            access("/usr/sbin/ibstat", X_OK) != 0)
        {
            GTEST_SKIP() << "needs Cnuas's libibumad (libibumad-dev at build time) and Debian's "
                            "infiniband-diags (scripts/setup-debian.sh installs them)";
        }
    }

    /// Starts Debian's opensm in `host` (its cache and log in the test's directory, its pid in
    /// opensm.pid) and waits up to `seconds` for its log to say SUBNET UP; returns the log.
    /// `-d2` makes opensm flush every log line: without it the INFO line SUBNET UP can sit in
    /// stdio's buffer until later lines fill it, and a slow machine makes no later lines.
    /// On failure the test is told opensm's own output and how far the daemon lagged.
    std::string StartOpensmUntilSubnetUp(const std::string& host, double seconds)
    {
        StartOpensm(host, "");
        return OpensmLogUntil("SUBNET UP", seconds);
    }

    /// Starts Debian's opensm in `host` with `args` (e.g. "-p 5", its priority), its cache and
    /// log in the test's directory and its pid in opensm.pid.
    void StartOpensm(const std::string& host, const std::string& args)
    {
        const std::string log = (m_dir / "opensm.log").string();
        const std::string pid = (m_dir / "opensm.pid").string();
        ExecBackground(host,
                       "env OSM_CACHE_DIR=" + m_dir.string() + " sh -c 'echo $$ > " + pid +
                           "; exec timeout 300 opensm -d2 " + args + " -f " + log + "'",
                       "opensm.out");
    }

    /// opensm's log once it contains `what` (or after `seconds`, with a test failure).
    std::string OpensmLogUntil(const std::string& what, double seconds)
    {
        const std::string log = (m_dir / "opensm.log").string();
        const auto end = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<int>(seconds * 1000));
        std::string text;
        while (text.find(what) == std::string::npos && std::chrono::steady_clock::now() < end)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            std::ifstream in(log);
            std::stringstream ss;
            ss << in.rdbuf();
            text = ss.str();
        }
        if (text.find(what) == std::string::npos)
        {
            ADD_FAILURE() << "opensm's log did not say " << what << " in " << seconds
                          << " s\nlog:\n"
                          << text.substr(0, 6000) << "\nopensm's output:\n"
                          << WaitForLines("opensm.out", 1, 0.1) << "\nthe daemon: "
                          << Status().dump().substr(0, 3000);
        }
        return text;
    }

    /// Entry `index` of host `h`'s P_Key table as its sysfs view shows it ("0x8001\n").
    std::string SysfsPkey(const std::string& h, int index)
    {
        return Exec(h, "cat /sys/class/infiniband/cnuas_0/ports/1/pkeys/" + std::to_string(index))
            .out;
    }

    /// Runs perftest client command `cmd` in `host`, again every half second (up to 10 s)
    /// while perftest says its server is not listening on the control port yet.
    ShResult PerftestClient(const std::string& host, const std::string& cmd)
    {
        ShResult r;
        for (int attempt = 0; attempt < 20; ++attempt)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            r = Exec(host, cmd);
            if (r.out.find("Couldn't connect") == std::string::npos)
            {
                break;
            }
        }
        return r;
    }

    /// perftest's ib_send_bw from `client` to `server`, both on P_Key index 1 (the client
    /// retried while the server is not listening yet): all 20 messages must go.
    void ExpectSendBwInsidePartition(const std::string& server, const std::string& client)
    {
        ExecBackground(server, "timeout 60 ib_send_bw --pkey_index=1 -n 20", "inside-server.txt");
        const ShResult r =
            PerftestClient(client, "timeout 60 ib_send_bw --pkey_index=1 -n 20 " + server);
        EXPECT_EQ(r.exit, 0) << r.out;
        EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n\s*65536\s+20\s+[0-9.]+)")))
            << r.out;
    }

    /// Five perftest UD messages from `from` (its default partition) to a UD QP of `to` on
    /// P_Key index 1, both in the background: perftest's server waits for messages that never
    /// come and its client for the server's closing handshake, so the test reads the
    /// receiver's counters instead of waiting for either (the fixture's `down` ends them).
    void SendUdFromOutside(const std::string& from, const std::string& to)
    {
        ExecBackground(to, "timeout 60 ib_send_bw -c UD --pkey_index=1 -n 5", "outside-server.txt");
        ExecBackground(from,
                       "sh -c 'for i in $(seq 40); do timeout 60 ib_send_bw -c UD -n 5 " + to +
                           " && break; sleep 0.5; done'",
                       "outside-client.txt");
    }

    /// Packets host `i`'s adapter dropped for their P_Key.
    int64_t PkeyDrops(int i)
    {
        return Status()["live"]["hosts"][i]["verbs"]["transport"]["drops"].value("P_Key mismatch",
                                                                                  int64_t{0});
    }

    /// The pid opensm.pid holds (0 if none).
    int OpensmPid() const
    {
        std::ifstream in(m_dir / "opensm.pid");
        int pid = 0;
        in >> pid;
        return pid;
    }

    /// The daemon's view of the built-in SM (status --json), polled until `pred` holds or
    /// `seconds` pass; returns the last one.
    nlohmann::json SmUntil(const std::function<bool(const nlohmann::json&)>& pred,
                           double seconds = 30)
    {
        const auto end = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<int>(seconds * 1000));
        nlohmann::json sm;
        while (std::chrono::steady_clock::now() < end)
        {
            const nlohmann::json st = Status();
            sm = st.contains("live") && st["live"].contains("sm") && st["live"]["sm"].is_object()
                     ? st["live"]["sm"]
                     : nlohmann::json::object();
            if (pred(sm))
            {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return sm;
    }

    /// Refusals every SMA of the fabric answered, by MAD status ("0x001c": InvalidField).
    nlohmann::json SmaRefusals()
    {
        const nlohmann::json st = Status();
        return st.contains("live") ? st["live"].value("sma_refusals", nlohmann::json::object())
                                   : nlohmann::json::object();
    }

    /// Runs `ibstat` in `host` until its output matches `re` (or `seconds` pass); returns the
    /// last output.
    std::string IbstatUntil(const std::string& host, const std::string& re, double seconds = 20)
    {
        const auto end = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<int>(seconds * 1000));
        std::string out;
        while (std::chrono::steady_clock::now() < end)
        {
            out = Exec(host, "ibstat").out;
            if (std::regex_search(out, std::regex(re)))
            {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return out;
    }

    /// Waits until h0, h1 and h2 read `State: Active` (a failure for each that does not) and
    /// returns their LIDs by host.
    std::map<std::string, std::string> ActiveLidsOfTheDumbbell()
    {
        std::map<std::string, std::string> lids;
        for (const std::string h : {"h0", "h1", "h2"})
        {
            const std::string out = IbstatUntil(h, "State: Active");
            EXPECT_EQ(Field(out, "State"), "Active") << h << ": " << out;
            lids[h] = Field(out, "Base lid");
        }
        return lids;
    }

    /// The dumbbell with no built-in SM running and opensm (priority 5) on h1 brought to
    /// SUBNET UP; the hosts' LIDs once Active (a failure for what did not happen).
    std::map<std::string, std::string> UpTheDumbbellWithOpensmMaster()
    {
        ShResult up = Up(std::string(kIbUp) + "--topology dumbbell:left=2,right=1 --sm none");
        EXPECT_EQ(up.exit, 0) << up.out;
        if (up.exit != 0)
        {
            return {};
        }
        StartOpensm("h1", "-p 5");
        OpensmLogUntil("SUBNET UP", 90);
        return ActiveLidsOfTheDumbbell();
    }

    /// The capability mask `ibstat` printed (0 if none).
    static unsigned long CapMask(const std::string& out)
    {
        const std::string f = Field(out, "Capability mask");
        return f.empty() ? 0 : std::stoul(f, nullptr, 16);
    }

    /// A field of `ibstat`'s output ("Base lid: 3" -> "3"), or "" if absent.
    static std::string Field(const std::string& out, const std::string& name)
    {
        std::smatch m;
        if (std::regex_search(out, m, std::regex("\\n\\s*" + name + ": ([^\\n]*)")))
        {
            return m[1];
        }
        return "";
    }
};

TEST_F(EmuUmad, IbstatWithoutASubnetManagerShowsTheSeedsInitializingPort)
{
    ShResult up = Up(std::string(kIbUp) + "--hosts 2 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    // The links train (physical state LinkUp) and nobody configures the ports.
    const std::string out = IbstatUntil("h0", "Physical state: LinkUp");
    EXPECT_NE(out.find("CA 'cnuas_0'"), std::string::npos) << out;
    EXPECT_EQ(Field(out, "State"), "Initializing") << out;
    EXPECT_EQ(Field(out, "Physical state"), "LinkUp") << out;
    EXPECT_EQ(Field(out, "Base lid"), "0") << out;
    EXPECT_EQ(Field(out, "SM lid"), "0") << out;
    // The lines a hardware HCA's ibstat has.
    EXPECT_EQ(Field(out, "CA type"), "Cnuas emulated HCA") << out;
    EXPECT_EQ(Field(out, "Number of ports"), "1") << out;
    EXPECT_EQ(Field(out, "Firmware version"), "0.1.0") << out;
    EXPECT_EQ(Field(out, "Hardware version"), "0") << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("Node GUID: 0x0002c903000[0-9a-f]{5}")))
        << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("System image GUID: 0x[0-9a-f]{16}"))) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("Port 1:"))) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("Rate: [0-9]+"))) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("Capability mask: 0x[0-9a-f]{8}"))) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("Port GUID: 0x0002c903000[0-9a-f]{5}")))
        << out;
    EXPECT_EQ(Field(out, "Link layer"), "InfiniBand") << out;
    // The port GUID is the node GUID's port 1 (the SMA's NodeInfo), as on a ConnectX.
    const std::string node = Field(out, "Node GUID");
    const std::string port = Field(out, "Port GUID");
    ASSERT_EQ(node.size(), 18u);
    EXPECT_EQ(std::stoull(port, nullptr, 16), std::stoull(node, nullptr, 16) + 1) << out;

    // ibstat -l lists the CA, -p its port GUIDs, and "ibstat CA PORT" one port.
    ShResult list = Exec("h0", "ibstat -l");
    EXPECT_EQ(list.exit, 0) << list.out;
    EXPECT_EQ(list.out, "cnuas_0\n");
    ShResult guids = Exec("h0", "ibstat -p");
    EXPECT_EQ(guids.out, port + "\n");
    ShResult one = Exec("h0", "ibstat cnuas_0 1");
    EXPECT_NE(one.out.find("CA: 'cnuas_0'"), std::string::npos) << one.out;
    EXPECT_EQ(Field("\n" + one.out, "State"), "Initializing") << one.out;
    // Another host has its own CA.
    const std::string other = Exec("h1", "ibstat").out;
    EXPECT_NE(Field(other, "Node GUID"), node) << other;
    // A CA that does not exist, as Debian's ibstat says it.
    ShResult none = Exec("h0", "ibstat mlx5_0");
    EXPECT_NE(none.exit, 0);
    EXPECT_NE(none.out.find("'mlx5_0' IB device can't be found"), std::string::npos) << none.out;
}

TEST_F(EmuUmad, IbstatWithTheBuiltInSmShowsAnActivePortWithALid)
{
    ShResult up = Up(std::string(kIbUp) + "--hosts 2 --sm builtin");
    ASSERT_EQ(up.exit, 0) << up.out;
    const std::string out = IbstatUntil("h1", "State: Active");
    EXPECT_EQ(Field(out, "State"), "Active") << out;
    EXPECT_EQ(Field(out, "Physical state"), "LinkUp") << out;
    const std::string lid = Field(out, "Base lid");
    ASSERT_FALSE(lid.empty()) << out;
    EXPECT_GT(std::stoi(lid), 0) << out;
    const std::string sm = Field(out, "SM lid");
    ASSERT_FALSE(sm.empty()) << out;
    EXPECT_GT(std::stoi(sm), 0) << out;
    EXPECT_NE(sm, lid) << "the SM runs on h0, this is h1";
    // The SM's own port: IsSM in its capability mask (bit 1), its LID the SM LID.
    const std::string h0 = IbstatUntil("h0", "State: Active");
    EXPECT_EQ(Field(h0, "Base lid"), Field(h0, "SM lid")) << h0;
    EXPECT_NE(CapMask(h0) & 0x2, 0u) << h0;
    EXPECT_EQ(CapMask(out) & 0x2, 0u) << out;
    // A single adapter's system image GUID is its node GUID, as verbs reports it too.
    EXPECT_EQ(Field(out, "System image GUID"), Field(out, "Node GUID")) << out;
    const std::string verbs = Exec("h1", "ibv_devinfo").out;
    std::string nodeGuid = Field(out, "Node GUID").substr(2);
    for (size_t at = 4; at < 19; at += 5)
    {
        nodeGuid.insert(at, ":");
    }
    EXPECT_NE(verbs.find("sys_image_guid:\t\t\t" + nodeGuid), std::string::npos) << verbs;

    // ibstatus, a shell script, reads /sys/class/infiniband: the host's view of its HCA that
    // cnuas exec mounts, in the kernel's formats.
    ShResult st = Exec("h1", "ibstatus");
    EXPECT_EQ(st.exit, 0) << st.out;
    char hexLid[16];
    std::snprintf(hexLid, sizeof(hexLid), "0x%x", std::stoi(lid));
    EXPECT_NE(st.out.find("Infiniband device 'cnuas_0' port 1 status:"), std::string::npos)
        << st.out;
    EXPECT_TRUE(std::regex_search(st.out, std::regex("base lid:\\s+" + std::string(hexLid) +
                                                     "\\n")))
        << st.out;
    EXPECT_TRUE(std::regex_search(st.out, std::regex("state:\\s+4: ACTIVE"))) << st.out;
    EXPECT_TRUE(std::regex_search(st.out, std::regex("phys state:\\s+5: LinkUp"))) << st.out;
    EXPECT_TRUE(std::regex_search(st.out, std::regex("rate:\\s+[0-9]+ Gb/sec \\(4X"))) << st.out;
    EXPECT_TRUE(std::regex_search(st.out, std::regex("link_layer:\\s+InfiniBand"))) << st.out;
    // The default GID is the subnet prefix and the port GUID.
    const std::string guid = Field(out, "Port GUID").substr(2);
    const std::string gid = "fe80:0000:0000:0000:" + guid.substr(0, 4) + ":" +
                            guid.substr(4, 4) + ":" + guid.substr(8, 4) + ":" + guid.substr(12, 4);
    EXPECT_NE(st.out.find(gid), std::string::npos) << st.out << " vs " << gid;
    // The rest of /sys is the host's: its network devices, nothing of the machine's.
    const std::string net = Exec("h1", "ls /sys/class/net").out;
    EXPECT_NE(net.find("ib0"), std::string::npos) << net;
    EXPECT_NE(net.find("mgmt0"), std::string::npos) << net;
    EXPECT_EQ(Exec("h1", "touch /sys/class/infiniband/x").exit == 0, false) << "read-only";
}

/// A number in `text` after `label` and dots ("PortXmitPkts:.......123" -> 123), or -1.
long long
Counter(const std::string& text, const std::string& label)
{
    std::smatch m;
    if (std::regex_search(text, m, std::regex(label + ":\\.*([0-9]+)")))
    {
        return std::stoll(m[1]);
    }
    return -1;
}

TEST_F(EmuUmad, DiagnosticsSeeTheTwoSwitchFabricOverTheWire)
{
    // h0 and h1 on switch swL, h2 on swR, one link between the switches; the built-in SM.
    ShResult up = Up(std::string(kIbUp) + "--topology dumbbell:left=2,right=1 --sm builtin");
    ASSERT_EQ(up.exit, 0) << up.out;
    std::map<std::string, std::string> lid, guid;
    for (const std::string h : {"h0", "h1", "h2"})
    {
        const std::string out = IbstatUntil(h, "State: Active");
        ASSERT_EQ(Field(out, "State"), "Active") << h << ": " << out;
        lid[h] = Field(out, "Base lid");
        guid[h] = Field(out, "Node GUID");
    }

    // smpquery: directed routes from h2 (its own node, its switch, the far switch) and a
    // LID-routed query across both switches to h0.
    ShResult self = Exec("h2", "smpquery -D nodeinfo 0");
    EXPECT_EQ(self.exit, 0) << self.out;
    EXPECT_NE(self.out.find("NodeType:........................Channel Adapter"),
              std::string::npos)
        << self.out;
    ShResult swR = Exec("h2", "smpquery -D nodeinfo 0,1");
    EXPECT_NE(swR.out.find("NodeType:........................Switch"), std::string::npos)
        << swR.out;
    EXPECT_EQ(Counter(swR.out, "NumPorts"), 2) << swR.out;
    ShResult swL = Exec("h2", "smpquery -D nodeinfo 0,1,2");
    EXPECT_EQ(Counter(swL.out, "NumPorts"), 3) << swL.out;
    ShResult h0 = Exec("h2", "smpquery nodeinfo " + lid["h0"]);
    EXPECT_EQ(h0.exit, 0) << h0.out;
    EXPECT_NE(h0.out.find("Guid:............................" + guid["h0"]), std::string::npos)
        << h0.out << " vs " << guid["h0"];
    ShResult pi = Exec("h2", "smpquery portinfo " + lid["h0"] + " 1");
    EXPECT_NE(pi.out.find("LinkState:.......................Active"), std::string::npos)
        << pi.out;
    EXPECT_EQ(Counter(pi.out, "Lid"), std::stoll(lid["h0"])) << pi.out;
    EXPECT_EQ(Counter(pi.out, "SMLid"), std::stoll(lid["h0"])) << pi.out;

    // ibnetdiscover: every node, port and link, as the tool names them (S-/H-GUID).
    ShResult net = Exec("h1", "ibnetdiscover");
    ASSERT_EQ(net.exit, 0) << net.out;
    const auto count = [&](const std::string& re) {
        const std::regex r(re);
        return std::distance(std::sregex_iterator(net.out.begin(), net.out.end(), r),
                             std::sregex_iterator());
    };
    EXPECT_EQ(count("\nSwitch\t"), 2) << net.out;
    EXPECT_EQ(count("\nCa\t"), 3) << net.out;
    EXPECT_EQ(count("\nSwitch\t3 \"S-[0-9a-f]{16}\"\t+# \"swL\""), 1) << net.out;
    EXPECT_EQ(count("\nSwitch\t2 \"S-[0-9a-f]{16}\"\t+# \"swR\""), 1) << net.out;
    // Links: 3 + 2 switch ports, 3 CA ports, each naming the far end; the switches see each
    // other.
    EXPECT_EQ(count("\n\\[[0-9]+\\]\t\"[SH]-[0-9a-f]{16}\"\\[[0-9]+\\]"), 5) << net.out;
    EXPECT_EQ(count("\n\\[1\\]\\([0-9a-f]+\\) \t\"S-[0-9a-f]{16}\"\\[[0-9]\\]"), 3)
        << net.out;
    EXPECT_EQ(count("\\[[0-9]\\]\t\"S-[0-9a-f]{16}\"\\[[0-9]\\]\t+# \"sw[LR]\""), 2)
        << net.out;
    for (const std::string h : {"h0", "h1", "h2"})
    {
        EXPECT_NE(net.out.find("\"H-" + guid[h].substr(2) + "\""), std::string::npos) << h;
        EXPECT_NE(net.out.find("# lid " + lid[h] + " lmc 0"), std::string::npos) << h;
    }

    // iblinkinfo: every port of every node, all Active and LinkUp.
    ShResult links = Exec("h0", "iblinkinfo");
    ASSERT_EQ(links.exit, 0) << links.out;
    EXPECT_EQ(std::count(links.out.begin(), links.out.end(), '\n') >= 10, true) << links.out;
    size_t up4x = 0;
    for (size_t at = 0; (at = links.out.find("==( 4X", at)) != std::string::npos; ++at)
    {
        ++up4x;
    }
    EXPECT_EQ(up4x, 8u) << links.out; // 3 CA ports + 5 switch ports
    EXPECT_EQ(links.out.find("Initialize"), std::string::npos) << links.out;
    EXPECT_NE(links.out.find("53.125 Gbps Active/  LinkUp"), std::string::npos) << links.out;

    // The switches' forwarding tables the SM wrote, and a path through both switches.
    ShResult trace = Exec("h2", "ibtracert " + lid["h2"] + " " + lid["h0"]);
    EXPECT_EQ(trace.exit, 0) << trace.out;
    EXPECT_NE(trace.out.find("\"swR\""), std::string::npos) << trace.out;
    EXPECT_NE(trace.out.find("\"swL\""), std::string::npos) << trace.out;
    EXPECT_NE(trace.out.find("To ca {" + guid["h0"] + "} portnum 1 lid " + lid["h0"]),
              std::string::npos)
        << trace.out;
    // ibswitches / ibhosts list the nodes; ibroute dumps each switch's LFT as the SM wrote it:
    // on swL h0 and h1 leave by ports of their own and h2 by the link to swR; on swR h0 and h1
    // both take that link and h2 its own port; a switch's own LID is port 0.
    ShResult switches = Exec("h1", "ibswitches");
    ShResult hosts = Exec("h1", "ibhosts");
    EXPECT_EQ(std::count(switches.out.begin(), switches.out.end(), '\n'), 2) << switches.out;
    EXPECT_EQ(std::count(hosts.out.begin(), hosts.out.end(), '\n'), 3) << hosts.out;
    std::map<std::string, std::map<std::string, int>> outPort; // switch -> host -> port
    for (const std::string sw : {"swL", "swR"})
    {
        std::smatch m;
        ASSERT_TRUE(std::regex_search(switches.out, m,
                                      std::regex("\"" + sw + "\" base port 0 lid ([0-9]+)")))
            << switches.out;
        ShResult route = Exec("h1", "ibroute " + m[1].str());
        ASSERT_EQ(route.exit, 0) << route.out;
        const std::regex line("0x[0-9a-f]{4} ([0-9]{3}) : \\((Channel Adapter|Switch) "
                              "portguid 0x[0-9a-f]+: '([a-zA-Z0-9]+)'\\)");
        for (auto it = std::sregex_iterator(route.out.begin(), route.out.end(), line);
             it != std::sregex_iterator();
             ++it)
        {
            outPort[sw][(*it)[3].str()] = std::stoi((*it)[1].str());
        }
        EXPECT_EQ(outPort[sw].size(), 5u) << route.out; // every LID of the subnet
        EXPECT_EQ(outPort[sw][sw], 0) << route.out;
    }
    EXPECT_NE(outPort["swL"]["h0"], outPort["swL"]["h1"]);
    EXPECT_NE(outPort["swL"]["h0"], 0);
    EXPECT_NE(outPort["swL"]["h1"], 0);
    EXPECT_EQ(outPort["swL"]["h2"], outPort["swL"]["swR"]);
    EXPECT_EQ(outPort["swR"]["h0"], outPort["swR"]["h1"]);
    EXPECT_EQ(outPort["swR"]["h0"], outPort["swR"]["swL"]);
    EXPECT_NE(outPort["swR"]["h2"], outPort["swR"]["h0"]);
    EXPECT_NE(outPort["swR"]["h2"], 0);
    ShResult sm = Exec("h1", "sminfo");
    EXPECT_NE(sm.out.find("sm lid " + lid["h0"]), std::string::npos) << sm.out;
    EXPECT_NE(sm.out.find("SMINFO_MASTER"), std::string::npos) << sm.out;
    // saquery: every NodeRecord from the built-in SM's SA, more than one MAD holds: RMPP
    // segments on the wire, put together by the library as the kernel does.
    ShResult sa = Exec("h1", "saquery");
    EXPECT_EQ(sa.exit, 0) << sa.out;
    for (const std::string n : {"h0", "h1", "h2", "swL", "swR"})
    {
        EXPECT_NE(sa.out.find("NodeDescription........." + n + "\n"), std::string::npos) << n;
    }
    size_t records = 0;
    for (size_t at = 0; (at = sa.out.find("NodeRecord dump:", at)) != std::string::npos; ++at)
    {
        ++records;
    }
    EXPECT_EQ(records, 5u) << sa.out;

    // perfquery: GMPs to the PMA, the own port's (looped back in the HCA) and h2's across the
    // fabric; the counters grow with the IPoIB traffic the test sends.
    ShResult before = Exec("h0", "perfquery");
    ShResult farBefore = Exec("h0", "perfquery " + lid["h2"] + " 1");
    ASSERT_EQ(before.exit, 0) << before.out;
    ASSERT_EQ(farBefore.exit, 0) << farBefore.out;
    EXPECT_NE(before.out.find("# Port counters: Lid " + lid["h0"] + " port 1"), std::string::npos)
        << before.out;
    ShResult ping = Exec("h0", "ping -c 20 -i 0.05 -W 2 10.0.0.3");
    EXPECT_EQ(ping.exit, 0) << ping.out;
    ShResult after = Exec("h0", "perfquery");
    ShResult farAfter = Exec("h0", "perfquery " + lid["h2"] + " 1");
    EXPECT_GE(Counter(after.out, "PortXmitPkts") - Counter(before.out, "PortXmitPkts"), 20)
        << before.out << after.out;
    EXPECT_GE(Counter(after.out, "PortXmitData") - Counter(before.out, "PortXmitData"),
              20 * 84 / 4)
        << "PortXmitData counts 4-byte words";
    EXPECT_GE(Counter(farAfter.out, "PortRcvPkts") - Counter(farBefore.out, "PortRcvPkts"), 20)
        << farBefore.out << farAfter.out;
    EXPECT_GE(Counter(farAfter.out, "PortXmitPkts") - Counter(farBefore.out, "PortXmitPkts"), 20)
        << "h2's echo replies";
}

TEST_F(EmuUmad, OpensmBringsTheFabricUpAndVerbsRunOverItsRoutes)
{
    if (access("/usr/sbin/opensm", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm";
    }
    // The seed's sequence on a fresh fabric: no SM, ports Initializing with LID 0.
    ShResult up = Up(std::string(kIbUp) + "--topology dumbbell:left=2,right=1 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    const std::string before = IbstatUntil("h2", "Physical state: LinkUp");
    EXPECT_EQ(Field(before, "State"), "Initializing") << before;
    EXPECT_EQ(Field(before, "Base lid"), "0") << before;
    // opensm on h0, unmodified.
    const std::string text = StartOpensmUntilSubnetUp("h0", 90);
    ASSERT_NE(text.find("SUBNET UP"), std::string::npos);
    const std::string pid = (m_dir / "opensm.pid").string();
    EXPECT_EQ(text.find("ERRORS DURING INITIALIZATION"), std::string::npos) << text;
    // Every port Active with its own LID, the SM LID h0's, IsSM on h0's port only.
    std::set<std::string> lids;
    std::string smLid;
    for (const std::string h : {"h0", "h1", "h2"})
    {
        const std::string out = IbstatUntil(h, "State: Active");
        EXPECT_EQ(Field(out, "State"), "Active") << h << ": " << out;
        lids.insert(Field(out, "Base lid"));
        if (h == "h0")
        {
            smLid = Field(out, "Base lid");
            EXPECT_NE(CapMask(out) & 0x2, 0u) << out;
        }
        EXPECT_EQ(Field(out, "SM lid"), smLid) << h << ": " << out;
    }
    EXPECT_EQ(lids.size(), 3u);
    EXPECT_EQ(lids.count("0"), 0u);
    // SMInfo is opensm's to answer (the SMA hands it to the process registered for it).
    ShResult sm = Exec("h2", "sminfo");
    EXPECT_NE(sm.out.find("sm lid " + smLid), std::string::npos) << sm.out;
    EXPECT_NE(sm.out.find("SMINFO_MASTER"), std::string::npos) << sm.out;
    // So is the SA: saquery's requests reach opensm on h0, its answers (several RMPP segments
    // for every NodeRecord) come back; the nodes describe themselves by name.
    ShResult sa = Exec("h2", "saquery");
    EXPECT_EQ(sa.exit, 0) << sa.out;
    size_t records = 0;
    for (size_t at = 0; (at = sa.out.find("NodeRecord dump:", at)) != std::string::npos; ++at)
    {
        ++records;
    }
    EXPECT_EQ(records, 5u) << sa.out;
    EXPECT_NE(sa.out.find("NodeDescription.........swR\n"), std::string::npos) << sa.out;
    ShResult isSm = Exec("h2", "saquery -s");
    EXPECT_TRUE(std::regex_search(isSm.out, std::regex("base_lid\\.+" + smLid + "\\n")))
        << isSm.out;
    EXPECT_EQ(isSm.out.find("EndPortLid..............0"), std::string::npos) << isSm.out;
    // Verbs between the two switches' hosts over the routes opensm programmed.
    const std::string bin = CNUAS_BINARY_DIR "/bin/msgstream";
    if (access(bin.c_str(), X_OK) == 0)
    {
        ExecBackground("h2", "timeout 60 " + bin + " -n 20", "ms-server.txt");
        std::this_thread::sleep_for(std::chrono::seconds(1));
        ShResult client = Exec("h0", "timeout 60 " + bin + " -n 20 10.255.0.3");
        EXPECT_NE(client.out.find("msgstream: OK"), std::string::npos) << client.out;
        std::string server;
        for (int i = 0; i < 50 && server.find("msgstream: OK") == std::string::npos; ++i)
        {
            server = WaitForLines("ms-server.txt", 1, 1);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        EXPECT_NE(server.find("msgstream: OK"), std::string::npos) << server;
    }
    // opensm stops: the port is no longer an SM's (IsSM clears with the issm file closed).
    std::ifstream pidIn(pid);
    int opensmPid = 0;
    pidIn >> opensmPid;
    ASSERT_GT(opensmPid, 0);
    kill(opensmPid, SIGTERM);
    std::string after;
    for (int i = 0; i < 50; ++i)
    {
        after = Exec("h0", "ibstat").out;
        if ((CapMask(after) & 0x2) == 0)
        {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(CapMask(after) & 0x2, 0u) << after;
}

/// opensm's partitions (its partitions.conf) are what the emulated adapters enforce: opensm
/// writes each port's P_Key table with SMPs, which programs see (sysfs pkeys/N, as the kernel
/// shows them; IBV_EVENT_PKEY_CHANGE on their async event channel); two members of a partition
/// run perftest in it (--pkey_index=1); the packets of a host outside it are refused by the
/// receiving adapter, which counts them (bad_pkey_cntr, PortInfo.P_KeyViolations) and reports
/// them to opensm in Trap 257, whose fields opensm's log spells out. The SMA wrote P_Key tables
/// the transport never read before: every packet inside the partition was dropped.
TEST_F(EmuUmad, OpensmPartitionsAreWhatTheAdaptersEnforce)
{
    if (access("/usr/sbin/opensm", X_OK) != 0 || access("/usr/bin/ib_send_bw", X_OK) != 0 ||
        access("/usr/bin/ibv_asyncwatch", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm, perftest and ibverbs-utils";
    }
    ShResult up = Up(std::string(kIbUp) + "--hosts 3 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    std::map<std::string, std::string> guid;
    for (const std::string h : {"h0", "h1", "h2"})
    {
        guid[h] = Field(IbstatUntil(h, "Physical state: LinkUp"), "Port GUID");
        ASSERT_EQ(guid[h].rfind("0x", 0), 0u) << h << ": " << guid[h];
    }
    const std::string conf = (m_dir / "partitions.conf").string();
    std::ofstream(conf) << "Default=0x7fff, ipoib : ALL=full ;\n"
                        << "TenantA=0x0001 : " << guid["h0"] << "=full, " << guid["h1"]
                        << "=full ;\n";
    ExecBackground("h1", "timeout 120 ibv_asyncwatch", "async.txt");
    StartOpensm("h0", "-P " + conf);
    const std::string text = OpensmLogUntil("SUBNET UP", 90);
    ASSERT_NE(text.find("SUBNET UP"), std::string::npos);
    // The tables as the hosts' programs read them (a view taken as each starts).
    auto pkey1 = [this](const std::string& h) { return SysfsPkey(h, 1); };
    std::string h1Key;
    for (int i = 0; i < 100 && h1Key != "0x8001\n"; ++i)
    {
        h1Key = pkey1("h1");
        if (h1Key != "0x8001\n")
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
    EXPECT_EQ(h1Key, "0x8001\n");
    EXPECT_EQ(pkey1("h0"), "0x8001\n");
    EXPECT_EQ(pkey1("h2"), "0x0000\n");
    EXPECT_EQ(SysfsPkey("h2", 0), "0xffff\n");
    EXPECT_NE(WaitForLines("async.txt", 2, 10).find("IBV_EVENT_PKEY_CHANGE"), std::string::npos)
        << ReadFile(m_dir / "async.txt");

    // Inside the partition: h0 to h1 on P_Key index 1.
    ExpectSendBwInsidePartition("h1", "h0");

    // From outside: h2's UD packets, in the default partition, reach h1's QP in partition 1.
    SendUdFromOutside("h2", "h1");
    Eventually([&]() { return PkeyDrops(1) >= 5; }, true);
    const int64_t refused = PkeyDrops(1);
    EXPECT_GE(refused, 5) << Status()["live"]["hosts"][1].dump();
    const std::string devinfo = Exec("h1", "ibv_devinfo -v").out;
    std::smatch bad;
    ASSERT_TRUE(std::regex_search(devinfo, bad, std::regex(R"(bad_pkey_cntr:\s+(0x[0-9a-f]+))")))
        << devinfo;
    EXPECT_EQ(std::stoll(bad[1].str(), nullptr, 16), std::min<int64_t>(refused, 0xFFFF))
        << devinfo;
    const std::string h1Lid = Field(Exec("h1", "ibstat").out, "Base lid");
    const std::string h2Lid = Field(Exec("h2", "ibstat").out, "Base lid");
    const std::string log = OpensmLogUntil("Bad P_Key:0xffff", 30);
    EXPECT_NE(log.find("num:257 (Bad P_Key) Producer:1 (Channel Adapter) from LID:" + h1Lid),
              std::string::npos)
        << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    EXPECT_NE(log.find("from LID1:" + h2Lid), std::string::npos);
    EXPECT_NE(log.find("to LID2:" + h1Lid), std::string::npos);
}

/// The built-in SM takes the same partitions.conf (`cnuas up --partitions`): it writes the
/// members' P_Key tables in its sweep, a member pair runs perftest in the partition, a host
/// outside it is refused by the receiving adapter, and the SM counts the Trap 257 it gets
/// without sweeping for it. A bad file is `cnuas up`'s error, naming its line.
TEST_F(EmuUmad, TheBuiltInSmTakesOpensmsPartitionsFile)
{
    if (access("/usr/bin/ib_send_bw", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's perftest";
    }
    const std::string bad = (m_dir / "bad.conf").string();
    std::ofstream(bad) << "Default=0x7fff : ALL=full ;\nTenantA=0x8001 : ALL ;\n";
    ShResult up = Up(std::string(kIbUp) + "--hosts 3 --partitions " + bad);
    EXPECT_EQ(up.exit, 2) << up.out;
    EXPECT_NE(up.out.find("--partitions " + bad + ": line 2: partition 'TenantA': P_Key "
                          "'0x8001' is not in 0x0001-0x7fff"),
              std::string::npos)
        << up.out;
    // The GUIDs are the fabric's (port GUID of host i: 0x0002c903000001 + i, then 01).
    const std::string conf = (m_dir / "partitions.conf").string();
    std::ofstream(conf) << "Default=0x7fff, ipoib : ALL=full ;\n"
                        << "TenantA=0x0001 : 0x0002c90300000101=full, 0x0002c90300000201=full ;\n";
    up = Up(std::string(kIbUp) + "--hosts 3 --partitions " + conf);
    ASSERT_EQ(up.exit, 0) << up.out;
    for (const std::string h : {"h0", "h1", "h2"})
    {
        IbstatUntil(h, "State: Active");
    }
    EXPECT_EQ(Field(Exec("h1", "ibstat").out, "Port GUID"), "0x0002c90300000201");
    const nlohmann::json sm = Status().at("live").at("sm");
    EXPECT_EQ(sm.value("partitions", 0), 2) << sm.dump();
    EXPECT_EQ(sm.value("partition_error", "?"), "") << sm.dump();
    EXPECT_EQ(sm.value("pkey_blocks_written", 0), 3) << sm.dump();
    auto pkey1 = [this](const std::string& h) { return SysfsPkey(h, 1); };
    EXPECT_EQ(pkey1("h0"), "0x8001\n");
    EXPECT_EQ(pkey1("h1"), "0x8001\n");
    EXPECT_EQ(pkey1("h2"), "0x0000\n");

    ExpectSendBwInsidePartition("h1", "h0");

    const int64_t sweeps = Status().at("live").at("sm").value("heavy_sweeps", int64_t{-1});
    SendUdFromOutside("h2", "h1");
    EXPECT_TRUE(Eventually([&]() { return PkeyDrops(1) >= 5; }, true))
        << Status()["live"]["hosts"][1].dump();
    EXPECT_TRUE(Eventually(
        [&]() { return Status().at("live").at("sm").value("security_traps", int64_t{0}) > 0; },
        true));
    EXPECT_EQ(Status().at("live").at("sm").value("heavy_sweeps", int64_t{-2}), sweeps);
}

// ---- multicast: groups joined through the SA, trees in the switches' MFTs --------------------

/// librdmacm-utils' mckey under opensm: the receivers' rdma_cm joins reach opensm's SA as
/// MCMemberRecord Sets over the wire, opensm writes the switches' MulticastForwardingTables
/// with SMPs (ibroute -M reads them back the same way), and the sender's UD packets are copied
/// by the first switch to a receiver beside it and across to the second switch.
TEST_F(EmuUmad, OpensmWritesTheMulticastTreeMckeysReceiversUse)
{
    if (access("/usr/sbin/opensm", X_OK) != 0 || access("/usr/bin/mckey", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm and rdmacm-utils";
    }
    ShResult up = Up(std::string(kIbUp) + "--topology dumbbell:left=2,right=1 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    IbstatUntil("h2", "Physical state: LinkUp");
    ASSERT_NE(StartOpensmUntilSubnetUp("h0", 90).find("SUBNET UP"), std::string::npos);
    ActiveLidsOfTheDumbbell();
    // Receivers on h1 (beside h0 on swL) and h2 (on swR), five messages each.
    const std::map<std::string, std::string> ips = {
        {"h0", "10.0.0.1"}, {"h1", "10.0.0.2"}, {"h2", "10.0.0.3"}};
    for (const std::string h : {"h1", "h2"})
    {
        ExecBackground(h,
                       "sh -c 'timeout 90 stdbuf -oL mckey -m 224.1.2.3 -b " + ips.at(h) +
                           " -C 5; echo exit=$?'",
                       "mckey-" + h + ".txt");
    }
    std::string mlid;
    for (const std::string h : {"h1", "h2"})
    {
        std::string out;
        for (int i = 0; i < 300 && out.find("joined dgid") == std::string::npos &&
                        out.find("exit=") == std::string::npos;
             ++i)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            out = ReadFile(m_dir / ("mckey-" + h + ".txt"));
        }
        std::smatch m;
        ASSERT_TRUE(std::regex_search(out, m, std::regex("joined dgid: ff12:4001:ffff::e001:203 "
                                                         "mlid (0xc[0-9a-f]{3})")))
            << h << ": " << out;
        mlid = m[1];
    }
    // swL's MFT as opensm wrote it: the group on port 2 (h1) and port 3 (toward swR), not on
    // port 1 (h0, not yet a member); read by directed route from h0.
    ShResult mft = Exec("h0", "ibroute -M -D 0,1");
    EXPECT_EQ(mft.exit, 0) << mft.out;
    EXPECT_TRUE(std::regex_search(mft.out, std::regex("\n" + mlid + " +x x *\n"))) << mft.out;
    // The SA lists the group (opensm answers saquery's MCMemberRecord query).
    ShResult groups = Exec("h2", "saquery -g");
    EXPECT_NE(groups.out.find("ff12:4001:ffff::e001:203"), std::string::npos) << groups.out;
    ShResult sender = Exec("h0", "timeout 90 mckey -m 224.1.2.3 -b 10.0.0.1 -s -C 5");
    EXPECT_NE(sender.out.find("return status 0"), std::string::npos) << sender.out;
    for (const std::string h : {"h1", "h2"})
    {
        std::string out;
        for (int i = 0; i < 300 && out.find("exit=") == std::string::npos; ++i)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            out = ReadFile(m_dir / ("mckey-" + h + ".txt"));
        }
        EXPECT_NE(out.find("exit=0"), std::string::npos) << h << ": " << out; // all 5 came
    }
    // swL copied each of the five: one to h1, one toward swR.
    EXPECT_GE(Status().at("live").value("ib_multicast_copies", 0), 5);
    kill(OpensmPid(), SIGTERM);
}

/// perftest's multicast mode joins by itself, with an MCMemberRecord Set through libibumad to
/// the SM LID (its multicast_resources.c), here the built-in SM's SA, which writes the MFTs
/// before it answers; the client sends to the group's MLID and QPN 0xFFFFFF.
TEST_F(EmuUmad, PerftestsMulticastSendJoinsThroughTheBuiltInSa)
{
    if (access("/usr/bin/ib_send_bw", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's perftest";
    }
    ShResult up = Up(std::string(kIbUp) + "--topology dumbbell:left=2,right=1");
    ASSERT_EQ(up.exit, 0) << up.out;
    ActiveLidsOfTheDumbbell();
    ExecBackground("h2", "sh -c 'timeout 120 ib_send_bw -c UD -g -n 200; echo exit=$?'",
                   "send-bw-server.txt");
    const ShResult client =
        PerftestClient("h0", "timeout 120 ib_send_bw -c UD -g -n 200 10.255.0.3");
    EXPECT_EQ(client.exit, 0) << client.out;
    EXPECT_NE(client.out.find("Send BW Multicast Test"), std::string::npos) << client.out;
    // The first MLID after IPoIB's broadcast group's (0xc000, as with opensm).
    EXPECT_NE(client.out.find("remote address: LID 0xc001 QPN 0xffffff"), std::string::npos)
        << client.out;
    EXPECT_TRUE(std::regex_search(client.out, std::regex(R"(\n\s*4096\s+200\s+[0-9.]+)")))
        << client.out;
    std::string server;
    for (int i = 0; i < 300 && server.find("exit=") == std::string::npos; ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        server = ReadFile(m_dir / "send-bw-server.txt");
    }
    EXPECT_NE(server.find("exit=0"), std::string::npos) << server;
    EXPECT_TRUE(std::regex_search(server, std::regex(R"(\n\s*4096\s+200\s+[0-9.]+)")))
        << server;
    // perftest left the group at its end: the SA deleted it (IPoIB's broadcast group is the one
    // left); the SM wrote its MFT entries (and cleared them) with SMPs.
    const nlohmann::json sm = Status().at("live").at("sm");
    EXPECT_EQ(sm.value("multicast_groups", -1), 1) << sm.dump();
    EXPECT_GT(sm.value("mft_blocks_written", 0), 0) << sm.dump();
}

// ---- the built-in SM beside opensm (issue 14's third point) ---------------------------------
// The built-in SM runs on h0, opensm on h1; h2 is across the second switch. They find each other
// through PortInfo.CapabilityMask.IsSM and SMInfo (IBA vol. 1 §14.4.1), share opensm's default
// SM_Key (1), and the priorities decide.

/// A known SM in the built-in SM's status (its "other_sms") on `node`, or an empty object.
nlohmann::json
OtherSm(const nlohmann::json& sm, const std::string& node)
{
    for (const auto& o : sm.value("other_sms", nlohmann::json::array()))
    {
        if (o.value("node", "") == node)
        {
            return o;
        }
    }
    return nlohmann::json::object();
}

TEST_F(EmuUmad, OpensmWithALowerPriorityStandsByBesideTheBuiltInMasterAndTakesOverWhenItStops)
{
    if (access("/usr/sbin/opensm", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm";
    }
    ShResult up =
        Up(std::string(kIbUp) + "--topology dumbbell:left=2,right=1 --sm builtin --sm-priority 5");
    ASSERT_EQ(up.exit, 0) << up.out;
    std::map<std::string, std::string> lids = ActiveLidsOfTheDumbbell();
    ASSERT_FALSE(HasFailure());
    const nlohmann::json refusedBefore = SmaRefusals();

    // opensm polls the master's SMInfo every second and takes over after two unanswered
    // polls (its defaults, 10 s and 4, would make the takeover below take 40 s).
    const std::string conf = (m_dir / "opensm.conf").string();
    {
        std::ofstream c(conf);
        c << "sminfo_polling_timeout 1000\npolling_retry_number 2\n";
    }
    StartOpensm("h1", "-p 2 -F " + conf);
    const std::string text = OpensmLogUntil("Entering STANDBY state", 90);
    EXPECT_EQ(text.find("Entering MASTER state"), std::string::npos) << text;
    EXPECT_EQ(text.find("doesn't match our local sm_key"), std::string::npos) << text;
    // The built-in SM heard of it (Trap 144 when opensm opened issm, then its SMInfo).
    const nlohmann::json sm = SmUntil([](const nlohmann::json& s) {
        const nlohmann::json o = OtherSm(s, "h1");
        return o.value("state", "") == "STANDBY";
    });
    EXPECT_EQ(sm.value("state", ""), "MASTER") << sm.dump();
    EXPECT_EQ(OtherSm(sm, "h1").value("priority", -1), 2) << sm.dump();
    EXPECT_EQ(sm.value("handovers_sent", 1), 0) << sm.dump();
    // A host asking for the master's SMInfo finds the built-in SM.
    ShResult si = Exec("h2", "sminfo");
    EXPECT_NE(si.out.find("sm lid " + lids["h0"] + " "), std::string::npos) << si.out;
    EXPECT_NE(si.out.find("priority 5 state 3 SMINFO_MASTER"), std::string::npos) << si.out;
    // Nobody configured the ports a second time: no Set refused, LIDs and SM LID as they were.
    EXPECT_EQ(SmaRefusals().value("0x001c", 0), refusedBefore.value("0x001c", 0))
        << SmaRefusals().dump();
    for (const std::string h : {"h0", "h1", "h2"})
    {
        const std::string out = Exec(h, "ibstat").out;
        EXPECT_EQ(Field(out, "State"), "Active") << h << ": " << out;
        EXPECT_EQ(Field(out, "Base lid"), lids[h]) << h;
        EXPECT_EQ(Field(out, "SM lid"), lids["h0"]) << h;
    }
    // IPoIB joined through the SM there is now.
    ASSERT_TRUE(WaitForIpoibJoined(std::stoi(lids["h0"]))) << Status().dump();
    TcpTransfer("h0", "h2", "10.0.0.3", 5001, 300000); // IPoIB across both switches

    // The built-in master stops (as if its host died): the standby opensm no longer gets its
    // SMInfo, takes over, and the subnet stays up with opensm's port as the SM LID.
    ShResult stop = Sh(Cnuas("sm stop --name " + m_name));
    ASSERT_EQ(stop.exit, 0) << stop.out;
    const std::string after = OpensmLogUntil("Entering MASTER state", 90);
    EXPECT_NE(after.find("Entering MASTER state"), std::string::npos);
    const std::string far = IbstatUntil("h2", "SM lid: " + lids["h1"] + "\n");
    EXPECT_EQ(Field(far, "SM lid"), lids["h1"]) << far;
    EXPECT_EQ(Field(far, "State"), "Active") << far;
    EXPECT_EQ(Field(far, "Base lid"), lids["h2"]) << "opensm keeps the LIDs it found";
    ShResult si2 = Exec("h2", "sminfo");
    EXPECT_NE(si2.out.find("sm lid " + lids["h1"] + " "), std::string::npos) << si2.out;
    EXPECT_NE(si2.out.find("SMINFO_MASTER"), std::string::npos) << si2.out;
    // IPoIB joined through the SM there is now.
    ASSERT_TRUE(WaitForIpoibJoined(std::stoi(lids["h1"]))) << Status().dump();
    TcpTransfer("h0", "h2", "10.0.0.3", 5002, 300000);
    const int pid = OpensmPid();
    ASSERT_GT(pid, 0);
    kill(pid, SIGTERM);
}

TEST_F(EmuUmad, OpensmWithAHigherPriorityIsHandedTheMastership)
{
    if (access("/usr/sbin/opensm", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm";
    }
    ShResult up = Up(std::string(kIbUp) + "--topology dumbbell:left=2,right=1 --sm builtin");
    ASSERT_EQ(up.exit, 0) << up.out;
    std::map<std::string, std::string> lids = ActiveLidsOfTheDumbbell();
    ASSERT_FALSE(HasFailure());

    StartOpensm("h1", "-p 10");
    // The built-in master (priority 0) hands over: SubnSet(SMInfo) HANDOVER to opensm, which
    // becomes master and sweeps the subnet up; the built-in SM stands by and polls it.
    const std::string text = OpensmLogUntil("SUBNET UP", 90);
    EXPECT_NE(text.find("Entering MASTER state"), std::string::npos) << text;
    // (Its view of opensm's state comes from its next poll.)
    const nlohmann::json sm = SmUntil([](const nlohmann::json& s) {
        return s.value("state", "") == "STANDBY" &&
               OtherSm(s, "h1").value("state", "") == "MASTER";
    });
    EXPECT_EQ(sm.value("state", ""), "STANDBY") << sm.dump();
    EXPECT_GE(sm.value("handovers_sent", 0), 1) << sm.dump();
    EXPECT_EQ(OtherSm(sm, "h1").value("state", ""), "MASTER") << sm.dump();
    // Every host Active, with the LID it had (opensm keeps valid LIDs) and opensm's LID as its
    // SM LID.
    for (const std::string h : {"h0", "h1", "h2"})
    {
        const std::string out = IbstatUntil(h, "SM lid: " + lids["h1"] + "\n");
        EXPECT_EQ(Field(out, "State"), "Active") << h << ": " << out;
        EXPECT_EQ(Field(out, "Base lid"), lids[h]) << h;
        EXPECT_EQ(Field(out, "SM lid"), lids["h1"]) << h << ": " << out;
    }
    ShResult si = Exec("h2", "sminfo");
    EXPECT_NE(si.out.find("priority 10 state 3 SMINFO_MASTER"), std::string::npos) << si.out;
    // opensm found the links configured as it would have (the built-in SM enables as many VLs
    // as opensm does): none of its PortInfo Sets was refused.
    EXPECT_EQ(SmaRefusals().value("0x001c", 0), 0) << SmaRefusals().dump();
    EXPECT_EQ(text.find("ERR 0F10"), std::string::npos) << text;
    // IPoIB joined through the SM there is now.
    ASSERT_TRUE(WaitForIpoibJoined(std::stoi(lids["h1"]))) << Status().dump();
    TcpTransfer("h2", "h0", "10.0.0.1", 5002, 300000);
    // The standby keeps polling a live master and stays standby.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    EXPECT_EQ(SmUntil([](const nlohmann::json&) { return true; }).value("state", ""), "STANDBY");
    const int pid = OpensmPid();
    ASSERT_GT(pid, 0);
    kill(pid, SIGTERM);
}

TEST_F(EmuUmad, TheBuiltInSmStartedBesideOpensmStandsByAndTakesOverWhenItDies)
{
    if (access("/usr/sbin/opensm", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm";
    }
    std::map<std::string, std::string> lids = UpTheDumbbellWithOpensmMaster();
    ASSERT_FALSE(HasFailure());
    // Stopped until started: status says so, and stopping it again is refused.
    EXPECT_FALSE(SmUntil([](const nlohmann::json&) { return true; }).value("running", true));
    ShResult stop = Sh(Cnuas("sm stop --name " + m_name));
    EXPECT_EQ(stop.exit, 1) << stop.out;
    ShResult bad = Sh(Cnuas("sm start --priority 16 --name " + m_name));
    EXPECT_EQ(bad.exit, 2) << bad.out;

    // Started at run time with a lower priority: it discovers, finds opensm master and stands
    // by without a single Set (LIDs and SM LID stay opensm's).
    ShResult start = Sh(Cnuas("sm start --priority 1 --name " + m_name));
    ASSERT_EQ(start.exit, 0) << start.out;
    EXPECT_NE(start.out.find("priority 1"), std::string::npos) << start.out;
    ShResult again = Sh(Cnuas("sm start --name " + m_name));
    EXPECT_EQ(again.exit, 1) << again.out;
    const nlohmann::json standby = SmUntil([](const nlohmann::json& s) {
        return s.value("state", "") == "STANDBY";
    });
    ASSERT_EQ(standby.value("state", ""), "STANDBY") << standby.dump();
    EXPECT_EQ(OtherSm(standby, "h1").value("state", ""), "MASTER") << standby.dump();
    EXPECT_EQ(OtherSm(standby, "h1").value("priority", -1), 5) << standby.dump();
    ShResult status = Sh(Cnuas("status"));
    EXPECT_NE(status.out.find("STANDBY, priority 1"), std::string::npos) << status.out;
    EXPECT_NE(status.out.find("on h1: MASTER, priority 5"), std::string::npos) << status.out;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (const std::string h : {"h0", "h2"})
    {
        const std::string out = Exec(h, "ibstat").out;
        EXPECT_EQ(Field(out, "Base lid"), lids[h]) << h;
        EXPECT_EQ(Field(out, "SM lid"), lids["h1"]) << h << ": " << out;
    }
    const std::string log = OpensmLogUntil("SUBNET UP", 1);
    EXPECT_EQ(log.find("Entering STANDBY state"), std::string::npos) << log;

    // opensm dies (only the process this test started): the standby's polls go unanswered and
    // after MasterPollRetries of them it takes over, keeps every LID and brings every port
    // back under its SM LID.
    const int pid = OpensmPid();
    ASSERT_GT(pid, 0);
    const auto killedAt = std::chrono::steady_clock::now();
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    const nlohmann::json master = SmUntil([](const nlohmann::json& s) {
        return s.value("state", "") == "MASTER" && s.value("phase", "") == "up";
    });
    ASSERT_EQ(master.value("state", ""), "MASTER") << master.dump();
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - killedAt).count();
    RecordProperty("takeover_wall_seconds", std::to_string(took));
    for (const std::string h : {"h0", "h1", "h2"})
    {
        const std::string out = IbstatUntil(h, "SM lid: " + lids["h0"] + "\n");
        EXPECT_EQ(Field(out, "State"), "Active") << h << ": " << out;
        EXPECT_EQ(Field(out, "Base lid"), lids[h]) << h;
        EXPECT_EQ(Field(out, "SM lid"), lids["h0"]) << h << ": " << out;
    }
    // IPoIB joined through the SM there is now.
    ASSERT_TRUE(WaitForIpoibJoined(std::stoi(lids["h0"]))) << Status().dump();
    TcpTransfer("h2", "h1", "10.0.0.2", 5003, 300000);
    ShResult off = Sh(Cnuas("sm stop --name " + m_name));
    EXPECT_EQ(off.exit, 0) << off.out;
}

TEST_F(EmuUmad, TheBuiltInSmStartedWithAHigherPriorityIsHandedTheMastershipByOpensm)
{
    if (access("/usr/sbin/opensm", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm";
    }
    std::map<std::string, std::string> lids = UpTheDumbbellWithOpensmMaster();
    ASSERT_FALSE(HasFailure());
    // The built-in SM outranks opensm: opensm hears of it (Trap 144 from h0's SMA) and hands
    // over to it, still discovering (opensm does that), and stands by itself; the built-in SM
    // counts the master that handed over as standing by, and sweeps as master. No ACKNOWLEDGE
    // from a discovering SM, and nothing opensm calls illegal.
    ShResult start = Sh(Cnuas("sm start --priority 9 --name " + m_name));
    ASSERT_EQ(start.exit, 0) << start.out;
    const nlohmann::json master = SmUntil([](const nlohmann::json& s) {
        return s.value("state", "") == "MASTER" && s.value("phase", "") == "up" &&
               OtherSm(s, "h1").value("state", "") == "STANDBY";
    });
    EXPECT_EQ(master.value("state", ""), "MASTER") << master.dump();
    EXPECT_EQ(master.value("handovers_received", 0), 1) << master.dump();
    const std::string text = OpensmLogUntil("Entering STANDBY state", 10);
    EXPECT_EQ(text.find("ERR 3207"), std::string::npos) << text;
    EXPECT_EQ(text.find("ERR 2F0"), std::string::npos) << text; // SMInfo Set refusals
    for (const std::string h : {"h0", "h1", "h2"})
    {
        const std::string out = IbstatUntil(h, "SM lid: " + lids["h0"] + "\n");
        EXPECT_EQ(Field(out, "State"), "Active") << h << ": " << out;
        EXPECT_EQ(Field(out, "Base lid"), lids[h]) << h;
        EXPECT_EQ(Field(out, "SM lid"), lids["h0"]) << h << ": " << out;
    }
    ShResult si = Exec("h2", "sminfo");
    EXPECT_NE(si.out.find("priority 9 state 3 SMINFO_MASTER"), std::string::npos) << si.out;
    // IPoIB joined through the SM there is now.
    ASSERT_TRUE(WaitForIpoibJoined(std::stoi(lids["h0"]))) << Status().dump();
    TcpTransfer("h1", "h2", "10.0.0.3", 5004, 300000);
    const int pid = OpensmPid();
    ASSERT_GT(pid, 0);
    kill(pid, SIGTERM);
}

/// How many times `re` matches in `text`.
long
Matches(const std::string& text, const std::string& re)
{
    const std::regex r(re);
    return std::distance(std::sregex_iterator(text.begin(), text.end(), r),
                         std::sregex_iterator());
}

TEST_F(EmuUmad, AnAdministratorsOtherDiagnosticsAnswerFromTheBuiltInSa)
{
    // What an administrator runs on a new fabric beyond discovery: error counters of every
    // port (ibqueryerrors asks the SA for the paths from its port to all: a PathRecord table
    // with only a source), the SA's records (saquery), forwarding tables, port state, and
    // the vendor-class ping and sysstat between hosts. swL: h0, h1; swR: h2; built-in SM on h0.
    ShResult up = Up(std::string(kIbUp) + "--topology dumbbell:left=2,right=1 --sm builtin");
    ASSERT_EQ(up.exit, 0) << up.out;
    std::map<std::string, std::string> lid = ActiveLidsOfTheDumbbell();
    ASSERT_EQ(lid.size(), 3u);

    ShResult errors = Exec("h1", "ibqueryerrors");
    EXPECT_EQ(errors.exit, 0) << errors.out;
    EXPECT_EQ(errors.out.find("ERROR"), std::string::npos) << errors.out;
    EXPECT_NE(errors.out.find("## Summary: 5 nodes checked, 0 bad nodes found"),
              std::string::npos)
        << errors.out;
    EXPECT_NE(errors.out.find("##          8 ports checked, 0 ports have errors"),
              std::string::npos)
        << errors.out;

    // saquery: the SM's port (IsSM), every link from both ends, every pair's path, one path
    // by LIDs, the SM, the SA's class, the switches and a forwarding table.
    ShResult sm = Exec("h2", "saquery -s");
    EXPECT_EQ(sm.exit, 0) << sm.out;
    EXPECT_EQ(Matches(sm.out, "PortInfoRecord dump:"), 1) << sm.out;
    EXPECT_NE(sm.out.find("EndPortLid.............." + lid["h0"] + "\n"), std::string::npos)
        << sm.out;
    ShResult links = Exec("h2", "saquery -x");
    EXPECT_EQ(links.exit, 0) << links.out;
    EXPECT_EQ(Matches(links.out, "LinkRecord dump:"), 8) << "4 cables, both ends: " << links.out;
    ShResult paths = Exec("h2", "saquery -p");
    EXPECT_EQ(paths.exit, 0) << paths.out;
    EXPECT_EQ(Matches(paths.out, "PathRecord dump:"), 25) << paths.out;
    ShResult one = Exec("h2", "saquery --src-to-dst " + lid["h2"] + ":" + lid["h0"]);
    EXPECT_EQ(one.exit, 0) << one.out;
    EXPECT_EQ(Matches(one.out, "PathRecord dump:"), 1) << one.out;
    EXPECT_NE(one.out.find("dlid...................." + lid["h0"] + "\n"), std::string::npos)
        << one.out;
    ShResult smi = Exec("h2", "saquery SMIR");
    EXPECT_NE(smi.out.find("LID..................." + lid["h0"] + "\n"), std::string::npos)
        << smi.out;
    EXPECT_NE(smi.out.find("SMState...............3"), std::string::npos) << smi.out;
    ShResult cpi = Exec("h2", "saquery -c");
    EXPECT_EQ(cpi.exit, 0) << cpi.out;
    EXPECT_NE(cpi.out.find("Class version............2"), std::string::npos) << cpi.out;
    ShResult swi = Exec("h2", "saquery SWIR");
    EXPECT_EQ(Matches(swi.out, "SwitchInfoRecord dump:"), 2) << swi.out;
    EXPECT_NE(swi.out.find("LinearFDBTop............................0x5"), std::string::npos)
        << swi.out;
    // Things this SA holds none of answer as empty tables, not errors.
    for (const std::string q : {"saquery -g", "saquery -S", "saquery -I"})
    {
        ShResult r = Exec("h2", q);
        EXPECT_EQ(r.exit, 0) << q << ": " << r.out;
        EXPECT_EQ(r.out.find("ERROR"), std::string::npos) << q << ": " << r.out;
    }

    // dump_lfts: both switches' tables over directed routes.
    ShResult lfts = Exec("h1", "dump_lfts");
    EXPECT_EQ(lfts.exit, 0) << lfts.out;
    EXPECT_EQ(Matches(lfts.out, "5 valid lids dumped"), 2) << lfts.out;
    // ibaddr and ibportstate: the own port, a far port's state.
    ShResult addr = Exec("h2", "ibaddr");
    EXPECT_NE(addr.out.find("LID start 0x" + [&] {
        char b[8];
        std::snprintf(b, sizeof b, "%x", std::stoi(lid["h2"]));
        return std::string(b);
    }()),
              std::string::npos)
        << addr.out;
    ShResult state = Exec("h2", "ibportstate " + lid["h0"] + " 1");
    EXPECT_EQ(state.exit, 0) << state.out;
    EXPECT_NE(state.out.find("LinkState:.......................Active"), std::string::npos)
        << state.out;
    // Congestion control (class 0x21, annex A10): every switch has an agent over its marker,
    // off until configured; ibccconfig sets swL's switch settings and ibccquery reads them back.
    std::smatch sw;
    ShResult swLid = Exec("h1", "saquery -L swL");
    ASSERT_TRUE(std::regex_search(swLid.out, sw, std::regex("^([0-9]+)"))) << swLid.out; // its LID
    ShResult cc = Exec("h1", "ibccquery SwitchCongestionSetting " + sw[1].str());
    EXPECT_EQ(cc.exit, 0) << cc.out;
    EXPECT_NE(cc.out.find("Threshold:.......................0x00"), std::string::npos) << cc.out;
    ShResult set = Exec("h1", "ibccconfig SwitchCongestionSetting " + sw[1].str() +
                                  " 0x1F 0x6 0x0 0xA 8 0 0:0 4");
    EXPECT_EQ(set.exit, 0) << set.out;
    cc = Exec("h1", "ibccquery SwitchCongestionSetting " + sw[1].str());
    EXPECT_NE(cc.out.find("Control_Map:.....................0x0000001f"), std::string::npos)
        << cc.out;
    EXPECT_NE(cc.out.find("Threshold:.......................0x0a"), std::string::npos) << cc.out;
    EXPECT_NE(cc.out.find("Marking_Rate:....................4"), std::string::npos) << cc.out;

    // ibping and ibsysstat: a server in h0 (vendor classes 0x32 and 0x33 on QP1), a client in
    // h2 across both switches.
    ExecBackground("h0", "timeout 60 ibping -S", "ibping-server.out");
    ExecBackground("h0", "timeout 60 ibsysstat -S", "ibsysstat-server.out");
    // Until the servers have registered their agents, the pings time out: try for a while.
    const auto until = [&](const std::string& cmd) {
        ShResult r;
        for (int attempt = 0; attempt < 20; ++attempt)
        {
            r = Exec("h2", cmd);
            if (r.exit == 0)
            {
                break;
            }
        }
        return r;
    };
    until("ibping -c 1 -t 500 " + lid["h0"]);
    ShResult ping = Exec("h2", "ibping -c 3 -t 5000 " + lid["h0"]); // not 1 s: a loaded machine
    EXPECT_EQ(ping.exit, 0) << ping.out;
    EXPECT_NE(ping.out.find("3 packets transmitted, 3 received, 0% packet loss"),
              std::string::npos)
        << ping.out;
    ShResult sys = until("ibsysstat " + lid["h0"]);
    EXPECT_EQ(sys.exit, 0) << sys.out;
    EXPECT_NE(sys.out.find("sysstat ping succeeded"), std::string::npos) << sys.out;
}

TEST_F(EmuUmad, OpensmAndIbnetdiscoverOnAK4FatTree)
{
    if (access("/usr/sbin/opensm", X_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm";
    }
    // 16 hosts, 20 four-port switches, 48 links; opensm sweeps it from h0.
    ShResult up = Up("--fabric ib --dilation 20 --topology fat-tree:k=4 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    IbstatUntil("h0", "Physical state: LinkUp");
    const std::string text = StartOpensmUntilSubnetUp("h0", 90);
    ASSERT_NE(text.find("SUBNET UP"), std::string::npos);
    EXPECT_EQ(text.find("ERRORS DURING INITIALIZATION"), std::string::npos);
    const std::string far = IbstatUntil("h15", "State: Active");
    EXPECT_EQ(Field(far, "State"), "Active") << far;
    // ibnetdiscover from the far side: every node, port and link.
    ShResult net = Exec("h15", "ibnetdiscover");
    ASSERT_EQ(net.exit, 0) << net.out;
    const auto count = [&](const std::string& re) {
        const std::regex r(re);
        return std::distance(std::sregex_iterator(net.out.begin(), net.out.end(), r),
                             std::sregex_iterator());
    };
    EXPECT_EQ(count("\nSwitch\t4 \"S-[0-9a-f]{16}\""), 20) << net.out;
    EXPECT_EQ(count("\nCa\t1 \"H-[0-9a-f]{16}\""), 16) << net.out;
    // 16 host links and 32 between switches: 80 switch port lines, 16 CA port lines, each
    // CA port with the LID opensm gave it.
    EXPECT_EQ(count("\n\\[[0-9]+\\]\t\"[SH]-[0-9a-f]{16}\"\\[[0-9]+\\]"), 80) << net.out;
    EXPECT_EQ(count("\n\\[1\\]\\([0-9a-f]+\\) \t\"S-[0-9a-f]{16}\"\\[[0-9]\\]\t+# lid [1-9]"),
              16)
        << net.out;
    ShResult links = Exec("h7", "iblinkinfo");
    EXPECT_EQ(links.exit, 0) << links.out;
    EXPECT_EQ(links.out.find("Initialize"), std::string::npos) << links.out;
    EXPECT_EQ(links.out.find("Down"), std::string::npos) << links.out;
}

/// opensm's guid2lid cache (GUID -> LID), without its blank lines.
std::map<std::string, std::string>
ReadGuid2Lid(const std::filesystem::path& file)
{
    std::map<std::string, std::string> lids;
    std::ifstream in(file);
    std::string guid;
    std::string lid;
    std::string line;
    while (std::getline(in, line))
    {
        std::istringstream words(line);
        if (words >> guid >> lid)
        {
            lids[guid] = lid;
        }
    }
    return lids;
}

/// Side by side with ibsim (Debian's ibsim-utils: opensm under libumad2sim against a simulated
/// fabric without wires): opensm sweeps the emulated k=4 fat-tree in real time, then the same
/// topology (the emulated fabric's own ibnetdiscover output) under ibsim, and assigns every
/// port the same LID in both (docs/management.md §8.8 explains why the SMP counts differ).
TEST_F(EmuUmad, OpensmAssignsTheSameLidsAgainstCnuasAsAgainstIbsim)
{
    const char* const umad2sim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
    if (access("/usr/sbin/opensm", X_OK) != 0 || access("/usr/bin/ibsim", X_OK) != 0 ||
        access(umad2sim, R_OK) != 0)
    {
        GTEST_SKIP() << "needs Debian's opensm, ibsim-utils and libumad2sim0";
    }
    // Dilated, so that a loaded machine does not make opensm retry (the LIDs follow the order
    // in which its sweep finds the ports).
    ShResult up = Up(std::string(kIbUp) + "--topology fat-tree:k=4 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    IbstatUntil("h0", "Physical state: LinkUp");
    const std::string text = StartOpensmUntilSubnetUp("h0", 90);
    ASSERT_NE(text.find("SUBNET UP"), std::string::npos);
    const auto cnuasLids = ReadGuid2Lid(m_dir / "guid2lid");
    // 16 hosts and 20 switches: 36 LIDs.
    ASSERT_EQ(cnuasLids.size(), 36u);
    ShResult net = Exec("h0", "ibnetdiscover");
    ASSERT_EQ(net.exit, 0) << net.out;
    const std::filesystem::path sim = m_dir / "ibsim";
    std::filesystem::create_directories(sim / "cache");
    std::ofstream(sim / "k4.topo") << net.out;
    // opensm sweeps from h0's port in both runs: its node name in the topology.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(net.out, m, std::regex("\nCa\t1 \"(H-[0-9a-f]{16})\"\t+# \"h0\"")))
        << net.out;
    const std::string host = m[1];
    const std::string sock = "cnuastest" + std::to_string(getpid());
    // -n: no console (with its standard input at end of file, ibsim's console spins a core,
    // which on a loaded machine slowed opensm past the test's patience).
    Sh("cd " + sim.string() + " && (IBSIM_SOCKNAME=" + sock +
       " ibsim -n -s k4.topo < /dev/null > ibsim.out 2>&1 & echo $! > ibsim.pid)");
    for (int i = 0; i < 100 && Sh("cat " + (sim / "ibsim.out").string() + " 2>/dev/null")
                                       .out.find("simulator ready") == std::string::npos;
         ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // --once: opensm configures the subnet once and exits. Under libumad2sim its log reaches the
    // file only when it exits, so its exit is what is waited for (not a time after its LID cache
    // appears: that cut a loaded machine's sweep short before SUBNET UP).
    Sh("cd " + sim.string() + " && (env IBSIM_SOCKNAME=" + sock + " SIM_HOST=" + host +
       " OSM_CACHE_DIR=" + (sim / "cache").string() + " LD_PRELOAD=" + umad2sim +
       " timeout 120 opensm --once -f " + (sim / "osm.log").string() +
       " > opensm.out 2>&1 & echo $! > opensm.pid)");
    const std::string alive = "kill -0 $(cat " + (sim / "opensm.pid").string() + ") 2>/dev/null";
    for (int i = 0; i < 1200 && Sh(alive).exit == 0; ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (const char* pid : {"opensm.pid", "ibsim.pid"})
    {
        Sh("kill $(cat " + (sim / pid).string() + ") 2>/dev/null; true");
    }
    std::string simLog;
    for (int i = 0; i < 100 && simLog.find("Exiting SM") == std::string::npos; ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        simLog = Sh("cat " + (sim / "osm.log").string() + " 2>/dev/null").out;
    }
    ASSERT_NE(simLog.find("SUBNET UP"), std::string::npos)
        << simLog << Sh("cat " + (sim / "ibsim.out").string()).out;
    const auto simLids = ReadGuid2Lid(sim / "cache" / "guid2lid");
    EXPECT_EQ(simLids, cnuasLids) << "opensm assigned LIDs differently against ibsim";
}

TEST_F(EmuUmad, MisbehavingProgramsGetTheKernelsErrorsAndTheDaemonGoesOn)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/cnuas-peer-umad-hostile";
    if (access(bin.c_str(), X_OK) != 0)
    {
        GTEST_SKIP() << "needs tests/peers/umad-hostile (libibumad-dev at build time)";
    }
    ShResult up = Up(std::string(kIbUp) + "--hosts 2 --sm none");
    ASSERT_EQ(up.exit, 0) << up.out;
    IbstatUntil("h0", "Physical state: LinkUp");
    // Unknown and unregistered agents, short writes, routes the SMI refuses, a duplicate
    // TransactionID, an SMP to a path that leads nowhere (timeouts and retries), an unknown
    // attribute and a bad class version (the SMA's MAD status), registration conflicts,
    // garbage written straight to the MAD stream and to the control socket, a closed port.
    ShResult r = Exec("h0", "timeout 60 " + bin);
    EXPECT_EQ(r.exit, 0) << r.out;
    EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("done 0 failures"), std::string::npos) << r.out;
    for (const char* c : {"nonexistent-path-times-out", "unknown-attribute", "bad-class-version",
                          "send-unregistered-agent", "works-after-garbage",
                          "control-garbage-closes", "send-closed-port"})
    {
        EXPECT_NE(r.out.find(std::string("ok ") + c + "\n"), std::string::npos) << c;
    }
    // The daemon counted what it refused (cnuas status --json, the host's "umad").
    const nlohmann::json st = Status();
    ASSERT_TRUE(st.contains("live") && st["live"].contains("hosts")) << st.dump();
    const nlohmann::json u = st["live"]["hosts"][0].value("umad", nlohmann::json::object());
    EXPECT_GE(u.value("malformed", 0), 3) << u.dump();      // two datagrams, one request
    EXPECT_GE(u.value("mads_refused", 0), 2) << u.dump();   // no such agent, not a MAD
    EXPECT_GE(u.value("mads_delivered", 0), 5) << u.dump();     // its answered requests
    EXPECT_EQ(Eventually(
                  [this]() {
                      return Status()["live"]["hosts"][0]
                          .value("umad", nlohmann::json::object())
                          .value("ports_open", -1);
                  },
                  0),
              0)
        << u.dump(); // the program has gone
    // Debian's smpquery along a directed route that leads nowhere: it gives up, cleanly.
    ShResult nowhere = Exec("h0", "timeout 30 smpquery -D nodeinfo 0,1,9");
    EXPECT_NE(nowhere.exit, 0) << nowhere.out;
    EXPECT_NE(nowhere.out.find("node info query failed"), std::string::npos) << nowhere.out;
    // An M_Key-protected port (protection bits 2) probed with the wrong key: the SMA discards
    // the SMP (IBA vol. 1 §14.2.4.1), so smpquery times out; with the key it is answered; the
    // port's own host still sees it in ibstat (the driver's queries pass the M_Key check).
    ShResult protect = Exec("h0", bin + " mkey 2");
    EXPECT_NE(protect.out.find("ok mkey-set"), std::string::npos) << protect.out;
    ShResult wrong = Exec("h0", "timeout 30 smpquery -D nodeinfo 0,1,2");
    EXPECT_NE(wrong.exit, 0) << wrong.out;
    EXPECT_NE(wrong.out.find("node info query failed"), std::string::npos) << wrong.out;
    ShResult right = Exec("h0", "timeout 30 smpquery -y 0xc0ffee -D portinfo 0,1,2");
    EXPECT_EQ(right.exit, 0) << right.out;
    EXPECT_NE(right.out.find("ProtectBits:.....................2"), std::string::npos)
        << right.out;
    EXPECT_GE(Counter(right.out, "MkeyViolations"), 1) << right.out;
    EXPECT_EQ(Field(Exec("h1", "ibstat").out, "Base lid"), "16");
    // A program killed while its sends wait for answers that never come.
    Exec("h0", "timeout -s KILL 0.3 " + bin);
    // The daemon is unharmed: both hosts' ports answer as before.
    EXPECT_EQ(Field(Exec("h0", "ibstat").out, "State"), "Initializing");
    EXPECT_EQ(Field(Exec("h1", "ibstat").out, "Physical state"), "LinkUp");
    EXPECT_NE(Exec("h1", "smpquery -D nodeinfo 0,1").out.find("Switch"), std::string::npos);
}

/// Garbage on the umad interface (tests/peers/umad-garbage.c: every control request badly, ports
/// opened twice or of numbers that do not exist, agents of any QP, class, version, method mask
/// and OUI; MADs on the streams for agents it has or never had, of any class, method and
/// attribute, directed routes of any hop count and path, LIDs and QPs at their edges, random
/// bytes; datagrams of the wrong size, empty ones too, on both sockets; streams never read; the
/// SM interface held and let go; connections dropped with ports and agents alive), under the
/// built-in SM: the daemon answers each well-framed request, ends and counts each broken one,
/// sends into the fabric or refuses every MAD written (none lost, none counted twice), and a
/// fresh process and the other host are served afterwards.
TEST_F(EmuUmad, GarbageOnTheControlSocketAndTheMadStreamsIsAnsweredSentOrRefusedNeverLost)
{
    const std::string bin = CNUAS_BINARY_DIR "/bin/cnuas-peer-umad-garbage";
    ASSERT_EQ(access(bin.c_str(), X_OK), 0) << bin;
    ShResult up = Up(std::string(kIbUp) + "--hosts 2");
    ASSERT_EQ(up.exit, 0) << up.out;
    IbstatUntil("h0", "State: Active");
    auto umad = [this](const std::string& key) {
        const nlohmann::json st = Status();
        return st["live"]["hosts"][0]["umad"].value(key, int64_t{-1});
    };
    const int64_t malformedBefore = umad("malformed");
    const int64_t sentBefore = umad("mads_sent");
    const int64_t refusedBefore = umad("mads_refused");
    ASSERT_GE(malformedBefore, 0);
    int64_t malformed = 0;
    int64_t written = 0;
    const std::vector<int> seeds{1, 2};
    for (int seed : seeds)
    {
        SCOPED_TRACE("seed " + std::to_string(seed));
        const std::string out = RunGarbagePeer("h0", bin, 20000, seed);
        EXPECT_GT(NumberIn(out, R"((\d+) agents registered)"), 200) << out;
        EXPECT_GT(NumberIn(out, R"((\d+) MADs read)"), 20) << out;
        EXPECT_GT(NumberIn(out, R"((\d+) issm opens and closes)"), 10) << out;
        written += NumberIn(out, R"((\d+) MADs written)");
        malformed += NumberIn(out, R"((\d+) malformed requests)") +
                     NumberIn(out, R"((\d+) malformed stream datagrams)");
    }
    EXPECT_GT(written, 10000);
    EXPECT_GT(malformed, 100);
    EXPECT_EQ(umad("malformed") - malformedBefore, malformed);
    // Each MAD written was sent or refused, and so was the NodeInfo Get each run ends with.
    const int64_t sent = umad("mads_sent") - sentBefore;
    const int64_t refused = umad("mads_refused") - refusedBefore;
    EXPECT_EQ(sent + refused, written + static_cast<int64_t>(seeds.size()));
    EXPECT_GT(sent, 1000);
    EXPECT_GT(refused, 1000);
    EXPECT_EQ(Eventually([&]() { return umad("ports_open"); }, 0), 0);
    EXPECT_EQ(Status()["live"]["hosts"][0]["umad"].value("is_sm", true), false);
    // The other host still answers real tools (what the garbage Set on the fabric's SMAs,
    // links disabled or tables rewritten, is its business).
    EXPECT_NE(Field(Exec("h1", "ibstat").out, "Physical state"), "");
    const ShResult self = Exec("h1", "timeout 30 smpquery -D nodeinfo 0");
    EXPECT_NE(self.out.find("NodeType:........................Channel Adapter"),
              std::string::npos)
        << self.out;
}

TEST_F(EmuUmad, OutsideAnEmulatedHostThereIsNoCa)
{
    // The library without a host's socket behaves as libibumad on a machine without ib_umad.
    ShResult r = Sh("env -u CNUAS_UMAD_SOCKET LD_LIBRARY_PATH=" CNUAS_BINARY_DIR
                    "/host/lib ibstat");
    EXPECT_NE(r.exit, 0);
    EXPECT_NE(r.out.find("can't init UMAD library"), std::string::npos) << r.out;
}

} // namespace
