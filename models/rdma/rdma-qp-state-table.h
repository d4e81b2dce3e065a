// Which QP state transitions the Modify QP verb allows, and with which attributes: IBA vol. 1
// §11.2.5.2 (Modify Queue Pair, the table of required and optional attributes per transition
// and service type) and §10.3.1 (QP state diagram), as ibv_modify_qp(3) documents them for RC,
// UC and UD.
#ifndef CNUAS_RDMA_QP_STATE_TABLE_H
#define CNUAS_RDMA_QP_STATE_TABLE_H

#include "rdma-types.h"

#include <cstdint>

namespace ns3
{

/// One cell of the transition table.
struct RdmaQpTransitionRule
{
    bool valid = false;    ///< the transition exists for this QP type
    uint32_t required = 0; ///< attributes that must be in the mask (besides RDMA_QP_STATE)
    uint32_t optional = 0; ///< attributes that may be in the mask
};

/**
 * \brief The rule for moving a QP of type `type` from `from` to `to`.
 *
 * RDMA_QP_STATE is implied and is in neither set (a mask without it asks for `to == from`).
 * Types other than RC, UC and UD, and states outside RESET..ERR, give an invalid rule.
 *
 * Where this table departs from Linux's ib_modify_qp_is_ok():
 * - RESET -> ERR is allowed: IBA vol. 1 §10.3.1 lets Modify QP move a QP to Error from any
 *   state (current Linux core refuses this one transition).
 * - RC has no SQE state (IBA vol. 1 §10.3.1: SQE is for every service type except RC, whose
 *   send errors go straight to Error), so no transition leaves SQE for RC.
 */
RdmaQpTransitionRule RdmaQpTransition(RdmaQpType type, RdmaQpState from, RdmaQpState to);

} // namespace ns3

#endif
