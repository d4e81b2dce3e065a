// The ns3::Header plumbing shared by every fixed-size wire header: each header writes and reads
// its bytes in WriteTo/ReadFrom (the raw fast path the models use), and ns3::Packet's
// AddHeader/RemoveHeader go through the same two functions, so there is one byte layout per
// header and one place it is defined.
#ifndef CNUAS_FIXED_SIZE_HEADER_H
#define CNUAS_FIXED_SIZE_HEADER_H

#include "ns3/header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief CRTP base for a header of `Size` bytes: Derived provides static GetTypeId(),
 * `void WriteTo(uint8_t*) const`, `void ReadFrom(const uint8_t*)` and Print().
 */
template <typename Derived, uint32_t Size>
class FixedSizeHeader : public Header
{
  public:
    static constexpr uint32_t kSize = Size;

    TypeId GetInstanceTypeId() const override
    {
        return Derived::GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return Size;
    }

    void Serialize(Buffer::Iterator start) const override
    {
        uint8_t raw[Size];
        static_cast<const Derived*>(this)->WriteTo(raw);
        start.Write(raw, Size);
    }

    uint32_t Deserialize(Buffer::Iterator start) override
    {
        uint8_t raw[Size];
        start.Read(raw, Size);
        static_cast<Derived*>(this)->ReadFrom(raw);
        return Size;
    }
};

} // namespace ns3

#endif
