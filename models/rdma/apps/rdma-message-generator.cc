#include "rdma-message-generator.h"

#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaMessageGenerator");
NS_OBJECT_ENSURE_REGISTERED(RdmaMessageGenerator);

TypeId
RdmaMessageGenerator::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaMessageGenerator")
            .SetParent<RdmaTrafficApp>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaMessageGenerator>()
            .AddAttribute(
                "Operation",
                "The work-request opcode of every message (ibv_wr_opcode).",
                EnumValue(static_cast<int>(RdmaWrOpcode::RDMA_WRITE)),
                MakeEnumAccessor(&RdmaMessageGenerator::m_op),
                MakeEnumChecker(static_cast<int>(RdmaWrOpcode::RDMA_WRITE), "WRITE",
                                static_cast<int>(RdmaWrOpcode::RDMA_WRITE_WITH_IMM),
                                "WRITE_WITH_IMM",
                                static_cast<int>(RdmaWrOpcode::SEND), "SEND",
                                static_cast<int>(RdmaWrOpcode::SEND_WITH_IMM), "SEND_WITH_IMM",
                                static_cast<int>(RdmaWrOpcode::RDMA_READ), "READ",
                                static_cast<int>(RdmaWrOpcode::ATOMIC_CMP_AND_SWP), "CMP_SWAP",
                                static_cast<int>(RdmaWrOpcode::ATOMIC_FETCH_AND_ADD),
                                "FETCH_ADD"))
            .AddAttribute("Mode",
                          "OpenLoop: messages arrive at InterArrival gaps whatever the "
                          "network does; ClosedLoop: Outstanding messages in flight, a new "
                          "one issued at each completion.",
                          EnumValue(CLOSED_LOOP),
                          MakeEnumAccessor(&RdmaMessageGenerator::m_mode),
                          MakeEnumChecker(OPEN_LOOP, "OpenLoop", CLOSED_LOOP, "ClosedLoop"))
            .AddAttribute("MessageSize",
                          "Message size, bytes (a RandomVariableStream: a constant, or an "
                          "ns3::EmpiricalSizeDistribution for a CDF file).",
                          StringValue("ns3::ConstantRandomVariable[Constant=4096]"),
                          MakePointerAccessor(&RdmaMessageGenerator::m_size),
                          MakePointerChecker<RandomVariableStream>())
            .AddAttribute("InterArrival",
                          "Open loop: time between two message arrivals, seconds (an "
                          "ExponentialRandomVariable gives Poisson arrivals, a "
                          "ConstantRandomVariable a fixed rate).",
                          StringValue("ns3::ExponentialRandomVariable[Mean=1e-5]"),
                          MakePointerAccessor(&RdmaMessageGenerator::m_interArrival),
                          MakePointerChecker<RandomVariableStream>())
            .AddAttribute("Outstanding",
                          "Closed loop: messages in flight at once, messages.",
                          UintegerValue(1),
                          MakeUintegerAccessor(&RdmaMessageGenerator::m_outstanding),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxPosted",
                          "Work requests posted and not completed at once, WRs (bounded by "
                          "the send queue; more wait in the application).",
                          UintegerValue(64),
                          MakeUintegerAccessor(&RdmaMessageGenerator::m_maxPosted),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxMessages",
                          "Messages to issue before stopping, messages (0: no limit).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaMessageGenerator::m_maxMessages),
                          MakeUintegerChecker<uint64_t>())
            .AddTraceSource("Message",
                            "A message completed successfully: (size bytes, time from issue "
                            "to completion).",
                            MakeTraceSourceAccessor(&RdmaMessageGenerator::m_messageTrace),
                            "ns3::RdmaMessageGenerator::MessageCallback");
    return tid;
}

RdmaMessageGenerator::RdmaMessageGenerator()
{
    // A generator posts no receives: its peer's sink takes the messages.
    m_postsReceives = false;
}

RdmaMessageGenerator::~RdmaMessageGenerator() = default;

void
RdmaMessageGenerator::SetRecorder(Ptr<RdmaFctRecorder> recorder)
{
    m_recorder = recorder;
}

int64_t
RdmaMessageGenerator::AssignStreams(int64_t stream)
{
    m_size->SetStream(stream);
    m_interArrival->SetStream(stream + 1);
    return 2;
}

void
RdmaMessageGenerator::DoDispose()
{
    m_arrival.Cancel();
    m_recorder = nullptr;
    m_size = nullptr;
    m_interArrival = nullptr;
    m_waiting.clear();
    m_posted.clear();
    RdmaTrafficApp::DoDispose();
}

bool
RdmaMessageGenerator::Done() const
{
    return m_maxMessages != 0 && m_issued >= m_maxMessages;
}

void
RdmaMessageGenerator::OnStart()
{
    if (m_mode == CLOSED_LOOP)
    {
        for (uint32_t i = 0; i < m_outstanding && !Done(); ++i)
        {
            Issue();
        }
        PostWaiting();
    }
    else
    {
        // A Poisson process started at the application's start has its first arrival one
        // drawn gap later, like every other (arrivals at the start instant from many
        // generators would otherwise be a synchronized burst).
        ScheduleNextArrival();
    }
}

void
RdmaMessageGenerator::ScheduleNextArrival()
{
    const double gap = m_interArrival->GetValue();
    NS_ABORT_MSG_IF(!(gap >= 0), "RdmaMessageGenerator: negative inter-arrival time " << gap);
    m_arrival = Simulator::Schedule(PicoSeconds(std::llround(gap * 1e12)),
                                    &RdmaMessageGenerator::Arrival, this);
}

void
RdmaMessageGenerator::StopApplication()
{
    m_arrival.Cancel();
    RdmaTrafficApp::StopApplication();
}

void
RdmaMessageGenerator::Arrival()
{
    if (!IsRunning() || Done())
    {
        return;
    }
    Issue();
    PostWaiting();
    if (!Done())
    {
        ScheduleNextArrival();
    }
}

void
RdmaMessageGenerator::Issue()
{
    const auto op = static_cast<RdmaWrOpcode>(m_op);
    Message m;
    if (op == RdmaWrOpcode::ATOMIC_CMP_AND_SWP || op == RdmaWrOpcode::ATOMIC_FETCH_AND_ADD)
    {
        m.size = 8;
    }
    else
    {
        const double v = m_size->GetValue();
        NS_ABORT_MSG_IF(!(v >= 0), "RdmaMessageGenerator: negative message size " << v);
        m.size = static_cast<uint64_t>(std::llround(v));
    }
    m.issued = Simulator::Now();
    if (m_recorder)
    {
        m.recordId = m_recorder->Start(m_ep.host, m_ep.peerHost, m_ep.qp->GetQpNum(), op, m.size);
    }
    m_issued++;
    m_waiting.push_back(m);
}

void
RdmaMessageGenerator::PostWaiting()
{
    const auto op = static_cast<RdmaWrOpcode>(m_op);
    while (!m_waiting.empty() && m_posted.size() < m_maxPosted)
    {
        Message m = m_waiting.front();
        m_waiting.pop_front();
        RdmaSendWr wr;
        wr.wr_id = m_nextWrId++;
        wr.opcode = op;
        wr.send_flags = RDMA_SEND_SIGNALED;
        wr.imm_data = static_cast<uint32_t>(wr.wr_id);
        const bool tooBig = m.size > m_ep.localBytes || m.size > 0xFFFFFFFFull;
        // A message that does not fit the buffer goes out as a WR whose length the QP checks
        // against the device's max_msg_sz; a zero-length SGE list is a zero-byte message.
        if (m.size > 0)
        {
            wr.sg_list = {RdmaSge{m_ep.localAddr,
                                  static_cast<uint32_t>(tooBig ? 0xFFFFFFFFull : m.size),
                                  m_ep.lkey}};
        }
        wr.rdma.remote_addr = m_ep.remoteAddr;
        wr.rdma.rkey = m_ep.rkey;
        wr.atomic.remote_addr = m_ep.remoteAddr;
        wr.atomic.rkey = m_ep.rkey;
        wr.atomic.compare_add = 1;
        wr.atomic.swap = wr.wr_id;
        if (m_ep.ah)
        {
            wr.ud.ah = PeekPointer(m_ep.ah);
            wr.ud.remote_qpn = m_ep.remoteQpn;
            wr.ud.remote_qkey = m_ep.remoteQkey;
        }
        if (tooBig || Post(wr) != 0)
        {
            if (tooBig)
            {
                m_postErrors++;
                m_postErrorTrace(EINVAL);
                NS_LOG_WARN("message of " << m.size << " bytes exceeds the local buffer of "
                                          << m_ep.localBytes << " bytes: not posted");
            }
            // Counted and traced; not replaced, so that a message the QP always refuses cannot
            // loop forever (a closed loop shrinks by one, visible in GetPostErrors).
            continue;
        }
        m_posted.emplace(wr.wr_id, m);
    }
}

void
RdmaMessageGenerator::OnSendCompletion(const RdmaWc& wc)
{
    auto it = m_posted.find(wc.wr_id);
    if (it == m_posted.end())
    {
        NS_LOG_WARN("completion for unknown wr_id " << wc.wr_id);
        return;
    }
    const Message m = it->second;
    m_posted.erase(it);
    if (m_recorder)
    {
        m_recorder->Complete(m.recordId, wc.status);
    }
    if (wc.status == RdmaWcStatus::SUCCESS)
    {
        m_completed++;
        m_bytesCompleted += m.size;
        m_messageTrace(m.size, Simulator::Now() - m.issued);
    }
    if (m_mode == CLOSED_LOOP && IsRunning() && !Done() && wc.status == RdmaWcStatus::SUCCESS)
    {
        Issue();
    }
    PostWaiting();
}

} // namespace ns3
