// Process-wide ns-3 settings every Cnuas program shares.
#ifndef CNUAS_INIT_H
#define CNUAS_INIT_H

namespace ns3
{
/**
 * Configure ns-3 for Cnuas: picosecond time resolution (a byte lasts 40 ps on a 4x HDR link and
 * 10 ps at 800 Gb/s, so nanoseconds would round every serialization time), FifoHeapScheduler
 * as the default event queue and LeanSimulatorImpl as the default simulator core (the same
 * event order as ns-3's, cheaper). Call once at
 * the top of main(), before any Time value is created; later calls are no-ops.
 */
void CnuasInit();

/// The simulator core CnuasInit selects, for code that switches to another (real time) and back.
inline constexpr const char kCnuasSimulatorImplementation[] = "ns3::LeanSimulatorImpl";
} // namespace ns3

#endif
