// What the two live-fabric fuzz targets (fuzz-ib-wire.cc, fuzz-roce-wire.cc) share: the verbs
// objects on h0 and h1, h1's memory layout and the check that only its remotely writable region
// and its receive buffers change, the R_Keys planted in RETHs, and the recovery of QPs an input
// put in error. The link layer parts (where bytes enter, which CRCs to fix) are each target's.
#ifndef CNUAS_TESTS_FUZZ_LIVE_FABRIC_H
#define CNUAS_TESTS_FUZZ_LIVE_FABRIC_H

#include "helpers/rdma/rdma-qp-connect.h"
#include "models/rdma/rdma-device.h"
#include "models/rdma/rdma-engine.h"
#include "models/rdma/ib-wire-bytes.h"
#include "models/rdma/rdma-memory.h"

#include "ns3/simulator.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cnuas_fuzz
{

using namespace ns3;

/// h1's memory: one region, a remotely writable part, and the buffers its receives point at.
constexpr uint64_t kBase = 0x7f3a12340000ULL;
constexpr uint64_t kBytes = 256 * 1024;
constexpr uint64_t kWritableOffset = 64 * 1024;
constexpr uint64_t kWritableBytes = 16 * 1024;
constexpr uint64_t kReceiveOffset = 128 * 1024;
constexpr uint64_t kReceiveBytes = 32 * 1024;
constexpr uint32_t kReceives = 32;

/// A harness failure that is not the model's: the fabric could not be built.
[[noreturn]] inline void
Fail(const char* target, const char* what)
{
    std::fprintf(stderr, "%s: %s\n", target, what);
    std::abort();
}

inline void
RunFor(Time t)
{
    Simulator::Stop(t);
    Simulator::Run();
}

/// One host's verbs objects; Hca is RdmaHca (InfiniBand) or RoceHca.
template <class Hca>
struct LiveHost
{
    Hca hca;
    Ptr<RdmaPd> pd;
    Ptr<RdmaMr> mr;
    Ptr<RdmaCq> cq;
    Ptr<RdmaQp> qp;
};

/// The region, a PD, the region's MR (remote access for h0, local only for h1), a CQ and an RC
/// QP. False if the device refused any of them.
template <class Hca>
bool
MakeHost(LiveHost<Hca>& s, const Hca& hca, bool remoteAccess)
{
    s.hca = hca;
    s.hca.memory->Map(kBase, kBytes);
    s.pd = s.hca.device->AllocPd(s.hca.memory);
    const uint32_t access = remoteAccess ? RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                                               RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC
                                         : RDMA_ACCESS_LOCAL_WRITE;
    s.mr = s.hca.device->RegMr(s.pd, kBase, kBytes, access);
    s.cq = s.hca.device->CreateCq(1024);
    RdmaQpInitAttr init;
    init.send_cq = s.cq;
    init.recv_cq = s.cq;
    init.qp_type = RdmaQpType::RC;
    init.cap.max_send_wr = 64;
    init.cap.max_recv_wr = 64;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    s.qp = s.hca.device->CreateQp(s.pd, init);
    return s.mr && s.qp;
}

/// h1's remotely writable part of its region.
template <class Hca>
Ptr<RdmaMr>
RegisterWritable(LiveHost<Hca>& h1)
{
    return h1.hca.device->RegMr(h1.pd, kBase + kWritableOffset, kWritableBytes,
                                RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                                    RDMA_ACCESS_REMOTE_ATOMIC);
}

/// Posts receive `id` into its buffer (SENDs that get through land there).
template <class Hca>
void
PostReceive(LiveHost<Hca>& h, uint64_t id)
{
    RdmaRecvWr wr;
    wr.wr_id = id;
    wr.sg_list = {RdmaSge{kBase + kReceiveOffset + 4096 * (id % 8), 4096, h.mr->GetLkey()}};
    h.qp->PostRecv(wr);
}

/// A BTH's DestQP := `qpn` if it names a QP other than QP0/QP1 (left to management).
inline void
AimDestQp(uint8_t* bth, uint32_t qpn)
{
    if (IbWireLoad24(bth + 5) > 1)
    {
        IbWireStore24(bth + 5, qpn);
    }
}

/// Brings h's QP (from RESET) to RTS towards `peer` (a short ACK timeout and one retry, so
/// that errors come quickly; four outstanding reads and atomics) and posts its receives.
template <class Hca>
void
Connect(LiveHost<Hca>& h, const RdmaAhAttr& peer, uint32_t peerQpn, const char* target)
{
    RdmaQpConnectOptions o;
    o.timeout = 4;
    o.retryCnt = 1;
    o.maxRdAtomic = 4;
    if (!TryConnectQp(h.qp, peer, peerQpn, o).empty())
    {
        Fail(target, "the QPs could not be connected");
    }
    for (uint32_t r = 0; r < kReceives; ++r)
    {
        PostReceive(h, r);
    }
}

/// Fills the region with a pattern; returns it, the snapshot later inputs are checked against.
inline std::vector<uint8_t>
FillPattern(RdmaSimulatedMemory& memory)
{
    std::vector<uint8_t> pattern(kBytes);
    for (size_t i = 0; i < kBytes; ++i)
    {
        pattern[i] = static_cast<uint8_t>(i * 131 + 7);
    }
    memory.Write(kBase, pattern.data(), kBytes);
    return pattern;
}

/// True if every byte outside the writable part and the receive buffers is the snapshot's
/// (IBA vol. 1 §10.6: remote access only through an R_Key whose region allows it).
inline bool
OnlyWritableChanged(const RdmaSimulatedMemory& memory, const std::vector<uint8_t>& snapshot)
{
    std::vector<uint8_t> now(kBytes);
    memory.Read(kBase, now.data(), kBytes);
    auto same = [&](uint64_t from, uint64_t to) {
        return std::memcmp(now.data() + from, snapshot.data() + from, to - from) == 0;
    };
    return same(0, kWritableOffset) && same(kWritableOffset + kWritableBytes, kReceiveOffset) &&
           same(kReceiveOffset + kReceiveBytes, kBytes);
}

/// The RC request opcodes that carry an RETH (IBA vol. 1 §9.2, Table 38): RDMA WRITE First,
/// Only, Only with immediate, RDMA READ Request; and their UC twins.
inline bool
HasReth(uint8_t opcode)
{
    return opcode == 0x06 || opcode == 0x0A || opcode == 0x0B || opcode == 0x0C ||
           opcode == 0x26 || opcode == 0x2A || opcode == 0x2B;
}

/// Rewrites an RETH (16 bytes at `reth`): the R_Key of the writable region or of h1's local-only
/// region, and an address mostly in the writable region, sometimes anywhere in h1's memory.
inline void
PlantReth(uint8_t* reth, uint32_t writableKey, uint32_t localOnlyKey, bool localOnly)
{
    const uint16_t pick = static_cast<uint16_t>((reth[6] << 8) | reth[7]);
    const uint64_t offset = (reth[5] & 1) ? (uint64_t(pick) << 2) % kBytes
                                          : kWritableOffset + pick % kWritableBytes;
    IbWireStore64(reth, kBase + offset);
    IbWireStore32(reth + 8, localOnly ? localOnlyKey : writableKey);
}

/// After an input: receives a SEND consumed are posted again, and a QP the input put in error
/// is reset and handed to `connect(i)` (RESET to RTS, receives posted), so that the next inputs
/// meet a working engine. Returns how many QPs were reset.
template <class Hca, class Connect>
uint64_t
Recover(LiveHost<Hca> (&hosts)[2], Connect connect)
{
    uint64_t resets = 0;
    for (uint32_t i = 0; i < 2; ++i)
    {
        LiveHost<Hca>& h = hosts[i];
        for (const RdmaWc& wc : h.cq->Poll(1024))
        {
            if ((wc.opcode == RdmaWcOpcode::RECV || wc.opcode == RdmaWcOpcode::RECV_RDMA_WITH_IMM) &&
                h.qp->GetState() == RdmaQpState::RTS)
            {
                PostReceive(h, wc.wr_id);
            }
        }
        if (h.qp->GetState() != RdmaQpState::RTS)
        {
            RdmaQpAttr reset;
            reset.qp_state = RdmaQpState::RESET;
            h.qp->Modify(reset, RDMA_QP_STATE);
            h.cq->Poll(1024);
            connect(i);
            ++resets;
        }
    }
    return resets;
}

/// What the inputs reached in h1's engine, for the driver's closing lines.
inline void
PrintEngineSummary(std::FILE* out, const RdmaEngineCounters& c, uint64_t resets)
{
    std::fprintf(out,
                 "h1's engine: %llu packets taken, %llu ACKs, %llu NAKs, %llu receive "
                 "completions, %llu P_Key violations; QPs reset after an error: %llu\n",
                 static_cast<unsigned long long>(c.packetsReceived),
                 static_cast<unsigned long long>(c.acksSent),
                 static_cast<unsigned long long>(c.naksSent),
                 static_cast<unsigned long long>(c.recvCompletions),
                 static_cast<unsigned long long>(c.pkeyViolations),
                 static_cast<unsigned long long>(resets));
}

} // namespace cnuas_fuzz

#endif
