#include "modbus-slave.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ModbusSlave");
NS_OBJECT_ENSURE_REGISTERED(ModbusSlave);

TypeId
ModbusSlave::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::ModbusSlave")
            .SetParent<ModbusRtuEndpoint>()
            .SetGroupName("Cnuas")
            .AddConstructor<ModbusSlave>()
            .AddAttribute("Address",
                          "Slave address, 1-255 (1-247 per Modbus over serial line v1.02 §2.2; "
                          "ORv3 HPR devices also use the reserved 248-255).",
                          UintegerValue(1),
                          MakeUintegerAccessor(&ModbusSlave::m_address),
                          MakeUintegerChecker<uint8_t>(1, 255))
            .AddAttribute("ResponseDelay",
                          "Time from the request's last stop bit to the response's first start "
                          "bit (the device's turnaround). At least t3.5 + TxEnableDelay is "
                          "always kept, since the slave only knows the request ended after t3.5.",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&ModbusSlave::m_responseDelay),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("ResponseJitter",
                          "Optional random extra delay per response, seconds (e.g. an "
                          "ns3::UniformRandomVariable); none by default.",
                          PointerValue(),
                          MakePointerAccessor(&ModbusSlave::m_jitter),
                          MakePointerChecker<RandomVariableStream>())
            .AddAttribute("RegisterBank",
                          "What the slave serves (an ns3::ModbusRegisterBank).",
                          PointerValue(),
                          MakePointerAccessor(&ModbusSlave::m_bank),
                          MakePointerChecker<ModbusRegisterBank>())
            .AddTraceSource("Request",
                            "A request for this slave (or broadcast) passed the frame checks: "
                            "(unit, PDU).",
                            MakeTraceSourceAccessor(&ModbusSlave::m_requestTrace),
                            "ns3::ModbusSlave::RequestCallback")
            .AddTraceSource("Response",
                            "A response PDU was queued for transmission.",
                            MakeTraceSourceAccessor(&ModbusSlave::m_responseTrace),
                            "ns3::ModbusSlave::ResponseCallback");
    return tid;
}

ModbusSlave::ModbusSlave() = default;

ModbusSlave::~ModbusSlave() = default;

void
ModbusSlave::DoDispose()
{
    m_responseEvent.Cancel();
    m_bank = nullptr;
    m_jitter = nullptr;
    ModbusRtuEndpoint::DoDispose();
}

void
ModbusSlave::StopApplication()
{
    m_responseEvent.Cancel();
    m_responsePending = false;
    ModbusRtuEndpoint::StopApplication();
}

void
ModbusSlave::SetAddress(uint8_t a)
{
    NS_ABORT_MSG_IF(a == kModbusBroadcastAddress, "ModbusSlave: address 0 is the broadcast");
    m_address = a;
}

void
ModbusSlave::SetRegisterBank(Ptr<ModbusRegisterBank> bank)
{
    m_bank = bank;
}

Ptr<ModbusRegisterBank>
ModbusSlave::GetRegisterBank() const
{
    return m_bank;
}

int64_t
ModbusSlave::AssignStreams(int64_t stream)
{
    if (m_jitter)
    {
        m_jitter->SetStream(stream);
        return 1;
    }
    return 0;
}

void
ModbusSlave::SetOffline(bool offline)
{
    m_offline = offline;
    if (offline && m_responseEvent.IsRunning())
    {
        m_responseEvent.Cancel();
        m_responsePending = false;
    }
}

void
ModbusSlave::FrameReceived(const ModbusRtuFrame& f)
{
    if (m_offline)
    {
        return;
    }
    // Counters per Modbus over serial line v1.02 §6.1.2.
    switch (f.status)
    {
    case ModbusFrameStatus::Overrun:
        m_diag.busCharacterOverrunCount++; // CPT8
        return;
    case ModbusFrameStatus::Incomplete:
    case ModbusFrameStatus::CharacterError:
    case ModbusFrameStatus::TooShort:
    case ModbusFrameStatus::BadCrc:
        m_diag.busCommunicationErrorCount++; // CPT2; §2.4.2: no response to a frame in error
        return;
    case ModbusFrameStatus::Ok:
        break;
    }
    m_diag.busMessageCount++; // CPT1
    const uint8_t unit = f.Address();
    if (unit != m_address && unit != kModbusBroadcastAddress)
    {
        return; // §2.5.1.1: not for this device, discarded
    }
    if (m_responsePending)
    {
        // Still busy with the previous request (its response not yet out).
        m_diag.serverMessageCount++;
        m_diag.serverNoResponseCount++;
        m_busyDiscards++;
        return;
    }
    const std::vector<uint8_t> pdu = f.Pdu();
    m_requestTrace(unit, pdu);
    std::vector<uint8_t> response = ProcessRequest(unit, pdu);
    if (response.empty())
    {
        return;
    }
    // The response's first start bit: ResponseDelay after the request's last stop bit, and
    // not before the transceiver, enabled now at the earliest, can send it.
    Time delay = m_responseDelay;
    if (m_jitter)
    {
        delay += Seconds(std::max(0.0, m_jitter->GetValue()));
    }
    Ptr<Rs485Device> dev = GetDevice();
    const Time firstBit = std::max(f.end + delay, Simulator::Now() + dev->GetTxEnableDelay());
    const Time enableAt = firstBit - dev->GetTxEnableDelay();
    m_responsePending = true;
    m_responseEvent = Simulator::Schedule(enableAt - Simulator::Now(),
                                          &ModbusSlave::SendResponse,
                                          this,
                                          ModbusRtuBuildAdu(m_address, response));
}

void
ModbusSlave::SendResponse(std::vector<uint8_t> adu)
{
    m_responses++;
    m_responseTrace(std::vector<uint8_t>(adu.begin() + 1, adu.end() - 2));
    SendAdu(adu);
}

void
ModbusSlave::TransmitComplete()
{
    m_responsePending = false;
}

std::vector<uint8_t>
ModbusSlave::ProcessRequest(uint8_t unit, const std::vector<uint8_t>& pdu)
{
    const bool broadcast = unit == kModbusBroadcastAddress;
    m_diag.serverMessageCount++; // CPT4
    ModbusRequest req;
    ModbusResponse rsp;
    const ModbusExceptionCode check = ModbusRequest::Decode(pdu.data(), pdu.size(), req);
    if (check != ModbusExceptionCode::None)
    {
        rsp = ModbusResponse::Exception(pdu.empty() ? 0 : pdu[0], check);
    }
    else if (broadcast && !req.IsWrite())
    {
        // §6.1.2: "function code prohibited in broadcasts" counts as an exception (CPT3), and a
        // broadcast is never answered (§2.1).
        m_diag.busExceptionErrorCount++;
        m_diag.serverNoResponseCount++;
        return {};
    }
    else
    {
        rsp = Execute(req);
    }
    if (rsp.IsException())
    {
        m_diag.busExceptionErrorCount++; // CPT3
        if (rsp.exception == ModbusExceptionCode::ServerDeviceBusy)
        {
            m_diag.serverBusyCount++; // CPT7
        }
    }
    if (broadcast)
    {
        m_diag.serverNoResponseCount++; // CPT5: a broadcast is never answered (§2.1)
        return {};
    }
    return rsp.Encode();
}

ModbusResponse
ModbusSlave::Execute(const ModbusRequest& req)
{
    const auto fn = static_cast<ModbusFunction>(req.function);
    if (fn == ModbusFunction::Diagnostics)
    {
        return Diagnostics(req);
    }
    if (!m_bank)
    {
        return ModbusResponse::Exception(req.function, ModbusExceptionCode::ServerDeviceFailure);
    }
    if (fn == ModbusFunction::EncapsulatedInterface)
    {
        return ReadDeviceIdentification(req);
    }
    ModbusResponse rsp;
    rsp.function = req.function;
    ModbusExceptionCode e = ModbusExceptionCode::None;
    switch (fn)
    {
    case ModbusFunction::ReadCoils:
        e = m_bank->ReadCoils(req.address, req.quantity, rsp.bits);
        break;
    case ModbusFunction::ReadDiscreteInputs:
        e = m_bank->ReadDiscreteInputs(req.address, req.quantity, rsp.bits);
        break;
    case ModbusFunction::ReadHoldingRegisters:
        e = m_bank->ReadHoldingRegisters(req.address, req.quantity, rsp.registers);
        break;
    case ModbusFunction::ReadInputRegisters:
        e = m_bank->ReadInputRegisters(req.address, req.quantity, rsp.registers);
        break;
    case ModbusFunction::WriteSingleCoil:
        e = m_bank->WriteCoils(req.address, req.bits);
        rsp.address = req.address;
        rsp.value = req.bits[0] ? 0xFF00 : 0x0000;
        break;
    case ModbusFunction::WriteSingleRegister:
        e = m_bank->WriteHoldingRegisters(req.address, req.registers);
        rsp.address = req.address;
        rsp.value = req.registers[0];
        break;
    case ModbusFunction::WriteMultipleCoils:
        e = m_bank->WriteCoils(req.address, req.bits);
        rsp.address = req.address;
        rsp.quantity = req.quantity;
        break;
    case ModbusFunction::WriteMultipleRegisters:
        e = m_bank->WriteHoldingRegisters(req.address, req.registers);
        rsp.address = req.address;
        rsp.quantity = req.quantity;
        break;
    case ModbusFunction::ReadWriteMultipleRegisters:
        // §6.17: the write is performed before the read.
        e = m_bank->WriteHoldingRegisters(req.writeAddress, req.registers);
        if (e == ModbusExceptionCode::None)
        {
            e = m_bank->ReadHoldingRegisters(req.address, req.quantity, rsp.registers);
        }
        break;
    default:
        e = ModbusExceptionCode::IllegalFunction;
        break;
    }
    if (e != ModbusExceptionCode::None)
    {
        return ModbusResponse::Exception(req.function, e);
    }
    // A bank must return exactly what was asked; anything else is a device failure.
    const bool bitsFn = fn == ModbusFunction::ReadCoils || fn == ModbusFunction::ReadDiscreteInputs;
    const bool regsFn = fn == ModbusFunction::ReadHoldingRegisters ||
                        fn == ModbusFunction::ReadInputRegisters ||
                        fn == ModbusFunction::ReadWriteMultipleRegisters;
    if ((bitsFn && rsp.bits.size() != req.quantity) ||
        (regsFn && rsp.registers.size() != req.quantity))
    {
        return ModbusResponse::Exception(req.function, ModbusExceptionCode::ServerDeviceFailure);
    }
    return rsp;
}

ModbusResponse
ModbusSlave::ReadDeviceIdentification(const ModbusRequest& req)
{
    // MODBUS Application Protocol V1.1b3 §6.21.
    const std::map<uint8_t, std::string> objects = m_bank->GetDeviceIdentification();
    if (objects.empty())
    {
        return ModbusResponse::Exception(req.function, ModbusExceptionCode::IllegalFunction);
    }
    ModbusResponse rsp;
    rsp.function = req.function;
    rsp.meiType = kModbusMeiReadDeviceId;
    rsp.readDeviceIdCode = req.readDeviceIdCode;
    // Conformity level: the highest category the device has, with individual access (0x8X).
    uint8_t level = 0x81;
    for (const auto& o : objects)
    {
        level = std::max<uint8_t>(level, o.first >= 0x80 ? 0x83 : (o.first >= 0x03 ? 0x82 : 0x81));
    }
    rsp.conformityLevel = level;
    const auto code = static_cast<ModbusReadDeviceIdCode>(req.readDeviceIdCode);
    if (code == ModbusReadDeviceIdCode::Individual)
    {
        auto it = objects.find(req.objectId);
        if (it == objects.end())
        {
            return ModbusResponse::Exception(req.function,
                                             ModbusExceptionCode::IllegalDataAddress);
        }
        rsp.objects.push_back({it->first, it->second.substr(0, kModbusMaxPdu - 9)});
        return rsp;
    }
    // Stream access: basic = 0x00-0x02, regular adds 0x03-0x7F, extended adds 0x80-0xFF.
    const uint8_t last = code == ModbusReadDeviceIdCode::Basic     ? 0x02
                         : code == ModbusReadDeviceIdCode::Regular ? 0x7F
                                                                   : 0xFF;
    uint8_t first = req.objectId;
    // "If the Object Id does not match any known object, the server responds as if object 0
    // were pointed out (restart at the beginning)."
    if (first > last || objects.find(first) == objects.end())
    {
        first = 0x00;
    }
    std::size_t size = 7; // function, MEI, code, conformity, more follows, next id, count
    for (auto it = objects.lower_bound(first); it != objects.end() && it->first <= last; ++it)
    {
        const std::string value = it->second.substr(0, kModbusMaxPdu - 9);
        if (size + 2 + value.size() > kModbusMaxPdu)
        {
            rsp.moreFollows = true;
            rsp.nextObjectId = it->first;
            break;
        }
        size += 2 + value.size();
        rsp.objects.push_back({it->first, value});
    }
    return rsp;
}

ModbusResponse
ModbusSlave::Diagnostics(const ModbusRequest& req)
{
    // MODBUS Application Protocol V1.1b3 §6.8; the counters of Modbus over serial line v1.02
    // §6.1. Counters are reported modulo 2^16.
    ModbusResponse rsp;
    rsp.function = req.function;
    rsp.subFunction = req.subFunction;
    auto put = [&rsp](uint64_t v) {
        rsp.data = {static_cast<uint8_t>((v >> 8) & 0xFF), static_cast<uint8_t>(v & 0xFF)};
    };
    switch (static_cast<ModbusDiagnostic>(req.subFunction))
    {
    case ModbusDiagnostic::ReturnQueryData:
        rsp.data = req.data;
        break;
    case ModbusDiagnostic::ClearCounters:
        m_diag = ModbusSlaveDiagnostics();
        rsp.data = req.data;
        break;
    case ModbusDiagnostic::BusMessageCount:
        put(m_diag.busMessageCount);
        break;
    case ModbusDiagnostic::BusCommunicationErrorCount:
        put(m_diag.busCommunicationErrorCount);
        break;
    case ModbusDiagnostic::BusExceptionErrorCount:
        put(m_diag.busExceptionErrorCount);
        break;
    case ModbusDiagnostic::ServerMessageCount:
        put(m_diag.serverMessageCount);
        break;
    case ModbusDiagnostic::ServerNoResponseCount:
        put(m_diag.serverNoResponseCount);
        break;
    case ModbusDiagnostic::ServerNakCount:
        put(m_diag.serverNakCount);
        break;
    case ModbusDiagnostic::ServerBusyCount:
        put(m_diag.serverBusyCount);
        break;
    case ModbusDiagnostic::BusCharacterOverrunCount:
        put(m_diag.busCharacterOverrunCount);
        break;
    }
    return rsp;
}

} // namespace ns3
