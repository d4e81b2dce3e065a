#include "ib-frame.h"

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
