// Base Transport Header, the 12-byte header every IBA transport packet carries (InfiniBand after
// the LRH/GRH, RoCEv2 after the UDP header). IBA vol. 1 §9.2 (Base Transport Header).
#ifndef CNUAS_IB_BTH_HEADER_H
#define CNUAS_IB_BTH_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief The BTH, serialized byte-exactly (big-endian, IBA vol. 1 §9.2).
 *
 * Layout: byte 0 OpCode; byte 1 SE[7] M[6] PadCnt[5:4] TVer[3:0]; bytes 2-3 P_Key;
 * byte 4 Resv8a; bytes 5-7 DestQP; byte 8 AckReq[7] + 7 reserved bits; bytes 9-11 PSN.
 *
 * Resv8a is reserved in the base spec but the Congestion Control annex (IBA vol. 1 annex A10)
 * gives its top bits meaning: FECN 0x80 and BECN 0x40. Because switches may set them in flight,
 * the byte is masked out of the ICRC (IBA vol. 1 §7.8.1). The 7 reserved bits after AckReq are
 * written as zero and ignored on read.
 */
class IbBthHeader : public FixedSizeHeader<IbBthHeader, 12>
{
  public:
        /// Transport header version of this spec level, IBA vol. 1 §9.2: 0.
    static constexpr uint8_t kTver = 0;
    /// Default partition key: the default partition, full membership (IBA vol. 1 ch. 10).
    static constexpr uint16_t kDefaultPkey = 0xFFFF;
    /// Resv8a bit of Forward Explicit Congestion Notification (annex A10).
    static constexpr uint8_t kFecnBit = 0x80;
    /// Resv8a bit of Backward Explicit Congestion Notification (annex A10).
    static constexpr uint8_t kBecnBit = 0x40;
    /// Largest value of the 24-bit DestQP and PSN fields.
    static constexpr uint32_t kMax24 = 0xFFFFFF;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 12 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 12 raw bytes.
    void ReadFrom(const uint8_t* in);

    uint8_t GetOpCode() const { return m_opCode; }
    void SetOpCode(uint8_t op) { m_opCode = op; }
    bool GetSe() const { return m_se; }
    void SetSe(bool se) { m_se = se; }
    bool GetMigReq() const { return m_migReq; }
    void SetMigReq(bool m) { m_migReq = m; }
    uint8_t GetPadCnt() const { return m_padCnt; }
    void SetPadCnt(uint8_t pad) { m_padCnt = pad & 0x03; }
    uint8_t GetTver() const { return m_tver; }
    void SetTver(uint8_t v) { m_tver = v & 0x0F; }
    uint16_t GetPkey() const { return m_pkey; }
    void SetPkey(uint16_t pkey) { m_pkey = pkey; }
    /// The whole Resv8a byte (FECN/BECN and the six bits still reserved).
    uint8_t GetResv8a() const { return m_resv8a; }
    void SetResv8a(uint8_t v) { m_resv8a = v; }
    bool GetFecn() const { return (m_resv8a & kFecnBit) != 0; }
    void SetFecn(bool on) { m_resv8a = on ? (m_resv8a | kFecnBit) : (m_resv8a & ~kFecnBit); }
    bool GetBecn() const { return (m_resv8a & kBecnBit) != 0; }
    void SetBecn(bool on) { m_resv8a = on ? (m_resv8a | kBecnBit) : (m_resv8a & ~kBecnBit); }
    uint32_t GetDestQp() const { return m_destQp; }
    void SetDestQp(uint32_t qpn) { m_destQp = qpn & kMax24; }
    bool GetAckReq() const { return m_ackReq; }
    void SetAckReq(bool a) { m_ackReq = a; }
    uint32_t GetPsn() const { return m_psn; }
    void SetPsn(uint32_t psn) { m_psn = psn & kMax24; }

  private:
    uint8_t m_opCode{0};
    bool m_se{false};
    bool m_migReq{false};
    uint8_t m_padCnt{0};
    uint8_t m_tver{kTver};
    uint16_t m_pkey{kDefaultPkey};
    uint8_t m_resv8a{0};
    uint32_t m_destQp{0};
    bool m_ackReq{false};
    uint32_t m_psn{0};
};

} // namespace ns3

#endif
