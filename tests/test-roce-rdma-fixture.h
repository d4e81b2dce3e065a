// RoCEv2 twin of rdma-engine-fixture.h: hosts on an Ethernet fabric with a RoCE NIC each, a PD,
// a 4 MiB registered region, CQs and one QP per host connected by GID (IPv4-mapped).
#ifndef CNUAS_TESTS_ROCE_RDMA_FIXTURE_H
#define CNUAS_TESTS_ROCE_RDMA_FIXTURE_H

#include "rdma-engine-fixture.h"

#include "helpers/roce-helper.h"

#include "ns3/uinteger.h"

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

    /// RESET -> INIT -> RTR -> RTS; the destination is addressed by its GID (IPv4-mapped).
    void Connect(Ptr<RdmaQp> qp, const RdmaGid& dgid, uint32_t destQpn, const QpOptions& o)
    {
        RdmaQpAttr a;
        a.qp_state = RdmaQpState::INIT;
        a.pkey_index = 0;
        a.port_num = 1;
        a.qp_access_flags = o.qpAccess;
        a.qkey = o.qkey;
        uint32_t mask = RDMA_QP_STATE | RDMA_QP_PKEY_INDEX | RDMA_QP_PORT;
        mask |= o.type == RdmaQpType::UD ? RDMA_QP_QKEY : RDMA_QP_ACCESS_FLAGS;
        ASSERT_EQ(qp->Modify(a, mask), 0) << qp->GetDevice()->GetLastError();
        a.qp_state = RdmaQpState::RTR;
        mask = RDMA_QP_STATE;
        if (o.type != RdmaQpType::UD)
        {
            a.ah_attr.is_global = 1;
            a.ah_attr.port_num = 1;
            a.ah_attr.grh.hop_limit = 64;
            a.ah_attr.grh.dgid = dgid;
            a.path_mtu = o.mtu;
            a.dest_qp_num = destQpn;
            a.rq_psn = o.sqPsn;
            mask |= RDMA_QP_AV | RDMA_QP_PATH_MTU | RDMA_QP_DEST_QPN | RDMA_QP_RQ_PSN;
            if (o.type == RdmaQpType::RC)
            {
                a.max_dest_rd_atomic = o.maxRdAtomic;
                a.min_rnr_timer = o.minRnrTimer;
                mask |= RDMA_QP_MAX_DEST_RD_ATOMIC | RDMA_QP_MIN_RNR_TIMER;
            }
        }
        ASSERT_EQ(qp->Modify(a, mask), 0) << qp->GetDevice()->GetLastError();
        a.qp_state = RdmaQpState::RTS;
        a.sq_psn = o.sqPsn;
        mask = RDMA_QP_STATE | RDMA_QP_SQ_PSN;
        if (o.type == RdmaQpType::RC)
        {
            a.timeout = o.timeout;
            a.retry_cnt = o.retryCnt;
            a.rnr_retry = o.rnrRetry;
            a.max_rd_atomic = o.maxRdAtomic;
            mask |= RDMA_QP_TIMEOUT | RDMA_QP_RETRY_CNT | RDMA_QP_RNR_RETRY |
                    RDMA_QP_MAX_QP_RD_ATOMIC;
        }
        ASSERT_EQ(qp->Modify(a, mask), 0) << qp->GetDevice()->GetLastError();
    }

    RdmaGid GidOf(uint32_t host) const
    {
        RdmaGid g{};
        hcas[host].port->GetGid(0, g);
        return g;
    }

    /// A connected QP pair between hosts x and y.
    void Pair(RoceSide& x, uint32_t hx, RoceSide& y, uint32_t hy, const QpOptions& o)
    {
        MakeSide(x, hx, o);
        MakeSide(y, hy, o);
        Connect(x.qp, GidOf(hy), y.qp->GetQpNum(), o);
        Connect(y.qp, GidOf(hx), x.qp->GetQpNum(), o);
    }

    void RunFor(Time t)
    {
        Simulator::Stop(t);
        Simulator::Run();
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
