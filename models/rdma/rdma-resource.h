// What every HCA object (PD, MR, CQ, SRQ, QP, AH) has: the device that created it and a handle.
#ifndef CNUAS_RDMA_RESOURCE_H
#define CNUAS_RDMA_RESOURCE_H

#include "ns3/object.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <cstddef>
#include <vector>

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

/**
 * Posts a list of work requests one by one, stopping at the first refused, as ibv_post_send and
 * ibv_post_recv do with their linked lists: returns that request's errno and its index in
 * `badWr`, or 0 when all were posted.
 */
template <typename Wr, typename PostOne>
int
RdmaPostEach(const std::vector<Wr>& wrs, std::size_t* badWr, PostOne&& postOne)
{
    for (std::size_t i = 0; i < wrs.size(); ++i)
    {
        const int r = postOne(wrs[i]);
        if (r != 0)
        {
            if (badWr)
            {
                *badWr = i;
            }
            return r;
        }
    }
    return 0;
}

} // namespace ns3

#endif
