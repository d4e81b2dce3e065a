// Micro-benchmarks of the InfiniBand wire path: header serialization (raw and through
// ns3::Packet), VCRC/ICRC throughput and per-packet pcap writing. Figures: docs/ib-wire.md.
#include "bench/bench-util.h"
#include "helpers/trace/ib-pcap-writer.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-lrh-header.h"
#include "models/rdma/ib-bth-header.h"

#include "ns3/nstime.h"
#include "ns3/packet.h"

#include <benchmark/benchmark.h>
#include <boost/crc.hpp>

#include <cstdint>
#include <vector>

using namespace ns3;

namespace
{

IbLrhHeader
SampleLrh()
{
    IbLrhHeader lrh;
    lrh.SetVl(1);
    lrh.SetSl(2);
    lrh.SetLnh(IbLnh::IbaLocal);
    lrh.SetDlid(0x1234);
    lrh.SetSlid(0x0042);
    lrh.SetPktLenWords(70);
    return lrh;
}

IbBthHeader
SampleBth()
{
    IbBthHeader bth;
    bth.SetOpCode(0x0A);
    bth.SetPadCnt(2);
    bth.SetDestQp(0x00ABCD);
    bth.SetAckReq(true);
    bth.SetPsn(0x123456);
    return bth;
}

/// A complete local packet (LRH + BTH + payload + ICRC + VCRC) of exactly total bytes.
std::vector<uint8_t>
SamplePacket(size_t total)
{
    std::vector<uint8_t> pkt(total);
    for (size_t i = 0; i < total; ++i)
    {
        pkt[i] = static_cast<uint8_t>(i * 131 + 7);
    }
    IbLrhHeader lrh = SampleLrh();
    lrh.SetPktLenWords(static_cast<uint16_t>((total - kIbVcrcSize) / 4));
    lrh.WriteTo(pkt.data());
    SampleBth().WriteTo(pkt.data() + IbLrhHeader::kSize);
    IbFillCrcs(pkt.data(), pkt.size());
    return pkt;
}

// ---- header serialization, raw ---------------------------------------------------------------

void
BM_LrhWriteTo(benchmark::State& state)
{
    const IbLrhHeader lrh = SampleLrh();
    uint8_t out[IbLrhHeader::kSize];
    for (auto _ : state)
    {
        lrh.WriteTo(out);
        benchmark::DoNotOptimize(out);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LrhWriteTo);

void
BM_LrhReadFrom(benchmark::State& state)
{
    uint8_t raw[IbLrhHeader::kSize];
    SampleLrh().WriteTo(raw);
    IbLrhHeader lrh;
    for (auto _ : state)
    {
        benchmark::DoNotOptimize(raw);
        lrh.ReadFrom(raw);
        benchmark::DoNotOptimize(lrh);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LrhReadFrom);

void
BM_BthWriteTo(benchmark::State& state)
{
    const IbBthHeader bth = SampleBth();
    uint8_t out[IbBthHeader::kSize];
    for (auto _ : state)
    {
        bth.WriteTo(out);
        benchmark::DoNotOptimize(out);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BthWriteTo);

void
BM_BthReadFrom(benchmark::State& state)
{
    uint8_t raw[IbBthHeader::kSize];
    SampleBth().WriteTo(raw);
    IbBthHeader bth;
    for (auto _ : state)
    {
        benchmark::DoNotOptimize(raw);
        bth.ReadFrom(raw);
        benchmark::DoNotOptimize(bth);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BthReadFrom);

// ---- header serialization through ns3::Packet -----------------------------------------------

/// Create a packet with a payload of range(0) bytes and add BTH then LRH (what a sender does).
void
BM_PacketAddLrhBth(benchmark::State& state)
{
    const IbLrhHeader lrh = SampleLrh();
    const IbBthHeader bth = SampleBth();
    const auto payload = static_cast<uint32_t>(state.range(0));
    for (auto _ : state)
    {
        Ptr<Packet> p = Create<Packet>(payload);
        p->AddHeader(bth);
        p->AddHeader(lrh);
        benchmark::DoNotOptimize(p);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PacketAddLrhBth)->Arg(0)->Arg(256)->Arg(4096);

/// Copy a received packet (copy-on-write) and remove LRH then BTH (what a receiver does).
void
BM_PacketRemoveLrhBth(benchmark::State& state)
{
    Ptr<Packet> proto = Create<Packet>(static_cast<uint32_t>(state.range(0)));
    proto->AddHeader(SampleBth());
    proto->AddHeader(SampleLrh());
    IbLrhHeader lrh;
    IbBthHeader bth;
    for (auto _ : state)
    {
        Ptr<Packet> p = proto->Copy();
        p->RemoveHeader(lrh);
        p->RemoveHeader(bth);
        benchmark::DoNotOptimize(lrh);
        benchmark::DoNotOptimize(bth);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PacketRemoveLrhBth)->Arg(0)->Arg(256)->Arg(4096);

// ---- CRCs -----------------------------------------------------------------------------------

void
BM_Vcrc(benchmark::State& state)
{
    const auto pkt = SamplePacket(static_cast<size_t>(state.range(0)));
    for (auto _ : state)
    {
        benchmark::DoNotOptimize(IbComputeVcrc(pkt.data(), pkt.size() - kIbVcrcSize));
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(pkt.size() - kIbVcrcSize));
}
BENCHMARK(BM_Vcrc)->Arg(64)->Arg(256)->Arg(4096);

/// Reference point: Boost.CRC's byte-at-a-time table for the same CRC-16.
void
BM_VcrcBoost(benchmark::State& state)
{
    const auto pkt = SamplePacket(static_cast<size_t>(state.range(0)));
    for (auto _ : state)
    {
        boost::crc_optimal<16, 0x100B, 0xFFFF, 0xFFFF, true, true> crc;
        crc.process_bytes(pkt.data(), pkt.size() - kIbVcrcSize);
        benchmark::DoNotOptimize(crc.checksum());
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(pkt.size() - kIbVcrcSize));
}
BENCHMARK(BM_VcrcBoost)->Arg(64)->Arg(256)->Arg(4096);

void
BM_Icrc(benchmark::State& state)
{
    const auto pkt = SamplePacket(static_cast<size_t>(state.range(0)));
    const size_t covered = pkt.size() - kIbVcrcSize - kIbIcrcSize;
    for (auto _ : state)
    {
        benchmark::DoNotOptimize(IbComputeIcrc(pkt.data(), covered));
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(covered));
}
BENCHMARK(BM_Icrc)->Arg(64)->Arg(256)->Arg(4096);

/// Both CRCs of a packet, as a sending port fills them.
void
BM_FillCrcs(benchmark::State& state)
{
    auto pkt = SamplePacket(static_cast<size_t>(state.range(0)));
    for (auto _ : state)
    {
        IbFillCrcs(pkt.data(), pkt.size());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(pkt.size()));
}
BENCHMARK(BM_FillCrcs)->Arg(64)->Arg(256)->Arg(4096);

// ---- pcap ------------------------------------------------------------------------------------

/// One ERF record per packet through PcapFileWrapper. Written to /dev/null so that the figure
/// is the CPU cost of the trace path, not of the disk.
void
BM_PcapWrite(benchmark::State& state)
{
    const auto pkt = SamplePacket(static_cast<size_t>(state.range(0)));
    IbErfPcapWriter w;
    if (!w.Open("/dev/null"))
    {
        state.SkipWithError("cannot open /dev/null");
        return;
    }
    int64_t ns = 0;
    for (auto _ : state)
    {
        w.Write(NanoSeconds(ns), pkt.data(), static_cast<uint32_t>(pkt.size()));
        ns += 7;
    }
    w.Close();
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(pkt.size()));
}
BENCHMARK(BM_PcapWrite)->Arg(64)->Arg(256)->Arg(4096);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
