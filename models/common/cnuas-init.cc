#include "cnuas-init.h"

#include "ns3/global-value.h"
#include "ns3/nstime.h"
#include "ns3/string.h"

namespace ns3
{
void
CnuasInit()
{
    static bool done = false;
    if (!done)
    {
        Time::SetResolution(Time::PS);
        // Every simulation's event queue: FifoHeapScheduler runs events in exactly the order
        // of ns-3's own schedulers (timestamp, then insertion number) at less cost per event
        // (roce-fct on a k=8 fat-tree 14-16 % faster than with MapScheduler, identical output;
        // docs/performance.md). `--set SchedulerType=...` still picks another.
        GlobalValue::Bind("SchedulerType", StringValue("ns3::FifoHeapScheduler"));
        // And the simulator core: ns-3's DefaultSimulatorImpl's semantics event for event,
        // less work around each (LeanSimulatorImpl; docs/performance.md).
        // `--set SimulatorImplementationType=ns3::DefaultSimulatorImpl` still picks ns-3's.
        GlobalValue::Bind("SimulatorImplementationType", StringValue(kCnuasSimulatorImplementation));
        done = true;
    }
}
} // namespace ns3
