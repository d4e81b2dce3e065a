// Fuzz target: bytes entering a live RoCEv2 fabric, as a real host's stack (through the TAP
// bridge: EthNetDevice::SendFromHost) or a broken cable peer (EthNetDevice::InjectReceivedBytes)
// would deliver them: the MAC/IP/UDP checks, the switch, PFC, and the RDMA engine behind UDP
// port 4791 all see them.
//
// The fabric: h0 - switch - h1, 40 Gb/s, MTU 1500; one RC QP on each host, connected by GID.
// h1's region is registered for local access only, except one sub-range registered for remote
// write: after every input, every byte of h1's memory outside that sub-range and its posted
// receive buffers must be what it was (IBA vol. 1 §10.6, annex A17 for RoCEv2).
//
// The first input byte steers the rest:
//   bits 0-1  where: h1's cable (bytes with FCS), h0's host side (no FCS: as a TAP gives them;
//             they cross the switch to h1), the switch port facing h0 (with FCS), h1 again
//   bit 2     fix the IPv4 total length and header checksum, the UDP length, the ICRC and the
//             FCS (else they stay as given)
//   bit 3     aim it: destination MAC and IPv4 address := h1's, a BTH DestQP other than 0/1 :=
//             h1's QP
//   bit 4     an RETH's R_Key := h1's remotely writable region's (bit 6 clear) or the R_Key of
//             h1's region registered for local access only (bit 6 set), and its address
//             anywhere in h1's memory: every write outside the writable region must be refused
//   bit 5     run 200 us of simulated time after it (else 20 us)
#include "fuzz-live-fabric.h"

#include "helpers/formats/topology.h"
#include "helpers/rdma/rdma-qp-connect.h"
#include "helpers/roce/eth-fabric-helper.h"
#include "helpers/roce/roce-helper.h"
#include "models/ib/ib-crc.h"
#include "models/roce/eth-frame.h"

#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace ns3;

namespace
{

using namespace cnuas_fuzz;

constexpr uint16_t kRoceUdpPort = 4791;

using Host = LiveHost<RoceHca>;

struct World
{
    EthFabric fabric;
    std::vector<RoceHca> hcas;
    Host h[2];
    RdmaGid gid[2]{};
    Ptr<RdmaMr> writable;
    std::vector<uint8_t> snapshot;
};

World* g_world = nullptr;
uint64_t g_qpResets = 0;

void
Fail(const char* what)
{
    cnuas_fuzz::Fail("fuzz-roce-wire", what);
}

/// Brings host i's QP (from RESET) to RTS towards the other host's, and posts its receives.
void
Connect(World& w, uint32_t i)
{
    cnuas_fuzz::Connect(w.h[i], RdmaGidAddress(w.gid[1 - i], 64), w.h[1 - i].qp->GetQpNum(), "fuzz-roce-wire");
}

World*
Build()
{
    auto* w = new World;
    EthFabricHelper fh;
    fh.SetHostLinkRate(DataRate("40Gbps"));
    fh.SetFabricLinkRate(DataRate("40Gbps"));
    fh.SetPortAttribute("Mtu", UintegerValue(1500));
    w->fabric = fh.Build(MakeTwoHostsOneSwitch());
    w->hcas = RoceHelper().Install(w->fabric);
    for (uint32_t i = 0; i < 2; ++i)
    {
        // h0 lets everything in; h1 only its writable part.
        if (!MakeHost(w->h[i], w->hcas[i], i == 0) || !w->hcas[i].port->GetGid(0, w->gid[i]))
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
    RunFor(MicroSeconds(10));
    return w;
}

uint16_t
Be16(const uint8_t* p)
{
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

void
Put16(uint8_t* p, uint16_t v)
{
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

/// Where the IPv4 header starts (after the MAC header and an optional 802.1Q tag), or 0.
size_t
Ipv4Offset(const std::vector<uint8_t>& f)
{
    if (f.size() < 14)
    {
        return 0;
    }
    size_t off = 12;
    if (Be16(f.data() + off) == 0x8100 && f.size() >= 18)
    {
        off += 4;
    }
    return Be16(f.data() + off) == 0x0800 && f.size() >= off + 2 + 20 ? off + 2 : 0;
}

/// Bit 3 and bit 4 of the control byte: address, QP and RETH rewritten where there are such.
void
Aim(std::vector<uint8_t>& f, const World& w, bool aim, bool rkey, bool localOnlyKey)
{
    const size_t ip = Ipv4Offset(f);
    if (aim && f.size() >= 6)
    {
        const uint64_t mac = w.fabric.HostPort(1)->GetMac();
        for (int i = 0; i < 6; ++i)
        {
            f[i] = static_cast<uint8_t>(mac >> (40 - 8 * i));
        }
        if (ip)
        {
            IbWireStore32(f.data() + ip + 16, w.fabric.HostIp(1));
        }
    }
    if (!ip)
    {
        return;
    }
    const size_t ihl = (f[ip] & 0x0F) * 4u;
    const size_t udp = ip + std::max<size_t>(ihl, 20);
    const size_t bth = udp + 8;
    if (f.size() < bth + 12 || f[ip + 9] != 17 || Be16(f.data() + udp + 2) != kRoceUdpPort)
    {
        return;
    }
    if (aim)
    {
        AimDestQp(f.data() + bth, w.h[1].qp->GetQpNum());
    }
    if (rkey && HasReth(f[bth]) && f.size() >= bth + 12 + 16)
    {
        PlantReth(f.data() + bth + 12, w.writable->GetRkey(), w.h[1].mr->GetRkey(), localOnlyKey);
    }
}

/// Bit 2: lengths, checksums, ICRC and (for the wire) the FCS made right for the bytes there are.
void
Fix(std::vector<uint8_t>& f, bool withFcs)
{
    if (withFcs && f.size() >= 4)
    {
        f.resize(f.size() - 4); // the FCS is recomputed below
    }
    const size_t ip = Ipv4Offset(f);
    if (ip)
    {
        const size_t ihl = std::max<size_t>((f[ip] & 0x0F) * 4u, 20);
        f[ip] = static_cast<uint8_t>(0x40 | (ihl / 4));
        if (f.size() >= ip + ihl)
        {
            const size_t total = f.size() - ip;
            Put16(f.data() + ip + 2, static_cast<uint16_t>(std::min<size_t>(total, 0xFFFF)));
            Put16(f.data() + ip + 10, 0);
            Put16(f.data() + ip + 10, InternetChecksum(f.data() + ip, ihl));
            const size_t udp = ip + ihl;
            if (f[ip + 9] == 17 && f.size() >= udp + 8)
            {
                Put16(f.data() + udp + 4, static_cast<uint16_t>(std::min<size_t>(total - ihl, 0xFFFF)));
                Put16(f.data() + udp + 6, 0); // RoCEv2 over IPv4 sends no UDP checksum
                if (Be16(f.data() + udp + 2) == kRoceUdpPort && f.size() >= udp + 8 + 12 + 4)
                {
                    const size_t end = f.size();
                    IbStoreIcrc(f.data() + end - 4, IbComputeRoceIcrc(f.data() + ip, end - 4 - ip));
                }
            }
        }
    }
    if (withFcs)
    {
        if (f.size() < 60)
        {
            f.resize(60, 0); // the MAC pads short frames before its FCS
        }
        const uint32_t fcs = EthCrc32(f.data(), f.size());
        for (int i = 0; i < 4; ++i)
        {
            f.push_back(static_cast<uint8_t>(fcs >> (8 * i)));
        }
    }
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
    if (size < 1 || size > 9100)
    {
        return 0;
    }
    if (!g_world)
    {
        g_world = Build();
    }
    World& w = *g_world;
    const uint8_t control = data[0];
    std::vector<uint8_t> f(data + 1, data + size);
    const uint8_t where = control & 3;
    const bool fromHost = where == 1;
    Aim(f, w, control & 8, control & 16, control & 64);
    if (control & 4)
    {
        Fix(f, !fromHost);
    }
    const uint8_t* bytes = f.empty() ? nullptr : f.data();
    const uint32_t n = static_cast<uint32_t>(f.size());
    switch (where)
    {
    case 1:
        w.fabric.HostPort(0)->SendFromHost(bytes, n);
        break;
    case 2:
        w.fabric.HostPort(0)->GetPeer()->InjectReceivedBytes(bytes, n);
        break;
    default:
        w.fabric.HostPort(1)->InjectReceivedBytes(bytes, n);
        break;
    }
    RunFor(MicroSeconds((control & 32) ? 200 : 20));
    if (!OnlyWritableChanged(*w.h[1].hca.memory, w.snapshot))
    {
        Fail("bytes of h1 outside its remotely writable region and receive buffers changed");
    }
    g_qpResets += Recover(w.h, [&w](uint32_t i) { Connect(w, i); });
    return 0;
}
