// RDMA Extended Transport Header, carried by the first packet of an RDMA WRITE and by an RDMA
// READ request: where in the responder's memory the operation goes. IBA vol. 1 §9.3.3 (RETH).
#ifndef CNUAS_IB_RETH_HEADER_H
#define CNUAS_IB_RETH_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief The RETH, serialized byte-exactly (big-endian, IBA vol. 1 §9.3.3).
 *
 * Layout: bytes 0-7 VA (virtual address); bytes 8-11 R_Key; bytes 12-15 DMA Length (bytes of the
 * whole message, not of this packet).
 */
class IbRethHeader : public FixedSizeHeader<IbRethHeader, 16>
{
  public:
    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 16 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 16 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint64_t GetVirtualAddress() const { return m_va; }
    void SetVirtualAddress(uint64_t va) { m_va = va; }
    uint32_t GetRkey() const { return m_rkey; }
    void SetRkey(uint32_t rkey) { m_rkey = rkey; }
    uint32_t GetDmaLength() const { return m_dmaLength; }
    void SetDmaLength(uint32_t len) { m_dmaLength = len; }

  private:
    uint64_t m_va{0};
    uint32_t m_rkey{0};
    uint32_t m_dmaLength{0};
};

} // namespace ns3

#endif
