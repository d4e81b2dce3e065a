// Issue 3's acceptance with the RDMA engine and the built-in SM on a leaf-spine. Before the SM
// every port is Init with LID 0: an RC QP cannot even reach RTR with its peer's LID (0, IBA
// vol. 1 §4.1.3), and a WRITE to a guessed LID never gets out of the Init port (§7.2: data
// flows only once Active): the engine holds it, and the application can only flush it. After
// the SM, the requester
// resolves the path as a verbs program does, with an SA PathRecord query on QP1 to the SM LID
// its port was given (§15.2.5.16), and the same WRITE lands byte-exact.
#include "rdma-engine-fixture.h"

#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "models/mgmt/ib-gmp.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-mad-packet.h"
#include "models/mgmt/ib-sa-records.h"
#include "models/mgmt/ib-subnet-manager.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ns3;
using namespace cnuas_test;

namespace
{

void
CollectSa(std::vector<IbSaMad>* got, const IbReceivedMad& m)
{
    if (m.view.mad[1] == IbMgmtClass::SubnAdm)
    {
        IbSaMad r;
        r.ReadFrom(m.view.mad.data());
        got->push_back(r);
    }
}

class SmRdma : public RdmaPairTest
{
  protected:
    /// SA PathRecord Get from host `from`'s port to host `to`'s port, by GIDs, sent to the SM
    /// LID `from`'s port holds; false if no answer came.
    bool AskPath(uint32_t from, uint32_t to, IbPathRecord& out, uint16_t& status)
    {
        Ptr<IbMadDispatcher> client = IbMgmtHelper::GetDispatcher(fabric.hosts.Get(from));
        std::vector<IbSaMad> got;
        client->SetManagerHandler(MakeBoundCallback(&CollectSa, &got));
        IbPathRecord q;
        q.sgid = IbPortGid(fabric.HostPort(from)->GetPortGuid());
        q.dgid = IbPortGid(fabric.HostPort(to)->GetPortGuid());
        IbSaMad m = IbSaMad::Make(IbMadMethod::Get, IbSaAttr::PathRecord, 0, 0);
        m.SetComponentMask(IbPathRecord::kCompSgid | IbPathRecord::kCompDgid);
        q.WriteTo(m.Data());
        m.Mad().SetTransactionId(0x5A5A0000u + from * 64 + to);
        uint8_t bytes[kIbMadBytes];
        m.WriteTo(bytes);
        const uint16_t smLid = fabric.HostPort(from)->GetSmLid();
        EXPECT_NE(smLid, 0);
        EXPECT_TRUE(client->SendGmp(1, bytes, smLid, kIbGsiQp, 0));
        RunFor(MicroSeconds(50));
        client->SetManagerHandler(IbMadDispatcher::MadHandler());
        if (got.size() != 1)
        {
            return false;
        }
        status = got[0].Mad().GetStatus();
        out.ReadFrom(got[0].Data());
        return true;
    }

    /// RESET -> INIT; then RTR with `dlid`: the Modify's result.
    int InitThenRtr(Ptr<RdmaQp> qp, uint16_t dlid, uint32_t destQpn)
    {
        RdmaQpAttr a;
        a.qp_state = RdmaQpState::INIT;
        a.pkey_index = 0;
        a.port_num = 1;
        a.qp_access_flags = opts.qpAccess;
        EXPECT_EQ(qp->Modify(a, RDMA_QP_STATE | RDMA_QP_PKEY_INDEX | RDMA_QP_PORT |
                                    RDMA_QP_ACCESS_FLAGS),
                  0);
        a.qp_state = RdmaQpState::RTR;
        a.ah_attr.dlid = dlid;
        a.ah_attr.port_num = 1;
        a.path_mtu = opts.mtu;
        a.dest_qp_num = destQpn;
        a.rq_psn = 0;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 1;
        return qp->Modify(a, RDMA_QP_STATE | RDMA_QP_AV | RDMA_QP_PATH_MTU | RDMA_QP_DEST_QPN |
                                 RDMA_QP_RQ_PSN | RDMA_QP_MAX_DEST_RD_ATOMIC |
                                 RDMA_QP_MIN_RNR_TIMER);
    }

    /// One RC WRITE of `data` from a's offset 0 to b's offset `at`; runs 3 ms and returns a's
    /// send completions.
    std::vector<RdmaWc> Write(Ptr<RdmaQp> qp, const std::vector<uint8_t>& data, uint64_t at,
                              uint64_t wrId)
    {
        a.Write(0, data);
        RdmaSendWr w = Wr(wrId, RdmaWrOpcode::RDMA_WRITE,
                          {a.Sge(0, static_cast<uint32_t>(data.size()))});
        w.rdma.remote_addr = kRegionBase + at;
        w.rdma.rkey = b.mr->GetRkey();
        EXPECT_EQ(qp->PostSend(w), 0);
        RunFor(MilliSeconds(3));
        return a.PollSend();
    }
};

} // namespace

TEST_F(SmRdma, WriteFailsBeforeTheSmAndSucceedsOverAnSaPathAfter)
{
    // h0 and h3 hang off different leaves: every path crosses a spine.
    fabric = IbFabricHelper().Build(
        BuildTopologyFromSpec("leaf-spine:leaves=2,spines=2,hosts=2"));
    hcas = RdmaHelper().Install(fabric);
    IbMgmtHelper().Install(fabric.nodes);
    RunFor(MicroSeconds(10)); // links trained; no SM yet
    opts.timeout = 4;  // 4.096 us * 2^4 = 65 us
    opts.retryCnt = 2; // so the failure comes quickly
    MakeSide(a, 0, opts);
    MakeSide(b, 3, opts);

    // ---- before the SM ----
    for (auto& p : fabric.AllPorts())
    {
        if (p->GetPeer())
        {
            EXPECT_EQ(p->GetPortState(), IbPortState::Init);
            EXPECT_EQ(p->GetLid(), 0);
        }
    }
    EXPECT_EQ(b.hca.port->GetLid(), 0);
    EXPECT_EQ(fabric.HostPort(0)->GetSmLid(), 0); // no SA to ask either
    // The peer's LID as its port reports it (0) is refused at RTR, with a clear error.
    EXPECT_NE(InitThenRtr(a.qp, b.hca.port->GetLid(), b.qp->GetQpNum()), 0);
    EXPECT_NE(a.hca.device->GetLastError().find("dlid is 0"), std::string::npos)
        << a.hca.device->GetLastError();
    // A QP connected to a guessed LID reaches RTS, but its WRITE never leaves: the engine holds
    // it until the port is Active (IbNetDevice::CanSend; §7.2), so after 3 ms (45 transport
    // timeouts) there is no completion, no packet out of h0's port, h3's memory untouched.
    // The application gives up: the QP to ERR flushes the WRITE (WR_FLUSH_ERR).
    Ptr<RdmaQp> guessed = CreateQp(a, opts);
    Connect(guessed, 7, b.qp->GetQpNum(), opts.sqPsn, opts);
    const std::vector<uint8_t> data = TestBytes(64 * 1024, 3);
    const std::vector<uint8_t> untouched = b.Read(100000, data.size());
    std::vector<RdmaWc> wc = Write(guessed, data, 100000, 1);
    EXPECT_TRUE(wc.empty());
    EXPECT_EQ(a.hca.engine->GetCounters().packetsSent, 0u);
    EXPECT_EQ(fabric.HostPort(0)->GetCounters().portXmitPkts, 0u);
    EXPECT_EQ(b.Read(100000, data.size()), untouched);
    RdmaQpAttr err;
    err.qp_state = RdmaQpState::ERR;
    ASSERT_EQ(guessed->Modify(err, RDMA_QP_STATE), 0);
    RunFor(MicroSeconds(10));
    wc = a.PollSend();
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].wr_id, 1u);
    EXPECT_EQ(wc[0].status, RdmaWcStatus::WR_FLUSH_ERR);

    // ---- the SM (on h1, so that the SA query crosses the fabric too) ----
    Ptr<IbSubnetManager> sm = IbSmHelper().Install(fabric, fabric.hosts.Get(1), MicroSeconds(1));
    for (int i = 0; i < 500 && sm->GetPhase() != IbSweepPhase::Up; ++i)
    {
        RunFor(MicroSeconds(10));
    }
    ASSERT_EQ(sm->GetPhase(), IbSweepPhase::Up);
    EXPECT_EQ(fabric.HostPort(0)->GetPortState(), IbPortState::Active);
    EXPECT_EQ(fabric.HostPort(0)->GetSmLid(), fabric.HostPort(1)->GetLid());

    // Both ends resolve the path through the SA, as rdma_resolve_route would.
    IbPathRecord ab;
    IbPathRecord ba;
    uint16_t st = 0xFFFF;
    ASSERT_TRUE(AskPath(0, 3, ab, st));
    EXPECT_EQ(st, IbMadStatus::Ok);
    ASSERT_TRUE(AskPath(3, 0, ba, st));
    EXPECT_EQ(st, IbMadStatus::Ok);
    // The SA's answer agrees with what the ports themselves now hold.
    EXPECT_EQ(ab.dlid, b.hca.port->GetLid());
    EXPECT_EQ(ab.slid, a.hca.port->GetLid());
    EXPECT_EQ(ba.dlid, a.hca.port->GetLid());
    ASSERT_NE(ab.dlid, 0);
    EXPECT_GE(ab.mtu, static_cast<uint8_t>(opts.mtu));

    // Fresh QPs on the SA's DLIDs; the same WRITE now lands byte-exact.
    Ptr<RdmaQp> qa = CreateQp(a, opts);
    Ptr<RdmaQp> qb = CreateQp(b, opts);
    Connect(qa, ab.dlid, qb->GetQpNum(), opts.sqPsn, opts);
    Connect(qb, ba.dlid, qa->GetQpNum(), opts.sqPsn, opts);
    wc = Write(qa, data, 100000, 2);
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].wr_id, 2u);
    EXPECT_EQ(wc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(b.Read(100000, data.size()), data);
}
