#include "cnuas-init.h"

#include "ns3/nstime.h"

namespace ns3
{
void
CnuasInit()
{
    static bool done = false;
    if (!done)
    {
        Time::SetResolution(Time::PS);
        done = true;
    }
}
} // namespace ns3
