// The rack-file reader (helpers/formats/rack-file): the shipped examples read as written; blank lines
// of any kind are skipped; every error is an InputError that names the file and the line. The
// command's own handling of the same files is in test-cli-rack.cc.
#include "helpers/formats/parse-util.h"
#include "helpers/formats/rack-file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace ns3;

namespace
{

/// Writes `text` to a temporary .rack file and returns its path.
std::string
TempRackFile(const std::string& text)
{
    char tmpl[] = "/tmp/cnuas-rack-file-XXXXXX";
    const int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    close(fd);
    const std::string path = std::string(tmpl) + ".rack";
    std::rename(tmpl, path.c_str());
    std::ofstream(path) << text;
    return path;
}

} // namespace

TEST(RackFile, TheShippedExamplesReadAsWritten)
{
    RackFileConfig c;
    ReadRackFile(CNUAS_SOURCE_DIR "/examples/rack/two-shelves.rack", &c);
    EXPECT_EQ(c.rack.psuShelves, 2u);
    EXPECT_EQ(c.rack.psusPerShelf, 6u);
    EXPECT_EQ(c.rack.bbuShelves, 1u);
    EXPECT_DOUBLE_EQ(c.monitor, 5.0);
    EXPECT_DOUBLE_EQ(c.load, 12000.0);
    EXPECT_EQ(c.rack.responseDelay, MilliSeconds(1));
    ASSERT_EQ(c.events.size(), 6u);
    EXPECT_DOUBLE_EQ(c.events[1].at, 120.0);
    EXPECT_EQ(c.events[1].action, "psu_fail");
    EXPECT_EQ(c.events[1].args, (std::vector<std::string>{"0", "2"}));
    EXPECT_NE(c.events[1].where.find("two-shelves.rack:"), std::string::npos);

    RackFileConfig d;
    ReadRackFile(CNUAS_SOURCE_DIR "/examples/rack/dormant-device.rack", &d);
    ASSERT_EQ(d.settings.size(), 1u);
    EXPECT_EQ(d.settings[0].name, "ns3::RackBmc::DormantReprobe");
    EXPECT_EQ(d.settings[0].value, "30s");
    ASSERT_EQ(d.events.size(), 4u);
    EXPECT_EQ(d.events[0].action, "dead");
    EXPECT_EQ(ParseModbusAddress(d.events[0].args[0], "x"), 0xCA);
}

TEST(RackFile, BlankLinesOfAnyKindAreSkipped)
{
    // A line holding only a form feed or a vertical tab once crashed the reader (issue 15).
    const std::string f = TempRackFile("\f\n\v\n \t\r\npsu_shelves = 1\n\f# comment\n");
    RackFileConfig c;
    EXPECT_NO_THROW(ReadRackFile(f, &c));
    EXPECT_EQ(c.rack.psuShelves, 1u);
    unlink(f.c_str());
}

TEST(RackFile, ErrorsAreInputErrorsWithFileAndLine)
{
    const struct
    {
        const char* text;
        const char* message;
    } cases[] = {
        {"psu_shelves = 1\ncolour = blue\n", ":2: unknown key 'colour'"},
        {"\n\nat 3 explode\n", ":3: unknown action 'explode'"},
        {"at 5 chatter 300\n", ":1: '300' is not a Modbus address"},
        {"load = 1\nload = 2\n", ":2: 'load' given twice"},
    };
    for (const auto& k : cases)
    {
        const std::string f = TempRackFile(k.text);
        RackFileConfig c;
        try
        {
            ReadRackFile(f, &c);
            ADD_FAILURE() << "accepted: " << k.text;
        }
        catch (const InputError& e)
        {
            const std::string what = e.what();
            EXPECT_EQ(what.rfind(f, 0), 0u) << what;
            EXPECT_NE(what.find(k.message), std::string::npos) << what;
        }
        unlink(f.c_str());
    }
    RackFileConfig c;
    EXPECT_THROW(ReadRackFile("/nonexistent/x.rack", &c), InputError);
}
