#include "ib-frame.h"

namespace ns3
{

namespace
{
std::vector<IbFrame*>&
FreeList()
{
    static std::vector<IbFrame*> list;
    return list;
}
} // namespace

IbFrame*
IbFramePool::Allocate()
{
    auto& list = FreeList();
    if (list.empty())
    {
        return new IbFrame();
    }
    IbFrame* f = list.back();
    list.pop_back();
    *f = IbFrame(); // no field of a previous life may leak into this one
    return f;
}

void
IbFramePool::Release(IbFrame* frame)
{
    frame->packet = nullptr; // drop the packet's bytes now, keep the frame for reuse
    FreeList().push_back(frame);
}

} // namespace ns3
