// Memory region: a registered range of a consumer's memory with its keys and access rights.
// IBA vol. 1 §10.6 (memory management), ibv_reg_mr(3).
#ifndef CNUAS_RDMA_MR_H
#define CNUAS_RDMA_MR_H

#include "rdma-pd.h"
#include "rdma-resource.h"

#include <cstdint>

namespace ns3
{

/// Outcome of a memory-region access check (the reason an L_Key or R_Key is refused).
enum class RdmaMrCheck : uint8_t
{
    OK = 0,
    INVALID_KEY,   ///< no valid MR has this key (never issued, or deregistered)
    PD_MISMATCH,   ///< the MR is in another PD than the QP (IBA vol. 1 §10.6.3.2)
    OUT_OF_RANGE,  ///< [addr, addr+len) is not inside the region, or wraps past 2^64
    ACCESS_DENIED, ///< the region does not grant the access (IBA vol. 1 §10.6.3.3)
};

const char* RdmaMrCheckName(RdmaMrCheck c);

/// The completion status a failed local (L_Key) check gives: IBV_WC_LOC_PROT_ERR.
RdmaWcStatus RdmaLocalCheckStatus(RdmaMrCheck c);
/// The completion status a requester sees for a failed remote (R_Key) check: the responder
/// NAKs with Remote Access Error (IBA vol. 1 §9.7.5.2.4), IBV_WC_REM_ACCESS_ERR.
RdmaWcStatus RdmaRemoteCheckStatus(RdmaMrCheck c);

/**
 * \brief A registered memory region.
 *
 * Addresses in SGEs and RDMA requests are I/O virtual addresses (IOVAs): the region covers
 * [iova, iova+length) and maps it onto [addr, addr+length) of its PD's memory. ibv_reg_mr(3)
 * uses iova == addr; ibv_reg_mr_iova(3) chooses another IOVA.
 *
 * Access (IBA vol. 1 §10.6.3): local read is always allowed; local write needs
 * RDMA_ACCESS_LOCAL_WRITE; a remote access needs the matching RDMA_ACCESS_REMOTE_* right.
 */
class RdmaMr : public RdmaResource
{
  public:
    static TypeId GetTypeId();
    RdmaMr();
    ~RdmaMr() override;

    uint64_t GetAddr() const
    {
        return m_addr;
    }

    uint64_t GetLength() const
    {
        return m_length;
    }

    uint64_t GetIova() const
    {
        return m_iova;
    }

    uint32_t GetAccess() const
    {
        return m_access;
    }

    uint32_t GetLkey() const
    {
        return m_lkey;
    }

    uint32_t GetRkey() const
    {
        return m_rkey;
    }

    Ptr<RdmaPd> GetPd() const
    {
        return m_pd;
    }

    /// The PD's memory, which ToMemoryAddress() addresses.
    Ptr<RdmaMemory> GetMemory() const;

    /**
     * Check a local access through the L_Key (an SGE): [iova, iova+len) inside the region, and
     * RDMA_ACCESS_LOCAL_WRITE when `needWrite` (a receive, an RDMA READ response or an atomic
     * result lands there). A zero-length access touches no byte and passes the range check.
     */
    RdmaMrCheck CheckLocal(uint64_t iova, uint64_t len, bool needWrite) const;
    /**
     * Check a remote access through the R_Key: [iova, iova+len) inside the region and every
     * right in `requiredAccess` (a non-empty combination of RDMA_ACCESS_REMOTE_WRITE, _READ,
     * _ATOMIC) granted. A zero-length access passes the range check.
     */
    RdmaMrCheck CheckRemote(uint64_t iova, uint64_t len, uint32_t requiredAccess) const;

    /**
     * Allow invalidation of this region's keys (local invalidate, SEND with invalidate). IBA
     * vol. 1 §10.6 lets only regions made for it be invalidated (the Base Memory Management
     * Extensions' fast-register regions, which the kernel's FRMRs are, and type-2 memory
     * windows); a region from plain ibv_reg_mr(3) cannot be. Off by default.
     */
    void SetInvalidatable(bool on)
    {
        m_invalidatable = on;
    }

    bool IsInvalidatable() const
    {
        return m_invalidatable;
    }

    /// Invalidate the keys: every later L_Key / R_Key check fails with INVALID_KEY. False (and
    /// nothing changes) if the region is not invalidatable or no longer valid.
    bool Invalidate();

    bool IsInvalidated() const
    {
        return m_invalidated;
    }

    /// The memory address of an IOVA inside the region.
    uint64_t ToMemoryAddress(uint64_t iova) const
    {
        return m_addr + (iova - m_iova);
    }

  protected:
    void DoDispose() override;

  private:
    bool InRange(uint64_t iova, uint64_t len) const;

    Ptr<RdmaPd> m_pd;
    uint64_t m_addr{0};
    uint64_t m_length{0};
    uint64_t m_iova{0};
    uint32_t m_access{0};
    uint32_t m_lkey{0};
    uint32_t m_rkey{0};
    bool m_invalidatable{false};
    bool m_invalidated{false};

    friend class RdmaDevice;
};

} // namespace ns3

#endif
