#include "ib-sm-helper.h"

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sma-agent.h"
#include "models/mgmt/ib-subnet-manager.h"
#include "models/ib/ib-switch.h"

#include "ns3/simple-ref-count.h"
#include "ns3/simulator.h"

#include "ns3/string.h"

#include <chrono>
#include <cstdio>
#include <sstream>
#include <set>
#include <stdexcept>
#include "ns3/uinteger.h"

namespace ns3
{

uint64_t
IbFabricNodeGuid(uint32_t index)
{
    // Must match IbFabricHelper::Build.
    return 0x0002c90300000000ULL + (uint64_t(index + 1) << 8);
}

IbSmSubnet
IbSmSubnetFromTopology(const Topology& topology)
{
    IbSmSubnet s;
    for (uint32_t i = 0; i < topology.nodes.size(); ++i)
    {
        const TopoNode& tn = topology.nodes[i];
        const bool sw = tn.kind == TopoNodeKind::Switch;
        const uint64_t guid = IbFabricNodeGuid(i);
        int32_t idx = s.AddNode(guid, sw ? IbNodeType::Switch : IbNodeType::ChannelAdapter,
                                static_cast<uint8_t>(tn.ports));
        IbSmNode& n = s.Node(idx);
        n.description = tn.name;
        for (uint32_t p = 0; p <= tn.ports; ++p)
        {
            // A switch's ports all report the node's port 0 GUID; CA ports have their own.
            n.ports[p].guid = sw ? guid : guid + p;
        }
    }
    for (const TopoLink& l : topology.links)
    {
        s.Connect(static_cast<int32_t>(l.a), static_cast<uint8_t>(l.aPort),
                  static_cast<int32_t>(l.b), static_cast<uint8_t>(l.bPort));
    }
    return s;
}

namespace
{
/// The node's manager handler: subnet-management answers and traps go to the SM (GMP answers
/// are not the SM's).
void
DeliverToSm(Ptr<IbSubnetManager> sm, const IbReceivedMad& m)
{
    const uint8_t cls = m.view.mad[1];
    if (cls != IbMgmtClass::SubnLid && cls != IbMgmtClass::SubnDirected)
    {
        return;
    }
    // The SMI has read the SMP already (IbReceivedMad::smp): no second copy per answer.
    sm->ReceiveSmp(m.smp);
}

/// The SA on QP1 of the SM's node (IBA vol. 1 §15.2): answered by the SM.
void
ServeSa(Ptr<IbSubnetManager> sm, Ptr<IbMadDispatcher> disp, const IbReceivedMad& m)
{
    // A table larger than one MAD goes as RMPP segments, in order, as the port can take them.
    // A multicast join or leave is answered once the MFTs it changed are written (the SM calls
    // back); the request is kept for the address to answer to.
    IbMadDispatcher* raw = PeekPointer(disp);
    disp->SendGmpResponses(
        m,
        sm->AnswerSaSegments(m.view.mad.data(),
                             [raw, m](std::vector<std::array<uint8_t, kIbMadBytes>> mads) {
                                 raw->SendGmpResponses(m, std::move(mads));
                             }));
}

/// What follows whether an SM runs: its CA port's PortInfo.CapabilityMask.IsSM (as the
/// kernel's follows whether opensm holds issm open) and its node's SA.
/// Plain pointers only: this lives in the SM's own trace source, and the SM, its node's SMA and
/// dispatcher are aggregated to one node; a Ptr to any of them here would keep the whole
/// aggregate alive (an ns-3 aggregate is freed only when none of its objects is referenced).
struct SmNodeWiring : public SimpleRefCount<SmNodeWiring>
{
    IbSmaAgent* sma = nullptr; ///< null on a switch
    uint8_t port = 0;
    IbMadDispatcher* disp = nullptr;
    IbSubnetManager* sm = nullptr;
    bool saInstalled = false;
};

void
FollowSmRunning(Ptr<SmNodeWiring> w, uint8_t, uint8_t)
{
    const bool running = w->sm->IsRunning();
    if (w->sma)
    {
        w->sma->SetIsSm(w->port, running);
    }
    // The SA (class 0x03 on QP1) is the SM's while it runs; stopped, it leaves the class to
    // whoever else serves it on the node (opensm in an emulated host, through the umad service).
    if (running && !w->saInstalled && w->disp->GetGsiHandler(IbMgmtClass::SubnAdm).IsNull())
    {
        w->disp->SetGsiHandler(IbMgmtClass::SubnAdm,
                               MakeBoundCallback(&ServeSa, Ptr<IbSubnetManager>(w->sm),
                                                 Ptr<IbMadDispatcher>(w->disp)));
        w->saInstalled = true;
    }
    else if (!running && w->saInstalled)
    {
        w->disp->SetGsiHandler(IbMgmtClass::SubnAdm, IbMadDispatcher::MadHandler());
        w->saInstalled = false;
    }
}

/// LID-routed SMPs from the SM's node: out of the SM's CA port, or routed by the switch's LFT.
bool
SendLidRouted(Ptr<IbMadDispatcher> disp, uint8_t port, IbSmp smp, uint16_t dlid)
{
    return disp->SendLidRoutedSmp(port, smp, dlid);
}
} // namespace

IbSmHelper::IbSmHelper()
{
    m_factory.SetTypeId(IbSubnetManager::GetTypeId());
}

void
IbSmHelper::SetSmAttribute(const std::string& name, const AttributeValue& value)
{
    m_factory.Set(name, value);
}

Ptr<IbSubnetManager>
IbSmHelper::Install(const IbFabric& fabric, Ptr<Node> node, Time start, bool autoStart) const
{
    NodeContainer missing;
    for (uint32_t i = 0; i < fabric.nodes.GetN(); ++i)
    {
        if (!IbMgmtHelper::GetDispatcher(fabric.nodes.Get(i)))
        {
            missing.Add(fabric.nodes.Get(i));
        }
    }
    if (missing.GetN() > 0)
    {
        IbMgmtHelper().Install(missing);
    }
    // NodeDescription: the topology's node names, unless someone set one already; it is what the
    // SM reads back and what `ibnetdiscover` output calls the nodes.
    for (uint32_t i = 0; i < fabric.nodes.GetN() && i < fabric.topology.nodes.size(); ++i)
    {
        if (Ptr<IbSmaAgent> sma = IbMgmtHelper::GetSma(fabric.nodes.Get(i)))
        {
            StringValue d;
            sma->GetAttribute("NodeDescription", d);
            if (d.Get().empty())
            {
                sma->SetAttribute("NodeDescription", StringValue(fabric.topology.nodes[i].name));
            }
        }
    }
    Ptr<IbMadDispatcher> disp = IbMgmtHelper::GetDispatcher(node);
    NS_ABORT_MSG_IF(!disp, "IbSmHelper: node " << node->GetId() << " has no InfiniBand port");
    NS_ABORT_MSG_IF(GetSm(node), "IbSmHelper: node " << node->GetId() << " already has an SM");
    Ptr<IbSubnetManager> sm = m_factory.Create<IbSubnetManager>();
    Ptr<SmNodeWiring> wiring = Create<SmNodeWiring>();
    wiring->disp = PeekPointer(disp);
    wiring->sm = PeekPointer(sm);
    if (Ptr<IbSwitch> sw = node->GetObject<IbSwitch>())
    {
        sm->SetGuid(sw->GetNodeGuid());
    }
    else
    {
        UintegerValue port;
        sm->GetAttribute("Port", port);
        Ptr<IbNetDevice> dev = disp->GetPort(static_cast<uint8_t>(port.Get()));
        NS_ABORT_MSG_IF(!dev, "IbSmHelper: node " << node->GetId() << " has no port "
                                                  << port.Get());
        sm->SetGuid(dev->GetPortGuid());
        wiring->sma = PeekPointer(IbMgmtHelper::GetSma(node));
        wiring->port = static_cast<uint8_t>(port.Get());
    }
    // SMInfo requests reaching this node go to the SM, not the SMA (IBA vol. 1 §14.2.5.13):
    // that is how other SMs find it and how a standby polls it.
    if (Ptr<IbSmaAgent> sma = IbMgmtHelper::GetSma(node))
    {
        sma->SetSmInfoHandler(MakeCallback(&IbSubnetManager::AnswerSmInfo, sm));
    }
    sm->SetSmpSender(MakeCallback(&IbMadDispatcher::SendDirectedSmp, disp));
    UintegerValue smPort;
    sm->GetAttribute("Port", smPort);
    const uint8_t from = node->GetObject<IbSwitch>() ? 0 : static_cast<uint8_t>(smPort.Get());
    sm->SetLidRoutedSender(MakeBoundCallback(&SendLidRouted, disp, from));
    disp->SetManagerHandler(MakeBoundCallback(&DeliverToSm, sm));
    sm->TraceConnectWithoutContext("SmState", MakeBoundCallback(&FollowSmRunning, wiring));
    node->AggregateObject(sm);
    if (autoStart)
    {
        Simulator::Schedule(start, &IbSubnetManager::Start, sm);
    }
    return sm;
}

Ptr<IbSubnetManager>
IbSmHelper::GetSm(Ptr<Node> node)
{
    return node->GetObject<IbSubnetManager>();
}

IbSmBringUp
IbBringUpWithSm(const IbFabric& fabric, uint8_t vls, Time limit)
{
    if (fabric.hosts.GetN() == 0)
    {
        throw std::invalid_argument("the fabric '" + fabric.topology.name +
                                    "' has no hosts to run the subnet manager on");
    }
    IbSmBringUp r;
    IbSmHelper h;
    h.SetSmAttribute("OperationalVls", UintegerValue(vls));
    r.sm = h.Install(fabric, fabric.hosts.Get(0), MicroSeconds(2));
    const auto wallStart = std::chrono::steady_clock::now();
    // Stop the run at the end of the first heavy sweep that brings the subnet up.
    Ptr<IbSubnetManager> sm = r.sm;
    const Time end = Simulator::Now() + limit;
    while (sm->GetLastSubnetUp() < Seconds(0) && Simulator::Now() < end)
    {
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
    }
    r.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    if (sm->GetLastSubnetUp() < Seconds(0))
    {
        throw std::runtime_error("the subnet manager did not bring the subnet up within " +
                                 std::to_string(limit.GetSeconds()) + " s (phase " +
                                 IbSweepPhaseName(sm->GetPhase()) + ")");
    }
    // The SM calls the subnet up when its sweep has nothing left to do, which is also the case
    // when it found no live link to sweep (ports still training): check the ports themselves.
    if (const std::string notActive = IbFabricNotActive(fabric); !notActive.empty())
    {
        char at[32];
        std::snprintf(at, sizeof(at), "%.1f", sm->GetLastSubnetUp().GetSeconds() * 1e6);
        throw std::runtime_error(std::string("the subnet manager's sweep ended at ") + at +
                                 " us, but the fabric did not come up: " + notActive);
    }
    r.upAt = sm->GetLastSubnetUp();
    r.smps = sm->GetSmpsSent();
    return r;
}

std::string
IbFabricNotActive(const IbFabric& fabric)
{
    uint32_t cabled = 0;
    uint32_t down = 0;
    std::string first;
    for (uint32_t node = 0; node < fabric.ports.size(); ++node)
    {
        for (uint32_t i = 0; i < fabric.ports[node].size(); ++i)
        {
            Ptr<IbNetDevice> p = fabric.ports[node][i];
            if (!p || !p->GetPeer())
            {
                continue;
            }
            ++cabled;
            if (p->GetPortState() != IbPortState::Active)
            {
                if (down++ == 0)
                {
                    first = fabric.topology.nodes[node].name + " port " + std::to_string(i + 1) +
                            ": " + IbPortStateName(p->GetPortState());
                }
            }
        }
    }
    if (down == 0)
    {
        return "";
    }
    return std::to_string(down) + " of " + std::to_string(cabled) +
           " cabled ports are not Active (" + first + ")";
}

std::vector<IbRouteHop>
IbFabricRoute(const IbFabric& fabric, uint32_t fromHost, uint16_t dlid)
{
    Ptr<IbNetDevice> src = fabric.HostPort(fromHost);
    if (!src || !src->GetPeer())
    {
        return {};
    }
    std::vector<IbRouteHop> route{{src->GetNode()->GetId(), src->GetPortNumber()}};
    Ptr<IbNetDevice> at = src->GetPeer();
    std::set<uint32_t> seen;
    while (at->IsSwitchPort())
    {
        Ptr<IbSwitch> sw = at->GetNode()->GetObject<IbSwitch>();
        if (sw->GetLid() == dlid)
        {
            return route;
        }
        if (!seen.insert(at->GetNode()->GetId()).second)
        {
            return {};
        }
        const uint8_t out = sw->GetLftEntry(dlid);
        if (out == 0 || out > sw->GetNPorts() || !sw->GetPort(out)->GetPeer())
        {
            return {};
        }
        route.push_back({at->GetNode()->GetId(), out});
        at = sw->GetPort(out)->GetPeer();
    }
    return at->GetLid() == dlid ? route : std::vector<IbRouteHop>{};
}

// ---- views in the standard tools' formats -------------------------------------------------------

namespace
{
const char*
IbstatState(IbPortState s)
{
    // infiniband-diags' names for PortInfo.PortState.
    switch (s)
    {
    case IbPortState::Down:
        return "Down";
    case IbPortState::Init:
        return "Initializing";
    case IbPortState::Armed:
        return "Armed";
    case IbPortState::Active:
        return "Active";
    default:
        return "???";
    }
}

const char*
IbstatPhys(IbPhysState s)
{
    switch (s)
    {
    case IbPhysState::Sleep:
        return "Sleep";
    case IbPhysState::Polling:
        return "Polling";
    case IbPhysState::Disabled:
        return "Disabled";
    case IbPhysState::PortConfigurationTraining:
        return "PortConfigurationTraining";
    case IbPhysState::LinkUp:
        return "LinkUp";
    case IbPhysState::LinkErrorRecovery:
        return "LinkErrorRecovery";
    }
    return "???";
}

/// ibstat's Rate: lanes x the nominal lane rate in Gb/s (FDR 14, EDR 25, HDR 50, NDR 100).
std::string
NominalRate(const IbLinkRate& r)
{
    double lane = 0;
    switch (r.speed)
    {
    case IbLinkSpeed::Sdr:
        lane = 2.5;
        break;
    case IbLinkSpeed::Ddr:
        lane = 5;
        break;
    case IbLinkSpeed::Qdr:
    case IbLinkSpeed::Fdr10:
        lane = 10;
        break;
    case IbLinkSpeed::Fdr:
        lane = 14;
        break;
    case IbLinkSpeed::Edr:
        lane = 25;
        break;
    case IbLinkSpeed::Hdr:
        lane = 50;
        break;
    case IbLinkSpeed::Ndr:
        lane = 100;
        break;
    case IbLinkSpeed::Xdr:
        lane = 200;
        break;
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", lane * r.width);
    return buf;
}

std::string
Hex(uint64_t v, bool prefix = true, int digits = 16)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), prefix ? "0x%0*llx" : "%0*llx", digits,
                  static_cast<unsigned long long>(v));
    return buf;
}
} // namespace

std::string
IbPortInfoRateName(const IbPortInfo& pi)
{
    const char* width = nullptr;
    switch (pi.linkWidthActive)
    {
    case 1:
        width = "1x";
        break;
    case 2:
        width = "4x";
        break;
    case 4:
        width = "8x";
        break;
    case 8:
        width = "12x";
        break;
    case 16:
        width = "2x";
        break;
    default:
        return "";
    }
    const char* speed = nullptr;
    switch (pi.linkSpeedExtActive)
    {
    case 1:
        speed = "FDR";
        break;
    case 2:
        speed = "EDR";
        break;
    case 4:
        speed = "HDR";
        break;
    case 8:
        speed = "NDR";
        break;
    default:
        speed = pi.linkSpeedActive == 1   ? "SDR"
                : pi.linkSpeedActive == 2 ? "DDR"
                : pi.linkSpeedActive == 4 ? "QDR"
                                          : nullptr;
    }
    return speed ? std::string(width) + speed : "";
}

std::string
IbFormatIbstat(const IbFabric& fabric)
{
    std::ostringstream o;
    for (uint32_t i = 0; i < fabric.nodes.GetN() && i < fabric.topology.nodes.size(); ++i)
    {
        const TopoNode& tn = fabric.topology.nodes[i];
        if (tn.kind != TopoNodeKind::Host)
        {
            continue;
        }
        o << "CA '" << tn.name << "'\n"
          << "\tCA type: cnuas\n"
          << "\tNumber of ports: " << fabric.ports[i].size() << "\n"
          << "\tNode GUID: " << Hex(IbFabricNodeGuid(i)) << "\n"
          << "\tSystem image GUID: " << Hex(IbFabricNodeGuid(i)) << "\n";
        for (const Ptr<IbNetDevice>& p : fabric.ports[i])
        {
            const bool linked = p->GetPhysState() == IbPhysState::LinkUp;
            o << "\tPort " << unsigned(p->GetPortNumber()) << ":\n"
              << "\t\tState: " << IbstatState(p->GetPortState()) << "\n"
              << "\t\tPhysical state: " << IbstatPhys(p->GetPhysState()) << "\n"
              << "\t\tRate: " << NominalRate(linked ? p->GetActiveRate() : p->GetSupportedRate())
              << "\n"
              << "\t\tBase lid: " << p->GetLid() << "\n"
              << "\t\tLMC: " << unsigned(p->GetLmc()) << "\n"
              << "\t\tSM lid: " << p->GetSmLid() << "\n";
            o << "\t\tPort GUID: " << Hex(p->GetPortGuid()) << "\n"
              << "\t\tLink layer: InfiniBand\n";
        }
    }
    return o.str();
}

std::string
IbFormatIbnetdiscover(const IbSmSubnet& s, uint64_t smPortGuid)
{
    auto name = [&s](int32_t i) {
        const IbSmNode& n = s.Node(i);
        return n.description.empty() ? (n.IsSwitch() ? "S-" : "H-") + Hex(n.nodeGuid, false)
                                     : n.description;
    };
    std::ostringstream o;
    o << "#\n# Topology file: generated by cnuas from the built-in subnet manager's database\n"
      << "#\n# Initiated from port " << Hex(smPortGuid, false) << "\n";
    // Switches first, then channel adapters, each in discovery order (as ibnetdiscover does).
    for (int pass = 0; pass < 2; ++pass)
    {
        for (int32_t i = 0; i < s.NodeCount(); ++i)
        {
            const IbSmNode& n = s.Node(i);
            if (n.IsSwitch() != (pass == 0))
            {
                continue;
            }
            o << "\nvendid=0x2c9\ndevid=0x0\nsysimgguid=" << Hex(n.nodeGuid) << "\n";
            if (n.IsSwitch())
            {
                o << "switchguid=" << Hex(n.nodeGuid) << "(" << Hex(n.nodeGuid, false) << ")\n"
                  << "Switch\t" << unsigned(n.numPorts) << " \"" << name(i) << "\"\t\t# \""
                  << name(i) << "\" base port 0 lid " << n.lid << " lmc 0\n";
            }
            else
            {
                o << "caguid=" << Hex(n.nodeGuid) << "\n"
                  << "Ca\t" << unsigned(n.numPorts) << " \"" << name(i) << "\"\t\t# \"" << name(i)
                  << "\"\n";
            }
            for (uint8_t p = 1; p <= n.numPorts; ++p)
            {
                const IbSmPort& port = n.ports[p];
                if (port.peerNode < 0)
                {
                    continue;
                }
                const IbSmNode& peer = s.Node(port.peerNode);
                const std::string rate = IbPortInfoRateName(port.info);
                o << "[" << unsigned(p) << "]";
                if (!n.IsSwitch())
                {
                    o << "(" << Hex(port.guid, false) << ") ";
                }
                o << "\t\"" << name(port.peerNode) << "\"[" << unsigned(port.peerPort) << "]";
                if (!peer.IsSwitch())
                {
                    o << "(" << Hex(peer.ports[port.peerPort].guid, false) << ") ";
                }
                o << "\t\t# ";
                if (!n.IsSwitch())
                {
                    o << "lid " << port.lid << " lmc 0 ";
                }
                o << "\"" << name(port.peerNode) << "\" lid "
                  << s.LidOf(port.peerNode, port.peerPort) << (rate.empty() ? "" : " " + rate)
                  << "\n";
            }
        }
    }
    return o.str();
}

} // namespace ns3
