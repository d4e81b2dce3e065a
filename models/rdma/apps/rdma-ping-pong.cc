#include "rdma-ping-pong.h"

#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaPingPong");
NS_OBJECT_ENSURE_REGISTERED(RdmaPingPong);

TypeId
RdmaPingPong::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaPingPong")
            .SetParent<RdmaTrafficApp>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaPingPong>()
            .AddAttribute("Role",
                          "Client sends pings and measures; Server answers.",
                          EnumValue(CLIENT),
                          MakeEnumAccessor(&RdmaPingPong::m_role),
                          MakeEnumChecker(CLIENT, "Client", SERVER, "Server"))
            .AddAttribute("Operation",
                          "SEND, SEND_WITH_IMM or WRITE_WITH_IMM (each consumes a receive "
                          "WQE at the peer).",
                          EnumValue(static_cast<int>(RdmaWrOpcode::SEND)),
                          MakeEnumAccessor(&RdmaPingPong::m_op),
                          MakeEnumChecker(static_cast<int>(RdmaWrOpcode::SEND), "SEND",
                                          static_cast<int>(RdmaWrOpcode::SEND_WITH_IMM),
                                          "SEND_WITH_IMM",
                                          static_cast<int>(RdmaWrOpcode::RDMA_WRITE_WITH_IMM),
                                          "WRITE_WITH_IMM"))
            .AddAttribute("MessageSize",
                          "Client: bytes per ping (the server echoes the size it receives).",
                          UintegerValue(64),
                          MakeUintegerAccessor(&RdmaPingPong::m_size),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("Iterations",
                          "Client: round trips to make (0: until stopped).",
                          UintegerValue(100),
                          MakeUintegerAccessor(&RdmaPingPong::m_iterations),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("Interval",
                          "Client: pause between a pong and the next ping (time).",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&RdmaPingPong::m_interval),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("Rtt",
                            "Client: a round trip completed (time from posting the ping to "
                            "polling the pong).",
                            MakeTraceSourceAccessor(&RdmaPingPong::m_rttTrace),
                            "ns3::Time::TracedCallback");
    return tid;
}

RdmaPingPong::RdmaPingPong() = default;
RdmaPingPong::~RdmaPingPong() = default;

void
RdmaPingPong::DoDispose()
{
    m_next.Cancel();
    RdmaTrafficApp::DoDispose();
}

void
RdmaPingPong::OnStart()
{
    if (m_role == CLIENT)
    {
        Ping();
    }
}

void
RdmaPingPong::StopApplication()
{
    m_next.Cancel();
    RdmaTrafficApp::StopApplication();
}

void
RdmaPingPong::SendMessage(uint32_t size)
{
    RdmaSendWr wr;
    wr.wr_id = m_sent;
    wr.opcode = static_cast<RdmaWrOpcode>(m_op);
    wr.send_flags = RDMA_SEND_SIGNALED;
    wr.imm_data = static_cast<uint32_t>(m_sent);
    if (size > 0)
    {
        wr.sg_list = {RdmaSge{m_ep.localAddr, size, m_ep.lkey}};
    }
    wr.rdma.remote_addr = m_ep.remoteAddr;
    wr.rdma.rkey = m_ep.rkey;
    if (m_ep.ah)
    {
        wr.ud.ah = PeekPointer(m_ep.ah);
        wr.ud.remote_qpn = m_ep.remoteQpn;
        wr.ud.remote_qkey = m_ep.remoteQkey;
    }
    if (Post(wr) == 0)
    {
        m_sent++;
    }
}

void
RdmaPingPong::Ping()
{
    if (!IsRunning() || (m_iterations != 0 && m_rtts.size() >= m_iterations))
    {
        return;
    }
    m_pingStart = Simulator::Now();
    SendMessage(m_size);
}

void
RdmaPingPong::OnSendCompletion(const RdmaWc& wc)
{
}

void
RdmaPingPong::OnRecvCompletion(const RdmaWc& wc)
{
    if (wc.status != RdmaWcStatus::SUCCESS)
    {
        return;
    }
    if (m_role == SERVER)
    {
        // UD: the first 40 bytes of a receive buffer hold the GRH (IBA vol. 1 §11.4.1.2) and
        // byte_len counts them; the echo carries the payload only.
        const uint32_t grh = m_ep.ah ? 40 : 0;
        SendMessage(wc.byte_len >= grh ? wc.byte_len - grh : 0);
        return;
    }
    const Time rtt = Simulator::Now() - m_pingStart;
    m_rtts.push_back(rtt);
    m_rttTrace(rtt);
    m_next = Simulator::Schedule(m_interval, &RdmaPingPong::Ping, this);
}

} // namespace ns3
