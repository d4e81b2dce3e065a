// Ethernet pcaps: PFC frames decode in tshark as MAC Control PFC with the fields the model sent,
// nothing is malformed, and a run twice writes the same bytes.
#include "ib-test-packets.h"

#include "helpers/roce/eth-traffic-run.h"
#include "helpers/trace/trace-check.h"

#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

using namespace ns3;
using namespace cnuas_test;

namespace
{
std::string
FreshDir(const std::string& name)
{
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/" + name;
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    return dir;
}

EthTrafficSpec
PfcIncast(const std::string& dir)
{
    EthTrafficSpec spec;
    spec.topology = "star:hosts=5";
    spec.pattern = EthTrafficSpec::Pattern::Incast;
    spec.duration = MicroSeconds(60);
    spec.pfc = true;
    spec.pcapDir = dir;
    spec.configure = [](EthFabricHelper& h) {
        h.SetMmuAttribute("BufferBytes", UintegerValue(1024 * 1024));
        h.SetPortAttribute("PauseQuanta", UintegerValue(0x3000));
    };
    return spec;
}
} // namespace

TEST(RocePcap, TsharkDecodesPfcWithItsFieldsAndNothingMalformed)
{
    const std::string dir = FreshDir("roce-pcap");
    const EthTrafficStats st = RunEthTraffic(PfcIncast(dir));
    ASSERT_GT(st.pfcFramesSent, 0u);
    uint64_t pfcSeen = 0;
    uint64_t xoff = 0;
    uint64_t xon = 0;
    for (const char* host : {"h0", "h1", "h2", "h3", "h4"})
    {
        const std::string path = dir + "/" + host + ".pcap";
        int status = -1;
        // Frames tshark flags as malformed or with an error-level expert item: none.
        const auto bad = TsharkFieldRows(
            path, {"frame.number"}, "-Y '_ws.malformed || _ws.expert.severity >= error'",
            &status);
        EXPECT_EQ(status, 0) << path;
        EXPECT_TRUE(bad.empty()) << path << ": " << bad.size() << " bad frames, first "
                                 << (bad.empty() ? "" : bad[0][0]);
        const auto rows = TsharkFieldRows(path,
                                          {"eth.dst", "eth.type", "macc.opcode",
                                           "macc.cbfc.enbv", "macc.cbfc.pause_time.c3",
                                           "frame.len"},
                                          "-Y macc",
                                          &status);
        ASSERT_EQ(status, 0);
        for (const auto& r : rows)
        {
            ASSERT_EQ(r.size(), 6u);
            EXPECT_EQ(r[0], "01:80:c2:00:00:01");
            EXPECT_EQ(r[1], "0x8808");
            EXPECT_EQ(r[2], "0x0101");
            EXPECT_EQ(r[3], "0x0008"); // priority 3 only
            const unsigned long t = std::stoul(r[4]);
            EXPECT_TRUE(t == 0x3000 || t == 0) << t; // the configured quanta, or XON
            (t ? xoff : xon)++;
            EXPECT_EQ(r[5], "60"); // 64-byte frame without FCS
            pfcSeen++;
        }
        // Data frames decode as IPv4/UDP to 4791.
        const auto udp = TsharkFieldRows(path, {"udp.dstport", "ip.dsfield.dscp"},
                                         "-Y udp -c 3", &status);
        for (const auto& r : udp)
        {
            ASSERT_EQ(r.size(), 2u);
            EXPECT_EQ(r[0], "4791");
            EXPECT_EQ(r[1], "26");
        }
    }
    // Every PFC frame the switch sent reached a host and is in that host's trace.
    EXPECT_EQ(pfcSeen, st.pfcFramesSent);
    EXPECT_GT(xoff, 0u);
    EXPECT_GT(xon, 0u);
}

TEST(RocePcap, Ipv6TraceDecodesWithGoodUdpChecksums)
{
    const std::string dir = FreshDir("roce-pcap-v6");
    EthTrafficSpec spec = PfcIncast(dir);
    spec.ipv6 = true;
    spec.topology = "star:hosts=3";
    spec.duration = MicroSeconds(10);
    const EthTrafficStats st = RunEthTraffic(spec);
    ASSERT_GT(st.received, 0u);
    int status = -1;
    const std::string path = dir + "/h1.pcap";
    // tshark verifies the UDP checksum when asked: status 1 = good (2 = bad).
    const auto rows = TsharkFieldRows(path,
                                      {"ipv6.src", "ipv6.dst", "ipv6.tclass.dscp",
                                       "udp.checksum.status"},
                                      "-o udp.check_checksum:TRUE -Y udp", &status);
    ASSERT_EQ(status, 0);
    ASSERT_FALSE(rows.empty());
    for (const auto& r : rows)
    {
        ASSERT_EQ(r.size(), 4u);
        EXPECT_EQ(r[0], "fd00::2");
        EXPECT_EQ(r[1], "fd00::1");
        EXPECT_EQ(r[2], "26");
        EXPECT_EQ(r[3], "1");
    }
    const auto bad = TsharkFieldRows(
        path, {"frame.number"},
        "-o udp.check_checksum:TRUE -Y '_ws.malformed || _ws.expert.severity >= error'",
        &status);
    EXPECT_TRUE(bad.empty()) << bad.size() << " bad frames";
}

// Issue 15: the load generator sent zeros to UDP 4791, which every capture shows as RoCEv2
// with ICRC 0, so that the traces of these tests failed `cnuas pcap check`. Its packets are
// RoCEv2 packets now (BTH, zeros, the ICRC filled when the pcap makes the bytes).
TEST(RocePcap, GeneratorPacketsCarryRealIcrcs)
{
    for (const bool v6 : {false, true})
    {
        const std::string dir = FreshDir(v6 ? "roce-pcap-icrc-v6" : "roce-pcap-icrc");
        EthTrafficSpec spec = PfcIncast(dir);
        spec.ipv6 = v6;
        spec.duration = MicroSeconds(20);
        const EthTrafficStats st = RunEthTraffic(spec);
        ASSERT_GT(st.received, 0u);
        for (const char* host : {"h0", "h1", "h2", "h3", "h4"})
        {
            const TraceCheckReport r = CheckTrace(dir + "/" + host + ".pcap");
            EXPECT_TRUE(r.ok()) << r.Summary() << ": "
                                << (r.firstProblems.empty() ? "" : r.firstProblems[0]);
            EXPECT_GT(r.crcsChecked, 0u) << r.Summary();
        }
        // tshark reads them as RoCEv2: a BTH of a UC SEND Only with its ICRC, nothing malformed.
        int status = -1;
        const auto rows = TsharkFieldRows(dir + "/h1.pcap", {"infiniband.bth.opcode"},
                                          "-Y infiniband -c 5", &status);
        ASSERT_EQ(status, 0);
        ASSERT_FALSE(rows.empty());
        for (const auto& r : rows)
        {
            // 0x24, UC SEND Only (IBA vol. 1 §9.2), in whichever base tshark prints it.
            EXPECT_TRUE(r[0] == "36" || r[0] == "0x24" || r[0] == "0x00000024") << r[0];
        }
    }
    // A datagram to 4791 too short for BTH + ICRC would be a broken RoCEv2 packet: refused.
    EthUdpFlow flow;
    EXPECT_THROW(EthGreedySource(nullptr, {1}, flow, 15, MicroSeconds(1)),
                 std::invalid_argument);
}

TEST(RocePcap, SameRunWritesSameBytes)
{
    const std::string d1 = FreshDir("roce-pcap-a");
    const std::string d2 = FreshDir("roce-pcap-b");
    RunEthTraffic(PfcIncast(d1));
    RunEthTraffic(PfcIncast(d2));
    for (const char* host : {"h0", "h1", "h4"})
    {
        int status = -1;
        RunCommand("cmp -s '" + d1 + "/" + host + ".pcap' '" + d2 + "/" + host + ".pcap'",
                   &status);
        EXPECT_EQ(status, 0) << host;
        struct stat sb;
        ASSERT_EQ(stat((d1 + "/" + host + ".pcap").c_str(), &sb), 0);
        EXPECT_GT(sb.st_size, 1000);
    }
}
