#include "ib-sa-server.h"

#include "ib-gmp.h"
#include "ib-mad-header.h"
#include "ib-sm-multicast.h"

#include "models/rdma/ib-wire-bytes.h"
#include "models/rdma/rdma-link-port.h" // RdmaPkeyMatch

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

namespace ns3
{

namespace
{

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
        *gbps = std::min(*gbps, IbSaPortGbps(out.info));
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

/// What the SA answers from: the SM's subnet as its last heavy sweep left it, the routes it
/// programmed, their virtual layers, and the SMs it knows.
struct IbSaView
{
    const IbSmSubnet& subnet;
    const IbRoutingTables& tables;
    const IbVlLayers* layers;
    const std::vector<IbSaSmEntry>* sms;
    const IbSmMulticast* multicast;
    const IbSaPartitions* partitions;
};

using RecordSink = std::function<void(std::vector<uint8_t>)>;

/// PortInfoRecord's CapabilityMask and CapabilityMask2 components match as bit subsets.
constexpr uint64_t kPirCapabilityMasks = (uint64_t{1} << 7) | (uint64_t{1} << 53);

/// The largest table the SA sends (as RMPP segments, all at once: the requester's window is not
/// waited for). 4 MiB is about 21,000 segments; a whole-world PathRecord table of a k=8 fat-tree
/// (208 LIDs) is 2.8 MB, of k=16 (1,344 LIDs) 116 MB, which is refused (ERR_NO_RESOURCES).
constexpr size_t kMaxTableBytes = 4u << 20;

/// The SA's ClassPortInfo (§13.4.8.1, §15.2.5.1). CapabilityMask: bit 13, PortInfoRecord
/// CapabilityMask components match as subsets (what `saquery -s` relies on); no traps or
/// notices (bits 0, 1), and not bit 8 (IsSubnetOptionalRecordsSupported), which promises every
/// optional record. RespTimeValue 16: answers within 4.096 us x 2^16 = 268 ms, the order of
/// opensm's 200 ms transaction timeout. Traps would go to QP1 with the well-known Q_Key.
std::vector<uint8_t>
SaClassPortInfo()
{
    std::vector<uint8_t> r(IbSaRecordBytes::ClassPortInfo, 0);
    r[0] = kIbMadBaseVersion;
    r[1] = kIbSaClassVersion;
    IbMadStore16(r.data() + 2, 1u << 13);
    IbWireStore32(r.data() + 4, 16); // CapabilityMask2 0, RespTimeValue 16
    IbWireStore32(r.data() + 68, 0x80010000u); // TrapQ_Key: QP1's well-known Q_Key (§13.5.3)
    return r;
}

void
NodeRecords(const IbSaView& v, const RecordSink& sink)
{
    for (const auto& [lid, at] : v.subnet.Lids())
    {
        std::vector<uint8_t> bytes(IbNodeRecord::kSize);
        MakeNodeRecord(v.subnet, at).WriteTo(bytes.data());
        sink(std::move(bytes));
    }
}

/// One record per port whose PortInfo the sweep read: every port of a switch (under the
/// switch's LID), a CA's ports under their own LIDs. M_Key reads 0, as to a requester the SA
/// does not trust (§15.4.3: the SA hides keys from untrusted requesters).
void
PortInfoRecords(const IbSaView& v, const RecordSink& sink)
{
    for (int32_t i = 0; i < v.subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = v.subnet.Node(i);
        for (uint8_t p = n.IsSwitch() ? 0 : 1; p <= n.numPorts; ++p)
        {
            const IbSmPort& port = n.ports[p];
            const uint16_t lid = v.subnet.LidOf(i, p);
            if (!port.hasInfo || lid == 0)
            {
                continue;
            }
            std::vector<uint8_t> bytes(IbSaRecordBytes::PortInfoRecord, 0);
            IbMadStore16(bytes.data(), lid);
            bytes[2] = p;
            IbPortInfo info = port.info;
            info.mKey = 0;
            info.WriteTo(bytes.data() + 4);
            sink(std::move(bytes));
        }
    }
}

/// Each cable twice, once from each end (§15.2.5.13: a LinkRecord is one direction).
void
LinkRecords(const IbSaView& v, const RecordSink& sink)
{
    for (int32_t i = 0; i < v.subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = v.subnet.Node(i);
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            const IbSmPort& port = n.ports[p];
            const uint16_t from = v.subnet.LidOf(i, p);
            if (port.peerNode < 0 || from == 0)
            {
                continue;
            }
            const uint16_t to = v.subnet.LidOf(port.peerNode, port.peerPort);
            if (to == 0)
            {
                continue;
            }
            std::vector<uint8_t> bytes(IbSaRecordBytes::LinkRecord, 0);
            IbMadStore16(bytes.data(), from);
            bytes[2] = p;
            bytes[3] = port.peerPort;
            IbMadStore16(bytes.data() + 4, to);
            sink(std::move(bytes));
        }
    }
}

void
SwitchInfoRecords(const IbSaView& v, const RecordSink& sink)
{
    for (const IbSmNode& n : v.subnet.Nodes())
    {
        if (!n.IsSwitch() || n.lid == 0)
        {
            continue;
        }
        uint8_t si[IbSwitchInfo::kSize];
        n.switchInfo.WriteTo(si);
        std::vector<uint8_t> bytes(IbSaRecordBytes::SwitchInfoRecord, 0);
        IbMadStore16(bytes.data(), n.lid);
        std::memcpy(bytes.data() + 4, si, IbSaRecordBytes::SwitchInfoRecord - 4);
        sink(std::move(bytes));
    }
}

/// Every switch's LFT blocks up to the highest LID in use, as the SM programmed them.
void
LftRecords(const IbSaView& v, const RecordSink& sink)
{
    const uint16_t top = v.subnet.MaxLid();
    for (int32_t i = 0; i < v.subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = v.subnet.Node(i);
        if (!n.IsSwitch() || n.lid == 0 || static_cast<size_t>(i) >= v.tables.lft.size())
        {
            continue;
        }
        const std::vector<uint8_t>& lft = v.tables.lft[i];
        for (uint32_t block = 0; block * 64u <= top; ++block)
        {
            std::vector<uint8_t> bytes(IbSaRecordBytes::LftRecord, 0);
            IbMadStore16(bytes.data(), n.lid);
            IbMadStore16(bytes.data() + 2, static_cast<uint16_t>(block));
            for (uint32_t e = 0; e < 64; ++e)
            {
                const uint32_t lid = block * 64 + e;
                bytes[8 + e] = lid < lft.size() ? lft[lid] : kIbLftNoRoute;
            }
            sink(std::move(bytes));
        }
    }
}

/// Block 0 of every endport's GUIDInfo: its port GUID at index 0 (GUIDCap 1: the SMA holds no
/// alias GUIDs).
void
GuidInfoRecords(const IbSaView& v, const RecordSink& sink)
{
    for (const auto& [lid, at] : v.subnet.Lids())
    {
        std::vector<uint8_t> bytes(IbSaRecordBytes::GuidInfoRecord, 0);
        IbMadStore16(bytes.data(), lid);
        IbWireStore64(bytes.data() + 8, v.subnet.Node(at.node).ports[at.port].guid);
        sink(std::move(bytes));
    }
}

/// Every endport's P_Key table as the SM wrote it (§15.2.5.11: LID, BlockNum, PortNum, the
/// block): from the partition policy, one record a block in use; without one, block 0 with the
/// default partition's full-member key 0xFFFF at index 0, what the SMAs start with.
void
PKeyTableRecords(const IbSaView& v, const RecordSink& sink)
{
    const bool policy = v.partitions && v.partitions->policy && !v.partitions->policy->Empty();
    for (const auto& [lid, at] : v.subnet.Lids())
    {
        std::vector<std::array<uint16_t, 32>> blocks(1);
        blocks[0].fill(0);
        blocks[0][0] = 0xFFFF;
        if (policy)
        {
            const uint64_t guid = v.subnet.Node(at.node).ports[at.port].guid;
            blocks = v.partitions->policy->CaPortPkeyBlocks(guid, guid == v.partitions->smPortGuid);
        }
        for (size_t b = 0; b < blocks.size(); ++b)
        {
            std::vector<uint8_t> bytes(IbSaRecordBytes::PKeyTableRecord, 0);
            IbMadStore16(bytes.data(), lid);
            IbMadStore16(bytes.data() + 2, static_cast<uint16_t>(b));
            bytes[4] = at.port;
            for (size_t i = 0; i < blocks[b].size(); ++i)
            {
                IbMadStore16(bytes.data() + 8 + 2 * i, blocks[b][i]);
            }
            sink(std::move(bytes));
        }
    }
}

/// This SM and the others its sweep found, SM_Key hidden (read as 0, §14.4.1: only a trusted
/// requester may see it).
void
SmInfoRecords(const IbSaView& v, const RecordSink& sink)
{
    if (!v.sms)
    {
        return;
    }
    for (const IbSaSmEntry& e : *v.sms)
    {
        uint8_t si[IbSmInfo::kSize];
        IbSmInfo info = e.info;
        info.smKey = 0;
        info.WriteTo(si);
        std::vector<uint8_t> bytes(IbSaRecordBytes::SmInfoRecord, 0);
        IbMadStore16(bytes.data(), e.lid);
        std::memcpy(bytes.data() + 4, si, 21);
        sink(std::move(bytes));
    }
}

/// Every switch's MFT blocks up to the highest one its groups use, each port-mask position its
/// ports have (§15.2.5.8: Position in bits 15:12 and BlockNum in bits 8:0 of the second field).
void
MftRecords(const IbSaView& v, const RecordSink& sink)
{
    if (!v.multicast)
    {
        return;
    }
    for (const auto& [node, entries] : v.multicast->ComputeMfts(v.subnet))
    {
        const IbSmNode& n = v.subnet.Node(node);
        if (n.lid == 0)
        {
            continue;
        }
        for (size_t block = 0; block * IbMftBlock::kEntries < entries.size(); ++block)
        {
            for (uint8_t position = 0; position * 16u <= n.numPorts; ++position)
            {
                std::vector<uint8_t> bytes(IbSaRecordBytes::MftRecord, 0);
                IbMadStore16(bytes.data(), n.lid);
                IbMadStore16(bytes.data() + 2,
                             static_cast<uint16_t>((position << 12) | (block & 0x1FF)));
                IbMftBlock b;
                for (size_t e = 0; e < IbMftBlock::kEntries; ++e)
                {
                    const size_t at = block * IbMftBlock::kEntries + e;
                    b.mask[e] = at < entries.size() ? entries[at][position] : 0;
                }
                b.WriteTo(bytes.data() + 8);
                sink(std::move(bytes));
            }
        }
    }
}

/// Whether `have` passes a PathRecord selector against `want` (§15.2.5.16: 0 greater than,
/// 1 less than, 2 exactly, 3 the largest available, which any value is here: one path).
bool
PassesSelector(uint8_t selector, double have, double want)
{
    switch (selector)
    {
    case 0:
        return have > want;
    case 1:
        return have < want;
    case 2:
        return have == want;
    default:
        return true;
    }
}

/// A path's P_Key between ports with P_Key tables `from` and `to`: the first entry of `from`
/// that matches one of `to` (IBA vol. 1 §10.9.3), within `asked`'s partition when one is asked
/// for (then that key); 0 when they share none.
uint16_t
CommonPkey(const std::vector<uint16_t>& from, const std::vector<uint16_t>& to,
           std::optional<uint16_t> asked)
{
    for (uint16_t a : from)
    {
        if (asked && (a & 0x7FFF) != (*asked & 0x7FFF))
        {
            continue;
        }
        for (uint16_t b : to)
        {
            if (RdmaPkeyMatch(a, b))
            {
                return asked ? *asked : a;
            }
        }
    }
    return 0;
}

/**
 * PathRecords (§15.2.5.16) for every (source, destination) pair the request names: an end
 * given by LID or GID is that endport, an end not given is every endport (opensm's "half
 * world" and "whole world" queries: `ibqueryerrors` asks for the paths from its own port to
 * all). LMC 0 gives one path a pair. P_Key (the default partition, or with a partition policy
 * one the two ends share), SL, MTU and Rate components with their selectors narrow the
 * answer. False if the table would exceed
 * kMaxTableBytes.
 */
bool
PathRecords(const IbSaView& v, const IbPathRecord& q, uint64_t mask,
            std::vector<std::vector<uint8_t>>& records)
{
    const IbSmSubnet& subnet = v.subnet;
    auto ends = [&](bool byLid, uint16_t lid, bool byGid, const std::array<uint8_t, 16>& gid) {
        std::vector<IbSmLidTarget> out;
        if (byLid || byGid)
        {
            const IbSmLidTarget t = Resolve(subnet, byLid, lid, byGid, gid);
            if (t.node >= 0)
            {
                out.push_back(t);
            }
            return out;
        }
        for (const auto& [l, at] : subnet.Lids())
        {
            out.push_back(at);
        }
        return out;
    };
    const std::vector<IbSmLidTarget> sources =
        ends(mask & IbPathRecord::kCompSlid, q.slid, mask & IbPathRecord::kCompSgid, q.sgid);
    const std::vector<IbSmLidTarget> dests =
        ends(mask & IbPathRecord::kCompDlid, q.dlid, mask & IbPathRecord::kCompDgid, q.dgid);
    if (sources.size() * dests.size() * IbPathRecord::kSize > kMaxTableBytes)
    {
        return false;
    }
    const bool policy = v.partitions && v.partitions->policy && !v.partitions->policy->Empty();
    if (!policy && (mask & IbPathRecord::kCompPkey) && (q.pkey & 0x7FFF) != 0x7FFF)
    {
        return true; // no partition but the default one: no path for another P_Key
    }
    // With a partition policy a path exists in a partition both ends share, one of them as a
    // full member (IBA vol. 1 §10.9.3): the one asked for, else the first of the source's
    // table the destination shares (as opensm picks a common P_Key); none, no path. Each end's
    // table once, not once a pair (a whole-world query pairs every endport with every other).
    std::vector<std::vector<uint16_t>> sourceKeys;
    std::vector<std::vector<uint16_t>> destKeys;
    if (policy)
    {
        auto keysOf = [&](const std::vector<IbSmLidTarget>& ends,
                          std::vector<std::vector<uint16_t>>& keys) {
            for (const IbSmLidTarget& t : ends)
            {
                const uint64_t guid = subnet.Node(t.node).ports[t.port].guid;
                keys.push_back(
                    v.partitions->policy->CaPortPkeys(guid, guid == v.partitions->smPortGuid));
            }
        };
        keysOf(sources, sourceKeys);
        keysOf(dests, destKeys);
    }
    const std::optional<uint16_t> askedPkey =
        (mask & IbPathRecord::kCompPkey) ? std::optional<uint16_t>(q.pkey) : std::nullopt;
    for (size_t s = 0; s < sources.size(); ++s)
    {
        const IbSmLidTarget& src = sources[s];
        for (size_t d = 0; d < dests.size(); ++d)
        {
            const IbSmLidTarget& dst = dests[d];
            uint16_t pkey = 0xFFFF;
            if (policy)
            {
                pkey = CommonPkey(sourceKeys[s], destKeys[d], askedPkey);
                if (pkey == 0)
                {
                    continue;
                }
            }
            double gbps = 0;
            uint8_t mtu = 0;
            if (!WalkPath(subnet, v.tables, src, dst, &gbps, &mtu))
            {
                continue;
            }
            if (gbps >= 1e9)
            {
                // A switch's path to itself crosses no cable: its fastest link bounds it.
                gbps = 0;
                mtu = 1;
                const IbSmNode& n = subnet.Node(src.node);
                for (uint8_t p = 1; p <= n.numPorts; ++p)
                {
                    if (n.ports[p].peerNode >= 0)
                    {
                        gbps = std::max(gbps, IbSaPortGbps(n.ports[p].info));
                        mtu = std::max<uint8_t>(mtu, n.ports[p].info.neighborMtu);
                    }
                }
            }
            IbPathRecord r;
            r.sgid = IbPortGid(subnet.Node(src.node).ports[src.port].guid);
            r.dgid = IbPortGid(subnet.Node(dst.node).ports[dst.port].guid);
            r.slid = subnet.LidOf(src.node, src.port);
            r.dlid = subnet.LidOf(dst.node, dst.port);
            r.reversible = true;
            r.numbPath = 1;
            r.pkey = pkey;
            if (mask & IbPathRecord::kCompServiceId)
            {
                r.serviceId = q.serviceId; // the path is the same for every service here
            }
            // The route's virtual layer is its SL (SL n -> VL n, the switches' default map).
            r.sl = v.layers ? v.layers->Of(r.slid, r.dlid) : 0;
            r.mtuSelector = 2; // exactly
            r.mtu = mtu;
            r.rateSelector = 2;
            r.rate = IbSaRateCode(gbps);
            r.packetLifeTimeSelector = 2;
            r.packetLifeTime = 18; // 4.096 us x 2^18 ~ 1 s: opensm's default order of magnitude
            if ((mask & IbPathRecord::kCompSl) && r.sl != q.sl)
            {
                continue;
            }
            if ((mask & IbPathRecord::kCompMtu) &&
                !PassesSelector((mask & IbPathRecord::kCompMtuSelector) ? q.mtuSelector : 2,
                                r.mtu, q.mtu))
            {
                continue;
            }
            if ((mask & IbPathRecord::kCompRate) &&
                !PassesSelector((mask & IbPathRecord::kCompRateSelector) ? q.rateSelector : 2,
                                gbps, IbSaRateGbps(q.rate)))
            {
                continue;
            }
            std::vector<uint8_t> bytes(IbPathRecord::kSize);
            r.WriteTo(bytes.data());
            records.push_back(std::move(bytes));
        }
    }
    return true;
}

} // namespace

namespace
{

/// IbSaServe and IbSaServeSegments: with `multi`, a table larger than one MAD becomes several
/// RMPP DATA segments in `out`; without, it is answered ERR_NO_RESOURCES. False: no answer.
bool
Serve(const IbSmSubnet& subnet, const IbRoutingTables& tables, const uint8_t* request,
      const IbVlLayers* layers, const std::vector<IbSaSmEntry>* sms, IbSmMulticast* multicast,
      uint64_t smKey, const IbSaPartitions* partitions, bool multi,
      std::vector<std::array<uint8_t, kIbMadBytes>>& out)
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
    const bool set = h.GetMethod() == IbMadMethod::Set;
    const bool del = h.GetMethod() == IbMadMethod::Delete;
    // A Set is answered GetResp, a Delete DeleteResp (§13.4.5, §15.2).
    resp.Mad().SetMethod(table ? IbMadMethod::GetTableResp
                         : del ? IbMadMethod::DeleteResp
                               : IbMadMethod::GetResp);
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
    if (h.GetMethod() != IbMadMethod::Get && !table && !set && !del)
    {
        return answer(IbMadStatus::UnsupportedMethod);
    }
    if ((set || del) && h.GetAttributeId() != IbSaAttr::McMemberRecord)
    {
        return answer(IbMadStatus::UnsupportedMethodAttr); // no other record is written here
    }
    const uint64_t mask = req.GetComponentMask();
    const IbSaView view{subnet, tables, layers, sms, multicast, partitions};
    std::vector<std::vector<uint8_t>> records;
    uint32_t recordBytes = 0;
    // Every candidate record of the attribute, kept when the components the request selects
    // agree with it (§15.2.4.1).
    // (The field lists are IbSaLayout's, which live as long as the program: held by pointer.)
    auto select = [&](const std::vector<IbSaField>& fields, uint64_t subsetMask = 0) {
        return [&records, &req, mask, list = &fields, subsetMask](std::vector<uint8_t> bytes) {
            if (IbSaComponentsMatch(bytes.data(), req.Data(), mask, *list, subsetMask))
            {
                records.push_back(std::move(bytes));
            }
        };
    };
    switch (h.GetAttributeId())
    {
    case IbSaAttr::ClassPortInfo: {
        if (table)
        {
            return answer(IbMadStatus::UnsupportedMethodAttr); // Get only (§13.4.8.1)
        }
        recordBytes = IbSaRecordBytes::ClassPortInfo;
        records.push_back(SaClassPortInfo());
        break;
    }
    case IbSaAttr::NodeRecord:
        recordBytes = IbNodeRecord::kSize;
        NodeRecords(view, select(IbSaLayout::kNodeRecord));
        break;
    case IbSaAttr::PortInfoRecord:
        recordBytes = IbSaRecordBytes::PortInfoRecord;
        PortInfoRecords(view, select(IbSaLayout::kPortInfoRecord, kPirCapabilityMasks));
        break;
    case IbSaAttr::LinkRecord:
        recordBytes = IbSaRecordBytes::LinkRecord;
        LinkRecords(view, select(IbSaLayout::kLinkRecord));
        break;
    case IbSaAttr::SwitchInfoRecord:
        recordBytes = IbSaRecordBytes::SwitchInfoRecord;
        SwitchInfoRecords(view, select(IbSaLayout::kSwitchInfoRecord));
        break;
    case IbSaAttr::LftRecord:
        recordBytes = IbSaRecordBytes::LftRecord;
        LftRecords(view, select(IbSaLayout::kLftRecord));
        break;
    case IbSaAttr::GuidInfoRecord:
        recordBytes = IbSaRecordBytes::GuidInfoRecord;
        GuidInfoRecords(view, select(IbSaLayout::kGuidInfoRecord));
        break;
    case IbSaAttr::PKeyTableRecord:
        recordBytes = IbSaRecordBytes::PKeyTableRecord;
        PKeyTableRecords(view, select(IbSaLayout::kPKeyTableRecord));
        break;
    case IbSaAttr::SmInfoRecord:
        recordBytes = IbSaRecordBytes::SmInfoRecord;
        SmInfoRecords(view, select(IbSaLayout::kSmInfoRecord));
        break;
    case IbSaAttr::PathRecord: {
        recordBytes = IbPathRecord::kSize;
        IbPathRecord q;
        q.ReadFrom(req.Data());
        if (!table && !(mask & (IbPathRecord::kCompSlid | IbPathRecord::kCompSgid)) &&
            !(mask & (IbPathRecord::kCompDlid | IbPathRecord::kCompDgid)))
        {
            // A Get names one path (§15.4.2): without either end it names none.
            return answer(IbSaStatus::InsufficientComponents);
        }
        if (!PathRecords(view, q, mask, records))
        {
            return answer(IbSaStatus::NoResources);
        }
        break;
    }
    case IbSaAttr::McMemberRecord: {
        recordBytes = IbSaRecordBytes::McMemberRecord;
        IbMcMemberRecord q;
        q.ReadFrom(req.Data());
        IbMcMemberRecord a;
        if (set || del)
        {
            if (!multicast)
            {
                return answer(IbSaStatus::NoResources); // nowhere to keep a group
            }
            const uint16_t status = set ? multicast->Join(subnet, q, mask, a)
                                        : multicast->Leave(q, mask, a);
            if (status != IbMadStatus::Ok)
            {
                return answer(status);
            }
            std::vector<uint8_t> bytes(IbMcMemberRecord::kSize);
            a.WriteTo(bytes.data());
            records.push_back(std::move(bytes));
            break;
        }
        // opensm refuses a query whose MTU or Rate has no code as it refuses such a join.
        const bool mtuGiven = (mask & IbMcMemberRecord::kCompMtu) &&
                              (mask & IbMcMemberRecord::kCompMtuSelector);
        const bool rateGiven = (mask & IbMcMemberRecord::kCompRate) &&
                               (mask & IbMcMemberRecord::kCompRateSelector);
        if ((mtuGiven && (q.mtu < 1 || q.mtu > 5)) || (rateGiven && IbSaRateGbps(q.rate) == 0))
        {
            return answer(IbSaStatus::ReqInvalid);
        }
        if (multicast)
        {
            // Trusted: a requester that shows this SM's SM_Key (§15.4.3).
            const bool trusted = smKey != 0 && req.GetSmKey() == smKey;
            std::vector<IbMcMemberRecord> found;
            multicast->Query(q, mask, trusted, found);
            for (const IbMcMemberRecord& r : found)
            {
                std::vector<uint8_t> bytes(IbMcMemberRecord::kSize);
                r.WriteTo(bytes.data());
                records.push_back(std::move(bytes));
            }
        }
        break;
    }
    case IbSaAttr::MftRecord:
        recordBytes = IbSaRecordBytes::MftRecord;
        MftRecords(view, select(IbSaLayout::kMftRecord));
        break;
    case IbSaAttr::ServiceRecord:
    case IbSaAttr::InformInfoRecord:
        // Records this SA knows but holds none of: no service registers with it and it takes
        // no subscriptions.
        recordBytes = h.GetAttributeId() == IbSaAttr::ServiceRecord ? 176 : 64;
        break;
    default:
        return answer(IbMadStatus::UnsupportedMethodAttr);
    }
    if (records.empty() && !table)
    {
        return answer(IbSaStatus::NoRecords);
    }
    if (records.size() * ((recordBytes + 7) / 8 * 8u) > kMaxTableBytes)
    {
        return answer(IbSaStatus::NoResources);
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
          uint8_t* response, const IbVlLayers* layers, const std::vector<IbSaSmEntry>* sms,
          IbSmMulticast* multicast, uint64_t smKey, const IbSaPartitions* partitions)
{
    std::vector<std::array<uint8_t, kIbMadBytes>> out;
    if (!Serve(subnet, tables, request, layers, sms, multicast, smKey, partitions, false, out))
    {
        return false;
    }
    std::memcpy(response, out[0].data(), kIbMadBytes);
    return true;
}

std::vector<std::array<uint8_t, kIbMadBytes>>
IbSaServeSegments(const IbSmSubnet& subnet, const IbRoutingTables& tables,
                  const uint8_t* request, const IbVlLayers* layers,
                  const std::vector<IbSaSmEntry>* sms, IbSmMulticast* multicast, uint64_t smKey,
                  const IbSaPartitions* partitions)
{
    std::vector<std::array<uint8_t, kIbMadBytes>> out;
    if (!Serve(subnet, tables, request, layers, sms, multicast, smKey, partitions, true, out))
    {
        out.clear();
    }
    return out;
}

} // namespace ns3
