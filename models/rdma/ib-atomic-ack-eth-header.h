// Atomic Acknowledge Extended Transport Header, carried by the RC ATOMIC Acknowledge after its
// AETH: the value the target word had before the operation. IBA vol. 1 §9.3.6 (AtomicAckETH).
#ifndef CNUAS_IB_ATOMIC_ACK_ETH_HEADER_H
#define CNUAS_IB_ATOMIC_ACK_ETH_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief The AtomicAckETH, serialized byte-exactly (big-endian, IBA vol. 1 §9.3.6).
 *
 * Layout: bytes 0-7 original remote data.
 */
class IbAtomicAckEthHeader : public FixedSizeHeader<IbAtomicAckEthHeader, 8>
{
  public:
    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 8 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 8 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint64_t GetOriginalRemoteData() const { return m_orig; }
    void SetOriginalRemoteData(uint64_t v) { m_orig = v; }

  private:
    uint64_t m_orig{0};
};

} // namespace ns3

#endif
