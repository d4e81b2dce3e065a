#include "rdma-message-sink.h"

#include "ns3/trace-source-accessor.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaMessageSink);

TypeId
RdmaMessageSink::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaMessageSink")
            .SetParent<RdmaTrafficApp>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaMessageSink>()
            .AddTraceSource("Rx",
                            "A message arrived (a successful receive completion).",
                            MakeTraceSourceAccessor(&RdmaMessageSink::m_rxTrace),
                            "ns3::RdmaTrafficApp::WcCallback");
    return tid;
}

RdmaMessageSink::RdmaMessageSink() = default;
RdmaMessageSink::~RdmaMessageSink() = default;

void
RdmaMessageSink::OnStart()
{
}

void
RdmaMessageSink::OnSendCompletion(const RdmaWc& wc)
{
}

void
RdmaMessageSink::OnRecvCompletion(const RdmaWc& wc)
{
    if (wc.status != RdmaWcStatus::SUCCESS)
    {
        return;
    }
    m_messages++;
    m_bytes += wc.byte_len;
    m_rxTrace(wc);
}

} // namespace ns3
