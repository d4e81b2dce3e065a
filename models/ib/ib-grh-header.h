// Global Route Header, the 40-byte network-layer header of routed (LNH = 3) InfiniBand packets.
// IBA vol. 1 §8.3 (Global Route Header).
#ifndef CNUAS_IB_GRH_HEADER_H
#define CNUAS_IB_GRH_HEADER_H

#include "ib-gid.h"

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief The GRH, serialized byte-exactly (big-endian, IBA vol. 1 §8.3).
 *
 * Layout: bytes 0-3 IPVer[31:28] TClass[27:20] FlowLabel[19:0]; bytes 4-5 PayLen;
 * byte 6 NxtHdr; byte 7 HopLmt; bytes 8-23 SGID; bytes 24-39 DGID. The layout is that of an
 * IPv6 header on purpose (IBA vol. 1 §8.3), which is why RoCEv1 can reuse it unchanged.
 * PayLen counts the bytes after the GRH up to and including the ICRC (the VCRC excluded),
 * IBA vol. 1 §8.3.
 */
class IbGrhHeader : public FixedSizeHeader<IbGrhHeader, 40>
{
  public:
        /// IPVer of a GRH, IBA vol. 1 §8.3: 6, as in IPv6.
    static constexpr uint8_t kIpVer = 6;
    /// NxtHdr for an IBA transport header (BTH), IBA vol. 1 §8.3.
    static constexpr uint8_t kNxtHdrIba = 0x1B;
    /// Largest FlowLabel the 20-bit field holds.
    static constexpr uint32_t kMaxFlowLabel = 0xFFFFF;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 40 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 40 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint8_t GetIpVer() const { return m_ipVer; }
    void SetIpVer(uint8_t v) { m_ipVer = v & 0x0F; }
    uint8_t GetTClass() const { return m_tClass; }
    void SetTClass(uint8_t tc) { m_tClass = tc; }
    uint32_t GetFlowLabel() const { return m_flowLabel; }
    void SetFlowLabel(uint32_t fl) { m_flowLabel = fl & kMaxFlowLabel; }
    uint16_t GetPayLen() const { return m_payLen; }
    void SetPayLen(uint16_t bytes) { m_payLen = bytes; }
    uint8_t GetNxtHdr() const { return m_nxtHdr; }
    void SetNxtHdr(uint8_t nh) { m_nxtHdr = nh; }
    uint8_t GetHopLmt() const { return m_hopLmt; }
    void SetHopLmt(uint8_t h) { m_hopLmt = h; }
    const IbGid& GetSgid() const { return m_sgid; }
    void SetSgid(const IbGid& gid) { m_sgid = gid; }
    const IbGid& GetDgid() const { return m_dgid; }
    void SetDgid(const IbGid& gid) { m_dgid = gid; }

  private:
    uint8_t m_ipVer{kIpVer};
    uint8_t m_tClass{0};
    uint32_t m_flowLabel{0};
    uint16_t m_payLen{0};
    uint8_t m_nxtHdr{kNxtHdrIba};
    uint8_t m_hopLmt{0};
    IbGid m_sgid{};
    IbGid m_dgid{};
};

} // namespace ns3

#endif
