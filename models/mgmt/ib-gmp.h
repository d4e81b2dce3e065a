// General management packets (GMPs, sent to QP1): the 256-byte layouts of the performance
// management class (IBA vol. 1 §16.1.1) and of subnet administration (§15.2.1.1).
#ifndef CNUAS_IB_GMP_H
#define CNUAS_IB_GMP_H

#include "ib-mad-header.h"

#include <array>
#include <cstdint>

namespace ns3
{

/**
 * \brief A performance management MAD, byte-exact (IBA vol. 1 §16.1.1, Figure 199): common
 * header (24), reserved (40, bytes 24-63, written 0), data (192, bytes 64-255).
 */
class IbPerfMgtMad : public FixedSizeHeader<IbPerfMgtMad, kIbMadBytes>
{
  public:
    static constexpr uint32_t kDataOffset = 64;
    static constexpr uint32_t kDataBytes = 192;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);

    /// A PerfMgt request (class 0x04, version 1).
    static IbPerfMgtMad Make(uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t tid);

    IbMadHeader& Mad() { return m_mad; }
    const IbMadHeader& Mad() const { return m_mad; }
    uint8_t* Data() { return m_data.data(); }
    const uint8_t* Data() const { return m_data.data(); }

  private:
    IbMadHeader m_mad;
    std::array<uint8_t, kDataBytes> m_data{};
};

/**
 * \brief A subnet administration MAD, byte-exact (IBA vol. 1 §15.2.1.1, Figure 176): common
 * header (24); RMPP header (12: RMPPVersion, RMPPType, RRespTime(5)|RMPPFlags(3), RMPPStatus,
 * Data1, Data2; §13.6.2.1); SM_Key (8, byte 36); AttributeOffset (2, byte 44, in 8-byte words);
 * reserved (2); ComponentMask (8, byte 48); SA data (200, bytes 56-255).
 */
class IbSaMad : public FixedSizeHeader<IbSaMad, kIbMadBytes>
{
  public:
    static constexpr uint32_t kDataOffset = 56;
    static constexpr uint32_t kDataBytes = 200;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);

    /// An SA request (class 0x03, version 2), no RMPP.
    static IbSaMad Make(uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t tid);

    IbMadHeader& Mad() { return m_mad; }
    const IbMadHeader& Mad() const { return m_mad; }
    uint8_t GetRmppVersion() const { return m_rmppVersion; }
    void SetRmppVersion(uint8_t v) { m_rmppVersion = v; }
    uint8_t GetRmppType() const { return m_rmppType; }
    void SetRmppType(uint8_t t) { m_rmppType = t; }
    /// RRespTime (5 bits) and RMPPFlags (3 bits) as the one byte they share.
    uint8_t GetRmppTimeFlags() const { return m_rmppTimeFlags; }
    void SetRmppTimeFlags(uint8_t v) { m_rmppTimeFlags = v; }
    uint8_t GetRmppStatus() const { return m_rmppStatus; }
    void SetRmppStatus(uint8_t s) { m_rmppStatus = s; }
    uint32_t GetRmppData1() const { return m_rmppData1; }
    void SetRmppData1(uint32_t v) { m_rmppData1 = v; }
    uint32_t GetRmppData2() const { return m_rmppData2; }
    void SetRmppData2(uint32_t v) { m_rmppData2 = v; }
    uint64_t GetSmKey() const { return m_smKey; }
    void SetSmKey(uint64_t k) { m_smKey = k; }
    uint16_t GetAttributeOffset() const { return m_attrOffset; }
    void SetAttributeOffset(uint16_t words) { m_attrOffset = words; }
    uint64_t GetComponentMask() const { return m_componentMask; }
    void SetComponentMask(uint64_t m) { m_componentMask = m; }
    uint8_t* Data() { return m_data.data(); }
    const uint8_t* Data() const { return m_data.data(); }

  private:
    IbMadHeader m_mad;
    uint8_t m_rmppVersion{0};
    uint8_t m_rmppType{0};
    uint8_t m_rmppTimeFlags{0};
    uint8_t m_rmppStatus{0};
    uint32_t m_rmppData1{0};
    uint32_t m_rmppData2{0};
    uint64_t m_smKey{0};
    uint16_t m_attrOffset{0};
    uint64_t m_componentMask{0};
    std::array<uint8_t, kDataBytes> m_data{};
};

} // namespace ns3

#endif
