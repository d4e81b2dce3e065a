// Whole-simulation benchmarks of the RDMA packet engine over the InfiniBand link layer: RC
// WRITE streams and many QPs, two hosts behind one switch (4x HDR). Reports simulated goodput,
// transport packets per wall-clock second and ns-3 events per transport packet.
//
//   build/bin/rdma-bench --benchmark_filter=RcWriteStream
#include "bench/bench-util.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/rdma/rdma-helper.h"

#include "ns3/simulator.h"

#include <benchmark/benchmark.h>

#include <chrono>

using namespace ns3;

namespace
{
constexpr uint64_t kBase = 0x7f0000000000ULL;
constexpr uint64_t kBytes = 64u << 20;

struct Host
{
    RdmaHca hca;
    Ptr<RdmaPd> pd;
    Ptr<RdmaMr> mr;
    Ptr<RdmaCq> cq;
};

void
Connect(Ptr<RdmaQp> qp, uint16_t dlid, uint32_t dest)
{
    RdmaQpAttr a;
    a.qp_state = RdmaQpState::INIT;
    a.port_num = 1;
    a.qp_access_flags = RDMA_ACCESS_REMOTE_WRITE | RDMA_ACCESS_REMOTE_READ;
    qp->Modify(a, RDMA_QP_STATE | RDMA_QP_PKEY_INDEX | RDMA_QP_PORT | RDMA_QP_ACCESS_FLAGS);
    a.qp_state = RdmaQpState::RTR;
    a.ah_attr.dlid = dlid;
    a.ah_attr.port_num = 1;
    a.path_mtu = RdmaMtu::MTU_4096;
    a.dest_qp_num = dest;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 1;
    qp->Modify(a, RDMA_QP_STATE | RDMA_QP_AV | RDMA_QP_PATH_MTU | RDMA_QP_DEST_QPN |
                      RDMA_QP_RQ_PSN | RDMA_QP_MAX_DEST_RD_ATOMIC | RDMA_QP_MIN_RNR_TIMER);
    a.qp_state = RdmaQpState::RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    qp->Modify(a, RDMA_QP_STATE | RDMA_QP_SQ_PSN | RDMA_QP_TIMEOUT | RDMA_QP_RETRY_CNT |
                      RDMA_QP_RNR_RETRY | RDMA_QP_MAX_QP_RD_ATOMIC);
}

/// Time of the latest send completion; stops the simulation after the expected number (so
/// that the idle link's periodic flow-control refreshes do not count).
struct LastCompletion
{
    Time at;
    uint32_t expected = 0;
    uint32_t seen = 0;

    void On(const RdmaWc&, bool receive)
    {
        if (!receive)
        {
            at = Simulator::Now();
            if (++seen == expected)
            {
                Simulator::Stop();
            }
        }
    }
};

/// `qps` QP pairs, each posting `wrs` WRITEs of `size` bytes.
void
Run(benchmark::State& state, uint32_t qps, uint32_t wrs, uint32_t size)
{
    for (auto _ : state)
    {
        IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("pair"));
        IbStaticSubnetHelper subnet;
        subnet.Configure(f.nodes);
        auto hcas = RdmaHelper().Install(f);
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
        Host h[2];
        for (int i = 0; i < 2; ++i)
        {
            h[i].hca = hcas[i];
            h[i].hca.memory->Map(kBase, kBytes);
            h[i].pd = h[i].hca.device->AllocPd(h[i].hca.memory);
            h[i].mr = h[i].hca.device->RegMr(h[i].pd, kBase, kBytes,
                                             RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                                                 RDMA_ACCESS_REMOTE_READ);
            h[i].cq = h[i].hca.device->CreateCq(65536);
        }
        std::vector<Ptr<RdmaQp>> qa;
        for (uint32_t q = 0; q < qps; ++q)
        {
            Ptr<RdmaQp> p[2];
            for (int i = 0; i < 2; ++i)
            {
                RdmaQpInitAttr init;
                init.send_cq = h[i].cq;
                init.recv_cq = h[i].cq;
                init.cap.max_send_wr = wrs;
                init.cap.max_recv_wr = 1;
                init.cap.max_send_sge = 1;
                init.cap.max_recv_sge = 1;
                p[i] = h[i].hca.device->CreateQp(h[i].pd, init);
            }
            Connect(p[0], subnet.GetLid(f.hosts.Get(1)), p[1]->GetQpNum());
            Connect(p[1], subnet.GetLid(f.hosts.Get(0)), p[0]->GetQpNum());
            qa.push_back(p[0]);
        }
        const uint64_t events0 = Simulator::GetEventCount();
        const Time t0 = Simulator::Now();
        const auto w0 = std::chrono::steady_clock::now();
        for (uint32_t q = 0; q < qps; ++q)
        {
            for (uint32_t i = 0; i < wrs; ++i)
            {
                RdmaSendWr w;
                w.opcode = RdmaWrOpcode::RDMA_WRITE;
                w.send_flags = i + 1 == wrs ? uint32_t(RDMA_SEND_SIGNALED) : 0u;
                const uint64_t off = (uint64_t(i) * size) % (kBytes - size);
                w.sg_list = {RdmaSge{kBase + off, size, h[0].mr->GetLkey()}};
                w.rdma.remote_addr = kBase + off;
                w.rdma.rkey = h[1].mr->GetRkey();
                qa[q]->PostSend(w);
            }
        }
        LastCompletion last;
        last.expected = qps;
        h[0].hca.engine->TraceConnectWithoutContext("Completion",
                                                    MakeCallback(&LastCompletion::On, &last));
        Simulator::Stop(Seconds(10));
        Simulator::Run();
        const double wall = BenchSecondsSince(w0);
        const auto wcs = h[0].cq->Poll(1 << 20);
        const Ptr<RdmaEngine> e = h[0].hca.engine;
        const double sim = (last.at - t0).GetSeconds();
        state.SetIterationTime(wall);
        const double bytes = double(qps) * wrs * size;
        const double packets = double(e->GetCounters().packetsSent +
                                      h[1].hca.engine->GetCounters().packetsSent);
        state.counters["completions"] = double(wcs.size());
        state.counters["transport_packets"] = packets;
        state.counters["packets_per_wall_s"] = packets / wall;
        state.counters["events_per_packet"] =
            double(Simulator::GetEventCount() - events0) / packets;
        state.counters["sim_us"] = sim * 1e6;
        state.counters["goodput_gbps"] = bytes * 8 / sim / 1e9;
        Simulator::Destroy();
    }
}

void
RcWriteStream(benchmark::State& state)
{
    Run(state, 1, static_cast<uint32_t>(state.range(0)), 65536);
}

void
ManyQps(benchmark::State& state)
{
    Run(state, static_cast<uint32_t>(state.range(0)), 4, 4096);
}
} // namespace

BENCHMARK(RcWriteStream)->Arg(256)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(ManyQps)->Arg(1000)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
