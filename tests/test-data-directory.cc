// Run-time lookup of the shipped data (models/common/data-directory.h): $CNUAS_DATA_DIR first,
// then the source tree, then the install prefix; no scenario default is a path baked in at
// build time; a missing CDF or HPCC directory is an error that names the parameter.
#include "ib-test-packets.h"

#include "helpers/rdma/rdma-traffic-run.h"
#include "helpers/scenario/scenario.h"
#include "models/common/data-directory.h"
#include "models/rack/rack-register-map.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

using namespace ns3;
using namespace cnuas_test;

namespace
{
/// Sets CNUAS_DATA_DIR for the scope of the object, restoring what was there.
class DataDirEnv
{
  public:
    explicit DataDirEnv(const std::string& value)
    {
        if (const char* old = std::getenv("CNUAS_DATA_DIR"))
        {
            m_had = true;
            m_old = old;
        }
        setenv("CNUAS_DATA_DIR", value.c_str(), 1);
    }

    ~DataDirEnv()
    {
        if (m_had)
        {
            setenv("CNUAS_DATA_DIR", m_old.c_str(), 1);
        }
        else
        {
            unsetenv("CNUAS_DATA_DIR");
        }
    }

  private:
    bool m_had = false;
    std::string m_old;
};

std::string
ErrorOf(const std::function<void()>& f)
{
    try
    {
        f();
    }
    catch (const std::exception& e)
    {
        return e.what();
    }
    return "";
}
} // namespace

TEST(DataDirectory, EnvironmentFirstThenTheSourceTree)
{
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/data-dir";
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "/cdf'");
    std::ofstream(dir + "/cdf/mine.cdf") << "100 1\n";
    {
        DataDirEnv env(dir);
        EXPECT_EQ(CnuasDataSearchPath().front(), dir);
        EXPECT_EQ(CnuasDataDirectory(), dir);
        EXPECT_EQ(CnuasDataFile("cdf/mine.cdf"), dir + "/cdf/mine.cdf");
        // What the environment's directory lacks still comes from the next place.
        EXPECT_EQ(CnuasDataFile("cdf/websearch.cdf"),
                  std::string(CNUAS_SOURCE_DIR) + "/data/cdf/websearch.cdf");
        EXPECT_EQ(RdmaResolveCdf("mine.cdf"), dir + "/cdf/mine.cdf");
    }
    {
        DataDirEnv env(""); // empty: ignored
        EXPECT_EQ(CnuasDataDirectory(), std::string(CNUAS_SOURCE_DIR) + "/data");
        EXPECT_EQ(RackRegisterMap::DefaultDirectory(),
                  std::string(CNUAS_SOURCE_DIR) + "/data/rack/maps");
    }
    // A file nowhere: the message lists the places searched and the variable to set.
    const std::string err = ErrorOf([] { CnuasDataFile("cdf/no-such.cdf"); });
    EXPECT_NE(err.find("no-such.cdf"), std::string::npos) << err;
    EXPECT_NE(err.find(std::string(CNUAS_SOURCE_DIR) + "/data"), std::string::npos) << err;
    EXPECT_NE(err.find("CNUAS_DATA_DIR"), std::string::npos) << err;
}

TEST(DataDirectory, CdfParameterTakesAPathOrAShippedName)
{
    const std::string shipped = std::string(CNUAS_SOURCE_DIR) + "/data/cdf/fb-hadoop.cdf";
    EXPECT_EQ(RdmaResolveCdf("fb-hadoop.cdf"), shipped);
    EXPECT_EQ(RdmaResolveCdf(shipped), shipped);
    const std::string err = ErrorOf([] { RdmaResolveCdf("/nowhere/x.cdf"); });
    EXPECT_EQ(err.rfind("cdf: ", 0), 0u) << err;
    EXPECT_NE(err.find("/nowhere/x.cdf"), std::string::npos) << err;
    EXPECT_EQ(ErrorOf([] { RdmaResolveCdf("nothing-like-it.cdf"); }).rfind("cdf: ", 0), 0u);
}

TEST(DataDirectory, NoScenarioDefaultIsAnAbsolutePath)
{
    // `cnuas run NAME --help` prints these: a path of the machine that built the binary is
    // wrong on every other machine.
    for (const ScenarioInfo& s : ScenarioRegistry::All())
    {
        for (const ScenarioParam& p : s.params)
        {
            EXPECT_NE(p.defaultValue.rfind("/", 0), 0u) << s.name << " " << p.key << "="
                                                         << p.defaultValue;
            EXPECT_EQ(p.defaultValue.find(CNUAS_SOURCE_DIR), std::string::npos)
                << s.name << " " << p.key;
        }
    }
}

TEST(DataDirectory, MissingHpccDirectoryIsNamed)
{
    const ScenarioInfo* s = ScenarioRegistry::Find("roce-hpcc");
    ASSERT_NE(s, nullptr);
    ScenarioOptions o;
    o.params["dir"] = "/nonexistent/hpcc-compat";
    o.outDir = std::string(CNUAS_BINARY_DIR) + "/test-output/data-dir-hpcc";
    const std::string err = ErrorOf([&] { s->run(o); });
    Simulator::Destroy();
    EXPECT_EQ(err.rfind("dir: ", 0), 0u) << err;
    EXPECT_NE(err.find("/nonexistent/hpcc-compat"), std::string::npos) << err;
}
