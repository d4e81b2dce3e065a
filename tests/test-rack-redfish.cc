// The BMC's Redfish service: a simulated rack (default scheduler), its RedfishServer on an
// ephemeral loopback port, real HTTP over a socket, every resource checked against the DMTF
// schema subset in tests/data/redfish (python3-jsonschema), values compared with the registers
// read straight from the devices and decoded here with the scaling of the ORv3 maps (design
// note orv3-register-maps.md), and the electrical expectations written out from the physics
// (the load shared by the working PSUs), never taken from the code under test.
#include "test-rack-redfish-http.h"

#include "helpers/rack/rack-helper.h"
#include "models/rack/redfish-server.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <poll.h>
#include <sys/socket.h>
#include <cmath>
#include <deque>
#include <functional>
#include <set>
#include <thread>

using namespace ns3;
using namespace cnuas_test;
using nlohmann::json;

namespace
{

/// Two PSU shelves of six PSUs and one BBU shelf of six BBUs (legacy ORv3, 19200 8E1), a BMC
/// that scans once and polls every `monitor`, and a Redfish server on an ephemeral port.
struct RedfishRack
{
    Rack rack;
    Ptr<RedfishServer> server;

    explicit RedfishRack(Ptr<RackLoadProfile> load,
                         Time monitor = Seconds(10),
                         Time idle = Seconds(10))
    {
        RackHelper h;
        h.SetBmcAttribute("ScanPasses", UintegerValue(1));
        h.SetBmcAttribute("MonitorInterval", TimeValue(monitor));
        RackConfig c;
        rack = h.Build(c);
        rack.power->SetLoadProfile(load);
        server = CreateObject<RedfishServer>();
        server->SetBmc(rack.bmc);
        server->SetAttribute("IdleTimeout", TimeValue(idle));
        EXPECT_TRUE(server->Start()) << server->GetError();
    }

    ~RedfishRack()
    {
        server->Stop();
        Simulator::Destroy();
    }

    uint16_t Port() const
    {
        return server->GetPort();
    }
};

Ptr<RackLoadProfile>
ConstantLoad(double watts)
{
    Ptr<RackConstantLoad> l = CreateObject<RackConstantLoad>();
    l->SetAttribute("Power", DoubleValue(watts));
    return l;
}

/// Raw holding registers as a master would read them.
std::vector<uint16_t>
Regs(Ptr<RackDevice> d, uint16_t start, uint16_t count)
{
    std::vector<uint16_t> out;
    EXPECT_EQ(d->ReadHoldingRegisters(start, count, out), ModbusExceptionCode::None);
    return out;
}

double
Reading(const json& excerpt)
{
    return excerpt.at("Reading").get<double>();
}

/// GETs every resource reachable from the service root through @odata.id links.
std::map<std::string, json>
Crawl(uint16_t port, std::vector<std::string>* failures)
{
    std::map<std::string, json> seen;
    std::deque<std::string> todo = {"/redfish", "/redfish/v1"};
    while (!todo.empty())
    {
        const std::string uri = todo.front();
        todo.pop_front();
        if (seen.count(uri) != 0)
        {
            continue;
        }
        int status = 0;
        json j = GetJson(port, uri, &status);
        if (status != 200 || j.is_discarded())
        {
            failures->push_back(uri + ": status " + std::to_string(status));
            seen[uri] = json();
            continue;
        }
        seen[uri] = j;
        std::function<void(const json&)> walk = [&](const json& v) {
            if (v.is_object())
            {
                for (auto it = v.begin(); it != v.end(); ++it)
                {
                    if (it.key() == "@odata.id" && it->is_string())
                    {
                        todo.push_back(it->get<std::string>());
                    }
                    else if (it.key() == "DataSourceUri" && it->is_string())
                    {
                        todo.push_back(it->get<std::string>());
                    }
                    else
                    {
                        walk(*it);
                    }
                }
            }
            else if (v.is_array())
            {
                for (const auto& e : v)
                {
                    walk(e);
                }
            }
        };
        walk(j);
    }
    return seen;
}

std::string
PsuPath(int shelf, const std::string& name)
{
    return "/redfish/v1/Chassis/PowerShelf" + std::to_string(shelf) +
           "/PowerSubsystem/PowerSupplies/" + name;
}

std::string
BbuPath(const std::string& name)
{
    return "/redfish/v1/Chassis/BatteryShelf1/PowerSubsystem/Batteries/" + name;
}

std::string
Name(const char* type, uint8_t address)
{
    char b[32];
    std::snprintf(b, sizeof(b), "%s_%02X", type, address);
    return b;
}

} // namespace

TEST(RackRedfish, EveryResourceIsReachableAndFollowsTheDmtfSchemas)
{
    RedfishRack r(ConstantLoad(18000));
    Simulator::Stop(Seconds(40));
    Simulator::Run();
    r.server->Publish();

    std::vector<std::string> failures;
    const auto all = Crawl(r.Port(), &failures);
    EXPECT_TRUE(failures.empty()) << "dangling links: " << failures.front();

    std::vector<SchemaCase> cases;
    std::map<std::string, int> byType;
    for (const auto& [uri, j] : all)
    {
        const std::string def = DefinitionOf(j);
        byType[def]++;
        cases.push_back({uri, def, j});
        // DSP0266: a resource's @odata.id is the URI it is served at.
        if (j.is_object() && j.contains("@odata.id"))
        {
            EXPECT_EQ(j["@odata.id"], uri);
        }
    }
    bool ok = false;
    const std::string report = ValidateRedfish(cases, &ok);
    EXPECT_TRUE(ok) << report;

    // What the rack holds: 1 rack + 2 power shelves + 1 battery shelf; 12 PSUs; 6 BBUs.
    EXPECT_EQ(byType["ServiceRoot"], 1);
    EXPECT_EQ(byType["Chassis"], 4);
    EXPECT_EQ(byType["PowerSupply"], 12);
    EXPECT_EQ(byType["PowerSupplyMetrics"], 12);
    EXPECT_EQ(byType["Battery"], 6);
    EXPECT_EQ(byType["BatteryMetrics"], 6);
    EXPECT_EQ(byType["PowerSubsystem"], 3);
    EXPECT_EQ(byType["SensorCollection"], 4);
    // 10 sensors per PSU, 6 per BBU, 4 for the rack.
    EXPECT_EQ(byType["Sensor"], 12 * 10 + 6 * 6 + 4);

    const json coll = all.at("/redfish/v1/Chassis");
    EXPECT_EQ(coll["Members@odata.count"], coll["Members"].size());
    EXPECT_EQ(coll["Members"].size(), 4u);
    const json root = all.at("/redfish/v1");
    EXPECT_TRUE(root["Oem"]["Cnuas"]["ScanComplete"].get<bool>());
    EXPECT_EQ(root["Oem"]["Cnuas"]["Devices"], 18);
}

TEST(RackRedfish, ASchemaViolationIsCaught)
{
    // The schema check itself can fail: a Chassis with a misspelt property and a bad enum, and
    // a PowerSupply without Id.
    bool ok = true;
    std::vector<SchemaCase> bad = {
        {"/redfish/v1/Chassis/X", "Chassis",
         json{{"@odata.id", "/redfish/v1/Chassis/X"},
              {"@odata.type", "#Chassis.v1_14_0.Chassis"},
              {"Id", "X"},
              {"Name", "x"},
              {"ChassisType", "Bookshelf"},
              {"PowerSubsytem", json::object()}}},
        {"/redfish/v1/P", "PowerSupply",
         json{{"@odata.id", "/redfish/v1/P"},
              {"@odata.type", "#PowerSupply.v1_5_0.PowerSupply"},
              {"Name", "p"}}},
    };
    const std::string report = ValidateRedfish(bad, &ok);
    EXPECT_FALSE(ok);
    EXPECT_NE(report.find("Bookshelf"), std::string::npos) << report;
    EXPECT_NE(report.find("PowerSubsytem"), std::string::npos) << report;
    EXPECT_NE(report.find("'Id' is a required property"), std::string::npos) << report;
}

TEST(RackRedfish, ValuesAreTheRegistersOfTheDevices)
{
    // Constant load and full BBUs: the operating point does not move, so what the BMC read at
    // its last poll equals what the registers hold now.
    RedfishRack r(ConstantLoad(18000));
    Simulator::Stop(Seconds(40));
    Simulator::Run();
    r.server->Publish();
    const uint16_t port = r.Port();
    ASSERT_EQ(r.rack.psus.size(), 12u);
    for (std::size_t i = 0; i < r.rack.psus.size(); ++i)
    {
        Ptr<RackPsu> p = r.rack.psus[i];
        const std::string path =
            PsuPath(static_cast<int>(i / 6) + 1, Name("ORV3_PSU", p->GetModbusAddress()));
        int status = 0;
        const json m = GetJson(port, path + "/Metrics", &status);
        ASSERT_EQ(status, 200) << path;
        // ORV3_PSU map: reg 79 voltage raw/2^10 V, 80 current raw/2^6 A, 82 power raw/2^3 W,
        // 87 input power raw/2^3 W, 88 AC voltage raw/2^6 V.
        const auto v = Regs(p, 79, 11);
        EXPECT_DOUBLE_EQ(Reading(m["RailVoltage"][0]), v[0] / 1024.0) << path;
        EXPECT_DOUBLE_EQ(Reading(m["RailCurrentAmps"][0]), v[1] / 64.0) << path;
        EXPECT_DOUBLE_EQ(Reading(m["OutputPowerWatts"]), v[3] / 8.0) << path;
        EXPECT_DOUBLE_EQ(Reading(m["InputPowerWatts"]), v[8] / 8.0) << path;
        EXPECT_DOUBLE_EQ(Reading(m["InputVoltage"]), v[9] / 64.0) << path;
        // And the physics: 18 kW shared by 12 PSUs (1/8 W steps).
        EXPECT_NEAR(Reading(m["OutputPowerWatts"]), 18000.0 / 12, 0.125) << path;

        const json psu = GetJson(port, path);
        const auto serial = Regs(p, 24, 16);
        std::string text;
        for (uint16_t w : serial)
        {
            for (char c : {static_cast<char>(w >> 8), static_cast<char>(w & 0xff)})
            {
                if (c != '\0')
                {
                    text.push_back(c);
                }
            }
        }
        EXPECT_EQ(psu["SerialNumber"], text);
        EXPECT_EQ(psu["Status"]["Health"], "OK");
        EXPECT_EQ(psu["LineInputStatus"], "Normal");
    }
    for (Ptr<RackBbu> b : r.rack.bbus)
    {
        const std::string path = BbuPath(Name("ORV3_BBU", b->GetModbusAddress()));
        int status = 0;
        const json m = GetJson(port, path + "/Metrics", &status);
        ASSERT_EQ(status, 200) << path;
        // ORV3_BBU map: reg 126 relative SoC %, 128 pack voltage mV, 129 current signed 10 mA,
        // 131 remaining capacity mAh.
        const auto v = Regs(b, 126, 6);
        EXPECT_DOUBLE_EQ(Reading(m["ChargePercent"]), v[0]);
        EXPECT_DOUBLE_EQ(Reading(m["OutputVoltages"][0]), v[2] / 1000.0);
        EXPECT_DOUBLE_EQ(Reading(m["OutputCurrentAmps"][0]),
                         static_cast<int16_t>(v[3]) * 10 / 1000.0);
        EXPECT_DOUBLE_EQ(Reading(m["StoredChargeAmpHours"]), v[5] / 1000.0);
        EXPECT_EQ(GetJson(port, path)["ChargeState"], "Idle"); // full, AC present
    }
    // The sensor a metric points at carries the same reading.
    const json m = GetJson(port, PsuPath(1, "ORV3_PSU_C8") + "/Metrics");
    const json s = GetJson(port, m["OutputPowerWatts"]["DataSourceUri"].get<std::string>());
    EXPECT_EQ(s["Reading"], m["OutputPowerWatts"]["Reading"]);
    EXPECT_EQ(s["ReadingType"], "Power");
    EXPECT_EQ(s["ReadingUnits"], "W");
}

TEST(RackRedfish, FollowsALoadStepAPsuFaultAndAnAcLossWithBbuDischarge)
{
    Ptr<RackStepLoad> load = CreateObject<RackStepLoad>();
    load->SetAttribute("InitialPower", DoubleValue(12000));
    load->AddStep(Seconds(40), 24000);
    RedfishRack r(load, Seconds(5));
    const uint16_t port = r.Port();
    // Failed PSU: shelf 0, slot 2 (address 0xCA); AC lost on the whole rack later.
    Simulator::Schedule(Seconds(70), [&]() { r.rack.power->SetPsuFailed(0, 2, true); });
    Simulator::Schedule(Seconds(100), [&]() { r.rack.power->SetRackAcLoss(true); });

    json before, afterStep, afterFault, onBattery, bbuBefore;
    auto sample = [&](json* out) {
        r.server->Publish();
        json s;
        s["rack"] = GetJson(port, "/redfish/v1/Chassis/Rack");
        s["out"] = GetJson(port, "/redfish/v1/Chassis/Rack/Sensors/RackOutputPower");
        s["bat"] = GetJson(port, "/redfish/v1/Chassis/Rack/Sensors/BatteryOutputPower");
        s["failed"] = GetJson(port, PsuPath(1, "ORV3_PSU_CA"));
        s["failedM"] = GetJson(port, PsuPath(1, "ORV3_PSU_CA") + "/Metrics");
        s["other"] = GetJson(port, PsuPath(2, "ORV3_PSU_E8"));
        s["otherM"] = GetJson(port, PsuPath(2, "ORV3_PSU_E8") + "/Metrics");
        s["bbu"] = GetJson(port, BbuPath("ORV3_BBU_40"));
        s["bbuM"] = GetJson(port, BbuPath("ORV3_BBU_40") + "/Metrics");
        *out = s;
    };
    Simulator::Schedule(Seconds(35), [&]() { sample(&before); });
    Simulator::Schedule(Seconds(60), [&]() { sample(&afterStep); });
    Simulator::Schedule(Seconds(90), [&]() { sample(&afterFault); });
    Simulator::Schedule(Seconds(130), [&]() { sample(&onBattery); });
    Simulator::Stop(Seconds(131));
    Simulator::Run();

    // Load step: 12 kW then 24 kW on 12 PSUs (each PSU's output has 1/8 W steps).
    EXPECT_NEAR(before["out"]["Reading"].get<double>(), 12000, 12 * 0.125);
    EXPECT_NEAR(Reading(before["otherM"]["OutputPowerWatts"]), 1000, 0.125);
    EXPECT_NEAR(afterStep["out"]["Reading"].get<double>(), 24000, 12 * 0.125);
    EXPECT_NEAR(Reading(afterStep["otherM"]["OutputPowerWatts"]), 2000, 0.125);
    EXPECT_EQ(afterStep["rack"]["Status"]["Health"], "OK");

    // PSU fault: the failed one reports Critical and no output; 11 PSUs carry 24 kW.
    EXPECT_EQ(afterFault["failed"]["Status"]["Health"], "Critical");
    EXPECT_EQ(afterFault["failed"]["LineInputStatus"], "Normal");
    EXPECT_DOUBLE_EQ(Reading(afterFault["failedM"]["OutputPowerWatts"]), 0);
    EXPECT_NEAR(Reading(afterFault["otherM"]["OutputPowerWatts"]), 24000.0 / 11, 0.125);
    EXPECT_EQ(afterFault["other"]["Status"]["Health"], "OK");
    EXPECT_EQ(afterFault["rack"]["Status"]["Health"], "Critical");
    EXPECT_NEAR(afterFault["out"]["Reading"].get<double>(), 24000, 12 * 0.125);

    // AC loss: every PSU sees LossOfInput and delivers nothing; the six BBUs discharge and
    // carry the 24 kW between them.
    EXPECT_EQ(onBattery["other"]["LineInputStatus"], "LossOfInput");
    EXPECT_EQ(onBattery["other"]["Status"]["Health"], "Critical");
    EXPECT_DOUBLE_EQ(Reading(onBattery["otherM"]["OutputPowerWatts"]), 0);
    EXPECT_EQ(onBattery["bbu"]["ChargeState"], "Discharging");
    EXPECT_EQ(afterFault["bbu"]["ChargeState"], "Idle");
    EXPECT_LT(Reading(onBattery["bbuM"]["ChargePercent"]),
              Reading(afterFault["bbuM"]["ChargePercent"]));
    EXPECT_LT(Reading(onBattery["bbuM"]["OutputCurrentAmps"][0]), 0); // discharging
    // V x I of the six packs (mV and 10 mA resolution) is the load.
    EXPECT_NEAR(onBattery["bat"]["Reading"].get<double>(), 24000, 24000 * 0.01);
    EXPECT_NEAR(onBattery["out"]["Reading"].get<double>(), 0, 1e-9);
}

TEST(RackRedfish, ErrorsAreRedfishErrorsAndTheServerSurvivesBadInput)
{
    RedfishRack r(ConstantLoad(6000), Seconds(10), MilliSeconds(300));
    Simulator::Stop(Seconds(20));
    Simulator::Run();
    const uint16_t port = r.Port();
    std::vector<SchemaCase> errors;

    HttpReply nf = HttpRequest(port, "GET", "/redfish/v1/Chassis/NoSuchShelf");
    EXPECT_EQ(nf.status, 404);
    json e = json::parse(nf.body, nullptr, false);
    ASSERT_FALSE(e.is_discarded()) << nf.body;
    EXPECT_EQ(e["error"]["@Message.ExtendedInfo"][0]["MessageArgs"][0],
              "/redfish/v1/Chassis/NoSuchShelf");
    EXPECT_NE(e["error"]["code"].get<std::string>().find("ResourceMissingAtURI"),
              std::string::npos);
    errors.push_back({"404", "RedfishError", e});

    for (const char* m : {"POST", "PATCH", "DELETE", "PUT"})
    {
        HttpReply na = HttpRequest(port, m, "/redfish/v1/Chassis");
        EXPECT_EQ(na.status, 405) << m;
        EXPECT_EQ(na.headers["allow"], "GET, HEAD") << m;
        errors.push_back({std::string("405 ") + m, "RedfishError",
                          json::parse(na.body, nullptr, false)});
    }
    // A POST with a body: answered, then the connection is closed without reading the body.
    bool closed = false;
    auto post = HttpRaw(port,
                        "POST /redfish/v1/Chassis HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        "Content-Type: application/json\r\n\r\n{\"a\":",
                        5000, false, &closed);
    ASSERT_EQ(post.size(), 1u);
    EXPECT_EQ(post[0].status, 405);
    EXPECT_TRUE(closed);

    HttpReply q = HttpRequest(port, "GET", "/redfish/v1/Chassis?$select=Name");
    EXPECT_EQ(q.status, 501);
    errors.push_back({"501", "RedfishError", json::parse(q.body, nullptr, false)});

    // GET and HEAD agree on the header fields; HEAD has no body. A trailing slash names the same
    // resource.
    HttpReply g = HttpRequest(port, "GET", "/redfish/v1/");
    HttpReply h = HttpRequest(port, "HEAD", "/redfish/v1");
    EXPECT_EQ(g.status, 200);
    EXPECT_EQ(h.status, 200);
    EXPECT_EQ(h.headers["content-length"], std::to_string(g.body.size()));
    EXPECT_TRUE(h.body.empty());
    EXPECT_EQ(g.headers["odata-version"], "4.0");
    EXPECT_EQ(g.headers["content-type"], "application/json; charset=utf-8");

    // Malformed requests: 400 (or 431/505) with an error body, and the connection closed.
    struct Bad
    {
        std::string request;
        int status;
    };
    const std::vector<Bad> bad = {
        {"GET /redfish/v1\r\n\r\n", 400},                            // no version
        {"GET  /redfish/v1 HTTP/1.1\r\nHost: x\r\n\r\n", 400},       // two spaces
        {"GET /redfish/v1 HTTP/1.1\r\n\r\n", 400},                   // HTTP/1.1 without Host
        {"GET /redfish/v1 HTTP/1.1\r\nHost : x\r\n\r\n", 400},       // space before colon
        {"GET /redfish/v1 HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},
        {"GET /redfish/v1 HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
        {"GET /redfish/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"GET /redfish/v1 HTTP/2.0\r\nHost: x\r\n\r\n", 505},
        {std::string("G\0T / HTTP/1.1\r\nHost: x\r\n\r\n", 27), 400},
        {"GET /redfish/v1 HTTP/1.1\r\nHost: x\r\nX: " + std::string(10000, 'a') + "\r\n\r\n",
         431},
        {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15), 400}, // TLS
    };
    for (const Bad& b : bad)
    {
        bool c = false;
        auto rep = HttpRaw(port, b.request, 5000, false, &c);
        ASSERT_EQ(rep.size(), 1u) << b.request.substr(0, 40);
        EXPECT_EQ(rep[0].status, b.status) << b.request.substr(0, 40);
        EXPECT_TRUE(c) << b.request.substr(0, 40);
        errors.push_back({"bad " + std::to_string(b.status), "RedfishError",
                          json::parse(rep[0].body, nullptr, false)});
    }
    bool ok = false;
    const std::string report = ValidateRedfish(errors, &ok);
    EXPECT_TRUE(ok) << report;

    // Pipelining: two requests in one write, two answers in order, connection kept (until the
    // idle timeout closes it).
    bool c2 = false;
    auto two = HttpRaw(port,
                       "GET /redfish/v1 HTTP/1.1\r\nHost: x\r\n\r\n"
                       "GET /redfish/v1/Chassis HTTP/1.1\r\nHost: x\r\n\r\n",
                       5000, false, &c2);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(json::parse(two[0].body)["@odata.id"], "/redfish/v1");
    EXPECT_EQ(json::parse(two[1].body)["@odata.id"], "/redfish/v1/Chassis");
    EXPECT_TRUE(c2) << "the idle connection was not closed within 5 s";

    // A client that connects and says nothing is dropped too; the server still answers after
    // all of this.
    const int idle = HttpConnect(port);
    bool c3 = false;
    HttpReadAll(idle, 5000, &c3);
    close(idle);
    EXPECT_TRUE(c3);
    EXPECT_EQ(HttpRequest(port, "GET", "/redfish/v1").status, 200);
    const RedfishServerCounters k = r.server->GetCounters();
    EXPECT_GE(k.idleTimeouts, 2u);
    EXPECT_GE(k.badRequests, bad.size() + 1);
    EXPECT_GE(k.methodNotAllowed, 5u);
    EXPECT_GE(k.notFound, 1u);
}

TEST(RackRedfish, AnIdleBmcCostsNoSnapshots)
{
    // After discovery and the first reads, a BMC that polls every 1000 s reads nothing for
    // minutes: the server must not copy the inventory every second meanwhile.
    RedfishRack r(ConstantLoad(6000), Seconds(1000));
    Simulator::Stop(Seconds(60));
    Simulator::Run();
    const uint64_t settled = r.server->GetPublishedVersion();
    Simulator::Stop(Seconds(600));
    Simulator::Run();
    EXPECT_EQ(r.server->GetPublishedVersion(), settled);
    EXPECT_GT(settled, 1u);
    // And what it serves is still the last read.
    int status = 0;
    const json m = GetJson(r.Port(), PsuPath(1, "ORV3_PSU_C8") + "/Metrics", &status);
    EXPECT_EQ(status, 200);
    EXPECT_NEAR(Reading(m["OutputPowerWatts"]), 500, 0.125);
}

TEST(RackRedfish, ParseHeadWaitsForTheWholeHeadAndAcceptsBareLf)
{
    RedfishHttpRequest q;
    EXPECT_EQ(RedfishServer::ParseHead("GET /redfish/v1 HTTP/1.1\r\nHost: x\r\n", 8192, &q), 0);
    const std::string lf = "GET /redfish/v1 HTTP/1.1\nHost: x\n\nGET";
    EXPECT_EQ(RedfishServer::ParseHead(lf, 8192, &q), static_cast<int64_t>(lf.size() - 3));
    EXPECT_EQ(q.method, "GET");
    EXPECT_EQ(q.target, "/redfish/v1");
    EXPECT_TRUE(q.keepAlive);
    EXPECT_EQ(RedfishServer::ParseHead("GET / HTTP/1.0\r\n\r\n", 8192, &q), 18);
    EXPECT_FALSE(q.keepAlive); // HTTP/1.0 closes unless asked otherwise
    EXPECT_EQ(RedfishServer::ParseHead(
                  "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
                  8192, &q),
              -400);
    EXPECT_EQ(RedfishServer::ParseHead(std::string(300, 'A'), 256, &q), -431);
}

TEST(RackRedfish, ClientsReadWhileTheSimulationRuns)
{
    // The server thread answers from snapshots while the simulation thread keeps publishing:
    // every answer is complete JSON, and the snapshot version never goes backwards.
    RedfishRack r(ConstantLoad(9000), Seconds(5));
    const uint16_t port = r.Port();
    std::atomic<bool> done{false};
    std::atomic<int> answers{0};
    std::atomic<int> wrong{0};
    std::atomic<uint64_t> maxVersion{0};
    std::thread client([&]() {
        uint64_t last = 0;
        // At least one request, however soon the simulation ends (a descheduled thread may
        // first look after it has).
        do
        {
            int status = 0;
            const json j = GetJson(port, "/redfish/v1", &status);
            if (status != 200 || j.is_discarded())
            {
                wrong++;
                continue;
            }
            const uint64_t v = j["Oem"]["Cnuas"]["SnapshotVersion"].get<uint64_t>();
            if (v < last)
            {
                wrong++;
            }
            last = v;
            maxVersion = v;
            answers++;
            // One PSU too: its tree is rebuilt from each new snapshot.
            if (GetJson(port, PsuPath(1, "ORV3_PSU_C8"), &status).is_discarded() && status == 200)
            {
                wrong++;
            }
        } while (!done.load());
    });
    Simulator::Stop(Seconds(60));
    Simulator::Run();
    done = true;
    client.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GT(answers.load(), 0);
    EXPECT_LE(maxVersion.load(), r.server->GetPublishedVersion());
    // A snapshot a second of simulation time while the BMC reads (it polls 4 s of every 5).
    EXPECT_GE(r.server->GetPublishedVersion(), 30u);
    EXPECT_LE(r.server->GetPublishedVersion(), 61u + 12u); // + one per cycle end
}

TEST(RackRedfish, APipeliningClientThatNeverReadsIsBoundedClosedAndFreed)
{
    // Issue 15: 8 MB of pipelined requests from a client that never reads took the process
    // from 24 MB to 125 MB. Now the server stops reading while MaxPendingOutput bytes wait,
    // closes the connection after StallTimeout without progress, and frees its buffers.
    Config::SetDefault("ns3::RedfishServer::StallTimeout", TimeValue(Seconds(1)));
    uint32_t limit = 0;
    {
        RedfishRack r(ConstantLoad(6000), Seconds(10), Seconds(60));
        Simulator::Stop(Seconds(20));
        Simulator::Run();
        UintegerValue v;
        r.server->GetAttribute("MaxPendingOutput", v);
        limit = static_cast<uint32_t>(v.Get());
        const uint16_t port = r.Port();
        const int fd = HttpConnect(port);
        ASSERT_GE(fd, 0);
        const std::string one = "GET /redfish/v1/Chassis HTTP/1.1\r\nHost: x\r\n\r\n";
        std::string burst;
        while (burst.size() < (1u << 20))
        {
            burst += one;
        }
        std::size_t sent = 0;
        bool refused = false;
        auto lastProgress = std::chrono::steady_clock::now();
        while (sent < 32u * burst.size() &&
               std::chrono::steady_clock::now() - lastProgress < std::chrono::seconds(5))
        {
            pollfd p = {fd, POLLOUT, 0};
            poll(&p, 1, 100);
            const ssize_t n = send(fd, burst.data() + sent % burst.size(),
                                   burst.size() - sent % burst.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0)
            {
                sent += static_cast<std::size_t>(n);
                lastProgress = std::chrono::steady_clock::now();
            }
            else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            {
                refused = true; // the server closed the connection
                break;
            }
        }
        EXPECT_LT(sent, 32u * burst.size()) << "the server read 32 MB of requests unanswered";
        auto until = [](const std::function<bool()>& f, int seconds) {
            const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
            while (!f() && std::chrono::steady_clock::now() < end)
            {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            return f();
        };
        EXPECT_TRUE(until([&]() { return r.server->GetCounters().stalledClosed >= 1; }, 60))
            << "a client that never reads was not closed (sent " << sent << ", refused "
            << refused << ")";
        EXPECT_TRUE(until([&]() { return r.server->GetCounters().pendingOutput == 0; }, 10));
        close(fd);
        const RedfishServerCounters k = r.server->GetCounters();
        // One response may start below the limit and end above it.
        EXPECT_LE(k.maxPendingOutput, limit + 64u * 1024);
        EXPECT_GT(k.maxPendingOutput, 0u);
        EXPECT_EQ(HttpRequest(port, "GET", "/redfish/v1").status, 200);
    }
    Config::SetDefault("ns3::RedfishServer::StallTimeout", TimeValue(Seconds(10)));
    EXPECT_GT(limit, 0u);
}
