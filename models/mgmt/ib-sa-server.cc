#include "ib-sa-server.h"

#include "ib-gmp.h"
#include "ib-mad-header.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace ns3
{

namespace
{

/// Nominal data rate of a port's active link in Gb/s, from PortInfo (0: not known).
double
PortGbps(const IbPortInfo& pi)
{
    double lanes = 0;
    switch (pi.linkWidthActive)
    {
    case 1:
        lanes = 1;
        break;
    case 2:
        lanes = 4;
        break;
    case 4:
        lanes = 8;
        break;
    case 8:
        lanes = 12;
        break;
    case 16:
        lanes = 2;
        break;
    default:
        return 0;
    }
    double lane = pi.linkSpeedExtActive == 1   ? 14
                  : pi.linkSpeedExtActive == 2 ? 25
                  : pi.linkSpeedExtActive == 4 ? 50
                  : pi.linkSpeedExtActive == 8 ? 100
                  : pi.linkSpeedActive == 1    ? 2.5
                  : pi.linkSpeedActive == 2    ? 5
                  : pi.linkSpeedActive == 4    ? 10
                                               : 0;
    return lanes * lane;
}

/// The (node, port) a LID or a GID names; node -1 if none.
IbSmLidTarget
Resolve(const IbSmSubnet& s, bool byLid, uint16_t lid, bool byGid,
        const std::array<uint8_t, 16>& gid)
{
    if (byLid)
    {
        auto it = s.Lids().find(lid);
        return it == s.Lids().end() ? IbSmLidTarget{} : it->second;
    }
    if (byGid)
    {
        const uint64_t guid = IbGidPortGuid(gid);
        for (int32_t i = 0; guid != 0 && i < s.NodeCount(); ++i)
        {
            const IbSmNode& n = s.Node(i);
            if (n.IsSwitch() && n.ports[0].guid == guid)
            {
                return {i, 0};
            }
            for (uint8_t p = 1; !n.IsSwitch() && p <= n.numPorts; ++p)
            {
                if (n.ports[p].guid == guid && n.ports[p].lid != 0)
                {
                    return {i, p};
                }
            }
        }
    }
    return {};
}

/// Walks the LFTs from `src` to `dst`; true if it arrives, with the smallest rate and MTU.
bool
WalkPath(const IbSmSubnet& s, const IbRoutingTables& t, IbSmLidTarget src, IbSmLidTarget dst,
         double* gbps, uint8_t* mtu)
{
    const uint16_t dlid = s.LidOf(dst.node, dst.port);
    *gbps = 1e9;
    *mtu = 5;
    auto cross = [&](const IbSmPort& out) {
        *gbps = std::min(*gbps, PortGbps(out.info));
        *mtu = std::min<uint8_t>(*mtu, out.info.neighborMtu == 0 ? 5 : out.info.neighborMtu);
    };
    int32_t cur = src.node;
    if (!s.Node(cur).IsSwitch())
    {
        const IbSmPort& p = s.Node(cur).ports[src.port];
        if (p.peerNode < 0)
        {
            return false;
        }
        cross(p);
        cur = p.peerNode;
        if (!s.Node(cur).IsSwitch())
        {
            return cur == dst.node && p.peerPort == dst.port;
        }
    }
    for (int hops = 0; hops < s.NodeCount(); ++hops)
    {
        const IbSmNode& n = s.Node(cur);
        if (n.lid == dlid)
        {
            return true;
        }
        const uint8_t out = dlid < t.lft[cur].size() ? t.lft[cur][dlid] : kIbLftNoRoute;
        if (out == 0 || out > n.numPorts || n.ports[out].peerNode < 0)
        {
            return false;
        }
        cross(n.ports[out]);
        const int32_t next = n.ports[out].peerNode;
        if (!s.Node(next).IsSwitch())
        {
            return next == dst.node && n.ports[out].peerPort == dst.port;
        }
        cur = next;
    }
    return false; // a loop
}

IbNodeRecord
MakeNodeRecord(const IbSmSubnet& s, const IbSmLidTarget& at)
{
    const IbSmNode& n = s.Node(at.node);
    IbNodeRecord r;
    r.lid = s.LidOf(at.node, at.port);
    r.nodeInfo.nodeType = n.type;
    r.nodeInfo.numPorts = n.numPorts;
    r.nodeInfo.systemImageGuid = n.nodeGuid;
    r.nodeInfo.nodeGuid = n.nodeGuid;
    r.nodeInfo.portGuid = n.ports[at.port].guid;
    r.nodeInfo.localPortNum = at.port;
    r.nodeInfo.vendorId = 0x0002C9;
    r.description.text = n.description;
    return r;
}

} // namespace

namespace
{

/// IbSaServe and IbSaServeSegments: with `multi`, a table larger than one MAD becomes several
/// RMPP DATA segments in `out`; without, it is answered ERR_NO_RESOURCES. False: no answer.
bool
Serve(const IbSmSubnet& subnet, const IbRoutingTables& tables, const uint8_t* request,
      const IbVlLayers* layers, bool multi, std::vector<std::array<uint8_t, kIbMadBytes>>& out)
{
    out.clear();
    out.emplace_back();
    uint8_t* response = out.back().data();
    IbSaMad req;
    req.ReadFrom(request);
    const IbMadHeader& h = req.Mad();
    if (h.GetMgmtClass() != IbMgmtClass::SubnAdm || h.IsResponse())
    {
        return false;
    }
    IbSaMad resp = req;
    const bool table = h.GetMethod() == IbMadMethod::GetTable;
    resp.Mad().SetMethod(table ? IbMadMethod::GetTableResp : IbMadMethod::GetResp);
    resp.SetRmppVersion(0);
    resp.SetRmppType(0);
    resp.SetRmppTimeFlags(0);
    resp.SetRmppStatus(0);
    resp.SetRmppData1(0);
    resp.SetRmppData2(0);
    std::memset(resp.Data(), 0, IbSaMad::kDataBytes);
    auto answer = [&](uint16_t status) {
        resp.Mad().SetStatus(status);
        resp.WriteTo(response);
        return true;
    };
    if (h.GetBaseVersion() != kIbMadBaseVersion || h.GetClassVersion() != kIbSaClassVersion)
    {
        return answer(IbMadStatus::BadVersion);
    }
    if (h.GetMethod() != IbMadMethod::Get && !table)
    {
        return answer(IbMadStatus::UnsupportedMethod);
    }
    const uint64_t mask = req.GetComponentMask();
    std::vector<std::vector<uint8_t>> records;
    uint32_t recordBytes = 0;
    switch (h.GetAttributeId())
    {
    case IbSaAttr::NodeRecord: {
        recordBytes = IbNodeRecord::kSize;
        IbNodeRecord q;
        q.ReadFrom(req.Data());
        for (const auto& [lid, at] : subnet.Lids())
        {
            if ((mask & IbNodeRecord::kCompLid) && lid != q.lid)
            {
                continue;
            }
            std::vector<uint8_t> bytes(recordBytes);
            MakeNodeRecord(subnet, at).WriteTo(bytes.data());
            records.push_back(std::move(bytes));
        }
        break;
    }
    case IbSaAttr::PathRecord: {
        recordBytes = IbPathRecord::kSize;
        IbPathRecord q;
        q.ReadFrom(req.Data());
        const bool sOk = mask & (IbPathRecord::kCompSlid | IbPathRecord::kCompSgid);
        const bool dOk = mask & (IbPathRecord::kCompDlid | IbPathRecord::kCompDgid);
        if (!sOk || !dOk)
        {
            return answer(IbSaStatus::InsufficientComponents);
        }
        const IbSmLidTarget src = Resolve(subnet, mask & IbPathRecord::kCompSlid, q.slid,
                                          mask & IbPathRecord::kCompSgid, q.sgid);
        const IbSmLidTarget dst = Resolve(subnet, mask & IbPathRecord::kCompDlid, q.dlid,
                                          mask & IbPathRecord::kCompDgid, q.dgid);
        double gbps = 0;
        uint8_t mtu = 0;
        if (src.node >= 0 && dst.node >= 0 && WalkPath(subnet, tables, src, dst, &gbps, &mtu))
        {
            IbPathRecord r;
            r.sgid = IbPortGid(subnet.Node(src.node).ports[src.port].guid);
            r.dgid = IbPortGid(subnet.Node(dst.node).ports[dst.port].guid);
            r.slid = subnet.LidOf(src.node, src.port);
            r.dlid = subnet.LidOf(dst.node, dst.port);
            r.reversible = true;
            r.pkey = 0xFFFF;
            // The route's virtual layer is its SL (SL n -> VL n, the switches' default map).
            r.sl = layers ? layers->Of(r.slid, r.dlid) : 0;
            r.mtuSelector = 2; // exactly
            r.mtu = mtu;
            r.rateSelector = 2;
            r.rate = IbSaRateCode(gbps);
            r.packetLifeTimeSelector = 2;
            r.packetLifeTime = 18; // 4.096 us x 2^18 ~ 1 s: opensm's default order of magnitude
            std::vector<uint8_t> bytes(recordBytes);
            r.WriteTo(bytes.data());
            records.push_back(std::move(bytes));
        }
        break;
    }
    default:
        return answer(IbMadStatus::UnsupportedMethodAttr);
    }
    if (records.empty())
    {
        return answer(IbSaStatus::NoRecords);
    }
    // Records sit at AttributeOffset (8-byte words) strides (§15.2.1.1).
    const uint16_t words = static_cast<uint16_t>((recordBytes + 7) / 8);
    if (!table)
    {
        if (records.size() > 1)
        {
            return answer(IbSaStatus::TooManyRecords);
        }
        std::memcpy(resp.Data(), records[0].data(), recordBytes);
        return answer(IbMadStatus::Ok);
    }
    const size_t fit = IbSaMad::kDataBytes / (words * 8u);
    if (records.size() > fit && multi)
    {
        // Several RMPP DATA segments (IBA vol. 1 §13.6.3): the records as one stream at
        // AttributeOffset strides, cut every 200 bytes; each segment repeats the MAD, RMPP and
        // SA headers; PayloadLength is the whole payload in the first segment (SA header after
        // RMPP, 20 bytes a segment, plus the data) and the last one's share in the last. All go
        // at once: the requester's window is not waited for (its ACK completes nothing here).
        std::vector<uint8_t> stream(records.size() * words * 8u, 0);
        for (size_t i = 0; i < records.size(); ++i)
        {
            std::memcpy(stream.data() + i * words * 8u, records[i].data(), recordBytes);
        }
        constexpr uint32_t kSeg = IbSaMad::kDataBytes;
        constexpr uint32_t kRmppPayload = kIbMadBytes - 36;
        const uint32_t count = static_cast<uint32_t>((stream.size() + kSeg - 1) / kSeg);
        const uint32_t pad = count * kSeg - static_cast<uint32_t>(stream.size());
        resp.SetAttributeOffset(words);
        resp.SetRmppVersion(1);
        resp.SetRmppType(1);
        resp.Mad().SetStatus(IbMadStatus::Ok);
        out.clear();
        for (uint32_t seg = 1; seg <= count; ++seg)
        {
            std::memset(resp.Data(), 0, IbSaMad::kDataBytes);
            const size_t at = (seg - 1) * kSeg;
            std::memcpy(resp.Data(), stream.data() + at,
                        std::min<size_t>(kSeg, stream.size() - at));
            resp.SetRmppTimeFlags(static_cast<uint8_t>(0x01 | (seg == 1 ? 0x02 : 0) |
                                                       (seg == count ? 0x04 : 0)));
            resp.SetRmppData1(seg);
            resp.SetRmppData2(seg == 1 ? count * kRmppPayload - pad
                                       : (seg == count ? kRmppPayload - pad : 0));
            out.emplace_back();
            resp.WriteTo(out.back().data());
        }
        return true;
    }
    if (records.size() > fit)
    {
        return answer(IbSaStatus::NoResources);
    }
    for (size_t i = 0; i < records.size(); ++i)
    {
        std::memcpy(resp.Data() + i * words * 8u, records[i].data(), recordBytes);
    }
    resp.SetAttributeOffset(words);
    // One RMPP DATA segment (§13.6.2): version 1, type DATA, flags Active|First|Last, segment
    // 1, PayloadLength = the SA header after RMPP (20 bytes) + the records.
    resp.SetRmppVersion(1);
    resp.SetRmppType(1);
    resp.SetRmppTimeFlags(0x07);
    resp.SetRmppData1(1);
    resp.SetRmppData2(static_cast<uint32_t>(20 + records.size() * words * 8u));
    return answer(IbMadStatus::Ok);
}

} // namespace

bool
IbSaServe(const IbSmSubnet& subnet, const IbRoutingTables& tables, const uint8_t* request,
          uint8_t* response, const IbVlLayers* layers)
{
    std::vector<std::array<uint8_t, kIbMadBytes>> out;
    if (!Serve(subnet, tables, request, layers, false, out))
    {
        return false;
    }
    std::memcpy(response, out[0].data(), kIbMadBytes);
    return true;
}

std::vector<std::array<uint8_t, kIbMadBytes>>
IbSaServeSegments(const IbSmSubnet& subnet, const IbRoutingTables& tables,
                  const uint8_t* request, const IbVlLayers* layers)
{
    std::vector<std::array<uint8_t, kIbMadBytes>> out;
    if (!Serve(subnet, tables, request, layers, true, out))
    {
        out.clear();
    }
    return out;
}

} // namespace ns3
