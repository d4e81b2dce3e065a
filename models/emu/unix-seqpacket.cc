#include "unix-seqpacket.h"

#include "emu-realtime-simulator-impl.h"

#include "ns3/simulator.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ns3
{

int
ListenSeqpacket(const std::string& path, mode_t mode, std::string* why)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path))
    {
        *why = "socket path too long for a Unix socket (" + std::to_string(path.size()) +
               " bytes, at most " + std::to_string(sizeof(addr.sun_path) - 1) + "): " + path;
        return -1;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
    {
        *why = std::string("socket: ") + std::strerror(errno);
        return -1;
    }
    unlink(path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0)
    {
        *why = "cannot listen on " + path + ": " + std::strerror(errno);
        close(fd);
        return -1;
    }
    chmod(path.c_str(), mode);
    return fd;
}

bool
SendDatagramWithFd(int sock, const void* buf, size_t len, int fd)
{
    iovec iov{const_cast<void*>(buf), len};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (fd >= 0)
    {
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        cmsghdr* h = CMSG_FIRSTHDR(&msg);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(h), &fd, sizeof(int));
    }
    return sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(len);
}

bool
SeqpacketPeerClosed(int sock)
{
    pollfd p{sock, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

SeqpacketRecv
RecvRequest(int sock, void* request, size_t size, int* passedFd)
{
    iovec iov{request, size};
    // Room for the one descriptor a request may carry (and, by alignment, a second): more is a
    // truncated control message (the kernel closes what did not fit), which a caller taking
    // descriptors refuses.
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (passedFd)
    {
        *passedFd = -1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
    }
    const ssize_t got = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
    if (got < 0)
    {
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? SeqpacketRecv::None
                                                                         : SeqpacketRecv::Error;
    }
    // The first descriptor is the request's; any other that fitted is closed.
    int fd = -1;
    for (cmsghdr* h = passedFd ? CMSG_FIRSTHDR(&msg) : nullptr; h; h = CMSG_NXTHDR(&msg, h))
    {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
        {
            continue;
        }
        const size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < n; ++k)
        {
            int f;
            std::memcpy(&f, CMSG_DATA(h) + k * sizeof(int), sizeof(int));
            if (fd < 0)
            {
                fd = f;
            }
            else
            {
                close(f);
            }
        }
    }
    SeqpacketRecv r = SeqpacketRecv::Request;
    if (got == 0 && SeqpacketPeerClosed(sock))
    {
        r = SeqpacketRecv::Closed;
    }
    else if (static_cast<size_t>(got) != size ||
             (msg.msg_flags & (passedFd ? MSG_TRUNC | MSG_CTRUNC : MSG_TRUNC)) != 0)
    {
        r = SeqpacketRecv::WrongSize;
    }
    if (r != SeqpacketRecv::Request && fd >= 0)
    {
        close(fd);
        fd = -1;
    }
    if (passedFd)
    {
        *passedFd = fd;
    }
    return r;
}

int
ListenAndAccept(const std::string& path,
                mode_t mode,
                const char* service,
                std::function<void(int fd, pid_t pid)> admit,
                std::string* why)
{
    auto rt = EmuRealtimeSimulatorImpl::Current();
    if (!rt)
    {
        *why = std::string(service) + " service needs the emulation simulator "
                                      "(EmuRealtimeSimulatorImpl)";
        return -1;
    }
    const int listenFd = ListenSeqpacket(path, mode, why);
    if (listenFd < 0)
    {
        return -1;
    }
    auto acceptAll = [listenFd, admit = std::move(admit)]() {
        while (true)
        {
            const int fd = accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0)
            {
                return; // EAGAIN: all taken
            }
            ucred cred{};
            socklen_t len = sizeof(cred);
            admit(fd, getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : 0);
        }
    };
    if (!rt->WatchFd(listenFd, Simulator::NO_CONTEXT, std::move(acceptAll)))
    {
        *why = std::string("cannot poll ") + service + " socket: " + std::strerror(errno);
        close(listenFd);
        unlink(path.c_str());
        return -1;
    }
    return listenFd;
}

bool
WatchConnection(int fd, std::function<void()> onReadable)
{
    return EmuRealtimeSimulatorImpl::Current()->WatchFd(fd,
                                                        Simulator::NO_CONTEXT,
                                                        std::move(onReadable));
}

void
CloseListener(int& listenFd, const std::string& path)
{
    if (listenFd < 0)
    {
        return;
    }
    if (auto rt = EmuRealtimeSimulatorImpl::Current())
    {
        rt->UnwatchFd(listenFd);
    }
    close(listenFd);
    listenFd = -1;
    unlink(path.c_str());
}

const char*
RecvEndReason(SeqpacketRecv r, uint64_t* malformed)
{
    switch (r)
    {
    case SeqpacketRecv::Closed:
        return "the process closed it";
    case SeqpacketRecv::WrongSize:
        ++*malformed;
        return "a request of the wrong size";
    default:
        return "connection error";
    }
}

} // namespace ns3
