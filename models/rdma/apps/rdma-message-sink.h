// The receiving side of two-sided traffic: keeps receive WQEs posted on an endpoint's QP and
// counts what arrives (SEND, SEND with immediate, RDMA WRITE with immediate).
#ifndef CNUAS_RDMA_MESSAGE_SINK_H
#define CNUAS_RDMA_MESSAGE_SINK_H

#include "rdma-traffic-app.h"

namespace ns3
{

/**
 * \brief Keeps ReceiveDepth receive WQEs posted (each completion is replaced at once) and
 * counts the messages and bytes received. One-sided RDMA WRITE and READ never reach it (the
 * remote CPU is not involved, seed §3); a WRITE with immediate does, with byte_len the
 * message's length (IBA vol. 1 §11.4.2.1 leaves it to the HCA; rdma-core reports it).
 */
class RdmaMessageSink : public RdmaTrafficApp
{
  public:
    static TypeId GetTypeId();
    RdmaMessageSink();
    ~RdmaMessageSink() override;

    uint64_t GetMessages() const
    {
        return m_messages;
    }

    uint64_t GetBytes() const
    {
        return m_bytes;
    }

  protected:
    void OnStart() override;
    void OnSendCompletion(const RdmaWc& wc) override;
    void OnRecvCompletion(const RdmaWc& wc) override;

  private:
    uint64_t m_messages{0};
    uint64_t m_bytes{0};
    TracedCallback<const RdmaWc&> m_rxTrace;
};

} // namespace ns3

#endif
