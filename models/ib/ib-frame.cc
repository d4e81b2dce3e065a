#include "ib-frame.h"

#include <algorithm>

#include "models/common/sim-object-pool.h"

namespace ns3
{

namespace
{
SimObjectPool<IbFrame>&
ThePool()
{
    // Never destroyed: ports release frames when they are disposed, and a program that exits
    // without Simulator::Destroy disposes them from exit handlers, after function-local
    // statics like this one would be gone (found by tests/fuzz). The OS takes the memory back.
    static auto* pool = new SimObjectPool<IbFrame>;
    return *pool;
}
} // namespace

void
IbFrame::ResetForReuse()
{
    // Keep in step with the fields above (the static_assert below fails when one is added).
    bytes = 0;
    blocks = 0;
    dlid = 0;
    slid = 0;
    sl = 0;
    vl = 0;
    lnh = IbLnh::IbaLocal;
    verifyBytes = false;
    icrcKnown = false;
    fromPeer = false;
    fctbsAfter = 0;
    linkGeneration = 0;
    icrc = 0;
    tailArrivalPs = 0;
    outPort = 0;
    outVl = 0;
    uid = 0;
    inPool = false;
    ccHead = false;
    storedBytes = 0;
    tail.Release();
    receiver = nullptr;
}

void
IbFrame::CopyPacketFrom(const IbFrame& other)
{
    // Keep in step with ResetForReuse (the same fields, but for the pool's and the event's).
    bytes = other.bytes;
    blocks = other.blocks;
    dlid = other.dlid;
    slid = other.slid;
    sl = other.sl;
    vl = other.vl;
    lnh = other.lnh;
    verifyBytes = other.verifyBytes;
    icrcKnown = other.icrcKnown;
    fromPeer = other.fromPeer;
    fctbsAfter = other.fctbsAfter;
    linkGeneration = other.linkGeneration;
    icrc = other.icrc;
    tailArrivalPs = other.tailArrivalPs;
    outPort = other.outPort;
    outVl = other.outVl;
    uid = other.uid;
    ccHead = other.ccHead;
    storedBytes = other.storedBytes;
    tail = other.tail;
    std::copy(other.head.begin(),
              other.head.begin() + std::min(other.storedBytes, kInlineBytes),
              head.begin());
}

// A field added to IbFrame changes its size: add it to ResetForReuse, then update this figure.
static_assert(sizeof(IbFrame) == 200,
              "IbFrame changed: reset the new field in IbFrame::ResetForReuse");

IbFrame*
IbFramePool::Allocate()
{
    return ThePool().Allocate();
}

// flatten: GCC 12 otherwise calls an out-of-line copy of Ptr::operator= for the nulling, some 20
// instructions more per frame than when the pool was written out here (measured with callgrind).
__attribute__((flatten)) void
IbFramePool::Release(IbFrame* frame)
{
    if (ThePool().Release(frame))
    {
        frame->ClearBytes(); // drop a stored tail's Packet now, keep the frame for reuse
    }
}

} // namespace ns3
