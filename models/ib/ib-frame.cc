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
    return f;
}

void
IbFramePool::Release(IbFrame* frame)
{
    frame->packet = nullptr; // drop the packet's bytes now, keep the frame for reuse
    frame->verifyBytes = false;
    frame->icrcKnown = false;
    frame->countedInFlight = false;
    FreeList().push_back(frame);
}

} // namespace ns3
