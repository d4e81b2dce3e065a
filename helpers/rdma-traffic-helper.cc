#include "rdma-traffic-helper.h"

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
    : m_hcas(hcas),
      m_hosts(hcas.size()),
      m_real(realMemory),
      m_bufferBytes(bufferBytes)
{
    if (bufferBytes == 0)
    {
        throw std::invalid_argument("RdmaTrafficHelper: buffer of 0 bytes");
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
    const RdmaHca& hca = m_hcas[i];
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
    const RdmaQpType type = m_opts.type;
    Ptr<RdmaDevice> dev = m_hcas[self.host].device;
    const uint16_t peerLid = m_hcas[peer.host].port->GetLid();
    auto check = [&](int rc, const char* what) {
        if (rc != 0)
        {
            throw std::runtime_error("host " + std::to_string(self.host) + ": modify_qp to " +
                                     what + ": " + dev->GetLastError());
        }
    };
    // ibv_modify_qp(3): RESET -> INIT needs state, pkey_index, port and access flags (RC/UC)
    // or the Q_Key (UD).
    RdmaQpAttr a;
    a.qp_state = RdmaQpState::INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                        RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC;
    a.qkey = m_opts.qkey;
    uint32_t mask = RDMA_QP_STATE | RDMA_QP_PKEY_INDEX | RDMA_QP_PORT;
    mask |= type == RdmaQpType::UD ? RDMA_QP_QKEY : RDMA_QP_ACCESS_FLAGS;
    check(self.qp->Modify(a, mask), "INIT");

    // INIT -> RTR: the peer's address (the one place where IB and RoCE differ, seed 000 §4.4:
    // a LID here), its QPN and the PSN it will start at; RC adds the responder resources.
    a.qp_state = RdmaQpState::RTR;
    mask = RDMA_QP_STATE;
    if (type != RdmaQpType::UD)
    {
        a.ah_attr.dlid = peerLid;
        a.ah_attr.sl = m_opts.sl;
        a.ah_attr.port_num = 1;
        a.path_mtu = m_opts.mtu;
        a.dest_qp_num = peer.qp->GetQpNum();
        a.rq_psn = rqPsn;
        mask |= RDMA_QP_AV | RDMA_QP_PATH_MTU | RDMA_QP_DEST_QPN | RDMA_QP_RQ_PSN;
        if (type == RdmaQpType::RC)
        {
            a.max_dest_rd_atomic = m_opts.maxRdAtomic;
            a.min_rnr_timer = m_opts.minRnrTimer;
            mask |= RDMA_QP_MAX_DEST_RD_ATOMIC | RDMA_QP_MIN_RNR_TIMER;
        }
    }
    check(self.qp->Modify(a, mask), "RTR");

    // RTR -> RTS: our own starting PSN; RC adds the retry policy and the initiator depth.
    a.qp_state = RdmaQpState::RTS;
    a.sq_psn = sqPsn;
    mask = RDMA_QP_STATE | RDMA_QP_SQ_PSN;
    if (type == RdmaQpType::RC)
    {
        a.timeout = m_opts.timeout;
        a.retry_cnt = m_opts.retryCnt;
        a.rnr_retry = m_opts.rnrRetry;
        a.max_rd_atomic = m_opts.maxRdAtomic;
        mask |= RDMA_QP_TIMEOUT | RDMA_QP_RETRY_CNT | RDMA_QP_RNR_RETRY |
                RDMA_QP_MAX_QP_RD_ATOMIC;
    }
    check(self.qp->Modify(a, mask), "RTS");

    if (type == RdmaQpType::UD)
    {
        RdmaAhAttr av;
        av.dlid = peerLid;
        av.sl = m_opts.sl;
        av.port_num = 1;
        int err = 0;
        self.ah = dev->CreateAh(m_hosts[self.host].pd, av, &err);
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
