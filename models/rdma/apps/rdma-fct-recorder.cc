#include "rdma-fct-recorder.h"

#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

#include <cstdio>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaFctRecorder);

const char*
RdmaWrOpcodeName(RdmaWrOpcode op)
{
    switch (op)
    {
    case RdmaWrOpcode::RDMA_WRITE:
        return "RDMA_WRITE";
    case RdmaWrOpcode::RDMA_WRITE_WITH_IMM:
        return "RDMA_WRITE_WITH_IMM";
    case RdmaWrOpcode::SEND:
        return "SEND";
    case RdmaWrOpcode::SEND_WITH_IMM:
        return "SEND_WITH_IMM";
    case RdmaWrOpcode::RDMA_READ:
        return "RDMA_READ";
    case RdmaWrOpcode::ATOMIC_CMP_AND_SWP:
        return "ATOMIC_CMP_AND_SWP";
    case RdmaWrOpcode::ATOMIC_FETCH_AND_ADD:
        return "ATOMIC_FETCH_AND_ADD";
    default:
        return "OTHER";
    }
}

TypeId
RdmaFctRecorder::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaFctRecorder")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaFctRecorder>()
            .AddTraceSource("MessageStart",
                            "A message was issued: (id, size bytes).",
                            MakeTraceSourceAccessor(&RdmaFctRecorder::m_startTrace),
                            "ns3::RdmaFctRecorder::StartCallback")
            .AddTraceSource("MessageComplete",
                            "A message completed: (id, size bytes, flow completion time).",
                            MakeTraceSourceAccessor(&RdmaFctRecorder::m_completeTrace),
                            "ns3::RdmaFctRecorder::CompleteCallback");
    return tid;
}

RdmaFctRecorder::RdmaFctRecorder() = default;
RdmaFctRecorder::~RdmaFctRecorder() = default;

uint64_t
RdmaFctRecorder::Start(uint32_t src, uint32_t dst, uint32_t qpn, RdmaWrOpcode op, uint64_t size)
{
    Record r;
    r.id = m_records.size();
    r.src = src;
    r.dst = dst;
    r.qpn = qpn;
    r.opcode = op;
    r.size = size;
    r.start = Simulator::Now();
    m_records.push_back(r);
    m_startTrace(r.id, size);
    return r.id;
}

bool
RdmaFctRecorder::Complete(uint64_t id, RdmaWcStatus status)
{
    if (id >= m_records.size() || m_records[id].done)
    {
        m_bad++;
        return false;
    }
    Record& r = m_records[id];
    r.done = true;
    r.end = Simulator::Now();
    r.status = status;
    m_completed++;
    if (status != RdmaWcStatus::SUCCESS)
    {
        m_failed++;
    }
    m_completeTrace(id, r.size, r.end - r.start);
    return true;
}

bool
RdmaFctRecorder::WriteCsv(const std::string& path, const IdealFct& ideal) const
{
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f)
    {
        return false;
    }
    auto ns = [](Time t) { return double(t.GetPicoSeconds()) / 1000.0; };
    std::fprintf(f, "id,src,dst,qpn,opcode,size_bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,"
                    "status\n");
    uint64_t open = 0;
    for (const Record& r : m_records)
    {
        if (!r.done)
        {
            open++;
            continue;
        }
        const Time fct = r.end - r.start;
        std::fprintf(f, "%llu,%u,%u,%u,%s,%llu,%.3f,%.3f,%.3f,",
                     static_cast<unsigned long long>(r.id), r.src, r.dst, r.qpn,
                     RdmaWrOpcodeName(r.opcode), static_cast<unsigned long long>(r.size),
                     ns(r.start), ns(r.end), ns(fct));
        if (ideal)
        {
            const Time id = ideal(r);
            const double sd = id.IsStrictlyPositive() ? fct.GetDouble() / id.GetDouble() : 0.0;
            std::fprintf(f, "%.3f,%.4f,", ns(id), sd);
        }
        else
        {
            std::fprintf(f, ",,");
        }
        std::fprintf(f, "%s\n", RdmaWcStatusStr(r.status));
    }
    std::fprintf(f, "# %llu messages issued and not completed\n",
                 static_cast<unsigned long long>(open));
    return std::fclose(f) == 0;
}

} // namespace ns3
