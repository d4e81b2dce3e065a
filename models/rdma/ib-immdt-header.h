// Immediate Data Extended Transport Header, carried by the "with Immediate" SEND and RDMA WRITE
// packets (the last or only packet of the message): 4 opaque bytes the responder hands to the
// consumer in the completion. IBA vol. 1 §9.3.7 (ImmDt).
#ifndef CNUAS_IB_IMMDT_HEADER_H
#define CNUAS_IB_IMMDT_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief The ImmDt header, serialized byte-exactly (IBA vol. 1 §9.3.7).
 *
 * Layout: bytes 0-3 immediate data. The spec gives the 4 bytes no numeric meaning; this class
 * holds them as the big-endian number they spell, so the value of a verbs `imm_data` (a
 * `__be32`, already in network order) is ntohl(imm_data).
 */
class IbImmDtHeader : public FixedSizeHeader<IbImmDtHeader, 4>
{
  public:
    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 4 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 4 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint32_t GetImmediateData() const { return m_imm; }
    void SetImmediateData(uint32_t v) { m_imm = v; }

  private:
    uint32_t m_imm{0};
};

} // namespace ns3

#endif
