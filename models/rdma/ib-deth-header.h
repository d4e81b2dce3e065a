// Datagram Extended Transport Header, carried by every UD (and RD) packet after the BTH.
// IBA vol. 1 §9.3 (extended transport headers: DETH).
#ifndef CNUAS_IB_DETH_HEADER_H
#define CNUAS_IB_DETH_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief The DETH, serialized byte-exactly (big-endian, IBA vol. 1 §9.3).
 *
 * Layout: bytes 0-3 Q_Key; byte 4 reserved (written as zero, ignored on read); bytes 5-7 SrcQP.
 */
class IbDethHeader : public FixedSizeHeader<IbDethHeader, 8>
{
  public:
        /// Well-known Q_Key of the General Services QP (QP1) (IBA vol. 1 ch. 13, GSI).
    static constexpr uint32_t kGsiQkey = 0x80010000;
    /// Largest value of the 24-bit SrcQP field.
    static constexpr uint32_t kMaxQpn = 0xFFFFFF;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 8 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 8 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint32_t GetQkey() const { return m_qkey; }
    void SetQkey(uint32_t qkey) { m_qkey = qkey; }
    uint32_t GetSrcQp() const { return m_srcQp; }
    void SetSrcQp(uint32_t qpn) { m_srcQp = qpn & kMaxQpn; }

  private:
    uint32_t m_qkey{0};
    uint32_t m_srcQp{0};
};

} // namespace ns3

#endif
