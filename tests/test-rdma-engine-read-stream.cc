// READ responses are streamed: one packet per pump turn, taking turns with the other QPs'
// requests (IBA vol. 1 §9.7.5.1.3), so a big READ does not hold the port for its whole length.
#include "rdma-engine-fixture.h"

#include "models/rdma/ib-opcode.h"

#include "ns3/callback.h"
#include "ns3/uinteger.h"

namespace cnuas_test
{
namespace
{

constexpr uint32_t kReadBytes = 1u << 20;
constexpr uint64_t kWriteSrc = 3u << 20; ///< b's bytes for the other QP's WRITE
constexpr uint32_t kWriteBytes = 1000;

class RdmaEngineReadStream : public RdmaPairTest
{
  public:
    void OnBRx(uint32_t, uint8_t opcode, uint32_t, uint32_t)
    {
        if (opcode == IbOpcode::kRcRdmaReadRequest && readArrived.IsZero())
        {
            readArrived = Simulator::Now();
            // 1 us into the READ's 1024 responses, b's other QP has a packet to send.
            Simulator::Schedule(MicroSeconds(1), [this]() {
                writePosted = Simulator::Now();
                RdmaSendWr w = Wr(9, RdmaWrOpcode::RDMA_WRITE, {b.Sge(kWriteSrc, kWriteBytes)});
                w.rdma.remote_addr = kRegionBase + kWriteSrc;
                w.rdma.rkey = a.mr->GetRkey();
                ASSERT_EQ(b2->PostSend(w), 0);
            });
        }
    }

    void OnBSent(uint32_t qpn, uint8_t opcode, uint32_t, uint32_t, bool)
    {
        if (qpn == b2->GetQpNum() && opcode == IbOpcode::kRcRdmaWriteOnly)
        {
            writeHandedOff = Simulator::Now();
        }
    }

    void OnARx(uint32_t qpn, uint8_t opcode, uint32_t, uint32_t)
    {
        if (qpn == a2->GetQpNum() && opcode == IbOpcode::kRcRdmaWriteOnly)
        {
            writeArrived = Simulator::Now();
        }
        if (qpn == a.qp->GetQpNum() && opcode == IbOpcode::kRcRdmaReadResponseLast)
        {
            readDone = Simulator::Now();
        }
    }

  protected:
    Ptr<RdmaQp> a2;
    Ptr<RdmaQp> b2;
    Time readArrived;
    Time writePosted;
    Time writeHandedOff;
    Time writeArrived;
    Time readDone;
};

TEST_F(RdmaEngineReadStream, ABigReadDoesNotHoldUpAnotherQpsPackets)
{
    QpOptions o;
    Setup(o);
    // A second QP pair between the same two HCAs: b's requests share b's port with the READ
    // responses b's first QP sends.
    a2 = CreateQp(a, o);
    b2 = CreateQp(b, o);
    ASSERT_TRUE(a2 && b2);
    Connect(a2, b.lid, b2->GetQpNum(), o.sqPsn, o);
    Connect(b2, a.lid, a2->GetQpNum(), o.sqPsn, o);
    b.hca.engine->TraceConnectWithoutContext(
        "PacketReceived", MakeCallback(&RdmaEngineReadStream::OnBRx, this));
    b.hca.engine->TraceConnectWithoutContext(
        "PacketSent", MakeCallback(&RdmaEngineReadStream::OnBSent, this));
    a.hca.engine->TraceConnectWithoutContext(
        "PacketReceived", MakeCallback(&RdmaEngineReadStream::OnARx, this));

    b.Write(0, TestBytes(kReadBytes, 11));
    b.Write(kWriteSrc, TestBytes(kWriteBytes, 12));
    RdmaSendWr rd = Wr(1, RdmaWrOpcode::RDMA_READ, {a.Sge(0, kReadBytes)});
    rd.rdma.remote_addr = kRegionBase;
    rd.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(rd), 0);
    RunFor(MilliSeconds(2));

    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(a.Read(0, kReadBytes), TestBytes(kReadBytes, 11));
    auto sc2 = b2->GetSendCq()->Poll(16);
    ASSERT_EQ(sc2.size(), 1u);
    EXPECT_EQ(sc2[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(a.Read(kWriteSrc, kWriteBytes), TestBytes(kWriteBytes, 12));

    // A READ response's payload alone takes 1024 B x 8 / 200 Gb/s = 40.96 ns on the link; the
    // READ's 1024 responses take at least 1024 of those.
    const Time packet = PicoSeconds(40960);
    ASSERT_FALSE(readDone.IsZero());
    ASSERT_FALSE(writeArrived.IsZero());
    EXPECT_GE(readDone - readArrived, packet * 1024);
    // The other QP's packet reaches the port within two packet times of its post (the turn
    // of one READ response), and the far host after at most the port's queue of packets
    // ahead of it (TxQueuePackets) plus the path; not behind the rest of the READ.
    UintegerValue queue;
    fabric.HostPort(1)->GetAttribute("TxQueuePackets", queue);
    EXPECT_LE(writeHandedOff - writePosted, packet * 2);
    EXPECT_LE(writeArrived - writePosted, packet * (queue.Get() + 4) + MicroSeconds(1));
    EXPECT_LT(writeArrived, readDone - packet * 500);
}

TEST_F(RdmaEngineReadStream, ResponsesAfterAReadWaitForItsLastResponse)
{
    // A WRITE behind a READ on the same QP is acknowledged only after the READ's responses
    // (responses in PSN order): the requester sees no gap, no retransmission.
    // 256 responses: more than the port's queue (TxQueuePackets 64) takes at once, so the
    // ACK is built while most of them are still to come.
    constexpr uint32_t kLen = 256 * 1024;
    QpOptions o;
    Setup(o);
    b.Write(0, TestBytes(kLen, 5));
    a.Write(1u << 20, TestBytes(2000, 6));
    RdmaSendWr rd = Wr(1, RdmaWrOpcode::RDMA_READ, {a.Sge(0, kLen)});
    rd.rdma.remote_addr = kRegionBase;
    rd.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(rd), 0);
    RdmaSendWr wr = Wr(2, RdmaWrOpcode::RDMA_WRITE, {a.Sge(1u << 20, 2000)});
    wr.rdma.remote_addr = kRegionBase + (2u << 20);
    wr.rdma.rkey = b.mr->GetRkey();
    ASSERT_EQ(a.qp->PostSend(wr), 0);
    std::vector<uint8_t> order;
    struct Log
    {
        std::vector<uint8_t>* v;
        void Rx(uint32_t, uint8_t op, uint32_t, uint32_t)
        {
            v->push_back(op);
        }
    } log{&order};
    a.hca.engine->TraceConnectWithoutContext("PacketReceived", MakeCallback(&Log::Rx, &log));
    RunFor(MilliSeconds(1));
    auto sc = a.PollSend();
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(sc[1].status, RdmaWcStatus::SUCCESS);
    EXPECT_EQ(a.Read(0, kLen), TestBytes(kLen, 5));
    EXPECT_EQ(b.Read(2u << 20, 2000), TestBytes(2000, 6));
    EXPECT_EQ(a.hca.engine->GetCounters().retransmittedPackets, 0u);
    // 256 responses (First, 254 Middle, Last), then the ACK.
    ASSERT_EQ(order.size(), 257u);
    EXPECT_EQ(order.front(), IbOpcode::kRcRdmaReadResponseFirst);
    EXPECT_EQ(order[255], IbOpcode::kRcRdmaReadResponseLast);
    EXPECT_EQ(order.back(), IbOpcode::kRcAcknowledge);
}

} // namespace
} // namespace cnuas_test
