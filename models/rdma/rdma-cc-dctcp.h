// A DCTCP-style rate policy for RDMA (the HPCC simulator's CC_MODE 8): DCTCP's estimator of the
// fraction of marked packets (Alizadeh et al., "Data Center TCP", SIGCOMM 2010, §3.1) driving a
// rate instead of a congestion window. Switches mark in threshold mode (Kmin = Kmax, Pmax 1).
#ifndef CNUAS_RDMA_CC_DCTCP_H
#define CNUAS_RDMA_CC_DCTCP_H

#include "rdma-congestion-control.h"

#include "ns3/data-rate.h"
#include "ns3/traced-callback.h"

#include <unordered_map>

namespace ns3
{

/**
 * \brief DCTCP's reaction as a per-QP rate.
 *
 * Every QP starts at line rate. The receiver sends one CNP per CE-marked packet (the ECN
 * echo; no CnpInterval). Per window of data (from when a packet is sent until it is
 * acknowledged, DCTCP's "one RTT"): alpha = (1 - G) alpha + G F, F the fraction of the
 * window's acknowledged packets that were marked, and, unless a cut happened in that window,
 * the rate grows by RateAi. The first CNP after the end of the last cut's window cuts the
 * rate once: R = max(MinRate, R (1 - alpha / 2)) (DCTCP §3.1, one reaction per window).
 * Like the HPCC simulator's DCTCP it needs a window to be stable (its issue #17): Window
 * bytes in flight, scaled by rate / line rate when VariableWindow is set.
 */
class RdmaCcDctcp : public RdmaCongestionControl
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

    /// Current rate (bit/s) and alpha of a QP (0 for an unknown QP).
    double GetCurrentRate(uint32_t qpn) const;
    double GetAlpha(uint32_t qpn) const;
    /// Rate cuts applied (over all QPs).
    uint64_t GetRateDecreases() const
    {
        return m_decreases;
    }
    /// Sets the window of one QP (bytes; overrides Window, e.g. a per-pair BDP).
    void SetQpWindow(uint32_t qpn, uint64_t bytes);

  private:
    struct Qp
    {
        double line = 0;
        double rate = 0;
        double alpha = 1;
        uint64_t sent = 0;         ///< new (not retransmitted) packets sent
        uint64_t acked = 0;        ///< packets acknowledged
        uint64_t batchEnd = 0;     ///< the window ends when `acked` reaches this
        bool batchStarted = false; ///< the first window has been opened
        uint64_t batchAcked = 0;   ///< packets acknowledged in this window
        uint64_t batchMarked = 0;  ///< of which marked (CNPs)
        bool cwr = false;          ///< a cut happened; no other until cwrEnd is acknowledged
        uint64_t cwrEnd = 0;
        uint64_t window = 0;       ///< per-QP window (0: the Window attribute)
    };

    double m_g = 1.0 / 16;
    double m_initialAlpha = 1.0;
    DataRate m_rateAi;
    DataRate m_minRate;
    uint64_t m_window = 0;
    bool m_varWin = false;
    uint64_t m_decreases = 0;
    std::unordered_map<uint32_t, Qp> m_qps;
    TracedCallback<uint32_t, double> m_rateTrace;
    TracedCallback<uint32_t, double> m_alphaTrace;
};

} // namespace ns3

#endif
