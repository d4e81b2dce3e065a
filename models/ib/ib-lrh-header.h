// Local Route Header, the 8-byte link-layer header every InfiniBand packet starts with.
// IBA vol. 1 §7.7 (Local Route Header).
#ifndef CNUAS_IB_LRH_HEADER_H
#define CNUAS_IB_LRH_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/// Link Next Header (LNH), IBA vol. 1 §7.7.3: what follows the LRH.
enum class IbLnh : uint8_t
{
    Raw = 0,       ///< raw packet, no IBA transport
    IpNonIba = 1,  ///< IPv6 raw (non-IBA transport)
    IbaLocal = 2,  ///< BTH follows: a packet local to the subnet
    IbaGlobal = 3, ///< GRH follows: a routed (global) packet
};

/**
 * \brief The LRH, serialized byte-exactly (big-endian, IBA vol. 1 §7.7).
 *
 * Layout: byte 0 VL[7:4] LVer[3:0]; byte 1 SL[7:4] rsv[3:2] LNH[1:0]; bytes 2-3 DLID;
 * bytes 4-5 five reserved bits + PktLen (11 bits); bytes 6-7 SLID.
 * PktLen counts 4-byte words from the first LRH byte through the ICRC (the VCRC excluded),
 * IBA vol. 1 §7.7.8.
 */
class IbLrhHeader : public FixedSizeHeader<IbLrhHeader, 8>
{
  public:
        /// Permissive LID, IBA vol. 1 §4.1.3: accepted by any port, used by directed-route SMPs.
    static constexpr uint16_t kPermissiveLid = 0xFFFF;
    /// Largest PktLen the 11-bit field holds (words).
    static constexpr uint16_t kMaxPktLenWords = 0x7FF;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 8 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 8 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint8_t GetVl() const { return m_vl; }
    void SetVl(uint8_t vl) { m_vl = vl & 0x0F; }
    uint8_t GetLver() const { return m_lver; }
    void SetLver(uint8_t v) { m_lver = v & 0x0F; }
    uint8_t GetSl() const { return m_sl; }
    void SetSl(uint8_t sl) { m_sl = sl & 0x0F; }
    IbLnh GetLnh() const { return m_lnh; }
    void SetLnh(IbLnh lnh) { m_lnh = lnh; }
    uint16_t GetDlid() const { return m_dlid; }
    void SetDlid(uint16_t lid) { m_dlid = lid; }
    uint16_t GetPktLenWords() const { return m_pktLen; }
    void SetPktLenWords(uint16_t words) { m_pktLen = words & kMaxPktLenWords; }
    uint16_t GetSlid() const { return m_slid; }
    void SetSlid(uint16_t lid) { m_slid = lid; }

  private:
    uint8_t m_vl{0};
    uint8_t m_lver{0};
    uint8_t m_sl{0};
    IbLnh m_lnh{IbLnh::IbaLocal};
    uint16_t m_dlid{0};
    uint16_t m_pktLen{0};
    uint16_t m_slid{0};
};

} // namespace ns3

#endif
