// An address space for traffic applications that move bytes whose values nobody looks at: every
// address in its window is mapped, reads return zeros and writes are discarded. A 30 MB flow
// then costs no host memory at its receiver, so a fat-tree of hundreds of hosts can run a
// flow-size distribution with 30 MB flows.
#ifndef CNUAS_RDMA_NULL_MEMORY_H
#define CNUAS_RDMA_NULL_MEMORY_H

#include "models/rdma/rdma-memory.h"

namespace ns3
{

/**
 * \brief RdmaMemory without contents: [Base, Base+Size) is mapped, reads give zeros, writes are
 * counted and dropped. Accesses outside the window fault like any unmapped access, so a wrong
 * address in an application still shows up as a protection error.
 */
class RdmaNullMemory : public RdmaMemory
{
  public:
    static TypeId GetTypeId();
    RdmaNullMemory();
    ~RdmaNullMemory() override;

    bool Read(uint64_t addr, uint8_t* dst, uint64_t len) const override;
    bool Write(uint64_t addr, const uint8_t* src, uint64_t len) override;
    bool IsMapped(uint64_t addr, uint64_t len) const override;
    bool ReadsAsZeros() const override
    {
        return true;
    }

    /// Bytes written (and discarded) so far.
    uint64_t GetBytesWritten() const
    {
        return m_written;
    }

  private:
    uint64_t m_base;
    uint64_t m_size;
    uint64_t m_written{0};
};

} // namespace ns3

#endif
