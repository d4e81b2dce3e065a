// The congestion-control seam of the RDMA transport: the engine tells a policy about every
// packet it sends, every acknowledgment, every congestion notification and every ECN-marked
// packet it receives, and asks it per QP how fast and how much it may send. DCQCN (RoCEv2,
// annex A17 CNPs) and InfiniBand congestion control (annex A10 FECN/BECN) plug in behind it.
#ifndef CNUAS_RDMA_CONGESTION_CONTROL_H
#define CNUAS_RDMA_CONGESTION_CONTROL_H

#include "models/common/int-stack.h"

#include "ns3/nstime.h"
#include "ns3/object.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief A congestion-control policy with per-QP state.
 *
 * Every hook names the QP (its number on this device); a policy keeps what it needs per QP,
 * created on OnQpStart and dropped on OnQpStop. GetRate and GetWindow are asked before each
 * packet the requester sends: 0 means "no limit from congestion control". The engine applies
 * the tighter of these and the QP's own limits (its rate_limit and the engine's window).
 */
class RdmaCongestionControl : public Object
{
  public:
    static TypeId GetTypeId();
    ~RdmaCongestionControl() override;

    /// A QP starts sending (entered RTS); `lineRateBps` is its port's rate (0 if unknown).
    virtual void OnQpStart(uint32_t qpn, uint64_t lineRateBps) = 0;
    /// The QP stopped (reset, error, destroyed).
    virtual void OnQpStop(uint32_t qpn) = 0;
    /// The requester sent a packet of `bytes` transport bytes (retransmissions included).
    virtual void OnSend(uint32_t qpn, uint32_t bytes, bool retransmission) = 0;
    /// An ACK (or a READ response / atomic ACK) acknowledged `ackedPackets` more packets;
    /// `rtt` is the time since the newest of them was first sent (zero when unknown).
    virtual void OnAck(uint32_t qpn, uint32_t ackedPackets, Time rtt) = 0;
    /// A RoCEv2 CNP arrived for the QP (annex A17).
    virtual void OnCnp(uint32_t qpn) = 0;
    /// A response with BECN set arrived (IBA annex A10).
    virtual void OnBecn(uint32_t qpn) = 0;
    /// The responder received a packet with ECN CE (RoCE) or FECN (IB) for this QP. True if
    /// the policy wants a notification sent back (a CNP or a BECN).
    virtual bool OnEcnMarkedReceive(uint32_t qpn) = 0;
    /// Allowed sending rate, bit/s; 0 = unlimited.
    virtual uint64_t GetRate(uint32_t qpn) const = 0;
    /// Allowed bytes in flight (sent, not acknowledged); 0 = unlimited.
    virtual uint64_t GetWindow(uint32_t qpn) const = 0;
    /// Least time from the start of a packet of `bytes` transport bytes to the start of the
    /// QP's next one (a delay-based limiter such as IBA annex A10's); zero = no limit. The
    /// requester applies the larger of this and the gap GetRate gives.
    virtual Time GetPacketGap(uint32_t qpn, uint32_t bytes) const
    {
        return Time(0);
    }
    /**
     * An acknowledgment arrived with the INT stack its responder echoed (HPCC paper §3.2):
     * `psnEnd` is one past the last PSN it acknowledges, `sndNxt` one past the highest PSN the
     * requester has sent (a policy that updates once per round trip compares the two, as the
     * HPCC simulator compares ack_seq with snd_nxt). Called after OnAck, for every ACK or NAK
     * that carried a stack. Policies that do not use telemetry ignore it.
     */
    virtual void OnIntAck(uint32_t qpn, uint32_t psnEnd, uint32_t sndNxt, const IntStack& stack)
    {
    }
};

/// The "none" policy: no limits, notifications ignored (counted).
class RdmaCcNone : public RdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    void OnQpStart(uint32_t qpn, uint64_t lineRateBps) override;
    void OnQpStop(uint32_t qpn) override;
    void OnSend(uint32_t qpn, uint32_t bytes, bool retransmission) override;
    void OnAck(uint32_t qpn, uint32_t ackedPackets, Time rtt) override;
    void OnCnp(uint32_t qpn) override;
    void OnBecn(uint32_t qpn) override;
    bool OnEcnMarkedReceive(uint32_t qpn) override;
    uint64_t GetRate(uint32_t qpn) const override;
    uint64_t GetWindow(uint32_t qpn) const override;

    /// Notifications seen (CNPs + BECNs + ECN marks), for tests and statistics.
    uint64_t GetNotifications() const
    {
        return m_notifications;
    }

  private:
    uint64_t m_notifications{0};
};

/// A fixed-limit policy: every QP gets the same configured rate and window (attributes
/// `Rate`, `Window`). Useful to exercise the requester's limiter and as a baseline.
class RdmaCcFixed : public RdmaCcNone
{
  public:
    static TypeId GetTypeId();
    uint64_t GetRate(uint32_t qpn) const override;
    uint64_t GetWindow(uint32_t qpn) const override;

  private:
    uint64_t m_rate{0};
    uint64_t m_window{0};
};

} // namespace ns3

#endif
