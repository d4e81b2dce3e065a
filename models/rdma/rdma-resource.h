// What every HCA object (PD, MR, CQ, SRQ, QP, AH) has: the device that created it and a handle.
#ifndef CNUAS_RDMA_RESOURCE_H
#define CNUAS_RDMA_RESOURCE_H

#include "ns3/object.h"
#include "ns3/ptr.h"

#include <cstdint>

namespace ns3
{

class RdmaDevice;

/**
 * \brief Base of the objects an RdmaDevice creates.
 *
 * The device owns its objects; an object points back at its device without owning it. When the
 * object is destroyed through its device (DestroyQp, DeregMr, ...) or the device goes away, the
 * object is detached: it stays valid C++ for whoever still holds a Ptr to it, but every verb on
 * it fails with EINVAL (a libibverbs program would be using freed memory instead).
 */
class RdmaResource : public Object
{
  public:
    static TypeId GetTypeId();
    ~RdmaResource() override;

    /// Handle assigned at creation, unique among all objects of the device (1, 2, ...).
    uint32_t GetHandle() const
    {
        return m_handle;
    }

    /// Created by a device and neither destroyed nor orphaned since.
    bool IsAlive() const
    {
        return m_device != nullptr;
    }

    /// The device, or null when the object is no longer alive.
    Ptr<RdmaDevice> GetDevice() const;

  protected:
    RdmaResource();

    RdmaDevice* m_device{nullptr}; ///< not owned; null once destroyed
    uint32_t m_handle{0};

    friend class RdmaDevice;
};

} // namespace ns3

#endif
