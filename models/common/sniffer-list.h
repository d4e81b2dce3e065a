// The sniffers of a port (pcap writers, tests, live captures): callbacks that can be added and
// removed while the simulation runs.
#ifndef CNUAS_SNIFFER_LIST_H
#define CNUAS_SNIFFER_LIST_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ns3
{

/// A list of callbacks, each with a handle to remove it by; iterates over the callbacks.
template <class Callback>
class SnifferList
{
  public:
    /// Adds `cb`; returns its handle.
    uint32_t Add(Callback cb)
    {
        m_callbacks.push_back(cb);
        m_handles.push_back(m_next);
        return m_next++;
    }
    /// Removes the callback `handle` names; unknown handles are ignored.
    void Remove(uint32_t handle)
    {
        for (std::size_t i = 0; i < m_handles.size(); ++i)
        {
            if (m_handles[i] == handle)
            {
                m_callbacks.erase(m_callbacks.begin() + static_cast<std::ptrdiff_t>(i));
                m_handles.erase(m_handles.begin() + static_cast<std::ptrdiff_t>(i));
                return;
            }
        }
    }
    void clear()
    {
        m_callbacks.clear();
        m_handles.clear();
    }
    bool empty() const { return m_callbacks.empty(); }
    auto begin() { return m_callbacks.begin(); }
    auto end() { return m_callbacks.end(); }

  private:
    std::vector<Callback> m_callbacks;
    std::vector<uint32_t> m_handles; ///< parallel to m_callbacks
    uint32_t m_next = 1;
};

} // namespace ns3

#endif
