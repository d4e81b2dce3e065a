// Fuzz target: the rack's protocol parsers, as a Modbus master on the pty or an HTTP client of
// the Redfish server reaches them. The first input byte picks one:
//  0  a Modbus RTU ADU a slave receives (address, PDU, CRC; Modbus over serial line v1.02
//     §2.5.1): CRC check, then ModbusRequest::Decode; a request it accepts is encoded again
//     and must decode to the same PDU bytes.
//  1  a response PDU a master receives for a request (the request encoded from the next bytes
//     by the request decoder, the rest as the response): ModbusResponse::Decode.
//  2  an HTTP request head (RFC 9112): RedfishServer::ParseHead, whose result must be one of
//     its documented values.
#include "models/rack/modbus-pdu.h"
#include "models/rack/modbus-rtu.h"
#include "models/rack/redfish-server.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

void
Fail(const char* what)
{
    std::fprintf(stderr, "fuzz-rack-protocols: %s\n", what);
    std::abort();
}

void
Request(const uint8_t* adu, size_t n)
{
    ModbusRtuCrcOk(adu, n);
    if (n < 4)
    {
        return;
    }
    // The PDU is between the address and the CRC.
    ModbusRequest req;
    if (ModbusRequest::Decode(adu + 1, n - 3, req) != ModbusExceptionCode::None)
    {
        return;
    }
    const std::vector<uint8_t> again = req.Encode();
    ModbusRequest req2;
    if (ModbusRequest::Decode(again.data(), again.size(), req2) != ModbusExceptionCode::None ||
        req2.Encode() != again)
    {
        Fail("a request that decoded does not survive Encode and Decode");
    }
    ModbusRtuBuildAdu(adu[0], again);
}

void
Response(const uint8_t* data, size_t n)
{
    if (n < 2)
    {
        return;
    }
    // The first byte says how long the request PDU is.
    const size_t reqLen = std::min<size_t>(data[0], n - 1);
    ModbusRequest req;
    if (ModbusRequest::Decode(data + 1, reqLen, req) != ModbusExceptionCode::None)
    {
        req = ModbusRequest::Raw(reqLen ? data[1] : 0, {});
    }
    ModbusResponse resp;
    std::string why;
    const size_t rest = n - 1 - reqLen;
    ModbusResponse::Decode(req, rest ? data + 1 + reqLen : nullptr, rest, resp, &why);
}

void
HttpHead(const uint8_t* data, size_t n)
{
    const std::string buffer(reinterpret_cast<const char*>(data), n);
    RedfishHttpRequest req;
    const int64_t r = RedfishServer::ParseHead(buffer, 8192, &req);
    if (!(r == 0 || r == -400 || r == -431 || (r > 0 && static_cast<size_t>(r) <= n)))
    {
        Fail("ParseHead returned a value it does not document");
    }
}

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1 || size > 65536)
    {
        return 0;
    }
    const uint8_t* rest = data + 1;
    const size_t n = size - 1;
    switch (data[0] % 3)
    {
    case 0:
        Request(rest, n);
        break;
    case 1:
        Response(rest, n);
        break;
    default:
        HttpHead(rest, n);
        break;
    }
    return 0;
}
