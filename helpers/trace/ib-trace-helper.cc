#include "ib-trace-helper.h"

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/trace/ib-pcap-writer.h"
#include "models/ib/ib-flow-control-header.h"
#include "models/ib/ib-net-device.h"

#include "ns3/callback.h"
#include "ns3/simulator.h"

#include <filesystem>
#include <stdexcept>

namespace ns3
{

namespace
{
void
WriteToPcap(IbErfPcapWriter* w, Time t, const uint8_t* bytes, uint32_t len, bool)
{
    w->Write(t, bytes, len);
}
void
WriteFlowControl(IbErfPcapWriter* w, uint8_t op, uint8_t vl, uint16_t fctbs, uint16_t fccl)
{
    IbFlowControlHeader fc;
    fc.SetOp(static_cast<IbFlowControlOp>(op));
    fc.SetVl(vl);
    fc.SetFctbs(fctbs);
    fc.SetFccl(fccl);
    uint8_t bytes[IbFlowControlHeader::kSize];
    fc.WriteTo(bytes);
    w->Write(Simulator::Now(), bytes, sizeof bytes, IbErfPcapWriter::kErfTypeInfinibandLink);
}
} // namespace

std::vector<std::string>
EnableHostPcaps(IbPcapHelper& pcap, const IbFabric& f, const std::string& dir)
{
    std::filesystem::create_directories(dir);
    std::vector<std::string> paths;
    const std::vector<uint32_t> hosts = f.topology.Hosts();
    for (uint32_t i = 0; i < f.hosts.GetN(); ++i)
    {
        const std::string path = dir + "/" + f.topology.nodes[hosts[i]].name + ".pcap";
        if (!pcap.Enable(f.HostPort(i), path))
        {
            throw std::runtime_error("cannot write " + path);
        }
        paths.push_back(path);
    }
    return paths;
}

bool
IbPcapHelper::EnableFlowControl(Ptr<IbNetDevice> port, const std::string& path)
{
    auto writer = std::make_shared<IbErfPcapWriter>();
    if (!writer->Open(path))
    {
        return false;
    }
    port->TraceConnectWithoutContext("FlowControlTx",
                                     MakeBoundCallback(&WriteFlowControl, writer.get()));
    m_writers.push_back(writer);
    return true;
}

bool
IbPcapHelper::Enable(Ptr<IbNetDevice> port, const std::string& path)
{
    auto writer = std::make_shared<IbErfPcapWriter>();
    if (!writer->Open(path))
    {
        return false;
    }
    port->AddSniffer(MakeBoundCallback(&WriteToPcap, writer.get()));
    m_writers.push_back(writer);
    return true;
}

void
IbPcapHelper::Close()
{
    for (auto& w : m_writers)
    {
        w->Close();
    }
}

IbPcapHelper::~IbPcapHelper()
{
    Close();
}

bool
IbCreditTraceHelper::Open(const std::string& path)
{
    m_out = std::make_unique<std::ofstream>(path);
    if (!*m_out)
    {
        return false;
    }
    *m_out << "time_ns,port,event,vl,fctbs,fccl,credits,stall_ns\n";
    return true;
}

void
IbCreditTraceHelper::Trace(Ptr<IbNetDevice> port, const std::string& name)
{
    m_ctx.push_back(std::make_unique<Ctx>(Ctx{m_out.get(), name}));
    Ctx* c = m_ctx.back().get();
    port->TraceConnectWithoutContext("FlowControlTx", MakeBoundCallback(&FcTx, c));
    port->TraceConnectWithoutContext("FlowControlRx", MakeBoundCallback(&FcRx, c));
    port->TraceConnectWithoutContext("Credits", MakeBoundCallback(&Credits, c));
    port->TraceConnectWithoutContext("CreditStall", MakeBoundCallback(&Stall, c));
}

namespace
{
void
Row(std::ofstream* o, const std::string& port, const char* ev, int vl, const std::string& rest)
{
    *o << Simulator::Now().GetPicoSeconds() / 1000.0 << ',' << port << ',' << ev << ',' << vl
       << ',' << rest << '\n';
}
} // namespace

void
IbCreditTraceHelper::FcTx(Ctx* c, uint8_t, uint8_t vl, uint16_t fctbs, uint16_t fccl)
{
    Row(c->out, c->name, "fc_tx", vl, std::to_string(fctbs) + ',' + std::to_string(fccl) + ",,");
}

void
IbCreditTraceHelper::FcRx(Ctx* c, uint8_t, uint8_t vl, uint16_t fctbs, uint16_t fccl)
{
    Row(c->out, c->name, "fc_rx", vl, std::to_string(fctbs) + ',' + std::to_string(fccl) + ",,");
}

void
IbCreditTraceHelper::Credits(Ctx* c, uint8_t vl, uint32_t credits)
{
    Row(c->out, c->name, "credits", vl, ",," + std::to_string(credits) + ",");
}

void
IbCreditTraceHelper::Stall(Ctx* c, uint8_t vl, Time d)
{
    Row(c->out, c->name, "stall_end", vl, ",,," + std::to_string(d.GetPicoSeconds() / 1000.0));
}

void
IbCreditTraceHelper::Close()
{
    if (m_out)
    {
        m_out->close();
    }
}

} // namespace ns3
