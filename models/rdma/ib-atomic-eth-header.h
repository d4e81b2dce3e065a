// Atomic Extended Transport Header, carried by the RC atomic requests (CmpSwap, FetchAdd):
// the 8-byte word to operate on and the operands. IBA vol. 1 §9.3.4 (AtomicETH).
#ifndef CNUAS_IB_ATOMIC_ETH_HEADER_H
#define CNUAS_IB_ATOMIC_ETH_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief The AtomicETH, serialized byte-exactly (big-endian, IBA vol. 1 §9.3.4).
 *
 * Layout: bytes 0-7 VA; bytes 8-11 R_Key; bytes 12-19 Swap (CmpSwap) or Add (FetchAdd) data;
 * bytes 20-27 Compare data (CmpSwap; ignored by FetchAdd).
 */
class IbAtomicEthHeader : public FixedSizeHeader<IbAtomicEthHeader, 28>
{
  public:
    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 28 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 28 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint64_t GetVirtualAddress() const { return m_va; }
    void SetVirtualAddress(uint64_t va) { m_va = va; }
    uint32_t GetRkey() const { return m_rkey; }
    void SetRkey(uint32_t rkey) { m_rkey = rkey; }
    /// Swap data of a CmpSwap, add data of a FetchAdd.
    uint64_t GetSwapAddData() const { return m_swapAdd; }
    void SetSwapAddData(uint64_t v) { m_swapAdd = v; }
    uint64_t GetCompareData() const { return m_compare; }
    void SetCompareData(uint64_t v) { m_compare = v; }

  private:
    uint64_t m_va{0};
    uint32_t m_rkey{0};
    uint64_t m_swapAdd{0};
    uint64_t m_compare{0};
};

} // namespace ns3

#endif
