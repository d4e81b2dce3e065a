// The congestion-notification path of the congestion-control seam on InfiniBand (IBA vol. 1
// annex A10): a request that arrives with FECN makes the responder ask its policy
// (OnEcnMarkedReceive) and, if told to, set BECN in its next response, at most once per
// CnpInterval; a response with BECN calls the requester's OnBecn; a CNP calls OnCnp.
#include "rdma-engine-fixture.h"

#include "models/rdma/ib-bth-header.h"
#include "models/rdma/ib-opcode.h"
#include "models/rdma/ib-transport-headers.h"

#include "ns3/callback.h"
#include "ns3/nstime.h"

#include <map>
#include <set>

namespace cnuas_test
{
namespace
{

/// A policy that counts the notification calls per QP (and never throttles).
class NotifyCountingCc : public RdmaCcNone
{
  public:
    void OnCnp(uint32_t qpn) override
    {
        cnp[qpn]++;
    }

    void OnBecn(uint32_t qpn) override
    {
        becn[qpn]++;
    }

    bool OnEcnMarkedReceive(uint32_t qpn) override
    {
        marked[qpn]++;
        return true;
    }

    std::map<uint32_t, uint32_t> cnp;
    std::map<uint32_t, uint32_t> becn;
    std::map<uint32_t, uint32_t> marked;
};

/// Test-only link hook: sits between a port and its engine and sets FECN (what
/// RdmaRxInfo::ecnMarked carries on InfiniBand) on the chosen RDMA WRITE Only packets,
/// counted from 0 in arrival order, as a congested switch would.
struct FecnMarker
{
    Ptr<RdmaEngine> engine;
    std::set<uint32_t> chosen;
    uint32_t seen = 0;
    std::vector<uint32_t> responsesWithBecn; ///< PSNs of responses that came back with BECN

    void Rx(Ptr<RdmaLinkPort> port, const uint8_t* data, uint32_t len, const RdmaRxInfo& info)
    {
        RdmaRxInfo copy = info;
        if (len > 0 && data[0] == IbOpcode::kRcRdmaWriteOnly && chosen.count(seen++))
        {
            copy.ecnMarked = true;
        }
        engine->Receive(port, data, len, copy);
    }

    void RxResponse(Ptr<RdmaLinkPort> port, const uint8_t* data, uint32_t len,
                    const RdmaRxInfo& info)
    {
        if (len >= 12 && data[0] == IbOpcode::kRcAcknowledge && (data[4] & IbBthHeader::kBecnBit))
        {
            responsesWithBecn.push_back((uint32_t(data[9]) << 16) | (uint32_t(data[10]) << 8) |
                                        data[11]);
        }
        engine->Receive(port, data, len, info);
    }
};

class RdmaEngineBecn : public RdmaPairTest
{
  protected:
    /// a sends `n` one-packet WRITEs, each after the previous completed (so every request has
    /// its own ACK); b's port marks the chosen ones.
    void Run(uint32_t n, std::set<uint32_t> chosen, Time cnpInterval)
    {
        RdmaHelper helper;
        helper.SetEngineAttribute("CnpInterval", TimeValue(cnpInterval));
        Setup(QpOptions(), helper);
        ccA = CreateObject<NotifyCountingCc>();
        ccB = CreateObject<NotifyCountingCc>();
        a.hca.engine->SetCongestionControl(ccA);
        b.hca.engine->SetCongestionControl(ccB);
        toB.engine = b.hca.engine;
        toB.chosen = std::move(chosen);
        toA.engine = a.hca.engine;
        b.hca.port->SetReceiveCallback(MakeCallback(&FecnMarker::Rx, &toB));
        a.hca.port->SetReceiveCallback(MakeCallback(&FecnMarker::RxResponse, &toA));
        a.Write(0, TestBytes(512, 3));
        for (uint32_t i = 0; i < n; ++i)
        {
            Simulator::Schedule(MicroSeconds(5 * i), [this, i]() {
                RdmaSendWr w = Wr(i, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 512)});
                w.rdma.remote_addr = kRegionBase + 100000 + i * 512;
                w.rdma.rkey = b.mr->GetRkey();
                ASSERT_EQ(a.qp->PostSend(w), 0);
            });
        }
        RunFor(MicroSeconds(5 * n + 100));
        auto sc = a.PollSend();
        ASSERT_EQ(sc.size(), n);
        for (const auto& wc : sc)
        {
            EXPECT_EQ(wc.status, RdmaWcStatus::SUCCESS);
        }
    }

    Ptr<NotifyCountingCc> ccA;
    Ptr<NotifyCountingCc> ccB;
    FecnMarker toB;
    FecnMarker toA;
};

TEST_F(RdmaEngineBecn, EachMarkedRequestGivesOneBecnResponse)
{
    Run(10, {1, 4, 7}, Time(0)); // no rate limit on notifications
    const uint32_t qa = a.qp->GetQpNum();
    const uint32_t qb = b.qp->GetQpNum();
    EXPECT_EQ(ccB->marked[qb], 3u);      // the responder's policy heard each marked request
    EXPECT_EQ(ccA->becn[qa], 3u);        // the requester's policy each BECN
    EXPECT_EQ(ccA->marked.size(), 0u);   // nothing marked towards a
    EXPECT_EQ(ccB->becn.size(), 0u);
    EXPECT_EQ(ccA->cnp.size(), 0u);      // InfiniBand: BECN, never a CNP
    EXPECT_EQ(b.hca.engine->GetCounters().cnpsSent, 0u);
    // The BECNs rode on the ACKs of exactly the marked WRITEs (PSNs sq_psn + 1, 4, 7).
    const uint32_t psn0 = QpOptions().sqPsn;
    EXPECT_EQ(toA.responsesWithBecn,
              (std::vector<uint32_t>{RdmaPsnAdd(psn0, 1), RdmaPsnAdd(psn0, 4),
                                     RdmaPsnAdd(psn0, 7)}));
}

TEST_F(RdmaEngineBecn, CnpIntervalLimitsNotificationsPerQp)
{
    // All ten marked, 5 us apart (0 .. 45 us), with a 22 us CnpInterval: notifications for
    // the requests at 0 and 25 us (the first marked one after the interval has passed).
    Run(10, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, MicroSeconds(22));
    const uint32_t qa = a.qp->GetQpNum();
    const uint32_t qb = b.qp->GetQpNum();
    EXPECT_EQ(ccB->marked[qb], 10u);
    EXPECT_EQ(ccA->becn[qa], 2u);
    EXPECT_EQ(toA.responsesWithBecn.size(), 2u);
}

TEST_F(RdmaEngineBecn, ACnpCallsOnCnpOfItsQpOnly)
{
    Setup();
    Ptr<NotifyCountingCc> cc = CreateObject<NotifyCountingCc>();
    a.hca.engine->SetCongestionControl(cc);
    // A CNP as RoCEv2 annex A17 builds it: BTH opcode 0x81, BECN set, to a's QP.
    auto cnpTo = [this](uint32_t qpn) {
        IbTransportHeaders h;
        h.bth.SetOpCode(IbOpcode::kCnp);
        h.bth.SetPkey(0xFFFF);
        h.bth.SetDestQp(qpn);
        h.bth.SetBecn(true);
        h.bth.SetTver(0);
        // The table's length of a CNP includes its 16 reserved bytes; then the ICRC.
        std::vector<uint8_t> bytes(IbTransportHeaderLength(IbOpcode::kCnp), 0);
        ASSERT_EQ(h.Write(bytes.data(), bytes.size()), bytes.size());
        bytes.resize(bytes.size() + a.hca.port->GetIcrcSize(), 0);
        RdmaRxInfo info;
        info.slid = b.lid;
        a.hca.engine->Receive(a.hca.port, bytes.data(), static_cast<uint32_t>(bytes.size()),
                              info);
    };
    cnpTo(a.qp->GetQpNum());
    cnpTo(a.qp->GetQpNum());
    const uint64_t unknownBefore = a.hca.engine->GetDropCount(RdmaDropReason::UnknownQp);
    cnpTo(0x00ABCD); // no such QP: dropped and counted, no call
    RunFor(MicroSeconds(10));
    EXPECT_EQ(cc->cnp[a.qp->GetQpNum()], 2u);
    EXPECT_EQ(cc->cnp.size(), 1u);
    EXPECT_EQ(a.hca.engine->GetDropCount(RdmaDropReason::UnknownQp), unknownBefore + 1);
    EXPECT_EQ(cc->becn.size(), 0u);
}

} // namespace
} // namespace cnuas_test
