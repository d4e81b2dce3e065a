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
