// The subnet administration (SA) answers of the built-in SM: the records administrators and
// programs query, from the subnet database and the routes the SM programmed. IBA vol. 1 §15.
#ifndef CNUAS_IB_SA_SERVER_H
#define CNUAS_IB_SA_SERVER_H

#include "ib-mad-header.h"
#include "ib-sm-info.h"
#include "ib-routing-engine.h"
#include "ib-sa-records.h"
#include "ib-sm-partitions.h"
#include "ib-sm-subnet.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

class IbSmMulticast;

/// The SM's partition policy, for the P_KeyTableRecords the SA gives: what the SM wrote into
/// each endport (`policy` empty or absent: the default partition alone). `smPortGuid` is the
/// port the policy's SELF names.
struct IbSaPartitions
{
    const IbPartitionPolicy* policy = nullptr;
    uint64_t smPortGuid = 0;
};

/// An SM the SA reports in SMInfoRecords: the LID of its port and its SMInfo.
struct IbSaSmEntry
{
    uint16_t lid = 0;
    IbSmInfo info;
};

/**
 * Answers one SA request (the 256 bytes of an IbSaMad) from `subnet` and `tables`; writes the
 * 256-byte response into `response` and returns true, or returns false for something that gets
 * no answer (a response, a non-SA class).
 *
 * Records (IBA vol. 1 §15.2.5), Get and GetTable, selected by ComponentMask as §15.2.4.1 says
 * (every selected field must agree; PortInfoRecord's CapabilityMask as a bit subset):
 * ClassPortInfo (Get), NodeRecord, PortInfoRecord, LinkRecord, SwitchInfoRecord,
 * LinearForwardingTableRecord, GUIDInfoRecord, P_KeyTableRecord (from `partitions`: the blocks
 * the SM wrote), SMInfoRecord (from `sms`) and
 * PathRecord. PathRecord: each end by LID or GID, or, not given, every endport (half- and
 * whole-world queries, GetTable); LMC 0: one path a pair; the route the LFTs give, checked to
 * arrive; MTU and rate the smallest along it; SL the route's virtual layer when `layers` has
 * one (else 0); P_Key 0xFFFF; reversible; P_Key, SL, MTU and Rate components narrow it.
 * MCMemberRecord (§15.2.5.17) from `multicast`'s groups: Get and GetTable (IbSmMulticast::
 * Query; a requester whose SM_Key is `smKey`, not 0, is trusted and sees every member),
 * SubnAdmSet (a join, answered GetResp with the member's record) and SubnAdmDelete (a leave,
 * answered DeleteResp), which change `multicast`; MulticastForwardingTableRecord (§15.2.5.8,
 * Get and GetTable): every switch's MFT blocks in use, as `multicast`'s trees make them. Without
 * `multicast` no group exists and a join is refused (ERR_NO_RESOURCES). ServiceRecord and
 * InformInfoRecord: this SA holds none (an empty table, or ERR_NO_RECORDS to a Get). Errors are
 * statuses, never silence: bad versions (code 1), methods other than Get/GetTable/Set/Delete
 * (2), Set and Delete of anything but MCMemberRecord and other attributes (3), a join or leave
 * refused (IbSmMulticast's status), a PathRecord Get naming no
 * end (ERR_REQ_INSUFFICIENT_COMPONENTS), nothing found or no route to a Get (ERR_NO_RECORDS),
 * several matches to a Get (ERR_TOO_MANY_RECORDS), a table over 4 MiB (ERR_NO_RESOURCES). A
 * GetTable answer is one RMPP segment (flags Active, First, Last); a table that needs more
 * segments answers ERR_NO_RESOURCES here (IbSaServeSegments sends them).
 */
bool IbSaServe(const IbSmSubnet& subnet, const IbRoutingTables& tables, const uint8_t* request,
               uint8_t* response, const IbVlLayers* layers = nullptr,
               const std::vector<IbSaSmEntry>* sms = nullptr,
               IbSmMulticast* multicast = nullptr, uint64_t smKey = 0,
               const IbSaPartitions* partitions = nullptr);

/**
 * The same answer, where a GetTable larger than one MAD becomes several RMPP DATA segments
 * (IBA vol. 1 §13.6.3: Active, First on the first, Last on the last, SegmentNumber 1..n,
 * PayloadLength the whole payload first and the last segment's share last), to be sent in
 * order. Empty for what gets no answer. The sender does not wait for the requester's window
 * (its ACKs are dropped): every segment goes at once.
 */
std::vector<std::array<uint8_t, kIbMadBytes>> IbSaServeSegments(const IbSmSubnet& subnet,
                                                               const IbRoutingTables& tables,
                                                               const uint8_t* request,
                                                               const IbVlLayers* layers = nullptr,
                                                               const std::vector<IbSaSmEntry>* sms = nullptr,
                                                               IbSmMulticast* multicast = nullptr,
                                                               uint64_t smKey = 0,
                                                               const IbSaPartitions* partitions =
                                                                   nullptr);

} // namespace ns3

#endif
