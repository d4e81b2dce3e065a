#include "eth-net-device.h"

#include "eth-channel.h"
#include "eth-switch.h"

#include "models/common/event-tail.h"
#include "models/common/sim-clock.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/mac48-address.h"
#include "ns3/node.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EthNetDevice");
NS_OBJECT_ENSURE_REGISTERED(EthNetDevice);

const char*
EthDropReasonName(EthDropReason r)
{
    static const char* names[] = {"Runt",       "BadFcs",      "UnknownEthertype",
                                  "BadControl", "BadIpv4",     "BadUdp",
                                  "LinkDown",   "TxQueueFull", "RxBufferFull",
                                  "NotForUs",   "NoRoute",     "TtlExpired",
                                  "BufferFull", "HeadroomOverflow",
                                  "Oversize",   "BadIpv6",     "BadArp"};
    const int i = static_cast<int>(r);
    return i < static_cast<int>(EthDropReason::Count) ? names[i] : "?";
}

namespace
{
uint64_t g_nextUid = 1;

EthDropReason
DropFor(EthParseError e)
{
    switch (e)
    {
    case EthParseError::Runt:
        return EthDropReason::Runt;
    case EthParseError::BadFcs:
        return EthDropReason::BadFcs;
    case EthParseError::UnknownEthertype:
        return EthDropReason::UnknownEthertype;
    case EthParseError::BadControl:
        return EthDropReason::BadControl;
    case EthParseError::BadUdp:
        return EthDropReason::BadUdp;
    case EthParseError::BadIpv6:
        return EthDropReason::BadIpv6;
    case EthParseError::BadArp:
        return EthDropReason::BadArp;
    default:
        return EthDropReason::BadIpv4;
    }
}
} // namespace

TypeId
EthNetDevice::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EthNetDevice")
            .SetParent<NetDevice>()
            .SetGroupName("Cnuas")
            .AddConstructor<EthNetDevice>()
            .AddAttribute("DataRate",
                          "Line rate, bit/s (10, 25, 40, 50, 100, 200, 400, 800 Gb/s or any "
                          "other).",
                          DataRateValue(DataRate("100Gbps")),
                          MakeDataRateAccessor(&EthNetDevice::SetDataRate,
                                               &EthNetDevice::GetDataRate),
                          MakeDataRateChecker())
            .AddAttribute("Mtu",
                          "IP MTU, bytes (frame = MTU + 14 header + 4 802.1Q tag + 4 FCS at "
                          "most); 68..9216.",
                          UintegerValue(1500),
                          MakeUintegerAccessor(&EthNetDevice::SetMtuAttribute,
                                               &EthNetDevice::GetMtu),
                          MakeUintegerChecker<uint16_t>(68, 9216))
            .AddAttribute("TxQueueFrames",
                          "A host port's transmit queue per traffic class, frames.",
                          UintegerValue(64),
                          MakeUintegerAccessor(&EthNetDevice::m_txQueueFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("StrictPriorityMask",
                          "Traffic classes served by strict priority (bit i = class i; higher "
                          "class first); the others share by DWRR.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&EthNetDevice::m_strictMask),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("DwrrQuantumBytes",
                          "DWRR quantum per unit of weight, bytes (at least the largest frame).",
                          UintegerValue(9216),
                          MakeUintegerAccessor(&EthNetDevice::m_dwrrQuantum),
                          MakeUintegerChecker<uint32_t>(64))
            .AddAttribute("DwrrWeights",
                          "DWRR weights of classes 0..7, eight integers >= 1 separated by "
                          "commas (dimensionless; a class gets weight x DwrrQuantumBytes a round).",
                          StringValue("1,1,1,1,1,1,1,1"),
                          MakeStringAccessor(&EthNetDevice::SetDwrrWeights,
                                             &EthNetDevice::GetDwrrWeights),
                          MakeStringChecker())
            .AddAttribute("PfcEnableMask",
                          "Priorities with PFC on this port (bit i = priority i): it honours "
                          "PFC for them and may send it.",
                          UintegerValue(0x08),
                          MakeUintegerAccessor(&EthNetDevice::m_pfcMask),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("PauseQuanta",
                          "Pause time this port requests in an XOFF, pause quanta (512 bit "
                          "times).",
                          UintegerValue(0xFFFF),
                          MakeUintegerAccessor(&EthNetDevice::m_pauseQuanta),
                          MakeUintegerChecker<uint16_t>(1))
            .AddAttribute("PauseRefreshFraction",
                          "An asserted pause is re-sent after this fraction of its time has "
                          "passed (0..1].",
                          DoubleValue(0.5),
                          MakeDoubleAccessor(&EthNetDevice::m_refreshFraction),
                          MakeDoubleChecker<double>(0.01, 1.0))
            .AddAttribute("VlanTag",
                          "A host port tags the frames it sends with 802.1Q (PCP = priority).",
                          BooleanValue(false),
                          MakeBooleanAccessor(&EthNetDevice::m_vlanTag),
                          MakeBooleanChecker())
            .AddAttribute("VlanId",
                          "VID of the tag (0: priority-tagged frames), 0..4094.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&EthNetDevice::m_vlanId),
                          MakeUintegerChecker<uint16_t>(0, 4094))
            .AddAttribute("RxBufferBytes",
                          "A host port's receive buffer, bytes (used when RxDrainRate > 0).",
                          UintegerValue(512 * 1024),
                          MakeUintegerAccessor(&EthNetDevice::m_rxBufferBytes),
                          MakeUintegerChecker<uint64_t>(64))
            .AddAttribute("RxDrainRate",
                          "Rate at which a host consumes received frames, bit/s; 0 = as fast "
                          "as they arrive (no receive buffer).",
                          DataRateValue(DataRate(0)),
                          MakeDataRateAccessor(&EthNetDevice::m_rxDrainRate),
                          MakeDataRateChecker())
            .AddAttribute("NicXoffBytes",
                          "A host sends PFC XOFF for a priority when that much of it is in "
                          "its receive buffer, bytes.",
                          UintegerValue(256 * 1024),
                          MakeUintegerAccessor(&EthNetDevice::m_nicXoff),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("NicXonBytes",
                          "A host sends PFC XON for a priority when its receive buffer holds "
                          "no more than this of it, bytes (below NicXoffBytes).",
                          UintegerValue(128 * 1024),
                          MakeUintegerAccessor(&EthNetDevice::m_nicXon),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("ReceiveErrorModel",
                          "Decides which arriving frames were damaged on the wire; a hit fails "
                          "the FCS check and is dropped and counted as BadFcs (null: none).",
                          PointerValue(),
                          MakePointerAccessor(&EthNetDevice::m_receiveErrorModel),
                          MakePointerChecker<ErrorModel>())
            .AddAttribute("PfcResponseTime",
                          "Interface plus response delay of a port between receiving PFC and "
                          "stopping (802.1Qbb Annex O); 0 = the 802.3 bound for the rate.",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&EthNetDevice::m_responseTime),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("PfcResponseDelay",
                          "Time from receiving a PFC frame to acting on it (802.1Qbb Annex O's "
                          "response time, modelled rather than only budgeted): a frame started "
                          "within it still goes out. 0 = at once, the next frame boundary.",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&EthNetDevice::m_pfcResponseDelay),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("Tx",
                            "A frame starts transmission.",
                            MakeTraceSourceAccessor(&EthNetDevice::m_txTrace),
                            "ns3::EthNetDevice::FrameCallback")
            .AddTraceSource("Rx",
                            "A good frame was received.",
                            MakeTraceSourceAccessor(&EthNetDevice::m_rxTrace),
                            "ns3::EthNetDevice::FrameCallback")
            .AddTraceSource("Drop",
                            "A frame was discarded (frame or null, EthDropReason).",
                            MakeTraceSourceAccessor(&EthNetDevice::m_dropTrace),
                            "ns3::EthNetDevice::DropCallback")
            .AddTraceSource("QueueDepth",
                            "Bytes queued for transmission on a class changed.",
                            MakeTraceSourceAccessor(&EthNetDevice::m_queueTrace),
                            "ns3::EthNetDevice::QueueCallback")
            .AddTraceSource("PauseSent",
                            "This port sent PFC for a priority (quanta; 0 = XON).",
                            MakeTraceSourceAccessor(&EthNetDevice::m_pauseTxTrace),
                            "ns3::EthNetDevice::PauseCallback")
            .AddTraceSource("PauseReceived",
                            "This port received PFC for a priority (quanta; 0 = XON).",
                            MakeTraceSourceAccessor(&EthNetDevice::m_pauseRxTrace),
                            "ns3::EthNetDevice::PauseCallback")
            .AddTraceSource("PausedDuration",
                            "A pause of this port's transmitter ended (by XON or seen "
                            "expired): priority and its length.",
                            MakeTraceSourceAccessor(&EthNetDevice::m_pausedTrace),
                            "ns3::EthNetDevice::PausedCallback");
    return tid;
}

EthNetDevice::EthNetDevice()
    : m_rate("100Gbps"),
      m_rxDrainRate(0)
{
    SetDataRate(m_rate);
}

EthNetDevice::~EthNetDevice() = default;

void
EthNetDevice::Release(EthFrame* frame)
{
    EthFramePool::Release(frame);
}

void
EthNetDevice::DoDispose()
{
    m_wake.Cancel();
    m_refresh.Cancel();
    m_drain.Cancel();
    for (auto& q : m_txq)
    {
        for (EthFrame* f : q.frames)
        {
            Release(f);
        }
        q.frames.clear();
    }
    for (EthFrame* f : m_ctrl)
    {
        Release(f);
    }
    m_ctrl.clear();
    for (EthFrame* f : m_rxFifo)
    {
        Release(f);
    }
    m_rxFifo.clear();
    m_channel = nullptr;
    m_linkUp = false;
    m_receiveErrorModel = nullptr;
    m_node = nullptr;
    m_switch = nullptr;
    m_peerRaw = nullptr;
    m_ethRx = EthReceiveCallback();
    m_txReady = Callback<void, Ptr<EthNetDevice>, uint8_t>();
    m_sniffers.clear();
    m_linkChange.clear();
    NetDevice::DoDispose();
}

// ---- identity and configuration ----------------------------------------------------------

void
EthNetDevice::SetMtuAttribute(uint16_t mtu)
{
    NS_ABORT_MSG_IF(mtu < 68 || mtu > 9216, "EthNetDevice: MTU " << mtu << " not in 68..9216");
    m_mtu = mtu;
}

void
EthNetDevice::Attach(Ptr<EthChannel> channel)
{
    m_channel = channel;
    channel->Attach(this);
}

Ptr<EthChannel>
EthNetDevice::GetEthChannel() const
{
    return m_channel;
}

Ptr<EthNetDevice>
EthNetDevice::GetPeer() const
{
    return m_channel ? m_channel->GetPeer(this) : nullptr;
}

void
EthNetDevice::SetMac(uint64_t mac48)
{
    m_mac = mac48 & 0xFFFFFFFFFFFFULL;
}

uint64_t
EthNetDevice::GetMac() const
{
    return m_mac;
}

void
EthNetDevice::SetIpv4(uint32_t address)
{
    m_ip = address;
}

uint32_t
EthNetDevice::GetIpv4() const
{
    return m_ip;
}

DataRate
EthNetDevice::GetDataRate() const
{
    return m_rate;
}

void
EthNetDevice::SetDataRate(DataRate rate)
{
    m_rate = rate;
    m_bps = rate.GetBitRate();
    m_ifgPs = InterFrameGapPs(m_bps);
}

Time
EthNetDevice::WireTime(uint32_t bytes) const
{
    // Picosecond resolution keeps the rounding error below 0.5 ps a frame (a 64-byte frame
    // lasts 6.72 ns at 100 Gb/s). Rate 0 is refused by Validate; WireTimePs never divides by it.
    return PicoSeconds(WireTimePs(bytes, m_bps));
}

double
EthNetDevice::QuantumPs() const
{
    return kPauseQuantumBits * 1e12 / static_cast<double>(m_rate.GetBitRate());
}

uint32_t
EthNetDevice::MaxFrameBytes() const
{
    return m_mtu + kEthHeaderBytes + kEthVlanTagBytes + kEthFcsBytes;
}

void
EthNetDevice::SetSwitch(EthSwitch* sw, uint16_t portNumber)
{
    m_switch = sw;
    m_portNumber = portNumber;
}

void
EthNetDevice::SetDwrrWeights(std::string text)
{
    std::array<uint32_t, kEthPriorities> w{};
    std::istringstream in(text);
    std::string item;
    size_t n = 0;
    bool ok = true;
    while (std::getline(in, item, ','))
    {
        char* end = nullptr;
        const unsigned long v = std::strtoul(item.c_str(), &end, 10);
        if (n >= kEthPriorities || item.empty() || *end != '\0' || v < 1 || v > 1000000)
        {
            ok = false;
            break;
        }
        w[n++] = static_cast<uint32_t>(v);
    }
    if (!ok || n != kEthPriorities)
    {
        // Refused in Validate() with the text, so a fabric does not build with it.
        m_dwrrWeightsError = text;
        return;
    }
    m_dwrrWeightsError.clear();
    for (uint8_t c = 0; c < kEthPriorities; ++c)
    {
        m_txq[c].weight = w[c];
    }
}

std::string
EthNetDevice::GetDwrrWeights() const
{
    std::ostringstream out;
    for (uint8_t c = 0; c < kEthPriorities; ++c)
    {
        out << (c ? "," : "") << m_txq[c].weight;
    }
    return out.str();
}

void
EthNetDevice::SetDwrrWeight(uint8_t tc, uint32_t weight)
{
    NS_ABORT_MSG_IF(tc >= kEthPriorities || weight == 0,
                    "EthNetDevice::SetDwrrWeight: class 0..7 and weight >= 1");
    m_txq[tc].weight = weight;
}

namespace
{
/// Interface + response delay bound a port takes to act on PFC, as time. The bit-time values
/// are 802.3's (PFC delay constraints used by 802.1Qbb Annex O, as quoted in vendors' headroom
/// guides): 10G 8192 + 30720, 25G 6144 + 40960, 40G 24576 + 60416, 100G 122880 + 201728.
/// Above 100 Gb/s the 100G time is kept (the published 400G response bound, 463360 bit times =
/// 1.16 us, is shorter, so this errs on the safe side).
double
DefaultResponsePs(uint64_t bps)
{
    struct Row
    {
        double gbps;
        double bits;
    };
    static const Row rows[] = {{10, 8192 + 30720},
                               {25, 6144 + 40960},
                               {40, 24576 + 60416},
                               {100, 122880 + 201728}};
    const double g = bps / 1e9;
    const Row* pick = &rows[0];
    for (const Row& r : rows)
    {
        if (g >= r.gbps)
        {
            pick = &r;
        }
    }
    return pick->bits / (pick->gbps * 1e9) * 1e12;
}
} // namespace

uint64_t
EthNetDevice::HeadroomNeeded() const
{
    Ptr<EthNetDevice> peer = GetPeer();
    const double bps = static_cast<double>(m_rate.GetBitRate());
    const double cablePs = m_channel ? m_channel->GetDelay().GetPicoSeconds() : 0.0;
    double responsePs = m_responseTime.IsZero()
                            ? DefaultResponsePs(m_rate.GetBitRate())
                            : static_cast<double>(m_responseTime.GetPicoSeconds());
    if (peer)
    {
        // A peer that takes longer to act than the budget keeps sending for that long.
        responsePs =
            std::max(responsePs, static_cast<double>(peer->m_pfcResponseDelay.GetPicoSeconds()));
    }
    const uint32_t peerMax = peer ? peer->MaxFrameBytes() : MaxFrameBytes();
    double bits = 8.0 * (MaxFrameBytes() + kEthWireOverheadBytes);      // frame ahead of PFC
    bits += 8.0 * (kEthMinFrameBytes + kEthWireOverheadBytes);           // the PFC frame
    bits += (2 * cablePs + responsePs) * bps / 1e12;                     // there and back
    bits += 8.0 * (peerMax + kEthWireOverheadBytes);                     // peer's last frame
    return static_cast<uint64_t>(std::ceil(bits / 8.0));
}

std::string
EthNetDevice::Validate() const
{
    std::ostringstream err;
    if (m_rate.GetBitRate() == 0)
    {
        err << "DataRate is 0";
    }
    else if (!m_dwrrWeightsError.empty())
    {
        err << "DwrrWeights '" << m_dwrrWeightsError
            << "' is not eight integer weights >= 1 separated by commas";
    }
    else if (m_dwrrQuantum < MaxFrameBytes())
    {
        err << "DwrrQuantumBytes " << m_dwrrQuantum << " is below the largest frame ("
            << MaxFrameBytes() << " bytes)";
    }
    else if (!m_switch && m_rxDrainRate.GetBitRate() > 0 && m_pfcMask != 0)
    {
        if (m_nicXon >= m_nicXoff)
        {
            err << "NicXonBytes " << m_nicXon << " is not below NicXoffBytes " << m_nicXoff;
        }
        else if (m_nicXoff > m_rxBufferBytes)
        {
            err << "NicXoffBytes " << m_nicXoff << " exceeds RxBufferBytes " << m_rxBufferBytes;
        }
        else if (m_rxBufferBytes - m_nicXoff < HeadroomNeeded())
        {
            err << "receive buffer above XOFF (" << m_rxBufferBytes - m_nicXoff
                << " bytes) is less than the PFC round trip needs (" << HeadroomNeeded()
                << " bytes, 802.1Qbb Annex O)";
        }
    }
    return err.str();
}

// ---- ns3::NetDevice boilerplate ----------------------------------------------------------

void
EthNetDevice::SetIfIndex(const uint32_t index)
{
    m_ifIndex = index;
}

uint32_t
EthNetDevice::GetIfIndex() const
{
    return m_ifIndex;
}

Ptr<Channel>
EthNetDevice::GetChannel() const
{
    return m_channel;
}

void
EthNetDevice::SetAddress(Address address)
{
    uint8_t b[6];
    Mac48Address::ConvertFrom(address).CopyTo(b);
    uint64_t m = 0;
    for (uint8_t x : b)
    {
        m = m << 8 | x;
    }
    m_mac = m;
}

Address
EthNetDevice::GetAddress() const
{
    uint8_t b[6];
    for (int i = 0; i < 6; ++i)
    {
        b[i] = static_cast<uint8_t>(m_mac >> (8 * (5 - i)));
    }
    Mac48Address a;
    a.CopyFrom(b);
    return a;
}

bool
EthNetDevice::SetMtu(const uint16_t mtu)
{
    if (mtu < 68 || mtu > 9216)
    {
        return false;
    }
    m_mtu = mtu;
    return true;
}

uint16_t
EthNetDevice::GetMtu() const
{
    return m_mtu;
}

bool
EthNetDevice::IsLinkUp() const
{
    return m_linkUp;
}

void
EthNetDevice::SyncCable(bool up, uint32_t generation, int64_t delayPs)
{
    m_linkUp = up;
    m_cableGeneration = generation;
    m_cableDelayPs = delayPs;
}

EthPortCounters
EthNetDevice::GetCounters() const
{
    EthPortCounters c = m_counters;
    for (uint8_t p = 0; p < kEthPriorities; ++p)
    {
        c.txFrames[p] = m_txCount[p].frames;
        c.txBytes[p] = m_txCount[p].bytes;
        c.rxFrames[p] = m_rxCount[p].frames;
        c.rxBytes[p] = m_rxCount[p].bytes;
    }
    return c;
}

void
EthNetDevice::AddLinkChangeCallback(Callback<void> callback)
{
    m_linkChange.push_back(callback);
}

bool
EthNetDevice::IsBroadcast() const
{
    return false;
}

Address
EthNetDevice::GetBroadcast() const
{
    return Mac48Address::GetBroadcast();
}

bool
EthNetDevice::IsMulticast() const
{
    return false;
}

Address
EthNetDevice::GetMulticast(Ipv4Address) const
{
    return Mac48Address::GetMulticast(Ipv4Address("224.0.0.0"));
}

Address
EthNetDevice::GetMulticast(Ipv6Address addr) const
{
    return Mac48Address::GetMulticast(addr);
}

bool
EthNetDevice::IsPointToPoint() const
{
    return true;
}

bool
EthNetDevice::IsBridge() const
{
    return false;
}

bool
EthNetDevice::Send(Ptr<Packet>, const Address&, uint16_t)
{
    return false;
}

bool
EthNetDevice::SendFrom(Ptr<Packet>, const Address&, const Address&, uint16_t)
{
    return false;
}

Ptr<Node>
EthNetDevice::GetNode() const
{
    return m_node;
}

void
EthNetDevice::SetNode(Ptr<Node> node)
{
    m_node = node;
}

bool
EthNetDevice::NeedsArp() const
{
    return false;
}

void
EthNetDevice::SetReceiveCallback(NetDevice::ReceiveCallback cb)
{
    m_netRx = cb;
}

void
EthNetDevice::SetPromiscReceiveCallback(NetDevice::PromiscReceiveCallback cb)
{
    m_promiscRx = cb;
}

bool
EthNetDevice::SupportsSendFrom() const
{
    return false;
}

// ---- observation ---------------------------------------------------------------------------

uint64_t
EthNetDevice::GetTotalDrops() const
{
    uint64_t n = 0;
    for (uint64_t d : m_drops)
    {
        n += d;
    }
    return n;
}

void
EthNetDevice::CountDrop(const EthFrame* frame, EthDropReason reason)
{
    m_drops[static_cast<int>(reason)]++;
    m_dropTrace(frame, static_cast<uint8_t>(reason));
}

bool
EthNetDevice::IsPaused(uint8_t priority) const
{
    return m_txq[priority].pausedUntilPs > SimClock::NowPs();
}

Time
EthNetDevice::GetPausedTime(uint8_t priority) const
{
    const TxQueue& q = m_txq[priority];
    int64_t total = q.pausedTotalPs;
    if (q.pauseStartPs >= 0)
    {
        total += std::min(q.pausedUntilPs, SimClock::NowPs()) - q.pauseStartPs;
    }
    return PicoSeconds(total);
}

uint32_t
EthNetDevice::AddSniffer(SnifferCallback cb)
{
    return m_sniffers.Add(cb);
}

void
EthNetDevice::RemoveSniffer(uint32_t handle)
{
    m_sniffers.Remove(handle);
}

void
EthNetDevice::Sniff(const EthFrame& frame, bool transmit)
{
    frame.Materialize(m_scratch, false);
    for (auto& cb : m_sniffers)
    {
        cb(SimClock::Now(), m_scratch.data(), static_cast<uint32_t>(m_scratch.size()), transmit);
    }
}

// ---- transmit --------------------------------------------------------------------------------

uint32_t
EthNetDevice::UdpWireBytes(uint32_t payloadBytes, bool ipv6, uint32_t intBytes) const
{
    return EthUdpFrameBytes(payloadBytes, ipv6, m_vlanTag, intBytes) + kEthWireOverheadBytes;
}

bool
EthNetDevice::CanSend(uint8_t priority) const
{
    return priority < kEthPriorities && LinkUp() &&
           m_txq[priority].frames.size() < m_txQueueFrames;
}

bool
EthNetDevice::SendUdp(const EthUdpFlow& flow, uint32_t payloadBytes, Ptr<const Packet> payload)
{
    NS_ABORT_MSG_IF(payload && payload->GetSize() > payloadBytes,
                    "EthNetDevice::SendUdp: payload larger than payloadBytes");
    return SendUdpFrame(flow, payloadBytes, payload, nullptr, 0);
}

bool
EthNetDevice::SendUdp(const EthUdpFlow& flow,
                      uint32_t payloadBytes,
                      const uint8_t* leading,
                      uint32_t stored)
{
    NS_ABORT_MSG_IF(stored > payloadBytes || (stored > 0 && !leading),
                    "EthNetDevice::SendUdp: stored bytes beyond payloadBytes");
    return SendUdpFrame(flow, payloadBytes, nullptr, leading, stored);
}

bool
EthNetDevice::SendUdpFrame(const EthUdpFlow& flow,
                           uint32_t payloadBytes,
                           Ptr<const Packet> payload,
                           const uint8_t* leading,
                           uint32_t stored)
{
    NS_ABORT_MSG_IF(flow.priority >= kEthPriorities, "EthNetDevice::SendUdp: priority > 7");
    const uint32_t ipHeader = flow.ipv6 ? kIpv6HeaderBytes : kIpv4HeaderBytes;
    if (payloadBytes + ipHeader + kUdpHeaderBytes > m_mtu)
    {
        NS_LOG_WARN("datagram of " << payloadBytes << " bytes exceeds the MTU " << m_mtu);
        CountDrop(nullptr, EthDropReason::Oversize);
        return false;
    }
    if (!LinkUp())
    {
        CountDrop(nullptr, EthDropReason::LinkDown);
        return false;
    }
    TxQueue& q = m_txq[flow.priority];
    if (q.frames.size() >= m_txQueueFrames)
    {
        CountDrop(nullptr, EthDropReason::TxQueueFull);
        return false;
    }
    EthFrame* f = EthFramePool::Allocate();
    f->kind = EthFrameKind::Udp;
    f->srcMac = m_mac;
    Ptr<EthNetDevice> peer = GetPeer();
    if (flow.ipv6 ? EthIsIpv6Multicast(flow.dstIp6) : EthIsIpv4Multicast(flow.dstIp))
    {
        // A datagram to a group goes to the group's MAC (RFC 1112 §6.4, RFC 2464 §7).
        f->dstMac = flow.ipv6 ? EthMulticastMac6(flow.dstIp6) : EthMulticastMac(flow.dstIp);
    }
    else
    {
        f->dstMac = peer ? peer->GetMac() : 0;
    }
    f->vlanTagged = m_vlanTag;
    f->pcp = flow.priority;
    f->vid = m_vlanId;
    f->ipv6 = flow.ipv6;
    if (flow.ipv6)
    {
        f->srcIp6 = m_ip6;
        f->dstIp6 = flow.dstIp6;
        f->flowLabel = flow.flowLabel & 0xFFFFF;
    }
    else
    {
        f->srcIp = m_ip;
        f->dstIp = flow.dstIp;
    }
    f->srcPort = flow.srcPort;
    f->dstPort = flow.dstPort;
    f->dscp = flow.dscp & 0x3F;
    f->ecn = flow.ecn & 3;
    f->ipId = m_ipId++;
    f->payloadBytes = payloadBytes;
    if (leading)
    {
        f->StorePayload(leading, stored);
    }
    else
    {
        f->payload = payload;
    }
    f->icrcPending = flow.icrcPending && f->StoredPayloadBytes() > 0;
    f->priority = flow.priority;
    f->uid = g_nextUid++;
    f->sentPs = SimClock::NowPs();
    if (flow.intMaxHops > 0 || flow.intEcho)
    {
        EthIntRecord* rec = EthIntPool::Allocate();
        uint32_t slots = flow.intMaxHops;
        if (flow.intEcho)
        {
            rec->stack.CopyHopsFrom(*flow.intEcho); // carried untouched: no intPush
            slots = std::max<uint32_t>(flow.intEchoSlots, flow.intEcho->nHops);
        }
        else
        {
            f->intPush = true;
        }
        slots = std::min(slots, kIntStackCapacity);
        rec->maxHops = static_cast<uint8_t>(slots);
        f->intRec = rec;
        f->intBytes = static_cast<uint16_t>(IntStackWireBytes(slots));
    }
    f->ComputeSize();
    EnqueueHostFrame(f);
    return true;
}

void
EthNetDevice::EnqueueHostFrame(EthFrame* f)
{
    TxQueue& q = m_txq[f->priority];
    q.frames.push_back(f);
    m_nonEmpty |= static_cast<uint8_t>(1u << f->priority);
    q.bytes += f->bytes;
    m_queuedBytes += f->bytes;
    q.maxBytes = std::max(q.maxBytes, q.bytes);
    m_queueTrace(f->priority, q.bytes);
    Kick();
}

bool
EthNetDevice::SendFromHost(const uint8_t* bytes, uint32_t length)
{
    EthFrame* f = EthFramePool::Allocate();
    const EthParseError e = EthFrame::ParseFromHost(bytes, length, *f);
    if (e != EthParseError::None)
    {
        NS_LOG_DEBUG("host frame refused: " << EthParseErrorName(e));
        CountDrop(nullptr, DropFor(e));
        Release(f);
        return false;
    }
    if (f->kind == EthFrameKind::Pfc)
    {
        // A host's own PFC goes on the control queue like the port's (never paused itself).
        f->uid = g_nextUid++;
        f->sentPs = SimClock::NowPs();
        m_ctrl.push_back(f);
        Kick();
        return true;
    }
    // The packet as the network layer sees it against the MTU (RFC 894: the MTU is the
    // Ethernet payload, tag excluded).
    if (f->payloadBytes > m_mtu)
    {
        CountDrop(nullptr, EthDropReason::Oversize);
        Release(f);
        return false;
    }
    if (!LinkUp())
    {
        CountDrop(nullptr, EthDropReason::LinkDown);
        Release(f);
        return false;
    }
    f->priority = f->vlanTagged ? f->pcp : static_cast<uint8_t>(f->dscp >> 3);
    if (m_txq[f->priority].frames.size() >= m_txQueueFrames)
    {
        CountDrop(nullptr, EthDropReason::TxQueueFull);
        Release(f);
        return false;
    }
    f->uid = g_nextUid++;
    f->sentPs = SimClock::NowPs();
    EnqueueHostFrame(f);
    return true;
}

uint32_t
EthNetDevice::GetTxQueueRoom(uint8_t tc) const
{
    const size_t queued = m_txq[tc % kEthPriorities].frames.size();
    return queued >= m_txQueueFrames ? 0 : static_cast<uint32_t>(m_txQueueFrames - queued);
}

void
EthNetDevice::SetEthReceiveCallback(EthReceiveCallback cb)
{
    m_ethRx = cb;
}

void
EthNetDevice::SetTxReadyCallback(Callback<void, Ptr<EthNetDevice>, uint8_t> cb)
{
    m_txReady = cb;
}

void
EthNetDevice::EnqueueEgress(EthFrame* frame)
{
    TxQueue& q = m_txq[frame->priority];
    q.frames.push_back(frame);
    m_nonEmpty |= static_cast<uint8_t>(1u << frame->priority);
    q.bytes += frame->bytes;
    m_queuedBytes += frame->bytes;
    if (q.bytes > q.maxBytes)
    {
        q.maxBytes = q.bytes;
    }
    m_queueTrace(frame->priority, q.bytes);
    Kick();
}

bool
EthNetDevice::Eligible(uint8_t tc, int64_t nowPs) const
{
    return ((m_nonEmpty >> tc) & 1) && m_txq[tc].pausedUntilPs <= nowPs;
}

EthFrame*
EthNetDevice::Dequeue(int64_t nowPs, int64_t* retryPs)
{
    *retryPs = -1;
    if (!m_ctrl.empty())
    {
        EthFrame* f = m_ctrl.front();
        m_ctrl.pop_front();
        return f;
    }
    int tc = -1;
    // Strict classes first, highest class first (802.1Q §8.6.8.1, strict priority algorithm).
    for (int c = kEthPriorities - 1; c >= 0 && m_strictMask; --c)
    {
        if ((m_strictMask >> c) & 1 && Eligible(c, nowPs))
        {
            tc = c;
            break;
        }
    }
    if (tc < 0 && (m_nonEmpty & ~m_strictMask))
    {
        // Deficit weighted round robin over the other classes (802.1Q §8.6.8.3 allows any
        // weighted algorithm; DWRR is what RoCE switches implement as "ETS"). A quantum of at
        // least one maximum frame guarantees a pick within two rounds.
        // The classes that can be picked now; the loop steps over the others in one go
        // (each skipped class still counts as a visit, so the result and the round-robin
        // state are those of visiting them one by one).
        uint8_t eligible = 0;
        for (uint8_t rest = m_nonEmpty & ~m_strictMask; rest != 0; rest &= rest - 1)
        {
            const int c = __builtin_ctz(rest);
            if (m_txq[c].pausedUntilPs <= nowPs)
            {
                eligible |= static_cast<uint8_t>(1u << c);
            }
        }
        constexpr int kVisits = 2 * kEthPriorities + 1;
        for (int visits = 0; visits < kVisits;)
        {
            const uint8_t c = m_rrNext;
            if ((eligible >> c) & 1)
            {
                TxQueue& q = m_txq[c];
                if (!m_rrCredited)
                {
                    q.deficit += static_cast<uint64_t>(m_dwrrQuantum) * q.weight;
                    m_rrCredited = true;
                }
                if (q.deficit >= q.frames.front()->bytes)
                {
                    q.deficit -= q.frames.front()->bytes;
                    tc = c;
                    break;
                }
                m_rrNext = static_cast<uint8_t>((c + 1) % kEthPriorities);
                m_rrCredited = false;
                ++visits;
                continue;
            }
            // Steps to the next eligible class after c (cyclically), or all remaining visits.
            int steps = kVisits - visits;
            if (eligible != 0)
            {
                const int from = (c + 1) % kEthPriorities;
                const uint32_t twice = eligible | (uint32_t(eligible) << kEthPriorities);
                steps = std::min(steps, 1 + __builtin_ctz(twice >> from));
            }
            m_rrNext = static_cast<uint8_t>((c + steps) % kEthPriorities);
            m_rrCredited = false;
            visits += steps;
        }
    }
    if (tc < 0)
    {
        for (uint8_t c = 0; c < kEthPriorities; ++c)
        {
            const TxQueue& q = m_txq[c];
            if (((m_nonEmpty >> c) & 1) && q.pausedUntilPs > nowPs &&
                (*retryPs < 0 || q.pausedUntilPs < *retryPs))
            {
                *retryPs = q.pausedUntilPs;
            }
        }
        return nullptr;
    }
    TxQueue& q = m_txq[tc];
    EthFrame* f = q.frames.front();
    q.frames.pop_front();
    q.bytes -= f->bytes;
    m_queuedBytes -= f->bytes;
    if (q.frames.empty())
    {
        m_nonEmpty &= static_cast<uint8_t>(~(1u << tc));
        q.deficit = 0; // an idle class keeps no credit (DWRR)
    }
    else
    {
        // The next frame of this class leaves no sooner than this one's wire time: start
        // fetching its record, queued long ago (a hint; nothing changes).
        __builtin_prefetch(q.frames.front());
    }
    if (q.pauseStartPs >= 0 && q.pausedUntilPs <= nowPs)
    {
        EndPauseInterval(static_cast<uint8_t>(tc), q.pausedUntilPs);
    }
    m_queueTrace(static_cast<uint8_t>(tc), q.bytes);
    return f;
}

void
EthNetDevice::Kick()
{
    const int64_t now = SimClock::NowPs();
    if (now < m_busyUntilPs)
    {
        ScheduleWake(m_busyUntilPs);
        return;
    }
    if (m_wakeAtPs == now)
    {
        return; // a wake-up at this instant will do it
    }
    WakeUp(now);
}

void
EthNetDevice::ScheduleWake(int64_t atPs)
{
    if (m_wakeAtPs >= 0)
    {
        if (m_wakeAtPs <= atPs)
        {
            return; // the earlier wake-up re-plans
        }
        m_wake.Cancel();
    }
    m_wakeAtPs = atPs;
    m_wake.Schedule(atPs - SimClock::NowPs());
}

void
EthNetDevice::WakeUpEvent()
{
    // A host port's source refills it at the end of this event (TxReady, EventTail). Kick calls
    // WakeUp itself, without the scope: its caller's event is not over.
    EventTail::Scope scope;
    WakeUp(SimClock::NowPs());
}

void
EthNetDevice::WakeUp(int64_t now)
{
    if (m_wakeAtPs == now)
    {
        m_wakeAtPs = -1;
        m_wakes++;
    }
    if (now < m_busyUntilPs || !LinkUp())
    {
        return;
    }
    int64_t retry;
    EthFrame* f = Dequeue(now, &retry);
    if (!f)
    {
        if (retry >= 0)
        {
            ScheduleWake(retry);
        }
        return;
    }
    Transmit(f, now);
    if (!m_ctrl.empty())
    {
        ScheduleWake(m_busyUntilPs);
        return;
    }
    for (uint8_t c = 0; m_nonEmpty >> c; ++c)
    {
        if ((m_nonEmpty >> c) & 1)
        {
            ScheduleWake(std::max(m_busyUntilPs, m_txq[c].pausedUntilPs));
        }
    }
}

void
EthNetDevice::Transmit(EthFrame* f, int64_t nowPs)
{
    if (!m_peerRaw)
    {
        m_peerRaw = PeekPointer(GetPeer());
    }
    EthNetDevice* peer = m_peerRaw;
    const int64_t wirePs = WireTime(f->bytes).GetPicoSeconds();
    m_busyUntilPs = nowPs + wirePs;
    if (f->kind != EthFrameKind::Pfc)
    {
        const uint8_t p = f->priority;
        m_txCount[p].frames++;
        m_txCount[p].bytes += f->bytes;
        m_txWireBytes += f->bytes + kEthWireOverheadBytes;
        if (m_switch)
        {
            m_switch->NotifyDequeue(this, f);
            // An L3 switch rewrites the MAC addresses on the way out; a copy of a multicast
            // datagram keeps its group's MAC (RFC 1112 §6.4, RFC 2464 §7; EthSwitch wrote it).
            // A unicast frame's destination is the switch's own MAC, never a group address, so
            // it costs the one test of a line written here anyway. (A frame from a real host's
            // stack may carry a group MAC to a unicast IP, as ARP's broadcast does: rewritten.)
            f->srcMac = m_mac;
            if (!(f->dstMac & kEthMacGroupBit) || !f->IsMulticast())
            {
                f->dstMac = peer->GetMac();
            }
        }
        else if (!m_txReady.IsNull())
        {
            m_txReady(this, p); // a host queue has room again: let its source refill it
        }
    }
    if (!m_txTrace.IsEmpty())
    {
        m_txTrace(*f);
    }
    if (!m_sniffers.empty())
    {
        Sniff(*f, true);
    }
    f->linkGeneration = m_cableGeneration;
    // Store and forward: the receiver acts when the frame's last bit is in, which is the
    // serialization time (less the inter-frame gap, which follows the frame) plus the cable.
    const int64_t flightPs = wirePs - m_ifgPs + m_cableDelayPs;
    // The arrival is the frame's own event (EthFrameArrival): one reference for the simulator
    // to drop when it has run it. Nothing ever cancels an arrival (a cable that goes down voids
    // its frames by generation), so no EventId is made for it: ScheduleWithContext inserts the
    // event as Schedule does, with the same timestamp, insertion number and context.
    f->receiver = peer;
    f->Ref();
    SimClock::ScheduleWithContext(SimClock::Context(), flightPs, static_cast<EventImpl*>(f));
}

void
EthFrameArrival::Notify()
{
    receiver->ReceiveFrameEvent(static_cast<EthFrame*>(this));
}

// ---- PFC generator ---------------------------------------------------------------------------

void
EthNetDevice::SendPfc(uint16_t mask, uint16_t quanta)
{
    if (!LinkUp())
    {
        return;
    }
    EthFrame* f = EthFramePool::Allocate();
    f->kind = EthFrameKind::Pfc;
    f->dstMac = kEthMacControlDst;
    f->srcMac = m_mac;
    f->pfc.opcode = kMacControlOpcodePfc;
    f->pfc.classEnable = mask;
    for (uint8_t p = 0; p < kEthPriorities; ++p)
    {
        if ((mask >> p) & 1)
        {
            f->pfc.quanta[p] = quanta;
            (quanta ? m_counters.pauseSent : m_counters.resumeSent)[p]++;
            m_pauseTxTrace(p, quanta);
        }
    }
    f->uid = g_nextUid++;
    f->ComputeSize();
    m_counters.pfcFramesSent++;
    m_ctrl.push_back(f);
    Kick();
}

void
EthNetDevice::AssertPause(uint8_t priority)
{
    if (IsPauseAsserted(priority) || !IsPfcEnabled(priority))
    {
        return;
    }
    m_pauseAsserted |= static_cast<uint8_t>(1u << priority);
    SendPfc(static_cast<uint16_t>(1u << priority), m_pauseQuanta);
    if (!m_refresh.IsRunning())
    {
        const double refreshPs = m_pauseQuanta * QuantumPs() * m_refreshFraction;
        m_refresh = Simulator::Schedule(PicoSeconds(std::max<int64_t>(1, std::llround(refreshPs))),
                                        &EthNetDevice::RefreshPause,
                                        this);
    }
}

void
EthNetDevice::ReleasePause(uint8_t priority)
{
    if (!IsPauseAsserted(priority))
    {
        return;
    }
    m_pauseAsserted &= static_cast<uint8_t>(~(1u << priority));
    SendPfc(static_cast<uint16_t>(1u << priority), 0);
    if (m_pauseAsserted == 0)
    {
        m_refresh.Cancel();
    }
}

void
EthNetDevice::RefreshPause()
{
    if (m_pauseAsserted == 0)
    {
        return;
    }
    // Re-sent before the peer's timer runs out, so an asserted pause never lapses (802.1Qbb
    // §36.1.3 leaves the refresh policy to the sender; switches refresh at about half).
    SendPfc(m_pauseAsserted, m_pauseQuanta);
    const double refreshPs = m_pauseQuanta * QuantumPs() * m_refreshFraction;
    m_refresh = Simulator::Schedule(PicoSeconds(std::max<int64_t>(1, std::llround(refreshPs))),
                                    &EthNetDevice::RefreshPause,
                                    this);
}

// ---- PFC receiver ---------------------------------------------------------------------------

void
EthNetDevice::EndPauseInterval(uint8_t prio, int64_t endPs)
{
    TxQueue& q = m_txq[prio];
    if (q.pauseStartPs < 0)
    {
        return;
    }
    const int64_t len = endPs - q.pauseStartPs;
    q.pausedTotalPs += len;
    q.pauseStartPs = -1;
    m_pausedTrace(prio, PicoSeconds(len));
}

void
EthNetDevice::HandlePfc(const EthFrame& frame)
{
    m_counters.pfcFramesReceived++;
    if (m_pfcResponseDelay.IsStrictlyPositive())
    {
        // 802.1Qbb Annex O: the receiver needs its response time to act on the frame; frames
        // it starts meanwhile still go out.
        const EthPfcHeader pfc = frame.pfc;
        const uint32_t epoch = m_linkEpoch;
        Simulator::Schedule(m_pfcResponseDelay, [this, pfc, epoch]() {
            if (epoch == m_linkEpoch) // a link that went down since forgot the frame
            {
                ApplyPfc(pfc);
            }
        });
        return;
    }
    ApplyPfc(frame.pfc);
}

void
EthNetDevice::ApplyPfc(const EthPfcHeader& pfc)
{
    const int64_t now = SimClock::NowPs();
    for (uint8_t p = 0; p < kEthPriorities; ++p)
    {
        if (!((pfc.classEnable >> p) & 1))
        {
            continue;
        }
        if (!IsPfcEnabled(p))
        {
            m_counters.pfcIgnored++;
            continue;
        }
        const uint16_t quanta = pfc.quanta[p];
        m_pauseRxTrace(p, quanta);
        TxQueue& q = m_txq[p];
        if (q.pauseStartPs >= 0 && q.pausedUntilPs <= now)
        {
            EndPauseInterval(p, q.pausedUntilPs); // the previous pause had run out
        }
        if (quanta == 0)
        {
            m_counters.resumeReceived[p]++;
            if (q.pauseStartPs >= 0)
            {
                q.pausedUntilPs = now;
                EndPauseInterval(p, now);
            }
            continue;
        }
        // 802.1Qbb §36.2: the timer restarts at the received value; quanta are 512 bit times
        // at this port's speed.
        m_counters.pauseReceived[p]++;
        if (q.pauseStartPs < 0)
        {
            q.pauseStartPs = now;
        }
        q.pausedUntilPs = now + std::llround(quanta * QuantumPs());
    }
    // Resumed, or a re-pause shortened the wait: the transmitter must re-plan its wake-up.
    Kick();
}

// ---- receive -----------------------------------------------------------------------------------

void
EthNetDevice::NotifyLinkChange(bool up)
{
    if (!up)
    {
        m_linkEpoch++;
        DropQueued(EthDropReason::LinkDown);
        m_wake.Cancel();
        m_wakeAtPs = -1;
        m_refresh.Cancel();
        m_pauseAsserted = 0;
        const int64_t now = SimClock::NowPs();
        for (uint8_t p = 0; p < kEthPriorities; ++p)
        {
            TxQueue& q = m_txq[p];
            if (q.pauseStartPs >= 0)
            {
                EndPauseInterval(p, std::min(q.pausedUntilPs, now));
            }
            q.pausedUntilPs = 0;
        }
        m_busyUntilPs = now;
    }
    for (auto& cb : m_linkChange)
    {
        cb();
    }
    if (up && !m_txReady.IsNull() && !m_switch)
    {
        for (uint8_t p = 0; p < kEthPriorities; ++p)
        {
            m_txReady(this, p);
        }
    }
}

void
EthNetDevice::DropQueued(EthDropReason reason)
{
    for (uint8_t p = 0; p < kEthPriorities; ++p)
    {
        TxQueue& q = m_txq[p];
        for (EthFrame* f : q.frames)
        {
            CountDrop(f, reason);
            if (m_switch)
            {
                m_switch->NotifyDiscardQueued(this, f);
            }
            Release(f);
        }
        q.frames.clear();
        m_queuedBytes -= q.bytes;
        q.bytes = 0;
        q.deficit = 0;
        m_nonEmpty = 0;
        m_queueTrace(p, 0);
    }
    for (EthFrame* f : m_ctrl)
    {
        Release(f);
    }
    m_ctrl.clear();
}

void
EthNetDevice::InjectReceivedBytes(const uint8_t* bytes, uint32_t length)
{
    EthFrame* f = EthFramePool::Allocate();
    const EthParseError e = EthFrame::Parse(bytes, length, *f);
    if (e != EthParseError::None)
    {
        NS_LOG_DEBUG("injected frame refused: " << EthParseErrorName(e));
        CountDrop(nullptr, DropFor(e));
        Release(f);
        return;
    }
    f->uid = g_nextUid++;
    f->sentPs = SimClock::NowPs();
    f->linkGeneration = m_cableGeneration;
    ReceiveFrame(f);
}

void
EthNetDevice::ReceiveFrameEvent(EthFrame* f)
{
    // What the frame sets off at a host (an ACK, the next packet) may follow at the end of this
    // event (EventTail). Only the event opens the scope: InjectFrame, which calls ReceiveFrame
    // from within other code, must not run deferred work before its caller is done.
    EventTail::Scope scope;
    ReceiveFrame(f);
}

void
EthNetDevice::ReceiveFrame(EthFrame* f)
{
    // A switch writes a hop into the frame's INT record when it leaves (EthSwitch::PushIntHop),
    // in this event unless it queues: start fetching the record, a separate allocation. An
    // ACK's echo passes switches untouched (no intPush); at a host the transport reads the
    // whole stack (the receiver copies it into its ACK, the sender's HPCC differences it), so
    // there every line a fat-tree path's hops fill is fetched.
    if (f->intPush && m_switch)
    {
        __builtin_prefetch(f->intRec, 1);
    }
    else if (f->intRec && !m_switch)
    {
        const char* rec = reinterpret_cast<const char*>(f->intRec);
        for (uint32_t line = 0; line < EthIntRecord::LinesFor(kIntDefaultMaxHops); ++line)
        {
            __builtin_prefetch(rec + 64 * line);
        }
    }
    if (!m_linkUp || f->linkGeneration != m_cableGeneration)
    {
        CountDrop(f, EthDropReason::LinkDown);
        Release(f);
        return;
    }
    // A frame damaged on the wire fails the FCS (802.3 §3.2.9 detects every error of up to
    // three bits in a frame) and is discarded by the MAC, before any capture point sees it.
    if (m_receiveErrorModel && m_receiveErrorModel->IsCorrupt(Create<Packet>(f->bytes)))
    {
        CountDrop(f, EthDropReason::BadFcs);
        Release(f);
        return;
    }
    if (!m_sniffers.empty())
    {
        Sniff(*f, false);
    }
    if (f->kind == EthFrameKind::Pfc)
    {
        HandlePfc(*f);
        Release(f);
        return;
    }
    // A switch classifies by its own table; a host by the tag's PCP, or for an untagged frame
    // by the DSCP's class-selector bits (RFC 2474 §4.2.2.2).
    f->priority = m_switch ? m_switch->Classify(*f)
                           : (f->vlanTagged ? f->pcp : static_cast<uint8_t>(f->dscp >> 3));
    const uint8_t p = f->priority;
    m_rxCount[p].frames++;
    m_rxCount[p].bytes += f->bytes;
    if (!m_rxTrace.IsEmpty())
    {
        m_rxTrace(*f);
    }
    if (m_switch)
    {
        m_switch->Receive(this, f);
        return;
    }
    // A datagram to a multicast group is taken like one to this port's own address: the
    // consumer (RoceRdmaPort: the QPs attached to the group) decides whether it wants it.
    if ((f->ipv6 ? f->dstIp6 != m_ip6 : f->dstIp != m_ip) && !f->IsMulticast())
    {
        CountDrop(f, EthDropReason::NotForUs);
        Release(f);
        return;
    }
    if (m_rxDrainRate.GetBitRate() == 0)
    {
        DeliverLocal(f);
        return;
    }
    if (m_rxUsed + f->bytes > m_rxBufferBytes)
    {
        CountDrop(f, EthDropReason::RxBufferFull);
        Release(f);
        return;
    }
    m_rxUsed += f->bytes;
    m_rxUsedPrio[p] += f->bytes;
    m_rxMaxUsed = std::max(m_rxMaxUsed, m_rxUsed);
    m_rxFifo.push_back(f);
    // A NIC whose receive side backs up pauses its peer like a switch ingress does (802.1Qbb
    // §36.1.1: any end station may be the PFC requester).
    if (m_rxUsedPrio[p] >= m_nicXoff)
    {
        AssertPause(p);
    }
    if (!m_drain.IsRunning())
    {
        DrainRxHead();
    }
}

void
EthNetDevice::DrainRxHead()
{
    const EthFrame* f = m_rxFifo.front();
    const double ps = 8.0 * f->bytes * 1e12 / static_cast<double>(m_rxDrainRate.GetBitRate());
    m_drain = Simulator::Schedule(PicoSeconds(std::llround(ps)), &EthNetDevice::DrainDone, this);
}

void
EthNetDevice::DrainDone()
{
    EthFrame* f = m_rxFifo.front();
    m_rxFifo.pop_front();
    const uint8_t p = f->priority;
    m_rxUsed -= f->bytes;
    m_rxUsedPrio[p] -= f->bytes;
    if (IsPauseAsserted(p) && m_rxUsedPrio[p] <= m_nicXon)
    {
        ReleasePause(p);
    }
    DeliverLocal(f);
    if (!m_rxFifo.empty())
    {
        DrainRxHead();
    }
}

void
EthNetDevice::DeliverLocal(EthFrame* f)
{
    if (!m_ethRx.IsNull())
    {
        m_ethRx(this, *f);
    }
    Release(f);
}

} // namespace ns3
