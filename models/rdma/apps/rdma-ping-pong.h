// Ping-pong between two endpoints: the client sends a message, the server answers with one of
// the same size as soon as it has received it, the client measures the round trip.
#ifndef CNUAS_RDMA_PING_PONG_H
#define CNUAS_RDMA_PING_PONG_H

#include "rdma-traffic-app.h"

#include <vector>

namespace ns3
{

/**
 * \brief One side of a ping-pong (Role Client or Server) over SEND, SEND with immediate or
 * RDMA WRITE with immediate: each of these consumes a receive WQE at the peer, so the peer
 * learns from its receive completion that the message is all there (IBA vol. 1 §9.4.1:
 * completion order), which is what a latency benchmark such as ib_send_lat / ib_write_lat
 * times.
 *
 * The client's round trip runs from the post of its ping to the poll of the pong's receive
 * completion (trace source "Rtt"); the next ping goes Interval later. The server answers each
 * receive completion with a message of the size it received.
 */
class RdmaPingPong : public RdmaTrafficApp
{
  public:
    enum Role
    {
        CLIENT = 0,
        SERVER = 1,
    };

    static TypeId GetTypeId();
    RdmaPingPong();
    ~RdmaPingPong() override;

    const std::vector<Time>& GetRtts() const
    {
        return m_rtts;
    }

    /// Pongs the server sent (server) or pings the client sent (client).
    uint64_t GetSent() const
    {
        return m_sent;
    }

  protected:
    void DoDispose() override;
    void OnStart() override;
    void StopApplication() override;
    void OnSendCompletion(const RdmaWc& wc) override;
    void OnRecvCompletion(const RdmaWc& wc) override;

  private:
    void SendMessage(uint32_t size);
    void Ping();

    int m_role;
    int m_op;
    uint32_t m_size;
    uint32_t m_iterations;
    Time m_interval;
    Time m_pingStart;
    EventId m_next;
    uint64_t m_sent{0};
    std::vector<Time> m_rtts;
    TracedCallback<Time> m_rttTrace;
};

} // namespace ns3

#endif
