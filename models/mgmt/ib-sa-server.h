// The subnet administration (SA) answers of the built-in SM: NodeRecord and PathRecord Get and
// GetTable from the subnet database and the routes the SM programmed. IBA vol. 1 §15.
#ifndef CNUAS_IB_SA_SERVER_H
#define CNUAS_IB_SA_SERVER_H

#include "ib-mad-header.h"
#include "ib-routing-engine.h"
#include "ib-sa-records.h"
#include "ib-sm-subnet.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

/**
 * Answers one SA request (the 256 bytes of an IbSaMad) from `subnet` and `tables`; writes the
 * 256-byte response into `response` and returns true, or returns false for something that gets
 * no answer (a response, a non-SA class).
 *
 * NodeRecord (§15.2.5.2): by LID (ComponentMask bit 0) or, with no component, every node.
 * PathRecord (§15.2.5.16): source by SLID or SGID, destination by DLID or DGID (LMC 0: one
 * path); the route is the one the LFTs give, checked to arrive; MTU and rate are the smallest
 * along it; SL the route's virtual layer when `layers` has one (else 0), P_Key 0xFFFF,
 * reversible. Errors are statuses, never silence: bad versions
 * (code 1), methods other than Get/GetTable (2), other attributes (3), missing components
 * (ERR_REQ_INSUFFICIENT_COMPONENTS), nothing found or no route (ERR_NO_RECORDS), several
 * matches to a Get (ERR_TOO_MANY_RECORDS). A GetTable answer is one RMPP segment (flags Active,
 * First, Last); a table that needs more segments answers ERR_NO_RESOURCES (multi-segment RMPP is
 * not modelled).
 */
bool IbSaServe(const IbSmSubnet& subnet, const IbRoutingTables& tables, const uint8_t* request,
               uint8_t* response, const IbVlLayers* layers = nullptr);

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
                                                               const IbVlLayers* layers = nullptr);

} // namespace ns3

#endif
