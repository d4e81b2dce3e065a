// The common header every management datagram (MAD) starts with, and the numbers that name
// management classes, methods, status codes and attributes. IBA vol. 1 §13.4 (MAD formats).
#ifndef CNUAS_IB_MAD_HEADER_H
#define CNUAS_IB_MAD_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/// Every MAD is 256 bytes (IBA vol. 1 §13.4.2), carried as the payload of a UD SEND Only packet.
constexpr uint32_t kIbMadBytes = 256;
/// MAD base version of IBA 1.x (§13.4.3, BaseVersion).
constexpr uint8_t kIbMadBaseVersion = 1;

/// Management classes, IBA vol. 1 §13.4.4 (Table 107 "Management Class Values").
namespace IbMgmtClass
{
constexpr uint8_t SubnLid = 0x01;      ///< LID-routed SMP (§14.2.1.1)
constexpr uint8_t SubnAdm = 0x03;      ///< subnet administration (§15.2)
constexpr uint8_t PerfMgt = 0x04;      ///< performance management (§16.1)
constexpr uint8_t BoardMgt = 0x05;
constexpr uint8_t DevMgt = 0x06;
constexpr uint8_t ComMgt = 0x07;
constexpr uint8_t SubnDirected = 0x81; ///< directed-route SMP (§14.2.1.2)
constexpr uint8_t CongestionMgt = 0x21;
} // namespace IbMgmtClass

/// Class versions the agents implement: SMPs and PerfMgt are version 1 (§14.2.1, §16.1.1), SA
/// is version 2 (§15.2.1).
constexpr uint8_t kIbSmpClassVersion = 1;
constexpr uint8_t kIbPerfMgtClassVersion = 1;
constexpr uint8_t kIbSaClassVersion = 2;

/// Methods, IBA vol. 1 §13.4.5 (Table 108); the R bit (0x80) marks a response.
namespace IbMadMethod
{
constexpr uint8_t Get = 0x01;
constexpr uint8_t Set = 0x02;
constexpr uint8_t Send = 0x03;
constexpr uint8_t Trap = 0x05;
constexpr uint8_t Report = 0x06;
constexpr uint8_t TrapRepress = 0x07;
constexpr uint8_t GetTable = 0x12;
constexpr uint8_t Delete = 0x15; ///< SubnAdmDelete, an SA method (IBA vol. 1 §15.2)
constexpr uint8_t GetResp = 0x81;
constexpr uint8_t ReportResp = 0x86;
constexpr uint8_t GetTableResp = 0x92;
constexpr uint8_t DeleteResp = 0x95;
constexpr uint8_t ResponseBit = 0x80;
} // namespace IbMadMethod

/**
 * MAD status, IBA vol. 1 §13.4.7 (Table 110): bit 0 busy, bit 1 redirect, bits 4:2 the
 * invalid-field code; bits 14:8 are class specific and in a directed-route SMP bit 15 is the D
 * (direction) bit (§14.2.1.2), which is why the codes below never touch bit 15.
 */
namespace IbMadStatus
{
constexpr uint16_t Ok = 0x0000;
constexpr uint16_t Busy = 0x0001;
constexpr uint16_t Redirect = 0x0002;
constexpr uint16_t BadVersion = 0x0004;       ///< code 1: base or class version unsupported
constexpr uint16_t UnsupportedMethod = 0x0008; ///< code 2
constexpr uint16_t UnsupportedMethodAttr = 0x000C; ///< code 3: method/attribute combination
constexpr uint16_t InvalidField = 0x001C;      ///< code 7: an attribute or modifier value
constexpr uint16_t DirectionBit = 0x8000;      ///< D bit of a directed-route SMP
} // namespace IbMadStatus

/// Subnet management attribute IDs, IBA vol. 1 §14.2.5 (Table 145).
namespace IbSmAttr
{
constexpr uint16_t Notice = 0x0002;
constexpr uint16_t NodeDescription = 0x0010;
constexpr uint16_t NodeInfo = 0x0011;
constexpr uint16_t SwitchInfo = 0x0012;
constexpr uint16_t GuidInfo = 0x0014;
constexpr uint16_t PortInfo = 0x0015;
constexpr uint16_t PKeyTable = 0x0016;
constexpr uint16_t SlToVlMappingTable = 0x0017;
constexpr uint16_t VlArbitrationTable = 0x0018;
constexpr uint16_t LinearForwardingTable = 0x0019;
constexpr uint16_t RandomForwardingTable = 0x001A;
constexpr uint16_t MulticastForwardingTable = 0x001B;
constexpr uint16_t SmInfo = 0x0020;
constexpr uint16_t VendorDiag = 0x0030;
constexpr uint16_t LedInfo = 0x0031;
} // namespace IbSmAttr

/// Performance management attribute IDs, IBA vol. 1 §16.1.2 (Table 226).
namespace IbPerfAttr
{
constexpr uint16_t ClassPortInfo = 0x0001;
constexpr uint16_t PortSamplesControl = 0x0010;
constexpr uint16_t PortSamplesResult = 0x0011;
constexpr uint16_t PortCounters = 0x0012;
constexpr uint16_t PortCountersExtended = 0x001D;
} // namespace IbPerfAttr

/// Subnet administration attribute IDs, IBA vol. 1 §15.2.5 (Table 185), the ones a subnet
/// manager answers first.
namespace IbSaAttr
{
constexpr uint16_t ClassPortInfo = 0x0001;
constexpr uint16_t Notice = 0x0002;
constexpr uint16_t InformInfo = 0x0003;
constexpr uint16_t NodeRecord = 0x0011;
constexpr uint16_t PortInfoRecord = 0x0012;
constexpr uint16_t SwitchInfoRecord = 0x0014;
constexpr uint16_t LftRecord = 0x0015; ///< LinearForwardingTableRecord
constexpr uint16_t MftRecord = 0x0017; ///< MulticastForwardingTableRecord
constexpr uint16_t SmInfoRecord = 0x0018;
constexpr uint16_t LinkRecord = 0x0020;
constexpr uint16_t GuidInfoRecord = 0x0030;
constexpr uint16_t ServiceRecord = 0x0031;
constexpr uint16_t PKeyTableRecord = 0x0033;
constexpr uint16_t PathRecord = 0x0035;
constexpr uint16_t McMemberRecord = 0x0038;
constexpr uint16_t InformInfoRecord = 0x00F3;
} // namespace IbSaAttr

/// Big-endian 16-bit store/load for MAD fields (every MAD field is sent most significant byte
/// first, IBA vol. 1 §13.4.1).
inline void
IbMadStore16(uint8_t* out, uint16_t v)
{
    out[0] = static_cast<uint8_t>(v >> 8);
    out[1] = static_cast<uint8_t>(v);
}

inline uint16_t
IbMadLoad16(const uint8_t* in)
{
    return static_cast<uint16_t>((in[0] << 8) | in[1]);
}

/**
 * \brief The 24-byte common MAD header, byte-exact (IBA vol. 1 §13.4.3, Figure 145).
 *
 * Layout: byte 0 BaseVersion; 1 MgmtClass; 2 ClassVersion; 3 R bit + Method (the R bit is kept
 * as part of the method byte, so GetResp is 0x81); 4-5 Status; 6-7 ClassSpecific; 8-15
 * TransactionID; 16-17 AttributeID; 18-19 reserved (written 0); 20-23 AttributeModifier.
 */
class IbMadHeader : public FixedSizeHeader<IbMadHeader, 24>
{
  public:
    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);

    uint8_t GetBaseVersion() const { return m_baseVersion; }
    void SetBaseVersion(uint8_t v) { m_baseVersion = v; }
    uint8_t GetMgmtClass() const { return m_mgmtClass; }
    void SetMgmtClass(uint8_t c) { m_mgmtClass = c; }
    uint8_t GetClassVersion() const { return m_classVersion; }
    void SetClassVersion(uint8_t v) { m_classVersion = v; }
    /// The whole method byte, R bit included.
    uint8_t GetMethod() const { return m_method; }
    void SetMethod(uint8_t m) { m_method = m; }
    bool IsResponse() const { return (m_method & IbMadMethod::ResponseBit) != 0; }
    uint16_t GetStatus() const { return m_status; }
    void SetStatus(uint16_t s) { m_status = s; }
    uint16_t GetClassSpecific() const { return m_classSpecific; }
    void SetClassSpecific(uint16_t v) { m_classSpecific = v; }
    uint64_t GetTransactionId() const { return m_tid; }
    void SetTransactionId(uint64_t tid) { m_tid = tid; }
    uint16_t GetAttributeId() const { return m_attrId; }
    void SetAttributeId(uint16_t id) { m_attrId = id; }
    uint32_t GetAttributeModifier() const { return m_attrMod; }
    void SetAttributeModifier(uint32_t m) { m_attrMod = m; }

  private:
    uint8_t m_baseVersion{kIbMadBaseVersion};
    uint8_t m_mgmtClass{0};
    uint8_t m_classVersion{1};
    uint8_t m_method{0};
    uint16_t m_status{0};
    uint16_t m_classSpecific{0};
    uint64_t m_tid{0};
    uint16_t m_attrId{0};
    uint32_t m_attrMod{0};
};

} // namespace ns3

#endif
