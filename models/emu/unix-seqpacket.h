// The Unix-socket plumbing the daemon's services for real processes share (EmuHcaService for
// verbs, EmuUmadService for umad): a listening SOCK_SEQPACKET socket, and one datagram sent with
// an optional descriptor (SCM_RIGHTS).
#ifndef CNUAS_UNIX_SEQPACKET_H
#define CNUAS_UNIX_SEQPACKET_H

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace ns3
{

/**
 * A non-blocking SOCK_SEQPACKET socket listening at `path` (an existing file there is
 * replaced), with the file's mode set to `mode`. -1 with the reason in *why.
 */
int ListenSeqpacket(const std::string& path, mode_t mode, std::string* why);

/**
 * Sends `len` bytes on `sock` as one datagram, with descriptor `fd` attached when it is not -1,
 * without blocking: the peer waits for this answer, so a socket without room is a peer that
 * does not read. Whether all of it went.
 */
bool SendDatagramWithFd(int sock, const void* buf, size_t len, int fd);

} // namespace ns3

#endif
