// The HCA object model of the RDMA transport in one include: device, PD, AH, MR, CQ, SRQ, QP,
// the memory and queue interfaces, and the verbs types. See docs/rdma-objects.md.
#ifndef CNUAS_RDMA_OBJECTS_H
#define CNUAS_RDMA_OBJECTS_H

#include "rdma-cq.h"
#include "rdma-device.h"
#include "rdma-memory.h"
#include "rdma-mr.h"
#include "rdma-pd.h"
#include "rdma-qp-state-table.h"
#include "rdma-qp.h"
#include "rdma-queue.h"
#include "rdma-srq.h"
#include "rdma-types.h"

#endif
