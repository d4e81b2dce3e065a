// A two-host InfiniBand fabric (h0 - switch - h1) with an HCA on each host, a PD, a 4 MiB
// registered region, CQs and one connected (or UD) QP pair, for the packet-engine tests.
#ifndef CNUAS_TESTS_RDMA_ENGINE_FIXTURE_H
#define CNUAS_TESTS_RDMA_ENGINE_FIXTURE_H

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/rdma/rdma-qp-connect.h"

#include "ns3/pointer.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace cnuas_test
{

using namespace ns3;

/// Virtual address of each host's registered region (a realistic user-space address).
constexpr uint64_t kRegionBase = 0x7f3a12340000ULL;
constexpr uint64_t kRegionBytes = 4u << 20;

/// QP parameters a test may change.
struct QpOptions
{
    RdmaQpType type = RdmaQpType::RC;
    RdmaMtu mtu = RdmaMtu::MTU_1024;
    uint8_t timeout = 8;       ///< 4.096 us * 256 = 1.05 ms
    uint8_t retryCnt = 7;
    uint8_t rnrRetry = 7;
    uint8_t minRnrTimer = 1;   ///< 0.01 ms
    uint8_t maxRdAtomic = 4;
    uint32_t qpAccess = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                        RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC;
    uint32_t mrAccess = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                        RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC;
    uint32_t sqPsn = 0x00FFF0; ///< close to the 24-bit wrap, so tests cross it
    uint32_t qkey = 0x11111111;
    bool global = false;       ///< RC/UC address vectors with a GRH (LNH 3)
    uint32_t sqDepth = 512;
    uint32_t rqDepth = 512;
};

/// The ConnectQp options a test's QpOptions stand for.
inline RdmaQpConnectOptions
QpConnectOptions(const QpOptions& o, uint32_t rqPsn)
{
    RdmaQpConnectOptions c;
    c.mtu = o.mtu;
    c.access = o.qpAccess;
    c.qkey = o.qkey;
    c.sqPsn = o.sqPsn;
    c.rqPsn = rqPsn;
    c.timeout = o.timeout;
    c.retryCnt = o.retryCnt;
    c.rnrRetry = o.rnrRetry;
    c.minRnrTimer = o.minRnrTimer;
    c.maxRdAtomic = o.maxRdAtomic;
    return c;
}

/// One host's verbs objects.
struct Side
{
    RdmaHca hca;
    Ptr<RdmaPd> pd;
    Ptr<RdmaMr> mr;
    Ptr<RdmaCq> sendCq;
    Ptr<RdmaCq> recvCq;
    Ptr<RdmaQp> qp;
    uint16_t lid = 0;

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

    std::vector<RdmaWc> PollSend() const
    {
        return sendCq->Poll(1 << 20);
    }

    std::vector<RdmaWc> PollRecv() const
    {
        return recvCq->Poll(1 << 20);
    }

    int PostRecv(uint64_t wrId, uint64_t offset, uint32_t len) const
    {
        RdmaRecvWr wr;
        wr.wr_id = wrId;
        wr.sg_list = {Sge(offset, len)};
        return qp->PostRecv(wr);
    }
};

/// Deterministic pseudo-random bytes.
inline std::vector<uint8_t>
TestBytes(size_t n, uint32_t seed)
{
    std::vector<uint8_t> p(n);
    uint32_t x = seed * 2654435761u + 12345u;
    for (auto& b : p)
    {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = static_cast<uint8_t>(x);
    }
    return p;
}

/// Two hosts behind one switch, each with an HCA; Setup() creates and connects one QP each.
class RdmaPairTest : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        Simulator::Destroy();
    }

    /// Build the fabric and the HCAs; bring the ports Active.
    void BuildFabric(const RdmaHelper& helper = RdmaHelper())
    {
        fabric = IbFabricHelper().Build(BuildTopologyFromSpec("pair"));
        subnet.Configure(fabric.nodes);
        hcas = helper.Install(fabric);
        RunFor(MicroSeconds(10)); // training + Init -> Armed -> Active
    }

    void MakeSide(Side& s, uint32_t host, const QpOptions& o)
    {
        s.hca = hcas[host];
        s.lid = subnet.GetLid(fabric.hosts.Get(host));
        s.hca.memory->Map(kRegionBase, kRegionBytes);
        s.pd = s.hca.device->AllocPd(s.hca.memory);
        s.mr = s.hca.device->RegMr(s.pd, kRegionBase, kRegionBytes, o.mrAccess);
        ASSERT_TRUE(s.mr) << s.hca.device->GetLastError();
        s.sendCq = s.hca.device->CreateCq(4096);
        s.recvCq = s.hca.device->CreateCq(4096);
        s.qp = CreateQp(s, o);
        ASSERT_TRUE(s.qp) << s.hca.device->GetLastError();
    }

    Ptr<RdmaQp> CreateQp(Side& s, const QpOptions& o)
    {
        RdmaQpInitAttr init;
        init.send_cq = s.sendCq;
        init.recv_cq = s.recvCq;
        init.qp_type = o.type;
        init.cap.max_send_wr = o.sqDepth;
        init.cap.max_recv_wr = o.rqDepth;
        init.cap.max_send_sge = 4;
        init.cap.max_recv_sge = 4;
        init.cap.max_inline_data = 256;
        return s.hca.device->CreateQp(s.pd, init);
    }

    /// RESET -> INIT -> RTR -> RTS (ConnectQp) towards the port with LID `dlid`; with
    /// o.global the address vector also carries that port's GID (a GRH, LNH 3).
    void Connect(Ptr<RdmaQp> qp, uint16_t dlid, uint32_t destQpn, uint32_t rqPsn,
                 const QpOptions& o)
    {
        RdmaAhAttr av = RdmaLidAddress(dlid);
        if (o.global)
        {
            // The destination GID: the peer port's (subnet prefix + port GUID).
            av.is_global = 1;
            av.grh.hop_limit = 8;
            for (auto& h : hcas)
            {
                if (h.port->GetLid() == dlid)
                {
                    h.port->GetGid(0, av.grh.dgid);
                }
            }
        }
        ASSERT_EQ(TryConnectQp(qp, av, destQpn, QpConnectOptions(o, rqPsn)), "");
    }

    /// Build everything: a on host 0, b on host 1, QPs connected both ways.
    void Setup(const QpOptions& o = QpOptions(), const RdmaHelper& helper = RdmaHelper())
    {
        opts = o;
        BuildFabric(helper);
        MakeSide(a, 0, o);
        MakeSide(b, 1, o);
        Connect(a.qp, b.lid, b.qp->GetQpNum(), o.sqPsn, o);
        Connect(b.qp, a.lid, a.qp->GetQpNum(), o.sqPsn, o);
    }

    void RunFor(Time t)
    {
        Simulator::Stop(t);
        Simulator::Run();
    }

    /// Put a ReceiveErrorModel on both hosts' ports (losses in both directions).
    void SetLoss(Ptr<ErrorModel> toB, Ptr<ErrorModel> toA)
    {
        if (toB)
        {
            fabric.HostPort(1)->SetAttribute("ReceiveErrorModel", PointerValue(toB));
        }
        if (toA)
        {
            fabric.HostPort(0)->SetAttribute("ReceiveErrorModel", PointerValue(toA));
        }
    }

    RdmaSendWr Wr(uint64_t id, RdmaWrOpcode op, std::vector<RdmaSge> sgl) const
    {
        RdmaSendWr wr;
        wr.wr_id = id;
        wr.opcode = op;
        wr.sg_list = std::move(sgl);
        wr.send_flags = RDMA_SEND_SIGNALED;
        return wr;
    }

    IbFabric fabric;
    IbStaticSubnetHelper subnet;
    std::vector<RdmaHca> hcas;
    Side a;
    Side b;
    QpOptions opts;
};

} // namespace cnuas_test

#endif
