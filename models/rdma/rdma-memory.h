// The memory an HCA reads and writes on behalf of its consumer: an interface, so that the same
// transport moves bytes of a simulated application (RdmaSimulatedMemory) or of a real process
// (a later implementation over process_vm_readv/process_vm_writev).
#ifndef CNUAS_RDMA_MEMORY_H
#define CNUAS_RDMA_MEMORY_H

#include "ns3/object.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>

namespace ns3
{

/**
 * \brief A consumer's virtual address space as the HCA sees it.
 *
 * Every access names a 64-bit virtual address and a length. An access either completes for
 * every byte or faults and changes nothing; a range that wraps past 2^64 always faults.
 */
class RdmaMemory : public Object
{
  public:
    static TypeId GetTypeId();
    ~RdmaMemory() override;

    /// Copy `len` bytes at `addr` into `dst`. False (and nothing copied) on a fault.
    virtual bool Read(uint64_t addr, uint8_t* dst, uint64_t len) const = 0;
    /// Copy `len` bytes from `src` to `addr`. False (and nothing written) on a fault.
    virtual bool Write(uint64_t addr, const uint8_t* src, uint64_t len) = 0;
    /// Whether every byte of [addr, addr+len) can be accessed (what ibv_reg_mr(3) needs to pin
    /// the range; a registration of an unmapped range fails with EFAULT).
    virtual bool IsMapped(uint64_t addr, uint64_t len) const = 0;
    /// Whether every mapped byte reads as zero, whatever was written (memory that discards
    /// writes, as load experiments give their flows: RdmaNullMemory, RdmaFlowDriver's): the
    /// transport then sends such data as a zero tail it never builds (RdmaLinkPort::Send).
    /// False unless a kind of memory says so.
    virtual bool ReadsAsZeros() const
    {
        return false;
    }

    /// Whether [addr, addr+len) wraps past the end of the 64-bit address space.
    static bool Wraps(uint64_t addr, uint64_t len)
    {
        return len != 0 && addr + (len - 1) < addr;
    }
};

/**
 * \brief Sparse, page-granular simulated memory.
 *
 * Pages become accessible with Map() and stop being accessible with Unmap(); anything else
 * faults. Mapping is cheap whatever its size (mapped ranges are kept as intervals) and a page
 * gets storage only when first written (an unwritten mapped page reads as zeros), so simulated
 * applications can use realistic virtual addresses such as 0x7f12_3456_7000 or map terabytes.
 * Everything is deterministic: no host addresses or clocks are involved.
 */
class RdmaSimulatedMemory : public RdmaMemory
{
  public:
    /// Page size of the simulated address space, bytes.
    static constexpr uint64_t kPageSize = 4096;

    static TypeId GetTypeId();
    RdmaSimulatedMemory();
    ~RdmaSimulatedMemory() override;

    bool Read(uint64_t addr, uint8_t* dst, uint64_t len) const override;
    bool Write(uint64_t addr, const uint8_t* src, uint64_t len) override;
    bool IsMapped(uint64_t addr, uint64_t len) const override;

    /// Make every page that [addr, addr+len) touches accessible (zero-filled unless it was
    /// already mapped). False, and nothing mapped, if len is 0 or the range wraps.
    bool Map(uint64_t addr, uint64_t len);
    /// Make every page that [addr, addr+len) touches inaccessible and drop its contents. False,
    /// and nothing unmapped, if len is 0 or the range wraps.
    bool Unmap(uint64_t addr, uint64_t len);

    /// Pages that hold storage (were written while mapped).
    uint64_t GetResidentPages() const;
    /// Bytes currently mapped.
    uint64_t GetMappedBytes() const;

  private:
    using Page = std::array<uint8_t, kPageSize>;

    /// Page numbers [first, last] (inclusive) of a non-empty, non-wrapping range.
    static void PageSpan(uint64_t addr, uint64_t len, uint64_t& first, uint64_t& last);
    bool PagesMapped(uint64_t first, uint64_t last) const;

    /// Mapped page intervals: first page -> last page (inclusive); disjoint, never adjacent.
    std::map<uint64_t, uint64_t> m_mapped;
    /// Storage of written pages, by page number.
    std::map<uint64_t, std::unique_ptr<Page>> m_pages;
};

} // namespace ns3

#endif
