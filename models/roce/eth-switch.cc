#include "eth-switch.h"

#include "eth-net-device.h"
#include "models/common/sim-clock.h"

#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EthSwitch");
NS_OBJECT_ENSURE_REGISTERED(EthSwitch);

TypeId
EthSwitch::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EthSwitch")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<EthSwitch>()
            .AddAttribute("EcmpSeed",
                          "Seed of this switch's ECMP hash (switches with different seeds "
                          "split the same flows differently, avoiding polarization).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&EthSwitch::m_seed),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("TrustPcp",
                          "Classify tagged frames by their 802.1Q PCP (else always by DSCP).",
                          BooleanValue(false),
                          MakeBooleanAccessor(&EthSwitch::m_trustPcp),
                          MakeBooleanChecker())
            .AddAttribute("Mmu",
                          "The shared-buffer MMU.",
                          PointerValue(),
                          MakePointerAccessor(&EthSwitch::m_mmu),
                          MakePointerChecker<SharedBufferMmu>())
            .AddAttribute("IntEnabled",
                          "Push an INT hop record (HPCC paper §3.2) into every frame that "
                          "carries an INT stack, as it leaves an egress port. Frames carry a "
                          "stack only when their sender asked for one (RoceRdmaPort IntMaxHops), "
                          "so this costs nothing for other traffic.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&EthSwitch::m_intEnabled),
                          MakeBooleanChecker())
            .AddTraceSource("IntHop",
                            "An INT hop was pushed: egress port, the record.",
                            MakeTraceSourceAccessor(&EthSwitch::m_intTrace),
                            "ns3::EthSwitch::IntHopCallback")
            .AddTraceSource("EcnMark",
                            "A frame was marked CE: egress port, priority, queue bytes.",
                            MakeTraceSourceAccessor(&EthSwitch::m_ecnTrace),
                            "ns3::EthSwitch::EcnMarkCallback");
    return tid;
}

EthSwitch::EthSwitch()
    : m_mmu(CreateObject<SharedBufferMmu>())
{
    // Default classification: the class-selector bits of the DSCP (RFC 2474 §4.2.2.2), so
    // DSCP 26 (the common RoCE marking) lands in priority 3.
    for (uint8_t d = 0; d < 64; ++d)
    {
        m_dscpToPrio[d] = d >> 3;
    }
}

EthSwitch::~EthSwitch() = default;

void
EthSwitch::DoDispose()
{
    m_ports.clear();
    m_mcastOut.clear();
    m_mmu = nullptr;
    Object::DoDispose();
}

uint16_t
EthSwitch::AddPort(Ptr<EthNetDevice> port)
{
    m_ports.push_back(port);
    const uint16_t n = static_cast<uint16_t>(m_ports.size());
    port->SetSwitch(this, n);
    return n;
}

uint16_t
EthSwitch::GetNPorts() const
{
    return static_cast<uint16_t>(m_ports.size());
}

Ptr<EthNetDevice>
EthSwitch::GetPort(uint16_t number) const
{
    return number >= 1 && number <= m_ports.size() ? m_ports[number - 1] : nullptr;
}

void
EthSwitch::AddRoute(uint32_t dstIp, uint16_t port)
{
    NS_ABORT_MSG_IF(port < 1 || port > m_ports.size(), "EthSwitch::AddRoute: no port " << port);
    // A group's frames find no unicast route and so take the multicast path (Receive).
    NS_ABORT_MSG_IF(EthIsIpv4Multicast(dstIp),
                    "EthSwitch::AddRoute: a multicast group (use SetMulticastRoute)");
    auto& hops = m_routes[dstIp];
    for (uint16_t h : hops)
    {
        if (h == port)
        {
            return;
        }
    }
    hops.push_back(port);
    m_denseValid = false;
}

void
EthSwitch::BuildDenseRoutes()
{
    m_dense.clear();
    m_densePorts.clear();
    m_denseValid = true;
    if (m_routes.empty())
    {
        return;
    }
    uint32_t lo = UINT32_MAX;
    uint32_t hi = 0;
    for (auto& [ip, hops] : m_routes)
    {
        lo = std::min(lo, ip);
        hi = std::max(hi, ip);
    }
    if (hi - lo >= (1u << 20))
    {
        return; // sparse addresses: the hash map serves
    }
    m_denseBase = lo;
    m_dense.assign(hi - lo + 1, DenseRoute());
    // Destinations with the same next hops share one list: up a fat-tree every remote host's
    // list is the same uplinks, so the few lists stay in cache where one list per host (16 KB
    // at a k=16 ToR) missed on every frame's ECMP pick.
    std::map<std::vector<uint16_t>, uint32_t> listAt;
    for (auto& [ip, hops] : m_routes)
    {
        DenseRoute& d = m_dense[ip - lo];
        auto [it, added] = listAt.emplace(hops, static_cast<uint32_t>(m_densePorts.size()));
        if (added)
        {
            m_densePorts.insert(m_densePorts.end(), hops.begin(), hops.end());
        }
        d.first = it->second;
        d.count = static_cast<uint16_t>(hops.size());
        d.onlyPort = hops.size() == 1 ? hops[0] : 0;
    }
}

size_t
EthSwitch::Ipv6Hash::operator()(const Ipv6Bytes& a) const
{
    uint64_t h = 1469598103934665603ULL; // FNV-1a: cheap, and only for the route map
    for (uint8_t b : a)
    {
        h = (h ^ b) * 1099511628211ULL;
    }
    return static_cast<size_t>(h);
}

void
EthSwitch::AddRoute6(const Ipv6Bytes& dstIp6, uint16_t port)
{
    NS_ABORT_MSG_IF(port < 1 || port > m_ports.size(), "EthSwitch::AddRoute6: no port " << port);
    NS_ABORT_MSG_IF(EthIsIpv6Multicast(dstIp6),
                    "EthSwitch::AddRoute6: a multicast group (use SetMulticastRoute6)");
    auto& hops = m_routes6[dstIp6];
    for (uint16_t h : hops)
    {
        if (h == port)
        {
            return;
        }
    }
    hops.push_back(port);
}

const std::vector<uint16_t>*
EthSwitch::GetRoutes6(const Ipv6Bytes& dstIp6) const
{
    auto it = m_routes6.find(dstIp6);
    return it == m_routes6.end() ? nullptr : &it->second;
}

const std::vector<uint16_t>*
EthSwitch::GetRoutes(uint32_t dstIp) const
{
    auto it = m_routes.find(dstIp);
    return it == m_routes.end() ? nullptr : &it->second;
}

bool
EthSwitch::ValidMulticastPorts(const std::vector<uint16_t>& ports) const
{
    for (uint16_t p : ports)
    {
        if (p < 1 || p > m_ports.size())
        {
            return false;
        }
    }
    return true;
}

namespace
{
/// Writes `ports` (sorted, without repeats) as `group`'s entry of `table`, or removes the entry
/// when there are none.
template <typename Table, typename Key>
void
WriteMulticastEntry(Table& table, const Key& group, std::vector<uint16_t> ports)
{
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
    if (ports.empty())
    {
        table.erase(group);
    }
    else
    {
        table[group] = std::move(ports);
    }
}
} // namespace

bool
EthSwitch::SetMulticastRoute(uint32_t group, const std::vector<uint16_t>& ports)
{
    if (!EthIsIpv4Multicast(group) || !ValidMulticastPorts(ports))
    {
        return false;
    }
    WriteMulticastEntry(m_mcastRoutes, group, ports);
    return true;
}

bool
EthSwitch::SetMulticastRoute6(const Ipv6Bytes& group, const std::vector<uint16_t>& ports)
{
    if (!EthIsIpv6Multicast(group) || !ValidMulticastPorts(ports))
    {
        return false;
    }
    WriteMulticastEntry(m_mcastRoutes6, group, ports);
    return true;
}

bool
EthSwitch::ClearMulticastRoute(uint32_t group)
{
    return m_mcastRoutes.erase(group) > 0;
}

bool
EthSwitch::ClearMulticastRoute6(const Ipv6Bytes& group)
{
    return m_mcastRoutes6.erase(group) > 0;
}

const std::vector<uint16_t>*
EthSwitch::GetMulticastRoute(uint32_t group) const
{
    auto it = m_mcastRoutes.find(group);
    return it == m_mcastRoutes.end() ? nullptr : &it->second;
}

const std::vector<uint16_t>*
EthSwitch::GetMulticastRoute6(const Ipv6Bytes& group) const
{
    auto it = m_mcastRoutes6.find(group);
    return it == m_mcastRoutes6.end() ? nullptr : &it->second;
}

uint32_t
EthSwitch::GetNMulticastRoutes() const
{
    return static_cast<uint32_t>(m_mcastRoutes.size() + m_mcastRoutes6.size());
}

void
EthSwitch::SetDscpToPriority(uint8_t dscp, uint8_t priority)
{
    NS_ABORT_MSG_IF(dscp > 63 || priority > 7, "EthSwitch::SetDscpToPriority: out of range");
    m_dscpToPrio[dscp] = priority;
}

void
EthSwitch::SetupMmu()
{
    std::vector<EthNetDevice*> raw;
    for (auto& p : m_ports)
    {
        raw.push_back(PeekPointer(p));
    }
    m_mmu->Setup(raw);
}

std::string
EthSwitch::Validate() const
{
    for (size_t i = 0; i < m_ports.size(); ++i)
    {
        const std::string e = m_ports[i]->Validate();
        if (!e.empty())
        {
            return "port " + std::to_string(i + 1) + ": " + e;
        }
    }
    return m_mmu->Validate();
}

namespace
{
inline uint32_t
Rotl(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

/// One Murmur3-style mixing round (the constants are Murmur3's, chosen for avalanche).
inline uint32_t
Mix(uint32_t h, uint32_t k)
{
    k *= 0xcc9e2d51u;
    k = Rotl(k, 15);
    k *= 0x1b873593u;
    h ^= k;
    h = Rotl(h, 13);
    return h * 5 + 0xe6546b64u;
}
} // namespace

uint32_t
EthSwitch::FlowHash(const EthFrame& f, uint32_t seed)
{
    uint32_t h = seed;
    if (f.ipv6)
    {
        for (int w = 0; w < 16; w += 4)
        {
            h = Mix(h, uint32_t(f.srcIp6[w]) << 24 | uint32_t(f.srcIp6[w + 1]) << 16 |
                           uint32_t(f.srcIp6[w + 2]) << 8 | f.srcIp6[w + 3]);
            h = Mix(h, uint32_t(f.dstIp6[w]) << 24 | uint32_t(f.dstIp6[w + 1]) << 16 |
                           uint32_t(f.dstIp6[w + 2]) << 8 | f.dstIp6[w + 3]);
        }
    }
    else
    {
        h = Mix(h, f.srcIp);
        h = Mix(h, f.dstIp);
    }
    h = Mix(h, static_cast<uint32_t>(f.srcPort) << 16 | f.dstPort);
    h = Mix(h, kIpProtoUdp);
    // Final avalanche so that the low bits used by the modulo depend on every input bit.
    h ^= 16;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

void
EthSwitch::Drop(EthNetDevice* in, EthFrame* frame, EthDropReason reason)
{
    in->CountDrop(frame, reason);
    EthFramePool::Release(frame);
}

void
EthSwitch::MaybeMark(EthNetDevice* out, EthFrame* f, uint64_t queueBytes)
{
    // RFC 3168 §5: only ECN-capable transport gets CE; Not-ECT is left alone (and not dropped
    // here: drops belong to the MMU).
    if (f->ecn == kEcnNotEct || f->ecn == kEcnCe)
    {
        return;
    }
    if (m_mmu->ShouldMark(queueBytes, static_cast<uint16_t>(out->GetPortNumber() - 1)))
    {
        f->ecn = kEcnCe;
        m_ecnMarked++;
        m_ecnTrace(out->GetPortNumber(), f->priority, queueBytes);
    }
}

uint16_t
EthSwitch::EgressPort(const EthFrame& f)
{
    if (!m_denseValid)
    {
        BuildDenseRoutes();
    }
    const uint16_t* hops = nullptr;
    uint32_t nHops = 0; // 32 bits: the ECMP pick's modulo is a 32-bit division
    if (f.ipv6)
    {
        auto it = m_routes6.find(f.dstIp6);
        if (it != m_routes6.end())
        {
            hops = it->second.data();
            nHops = static_cast<uint32_t>(it->second.size());
        }
    }
    else if (!m_dense.empty())
    {
        const uint32_t i = f.dstIp - m_denseBase;
        if (i < m_dense.size())
        {
            const DenseRoute& d = m_dense[i];
            nHops = d.count;
            hops = nHops == 1 ? &d.onlyPort : m_densePorts.data() + d.first;
        }
    }
    else
    {
        auto it = m_routes.find(f.dstIp);
        if (it != m_routes.end())
        {
            hops = it->second.data();
            nHops = static_cast<uint32_t>(it->second.size());
        }
    }
    if (nHops == 0)
    {
        return 0;
    }
    return nHops == 1 ? hops[0] : hops[FlowHash(f, m_seed) % nHops];
}

void
EthSwitch::Receive(EthNetDevice* in, EthFrame* f)
{
    // The ingress port has classified the frame already (Classify).
    if (f->vlanTagged)
    {
        f->pcp = f->priority;
    }
    f->inPort = in->GetPortNumber();
    if (f->ttl <= 1)
    {
        Drop(in, f, EthDropReason::TtlExpired); // RFC 791 §3.2: discard at zero
        return;
    }
    f->ttl--;
    const uint16_t outNo = EgressPort(*f);
    if (outNo == 0)
    {
        // A group never has a unicast route (AddRoute refuses one), so its frames come here:
        // unicast forwarding pays nothing for multicast.
        if (f->IsMulticast())
        {
            ForwardMulticast(in, f);
            return;
        }
        Drop(in, f, EthDropReason::NoRoute);
        return;
    }
    EthNetDevice* out = PeekPointer(m_ports[outNo - 1]);
    if (!out->LinkUp())
    {
        Drop(in, f, EthDropReason::LinkDown);
        return;
    }
    const uint16_t inIdx = static_cast<uint16_t>(f->inPort - 1);
    const uint8_t prio = f->priority;
    const bool lossless = in->IsPfcEnabled(prio);
    bool headroomDrop = false;
    if (!m_mmu->Admit(inIdx, prio, f->bytes, lossless, &f->mmuBucket, &headroomDrop))
    {
        Drop(in, f, headroomDrop ? EthDropReason::HeadroomOverflow : EthDropReason::BufferFull);
        return;
    }
    if (lossless && !in->IsPauseAsserted(prio) && m_mmu->ShouldPause(inIdx, prio))
    {
        in->AssertPause(prio);
    }
    if (m_mmu->EcnEnabled() && !m_mmu->EcnAtDequeue())
    {
        MaybeMark(out, f, out->GetQueueBytes(prio));
    }
    m_forwarded++;
    out->EnqueueEgress(f);
}

void
EthSwitch::ForwardMulticast(EthNetDevice* in, EthFrame* f)
{
    const std::vector<uint16_t>* ports =
        f->ipv6 ? GetMulticastRoute6(f->dstIp6) : GetMulticastRoute(f->dstIp);
    // Every port of the group's entry but the one the frame came in by (as a multicast
    // router's outgoing list excludes the incoming interface), and whose link is up; a port
    // that is down costs its own copy only.
    m_mcastOut.clear();
    bool anyOther = false;
    if (ports)
    {
        for (uint16_t p : *ports)
        {
            if (p == f->inPort)
            {
                continue;
            }
            anyOther = true;
            EthNetDevice* out = PeekPointer(m_ports[p - 1]);
            if (out->LinkUp())
            {
                m_mcastOut.push_back(out);
            }
            else
            {
                in->CountDrop(f, EthDropReason::LinkDown);
            }
        }
    }
    if (!ports)
    {
        Drop(in, f, EthDropReason::NoRoute); // the group is not routed here
        return;
    }
    if (!anyOther)
    {
        // Only the way it came: no other member is reached through this switch (a group's
        // only member sending), as a router's outgoing list minus the incoming interface may
        // be empty. Not a loss.
        m_mcastPruned++;
        EthFramePool::Release(f);
        return;
    }
    if (m_mcastOut.empty())
    {
        EthFramePool::Release(f); // every copy counted LinkDown already
        return;
    }
    // The copies keep the group's MAC as their destination (RFC 1112 §6.4, RFC 2464 §7;
    // EthNetDevice's egress rewrites only unicast destinations), whatever the sender wrote.
    f->dstMac = f->GroupMac();
    // Each copy is a frame of its own to the MMU: admitted (or refused and counted) on its own
    // against the ingress (port, priority), released when it starts on the wire. The frame
    // itself is the last copy: queued, it may be on the wire at once (EnqueueEgress starts
    // an idle port), so it is copied from before that.
    const size_t n = m_mcastOut.size();
    for (size_t i = 0; i < n; ++i)
    {
        EthFrame* copy = i + 1 < n ? EthFramePool::Copy(*f) : f;
        if (AdmitAndEnqueue(in, m_mcastOut[i], copy))
        {
            m_mcastCopies++;
        }
    }
}

bool
EthSwitch::AdmitAndEnqueue(EthNetDevice* in, EthNetDevice* out, EthFrame* f)
{
    // Receive's admission of a unicast frame, for one copy of a multicast frame.
    const uint16_t inIdx = static_cast<uint16_t>(f->inPort - 1);
    const uint8_t prio = f->priority;
    const bool lossless = in->IsPfcEnabled(prio);
    bool headroomDrop = false;
    if (!m_mmu->Admit(inIdx, prio, f->bytes, lossless, &f->mmuBucket, &headroomDrop))
    {
        Drop(in, f, headroomDrop ? EthDropReason::HeadroomOverflow : EthDropReason::BufferFull);
        return false;
    }
    if (lossless && !in->IsPauseAsserted(prio) && m_mmu->ShouldPause(inIdx, prio))
    {
        in->AssertPause(prio);
    }
    if (m_mmu->EcnEnabled() && !m_mmu->EcnAtDequeue())
    {
        MaybeMark(out, f, out->GetQueueBytes(prio));
    }
    m_forwarded++;
    out->EnqueueEgress(f);
    return true;
}

void
EthSwitch::NotifyDequeue(EthNetDevice* out, EthFrame* f)
{
    const uint16_t inIdx = static_cast<uint16_t>(f->inPort - 1);
    const uint8_t prio = f->priority;
    m_mmu->Release(inIdx, prio, f->bytes, f->mmuBucket);
    if (m_mmu->EcnEnabled() && m_mmu->EcnAtDequeue())
    {
        MaybeMark(out, f, out->GetQueueBytes(prio));
    }
    // The switch's flag first, then the frame's (in the frame's first line): an ACK's echo
    // is not pushed into, and its record is not touched here.
    if (m_intEnabled && f->intPush)
    {
        PushIntHop(out, f);
    }
    EthNetDevice* in = PeekPointer(m_ports[inIdx]);
    if (in->IsPauseAsserted(prio) && m_mmu->ShouldResume(inIdx, prio))
    {
        in->ReleasePause(prio);
    }
}

void
EthSwitch::PushIntHop(EthNetDevice* out, EthFrame* f)
{
    EthIntRecord& r = *f->intRec;
    if (r.stack.nHops >= r.maxHops)
    {
        m_intOverflow++; // a path longer than the sender's hop limit: the tail goes unrecorded
        return;
    }
    // HPCC paper §3.2 / Fig. 4 (the HPCC simulator records at dequeue): the port's rate, the
    // time, the bytes it sent before this frame and what is still queued behind it. Bytes are
    // wire bytes (preamble, SFD and inter-frame gap included), so that a saturated link reads
    // exactly its line rate.
    // The port keeps both sums over its priorities as they change.
    IntHop& h = r.stack.hops[r.stack.nHops++];
    h.lineRateBps = out->GetBitRate();
    h.timePs = SimClock::NowPs();
    // Transmit counted this frame already.
    h.txBytes = out->GetTxWireBytes() - (f->bytes + kEthWireOverheadBytes);
    h.qlenBytes = out->GetQueuedBytes();
    m_intPushed++;
    m_intTrace(out->GetPortNumber(), h);
}

void
EthSwitch::NotifyDiscardQueued(EthNetDevice*, EthFrame* f)
{
    const uint16_t inIdx = static_cast<uint16_t>(f->inPort - 1);
    m_mmu->Release(inIdx, f->priority, f->bytes, f->mmuBucket);
    EthNetDevice* in = PeekPointer(m_ports[inIdx]);
    if (in->IsPauseAsserted(f->priority) && m_mmu->ShouldResume(inIdx, f->priority))
    {
        in->ReleasePause(f->priority);
    }
}

} // namespace ns3
