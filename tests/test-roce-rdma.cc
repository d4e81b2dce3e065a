// The RDMA packet engine over RoCEv2: the same engine as the InfiniBand tests, a RoceRdmaPort
// under it. SEND/WRITE/READ/atomics compared byte for byte, UD's GRH area, the encapsulation
// fields, bad ICRCs and non-RoCE datagrams counted, and a pcap that tshark decodes.
#include "ib-test-packets.h"
#include "test-roce-rdma-fixture.h"

#include "helpers/trace/eth-pcap-writer.h"
#include "models/rdma/apps/rdma-null-memory.h"
#include "helpers/trace/trace-check.h"
#include "models/ib/ib-crc.h"

#include "ns3/boolean.h"
#include "ns3/enum.h"
#include "ns3/double.h"

#include <cstring>
#include <set>
#include <tuple>

using namespace ns3;
using namespace cnuas_test;

namespace
{
/// Every frame a port sends or receives, as bytes (without FCS).
struct FrameLog
{
    std::vector<std::vector<uint8_t>> tx;
    std::vector<std::vector<uint8_t>> rx;
    void On(Time, const uint8_t* p, uint32_t n, bool transmit)
    {
        (transmit ? tx : rx).emplace_back(p, p + n);
    }
};

uint32_t
Be32(const uint8_t* p)
{
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

std::string
FreshDir(const std::string& name)
{
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/" + name;
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    return dir;
}
} // namespace

class RoceRdma : public RocePairTest
{
};

TEST_F(RoceRdma, RcSendWriteReadAndAtomicsArriveIntact)
{
    Build(MakeTwoHostsOneSwitch());
    QpOptions o;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 1, o);
    ExpectSendWriteReadAtomics(a, b, 1);
    EXPECT_GT(a.hca.port->GetPacketsSent(), 70u); // 70001 bytes at MTU 1024 alone need 69
    EXPECT_EQ(b.hca.port->GetDropCount(RoceDropReason::BadIcrc), 0u);
}

/// A RoCE port's GID table has gid_tbl_len slots and a GID for each address of its interface
/// (here the IPv4-mapped one and the IPv6 one): an address vector whose sgid_index names an
/// empty slot is refused with ENODATA, at modify_qp and create_ah alike, as the kernel refuses
/// it (rdma_get_gid_attr). Without the check the QP came up and its packets went nowhere: a
/// program told `-x 3` (a ConnectX's IPv4 RoCE v2 index) ran into retry exhaustion instead.
TEST_F(RoceRdma, AnAddressVectorNamingAnEmptyGidEntryIsRefused)
{
    Build(MakeTwoHostsOneSwitch());
    QpOptions o;
    RoceSide a;
    MakeSide(a, 0, o);
    RdmaAhAttr av = RdmaGidAddress(GidOf(1), 64);
    av.grh.sgid_index = 2; // inside the table (gid_tbl_len), but empty
    int err = 0;
    EXPECT_EQ(a.hca.device->CreateAh(a.pd, av, &err), nullptr);
    EXPECT_EQ(err, ENODATA);
    const std::string refused = TryConnectQp(a.qp, av, 1, QpConnectOptions(o, o.sqPsn));
    EXPECT_NE(refused.find("RTR"), std::string::npos) << refused;
    EXPECT_NE(refused.find("empty entry of the GID table"), std::string::npos) << refused;
    for (uint8_t index : {0, 1}) // the two GIDs in use
    {
        av.grh.sgid_index = index;
        EXPECT_NE(a.hca.device->CreateAh(a.pd, av, &err), nullptr) << +index;
    }
}

TEST_F(RoceRdma, DataEndingInZerosArrivesExactlyAndMaterializesWithGoodIcrcs)
{
    // A packet's trailing zero bytes are not stored in the frame (EthFrame::payload): the
    // receiver must still write them, over memory that held something else, after packets
    // with other data passed through the same receive buffer, and a capture must show every
    // byte with the ICRC computed over them.
    Build(MakeTwoHostsOneSwitch());
    QpOptions o;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 1, o);
    FrameLog log;
    fabric.HostPort(1)->AddSniffer(MakeCallback(&FrameLog::On, &log));
    // 6000 bytes: data, then zeros from the middle of the second packet (MTU 1024) on, then
    // one data byte in the last packet, which ends in zeros again but for it.
    std::vector<uint8_t> src = TestBytes(6000, 9);
    std::fill(src.begin() + 1500, src.end(), 0);
    src[5500] = 0x5A;
    a.Write(0, src);
    a.Write(100000, TestBytes(6000, 10)); // a message of data first: a full receive buffer
    b.Write(200000, std::vector<uint8_t>(6000, 0xCD));
    b.Write(300000, std::vector<uint8_t>(6000, 0xCD));
    using WriteOp = std::tuple<uint64_t, uint64_t, uint64_t>; // wr_id, from (a), to (b)
    for (const auto& [wrId, from, to] : {WriteOp{1, 100000, 300000}, WriteOp{2, 0, 200000}})
    {
        RdmaSendWr w = Wr(wrId, RdmaWrOpcode::RDMA_WRITE, {a.Sge(from, 6000)});
        w.rdma.remote_addr = kRegionBase + to;
        w.rdma.rkey = b.mr->GetRkey();
        ASSERT_EQ(a.qp->PostSend(w), 0);
    }
    RunFor(MilliSeconds(1));
    const auto wc = a.sendCq->Poll(10);
    ASSERT_EQ(wc.size(), 2u);
    EXPECT_EQ(wc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(wc[1].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.Read(300000, 6000), TestBytes(6000, 10));
    EXPECT_EQ(b.Read(200000, 6000), src);
    // Every received RoCE frame, materialized for the sniffer: the IPv4 total length covers
    // the whole packet and the ICRC (annex A17.4.5.3) is right over the zeros too.
    uint32_t roce = 0;
    for (const auto& f : log.rx)
    {
        const uint8_t* ip = f.data() + kEthHeaderBytes;
        if (f.size() < kEthHeaderBytes + 28 || ip[9] != kIpProtoUdp ||
            ((ip[22] << 8) | ip[23]) != 4791)
        {
            continue;
        }
        const uint32_t ipLen = (uint32_t(ip[2]) << 8) | ip[3];
        ASSERT_LE(kEthHeaderBytes + ipLen, f.size());
        EXPECT_EQ(IbLoadIcrc(ip + ipLen - kIbIcrcSize), IbComputeRoceIcrc(ip, ipLen - kIbIcrcSize))
            << "frame " << roce;
        ++roce;
    }
    EXPECT_GE(roce, 12u); // two messages of six packets (and their ACKs' frames go the other way)
    EXPECT_EQ(b.hca.port->GetDropCount(RoceDropReason::Malformed), 0u);
}

namespace
{
/// Per received RoCE frame: its length and the transport bytes after the BTH (and RETH),
/// and whether its ICRC is right over the materialized bytes.
struct RoceRx
{
    size_t length;
    std::vector<uint8_t> afterHeaders;
    bool icrcGood;
};

std::vector<RoceRx>
RoceFramesOf(const std::vector<std::vector<uint8_t>>& frames)
{
    std::vector<RoceRx> out;
    for (const auto& f : frames)
    {
        const uint8_t* ip = f.data() + kEthHeaderBytes;
        if (f.size() < kEthHeaderBytes + 40 || ip[9] != kIpProtoUdp ||
            ((ip[22] << 8) | ip[23]) != 4791)
        {
            continue;
        }
        const uint32_t ipLen = (uint32_t(ip[2]) << 8) | ip[3];
        const uint8_t* bth = ip + 28;
        const uint32_t headers = 12 + ((bth[0] == 0x06 || bth[0] == 0x0A) ? 16 : 0); // RETH
        const uint8_t* end = ip + ipLen - kIbIcrcSize;
        out.push_back({f.size(), std::vector<uint8_t>(bth + headers, end),
                       IbLoadIcrc(end) == IbComputeRoceIcrc(ip, ipLen - kIbIcrcSize)});
    }
    return out;
}
} // namespace

TEST_F(RoceRdma, MemoryThatReadsAsZerosPutsTheSameFramesOnTheWire)
{
    // The same WRITE (5001 bytes: four full packets and one of 905, padded to 908) and SEND
    // (3003 bytes) twice: from ordinary memory holding zeros, and from memory that reads as
    // zeros, whose payload the engine never builds (a zero tail, RdmaLinkPort::Send). The
    // receiver must get the same frames (lengths, payload bytes, good ICRCs over the zeros),
    // write zeros over memory that held 0xCD, and the sender count the same bytes.
    Build(MakeTwoHostsOneSwitch());
    QpOptions o;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 1, o);
    RoceSide z; // host 0 again, its PD over memory that reads as zeros (as load runs' flows)
    z.pd = hcas[0].device->AllocPd(CreateObject<RdmaNullMemory>());
    z.mr = hcas[0].device->RegMr(z.pd, kRegionBase, kRegionBytes, o.mrAccess);
    ASSERT_TRUE(z.mr);
    z.sendCq = hcas[0].device->CreateCq(64);
    z.recvCq = hcas[0].device->CreateCq(64);
    MakeSide(z, 0, o);
    RoceSide y = b; // host 1 again: b's memory and CQs, a QP of its own
    MakeSide(y, 1, o);
    Connect(z.qp, GidOf(1), y.qp->GetQpNum(), o);
    Connect(y.qp, GidOf(0), z.qp->GetQpNum(), o);
    FrameLog log;
    fabric.HostPort(1)->AddSniffer(MakeCallback(&FrameLog::On, &log));
    std::vector<std::vector<RoceRx>> seen;
    std::vector<uint64_t> bytesSent;
    for (RoceSide* from : {&a, &z})
    {
        RoceSide& to = from == &a ? b : y;
        b.Write(200000, std::vector<uint8_t>(5001, 0xCD));
        b.Write(400000, std::vector<uint8_t>(3003, 0xCD));
        ASSERT_EQ(to.PostRecv(7, 400000, 3003), 0);
        RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {from->Sge(0, 5001)});
        w.rdma.remote_addr = kRegionBase + 200000;
        w.rdma.rkey = b.mr->GetRkey();
        ASSERT_EQ(from->qp->PostSend(w), 0);
        ASSERT_EQ(from->qp->PostSend(Wr(2, RdmaWrOpcode::SEND, {from->Sge(8192, 3003)})), 0);
        const uint64_t before = hcas[0].engine->GetCounters().bytesSent;
        log.rx.clear();
        RunFor(Simulator::Now() + MilliSeconds(1));
        const auto wc = from->sendCq->Poll(10);
        ASSERT_EQ(wc.size(), 2u);
        EXPECT_EQ(wc[0].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(wc[1].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(b.Read(200000, 5001), std::vector<uint8_t>(5001, 0));
        EXPECT_EQ(b.Read(400000, 3003), std::vector<uint8_t>(3003, 0));
        seen.push_back(RoceFramesOf(log.rx));
        bytesSent.push_back(hcas[0].engine->GetCounters().bytesSent - before);
    }
    ASSERT_EQ(seen[0].size(), 8u); // 5 WRITE packets and 3 SEND packets
    ASSERT_EQ(seen[1].size(), seen[0].size());
    for (size_t i = 0; i < seen[0].size(); ++i)
    {
        EXPECT_EQ(seen[1][i].length, seen[0][i].length) << "frame " << i;
        EXPECT_EQ(seen[1][i].afterHeaders, seen[0][i].afterHeaders) << "frame " << i;
        EXPECT_TRUE(seen[0][i].icrcGood && seen[1][i].icrcGood) << "frame " << i;
    }
    EXPECT_EQ(bytesSent[1], bytesSent[0]);
    EXPECT_EQ(b.hca.port->GetDropCount(RoceDropReason::Malformed), 0u);
}

TEST_F(RoceRdma, EncapsulationFieldsOnTheWire)
{
    Build(MakeTwoHostsOneSwitch());
    QpOptions o;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 1, o);
    RoceSide a2;
    RoceSide b2;
    a2.pd = a.pd; // a second QP pair on the same hosts
    a2.mr = a.mr;
    a2.sendCq = a.sendCq;
    a2.recvCq = a.recvCq;
    b2.pd = b.pd;
    b2.mr = b.mr;
    b2.sendCq = b.sendCq;
    b2.recvCq = b.recvCq;
    Pair(a2, 0, b2, 1, o);
    FrameLog log;
    fabric.HostPort(0)->AddSniffer(MakeCallback(&FrameLog::On, &log));
    a.Write(0, TestBytes(5000, 4));
    for (auto* s : {&a, &a2})
    {
        RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 5000)});
        w.rdma.remote_addr = kRegionBase;
        w.rdma.rkey = b.mr->GetRkey();
        ASSERT_EQ(s->qp->PostSend(w), 0);
    }
    RunFor(MilliSeconds(1));
    ASSERT_FALSE(log.tx.empty());
    std::map<uint32_t, std::set<uint16_t>> portsByQp;
    const uint32_t ipA = fabric.HostIp(0);
    const uint32_t ipB = fabric.HostIp(1);
    for (const auto& f : log.tx)
    {
        // Ethernet II, IPv4 (RFC 791), UDP to 4791 (annex A17.4.5.1), BTH.
        ASSERT_GE(f.size(), 14u + 20 + 8 + 12 + 4);
        EXPECT_EQ((f[12] << 8) | f[13], 0x0800);
        const uint8_t* ip = f.data() + 14;
        EXPECT_EQ(ip[0], 0x45);
        EXPECT_EQ(ip[1] >> 2, 26);       // Dscp default
        EXPECT_EQ(ip[1] & 3, kEcnEct0);  // ECN-capable
        EXPECT_EQ(ip[9], 17);
        EXPECT_EQ(Be32(ip + 12), ipA);
        EXPECT_EQ(Be32(ip + 16), ipB);
        const uint8_t* udp = ip + 20;
        const uint16_t sport = (udp[0] << 8) | udp[1];
        EXPECT_EQ((udp[2] << 8) | udp[3], 4791);
        EXPECT_GE(sport, 0xC000);
        const uint16_t ipLen = (ip[2] << 8) | ip[3];
        const uint8_t* bth = udp + 8;
        const uint32_t dqp = Be32(bth + 4) & 0xFFFFFF;
        portsByQp[dqp].insert(sport);
        // The ICRC over this capture, recomputed here with the masking of annex A17.
        EXPECT_EQ(IbLoadIcrc(ip + ipLen - 4), IbComputeRoceIcrc(ip, ipLen - 4));
    }
    // One source port per QP (ECMP keeps a QP on one path), different for the two QPs.
    ASSERT_EQ(portsByQp.size(), 2u);
    EXPECT_EQ(portsByQp[b.qp->GetQpNum()].size(), 1u);
    EXPECT_EQ(portsByQp[b2.qp->GetQpNum()].size(), 1u);
    EXPECT_NE(*portsByQp[b.qp->GetQpNum()].begin(), *portsByQp[b2.qp->GetQpNum()].begin());
}

TEST_F(RoceRdma, UdReceiveBufferHoldsTheIpv4HeaderInTheGrhArea)
{
    Build(MakeTwoHostsOneSwitch());
    QpOptions o;
    o.type = RdmaQpType::UD;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 1, o);
    const auto data = TestBytes(100, 9);
    a.Write(0, data);
    ASSERT_EQ(b.PostRecv(1, 0, 140), 0);
    RdmaAhAttr av;
    av.port_num = 1;
    av.is_global = 1;
    av.grh.dgid = GidOf(1);
    av.grh.hop_limit = 64;
    Ptr<RdmaAh> ah = a.hca.device->CreateAh(a.pd, av);
    ASSERT_TRUE(ah) << a.hca.device->GetLastError();
    RdmaSendWr w = Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 100)});
    w.ud.ah = PeekPointer(ah);
    w.ud.remote_qpn = b.qp->GetQpNum();
    w.ud.remote_qkey = o.qkey;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(1));
    auto rc = b.recvCq->Poll(10);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_TRUE(rc[0].wc_flags & RDMA_WC_GRH);
    EXPECT_EQ(rc[0].network_hdr_type, RDMA_NETWORK_IPV4); // annex A17.4.5.1
    EXPECT_EQ(rc[0].src_qp, a.qp->GetQpNum());
    const auto grh = b.Read(0, 40);
    // Annex A17.4.5.1: IPv4 header in bytes 20..39; bytes 0..19 undefined.
    EXPECT_EQ(grh[20], 0x45);
    EXPECT_EQ((grh[22] << 8) | grh[23], 20 + 8 + 12 + 8 + 100 + 4); // IP total length
    EXPECT_EQ(Be32(grh.data() + 32), fabric.HostIp(0));
    EXPECT_EQ(Be32(grh.data() + 36), fabric.HostIp(1));
    EXPECT_EQ(b.Read(40, 100), data);
}

TEST_F(RoceRdma, CorruptIcrcAndForeignDatagramsAreCountedNotDelivered)
{
    Build(MakeTwoHostsOneSwitch());
    QpOptions o;
    RoceSide a;
    RoceSide b;
    Pair(a, 0, b, 1, o);
    FrameLog log;
    fabric.HostPort(1)->AddSniffer(MakeCallback(&FrameLog::On, &log));
    a.Write(0, TestBytes(2000, 5));
    ASSERT_EQ(b.PostRecv(1, 0, 4000), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 2000)})), 0);
    RunFor(MilliSeconds(1));
    ASSERT_EQ(b.recvCq->Poll(10).size(), 1u);
    ASSERT_FALSE(log.rx.empty());
    const uint64_t delivered = b.hca.engine->GetCounters().packetsReceived;

    auto inject = [&](std::vector<uint8_t> f) {
        f.resize(std::max<size_t>(f.size(), 60));
        const uint32_t fcs = EthCrc32(f.data(), f.size());
        for (int i = 0; i < 4; ++i)
        {
            f.push_back(static_cast<uint8_t>(fcs >> (8 * i)));
        }
        fabric.HostPort(1)->InjectReceivedBytes(f.data(), static_cast<uint32_t>(f.size()));
    };
    // 1. A payload byte flipped and the FCS made good again: only the ICRC can notice.
    std::vector<uint8_t> bad = log.rx.front();
    bad[14 + 20 + 8 + 12 + 5] ^= 0x01;
    inject(bad);
    // 2. The same datagram to another UDP port (IPv4 checksum unchanged, UDP checksum 0).
    std::vector<uint8_t> other = log.rx.front();
    other[14 + 20 + 2] = 0x12;
    other[14 + 20 + 3] = 0x34;
    inject(other);
    // 3. A RoCE datagram too short to hold a BTH and ICRC.
    std::vector<uint8_t> runt(log.rx.front().begin(), log.rx.front().begin() + 14 + 20 + 8 + 6);
    runt[14 + 2] = 0;
    runt[14 + 3] = 20 + 8 + 6;
    runt[14 + 20 + 4] = 0;
    runt[14 + 20 + 5] = 8 + 6;
    runt[14 + 10] = runt[14 + 11] = 0;
    const uint16_t ck = InternetChecksum(runt.data() + 14, 20);
    runt[14 + 10] = static_cast<uint8_t>(ck >> 8);
    runt[14 + 11] = static_cast<uint8_t>(ck);
    inject(runt);
    RunFor(MilliSeconds(1));
    EXPECT_EQ(b.hca.port->GetDropCount(RoceDropReason::BadIcrc), 1u);
    EXPECT_EQ(b.hca.port->GetDropCount(RoceDropReason::NotRoce), 1u);
    EXPECT_EQ(b.hca.port->GetDropCount(RoceDropReason::Malformed), 1u);
    EXPECT_EQ(b.hca.engine->GetCounters().packetsReceived, delivered);
    EXPECT_EQ(b.recvCq->Poll(10).size(), 0u);
}

TEST_F(RoceRdma, PcapDecodesInTsharkAsPfcAndInfinibandOverUdp4791WithGoodIcrcs)
{
    // Three writers into one reader through a switch with a small buffer: PFC on priority 3
    // pauses the writers' ports (the MMU's XOFF), and RoCE carries the data.
    Build(MakeStar(4), RoceHelper(), [](EthFabricHelper& h) {
        h.SetMmuAttribute("BufferBytes", UintegerValue(256 * 1024));
    });
    const std::string dir = FreshDir("roce-rdma-pcap");
    std::vector<Ptr<PcapFileWrapper>> files;
    for (uint32_t i = 0; i < 4; ++i)
    {
        files.push_back(EthPcapHelper::Enable(fabric.HostPort(i),
                                              dir + "/h" + std::to_string(i) + ".pcap"));
    }
    QpOptions o;
    std::vector<RoceSide> w(3);
    std::vector<RoceSide> r(3);
    for (uint32_t i = 0; i < 3; ++i)
    {
        if (i > 0)
        {
            r[i].pd = r[0].pd;
            r[i].mr = r[0].mr;
            r[i].sendCq = r[0].sendCq;
            r[i].recvCq = r[0].recvCq;
        }
        Pair(w[i], i + 1, r[i], 0, o);
        const auto d = TestBytes(300000, 10 + i);
        w[i].Write(0, d);
        RdmaSendWr wr = Wr(i, RdmaWrOpcode::RDMA_WRITE, {w[i].Sge(0, 300000)});
        wr.rdma.remote_addr = kRegionBase + 400000 * i;
        wr.rdma.rkey = r[0].mr->GetRkey();
        ASSERT_EQ(w[i].qp->PostSend(wr), 0);
    }
    RunFor(MilliSeconds(3));
    for (uint32_t i = 0; i < 3; ++i)
    {
        auto sc = w[i].sendCq->Poll(10);
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(r[0].Read(400000 * i, 300000), TestBytes(300000, 10 + i));
    }
    uint64_t pauses = 0;
    for (uint32_t i = 1; i < 4; ++i)
    {
        pauses += fabric.HostPort(i)->GetCounters().pfcFramesReceived;
    }
    ASSERT_GT(pauses, 0u) << "the scenario must exercise PFC";
    files.clear();
    Simulator::Destroy(); // flushes the pcaps

    uint64_t roce = 0;
    uint64_t pfc = 0;
    for (uint32_t i = 0; i < 4; ++i)
    {
        const std::string path = dir + "/h" + std::to_string(i) + ".pcap";
        int status = -1;
        const auto bad = TsharkFieldRows(
            path, {"frame.number"}, "-Y '_ws.malformed || _ws.expert.severity >= error'",
            &status);
        EXPECT_EQ(status, 0);
        EXPECT_TRUE(bad.empty()) << path << ": " << bad.size() << " bad frames";
        const auto rows = TsharkFieldRows(path,
                                          {"udp.dstport", "infiniband.bth.opcode",
                                           "infiniband.bth.destqp", "infiniband.bth.psn",
                                           "infiniband.bth.p_key", "ip.src"},
                                          "-Y udp",
                                          &status);
        ASSERT_EQ(status, 0);
        for (const auto& row : rows)
        {
            ASSERT_EQ(row.size(), 6u);
            EXPECT_EQ(row[0], "4791");
            ASSERT_FALSE(row[1].empty()) << "not decoded as InfiniBand";
            const unsigned long op = std::stoul(row[1]);
            // RC WRITE first/middle/last (6-8), ACK (17) — nothing else in this run.
            EXPECT_TRUE((op >= 6 && op <= 8) || op == 17) << op;
            EXPECT_EQ(std::stoul(row[4], nullptr, 0), 0xFFFFul);
            const unsigned long dqp = std::stoul(row[2], nullptr, 0);
            bool known = false;
            for (uint32_t k = 0; k < 3; ++k)
            {
                known |= dqp == w[k].qp->GetQpNum() || dqp == r[k].qp->GetQpNum();
            }
            EXPECT_TRUE(known) << dqp;
            roce++;
        }
        pfc += TsharkFieldRows(path, {"frame.number"}, "-Y 'macc.opcode == 0x0101'", &status)
                   .size();
        const TraceCheckReport rep = CheckTrace(path);
        EXPECT_TRUE(rep.ok()) << rep.Summary();
        EXPECT_GT(rep.crcsChecked, 0u);
    }
    EXPECT_GT(roce, 3u * 300000 / 1024);
    EXPECT_GT(pfc, 0u);
}
