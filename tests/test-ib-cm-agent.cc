// The communication manager (IBA vol. 1 ch. 12): CM messages byte-exact at the offsets of the
// spec's tables, and two IbCmAgents wired back to back through a simulated QP1 that can lose
// MADs: the REQ/REP/RTU and DREQ/DREP handshakes, REJ 8 for a service nobody listens on, SIDR,
// retries of a lost REQ, the timeout, and what a destroyed consumer leaves its peer.
#include "models/mgmt/ib-cm-agent.h"

#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <vector>

using namespace ns3;

namespace
{

TEST(IbCmMessages, ReqFieldsSitWhereTable106PutsThem)
{
    IbCmMessage req;
    req.attrId = IbCmAttr::Req;
    req.transactionId = 0x1122334455667788ULL;
    req.localCommId = 0xA1B2C3D4;
    req.serviceId = 0x0000000001061C06ULL; // RDMA_PS_TCP, port 7174 (rping's)
    req.localCaGuid = 0x0002C90300001234ULL;
    req.localQpn = 0x000123;
    req.responderResources = 4;
    req.initiatorDepth = 2;
    req.remoteCmResponseTimeout = 20;
    req.transportServiceType = 1;
    req.startingPsn = 0xABCDEF;
    req.localCmResponseTimeout = 19;
    req.retryCount = 7;
    req.pathMtu = 3;
    req.rnrRetryCount = 6;
    req.maxCmRetries = 15;
    req.srq = true;
    req.primary.localLid = 0x0001;
    req.primary.remoteLid = 0x0002;
    req.primary.sl = 5;
    req.primary.localAckTimeout = 14;
    req.primary.hopLimit = 64;
    req.privateData = {0x00, 0x40, 0x1C, 0x06};
    const auto m = req.Encode();
    // Common header: base version 1, class 0x07, class version 2, method Send.
    EXPECT_EQ(m[0], 1);
    EXPECT_EQ(m[1], 0x07);
    EXPECT_EQ(m[2], 2);
    EXPECT_EQ(m[3], 0x03);
    EXPECT_EQ(m[16], 0x00);
    EXPECT_EQ(m[17], 0x10);
    const uint8_t* d = m.data() + 24;
    EXPECT_EQ(d[0], 0xA1);
    EXPECT_EQ(d[3], 0xD4);
    EXPECT_EQ(d[14], 0x1C); // service ID bytes 8..15
    EXPECT_EQ(d[15], 0x06);
    EXPECT_EQ(d[34], 0x23); // local QPN in bytes 32..34
    EXPECT_EQ(d[35], 4);    // responder resources
    EXPECT_EQ(d[39], 2);    // initiator depth
    EXPECT_EQ(d[43], (20 << 3) | (1 << 1)); // remote CM response timeout, transport type UC
    EXPECT_EQ(d[44], 0xAB); // starting PSN 44..46
    EXPECT_EQ(d[47], (19 << 3) | 7);
    EXPECT_EQ(d[48], 0xFF); // P_Key
    EXPECT_EQ(d[50], (3 << 4) | 6);  // path MTU, RNR retry count
    EXPECT_EQ(d[51], (15 << 4) | 8); // max CM retries, SRQ
    EXPECT_EQ(d[53], 1);
    EXPECT_EQ(d[55], 2);
    EXPECT_EQ(d[93], 64);
    EXPECT_EQ(d[94], (5 << 4) | 8); // SL, subnet local
    EXPECT_EQ(d[95], 14 << 3);
    EXPECT_EQ(d[140], 0x00); // private data at 140
    EXPECT_EQ(d[141], 0x40);
    IbCmMessage back;
    ASSERT_TRUE(IbCmMessage::Decode(m.data(), back));
    EXPECT_EQ(back.localCommId, req.localCommId);
    EXPECT_EQ(back.serviceId, req.serviceId);
    EXPECT_EQ(back.localQpn, req.localQpn);
    EXPECT_EQ(back.startingPsn, req.startingPsn);
    EXPECT_EQ(back.retryCount, 7);
    EXPECT_EQ(back.rnrRetryCount, 6);
    EXPECT_TRUE(back.srq);
    EXPECT_EQ(back.primary.sl, 5);
    EXPECT_EQ(back.privateData.size(), kIbCmReqPrivateBytes);
    EXPECT_EQ(back.transactionId, req.transactionId);
}

TEST(IbCmMessages, RepRejAndSidrRepRoundTrip)
{
    IbCmMessage rep;
    rep.attrId = IbCmAttr::Rep;
    rep.localCommId = 7;
    rep.remoteCommId = 9;
    rep.localQpn = 0x456;
    rep.startingPsn = 0x123456;
    rep.responderResources = 1;
    rep.initiatorDepth = 3;
    rep.rnrRetryCount = 7;
    rep.localCaGuid = 42;
    const auto r = rep.Encode();
    EXPECT_EQ(r[24 + 27], 7 << 5); // RNR retry count, top 3 bits of byte 27
    IbCmMessage b;
    ASSERT_TRUE(IbCmMessage::Decode(r.data(), b));
    EXPECT_EQ(b.remoteCommId, 9u);
    EXPECT_EQ(b.localQpn, 0x456u);
    EXPECT_EQ(b.startingPsn, 0x123456u);
    EXPECT_EQ(b.initiatorDepth, 3);
    EXPECT_EQ(b.localCaGuid, 42u);

    IbCmMessage rej;
    rej.attrId = IbCmAttr::Rej;
    rej.remoteCommId = 5;
    rej.reason = IbCmRejReason::InvalidServiceId;
    rej.messageRejected = 0;
    const auto j = rej.Encode();
    EXPECT_EQ(j[24 + 11], 8);
    ASSERT_TRUE(IbCmMessage::Decode(j.data(), b));
    EXPECT_EQ(b.reason, 8);

    IbCmMessage sidr;
    sidr.attrId = IbCmAttr::SidrRep;
    sidr.localCommId = 77;
    sidr.localQpn = 0x99;
    sidr.localQkey = 0x01234567;
    sidr.serviceId = 0x01110000ULL | 4711;
    const auto s = sidr.Encode();
    EXPECT_EQ(s[24 + 20], 0x01); // Q_Key at 20
    ASSERT_TRUE(IbCmMessage::Decode(s.data(), b));
    EXPECT_EQ(b.localQkey, 0x01234567u);
    EXPECT_EQ(b.serviceId, sidr.serviceId);
    EXPECT_EQ(b.localCommId, 77u);

    // Not a CM MAD: refused.
    auto bad = s;
    bad[2] = 1; // class version 1
    EXPECT_FALSE(IbCmMessage::Decode(bad.data(), b));
}

/// Runs the simulation for `t` (a consumer answers well within a CM response timeout; running
/// to the end would let the REQ's retries run out first).
void
RunFor(Time t)
{
    Simulator::Stop(t);
    Simulator::Run();
}

/// Two agents joined by a wire of 1 us that drops the MADs a test tells it to.
struct Pair
{
    Ptr<IbCmAgent> a = CreateObject<IbCmAgent>();
    Ptr<IbCmAgent> b = CreateObject<IbCmAgent>();
    std::vector<uint16_t> dropNext; ///< attribute IDs to lose, once each
    std::vector<IbCmEvent> aEvents;
    std::vector<IbCmEvent> bEvents;

    Pair()
    {
        a->SetCaGuid(0x1000);
        b->SetCaGuid(0x2000);
        a->SetAttribute("ResponseTimeout", UintegerValue(8)); // 1 ms
        b->SetAttribute("ResponseTimeout", UintegerValue(8));
        a->SetAttribute("MaxRetries", UintegerValue(2));
        a->SetSendCallback(MakeCallback(&Pair::ToB, this));
        b->SetSendCallback(MakeCallback(&Pair::ToA, this));
    }
    bool Lose(const uint8_t* mad)
    {
        const uint16_t attr = static_cast<uint16_t>(mad[16] << 8 | mad[17]);
        for (auto it = dropNext.begin(); it != dropNext.end(); ++it)
        {
            if (*it == attr)
            {
                dropNext.erase(it);
                return true;
            }
        }
        return false;
    }
    bool ToB(const uint8_t* mad, const IbCmAddress&)
    {
        if (!Lose(mad))
        {
            std::array<uint8_t, 256> copy;
            std::copy(mad, mad + 256, copy.begin());
            Simulator::Schedule(MicroSeconds(1), [this, copy]() {
                IbCmAddress from;
                from.lid = 1;
                b->Receive(copy.data(), from);
            });
        }
        return true;
    }
    bool ToA(const uint8_t* mad, const IbCmAddress&)
    {
        if (!Lose(mad))
        {
            std::array<uint8_t, 256> copy;
            std::copy(mad, mad + 256, copy.begin());
            Simulator::Schedule(MicroSeconds(1), [this, copy]() {
                IbCmAddress from;
                from.lid = 2;
                a->Receive(copy.data(), from);
            });
        }
        return true;
    }
    void OnA(const IbCmEvent& e)
    {
        aEvents.push_back(e);
    }
    void OnB(const IbCmEvent& e)
    {
        bEvents.push_back(e);
    }
    static IbCmMessage Req(uint64_t sid)
    {
        IbCmMessage r;
        r.attrId = IbCmAttr::Req;
        r.serviceId = sid;
        r.localQpn = 0x11;
        r.startingPsn = 0x222;
        return r;
    }
};

TEST(IbCmAgent, ConnectsAndDisconnectsThroughTheWholeHandshake)
{
    Pair p;
    ASSERT_TRUE(p.b->Listen(0x01060000 | 7174, MakeCallback(&Pair::OnB, &p)));
    EXPECT_FALSE(p.b->Listen(0x01060000 | 7174, MakeCallback(&Pair::OnB, &p)));
    IbCmAddress to;
    to.lid = 2;
    // A lost REQ is sent again after the response timeout.
    p.dropNext = {IbCmAttr::Req};
    const uint32_t id = p.a->SendReq(Pair::Req(0x01060000 | 7174), to, MakeCallback(&Pair::OnA, &p));
    RunFor(MicroSeconds(1500)); // the retry leaves after 1.05 ms (ResponseTimeout 8)
    ASSERT_EQ(p.bEvents.size(), 1u);
    EXPECT_EQ(p.bEvents[0].type, IbCmEventType::ReqReceived);
    EXPECT_EQ(p.bEvents[0].msg.localQpn, 0x11u);
    EXPECT_EQ(p.a->GetCounters().retransmitted, 1u);
    const uint32_t bid = p.bEvents[0].commId;
    IbCmMessage rep;
    rep.localQpn = 0x33;
    rep.startingPsn = 0x444;
    ASSERT_TRUE(p.b->SendRep(bid, rep));
    RunFor(MicroSeconds(100));
    ASSERT_EQ(p.aEvents.size(), 1u);
    EXPECT_EQ(p.aEvents[0].type, IbCmEventType::RepReceived);
    EXPECT_EQ(p.aEvents[0].msg.localQpn, 0x33u);
    EXPECT_EQ(p.aEvents[0].msg.startingPsn, 0x444u);
    ASSERT_TRUE(p.a->SendRtu(id, {}));
    RunFor(MicroSeconds(100));
    ASSERT_EQ(p.bEvents.size(), 2u);
    EXPECT_EQ(p.bEvents[1].type, IbCmEventType::RtuReceived);
    ASSERT_TRUE(p.a->SendDreq(id, {}));
    RunFor(MicroSeconds(100));
    ASSERT_EQ(p.bEvents.size(), 3u);
    EXPECT_EQ(p.bEvents[2].type, IbCmEventType::DreqReceived);
    ASSERT_TRUE(p.b->SendDrep(bid, {}));
    RunFor(MicroSeconds(100));
    ASSERT_EQ(p.aEvents.size(), 2u);
    EXPECT_EQ(p.aEvents[1].type, IbCmEventType::DrepReceived);
    EXPECT_EQ(p.a->GetConnectionCount(), 0u);
    EXPECT_EQ(p.b->GetConnectionCount(), 0u);
    Simulator::Destroy();
}

TEST(IbCmAgent, NobodyListeningIsReason8AndSilenceTimesOut)
{
    Pair p;
    IbCmAddress to;
    p.a->SendReq(Pair::Req(0x01060000 | 1), to, MakeCallback(&Pair::OnA, &p));
    Simulator::Run();
    ASSERT_EQ(p.aEvents.size(), 1u);
    EXPECT_EQ(p.aEvents[0].type, IbCmEventType::RejReceived);
    EXPECT_EQ(p.aEvents[0].msg.reason, IbCmRejReason::InvalidServiceId);
    EXPECT_EQ(p.b->GetCounters().noListener, 1u);
    // Every REQ lost: 1 + MaxRetries (2) sent, then the timeout.
    p.aEvents.clear();
    p.dropNext = {IbCmAttr::Req, IbCmAttr::Req, IbCmAttr::Req, IbCmAttr::Rej};
    p.a->SendReq(Pair::Req(0x01060000 | 1), to, MakeCallback(&Pair::OnA, &p));
    Simulator::Run();
    ASSERT_EQ(p.aEvents.size(), 1u);
    EXPECT_EQ(p.aEvents[0].type, IbCmEventType::Timeout);
    EXPECT_EQ(p.a->GetCounters().timeouts, 1u);
    EXPECT_EQ(p.a->GetConnectionCount(), 0u);
    Simulator::Destroy();
}

TEST(IbCmAgent, ADestroyedConsumerRefusesItsHandshakeAndSidrAnswers)
{
    Pair p;
    ASSERT_TRUE(p.b->Listen(5, MakeCallback(&Pair::OnB, &p)));
    IbCmAddress to;
    p.a->SendReq(Pair::Req(5), to, MakeCallback(&Pair::OnA, &p));
    RunFor(MicroSeconds(100));
    ASSERT_EQ(p.bEvents.size(), 1u);
    // The passive consumer dies before answering (its process was killed).
    p.b->Destroy(p.bEvents[0].commId);
    RunFor(MicroSeconds(100));
    ASSERT_EQ(p.aEvents.size(), 1u);
    EXPECT_EQ(p.aEvents[0].type, IbCmEventType::RejReceived);
    EXPECT_EQ(p.aEvents[0].msg.reason, IbCmRejReason::ConsumerReject);
    // SIDR: a lookup answered with the QPN and Q_Key.
    p.aEvents.clear();
    p.bEvents.clear();
    IbCmMessage sreq;
    sreq.attrId = IbCmAttr::SidrReq;
    sreq.serviceId = 5;
    p.a->SendReq(sreq, to, MakeCallback(&Pair::OnA, &p));
    RunFor(MicroSeconds(100));
    ASSERT_EQ(p.bEvents.size(), 1u);
    EXPECT_EQ(p.bEvents[0].type, IbCmEventType::SidrReqReceived);
    ASSERT_TRUE(p.b->SendSidrRep(p.bEvents[0].commId, IbCmSidrStatus::Valid, 0x77, 0x01234567, {}));
    RunFor(MicroSeconds(100));
    ASSERT_EQ(p.aEvents.size(), 1u);
    EXPECT_EQ(p.aEvents[0].type, IbCmEventType::SidrRepReceived);
    EXPECT_EQ(p.aEvents[0].msg.localQpn, 0x77u);
    EXPECT_EQ(p.aEvents[0].msg.localQkey, 0x01234567u);
    EXPECT_EQ(p.a->GetConnectionCount(), 0u);
    EXPECT_EQ(p.b->GetConnectionCount(), 0u);
    Simulator::Destroy();
}

} // namespace
