// A FIFO queue that allocates nothing until its first element. libstdc++'s std::deque allocates
// a 512-byte block and its map as soon as it is constructed, empty or not; an IbNetDevice has 64
// per-VL queues (receive buffer, transmit queue, ready list and flow-control stash of each of
// 16 VLs), nearly all of which stay empty all run: with deques that was about 37 KB per port,
// 230 of the 324 MB a k=16 fat-tree took.
#ifndef CNUAS_LAZY_FIFO_H
#define CNUAS_LAZY_FIFO_H

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <utility>

namespace ns3
{

/**
 * \brief First in, first out: push_back, pop_front, front, back, size, iteration from the front.
 *
 * A ring buffer whose capacity (a power of two) doubles when full and is kept when the queue
 * empties; an empty queue that never held anything owns no memory. T must be
 * default-constructible and assignable (the queues hold pointers and small records).
 */
template <typename T>
class LazyFifo
{
  public:
    LazyFifo() = default;
    LazyFifo(const LazyFifo& other)
    {
        *this = other;
    }
    LazyFifo(LazyFifo&& other) noexcept
    {
        *this = std::move(other);
    }
    LazyFifo& operator=(const LazyFifo& other)
    {
        if (this != &other)
        {
            clear();
            for (const T& v : other)
            {
                push_back(v);
            }
        }
        return *this;
    }
    /// Takes `other`'s elements and storage; `other` is left empty (and owns nothing).
    LazyFifo& operator=(LazyFifo&& other) noexcept
    {
        if (this != &other)
        {
            m_buf = std::move(other.m_buf);
            m_mask = other.m_mask;
            m_head = other.m_head;
            m_size = other.m_size;
            other.m_mask = 0;
            other.m_head = 0;
            other.m_size = 0;
        }
        return *this;
    }

    bool empty() const
    {
        return m_size == 0;
    }
    size_t size() const
    {
        return m_size;
    }
    /// Elements the storage holds before it must grow (0: no storage).
    size_t capacity() const
    {
        return m_buf == nullptr ? 0 : size_t(m_mask) + 1;
    }
    T& front()
    {
        return m_buf[m_head];
    }
    const T& front() const
    {
        return m_buf[m_head];
    }
    T& back()
    {
        return m_buf[(m_head + m_size - 1) & m_mask];
    }
    const T& back() const
    {
        return m_buf[(m_head + m_size - 1) & m_mask];
    }
    void push_back(const T& value)
    {
        if (m_buf == nullptr || m_size == m_mask + 1)
        {
            Grow();
        }
        m_buf[(m_head + m_size) & m_mask] = value;
        ++m_size;
    }
    template <typename... Args>
    T& emplace_back(Args&&... args)
    {
        push_back(T{std::forward<Args>(args)...});
        return back();
    }
    void pop_front()
    {
        m_buf[m_head] = T(); // let go of what the slot holds now, as a deque would
        m_head = (m_head + 1) & m_mask;
        --m_size;
    }
    /// Removes every element; the storage stays for the next ones.
    void clear()
    {
        while (!empty())
        {
            pop_front();
        }
        m_head = 0;
    }

    template <typename Q, typename V>
    class Iter
    {
      public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using pointer = V*;
        using reference = V&;

        Iter(Q* q, size_t i)
            : m_q(q),
              m_i(i)
        {
        }
        V& operator*() const
        {
            return m_q->m_buf[(m_q->m_head + m_i) & m_q->m_mask];
        }
        Iter& operator++()
        {
            ++m_i;
            return *this;
        }
        bool operator!=(const Iter& o) const
        {
            return m_i != o.m_i;
        }
        bool operator==(const Iter& o) const
        {
            return m_i == o.m_i;
        }

      private:
        Q* m_q;
        size_t m_i;
    };
    using iterator = Iter<LazyFifo, T>;
    using const_iterator = Iter<const LazyFifo, const T>;
    iterator begin()
    {
        return iterator(this, 0);
    }
    iterator end()
    {
        return iterator(this, m_size);
    }
    const_iterator begin() const
    {
        return const_iterator(this, 0);
    }
    const_iterator end() const
    {
        return const_iterator(this, m_size);
    }

  private:
    /// Doubles the capacity (4 at first), moving the elements to the front of the new storage.
    void Grow()
    {
        const size_t capacity = m_buf == nullptr ? 4 : 2 * (size_t(m_mask) + 1);
        std::unique_ptr<T[]> bigger(new T[capacity]);
        for (size_t i = 0; i < m_size; ++i)
        {
            bigger[i] = std::move(m_buf[(m_head + i) & m_mask]);
        }
        m_buf = std::move(bigger);
        m_mask = static_cast<uint32_t>(capacity - 1);
        m_head = 0;
    }

    std::unique_ptr<T[]> m_buf; ///< null until the first push
    uint32_t m_mask = 0;        ///< capacity - 1 (capacity a power of two)
    uint32_t m_head = 0;        ///< index of the front element
    uint32_t m_size = 0;
};

} // namespace ns3

#endif
