// Per-message records of RDMA traffic: when each message was issued and when it completed, its
// size, endpoints and operation, written as a CSV that tools/plot/plot-fct.py reads.
#ifndef CNUAS_RDMA_FCT_RECORDER_H
#define CNUAS_RDMA_FCT_RECORDER_H

#include "models/rdma/rdma-types.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <functional>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \brief Flow-completion-time recorder.
 *
 * An application calls Start() when a message is issued (it becomes due, before it waits for a
 * send-queue slot) and Complete() with the id Start() returned when the message's completion is
 * polled. Each message is recorded once: a second Complete() of the same id, or one of an id
 * never started, changes no record and is counted (GetBadCompletions) so that an application
 * bug cannot go unnoticed.
 */
class RdmaFctRecorder : public Object
{
  public:
    struct Record
    {
        uint64_t id = 0;
        uint32_t src = 0;      ///< source host index
        uint32_t dst = 0;      ///< destination host index
        uint32_t qpn = 0;      ///< requester QP number
        RdmaWrOpcode opcode = RdmaWrOpcode::SEND;
        uint64_t size = 0;     ///< message bytes
        Time start;
        Time end;              ///< valid when done
        bool done = false;
        RdmaWcStatus status = RdmaWcStatus::SUCCESS;
    };

    /// (id, size bytes).
    typedef void (*StartCallback)(uint64_t id, uint64_t size);
    /// (id, size bytes, flow completion time).
    typedef void (*CompleteCallback)(uint64_t id, uint64_t size, Time fct);

    static TypeId GetTypeId();
    RdmaFctRecorder();
    ~RdmaFctRecorder() override;

    /// A message is issued now; returns its id (0, 1, 2, ... in issue order).
    uint64_t Start(uint32_t src, uint32_t dst, uint32_t qpn, RdmaWrOpcode op, uint64_t size);
    /// The message completed now with `status`. False (and counted) for an unknown id or one
    /// already completed.
    bool Complete(uint64_t id, RdmaWcStatus status);

    const std::vector<Record>& GetRecords() const
    {
        return m_records;
    }

    uint64_t GetStarted() const
    {
        return m_records.size();
    }

    uint64_t GetCompleted() const
    {
        return m_completed;
    }

    /// Completed with a status other than SUCCESS.
    uint64_t GetFailed() const
    {
        return m_failed;
    }

    /// Complete() calls refused (unknown or repeated id).
    uint64_t GetBadCompletions() const
    {
        return m_bad;
    }

    /// The ideal completion time of a message, for the slowdown column (fct / ideal).
    using IdealFct = std::function<Time(const Record&)>;

    /**
     * Write one line per completed message, in completion order of id:
     * `id,src,dst,qpn,opcode,size_bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,status`
     * (times in nanoseconds with picosecond decimals; ideal and slowdown empty without
     * `ideal`). Messages never completed are left out and counted in the last comment line.
     * False if the file cannot be written.
     */
    bool WriteCsv(const std::string& path, const IdealFct& ideal) const;

  private:
    std::vector<Record> m_records;
    uint64_t m_completed{0};
    uint64_t m_failed{0};
    uint64_t m_bad{0};
    TracedCallback<uint64_t, uint64_t> m_startTrace;
    TracedCallback<uint64_t, uint64_t, Time> m_completeTrace;
};

/// The ibv_wr_opcode name without the IBV_WR_ prefix ("SEND_WITH_IMM", "ATOMIC_FETCH_AND_ADD").
const char* RdmaWrOpcodeName(RdmaWrOpcode op);

} // namespace ns3

#endif
