// A pure description of a fabric graph: hosts (HCAs), switches, and the cables between their
// ports. No ns-3 objects are created here; the fabric builder turns a Topology into devices.
#ifndef CNUAS_HELPERS_TOPOLOGY_H
#define CNUAS_HELPERS_TOPOLOGY_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ns3
{

enum class TopoNodeKind
{
    Host,
    Switch
};

struct TopoNode
{
    std::string name;
    TopoNodeKind kind;
    uint32_t ports; ///< port count; ports are numbered 1..ports (0 is a switch's management port)
    int level = -1; ///< fat-tree/leaf-spine tier: 0 host, 1 leaf/edge, 2 spine/aggregation, 3 core
};

/// One cable. Node indices into Topology::nodes, 1-based port numbers.
struct TopoLink
{
    uint32_t a;
    uint32_t aPort;
    uint32_t b;
    uint32_t bPort;
    std::string rate;          ///< "" = default, else e.g. "4xHDR", "1xSDR", "12xNDR"
    double lengthMeters = -1;  ///< <0 = default
};

struct Topology
{
    std::string name;
    std::vector<TopoNode> nodes;
    std::vector<TopoLink> links;

    /// Indices of the hosts, in node order.
    std::vector<uint32_t> Hosts() const;
    /// Indices of the switches, in node order.
    std::vector<uint32_t> Switches() const;
    /// Index of the node with this name.
    std::optional<uint32_t> Find(const std::string& name) const;
    /**
     * "" if the topology is well formed; else a description of the first problem found: no
     * nodes, empty or unprintable node name, duplicate names, a node without ports, link to a
     * node that does not exist, port out of range, self-loop, port used twice, bad rate string,
     * bad length, disconnected graph.
     */
    std::string Validate() const;

    /// Appends a node and returns its index.
    uint32_t AddNode(const std::string& nodeName, TopoNodeKind kind, uint32_t portCount,
                     int tier = -1);
    /// Appends a link and returns its index (no checking: call Validate).
    uint32_t AddLink(uint32_t nodeA, uint32_t portA, uint32_t nodeB, uint32_t portB,
                     const std::string& linkRate = "", double meters = -1);
    /// Index of the link attached to port `port` of node `node`, if any.
    std::optional<uint32_t> LinkAt(uint32_t node, uint32_t port) const;
    /// "name[port]", for messages.
    std::string PortName(uint32_t node, uint32_t port) const;
};

/**
 * Checks an InfiniBand link rate string WIDTHxSPEED: WIDTH one of 1 2 4 8 12, SPEED one of
 * SDR DDR QDR FDR10 FDR EDR HDR NDR XDR (case-insensitive). On success stores the canonical
 * spelling ("4xHDR") in *canonical if given.
 */
bool ParseLinkRate(const std::string& rate, std::string* canonical = nullptr);

/*
 * Generators. Every generator puts the hosts first (h0, h1, ... in node order, so host i is node
 * i), then the switches; every host has one port. Names and port numbers are deterministic:
 *
 *  pair:       h0[1]-sw0[1], h1[1]-sw0[2].
 *  star:       h<i>[1]-sw0[i+1].
 *  dumbbell:   left hosts h0..h<L-1> on swL ports 1..L, right hosts h<L>..h<L+R-1> on swR
 *              ports 1..R; swL[L+1]-swR[R+1].
 *  leaf-spine: leaf<l> ports 1..H go to its hosts h<l*H>..h<l*H+H-1>, port H+1+s goes to
 *              spine<s>; spine<s> port l+1 goes to leaf<l>.
 *  fat-tree:   (Al-Fares et al., SIGCOMM 2008) pods p = 0..k-1 each with edge<p>_<e> and
 *              agg<p>_<a>, e, a = 0..k/2-1, and core<c>, c = 0..(k/2)^2-1. Edge ports 1..k/2 go to
 *              hosts h<p*(k/2)^2 + e*(k/2) + i>, port k/2+1+a goes to agg<p>_<a> (agg port e+1).
 *              Agg ports 1..k/2 go down to the edges, port k/2+1+i goes up to
 *              core<a*(k/2)+i>; core port p+1 goes to pod p.
 * Levels: hosts 0, leaf/edge (and the star/pair/dumbbell switches) 1, spine/agg 2, core 3.
 * Invalid sizes throw std::invalid_argument.
 */
Topology MakeTwoHostsOneSwitch();
Topology MakeStar(uint32_t hosts);
Topology MakeDumbbell(uint32_t left, uint32_t right);
Topology MakeLeafSpine(uint32_t leaves, uint32_t spines, uint32_t hostsPerLeaf);
Topology MakeFatTree(uint32_t k);

/**
 * Reads a topology file in ibnetdiscover / ibsim "net" format (see docs/cli.md). Errors throw
 * std::invalid_argument("path:line: message"); the result has passed Validate().
 */
Topology ParseTopologyFile(const std::string& path);
/// As ParseTopologyFile, from text; `sourceName` is used in messages and to resolve includes
/// (relative to its directory).
Topology ParseTopologyText(const std::string& text, const std::string& sourceName);

/**
 * Builds a topology from a spec string: "pair", "star:hosts=8", "dumbbell:left=4,right=4",
 * "leaf-spine:leaves=4,spines=2,hosts=4", "fat-tree:k=4" (omitted keys take the defaults shown
 * in docs/cli.md), or "file:PATH" with a relative PATH resolved against baseDir.
 * Throws std::invalid_argument on a bad spec.
 */
Topology BuildTopologyFromSpec(const std::string& spec, const std::string& baseDir = ".");

/// Writes a topology in the file format read by ParseTopologyText (it round-trips exactly).
std::string WriteTopologyText(const Topology& t);

} // namespace ns3

#endif
