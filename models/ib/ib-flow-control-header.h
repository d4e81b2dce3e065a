// Link flow-control packet: the 6-byte link packet that carries per-VL credits between the two
// ends of a link. IBA vol. 1 §7.9.4 (flow control packet format).
#ifndef CNUAS_IB_FLOW_CONTROL_HEADER_H
#define CNUAS_IB_FLOW_CONTROL_HEADER_H

#include "models/common/fixed-size-header.h"

#include <cstdint>

namespace ns3
{

/// Op field of a flow-control packet, IBA vol. 1 §7.9.4. Values 2-15 are reserved.
enum class IbFlowControlOp : uint8_t
{
    Normal = 0, ///< periodic / on-change credit update
    Init = 1,   ///< sent while the link is initializing (resets the receiver's ABR)
};

/**
 * \brief A link flow-control packet, serialized byte-exactly (big-endian, IBA vol. 1 §7.9.4).
 *
 * Layout: bytes 0-1 Op[15:12] FCTBS[11:0]; bytes 2-3 VL[15:12] FCCL[11:0]; bytes 4-5 LPCRC.
 * FCTBS (flow control total blocks sent) and FCCL (flow control credit limit) count 64-byte
 * blocks modulo 4096 (IBA vol. 1 §7.9). The LPCRC is the VCRC's CRC-16 over bytes 0-3,
 * stored in the same byte order as the VCRC (little-endian, see ib-crc.h).
 *
 * WriteTo()/Serialize() always compute the LPCRC; ReadFrom()/Deserialize() keep the received
 * one so that IsLpcrcValid() can tell a corrupted packet.
 */
class IbFlowControlHeader : public FixedSizeHeader<IbFlowControlHeader, 6>
{
  public:
        /// Modulus of FCTBS and FCCL (12-bit fields).
    static constexpr uint16_t kBlockModulus = 4096;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 6 raw bytes, computing the LPCRC.
    void WriteTo(uint8_t* out) const;
    /// Parse 6 raw bytes; the received LPCRC is kept (GetLpcrc, IsLpcrcValid).
    void ReadFrom(const uint8_t* in);

    /// The Op field as an enum (reserved values come back as their numeric value).
    IbFlowControlOp GetOp() const { return static_cast<IbFlowControlOp>(m_op); }
    void SetOp(IbFlowControlOp op) { m_op = static_cast<uint8_t>(op) & 0x0F; }
    /// The raw 4-bit Op field.
    uint8_t GetOpRaw() const { return m_op; }
    uint16_t GetFctbs() const { return m_fctbs; }
    void SetFctbs(uint16_t blocks) { m_fctbs = blocks % kBlockModulus; }
    uint8_t GetVl() const { return m_vl; }
    void SetVl(uint8_t vl) { m_vl = vl & 0x0F; }
    uint16_t GetFccl() const { return m_fccl; }
    void SetFccl(uint16_t blocks) { m_fccl = blocks % kBlockModulus; }

    /// The LPCRC last read by ReadFrom/Deserialize (0 for a header built by setters).
    uint16_t GetLpcrc() const { return m_lpcrc; }
    /// The LPCRC of the current field values (what WriteTo writes).
    uint16_t ComputeLpcrc() const;
    /// Whether the LPCRC last read matches the fields read with it.
    bool IsLpcrcValid() const { return m_lpcrc == ComputeLpcrc(); }

  private:
    /// Bytes 0-3 (everything the LPCRC covers).
    void WriteFields(uint8_t* out) const;

    uint8_t m_op{0};
    uint16_t m_fctbs{0};
    uint8_t m_vl{0};
    uint16_t m_fccl{0};
    uint16_t m_lpcrc{0};
};

} // namespace ns3

#endif
