// Fuzz target: bytes arriving on a live InfiniBand fabric's cables
// (IbNetDevice::InjectReceivedBytes), as a broken or hostile peer would send them: the link
// layer's checks, the switch, the management agents behind QP0/QP1 (SMA, PMA, the SA of the
// built-in SM) and the RDMA engine all see them.
//
// The fabric: h0 - switch - h1, brought up by the static subnet helper; one RC QP on each host,
// connected. h1's whole region is registered for local access only, except one sub-range
// registered for remote write: after every input, every byte of h1's memory outside that
// sub-range and the buffers of its posted receives must be what it was (IBA vol. 1 §10.6: remote access only through an R_Key whose
// region allows it).
//
// The first input byte steers the rest, so that mutated packets get past the CRC and address
// checks and reach the engine:
//   bits 0-1  where the bytes arrive: h1's port, the switch port facing h0, h0's port, h1 again
//   bit 2     fix the LRH packet length, the ICRC and the VCRC (else they stay as given)
//   bit 3     aim it: DLID := the receiving host's LID, and a DestQP other than QP0/QP1 := the
//             receiving host's QP
//   bit 4     an RETH's R_Key := h1's remotely writable region's (bit 6 clear) or the R_Key of
//             h1's region registered for local access only (bit 6 set), and its address
//             anywhere in h1's memory: every write outside the writable region must be refused
//   bit 5     run 200 us of simulated time after it (else 20 us): retransmission timers fire
#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/rdma/rdma-qp-connect.h"
#include "models/common/cnuas-init.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-lrh-header.h"
#include "models/rdma/ib-transport-headers.h"

#include "ns3/simulator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace ns3;

namespace
{

constexpr uint64_t kBase = 0x7f3a12340000ULL;
constexpr uint64_t kBytes = 256 * 1024;
constexpr uint64_t kWritableOffset = 64 * 1024;
constexpr uint64_t kWritableBytes = 16 * 1024;
/// Where h1's posted receives point: SENDs that get through may change it.
constexpr uint64_t kReceiveOffset = 128 * 1024;
constexpr uint64_t kReceiveBytes = 32 * 1024;

struct Host
{
    RdmaHca hca;
    Ptr<RdmaPd> pd;
    Ptr<RdmaMr> mr;
    Ptr<RdmaCq> cq;
    Ptr<RdmaQp> qp;
    uint16_t lid = 0;
};

struct World
{
    IbFabric fabric;
    IbStaticSubnetHelper subnet;
    std::vector<RdmaHca> hcas;
    Host h[2];
    Ptr<RdmaMr> writable;
    std::vector<uint8_t> snapshot;
};

World* g_world = nullptr;
uint64_t g_qpResets = 0;

void
Fail(const char* what)
{
    std::fprintf(stderr, "fuzz-ib-wire: %s\n", what);
    std::abort();
}

void
RunFor(Time t)
{
    Simulator::Stop(t);
    Simulator::Run();
}

/// Brings host i's QP (from RESET) to RTS towards the other host's, and posts its receives.
void
Connect(World& w, uint32_t i)
{
    RdmaQpConnectOptions o;
    o.timeout = 4;
    o.retryCnt = 1;
    o.maxRdAtomic = 4;
    const Host& peer = w.h[1 - i];
    if (!TryConnectQp(w.h[i].qp, RdmaLidAddress(peer.lid), peer.qp->GetQpNum(), o).empty())
    {
        Fail("the QPs could not be connected");
    }
    for (uint32_t r = 0; r < 32; ++r)
    {
        RdmaRecvWr wr;
        wr.wr_id = r;
        wr.sg_list = {RdmaSge{kBase + kReceiveOffset + 4096 * (r % 8), 4096,
                              w.h[i].mr->GetLkey()}};
        w.h[i].qp->PostRecv(wr);
    }
}

World*
Build()
{
    auto* w = new World;
    w->fabric = IbFabricHelper().Build(BuildTopologyFromSpec("pair"));
    w->subnet.Configure(w->fabric.nodes);
    w->hcas = RdmaHelper().Install(w->fabric);
    RunFor(MicroSeconds(10));
    for (uint32_t i = 0; i < 2; ++i)
    {
        Host& s = w->h[i];
        s.hca = w->hcas[i];
        s.lid = w->subnet.GetLid(w->fabric.hosts.Get(i));
        s.hca.memory->Map(kBase, kBytes);
        s.pd = s.hca.device->AllocPd(s.hca.memory);
        // h0 lets everything in; h1 only its writable sub-range (below).
        const uint32_t access = i == 0 ? RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
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
        if (!s.mr || !s.qp)
        {
            Fail("the fabric's verbs objects could not be made");
        }
    }
    w->writable = w->h[1].hca.device->RegMr(w->h[1].pd, kBase + kWritableOffset, kWritableBytes,
                                            RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                                                RDMA_ACCESS_REMOTE_ATOMIC);
    for (uint32_t i = 0; i < 2; ++i)
    {
        Connect(*w, i);
    }
    std::vector<uint8_t> pattern(kBytes);
    for (size_t i = 0; i < kBytes; ++i)
    {
        pattern[i] = static_cast<uint8_t>(i * 131 + 7);
    }
    w->h[1].hca.memory->Write(kBase, pattern.data(), kBytes);
    w->snapshot = pattern;
    return w;
}

uint16_t
Be16(const uint8_t* p)
{
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

/// Rewrites the fields bit 3 and bit 4 of the control byte ask for, where the packet has them.
void
Aim(std::vector<uint8_t>& p, const Host& to, bool aim, bool rkey, bool localOnlyKey)
{
    if (p.size() < IbLrhHeader::kSize + 12)
    {
        return;
    }
    const uint8_t lnh = p[1] & 3;
    if (aim)
    {
        p[2] = static_cast<uint8_t>(to.lid >> 8);
        p[3] = static_cast<uint8_t>(to.lid);
    }
    if (lnh < 2)
    {
        return; // raw packets carry no BTH
    }
    const size_t bth = IbLrhHeader::kSize + (lnh == 3 ? 40 : 0);
    if (p.size() < bth + 12)
    {
        return;
    }
    const uint32_t destQp = (uint32_t(p[bth + 5]) << 16) | (uint32_t(p[bth + 6]) << 8) | p[bth + 7];
    if (aim && destQp > 1)
    {
        const uint32_t qpn = to.qp->GetQpNum();
        p[bth + 5] = static_cast<uint8_t>(qpn >> 16);
        p[bth + 6] = static_cast<uint8_t>(qpn >> 8);
        p[bth + 7] = static_cast<uint8_t>(qpn);
    }
    if (!rkey)
    {
        return;
    }
    // RC RDMA WRITE First/Only (and with immediate), RDMA READ request: an RETH after the BTH.
    const uint8_t op = p[bth];
    const bool hasReth = op == 0x06 || op == 0x0A || op == 0x0B || op == 0x0C || op == 0x46 ||
                         op == 0x4A || op == 0x4B;
    if (hasReth && p.size() >= bth + 12 + 16 && g_world->writable)
    {
        uint8_t* reth = p.data() + bth + 12;
        // Mostly in the writable region, sometimes anywhere in h1's memory.
        const uint64_t offset = (reth[5] & 1) ? (uint64_t(Be16(reth + 6)) << 2) % kBytes
                                              : kWritableOffset + Be16(reth + 6) % kWritableBytes;
        const uint64_t va = kBase + offset;
        for (int i = 0; i < 8; ++i)
        {
            reth[i] = static_cast<uint8_t>(va >> (56 - 8 * i));
        }
        const uint32_t key =
            localOnlyKey ? g_world->h[1].mr->GetRkey() : g_world->writable->GetRkey();
        for (int i = 0; i < 4; ++i)
        {
            reth[8 + i] = static_cast<uint8_t>(key >> (24 - 8 * i));
        }
    }
}

/// LRH PktLen (words, LRH through ICRC), ICRC and VCRC made right for the bytes there are.
void
FixCrcs(std::vector<uint8_t>& p)
{
    if (p.size() < IbLrhHeader::kSize + kIbVcrcSize)
    {
        return;
    }
    // A packet is a whole number of 4-byte words plus the VCRC.
    p.resize(((p.size() - kIbVcrcSize) + 3) / 4 * 4 + kIbVcrcSize, 0);
    const size_t words = (p.size() - kIbVcrcSize) / 4;
    p[4] = static_cast<uint8_t>((p[4] & 0xF8) | ((words >> 8) & 0x07));
    p[5] = static_cast<uint8_t>(words);
    const uint8_t lnh = p[1] & 3;
    const size_t end = p.size() - kIbVcrcSize;
    if (lnh >= 2 && end >= IbLrhHeader::kSize + kIbIcrcSize)
    {
        IbStoreIcrc(p.data() + end - kIbIcrcSize, IbComputeIcrc(p.data(), end - kIbIcrcSize));
    }
    IbStoreVcrc(p.data() + end, IbComputeVcrc(p.data(), end));
}

} // namespace

/// What the inputs reached in h1's RDMA engine: the driver prints it after a run.
extern "C" void
CnuasFuzzSummary(std::FILE* out)
{
    if (!g_world)
    {
        return;
    }
    const RdmaEngineCounters& c = g_world->h[1].hca.engine->GetCounters();
    std::fprintf(out,
                 "h1's engine: %llu packets taken, %llu ACKs, %llu NAKs, %llu receive "
                 "completions, %llu P_Key violations; QPs reset after an error: %llu\n",
                 static_cast<unsigned long long>(c.packetsReceived),
                 static_cast<unsigned long long>(c.acksSent),
                 static_cast<unsigned long long>(c.naksSent),
                 static_cast<unsigned long long>(c.recvCompletions),
                 static_cast<unsigned long long>(c.pkeyViolations),
                 static_cast<unsigned long long>(g_qpResets));
}

/// Picosecond time resolution, before any Time exists, as every Cnuas program (cnuas-init.h).
extern "C" int
LLVMFuzzerInitialize(int*, char***)
{
    CnuasInit();
    return 0;
}

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1 || size > 8192)
    {
        return 0;
    }
    if (!g_world)
    {
        g_world = Build();
    }
    World& w = *g_world;
    const uint8_t control = data[0];
    std::vector<uint8_t> p(data + 1, data + size);
    Ptr<IbNetDevice> port;
    const Host* to = &w.h[1];
    switch (control & 3)
    {
    case 1:
        port = w.fabric.HostPort(0)->GetPeer(); // as if h0 had sent it: forwarded to h1
        break;
    case 2:
        port = w.fabric.HostPort(0);
        to = &w.h[0];
        break;
    default:
        port = w.fabric.HostPort(1);
        break;
    }
    Aim(p, *to, control & 8, control & 16, control & 64);
    if (control & 4)
    {
        FixCrcs(p);
    }
    port->InjectReceivedBytes(p.empty() ? nullptr : p.data(), static_cast<uint32_t>(p.size()));
    RunFor(MicroSeconds((control & 32) ? 200 : 20));
    // h1's memory: only the remotely writable range and the receive buffers may have changed.
    std::vector<uint8_t> now(kBytes);
    w.h[1].hca.memory->Read(kBase, now.data(), kBytes);
    auto same = [&](uint64_t from, uint64_t to) {
        return std::memcmp(now.data() + from, w.snapshot.data() + from, to - from) == 0;
    };
    if (!same(0, kWritableOffset) || !same(kWritableOffset + kWritableBytes, kReceiveOffset) ||
        !same(kReceiveOffset + kReceiveBytes, kBytes))
    {
        Fail("bytes of h1 outside its remotely writable region and receive buffers changed");
    }
    // A QP that an input put in error is reset and connected again, so that the next inputs
    // meet a working engine; receives a SEND consumed are posted again.
    for (uint32_t i = 0; i < 2; ++i)
    {
        Host& h = w.h[i];
        for (const RdmaWc& wc : h.cq->Poll(1024))
        {
            if ((wc.opcode == RdmaWcOpcode::RECV || wc.opcode == RdmaWcOpcode::RECV_RDMA_WITH_IMM) &&
                h.qp->GetState() == RdmaQpState::RTS)
            {
                RdmaRecvWr wr;
                wr.wr_id = wc.wr_id;
                wr.sg_list = {RdmaSge{kBase + kReceiveOffset + 4096 * (wc.wr_id % 8), 4096,
                                      h.mr->GetLkey()}};
                h.qp->PostRecv(wr);
            }
        }
        if (h.qp->GetState() != RdmaQpState::RTS)
        {
            RdmaQpAttr reset;
            reset.qp_state = RdmaQpState::RESET;
            h.qp->Modify(reset, RDMA_QP_STATE);
            ++g_qpResets;
            h.cq->Poll(1024);
            Connect(w, i);
        }
    }
    return 0;
}
