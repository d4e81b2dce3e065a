// HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019) as the HPCC
// simulator implements it (its rdma-hw.cc, CC_MODE 3): a per-QP rate computed from the in-band
// telemetry (INT) every ACK echoes, with a window of BDP x rate / line rate.
#ifndef CNUAS_RDMA_CC_HPCC_H
#define CNUAS_RDMA_CC_HPCC_H

#include "rdma-congestion-control.h"

#include "ns3/data-rate.h"
#include "ns3/traced-callback.h"

#include <unordered_map>

namespace ns3
{

/**
 * \brief HPCC's sender, per QP, driven by OnIntAck.
 *
 * For every hop j of an echoed stack, against the same hop of the previous echo
 * (HPCC paper Algorithm 1, MeasureInflight; the simulator's UpdateRateHp):
 *   tau_j = time_j - time_j', txRate_j = (txBytes_j - txBytes_j') * 8 / tau_j,
 *   U_j = txRate_j / B_j + min(qlen_j, qlen_j') * R_line / (B_j * W),
 * with W the base window in bytes (R_line x T / 8, or Window). U = max_j U_j and tau its hop's
 * tau (at most T); u = (u (T - tau) + U tau) / T. Then k = u / eta and, if k >= 1 or the
 * additive-increase stage has reached MaxStage, R = Rc / k + R_AI and stage 0; else
 * R = Rc + R_AI and stage + 1; R is kept in [MinRate, line]. The reference rate Rc and the
 * stage are updated only once per round trip: when an ACK acknowledges beyond the PSN that was
 * next to send at the previous update; the ACKs between react from Rc ("fast react", if
 * FastReact) without moving it. The first echo of a QP only records the hops.
 *
 * GetRate returns R; GetWindow returns W x R / line (VarWindow) or W (HasWindow without
 * VarWindow) or 0 (no window). ECN notifications are ignored: HPCC needs none.
 */
class RdmaCcHpcc : public RdmaCongestionControl
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
    void OnIntAck(uint32_t qpn, uint32_t psnEnd, uint32_t sndNxt, const IntStack& stack) override;

    /// Current rate R, reference rate Rc (bit/s) and utilization estimate u of a QP (0 if
    /// unknown).
    double GetCurrentRate(uint32_t qpn) const;
    double GetReferenceRate(uint32_t qpn) const;
    double GetUtilization(uint32_t qpn) const;
    /// The base window W of a QP in bytes (0 if unknown).
    uint64_t GetBaseWindow(uint32_t qpn) const;
    /// Echoes with more hops than a stack holds, or hops whose time did not advance (skipped).
    uint64_t GetBadEchoes() const
    {
        return m_badEchoes;
    }

    /// Rate: (qpn, R bit/s) whenever R changes. Utilization: (qpn, u) at every update.
    typedef void (*RateCallback)(uint32_t qpn, double rate);
    typedef void (*UtilizationCallback)(uint32_t qpn, double u);

  private:
    struct Qp
    {
        // What GetRate and GetWindow read for every packet sent comes first; the previous
        // echo, read once per ACK, last.
        double line = 0;
        double rate = 0;    ///< R
        double curRate = 0; ///< Rc, the reference rate
        double u = 1;       ///< the simulator starts every QP at u = 1
        double rateAi = 0;  ///< R_AI for this QP's line rate
        uint64_t window = 0; ///< W, bytes
        uint32_t stage = 0;
        bool started = false; ///< the first echo has been recorded
        uint32_t lastUpdatePsn = 0;
        IntStack prev;
    };
    void Update(uint32_t qpn, Qp& q, const IntStack& stack, bool fastReact);

    void SetBaseRtt(Time t);
    Time GetBaseRtt() const;
    void SetMinRate(DataRate r);
    DataRate GetMinRate() const;

    /// The QP's state, or null. The engine asks for the same QP several times in a row (the
    /// window and the rate of the packet it sends, the echo of an ACK then the window of the
    /// packet it releases): the last one found is kept, so those cost no hash (a division by
    /// the bucket count) and no bucket load. Nodes of an unordered_map stay where they are
    /// until erased (OnQpStop forgets the kept one).
    Qp* Find(uint32_t qpn) const
    {
        return m_lastQp && m_lastQpn == qpn ? m_lastQp : FindSlow(qpn);
    }
    Qp* FindSlow(uint32_t qpn) const;

    double m_eta = 0.95;
    uint32_t m_maxStage = 0;
    DataRate m_rateAi;
    DataRate m_minRate;
    Time m_baseRtt;
    double m_baseRttS = 0;    ///< m_baseRtt in seconds (Update's T, once per ACK)
    double m_minRateBps = 0;  ///< m_minRate as a double
    uint64_t m_windowBytes = 0;
    bool m_hasWindow = true;
    bool m_varWindow = true;
    bool m_fastReact = true;
    uint64_t m_badEchoes = 0;
    std::unordered_map<uint32_t, Qp> m_qps;
    mutable uint32_t m_lastQpn = 0;
    mutable Qp* m_lastQp = nullptr;
    TracedCallback<uint32_t, double> m_rateTrace;
    TracedCallback<uint32_t, double> m_utilTrace;
};

} // namespace ns3

#endif
