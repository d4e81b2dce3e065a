#include "helpers/roce/roce-ideal-fct.h"

#include "models/ib/ib-crc.h"
#include "models/roce/eth-frame.h"
#include "models/roce/eth-net-device.h"

#include "ns3/boolean.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

namespace ns3
{

namespace
{

// IBA vol. 1 §9.2-§9.3 (RoCEv2 annex A17 carries them unchanged in UDP): base transport
// header, RDMA extended transport header (a WRITE's first packet), ACK extended header.
constexpr uint32_t kBthBytes = 12;
constexpr uint32_t kRethBytes = 16;
constexpr uint32_t kAethBytes = 4;

/// What one frame occupies a link for, and when its last bit is in at the other end.
struct LinkTimes
{
    int64_t wirePs;    ///< the frame with its preamble and inter-frame gap
    int64_t arrivalPs; ///< from its start to its last bit at the far end (no gap, plus cable)
};

class IdealPathTimer
{
  public:
    /// `commonTransportBytes`: the frame most data packets carry (their times are kept).
    IdealPathTimer(const RoceIdealRoute& route, uint32_t commonTransportBytes)
        : m_route(route),
          m_commonTransportBytes(commonTransportBytes),
          m_dataFree(route.forward.size(), 0),
          m_ackFree(route.back.size(), 0)
    {
        for (const RoceIdealLink& l : route.forward)
        {
            m_commonData.push_back(Times(l, commonTransportBytes));
        }
        for (const RoceIdealLink& l : route.back)
        {
            m_ack.push_back(Times(l, kBthBytes + kAethBytes + kIbIcrcSize));
        }
    }

    /// A frame carrying `transportBytes` (BTH .. ICRC) over IPv4 on `link`, sized and timed as
    /// the port sizes and times it (EthUdpFrameBytes, EthNetDevice's wire time and gap).
    static LinkTimes Times(const RoceIdealLink& link, uint32_t transportBytes)
    {
        const uint32_t frame = EthUdpFrameBytes(transportBytes, false, link.vlanTag);
        const int64_t wire = EthNetDevice::WireTimePs(frame, link.bps);
        return {wire, wire - EthNetDevice::InterFrameGapPs(link.bps) + link.delayPs};
    }

    /// A data packet handed to the first link at `readyPs`: when its last bit is at the
    /// responder. Each link sends its frames in order, one at a time.
    int64_t SendData(int64_t readyPs, uint32_t transportBytes)
    {
        int64_t t = readyPs;
        for (size_t j = 0; j < m_route.forward.size(); ++j)
        {
            const LinkTimes lt = transportBytes == m_commonTransportBytes
                                     ? m_commonData[j]
                                     : Times(m_route.forward[j], transportBytes);
            const int64_t start = std::max(t, m_dataFree[j]);
            m_dataFree[j] = start + lt.wirePs;
            t = start + lt.arrivalPs;
        }
        return t;
    }

    /// An ACK the responder sends at `readyPs`: when its last bit is at the requester.
    int64_t SendAck(int64_t readyPs)
    {
        int64_t t = readyPs;
        for (size_t j = m_route.back.size(); j-- > 0;)
        {
            const LinkTimes& lt = m_ack[j];
            const int64_t start = std::max(t, m_ackFree[j]);
            m_ackFree[j] = start + lt.wirePs;
            t = start + lt.arrivalPs;
        }
        return t;
    }

  private:
    const RoceIdealRoute& m_route;
    const uint32_t m_commonTransportBytes;
    std::vector<LinkTimes> m_commonData; ///< per forward link
    std::vector<LinkTimes> m_ack;        ///< per back link
    std::vector<int64_t> m_dataFree; ///< per link: when it has sent the data so far
    std::vector<int64_t> m_ackFree;  ///< per link, the other way: the ACKs so far
};

/// One direction of a cable as `port` drives it.
RoceIdealLink
Driven(const Ptr<EthNetDevice>& port, int64_t delayPs)
{
    BooleanValue vlan;
    port->GetAttribute("VlanTag", vlan);
    return RoceIdealLink{port->GetDataRate().GetBitRate(), delayPs, vlan.Get()};
}

} // namespace

RoceIdealRoute
RoceIdealRoute::Symmetric(const std::vector<RoceIdealLink>& links)
{
    return RoceIdealRoute{links, links};
}

int64_t
RoceIdealFctPs(uint64_t bytes, const RoceIdealRoute& route, const RoceIdealFraming& framing)
{
    if (bytes == 0 || route.forward.empty() || route.back.size() != route.forward.size() ||
        framing.mtu == 0)
    {
        throw std::invalid_argument("RoceIdealFctPs: a flow needs bytes, a route (as many "
                                    "links back as forward) and an MTU");
    }
    for (const auto* links : {&route.forward, &route.back})
    {
        for (const RoceIdealLink& l : *links)
        {
            if (l.bps == 0 || l.delayPs < 0)
            {
                throw std::invalid_argument(
                    "RoceIdealFctPs: a link needs a rate and a delay >= 0");
            }
        }
    }
    // A full packet after the first: BTH, the MTU's payload (a multiple of 4), ICRC.
    IdealPathTimer timer(route, kBthBytes + framing.mtu + kIbIcrcSize);
    const uint64_t packets = (bytes + framing.mtu - 1) / framing.mtu;
    int64_t lastAck = 0;
    for (uint64_t i = 0; i < packets; ++i)
    {
        const auto payload =
            static_cast<uint32_t>(std::min<uint64_t>(framing.mtu, bytes - i * framing.mtu));
        // The payload is padded to a multiple of 4 (BTH PadCnt, IBA vol. 1 §9.2.2).
        const uint32_t transport =
            kBthBytes + (i == 0 ? kRethBytes : 0) + (payload + 3) / 4 * 4 + kIbIcrcSize;
        // The requester's packets are all posted at 0: each goes as the first link frees.
        const int64_t in = timer.SendData(0, transport);
        const bool last = i + 1 == packets;
        const bool asks = framing.ackEveryPackets > 0 && (i + 1) % framing.ackEveryPackets == 0;
        if (last || asks)
        {
            lastAck = timer.SendAck(in);
        }
    }
    return lastAck;
}

double
RoceIdealFctSeconds(uint64_t bytes, const RoceIdealRoute& route, const RoceIdealFraming& framing)
{
    return RoceIdealFctPs(bytes, route, framing) * 1e-12;
}

RoceIdealPaths::RoceIdealPaths(const EthFabric& fabric)
    : m_adjacency(fabric.topology.nodes.size()),
      m_hostNodes(fabric.hostNodes)
{
    const std::vector<TopoLink>& links = fabric.topology.links;
    for (size_t i = 0; i < links.size(); ++i)
    {
        const TopoLink& l = links[i];
        const int64_t delay = fabric.cables.at(i)->GetDelayPs();
        const RoceIdealLink fromA = Driven(fabric.Port(l.a, l.aPort), delay);
        const RoceIdealLink fromB = Driven(fabric.Port(l.b, l.bPort), delay);
        m_adjacency[l.a].push_back({l.b, fromA, fromB});
        m_adjacency[l.b].push_back({l.a, fromB, fromA});
    }
}

RoceIdealRoute
RoceIdealPaths::Route(uint32_t srcHost, uint32_t dstHost)
{
    const uint32_t from = m_hostNodes.at(srcHost);
    const uint32_t to = m_hostNodes.at(dstHost);
    constexpr uint32_t kUnseen = UINT32_MAX;
    auto found = m_parents.find(srcHost);
    if (found == m_parents.end())
    {
        std::vector<std::pair<uint32_t, uint32_t>> parent(m_adjacency.size(), {kUnseen, 0});
        parent[from].first = from;
        std::deque<uint32_t> queue{from};
        while (!queue.empty())
        {
            const uint32_t n = queue.front();
            queue.pop_front();
            for (uint32_t i = 0; i < m_adjacency[n].size(); ++i)
            {
                const uint32_t next = m_adjacency[n][i].node;
                if (parent[next].first == kUnseen)
                {
                    parent[next] = {n, i};
                    queue.push_back(next);
                }
            }
        }
        found = m_parents.emplace(srcHost, std::move(parent)).first;
    }
    const auto& parent = found->second;
    if (from == to || parent[to].first == kUnseen)
    {
        throw std::invalid_argument("RoceIdealPaths: no path between hosts " +
                                    std::to_string(srcHost) + " and " + std::to_string(dstHost));
    }
    RoceIdealRoute route;
    for (uint32_t n = to; n != from; n = parent[n].first)
    {
        const Hop& h = m_adjacency[parent[n].first][parent[n].second];
        route.forward.push_back(h.towards);
        route.back.push_back(h.from);
    }
    std::reverse(route.forward.begin(), route.forward.end());
    std::reverse(route.back.begin(), route.back.end());
    return route;
}

RoceRunIdealFct::RoceRunIdealFct(RoceRunSpec& spec)
    : m_framing{RdmaMtuBytes(spec.pathMtu), spec.ackEveryPackets}
{
    auto before = spec.beforeRun;
    spec.beforeRun = [this, before](const EthFabric& fabric, const std::vector<RoceHca>& hcas) {
        if (before)
        {
            before(fabric, hcas);
        }
        m_paths.emplace(fabric);
    };
}

double
RoceRunIdealFct::Seconds(const RoceFlowSpec& flow)
{
    if (!m_paths)
    {
        throw std::logic_error("RoceRunIdealFct: asked before the run built its fabric");
    }
    return RoceIdealFctSeconds(flow.bytes, m_paths->Route(flow.src, flow.dst), m_framing);
}

} // namespace ns3
