// The communication manager of one channel-adapter port (IBA vol. 1 ch. 12): the REQ / REP /
// RTU / REJ / DREQ / DREP handshakes of connected QPs and SIDR for UD service lookup, as CM
// MADs (class 0x07) to and from the port's QP1. Used on InfiniBand (LID-routed GMPs) and on
// RoCE (the same MADs in RoCEv2 to QP1, as RoCE adapters send them).
#ifndef CNUAS_IB_CM_AGENT_H
#define CNUAS_IB_CM_AGENT_H

#include "ib-cm-messages.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <array>
#include <cstdint>
#include <map>

namespace ns3
{

/// Where a CM MAD comes from or goes: the peer port's QP1 (by LID on InfiniBand, by GID on RoCE).
struct IbCmAddress
{
    uint16_t lid = 0;
    uint8_t sl = 0;
    bool global = false;
    std::array<uint8_t, 16> gid{};
};

/// What happened to a connection (IBA vol. 1 §12.9 state machine, seen by its consumer).
enum class IbCmEventType : uint8_t
{
    ReqReceived,     ///< passive side: a REQ for a listened service ID (a new connection)
    RepReceived,     ///< active side: the REP (the consumer moves its QP to RTR/RTS, then RTU)
    RtuReceived,     ///< passive side: established
    RejReceived,     ///< the peer refused (msg.reason)
    DreqReceived,    ///< the peer disconnects (the consumer answers with DREP)
    DrepReceived,    ///< our DREQ was answered: disconnected
    Timeout,         ///< REQ, REP or DREQ unanswered after MaxCmRetries (msg.attrId: which)
    SidrReqReceived, ///< passive side: a SIDR_REQ for a listened service ID
    SidrRepReceived, ///< active side: the SIDR_REP (msg.sidrStatus, QPN, Q_Key)
};
const char* IbCmEventTypeName(IbCmEventType t);

struct IbCmEvent
{
    IbCmEventType type;
    uint32_t commId = 0; ///< the local communication ID of the connection
    IbCmMessage msg;     ///< the message that caused it (for Timeout: the one unanswered)
    IbCmAddress from;    ///< where it came from (the peer's port)
};

/// What an agent counted since it started.
struct IbCmCounters
{
    uint64_t sent = 0;          ///< CM MADs sent (retransmissions included)
    uint64_t received = 0;      ///< CM MADs taken
    uint64_t retransmitted = 0; ///< REQ/REP/DREQ/SIDR_REQ sent again after a timeout
    uint64_t duplicates = 0;    ///< REQ/REP/DREQ seen again and answered again
    uint64_t noListener = 0;    ///< REQ/SIDR_REQ for a service ID nobody listens on (REJ 8)
    uint64_t unmatched = 0;     ///< messages for no connection of this agent (dropped)
    uint64_t malformed = 0;     ///< not a CM message this model knows (dropped)
    uint64_t timeouts = 0;      ///< handshakes given up
};

/**
 * \brief One port's CM: connection state per local communication ID, listeners by service ID.
 *
 * The consumer (the rdma_cm of an emulated host, EmuCmService) drives the active side with
 * SendReq / SendRtu, the passive side with Listen / SendRep / SendRej, and disconnection with
 * SendDreq / SendDrep; it learns what the peer did through the EventCallback of the listener
 * or connection. The QPs themselves are the consumer's: the agent only carries their
 * parameters (QPN, starting PSN, path, resources).
 *
 * Retries (IBA vol. 1 §12.4): a REQ, REP, DREQ or SIDR_REQ unanswered within
 * 4.096 us x 2^ResponseTimeout is sent again, MaxRetries times, then the connection times out
 * (a REQ's sender also sends a REJ with reason 1, Timeout, §12.9.5.1). A repeated REQ
 * (same remote communication ID and CA GUID) is answered with the REP again, a repeated REP
 * with the RTU, a DREQ for a connection already gone with a DREP (§12.9.6). A REQ or SIDR_REQ
 * for a service ID nobody listens on gets REJ reason 8 (Invalid Service ID) or SIDR status 1.
 *
 * Not modelled: MRA, LAP/APR (alternate paths), RD, ClassPortInfo redirection; such MADs are
 * counted as malformed.
 *
 * Sending and receiving MADs is the port's: SetSendCallback gives the agent a way to put a
 * 256-byte MAD on QP1 toward an address, and the port hands received CM MADs to Receive.
 */
class IbCmAgent : public Object
{
  public:
    static TypeId GetTypeId();
    IbCmAgent();
    ~IbCmAgent() override;

    typedef Callback<bool, const uint8_t*, const IbCmAddress&> SendCallback;
    typedef Callback<void, const IbCmEvent&> EventCallback;

    void SetSendCallback(SendCallback cb);
    /// The port's CA GUID (REQ/REP LocalCAGUID) and the seed of its communication IDs.
    void SetCaGuid(uint64_t guid);
    uint64_t GetCaGuid() const
    {
        return m_caGuid;
    }
    /// A CM MAD that arrived on the port's QP1 from `from`.
    void Receive(const uint8_t* mad, const IbCmAddress& from);

    /// Listen for REQ and SIDR_REQ to `serviceId`. False if someone already does.
    bool Listen(uint64_t serviceId, EventCallback cb);
    void StopListening(uint64_t serviceId);

    /**
     * Active side: sends `req` (attribute REQ or SIDR_REQ; LocalCommID, TransactionID and the
     * retry fields are set here) to `to`. Returns the new connection's local communication ID;
     * its events go to `cb`.
     */
    uint32_t SendReq(IbCmMessage req, const IbCmAddress& to, EventCallback cb);
    /// Who is told about a connection from now on (a REQ's listener hands it to its new owner).
    void SetConnectionCallback(uint32_t commId, EventCallback cb);

    /// Passive side, after ReqReceived: the REP (LocalQPN, StartingPSN, resources; the rest is
    /// filled here). False if the connection is not waiting for one.
    bool SendRep(uint32_t commId, IbCmMessage rep);
    /// Active side, after RepReceived: the RTU; the connection is established.
    bool SendRtu(uint32_t commId, const std::vector<uint8_t>& privateData);
    /// Refuse a REQ received (messageRejected 0) or a REP received (1) with `reason`.
    bool SendRej(uint32_t commId, uint16_t reason, const std::vector<uint8_t>& privateData);
    /// Passive side of SIDR, after SidrReqReceived: the answer; the lookup is over.
    bool SendSidrRep(uint32_t commId, uint8_t status, uint32_t qpn, uint32_t qkey,
                     const std::vector<uint8_t>& privateData);
    /// Start disconnecting an established connection.
    bool SendDreq(uint32_t commId, const std::vector<uint8_t>& privateData);
    /// Answer a DREQ received: the connection is gone.
    bool SendDrep(uint32_t commId, const std::vector<uint8_t>& privateData);
    /**
     * The consumer is gone (as ib_destroy_cm_id): a handshake under way is refused (REJ,
     * Timeout when the consumer sent the REQ, else Consumer Reject... as the kernel does), an
     * established connection gets a DREQ (sent once, not retried), a DREQ received its DREP;
     * then the agent forgets the connection.
     */
    void Destroy(uint32_t commId);

    /// Whether a connection is known (not yet disconnected or forgotten).
    bool HasConnection(uint32_t commId) const
    {
        return m_conns.count(commId) != 0;
    }
    size_t GetConnectionCount() const
    {
        return m_conns.size();
    }
    const IbCmCounters& GetCounters() const
    {
        return m_counters;
    }

    /// MadTx / MadRx: (attribute ID, local communication ID, the 256 bytes).
    typedef void (*MadTracedCallback)(uint16_t attrId, uint32_t commId, const uint8_t* mad);

  protected:
    void DoDispose() override;

  private:
    enum class State : uint8_t
    {
        ReqSent,
        ReqRcvd,
        RepSent,
        RepRcvd,
        Established,
        DreqSent,
        DreqRcvd,
        SidrReqSent,
        SidrReqRcvd,
    };
    struct Conn
    {
        State state;
        IbCmAddress peer;
        uint32_t remoteCommId = 0;
        uint64_t remoteCaGuid = 0;
        uint64_t transactionId = 0;
        uint64_t serviceId = 0;
        uint32_t remoteQpn = 0;
        IbCmMessage lastSent; ///< what a retry or a duplicate's answer repeats
        uint32_t retriesLeft = 0;
        EventId timer;
        EventCallback cb;
    };

    uint32_t NewCommId();
    uint64_t NewTransactionId();
    bool Send(Conn& c, const IbCmMessage& m, uint32_t commId);
    void Arm(uint32_t commId);
    void OnTimeout(uint32_t commId);
    void Notify(uint32_t commId, IbCmEventType type, const IbCmMessage& m, const IbCmAddress& from);
    void Forget(uint32_t commId);
    void Reject(const IbCmMessage& req, const IbCmAddress& to, uint16_t reason, uint8_t which);
    Conn* Find(uint32_t commId);
    Time ResponseWait() const;

    SendCallback m_send;
    uint64_t m_caGuid = 0;
    uint32_t m_nextCommId = 1;
    uint64_t m_nextTid = 1;
    std::map<uint64_t, EventCallback> m_listeners;
    std::map<uint32_t, Conn> m_conns;
    IbCmCounters m_counters;
    // Attributes.
    uint8_t m_responseTimeout;
    uint8_t m_maxRetries;
    TracedCallback<uint16_t, uint32_t, const uint8_t*> m_txTrace;
    TracedCallback<uint16_t, uint32_t, const uint8_t*> m_rxTrace;
};

} // namespace ns3

#endif
