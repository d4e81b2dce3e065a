// A point-to-point Ethernet cable between two ports.
#ifndef CNUAS_ETH_CHANNEL_H
#define CNUAS_ETH_CHANNEL_H

#include "ns3/channel.h"
#include "ns3/nstime.h"

namespace ns3
{

class EthNetDevice;

/**
 * \brief A full-duplex cable: two ports, a length, the propagation delay that follows from it,
 * and whether the link is up.
 *
 * The channel carries no frames itself: a transmitting port schedules exactly one arrival event
 * at the far end per frame. Frames carry the link generation they were sent in; taking the link
 * down advances it, so whatever was on the cable is lost however long the cable is.
 */
class EthChannel : public Channel
{
  public:
    static TypeId GetTypeId();
    EthChannel();

    /// Connects a port; the second call completes the cable and the link comes up.
    void Attach(Ptr<EthNetDevice> device);
    Ptr<EthNetDevice> GetPeer(const EthNetDevice* device) const;
    /// One-way propagation delay: length x delay per metre.
    Time GetDelay() const;
    int64_t GetDelayPs() const { return m_delayPs; }
    double GetLengthMeters() const { return m_lengthMeters; }
    bool IsUp() const { return m_up; }
    /// Takes the link down (both ends drop what they queued for it) or brings it back up.
    void SetUp(bool up);
    uint32_t GetGeneration() const { return m_generation; }

    std::size_t GetNDevices() const override;
    Ptr<NetDevice> GetDevice(std::size_t i) const override;

  protected:
    void DoDispose() override;

  private:
    /// Gives both ports the cable's state (EthNetDevice::SyncCable) after any change of it.
    void PushStateToPorts();
    void SetLength(double meters);
    void SetDelayPerMeter(Time d);
    Time GetDelayPerMeter() const { return m_delayPerMeter; }

    Ptr<EthNetDevice> m_dev[2];
    double m_lengthMeters;
    Time m_delayPerMeter;
    int64_t m_delayPs = 10000; ///< cached length x delay per metre, picoseconds
    bool m_up = false;
    uint32_t m_generation = 0;
};

} // namespace ns3

#endif
