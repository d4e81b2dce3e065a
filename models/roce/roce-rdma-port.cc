#include "roce-rdma-port.h"

#include "models/common/big-endian.h"
#include "models/common/ip-address-bytes.h"
#include "models/ib/ib-crc.h"
#include "models/rdma/ib-opcode.h"

#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RoceRdmaPort");
NS_OBJECT_ENSURE_REGISTERED(RoceRdmaPort);

namespace
{
constexpr uint32_t kBthSize = 12;
constexpr uint32_t kBthDestQpOffset = 5;
constexpr uint8_t kCnpOpcode = 0x81; ///< annex A17.9.1: RoCEv2 CNP
// QP1's MADs (IBA vol. 1 §13.5.1): UD SEND Only, DETH with the GSI's Q_Key, 256 bytes.
constexpr uint32_t kDethSize = 8;
constexpr uint32_t kGsiMadBytes = 256;
constexpr uint8_t kGsiSendOnly = 0x64;
constexpr uint32_t kGsiQkey = 0x80010000;
/// The largest headers a RoCE packet can carry besides its payload: GRH-sized IP header, UDP,
/// BTH, XRCETH, AtomicETH, ICRC (the allowance Linux subtracts from the netdev MTU before
/// choosing the RoCE active MTU, iboe_get_mtu).
constexpr uint32_t kRoceMtuAllowance = 40 + 8 + 12 + 4 + 28 + 4;

/// The transport bytes to store for a packet: all but the zeros that end them, and never less
/// than the BTH. Scans eight bytes at a time from the end; real data stops it at once.
uint32_t
StoredLength(const std::vector<uint8_t>& transport)
{
    size_t n = transport.size();
    const uint8_t* b = transport.data();
    while (n >= kBthSize + 8)
    {
        uint64_t w;
        std::memcpy(&w, b + n - 8, 8);
        if (w != 0)
        {
            break;
        }
        n -= 8;
    }
    while (n > kBthSize && b[n - 1] == 0)
    {
        --n;
    }
    return static_cast<uint32_t>(n);
}
} // namespace

const char*
RoceDropReasonName(RoceDropReason r)
{
    switch (r)
    {
    case RoceDropReason::NotRoce:
        return "NotRoce";
    case RoceDropReason::Malformed:
        return "Malformed";
    case RoceDropReason::BadIcrc:
        return "BadIcrc";
    case RoceDropReason::Management:
        return "Management";
    default:
        return "?";
    }
}

RdmaGid
RoceGidFromIpv4(uint32_t ip)
{
    RdmaGid g{};
    g[10] = 0xFF;
    g[11] = 0xFF;
    StoreBe32(g.data() + 12, ip);
    return g;
}

bool
RoceGidToIpv4(const RdmaGid& gid, uint32_t& ip)
{
    return Ipv4FromMapped(gid, ip);
}

uint16_t
RoceUdpSourcePort(uint32_t flowLabel, const RdmaGid& sgid, const RdmaGid& dgid, uint32_t destQp)
{
    uint32_t fl = flowLabel & 0xFFFFF;
    if (fl == 0)
    {
        // FNV-1a over the addresses and the QP, folded to 20 bits like a flow label.
        uint32_t h = 2166136261u;
        auto mix = [&h](uint8_t b) {
            h ^= b;
            h *= 16777619u;
        };
        for (uint8_t b : sgid)
        {
            mix(b);
        }
        for (uint8_t b : dgid)
        {
            mix(b);
        }
        for (int i = 0; i < 3; ++i)
        {
            mix(static_cast<uint8_t>(destQp >> (8 * i)));
        }
        fl = (h ^ (h >> 20)) & 0xFFFFF;
    }
    // 20 bits folded into 14, then the top two bits set: 0xC000..0xFFFF.
    const uint32_t low = (fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14);
    return static_cast<uint16_t>(0xC000 | low);
}

TypeId
RoceRdmaPort::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RoceRdmaPort")
            .SetParent<RdmaLinkPort>()
            .SetGroupName("Cnuas")
            .AddConstructor<RoceRdmaPort>()
            .AddAttribute("Priority",
                          "Traffic class (802.1p priority) of data and ACKs when the address "
                          "vector's SL is 0 (0-7; PFC is usually enabled on 3).",
                          UintegerValue(3),
                          MakeUintegerAccessor(&RoceRdmaPort::m_priority),
                          MakeUintegerChecker<uint8_t>(0, 7))
            .AddAttribute("Dscp",
                          "IP DSCP of data and ACKs when the address vector's traffic class is "
                          "0 (0-63; 26 is the usual RoCE marking).",
                          UintegerValue(26),
                          MakeUintegerAccessor(&RoceRdmaPort::m_dscp),
                          MakeUintegerChecker<uint8_t>(0, 63))
            .AddAttribute("EcnCodepoint",
                          "IP ECN field of data and ACKs (0 Not-ECT, 1 ECT(1), 2 ECT(0); "
                          "RFC 3168 §5). Not-ECT turns ECN marking off for this port.",
                          UintegerValue(kEcnEct0),
                          MakeUintegerAccessor(&RoceRdmaPort::m_ecn),
                          MakeUintegerChecker<uint8_t>(0, 2))
            .AddAttribute("CnpPriority",
                          "Traffic class of CNPs (0-7).",
                          UintegerValue(3),
                          MakeUintegerAccessor(&RoceRdmaPort::m_cnpPriority),
                          MakeUintegerChecker<uint8_t>(0, 7))
            .AddAttribute("CnpDscp",
                          "IP DSCP of CNPs (0-63; 48 is the NIC default).",
                          UintegerValue(48),
                          MakeUintegerAccessor(&RoceRdmaPort::m_cnpDscp),
                          MakeUintegerChecker<uint8_t>(0, 63))
            .AddAttribute("HopLimit",
                          "IPv4 TTL / IPv6 hop limit when the address vector gives none.",
                          UintegerValue(64),
                          MakeUintegerAccessor(&RoceRdmaPort::m_hopLimit),
                          MakeUintegerChecker<uint8_t>(1, 255))
            .AddAttribute("CheckIcrc",
                          "Verify the ICRC of received packets (false skips the CRC pass, "
                          "for speed in large runs; corrupt packets then go undetected).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&RoceRdmaPort::m_checkIcrc),
                          MakeBooleanChecker())
            .AddAttribute("IntMaxHops",
                          "INT hop slots on this port's RDMA request packets (HPCC paper §3.2): "
                          "0 sends no INT; n > 0 gives every ECN-capable request an n-slot "
                          "stack (at most 8) that switches fill and the responder echoes in its "
                          "ACK; 8 n + 2 bytes are charged on the wire (count).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RoceRdmaPort::m_intMaxHops),
                          MakeUintegerChecker<uint8_t>(0, kIntStackCapacity))
            .AddAttribute("TxPipelineFrames",
                          "Doorbell-to-wire pipeline: frames of this port's RDMA traffic a "
                          "traffic class may hold waiting for the wire; the engine picks the "
                          "next packet (and its QP) only when there is room, i.e. as a frame "
                          "starts on the wire. 2 lets the scheduler run one to two packet "
                          "times ahead of the wire, as a NIC's does (docs/roce.md §9), "
                          "frames.",
                          UintegerValue(2),
                          MakeUintegerAccessor(&RoceRdmaPort::m_pipelineFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("LazyIcrc",
                          "Send model-made packets with an ICRC placeholder that is computed "
                          "only when bytes are materialized (pcap, sniffers); receivers skip "
                          "the check for them, as they would pass (false: compute at the "
                          "sender and check at the receiver, as for bytes from outside).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&RoceRdmaPort::m_lazyIcrc),
                          MakeBooleanChecker())
            .AddAttribute("LoopbackDelay",
                          "How long a multicast packet this port sends takes to turn round "
                          "inside the adapter to the port's own members (QPs attached to the "
                          "group on this host), besides going to the fabric.",
                          TimeValue(MicroSeconds(1)),
                          MakeTimeAccessor(&RoceRdmaPort::m_loopbackDelay),
                          MakeTimeChecker())
            .AddTraceSource("Tx",
                            "A RoCEv2 packet was queued: (bytes BTH..ICRC, BTH opcode).",
                            MakeTraceSourceAccessor(&RoceRdmaPort::m_txTrace),
                            "ns3::TracedCallback::Uint32Uint8")
            .AddTraceSource("Rx",
                            "A RoCEv2 packet went to the engine: (bytes, opcode, ECN CE).",
                            MakeTraceSourceAccessor(&RoceRdmaPort::m_rxTrace),
                            "ns3::TracedCallback::Uint32Uint8Bool")
            .AddTraceSource("Drop",
                            "A received frame was discarded: (RoceDropReason).",
                            MakeTraceSourceAccessor(&RoceRdmaPort::m_dropTrace),
                            "ns3::TracedCallback::Uint8");
    return tid;
}

RoceRdmaPort::RoceRdmaPort() = default;
RoceRdmaPort::~RoceRdmaPort() = default;

void
RoceRdmaPort::DoDispose()
{
    if (m_dev)
    {
        m_dev->SetEthReceiveCallback(EthNetDevice::EthReceiveCallback());
        m_dev->SetTxReadyCallback(Callback<void, Ptr<EthNetDevice>, uint8_t>());
    }
    m_dev = nullptr;
    m_rx = ReceiveCallback();
    m_txReady = Callback<void>();
    RdmaLinkPort::DoDispose();
}

void
RoceRdmaPort::SetNetDevice(Ptr<EthNetDevice> dev)
{
    m_dev = dev;
    dev->SetEthReceiveCallback(MakeCallback(&RoceRdmaPort::OnReceive, this));
    dev->SetTxReadyCallback(MakeCallback(&RoceRdmaPort::OnTxReady, this));
}

Ptr<EthNetDevice>
RoceRdmaPort::GetNetDevice() const
{
    return m_dev;
}

void
RoceRdmaPort::SetPkeyTable(const std::vector<uint16_t>& table)
{
    m_pkeys = table;
}

uint8_t
RoceRdmaPort::PriorityFor(uint8_t sl) const
{
    // RoCE address vectors carry the 802.1p priority in the SL (rdma-core's ah_attr.sl).
    return sl != 0 ? static_cast<uint8_t>(sl & 7) : m_priority;
}

uint32_t
RoceRdmaPort::WriteIpUdp(const EthFrame& f, uint8_t* out)
{
    const uint16_t udpLen = static_cast<uint16_t>(kUdpHeaderBytes + f.payloadBytes);
    uint8_t* udp = out;
    if (f.ipv6)
    {
        // RFC 8200 §3 (traffic class, flow label and hop limit are masked by the ICRC).
        std::memset(out, 0, kIpv6HeaderBytes);
        const uint8_t tc = static_cast<uint8_t>(f.dscp << 2 | (f.ecn & 3));
        out[0] = static_cast<uint8_t>(0x60 | tc >> 4);
        out[1] = static_cast<uint8_t>((tc & 0x0F) << 4 | ((f.flowLabel >> 16) & 0x0F));
        StoreBe16(out + 2, static_cast<uint16_t>(f.flowLabel));
        StoreBe16(out + 4, udpLen);
        out[7] = f.ttl;
        out[6] = kIpProtoUdp;
        std::memcpy(out + 8, f.srcIp6.data(), 16);
        std::memcpy(out + 24, f.dstIp6.data(), 16);
        udp = out + kIpv6HeaderBytes;
    }
    else
    {
        // RFC 791 §3.1 as EthFrame::Materialize writes it (DF set); TOS, TTL and the checksum
        // are masked by the ICRC but filled for the UD receive buffer's copy.
        std::memset(out, 0, kIpv4HeaderBytes);
        out[0] = 0x45;
        StoreBe16(out + 2, static_cast<uint16_t>(kIpv4HeaderBytes + udpLen));
        StoreBe16(out + 4, f.ipId);
        StoreBe16(out + 6, 0x4000);
        out[1] = static_cast<uint8_t>(f.dscp << 2 | (f.ecn & 3));
        out[8] = f.ttl;
        out[9] = kIpProtoUdp;
        StoreBe32(out + 12, f.srcIp);
        StoreBe32(out + 16, f.dstIp);
        StoreBe16(out + 10, InternetChecksum(out, kIpv4HeaderBytes));
        udp = out + kIpv4HeaderBytes;
    }
    StoreBe16(udp, f.srcPort);
    StoreBe16(udp + 2, f.dstPort);
    StoreBe16(udp + 4, udpLen);
    StoreBe16(udp + 6, 0);
    return static_cast<uint32_t>(udp + kUdpHeaderBytes - out);
}

void
RoceRdmaPort::SetGsiReceiveCallback(GsiReceiveCallback cb)
{
    m_gsiRx = cb;
}

bool
RoceRdmaPort::SendGsi(const uint8_t* mad, const RdmaGid& dgid)
{
    // IBA vol. 1 §13.5.1: a MAD is a UD SEND Only from QP1 to QP1 with the GSI's Q_Key,
    // P_Key the default partition's; PSN counts per sending QP (§9.7.1).
    std::vector<uint8_t> t(kBthSize + kDethSize + kGsiMadBytes, 0);
    t[0] = kGsiSendOnly;
    t[1] = 0;
    t[2] = 0xFF;
    t[3] = 0xFF;
    t[kBthDestQpOffset + 2] = 1;
    m_gsiPsn = (m_gsiPsn + 1) & 0xFFFFFF;
    t[9] = static_cast<uint8_t>(m_gsiPsn >> 16);
    t[10] = static_cast<uint8_t>(m_gsiPsn >> 8);
    t[11] = static_cast<uint8_t>(m_gsiPsn);
    StoreBe32(t.data() + kBthSize, kGsiQkey);
    t[kBthSize + 7] = 1; // source QP 1
    std::copy(mad, mad + kGsiMadBytes, t.begin() + kBthSize + kDethSize);
    RdmaAhAttr av;
    av.is_global = 1;
    av.grh.dgid = dgid;
    av.grh.hop_limit = m_hopLimit;
    return Send(t, av);
}

bool
RoceRdmaPort::Send(const std::vector<uint8_t>& transport, const RdmaAhAttr& av, uint32_t zeroTail)
{
    return SendFrame(transport, av, nullptr, zeroTail);
}

bool
RoceRdmaPort::SendWithIntEcho(const std::vector<uint8_t>& transport, const RdmaAhAttr& av,
                              const IntStack& echo)
{
    return SendFrame(transport, av, &echo, 0);
}

bool
RoceRdmaPort::SendFrame(const std::vector<uint8_t>& transport, const RdmaAhAttr& av,
                        const IntStack* echo, uint32_t zeroTail)
{
    if (!m_dev || transport.size() < kBthSize)
    {
        return false;
    }
    const bool cnp = transport[0] == kCnpOpcode;
    EthUdpFlow flow;
    uint32_t ip4 = 0;
    RdmaGid sgid{};
    bool multicast = false;
    if (RoceGidToIpv4(av.grh.dgid, ip4))
    {
        flow.dstIp = ip4;
        sgid = RoceGidFromIpv4(m_dev->GetIpv4());
        multicast = EthIsIpv4Multicast(ip4); // ::ffff:224.0.0.0/4 names an IPv4 group
    }
    else
    {
        flow.ipv6 = true;
        std::copy(av.grh.dgid.begin(), av.grh.dgid.end(), flow.dstIp6.begin());
        flow.flowLabel = av.grh.flow_label;
        const Ipv6Bytes src = m_dev->GetIpv6();
        std::copy(src.begin(), src.end(), sgid.begin());
        multicast = EthIsIpv6Multicast(flow.dstIp6);
    }
    const uint32_t destQp = (uint32_t(transport[kBthDestQpOffset]) << 16) |
                            (uint32_t(transport[kBthDestQpOffset + 1]) << 8) |
                            transport[kBthDestQpOffset + 2];
    flow.srcPort = RoceUdpSourcePort(av.grh.flow_label, sgid, av.grh.dgid, destQp);
    flow.dstPort = kRoceV2UdpPort;
    if (cnp)
    {
        flow.priority = m_cnpPriority;
        flow.dscp = m_cnpDscp;
        flow.ecn = kEcnNotEct;
    }
    else
    {
        flow.priority = PriorityFor(av.sl);
        flow.dscp = av.grh.traffic_class ? static_cast<uint8_t>(av.grh.traffic_class >> 2)
                                         : m_dscp;
        flow.ecn = m_ecn;
        if (echo)
        {
            flow.intEcho = echo;
            flow.intEchoSlots = m_intMaxHops;
        }
        else if (m_intMaxHops > 0 && flow.ecn != kEcnNotEct)
        {
            const IbOpcodeInfo* op = IbOpcodeLookup(transport[0]);
            if (op && op->Has(IbOpFlag::kRequest))
            {
                flow.intMaxHops = m_intMaxHops; // a data packet of an INT flow
            }
        }
    }
    const uint32_t payloadBytes =
        static_cast<uint32_t>(transport.size() + zeroTail + kIbIcrcSize);
    if (m_lazyIcrc)
    {
        // The packet is correct by construction: the ICRC is a placeholder that
        // EthFrame::Materialize fills when bytes are needed, and receivers do not check it.
        // The placeholder and any zeros that end the transport bytes (the data of memory that
        // reads as zeros, in load experiments) are not stored: the frame keeps the leading
        // bytes, zeros follow, and a header-only packet stays in the frame record
        // (EthFrame::StorePayload). Same bytes, no ns-3 Packet and no kilobyte per packet.
        flow.icrcPending = true;
        const uint32_t stored = StoredLength(transport);
        if (!m_dev->SendUdp(flow, payloadBytes, transport.data(), stored))
        {
            return false;
        }
        if (multicast)
        {
            LoopBackMulticast(flow, payloadBytes, transport.data(), stored, nullptr);
        }
    }
    else
    {
        // The fields the device will put on the wire, for the ICRC. (Only here: a frame record
        // is an event and an ns-3 Header to build and destroy, which the lazy path above, every
        // packet of a simulation, does not need.)
        EthFrame f;
        if (flow.ipv6)
        {
            f.ipv6 = true;
            f.srcIp6 = m_dev->GetIpv6();
            f.dstIp6 = flow.dstIp6;
        }
        else
        {
            f.srcIp = m_dev->GetIpv4();
            f.dstIp = flow.dstIp;
        }
        f.srcPort = flow.srcPort;
        f.dstPort = flow.dstPort;
        f.payloadBytes = payloadBytes;
        f.ipId = m_dev->PeekNextIpId();
        // IP + UDP headers, then the transport, then the ICRC over all of it (annex
        // A17.4.5.3).
        m_buf.resize(kIpv6HeaderBytes + kUdpHeaderBytes + payloadBytes);
        const uint32_t hdr = WriteIpUdp(f, m_buf.data());
        std::copy(transport.begin(), transport.end(), m_buf.begin() + hdr);
        const uint32_t icrcAt = hdr + static_cast<uint32_t>(transport.size()) + zeroTail;
        std::fill(m_buf.begin() + hdr + transport.size(), m_buf.begin() + icrcAt, 0);
        IbStoreIcrc(m_buf.data() + icrcAt, IbComputeRoceIcrc(m_buf.data(), icrcAt));
        Ptr<const Packet> payload = Create<Packet>(m_buf.data() + hdr, payloadBytes);
        if (!m_dev->SendUdp(flow, payloadBytes, payload))
        {
            return false;
        }
        if (multicast)
        {
            LoopBackMulticast(flow, payloadBytes, nullptr, 0, payload);
        }
    }
    ++m_sent;
    if (cnp)
    {
        ++m_cnpsSent;
    }
    m_txTrace(payloadBytes, transport[0]);
    return true;
}

void
RoceRdmaPort::LoopBackMulticast(const EthUdpFlow& flow,
                                uint32_t payloadBytes,
                                const uint8_t* leading,
                                uint32_t stored,
                                Ptr<const Packet> payload)
{
    // The fabric never sends a multicast datagram back out of the port it came in by, so the
    // adapter hands its own members their copy itself, as ConnectX does unless a QP asks for
    // IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (IbRdmaPort does the same). The copy is the datagram
    // as received: the fields OnReceive reads, the same IP identification (the ICRC, when it
    // was computed, covers it).
    auto frame = std::make_shared<EthFrame>();
    frame->kind = EthFrameKind::Udp;
    frame->ipv6 = flow.ipv6;
    if (flow.ipv6)
    {
        frame->srcIp6 = m_dev->GetIpv6();
        frame->dstIp6 = flow.dstIp6;
        frame->flowLabel = flow.flowLabel & 0xFFFFF;
    }
    else
    {
        frame->srcIp = m_dev->GetIpv4();
        frame->dstIp = flow.dstIp;
    }
    frame->srcPort = flow.srcPort;
    frame->dstPort = flow.dstPort;
    frame->priority = flow.priority;
    frame->dscp = flow.dscp & 0x3F;
    frame->ecn = flow.ecn & 3;
    frame->ipId = static_cast<uint16_t>(m_dev->PeekNextIpId() - 1); // the one SendUdp used
    frame->payloadBytes = payloadBytes;
    if (leading)
    {
        frame->StorePayload(leading, stored);
    }
    else
    {
        frame->payload = payload;
    }
    frame->icrcPending = flow.icrcPending && frame->StoredPayloadBytes() > 0;
    frame->ComputeSize();
    ++m_loopedBack;
    Ptr<RoceRdmaPort> self(this);
    Simulator::Schedule(m_loopbackDelay, [self, frame]() {
        if (self->m_dev)
        {
            self->OnReceive(self->m_dev, *frame);
        }
    });
}

bool
RoceRdmaPort::CanSend(uint8_t sl) const
{
    const uint8_t tc = PriorityFor(sl);
    return m_dev && m_dev->CanSend(tc) && m_dev->GetQueuedFrames(tc) < m_pipelineFrames;
}

uint32_t
RoceRdmaPort::GetPacedBytes(uint32_t transportBytes, const RdmaAhAttr& av) const
{
    if (!m_dev)
    {
        return transportBytes;
    }
    uint32_t ip4 = 0;
    const bool ipv6 = !RoceGidToIpv4(av.grh.dgid, ip4);
    // A request of an INT flow carries its stack (SendFrame).
    const uint32_t intBytes =
        m_intMaxHops > 0 && m_ecn != kEcnNotEct ? IntStackWireBytes(m_intMaxHops) : 0;
    return m_dev->UdpWireBytes(transportBytes + kIbIcrcSize, ipv6, intBytes);
}

void
RoceRdmaPort::SetTxReadyCallback(Callback<void> cb)
{
    m_txReady = cb;
}

void
RoceRdmaPort::SetReceiveCallback(ReceiveCallback cb)
{
    m_rx = cb;
}

bool
RoceRdmaPort::IsActive() const
{
    return m_dev && m_dev->LinkUp();
}

uint32_t
RoceRdmaPort::GetMtu() const
{
    // The RoCE active MTU: the largest IB MTU whose packets, with the largest headers, fit the
    // Ethernet MTU (1500 -> 1024, 9000 -> 4096).
    const uint32_t room = m_dev && m_dev->GetMtu() > kRoceMtuAllowance
                              ? m_dev->GetMtu() - kRoceMtuAllowance
                              : 0;
    uint32_t mtu = 256;
    while (mtu < 4096 && mtu * 2 <= room)
    {
        mtu *= 2;
    }
    return mtu;
}

uint32_t
RoceRdmaPort::GetIcrcSize() const
{
    return kIbIcrcSize;
}

RdmaLinkLayer
RoceRdmaPort::GetLinkLayer() const
{
    return RdmaLinkLayer::ETHERNET;
}

uint16_t
RoceRdmaPort::GetLid() const
{
    return 0;
}

bool
RoceRdmaPort::GetGid(uint8_t index, RdmaGid& gid) const
{
    if (!m_dev)
    {
        return false;
    }
    if (index == 0 && m_dev->GetIpv4() != 0)
    {
        gid = RoceGidFromIpv4(m_dev->GetIpv4());
        return true;
    }
    if (index == 1)
    {
        const Ipv6Bytes& a = m_dev->GetIpv6();
        if (std::all_of(a.begin(), a.end(), [](uint8_t b) { return b == 0; }))
        {
            return false;
        }
        std::copy(a.begin(), a.end(), gid.begin());
        return true;
    }
    return false;
}

bool
RoceRdmaPort::GetPkey(uint16_t index, uint16_t& pkey) const
{
    if (index >= m_pkeys.size())
    {
        return false;
    }
    pkey = m_pkeys[index];
    return true;
}

void
RoceRdmaPort::NotifyPkeyViolation(const RdmaPkeyViolation& /* v */)
{
    ++m_pkeyViolations;
}

void
RoceRdmaPort::OnTxReady(Ptr<EthNetDevice>, uint8_t)
{
    if (!m_txReady.IsNull())
    {
        m_txReady();
    }
}

void
RoceRdmaPort::Drop(RoceDropReason r)
{
    ++m_drops[static_cast<int>(r)];
    m_dropTrace(static_cast<uint8_t>(r));
}

void
RoceRdmaPort::OnReceive(Ptr<EthNetDevice>, const EthFrame& f)
{
    if (f.kind != EthFrameKind::Udp || f.dstPort != kRoceV2UdpPort)
    {
        Drop(RoceDropReason::NotRoce);
        return;
    }
    // The frame stores at least the BTH; zeros it did not store may follow
    // (EthFrame::StorePayload).
    const uint32_t storedBytes = f.StoredPayloadBytes();
    if (f.payloadBytes < kBthSize + kIbIcrcSize || storedBytes < kBthSize ||
        storedBytes > f.payloadBytes)
    {
        Drop(RoceDropReason::Malformed);
        return;
    }
    // The transport bytes go after room for the largest IP + UDP header, which is written in
    // front of them only when needed: for the ICRC check, or for a UD packet's GRH area.
    constexpr uint32_t kRoom = kIpv6HeaderBytes + kUdpHeaderBytes;
    // The buffer only grows (with zeros), and only bytes below m_rxWrittenEnd were ever
    // written: what lies past this packet's stored bytes is zeroed only that far, not through
    // a kilobyte of payload that memory reading as zeros left out of every frame.
    if (m_rxBuf.size() < kRoom + f.payloadBytes)
    {
        m_rxBuf.resize(kRoom + f.payloadBytes);
    }
    const uint32_t stored = f.CopyPayload(m_rxBuf.data() + kRoom, f.payloadBytes);
    const size_t storedEnd = kRoom + stored;
    if (m_rxWrittenEnd > storedEnd)
    {
        std::fill(m_rxBuf.begin() + storedEnd, m_rxBuf.begin() + m_rxWrittenEnd, 0);
    }
    m_rxWrittenEnd = storedEnd;
    const uint8_t* bth = m_rxBuf.data() + kRoom;
    uint8_t* ip =
        m_rxBuf.data() + kRoom - (f.ipv6 ? kIpv6HeaderBytes : kIpv4HeaderBytes) - kUdpHeaderBytes;
    // A frame the model made (icrcPending) is correct by construction; only bytes from
    // outside the model are checked (docs/architecture.md §6.7). A frame an error model
    // damaged never gets here: the MAC drops it as BadFcs.
    const bool check = m_checkIcrc && !f.icrcPending;
    // IBA vol. 1 §9.2 table 38: opcodes 011xxxxx are UD, whose receive buffers get the GRH.
    const bool ud = (bth[0] >> 5) == 3;
    if (check || ud)
    {
        WriteIpUdp(f, ip);
    }
    const uint32_t icrcAt = static_cast<uint32_t>(bth - ip) + f.payloadBytes - kIbIcrcSize;
    if (check && IbLoadIcrc(ip + icrcAt) != IbComputeRoceIcrc(ip, icrcAt))
    {
        Drop(RoceDropReason::BadIcrc);
        return;
    }
    const uint32_t destQp = (uint32_t(bth[kBthDestQpOffset]) << 16) |
                            (uint32_t(bth[kBthDestQpOffset + 1]) << 8) | bth[kBthDestQpOffset + 2];
    if (destQp == 1 && !m_gsiRx.IsNull() && bth[0] == kGsiSendOnly &&
        f.payloadBytes == kBthSize + kDethSize + kGsiMadBytes + kIbIcrcSize &&
        LoadBe32(bth + kBthSize) == kGsiQkey)
    {
        // QP1: a MAD for the adapter's general services agents (the CM).
        RdmaRxInfo info;
        info.sl = f.priority;
        info.global = true;
    info.networkHdr = f.ipv6 ? RDMA_NETWORK_IPV6 : RDMA_NETWORK_IPV4;
        if (f.ipv6)
        {
            std::copy(f.srcIp6.begin(), f.srcIp6.end(), info.sgid.begin());
            std::copy(f.dstIp6.begin(), f.dstIp6.end(), info.dgid.begin());
        }
        else
        {
            info.sgid = RoceGidFromIpv4(f.srcIp);
            info.dgid = RoceGidFromIpv4(f.dstIp);
        }
        ++m_received;
        m_gsiRx(bth + kBthSize + kDethSize, info);
        return;
    }
    if (destQp <= 1)
    {
        Drop(RoceDropReason::Management); // QP0/QP1 belong to the management agents
        return;
    }
    RdmaRxInfo info;
    info.sl = f.priority;
    info.global = true;
    info.networkHdr = f.ipv6 ? RDMA_NETWORK_IPV6 : RDMA_NETWORK_IPV4;
    info.ecnMarked = f.ecn == kEcnCe;
    info.intStack = f.intRec ? &f.intRec->stack : nullptr;
    if (f.ipv6)
    {
        std::copy(f.srcIp6.begin(), f.srcIp6.end(), info.sgid.begin());
        std::copy(f.dstIp6.begin(), f.dstIp6.end(), info.dgid.begin());
        if (ud)
        {
            std::copy(ip, ip + kIpv6HeaderBytes, info.grhBytes.begin());
        }
    }
    else
    {
        info.sgid = RoceGidFromIpv4(f.srcIp);
        info.dgid = RoceGidFromIpv4(f.dstIp);
        // Annex A17.4.5.1: over IPv4 the first 20 bytes of the GRH area are undefined (zero
        // here) and the IPv4 header fills the last 20.
        if (ud)
        {
            std::copy(ip, ip + kIpv4HeaderBytes, info.grhBytes.begin() + 20);
        }
    }
    ++m_received;
    if (info.ecnMarked)
    {
        ++m_ceReceived;
    }
    m_rxTrace(f.payloadBytes, bth[0], info.ecnMarked);
    if (!m_rx.IsNull())
    {
        m_rx(this, bth, f.payloadBytes, info);
    }
}

} // namespace ns3
