// A parsed view of the transport headers of one packet: the BTH and whichever extension
// headers the opcode table says follow it, plus where the payload is. Parsing never reads
// outside the bytes it is given and says why it rejects a packet.
// IBA vol. 1 §9.2 (BTH, PadCnt, TVer), §9.3 (extended transport headers).
#ifndef CNUAS_IB_TRANSPORT_HEADERS_H
#define CNUAS_IB_TRANSPORT_HEADERS_H

#include "ib-aeth-header.h"
#include "ib-atomic-ack-eth-header.h"
#include "ib-atomic-eth-header.h"
#include "ib-bth-header.h"
#include "ib-deth-header.h"
#include "ib-ieth-header.h"
#include "ib-immdt-header.h"
#include "ib-opcode.h"
#include "ib-reth-header.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace ns3
{

/// Why IbTransportHeaders::Parse rejected a packet.
enum class IbParseError : uint8_t
{
    None = 0,
    /// Fewer bytes than the BTH, or than the headers the opcode needs plus the ICRC.
    Truncated,
    /// The opcode is not in the table (undefined, reserved, RD, XRC or vendor-specific).
    UnknownOpcode,
    /// BTH.TVer is not 0, the only transport header version (IBA vol. 1 §9.2).
    UnsupportedTver,
    /// From the BTH to the ICRC is not a whole number of 4-byte words (IBA vol. 1 §9.2: the
    /// pad brings the payload to a 4-byte boundary).
    Misaligned,
    /// PadCnt is larger than the payload area, or non-zero on an opcode without payload.
    BadPadCount,
    /// Bytes after the headers of an opcode that carries no payload (e.g. an ACK).
    UnexpectedPayload,
};

/// "none", "truncated", "unknown opcode", ...
const char* IbParseErrorName(IbParseError e);

/**
 * \brief The transport headers of one packet, from the first BTH byte on.
 *
 * The bytes given to Parse start at the BTH (after the LRH/GRH of InfiniBand, or after the UDP
 * header of RoCEv2) and end after the ICRC; the VCRC of InfiniBand is not part of them. The
 * packet is laid out (IBA vol. 1 §9.2, §9.3):
 *
 *     BTH | extension headers | payload | pad (BTH.PadCnt bytes) | ICRC (icrcSize bytes)
 *
 * Every extension header the opcode carries is filled in; the others are empty.
 */
struct IbTransportHeaders
{
    IbBthHeader bth;
    /// The opcode's table row (nullptr when Parse failed before finding it).
    const IbOpcodeInfo* info{nullptr};
    std::optional<IbDethHeader> deth;
    std::optional<IbRethHeader> reth;
    std::optional<IbAtomicEthHeader> atomicEth;
    std::optional<IbAethHeader> aeth;
    std::optional<IbAtomicAckEthHeader> atomicAckEth;
    std::optional<IbImmDtHeader> immDt;
    std::optional<IbIethHeader> ieth;
    /// Offset of the payload from the first BTH byte (= BTH + extension headers).
    uint32_t payloadOffset{0};
    /// Payload bytes, pad excluded.
    uint32_t payloadLength{0};
    /// Why the last Parse failed (None after a success).
    IbParseError error{IbParseError::None};

    /**
     * Parse a packet. On failure returns false, sets error and leaves the members that were
     * not reached empty; it never reads outside [data, data + length).
     * \param data first BTH byte (may be nullptr when length is 0)
     * \param length bytes from the first BTH byte through the ICRC
     * \param icrcSize bytes of ICRC at the end: 4 for InfiniBand and RoCEv2, 0 when the caller
     *        has already removed it
     */
    bool Parse(const uint8_t* data, size_t length, size_t icrcSize);

    /**
     * Write the BTH and the extension headers the table lists for bth's opcode, in wire order
     * (the CNP's reserved bytes as zeros). Returns the bytes written (the opcode's header
     * length), or 0 and writes nothing when the opcode is not in the table, a header it
     * needs is missing, or capacity is too small.
     */
    uint32_t Write(uint8_t* out, size_t capacity) const;

    /// Empty every member (Parse does this first).
    void Clear();
};

} // namespace ns3

#endif
