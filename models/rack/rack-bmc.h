// A BMC that polls an RS-485 segment of ORv3 devices as OpenBMC's rackmon does, and keeps
// what it sees for a northbound API (Redfish, CLI).
#ifndef CNUAS_RACK_BMC_H
#define CNUAS_RACK_BMC_H

#include "modbus-master.h"
#include "rack-register-map.h"
#include "rs485-bus-arbiter.h"

#include "ns3/application.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ns3
{

/// One register as the BMC last read it.
struct RackBmcRegister : public RackRegisterValue
{
    bool valid = false; ///< read at least once
    Time updated;       ///< when the value was last read (simulation time)
};

/// One device in the BMC's inventory.
struct RackBmcDevice
{
    std::string name;  ///< "<TYPE>_<address in hex>", e.g. "ORV3_PSU_C8"
    uint8_t address = 0;
    std::string type;  ///< the register map's device name
    bool dormant = false;
    Time discovered;   ///< when the discovery probe answered
    Time lastSeen;     ///< last answer of any kind (normal or exception)
    Time lastUnixTimeWrite;
    uint64_t reads = 0;        ///< span reads answered
    uint64_t failures = 0;     ///< span reads that got no usable answer
    uint32_t consecutiveFailures = 0;
    bool reloaded = false; ///< the first full reload (register by register) was queued
    std::vector<RackBmcRegister> registers; ///< in map order

    /// The register with this name, or nullptr.
    const RackBmcRegister* Find(const std::string& registerName) const;
};

/// BMC counters.
struct RackBmcCounters
{
    uint64_t probes = 0;
    uint64_t probeAnswers = 0;
    uint64_t reads = 0;
    uint64_t readFailures = 0;
    uint64_t exceptions = 0;
    uint64_t timeWrites = 0;
    uint64_t timeWriteFailures = 0;
    uint64_t monitorCycles = 0;
    uint64_t pauses = 0; ///< Pause() calls that paused a running poller
};

/**
 * \brief A rackmon2-like Modbus poller (facebook/openbmc rackmon2; behaviour per the design
 * note rack-modbus-orv3.md §2.1), on a ModbusMaster:
 *  - start-up discovery: ScanPasses passes over every address of every map's ranges, each
 *    probed with FC 03 of the map's probe register (1 register) at the map's line format with
 *    ProbeTimeout and no retry; an address that answers (normal or exception response) becomes
 *    a device of that type;
 *  - afterwards one unknown address is probed every ScanInterval (round robin);
 *  - monitoring every MonitorInterval: each active device is read in spans (contiguous
 *    registers merged up to MaxSpanLength, as rackmon2 does after its first reload), with
 *    CommandTimeout and CommandRetries;
 *  - the map's Unix-time register is written (FC 10, u32) at discovery and every
 *    unix_time period of the map;
 *  - a device that fails DormantFailures reads in a row becomes dormant (not read); it is
 *    probed again once DormantReprobe has passed since it was last seen, and revived when it
 *    answers;
 *  - transactions run one at a time; the master switches its line format per device type.
 *
 * Northbound read API: GetInventory() / GetDevice() (name, address, type, each register's
 * decoded value with unit and flag names, last-seen time, dormant flag) and the Discovered,
 * Dormant, Revived, Poll and Changed trace sources.
 */
class RackBmc : public Application
{
  public:
    static TypeId GetTypeId();
    RackBmc();
    ~RackBmc() override;

    /// Trace signatures.
    typedef void (*DeviceCallback)(uint8_t address, const std::string& type);
    typedef void (*PollCallback)(uint8_t address, uint16_t start, uint16_t count, bool ok);
    typedef void (*ChangedCallback)(uint8_t address, const std::string& registerName);
    typedef void (*CycleCallback)(uint64_t cycle, Time start, Time end);
    typedef void (*HeldCallback)(bool held);

    void SetMaster(Ptr<ModbusMaster> master);
    Ptr<ModbusMaster> GetMaster() const;
    /**
     * Shares the bus with other masters (e.g. a real master on the pty bridge): each
     * transaction (request, retries, response or time-out) first waits for the arbiter's
     * grant and releases the bus when it has ended. Before start; null: the BMC owns the bus.
     */
    void SetArbiter(Ptr<Rs485BusArbiter> arbiter);
    /// Adds a device type to discover and poll (before start).
    void AddMap(const RackRegisterMap& map);
    const std::vector<RackRegisterMap>& GetMaps() const { return m_maps; }

    // ---- read API -------------------------------------------------------------------------
    /// Every device found so far, in address order.
    std::vector<RackBmcDevice> GetInventory() const;
    /// A device by Modbus address, or nullptr.
    const RackBmcDevice* GetDevice(uint8_t address) const;
    /// Whether the start-up scan has finished.
    bool IsScanComplete() const { return m_scanComplete; }
    const RackBmcCounters& GetCounters() const { return m_counters; }
    /// The Unix time the BMC believes it is (UnixTimeAtStart + simulation time), seconds.
    uint32_t GetUnixTime() const;

    // ---- sharing the bus with another master ------------------------------------------------
    /**
     * Stops polling, as `rackmoncli pause` does: the transaction in flight (with its retries)
     * finishes, then nothing more is sent until Resume(); monitoring and discovery ticks that
     * fall in the pause are skipped. Modbus has no arbitration (serial line v1.02 §2.1: one
     * master), so this is how an external master gets the segment to itself.
     */
    void Pause();
    /// Polling again: queued work continues, the next monitoring tick runs a cycle.
    void Resume();
    /// Whether a pause was asked for (the bus may still carry the last transaction).
    bool IsPaused() const { return m_paused; }
    /// Whether the BMC is paused and has no transaction in flight: the bus is free.
    bool IsHeld() const { return m_held; }

  protected:
    void DoDispose() override;
    void StartApplication() override;
    void StopApplication() override;

  private:
    enum class JobKind : uint8_t
    {
        Probe,
        Read,
        TimeWrite,
    };
    struct Job
    {
        JobKind kind = JobKind::Probe;
        uint8_t unit = 0;
        std::size_t map = 0;
        uint16_t start = 0;
        uint16_t count = 0;
    };

    void Enqueue(const Job& j);
    void RunNext();
    void JobDone(const ModbusTransaction& t);
    void ProbeDone(const Job& j, const ModbusTransaction& t);
    void ReadDone(const Job& j, const ModbusTransaction& t);
    void TimeWriteDone(const Job& j, const ModbusTransaction& t);
    void ScanComplete();
    void MonitorTick();
    void ScanTick();
    void QueueReads(uint8_t address);
    void QueueTimeWrite(uint8_t address);
    void Failure(RackBmcDevice& d);
    void SetPaused(bool paused);
    bool GetPaused() const { return m_paused; }
    void Hold();
    void BusGranted();
    void ReleaseBus();
    bool Known(uint8_t address) const;

    Ptr<ModbusMaster> m_master;
    Ptr<Rs485BusArbiter> m_arbiter;
    uint32_t m_arbiterId = 0;
    bool m_waitingBus = false; ///< asked the arbiter, not yet granted
    std::vector<RackRegisterMap> m_maps;
    std::vector<std::vector<std::pair<uint16_t, uint16_t>>> m_spans;
    std::map<uint8_t, RackBmcDevice> m_devices;
    std::map<uint8_t, std::size_t> m_deviceMap;

    Time m_probeTimeout;
    Time m_commandTimeout;
    uint32_t m_commandRetries = 5;
    uint32_t m_scanPasses = 3;
    Time m_scanInterval;
    Time m_monitorInterval;
    uint32_t m_dormantFailures = 10;
    Time m_dormantReprobe;
    uint16_t m_maxSpan = 120;
    bool m_firstReloadPerRegister = true;
    uint64_t m_unixAtStart = 1800000000;

    std::deque<Job> m_queue;
    bool m_busy = false;
    Job m_current;
    bool m_running = false;
    bool m_scanComplete = false;
    bool m_cycleOpen = false;
    uint64_t m_cycle = 0;
    Time m_cycleStart;
    std::size_t m_scanCursor = 0;
    Rs485Format m_format;
    bool m_formatSet = false;
    EventId m_monitorEvent;
    EventId m_scanEvent;
    RackBmcCounters m_counters;
    bool m_paused = false;
    bool m_held = false;

    TracedCallback<uint8_t, const std::string&> m_discoveredTrace;
    TracedCallback<uint8_t, const std::string&> m_dormantTrace;
    TracedCallback<uint8_t, const std::string&> m_revivedTrace;
    TracedCallback<uint8_t, uint16_t, uint16_t, bool> m_pollTrace;
    TracedCallback<uint8_t, const std::string&> m_changedTrace;
    TracedCallback<uint64_t, Time, Time> m_cycleTrace;
    TracedCallback<bool> m_heldTrace;
};

} // namespace ns3

#endif
