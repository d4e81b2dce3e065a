#include "rs485-device.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("Rs485Device");
NS_OBJECT_ENSURE_REGISTERED(Rs485Device);

TypeId
Rs485Device::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::Rs485Device")
            .SetParent<NetDevice>()
            .SetGroupName("Cnuas")
            .AddConstructor<Rs485Device>()
            .AddAttribute("BaudRate",
                          "UART signalling rate, bit/s (Modbus over serial line v1.02 §3.2: 9600 "
                          "and 19200 required, 19200 the default; ORv3 HPR devices run 115200).",
                          UintegerValue(19200),
                          MakeUintegerAccessor(&Rs485Device::m_baudRate),
                          MakeUintegerChecker<uint32_t>(50, 20000000))
            .AddAttribute("DataBits",
                          "Data bits per character (RTU uses 8).",
                          UintegerValue(8),
                          MakeUintegerAccessor(&Rs485Device::m_dataBits),
                          MakeUintegerChecker<uint8_t>(5, 8))
            .AddAttribute("Parity",
                          "Parity bit: None, Even or Odd (Modbus over serial line v1.02 §2.5.1: "
                          "even parity is the required default).",
                          EnumValue(static_cast<int>(Rs485Parity::Even)),
                          MakeEnumAccessor(&Rs485Device::m_parity),
                          MakeEnumChecker(static_cast<int>(Rs485Parity::None), "None",
                                          static_cast<int>(Rs485Parity::Even), "Even",
                                          static_cast<int>(Rs485Parity::Odd), "Odd"))
            .AddAttribute("StopBits",
                          "Stop bits per character, 1 or 2 (the spec asks for 2 with no parity; "
                          "many devices use 8N1 anyway).",
                          UintegerValue(1),
                          MakeUintegerAccessor(&Rs485Device::m_stopBits),
                          MakeUintegerChecker<uint8_t>(1, 2))
            .AddAttribute("TxEnableDelay",
                          "Time from driver enable (DE) to the first start bit of a burst (Linux "
                          "serial_rs485 delay_rts_before_send).",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&Rs485Device::m_txEnableDelay),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("TxDisableDelay",
                          "Time the driver stays enabled after the last stop bit of a burst "
                          "(Linux serial_rs485 delay_rts_after_send; an auto-direction hold).",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&Rs485Device::m_txDisableDelay),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("SuppressEcho",
                          "Whether the upper layer is spared the local echo of this "
                          "transceiver's own characters (true: RE tied to DE; false: the echo "
                          "of a two-wire bus is delivered, as rackmon's LocalEcho expects).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&Rs485Device::m_suppressEcho),
                          MakeBooleanChecker())
            .AddAttribute("BitErrorRate",
                          "Probability that line noise flips any one bit of a received "
                          "character (start, data, parity and stop bits, independently).",
                          DoubleValue(0.0),
                          MakeDoubleAccessor(&Rs485Device::m_bitErrorRate),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("ReceiveErrorModel",
                          "An ns3::ErrorModel asked once per received character (a one-byte "
                          "packet); a hit flips one bit of the character, chosen uniformly.",
                          PointerValue(),
                          MakePointerAccessor(&Rs485Device::m_errorModel),
                          MakePointerChecker<ErrorModel>())
            .AddTraceSource("TxCharacter",
                            "A character goes on the line: (byte, start, end).",
                            MakeTraceSourceAccessor(&Rs485Device::m_txTrace),
                            "ns3::Rs485Device::TxCharacterCallback")
            .AddTraceSource("RxCharacter",
                            "A character was received (every one, local echo included).",
                            MakeTraceSourceAccessor(&Rs485Device::m_rxTrace),
                            "ns3::Rs485Device::RxCharacterCallback")
            .AddTraceSource("RxError",
                            "A character was received with a parity or framing error, or "
                            "corrupted by a cause the UART could not see.",
                            MakeTraceSourceAccessor(&Rs485Device::m_rxErrorTrace),
                            "ns3::Rs485Device::RxCharacterCallback")
            .AddTraceSource("Driver",
                            "The driver enable (DE) line changed.",
                            MakeTraceSourceAccessor(&Rs485Device::m_driverTrace),
                            "ns3::Rs485Device::DriverCallback");
    return tid;
}

Rs485Device::Rs485Device()
{
    m_rng = CreateObject<UniformRandomVariable>();
}

Rs485Device::~Rs485Device() = default;

void
Rs485Device::DoDispose()
{
    m_startEvent.Cancel();
    m_charEvent.Cancel();
    m_releaseEvent.Cancel();
    m_node = nullptr;
    m_channel = nullptr;
    m_errorModel = nullptr;
    m_rng = nullptr;
    m_rxCallback = MakeNullCallback<void, const Rs485Character&>();
    m_txComplete = MakeNullCallback<void>();
    NetDevice::DoDispose();
}

// ---- ns3::NetDevice ----------------------------------------------------------------------------

void
Rs485Device::SetIfIndex(const uint32_t index)
{
    m_ifIndex = index;
}

uint32_t
Rs485Device::GetIfIndex() const
{
    return m_ifIndex;
}

Ptr<Channel>
Rs485Device::GetChannel() const
{
    return m_channel;
}

void
Rs485Device::SetAddress(Address address)
{
    m_address = Mac8Address::ConvertFrom(address);
}

Address
Rs485Device::GetAddress() const
{
    return m_address;
}

bool
Rs485Device::SetMtu(const uint16_t mtu)
{
    return mtu == GetMtu();
}

uint16_t
Rs485Device::GetMtu() const
{
    return 256; // the largest Modbus RTU frame (Modbus over serial line v1.02 §2.5.1)
}

bool
Rs485Device::IsLinkUp() const
{
    return m_channel != nullptr;
}

void
Rs485Device::AddLinkChangeCallback(Callback<void> callback)
{
}

bool
Rs485Device::IsBroadcast() const
{
    return true;
}

Address
Rs485Device::GetBroadcast() const
{
    return Mac8Address::GetBroadcast();
}

bool
Rs485Device::IsMulticast() const
{
    return false;
}

Address
Rs485Device::GetMulticast(Ipv4Address) const
{
    return Mac8Address::GetBroadcast();
}

Address
Rs485Device::GetMulticast(Ipv6Address) const
{
    return Mac8Address::GetBroadcast();
}

bool
Rs485Device::IsBridge() const
{
    return false;
}

bool
Rs485Device::IsPointToPoint() const
{
    return false;
}

bool
Rs485Device::Send(Ptr<Packet> packet, const Address&, uint16_t)
{
    std::vector<uint8_t> bytes(packet->GetSize());
    packet->CopyData(bytes.data(), bytes.size());
    Send(bytes);
    return true;
}

bool
Rs485Device::SendFrom(Ptr<Packet> packet, const Address&, const Address& dest, uint16_t proto)
{
    return Send(packet, dest, proto);
}

Ptr<Node>
Rs485Device::GetNode() const
{
    return m_node;
}

void
Rs485Device::SetNode(Ptr<Node> node)
{
    m_node = node;
}

bool
Rs485Device::NeedsArp() const
{
    return false;
}

void
Rs485Device::SetReceiveCallback(NetDevice::ReceiveCallback)
{
}

void
Rs485Device::SetPromiscReceiveCallback(NetDevice::PromiscReceiveCallback)
{
}

bool
Rs485Device::SupportsSendFrom() const
{
    return false;
}

// ---- the transceiver ---------------------------------------------------------------------------

void
Rs485Device::Attach(Ptr<Rs485Channel> channel)
{
    NS_ABORT_MSG_IF(m_channel, "Rs485Device: already attached to a bus");
    m_channel = channel;
    m_index = channel->Attach(this);
}

Ptr<Rs485Channel>
Rs485Device::GetRs485Channel() const
{
    return m_channel;
}

Rs485Format
Rs485Device::GetFormat() const
{
    Rs485Format f;
    f.baudRate = m_baudRate;
    f.dataBits = m_dataBits;
    f.parity = static_cast<Rs485Parity>(m_parity);
    f.stopBits = m_stopBits;
    return f;
}

void
Rs485Device::SetFormat(const Rs485Format& f)
{
    NS_ABORT_MSG_IF(f.dataBits < 5 || f.dataBits > 8 || f.stopBits < 1 || f.stopBits > 2 ||
                        f.baudRate == 0,
                    "Rs485Device: invalid character format " << f.ToString());
    m_baudRate = f.baudRate;
    m_dataBits = f.dataBits;
    m_parity = static_cast<int>(f.parity);
    m_stopBits = f.stopBits;
}

void
Rs485Device::SetCharacterReceiveCallback(CharacterCallback cb)
{
    m_rxCallback = cb;
}

void
Rs485Device::SetTxCompleteCallback(Callback<void> cb)
{
    m_txComplete = cb;
}

int64_t
Rs485Device::AssignStreams(int64_t stream)
{
    m_rng->SetStream(stream);
    return 1;
}

bool
Rs485Device::IsTransmitting() const
{
    return m_txActive || !m_txFifo.empty();
}

bool
Rs485Device::IsDriverEnabled() const
{
    return m_driverOn;
}

void
Rs485Device::Send(const std::vector<uint8_t>& bytes)
{
    Send(bytes.data(), bytes.size());
}

void
Rs485Device::Send(const uint8_t* bytes, std::size_t n)
{
    NS_ABORT_MSG_IF(!m_channel, "Rs485Device::Send: not attached to a bus");
    if (n == 0)
    {
        return;
    }
    m_txFifo.insert(m_txFifo.end(), bytes, bytes + n);
    if (m_txActive)
    {
        return; // appended to the burst on the line
    }
    m_txActive = true;
    if (m_driverOn)
    {
        // Still within the hold time after the previous burst (or forced on): no new enable
        // delay, the next start bit goes out now.
        m_releaseEvent.Cancel();
        StartBurst();
        return;
    }
    EnableDriver();
    m_startEvent = Simulator::Schedule(m_txEnableDelay, &Rs485Device::StartBurst, this);
}

std::size_t
Rs485Device::FlushTxQueue()
{
    // StartBurst expects a character once the enable delay has passed.
    const std::size_t keep = m_startEvent.IsRunning() && !m_txFifo.empty() ? 1 : 0;
    const std::size_t dropped = m_txFifo.size() - keep;
    m_txFifo.resize(keep);
    return dropped;
}

void
Rs485Device::EnableDriver()
{
    if (m_driverOn)
    {
        return;
    }
    m_driverOn = true;
    m_counters.driverEnables++;
    m_channel->SetDriverEnabled(m_index, true);
    m_driverTrace(true);
}

void
Rs485Device::ReleaseDriver()
{
    if (!m_driverOn || m_forced || m_txActive)
    {
        return;
    }
    m_driverOn = false;
    m_channel->SetDriverEnabled(m_index, false);
    m_driverTrace(false);
}

void
Rs485Device::ForceDriverEnable(bool on)
{
    NS_ABORT_MSG_IF(!m_channel, "Rs485Device::ForceDriverEnable: not attached to a bus");
    m_forced = on;
    if (on)
    {
        m_releaseEvent.Cancel();
        EnableDriver();
    }
    else if (!m_txActive)
    {
        ReleaseDriver();
    }
}

void
Rs485Device::StartBurst()
{
    // The format is read once per burst: a burst's characters share one bit clock.
    m_burstFormat = GetFormat();
    m_burstOrigin = Simulator::Now();
    m_burstChars = 0;
    TransmitNext();
}

void
Rs485Device::TransmitNext()
{
    NS_ASSERT(!m_txFifo.empty());
    const uint8_t byte = m_txFifo.front();
    m_txFifo.pop_front();
    const Time start = m_burstOrigin + m_burstFormat.CharactersTime(m_burstChars);
    const Time end = m_burstOrigin + m_burstFormat.CharactersTime(m_burstChars + 1);
    m_burstChars++;
    m_counters.txCharacters++;
    m_channel->TransmitStart(m_index, byte, m_burstFormat, start, end);
    m_txTrace(byte, start, end);
    m_charEvent = Simulator::Schedule(end - Simulator::Now(), &Rs485Device::CharacterDone, this);
}

void
Rs485Device::CharacterDone()
{
    if (!m_txFifo.empty())
    {
        TransmitNext(); // back to back: this start bit begins where the last stop bit ended
        return;
    }
    m_txActive = false;
    if (m_txDisableDelay.IsZero())
    {
        ReleaseDriver();
    }
    else
    {
        m_releaseEvent =
            Simulator::Schedule(m_txDisableDelay, &Rs485Device::ReleaseDriver, this);
    }
    if (!m_txComplete.IsNull())
    {
        m_txComplete();
    }
}

bool
Rs485Device::IsCharacterArriving() const
{
    const Time now = Simulator::Now();
    for (const auto& a : m_arriving)
    {
        if (a.start < now)
        {
            return true;
        }
    }
    return false;
}

Time
Rs485Device::GetLastRxEnd() const
{
    Time last = m_lastRxEnd;
    const Time now = Simulator::Now();
    for (const auto& a : m_arriving)
    {
        if (a.start < now && a.end > last)
        {
            last = a.end; // started here already: the line is not silent until it ends
        }
    }
    return last;
}

void
Rs485Device::NotifyArrivalStart(uint64_t seq, Time startHere, Time endHere)
{
    m_arriving.push_back({seq, startHere, endHere});
}

uint32_t
Rs485Device::ApplyNoise(uint32_t waveform, uint32_t bits, bool* flipped)
{
    *flipped = false;
    if (m_bitErrorRate > 0.0)
    {
        for (uint32_t i = 0; i < bits; ++i)
        {
            if (m_rng->GetValue() < m_bitErrorRate)
            {
                waveform ^= 1u << i;
                *flipped = true;
            }
        }
    }
    if (m_errorModel)
    {
        uint8_t one = 0;
        Ptr<Packet> p = Create<Packet>(&one, 1);
        if (m_errorModel->IsCorrupt(p))
        {
            const uint32_t i = m_rng->GetInteger(0, bits - 1);
            waveform ^= 1u << i;
            *flipped = true;
        }
    }
    return waveform;
}

void
Rs485Device::ReceiveFromChannel(const Rs485WireCharacter& w,
                                Time startHere,
                                Time endHere,
                                bool own)
{
    if (!m_arriving.empty() && m_arriving.front().seq == w.seq)
    {
        m_arriving.pop_front(); // the usual case: characters arrive in the order they started
    }
    else
    {
        for (auto it = m_arriving.begin(); it != m_arriving.end(); ++it)
        {
            if (it->seq == w.seq)
            {
                m_arriving.erase(it);
                break;
            }
        }
    }
    m_lastRxEnd = std::max(m_lastRxEnd, endHere);

    Rs485Character c;
    c.start = startHere;
    c.end = endHere;
    c.ownTransmission = own;
    const Rs485Format rx = GetFormat();
    if (w.collided)
    {
        // Two drivers on the pair: the levels are undefined, the UART sees a broken character.
        c.byte = w.lineByte;
        c.status = Rs485RxStatus::FramingError;
        c.cause = Rs485RxCause::Collision;
        m_counters.rxCollided++;
    }
    else if (!Rs485FormatsCompatible(w.format, rx))
    {
        const Rs485Decoded d =
            Rs485DecodeWaveform(Rs485EncodeWaveform(w.format, w.lineByte), w.format, rx);
        c.byte = d.byte;
        c.status = d.status;
        if (c.status == Rs485RxStatus::Ok)
        {
            // Simplification (see the class comment): a mismatched format never reads clean.
            c.status = rx.parity != Rs485Parity::None ? Rs485RxStatus::ParityError
                                                      : Rs485RxStatus::FramingError;
        }
        c.cause = Rs485RxCause::FormatMismatch;
        m_counters.rxFormatMismatch++;
    }
    else if (own || (m_bitErrorRate <= 0.0 && !m_errorModel))
    {
        c.byte = w.lineByte; // a clean line and a matching format: the byte as sent
        c.status = Rs485RxStatus::Ok;
    }
    else
    {
        bool flipped = false;
        const uint32_t wave = ApplyNoise(Rs485EncodeWaveform(w.format, w.lineByte),
                                         w.format.BitsPerCharacter(),
                                         &flipped);
        const Rs485Decoded d = Rs485DecodeWaveform(wave, w.format, rx);
        c.byte = d.byte;
        c.status = d.status;
        if (flipped)
        {
            c.cause = Rs485RxCause::Noise;
            m_counters.rxNoise++;
        }
    }

    m_counters.rxCharacters++;
    switch (c.status)
    {
    case Rs485RxStatus::Ok:
        m_counters.rxOk++;
        break;
    case Rs485RxStatus::ParityError:
        m_counters.rxParityErrors++;
        break;
    case Rs485RxStatus::FramingError:
        m_counters.rxFramingErrors++;
        break;
    }
    m_rxTrace(c);
    if (c.status != Rs485RxStatus::Ok || c.cause != Rs485RxCause::Clean)
    {
        m_rxErrorTrace(c);
    }
    if (own)
    {
        m_counters.rxEcho++;
        if (m_suppressEcho)
        {
            m_counters.rxEchoSuppressed++;
            return;
        }
    }
    if (!m_rxCallback.IsNull())
    {
        m_rxCallback(c);
    }
}

} // namespace ns3
