// Byte access to fixed-size wire headers for the layout tests: a header's bytes written
// directly (WriteTo) and through ns3::Packet (AddHeader), so a test can compare both with a
// layout written out by hand from the spec.
#ifndef CNUAS_TESTS_HEADER_TEST_UTIL_H
#define CNUAS_TESTS_HEADER_TEST_UTIL_H

#include "ns3/packet.h"

#include <cstdint>
#include <vector>

namespace cnuas_test
{

/// H's bytes as WriteTo writes them (H is a FixedSizeHeader: kSize, WriteTo).
template <typename H>
std::vector<uint8_t>
Raw(const H& h)
{
    std::vector<uint8_t> out(H::kSize);
    h.WriteTo(out.data());
    return out;
}

/// Serialize through an ns3::Packet (AddHeader) and return the bytes.
template <typename H>
std::vector<uint8_t>
ViaPacket(const H& h)
{
    ns3::Ptr<ns3::Packet> p = ns3::Create<ns3::Packet>();
    p->AddHeader(h);
    std::vector<uint8_t> out(p->GetSize());
    p->CopyData(out.data(), out.size());
    return out;
}

} // namespace cnuas_test

#endif
