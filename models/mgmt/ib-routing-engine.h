// Unicast routing for a subnet manager: linear forwarding tables from the subnet database, by
// min-hop or by up/down, and the checks every table set must pass (every LID reachable from
// every CA, no forwarding loop, no cycle in the channel dependency graph).
#ifndef CNUAS_IB_ROUTING_ENGINE_H
#define CNUAS_IB_ROUTING_ENGINE_H

#include "ib-sm-subnet.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ns3
{

/// Which routing engine an SM runs (its RoutingEngine attribute holds one as an int).
enum class IbRoutingAlgorithm : uint8_t
{
    /// Shortest paths, equal-cost choices balanced per output port (opensm's "minhop"). Not
    /// deadlock-free on every graph (rings, tori): CheckCreditLoops says when.
    MinHop = 0,
    /// Shortest legal up*/down* paths (Schroeder et al., Autonet, 1991; opensm's "updn"): ranks
    /// by distance from the roots, a packet never goes up after it went down, so the channel
    /// dependency graph is acyclic on one VL for any topology. On a fat-tree with the cores as
    /// roots the routes are the min-hop ones.
    UpDown = 1,
};

const char* IbRoutingAlgorithmName(IbRoutingAlgorithm a);

/// What a routing run produced.
struct IbRoutingTables
{
    /// lft[node] is a switch's linear forwarding table (index = LID, kIbLftNoRoute = none,
    /// 0 = the switch itself); empty for a CA.
    std::vector<std::vector<uint8_t>> lft;
    /// Up/down roots (node indices), empty for min-hop.
    std::vector<int32_t> roots;
    /// "" on success; else why no tables could be made (e.g. no switch, a LID above an LFT cap).
    std::string error;
};

/**
 * Computes the LFTs of every switch in `subnet` (LIDs must be assigned and indexed). For
 * up/down, `roots` are the root switches' node GUIDs; empty means detect them: the switches
 * farthest from any CA (on a fat-tree the cores, on a leaf-spine the spines), ties kept. Ranks
 * are written into the subnet's nodes.
 */
IbRoutingTables IbComputeRoutes(IbSmSubnet& subnet, IbRoutingAlgorithm algorithm,
                                const std::vector<uint64_t>& roots = {});

/// The result of walking every route the tables give.
struct IbRouteCheck
{
    uint64_t pairs = 0;       ///< (source CA port, destination LID) pairs walked
    uint64_t unreachable = 0; ///< pairs that end at a missing entry, a dead port or a wrong node
    uint64_t loops = 0;       ///< pairs whose walk revisits a switch
    uint32_t maxHops = 0;     ///< longest route, in cables
    std::string firstProblem;
    bool Ok() const { return unreachable == 0 && loops == 0; }
};

/**
 * Walks, from every linked CA port, the route to every LID in the subnet (switches and CA ports)
 * through the given tables: what a packet would do.
 */
IbRouteCheck IbCheckRoutes(const IbSmSubnet& subnet, const IbRoutingTables& tables);

/**
 * Builds the channel dependency graph of CA-to-LID data traffic on one VL (Dally and Seitz,
 * 1987: a routing function is deadlock-free if this graph is acyclic; IBA credit-based flow
 * control makes a cycle a real deadlock). A channel is a cable direction (node, output port);
 * channel c depends on d if some route takes d right after c. Returns one cycle as "node[port]"
 * steps joined by " -> ", or "" if there is none.
 */
std::string IbFindCreditLoop(const IbSmSubnet& subnet, const IbRoutingTables& tables);

/// Virtual layers that make a routing deadlock-free: each route gets a layer (used as its SL,
/// mapped to the VL of the same number), and each layer's channel dependencies are acyclic.
struct IbVlLayers
{
    /// (source LID, destination LID) -> layer, for every CA-to-LID route.
    std::map<std::pair<uint16_t, uint16_t>, uint8_t> layer;
    uint8_t layers = 0; ///< layers used
    std::string error;  ///< "" on success; else why the routes do not fit `maxLayers`
    uint8_t Of(uint16_t slid, uint16_t dlid) const
    {
        auto it = layer.find({slid, dlid});
        return it == layer.end() ? 0 : it->second;
    }
};

/**
 * Spreads the CA-to-LID routes of `tables` over at most `maxLayers` virtual layers so that no
 * layer's channel dependency graph has a cycle (the layered approach of LASH / DFSSSP, Domke et
 * al., 2011): routes are taken destination by destination and each goes into the first
 * layer where its dependencies close no cycle. Routes whose single-VL dependency graph is
 * already acyclic (up/down, any tree) all land in layer 0.
 */
IbVlLayers IbAssignVlLayers(const IbSmSubnet& subnet, const IbRoutingTables& tables,
                            uint8_t maxLayers);

/// Like IbFindCreditLoop, but only for the routes `layers` puts in layer `layer`.
std::string IbFindCreditLoopInLayer(const IbSmSubnet& subnet, const IbRoutingTables& tables,
                                    const IbVlLayers& layers, uint8_t layer);

} // namespace ns3

#endif
