// The InfiniBand implementation of the RDMA transport's link port: LRH (and GRH for global
// address vectors), ICRC and VCRC around the transport bytes, on one IbNetDevice. The IB link
// layer depends on the transport's interface here, never the other way round.
#ifndef CNUAS_IB_RDMA_PORT_H
#define CNUAS_IB_RDMA_PORT_H

#include "ib-net-device.h"

#include "models/rdma/rdma-link-port.h"

#include <vector>

namespace ns3
{

/**
 * \brief An RdmaLinkPort on an InfiniBand CA port.
 *
 * Send: a local address vector becomes LRH (DLID, SL, LNH 2) + transport; a global one
 * (is_global) LRH (LNH 3) + GRH (SGID from the GID table at sgid_index: subnet prefix + port
 * GUID, IBA vol. 1 §4.1.1) + transport. The IbNetDevice adds the ICRC and VCRC.
 *
 * Receive: packets to DestQP 0 and 1 (subnet and general management, IBA vol. 1 §13.5.1) are
 * not the RDMA engine's: they are counted and dropped here (GetManagementDropped), as are raw
 * packets. The P_Key table (IBA vol. 1 §10.9.2) is the port's (IbNetDevice::GetPkeyTable),
 * which the SM writes through the node's SMA; a transport-level P_Key mismatch is counted there
 * (PortInfo P_KeyViolations, §14.2.5.6).
 */
class IbRdmaPort : public RdmaLinkPort
{
  public:
    static TypeId GetTypeId();
    IbRdmaPort();
    ~IbRdmaPort() override;

    /// Bind to a CA port (takes its IbFrameReceiveCallback and TxReadyCallback).
    void SetNetDevice(Ptr<IbNetDevice> dev);
    Ptr<IbNetDevice> GetNetDevice() const;
    /// Replaces the port's P_Key table (entry 0 first; IbNetDevice::SetPkeyTable), as an SM
    /// would. Needs the net device.
    void SetPkeyTable(const std::vector<uint16_t>& table);

    using RdmaLinkPort::Send;
    bool Send(const std::vector<uint8_t>& transport, const RdmaAhAttr& av,
              uint32_t zeroTail) override;
    bool CanSend(uint8_t sl) const override;
    void SetTxReadyCallback(Callback<void> cb) override;
    void SetReceiveCallback(ReceiveCallback cb) override;
    bool IsActive() const override;
    uint32_t GetMtu() const override;
    uint32_t GetIcrcSize() const override;
    RdmaLinkLayer GetLinkLayer() const override;
    uint16_t GetLid() const override;
    bool GetGid(uint8_t index, RdmaGid& gid) const override;
    bool GetPkey(uint16_t index, uint16_t& pkey) const override;
    void NotifyPkeyViolation(const RdmaPkeyViolation& v) override;

    uint64_t GetPkeyViolations() const
    {
        return m_dev ? m_dev->GetPkeyViolations() : 0;
    }

    /// Packets to QP0/QP1 (management) and raw packets this port did not hand to the engine.
    uint64_t GetManagementDropped() const
    {
        return m_mgmtDropped;
    }

    /// Packets too short to hold their headers.
    uint64_t GetMalformedDropped() const
    {
        return m_malformed;
    }

    /// A frame for the HCA that another owner of the net device's frame callback (a bridge to a
    /// real host's kernel) passed on: handled as if the device had delivered it here.
    void Deliver(Ptr<IbNetDevice> dev, const IbFrame& frame, const IbRxInfo& info)
    {
        OnFrame(dev, frame, info);
    }

  protected:
    void DoDispose() override;

  private:
    /// The device's receive path: the frame's bytes, without an ns-3 Packet.
    void OnFrame(Ptr<IbNetDevice> dev, const IbFrame& frame, const IbRxInfo& info);
    /// The packet in m_rxBuf (LRH .. VCRC) to the RDMA engine.
    void ParseReceived(const IbRxInfo& info);
    /// Whether `dlid` addresses this port (its LID range, IBA vol. 1 §7.11.1 LMC).
    bool IsOwnLid(uint16_t dlid) const;
    /// A packet for this port itself, turned round inside the adapter (HCAs loop back traffic
    /// between two QPs of one port without the wire; a switch never sends a packet out of the
    /// port it came in on, §18.2.4.3): `frame` is LRH space, GRH, transport, ICRC and VCRC
    /// space, delivered after LoopbackDelay.
    void Loopback(std::vector<uint8_t> frame, const IbRxInfo& rx);
    void OnTxReady(Ptr<IbNetDevice> dev);

    Ptr<IbNetDevice> m_dev;
    uint64_t m_subnetPrefix;
    ReceiveCallback m_rx;
    Callback<void> m_txReady;
    std::vector<uint8_t> m_txBuf;
    Time m_loopbackDelay;   ///< LoopbackDelay
    uint64_t m_loopedBack = 0; ///< packets turned round inside the adapter
    std::vector<uint8_t> m_rxBuf;
    /// m_rxBuf holds only zeros from here on (OnFrame writes the implied zeros only where a
    /// previous packet left bytes).
    uint32_t m_rxBufDirty = 0;
    uint64_t m_mgmtDropped{0};
    uint64_t m_malformed{0};
};

} // namespace ns3

#endif
