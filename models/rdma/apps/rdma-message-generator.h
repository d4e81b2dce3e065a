// A message generator on one queue pair: sizes fixed or from any RandomVariableStream (an
// EmpiricalSizeDistribution for a CDF), open loop (Poisson or fixed inter-arrival) or closed
// loop (N messages outstanding), any operation the QP type allows.
#ifndef CNUAS_RDMA_MESSAGE_GENERATOR_H
#define CNUAS_RDMA_MESSAGE_GENERATOR_H

#include "rdma-fct-recorder.h"
#include "rdma-traffic-app.h"

#include "ns3/random-variable-stream.h"

#include <deque>
#include <unordered_map>

namespace ns3
{

/**
 * \brief Issues messages on an endpoint's QP and records when each completes.
 *
 * A message is *issued* when it becomes due (open loop: at its arrival time, the first one a
 * drawn gap after the start; closed loop: at
 * the start and whenever one of the N outstanding messages completes) and *posted* when the
 * send queue has room (at most MaxPosted WRs posted at once); open-loop messages that find the
 * queue full wait in order in the application, and that wait is part of their completion
 * time. Every WR is signaled; a message completes with its send completion (RC: acknowledged
 * or, for READ and atomics, answered; UC and UD: handed to the wire, IBA vol. 1 §10.8.3).
 *
 * Sizes: SEND and WRITE carry the drawn size; READ reads the drawn size from the peer's buffer;
 * the atomics move 8 bytes whatever the size stream says (IBA vol. 1 §9.4.5). A message larger
 * than the local or the peer's buffer, or than the UD MTU, is refused by the QP (a post error,
 * counted and traced), never silently cut.
 */
class RdmaMessageGenerator : public RdmaTrafficApp
{
  public:
    enum Mode
    {
        OPEN_LOOP = 0,
        CLOSED_LOOP = 1,
    };

    static TypeId GetTypeId();
    RdmaMessageGenerator();
    ~RdmaMessageGenerator() override;

    /// Record every message here as well (optional; many generators may share one recorder).
    void SetRecorder(Ptr<RdmaFctRecorder> recorder);
    int64_t AssignStreams(int64_t stream);

    uint64_t GetIssued() const
    {
        return m_issued;
    }

    uint64_t GetCompleted() const
    {
        return m_completed;
    }

    uint64_t GetBytesCompleted() const
    {
        return m_bytesCompleted;
    }

    /// (size bytes, completion time from issue).
    typedef void (*MessageCallback)(uint64_t size, Time fct);

  protected:
    void DoDispose() override;
    void OnStart() override;
    void StopApplication() override;
    void OnSendCompletion(const RdmaWc& wc) override;

  private:
    struct Message
    {
        uint64_t size = 0;
        Time issued;
        uint64_t recordId = 0;
    };

    void Arrival();
    void ScheduleNextArrival();
    void Issue();
    void PostWaiting();
    bool Done() const;

    int m_op;           ///< an RdmaWrOpcode (EnumValue holds int)
    int m_mode;
    Ptr<RandomVariableStream> m_size;
    Ptr<RandomVariableStream> m_interArrival;
    uint32_t m_outstanding;
    uint32_t m_maxPosted;
    uint64_t m_maxMessages;
    Ptr<RdmaFctRecorder> m_recorder;

    EventId m_arrival;
    std::deque<Message> m_waiting;                  ///< issued, not yet posted
    std::unordered_map<uint64_t, Message> m_posted; ///< by wr_id
    uint64_t m_nextWrId{0};
    uint64_t m_issued{0};
    uint64_t m_completed{0};
    uint64_t m_bytesCompleted{0};
    TracedCallback<uint64_t, Time> m_messageTrace;
};

} // namespace ns3

#endif
