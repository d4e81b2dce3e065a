// In-band network telemetry (INT) as HPCC uses it (Li et al., "HPCC: High Precision Congestion
// Control", SIGCOMM 2019, §3.2 and Fig. 4): every switch egress a packet leaves appends one hop
// record (the port's line rate, a timestamp, the port's cumulative transmitted bytes and its
// egress queue length); the receiver echoes the stack in its ACK and the sender's congestion
// control reads it. Neutral ground between the Ethernet fabric (which fills the stack) and the
// RDMA transport (which echoes it and hands it to its policy).
#ifndef CNUAS_INT_STACK_H
#define CNUAS_INT_STACK_H

#include <array>
#include <cstdint>

namespace ns3
{

/// Hop records a stack can hold. The HPCC simulator holds 5 (its IntHeader::maxHop); 8 leaves
/// room for deeper fabrics while keeping the pooled record small (8 x 32 bytes).
constexpr uint32_t kIntStackCapacity = 8;
/// Default hop limit: the HPCC simulator's.
constexpr uint32_t kIntDefaultMaxHops = 5;

/// One switch egress as the packet left it. Values are exact (the HPCC simulator quantizes
/// them into 64 bits: 3-bit rate code, 24-bit ns time, bytes in 128 B units, queue in 80 B
/// units, both times INT_MULTI); Cnuas keeps the full values and charges the wire size only.
struct IntHop
{
    uint64_t lineRateBps = 0; ///< the egress port's rate (any speed)
    int64_t timePs = 0;       ///< simulated time the packet left, picoseconds
    uint64_t txBytes = 0;     ///< bytes the port transmitted before this packet (wire bytes)
    uint64_t qlenBytes = 0;   ///< bytes queued on the port (all classes) after this packet left
};

/// The hop records of one packet, in path order. Only hops[0, nHops) mean anything: the slots
/// beyond are never read (a reader stops at nHops), so a copy or a recycled stack may leave
/// them as they were.
struct IntStack
{
    uint8_t nHops = 0;
    std::array<IntHop, kIntStackCapacity> hops{};

    /// Copies `o`'s hop count and its hops in use, not the slots beyond: a stack is 264 bytes,
    /// the hops of a fat-tree path (at most 5) 160 of them, and each copy on the INT path
    /// (the receiver's echo, the ACK's record, the sender's previous echo) writes lines that
    /// are cold. A count beyond the capacity (a malformed echo) is kept; only the capacity is
    /// copied.
    void CopyHopsFrom(const IntStack& o)
    {
        nHops = o.nHops;
        const uint32_t n = nHops < kIntStackCapacity ? nHops : kIntStackCapacity;
        for (uint32_t j = 0; j < n; ++j)
        {
            hops[j] = o.hops[j];
        }
    }
};

/// Bytes an INT stack of `maxHops` slots adds to a packet on the wire: the HPCC simulator's
/// IntHeader in its normal mode is a fixed array of maxHop 8-byte hop words and a 2-byte hop
/// count, present in every data packet and echoed in every ACK (its int-header.h).
constexpr uint32_t
IntStackWireBytes(uint32_t maxHops)
{
    return 8 * maxHops + 2;
}

} // namespace ns3

#endif
