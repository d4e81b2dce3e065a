// The subnet manager's partition policy: opensm's partitions.conf, read by the built-in SM,
// which writes each channel adapter port's P_Key table from it (IBA vol. 1 §10.9, §14.2.5.7).
#ifndef CNUAS_IB_SM_PARTITIONS_H
#define CNUAS_IB_SM_PARTITIONS_H

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/// A port's membership of a partition (IBA vol. 1 §10.9.1.2: bit 15 of the P_Key is full).
enum class IbPartitionMembership : uint8_t
{
    Limited,
    Full,
    Both, ///< two entries: the limited and the full P_Key
};

/// Who a partition's member line names (opensm's partitions.conf keywords, or a port GUID).
struct IbPartitionMember
{
    enum class Kind : uint8_t
    {
        All,         ///< every port
        AllCas,      ///< every channel adapter port
        AllSwitches, ///< every switch (port 0)
        AllRouters,  ///< every router (none in Cnuas's fabrics)
        Self,        ///< the SM's own port
        Guid,        ///< the port with this GUID
    };
    Kind kind = Kind::Guid;
    uint64_t guid = 0;
    IbPartitionMembership membership = IbPartitionMembership::Limited;
};

struct IbPartition
{
    std::string name;
    uint16_t pkey = 0; ///< the 15-bit key, 0x0001-0x7FFF
    bool ipoib = false;
    std::vector<IbPartitionMember> members;
};

/**
 * \brief Partitions as opensm's partitions.conf states them (its man page's grammar):
 *
 *     # comment
 *     Name=PKey[,flag[=value]]... : member[=full|limited|both], ... ;
 *
 * one definition per `;` (it may span lines). Flags: `ipoib`, `defmember=full|limited|both`
 * (the membership of members that name none; default limited), `indx0`, and the IPoIB
 * broadcast group's `rate=`, `mtu=`, `sl=`, `scope=`, `Q_Key=`, `TClass=` (accepted; the
 * built-in SM's group keeps its own parameters). Members: `ALL`, `ALL_CAS`, `ALL_SWITCHES`,
 * `ALL_ROUTERS`, `SELF`, or a port GUID. The default partition (`Default=0x7fff`) must be
 * defined. Anything else is an error naming the line, not a guess.
 */
class IbPartitionPolicy
{
  public:
    /// Parses `text`; on a fault returns false with *error "line N: what", the policy empty.
    bool Parse(const std::string& text, std::string* error);
    /// Reads and parses the file at `path`; on a fault returns false with *error "PATH: what"
    /// ("cannot be read", or Parse's "line N: ..."), the policy empty.
    bool ReadFile(const std::string& path, std::string* error);
    bool Empty() const
    {
        return m_partitions.empty();
    }
    const std::vector<IbPartition>& Partitions() const
    {
        return m_partitions;
    }
    /**
     * The P_Key table of a channel adapter port with GUID `portGuid` (`isSmPort`: the SM's
     * own): the default partition's key first (entry 0, §10.9.1.2), then the others in the
     * order they are defined, bit 15 set for a full membership; a port in no partition gets
     * an empty table (every entry 0: it can talk to nobody).
     */
    std::vector<uint16_t> CaPortPkeys(uint64_t portGuid, bool isSmPort) const;
    /// CaPortPkeys as P_KeyTable blocks of 32 entries (IBA vol. 1 §14.2.5.7), the rest of the
    /// last one 0: what an SM writes into the port and its SA reports. At least block 0, so
    /// that a port in no partition has its default entry cleared too.
    std::vector<std::array<uint16_t, 32>> CaPortPkeyBlocks(uint64_t portGuid, bool isSmPort) const;

  private:
    std::vector<IbPartition> m_partitions;
};

} // namespace ns3

#endif
