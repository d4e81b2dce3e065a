#include "process-memory.h"

#include "ns3/boolean.h"
#include "ns3/log.h"

#include <fcntl.h>
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
    if (len == 0 || Wraps(addr, len) || m_pid <= 0)
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
