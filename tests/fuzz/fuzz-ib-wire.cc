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
#include "fuzz-live-fabric.h"

#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/rdma/rdma-qp-connect.h"
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

using namespace cnuas_fuzz;

using Host = LiveHost<RdmaHca>;

struct World
{
    IbFabric fabric;
    IbStaticSubnetHelper subnet;
    std::vector<RdmaHca> hcas;
    Host h[2];
    uint16_t lid[2] = {0, 0};
    Ptr<RdmaMr> writable;
    std::vector<uint8_t> snapshot;
};

World* g_world = nullptr;
uint64_t g_qpResets = 0;

void
Fail(const char* what)
{
    cnuas_fuzz::Fail("fuzz-ib-wire", what);
}

/// Brings host i's QP (from RESET) to RTS towards the other host's, and posts its receives.
void
Connect(World& w, uint32_t i)
{
    cnuas_fuzz::Connect(w.h[i], RdmaLidAddress(w.lid[1 - i]), w.h[1 - i].qp->GetQpNum(), "fuzz-ib-wire");
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
        w->lid[i] = w->subnet.GetLid(w->fabric.hosts.Get(i));
        // h0 lets everything in; h1 only its writable part.
        if (!MakeHost(w->h[i], w->hcas[i], i == 0))
        {
            Fail("the fabric's verbs objects could not be made");
        }
    }
    w->writable = RegisterWritable(w->h[1]);
    for (uint32_t i = 0; i < 2; ++i)
    {
        Connect(*w, i);
    }
    w->snapshot = FillPattern(*w->h[1].hca.memory);
    return w;
}

/// Rewrites the fields bits 3, 4 and 6 of the control byte ask for, where the packet has them.
void
Aim(std::vector<uint8_t>& p, const World& w, uint32_t to, bool aim, bool rkey, bool localOnlyKey)
{
    if (p.size() < IbLrhHeader::kSize + 12)
    {
        return;
    }
    const uint8_t lnh = p[1] & 3;
    if (aim)
    {
        p[2] = static_cast<uint8_t>(w.lid[to] >> 8);
        p[3] = static_cast<uint8_t>(w.lid[to]);
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
    if (aim)
    {
        AimDestQp(p.data() + bth, w.h[to].qp->GetQpNum());
    }
    if (rkey && HasReth(p[bth]) && p.size() >= bth + 12 + 16)
    {
        PlantReth(p.data() + bth + 12, w.writable->GetRkey(), w.h[1].mr->GetRkey(), localOnlyKey);
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
    PrintEngineSummary(out, g_world->h[1].hca.engine->GetCounters(), g_qpResets);
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
    uint32_t to = 1;
    switch (control & 3)
    {
    case 1:
        port = w.fabric.HostPort(0)->GetPeer(); // as if h0 had sent it: forwarded to h1
        break;
    case 2:
        port = w.fabric.HostPort(0);
        to = 0;
        break;
    default:
        port = w.fabric.HostPort(1);
        break;
    }
    Aim(p, w, to, control & 8, control & 16, control & 64);
    if (control & 4)
    {
        FixCrcs(p);
    }
    port->InjectReceivedBytes(p.empty() ? nullptr : p.data(), static_cast<uint32_t>(p.size()));
    RunFor(MicroSeconds((control & 32) ? 200 : 20));
    if (!OnlyWritableChanged(*w.h[1].hca.memory, w.snapshot))
    {
        Fail("bytes of h1 outside its remotely writable region and receive buffers changed");
    }
    g_qpResets += Recover(w.h, [&w](uint32_t i) { Connect(w, i); });
    return 0;
}
