// Debian's infiniband-diags, unmodified, on emulated InfiniBand hosts (issue 14), through
// Cnuas's libibumad and the daemon's umad service: ibstat answers from the port's own SMA, and
// the other diagnostics' MADs travel as packets on the simulated wire to the agents of the
// model. Needs root (namespaces), as the other emulation tests.
#include "emu-test-util.h"

#include <regex>

using namespace cnuas_emu_test;

namespace
{

// InfiniBand runs dilated, as in the verbs tests: idle links cost more than real time here
// (issue 18), and dilation keeps everything the hosts see exact, only slower.
const char* const kIbUp = "--fabric ib --dilation 10 ";

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
