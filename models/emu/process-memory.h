// The address space of a real process as the emulated HCA sees it: bytes move with
// process_vm_readv(2)/process_vm_writev(2), the way a real adapter moves them by DMA into pinned
// pages, so one-sided operations complete while the process makes no call at all.
#ifndef CNUAS_PROCESS_MEMORY_H
#define CNUAS_PROCESS_MEMORY_H

#include "models/rdma/rdma-memory.h"

#include <sys/types.h>

#include <map>

namespace ns3
{

/**
 * \brief RdmaMemory over another process's virtual memory.
 *
 * Read and Write are one pread/pwrite each on /proc/PID/mem (process_vm_readv/writev where it
 * cannot be opened); a fault (an unmapped page) makes them return false. Writes through
 * /proc/PID/mem would also go into read-only pages; the transport only writes into regions
 * registered writable, which registration checked against the process's mappings.
 * A Write to a process that has exited succeeds without effect, as a real adapter's DMA into the
 * pinned pages of a dying process does; a Read from it faults. A Write that faults part-way may have written the bytes
 * before the fault (process_vm_writev gives no atomicity); the transport only writes ranges that
 * passed its MR checks, which registration made sure were mapped.
 *
 * IsMapped reads /proc/PID/maps: every byte of the range must lie in a readable mapping, and
 * with `writable` in a writable one (ibv_reg_mr(3) fails with EFAULT otherwise, as the kernel's
 * page pinning does).
 */
class ProcessMemory : public RdmaMemory
{
  public:
    static TypeId GetTypeId();
    ProcessMemory();
    explicit ProcessMemory(pid_t pid);
    ~ProcessMemory() override;

    bool Read(uint64_t addr, uint8_t* dst, uint64_t len) const override;
    bool Write(uint64_t addr, const uint8_t* src, uint64_t len) override;
    bool IsMapped(uint64_t addr, uint64_t len) const override;
    /// IsMapped, requiring write permission too when `writable`.
    bool IsMappedWith(uint64_t addr, uint64_t len, bool writable) const;

    pid_t GetPid() const
    {
        return m_pid;
    }

    /// Accesses that faulted.
    uint64_t GetFaults() const
    {
        return m_faults;
    }

    /// The process exited (a write found it gone, or SetGone said so).
    bool IsGone() const
    {
        return m_gone;
    }

    /**
     * The process has exited: from now on only its shared windows are reached (the pages it
     * pinned, as an adapter's DMA still reaches them), never /proc/PID/mem or process_vm_*,
     * whose PID may by then be another process's. Reads outside a window fault; writes succeed
     * without effect, as they do once a write has found the process gone.
     */
    void SetGone()
    {
        m_gone = true;
    }

    /**
     * Map a sealed memfd that the process maps at [base, base+len) (its registered pages moved
     * there by the verbs library, host/verbs/verbs-shared-mr.c), so that accesses inside it are
     * memcpy instead of system calls. A window already attached at `base` with the same length
     * gains a reference. Refused (false, the descriptor untouched and no window made) unless
     * base and len are page-aligned, the file is at least len bytes, sealed against shrinking
     * (so no access can ever fault), mappable for reading and writing, and the range overlaps
     * no other window. The caller keeps and closes `fd`.
     */
    bool AttachWindow(uint64_t base, uint64_t len, int fd);
    /// Drop one reference to the window at `base`; the last one unmaps it.
    void ReleaseWindow(uint64_t base);
    /// Windows mapped now.
    size_t GetWindowCount() const
    {
        return m_windows.size();
    }
    /// Accesses served from a window, and through the process (/proc/PID/mem or process_vm_*).
    uint64_t GetWindowAccesses() const
    {
        return m_windowAccesses;
    }
    uint64_t GetProcessAccesses() const
    {
        return m_processAccesses;
    }

  private:
    /// /proc/PID/mem, opened on first use; -1 if it cannot be (process_vm_* then).
    int MemFd() const;
    /// Read (into buf) or write (from buf) `len` bytes at `addr`, whichever way MemFd allows.
    bool Transfer(bool write, uint64_t addr, uint8_t* buf, uint64_t len) const;

    /// The window holding all of [addr, addr+len), or nullptr.
    uint8_t* WindowFor(uint64_t addr, uint64_t len) const;

    struct Window
    {
        uint64_t len;
        uint8_t* map;
        uint32_t refs;
    };

    std::map<uint64_t, Window> m_windows; ///< by base address in the process
    mutable uint64_t m_windowAccesses = 0;
    mutable uint64_t m_processAccesses = 0;
    pid_t m_pid = 0;
    mutable int m_memFd = -2; ///< -2: not tried yet
    bool m_useProcMem = true;
    mutable bool m_gone = false;
    mutable uint64_t m_faults = 0;
};

} // namespace ns3

#endif
