// Protection domain (IBA vol. 1 §10.2.3) and address handle (IBA vol. 1 §10.2.2.2).
#ifndef CNUAS_RDMA_PD_H
#define CNUAS_RDMA_PD_H

#include "rdma-memory.h"
#include "rdma-resource.h"
#include "rdma-types.h"

namespace ns3
{

/**
 * \brief A protection domain: the scope in which QPs, SRQs, AHs and memory regions may be used
 * together (IBA vol. 1 §10.2.3: an L_Key or R_Key is honoured only for a QP of the MR's PD).
 *
 * A PD also names the virtual address space its memory regions live in (the memory of the
 * process, simulated or real, that allocated it), so that one device can serve several
 * consumers.
 */
class RdmaPd : public RdmaResource
{
  public:
    static TypeId GetTypeId();
    RdmaPd();
    ~RdmaPd() override;

    /// The address space of this PD's consumer.
    Ptr<RdmaMemory> GetMemory() const
    {
        return m_memory;
    }

    /// Objects (MRs, QPs, SRQs, AHs) created in this PD and not destroyed; while any exists
    /// RdmaDevice::DeallocPd fails with EBUSY.
    uint32_t GetUseCount() const
    {
        return m_users;
    }

  protected:
    void DoDispose() override;

  private:
    Ptr<RdmaMemory> m_memory;
    uint32_t m_users{0};

    friend class RdmaDevice;
};

/**
 * \brief An address handle: an address vector for UD sends (ibv_create_ah(3), IBA vol. 1
 * §11.2.2.1). A UD send WQE copies the vector when it is posted.
 */
class RdmaAh : public RdmaResource
{
  public:
    static TypeId GetTypeId();
    RdmaAh();
    ~RdmaAh() override;

    const RdmaAhAttr& GetAttr() const
    {
        return m_attr;
    }

    Ptr<RdmaPd> GetPd() const
    {
        return m_pd;
    }

  protected:
    void DoDispose() override;

  private:
    RdmaAhAttr m_attr;
    Ptr<RdmaPd> m_pd;

    friend class RdmaDevice;
};

} // namespace ns3

#endif
