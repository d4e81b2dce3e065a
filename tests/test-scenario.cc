// The scenario registry and the parameter helpers scenarios read their inputs with.
#include "helpers/scenario.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

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
    return info;
}

std::string
Message(const std::function<void()>& f)
{
    try
    {
        f();
    }
    catch (const std::invalid_argument& e)
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
    EXPECT_EQ(ScenarioParamUint(o, info, "count"), 12u);
    EXPECT_DOUBLE_EQ(ScenarioParamDouble(o, info, "rate"), 2.5);
    EXPECT_EQ(ScenarioParamTime(o, info, "wait"), MicroSeconds(3));
    o.params = {{"count", "18446744073709551615"}, {"rate", "-1e-3"}, {"wait", "1.5ns"}};
    EXPECT_EQ(ScenarioParamUint(o, info, "count"), UINT64_MAX);
    EXPECT_DOUBLE_EQ(ScenarioParamDouble(o, info, "rate"), -1e-3);
    EXPECT_EQ(ScenarioParamTime(o, info, "wait"), PicoSeconds(1500));
    EXPECT_EQ(ScenarioParamString(o, info, "count"), "18446744073709551615");
}

TEST(ScenarioParams, BadValuesAreClearErrors)
{
    ScenarioInfo info = FakeInfo(false);
    ScenarioOptions o;
    o.params = {{"count", "-3"}, {"rate", "fast"}, {"wait", "3 us"}};
    EXPECT_EQ(Message([&] { ScenarioParamUint(o, info, "count"); }),
              "scenario 'fake': parameter count='-3' is not a whole number >= 0");
    EXPECT_EQ(Message([&] { ScenarioParamDouble(o, info, "rate"); }),
              "scenario 'fake': parameter rate='fast' is not a finite number");
    EXPECT_NE(Message([&] { ScenarioParamTime(o, info, "wait"); }).find("is not a duration"),
              std::string::npos);
    o.params = {{"count", "18446744073709551616"}, {"rate", "inf"}};
    EXPECT_NE(Message([&] { ScenarioParamUint(o, info, "count"); }), "(no error)");
    EXPECT_NE(Message([&] { ScenarioParamDouble(o, info, "rate"); }), "(no error)");
    EXPECT_EQ(Message([&] { ScenarioParamString(o, info, "undocumented"); }),
              "scenario 'fake' reads parameter 'undocumented', which it does not document");
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
    EXPECT_TRUE(ParseTimeString("2", &t));
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
