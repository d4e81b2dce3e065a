// InfiniBand multicast on a k-ary fat-tree with the built-in SM: every host joins one group
// through the SA (an MCMemberRecord Set from each host's port to the SM LID; the SM writes the
// switches' MFTs with SMPs and answers each join once they are written), then host 0 sends
// UD messages to the group and every host's QP takes each one (host 0's own by loopback).
//
//   build/bin/multicast-bench --benchmark_filter=IbMulticastFanOut/8
//
// Figures: the joins' simulated and wall time and the MFT blocks the SM wrote; for the data,
// packet copies delivered, the copies the switches made, events per delivered copy, wall time.
#include "bench/bench-util.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/rdma/rdma-qp-connect.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-gmp.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sa-records.h"
#include "models/mgmt/ib-subnet-manager.h"

#include "ns3/simulator.h"

#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdlib>

using namespace ns3;

namespace
{

constexpr uint32_t kQkey = 0x01234567; // RDMA_UDP_QKEY, as rdma_cm's groups use
constexpr uint64_t kRegion = 0x7f0000000000ULL;

void
IbMulticastFanOut(benchmark::State& state)
{
    const uint32_t k = static_cast<uint32_t>(state.range(0));
    const uint32_t messages = static_cast<uint32_t>(state.range(1));
    for (auto _ : state)
    {
        IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("fat-tree:k=" + std::to_string(k)));
        IbSmBringUp up = IbBringUpWithSm(f, 1, Seconds(10));
        const uint32_t hosts = f.hosts.GetN();
        // ---- every host joins through the SA ----------------------------------------------
        uint32_t answered = 0;
        uint32_t refused = 0;
        uint16_t mlid = 0;
        std::array<uint8_t, 16> mgid{0xFF, 0x12, 0x40, 0x01, 0xFF, 0xFF, 0, 0,
                                     0,    0,    0,    0,    0xE0, 1,    2,    3};
        for (uint32_t h = 0; h < hosts; ++h)
        {
            IbMgmtHelper::GetDispatcher(f.hosts.Get(h))
                ->SetManagerHandler(IbMadDispatcher::MadHandler([&](const IbReceivedMad& m) {
                    IbSaMad r;
                    r.ReadFrom(m.view.mad.data());
                    if (r.Mad().GetAttributeId() != IbSaAttr::McMemberRecord)
                    {
                        return;
                    }
                    if (r.Mad().GetStatus() != 0)
                    {
                        ++refused;
                        return;
                    }
                    IbMcMemberRecord rec;
                    rec.ReadFrom(r.Data());
                    mlid = rec.mlid;
                    ++answered;
                }));
        }
        const Time joinStart = Simulator::Now();
        const uint64_t mftBefore = up.sm->GetMftBlocksWritten();
        const auto tJoin = std::chrono::steady_clock::now();
        for (uint32_t h = 0; h < hosts; ++h)
        {
            Ptr<IbNetDevice> port = f.HostPort(h);
            IbMcMemberRecord rec;
            rec.mgid = mgid;
            rec.portGid = IbPortGid(port->GetPortGuid());
            rec.qkey = kQkey;
            rec.pkey = 0xFFFF;
            rec.joinState = IbMcMemberRecord::kFullMember;
            const auto bytes =
                rec.Request(IbMadMethod::Set, IbMcMemberRecord::kCreateMask, 0x4D430000 + h);
            IbMgmtHelper::GetDispatcher(f.hosts.Get(h))
                ->SendGmp(port->GetPortNumber(), bytes.data(), port->GetSmLid(), 1, 0);
        }
        while (answered + refused < hosts && Simulator::Now() - joinStart < Seconds(1))
        {
            Simulator::Stop(MicroSeconds(20));
            Simulator::Run();
        }
        const double joinWall = BenchSecondsSince(tJoin);
        const Time joinSim = Simulator::Now() - joinStart;
        // ---- host 0 sends to the group; every host's QP takes each message ----------------
        std::vector<RdmaHca> hcas = RdmaHelper().Install(f);
        std::vector<Ptr<RdmaCq>> recvCqs;
        Ptr<RdmaQp> sender;
        Ptr<RdmaPd> senderPd;
        Ptr<RdmaMr> senderMr;
        Ptr<RdmaCq> senderCq;
        for (uint32_t h = 0; h < hosts; ++h)
        {
            RdmaHca& hca = hcas[h];
            hca.memory->Map(kRegion, (messages + 1) * 2048ull);
            Ptr<RdmaPd> pd = hca.device->AllocPd(hca.memory);
            Ptr<RdmaMr> mr = hca.device->RegMr(pd, kRegion, (messages + 1) * 2048ull,
                                               RDMA_ACCESS_LOCAL_WRITE);
            Ptr<RdmaCq> scq = hca.device->CreateCq(messages + 16);
            Ptr<RdmaCq> rcq = hca.device->CreateCq(messages + 16);
            RdmaQpInitAttr init;
            init.send_cq = scq;
            init.recv_cq = rcq;
            init.qp_type = RdmaQpType::UD;
            init.cap.max_send_wr = messages + 1;
            init.cap.max_recv_wr = messages + 1;
            init.cap.max_send_sge = 1;
            init.cap.max_recv_sge = 1;
            Ptr<RdmaQp> qp = hca.device->CreateQp(pd, init);
            RdmaQpConnectOptions o;
            o.qkey = kQkey;
            TryConnectQp(qp, RdmaLidAddress(f.HostPort(h)->GetLid()), 0, o);
            RdmaGid g{};
            std::copy(mgid.begin(), mgid.end(), g.begin());
            hca.device->AttachMcast(qp, g, mlid);
            for (uint32_t i = 0; i < messages; ++i)
            {
                RdmaRecvWr wr;
                wr.wr_id = i;
                wr.sg_list = {RdmaSge{kRegion + 2048ull * (i + 1), 2048, mr->GetLkey()}};
                qp->PostRecv(wr);
            }
            recvCqs.push_back(rcq);
            if (h == 0)
            {
                sender = qp;
                senderPd = pd;
                senderMr = mr;
                senderCq = scq;
            }
        }
        RdmaAhAttr av;
        av.dlid = mlid;
        av.port_num = 1;
        av.is_global = 1;
        std::copy(mgid.begin(), mgid.end(), av.grh.dgid.begin());
        av.grh.hop_limit = 1;
        Ptr<RdmaAh> ah = hcas[0].device->CreateAh(senderPd, av);
        uint64_t copiesBefore = 0;
        for (uint32_t n = 0; n < f.switches.GetN(); ++n)
        {
            copiesBefore += f.switches.Get(n)->GetObject<IbSwitch>()->GetMulticastCopies();
        }
        const uint64_t events0 = Simulator::GetEventCount();
        const double cpu0 = BenchCpuSeconds();
        const auto tData = std::chrono::steady_clock::now();
        for (uint32_t i = 0; i < messages; ++i)
        {
            RdmaSendWr w;
            w.wr_id = i;
            w.opcode = RdmaWrOpcode::SEND;
            w.sg_list = {RdmaSge{kRegion, 1024, senderMr->GetLkey()}};
            w.ud.ah = PeekPointer(ah);
            w.ud.remote_qpn = kRdmaMulticastQpn;
            w.ud.remote_qkey = kQkey;
            sender->PostSend(w);
        }
        uint64_t delivered = 0;
        const Time dataStart = Simulator::Now();
        while (delivered < uint64_t(messages) * hosts && Simulator::Now() - dataStart < Seconds(1))
        {
            Simulator::Stop(MicroSeconds(50));
            Simulator::Run();
            for (const Ptr<RdmaCq>& cq : recvCqs)
            {
                delivered += cq->Poll(1 << 20).size();
            }
        }
        const double dataWall = BenchSecondsSince(tData);
        const double dataCpu = BenchCpuSeconds() - cpu0;
        const uint64_t events = Simulator::GetEventCount() - events0;
        uint64_t copies = 0;
        for (uint32_t n = 0; n < f.switches.GetN(); ++n)
        {
            copies += f.switches.Get(n)->GetObject<IbSwitch>()->GetMulticastCopies();
        }
        copies -= copiesBefore;
        state.SetIterationTime(joinWall + dataWall);
        state.counters["hosts"] = hosts;
        state.counters["joins_answered"] = answered;
        state.counters["joins_refused"] = refused;
        state.counters["join_sim_us"] = joinSim.GetSeconds() * 1e6;
        state.counters["join_wall_s"] = joinWall;
        state.counters["mft_blocks_written"] = double(up.sm->GetMftBlocksWritten() - mftBefore);
        state.counters["messages"] = messages;
        state.counters["copies_delivered"] = double(delivered);
        state.counters["switch_copies"] = double(copies);
        state.counters["data_sim_us"] = (Simulator::Now() - dataStart).GetSeconds() * 1e6;
        state.counters["data_wall_s"] = dataWall;
        state.counters["data_cpu_s"] = dataCpu;
        state.counters["events_per_delivered_copy"] = delivered ? double(events) / delivered : 0;
        state.counters["peak_rss_mb"] = BenchPeakRssMb();
        Simulator::Destroy();
    }
}
BENCHMARK(IbMulticastFanOut)
    ->Args({4, 200})
    ->Args({8, 200})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
