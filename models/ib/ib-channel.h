// A point-to-point InfiniBand cable between two ports.
#ifndef CNUAS_IB_CHANNEL_H
#define CNUAS_IB_CHANNEL_H

#include "ns3/channel.h"
#include "ns3/nstime.h"

#include <cstdint>

namespace ns3
{

class IbNetDevice;

/**
 * \brief A cable: two ports, a length, and the propagation delay that follows from it.
 *
 * The channel carries no state of its own: a transmitting port computes when each packet's head
 * and tail reach the far end and schedules exactly one arrival event there.
 */
class IbChannel : public Channel
{
  public:
    static TypeId GetTypeId();
    IbChannel();

    /// Connects a port; the second call completes the cable and brings the link up.
    void Attach(Ptr<IbNetDevice> device);
    /// The port at the other end from `device` (null while unconnected).
    Ptr<IbNetDevice> GetPeer(const IbNetDevice* device) const;
    /// One-way propagation delay: length x delay per metre.
    Time GetDelay() const { return m_delay; }
    /// The same in picoseconds (asked for every packet a port sends).
    int64_t GetDelayPicoSeconds() const { return m_delayPs; }
    /**
     * Link generation: advanced each time the link goes down. Packets and flow-control packets
     * carry the generation they were sent in; one that arrives in a later generation was on
     * the cable when it went down and is lost, whatever the cable's length.
     */
    uint32_t GetGeneration() const { return m_generation; }
    void NextGeneration();
    /// Gives both ports the cable's generation and delay (IbNetDevice::SyncCable) after any
    /// change of them: every packet reads them at both ends, from the port's own memory.
    void PushStateToPorts();

    std::size_t GetNDevices() const override;
    Ptr<NetDevice> GetDevice(std::size_t i) const override;

  private:
    // The attributes go through these, so that the delay is computed once, not per packet.
    void SetLength(double meters);
    double GetLength() const { return m_lengthMeters; }
    void SetDelayPerMeter(Time perMeter);
    Time GetDelayPerMeter() const { return m_delayPerMeter; }
    void UpdateDelay();

    Ptr<IbNetDevice> m_dev[2];
    double m_lengthMeters;
    Time m_delayPerMeter;
    int64_t m_delayPs = 0; ///< length x delay per metre, picoseconds (truncated)
    Time m_delay;          ///< the same as a Time
    uint32_t m_generation = 0;
};

} // namespace ns3

#endif
