// The scenario registry and the parameter helpers scenarios read their inputs with.
#include "helpers/scenario/scenario.h"

#include "ns3/simulator.h"
#include "ns3/type-id.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

using namespace ns3;

namespace
{

ScenarioInfo
FakeInfo(bool withTopology)
{
    ScenarioInfo info;
    info.name = "fake";
    info.description = "test";
    info.params = {{"count", "12", "a count"}, {"rate", "2.5", "a rate"}, {"wait", "3us", ""}};
    if (withTopology)
    {
        info.params.push_back({"topology", "star:hosts=3", "the fabric"});
    }
    info.run = [](const ScenarioOptions&) { return ScenarioResult{}; };
    info.pcap = ScenarioPcap::Wire;
    return info;
}

/// The message of the exception of type E that f throws, or "(no error)".
template <typename E = std::invalid_argument>
std::string
Message(const std::function<void()>& f)
{
    try
    {
        f();
    }
    catch (const E& e)
    {
        return e.what();
    }
    return "(no error)";
}

} // namespace

TEST(ScenarioRegistry, SelftestIsRegisteredAndNamesAreUnique)
{
    const ScenarioInfo* s = ScenarioRegistry::Find("selftest-timer");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->name, "selftest-timer");
    EXPECT_EQ(ScenarioRegistry::Find("no-such"), nullptr);
    std::vector<ScenarioInfo> all = ScenarioRegistry::All();
    for (size_t i = 1; i < all.size(); ++i)
    {
        EXPECT_LT(all[i - 1].name, all[i].name) << "sorted and unique";
    }
    // A second registration under a taken name is an error and does not replace the first.
    ScenarioInfo dup = FakeInfo(false);
    dup.name = "selftest-timer";
    EXPECT_THROW(ScenarioRegistry::Register(dup), std::logic_error);
    EXPECT_EQ(ScenarioRegistry::Find("selftest-timer")->description, s->description);
    ScenarioInfo unnamed = FakeInfo(false);
    unnamed.name = "";
    EXPECT_THROW(ScenarioRegistry::Register(unnamed), std::logic_error);
}

TEST(ScenarioRegistry, EveryParameterHasOneKeyAndAnEmptyOrDuplicateKeyIsRefused)
{
    // A link-time-optimised build once ran roce-fct's registration before flow-scenario.cc's
    // global flows-file parameter was constructed: the scenario documented a parameter with no
    // key and refused its own "flows-file". Every registered scenario's keys are non-empty and
    // unique, and Register refuses a scenario whose are not.
    for (const ScenarioInfo& info : ScenarioRegistry::All())
    {
        std::set<std::string> keys;
        for (const ScenarioParam& p : info.params)
        {
            EXPECT_FALSE(p.key.empty()) << info.name;
            EXPECT_TRUE(keys.insert(p.key).second) << info.name << " documents " << p.key;
        }
    }
    const ScenarioInfo* roceFct = ScenarioRegistry::Find("roce-fct");
    ASSERT_NE(roceFct, nullptr);
    bool documented = false;
    for (const ScenarioParam& p : roceFct->params)
    {
        documented = documented || p.key == "flows-file";
    }
    EXPECT_TRUE(documented);
    ScenarioInfo unkeyed = FakeInfo(false);
    unkeyed.name = "fake-unkeyed";
    unkeyed.params.push_back({"", "", "constructed too late"});
    EXPECT_EQ(Message<std::logic_error>([&] { ScenarioRegistry::Register(unkeyed); }),
              "scenario 'fake-unkeyed' documents parameter '' without a key");
    ScenarioInfo twice = FakeInfo(false);
    twice.name = "fake-twice";
    twice.params.push_back({"rate", "3", "again"});
    EXPECT_EQ(Message<std::logic_error>([&] { ScenarioRegistry::Register(twice); }),
              "scenario 'fake-twice' documents parameter 'rate' twice");
    EXPECT_EQ(ScenarioRegistry::Find("fake-unkeyed"), nullptr);
    EXPECT_EQ(ScenarioRegistry::Find("fake-twice"), nullptr);
}

TEST(ScenarioRegistry, EveryScenarioSaysWhatPcapDoes)
{
    // Issue 15: --pcap was taken and ignored by whole families of scenarios. A scenario that
    // does not say what --pcap does to it cannot be registered at all.
    ScenarioInfo unstated = FakeInfo(false);
    unstated.name = "selftest-unstated-pcap";
    unstated.pcap = ScenarioPcap::Unstated;
    EXPECT_THROW(ScenarioRegistry::Register(unstated), std::logic_error);
    EXPECT_EQ(ScenarioRegistry::Find("selftest-unstated-pcap"), nullptr);
    for (const ScenarioInfo& s : ScenarioRegistry::All())
    {
        EXPECT_NE(s.pcap, ScenarioPcap::Unstated) << s.name;
        // Only the runner's self-test has no wire; every network scenario captures its wire.
        if (s.name.rfind("selftest", 0) != 0)
        {
            EXPECT_EQ(s.pcap, ScenarioPcap::Wire) << s.name;
        }
    }

    ScenarioOptions o;
    ScenarioInfo refused = FakeInfo(false);
    refused.pcap = ScenarioPcap::Refused;
    EXPECT_NO_THROW(CheckScenarioPcapRequest(o, refused)); // not asked
    o.pcapDir = (std::filesystem::temp_directory_path() /
                 ("cnuas-pcap-request-" + std::to_string(getpid())))
                    .string();
    EXPECT_THROW(CheckScenarioPcapRequest(o, refused), std::invalid_argument);
    ScenarioInfo wire = FakeInfo(false);
    EXPECT_NO_THROW(CheckScenarioPcapRequest(o, wire));

    // After the run: a Wire scenario asked for pcaps must list one it wrote under the folder.
    std::filesystem::create_directories(o.pcapDir + "/run1");
    ScenarioResult r;
    r.artifacts = {o.pcapDir + "/summary.csv"};
    EXPECT_THROW(CheckScenarioPcapsWritten(o, wire, r), std::runtime_error);
    r.artifacts.push_back(o.pcapDir + "/run1/h0.pcap"); // listed, but not written
    EXPECT_THROW(CheckScenarioPcapsWritten(o, wire, r), std::runtime_error);
    std::ofstream(o.pcapDir + "/run1/h0.pcap") << "x";
    EXPECT_NO_THROW(CheckScenarioPcapsWritten(o, wire, r));
    std::ofstream(o.pcapDir + "/../elsewhere.pcap") << "x";
    r.artifacts = {o.pcapDir + "/../elsewhere.pcap"}; // not where it was asked for
    EXPECT_THROW(CheckScenarioPcapsWritten(o, wire, r), std::runtime_error);
    ScenarioInfo noWire = FakeInfo(false);
    noWire.pcap = ScenarioPcap::NoWire;
    EXPECT_NO_THROW(CheckScenarioPcapsWritten(o, noWire, ScenarioResult{}));
    std::filesystem::remove(o.pcapDir + "/../elsewhere.pcap");
    std::filesystem::remove_all(o.pcapDir);
}

TEST(ScenarioRegistry, DuplicateAtStartupStopsTheProcess)
{
    // What CNUAS_REGISTER_SCENARIO does when two .cc files use one name: the process ends with
    // a message naming the scenario instead of running with one of them silently dropped.
    ScenarioInfo dup = FakeInfo(false);
    dup.name = "selftest-timer";
    EXPECT_EXIT(ScenarioRegistry::RegisterAtStartup(dup),
                ::testing::ExitedWithCode(ScenarioRegistry::kDuplicateScenarioExit),
                "fatal: scenario 'selftest-timer' is registered twice");
    // A new name registers normally.
    ScenarioInfo fresh = FakeInfo(false);
    fresh.name = "selftest-registered-at-startup";
    EXPECT_TRUE(ScenarioRegistry::RegisterAtStartup(fresh));
    EXPECT_NE(ScenarioRegistry::Find("selftest-registered-at-startup"), nullptr);
}

TEST(ScenarioParams, DefaultsAndValues)
{
    ScenarioInfo info = FakeInfo(false);
    ScenarioOptions o;
    EXPECT_EQ(ScenarioParamUint(o, info, "count", 0, UINT64_MAX), 12u);
    EXPECT_DOUBLE_EQ(ScenarioParamDouble(o, info, "rate", -10, 10), 2.5);
    EXPECT_EQ(ScenarioParamTime(o, info, "wait", Time(0), Time::Max()), MicroSeconds(3));
    o.params = {{"count", "18446744073709551615"}, {"rate", "-1e-3"}, {"wait", "1.5ns"}};
    EXPECT_EQ(ScenarioParamUint(o, info, "count", 0, UINT64_MAX), UINT64_MAX);
    EXPECT_DOUBLE_EQ(ScenarioParamDouble(o, info, "rate", -10, 10), -1e-3);
    EXPECT_EQ(ScenarioParamTime(o, info, "wait", Time(0), Time::Max()), PicoSeconds(1500));
    EXPECT_EQ(ScenarioParamString(o, info, "count"), "18446744073709551615");
}

TEST(ScenarioParams, BadValuesAreClearErrors)
{
    ScenarioInfo info = FakeInfo(false);
    ScenarioOptions o;
    o.params = {{"count", "-3"}, {"rate", "fast"}, {"wait", "3 us"}};
    EXPECT_EQ(Message([&] { ScenarioParamUint(o, info, "count", 0, 100); }),
              "scenario 'fake': parameter count='-3' is not a whole number in [0, 100]");
    EXPECT_EQ(Message([&] { ScenarioParamDouble(o, info, "rate", 0, 1); }),
              "scenario 'fake': parameter rate='fast' is not a number in [0, 1]");
    EXPECT_NE(Message([&] { ScenarioParamTime(o, info, "wait", Time(0), Time::Max()); })
                  .find("is not a duration"),
              std::string::npos);
    o.params = {{"count", "18446744073709551616"}, {"rate", "inf"}};
    EXPECT_NE(Message([&] { ScenarioParamUint(o, info, "count", 0, UINT64_MAX); }), "(no error)");
    EXPECT_NE(Message([&] { ScenarioParamDouble(o, info, "rate", -1e300, 1e300); }),
              "(no error)");
    EXPECT_EQ(Message([&] { ScenarioParamString(o, info, "undocumented"); }),
              "scenario 'fake' reads parameter 'undocumented', which it does not document");
}

TEST(ScenarioParams, ValuesOutsideTheirRangeAreRefused)
{
    // Every numeric read states its range, so that nothing reaches a narrowing cast or an
    // ns-3 attribute checker (which aborts) unchecked.
    ScenarioInfo info = FakeInfo(false);
    ScenarioOptions o;
    o.params = {{"count", "5000"}, {"rate", "2"}, {"wait", "2s"}};
    EXPECT_EQ(Message([&] { ScenarioParamUint(o, info, "count", 0, 4096); }),
              "scenario 'fake': parameter count='5000' is not a whole number in [0, 4096]");
    EXPECT_EQ(Message([&] { ScenarioParamDouble(o, info, "rate", 0, 1); }),
              "scenario 'fake': parameter rate='2' is not a number in [0, 1]");
    EXPECT_NE(Message([&] { ScenarioParamTime(o, info, "wait", Time(0), Seconds(1)); })
                  .find("in [0 s, 1 s]"),
              std::string::npos);
    EXPECT_NE(Message([&] { ScenarioParamUintOneOf(o, info, "count", {1, 2, 4, 8, 15}); })
                  .find("is not one of 1, 2, 4, 8, 15"),
              std::string::npos);
    // The error says which key it is about, for `cnuas run` to name where it came from.
    try
    {
        ScenarioParamUint(o, info, "count", 0, 1);
        ADD_FAILURE() << "accepted";
    }
    catch (const ScenarioParamError& e)
    {
        EXPECT_EQ(e.Key(), "count");
    }
}

TEST(ScenarioParams, DataRates)
{
    ScenarioInfo info = FakeInfo(false);
    ScenarioOptions o;
    for (const char* bad : {"-40Gbps", "fast", "0Gbps", "0.0000001bps", "40", "40 Gbps", "Gbps",
                            "1e30Gbps", "nanGbps"})
    {
        o.params = {{"rate", bad}};
        EXPECT_NE(Message([&] { ScenarioParamDataRate(o, info, "rate"); })
                      .find("is not a positive data rate"),
                  std::string::npos)
            << bad;
    }
    o.params = {{"rate", "40Gbps"}};
    EXPECT_EQ(ScenarioParamDataRate(o, info, "rate").GetBitRate(), 40000000000ULL);
    o.params = {{"rate", "2.5GB/s"}};
    EXPECT_EQ(ScenarioParamDataRate(o, info, "rate").GetBitRate(), 20000000000ULL);
    o.params = {{"rate", "100Mb/s"}};
    EXPECT_EQ(ScenarioParamDataRate(o, info, "rate").GetBitRate(), 100000000ULL);
}

TEST(ScenarioParams, CheckRefusesUnknownKeysAndUndocumentedTopology)
{
    ScenarioOptions o;
    o.params = {{"count", "1"}};
    EXPECT_NO_THROW(CheckScenarioParams(o, FakeInfo(false)));
    o.params = {{"cuont", "1"}, {"zzz", "2"}};
    EXPECT_EQ(Message([&] { CheckScenarioParams(o, FakeInfo(false)); }),
              "scenario 'fake' has no parameter 'cuont', 'zzz' (it takes: count, rate, wait)");
    o.params = {{"topology", "pair"}};
    EXPECT_NE(Message([&] { CheckScenarioParams(o, FakeInfo(false)); })
                  .find("does not take a topology"),
              std::string::npos);
    EXPECT_NO_THROW(CheckScenarioParams(o, FakeInfo(true)));
    EXPECT_EQ(ScenarioParamTopology(o, FakeInfo(true)).nodes.size(), 3u);
    o.params.clear();
    EXPECT_EQ(ScenarioParamTopology(o, FakeInfo(true)).Hosts().size(), 3u);
}

TEST(ScenarioParams, TimeStrings)
{
    Time t;
    // A bare number would be seconds to ns-3: refused, except a zero, the same in every unit.
    EXPECT_FALSE(ParseTimeString("2", &t));
    EXPECT_TRUE(ParseTimeString("0", &t));
    EXPECT_EQ(t, Time(0));
    EXPECT_TRUE(ParseTimeString("2s", &t));
    EXPECT_EQ(t, Seconds(2));
    EXPECT_TRUE(ParseTimeString("250ms", &t));
    EXPECT_EQ(t, MilliSeconds(250));
    EXPECT_TRUE(ParseTimeString("1e3ns", &t));
    EXPECT_EQ(t, MicroSeconds(1));
    EXPECT_TRUE(ParseTimeString("1min", &t));
    EXPECT_EQ(t, Seconds(60));
    for (const char* bad : {"", "ms", "10 ms", "10parsec", "1e", "--1s", "1e400s", "200d"})
    {
        EXPECT_FALSE(ParseTimeString(bad, &t)) << bad;
    }
}

TEST(ScenarioRun, SelftestTimerDirectly)
{
    const ScenarioInfo* info = ScenarioRegistry::Find("selftest-timer");
    ASSERT_NE(info, nullptr);
    ScenarioOptions o;
    o.name = "selftest-timer";
    o.progress = false;
    o.params = {{"events", "1001"}, {"duration", "7ns"}};
    ScenarioResult r = info->run(o);
    EXPECT_EQ(r.exitCode, 0);
    ASSERT_GE(r.summary.size(), 3u);
    EXPECT_EQ(r.summary[1], (std::pair<std::string, std::string>{"events-run", "1001"}));
    EXPECT_EQ(r.summary[2].second, "7 ns (7000 ps)");
    EXPECT_TRUE(r.artifacts.empty()) << "no outDir, no files";
    o.params = {{"duration", "0s"}};
    EXPECT_THROW(info->run(o), std::invalid_argument);
    EXPECT_TRUE(Simulator::IsFinished());
}

TEST(ScenarioRun, TheOutputDirectoryIsCreatedWithItsParents)
{
    // A library caller (a test, the Python module) names a directory that does not exist yet;
    // `cnuas run` creates it, and so must the scenario (a clean build failed here once).
    const std::filesystem::path base = std::filesystem::temp_directory_path() /
                                       ("cnuas-outdir-" + std::to_string(getpid()));
    std::filesystem::remove_all(base);
    ScenarioOptions o;
    o.name = "selftest-timer";
    o.progress = false;
    o.outDir = (base / "a" / "b").string();
    o.params = {{"events", "3"}};
    const ScenarioResult r = ScenarioRegistry::Find("selftest-timer")->run(o);
    EXPECT_EQ(r.exitCode, 0);
    EXPECT_TRUE(std::filesystem::is_regular_file(base / "a" / "b" / "summary.csv"));

    // A directory that cannot be made is an error that names it, not a silent loss.
    std::ofstream(base / "plain-file") << "x";
    o.outDir = (base / "plain-file" / "out").string();
    try
    {
        ScenarioOutputFile(o, "x.csv");
        ADD_FAILURE() << "no error for an output directory under a regular file";
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("plain-file/out"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(base);
}

TEST(ScenarioRegistry, EveryAttributeAScenarioSetsItselfExistsWhereItIsDeclared)
{
    // ownAttributes are matched against the name CheckAttributeSetting reports (the declaring
    // class's): an entry naming an inherited or misspelt attribute would never match.
    size_t entries = 0;
    for (const ScenarioInfo& info : ScenarioRegistry::All())
    {
        for (const ScenarioOwnAttribute& a : info.ownAttributes)
        {
            ++entries;
            const size_t sep = a.attribute.rfind("::");
            ASSERT_NE(sep, std::string::npos) << a.attribute;
            TypeId tid;
            ASSERT_TRUE(TypeId::LookupByNameFailSafe(a.attribute.substr(0, sep), &tid))
                << info.name << ": " << a.attribute;
            bool declaredHere = false;
            for (uint32_t k = 0; k < tid.GetAttributeN(); ++k)
            {
                declaredHere |= tid.GetAttribute(k).name == a.attribute.substr(sep + 2);
            }
            EXPECT_TRUE(declaredHere) << info.name << ": " << a.attribute;
            EXPECT_FALSE(a.instead.empty()) << info.name << ": " << a.attribute;
            EXPECT_NE(ScenarioOwnAttributeProblem(info, a.attribute).find(a.instead),
                      std::string::npos);
        }
    }
    EXPECT_GT(entries, 50u); // every RoCE, IB and RDMA scenario declares some
    const ScenarioInfo* fct = ScenarioRegistry::Find("roce-fct");
    ASSERT_NE(fct, nullptr);
    EXPECT_EQ(ScenarioOwnAttributeProblem(*fct, "ns3::RdmaCcDcqcnPaper::G"), "");
}
