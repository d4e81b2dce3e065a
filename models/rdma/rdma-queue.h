// The bounded FIFO rings behind send queues, receive queues, shared receive queues and
// completion queues: an interface, so that the HCA model works the same whether the ring is a
// container of a simulated application (RdmaRingQueue) or lives in memory shared with a real
// process (a later implementation that parses WQEs from and writes CQEs to that memory).
#ifndef CNUAS_RDMA_QUEUE_H
#define CNUAS_RDMA_QUEUE_H

#include "ns3/abort.h"
#include "ns3/simple-ref-count.h"

#include <cstdint>
#include <deque>

namespace ns3
{

/**
 * \brief A bounded FIFO of entries (WQEs or CQEs).
 *
 * The producer appends with Push(); the consumer reads the oldest entries with At() and retires
 * them with Pop(). Entries are never reordered. Capacity is fixed when the queue is created.
 */
template <typename Entry>
class RdmaQueue : public SimpleRefCount<RdmaQueue<Entry>>
{
  public:
    virtual ~RdmaQueue() = default;

    /// Entries the queue holds at most.
    virtual uint32_t GetCapacity() const = 0;
    /// Entries currently held.
    virtual uint32_t GetSize() const = 0;
    /// Append; false (and nothing appended) when the queue is full.
    virtual bool Push(const Entry& e) = 0;
    /// The i-th oldest entry, 0 <= i < GetSize().
    virtual const Entry& At(uint32_t i) const = 0;
    /// Retire the oldest entry; the queue must not be empty.
    virtual void Pop() = 0;
    /// Retire every entry.
    virtual void Clear() = 0;

    bool IsEmpty() const
    {
        return GetSize() == 0;
    }

    bool IsFull() const
    {
        return GetSize() >= GetCapacity();
    }
};

/// The simulated implementation: a std::deque with a fixed capacity.
template <typename Entry>
class RdmaRingQueue : public RdmaQueue<Entry>
{
  public:
    explicit RdmaRingQueue(uint32_t capacity)
        : m_capacity(capacity)
    {
    }

    uint32_t GetCapacity() const override
    {
        return m_capacity;
    }

    uint32_t GetSize() const override
    {
        return static_cast<uint32_t>(m_entries.size());
    }

    bool Push(const Entry& e) override
    {
        if (m_entries.size() >= m_capacity)
        {
            return false;
        }
        m_entries.push_back(e);
        return true;
    }

    const Entry& At(uint32_t i) const override
    {
        NS_ABORT_MSG_IF(i >= m_entries.size(), "RdmaRingQueue::At past the end");
        return m_entries[i];
    }

    void Pop() override
    {
        NS_ABORT_MSG_IF(m_entries.empty(), "RdmaRingQueue::Pop on an empty queue");
        m_entries.pop_front();
    }

    void Clear() override
    {
        m_entries.clear();
    }

  private:
    uint32_t m_capacity;
    std::deque<Entry> m_entries;
};

} // namespace ns3

#endif
