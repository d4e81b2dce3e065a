#include "ib-transport-headers.h"

#include "models/common/fresh-value.h"

#include <cstring>

namespace ns3
{

namespace
{

/// Read header h of type H from data at the offset the table gives, into the optional slot.
template <typename H>
void
ReadExt(const IbOpcodeInfo& info, IbExtHeader h, const uint8_t* data, std::optional<H>& slot)
{
    if (info.Carries(h))
    {
        // Read in place: a temporary copied in would be one more ns-3 Header to build and
        // destroy (through libns3, a log check each) per header per packet.
        slot.emplace().ReadFrom(data + info.OffsetFromBth(h));
    }
}

/// Whether the optional slot of a header the opcode needs is filled (headers it does not
/// carry are ignored).
template <typename H>
bool
Present(const IbOpcodeInfo& info, IbExtHeader h, const std::optional<H>& slot)
{
    return !info.Carries(h) || slot.has_value();
}

template <typename H>
void
WriteExt(const IbOpcodeInfo& info, IbExtHeader h, uint8_t* out, const std::optional<H>& slot)
{
    if (info.Carries(h))
    {
        slot->WriteTo(out + info.OffsetFromBth(h));
    }
}

} // namespace

const char*
IbParseErrorName(IbParseError e)
{
    switch (e)
    {
    case IbParseError::None:
        return "none";
    case IbParseError::Truncated:
        return "truncated";
    case IbParseError::UnknownOpcode:
        return "unknown opcode";
    case IbParseError::UnsupportedTver:
        return "unsupported TVer";
    case IbParseError::Misaligned:
        return "length not a multiple of 4";
    case IbParseError::BadPadCount:
        return "bad PadCnt";
    case IbParseError::UnexpectedPayload:
        return "payload after an opcode without one";
    }
    return "?";
}

void
IbTransportHeaders::Clear()
{
    // Every received packet is parsed into cleared headers (FreshValue: no nine ns-3 Headers
    // built and destroyed per packet).
    *this = FreshValue<IbTransportHeaders>();
}

bool
IbTransportHeaders::Parse(const uint8_t* data, size_t length, size_t icrcSize)
{
    Clear();
    auto fail = [this](IbParseError e) {
        error = e;
        return false;
    };

    // Sizes are compared as differences from length, never sums, so no check can overflow;
    // nothing at or past data + length is read.
    if (icrcSize > length || length - icrcSize < IbOpcodeInfo::kBthSize)
    {
        return fail(IbParseError::Truncated);
    }
    const size_t beforeIcrc = length - icrcSize;
    bth.ReadFrom(data);
    info = IbOpcodeLookup(bth.GetOpCode());
    if (info == nullptr)
    {
        return fail(IbParseError::UnknownOpcode);
    }
    // IBA vol. 1 §9.2: TVer 0 is the only header version; others are dropped.
    if (bth.GetTver() != IbBthHeader::kTver)
    {
        return fail(IbParseError::UnsupportedTver);
    }
    if (beforeIcrc < info->headerLength)
    {
        return fail(IbParseError::Truncated);
    }
    // IBA vol. 1 §9.2: headers are whole words and PadCnt pads the payload to a word, so the
    // transport packet up to the ICRC is a whole number of 4-byte words.
    if (beforeIcrc % 4 != 0)
    {
        return fail(IbParseError::Misaligned);
    }

    ReadExt(*info, IbExtHeader::Deth, data, deth);
    ReadExt(*info, IbExtHeader::Reth, data, reth);
    ReadExt(*info, IbExtHeader::AtomicEth, data, atomicEth);
    ReadExt(*info, IbExtHeader::Aeth, data, aeth);
    ReadExt(*info, IbExtHeader::AtomicAckEth, data, atomicAckEth);
    ReadExt(*info, IbExtHeader::ImmDt, data, immDt);
    ReadExt(*info, IbExtHeader::Ieth, data, ieth);

    payloadOffset = info->headerLength;
    const size_t area = beforeIcrc - info->headerLength; // payload + pad
    const uint8_t pad = bth.GetPadCnt();
    if (!info->Has(IbOpFlag::kPayload))
    {
        if (pad != 0)
        {
            return fail(IbParseError::BadPadCount);
        }
        if (area != 0)
        {
            return fail(IbParseError::UnexpectedPayload);
        }
        return true;
    }
    // IBA vol. 1 §9.2: PadCnt bytes of pad follow the payload; they cannot be more than there is.
    if (pad > area)
    {
        return fail(IbParseError::BadPadCount);
    }
    payloadLength = static_cast<uint32_t>(area - pad);
    return true;
}

uint32_t
IbTransportHeaders::Write(uint8_t* out, size_t capacity) const
{
    const IbOpcodeInfo* row = IbOpcodeLookup(bth.GetOpCode());
    if (row == nullptr || capacity < row->headerLength)
    {
        return 0;
    }
    if (!Present(*row, IbExtHeader::Deth, deth) || !Present(*row, IbExtHeader::Reth, reth) ||
        !Present(*row, IbExtHeader::AtomicEth, atomicEth) ||
        !Present(*row, IbExtHeader::Aeth, aeth) ||
        !Present(*row, IbExtHeader::AtomicAckEth, atomicAckEth) ||
        !Present(*row, IbExtHeader::ImmDt, immDt) || !Present(*row, IbExtHeader::Ieth, ieth))
    {
        return 0;
    }
    // Zero first: the CNP's reserved bytes (IBA vol. 1 annex A17) are the only bytes no header
    // writes.
    std::memset(out, 0, row->headerLength);
    bth.WriteTo(out);
    WriteExt(*row, IbExtHeader::Deth, out, deth);
    WriteExt(*row, IbExtHeader::Reth, out, reth);
    WriteExt(*row, IbExtHeader::AtomicEth, out, atomicEth);
    WriteExt(*row, IbExtHeader::Aeth, out, aeth);
    WriteExt(*row, IbExtHeader::AtomicAckEth, out, atomicAckEth);
    WriteExt(*row, IbExtHeader::ImmDt, out, immDt);
    WriteExt(*row, IbExtHeader::Ieth, out, ieth);
    return row->headerLength;
}

} // namespace ns3
