// The BTH OpCodes and the one table that says what each means: which extension headers follow
// the BTH and where, whether a payload follows, which QP types may send it, and where in a
// message it stands. Code asks this table instead of switching on opcodes.
// IBA vol. 1 §9.2 (BTH OpCode, table 36), §9.3 (extended transport headers), annex A17 (RoCEv2
// CNP).
#ifndef CNUAS_IB_OPCODE_H
#define CNUAS_IB_OPCODE_H

#include "ib-qp-type.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace ns3
{

/**
 * BTH OpCode values (IBA vol. 1 §9.2, table 36). Bits 7:5 name the transport service, bits 4:0
 * the operation. Only the RC, UC and UD opcodes and the RoCEv2 CNP are defined here; RD (0x40
 * prefix, needs an RDETH) and XRC (0xA0) are not modelled.
 */
namespace IbOpcode
{
/// Transport prefixes, bits 7:5.
constexpr uint8_t kRcPrefix = 0x00;
constexpr uint8_t kUcPrefix = 0x20;
constexpr uint8_t kRdPrefix = 0x40;
constexpr uint8_t kUdPrefix = 0x60;
constexpr uint8_t kCnpPrefix = 0x80;
constexpr uint8_t kPrefixMask = 0xE0;

// Reliable Connection.
constexpr uint8_t kRcSendFirst = 0x00;
constexpr uint8_t kRcSendMiddle = 0x01;
constexpr uint8_t kRcSendLast = 0x02;
constexpr uint8_t kRcSendLastWithImm = 0x03;
constexpr uint8_t kRcSendOnly = 0x04;
constexpr uint8_t kRcSendOnlyWithImm = 0x05;
constexpr uint8_t kRcRdmaWriteFirst = 0x06;
constexpr uint8_t kRcRdmaWriteMiddle = 0x07;
constexpr uint8_t kRcRdmaWriteLast = 0x08;
constexpr uint8_t kRcRdmaWriteLastWithImm = 0x09;
constexpr uint8_t kRcRdmaWriteOnly = 0x0A;
constexpr uint8_t kRcRdmaWriteOnlyWithImm = 0x0B;
constexpr uint8_t kRcRdmaReadRequest = 0x0C;
constexpr uint8_t kRcRdmaReadResponseFirst = 0x0D;
constexpr uint8_t kRcRdmaReadResponseMiddle = 0x0E;
constexpr uint8_t kRcRdmaReadResponseLast = 0x0F;
constexpr uint8_t kRcRdmaReadResponseOnly = 0x10;
constexpr uint8_t kRcAcknowledge = 0x11;
constexpr uint8_t kRcAtomicAcknowledge = 0x12;
constexpr uint8_t kRcCompareSwap = 0x13;
constexpr uint8_t kRcFetchAdd = 0x14;
constexpr uint8_t kRcSendLastWithInvalidate = 0x16;
constexpr uint8_t kRcSendOnlyWithInvalidate = 0x17;

// Unreliable Connection: the SEND and RDMA WRITE opcodes of RC under the 0x20 prefix.
constexpr uint8_t kUcSendFirst = 0x20;
constexpr uint8_t kUcSendMiddle = 0x21;
constexpr uint8_t kUcSendLast = 0x22;
constexpr uint8_t kUcSendLastWithImm = 0x23;
constexpr uint8_t kUcSendOnly = 0x24;
constexpr uint8_t kUcSendOnlyWithImm = 0x25;
constexpr uint8_t kUcRdmaWriteFirst = 0x26;
constexpr uint8_t kUcRdmaWriteMiddle = 0x27;
constexpr uint8_t kUcRdmaWriteLast = 0x28;
constexpr uint8_t kUcRdmaWriteLastWithImm = 0x29;
constexpr uint8_t kUcRdmaWriteOnly = 0x2A;
constexpr uint8_t kUcRdmaWriteOnlyWithImm = 0x2B;

// Unreliable Datagram: single-packet SENDs only.
constexpr uint8_t kUdSendOnly = 0x64;
constexpr uint8_t kUdSendOnlyWithImm = 0x65;

/// RoCEv2 Congestion Notification Packet: BTH + 16 reserved bytes (IBA vol. 1 annex A17).
constexpr uint8_t kCnp = 0x81;
} // namespace IbOpcode

/// Properties of an opcode, combined in IbOpcodeInfo::flags.
namespace IbOpFlag
{
/// Sent by a requester: SEND, RDMA WRITE, RDMA READ request, atomic request (and UD SEND).
constexpr uint32_t kRequest = 1u << 0;
/// Sent by an RC responder: RDMA READ responses, ACK/NAK, atomic ACK.
constexpr uint32_t kResponse = 1u << 1;
/// Position in a message (IBA vol. 1 §9.2, table 36): First, Middle..., Last, or Only.
constexpr uint32_t kFirst = 1u << 2;
constexpr uint32_t kMiddle = 1u << 3;
constexpr uint32_t kLast = 1u << 4;
constexpr uint32_t kOnly = 1u << 5;
/// A data payload follows the headers (it may be empty, e.g. a zero-length SEND Only).
constexpr uint32_t kPayload = 1u << 6;
/// Extension headers present (IBA vol. 1 §9.3).
constexpr uint32_t kImmDt = 1u << 7;
constexpr uint32_t kIeth = 1u << 8;
constexpr uint32_t kReth = 1u << 9;
constexpr uint32_t kAeth = 1u << 10;
constexpr uint32_t kAtomicEth = 1u << 11;
constexpr uint32_t kAtomicAckEth = 1u << 12;
constexpr uint32_t kDeth = 1u << 13;
/// The BTH AckReq bit means something: an RC request, which the responder acknowledges
/// (IBA vol. 1 §9.2, AckReq). Unreliable services ignore the bit.
constexpr uint32_t kAckReq = 1u << 14;
/// The operation a packet belongs to.
constexpr uint32_t kSend = 1u << 15;
constexpr uint32_t kWrite = 1u << 16;
constexpr uint32_t kRead = 1u << 17;
constexpr uint32_t kAtomic = 1u << 18;
/// A RoCEv2 congestion notification (annex A17): neither request nor response.
constexpr uint32_t kCnp = 1u << 19;

constexpr uint32_t kPositionMask = kFirst | kMiddle | kLast | kOnly;
constexpr uint32_t kOperationMask = kSend | kWrite | kRead | kAtomic;
constexpr uint32_t kDirectionMask = kRequest | kResponse;
} // namespace IbOpFlag

/// The extended transport headers, in the order they follow the BTH (IBA vol. 1 §9.3; the RDETH,
/// which would come first, belongs to RD and is not modelled).
enum class IbExtHeader : uint8_t
{
    Deth = 0,
    Reth,
    AtomicEth,
    Aeth,
    AtomicAckEth,
    ImmDt,
    Ieth,
};

/// Number of IbExtHeader values.
constexpr size_t kIbExtHeaderCount = 7;

/// Size in bytes of an extension header (IBA vol. 1 §9.3): DETH 8, RETH 16, AtomicETH 28,
/// AETH 4, AtomicAckETH 8, ImmDt 4, IETH 4.
uint32_t IbExtHeaderSize(IbExtHeader h);
/// "DETH", "RETH", "AtomicETH", "AETH", "AtomicAckETH", "ImmDt", "IETH".
const char* IbExtHeaderName(IbExtHeader h);
/// The IbOpFlag bit that says an opcode carries h.
uint32_t IbExtHeaderFlag(IbExtHeader h);

/// One row of the opcode table.
struct IbOpcodeInfo
{
    /// IbExtHeader offset of a header the opcode does not carry.
    static constexpr uint8_t kAbsent = 0xFF;
    /// Size of the BTH (IBA vol. 1 §9.2).
    static constexpr uint32_t kBthSize = 12;

    uint8_t opcode;
    /// As Wireshark's Info column names it, e.g. "RC Send First", "UD Send Only Immediate";
    /// "CNP" for the RoCEv2 CNP, which Wireshark 4.0 does not know.
    const char* name;
    /// The QP types that may send or receive it: IbQpTypeBit values or-ed together.
    uint8_t qpTypes;
    /// IbOpFlag bits.
    uint32_t flags;
    /// Offset of each extension header counted from the first byte after the BTH (so the
    /// header starts at BTH + kBthSize + offset), or kAbsent. Indexed by IbExtHeader.
    std::array<uint8_t, kIbExtHeaderCount> offsetAfterBth;
    /// BTH + every extension header (+ the 16 reserved bytes of a CNP): where the payload
    /// starts, counted from the first BTH byte.
    uint8_t headerLength;

    /// Whether every IbOpFlag bit of flag is set.
    bool Has(uint32_t flag) const { return (flags & flag) == flag; }
    bool Carries(IbExtHeader h) const
    {
        return offsetAfterBth[static_cast<size_t>(h)] != kAbsent;
    }
    /// Offset of h from the first BTH byte (Carries(h) must hold).
    uint32_t OffsetFromBth(IbExtHeader h) const
    {
        return kBthSize + offsetAfterBth[static_cast<size_t>(h)];
    }
    bool AllowedFor(IbQpType t) const { return (qpTypes & IbQpTypeBit(t)) != 0; }
};

/// The table row of an opcode, nullptr if the opcode is not defined (or is RD/XRC/vendor).
const IbOpcodeInfo* IbOpcodeLookup(uint8_t opcode);
/// The row's name, "Unknown OpCode" (as Wireshark says) for opcodes not in the table.
const char* IbOpcodeName(uint8_t opcode);
/// BTH + extension headers of an opcode in bytes; 0 for opcodes not in the table.
uint32_t IbTransportHeaderLength(uint8_t opcode);
/// Whether a QP of type qpType may use the opcode (IBA vol. 1 §9.2, table 36).
bool IbOpcodeAllowed(uint8_t opcode, IbQpType qpType);

/**
 * Whether next may follow previous in one packet stream of one QP: the requests a responder
 * receives, or the responses a requester receives (IBA vol. 1 §9.8.3.1; Linux rxe applies the
 * same rules in check_op_seq):
 *  * both opcodes are in the table, of the same transport (opcode bits 7:5) and the same
 *    direction (request or response; a CNP belongs to no stream and is never valid);
 *  * after a First or Middle, only a Middle or Last of the same operation (SEND, RDMA WRITE,
 *    RDMA READ response) may follow: a message is not interleaved with anything;
 *  * after a Last or Only, any First or Only of that direction may follow.
 * The first packet of a stream has no predecessor: it is valid when its row has kFirst or kOnly.
 */
bool IbOpcodeSequenceValid(uint8_t previous, uint8_t next);

} // namespace ns3

#endif
