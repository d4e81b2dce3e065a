// The memory management unit of a shared-buffer Ethernet switch: ingress admission with
// reserved, shared and headroom space per (port, priority), PFC XOFF/XON decisions, and ECN
// marking decisions on egress queues.
#ifndef CNUAS_SHARED_BUFFER_MMU_H
#define CNUAS_SHARED_BUFFER_MMU_H

#include "ns3/object.h"
#include "ns3/random-variable-stream.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

class EthNetDevice;

/**
 * \brief Shared-buffer accounting the way merchant-silicon switches do it (the "Broadcom"
 * model the HPCC simulator also follows), per ingress port and priority:
 *
 *  - reserved: the first ReservedBytes of each (port, priority) are guaranteed;
 *  - shared: beyond that, bytes come from one pool while the (port, priority) holds less than
 *    its threshold: static (XoffBytes) or dynamic, Alpha x (pool - pool in use), the
 *    free-space fraction of Choudhury and Hahne;
 *  - headroom: a lossless priority over its threshold has PFC XOFF sent and lands in its
 *    headroom, sized to absorb what is still on the way (EthNetDevice::HeadroomNeeded, from
 *    802.1Qbb Annex O) unless HeadroomBytes sets it. Lossless frames beyond headroom and lossy
 *    frames beyond the threshold are dropped (counted).
 *
 * XOFF is decided when a (port, priority) has bytes in headroom or holds its threshold in shared
 * space; XON when its headroom is empty and it is back below the XON level (static XonBytes, or
 * dynamic threshold - ResumeOffsetBytes), or it holds no shared bytes at all.
 *
 * ECN (RFC 3168 CE marking on egress queue length q): RED-like, p = 0 for q <= Kmin,
 * Pmax (q - Kmin)/(Kmax - Kmin) up to Kmax, 1 above (the DCQCN switch rule); or a single
 * threshold, mark when q > Kmin (DCTCP).
 *
 * EcnRateMap gives other thresholds to egress ports of given speeds (the HPCC simulator's
 * KMIN_MAP/KMAX_MAP/PMAX_MAP: a 400 Gb/s fabric port drains a queue four times faster than a
 * 100 Gb/s host port, so the same queue in bytes is a quarter of the delay); a port whose rate
 * is not in the map uses KminBytes/KmaxBytes/Pmax.
 */
class SharedBufferMmu : public Object
{
  public:
    static TypeId GetTypeId();
    SharedBufferMmu();

    enum Bucket : uint8_t
    {
        Reserved = 0,
        Shared = 1,
        Headroom = 2
    };
    enum class ThresholdMode
    {
        Static = 0,
        Dynamic = 1
    };
    enum class EcnMode
    {
        Off = 0,
        Red = 1,
        Threshold = 2
    };

    /// Sizes headroom for the ports (1-based numbers = index + 1) and carves the shared pool.
    void Setup(const std::vector<EthNetDevice*>& ports);
    /// "" if consistent, else the problem (Kmin > Kmax, XON not below XOFF, headroom below the
    /// round trip need, no shared pool left, ...).
    std::string Validate() const;

    /**
     * Charges `bytes` arriving on (port index, priority) to a bucket; false if the frame must
     * be dropped (then *dropForHeadroom says which limit: lossless headroom or lossy threshold).
     */
    bool Admit(uint16_t port, uint8_t prio, uint32_t bytes, bool lossless, uint8_t* bucket,
               bool* dropForHeadroom);
    /// Returns the bytes of a frame leaving the buffer.
    void Release(uint16_t port, uint8_t prio, uint32_t bytes, uint8_t bucket);
    bool ShouldPause(uint16_t port, uint8_t prio) const;
    bool ShouldResume(uint16_t port, uint8_t prio) const;
    /// Whether a frame meeting an egress queue of `queueBytes` gets CE (the default set).
    bool ShouldMark(uint64_t queueBytes);
    /// The same on the egress port of index `port` (its rate's thresholds after Setup).
    bool ShouldMark(uint64_t queueBytes, uint16_t port);
    bool EcnAtDequeue() const { return m_ecnAtDequeue; }
    bool EcnEnabled() const { return m_ecnMode != static_cast<int>(EcnMode::Off); }
    /// Marking probability at queue length q (for tests and plots).
    double MarkProbability(uint64_t q) const;
    /// Marking probability at queue length q on the egress port of index `port`.
    double MarkProbability(uint64_t q, uint16_t port) const;

    /// One EcnRateMap entry: thresholds for egress ports of `rateBps`.
    struct EcnRateEntry
    {
        uint64_t rateBps = 0;
        uint64_t kminBytes = 0;
        uint64_t kmaxBytes = 0;
        double pmax = 0;
    };
    /**
     * Parses an EcnRateMap value, "RATE KMIN KMAX PMAX[; ...]" (RATE as 100Gbps or bit/s, KMIN
     * and KMAX in bytes, PMAX 0..1). Returns "" and fills `out`, or the problem.
     */
    static std::string ParseEcnRateMap(const std::string& text, std::vector<EcnRateEntry>* out);
    /// The current shared-space threshold of a (port, priority).
    uint64_t Threshold(uint16_t port, uint8_t prio) const;
    uint64_t GetSharedPoolBytes() const { return m_pool; }
    uint64_t GetSharedUsed() const { return m_sharedUsed; }
    uint64_t GetMaxSharedUsed() const { return m_maxSharedUsed; }
    uint64_t GetHeadroom(uint16_t port) const { return m_ports.at(port).headroom; }
    uint64_t GetIngressBytes(uint16_t port, uint8_t prio) const;
    uint64_t GetHeadroomUsed(uint16_t port, uint8_t prio) const
    {
        return m_ports.at(port).hdrm[prio];
    }
    uint64_t GetMaxHeadroomUsed() const { return m_maxHdrmUsed; }
    int64_t AssignStreams(int64_t stream);

  protected:
    void DoDispose() override;

  private:
    struct PortAcct
    {
        std::array<uint64_t, 8> rsv{};
        std::array<uint64_t, 8> shared{};
        std::array<uint64_t, 8> hdrm{};
        uint64_t headroom = 0;     ///< per lossless priority
        uint64_t headroomNeed = 0; ///< what the link's round trip needs
        uint8_t pfcMask = 0;
    };

    uint64_t m_bufferBytes;
    uint64_t m_reserved;
    uint64_t m_headroomBytes;
    int m_thresholdMode;
    uint64_t m_xoff;
    uint64_t m_xon;
    double m_alpha;
    uint64_t m_resumeOffset;
    int m_ecnMode;
    uint64_t m_kmin;
    uint64_t m_kmax;
    double m_pmax;
    bool m_ecnAtDequeue;
    std::string m_ecnRateMap;

    struct EcnSet
    {
        uint64_t kmin;
        uint64_t kmax;
        double pmax;
    };
    double Probability(uint64_t q, const EcnSet& e) const;
    std::vector<EcnSet> m_portEcn; ///< per port index, from EcnRateMap at Setup

    std::vector<PortAcct> m_ports;
    uint64_t m_pool = 0;
    uint64_t m_sharedUsed = 0;
    uint64_t m_maxSharedUsed = 0;
    uint64_t m_maxHdrmUsed = 0;
    bool m_setUp = false;
    Ptr<UniformRandomVariable> m_rng;
};

} // namespace ns3

#endif
