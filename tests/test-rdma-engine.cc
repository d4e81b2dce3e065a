// The RDMA packet engine over the InfiniBand link layer: SEND/RECV, RDMA WRITE (with
// immediate), RDMA READ and both atomics on RC, UC and UD, data compared byte for byte with
// what was posted, packet counts and opcodes against the segmentation rules.
#include "rdma-engine-fixture.h"

#include "ns3/uinteger.h"

#include <cstring>
#include <map>

using namespace ns3;
using namespace cnuas_test;

namespace
{
/// Request packets a message of `len` bytes needs at `mtu` (IBA vol. 1 §9.7.2, computed
/// independently of the engine).
uint32_t
ExpectedPackets(uint64_t len, uint32_t mtu)
{
    return len == 0 ? 1 : static_cast<uint32_t>((len + mtu - 1) / mtu);
}

/// Records the opcodes and PSNs an engine sends.
struct SentLog
{
    std::vector<std::pair<uint8_t, uint32_t>> packets;
    std::vector<uint32_t> sizes;

    void Attach(Ptr<RdmaEngine> e)
    {
        e->TraceConnectWithoutContext("PacketSent", MakeCallback(&SentLog::On, this));
    }

    void On(uint32_t, uint8_t op, uint32_t psn, uint32_t bytes, bool)
    {
        packets.emplace_back(op, psn);
        sizes.push_back(bytes);
    }
};
} // namespace

class RdmaEngineSend : public RdmaPairTest, public ::testing::WithParamInterface<RdmaMtu>
{
};

TEST_P(RdmaEngineSend, RcSendRecvEverySizeArrivesIntactAndSegmentedToTheMtu)
{
    QpOptions o;
    o.mtu = GetParam();
    Setup(o);
    const uint32_t mtu = RdmaMtuBytes(o.mtu);
    SentLog log;
    log.Attach(a.hca.engine);
    const std::vector<uint32_t> sizes = {0, 1, 3, 255, 256, 257, mtu - 1, mtu, mtu + 1, 4096,
                                         10000, 65536, 100003};
    uint64_t srcOff = 0;
    uint64_t dstOff = 0;
    std::vector<std::vector<uint8_t>> sent;
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        sent.push_back(TestBytes(sizes[i], static_cast<uint32_t>(i + 1)));
        a.Write(srcOff, sent.back());
        ASSERT_EQ(b.PostRecv(100 + i, dstOff, sizes[i] + 16), 0);
        ASSERT_EQ(a.qp->PostSend(Wr(i, RdmaWrOpcode::SEND, {a.Sge(srcOff, sizes[i])})), 0);
        srcOff += sizes[i] + 64;
        dstOff += sizes[i] + 64;
    }
    RunFor(MilliSeconds(5));
    auto sc = a.PollSend();
    auto rc = b.PollRecv();
    ASSERT_EQ(sc.size(), sizes.size());
    ASSERT_EQ(rc.size(), sizes.size());
    dstOff = 0;
    uint64_t requestPackets = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        EXPECT_EQ(sc[i].wr_id, i);
        EXPECT_EQ(sc[i].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(sc[i].opcode, RdmaWcOpcode::SEND);
        EXPECT_EQ(rc[i].wr_id, 100 + i);
        EXPECT_EQ(rc[i].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(rc[i].opcode, RdmaWcOpcode::RECV);
        EXPECT_EQ(rc[i].byte_len, sizes[i]);
        EXPECT_EQ(rc[i].src_qp, a.qp->GetQpNum());
        EXPECT_EQ(rc[i].slid, a.lid);
        EXPECT_EQ(b.Read(dstOff, sizes[i]), sent[i]) << "message " << i;
        dstOff += sizes[i] + 64;
        requestPackets += ExpectedPackets(sizes[i], mtu);
    }
    // Every request packet carries at most one MTU of payload, and PSNs run consecutively
    // from sq_psn across the 24-bit wrap.
    uint32_t psn = o.sqPsn;
    uint64_t requests = 0;
    for (size_t i = 0; i < log.packets.size(); ++i)
    {
        const auto [op, p] = log.packets[i];
        if (op > IbOpcode::kRcSendOnly)
        {
            continue;
        }
        EXPECT_EQ(p, psn) << "packet " << i;
        psn = (psn + 1) & 0xFFFFFF;
        EXPECT_LE(log.sizes[i], 12u + mtu + 3);
        requests++;
    }
    EXPECT_EQ(requests, requestPackets);
    EXPECT_EQ(a.hca.engine->GetCounters().retransmittedPackets, 0u);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::RTS);
}

INSTANTIATE_TEST_SUITE_P(Mtus,
                         RdmaEngineSend,
                         ::testing::Values(RdmaMtu::MTU_256,
                                           RdmaMtu::MTU_512,
                                           RdmaMtu::MTU_1024,
                                           RdmaMtu::MTU_2048,
                                           RdmaMtu::MTU_4096),
                         [](const ::testing::TestParamInfo<RdmaMtu>& p) {
                             return "Mtu" + std::to_string(RdmaMtuBytes(p.param));
                         });

class RdmaEngineOps : public RdmaPairTest
{
};

TEST_F(RdmaEngineOps, RcWriteAndWriteWithImmediatePlaceDataAndOnlyTheImmediateConsumesARecv)
{
    Setup();
    const auto data = TestBytes(70000, 7);
    const auto data2 = TestBytes(3000, 8);
    a.Write(0, data);
    a.Write(100000, data2);
    const auto before = b.Read(0, kRegionBytes);
    RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 40000), a.Sge(40000, 30000)});
    w.rdma.remote_addr = kRegionBase + 200000;
    w.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RdmaSendWr wi = Wr(2, RdmaWrOpcode::RDMA_WRITE_WITH_IMM, {a.Sge(100000, 3000)});
    wi.rdma.remote_addr = kRegionBase + 300001; // unaligned target
    wi.rdma.rkey = b.mr->GetRkey();
    wi.imm_data = 0xDEADBEEF;
    ASSERT_EQ(b.PostRecv(77, 0, 0), 0);
    ASSERT_EQ(a.qp->PostSend(wi), 0);
    RunFor(MilliSeconds(2));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(sc[0].opcode, RdmaWcOpcode::RDMA_WRITE);
    EXPECT_EQ(sc[1].status, RdmaWcStatus::SUCCESS);
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].wr_id, 77u);
    EXPECT_EQ(rc[0].opcode, RdmaWcOpcode::RECV_RDMA_WITH_IMM);
    EXPECT_EQ(rc[0].imm_data, 0xDEADBEEFu);
    EXPECT_TRUE(rc[0].wc_flags & RDMA_WC_WITH_IMM);
    EXPECT_EQ(rc[0].byte_len, 3000u);
    // Exactly the two target ranges changed, to the source bytes.
    auto after = b.Read(0, kRegionBytes);
    auto expected = before;
    std::copy(data.begin(), data.end(), expected.begin() + 200000);
    std::copy(data2.begin(), data2.end(), expected.begin() + 300001);
    EXPECT_TRUE(after == expected);
}

TEST_F(RdmaEngineOps, RcReadsFetchRemoteBytesWithSeveralOutstanding)
{
    QpOptions o;
    o.maxRdAtomic = 2;
    Setup(o);
    std::vector<std::vector<uint8_t>> remote;
    const std::vector<uint32_t> sizes = {0, 1, 1024, 1025, 50000, 7, 4096};
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        remote.push_back(TestBytes(sizes[i], 50 + i));
        b.Write(1000000 + i * 60000, remote.back());
    }
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        RdmaSendWr r = Wr(i, RdmaWrOpcode::RDMA_READ, {a.Sge(i * 60000, sizes[i])});
        r.rdma.remote_addr = kRegionBase + 1000000 + i * 60000;
        r.rdma.rkey = b.mr->GetRkey();
        ASSERT_EQ(a.qp->PostSend(r), 0);
    }
    // At most max_rd_atomic READs may be outstanding at once (IBA vol. 1 §9.5).
    struct Outstanding
    {
        uint32_t now = 0;
        uint32_t max = 0;

        void Sent(uint32_t, uint8_t op, uint32_t, uint32_t, bool retrans)
        {
            if (op == IbOpcode::kRcRdmaReadRequest && !retrans)
            {
                max = std::max(max, ++now);
            }
        }

        void Done(const RdmaWc&, bool)
        {
            --now;
        }
    } outstanding;
    a.hca.engine->TraceConnectWithoutContext("PacketSent",
                                             MakeCallback(&Outstanding::Sent, &outstanding));
    a.hca.engine->TraceConnectWithoutContext("Completion",
                                             MakeCallback(&Outstanding::Done, &outstanding));
    RunFor(MilliSeconds(2));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        EXPECT_EQ(sc[i].wr_id, i);
        EXPECT_EQ(sc[i].status, RdmaWcStatus::SUCCESS);
        EXPECT_EQ(sc[i].opcode, RdmaWcOpcode::RDMA_READ);
        EXPECT_EQ(a.Read(i * 60000, sizes[i]), remote[i]) << "read " << i;
    }
    EXPECT_EQ(outstanding.max, 2u);
}

TEST_F(RdmaEngineOps, RcAtomicsReturnTheOriginalAndUpdateTheTarget)
{
    Setup();
    const uint64_t v0 = 0x0123456789ABCDEFULL;
    std::vector<uint8_t> init(8);
    std::memcpy(init.data(), &v0, 8);
    b.Write(4096, init);
    auto atomic = [&](uint64_t id, RdmaWrOpcode op, uint64_t cmpAdd, uint64_t swap,
                      uint64_t localOff) {
        RdmaSendWr w = Wr(id, op, {a.Sge(localOff, 8)});
        w.atomic.remote_addr = kRegionBase + 4096;
        w.atomic.rkey = b.mr->GetRkey();
        w.atomic.compare_add = cmpAdd;
        w.atomic.swap = swap;
        ASSERT_EQ(a.qp->PostSend(w), 0);
    };
    atomic(1, RdmaWrOpcode::ATOMIC_FETCH_AND_ADD, 0x10, 0, 0);               // v0 -> v0+16
    atomic(2, RdmaWrOpcode::ATOMIC_CMP_AND_SWP, v0, 0x42, 8);               // mismatch: kept
    atomic(3, RdmaWrOpcode::ATOMIC_CMP_AND_SWP, v0 + 0x10, 0xFEEDULL, 16);  // match: swapped
    atomic(4, RdmaWrOpcode::ATOMIC_FETCH_AND_ADD, ~0ULL, 0, 24);            // wraps: -1
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 4u);
    EXPECT_EQ(sc[0].opcode, RdmaWcOpcode::FETCH_ADD);
    EXPECT_EQ(sc[1].opcode, RdmaWcOpcode::COMP_SWAP);
    for (auto& wc : sc)
    {
        EXPECT_EQ(wc.status, RdmaWcStatus::SUCCESS);
    }
    auto u64 = [](const std::vector<uint8_t>& v) {
        uint64_t x;
        std::memcpy(&x, v.data(), 8);
        return x;
    };
    EXPECT_EQ(u64(a.Read(0, 8)), v0);
    EXPECT_EQ(u64(a.Read(8, 8)), v0 + 0x10);
    EXPECT_EQ(u64(a.Read(16, 8)), v0 + 0x10);
    EXPECT_EQ(u64(a.Read(24, 8)), 0xFEEDULL);
    EXPECT_EQ(u64(b.Read(4096, 8)), 0xFEEDULL - 1);
}

TEST_F(RdmaEngineOps, UcSendWriteAndWriteWithImmediate)
{
    QpOptions o;
    o.type = RdmaQpType::UC;
    o.qpAccess = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE;
    Setup(o);
    const auto s = TestBytes(9000, 3);
    const auto w = TestBytes(5000, 4);
    a.Write(0, s);
    a.Write(20000, w);
    ASSERT_EQ(b.PostRecv(1, 0, 9000), 0);
    ASSERT_EQ(b.PostRecv(2, 0, 0), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(10, RdmaWrOpcode::SEND, {a.Sge(0, 9000)})), 0);
    RdmaSendWr wr = Wr(11, RdmaWrOpcode::RDMA_WRITE_WITH_IMM, {a.Sge(20000, 5000)});
    wr.rdma.remote_addr = kRegionBase + 50000;
    wr.rdma.rkey = b.mr->GetRkey();
    wr.imm_data = 99;
    ASSERT_EQ(a.qp->PostSend(wr), 0);
    RdmaSendWr plain = Wr(12, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 1000)});
    plain.rdma.remote_addr = kRegionBase + 70000;
    plain.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(plain), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 3u);
    for (auto& c : sc)
    {
        EXPECT_EQ(c.status, RdmaWcStatus::SUCCESS);
    }
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 2u);
    EXPECT_EQ(rc[0].byte_len, 9000u);
    EXPECT_EQ(rc[1].opcode, RdmaWcOpcode::RECV_RDMA_WITH_IMM);
    EXPECT_EQ(rc[1].imm_data, 99u);
    EXPECT_EQ(b.Read(0, 9000), s);
    EXPECT_EQ(b.Read(50000, 5000), w);
    EXPECT_EQ(b.Read(70000, 1000), std::vector<uint8_t>(s.begin(), s.begin() + 1000));
    // UC sends no acknowledgments.
    EXPECT_EQ(b.hca.engine->GetCounters().acksSent, 0u);
    EXPECT_EQ(b.hca.engine->GetCounters().packetsSent, 0u);
}

TEST_F(RdmaEngineOps, UdSendLeavesGrhSpaceChecksTheQkeyAndRefusesMoreThanOneMtu)
{
    QpOptions o;
    o.type = RdmaQpType::UD;
    Setup(o);
    const auto m1 = TestBytes(1000, 5);
    const auto m2 = TestBytes(4096, 6);
    a.Write(0, m1);
    a.Write(8192, m2);
    // A receive buffer filled with a marker: the GRH area stays untouched on a local (LNH 2)
    // packet.
    b.Write(0, std::vector<uint8_t>(20000, 0xA5));
    ASSERT_EQ(b.PostRecv(1, 0, 1040), 0);
    ASSERT_EQ(b.PostRecv(2, 2000, 4096 + 40), 0);
    ASSERT_EQ(b.PostRecv(3, 10000, 4096), 0);
    RdmaAhAttr av;
    av.dlid = b.lid;
    av.port_num = 1;
    Ptr<RdmaAh> ah = a.hca.device->CreateAh(a.pd, av);
    ASSERT_TRUE(ah);
    auto ud = [&](uint64_t id, uint64_t off, uint32_t len, uint32_t qkey, RdmaWrOpcode op) {
        RdmaSendWr w = Wr(id, op, {a.Sge(off, len)});
        w.ud.ah = PeekPointer(ah);
        w.ud.remote_qpn = b.qp->GetQpNum();
        w.ud.remote_qkey = qkey;
        w.imm_data = 0x1234;
        return a.qp->PostSend(w);
    };
    ASSERT_EQ(ud(1, 0, 1000, o.qkey, RdmaWrOpcode::SEND), 0);
    ASSERT_EQ(ud(2, 0, 1000, 0x22222222, RdmaWrOpcode::SEND), 0); // wrong Q_Key: dropped
    ASSERT_EQ(ud(3, 8192, 4096, o.qkey, RdmaWrOpcode::SEND_WITH_IMM), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 3u);
    for (auto& c : sc)
    {
        EXPECT_EQ(c.status, RdmaWcStatus::SUCCESS);
    }
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 2u);
    EXPECT_EQ(rc[0].wr_id, 1u);
    EXPECT_EQ(rc[0].byte_len, 1040u);
    EXPECT_EQ(rc[0].src_qp, a.qp->GetQpNum());
    EXPECT_EQ(rc[0].slid, a.lid);
    EXPECT_FALSE(rc[0].wc_flags & RDMA_WC_GRH);
    EXPECT_EQ(b.Read(0, 40), std::vector<uint8_t>(40, 0xA5));
    EXPECT_EQ(b.Read(40, 1000), m1);
    EXPECT_EQ(rc[1].wr_id, 2u);
    EXPECT_EQ(rc[1].byte_len, 4136u);
    EXPECT_EQ(rc[1].imm_data, 0x1234u);
    EXPECT_EQ(b.Read(2040, 4096), m2);
    EXPECT_EQ(b.hca.engine->GetCounters().qkeyViolations, 1u);
    EXPECT_EQ(b.hca.engine->GetDropCount(RdmaDropReason::QkeyMismatch), 1u);

    // A message above the MTU cannot be one UD packet: LOC_LEN_ERR, and the QP enters SQE.
    ASSERT_EQ(ud(4, 0, 4097, o.qkey, RdmaWrOpcode::SEND), 0);
    RunFor(MilliSeconds(1));
    sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::LOC_LEN_ERR);
    EXPECT_EQ(a.qp->GetState(), RdmaQpState::SQE);
}

TEST_F(RdmaEngineOps, UdGlobalAddressPutsTheGrhInTheFirst40BytesOfTheBuffer)
{
    QpOptions o;
    o.type = RdmaQpType::UD;
    Setup(o);
    a.Write(0, TestBytes(100, 9));
    ASSERT_EQ(b.PostRecv(1, 0, 140), 0);
    RdmaAhAttr av;
    av.dlid = b.lid;
    av.port_num = 1;
    av.is_global = 1;
    b.hca.port->GetGid(0, av.grh.dgid);
    av.grh.hop_limit = 64;
    av.grh.traffic_class = 0x20;
    av.grh.flow_label = 0x12345;
    Ptr<RdmaAh> ah = a.hca.device->CreateAh(a.pd, av);
    ASSERT_TRUE(ah) << a.hca.device->GetLastError();
    RdmaSendWr w = Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 100)});
    w.ud.ah = PeekPointer(ah);
    w.ud.remote_qpn = b.qp->GetQpNum();
    w.ud.remote_qkey = o.qkey;
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(1));
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_TRUE(rc[0].wc_flags & RDMA_WC_GRH);
    const auto grh = b.Read(0, 40);
    // IBA vol. 1 §8.3: IPVer 6, TClass, FlowLabel; PayLen = BTH+DETH+payload+ICRC; NxtHdr 0x1B;
    // HopLmt; SGID = a's port GID; DGID = b's.
    EXPECT_EQ(grh[0] >> 4, 6);
    EXPECT_EQ(((grh[0] & 0xF) << 4) | (grh[1] >> 4), 0x20);
    EXPECT_EQ(((grh[1] & 0xF) << 16) | (grh[2] << 8) | grh[3], 0x12345);
    EXPECT_EQ((grh[4] << 8) | grh[5], 12 + 8 + 100 + 4);
    EXPECT_EQ(grh[6], 0x1B);
    EXPECT_EQ(grh[7], 64);
    RdmaGid ga;
    a.hca.port->GetGid(0, ga);
    EXPECT_TRUE(std::equal(ga.begin(), ga.end(), grh.begin() + 8));
    EXPECT_TRUE(std::equal(av.grh.dgid.begin(), av.grh.dgid.end(), grh.begin() + 24));
    EXPECT_EQ(b.Read(40, 100), TestBytes(100, 9));
}

TEST_F(RdmaEngineOps, RcInlineSendAndUnsignaledWrsCompleteOnlyWhenAsked)
{
    Setup();
    a.Write(0, TestBytes(200, 11));
    for (int i = 0; i < 3; ++i)
    {
        ASSERT_EQ(b.PostRecv(i, i * 256, 256), 0);
    }
    RdmaSendWr w = Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 200)});
    w.send_flags = RDMA_SEND_INLINE; // unsignaled
    ASSERT_EQ(a.qp->PostSend(w), 0);
    a.Write(0, std::vector<uint8_t>(200, 0)); // inline data was copied at post time
    RdmaSendWr w2 = Wr(2, RdmaWrOpcode::SEND, {a.Sge(0, 10)});
    w2.send_flags = 0;
    ASSERT_EQ(a.qp->PostSend(w2), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(3, RdmaWrOpcode::SEND_WITH_IMM, {a.Sge(0, 10)})), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].wr_id, 3u);
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), 3u);
    EXPECT_EQ(b.Read(0, 200), TestBytes(200, 11));
    EXPECT_TRUE(rc[2].wc_flags & RDMA_WC_WITH_IMM);
}

TEST_F(RdmaEngineOps, AThousandQpsEachSendingOneMessageAllComplete)
{
    Setup();
    std::vector<Ptr<RdmaQp>> qa;
    std::vector<Ptr<RdmaQp>> qb;
    const uint32_t n = 1000;
    for (uint32_t i = 0; i < n; ++i)
    {
        qa.push_back(CreateQp(a, opts));
        qb.push_back(CreateQp(b, opts));
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        Connect(qa[i], b.lid, qb[i]->GetQpNum(), opts.sqPsn, opts);
        Connect(qb[i], a.lid, qa[i]->GetQpNum(), opts.sqPsn, opts);
        RdmaRecvWr r;
        r.wr_id = i;
        r.sg_list = {b.Sge(i * 64, 64)};
        ASSERT_EQ(qb[i]->PostRecv(r), 0);
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        a.Write(i * 64, TestBytes(64, i));
        ASSERT_EQ(qa[i]->PostSend(Wr(i, RdmaWrOpcode::SEND, {a.Sge(i * 64, 64)})), 0);
    }
    RunFor(MilliSeconds(5));
    EXPECT_EQ(a.PollSend().size(), n);
    auto rc = b.PollRecv();
    ASSERT_EQ(rc.size(), n);
    for (uint32_t i = 0; i < n; ++i)
    {
        EXPECT_EQ(b.Read(i * 64, 64), TestBytes(64, i));
    }
    // Idle QPs hold no timers: nothing is left pending once everything is acknowledged.
    EXPECT_EQ(a.hca.engine->GetCounters().timeouts, 0u);
}

TEST_F(RdmaEngineOps, RcOverAGlobalRouteCarriesAGrhAndWorks)
{
    QpOptions o;
    o.global = true;
    Setup(o);
    uint64_t global = 0;
    struct Lnh
    {
        uint64_t* n;

        void On(Time, const uint8_t* bytes, uint32_t len, bool tx)
        {
            // LRH byte 1, bits 1:0: LNH (IBA vol. 1 §7.7); 3 = GRH follows.
            if (tx && len > 8 && (bytes[1] & 0x3) == 3)
            {
                ++*n;
            }
        }
    } lnh{&global};
    fabric.HostPort(0)->AddSniffer(MakeCallback(&Lnh::On, &lnh));
    a.Write(0, TestBytes(5000, 21));
    ASSERT_EQ(b.PostRecv(1, 0, 5000), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 5000)})), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.Read(0, 5000), TestBytes(5000, 21));
    EXPECT_EQ(global, 5u); // 5 request packets at MTU 1024, each with a GRH
}

TEST_F(RdmaEngineOps, TwoQpsOfOneAdapterTalkThroughItsOwnLidWithoutTheWire)
{
    // An adapter turns a packet for its own LID round inside (the switch would not send it
    // back out of the port it came in on, IBA vol. 1 §18.2.4.3): RC and UD between two QPs of
    // one port work, as MPI libraries rely on (UCX wires a process to itself through its own
    // UD QP).
    BuildFabric();
    QpOptions o;
    MakeSide(a, 0, o);
    Ptr<RdmaQp> other = CreateQp(a, o);
    ASSERT_TRUE(other);
    Connect(a.qp, a.lid, other->GetQpNum(), o.sqPsn, o);
    Connect(other, a.lid, a.qp->GetQpNum(), o.sqPsn, o);
    const uint64_t wireBefore = a.hca.port->GetNetDevice()->GetCounters().portXmitPkts;
    const auto data = TestBytes(5000, 3);
    a.Write(0, data);
    RdmaRecvWr rw;
    rw.wr_id = 9;
    rw.sg_list = {a.Sge(100000, 8000)};
    ASSERT_EQ(other->PostRecv(rw), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 5000)})), 0);
    RdmaSendWr w = Wr(2, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 5000)});
    w.rdma.remote_addr = kRegionBase + 200000;
    w.rdma.rkey = a.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS) << RdmaWcStatusStr(sc[0].status);
    EXPECT_EQ(sc[1].status, RdmaWcStatus::SUCCESS) << RdmaWcStatusStr(sc[1].status);
    auto rc = a.PollRecv();
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].qp_num, other->GetQpNum());
    EXPECT_EQ(rc[0].byte_len, 5000u);
    EXPECT_EQ(rc[0].slid, a.lid);
    EXPECT_EQ(a.Read(100000, 5000), data);
    EXPECT_EQ(a.Read(200000, 5000), data);
    EXPECT_EQ(a.hca.port->GetNetDevice()->GetCounters().portXmitPkts, wireBefore)
        << "looped-back packets never reach the wire";
}
