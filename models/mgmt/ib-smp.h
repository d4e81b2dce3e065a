// Subnet management packets: the 256-byte MAD of the subnet management classes, in its
// LID-routed and directed-route layouts. IBA vol. 1 §14.2.1.
#ifndef CNUAS_IB_SMP_H
#define CNUAS_IB_SMP_H

#include "ib-mad-header.h"

#include <array>
#include <cstdint>

namespace ns3
{

/**
 * \brief A subnet management packet, byte-exact (IBA vol. 1 §14.2.1).
 *
 * LID-routed (MgmtClass 0x01, §14.2.1.1, Figure 164): common header (24), M_Key (8, byte 24),
 * reserved (32, bytes 32-63), SMP data (64, bytes 64-127), reserved (128, bytes 128-255).
 *
 * Directed route (MgmtClass 0x81, §14.2.1.2, Figure 165): the common header's Status field is D
 * bit (bit 15) + 15-bit status, its ClassSpecific field is HopPointer (byte 6) and HopCount
 * (byte 7); then M_Key (8, byte 24), DrSLID (2, byte 32), DrDLID (2, byte 34), reserved (28,
 * bytes 36-63), SMP data (64, bytes 64-127), InitialPath (64, bytes 128-191) and ReturnPath (64,
 * bytes 192-255). Path entry i is a port number; entry 0 is unused (§14.2.2.1).
 *
 * Which layout is written follows the MgmtClass: only 0x81 carries the directed-route fields;
 * in a LID-routed SMP they are written as the reserved zeros and ignored on read.
 */
class IbSmp : public FixedSizeHeader<IbSmp, kIbMadBytes>
{
  public:
    static constexpr uint32_t kDataBytes = 64;
    static constexpr uint32_t kDataOffset = 64;
    /// Largest hop count a directed route can have: the path arrays have 64 entries and entry 0
    /// is not used (§14.2.1.2).
    static constexpr uint8_t kMaxHops = 63;

    /// Where the directed-route fields sit in the 256 bytes (§14.2.1.2, Figure 165).
    static constexpr uint32_t kStatusOffset = 4; ///< D bit: the top bit of this byte
    static constexpr uint32_t kHopPointerOffset = 6;
    static constexpr uint32_t kHopCountOffset = 7;
    static constexpr uint32_t kInitialPathOffset = 128;
    static constexpr uint32_t kReturnPathOffset = 192;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
    /**
     * Rewrites the 256 bytes at `mad` as WriteTo would write what ReadFrom reads from them: the
     * reserved fields become zeros (the common header's bytes 18-19; bytes 36-63 of a
     * directed-route SMP, bytes 32-63 and 128-255 of a LID-routed one). An SMI that forwards
     * an SMP's bytes in place uses it to send what forwarding an IbSmp would send.
     */
    static void Canonicalize(uint8_t* mad);

    IbMadHeader& Mad() { return m_mad; }
    const IbMadHeader& Mad() const { return m_mad; }
    bool IsDirectedRoute() const { return m_mad.GetMgmtClass() == IbMgmtClass::SubnDirected; }

    /// A directed-route SMP ready to go: class 0x81, version 1, hop pointer 0, DrSLID and DrDLID
    /// permissive (the whole path is directed, §14.2.2.1), `path[0..hops-1]` as InitialPath[1..].
    static IbSmp MakeDirected(uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t tid,
                              const uint8_t* path, uint8_t hops);
    /// A LID-routed SMP (class 0x01, version 1).
    static IbSmp MakeLidRouted(uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t tid);

    uint64_t GetMKey() const { return m_mKey; }
    void SetMKey(uint64_t k) { m_mKey = k; }

    // ---- directed-route fields (meaningful when IsDirectedRoute()) ----
    /// D bit: 0 on the way out, 1 on the way back (§14.2.1.2).
    bool GetDirection() const { return (m_mad.GetStatus() & IbMadStatus::DirectionBit) != 0; }
    void SetDirection(bool returning);
    /// The 15-bit status of a directed-route SMP, or the 16-bit one of a LID-routed SMP.
    uint16_t GetSmpStatus() const;
    void SetSmpStatus(uint16_t status);
    uint8_t GetHopPointer() const { return static_cast<uint8_t>(m_mad.GetClassSpecific() >> 8); }
    void SetHopPointer(uint8_t p);
    uint8_t GetHopCount() const { return static_cast<uint8_t>(m_mad.GetClassSpecific() & 0xFF); }
    void SetHopCount(uint8_t n);
    uint16_t GetDrSlid() const { return m_drSlid; }
    void SetDrSlid(uint16_t lid) { m_drSlid = lid; }
    uint16_t GetDrDlid() const { return m_drDlid; }
    void SetDrDlid(uint16_t lid) { m_drDlid = lid; }
    std::array<uint8_t, 64>& InitialPath() { return m_initialPath; }
    const std::array<uint8_t, 64>& InitialPath() const { return m_initialPath; }
    std::array<uint8_t, 64>& ReturnPath() { return m_returnPath; }
    const std::array<uint8_t, 64>& ReturnPath() const { return m_returnPath; }

    /// The 64-byte SMP data field, where the attribute goes.
    uint8_t* Data() { return m_data.data(); }
    const uint8_t* Data() const { return m_data.data(); }

  private:
    IbMadHeader m_mad;
    uint64_t m_mKey{0};
    uint16_t m_drSlid{0};
    uint16_t m_drDlid{0};
    std::array<uint8_t, 64> m_data{};
    std::array<uint8_t, 64> m_initialPath{};
    std::array<uint8_t, 64> m_returnPath{};
};

} // namespace ns3

#endif
