// DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015) in the
// two forms researchers use, as two named presets behind the engine's congestion-control seam:
//  * RdmaCcDcqcnPaper: the paper's reaction point (rate cut and alpha update on each CNP, alpha
//    decay timer K, rate increase driven by a timer T and a byte counter B, fast recovery /
//    additive / hyper increase by the two counters) and its notification point (at most one CNP
//    per QP per N = 50 us);
//  * RdmaCcDcqcnMlx: the NIC-firmware form the HPCC simulator implements (ConnectX-4 and later):
//    alpha updated on a fixed tick, the rate cut evaluated on a fixed tick, increase by timer
//    only (no byte counter).
// Every constant is an attribute; the presets differ only in their defaults and in which of the
// two reaction-point procedures runs.
#ifndef CNUAS_RDMA_CC_DCQCN_H
#define CNUAS_RDMA_CC_DCQCN_H

#include "rdma-congestion-control.h"

#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/traced-callback.h"

#include <unordered_map>

namespace ns3
{

/**
 * \brief The DCQCN reaction point (sender, per QP) and notification point (receiver, per QP).
 *
 * Use one of the presets (RdmaCcDcqcnPaper, RdmaCcDcqcnMlx); this base has no attributes of
 * its own. Rates are kept as doubles in bit/s and reported by GetRate rounded to bit/s.
 */
class RdmaCcDcqcn : public RdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    RdmaCcDcqcn();
    ~RdmaCcDcqcn() override;

    void OnQpStart(uint32_t qpn, uint64_t lineRateBps) override;
    void OnQpStop(uint32_t qpn) override;
    void OnSend(uint32_t qpn, uint32_t bytes, bool retransmission) override;
    void OnAck(uint32_t qpn, uint32_t ackedPackets, Time rtt) override;
    void OnCnp(uint32_t qpn) override;
    void OnBecn(uint32_t qpn) override;
    bool OnEcnMarkedReceive(uint32_t qpn) override;
    uint64_t GetRate(uint32_t qpn) const override;
    uint64_t GetWindow(uint32_t qpn) const override;

    /// Current rate Rc, target rate Rt (bit/s) and alpha of a QP (0 if unknown).
    double GetCurrentRate(uint32_t qpn) const;
    double GetTargetRate(uint32_t qpn) const;
    double GetAlpha(uint32_t qpn) const;
    uint64_t GetCnpsReceived() const
    {
        return m_cnpsReceived;
    }
    /// CNPs this notification point asked for / suppressed by CnpInterval.
    uint64_t GetCnpsRequested() const
    {
        return m_cnpsRequested;
    }
    uint64_t GetCnpsSuppressed() const
    {
        return m_cnpsSuppressed;
    }
    /// Rate decreases applied (over all QPs).
    uint64_t GetRateDecreases() const
    {
        return m_decreases;
    }

    /// Sets the window of one QP (bytes; overrides Window, e.g. a per-pair BDP).
    void SetQpWindow(uint32_t qpn, uint64_t bytes);

    /// Rate: (qpn, Rc bit/s, Rt bit/s) whenever Rc or Rt changes.
    typedef void (*RateCallback)(uint32_t qpn, double rc, double rt);
    /// Alpha: (qpn, alpha) whenever alpha changes.
    typedef void (*AlphaCallback)(uint32_t qpn, double alpha);

  protected:
    void DoDispose() override;
    /// Adds every constant as an attribute of `tid` with the preset's defaults.
    struct Defaults
    {
        double g;
        double initialAlpha;
        Time alphaInterval;    ///< paper: K; firmware: alpha tick
        Time decreaseInterval; ///< firmware only: rate-decrease tick
        Time increaseTimer;    ///< paper: T; firmware: RP timer
        uint64_t byteCounter;  ///< paper only: B (0 disables the byte counter)
        uint32_t f;            ///< fast-recovery rounds
        DataRate rateAi;
        DataRate rateHai;
        DataRate minRate;
        bool clampTargetRate;
        double rateOnFirstCnp; ///< firmware only: Rc multiplier at a QP's first CNP
        double minDecreaseFactor; ///< firmware option: largest single cut (1 = none)
        Time cnpInterval;      ///< notification point: least time between CNPs of a QP
        bool hyperScaled;      ///< hyper increase adds R_HAI x (rounds past F), as QCN does
        bool hyperHalving;     ///< paper form: T and B halve in hyper increase (QCN)
        bool alphaBeforeCut;   ///< paper form: a CNP updates alpha before the cut uses it
        bool targetHeuristic;  ///< paper form: ns3-rdma's "Rt > 10 Rc: Rt /= 8" on a CNP
    };
    static TypeId AddAttributes(TypeId tid, const Defaults& d);

    bool m_firmware = false; ///< which reaction-point procedure (set by the preset)

  private:
    struct Qp
    {
        double line = 0;
        double rc = 0;
        double rt = 0;
        double alpha = 1;
        uint32_t timerCount = 0; ///< T: increase-timer expiries since the last cut
        uint32_t byteCount = 0;  ///< BC: byte-counter expiries since the last cut
        uint64_t bytes = 0;      ///< bytes sent since the last byte-counter expiry
        bool cnpSeen = false;    ///< a CNP has arrived (the reaction point is active)
        bool cnpInAlphaPeriod = false;
        bool cnpInDecreasePeriod = false;
        Time lastCnpSent = Time(-1); ///< notification point
        uint64_t window = 0;         ///< per-QP window (0: the Window attribute)
        EventId alphaEvent;
        EventId decreaseEvent;
        EventId increaseEvent;
    };

    Qp* Find(uint32_t qpn);
    const Qp* Find(uint32_t qpn) const;
    void Cut(uint32_t qpn, Qp& q);
    void AlphaTick(uint32_t qpn);
    void DecreaseTick(uint32_t qpn);
    void IncreaseTimer(uint32_t qpn);
    void Increase(uint32_t qpn, Qp& q);
    void SetAlpha(uint32_t qpn, Qp& q, double a);
    void Report(uint32_t qpn, const Qp& q);

    double m_g = 1.0 / 256;
    double m_initialAlpha = 1.0;
    Time m_alphaInterval;
    Time m_decreaseInterval;
    Time m_increaseTimer;
    uint64_t m_byteCounter = 0;
    uint32_t m_f = 5;
    DataRate m_rateAi;
    DataRate m_rateHai;
    DataRate m_minRate;
    bool m_clamp = false;
    double m_rateOnFirstCnp = 1.0;
    double m_minDecreaseFactor = 1.0;
    Time m_cnpInterval;
    bool m_hyperScaled = false;
    bool m_hyperHalving = false;
    bool m_alphaBeforeCut = false;
    bool m_targetHeuristic = false;
    /// Paper form: both counters are past F (hyper increase).
    bool InHyper(const Qp& q) const;
    uint64_t m_window = 0;
    bool m_varWin = false;

    std::unordered_map<uint32_t, Qp> m_qps;
    uint64_t m_cnpsReceived = 0;
    uint64_t m_cnpsRequested = 0;
    uint64_t m_cnpsSuppressed = 0;
    uint64_t m_decreases = 0;
    TracedCallback<uint32_t, double, double> m_rateTrace;
    TracedCallback<uint32_t, double> m_alphaTrace;
};

/**
 * The paper's DCQCN (SIGCOMM 2015 §3): g = 1/256, K = 55 us, T = 55 us, B = 10 MB, F = 5,
 * R_AI = 40 Mb/s, R_HAI = 400 Mb/s (10 x R_AI, the QCN ratio; the paper does not fix it),
 * CNP at most once per 50 us per QP, alpha starting at 1. From QCN (802.1Qau), which the
 * paper's increase follows, as the authors' ns3-rdma also does: in hyper increase the step is
 * R_HAI times the rounds past F and the timer and byte counter run at T/2 and B/2. ns3-rdma's
 * other choices (alpha updated before the cut, "Rt > 10 Rc: Rt /= 8", initial alpha 0.5) are
 * attributes, off by default.
 */
class RdmaCcDcqcnPaper : public RdmaCcDcqcn
{
  public:
    static TypeId GetTypeId();
    RdmaCcDcqcnPaper();
};

/**
 * The NIC-firmware DCQCN as the HPCC simulator implements it (its rdma-hw.cc, "Mlx" functions),
 * with the values of its run.py for the HPCC paper at 100 Gb/s: g = 1/256, alpha tick 1 us,
 * decrease tick 4 us, RP timer 300 us, F = 1, R_AI = 20 Mb/s, R_HAI = 200 Mb/s, min rate
 * 1 Gb/s, no target clamp, no byte counter. The HPCC simulator piggybacks a CNP flag on every
 * ACK of a marked packet; here the notification point sends a CNP per marked packet at most
 * once per 4 us (the decrease tick: the reaction point cannot react faster).
 */
class RdmaCcDcqcnMlx : public RdmaCcDcqcn
{
  public:
    static TypeId GetTypeId();
    RdmaCcDcqcnMlx();
};

} // namespace ns3

#endif
