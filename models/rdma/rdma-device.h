// The HCA as the verbs see it: a device that creates and owns PDs, MRs, CQs, SRQs, QPs and AHs,
// enforces its limits and raises asynchronous events. IBA vol. 1 §11.2 (resource verbs),
// §11.6.3 (asynchronous events); ibv_query_device(3), ibv_alloc_pd(3), ibv_reg_mr(3),
// ibv_create_cq(3), ibv_create_srq(3), ibv_create_qp(3), ibv_create_ah(3).
#ifndef CNUAS_RDMA_DEVICE_H
#define CNUAS_RDMA_DEVICE_H

#include "rdma-cq.h"
#include "rdma-memory.h"
#include "rdma-mr.h"
#include "rdma-pd.h"
#include "rdma-qp.h"
#include "rdma-qpn-table.h"
#include "rdma-srq.h"
#include "rdma-types.h"

#include "ns3/callback.h"
#include "ns3/object.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ns3
{

/// Device attributes (the fields of struct ibv_device_attr this model has, plus
/// max_inline_data, which libibverbs reports per QP only).
struct RdmaDeviceAttr
{
    uint64_t node_guid = 0;
    uint64_t max_mr_size = 0;
    uint64_t page_size_cap = 0;
    uint32_t vendor_id = 0;
    uint32_t vendor_part_id = 0;
    uint32_t hw_ver = 0;
    uint32_t max_qp = 0;
    uint32_t max_qp_wr = 0;
    uint32_t device_cap_flags = 0;
    uint32_t max_sge = 0;
    uint32_t max_sge_rd = 0;
    uint32_t max_cq = 0;
    uint32_t max_cqe = 0;
    uint32_t max_mr = 0;
    uint32_t max_pd = 0;
    uint32_t max_qp_rd_atom = 0;      ///< responder resources per QP (max_dest_rd_atomic)
    uint32_t max_qp_init_rd_atom = 0; ///< initiator depth per QP (max_rd_atomic)
    RdmaAtomicCap atomic_cap = RdmaAtomicCap::NONE;
    uint32_t max_ah = 0;
    uint32_t max_srq = 0;
    uint32_t max_srq_wr = 0;
    uint32_t max_srq_sge = 0;
    uint16_t max_pkeys = 0;
    uint8_t local_ca_ack_delay = 0;
    uint8_t phys_port_cnt = 0;
    uint32_t max_inline_data = 0; ///< not in ibv_device_attr: the largest cap.max_inline_data
    uint32_t max_mcast_grp = 0;       ///< multicast groups QPs may be attached to at once
    uint32_t max_mcast_qp_attach = 0; ///< QPs attached to one group
    uint32_t max_total_mcast_qp_attach = 0; ///< attachments in all
};

/// Port attributes the object model uses (a subset of struct ibv_port_attr; state, LID and
/// the like come from the link layer the port is bound to).
struct RdmaPortAttr
{
    RdmaMtu max_mtu = RdmaMtu::MTU_4096;
    RdmaMtu active_mtu = RdmaMtu::MTU_4096;
    uint32_t gid_tbl_len = 0;
    uint32_t max_msg_sz = 0;
    uint16_t pkey_tbl_len = 0;
    RdmaLinkLayer link_layer = RdmaLinkLayer::INFINIBAND;
};

/// An asynchronous event (struct ibv_async_event): one of cq, qp, srq or port_num is set,
/// according to the type.
struct RdmaAsyncEvent
{
    RdmaEventType event_type = RdmaEventType::CQ_ERR;
    Ptr<RdmaCq> cq;
    Ptr<RdmaQp> qp;
    Ptr<RdmaSrq> srq;
    uint8_t port_num = 0;
};

/**
 * \brief An RDMA device (HCA or RoCE NIC): its verbs objects, limits and events.
 *
 * Create functions return the new object, or null with the errno value in *err (0 on
 * success), as the ibv_create_* functions return NULL and set errno. Destroy functions return
 * 0 or an errno value. GetLastError() explains the latest refusal.
 *
 * L_Keys and R_Keys come from a seeded ns-3 random stream (AssignStreams): 32 random bits,
 * never 0, and never issued twice by one device (not even after deregistration), so a stale or
 * guessed key does not reach another region. An MR's L_Key and R_Key differ.
 */
class RdmaDevice : public Object
{
  public:
    static TypeId GetTypeId();
    RdmaDevice();
    ~RdmaDevice() override;

    /// Signature of the "AsyncEvent" trace source.
    typedef void (*AsyncEventCallback)(const RdmaAsyncEvent& event);
    /// Signature of the "McastAttach" trace source: (group GID, MLID, attached; false: detached).
    typedef void (*McastAttachCallback)(const RdmaGid& gid, uint16_t lid, bool attached);

    /// Use `stream` for key generation; returns the number of streams used (1).
    int64_t AssignStreams(int64_t stream);

    /// ibv_query_device(3).
    RdmaDeviceAttr QueryDevice() const;
    /// ibv_query_port(3): 0, or EINVAL for a port number outside 1..phys_port_cnt.
    int QueryPort(uint8_t portNum, RdmaPortAttr& attr) const;

    /// ibv_alloc_pd(3). `memory` is the consumer's address space (must not be null: EINVAL).
    /// ENOMEM beyond max_pd.
    Ptr<RdmaPd> AllocPd(Ptr<RdmaMemory> memory, int* err = nullptr);
    /// ibv_dealloc_pd(3): EBUSY while objects use the PD.
    int DeallocPd(Ptr<RdmaPd> pd);

    /**
     * ibv_reg_mr(3): register [addr, addr+length) with iova == addr. EINVAL for: a PD that is
     * not alive, length 0, a range that wraps, length above max_mr_size, an access flag that
     * is unknown or unsupported (ZERO_BASED, ON_DEMAND, HUGETLB, FLUSH_*), REMOTE_WRITE or
     * REMOTE_ATOMIC without LOCAL_WRITE. Flags of IBV_ACCESS_OPTIONAL_RANGE are ignored.
     * EFAULT when the range is not mapped in the PD's memory; ENOMEM beyond max_mr.
     */
    Ptr<RdmaMr> RegMr(Ptr<RdmaPd> pd,
                      uint64_t addr,
                      uint64_t length,
                      uint32_t access,
                      int* err = nullptr);
    /// ibv_reg_mr_iova(3): as RegMr, with the region seen at [iova, iova+length) (which must
    /// not wrap either).
    Ptr<RdmaMr> RegMrIova(Ptr<RdmaPd> pd,
                          uint64_t addr,
                          uint64_t length,
                          uint64_t iova,
                          uint32_t access,
                          int* err = nullptr);
    /// ibv_dereg_mr(3): the keys stop working at once.
    int DeregMr(Ptr<RdmaMr> mr);

    /// ibv_create_cq(3): cqe in 1..max_cqe (EINVAL otherwise); ENOMEM beyond max_cq. The CQ
    /// holds exactly cqe completions.
    Ptr<RdmaCq> CreateCq(int cqe, int* err = nullptr);
    /// Create a CQ on a given ring (a real-process bridge's ring in shared memory); its
    /// capacity must be in 1..max_cqe.
    Ptr<RdmaCq> CreateCq(Ptr<RdmaQueue<RdmaWc>> ring, int* err = nullptr);
    /// ibv_destroy_cq(3): EBUSY while QPs use it.
    int DestroyCq(Ptr<RdmaCq> cq);

    /// ibv_create_srq(3): max_wr in 1..max_srq_wr, max_sge up to max_srq_sge (EINVAL
    /// otherwise); ENOMEM beyond max_srq. srq_limit is ignored at creation (ibv_create_srq(3)).
    Ptr<RdmaSrq> CreateSrq(Ptr<RdmaPd> pd, const RdmaSrqAttr& attr, int* err = nullptr);
    /// Create an SRQ on a given ring (a real-process bridge's); its capacity becomes max_wr
    /// and must be in 1..max_srq_wr.
    Ptr<RdmaSrq> CreateSrq(Ptr<RdmaPd> pd,
                           const RdmaSrqAttr& attr,
                           Ptr<RdmaQueue<RdmaRecvWqe>> ring,
                           int* err = nullptr);
    /// ibv_destroy_srq(3): EBUSY while QPs use it.
    int DestroySrq(Ptr<RdmaSrq> srq);

    /**
     * ibv_create_qp(3). EOPNOTSUPP for a QP type other than RC, UC, UD; EINVAL for a PD, CQ or
     * SRQ that is missing or not alive, an SRQ of another PD, or a capacity above the device
     * limits (max_qp_wr, max_sge, max_inline_data); ENOMEM beyond max_qp. On success
     * initAttr.cap holds the actual capacities, as ibv_create_qp(3) does. The QP starts in
     * RESET.
     */
    Ptr<RdmaQp> CreateQp(Ptr<RdmaPd> pd, RdmaQpInitAttr& initAttr, int* err = nullptr);
    /// ibv_destroy_qp(3): outstanding WQEs are discarded without completions. EBUSY while the
    /// QP is attached to a multicast group (ib_destroy_qp counts attachments as users).
    int DestroyQp(Ptr<RdmaQp> qp);

    /**
     * ibv_attach_mcast(3): the UD QP receives what is sent to multicast group `gid` (a
     * multicast GID, first byte 0xFF, IBA vol. 1 §4.1.1, or on RoCE v2 an IPv4-mapped
     * 224.0.0.0/4 address) with MLID `lid` on its port (§10.5).
     * EINVAL for a QP that is not UD or not alive, or a GID that is not multicast; attaching
     * again to the same (GID, LID) changes nothing (0), as the kernel's ib_uverbs_attach_mcast.
     */
    int AttachMcast(Ptr<RdmaQp> qp, const RdmaGid& gid, uint16_t lid);
    /// ibv_detach_mcast(3): EINVAL if the QP is not attached to (gid, lid).
    int DetachMcast(Ptr<RdmaQp> qp, const RdmaGid& gid, uint16_t lid);
    /// Detaches the QP from every group (what the kernel does for a process that exits).
    void DetachAllMcast(Ptr<RdmaQp> qp);
    /// Groups the QP is attached to.
    uint32_t GetMcastAttachments(Ptr<RdmaQp> qp) const;
    /**
     * The QPs of port `port` attached to the group a received multicast packet is for: by the
     * GRH's destination GID when it had one (`global`), else by the DLID (a packet
     * without GRH is matched by MLID), in QP-number order.
     */
    void McastMembers(uint8_t port, bool global, const RdmaGid& dgid, uint16_t dlid,
                      std::vector<Ptr<RdmaQp>>& out) const;

    /// ibv_create_ah(3): the address vector is checked as for IBV_QP_AV (see CheckAhAttr),
    /// except that a multicast DLID is allowed. ENOMEM beyond max_ah.
    Ptr<RdmaAh> CreateAh(Ptr<RdmaPd> pd, const RdmaAhAttr& attr, int* err = nullptr);
    /// ibv_destroy_ah(3).
    int DestroyAh(Ptr<RdmaAh> ah);

    /// Why the latest refused call on this device or one of its objects was refused.
    const std::string& GetLastError() const
    {
        return m_lastError;
    }

    // ---- Transport-engine side -------------------------------------------------------------

    /// The alive QP with this number, or null.
    Ptr<RdmaQp> LookupQp(uint32_t qpn) const;
    /// The alive MR with this L_Key, or null.
    Ptr<RdmaMr> LookupLkey(uint32_t lkey) const;
    /// The alive MR with this R_Key, or null.
    Ptr<RdmaMr> LookupRkey(uint32_t rkey) const;

    /// Check a local SGE of a QP in `pd` (IBA vol. 1 §10.6.3.2): key, PD, range, rights. On
    /// OK, *mr (if given) is the region.
    RdmaMrCheck CheckLocalAccess(Ptr<RdmaPd> pd,
                                 const RdmaSge& sge,
                                 bool needWrite,
                                 Ptr<RdmaMr>* mr = nullptr) const;
    /// Check an incoming remote access for a QP in `pd` (IBA vol. 1 §10.6.3.3 / §9.7.5.1.x):
    /// key, PD, range, rights. On OK, *mr (if given) is the region.
    RdmaMrCheck CheckRemoteAccess(Ptr<RdmaPd> pd,
                                  uint32_t rkey,
                                  uint64_t addr,
                                  uint64_t len,
                                  uint32_t requiredAccess,
                                  Ptr<RdmaMr>* mr = nullptr) const;

    /**
     * Check an address vector (IBA vol. 1 §11.2.2.1, §11.2.5.2 IBV_QP_AV): port_num in
     * 1..phys_port_cnt; sl <= 15; on an Ethernet (RoCE) port the GRH is mandatory; on an
     * InfiniBand port the DLID is not 0, and not multicast (0xC000..0xFFFE) when `connected`
     * (RC/UC); with a GRH, flow_label fits 20 bits and sgid_index is inside the GID table.
     * Returns null when valid, else the reason.
     */
    const char* CheckAhAttr(const RdmaAhAttr& attr, bool connected) const;
    /**
     * Whether a global address vector's source GID exists: a GID table has gid_tbl_len slots,
     * not all of them filled (a RoCE port holds a GID per address of its interface), and the
     * kernel refuses an address vector whose sgid_index names an empty one with ENODATA
     * (rdma_get_gid_attr, drivers/infiniband/core/cache.c), at ibv_modify_qp and ibv_create_ah
     * alike. True when the address vector is not global, or no lookup is installed.
     */
    bool SourceGidPresent(const RdmaAhAttr& attr) const;
    /// Whether port `portNum` has a GID at table index `index` (the transport engine installs
    /// it: the ports are its).
    typedef Callback<bool, uint8_t, uint8_t> GidLookup;
    void SetGidLookup(GidLookup lookup);

    /// What the transport engine hears from the verbs side: a send WR was posted (the
    /// doorbell), a QP changed state (from, to), a QP is being destroyed.
    typedef Callback<void, Ptr<RdmaQp>> QpCallback;
    typedef Callback<void, Ptr<RdmaQp>, RdmaQpState, RdmaQpState> QpStateCallback;
    /// Install the engine's hooks (one engine per device; null callbacks uninstall).
    void SetTransportHooks(QpCallback doorbell, QpStateCallback stateChange, QpCallback destroy);
    /// Called by RdmaQp: a send WQE was queued in RTS or SQD.
    void RingDoorbell(RdmaQp* qp);
    /// Called by RdmaQp: the QP entered `to` (before the state's effects, e.g. flushes).
    void NotifyQpState(RdmaQp* qp, RdmaQpState from, RdmaQpState to);

    /// Raise an asynchronous event (trace source "AsyncEvent").
    void RaiseAsyncEvent(const RdmaAsyncEvent& event);

    /// Record the reason of a refusal (GetLastError).
    void SetLastError(const std::string& why) const
    {
        m_lastError = why;
    }

    /// Number of alive objects of each kind.
    uint32_t GetNPds() const
    {
        return static_cast<uint32_t>(m_pds.size());
    }

    uint32_t GetNMrs() const
    {
        return static_cast<uint32_t>(m_mrs.size());
    }

    uint32_t GetNCqs() const
    {
        return static_cast<uint32_t>(m_cqs.size());
    }

    uint32_t GetNSrqs() const
    {
        return static_cast<uint32_t>(m_srqs.size());
    }

    uint32_t GetNQps() const
    {
        return static_cast<uint32_t>(m_qps.size());
    }

    uint32_t GetNAhs() const
    {
        return static_cast<uint32_t>(m_ahs.size());
    }

  protected:
    void DoDispose() override;

  private:
    friend class RdmaCq;

    /// A CQ overran: its QPs enter ERR with IBV_EVENT_QP_FATAL (after the CQ_ERR event).
    void HandleCqOverrun(RdmaCq* cq);
    /// A new key: random, non-zero, never issued before by this device.
    uint32_t NewKey();
    uint32_t NewQpn();
    void DetachAll(bool dispose);
    static Ptr<RdmaPd> AlivePd(const Ptr<RdmaPd>& pd, const RdmaDevice* self);
    template <typename T>
    Ptr<T> Fail(int* err, int code, const char* why) const;

    // Limits (ns-3 attributes).
    uint32_t m_maxQp;
    uint32_t m_maxQpWr;
    uint32_t m_maxSge;
    uint32_t m_maxSgeRd;
    uint32_t m_maxCq;
    uint32_t m_maxCqe;
    uint32_t m_maxMr;
    uint64_t m_maxMrSize;
    uint32_t m_maxPd;
    uint32_t m_maxQpRdAtom;
    uint32_t m_maxQpInitRdAtom;
    uint32_t m_maxSrq;
    uint32_t m_maxSrqWr;
    uint32_t m_maxSrqSge;
    uint32_t m_maxAh;
    uint32_t m_maxMcastGroups;
    uint32_t m_maxMcastQpAttach;
    uint32_t m_maxInlineData;
    uint32_t m_maxMsgSize;
    uint8_t m_physPortCnt;
    uint16_t m_pkeyTableLength;
    uint32_t m_gidTableLength;
    int m_maxMtu;    ///< an RdmaMtu (EnumValue holds int)
    int m_linkLayer; ///< an RdmaLinkLayer
    int m_atomicCap; ///< an RdmaAtomicCap
    uint32_t m_vendorId;
    uint32_t m_vendorPartId;
    uint64_t m_nodeGuid;
    uint32_t m_firstQpn;

    Ptr<UniformRandomVariable> m_keyRng;
    std::unordered_set<uint32_t> m_issuedKeys;
    uint32_t m_nextQpn{0};
    uint32_t m_nextHandle{1};

    // Alive objects, by handle (QPs by QP number), so that iteration order is deterministic.
    std::map<uint32_t, Ptr<RdmaPd>> m_pds;
    std::map<uint32_t, Ptr<RdmaMr>> m_mrs;
    std::map<uint32_t, Ptr<RdmaCq>> m_cqs;
    std::map<uint32_t, Ptr<RdmaSrq>> m_srqs;
    std::map<uint32_t, Ptr<RdmaQp>> m_qps;
    /// The alive QPs again, by QP number (not owning: m_qps holds the references), for the
    /// lookup of every received packet (LookupQp).
    RdmaQpnTable<RdmaQp> m_qpByNumber;
    std::map<uint32_t, Ptr<RdmaAh>> m_ahs;
    /// Multicast attachments: (QP number, MGID, MLID), ordered so members come in QPN order.
    struct McastAttachment
    {
        uint32_t qpn;
        RdmaGid gid;
        uint16_t lid;
        bool operator<(const McastAttachment& o) const
        {
            return std::tie(qpn, gid, lid) < std::tie(o.qpn, o.gid, o.lid);
        }
    };
    std::set<McastAttachment> m_mcast;
    std::unordered_map<uint32_t, Ptr<RdmaMr>> m_byLkey;
    std::unordered_map<uint32_t, Ptr<RdmaMr>> m_byRkey;

    mutable std::string m_lastError;
    TracedCallback<const RdmaAsyncEvent&> m_asyncEvent;
    TracedCallback<const RdmaGid&, uint16_t, bool> m_mcastAttach;
    QpCallback m_doorbell;
    QpStateCallback m_qpState;
    QpCallback m_qpDestroy;
    GidLookup m_gidLookup;
};

} // namespace ns3

#endif
