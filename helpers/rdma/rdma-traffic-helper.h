// Wires queue pairs between hosts of an RDMA-equipped fabric (InfiniBand HCAs from RdmaHelper or
// RoCEv2 NICs from RoceHelper) for the traffic applications: per host a PD, one registered buffer
// and CQs; per connection two QPs taken through INIT -> RTR -> RTS by ConnectQp
// (helpers/rdma/rdma-qp-connect.h), the peers' QPN, PSN, address (LID or GID), buffer address and
// R_Key exchanged directly in the simulation (what msgstream's TCP bootstrap carries, seed 000
// §2).
#ifndef CNUAS_RDMA_TRAFFIC_HELPER_H
#define CNUAS_RDMA_TRAFFIC_HELPER_H

#include "helpers/rdma/rdma-helper.h"
#include "helpers/roce/roce-helper.h"
#include "models/rdma/apps/rdma-app-endpoint.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/// How the helper builds QPs (ibv_qp_init_attr / ibv_qp_attr values).
struct RdmaConnectOptions
{
    RdmaQpType type = RdmaQpType::RC;
    RdmaMtu mtu = RdmaMtu::MTU_4096;
    uint8_t timeout = 14;      ///< local ACK timeout, 4.096 us * 2^14 = 67 ms
    uint8_t retryCnt = 7;
    uint8_t rnrRetry = 7;      ///< 7: retry forever
    uint8_t minRnrTimer = 1;   ///< 0.01 ms (IBA vol. 1 table 45)
    uint8_t maxRdAtomic = 16;
    uint32_t sqDepth = 128;    ///< max_send_wr
    uint32_t rqDepth = 128;    ///< max_recv_wr
    uint32_t cqDepth = 0;      ///< per CQ; 0: sqDepth + rqDepth
    uint8_t sl = 0;
    uint32_t qkey = 0x11111111; ///< UD
    uint32_t psnSeed = 1;      ///< initial PSNs are drawn from it deterministically
};

/**
 * \brief Builds connected endpoints over the HCAs RdmaHelper installed.
 *
 * Memory: with `realMemory` every host's buffer is RdmaSimulatedMemory (the bytes are really
 * moved, so tests can compare them; use small buffers); otherwise an RdmaNullMemory window of
 * `bufferBytes` (nothing stored: traffic of any size costs no host memory). All connections of
 * a host share its buffer; messages of different QPs overlap in it, which is harmless for
 * traffic whose contents nobody reads.
 *
 * Errors (a QP the device refuses, a transition ibv_modify_qp would refuse) throw
 * std::runtime_error with the device's reason.
 */
class RdmaTrafficHelper
{
  public:
    /// `hcas` as RdmaHelper::Install returned them (host index = position).
    RdmaTrafficHelper(const std::vector<RdmaHca>& hcas, bool realMemory = false,
                      uint64_t bufferBytes = 1ULL << 32);
    /// The same over RoCEv2 NICs as RoceHelper::Install returned them: peers are addressed by
    /// their GID (index 0) instead of a LID.
    RdmaTrafficHelper(const std::vector<RoceHca>& nics, bool realMemory = false,
                      uint64_t bufferBytes = 1ULL << 32);

    void SetOptions(const RdmaConnectOptions& o)
    {
        m_opts = o;
    }

    const RdmaConnectOptions& GetOptions() const
    {
        return m_opts;
    }

    /// A connected pair: first is host a's endpoint (peer b), second host b's (peer a).
    std::pair<RdmaAppEndpoint, RdmaAppEndpoint> Connect(uint32_t a, uint32_t b);

    /// Base virtual address of every host's buffer.
    static constexpr uint64_t kBufferBase = 0x7f3a00000000ULL;

    /// The memory of host `i` (RdmaSimulatedMemory or RdmaNullMemory).
    Ptr<RdmaMemory> GetMemory(uint32_t i);
    uint64_t GetBufferBytes() const
    {
        return m_bufferBytes;
    }

  private:
    /// What the helper needs of one host's HCA or NIC, whatever the fabric.
    struct Nic
    {
        Ptr<RdmaDevice> device;
        Ptr<RdmaLinkPort> port;
        Ptr<RdmaSimulatedMemory> memory;
    };

    struct Host
    {
        Ptr<RdmaMemory> memory;
        Ptr<RdmaPd> pd;
        Ptr<RdmaMr> mr;
    };

    Host& HostCtx(uint32_t i);
    RdmaAppEndpoint MakeEndpoint(uint32_t host, uint32_t peer);
    void ToRts(RdmaAppEndpoint& self, const RdmaAppEndpoint& peer, uint32_t sqPsn, uint32_t rqPsn);

    std::vector<Nic> m_hcas;
    std::vector<Host> m_hosts;
    bool m_real;
    uint64_t m_bufferBytes;
    RdmaConnectOptions m_opts;
    uint64_t m_connections{0};
};

/**
 * The wire arithmetic of one packet on an InfiniBand path, for ideal completion times: bytes on
 * the wire of a transport packet of `transportBytes` (BTH through payload and pad): LRH 8 +
 * transport + ICRC 4 + VCRC 2 + delimiters (docs/ib-link.md §2.1, §2.3).
 */
uint32_t RdmaIbWireBytes(uint32_t transportBytes, uint32_t delimiterBytes = 2);

} // namespace ns3

#endif
