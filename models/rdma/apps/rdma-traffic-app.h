// The part every RDMA traffic application shares: one endpoint, completions taken from its CQs
// the way a verbs program takes them (arm the CQ, wait for the completion event, poll until
// empty, re-arm), and receive WQEs kept posted.
#ifndef CNUAS_RDMA_TRAFFIC_APP_H
#define CNUAS_RDMA_TRAFFIC_APP_H

#include "rdma-app-endpoint.h"

#include "ns3/application.h"
#include "ns3/event-id.h"
#include "ns3/traced-callback.h"

namespace ns3
{

/**
 * \brief Base of the RDMA traffic applications.
 *
 * Completions are handled in an event of their own, scheduled at the completion's time
 * (ScheduleNow): the engine that pushed the completion has finished its own step before the
 * application polls and posts again, as a program's poll loop runs after the HCA wrote the CQE.
 * The application polls each CQ until empty and re-arms it (ibv_req_notify_cq(3)).
 */
class RdmaTrafficApp : public Application
{
  public:
    static TypeId GetTypeId();
    RdmaTrafficApp();
    ~RdmaTrafficApp() override;

    /// (work completion).
    typedef void (*WcCallback)(const RdmaWc& wc);
    /// (errno of a refused work request).
    typedef void (*ErrnoCallback)(int err);

    void SetEndpoint(const RdmaAppEndpoint& ep);
    const RdmaAppEndpoint& GetEndpoint() const
    {
        return m_ep;
    }

    /// Work requests the QP refused (an errno from post_send/post_recv), and completions with
    /// an error status: an application never ignores either.
    uint64_t GetPostErrors() const
    {
        return m_postErrors;
    }

    uint64_t GetErrorCompletions() const
    {
        return m_errorCompletions;
    }

  protected:
    void DoDispose() override;
    void StartApplication() override;
    void StopApplication() override;

    /// Called once the CQs are armed, at the application's start.
    virtual void OnStart() = 0;
    /// A send-queue completion (successful or not).
    virtual void OnSendCompletion(const RdmaWc& wc) = 0;
    /// A receive completion (successful or not); the base has already replaced the WQE when
    /// KeepReceivesPosted is on.
    virtual void OnRecvCompletion(const RdmaWc& wc);

    /// Post `n` receive WQEs covering the local buffer (at most `bytes` each, capped at 2^31).
    void PostReceives(uint32_t n, uint64_t bytes);
    /// Post a send WR; counts and traces a refusal. Returns the errno (0 on success).
    int Post(const RdmaSendWr& wr);

    bool IsRunning() const
    {
        return m_running;
    }

    RdmaAppEndpoint m_ep;
    uint64_t m_recvBytes; ///< attribute ReceiveBytes: receive buffer per WQE, bytes
    uint32_t m_recvDepth; ///< attribute ReceiveDepth: receive WQEs kept posted
    /// Whether this application keeps receives posted at all (not an attribute: a subclass
    /// decides in its constructor, which attribute defaults would otherwise override).
    bool m_postsReceives{true};
    uint64_t m_postErrors{0};
    uint64_t m_errorCompletions{0};
    TracedCallback<const RdmaWc&> m_wcTrace;
    TracedCallback<int> m_postErrorTrace;

  private:
    void OnCqEvent(Ptr<RdmaCq> cq);
    void PollNow();

    bool m_running{false};
    bool m_pollPending{false};
    uint64_t m_nextRecvId{0};
};

} // namespace ns3

#endif
