// TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter", SIGCOMM
// 2015, Algorithm 1): a per-QP rate driven by the RTT and its gradient, with the constants the
// HPCC simulator uses as defaults (its rdma-hw.cc and run.py).
#ifndef CNUAS_RDMA_CC_TIMELY_H
#define CNUAS_RDMA_CC_TIMELY_H

#include "rdma-congestion-control.h"

#include "ns3/data-rate.h"
#include "ns3/traced-callback.h"

#include <deque>
#include <unordered_map>

namespace ns3
{

/**
 * \brief TIMELY's rate computation, once per acknowledgment that carries an RTT sample.
 *
 * new_rtt_diff = rtt - prev_rtt; rtt_diff = (1 - Alpha) rtt_diff + Alpha new_rtt_diff;
 * gradient = rtt_diff / MinRtt. Then: rtt < TLow: rate += Delta; rtt > THigh:
 * rate *= 1 - Beta (1 - THigh / rtt); gradient <= 0: rate += N Delta, N = HaiRounds after
 * HaiRounds such events in a row (hyper-active increase), else 1; otherwise
 * rate *= 1 - Beta gradient. The rate stays within [MinRate, line rate]. The first sample of a
 * QP only sets prev_rtt. ECN notifications are ignored (TIMELY needs none).
 *
 * The RTT sample is TIMELY's (§4, "RTT measurement"): the completion time of a segment of
 * SegmentBytes (16-64 KB in the paper) minus the time its first packet was sent minus the
 * segment's serialization at line rate, one sample (and one rate update) per segment. TIMELY
 * paces between segments and sends a segment at line rate; this engine paces every packet, so
 * what is subtracted is the time the segment actually took to send (first packet's start to
 * the last packet's end at line rate) when that is longer: otherwise a slow flow would see its
 * own pacing as RTT, read it as congestion and slow down further. The
 * policy keeps these itself from OnSend and OnAck. SegmentBytes 0 instead takes the RTT the
 * engine passes with every acknowledgment (per-ACK samples, as the HPCC simulator does).
 */
class RdmaCcTimely : public RdmaCongestionControl
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

    /// Current rate, bit/s (0 for an unknown QP).
    double GetCurrentRate(uint32_t qpn) const;
    /// RTT samples taken (over all QPs).
    uint64_t GetSamples() const
    {
        return m_samples;
    }

    /// RttSample: (qpn, the RTT sample) each time one is taken.
    typedef void (*RttCallback)(uint32_t qpn, Time rtt);

  private:
    struct Qp
    {
        double line = 0;
        double rate = 0;
        double prevRtt = -1; ///< seconds; < 0 before the first sample
        double rttDiff = 0;  ///< seconds
        uint32_t negativeRun = 0;
        // Segment bookkeeping (SegmentBytes > 0), in new packets sent / acknowledged.
        struct Segment
        {
            uint64_t endPacket; ///< the segment is complete when this many are acknowledged
            uint64_t bytes;
            Time firstSent;
            Time sendTime; ///< first packet's start to last packet's end at line rate
        };
        std::deque<Segment> segments;
        uint64_t sent = 0;
        uint64_t acked = 0;
        uint64_t openBytes = 0; ///< bytes of the segment being sent
        Time openFirstSent;
    };

    void Sample(uint32_t qpn, Qp& q, double rttSeconds);

    double m_alpha = 0.875;
    double m_beta = 0.8;
    Time m_tLow;
    Time m_tHigh;
    Time m_minRtt;
    DataRate m_delta;
    uint32_t m_haiRounds = 5;
    DataRate m_minRate;
    uint32_t m_segmentBytes = 16384;
    uint64_t m_samples = 0;
    TracedCallback<uint32_t, Time> m_rttTrace;
    std::unordered_map<uint32_t, Qp> m_qps;
    TracedCallback<uint32_t, double> m_rateTrace;
};

} // namespace ns3

#endif
