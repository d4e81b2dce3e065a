#include "rdma-traffic-app.h"

#include "models/rdma/rdma-device.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaTrafficApp");
NS_OBJECT_ENSURE_REGISTERED(RdmaTrafficApp);

TypeId
RdmaTrafficApp::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaTrafficApp")
            .SetParent<Application>()
            .SetGroupName("Cnuas")
            .AddAttribute("ReceiveDepth",
                          "Receive WQEs the application keeps posted (replaced as they "
                          "complete), WQEs; 0 posts none. A message generator posts none.",
                          UintegerValue(16),
                          MakeUintegerAccessor(&RdmaTrafficApp::m_recvDepth),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("ReceiveBytes",
                          "Buffer of each receive WQE, bytes (capped at the local buffer and at "
                          "2^31); all receives share the local buffer.",
                          UintegerValue(1ULL << 31),
                          MakeUintegerAccessor(&RdmaTrafficApp::m_recvBytes),
                          MakeUintegerChecker<uint64_t>(1))
            .AddTraceSource("Completion",
                            "A work completion the application polled (send or receive).",
                            MakeTraceSourceAccessor(&RdmaTrafficApp::m_wcTrace),
                            "ns3::RdmaTrafficApp::WcCallback")
            .AddTraceSource("PostError",
                            "The QP refused a work request: (errno).",
                            MakeTraceSourceAccessor(&RdmaTrafficApp::m_postErrorTrace),
                            "ns3::RdmaTrafficApp::ErrnoCallback");
    return tid;
}

RdmaTrafficApp::RdmaTrafficApp() = default;
RdmaTrafficApp::~RdmaTrafficApp() = default;

void
RdmaTrafficApp::SetEndpoint(const RdmaAppEndpoint& ep)
{
    m_ep = ep;
}

void
RdmaTrafficApp::DoDispose()
{
    // The CQs may outlive the application (they belong to the device): they must not call
    // back into it.
    for (Ptr<RdmaCq> cq : {m_ep.sendCq, m_ep.recvCq})
    {
        if (cq)
        {
            cq->TraceDisconnectWithoutContext("CompletionEvent",
                                              MakeCallback(&RdmaTrafficApp::OnCqEvent, this));
        }
    }
    m_ep = RdmaAppEndpoint();
    Application::DoDispose();
}

void
RdmaTrafficApp::StartApplication()
{
    NS_ABORT_MSG_IF(!m_ep.qp, "RdmaTrafficApp: no endpoint set (SetEndpoint)");
    m_running = true;
    for (Ptr<RdmaCq> cq : {m_ep.sendCq, m_ep.recvCq})
    {
        cq->TraceConnectWithoutContext("CompletionEvent",
                                       MakeCallback(&RdmaTrafficApp::OnCqEvent, this));
        cq->ReqNotify(false);
    }
    if (m_ep.sendCq == m_ep.recvCq)
    {
        // One CQ: connected once is enough (a second connection would double every event).
        m_ep.sendCq->TraceDisconnectWithoutContext("CompletionEvent",
                                                   MakeCallback(&RdmaTrafficApp::OnCqEvent, this));
    }
    if (m_postsReceives)
    {
        PostReceives(m_recvDepth, m_recvBytes);
    }
    OnStart();
}

void
RdmaTrafficApp::StopApplication()
{
    m_running = false;
}

void
RdmaTrafficApp::PostReceives(uint32_t n, uint64_t bytes)
{
    const uint64_t len = std::min<uint64_t>({bytes, m_ep.localBytes, 1ULL << 31});
    for (uint32_t i = 0; i < n; ++i)
    {
        RdmaRecvWr wr;
        wr.wr_id = m_nextRecvId++;
        wr.sg_list = {RdmaSge{m_ep.localAddr, static_cast<uint32_t>(len), m_ep.lkey}};
        const int rc = m_ep.qp->PostRecv(wr);
        if (rc != 0)
        {
            m_postErrors++;
            m_postErrorTrace(rc);
            NS_LOG_WARN("QP " << m_ep.qp->GetQpNum() << ": post_recv refused, errno " << rc);
            return;
        }
    }
}

int
RdmaTrafficApp::Post(const RdmaSendWr& wr)
{
    const int rc = m_ep.qp->PostSend(wr);
    if (rc != 0)
    {
        m_postErrors++;
        m_postErrorTrace(rc);
        NS_LOG_WARN("QP " << m_ep.qp->GetQpNum() << ": post_send refused, errno " << rc << " ("
                          << m_ep.qp->GetDevice()->GetLastError() << ")");
    }
    return rc;
}

void
RdmaTrafficApp::OnRecvCompletion(const RdmaWc& wc)
{
}

void
RdmaTrafficApp::OnCqEvent(Ptr<RdmaCq> cq)
{
    if (!m_pollPending)
    {
        m_pollPending = true;
        Simulator::ScheduleNow(&RdmaTrafficApp::PollNow, this);
    }
}

void
RdmaTrafficApp::PollNow()
{
    m_pollPending = false;
    RdmaWc wcs[32];
    // Poll until both CQs are empty, re-arm them, and poll once more: a completion pushed
    // between the last poll and the re-arm would otherwise wait for the next event.
    for (int pass = 0; pass < 2; ++pass)
    {
        bool any = true;
        while (any)
        {
            any = false;
            int n = m_ep.sendCq->Poll(32, wcs);
            for (int i = 0; i < n; ++i)
            {
                any = true;
                m_wcTrace(wcs[i]);
                // ibv_wc_opcode: receive completions have bit 7 set (IBV_WC_RECV = 128).
                const bool recv = (static_cast<uint8_t>(wcs[i].opcode) & 0x80) != 0;
                if (wcs[i].status != RdmaWcStatus::SUCCESS)
                {
                    m_errorCompletions++;
                }
                if (recv && m_ep.sendCq == m_ep.recvCq)
                {
                    if (m_running && m_postsReceives && m_recvDepth > 0 &&
                        wcs[i].status == RdmaWcStatus::SUCCESS)
                    {
                        PostReceives(1, m_recvBytes);
                    }
                    OnRecvCompletion(wcs[i]);
                }
                else
                {
                    OnSendCompletion(wcs[i]);
                }
            }
            if (m_ep.recvCq != m_ep.sendCq)
            {
                n = m_ep.recvCq->Poll(32, wcs);
                for (int i = 0; i < n; ++i)
                {
                    any = true;
                    m_wcTrace(wcs[i]);
                    if (wcs[i].status != RdmaWcStatus::SUCCESS)
                    {
                        m_errorCompletions++;
                    }
                    else if (m_running && m_postsReceives && m_recvDepth > 0)
                    {
                        PostReceives(1, m_recvBytes);
                    }
                    OnRecvCompletion(wcs[i]);
                }
            }
        }
        if (pass == 0)
        {
            m_ep.sendCq->ReqNotify(false);
            m_ep.recvCq->ReqNotify(false);
        }
    }
}

} // namespace ns3
