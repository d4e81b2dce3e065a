// What a Modbus RTU master and a slave share: a transceiver, the RTU framer on its receive side,
// local-echo handling and the silent-interval rule on its transmit side.
#ifndef CNUAS_MODBUS_RTU_ENDPOINT_H
#define CNUAS_MODBUS_RTU_ENDPOINT_H

#include "modbus-rtu.h"
#include "rs485-device.h"

#include "ns3/application.h"
#include "ns3/traced-callback.h"

#include <deque>
#include <vector>

namespace ns3
{

/**
 * \brief Base of ModbusMaster and ModbusSlave: an application on a node that talks Modbus RTU
 * through one Rs485Device.
 *
 * Receive: characters go through a ModbusRtuFramer (timing from the device's character format,
 * Modbus over serial line v1.02 §2.5.1.1, or the InterCharacterTimeout/InterFrameDelay
 * attributes when set). When the device delivers the local echo (SuppressEcho false), the
 * endpoint reads its own characters back and compares them with what it sent, as rackmon's
 * LocalEcho does; a mismatch (a collision while it was talking) is counted and the echo never
 * reaches the framer.
 *
 * Transmit: EarliestFrameStart() is t3.5 after the last character heard or sent, the silent
 * interval that must separate frames (§2.5.1.1); subclasses start a frame no earlier.
 *
 * The device is the one given with SetDevice, or else the node's first Rs485Device. One
 * endpoint per device (it owns the device's receive and transmit-complete callbacks).
 */
class ModbusRtuEndpoint : public Application
{
  public:
    static TypeId GetTypeId();
    ModbusRtuEndpoint();
    ~ModbusRtuEndpoint() override;

    typedef void (*FrameCallback)(const ModbusRtuFrame& frame);
    typedef void (*BytesCallback)(const std::vector<uint8_t>& adu);

    void SetDevice(Ptr<Rs485Device> device);
    Ptr<Rs485Device> GetDevice() const;
    /// t1.5 and t3.5 in use.
    ModbusRtuTiming GetTiming() const;
    /**
     * Changes the line format (baud rate, parity...) of the device and the framer's timing with
     * it, as a master that scans devices at 19200 and 115200 does. Any frame being received is
     * dropped; takes effect for the next character.
     */
    void SetLineFormat(const Rs485Format& f);
    const ModbusRtuFramerCounters& GetFramerCounters() const;
    /// Echo characters that differed from what was sent (or came with an error).
    uint64_t GetEchoErrors() const { return m_echoErrors; }

  protected:
    void DoDispose() override;
    void StartApplication() override;
    void StopApplication() override;

    /// Queues an ADU on the device (the caller keeps to EarliestFrameStart()).
    void SendAdu(const std::vector<uint8_t>& adu);
    /// Earliest time a new frame's first start bit may go out.
    Time EarliestFrameStart() const;
    /// Whether anything is on the line as far as this endpoint can tell (a frame being
    /// received, a character arriving, its own transmission).
    bool LineBusy() const;
    /// A frame the framer delimited (good or bad).
    virtual void FrameReceived(const ModbusRtuFrame& frame) = 0;
    /// The last character of the last ADU sent has left (end of its stop bit).
    virtual void TransmitComplete();

    ModbusRtuFramer m_framer;

  private:
    void ReceiveCharacter(const Rs485Character& c);
    void OnFrame(const ModbusRtuFrame& f);
    void OnTxComplete();
    bool Arriving() const;

    Ptr<Rs485Device> m_device;
    Time m_t15Override;
    Time m_t35Override;
    std::deque<uint8_t> m_echoExpected;
    uint64_t m_echoErrors = 0;
    Time m_lastTxEnd;
    bool m_running = false;

    TracedCallback<const ModbusRtuFrame&> m_frameRxTrace;
    TracedCallback<const std::vector<uint8_t>&> m_frameTxTrace;
};

} // namespace ns3

#endif
