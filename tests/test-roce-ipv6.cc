// RDMA over RoCEv2 with IPv6 GIDs (GID index 1, not IPv4-mapped): RC SEND/WRITE/READ/atomics
// across a leaf-spine with the bytes compared, ECMP spreading QPs by flow label and UDP source
// port while each QP keeps one path, DCQCN CNPs going back over IPv6 where marks happened, and a
// pcap that tshark decodes as IPv6 / UDP 4791 / InfiniBand with good UDP checksums and ICRCs.
#include "ib-test-packets.h"
#include "test-roce-rdma-fixture.h"

#include "helpers/rdma/rdma-qp-connect.h"
#include "helpers/trace/eth-pcap-writer.h"
#include "helpers/trace/trace-check.h"
#include "models/rdma/rdma-cc-dcqcn.h"
#include "models/roce/shared-buffer-mmu.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/packet.h"

#include <cstring>
#include <map>
#include <set>

using namespace ns3;
using namespace cnuas_test;

namespace
{
constexpr uint8_t kIpv6Gid = 1;
constexpr uint8_t kCeCodepoint = 3;  // RFC 3168 §5
constexpr uint8_t kCnpOpcode = 0x81; // annex A17.9.2

uint8_t
OpcodeOf(const EthFrame& f)
{
    uint8_t op = 0xFF;
    if (f.StoredPayloadBytes() > 0)
    {
        f.CopyPayload(&op, 1);
    }
    return op;
}

/// The frames a device sent or received, fields only.
struct Frames
{
    std::vector<EthFrame> all;

    void On(const EthFrame& f)
    {
        all.push_back(f);
    }
};

std::string
FreshDir(const std::string& name)
{
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/" + name;
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    return dir;
}

/// Linux's rdma_flow_label_to_udp_sport (the rule RoCEv2 NICs use): the low 14 bits of the
/// label xor its high 6, in the 0xC000 range.
uint16_t
SportOfFlowLabel(uint32_t fl)
{
    uint32_t low = fl & 0x03FFF;
    const uint32_t high = fl & 0xFC000;
    low ^= high >> 14;
    return static_cast<uint16_t>(low | 0xC000);
}
} // namespace

class RoceIpv6 : public RocePairTest
{
};

TEST_F(RoceIpv6, RcSendWriteReadAndAtomicsArriveIntactAcrossALeafSpine)
{
    Build(MakeLeafSpine(2, 2, 2));
    QpOptions o;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 3, o, kIpv6Gid); // h0 on leaf 0, h3 on leaf 1
    Frames tx;
    Frames rx;
    fabric.HostPort(0)->TraceConnectWithoutContext("Tx", MakeCallback(&Frames::On, &tx));
    fabric.HostPort(0)->TraceConnectWithoutContext("Rx", MakeCallback(&Frames::On, &rx));
    ExpectSendWriteReadAtomics(a, b, 31);
    ASSERT_FALSE(HasFatalFailure());

    // Both directions really were IPv6 between the two hosts' addresses, to UDP 4791.
    const Ipv6Bytes ip0 = EthFabricHelper::HostAddress6(0);
    const Ipv6Bytes ip3 = EthFabricHelper::HostAddress6(3);
    ASSERT_GT(tx.all.size(), 70u); // 70001 bytes at MTU 1024 alone need 69 packets
    ASSERT_GT(rx.all.size(), 33u); // the READ response alone is 33 packets
    for (const EthFrame& f : tx.all)
    {
        EXPECT_TRUE(f.ipv6);
        EXPECT_EQ(f.dstPort, 4791);
        EXPECT_EQ(f.srcIp6, ip0);
        EXPECT_EQ(f.dstIp6, ip3);
    }
    for (const EthFrame& f : rx.all)
    {
        EXPECT_TRUE(f.ipv6);
        EXPECT_EQ(f.srcIp6, ip3);
        EXPECT_EQ(f.dstIp6, ip0);
    }
    EXPECT_EQ(b.hca.port->GetDropCount(RoceDropReason::BadIcrc), 0u);
    EXPECT_EQ(a.hca.port->GetDropCount(RoceDropReason::BadIcrc), 0u);
}

TEST_F(RoceIpv6, EcmpSpreadsQpsByFlowLabelAndSourcePortAndKeepsEachOnOnePath)
{
    Topology t = MakeLeafSpine(2, 4, 4);
    Build(t);
    const uint32_t leaf0 = *t.Find("leaf0");
    // Which uplink of leaf 0 (ports 5..8) each UDP source port left on.
    std::map<uint16_t, std::set<uint16_t>> uplinksOf;
    struct Up
    {
        std::map<uint16_t, std::set<uint16_t>>* m;
        uint16_t port;
        void On(const EthFrame& f)
        {
            if (f.ipv6 && f.dstPort == 4791 && OpcodeOf(f) != 17) // requests, not ACKs
            {
                (*m)[f.srcPort].insert(port);
            }
        }
    };
    std::vector<Up> ups;
    ups.reserve(4);
    for (uint16_t p = 5; p <= 8; ++p)
    {
        ups.push_back(Up{&uplinksOf, p});
    }
    for (uint16_t p = 5; p <= 8; ++p)
    {
        fabric.Port(leaf0, p)->TraceConnectWithoutContext("Tx",
                                                          MakeCallback(&Up::On, &ups[p - 5]));
    }
    Frames sent;
    for (uint32_t h = 0; h < 4; ++h)
    {
        fabric.HostPort(h)->TraceConnectWithoutContext("Tx", MakeCallback(&Frames::On, &sent));
    }
    // 16 QPs from leaf 0's hosts to leaf 1's, over IPv6; half with a flow label in the address
    // vector (the source port is then folded from it), half without (hashed from the QP).
    QpOptions o;
    std::vector<RoceSide> w(16);
    std::vector<RoceSide> rcv(16);
    std::map<uint32_t, uint32_t> labelOfDestQp;
    for (uint32_t i = 0; i < 16; ++i)
    {
        const uint32_t src = i % 4;
        const uint32_t dst = 4 + (i / 4);
        MakeSide(w[i], src, o);
        MakeSide(rcv[i], dst, o);
        const uint32_t label = i % 2 ? 0x1234 * (i + 1) & 0xFFFFF : 0;
        labelOfDestQp[rcv[i].qp->GetQpNum() | (dst << 24)] = label;
        RdmaAhAttr toDst = RdmaGidAddress(GidOf(dst, kIpv6Gid));
        toDst.grh.flow_label = label;
        RdmaQpConnectOptions c = QpConnectOptions(o, o.sqPsn);
        ASSERT_EQ(TryConnectQp(w[i].qp, toDst, rcv[i].qp->GetQpNum(), c), "");
        ASSERT_EQ(TryConnectQp(rcv[i].qp, RdmaGidAddress(GidOf(src, kIpv6Gid)),
                               w[i].qp->GetQpNum(), c),
                  "");
        // 4 QPs a host on either side: each its own source and destination buffer.
        w[i].Write(25000 * (i / 4), TestBytes(20000, 40 + i));
        RdmaSendWr wr = Wr(i, RdmaWrOpcode::RDMA_WRITE, {w[i].Sge(25000 * (i / 4), 20000)});
        wr.rdma.remote_addr = kRegionBase + 100000 + 25000 * (i % 4);
        wr.rdma.rkey = rcv[i].mr->GetRkey();
        ASSERT_EQ(w[i].qp->PostSend(wr), 0);
    }
    RunFor(MilliSeconds(2));
    for (uint32_t i = 0; i < 16; ++i)
    {
        auto sc = w[i].sendCq->Poll(10);
        ASSERT_EQ(sc.size(), 1u) << i;
        EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(rcv[i].Read(100000 + 25000 * (i % 4), 20000), TestBytes(20000, 40 + i)) << i;
    }
    // Each data packet carries its QP's flow label, and a labelled QP's source port is the
    // label folded as Linux folds it.
    uint32_t labelled = 0;
    for (const EthFrame& f : sent.all)
    {
        ASSERT_TRUE(f.ipv6);
        EXPECT_GE(f.srcPort, 0xC000);
        // The requester's packets name the destination QP in the BTH.
        uint8_t bth[12];
        ASSERT_GE(f.StoredPayloadBytes(), 12u);
        f.CopyPayload(bth, 12);
        const uint32_t destQp = (uint32_t(bth[5]) << 16) | (uint32_t(bth[6]) << 8) | bth[7];
        uint32_t dstHost = 0;
        for (uint32_t h = 4; h < 8; ++h)
        {
            dstHost = f.dstIp6 == EthFabricHelper::HostAddress6(h) ? h : dstHost;
        }
        const auto it = labelOfDestQp.find(destQp | (dstHost << 24));
        ASSERT_NE(it, labelOfDestQp.end());
        EXPECT_EQ(f.flowLabel, it->second);
        if (it->second != 0)
        {
            labelled++;
            EXPECT_EQ(f.srcPort, SportOfFlowLabel(it->second));
        }
    }
    EXPECT_GT(labelled, 8u * 19);
    ASSERT_EQ(uplinksOf.size(), 16u) << "16 QPs, 16 source ports";
    std::set<uint16_t> used;
    for (const auto& [sport, ports] : uplinksOf)
    {
        EXPECT_EQ(ports.size(), 1u) << "QP with source port " << sport << " changed path";
        used.insert(ports.begin(), ports.end());
    }
    EXPECT_GE(used.size(), 3u) << "16 flows over 4 uplinks";
}

TEST_F(RoceIpv6, DcqcnCnpsGoBackOverIpv6WhereMarksHappened)
{
    RoceHelper rh;
    rh.SetCongestionControl("ns3::RdmaCcDcqcnPaper");
    // An ACK request every 16 packets, as NICs do: with the last packet's alone, a WRITE that
    // DCQCN slows past the 1 ms transport timer is restarted by go-back-N again and again.
    rh.SetEngineAttribute("AckReqEveryPackets", UintegerValue(16));
    Build(MakeStar(3), rh, [](EthFabricHelper& h) {
        h.SetMmuAttribute("EcnMode", EnumValue(1));
        h.SetMmuAttribute("KminBytes", UintegerValue(5000));
        h.SetMmuAttribute("KmaxBytes", UintegerValue(100000));
        h.SetMmuAttribute("Pmax", DoubleValue(0.2));
    });
    // A fixed marking stream: the outcome does not depend on the tests run before this one.
    fabric.Switches()[0]->GetMmu()->AssignStreams(7);
    Frames tx;
    Frames rx;
    fabric.HostPort(0)->TraceConnectWithoutContext("Tx", MakeCallback(&Frames::On, &tx));
    fabric.HostPort(0)->TraceConnectWithoutContext("Rx", MakeCallback(&Frames::On, &rx));
    QpOptions o;
    RoceSide w1;
    RoceSide w2;
    RoceSide r1;
    RoceSide r2;
    Pair(w1, 1, r1, 0, o, kIpv6Gid);
    r2.pd = r1.pd;
    r2.mr = r1.mr;
    r2.sendCq = r1.sendCq;
    r2.recvCq = r1.recvCq;
    Pair(w2, 2, r2, 0, o, kIpv6Gid);
    uint32_t k = 0;
    for (RoceSide* w : {&w1, &w2})
    {
        w->Write(0, TestBytes(2000000, 50 + k));
        RdmaSendWr wr = Wr(k, RdmaWrOpcode::RDMA_WRITE, {w->Sge(0, 2000000)});
        wr.rdma.remote_addr = kRegionBase + 2000000 * k;
        wr.rdma.rkey = r1.mr->GetRkey();
        ASSERT_EQ(w->qp->PostSend(wr), 0);
        ++k;
    }
    RunFor(MilliSeconds(3));
    for (RoceSide* w : {&w1, &w2})
    {
        auto sc = w->sendCq->Poll(10);
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    }
    EXPECT_EQ(r1.Read(0, 2000000), TestBytes(2000000, 50));
    EXPECT_EQ(r1.Read(2000000, 2000000), TestBytes(2000000, 51));
    const uint64_t marks = fabric.Switches()[0]->GetEcnMarked();
    ASSERT_GT(marks, 0u) << "the test must congest the switch";

    // At h0's port: every CNP leaves as IPv6, Not-ECT, to a sender from which CE-marked IPv6
    // packets arrived, and no more often than they did.
    std::map<Ipv6Bytes, uint64_t> ceFrom;
    uint64_t ce = 0;
    for (const EthFrame& f : rx.all)
    {
        ASSERT_TRUE(f.ipv6);
        if (f.ecn == kCeCodepoint)
        {
            ce++;
            ceFrom[f.srcIp6]++;
        }
    }
    EXPECT_EQ(ce, marks) << "every mark reaches the receiver";
    uint64_t cnps = 0;
    std::map<Ipv6Bytes, uint64_t> cnpsTo;
    for (const EthFrame& f : tx.all)
    {
        ASSERT_TRUE(f.ipv6);
        if (OpcodeOf(f) != kCnpOpcode)
        {
            continue;
        }
        cnps++;
        cnpsTo[f.dstIp6]++;
        EXPECT_EQ(f.ecn, 0) << "CNPs are Not-ECT";
        EXPECT_EQ(f.dstPort, 4791);
        EXPECT_TRUE(f.dstIp6 == EthFabricHelper::HostAddress6(1) ||
                    f.dstIp6 == EthFabricHelper::HostAddress6(2));
    }
    EXPECT_GT(cnps, 0u);
    EXPECT_EQ(cnps, hcas[0].engine->GetCounters().cnpsSent);
    for (const auto& [ip, n] : cnpsTo)
    {
        EXPECT_GT(ceFrom[ip], 0u) << "a CNP to a host none of whose packets was marked";
        EXPECT_LE(n, ceFrom[ip]);
    }
    uint64_t received = 0;
    for (uint32_t h : {1u, 2u})
    {
        received += DynamicCast<RdmaCcDcqcn>(hcas[h].cc)->GetCnpsReceived();
    }
    EXPECT_EQ(received, cnps) << "each CNP reached its sender's reaction point";
}

TEST_F(RoceIpv6, PcapDecodesAsIpv6Udp4791InfinibandWithGoodChecksumsAndIcrcs)
{
    Build(MakeLeafSpine(2, 2, 1));
    const std::string dir = FreshDir("roce-ipv6-pcap");
    std::vector<Ptr<PcapFileWrapper>> files;
    for (uint32_t i = 0; i < 2; ++i)
    {
        files.push_back(EthPcapHelper::Enable(fabric.HostPort(i),
                                              dir + "/h" + std::to_string(i) + ".pcap"));
    }
    QpOptions o;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 1, o, kIpv6Gid);
    a.Write(0, TestBytes(5000, 61));
    b.Write(100000, TestBytes(3000, 62));
    ASSERT_EQ(b.PostRecv(1, 200000, 5000), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 5000)})), 0);
    RdmaSendWr w = Wr(2, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 5000)});
    w.rdma.remote_addr = kRegionBase + 300000;
    w.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RdmaSendWr r = Wr(3, RdmaWrOpcode::RDMA_READ, {a.Sge(400000, 3000)});
    r.rdma.remote_addr = kRegionBase + 100000;
    r.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(r), 0);
    RunFor(MilliSeconds(1));
    ASSERT_EQ(a.sendCq->Poll(10).size(), 3u);
    EXPECT_EQ(a.Read(400000, 3000), TestBytes(3000, 62));
    files.clear();
    Simulator::Destroy(); // flushes the pcaps

    std::set<unsigned long> opcodes;
    for (uint32_t i = 0; i < 2; ++i)
    {
        const std::string path = dir + "/h" + std::to_string(i) + ".pcap";
        int status = -1;
        const auto bad = TsharkFieldRows(
            path, {"frame.number"},
            "-o udp.check_checksum:TRUE -Y '_ws.malformed || _ws.expert.severity >= error'",
            &status);
        EXPECT_EQ(status, 0);
        EXPECT_TRUE(bad.empty()) << path << ": " << bad.size() << " bad frames";
        const auto rows = TsharkFieldRows(path,
                                          {"ipv6.src", "ipv6.dst", "udp.dstport",
                                           "udp.checksum.status", "infiniband.bth.opcode",
                                           "ipv6.version"},
                                          "-o udp.check_checksum:TRUE -Y udp", &status);
        ASSERT_EQ(status, 0);
        ASSERT_GT(rows.size(), 5u);
        for (const auto& row : rows)
        {
            ASSERT_GE(row.size(), 5u);
            EXPECT_TRUE((row[0] == "fd00::1" && row[1] == "fd00::2") ||
                        (row[0] == "fd00::2" && row[1] == "fd00::1"))
                << row[0] << " -> " << row[1];
            EXPECT_EQ(row[2], "4791");
            EXPECT_EQ(row[3], "1") << "UDP checksum good";
            ASSERT_FALSE(row[4].empty()) << "not decoded as InfiniBand";
            opcodes.insert(std::stoul(row[4]));
            ASSERT_EQ(row.size(), 6u);
            EXPECT_EQ(row[5], "6");
        }
        const TraceCheckReport rep = CheckTrace(path);
        EXPECT_TRUE(rep.ok()) << rep.Summary();
        EXPECT_GT(rep.crcsChecked, 0u);
    }
    // SEND first/middle/last (0-2), WRITE first/middle/last (6-8), READ request (12), READ
    // response first/last (13, 15), ACK (17).
    for (unsigned long op : {0ul, 2ul, 6ul, 8ul, 12ul, 13ul, 15ul, 17ul})
    {
        EXPECT_TRUE(opcodes.count(op)) << "opcode " << op << " missing";
    }
}
