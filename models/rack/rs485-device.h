// An RS-485 transceiver with its UART: the net device a node uses to talk on an Rs485Channel.
#ifndef CNUAS_RS485_DEVICE_H
#define CNUAS_RS485_DEVICE_H

#include "rs485-channel.h"
#include "rs485-character.h"

#include "ns3/callback.h"
#include "ns3/error-model.h"
#include "ns3/event-id.h"
#include "ns3/mac8-address.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"

#include <deque>
#include <vector>

namespace ns3
{

/// Per-transceiver character counters.
struct Rs485DeviceCounters
{
    uint64_t txCharacters = 0;
    uint64_t rxCharacters = 0;   ///< every character heard, local echo included
    uint64_t rxEcho = 0;         ///< of which local echo of its own driver
    uint64_t rxEchoSuppressed = 0; ///< echo characters not passed to the upper layer
    uint64_t rxOk = 0;
    uint64_t rxParityErrors = 0;
    uint64_t rxFramingErrors = 0;
    // by cause (model knowledge; a character can be corrupt with status Ok when noise flips a
    // data bit and there is no parity)
    uint64_t rxCollided = 0;
    uint64_t rxFormatMismatch = 0;
    uint64_t rxNoise = 0;
    uint64_t driverEnables = 0;
};

/**
 * \brief An RS-485 transceiver (driver + receiver) with its UART, on an Rs485Channel.
 *
 * Transmit side: Send() queues bytes in the UART's transmit FIFO. If the driver is off, the
 * transceiver enables it (driver enable, DE) and sends the first start bit TxEnableDelay later;
 * characters then follow back to back, each BitsPerCharacter bit times long, timed from the
 * start of the burst so that rounding to the picosecond never accumulates. When the FIFO runs
 * dry, the driver stays enabled for TxDisableDelay after the last stop bit and is then released
 * (unless more bytes were queued meanwhile, which go out at once, without a new enable delay).
 * Those two delays are the turnaround: Linux's serial_rs485 delay_rts_before_send and
 * delay_rts_after_send, an automatic direction-control circuit's hold time.
 *
 * Receive side: every character on the bus arrives, including this transceiver's own (the local
 * echo of a two-wire bus, with no propagation delay). SuppressEcho keeps the echo from the upper
 * layer (as a transceiver with RE tied to DE does, or a UART driver that discards it); set it
 * false to see the echo as rackmon's LocalEcho mode expects. What the upper layer gets for a
 * character:
 *  - collided (another driver was enabled during it): a framing error, byte undefined;
 *  - sent with a format this receiver does not read (baud rate beyond the 2 % tolerance of
 *    Modbus over serial line v1.02 §3.2, other data bits or parity): the byte the receiver's
 *    samples assemble from the sender's bits, always flagged as an error (parity error if the
 *    receiver expects parity, else framing error). Simplification: a real UART would now and
 *    then accept such a character (8E1 into 8N1 when the parity bit happens to be 1); the model
 *    never delivers a clean byte across a format mismatch, and one sent character is one
 *    received character whatever the baud rates;
 *  - otherwise the sent bits with line noise applied (BitErrorRate: each bit flips
 *    independently; ReceiveErrorModel: a hit flips one bit), decoded: a flipped data or parity
 *    bit gives a parity error where there is parity and a wrong byte where there is none; a
 *    flipped start or stop bit gives a framing error.
 * A character is delivered when its last stop bit ends at this receiver.
 *
 * The ns3::NetDevice interface is there so that a node holds the transceiver like any other
 * device: Send(packet) sends the packet's bytes as characters. The packet receive callbacks are
 * never called (a UART has no packets); the upper layer takes characters through
 * SetCharacterReceiveCallback.
 */
class Rs485Device : public NetDevice
{
  public:
    static TypeId GetTypeId();
    Rs485Device();
    ~Rs485Device() override;

    /// Upper-layer receive: one character as this transceiver's UART received it.
    typedef Callback<void, const Rs485Character&> CharacterCallback;
    /// Trace signatures.
    typedef void (*TxCharacterCallback)(uint8_t byte, Time start, Time end);
    typedef void (*RxCharacterCallback)(const Rs485Character& c);
    typedef void (*DriverCallback)(bool enabled);

    // ---- ns3::NetDevice ------------------------------------------------------------------------
    void SetIfIndex(const uint32_t index) override;
    uint32_t GetIfIndex() const override;
    Ptr<Channel> GetChannel() const override;
    void SetAddress(Address address) override;
    Address GetAddress() const override;
    bool SetMtu(const uint16_t mtu) override;
    uint16_t GetMtu() const override;
    bool IsLinkUp() const override;
    void AddLinkChangeCallback(Callback<void> callback) override;
    bool IsBroadcast() const override;
    Address GetBroadcast() const override;
    bool IsMulticast() const override;
    Address GetMulticast(Ipv4Address multicastGroup) const override;
    Address GetMulticast(Ipv6Address addr) const override;
    bool IsBridge() const override;
    bool IsPointToPoint() const override;
    /// Sends the packet's bytes as characters (dest and protocolNumber are ignored).
    bool Send(Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber) override;
    bool SendFrom(Ptr<Packet> packet,
                  const Address& source,
                  const Address& dest,
                  uint16_t protocolNumber) override;
    Ptr<Node> GetNode() const override;
    void SetNode(Ptr<Node> node) override;
    bool NeedsArp() const override;
    void SetReceiveCallback(NetDevice::ReceiveCallback cb) override;
    void SetPromiscReceiveCallback(NetDevice::PromiscReceiveCallback cb) override;
    bool SupportsSendFrom() const override;

    // ---- the transceiver -----------------------------------------------------------------------
    void Attach(Ptr<Rs485Channel> channel);
    Ptr<Rs485Channel> GetRs485Channel() const;
    /// This transceiver's index on its channel.
    uint32_t GetChannelIndex() const { return m_index; }
    /// The UART's character format (BaudRate, DataBits, Parity, StopBits attributes).
    Rs485Format GetFormat() const;
    void SetFormat(const Rs485Format& f);
    /// Queues bytes for transmission.
    void Send(const uint8_t* bytes, std::size_t n);
    void Send(const std::vector<uint8_t>& bytes);
    /// Whether characters are waiting or on the line.
    bool IsTransmitting() const;
    /// Characters queued for transmission and not yet started.
    std::size_t GetTxQueueSize() const { return m_txFifo.size(); }
    /**
     * Discards the characters not yet started, as tcflush(TCOFLUSH) empties a UART's transmit
     * FIFO (the character on the line is finished). Returns how many were dropped. A burst
     * still in its driver-enable delay keeps its first character.
     */
    std::size_t FlushTxQueue();
    bool IsDriverEnabled() const;
    /// Whether the upper layer gets the local echo (SuppressEcho is false).
    bool DeliversEcho() const { return !m_suppressEcho; }
    Time GetTxEnableDelay() const { return m_txEnableDelay; }
    Time GetTxDisableDelay() const { return m_txDisableDelay; }
    /// Whether a character's start bit has reached this receiver and the character has not been
    /// delivered yet (a UART sees the start edge; used to measure silent intervals exactly).
    bool IsCharacterArriving() const;
    /// End of the last character this receiver took in or is taking in (zero before any).
    Time GetLastRxEnd() const;

    void SetCharacterReceiveCallback(CharacterCallback cb);
    /// Called when the transmit FIFO has emptied (at the end of the last stop bit).
    void SetTxCompleteCallback(Callback<void> cb);

    /**
     * Fault injection: hold the driver enabled (a stuck DE line, a slave that never releases the
     * bus) until called again with false.
     */
    void ForceDriverEnable(bool on);

    const Rs485DeviceCounters& GetCounters() const { return m_counters; }

    /// Assigns a fixed random stream number to the noise model; returns streams used (1).
    int64_t AssignStreams(int64_t stream);

    // ---- used by Rs485Channel ------------------------------------------------------------------
    void NotifyArrivalStart(uint64_t seq, Time startHere, Time endHere);
    void ReceiveFromChannel(const Rs485WireCharacter& c, Time startHere, Time endHere, bool own);

  protected:
    void DoDispose() override;

  private:
    void EnableDriver();
    void ReleaseDriver();
    void StartBurst();
    void TransmitNext();
    void CharacterDone();
    uint32_t ApplyNoise(uint32_t waveform, uint32_t bits, bool* flipped);

    Ptr<Node> m_node;
    Ptr<Rs485Channel> m_channel;
    uint32_t m_index = 0;
    uint32_t m_ifIndex = 0;
    Mac8Address m_address;

    // format (attributes)
    uint32_t m_baudRate = 19200;
    uint8_t m_dataBits = 8;
    int m_parity = static_cast<int>(Rs485Parity::Even); ///< an Rs485Parity (EnumValue holds int)
    uint8_t m_stopBits = 1;
    Time m_txEnableDelay;
    Time m_txDisableDelay;
    bool m_suppressEcho = true;
    double m_bitErrorRate = 0.0;
    Ptr<ErrorModel> m_errorModel;
    Ptr<UniformRandomVariable> m_rng;

    // transmitter
    std::deque<uint8_t> m_txFifo;
    bool m_txActive = false;    ///< a burst is on (a character on the line or about to start)
    bool m_driverOn = false;
    bool m_forced = false;
    Time m_burstOrigin;
    uint64_t m_burstChars = 0;
    Rs485Format m_burstFormat;
    EventId m_startEvent;
    EventId m_charEvent;
    EventId m_releaseEvent;

    // receiver
    struct Arrival
    {
        uint64_t seq;
        Time start; ///< at this receiver
        Time end;
    };
    std::deque<Arrival> m_arriving; ///< characters on their way here, not yet delivered
    Time m_lastRxEnd;

    CharacterCallback m_rxCallback;
    Callback<void> m_txComplete;
    Rs485DeviceCounters m_counters;

    TracedCallback<uint8_t, Time, Time> m_txTrace;
    TracedCallback<const Rs485Character&> m_rxTrace;
    TracedCallback<const Rs485Character&> m_rxErrorTrace;
    TracedCallback<bool> m_driverTrace;
};

} // namespace ns3

#endif
