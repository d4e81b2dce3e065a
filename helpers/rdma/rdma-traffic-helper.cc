#include "rdma-traffic-helper.h"

#include "helpers/rdma/rdma-qp-connect.h"
#include "models/rdma/apps/rdma-null-memory.h"

#include "ns3/uinteger.h"

#include <stdexcept>

namespace ns3
{

uint32_t
RdmaIbWireBytes(uint32_t transportBytes, uint32_t delimiterBytes)
{
    return 8 + transportBytes + 4 + 2 + delimiterBytes;
}

RdmaTrafficHelper::RdmaTrafficHelper(const std::vector<RdmaHca>& hcas, bool realMemory,
                                     uint64_t bufferBytes)
    : m_hosts(hcas.size()),
      m_real(realMemory),
      m_bufferBytes(bufferBytes)
{
    if (bufferBytes == 0)
    {
        throw std::invalid_argument("RdmaTrafficHelper: buffer of 0 bytes");
    }
    for (const RdmaHca& h : hcas)
    {
        m_hcas.push_back(Nic{h.device, h.port, h.memory});
    }
}

RdmaTrafficHelper::RdmaTrafficHelper(const std::vector<RoceHca>& nics, bool realMemory,
                                     uint64_t bufferBytes)
    : m_hosts(nics.size()),
      m_real(realMemory),
      m_bufferBytes(bufferBytes)
{
    if (bufferBytes == 0)
    {
        throw std::invalid_argument("RdmaTrafficHelper: buffer of 0 bytes");
    }
    for (const RoceHca& h : nics)
    {
        m_hcas.push_back(Nic{h.device, h.port, h.memory});
    }
}

RdmaTrafficHelper::Host&
RdmaTrafficHelper::HostCtx(uint32_t i)
{
    if (i >= m_hosts.size())
    {
        throw std::invalid_argument("RdmaTrafficHelper: no host " + std::to_string(i) + " (" +
                                    std::to_string(m_hosts.size()) + " hosts)");
    }
    Host& h = m_hosts[i];
    if (h.pd)
    {
        return h;
    }
    const Nic& hca = m_hcas[i];
    if (m_real)
    {
        // The HCA's own address space, as RdmaHelper made it: tests read what arrived there.
        hca.memory->Map(kBufferBase, m_bufferBytes);
        h.memory = hca.memory;
    }
    else
    {
        Ptr<RdmaNullMemory> m = CreateObject<RdmaNullMemory>();
        m->SetAttribute("Base", UintegerValue(kBufferBase));
        m->SetAttribute("Size", UintegerValue(m_bufferBytes));
        h.memory = m;
    }
    int err = 0;
    h.pd = hca.device->AllocPd(h.memory, &err);
    if (!h.pd)
    {
        throw std::runtime_error("host " + std::to_string(i) + ": alloc_pd: " +
                                 hca.device->GetLastError());
    }
    const uint32_t access = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                            RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC;
    h.mr = hca.device->RegMr(h.pd, kBufferBase, m_bufferBytes, access, &err);
    if (!h.mr)
    {
        throw std::runtime_error("host " + std::to_string(i) + ": reg_mr: " +
                                 hca.device->GetLastError());
    }
    return h;
}

Ptr<RdmaMemory>
RdmaTrafficHelper::GetMemory(uint32_t i)
{
    return HostCtx(i).memory;
}

RdmaAppEndpoint
RdmaTrafficHelper::MakeEndpoint(uint32_t host, uint32_t peer)
{
    Host& h = HostCtx(host);
    Ptr<RdmaDevice> dev = m_hcas[host].device;
    RdmaAppEndpoint ep;
    const uint32_t cqe = m_opts.cqDepth ? m_opts.cqDepth : m_opts.sqDepth + m_opts.rqDepth;
    ep.sendCq = dev->CreateCq(static_cast<int>(cqe));
    ep.recvCq = dev->CreateCq(static_cast<int>(cqe));
    if (!ep.sendCq || !ep.recvCq)
    {
        throw std::runtime_error("host " + std::to_string(host) + ": create_cq: " +
                                 dev->GetLastError());
    }
    RdmaQpInitAttr init;
    init.send_cq = ep.sendCq;
    init.recv_cq = ep.recvCq;
    init.qp_type = m_opts.type;
    init.cap.max_send_wr = m_opts.sqDepth;
    init.cap.max_recv_wr = m_opts.rqDepth;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ep.qp = dev->CreateQp(h.pd, init);
    if (!ep.qp)
    {
        throw std::runtime_error("host " + std::to_string(host) + ": create_qp: " +
                                 dev->GetLastError());
    }
    ep.lkey = h.mr->GetLkey();
    ep.localAddr = kBufferBase;
    ep.localBytes = m_bufferBytes;
    ep.host = host;
    ep.peerHost = peer;
    return ep;
}

void
RdmaTrafficHelper::ToRts(RdmaAppEndpoint& self, const RdmaAppEndpoint& peer, uint32_t sqPsn,
                         uint32_t rqPsn)
{
    Ptr<RdmaDevice> dev = m_hcas[self.host].device;
    // The peer's address: a LID on InfiniBand, a GID on RoCEv2 (seed 000 §4.4).
    const RdmaAhAttr peerAv = RdmaAddressOf(*m_hcas[peer.host].port, m_opts.sl);
    RdmaQpConnectOptions c;
    c.mtu = m_opts.mtu;
    c.qkey = m_opts.qkey;
    c.sqPsn = sqPsn;
    c.rqPsn = rqPsn;
    c.timeout = m_opts.timeout;
    c.retryCnt = m_opts.retryCnt;
    c.rnrRetry = m_opts.rnrRetry;
    c.minRnrTimer = m_opts.minRnrTimer;
    c.maxRdAtomic = m_opts.maxRdAtomic;
    const std::string err = TryConnectQp(self.qp, peerAv, peer.qp->GetQpNum(), c);
    if (!err.empty())
    {
        throw std::runtime_error("host " + std::to_string(self.host) + ": " + err);
    }
    if (m_opts.type == RdmaQpType::UD)
    {
        int ahErr = 0;
        self.ah = dev->CreateAh(m_hosts[self.host].pd, peerAv, &ahErr);
        if (!self.ah)
        {
            throw std::runtime_error("host " + std::to_string(self.host) + ": create_ah: " +
                                     dev->GetLastError());
        }
        self.remoteQpn = peer.qp->GetQpNum();
        self.remoteQkey = m_opts.qkey;
    }
    self.remoteAddr = kBufferBase;
    self.rkey = m_hosts[peer.host].mr->GetRkey();
    self.remoteBytes = m_bufferBytes;
}

std::pair<RdmaAppEndpoint, RdmaAppEndpoint>
RdmaTrafficHelper::Connect(uint32_t a, uint32_t b)
{
    RdmaAppEndpoint ea = MakeEndpoint(a, b);
    RdmaAppEndpoint eb = MakeEndpoint(b, a);
    // Initial PSNs differ per connection and direction (a real stack draws them at random,
    // IBA vol. 1 §9.7.1); a deterministic hash keeps runs reproducible.
    const uint64_t k = m_opts.psnSeed * 0x9E3779B97F4A7C15ULL + (m_connections++) * 0x2545F491ULL;
    const uint32_t psnA = static_cast<uint32_t>(k >> 20) & 0xFFFFFF;
    const uint32_t psnB = static_cast<uint32_t>(k >> 44) & 0xFFFFFF;
    ToRts(ea, eb, psnA, psnB);
    ToRts(eb, ea, psnB, psnA);
    return {ea, eb};
}

} // namespace ns3
