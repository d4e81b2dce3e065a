// A Modbus RTU master (client) on an RS-485 bus: one transaction at a time, response timeout,
// retries, results through callbacks.
#ifndef CNUAS_MODBUS_MASTER_H
#define CNUAS_MODBUS_MASTER_H

#include "modbus-pdu.h"
#include "modbus-rtu-endpoint.h"

#include "ns3/event-id.h"

#include <deque>
#include <string>

namespace ns3
{

/// How a transaction ended.
enum class ModbusResultStatus : uint8_t
{
    Ok = 0,              ///< a normal response
    Exception = 1,       ///< an exception response (response.exception holds the code)
    Timeout = 2,         ///< no response within ResponseTimeout, after every retry
    FrameError = 3,      ///< the last attempt got a frame with an error (CRC, parity, ...)
    InvalidResponse = 4, ///< the addressed slave answered something that does not fit
    Broadcast = 5,       ///< a broadcast went out and the turnaround delay passed
    Cancelled = 6,       ///< the master stopped before the transaction ended
};

const char* ModbusResultStatusName(ModbusResultStatus s);

/// One request and its outcome.
struct ModbusTransaction
{
    uint64_t id = 0;
    uint8_t unit = 0;
    ModbusRequest request;
    ModbusResultStatus status = ModbusResultStatus::Cancelled;
    ModbusResponse response;    ///< valid for Ok and Exception
    uint32_t attempts = 0;      ///< requests sent (1 + retries used)
    Time submitted;             ///< when Submit was called
    Time requestStart;          ///< first start bit of the last attempt's request
    Time requestEnd;            ///< last stop bit of the last attempt's request
    Time responseStart;         ///< first start bit of the response (Ok, Exception)
    Time responseEnd;           ///< last stop bit of the response (Ok, Exception)
    Time completed;             ///< when the result was reported
    std::string detail;         ///< why a response was invalid
};

/// Per-request overrides of the master's attributes (e.g. rackmon probes an absent address
/// with a 70 ms timeout and no retry, but commands with 300 ms).
struct ModbusSubmitOptions
{
    Time responseTimeout; ///< zero: the ResponseTimeout attribute
    int32_t retries = -1; ///< negative: the Retries attribute
};

/// Master-side counters.
struct ModbusMasterCounters
{
    uint64_t transactions = 0; ///< completed, any status
    uint64_t requestsSent = 0; ///< frames sent, retries included
    uint64_t retries = 0;
    uint64_t ok = 0;
    uint64_t exceptions = 0;
    uint64_t noResponse = 0; ///< response timeouts (each attempt that timed out)
    uint64_t timeouts = 0;   ///< transactions that ended in Timeout
    uint64_t frameErrors = 0; ///< frames received with an error while waiting for a reply
    uint64_t invalidResponses = 0;
    uint64_t unexpectedFrames = 0; ///< good frames from another slave, or when not waiting
    uint64_t broadcasts = 0;
};

/**
 * \brief A Modbus RTU master per Modbus over serial line v1.02 §2.4.1 (master state diagram).
 *
 * Submit() queues a request; transactions run one at a time in submission order. For each
 * attempt the master waits until the line has been silent t3.5 (§2.5.1.1) and InterRequestDelay
 * has passed since the previous transaction ended, enables its driver, sends the request and,
 * from the end of the request's last stop bit:
 *  - unicast: waits for the response (the "Response time-out" of §2.4.1, ResponseTimeout: the
 *    time allowed for the response's first character; a frame that has begun by then is
 *    received to its end). A good frame from another address is ignored and the timeout keeps
 *    running (§2.4.1); a frame with an error ends the attempt; a timeout ends it too. Ended
 *    attempts are retried up to Retries times. A response from the addressed slave that does
 *    not fit the request ends the transaction as InvalidResponse.
 *  - broadcast (unit 0): waits TurnaroundDelay (§2.4.1), then reports Broadcast.
 * The transaction is complete when the response frame is (t3.5 after its last character).
 */
class ModbusMaster : public ModbusRtuEndpoint
{
  public:
    static TypeId GetTypeId();
    ModbusMaster();
    ~ModbusMaster() override;

    typedef Callback<void, const ModbusTransaction&> ResultCallback;
    /// Transaction trace signature.
    typedef void (*TransactionCallback)(const ModbusTransaction& t);

    /// Queues a request to `unit` (0 = broadcast); returns the transaction id.
    uint64_t Submit(uint8_t unit,
                    const ModbusRequest& request,
                    ResultCallback cb = ResultCallback());
    /// The same with a timeout and retry count for this request only.
    uint64_t Submit(uint8_t unit,
                    const ModbusRequest& request,
                    ResultCallback cb,
                    const ModbusSubmitOptions& options);
    /// Transactions waiting or in progress.
    std::size_t GetPending() const;
    bool IsIdle() const;
    const ModbusMasterCounters& GetCounters() const { return m_counters; }

  protected:
    void DoDispose() override;
    void StartApplication() override;
    void StopApplication() override;
    void FrameReceived(const ModbusRtuFrame& frame) override;
    void TransmitComplete() override;

  private:
    enum class State : uint8_t
    {
        Idle,
        WaitingToSend,
        Sending,
        WaitingReply,
        WaitingTurnaround,
    };
    struct Pending
    {
        ModbusTransaction t;
        ResultCallback cb;
        ModbusSubmitOptions options;
    };

    void ScheduleNext();
    void TrySend();
    void ResponseTimeout();
    void AttemptFailed(ModbusResultStatus status);
    void Complete(ModbusResultStatus status);

    Time m_responseTimeout;
    uint32_t m_retries = 3;
    Time m_turnaroundDelay;
    Time m_interRequestDelay;

    std::deque<Pending> m_queue; ///< front is the current transaction when state != Idle
    State m_state = State::Idle;
    bool m_timeoutExpired = false;
    uint64_t m_nextId = 1;
    Time m_lastCompleted;
    bool m_running = false;
    EventId m_sendEvent;
    EventId m_timeoutEvent;
    ModbusMasterCounters m_counters;

    TracedCallback<const ModbusTransaction&> m_transactionTrace;
};

} // namespace ns3

#endif
