// A configurable loss / corruption injector for links: an ns3::ErrorModel that picks packets by
// a random rate, a bursty (Gilbert-Elliott) process, every Nth packet or a list of packet
// indices, and says whether a hit is dropped outright or corrupted (one bit flipped, which the
// receiver's CRC check then catches). Usable wherever ns-3 takes an ErrorModel, e.g.
// IbNetDevice's ReceiveErrorModel attribute.
#ifndef CNUAS_PACKET_LOSS_MODEL_H
#define CNUAS_PACKET_LOSS_MODEL_H

#include "ns3/error-model.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <set>
#include <string>

namespace ns3
{

/**
 * \brief Picks packets to lose or corrupt.
 *
 * Modes (attribute Mode):
 *  * Random: each packet independently with probability Rate;
 *  * Burst: a two-state Gilbert-Elliott chain in which every packet of the bad state is hit;
 *    it enters the bad state with the probability that gives a long-run hit fraction of Rate
 *    and leaves it with probability 1/MeanBurstLength, so bursts are geometric with that mean;
 *  * EveryNth: packets N, 2N, 3N, ... (counting from 1);
 *  * List: the packets whose 0-based indices are in Indices ("3,17,18").
 * Packets are counted in the order IsCorrupt() sees them. Action says what a hit means to the
 * device: Corrupt (flip a bit; the receiver's CRC discards and counts it) or Drop (the packet
 * vanishes on the wire). Every hit is counted (GetHits) and traced ("Hit").
 */
class PacketLossModel : public ErrorModel
{
  public:
    enum Mode
    {
        RANDOM = 0,
        BURST = 1,
        EVERY_NTH = 2,
        LIST = 3,
    };

    enum Action
    {
        CORRUPT = 0,
        DROP = 1,
    };

    static TypeId GetTypeId();
    PacketLossModel();
    ~PacketLossModel() override;

    /// (index of the packet, counted from 0).
    typedef void (*HitCallback)(uint64_t index);

    /// Use `stream` for the random draws; returns the streams used (1).
    int64_t AssignStreams(int64_t stream);

    /// Whether a hit should be dropped (Action Drop) rather than corrupted.
    bool DropsPackets() const
    {
        return m_action == DROP;
    }

    uint64_t GetPacketsSeen() const
    {
        return m_seen;
    }

    uint64_t GetHits() const
    {
        return m_hits;
    }

    /// Parse "3, 17,18" into indices; throws std::invalid_argument on anything else.
    static std::set<uint64_t> ParseIndices(const std::string& list);

  private:
    bool DoCorrupt(Ptr<Packet> p) override;
    void DoReset() override;
    void SetIndices(std::string list);
    std::string GetIndices() const;

    int m_mode{RANDOM};   ///< a Mode (EnumValue holds int)
    int m_action{CORRUPT}; ///< an Action
    double m_rate{0.0};
    double m_meanBurst{4.0};
    uint64_t m_everyN{0};
    std::set<uint64_t> m_indices;
    std::string m_indicesText;
    Ptr<UniformRandomVariable> m_rng;
    bool m_bad{false};
    uint64_t m_seen{0};
    uint64_t m_hits{0};
    TracedCallback<uint64_t> m_hitTrace;
};

} // namespace ns3

#endif
