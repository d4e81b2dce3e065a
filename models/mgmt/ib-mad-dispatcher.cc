#include "ib-mad-dispatcher.h"

#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"

#include "ns3/log.h"
#include "ns3/nstime.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbMadDispatcher");
NS_OBJECT_ENSURE_REGISTERED(IbMadDispatcher);

namespace
{
constexpr uint16_t kPermissive = IbLrhHeader::kPermissiveLid;

/// A request is what an agent answers; responses, traps and reports go to a manager
/// (IBA vol. 1 §13.4.5: the R bit marks responses; Trap and Report are agent-to-manager sends).
bool
ForManager(uint8_t method)
{
    return (method & IbMadMethod::ResponseBit) != 0 || method == IbMadMethod::Trap ||
           method == IbMadMethod::Report;
}
} // namespace

const char*
IbMadDropReasonName(IbMadDropReason r)
{
    switch (r)
    {
    case IbMadDropReason::NotAMad:
        return "NotAMad";
    case IbMadDropReason::SmpNotOnVl15:
        return "SmpNotOnVl15";
    case IbMadDropReason::WrongClassOnQp0:
        return "WrongClassOnQp0";
    case IbMadDropReason::BadQkey:
        return "BadQkey";
    case IbMadDropReason::BadHopPointer:
        return "BadHopPointer";
    case IbMadDropReason::BadHopCount:
        return "BadHopCount";
    case IbMadDropReason::NotASwitch:
        return "NotASwitch";
    case IbMadDropReason::BadPathPort:
        return "BadPathPort";
    case IbMadDropReason::DrLidRoutedPart:
        return "DrLidRoutedPart";
    case IbMadDropReason::NoRoute:
        return "NoRoute";
    case IbMadDropReason::NoAgent:
        return "NoAgent";
    case IbMadDropReason::SendFailed:
        return "SendFailed";
    }
    return "?";
}

TypeId
IbMadDispatcher::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbMadDispatcher")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbMadDispatcher>()
            .AddAttribute("ProcessingDelay",
                          "Time the node takes to process each MAD it receives (forward it "
                          "along a directed route, or hand it to an agent or manager).",
                          TimeValue(Seconds(0)),
                          MakeTimeAccessor(&IbMadDispatcher::m_processingDelay),
                          MakeTimeChecker(Seconds(0)))
            .AddTraceSource("MadRx",
                            "A MAD packet reached this node's SMI/GSI: (packet, arrival port).",
                            MakeTraceSourceAccessor(&IbMadDispatcher::m_rxTrace),
                            "ns3::IbMadDispatcher::PacketPortCallback")
            .AddTraceSource("MadDrop",
                            "The SMI/GSI discarded a packet: (packet, IbMadDropReason).",
                            MakeTraceSourceAccessor(&IbMadDispatcher::m_dropTrace),
                            "ns3::IbMadDispatcher::PacketPortCallback");
    return tid;
}

IbMadDispatcher::IbMadDispatcher() = default;
IbMadDispatcher::~IbMadDispatcher() = default;

void
IbMadDispatcher::DoDispose()
{
    m_node = nullptr;
    m_switch = nullptr;
    m_ports.clear();
    m_portByNumber.clear();
    m_sma = MadHandler();
    m_manager = MadHandler();
    m_gsi.clear();
    m_paced.clear();
    m_pacedRetry.Cancel();
    m_rxMad = IbReceivedMad(); // its port
    Object::DoDispose();
}

void
IbMadDispatcher::Install(Ptr<Node> node)
{
    m_node = node;
    m_switch = node->GetObject<IbSwitch>();
    m_ports.clear();
    m_portByNumber.assign(256, nullptr);
    if (m_switch)
    {
        for (uint8_t n = 1; n <= m_switch->GetNPorts(); ++n)
        {
            m_ports[n] = m_switch->GetPort(n);
            m_portByNumber[n] = PeekPointer(m_ports[n]);
        }
        // Switch management port 0 (IBA vol. 1 §17.2.1.1): what the relay function hands up.
        m_switch->SetManagementCallback(MakeCallback(&IbMadDispatcher::ReceiveAtSwitch, this));
        return;
    }
    for (uint32_t i = 0; i < node->GetNDevices(); ++i)
    {
        Ptr<IbNetDevice> d = DynamicCast<IbNetDevice>(node->GetDevice(i));
        if (d)
        {
            m_ports[d->GetPortNumber()] = d;
            m_portByNumber[d->GetPortNumber()] = PeekPointer(d);
            d->SetManagementReceiveCallback(
                MakeCallback(&IbMadDispatcher::ReceiveFromCaPort, this));
        }
    }
}

Ptr<Node>
IbMadDispatcher::GetNode() const
{
    return m_node;
}

bool
IbMadDispatcher::IsSwitch() const
{
    return m_switch != nullptr;
}

Ptr<IbSwitch>
IbMadDispatcher::GetSwitch() const
{
    return m_switch;
}

Ptr<IbNetDevice>
IbMadDispatcher::GetPort(uint8_t number) const
{
    // Looked up for every MAD a node handles: an array, not the map (which m_ports keeps the
    // references in).
    return number < m_portByNumber.size() ? Ptr<IbNetDevice>(m_portByNumber[number]) : nullptr;
}

uint8_t
IbMadDispatcher::GetNumPorts() const
{
    return static_cast<uint8_t>(m_ports.size());
}

std::vector<Ptr<IbNetDevice>>
IbMadDispatcher::GetPorts() const
{
    std::vector<Ptr<IbNetDevice>> v;
    for (auto& [n, p] : m_ports)
    {
        v.push_back(p);
    }
    return v;
}

void
IbMadDispatcher::SetSmaHandler(MadHandler h)
{
    m_sma = h;
}

void
IbMadDispatcher::SetGsiHandler(uint8_t mgmtClass, MadHandler h)
{
    m_gsi[mgmtClass] = h;
}

void
IbMadDispatcher::SetManagerHandler(MadHandler h)
{
    m_manager = h;
}

IbMadDispatcher::MadHandler
IbMadDispatcher::GetManagerHandler() const
{
    return m_manager;
}

IbMadDispatcher::MadHandler
IbMadDispatcher::GetSmaHandler() const
{
    return m_sma;
}

IbMadDispatcher::MadHandler
IbMadDispatcher::GetGsiHandler(uint8_t mgmtClass) const
{
    auto it = m_gsi.find(mgmtClass);
    return it == m_gsi.end() ? MadHandler() : it->second;
}

uint64_t
IbMadDispatcher::GetDropCount(IbMadDropReason r) const
{
    return m_drops[static_cast<size_t>(r)];
}

uint16_t
IbMadDispatcher::GetLid(uint8_t port) const
{
    if (m_switch)
    {
        return m_switch->GetLid();
    }
    Ptr<IbNetDevice> p = GetPort(port);
    return p ? p->GetLid() : 0;
}

void
IbMadDispatcher::Drop(Ptr<const Packet> p, IbMadDropReason r)
{
    NS_LOG_LOGIC("node " << (m_node ? m_node->GetId() : 0) << " drops a MAD: "
                         << IbMadDropReasonName(r));
    m_drops[static_cast<size_t>(r)]++;
    m_dropTrace(p, static_cast<uint8_t>(r));
}

void
IbMadDispatcher::Drop(const RxBytes& rx, IbMadDropReason r)
{
    Drop(m_dropTrace.IsEmpty() ? nullptr : rx.ToPacket(), r);
}

// ---- receiving ------------------------------------------------------------------------------

Ptr<const Packet>
IbMadDispatcher::RxBytes::ToPacket() const
{
    if (packet)
    {
        return packet;
    }
    return frame ? frame->ToPacket() : nullptr;
}

IbMadDispatcher::RxBytes
IbMadDispatcher::ReadFrame(const IbFrame& frame, uint8_t* buf)
{
    RxBytes rx;
    rx.bytes = buf;
    rx.size = frame.bytes;
    rx.frame = &frame;
    if (frame.bytes <= kIbMaxMadPacketBytes)
    {
        frame.CopyBytes(buf);
    }
    else
    {
        frame.CopyHead(buf, IbFrame::kInlineBytes); // too long for a MAD: its LRH says so
    }
    return rx;
}

void
IbMadDispatcher::ReceiveFromCaPort(Ptr<IbNetDevice> port, const IbFrame& frame,
                                   const IbRxInfo& info)
{
    if (m_processingDelay.IsStrictlyPositive())
    {
        Simulator::Schedule(m_processingDelay, &IbMadDispatcher::ReceiveDelayed, this, port,
                            frame.ToPacket(), info.vl);
        return;
    }
    uint8_t buf[kIbMaxMadPacketBytes];
    Receive(port, ReadFrame(frame, buf), info.vl);
}

void
IbMadDispatcher::ReceiveAtSwitch(Ptr<IbNetDevice> in, const IbFrame& frame)
{
    uint8_t buf[kIbMaxMadPacketBytes];
    const RxBytes rx = ReadFrame(frame, buf);
    // The relay function does not say which VL the packet came on; the LRH does (VL15 is never
    // remapped, and a data VL only matters as "not 15" here).
    const uint8_t vl = static_cast<uint8_t>(buf[0] >> 4);
    if (m_processingDelay.IsStrictlyPositive())
    {
        Simulator::Schedule(m_processingDelay, &IbMadDispatcher::ReceiveDelayed, this, in,
                            frame.ToPacket(), vl);
        return;
    }
    Receive(in, rx, vl);
}

void
IbMadDispatcher::ReceiveDelayed(Ptr<IbNetDevice> in, Ptr<const Packet> p, uint8_t vl)
{
    uint8_t buf[kIbMaxMadPacketBytes];
    RxBytes rx;
    rx.bytes = buf;
    rx.size = p->GetSize();
    rx.packet = p;
    p->CopyData(buf, std::min<uint32_t>(rx.size, sizeof(buf)));
    Receive(in, rx, vl);
}

void
IbMadDispatcher::Receive(Ptr<IbNetDevice> in, const RxBytes& rx, uint8_t vl)
{
    const uint8_t portNumber = in->GetPortNumber();
    if (!m_rxTrace.IsEmpty())
    {
        m_rxTrace(rx.ToPacket(), portNumber);
    }
    // Before an IbReceivedMad is made: its five ns-3 Headers cost more than the forwarding.
    if (m_switch && vl == kIbManagementVl && ForwardDirectedSmp(portNumber, rx))
    {
        return;
    }
    // The dispatcher's IbReceivedMad, or a fresh one for a receipt nested in another.
    std::optional<IbReceivedMad> nested;
    const bool reuse = !m_rxMadInUse;
    IbReceivedMad& m = reuse ? m_rxMad : nested.emplace();
    struct InUse
    {
        bool& flag;
        bool was;

        explicit InUse(bool& f)
            : flag(f),
              was(f)
        {
            flag = true;
        }

        ~InUse()
        {
            flag = was;
        }
    } inUse(m_rxMadInUse);
    m.port = in;
    m.portNumber = portNumber;
    m.vl = vl;
    std::string why;
    if (!IbParseMadBytes(rx.bytes, rx.size, m.view, &why))
    {
        NS_LOG_LOGIC("not a MAD: " << why);
        Drop(rx, IbMadDropReason::NotAMad);
        return;
    }
    const uint32_t qp = m.view.bth.GetDestQp();
    const uint8_t cls = m.view.mad[1];
    if (qp == kIbSmiQp)
    {
        // §13.5.1: QP0 is reached only on VL15 and carries only the subnet management classes;
        // its Q_Key is not checked.
        if (vl != kIbManagementVl)
        {
            Drop(rx, IbMadDropReason::SmpNotOnVl15);
            return;
        }
        if (cls != IbMgmtClass::SubnLid && cls != IbMgmtClass::SubnDirected)
        {
            Drop(rx, IbMadDropReason::WrongClassOnQp0);
            return;
        }
        m.smp.ReadFrom(m.view.mad.data()); // every field, as a fresh IbSmp's ReadFrom
        m_rxMadSmpRead = m_rxMadSmpRead || reuse;
        if (cls == IbMgmtClass::SubnDirected)
        {
            ReceiveDirected(m, rx);
            return;
        }
        Deliver(m, rx);
        return;
    }
    if (vl == kIbManagementVl)
    {
        Drop(rx, IbMadDropReason::SmpNotOnVl15); // VL15 is for QP0 only
        return;
    }
    if (qp == kIbGsiQp)
    {
        if (m.view.deth.GetQkey() != IbDethHeader::kGsiQkey)
        {
            Drop(rx, IbMadDropReason::BadQkey);
            return;
        }
        if (reuse && m_rxMadSmpRead)
        {
            m.smp = IbSmp(); // a GMP carries no SMP: as in a fresh IbReceivedMad
            m_rxMadSmpRead = false;
        }
        Deliver(m, rx);
        return;
    }
    Drop(rx, IbMadDropReason::NoAgent);
}

bool
IbMadDispatcher::ForwardDirectedSmp(uint8_t inPort, const RxBytes& rx)
{
    // Most SMPs of a sweep cross several switches: at each this edits the hop pointer and the
    // ReturnPath in the bytes that came in and sends them on. What it forwards is what
    // ReceiveDirected would (the same rules, C14-9 and C14-13, for the same cases; the MAD's
    // reserved bytes zeroed as an IbSmp's WriteTo writes them; a new BTH and DETH as
    // SendSmpOut's); everything else returns false for ReceiveDirected to decide and count.
    constexpr uint32_t kLrh = IbLrhHeader::kSize;
    if (rx.size != kLrh + kIbMadTransportBytes + kIbMadBytes + kIbIcrcBytes + kIbVcrcBytes)
    {
        return false; // not a MAD, or one with a GRH
    }
    m_forwardLrh.ReadFrom(rx.bytes);
    m_forwardBth.ReadFrom(rx.bytes + kLrh);
    // The packet to send on is the one that came in, edited where it lies: BTH, DETH and MAD
    // follow the LRH in the receiver's copy (rx.bytes), and a new BTH and DETH are written over
    // the old ones, which are not read again.
    uint8_t* packet = rx.bytes + kLrh;
    uint8_t* mad = packet + kIbMadTransportBytes;
    const uint8_t* in = mad;
    if (m_forwardLrh.GetLnh() != IbLnh::IbaLocal || m_forwardBth.GetOpCode() != kIbUdSendOnly ||
        m_forwardBth.GetPadCnt() != 0 || m_forwardBth.GetDestQp() != kIbSmiQp ||
        in[1] != IbMgmtClass::SubnDirected)
    {
        return false;
    }
    const bool returning = (in[IbSmp::kStatusOffset] & (IbMadStatus::DirectionBit >> 8)) != 0;
    const uint8_t hp = in[IbSmp::kHopPointerOffset];
    const uint8_t hc = in[IbSmp::kHopCountOffset];
    if (hc > IbSmp::kMaxHops)
    {
        return false;
    }
    uint8_t out;
    if (!returning)
    {
        if (hp == 0 || hp >= hc)
        {
            return false; // at the end of the path, or a bad hop pointer
        }
        out = in[IbSmp::kInitialPathOffset + hp + 1];
        if (!PortUsable(out))
        {
            return false;
        }
        mad[IbSmp::kReturnPathOffset + hp] = inPort;
        mad[IbSmp::kHopPointerOffset] = static_cast<uint8_t>(hp + 1);
    }
    else
    {
        if (hp < 2 || hp > hc)
        {
            return false; // back at the originator, or a bad hop pointer
        }
        out = in[IbSmp::kReturnPathOffset + hp - 1];
        if (!PortUsable(out))
        {
            return false;
        }
        mad[IbSmp::kHopPointerOffset] = static_cast<uint8_t>(hp - 1);
    }
    IbSmp::Canonicalize(mad);
    m_drForwarded++;
    if (!SendSmpBytesOut(out, packet, kPermissive, kPermissive))
    {
        Drop(rx, IbMadDropReason::SendFailed);
    }
    return true;
}

void
IbMadDispatcher::ReceiveDirected(IbReceivedMad& m, const RxBytes& rx)
{
    IbSmp& s = m.smp;
    const uint8_t hc = s.GetHopCount();
    const uint8_t hp = s.GetHopPointer();
    if (hc > IbSmp::kMaxHops)
    {
        Drop(rx, IbMadDropReason::BadHopCount);
        return;
    }
    if (!s.GetDirection())
    {
        // Outbound, IBA vol. 1 §14.2.2.2 (C14-9), as a receiver.
        if (hp == 0 && hc != 0)
        {
            Drop(rx, IbMadDropReason::BadHopPointer); // the sender must have moved it to 1
            return;
        }
        if (hp > 0 && hp < hc)
        {
            // Part way along the path: only a switch forwards, recording where the SMP came
            // in so that the answer can retrace the path.
            if (!m_switch)
            {
                Drop(rx, IbMadDropReason::NotASwitch);
                return;
            }
            s.ReturnPath()[hp] = m.portNumber;
            s.SetHopPointer(static_cast<uint8_t>(hp + 1));
            const uint8_t out = s.InitialPath()[hp + 1];
            if (!PortUsable(out))
            {
                Drop(rx, IbMadDropReason::BadPathPort);
                return;
            }
            m_drForwarded++;
            if (!SendSmpOut(out, s, kPermissive, kPermissive))
            {
                Drop(rx, IbMadDropReason::SendFailed);
            }
            return;
        }
        if (hp == hc)
        {
            // The end of the directed part: with a permissive DrDLID this node is the target.
            if (s.GetDrDlid() != kPermissive)
            {
                Drop(rx, IbMadDropReason::DrLidRoutedPart);
                return;
            }
            if (hc != 0)
            {
                s.ReturnPath()[hp] = m.portNumber;
            }
            s.SetHopPointer(static_cast<uint8_t>(hp + 1));
            Deliver(m, rx);
            return;
        }
        // hp == hc + 1 arrives only after a LID-routed tail (not modelled); beyond is invalid.
        Drop(rx, IbMadDropReason::BadHopPointer);
        return;
    }
    // Returning, IBA vol. 1 §14.2.2.3 (C14-13), as a receiver.
    if (hc != 0 && hp == hc + 1)
    {
        Drop(rx, IbMadDropReason::BadHopPointer); // the responder must have moved it back
        return;
    }
    if (hp >= 2 && hp <= hc)
    {
        if (!m_switch)
        {
            Drop(rx, IbMadDropReason::NotASwitch);
            return;
        }
        s.SetHopPointer(static_cast<uint8_t>(hp - 1));
        const uint8_t out = s.ReturnPath()[hp - 1];
        if (!PortUsable(out))
        {
            Drop(rx, IbMadDropReason::BadPathPort);
            return;
        }
        m_drForwarded++;
        if (!SendSmpOut(out, s, kPermissive, kPermissive))
        {
            Drop(rx, IbMadDropReason::SendFailed);
        }
        return;
    }
    if (hp == 1)
    {
        // Back at the originator (a permissive DrSLID: no LID-routed head).
        if (s.GetDrSlid() != kPermissive)
        {
            Drop(rx, IbMadDropReason::DrLidRoutedPart);
            return;
        }
        s.SetHopPointer(0);
        Deliver(m, rx);
        return;
    }
    Drop(rx, IbMadDropReason::BadHopPointer);
}

void
IbMadDispatcher::Deliver(const IbReceivedMad& m, const RxBytes& rx)
{
    const uint8_t method = m.view.mad[3];
    const uint8_t cls = m.view.mad[1];
    const bool smp = m.view.bth.GetDestQp() == kIbSmiQp;
    MadHandler h;
    if (ForManager(method))
    {
        h = m_manager;
    }
    else if (smp)
    {
        h = m_sma;
    }
    else
    {
        auto it = m_gsi.find(cls);
        if (it != m_gsi.end())
        {
            h = it->second;
        }
    }
    if (h.IsNull())
    {
        Drop(rx, IbMadDropReason::NoAgent);
        return;
    }
    h(m);
}

// ---- sending --------------------------------------------------------------------------------

bool
IbMadDispatcher::PortUsable(uint8_t n) const
{
    // Asked at every hop of every directed-route SMP: the array's pointer, no Ptr to count.
    const IbNetDevice* p = n < m_portByNumber.size() ? m_portByNumber[n] : nullptr;
    return p && p->GetPhysState() == IbPhysState::LinkUp;
}

uint8_t
IbMadDispatcher::RouteFromSwitch(uint16_t dlid) const
{
    const uint8_t e = m_switch->GetLftEntry(dlid);
    if (e == 0 || e > m_switch->GetNPorts())
    {
        return 0; // 255 (no entry), 0 (ourselves) or a port that does not exist
    }
    return e;
}

bool
IbMadDispatcher::SendSmpOut(uint8_t out, const IbSmp& smp, uint16_t dlid, uint16_t slid)
{
    uint8_t bytes[kIbMadTransportBytes + kIbMadBytes];
    smp.WriteTo(bytes + kIbMadTransportBytes);
    return SendSmpBytesOut(out, bytes, dlid, slid);
}

bool
IbMadDispatcher::SendDirectedSmpOut(uint8_t out, const IbSmp& smp, bool returning,
                                    uint8_t hopPointer)
{
    uint8_t bytes[kIbMadTransportBytes + kIbMadBytes];
    uint8_t* mad = bytes + kIbMadTransportBytes;
    smp.WriteTo(mad);
    // IBA vol. 1 §14.2.1.2, Figure 165: the D bit is the top bit of the Status field, the hop
    // pointer the first byte of ClassSpecific (as IbSmp::SetDirection and SetHopPointer set them).
    constexpr uint8_t kDirection = IbMadStatus::DirectionBit >> 8;
    mad[IbSmp::kStatusOffset] = static_cast<uint8_t>(
        returning ? (mad[IbSmp::kStatusOffset] | kDirection)
                  : (mad[IbSmp::kStatusOffset] & ~kDirection));
    mad[IbSmp::kHopPointerOffset] = hopPointer;
    return SendSmpBytesOut(out, bytes, kPermissive, kPermissive);
}

void
IbMadDispatcher::WriteMadTransport(uint8_t* packet, uint32_t destQp, uint32_t srcQp,
                                   uint32_t qkey)
{
    // IBA vol. 1 §13.5.1: a MAD is a UD SEND Only; its BTH and DETH as IbWriteMadPacket
    // writes them (every field not set here keeps the header's default).
    m_sendBth.SetOpCode(kIbUdSendOnly);
    m_sendBth.SetPkey(IbBthHeader::kDefaultPkey);
    m_sendBth.SetDestQp(destQp);
    m_sendBth.SetPsn(m_psn++ & IbBthHeader::kMax24);
    m_sendBth.WriteTo(packet);
    m_sendDeth.SetQkey(qkey);
    m_sendDeth.SetSrcQp(srcQp);
    m_sendDeth.WriteTo(packet + IbBthHeader::kSize);
}

bool
IbMadDispatcher::SendSmpBytesOut(uint8_t out, uint8_t* packet, uint16_t dlid, uint16_t slid)
{
    IbNetDevice* port = out < m_portByNumber.size() ? m_portByNumber[out] : nullptr;
    if (!port)
    {
        return false;
    }
    // QP0 to QP0; the SMI ignores the Q_Key (§13.5.1), sent as 0.
    WriteMadTransport(packet, kIbSmiQp, kIbSmiQp, 0);
    return port->SendManagementBytes(packet, kIbMadTransportBytes + kIbMadBytes, dlid, slid, 0,
                                     kIbManagementVl);
}

bool
IbMadDispatcher::SendSmpResponse(const IbReceivedMad& request, const IbSmp& smp)
{
    if (smp.IsDirectedRoute())
    {
        const uint8_t hc = smp.GetHopCount();
        const uint8_t hp = smp.GetHopPointer();
        if (hc == 0)
        {
            // A hop count of 0 addresses this node's own SMA (§14.2.2): the answer never leaves.
            IbReceivedMad r = request;
            r.smp = smp;
            r.smp.SetHopPointer(0);
            r.smp.WriteTo(r.view.mad.data());
            if (m_manager.IsNull())
            {
                Drop(nullptr, IbMadDropReason::NoAgent);
                return false;
            }
            Simulator::ScheduleNow([h = m_manager, r]() { h(r); });
            return true;
        }
        if (hp != hc + 1)
        {
            Drop(nullptr, IbMadDropReason::BadHopPointer);
            return false;
        }
        // C14-13: the responder moves the hop pointer back and leaves by ReturnPath[hc], which
        // at a CA is the port the request came in on.
        const uint8_t out = smp.ReturnPath()[hc];
        if (!PortUsable(out) || (!m_switch && out != request.portNumber))
        {
            Drop(nullptr, IbMadDropReason::BadPathPort);
            return false;
        }
        if (!SendDirectedSmpOut(out, smp, smp.GetDirection(), hc))
        {
            Drop(nullptr, IbMadDropReason::SendFailed);
            return false;
        }
        return true;
    }
    const uint16_t dlid = request.view.lrh.GetSlid();
    uint8_t out = request.portNumber;
    if (m_switch)
    {
        out = RouteFromSwitch(dlid);
    }
    if (out == 0 || dlid == kPermissive || dlid == 0)
    {
        Drop(nullptr, IbMadDropReason::NoRoute);
        return false;
    }
    if (!m_switch && IsOwnLid(out, dlid))
    {
        uint8_t bytes[kIbMadBytes];
        smp.WriteTo(bytes);
        return Loopback(out, bytes, kIbSmiQp, kIbSmiQp, 0, dlid, 0, kIbManagementVl);
    }
    const uint16_t lid = GetLid(request.portNumber);
    if (!SendSmpOut(out, smp, dlid, lid == 0 ? kPermissive : lid))
    {
        Drop(nullptr, IbMadDropReason::SendFailed);
        return false;
    }
    return true;
}

void
IbMadDispatcher::SendGmpResponses(const IbReceivedMad& request,
                                  std::vector<std::array<uint8_t, kIbMadBytes>> mads)
{
    for (const auto& mad : mads)
    {
        m_paced.push_back({request.portNumber, request.view.lrh.GetSlid(),
                           request.view.deth.GetSrcQp(), request.view.lrh.GetSl(), mad});
    }
    if (!m_pacedRetry.IsRunning())
    {
        SendPacedGmps();
    }
}

std::pair<uint8_t, uint8_t>
IbMadDispatcher::GmpPortAndVl(uint8_t port, uint16_t dlid, uint8_t sl) const
{
    if (m_switch)
    {
        const uint8_t out = RouteFromSwitch(dlid);
        return {out, out == 0 ? uint8_t{0} : m_switch->MapSlToVl(0, out, sl)};
    }
    Ptr<IbNetDevice> dev = GetPort(port);
    return {dev ? port : uint8_t{0}, dev ? dev->MapSlToVl(sl) : uint8_t{0}};
}

void
IbMadDispatcher::SendPacedGmps()
{
    while (!m_paced.empty())
    {
        const PacedGmp& g = m_paced.front();
        const auto [out, vl] = GmpPortAndVl(g.port, g.dlid, g.sl);
        Ptr<IbNetDevice> dev = out == 0 ? nullptr : GetPort(out);
        if (dev && dev->GetPortState() == IbPortState::Active && !dev->HasQueueRoom(vl) &&
            !(!m_switch && IsOwnLid(out, g.dlid)))
        {
            // Full: look again once the wire has had time to take one MAD packet.
            const Time gap = dev->GetActiveRate().SerializationTime(kIbMadBytes + 40);
            m_pacedRetry = Simulator::Schedule(std::max(gap, NanoSeconds(1)),
                                               &IbMadDispatcher::SendPacedGmps, this);
            return;
        }
        // Sent, or refused for a reason waiting does not mend (counted by SendGmp).
        SendGmp(g.port, g.mad.data(), g.dlid, g.destQp, g.sl);
        m_paced.pop_front();
    }
}

bool
IbMadDispatcher::SendGmp(uint8_t port, const uint8_t* mad, uint16_t dlid, uint32_t destQp,
                         uint8_t sl)
{
    const auto [out, vl] = GmpPortAndVl(port, dlid, sl);
    Ptr<IbNetDevice> dev = out == 0 ? nullptr : GetPort(out);
    if (!dev)
    {
        Drop(nullptr, IbMadDropReason::NoRoute);
        return false;
    }
    if (!m_switch)
    {
        if (IsOwnLid(out, dlid))
        {
            // GMPs travel on data VLs, which carry nothing until the port is Active (§7.2).
            if (dev->GetPortState() != IbPortState::Active)
            {
                Drop(nullptr, IbMadDropReason::SendFailed);
                return false;
            }
            return Loopback(out, mad, destQp, kIbGsiQp, IbDethHeader::kGsiQkey, dlid, sl, vl);
        }
    }
    uint8_t bytes[kIbMadTransportBytes + kIbMadBytes];
    std::memcpy(bytes + kIbMadTransportBytes, mad, kIbMadBytes);
    WriteMadTransport(bytes, destQp, kIbGsiQp, IbDethHeader::kGsiQkey);
    if (!dev->SendManagementBytes(bytes, sizeof(bytes), dlid, GetLid(out), sl, vl))
    {
        Drop(nullptr, IbMadDropReason::SendFailed);
        return false;
    }
    return true;
}

bool
IbMadDispatcher::SendGmpResponse(const IbReceivedMad& request, const uint8_t* mad)
{
    // §13.5.3.2: a response goes back to the requester's LID and QP.
    return SendGmp(request.portNumber, mad, request.view.lrh.GetSlid(),
                   request.view.deth.GetSrcQp(), request.view.lrh.GetSl());
}

bool
IbMadDispatcher::SendDirectedSmp(const IbSmp& request)
{
    if (request.GetDrSlid() != kPermissive || request.GetDrDlid() != kPermissive)
    {
        Drop(nullptr, IbMadDropReason::DrLidRoutedPart);
        return false;
    }
    if (request.GetHopCount() > IbSmp::kMaxHops)
    {
        Drop(nullptr, IbMadDropReason::BadHopCount);
        return false;
    }
    if (request.GetHopCount() == 0)
    {
        IbSmp smp = request;
        smp.SetDirection(false);
        // To this node's own SMA, through the SMI's loopback.
        if (m_sma.IsNull() || m_ports.empty())
        {
            Drop(nullptr, IbMadDropReason::NoAgent);
            return false;
        }
        IbReceivedMad r;
        r.port = m_ports.begin()->second;
        r.portNumber = m_switch ? 0 : m_ports.begin()->first;
        r.vl = kIbManagementVl;
        smp.SetHopPointer(1);
        r.smp = smp;
        smp.WriteTo(r.view.mad.data());
        r.view.bth.SetDestQp(kIbSmiQp);
        Simulator::ScheduleNow([h = m_sma, r]() { h(r); });
        return true;
    }
    // C14-9 at the originator: outbound (D bit 0), hop pointer to 1, out of InitialPath[1].
    const uint8_t out = request.InitialPath()[1];
    if (!PortUsable(out))
    {
        Drop(nullptr, IbMadDropReason::BadPathPort);
        return false;
    }
    if (!SendDirectedSmpOut(out, request, false, 1))
    {
        Drop(nullptr, IbMadDropReason::SendFailed);
        return false;
    }
    return true;
}

bool
IbMadDispatcher::SendLidRoutedSmp(uint8_t port, const IbSmp& smp, uint16_t dlid)
{
    uint8_t out = m_switch ? RouteFromSwitch(dlid) : port;
    if (out == 0 || !GetPort(out))
    {
        Drop(nullptr, IbMadDropReason::NoRoute);
        return false;
    }
    if (!m_switch && IsOwnLid(out, dlid))
    {
        uint8_t bytes[kIbMadBytes];
        smp.WriteTo(bytes);
        return Loopback(out, bytes, kIbSmiQp, kIbSmiQp, 0, dlid, 0, kIbManagementVl);
    }
    const uint16_t lid = GetLid(out);
    if (!SendSmpOut(out, smp, dlid, lid == 0 ? kPermissive : lid))
    {
        Drop(nullptr, IbMadDropReason::SendFailed);
        return false;
    }
    return true;
}

bool
IbMadDispatcher::IsOwnLid(uint8_t port, uint16_t dlid) const
{
    Ptr<IbNetDevice> p = GetPort(port);
    if (!p || p->GetLid() == 0 || dlid == 0 || dlid >= 0xC000)
    {
        return false;
    }
    // A port answers to 2^LMC LIDs from its base LID (IBA vol. 1 §7.11.1).
    const uint16_t mask = static_cast<uint16_t>(~((1u << p->GetLmc()) - 1));
    return (dlid & mask) == (p->GetLid() & mask);
}

bool
IbMadDispatcher::Loopback(uint8_t port, const uint8_t* mad, uint32_t destQp, uint32_t srcQp,
                          uint32_t qkey, uint16_t lid, uint8_t sl, uint8_t vl)
{
    // What the packet would have carried, had it gone out and come back: the node's SMI/GSI
    // takes it as received on the same port, in a later event (as a send's completion and the
    // arrival are never one step on an adapter).
    IbReceivedMad m;
    m.port = GetPort(port);
    m.portNumber = port;
    m.vl = vl;
    m.view.lrh.SetVl(vl);
    m.view.lrh.SetSl(sl);
    m.view.lrh.SetDlid(lid);
    m.view.lrh.SetSlid(lid);
    m.view.bth.SetDestQp(destQp);
    m.view.deth.SetSrcQp(srcQp);
    m.view.deth.SetQkey(qkey);
    std::copy(mad, mad + kIbMadBytes, m.view.mad.begin());
    if (destQp == kIbSmiQp)
    {
        m.smp.ReadFrom(mad);
    }
    m_loopedBack++;
    Simulator::ScheduleNow([this, m]() { Deliver(m, RxBytes()); });
    return true;
}

} // namespace ns3
