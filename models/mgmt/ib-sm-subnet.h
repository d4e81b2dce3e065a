// The subnet manager's database: the nodes, ports and links it discovered, and the LIDs it
// gave them. Plain data, no ns-3 objects, so that routing engines and their checks run on a
// graph built from a topology file as well as on one a sweep discovered.
#ifndef CNUAS_IB_SM_SUBNET_H
#define CNUAS_IB_SM_SUBNET_H

#include "ib-smp-attributes.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ns3
{

/// LID values, IBA vol. 1 §4.1.3: 0 reserved, 0x0001-0xBFFF unicast, 0xFFFF permissive.
constexpr uint16_t kIbFirstUnicastLid = 0x0001;
constexpr uint16_t kIbLastUnicastLid = 0xBFFF;
/// An LFT entry that routes nowhere (IBA vol. 1 §18.2.4.3.2: ports above NumPorts discard).
constexpr uint8_t kIbLftNoRoute = 255;

/// One port as the SM knows it. Index 0 of a switch is its management port.
struct IbSmPort
{
    uint64_t guid = 0;    ///< port GUID (a switch's ports all answer with the node's port 0 GUID)
    uint16_t lid = 0;     ///< a CA port's LID (a switch has one LID, in IbSmNode)
    int32_t peerNode = -1; ///< index of the node at the other end of the cable, -1: none
    uint8_t peerPort = 0;
    bool hasInfo = false; ///< a PortInfo was read in this sweep
    /// A CA port: the directed route that enters the CA through this port (a CA does not
    /// forward, so each of its ports has its own route, IBA vol. 1 §14.2.2.1).
    std::vector<uint8_t> path;
    IbPortInfo info;      ///< the last PortInfo read (what a Set starts from)
};

/// One node (a CA or a switch).
struct IbSmNode
{
    uint64_t nodeGuid = 0;
    uint8_t type = IbNodeType::ChannelAdapter;
    uint8_t numPorts = 0;
    std::string description;
    /// Directed route from the SM to this node: InitialPath[1..hops] (IBA vol. 1 §14.2.2).
    std::vector<uint8_t> path;
    std::vector<IbSmPort> ports; ///< [0..numPorts]
    uint16_t lid = 0;            ///< a switch's LID (that of management port 0, §18.2.4.1)
    uint16_t linearFdbCap = 0;   ///< a switch's LFT size (SwitchInfo)
    IbSwitchInfo switchInfo;     ///< a switch's SwitchInfo as last read or set (the SA's record)
    int rank = -1;               ///< up/down rank (0 = root), set by the routing engine
    bool IsSwitch() const { return type == IbNodeType::Switch; }
};

/// Where a LID leads: node index and port (0 for a switch's LID).
struct IbSmLidTarget
{
    int32_t node = -1;
    uint8_t port = 0;
};

/**
 * \brief Nodes by GUID and the links between their ports.
 */
class IbSmSubnet
{
  public:
    /// Adds a node, or returns the index of the one with this GUID (its record unchanged).
    int32_t AddNode(uint64_t nodeGuid, uint8_t type, uint8_t numPorts);
    /// Index of the node with this GUID, -1 if none.
    int32_t Find(uint64_t nodeGuid) const;
    /// Records a cable between (a, portA) and (b, portB); false if a port is out of range.
    bool Connect(int32_t a, uint8_t portA, int32_t b, uint8_t portB);
    IbSmNode& Node(int32_t i) { return m_nodes.at(i); }
    const IbSmNode& Node(int32_t i) const { return m_nodes.at(i); }
    int32_t NodeCount() const { return static_cast<int32_t>(m_nodes.size()); }
    const std::vector<IbSmNode>& Nodes() const { return m_nodes; }
    void Clear();

    /// The LID of a port: a switch's LID for any of its ports, else the CA port's.
    uint16_t LidOf(int32_t node, uint8_t port) const;
    /// LID -> (node, port) for every LID assigned (rebuilt by IndexLids).
    const std::map<uint16_t, IbSmLidTarget>& Lids() const { return m_lids; }
    void IndexLids();
    /// Largest LID in use (0 if none).
    uint16_t MaxLid() const;
    /// "" if every node has a unique LID (a CA: every linked port), else the first problem.
    std::string CheckLids() const;

  private:
    std::vector<IbSmNode> m_nodes;
    std::map<uint64_t, int32_t> m_byGuid;
    std::map<uint16_t, IbSmLidTarget> m_lids;
};

/**
 * \brief LID assignment that is stable by GUID (IBA vol. 1 §14.4.4 leaves the policy to the SM;
 * opensm keeps a GUID-to-LID table for the same reason): a GUID keeps the LID it had in
 * earlier sweeps, even across a period of absence, so that peers' address handles stay valid.
 * New GUIDs take the lowest free LIDs in GUID order, which makes a first sweep reproducible.
 */
class IbSmLidTable
{
  public:
    /// Gives every switch (node GUID) and every linked CA port (port GUID) of `subnet` its LID,
    /// writes them into the subnet and indexes them. A GUID new to the table keeps the LID its
    /// port already reports (PortInfo.LID) if that is free; the rest get the lowest free LIDs
    /// in GUID order. Returns the number of new LIDs handed out;
    /// -1 if the unicast range is exhausted (those ports keep LID 0).
    int Assign(IbSmSubnet& subnet);
    /// The LID reserved for a GUID (0: none).
    uint16_t Lookup(uint64_t guid) const;
    size_t Size() const { return m_lidByGuid.size(); }

  private:
    uint16_t TakeFreeLid();
    std::map<uint64_t, uint16_t> m_lidByGuid;
    std::map<uint16_t, uint64_t> m_guidByLid;
    uint16_t m_searchFrom = kIbFirstUnicastLid;
};

} // namespace ns3

#endif
