#include "process-memory.h"

#include "ns3/boolean.h"
#include "ns3/log.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ProcessMemory");
NS_OBJECT_ENSURE_REGISTERED(ProcessMemory);

TypeId
ProcessMemory::GetTypeId()
{
    static TypeId tid = TypeId("ns3::ProcessMemory")
                            .SetParent<RdmaMemory>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<ProcessMemory>()
                            .AddAttribute("UseProcMem",
                                          "Move bytes through /proc/PID/mem (access checked "
                                          "once, at open) rather than process_vm_readv/writev "
                                          "(checked on every call).",
                                          BooleanValue(true),
                                          MakeBooleanAccessor(&ProcessMemory::m_useProcMem),
                                          MakeBooleanChecker());
    return tid;
}

ProcessMemory::ProcessMemory() = default;

ProcessMemory::ProcessMemory(pid_t pid)
    : m_pid(pid)
{
}

ProcessMemory::~ProcessMemory()
{
    if (m_memFd >= 0)
    {
        close(m_memFd);
    }
    for (const auto& [base, w] : m_windows)
    {
        munmap(w.map, w.len);
    }
}

bool
ProcessMemory::AttachWindow(uint64_t base, uint64_t len, int fd)
{
    const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (fd < 0 || len == 0 || base % page != 0 || len % page != 0 || Wraps(base, len))
    {
        return false;
    }
    auto it = m_windows.find(base);
    if (it != m_windows.end())
    {
        if (it->second.len != len)
        {
            return false;
        }
        ++it->second.refs;
        return true;
    }
    // No overlap with a neighbour: the window below must end at or before base, the one above
    // start at or after base + len.
    auto above = m_windows.lower_bound(base);
    if (above != m_windows.end() && above->first < base + len)
    {
        return false;
    }
    if (above != m_windows.begin())
    {
        auto below = std::prev(above);
        if (below->first + below->second.len > base)
        {
            return false;
        }
    }
    // The process could shrink an unsealed file under the mapping, and the daemon's next access
    // would die of SIGBUS: only a file sealed against shrinking, and long enough, is mapped.
    struct stat st
    {
    };
    const int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || seals < 0 || (seals & F_SEAL_SHRINK) == 0 ||
        static_cast<uint64_t>(st.st_size) < len)
    {
        NS_LOG_INFO("pid " << m_pid << ": a shared-memory window refused (not a sealed memfd of "
                           << len << " bytes)");
        return false;
    }
    void* map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
    {
        NS_LOG_INFO("pid " << m_pid << ": a shared-memory window refused: " << std::strerror(errno));
        return false;
    }
    m_windows[base] = Window{len, static_cast<uint8_t*>(map), 1};
    return true;
}

void
ProcessMemory::ReleaseWindow(uint64_t base)
{
    auto it = m_windows.find(base);
    if (it == m_windows.end())
    {
        return;
    }
    if (--it->second.refs == 0)
    {
        munmap(it->second.map, it->second.len);
        m_windows.erase(it);
    }
}

uint8_t*
ProcessMemory::WindowFor(uint64_t addr, uint64_t len) const
{
    if (m_windows.empty())
    {
        return nullptr;
    }
    auto it = m_windows.upper_bound(addr);
    if (it == m_windows.begin())
    {
        return nullptr;
    }
    --it;
    const uint64_t off = addr - it->first;
    if (off >= it->second.len || len > it->second.len - off)
    {
        return nullptr;
    }
    return it->second.map + off;
}

namespace
{
// process_vm_readv/writev take at most IOV_MAX segments and may move fewer bytes than asked
// when a page faults; one segment per side, looping over partial transfers of mapped memory.
constexpr uint64_t kChunk = 1ull << 30;
} // namespace

int
ProcessMemory::MemFd() const
{
    // /proc/PID/mem is checked once, when it is opened (ptrace access), and then reads and
    // writes go straight to the process's pages; process_vm_readv/writev look the process up
    // and check access on every call, which was a third of the daemon's time in a bandwidth
    // run. The descriptor holds the process's address space, not the process.
    if (m_memFd == -2 && m_pid > 0 && !m_useProcMem)
    {
        m_memFd = -1;
    }
    if (m_memFd == -2 && m_pid > 0)
    {
        m_memFd = open(("/proc/" + std::to_string(m_pid) + "/mem").c_str(), O_RDWR | O_CLOEXEC);
        if (m_memFd < 0)
        {
            NS_LOG_INFO("pid " << m_pid << ": /proc/PID/mem: " << std::strerror(errno)
                               << "; using process_vm_readv/writev");
            m_memFd = -1;
        }
    }
    return m_memFd;
}

bool
ProcessMemory::Read(uint64_t addr, uint8_t* dst, uint64_t len) const
{
    return Transfer(false, addr, dst, len);
}

bool
ProcessMemory::Write(uint64_t addr, const uint8_t* src, uint64_t len)
{
    return Transfer(true, addr, const_cast<uint8_t*>(src), len);
}

bool
ProcessMemory::Transfer(bool write, uint64_t addr, uint8_t* buf, uint64_t len) const
{
    if (len == 0)
    {
        return true;
    }
    if (Wraps(addr, len) || m_pid <= 0 || addr > static_cast<uint64_t>(INT64_MAX) - len)
    {
        ++m_faults;
        return false;
    }
    // Pages the process shares with the daemon are the process's memory itself (the same
    // physical pages), so this is what a DMA into them is; like pinned pages on hardware they
    // stay valid until deregistered, even while the process exits.
    if (uint8_t* w = WindowFor(addr, len))
    {
        ++m_windowAccesses;
        if (write)
        {
            std::memcpy(w, buf, len);
        }
        else
        {
            std::memcpy(buf, w, len);
        }
        return true;
    }
    if (m_gone)
    {
        if (write)
        {
            return true;
        }
        ++m_faults;
        return false;
    }
    ++m_processAccesses;
    const int fd = MemFd();
    uint64_t done = 0;
    while (done < len)
    {
        const uint64_t n = std::min(len - done, kChunk);
        ssize_t moved;
        if (fd >= 0)
        {
            const auto at = static_cast<off_t>(addr + done);
            moved = write ? pwrite(fd, buf + done, n, at) : pread(fd, buf + done, n, at);
        }
        else
        {
            iovec local{buf + done, n};
            iovec remote{reinterpret_cast<void*>(addr + done), n};
            moved = write ? process_vm_writev(m_pid, &local, 1, &remote, 1, 0)
                          : process_vm_readv(m_pid, &local, 1, &remote, 1, 0);
        }
        if (moved < 0 && errno == EINTR)
        {
            continue;
        }
        if (moved > 0)
        {
            done += static_cast<uint64_t>(moved);
            continue;
        }
        // Nothing moved. The process has exited when its address space is gone:
        // /proc/PID/mem then moves 0 bytes (an unmapped address gives EIO instead), and
        // process_vm_* fail with ESRCH. A real adapter's DMA into the pinned pages of a dying
        // process succeeds (the pages go when the kernel deregisters them), so a write to it
        // succeeds without effect and the peer sees what hardware gives it: acknowledgments
        // until the QP is destroyed (its context closes at once), then silence (retries).
        const bool gone = fd >= 0 ? moved == 0 : errno == ESRCH;
        if (write && gone)
        {
            m_gone = true;
            return true;
        }
        NS_LOG_INFO("pid " << m_pid << ": " << (write ? "write" : "read") << " of " << len
                           << " bytes at 0x" << std::hex << addr << std::dec
                           << " faulted: " << std::strerror(errno));
        ++m_faults;
        return false;
    }
    return true;
}

bool
ProcessMemory::IsMapped(uint64_t addr, uint64_t len) const
{
    return IsMappedWith(addr, len, false);
}

bool
ProcessMemory::IsMappedWith(uint64_t addr, uint64_t len, bool writable) const
{
    if (len == 0 || Wraps(addr, len) || m_pid <= 0 || m_gone)
    {
        return false;
    }
    const std::string path = "/proc/" + std::to_string(m_pid) + "/maps";
    FILE* f = std::fopen(path.c_str(), "re");
    if (!f)
    {
        return false;
    }
    // The mappings are listed in address order: walk them, extending the covered prefix of
    // [addr, addr+len) while each next mapping starts where the previous one ended.
    uint64_t covered = addr; // everything below this is known to be mapped
    const uint64_t end = addr + len;
    char line[512];
    bool ok = false;
    while (std::fgets(line, sizeof(line), f))
    {
        uint64_t lo = 0;
        uint64_t hi = 0;
        char perms[8] = {};
        if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, perms) != 3)
        {
            continue;
        }
        if (hi <= covered)
        {
            continue;
        }
        if (lo > covered)
        {
            break; // a hole
        }
        if (perms[0] != 'r' || (writable && perms[1] != 'w'))
        {
            break;
        }
        covered = hi;
        if (covered >= end)
        {
            ok = true;
            break;
        }
    }
    std::fclose(f);
    return ok;
}

} // namespace ns3
