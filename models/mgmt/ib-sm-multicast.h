// The multicast groups of the built-in SM: ports join and leave them through the SA's
// MCMemberRecord (IBA vol. 1 §15.2.5.17), each group gets an MLID, and a spanning tree over the
// switches becomes their MulticastForwardingTable entries (§14.2.5.12). Plain data, no ns-3
// objects: the SM owns one and programs what ComputeMfts says with SMPs.
#ifndef CNUAS_IB_SM_MULTICAST_H
#define CNUAS_IB_SM_MULTICAST_H

#include "ib-sa-records.h"
#include "ib-sm-subnet.h"

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

namespace ns3
{

/// A 16-byte GID (a multicast group's MGID or a port's GID), most significant byte first.
using IbGid = std::array<uint8_t, 16>;

/// One port's membership of a group.
struct IbMcMember
{
    IbGid portGid{};
    uint8_t joinState = 0; ///< the JoinState bits of every join not yet left (ORed)
    bool proxyJoin = false;
};

/// A multicast group: its parameters as the SA reports them (MGID, MLID, Q_Key, MTU, TClass,
/// P_Key, rate, packet lifetime, SL, FlowLabel, HopLimit, Scope; PortGID and JoinState zero) and
/// its members by port GUID.
struct IbMcGroup
{
    IbMcMemberRecord record;
    std::map<uint64_t, IbMcMember> members;
    /// Made by the SM itself (AddWellKnown), not by a join: kept when its last member leaves,
    /// as opensm keeps the groups its partition policy makes.
    bool wellKnown = false;
};

/// One MFT entry: 16 PortMask positions, bit j of position p is port 16p + j (§14.2.5.12).
using IbMftEntry = std::array<uint16_t, 16>;
/// The MFT entries each switch needs, by switch node index: entry i is MLID 0xC000 + i (as far
/// as the highest MLID the switch forwards).
using IbMftTables = std::map<int32_t, std::vector<IbMftEntry>>;

/**
 * \brief The multicast groups and their membership, as the SA's joins and leaves made them.
 *
 * Join (SubnAdmSet) and Leave (SubnAdmDelete) follow IBA vol. 1 §15.2.5.17 and what opensm's
 * osm_sa_mcmember_record.c does with them:
 * - both need the MGID, PortGID and JoinState components (else ERR_REQ_INSUFFICIENT_COMPONENTS);
 *   a PortGID whose prefix is not the subnet's gets ERR_REQ_INVALID_GID, one whose port the
 *   last sweep did not find ERR_REQ_INVALID; an MTU or Rate component with no valid code
 *   ERR_REQ_INVALID.
 * - A join to an MGID no group has creates the group: only a full member may (JoinState bit 0,
 *   else ERR_REQ_INVALID), and it must give Q_Key, TClass, P_Key, FlowLabel and SL besides
 *   (else ERR_REQ_INSUFFICIENT_COMPONENTS). An all-zero MGID asks the SA for one:
 *   ff1<scope>:a01b:<subnet prefix>:<counter> (opensm's SA-assigned signature 0xA01B; link-local
 *   scope unless a Scope component says otherwise). A given MGID must start with 0xFF, leave
 *   the three reserved flag bits zero and not use the SA's signature with link-local scope.
 *   MTU and rate: the selector's choice against the joining port's (or the port's own, without
 *   the components); the group's record then says "exactly". The MLID is the one asked for if
 *   it is free, else the lowest free one from 0xC000 (ERR_NO_RESOURCES when none is).
 * - A join to an existing group must agree with it on every component it gives (Q_Key, P_Key
 *   base, TClass, SL, FlowLabel, HopLimit exactly; MTU and Rate through their selectors), and
 *   the port must carry the group's MTU and rate; else ERR_REQ_INVALID. The port's JoinState
 *   becomes the OR of its joins.
 * - A leave names a group and a member (else ERR_REQ_INVALID) and JoinState bits the member
 *   has (at least one, and no other; else ERR_REQ_INVALID); they are cleared, a member with none
 *   left leaves, and a group with no member left is deleted (its MLID free again).
 * The requester's own identity is not checked (o15-0.2.1's rule that only the port itself, or
 * a proxy in its partition, may change its membership): the SA is not told who asked.
 */
class IbSmMulticast
{
  public:
    static constexpr uint16_t kFirstMlid = 0xC000;
    /// MLIDs there are when no switch says otherwise (MulticastFDBCap of Cnuas's switches).
    static constexpr uint16_t kDefaultMlidCount = 0x1000;

    /// MLIDs the SA hands out: 0xC000 .. 0xC000 + count - 1 (the smallest MulticastFDBCap of
    /// the switches, so that every switch can hold every group). Groups already made keep theirs.
    void SetMlidCount(uint16_t count) { m_mlidCount = count; }
    uint16_t GetMlidCount() const { return m_mlidCount; }

    /**
     * Makes a group no port has joined, as opensm makes the IPv4 broadcast group of every
     * partition its policy marks `ipoib` when it starts (osm_prtn_config.c): `group` gives every
     * parameter; its MLID is taken if free, else the lowest free one. The group stays when its
     * last member leaves. Returns the MLID (0: the MGID has a group already, or no MLID is free).
     */
    uint16_t AddWellKnown(const IbMcMemberRecord& group);

    /// SubnAdmSet(MCMemberRecord): returns the SA status (0: joined) and, if 0, the record to
    /// answer with (the group's parameters, the PortGID and the member's JoinState).
    uint16_t Join(const IbSmSubnet& subnet,
                  const IbMcMemberRecord& request,
                  uint64_t mask,
                  IbMcMemberRecord& answer);
    /// SubnAdmDelete(MCMemberRecord): returns the SA status (0: left) and, if 0, the record to
    /// answer with (the group's parameters, the PortGID and the JoinState bits still held). A
    /// group left empty is deleted unless it is well known.
    uint16_t Leave(const IbMcMemberRecord& request, uint64_t mask, IbMcMemberRecord& answer);
    /**
     * SubnAdmGet/GetTable(MCMemberRecord), as opensm answers them: every group the components
     * select (MGID, MLID, Q_Key, P_Key base, TClass, SL, FlowLabel, HopLimit exactly; MTU and
     * Rate through their selectors; ProxyJoin; packet lifetime ignored). With a PortGID, the
     * group must have that member and the record is its; a trusted requester (one that showed
     * the SM_Key) without a PortGID gets a record per member, anyone else one per group. Scope
     * and JoinState components filter on the record's. For an untrusted requester the PortGID,
     * JoinState and ProxyJoin read 0 (§15.2.5.17).
     */
    void Query(const IbMcMemberRecord& query,
               uint64_t mask,
               bool trusted,
               std::vector<IbMcMemberRecord>& out) const;
    /// After a sweep: members whose port the subnet no longer has leave (and groups left empty
    /// are deleted), as opensm drops the ports that disappear. True if anything changed.
    bool DropAbsentPorts(const IbSmSubnet& subnet);

    const std::map<IbGid, IbMcGroup>& Groups() const { return m_groups; }
    /// The group with this MLID, null if none.
    const IbMcGroup* FindByMlid(uint16_t mlid) const;
    /// Counts membership changes (joins that changed a member's JoinState, leaves, deletions):
    /// a caller that saw it change knows the trees may have.
    uint64_t GetChanges() const { return m_changes; }

    /**
     * The MFT entries of every group's tree: for each group, the switches its members' ports
     * are cabled to (a member switch's own port 0 included) are joined by a tree of switch-to-
     * switch links, the paths of a breadth-first shortest-path tree from the root switch that
     * is closest to the farthest member switch (ties: the smaller total distance, then the
     * lower node index), pruned to the branches that lead to members. A switch's entry holds
     * its tree links (to the parent and to the children) and its ports to members. A switch
     * forwards a multicast packet to every port of the entry but the one it came in by
     * (§18.2.4.3), so a packet that enters at any member's switch reaches every other member
     * once, and no loop. Members whose switch the root cannot reach are left out. Every switch of the
     * subnet has its table (empty if no group crosses it).
     */
    IbMftTables ComputeMfts(const IbSmSubnet& subnet) const;

  private:
    /// Whether `mask` gives an MTU or Rate component with a code that names none.
    static bool BadMtuOrRate(const IbMcMemberRecord& r, uint64_t mask);
    /// Whether a request's components agree with `group` (the checks of a join to it and of a
    /// query): Q_Key, P_Key, TClass, SL, FlowLabel, HopLimit, then MTU and Rate selectors.
    static bool Agrees(const IbMcMemberRecord& request,
                       uint64_t mask,
                       const IbMcMemberRecord& group);
    /// Removes a group and frees its MLID.
    void Delete(std::map<IbGid, IbMcGroup>::iterator it);
    /// The lowest free MLID (0 if none), or `wanted` if it is a free MLID.
    uint16_t FreeMlid(uint16_t wanted) const;
    /// A new SA-assigned MGID with `scope` (all zeros if none is left).
    IbGid NewMgid(uint8_t scope);

    /// How a breadth-first tree from one switch reaches another (ComputeMfts).
    struct Reach
    {
        uint32_t hops = std::numeric_limits<uint32_t>::max();
        int32_t parent = -1;
        uint8_t parentPort = 0;
        uint8_t ownPort = 0;
    };
    /// ComputeMfts's trees from every switch, kept while the switch graph (m_reachKey, its
    /// fingerprint) is the same.
    mutable std::vector<std::vector<Reach>> m_reach;
    mutable uint64_t m_reachKey = 0;

    std::map<IbGid, IbMcGroup> m_groups;
    std::map<uint16_t, IbGid> m_mgidByMlid;
    uint16_t m_mlidCount = kDefaultMlidCount;
    uint32_t m_mgidCounter = 0;
    uint64_t m_changes = 0;
};

} // namespace ns3

#endif
