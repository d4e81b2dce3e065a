// One bus, several masters behind one arbiter: a Modbus RTU segment has exactly one master
// (Modbus over serial line v1.02 §2.1), so a gateway that serves two (the simulated BMC and a
// real master on the pty) lets them take turns, one whole transaction at a time.
#ifndef CNUAS_RS485_BUS_ARBITER_H
#define CNUAS_RS485_BUS_ARBITER_H

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace ns3
{

/// What the arbiter counted for one master.
struct Rs485BusArbiterCounters
{
    uint64_t grants = 0;     ///< transactions the master ran
    uint64_t waits = 0;      ///< of which it had to wait for another master's transaction
    Time waited;             ///< total time spent waiting for the bus
    Time maxWait;            ///< longest single wait
};

/**
 * \brief Serialises the transactions of several Modbus masters on one RS-485 segment, the way a
 * Modbus gateway in front of a serial line does (serial line v1.02 §2.1: one master at a time;
 * §2.4.1: a master starts a new request only when the previous transaction has ended, by a
 * response or by its response time-out).
 *
 * A master registers once (Register), then for each transaction calls Request with a callback;
 * the callback runs (in a fresh event) when the bus is the master's, immediately if it is free.
 * The master calls Release when its transaction is over. Waiting masters are served first come,
 * first served, so a master that releases and asks again goes behind any master already waiting.
 * Simulation thread only.
 */
class Rs485BusArbiter : public Object
{
  public:
    static TypeId GetTypeId();
    Rs485BusArbiter();
    ~Rs485BusArbiter() override;

    /// Trace signature: the bus passed to a master (its id and name).
    typedef void (*GrantCallback)(uint32_t master, const std::string& name);

    /// Adds a master; returns its id.
    uint32_t Register(const std::string& name);
    /// Asks for the bus; `granted` runs once it is this master's. A second Request while one is
    /// pending or held replaces nothing and returns false.
    bool Request(uint32_t master, std::function<void()> granted);
    /// The master's transaction is over: the bus goes to the next waiting master, if any.
    void Release(uint32_t master);
    /// Withdraws a pending request (the master no longer needs the bus); releases a held bus.
    void Cancel(uint32_t master);

    /// Whether `master` holds the bus.
    bool Holds(uint32_t master) const { return m_owner == static_cast<int64_t>(master); }
    /// Whether `master` waits for the bus.
    bool IsWaiting(uint32_t master) const;
    /// Whether nobody holds the bus.
    bool IsFree() const { return m_owner < 0; }
    const std::string& GetName(uint32_t master) const { return m_masters.at(master).name; }
    const Rs485BusArbiterCounters& GetCounters(uint32_t master) const
    {
        return m_masters.at(master).counters;
    }

  protected:
    void DoDispose() override;

  private:
    struct Master
    {
        std::string name;
        std::function<void()> granted; ///< set while waiting or between grant and callback
        Time askedAt;
        Rs485BusArbiterCounters counters;
    };
    void Grant(uint32_t master);
    void Deliver(uint32_t master, uint64_t generation);

    std::vector<Master> m_masters;
    std::deque<uint32_t> m_waiting;
    int64_t m_owner = -1;
    uint64_t m_generation = 0; ///< bumped on every grant, so a stale Deliver does nothing
    TracedCallback<uint32_t, const std::string&> m_grantTrace;
};

} // namespace ns3

#endif
