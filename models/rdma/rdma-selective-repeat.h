// IRN-style selective repeat for RC (Mittal et al., "Revisiting Network Support for RDMA",
// SIGCOMM 2018, §3.1-3.2): the per-QP state that lets a requester retransmit only the packets
// a responder's selective acknowledgments (SACKs) show missing, and lets the responder keep
// the packets that arrive after a gap instead of discarding them as IBA's go-back-N does
// (IBA vol. 1 §9.7.5.1.1). Plain state and rules; the engine's requester, completer and
// responder drive it (rdma-engine-recovery.cc).
#ifndef CNUAS_RDMA_SELECTIVE_REPEAT_H
#define CNUAS_RDMA_SELECTIVE_REPEAT_H

#include "ib-transport-headers.h"
#include "rdma-link-port.h"

#include <cstdint>
#include <map>
#include <vector>

namespace ns3
{

/// How an RC requester recovers from a loss (attribute RdmaEngine::LossRecovery).
enum RdmaLossRecovery
{
    /// IBA vol. 1 §9.7.5.1.1 / §9.7.5.2.2: the responder drops what follows a gap and NAKs
    /// once; the requester resends everything from the NAK's PSN (go-back-N).
    RDMA_RECOVERY_GO_BACK_N = 0,
    /// IRN: the responder keeps out-of-order packets and SACKs each; the requester resends
    /// only the missing ones.
    RDMA_RECOVERY_SELECTIVE = 1,
};

/// Bytes of the SACK extension that follows the AETH of a selective NAK (see
/// docs/rdma-transport.md): 8 reserved bits, then the 24-bit PSN that was received.
constexpr uint32_t kRdmaSackExtBytes = 4;

/// A request packet the responder received after a gap, kept until the gap fills.
struct RdmaHeldRequest
{
    IbTransportHeaders headers;
    std::vector<uint8_t> payload;
    RdmaRxInfo info;
};

/**
 * \brief The selective-repeat state of one RC QP (both directions' roles).
 *
 * Requester side: one entry per PSN from the oldest unacknowledged one (the cumulative
 * acknowledgment, `base`) to the highest sent, saying whether a SACK reported it received and
 * whether it has already been resent in this loss episode. IRN's loss rule (§3.1): a packet is
 * lost when a SACK reported a later packet, or, after a timeout, when it was sent before the
 * timer started and is not SACKed; each lost packet is resent once, before any new packet.
 *
 * Responder side: the out-of-order request packets, by PSN, at most `window` of them ahead of
 * the expected PSN; they are executed in PSN order once the gap before them is filled.
 */
class RdmaSelectiveRepeat
{
  public:
    // ---- requester ----

    /// The cumulative acknowledgment moved to `base` (the oldest PSN still unacknowledged).
    void Advance(uint32_t base);
    /// A SACK for `psn`; false (and nothing changes) unless base <= psn < sentEnd and psn is
    /// within `window` of base.
    bool OnSack(uint32_t psn, uint32_t sentEnd, uint32_t window);
    /// Timeout: every PSN in [base, lostEnd) that no SACK reported is lost, including ones
    /// already resent (their resends may have been lost too).
    void OnTimeout(uint32_t lostEnd);
    /// The oldest lost PSN not resent yet; false if none.
    bool NextLost(uint32_t& psn);
    /// `count` PSNs from `psn` on were resent (or need no resend).
    void MarkResent(uint32_t psn, uint32_t count);
    /// Whether a SACK reported `psn` received.
    bool IsSacked(uint32_t psn) const;
    bool HasState() const
    {
        return !m_flags.empty();
    }

    /// Forget everything (QP reset, or go-back-N took over).
    void ClearRequester();

    // ---- responder ----

    /// Hold an out-of-order request; false if it was held already.
    bool Hold(uint32_t psn, RdmaHeldRequest&& r);
    /// Take the held request for `psn`, if any.
    bool Take(uint32_t psn, RdmaHeldRequest& out);
    /// Forget held requests before `ePsn` (executed after a go-back-N resend).
    void DropBehind(uint32_t ePsn);
    size_t HeldCount() const
    {
        return m_held.size();
    }
    void ClearResponder()
    {
        m_held.clear();
    }

    /// The responder is executing held requests: their acknowledgments are coalesced.
    bool draining = false;

  private:
    enum : uint8_t
    {
        kSacked = 1,
        kResent = 2,
        kLost = 4, ///< marked lost by a timeout
    };

    void Grow(uint32_t n);

    bool m_haveBase = false;
    uint32_t m_base = 0;
    /// m_flags[i]: PSN base + i. A vector rather than a deque: an empty deque allocates, and
    /// every QP context holds one of these even under go-back-N.
    std::vector<uint8_t> m_flags;
    uint32_t m_sackEnd = 0;      ///< one past the highest SACKed offset
    uint32_t m_scan = 0;         ///< offsets below it hold no unresent lost packet
    std::map<uint32_t, RdmaHeldRequest> m_held;
};

} // namespace ns3

#endif
