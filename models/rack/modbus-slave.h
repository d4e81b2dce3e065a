// A Modbus RTU slave (server) on an RS-485 bus, serving a ModbusRegisterBank.
#ifndef CNUAS_MODBUS_SLAVE_H
#define CNUAS_MODBUS_SLAVE_H

#include "modbus-pdu.h"
#include "modbus-register-bank.h"
#include "modbus-rtu-endpoint.h"

#include "ns3/event-id.h"
#include "ns3/random-variable-stream.h"

namespace ns3
{

/**
 * Serial-line diagnostic counters (Modbus over serial line v1.02 §6.1, Appendix A; served by
 * FC 08 sub-functions 0x0B-0x12, cleared by 0x0A). Kept as 64-bit values; FC 08 reports the
 * low 16 bits.
 */
struct ModbusSlaveDiagnostics
{
    uint64_t busMessageCount = 0;            ///< CPT1: frames with a good CRC, any address
    uint64_t busCommunicationErrorCount = 0; ///< CPT2: CRC, character, length, incomplete errors
    uint64_t busExceptionErrorCount = 0;     ///< CPT3: exceptions (sent, or not for a broadcast)
    uint64_t serverMessageCount = 0;         ///< CPT4: frames for this address or broadcast
    uint64_t serverNoResponseCount = 0;      ///< CPT5: of those, answered with nothing
    uint64_t serverNakCount = 0;             ///< CPT6
    uint64_t serverBusyCount = 0;            ///< CPT7: exception 06 responses
    uint64_t busCharacterOverrunCount = 0;   ///< CPT8: frames longer than 256 characters
};

/**
 * \brief A Modbus RTU slave: answers requests to its address, serving a ModbusRegisterBank.
 *
 * Behaviour (Modbus over serial line v1.02 §2.4.2 and the counter diagram of §6.1.2):
 *  - a frame with an error (CRC, parity/framing, incomplete, too short, overrun) gets no
 *    response; it is counted;
 *  - a frame for another address is ignored (Address may be any of 1-255: ORv3 HPR devices use
 *    248-255, which the spec reserves);
 *  - a broadcast (address 0) write is carried out and never answered; a broadcast of a
 *    function that does not write is refused (counted as an exception, not answered);
 *  - a request is checked (function, length, quantities, addresses) and answered with an
 *    exception response (function | 0x80, code 01/02/03/04/06) or a normal response;
 *  - while a response is pending the slave takes no new request (counted as no response).
 *
 * Timing: the response's first start bit goes out ResponseDelay (+ ResponseJitter) after the
 * request's last stop bit as this slave heard it, but never before the slave can know the
 * request has ended (t3.5 of silence, §2.5.1.1) plus its transceiver's TxEnableDelay.
 */
class ModbusSlave : public ModbusRtuEndpoint
{
  public:
    static TypeId GetTypeId();
    ModbusSlave();
    ~ModbusSlave() override;

    /// Trace signatures.
    typedef void (*RequestCallback)(uint8_t unit, const std::vector<uint8_t>& pdu);
    typedef void (*ResponseCallback)(const std::vector<uint8_t>& pdu);

    uint8_t GetAddress() const { return m_address; }
    void SetAddress(uint8_t a);
    void SetRegisterBank(Ptr<ModbusRegisterBank> bank);
    Ptr<ModbusRegisterBank> GetRegisterBank() const;
    const ModbusSlaveDiagnostics& GetDiagnostics() const { return m_diag; }
    /// Responses (normal and exception) sent.
    uint64_t GetResponsesSent() const { return m_responses; }
    /// Requests refused because a response was still pending.
    uint64_t GetBusyDiscards() const { return m_busyDiscards; }
    /**
     * A slave taken off line (a dead device: no power, or firmware hung) hears nothing and
     * answers nothing until put back on line; a response it had pending is dropped. Frames it
     * misses are not counted.
     */
    void SetOffline(bool offline);
    bool IsOffline() const { return m_offline; }
    /// Assigns a fixed random stream to ResponseJitter; returns streams used.
    int64_t AssignStreams(int64_t stream);

    /**
     * Serves one request PDU for `unit` as this slave would, without the bus: returns the
     * response PDU (empty for no response) and updates the counters. Exposed for tests and for
     * a pty bridge that frames by length.
     */
    std::vector<uint8_t> ProcessRequest(uint8_t unit, const std::vector<uint8_t>& pdu);

  protected:
    void DoDispose() override;
    void StopApplication() override;
    void FrameReceived(const ModbusRtuFrame& frame) override;
    void TransmitComplete() override;

  private:
    ModbusResponse Execute(const ModbusRequest& req);
    ModbusResponse ReadDeviceIdentification(const ModbusRequest& req);
    ModbusResponse Diagnostics(const ModbusRequest& req);
    void SendResponse(std::vector<uint8_t> adu);

    uint8_t m_address = 1;
    Time m_responseDelay;
    Ptr<RandomVariableStream> m_jitter;
    Ptr<ModbusRegisterBank> m_bank;
    ModbusSlaveDiagnostics m_diag;
    uint64_t m_responses = 0;
    uint64_t m_busyDiscards = 0;
    bool m_responsePending = false;
    bool m_offline = false;
    EventId m_responseEvent;

    TracedCallback<uint8_t, const std::vector<uint8_t>&> m_requestTrace;
    TracedCallback<const std::vector<uint8_t>&> m_responseTrace;
};

} // namespace ns3

#endif
