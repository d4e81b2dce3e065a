#include "ib-frame.h"

#include "ns3/simulator.h"

#include <memory>

namespace ns3
{

namespace
{
struct Pool
{
    std::vector<std::unique_ptr<IbFrame>> all; ///< every frame ever made (the pool owns them)
    std::vector<IbFrame*> free;
    bool reclaimScheduled = false;
};

Pool&
ThePool()
{
    static Pool pool;
    return pool;
}

/// At Simulator::Destroy, frames still referenced only by discarded events (packets in flight
/// when the run stopped) come back to the pool instead of leaking.
void
ReclaimAll()
{
    Pool& p = ThePool();
    p.reclaimScheduled = false;
    p.free.clear();
    for (auto& f : p.all)
    {
        *f = IbFrame();
        f->inPool = true;
        p.free.push_back(f.get());
    }
}
} // namespace

IbFrame*
IbFramePool::Allocate()
{
    Pool& p = ThePool();
    if (!p.reclaimScheduled)
    {
        Simulator::ScheduleDestroy(&ReclaimAll);
        p.reclaimScheduled = true;
    }
    IbFrame* f;
    if (p.free.empty())
    {
        p.all.push_back(std::make_unique<IbFrame>());
        f = p.all.back().get();
    }
    else
    {
        f = p.free.back();
        p.free.pop_back();
        *f = IbFrame(); // no field of a previous life may leak into this one
    }
    f->inPool = false;
    return f;
}

void
IbFramePool::Release(IbFrame* frame)
{
    if (frame->inPool)
    {
        return; // already reclaimed (a device disposing after Simulator::Destroy)
    }
    frame->packet = nullptr; // drop the packet's bytes now, keep the frame for reuse
    frame->inPool = true;
    ThePool().free.push_back(frame);
}

} // namespace ns3
