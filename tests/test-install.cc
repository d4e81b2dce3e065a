// An installed Cnuas (`cmake --install BUILD --prefix P`) runs from its own files: the program,
// the simulator's module it loads (P/LIBDIR/cnuas), libcnuas beside them, and the libraries an
// emulated host's programs load (P/LIBDIR/cnuas/host). The build tree's layout differs (bin/,
// lib/cnuas/, host/lib/), and each lookup has a branch for each: a missing rule or a wrong path
// on the installed side showed only to a user (librdmacm was not installed: rping in a host of
// an installed fabric failed with "failed to create RDMA CM event channel"). The Python
// package's installed form has its own test (ctest python.installed).
#include "emu-test-util.h"

#include <filesystem>
#include <regex>
#include <string>

using namespace cnuas_emu_test;

namespace
{

class Install : public EmuFixture
{
  protected:
    void SetUp() override
    {
        EmuFixture::SetUp();
        if (HasFatalFailure())
        {
            return;
        }
        m_prefix = m_dir / "prefix";
        const ShResult r = Sh("'" CNUAS_CMAKE_COMMAND "' --install '" CNUAS_BINARY_DIR
                              "' --prefix '" +
                              m_prefix.string() + "'");
        ASSERT_EQ(r.exit, 0) << r.out;
    }
    void TearDown() override
    {
        Sh(Installed("down --name " + m_name));
        EmuFixture::TearDown(); // removes m_dir and the prefix in it
    }
    /// A command line running the installed program, with no variable pointing at the build.
    std::string Installed(const std::string& args) const
    {
        return "env -u CNUAS_HOST_LIB_DIR -u CNUAS_DATA_DIR -u LD_LIBRARY_PATH CNUAS_STATE_DIR=" +
               (m_dir / "state").string() + " '" + (m_prefix / "bin" / "cnuas").string() + "' " +
               args;
    }
    std::filesystem::path Lib() const { return m_prefix / CNUAS_INSTALL_LIBDIR; }

    std::filesystem::path m_prefix;
};

TEST_F(Install, TheInstalledCommandRunsAFabricAndItsHostsVerbsProgramsFromItsOwnFiles)
{
    // What a host's programs load instead of Debian's, and what the simulator reads.
    for (const char* lib : {"libibverbs.so.1", "libibumad.so.3", "librdmacm.so.1"})
    {
        EXPECT_TRUE(std::filesystem::exists(Lib() / "cnuas" / "host" / lib)) << lib;
    }
    EXPECT_TRUE(std::filesystem::is_directory(m_prefix / "share" / "cnuas" / "data"));

    ShResult r = Sh(Installed("--version"));
    EXPECT_EQ(r.exit, 0) << r.out;
    EXPECT_NE(r.out.find("cnuas "), std::string::npos) << r.out;
    // The module is the installed one and finds the installed libcnuas ($ORIGIN/..).
    const std::string module = (Lib() / "cnuas" / "cnuas-sim-commands.so").string();
    r = Sh("ldd '" + module + "'");
    ASSERT_EQ(r.exit, 0) << r.out;
    std::smatch found;
    ASSERT_TRUE(std::regex_search(r.out, found, std::regex(R"(libcnuas\.so\.0 => (\S+))")))
        << r.out;
    std::error_code ec;
    EXPECT_EQ(std::filesystem::canonical(found[1].str(), ec),
              std::filesystem::canonical(Lib() / "libcnuas.so.0"))
        << r.out;
    r = Sh(Installed("fabric show --topology fat-tree:k=4"));
    EXPECT_EQ(r.exit, 0) << r.out;
    EXPECT_NE(r.out.find("\"edge3_1\""), std::string::npos) << r.out;

    // A fabric of the installed program, and real programs in its hosts on the installed
    // libraries: rdma_cm (librdmacm) and verbs (libibverbs), data verified by rping.
    r = Sh(Installed("up --name " + m_name + " --fabric roce --hosts 2"));
    ASSERT_EQ(r.exit, 0) << r.out;
    r = Sh(Installed("exec --name " + m_name + " h0 -- ibv_devices"));
    EXPECT_EQ(r.exit, 0) << r.out;
    EXPECT_NE(r.out.find("cnuas_0"), std::string::npos) << r.out;
    Sh("(" + Installed("exec --name " + m_name + " h1 -- timeout 60 rping -s -V -C 3") + " > " +
       (m_dir / "server.txt").string() + " 2>&1 &)");
    ShResult client;
    for (int attempt = 0; attempt < 50; ++attempt)
    {
        // Until the server listens (REJ, "connection refused" by the emulated CM, before).
        client = Sh(Installed("exec --name " + m_name +
                              " h0 -- timeout 60 rping -c -a 10.0.0.2 -V -C 3 -v"));
        if (client.exit == 0 || client.out.find("REJECTED") == std::string::npos)
        {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(client.exit, 0) << client.out;
    for (const char* ping : {"ping data: rdma-ping-0:", "ping data: rdma-ping-2:"})
    {
        EXPECT_NE(client.out.find(ping), std::string::npos) << client.out;
    }
    r = Sh(Installed("down --name " + m_name));
    EXPECT_EQ(r.exit, 0) << r.out;
    EXPECT_NE(r.out.find("stopped"), std::string::npos) << r.out;
}

} // namespace
