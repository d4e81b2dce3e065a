#include "ib-opcode.h"

namespace ns3
{

namespace
{

using namespace IbOpcode;
using namespace IbOpFlag;

constexpr uint8_t kRc = IbQpTypeBit(IbQpType::Rc);
constexpr uint8_t kUc = IbQpTypeBit(IbQpType::Uc);
constexpr uint8_t kUd = IbQpTypeBit(IbQpType::Ud);

/// Extension headers in wire order (IBA vol. 1 §9.3) with their sizes and flags.
struct ExtHeaderDef
{
    IbExtHeader header;
    uint32_t size;
    uint32_t flag;
    const char* name;
};

constexpr ExtHeaderDef kExtHeaders[kIbExtHeaderCount] = {
    {IbExtHeader::Deth, 8, kDeth, "DETH"},                         // §9.3.2
    {IbExtHeader::Reth, 16, kReth, "RETH"},                        // §9.3.3
    {IbExtHeader::AtomicEth, 28, kAtomicEth, "AtomicETH"},         // §9.3.4
    {IbExtHeader::Aeth, 4, kAeth, "AETH"},                         // §9.3.5
    {IbExtHeader::AtomicAckEth, 8, kAtomicAckEth, "AtomicAckETH"}, // §9.3.6
    {IbExtHeader::ImmDt, 4, kImmDt, "ImmDt"},                      // §9.3.7
    {IbExtHeader::Ieth, 4, kIeth, "IETH"},                         // §9.3.8
};

/// The bytes of a RoCEv2 CNP after its BTH: reserved, zero (IBA vol. 1 annex A17).
constexpr uint8_t kCnpReservedBytes = 16;

/// One opcode as the spec's table lists it; offsets and lengths are derived from the flags, so
/// they cannot disagree with them.
struct Row
{
    uint8_t opcode;
    const char* name;
    uint8_t qpTypes;
    uint32_t flags;
};

// Flags shared by families of opcodes.
constexpr uint32_t kRcReq = kRequest | kAckReq;
constexpr uint32_t kSendData = kSend | kPayload;
constexpr uint32_t kWriteData = kWrite | kPayload;
constexpr uint32_t kReadData = kResponse | kRead | kPayload;

// IBA vol. 1 §9.2, table 36: the header sequence of every opcode (§9.3 for the headers).
// Names are Wireshark 4.0's (packet-infiniband.c, the Info column), trailing blanks dropped.
constexpr Row kRows[] = {
    // Reliable Connection.
    {kRcSendFirst, "RC Send First", kRc, kRcReq | kSendData | kFirst},
    {kRcSendMiddle, "RC Send Middle", kRc, kRcReq | kSendData | kMiddle},
    {kRcSendLast, "RC Send Last", kRc, kRcReq | kSendData | kLast},
    {kRcSendLastWithImm, "RC Send Last Immediate", kRc, kRcReq | kSendData | kLast | kImmDt},
    {kRcSendOnly, "RC Send Only", kRc, kRcReq | kSendData | kOnly},
    {kRcSendOnlyWithImm, "RC Send Only Immediate", kRc, kRcReq | kSendData | kOnly | kImmDt},
    {kRcRdmaWriteFirst, "RC RDMA Write First", kRc, kRcReq | kWriteData | kFirst | kReth},
    {kRcRdmaWriteMiddle, "RC RDMA Write Middle", kRc, kRcReq | kWriteData | kMiddle},
    {kRcRdmaWriteLast, "RC RDMA Write Last", kRc, kRcReq | kWriteData | kLast},
    {kRcRdmaWriteLastWithImm,
     "RC RDMA Write Last Immediate",
     kRc,
     kRcReq | kWriteData | kLast | kImmDt},
    {kRcRdmaWriteOnly, "RC RDMA Write Only", kRc, kRcReq | kWriteData | kOnly | kReth},
    {kRcRdmaWriteOnlyWithImm,
     "RC RDMA Write Only Immediate",
     kRc,
     kRcReq | kWriteData | kOnly | kReth | kImmDt},
    {kRcRdmaReadRequest, "RC RDMA Read Request", kRc, kRcReq | kRead | kOnly | kReth},
    {kRcRdmaReadResponseFirst, "RC RDMA Read Response First", kRc, kReadData | kFirst | kAeth},
    {kRcRdmaReadResponseMiddle, "RC RDMA Read Response Middle", kRc, kReadData | kMiddle},
    {kRcRdmaReadResponseLast, "RC RDMA Read Response Last", kRc, kReadData | kLast | kAeth},
    {kRcRdmaReadResponseOnly, "RC RDMA Read Response Only", kRc, kReadData | kOnly | kAeth},
    {kRcAcknowledge, "RC Acknowledge", kRc, kResponse | kOnly | kAeth},
    {kRcAtomicAcknowledge,
     "RC Atomic Acknowledge",
     kRc,
     kResponse | kAtomic | kOnly | kAeth | kAtomicAckEth},
    {kRcCompareSwap, "RC Compare Swap", kRc, kRcReq | kAtomic | kOnly | kAtomicEth},
    {kRcFetchAdd, "RC Fetch Add", kRc, kRcReq | kAtomic | kOnly | kAtomicEth},
    {kRcSendLastWithInvalidate,
     "RC Send Last Invalidate",
     kRc,
     kRcReq | kSendData | kLast | kIeth},
    {kRcSendOnlyWithInvalidate,
     "RC Send Only Invalidate",
     kRc,
     kRcReq | kSendData | kOnly | kIeth},

    // Unreliable Connection: no acknowledgments, so no AckReq, no READ, no atomics.
    {kUcSendFirst, "UC Send First", kUc, kRequest | kSendData | kFirst},
    {kUcSendMiddle, "UC Send Middle", kUc, kRequest | kSendData | kMiddle},
    {kUcSendLast, "UC Send Last", kUc, kRequest | kSendData | kLast},
    {kUcSendLastWithImm, "UC Send Last Immediate", kUc, kRequest | kSendData | kLast | kImmDt},
    {kUcSendOnly, "UC Send Only", kUc, kRequest | kSendData | kOnly},
    {kUcSendOnlyWithImm, "UC Send Only Immediate", kUc, kRequest | kSendData | kOnly | kImmDt},
    {kUcRdmaWriteFirst, "UC RDMA Write First", kUc, kRequest | kWriteData | kFirst | kReth},
    {kUcRdmaWriteMiddle, "UC RDMA Write Middle", kUc, kRequest | kWriteData | kMiddle},
    {kUcRdmaWriteLast, "UC RDMA Write Last", kUc, kRequest | kWriteData | kLast},
    {kUcRdmaWriteLastWithImm,
     "UC RDMA Write Last Immediate",
     kUc,
     kRequest | kWriteData | kLast | kImmDt},
    {kUcRdmaWriteOnly, "UC RDMA Write Only", kUc, kRequest | kWriteData | kOnly | kReth},
    {kUcRdmaWriteOnlyWithImm,
     "UC RDMA Write Only Immediate",
     kUc,
     kRequest | kWriteData | kOnly | kReth | kImmDt},

    // Unreliable Datagram: every message is one packet, addressed by its DETH.
    {kUdSendOnly, "UD Send Only", kUd, kRequest | kSendData | kOnly | kDeth},
    {kUdSendOnlyWithImm,
     "UD Send Only Immediate",
     kUd,
     kRequest | kSendData | kOnly | kDeth | kImmDt},

    // RoCEv2 CNP (annex A17): addressed to the QP whose packets were marked, whatever its type.
    {IbOpcode::kCnp, "CNP", kRc | kUc | kUd, IbOpFlag::kCnp},
};

constexpr size_t kRowCount = sizeof(kRows) / sizeof(kRows[0]);

constexpr IbOpcodeInfo
MakeInfo(const Row& r)
{
    IbOpcodeInfo info{};
    info.opcode = r.opcode;
    info.name = r.name;
    info.qpTypes = r.qpTypes;
    info.flags = r.flags;
    uint32_t offset = 0;
    for (const ExtHeaderDef& h : kExtHeaders)
    {
        if ((r.flags & h.flag) != 0)
        {
            info.offsetAfterBth[static_cast<size_t>(h.header)] = static_cast<uint8_t>(offset);
            offset += h.size;
        }
        else
        {
            info.offsetAfterBth[static_cast<size_t>(h.header)] = IbOpcodeInfo::kAbsent;
        }
    }
    if ((r.flags & IbOpFlag::kCnp) != 0)
    {
        offset += kCnpReservedBytes;
    }
    info.headerLength = static_cast<uint8_t>(IbOpcodeInfo::kBthSize + offset);
    return info;
}

struct Table
{
    std::array<IbOpcodeInfo, kRowCount> rows;
    std::array<const IbOpcodeInfo*, 256> byOpcode;

    constexpr Table()
        : rows{},
          byOpcode{}
    {
        for (size_t i = 0; i < kRowCount; ++i)
        {
            rows[i] = MakeInfo(kRows[i]);
            byOpcode[rows[i].opcode] = &rows[i];
        }
    }
};

// Built by the compiler (constant initialization): a lookup per packet reads it directly,
// with no guard of a function-local static to test first, and no other static's
// initialization can run before it.
constexpr Table kTable{};

const Table&
GetTable()
{
    return kTable;
}

const ExtHeaderDef&
Def(IbExtHeader h)
{
    return kExtHeaders[static_cast<size_t>(h)];
}

} // namespace

uint32_t
IbExtHeaderSize(IbExtHeader h)
{
    return Def(h).size;
}

const char*
IbExtHeaderName(IbExtHeader h)
{
    return Def(h).name;
}

uint32_t
IbExtHeaderFlag(IbExtHeader h)
{
    return Def(h).flag;
}

const IbOpcodeInfo*
IbOpcodeLookup(uint8_t opcode)
{
    return GetTable().byOpcode[opcode];
}

const char*
IbOpcodeName(uint8_t opcode)
{
    const IbOpcodeInfo* info = IbOpcodeLookup(opcode);
    return info != nullptr ? info->name : "Unknown OpCode";
}

uint32_t
IbTransportHeaderLength(uint8_t opcode)
{
    const IbOpcodeInfo* info = IbOpcodeLookup(opcode);
    return info != nullptr ? info->headerLength : 0;
}

bool
IbOpcodeAllowed(uint8_t opcode, IbQpType qpType)
{
    const IbOpcodeInfo* info = IbOpcodeLookup(opcode);
    return info != nullptr && info->AllowedFor(qpType);
}

bool
IbOpcodeSequenceValid(uint8_t previous, uint8_t next)
{
    const IbOpcodeInfo* p = IbOpcodeLookup(previous);
    const IbOpcodeInfo* n = IbOpcodeLookup(next);
    if (p == nullptr || n == nullptr)
    {
        return false;
    }
    // One stream: one transport service, one direction. CNPs are in no stream.
    if ((previous & kPrefixMask) != (next & kPrefixMask))
    {
        return false;
    }
    const uint32_t direction = p->flags & kDirectionMask;
    if (direction == 0 || direction != (n->flags & kDirectionMask))
    {
        return false;
    }
    // IBA vol. 1 §9.8.3.1: a message in progress is continued by its own Middle or Last
    // packets only ...
    if ((p->flags & (kFirst | kMiddle)) != 0)
    {
        return (n->flags & (kMiddle | kLast)) != 0 &&
               (n->flags & kOperationMask) == (p->flags & kOperationMask);
    }
    // ... and after a complete message the next one starts with a First or an Only.
    return (n->flags & (kFirst | kOnly)) != 0;
}

} // namespace ns3
