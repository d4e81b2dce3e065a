// Invalidate Extended Transport Header, carried by RC SEND Last/Only with Invalidate: the R_Key
// the responder invalidates when the message completes. IBA vol. 1 §9.3.8 (IETH).
#ifndef CNUAS_IB_IETH_HEADER_H
#define CNUAS_IB_IETH_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief The IETH, serialized byte-exactly (big-endian, IBA vol. 1 §9.3.8).
 *
 * Layout: bytes 0-3 R_Key.
 */
class IbIethHeader : public FixedSizeHeader<IbIethHeader, 4>
{
  public:
    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 4 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 4 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint32_t GetRkey() const { return m_rkey; }
    void SetRkey(uint32_t rkey) { m_rkey = rkey; }

  private:
    uint32_t m_rkey{0};
};

} // namespace ns3

#endif
