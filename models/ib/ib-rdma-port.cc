#include "ib-rdma-port.h"

#include "ib-crc.h"
#include "ib-gid.h"
#include "ib-grh-header.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "ns3/packet.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

namespace
{
constexpr uint16_t kMulticastLidFirst = 0xC000; // IBA vol. 1 §4.1.3
constexpr uint16_t kPermissiveLid = 0xFFFF;
} // namespace

NS_LOG_COMPONENT_DEFINE("IbRdmaPort");
NS_OBJECT_ENSURE_REGISTERED(IbRdmaPort);

namespace
{
/// BTH bytes 5-7: DestQP (IBA vol. 1 §9.2).
constexpr uint32_t kBthDestQpOffset = 5;
constexpr uint32_t kBthSize = 12;
} // namespace

TypeId
IbRdmaPort::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbRdmaPort")
            .SetParent<RdmaLinkPort>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbRdmaPort>()
            .AddAttribute("SubnetPrefix",
                          "GID prefix of this port's GID table entry 0 (the port GUID is the "
                          "interface ID), IBA vol. 1 §4.1.1.",
                          UintegerValue(kIbDefaultSubnetPrefix),
                          MakeUintegerAccessor(&IbRdmaPort::m_subnetPrefix),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("LoopbackDelay",
                          "How long a packet this port sends to its own LID (one QP of the "
                          "adapter to another) takes to turn round inside the adapter; it "
                          "never reaches the wire.",
                          TimeValue(MicroSeconds(1)),
                          MakeTimeAccessor(&IbRdmaPort::m_loopbackDelay),
                          MakeTimeChecker());
    return tid;
}

IbRdmaPort::IbRdmaPort() = default;
IbRdmaPort::~IbRdmaPort() = default;

void
IbRdmaPort::DoDispose()
{
    if (m_dev)
    {
        m_dev->SetIbFrameReceiveCallback(IbNetDevice::IbFrameReceiveCallback());
        m_dev->SetTxReadyCallback(Callback<void, Ptr<IbNetDevice>>());
    }
    m_dev = nullptr;
    m_rx = ReceiveCallback();
    m_txReady = Callback<void>();
    RdmaLinkPort::DoDispose();
}

void
IbRdmaPort::SetNetDevice(Ptr<IbNetDevice> dev)
{
    m_dev = dev;
    dev->SetIbFrameReceiveCallback(MakeCallback(&IbRdmaPort::OnFrame, this));
    dev->SetTxReadyCallback(MakeCallback(&IbRdmaPort::OnTxReady, this));
}

Ptr<IbNetDevice>
IbRdmaPort::GetNetDevice() const
{
    return m_dev;
}

void
IbRdmaPort::SetPkeyTable(const std::vector<uint16_t>& table)
{
    NS_ABORT_MSG_IF(!m_dev, "IbRdmaPort::SetPkeyTable before SetNetDevice");
    m_dev->SetPkeyTable(table);
}

bool
IbRdmaPort::Send(const std::vector<uint8_t>& transport, const RdmaAhAttr& av, uint32_t zeroTail)
{
    if (!m_dev)
    {
        return false;
    }
    // No ns-3 Packet: the frame stores the bytes up to the last that is not zero, so the
    // transport's trailing zeros (the data of memory that reads as zeros, in load experiments)
    // cost nothing in flight (IbFrame::StoreBytes); the zero tail is not even built.
    const uint8_t* bytes = transport.data();
    auto n = static_cast<uint32_t>(transport.size());
    if (av.is_global)
    {
        // IBA vol. 1 §8.3: GRH with IPVer 6, NxtHdr 0x1B (IBA transport), PayLen counting from
        // the BTH through the ICRC.
        IbGrhHeader grh;
        grh.SetTClass(av.grh.traffic_class);
        grh.SetFlowLabel(av.grh.flow_label);
        grh.SetPayLen(static_cast<uint16_t>(transport.size() + zeroTail + kIbIcrcSize));
        grh.SetNxtHdr(IbGrhHeader::kNxtHdrIba);
        grh.SetHopLmt(av.grh.hop_limit);
        RdmaGid sgid{};
        GetGid(av.grh.sgid_index, sgid);
        grh.SetSgid(sgid);
        grh.SetDgid(av.grh.dgid);
        m_txBuf.resize(IbGrhHeader::kSize + transport.size());
        grh.WriteTo(m_txBuf.data());
        std::copy(transport.begin(), transport.end(), m_txBuf.begin() + IbGrhHeader::kSize);
        bytes = m_txBuf.data();
        n = static_cast<uint32_t>(m_txBuf.size());
    }
    const IbLnh lnh = av.is_global ? IbLnh::IbaGlobal : IbLnh::IbaLocal;
    // A multicast packet also reaches the sending port's own members: the switch never sends
    // it back out of the port it came in by, so the adapter loops it back (as ConnectX does
    // unless a QP is created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB).
    const bool multicast = av.dlid >= kMulticastLidFirst && av.dlid != kPermissiveLid;
    if (IsOwnLid(av.dlid) || multicast)
    {
        if (m_dev->GetPortState() != IbPortState::Active)
        {
            return false; // as SendIbBytes: nothing leaves a port that is not Active
        }
        std::vector<uint8_t> frame(IbLrhHeader::kSize);
        frame.insert(frame.end(), bytes, bytes + n);
        frame.resize(frame.size() + zeroTail + kIbIcrcSize + kIbVcrcSize);
        IbRxInfo rx;
        const uint16_t pathMask = static_cast<uint16_t>((1u << m_dev->GetLmc()) - 1);
        rx.slid = static_cast<uint16_t>(m_dev->GetLid() | (av.src_path_bits & pathMask));
        rx.dlid = av.dlid;
        rx.sl = av.sl;
        rx.lnh = lnh;
        Loopback(std::move(frame), rx);
        if (!multicast)
        {
            return true;
        }
    }
    return m_dev->SendIbBytes(bytes, n, n + zeroTail, av.dlid, av.sl, lnh);
}

bool
IbRdmaPort::IsOwnLid(uint16_t dlid) const
{
    const uint16_t lid = m_dev->GetLid();
    if (lid == 0 || dlid >= kMulticastLidFirst)
    {
        return false;
    }
    const uint8_t lmc = m_dev->GetLmc();
    return (dlid >> lmc) == (lid >> lmc);
}

void
IbRdmaPort::Loopback(std::vector<uint8_t> frame, const IbRxInfo& rx)
{
    ++m_loopedBack;
    Ptr<IbRdmaPort> self(this);
    Simulator::Schedule(m_loopbackDelay, [self, frame = std::move(frame), rx]() mutable {
        if (!self->m_dev)
        {
            return; // disposed meanwhile
        }
        IbRxInfo info = rx;
        info.bytes = static_cast<uint32_t>(frame.size());
        self->m_rxBuf = std::move(frame);
        self->m_rxBufDirty = static_cast<uint32_t>(self->m_rxBuf.size());
        self->ParseReceived(info);
    });
}

bool
IbRdmaPort::CanSend(uint8_t sl) const
{
    return m_dev && m_dev->CanSend(sl);
}

void
IbRdmaPort::SetTxReadyCallback(Callback<void> cb)
{
    m_txReady = cb;
}

void
IbRdmaPort::SetReceiveCallback(ReceiveCallback cb)
{
    m_rx = cb;
}

bool
IbRdmaPort::IsActive() const
{
    return m_dev && m_dev->GetPortState() == IbPortState::Active;
}

uint32_t
IbRdmaPort::GetMtu() const
{
    return m_dev ? m_dev->GetMtu() : 256;
}

uint32_t
IbRdmaPort::GetIcrcSize() const
{
    return kIbIcrcSize;
}

RdmaLinkLayer
IbRdmaPort::GetLinkLayer() const
{
    return RdmaLinkLayer::INFINIBAND;
}

uint16_t
IbRdmaPort::GetLid() const
{
    return m_dev ? m_dev->GetLid() : 0;
}

bool
IbRdmaPort::GetGid(uint8_t index, RdmaGid& gid) const
{
    if (index != 0 || !m_dev)
    {
        return false;
    }
    gid = IbMakeGid(m_subnetPrefix, m_dev->GetPortGuid());
    return true;
}

bool
IbRdmaPort::GetPkey(uint16_t index, uint16_t& pkey) const
{
    return m_dev && m_dev->GetPkey(index, pkey);
}

void
IbRdmaPort::NotifyPkeyViolation(const RdmaPkeyViolation& v)
{
    if (!m_dev)
    {
        return;
    }
    IbPkeyViolation n;
    n.pkey = v.pkey;
    n.srcQp = v.srcQp;
    n.dstQp = v.dstQp;
    if (v.rx)
    {
        n.slid = v.rx->slid;
        n.dlid = v.rx->dlid;
        n.sl = v.rx->sl;
        n.global = v.rx->global;
        n.sgid = v.rx->sgid;
        n.dgid = v.rx->dgid;
    }
    m_dev->NotifyPkeyViolation(n);
}

void
IbRdmaPort::OnTxReady(Ptr<IbNetDevice>)
{
    if (!m_txReady.IsNull())
    {
        m_txReady();
    }
}

void
IbRdmaPort::OnFrame(Ptr<IbNetDevice>, const IbFrame& frame, const IbRxInfo& rx)
{
    if (rx.lnh != IbLnh::IbaLocal && rx.lnh != IbLnh::IbaGlobal)
    {
        ++m_mgmtDropped; // raw packets carry no IBA transport
        return;
    }
    // The stored bytes, then the zeros the frame implies. The buffer past m_rxBufDirty is
    // zeros already (a vector zeroes what it grows by), so only what the previous packet left
    // beyond this one's stored bytes is cleared: a 4 KiB zero payload is not written again.
    m_rxBuf.resize(frame.bytes);
    const uint32_t dirtyEnd = std::min<uint32_t>(m_rxBufDirty, frame.bytes);
    if (dirtyEnd > frame.storedBytes)
    {
        std::fill(m_rxBuf.begin() + frame.storedBytes, m_rxBuf.begin() + dirtyEnd, 0);
    }
    frame.CopyStoredBytes(m_rxBuf.data());
    m_rxBufDirty = frame.storedBytes;
    ParseReceived(rx);
}

void
IbRdmaPort::ParseReceived(const IbRxInfo& rx)
{
    uint32_t off = IbLrhHeader::kSize;
    RdmaRxInfo info;
    info.slid = rx.slid;
    info.dlid = rx.dlid;
    info.sl = rx.sl;
    if (rx.lnh == IbLnh::IbaGlobal)
    {
        if (m_rxBuf.size() < off + IbGrhHeader::kSize + kBthSize + kIbIcrcSize + kIbVcrcSize)
        {
            ++m_malformed;
            return;
        }
        IbGrhHeader grh;
        grh.ReadFrom(m_rxBuf.data() + off);
        info.global = true;
        info.sgid = grh.GetSgid();
        info.dgid = grh.GetDgid();
        std::copy(m_rxBuf.begin() + off, m_rxBuf.begin() + off + IbGrhHeader::kSize,
                  info.grhBytes.begin());
        off += IbGrhHeader::kSize;
    }
    if (m_rxBuf.size() < off + kBthSize + kIbIcrcSize + kIbVcrcSize)
    {
        ++m_malformed;
        return;
    }
    const uint8_t* bth = m_rxBuf.data() + off;
    const uint32_t destQp = (uint32_t(bth[kBthDestQpOffset]) << 16) |
                            (uint32_t(bth[kBthDestQpOffset + 1]) << 8) | bth[kBthDestQpOffset + 2];
    if (destQp <= 1)
    {
        // QP0 (SMI) and QP1 (GSI) belong to the management agents, not the RDMA engine.
        ++m_mgmtDropped;
        return;
    }
    info.ecnMarked = (bth[4] & 0x80) != 0; // BTH FECN (IBA vol. 1 annex A10)
    if (!m_rx.IsNull())
    {
        m_rx(this, bth, static_cast<uint32_t>(m_rxBuf.size() - off - kIbVcrcSize), info);
    }
}

} // namespace ns3
