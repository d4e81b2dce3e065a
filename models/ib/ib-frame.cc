#include "ib-frame.h"

#include "models/common/sim-object-pool.h"

namespace ns3
{

IbFrame*
IbFramePool::Allocate()
{
    return SimObjectPool<IbFrame>::Allocate();
}

void
IbFramePool::Release(IbFrame* frame)
{
    // Drop the packet's bytes now, keep the frame for reuse.
    SimObjectPool<IbFrame>::Release(frame, [](IbFrame& f) { f.packet = nullptr; });
}

} // namespace ns3
