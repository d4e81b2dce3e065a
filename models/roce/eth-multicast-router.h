// The multicast routing of an Ethernet fabric: the trees that IGMP snooping and PIM would have
// converged on, computed from the groups' members and written into the switches' multicast
// routes.
#ifndef CNUAS_ETH_MULTICAST_ROUTER_H
#define CNUAS_ETH_MULTICAST_ROUTER_H

#include "eth-frame.h"
#include "eth-net-device.h"
#include "eth-switch.h"

#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <map>
#include <vector>

namespace ns3
{

/**
 * \brief Keeps each multicast group's members (host ports) and programs the group's tree into
 * the switches (EthSwitch::SetMulticastRoute), standing for IGMP (RFC 3376) / MLD (RFC 3810)
 * and PIM having converged: no such packets are modelled, a Join takes effect at once.
 *
 * A group is 16 bytes: an IPv6 group (ff00::/8), or an IPv4 group (224.0.0.0/4) IPv4-mapped
 * (::ffff:a.b.c.d, the way RoCEv2 names it as a GID). After every change of a group's members
 * the router finds the switches by following cables from the members' ports (a host port to
 * the switch port at the other end, that switch's ports in port-number order to their peers,
 * and so on), picks the group's root switch (the one whose farthest member switch is nearest,
 * ties to the first found), grows a breadth-first shortest-path tree from it, keeps only the
 * branches that lead to member switches, and writes each tree switch's route: its tree links
 * and its ports to member hosts. A switch that was in the group's tree and is no longer has its
 * entry cleared. The tree is shared by all senders (a bidirectional (*,G) tree): a frame sent
 * by a member reaches every other member once and never loops, since each switch copies it to
 * every tree port but the one it came in by. A host that is not a member may send to a group
 * too (SenderRoutes): every switch off the tree gets one route toward the tree, so a
 * non-member's frame climbs to the tree and spreads from there.
 *
 * Between switches, only cables whose link is up are used when AvoidDownLinks is set; after a
 * link changes state, Recompute writes every group's tree again.
 */
class EthMulticastRouter : public Object
{
  public:
    static TypeId GetTypeId();
    EthMulticastRouter();
    ~EthMulticastRouter() override;

    /// Whether `group` is a multicast group: ff00::/8, or ::ffff:224.0.0.0/4.
    static bool IsGroup(const Ipv6Bytes& group);
    /// An IPv4 group (host order) as the router names it: ::ffff:a.b.c.d.
    static Ipv6Bytes GroupFromIpv4(uint32_t group);

    /**
     * Adds host port `hostPort` (a port of a host, cabled) to `group` and writes the group's
     * tree. Returns false, changing nothing, for a null port, a switch's port, a port without a
     * cable, an address that is not a group, or a port already in the group.
     */
    bool Join(Ptr<EthNetDevice> hostPort, const Ipv6Bytes& group);
    /// Removes `hostPort` from `group` and writes (or, with no member left, clears) the group's
    /// tree; false, changing nothing, if the port was not in the group.
    bool Leave(Ptr<EthNetDevice> hostPort, const Ipv6Bytes& group);
    /// Leaves every group `hostPort` is in (a host that goes away); returns how many.
    uint32_t LeaveAll(Ptr<EthNetDevice> hostPort);
    /// Computes and writes every group's tree again (after a cable went down or came up).
    void Recompute();

    bool IsMember(Ptr<EthNetDevice> hostPort, const Ipv6Bytes& group) const;
    /// The group's members, in the order the tree computation takes them (by MAC address).
    std::vector<Ptr<EthNetDevice>> GetMembers(const Ipv6Bytes& group) const;
    /// The groups with members, in address order.
    std::vector<Ipv6Bytes> GetGroups() const;
    /// The root of the group's tree (of its first tree when the members' switches are not all
    /// connected); null when its members sit on no switch.
    Ptr<EthSwitch> GetRoot(const Ipv6Bytes& group) const;
    /// The switches of the group's tree.
    std::vector<Ptr<EthSwitch>> GetTreeSwitches(const Ipv6Bytes& group) const;
    /// Every switch holding a route for the group: the tree's and those toward it.
    std::vector<Ptr<EthSwitch>> GetRouteSwitches(const Ipv6Bytes& group) const;

    uint32_t GetNGroups() const { return static_cast<uint32_t>(m_groups.size()); }
    /// Successful Join and Leave calls (LeaveAll counts each group left).
    uint64_t GetJoins() const { return m_joins; }
    uint64_t GetLeaves() const { return m_leaves; }
    /// Switch entries written or cleared because they changed (an unchanged entry is not
    /// rewritten).
    uint64_t GetRoutesWritten() const { return m_routesWritten; }

    /// Join, Leave: (group, host port).
    typedef void (*MembershipCallback)(const Ipv6Bytes& group, Ptr<EthNetDevice> hostPort);
    /// RouteWritten: (switch, group, its ports; empty: the entry was cleared).
    typedef void (*RouteCallback)(Ptr<EthSwitch> sw,
                                  const Ipv6Bytes& group,
                                  const std::vector<uint16_t>& ports);

  protected:
    void DoDispose() override;

  private:
    struct Group
    {
        std::vector<Ptr<EthNetDevice>> members; ///< sorted by MAC, then join order
        std::vector<Ptr<EthSwitch>> programmed; ///< switches holding an entry for the group
        std::vector<Ptr<EthSwitch>> tree;       ///< of those, the tree's
        Ptr<EthSwitch> root;
    };
    /// Computes the group's tree and writes it; clears the entries of switches that left it.
    void Program(const Ipv6Bytes& group, Group& g);
    /// Writes `ports` (empty: clears) as the group's route on `sw` if it differs; counted.
    void WriteRoute(Ptr<EthSwitch> sw, const Ipv6Bytes& group, const std::vector<uint16_t>& ports);

    std::map<Ipv6Bytes, Group> m_groups;
    bool m_avoidDownLinks = true;
    bool m_senderRoutes = true;
    uint64_t m_joins = 0;
    uint64_t m_leaves = 0;
    uint64_t m_routesWritten = 0;
    TracedCallback<const Ipv6Bytes&, Ptr<EthNetDevice>> m_joinTrace;
    TracedCallback<const Ipv6Bytes&, Ptr<EthNetDevice>> m_leaveTrace;
    TracedCallback<Ptr<EthSwitch>, const Ipv6Bytes&, const std::vector<uint16_t>&> m_routeTrace;
};

} // namespace ns3

#endif
