// RoCEv2 twin of rdma-engine-fixture.h: hosts on an Ethernet fabric with a RoCE NIC each, a PD,
// a 4 MiB registered region, CQs and one QP per host connected by GID (IPv4-mapped).
#ifndef CNUAS_TESTS_ROCE_RDMA_FIXTURE_H
#define CNUAS_TESTS_ROCE_RDMA_FIXTURE_H

#include "rdma-engine-fixture.h"

#include "helpers/roce/roce-helper.h"

#include "ns3/uinteger.h"

#include <cstring>
#include <functional>

namespace cnuas_test
{

using namespace ns3;

/// One host's verbs objects on RoCE.
struct RoceSide
{
    RoceHca hca;
    Ptr<RdmaPd> pd;
    Ptr<RdmaMr> mr;
    Ptr<RdmaCq> sendCq;
    Ptr<RdmaCq> recvCq;
    Ptr<RdmaQp> qp;

    std::vector<uint8_t> Read(uint64_t offset, uint64_t len) const
    {
        std::vector<uint8_t> out(len);
        hca.memory->Read(kRegionBase + offset, out.data(), len);
        return out;
    }

    void Write(uint64_t offset, const std::vector<uint8_t>& data) const
    {
        hca.memory->Write(kRegionBase + offset, data.data(), data.size());
    }

    RdmaSge Sge(uint64_t offset, uint32_t len) const
    {
        return RdmaSge{kRegionBase + offset, len, mr->GetLkey()};
    }

    int PostRecv(uint64_t wrId, uint64_t offset, uint32_t len) const
    {
        RdmaRecvWr wr;
        wr.wr_id = wrId;
        wr.sg_list = {Sge(offset, len)};
        return qp->PostRecv(wr);
    }
};

/// Hosts on an Ethernet fabric (default: two hosts, one switch), RoCE NICs, QPs on demand.
class RocePairTest : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        Simulator::Destroy();
    }

    void Build(const Topology& t,
               const RoceHelper& helper = RoceHelper(),
               std::function<void(EthFabricHelper&)> configure = nullptr)
    {
        EthFabricHelper fh;
        fh.SetHostLinkRate(DataRate("40Gbps"));
        fh.SetFabricLinkRate(DataRate("40Gbps"));
        fh.SetPortAttribute("Mtu", UintegerValue(1500));
        if (configure)
        {
            configure(fh);
        }
        fabric = fh.Build(t);
        hcas = helper.Install(fabric);
    }

    void MakeSide(RoceSide& s, uint32_t host, const QpOptions& o)
    {
        s.hca = hcas[host];
        if (!s.pd)
        {
            s.hca.memory->Map(kRegionBase, kRegionBytes);
            s.pd = s.hca.device->AllocPd(s.hca.memory);
            s.mr = s.hca.device->RegMr(s.pd, kRegionBase, kRegionBytes, o.mrAccess);
            ASSERT_TRUE(s.mr) << s.hca.device->GetLastError();
            s.sendCq = s.hca.device->CreateCq(8192);
            s.recvCq = s.hca.device->CreateCq(8192);
        }
        RdmaQpInitAttr init;
        init.send_cq = s.sendCq;
        init.recv_cq = s.recvCq;
        init.qp_type = o.type;
        init.cap.max_send_wr = o.sqDepth;
        init.cap.max_recv_wr = o.rqDepth;
        init.cap.max_send_sge = 4;
        init.cap.max_recv_sge = 4;
        init.cap.max_inline_data = 256;
        s.qp = s.hca.device->CreateQp(s.pd, init);
        ASSERT_TRUE(s.qp) << s.hca.device->GetLastError();
    }

    /// RESET -> INIT -> RTR -> RTS (ConnectQp); the destination is addressed by its GID.
    void Connect(Ptr<RdmaQp> qp, const RdmaGid& dgid, uint32_t destQpn, const QpOptions& o)
    {
        ASSERT_EQ(TryConnectQp(qp, RdmaGidAddress(dgid, 64), destQpn,
                               QpConnectOptions(o, o.sqPsn)),
                  "");
    }

    /// GID index 0 is the IPv4-mapped GID, index 1 the port's IPv6 address.
    RdmaGid GidOf(uint32_t host, uint8_t index = 0) const
    {
        RdmaGid g{};
        EXPECT_TRUE(hcas[host].port->GetGid(index, g)) << "host " << host << " GID " << +index;
        return g;
    }

    /// A connected QP pair between hosts x and y, addressed by GID `gidIndex` (1: IPv6).
    void Pair(RoceSide& x, uint32_t hx, RoceSide& y, uint32_t hy, const QpOptions& o,
              uint8_t gidIndex = 0)
    {
        MakeSide(x, hx, o);
        MakeSide(y, hy, o);
        Connect(x.qp, GidOf(hy, gidIndex), y.qp->GetQpNum(), o);
        Connect(y.qp, GidOf(hx, gidIndex), x.qp->GetQpNum(), o);
    }

    void RunFor(Time t)
    {
        Simulator::Stop(t);
        Simulator::Run();
    }

    static uint64_t Load64(const std::vector<uint8_t>& v)
    {
        uint64_t x;
        std::memcpy(&x, v.data(), 8);
        return x;
    }

    /**
     * On a connected RC pair: a SENDs 10000 bytes, WRITEs 70001, READs 33333 from b and runs a
     * fetch-and-add and a compare-and-swap on b's memory; after 2 ms every completion is
     * checked in order and every byte compared (`seed`, +1, +2 make the data).
     */
    void ExpectSendWriteReadAtomics(RoceSide& a, RoceSide& b, uint32_t seed)
    {
        const auto msg = TestBytes(10000, seed);
        const auto wdata = TestBytes(70001, seed + 1);
        const auto rdata = TestBytes(33333, seed + 2);
        a.Write(0, msg);
        a.Write(100000, wdata);
        b.Write(300000, rdata);
        const uint64_t v0 = 0x0123456789ABCDEFULL;
        std::vector<uint8_t> init(8);
        std::memcpy(init.data(), &v0, 8);
        b.Write(4096 * 200, init);
        ASSERT_EQ(b.PostRecv(50, 500000, 20000), 0);
        ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 10000)})), 0);
        RdmaSendWr w = Wr(2, RdmaWrOpcode::RDMA_WRITE, {a.Sge(100000, 70001)});
        w.rdma.remote_addr = kRegionBase + 1000001;
        w.rdma.rkey = b.mr->GetRkey();
        ASSERT_EQ(a.qp->PostSend(w), 0);
        RdmaSendWr r = Wr(3, RdmaWrOpcode::RDMA_READ, {a.Sge(2000000, 33333)});
        r.rdma.remote_addr = kRegionBase + 300000;
        r.rdma.rkey = b.mr->GetRkey();
        ASSERT_EQ(a.qp->PostSend(r), 0);
        RdmaSendWr fa = Wr(4, RdmaWrOpcode::ATOMIC_FETCH_AND_ADD, {a.Sge(3000000, 8)});
        fa.atomic.remote_addr = kRegionBase + 4096 * 200;
        fa.atomic.rkey = b.mr->GetRkey();
        fa.atomic.compare_add = 0x10;
        ASSERT_EQ(a.qp->PostSend(fa), 0);
        RdmaSendWr cs = Wr(5, RdmaWrOpcode::ATOMIC_CMP_AND_SWP, {a.Sge(3000008, 8)});
        cs.atomic = fa.atomic;
        cs.atomic.compare_add = v0 + 0x10;
        cs.atomic.swap = 0xFEEDULL;
        ASSERT_EQ(a.qp->PostSend(cs), 0);
        RunFor(MilliSeconds(2));

        auto sc = a.sendCq->Poll(100);
        ASSERT_EQ(sc.size(), 5u);
        for (size_t i = 0; i < sc.size(); ++i)
        {
            EXPECT_EQ(sc[i].wr_id, i + 1);
            EXPECT_EQ(sc[i].status, RdmaWcStatus::SUCCESS) << i;
        }
        auto rc = b.recvCq->Poll(100);
        ASSERT_EQ(rc.size(), 1u);
        EXPECT_EQ(rc[0].byte_len, 10000u);
        EXPECT_EQ(b.Read(500000, 10000), msg);
        EXPECT_EQ(b.Read(1000001, 70001), wdata);
        EXPECT_EQ(a.Read(2000000, 33333), rdata);
        EXPECT_EQ(Load64(a.Read(3000000, 8)), v0);
        EXPECT_EQ(Load64(a.Read(3000008, 8)), v0 + 0x10);
        EXPECT_EQ(Load64(b.Read(4096 * 200, 8)), 0xFEEDULL);
        EXPECT_EQ(a.hca.engine->GetCounters().retransmittedPackets, 0u);
    }

    static RdmaSendWr Wr(uint64_t id, RdmaWrOpcode op, std::vector<RdmaSge> sgl)
    {
        RdmaSendWr wr;
        wr.wr_id = id;
        wr.opcode = op;
        wr.sg_list = std::move(sgl);
        wr.send_flags = RDMA_SEND_SIGNALED;
        return wr;
    }

    EthFabric fabric;
    std::vector<RoceHca> hcas;
};

} // namespace cnuas_test

#endif
