// The Unix-socket plumbing the daemon's services for real processes share (EmuHcaService for
// verbs, EmuUmadService for umad, EmuCmService for rdma_cm): a listening SOCK_SEQPACKET socket,
// one fixed-size request received, and one datagram sent with an optional descriptor
// (SCM_RIGHTS).
#ifndef CNUAS_UNIX_SEQPACKET_H
#define CNUAS_UNIX_SEQPACKET_H

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace ns3
{

/**
 * A non-blocking SOCK_SEQPACKET socket listening at `path` (an existing file there is
 * replaced), with the file's mode set to `mode`. -1 with the reason in *why.
 */
int ListenSeqpacket(const std::string& path, mode_t mode, std::string* why);

/**
 * A service's listening socket on the simulation thread: ListenSeqpacket at `path`, watched by
 * EmuRealtimeSimulatorImpl (which must be the simulator), each waiting connection accepted
 * (non-blocking, close-on-exec) and handed to `admit` with the peer's pid (SO_PEERCRED; 0 when
 * it cannot be read), which owns the descriptor from then on. `service` ("the HCA") names it in
 * the reason for a failure. -1 with the reason in *why, nothing left behind; CloseListener ends
 * it.
 */
int ListenAndAccept(const std::string& path,
                    mode_t mode,
                    const char* service,
                    std::function<void(int fd, pid_t pid)> admit,
                    std::string* why);

/**
 * The end of what ListenSeqpacket began: stops watching `listenFd` (EmuRealtimeSimulatorImpl),
 * closes it, removes its socket file `path` and sets `listenFd` to -1. Nothing when it is -1.
 */
void CloseListener(int& listenFd, const std::string& path);

/**
 * Sends `len` bytes on `sock` as one datagram, with descriptor `fd` attached when it is not -1,
 * without blocking: the peer waits for this answer, so a socket without room is a peer that
 * does not read. Whether all of it went.
 */
bool SendDatagramWithFd(int sock, const void* buf, size_t len, int fd);

/**
 * Has the simulation thread call `onReadable` whenever `fd`, a connection a service admitted,
 * can be read. False (errno set) when it cannot be watched: the service then ends it.
 */
bool WatchConnection(int fd, std::function<void()> onReadable);

/// What RecvRequest found.
enum class SeqpacketRecv
{
    Request,   ///< one request of the expected size, copied out
    None,      ///< nothing waiting (or interrupted): try again when readable
    Closed,    ///< the process closed its end
    Error,     ///< the connection failed
    WrongSize, ///< a datagram of another size, an empty one too: not the library speaking (drop
               ///< the connection)
};

/**
 * Whether the process at the other end of `sock` has closed it. recv's 0 says that or "an empty
 * datagram" (SOCK_SEQPACKET carries those, with descriptors attached if the sender likes); only
 * the hang-up poll reports tells the two apart, and an empty datagram is a malformed request,
 * not a goodbye.
 */
bool SeqpacketPeerClosed(int sock);

/**
 * Receives one datagram from `sock` without blocking into `request` (`size` bytes). Only a
 * datagram of exactly `size` bytes is a Request: recv's MSG_TRUNC gives a longer one's real
 * length, so it is WrongSize rather than cut to fit (what it left in `request` means nothing);
 * an empty datagram is WrongSize too, and Closed only a peer that has gone. With `passedFd`,
 * the first descriptor that came with a Request goes to *passedFd (-1: none; the caller owns
 * it), any other is closed, and a datagram with more than fit in the control buffer is
 * WrongSize; descriptors that came with anything else are closed here. Without it, the kernel
 * discards whatever descriptors came.
 */
SeqpacketRecv RecvRequest(int sock, void* request, size_t size, int* passedFd = nullptr);

/**
 * Why a connection ends after RecvRequest found `r` (not Request or None): the reason for the
 * service's log, with a WrongSize counted in *malformed.
 */
const char* RecvEndReason(SeqpacketRecv r, uint64_t* malformed);

} // namespace ns3

#endif
