#include "ib-crc.h"
#include "ib-frame.h"

namespace ns3
{

void
IbFrame::Materialize(std::vector<uint8_t>& out)
{
    const uint32_t len = packet->GetSize();
    out.resize(len);
    packet->CopyData(out.data(), len);
    if (len < IbLrhHeader::kSize + kIbVcrcBytes)
    {
        return;
    }
    // The VL is rewritten at every hop (SL-to-VL mapping, IBA vol. 1 §7.6.6).
    out[0] = static_cast<uint8_t>((vl << 4) | (out[0] & 0x0F));
    if (HasIcrc() && len >= IbLrhHeader::kSize + kIbIcrcBytes + kIbVcrcBytes)
    {
        uint8_t* icrcAt = out.data() + len - kIbVcrcBytes - kIbIcrcBytes;
        if (!icrcKnown)
        {
            // The ICRC is invariant end to end (its variant fields are masked): computed once.
            icrc = IbComputeIcrc(out.data(), len - kIbVcrcBytes - kIbIcrcBytes);
            icrcKnown = true;
        }
        IbStoreIcrc(icrcAt, icrc);
    }
    IbStoreVcrc(out.data() + len - kIbVcrcBytes, IbComputeVcrc(out.data(), len - kIbVcrcBytes));
}

} // namespace ns3
