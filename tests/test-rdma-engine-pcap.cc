// A captured RC exchange decodes in tshark 4.0 as the opcodes, PSNs and AETH syndromes the
// engines sent (SEND First/Middle/Last, RDMA WRITE, READ request and responses, CmpSwap and its
// atomic ACK, ACKs, a PSN sequence error NAK after a lost packet, RNR NAKs), with nothing
// malformed, and `cnuas pcap check` finds every ICRC and VCRC right.
#include "ib-test-packets.h"
#include "rdma-engine-fixture.h"

#include "helpers/trace/ib-trace-helper.h"
#include "models/common/packet-loss-model.h"

#include "ns3/enum.h"
#include "ns3/string.h"

#include <cstdio>
#include <unistd.h>

using namespace ns3;
using namespace cnuas_test;

namespace
{
struct Sent
{
    std::vector<std::pair<uint8_t, uint32_t>> v;

    void On(uint32_t, uint8_t op, uint32_t psn, uint32_t, bool)
    {
        v.emplace_back(op, psn);
    }
};

struct Naks
{
    std::vector<std::pair<uint8_t, uint32_t>> v;

    void On(uint32_t, uint8_t syn, uint32_t psn)
    {
        v.emplace_back(syn, psn);
    }
};
} // namespace

class RdmaEnginePcap : public RdmaPairTest
{
};

TEST_F(RdmaEnginePcap, AnRcExchangeDecodesAsTheOpcodesPsnsAndSyndromesSent)
{
    int st = -1;
    RunCommand("tshark --version >/dev/null 2>&1", &st);
    ASSERT_EQ(st, 0) << "tshark is required for this test (Debian package tshark, 4.0.x)";
    QpOptions o;
    o.mtu = RdmaMtu::MTU_1024;
    o.minRnrTimer = 3; // 0.03 ms
    Setup(o);
    const std::string path = std::string(CNUAS_BINARY_DIR) + "/test-rdma-engine-pcap-" +
                             std::to_string(getpid()) + ".pcap";
    IbPcapHelper pcap;
    ASSERT_TRUE(pcap.Enable(fabric.HostPort(0), path));
    Sent sentA;
    Sent sentB;
    Naks naks;
    a.hca.engine->TraceConnectWithoutContext("PacketSent", MakeCallback(&Sent::On, &sentA));
    b.hca.engine->TraceConnectWithoutContext("PacketSent", MakeCallback(&Sent::On, &sentB));
    b.hca.engine->TraceConnectWithoutContext("NakSent", MakeCallback(&Naks::On, &naks));
    // b's port loses the 5th request packet it sees (the WRITE's second packet).
    Ptr<PacketLossModel> loss = CreateObject<PacketLossModel>();
    loss->SetAttribute("Mode", EnumValue(PacketLossModel::LIST));
    loss->SetAttribute("Action", EnumValue(PacketLossModel::DROP));
    loss->SetAttribute("Indices", StringValue("4"));
    SetLoss(loss, nullptr);

    a.Write(0, TestBytes(3000, 1));
    b.Write(100000, TestBytes(1500, 2));
    ASSERT_EQ(b.PostRecv(1, 0, 4096), 0);
    ASSERT_EQ(a.qp->PostSend(Wr(1, RdmaWrOpcode::SEND, {a.Sge(0, 3000)})), 0);   // F M L
    RdmaSendWr w = Wr(2, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 2000)});              // F L
    w.rdma.remote_addr = kRegionBase + 50000;
    w.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(w), 0);
    RdmaSendWr r = Wr(3, RdmaWrOpcode::RDMA_READ, {a.Sge(20000, 1500)});           // 2 resp.
    r.rdma.remote_addr = kRegionBase + 100000;
    r.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(r), 0);
    RdmaSendWr c = Wr(4, RdmaWrOpcode::ATOMIC_CMP_AND_SWP, {a.Sge(30000, 8)});
    c.atomic.remote_addr = kRegionBase + 200000;
    c.atomic.rkey = b.mr->GetRkey();
    c.atomic.swap = 7;
    ASSERT_EQ(a.qp->PostSend(c), 0);
    RunFor(MilliSeconds(1));
    // A SEND without a receive WQE: RNR NAKs until one is posted.
    ASSERT_EQ(a.qp->PostSend(Wr(5, RdmaWrOpcode::SEND, {a.Sge(0, 100)})), 0);
    Simulator::Schedule(MicroSeconds(100), [this]() { b.PostRecv(2, 8192, 4096); });
    RunFor(MilliSeconds(1));
    pcap.Close();
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 5u);
    for (auto& wc : sc)
    {
        EXPECT_EQ(wc.status, RdmaWcStatus::SUCCESS);
    }

    const auto rows = TsharkFieldRows(path,
                                      {"infiniband.lrh.slid",
                                       "infiniband.bth.opcode",
                                       "infiniband.bth.psn",
                                       "infiniband.aeth.syndrome"},
                                      "--disable-protocol rpcordma",
                                      &st);
    ASSERT_EQ(st, 0);
    // Split by direction: what a sent is every a-engine packet; what a received is every
    // b-engine packet (nothing is lost towards a).
    std::vector<std::pair<uint8_t, uint32_t>> tx;
    std::vector<std::pair<uint8_t, uint32_t>> rx;
    std::vector<std::string> syndromes;
    for (const auto& row : rows)
    {
        ASSERT_EQ(row.size(), 4u);
        const auto rec = std::make_pair(static_cast<uint8_t>(std::stoul(row[1])),
                                        static_cast<uint32_t>(std::stoul(row[2])));
        if (std::stoul(row[0]) == a.lid)
        {
            tx.push_back(rec);
        }
        else
        {
            rx.push_back(rec);
            syndromes.push_back(row[3]);
        }
    }
    EXPECT_EQ(tx, sentA.v);
    EXPECT_EQ(rx, sentB.v);

    // Independently of the engines' logs: the opening requests follow the segmentation and
    // PSN rules (SEND 3000 B at MTU 1024: First, Middle, Last; then WRITE First).
    const uint32_t s = opts.sqPsn;
    ASSERT_GE(tx.size(), 4u);
    EXPECT_EQ(tx[0], std::make_pair(uint8_t(IbOpcode::kRcSendFirst), s));
    EXPECT_EQ(tx[1], std::make_pair(uint8_t(IbOpcode::kRcSendMiddle), (s + 1) & 0xFFFFFF));
    EXPECT_EQ(tx[2], std::make_pair(uint8_t(IbOpcode::kRcSendLast), (s + 2) & 0xFFFFFF));
    EXPECT_EQ(tx[3], std::make_pair(uint8_t(IbOpcode::kRcRdmaWriteFirst), (s + 3) & 0xFFFFFF));
    // The lost WRITE Last (PSN s+4) is NAKed with PSN sequence error (syndrome 0x60 = 96)
    // carrying PSN s+4, and resent.
    bool nak = false;
    for (size_t i = 0; i < rx.size(); ++i)
    {
        if (syndromes[i] == "96")
        {
            nak = true;
            EXPECT_EQ(rx[i], std::make_pair(uint8_t(IbOpcode::kRcAcknowledge),
                                            (s + 4) & 0xFFFFFF));
        }
    }
    EXPECT_TRUE(nak) << "no PSN sequence error NAK decoded";
    // READ of 1500 B at MTU 1024: a request, then Response First and Last at its PSN and the
    // next; the atomic ACK answers the CmpSwap's PSN; RNR NAKs carry syndrome 0x20 | 3 = 35.
    uint32_t readPsn = 0;
    uint32_t casPsn = 0;
    for (auto& [op, psn] : tx)
    {
        readPsn = op == IbOpcode::kRcRdmaReadRequest ? psn : readPsn;
        casPsn = op == IbOpcode::kRcCompareSwap ? psn : casPsn;
    }
    auto has = [&](uint8_t op, uint32_t psn) {
        return std::find(rx.begin(), rx.end(), std::make_pair(op, psn)) != rx.end();
    };
    EXPECT_TRUE(has(IbOpcode::kRcRdmaReadResponseFirst, readPsn));
    EXPECT_TRUE(has(IbOpcode::kRcRdmaReadResponseLast, (readPsn + 1) & 0xFFFFFF));
    EXPECT_TRUE(has(IbOpcode::kRcAtomicAcknowledge, casPsn));
    EXPECT_EQ(casPsn, (readPsn + 2) & 0xFFFFFF);
    size_t rnr = 0;
    for (size_t i = 0; i < rx.size(); ++i)
    {
        rnr += syndromes[i] == "35";
        if (rx[i].first == IbOpcode::kRcAcknowledge && syndromes[i] != "96" &&
            syndromes[i] != "35")
        {
            EXPECT_LT(std::stoul(syndromes[i]), 0x20u) << "an ACK's syndrome is 000xxxxx";
        }
    }
    EXPECT_GE(rnr, 1u);
    EXPECT_EQ(rnr + 1, naks.v.size()); // every NAK the responder sent is on the wire

    // Nothing malformed, and every CRC right.
    const std::string expert =
        RunCommand("tshark -r '" + path + "' --disable-protocol rpcordma -q -z expert,error 2>&1",
                   &st);
    EXPECT_EQ(st, 0) << expert;
    EXPECT_EQ(expert.find("Malformed"), std::string::npos) << expert;
    EXPECT_EQ(expert.find("Errors"), std::string::npos) << expert;
    const std::string check =
        RunCommand(std::string(CNUAS_BINARY_DIR) + "/bin/cnuas pcap check '" + path + "' 2>&1",
                   &st);
    EXPECT_EQ(st, 0) << check;
    EXPECT_NE(check.find(std::to_string(rows.size()) + " packets"), std::string::npos) << check;
    EXPECT_NE(check.find("all CRCs good"), std::string::npos) << check;
    std::remove(path.c_str());
}
