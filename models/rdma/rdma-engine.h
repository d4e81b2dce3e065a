// The RDMA packet engine of one HCA: requester, responder and completer for RC, UC and UD
// (IBA vol. 1 §9.7 reliable service, §9.8 unreliable services, §9.9 error handling), between
// the verbs objects of an RdmaDevice and its RdmaLinkPorts.
#ifndef CNUAS_RDMA_ENGINE_H
#define CNUAS_RDMA_ENGINE_H

#include "ib-transport-headers.h"
#include "rdma-congestion-control.h"
#include "rdma-device.h"
#include "rdma-link-port.h"
#include "rdma-qp-context.h"
#include "rdma-qpn-table.h"
#include "rdma-selective-repeat.h"

#include "models/common/sim-clock.h"

#include "ns3/event-id.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <array>
#include <bitset>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

namespace ns3
{

/// Why the engine discarded a received packet (trace source "Drop", GetDropCount).
enum class RdmaDropReason : uint8_t
{
    Malformed,        ///< the transport headers do not parse (IbParseError)
    UnknownQp,        ///< no QP with BTH.DestQP, or QP0/QP1 reached the engine
    BadOpcode,        ///< the opcode is not allowed for the QP's type
    QpState,          ///< the QP cannot take the packet in its state (IBA vol. 1 §10.3.1)
    PkeyMismatch,     ///< BTH.P_Key does not match the QP's P_Key (IBA vol. 1 §10.9.3)
    QkeyMismatch,     ///< UD: DETH.Q_Key is not the QP's Q_Key (IBA vol. 1 §10.2.4)
    OutOfSequence,    ///< PSN ahead of the expected one (RC: NAKed; UC: message dropped)
    Duplicate,        ///< PSN already seen (RC: re-acknowledged / re-executed)
    NoReceiveWqe,     ///< UC/UD: no receive WQE (RC answers with an RNR NAK)
    UnexpectedResponse, ///< a response that matches no outstanding request
    LengthError,      ///< UD: payload larger than the receive buffer / MTU
    AccessError,      ///< UC: the RDMA WRITE failed its R_Key check
    Count,
};

const char* RdmaDropReasonName(RdmaDropReason r);

/// Counters of the engine (one device).
struct RdmaEngineCounters
{
    uint64_t packetsSent = 0;
    uint64_t packetsReceived = 0;
    uint64_t bytesSent = 0;
    uint64_t retransmittedPackets = 0;
    uint64_t timeouts = 0;
    uint64_t acksSent = 0;
    uint64_t naksSent = 0;
    uint64_t rnrNaksSent = 0;
    uint64_t naksReceived = 0;
    uint64_t rnrNaksReceived = 0;
    uint64_t pkeyViolations = 0;
    uint64_t qkeyViolations = 0;
    uint64_t cnpsSent = 0;
    uint64_t txRefused = 0; ///< packets the link port refused (lost; RC recovers)
    uint64_t creditProbes = 0; ///< SEND / WRITE-with-imm started with no credit (§9.7.7.2)
    uint64_t creditStalls = 0; ///< times a requester stopped for lack of credits
    uint64_t sendCompletions = 0;
    uint64_t recvCompletions = 0;
    // Selective repeat (LossRecovery Selective; rdma-engine-recovery.cc).
    uint64_t sacksSent = 0;      ///< responder: NAKs carrying a SACK PSN
    uint64_t sacksReceived = 0;  ///< requester: SACK NAKs taken
    uint64_t sacksIgnored = 0;   ///< requester: SACKs out of window or for unsent PSNs
    uint64_t heldOutOfOrder = 0; ///< responder: requests kept after a gap
    uint64_t rtoExtensions = 0;  ///< RTO_low ran out with more than RtoLowPackets in flight
    uint64_t multicastReceived = 0; ///< multicast packets taken by at least one member QP
    uint64_t multicastNoMember = 0; ///< multicast packets no QP of the port was attached for
};

/**
 * \brief The transport engine of one RdmaDevice.
 *
 * Event driven: a posted send WR rings the device's doorbell, which puts its QP on the
 * engine's ready list; one scheduler event sends packets for the QPs on that list, round
 * robin, while the ports take them (responses first). This is the NIC's transmit scheduler:
 * a port keeps only a short queue ahead of the wire and reports room (TxReady) as a frame
 * starts, so the next QP is picked about when the wire can take its packet. Ports refuse per
 * lane (port and SL: a VL or a priority, which credits or PFC can stop); a full lane holds
 * only the QPs on it. A QP costs nothing while idle and at most one local ACK timer and one
 * wake-up (rate limiter or RNR wait) while busy, so one device can hold thousands of QPs.
 *
 * The engine never includes a link-layer header: it speaks to RdmaLinkPorts (port_num 1 is the
 * first port added) with transport bytes and address vectors.
 */
class RdmaEngine : public Object
{
  public:
    static TypeId GetTypeId();
    RdmaEngine();
    ~RdmaEngine() override;

    /// (qpn, BTH opcode, PSN, transport bytes, retransmission).
    typedef void (*PacketSentCallback)(uint32_t qpn, uint8_t opcode, uint32_t psn,
                                       uint32_t bytes, bool retransmission);
    /// (qpn, BTH opcode, PSN, transport bytes).
    typedef void (*PacketCallback)(uint32_t qpn, uint8_t opcode, uint32_t psn, uint32_t bytes);
    /// (qpn, AETH syndrome, PSN).
    typedef void (*NakCallback)(uint32_t qpn, uint8_t syndrome, uint32_t psn);
    /// (qpn, AETH MSN, credits or 0xFFFFFFFF for unlimited).
    typedef void (*CreditCallback)(uint32_t qpn, uint32_t msn, uint32_t credits);
    /// (qpn, PSN).
    typedef void (*QpPsnCallback)(uint32_t qpn, uint32_t psn);
    /// (completion, true for a receive completion).
    typedef void (*CompletionCallback)(const RdmaWc& wc, bool receive);
    /// (qpn or 0xFFFFFFFF, RdmaDropReason).
    typedef void (*DropCallback)(uint32_t qpn, uint8_t reason);

    /// The verbs side (installs the doorbell and state hooks).
    void SetDevice(Ptr<RdmaDevice> device);
    Ptr<RdmaDevice> GetDevice() const;
    /// Add the next port (port_num 1, 2, ...); the engine takes its received packets.
    void AddPort(Ptr<RdmaLinkPort> port);
    Ptr<RdmaLinkPort> GetPort(uint8_t portNum) const;
    /// The congestion-control policy (default: RdmaCcNone).
    void SetCongestionControl(Ptr<RdmaCongestionControl> cc);
    Ptr<RdmaCongestionControl> GetCongestionControl() const;

    const RdmaEngineCounters& GetCounters() const
    {
        return m_counters;
    }

    uint64_t GetDropCount(RdmaDropReason r) const
    {
        return m_drops[static_cast<size_t>(r)];
    }

    /// QPs that have a context (started or received something and not reset since).
    uint32_t GetNContexts() const
    {
        return static_cast<uint32_t>(m_ctx.size());
    }

    /// The requester state of a QP (Idle if it has no context).
    RdmaReqState GetRequesterState(uint32_t qpn) const;
    /// The responder state of a QP (Idle if it has no context).
    RdmaRespState GetResponderState(uint32_t qpn) const;
    /**
     * Whether the QP has send work posted that has not yet been on the wire once and that the
     * requester will go on sending by itself: a WQE not started (in RTS), or a started one
     * with packets still to send. False in every other state, and while the requester waits
     * on the peer rather than on the wire (an RNR NAK's timer, end-to-end credits) or has
     * stopped on an error: a wait that may not end.
     */
    bool HasUnsentRequests(uint32_t qpn) const;

    /// Hand received transport bytes to the engine (what a port's receive callback does).
    void Receive(Ptr<RdmaLinkPort> port,
                 const uint8_t* data,
                 uint32_t length,
                 const RdmaRxInfo& info);

  protected:
    void DoDispose() override;

  private:
    /// A packet the responder (or the CNP logic) wants sent, queued ahead of requests.
    struct OutPacket
    {
        std::vector<uint8_t> bytes;
        RdmaAhAttr av;
        uint32_t qpn = 0;
        std::unique_ptr<IntStack> intEcho; ///< an ACK's echo of the data packet's INT (HPCC)
    };

    /**
     * A transmit lane: one port and one SL (on RoCE the SL is the priority). A port refuses a
     * lane while its queue for that SL's VL or traffic class is full, which PFC or a lack of
     * link credits can make last; the other lanes go on meanwhile, as a NIC's scheduler
     * arbitrates per priority (802.1Qbb §36.1.3: a pause stops one priority only).
     */
    static uint16_t LaneKey(uint8_t portNum, uint8_t sl)
    {
        return static_cast<uint16_t>(((portNum - 1u) & 15u) << 4 | (sl & 15u));
    }

    /// Lanes a pump turn found full (key LaneKey): nothing more is tried on them in that turn.
    using LaneSet = std::bitset<256>;

    /// The responses waiting for one lane, in the order they were queued.
    struct ResponseLane
    {
        uint16_t key = 0;
        std::deque<OutPacket> packets;
    };

    // ---- engine plumbing (rdma-engine.cc) ----
    RdmaQpContext* Context(Ptr<RdmaQp> qp);
    RdmaQpContext* FindContext(uint32_t qpn);
    void OnDoorbell(Ptr<RdmaQp> qp);
    void OnQpState(Ptr<RdmaQp> qp, RdmaQpState from, RdmaQpState to);
    void OnQpDestroy(Ptr<RdmaQp> qp);
    /// The device's GID lookup: port `portNum` has a GID at `index`.
    bool HasGid(uint8_t portNum, uint8_t index) const;
    void CheckSqDrained(Ptr<RdmaQp> qp);
    void DropContext(uint32_t qpn);
    void Kick(RdmaQpContext& c);
    void SchedulePump();
    void Pump();
    /// EventTail's entry for a deferred pump turn.
    static void RunDeferredPump(void* engine);
    /// Sends the responses of every lane the port takes them on (marks the others full).
    void SendResponses(LaneSet& full);
    /// A response is queued on a lane not in `full`.
    bool ResponseDue(const LaneSet& full) const;
    /// The lane the requester's next packet takes; false if it cannot be told beforehand.
    bool RequesterLane(const RdmaQpContext& c, uint16_t& key) const;
    /// The lane of the QP's READ responses.
    uint16_t ResponderLane(const RdmaQpContext& c) const;
    void OnTxReady();
    Ptr<RdmaLinkPort> PortOf(uint8_t portNum) const;
    /// Build "BTH | ext headers | payload | pad" for `h` (bth PadCnt is set here). A null
    /// `payload` of `len` bytes is zeros: only the headers are built, and the payload and pad
    /// are the packet's zero tail, their count in *zeroTail (RdmaLinkPort::Send).
    static std::vector<uint8_t> BuildPacket(IbTransportHeaders& h,
                                            const uint8_t* payload,
                                            uint32_t len,
                                            uint32_t* zeroTail = nullptr);
    /// `zeroTail` zero bytes follow `bytes` in the packet (BuildPacket).
    bool Transmit(RdmaQpContext& c, std::vector<uint8_t>&& bytes, const RdmaAhAttr& av,
                  uint8_t opcode, uint32_t psn, bool retransmission, uint32_t zeroTail = 0);
    void QueueResponse(RdmaQpContext& c, std::vector<uint8_t>&& bytes, const RdmaAhAttr& av);
    void Drop(uint32_t qpn, RdmaDropReason r);
    void ReceiveNow(Ptr<RdmaLinkPort> port, std::vector<uint8_t> data, RdmaRxInfo info);
    void Dispatch(Ptr<RdmaLinkPort> port,
                  const uint8_t* data,
                  uint32_t length,
                  const RdmaRxInfo& info);
    /// Dispatch for the multicast QPN: to every member QP of the receiving port.
    void DispatchMulticast(Ptr<RdmaLinkPort> port, const IbTransportHeaders& h,
                           const uint8_t* data, uint32_t length, const RdmaRxInfo& info);
    /// Dispatch once the destination QP is known.
    void DispatchToQp(Ptr<RdmaLinkPort> port, const IbTransportHeaders& h, Ptr<RdmaQp> qp,
                      uint32_t qpn, const uint8_t* data, uint32_t length,
                      const RdmaRxInfo& info, uint32_t sackPsn);
    uint16_t QpPkey(const RdmaQp& qp) const;
    void PushSendWc(RdmaQpContext& c, const RdmaWc& wc, bool signaled);
    void PushRecvWc(RdmaQpContext& c, const RdmaWc& wc, bool solicited);
    void MaybeSendCnp(RdmaQpContext& c, const IbTransportHeaders& h, const RdmaRxInfo& info);
    /// Copy [offset, offset+len) of a message described by an SGE list out of / into memory,
    /// checking each SGE's L_Key. Returns the status a failure completes with, or SUCCESS.
    RdmaWcStatus GatherSgl(Ptr<RdmaPd> pd, const std::vector<RdmaSge>& sgl, uint64_t offset,
                           uint8_t* dst, uint64_t len) const;
    /// GatherSgl into `out`, except that what lies in memory that reads as zeros is checked and
    /// not read: `out` is left empty when all of the range does (the caller then sends it as a
    /// zero tail), else it holds the `len` bytes.
    RdmaWcStatus GatherSglUnlessZeros(Ptr<RdmaPd> pd, const std::vector<RdmaSge>& sgl,
                                      uint64_t offset, uint64_t len,
                                      std::vector<uint8_t>& out) const;
    RdmaWcStatus ScatterSgl(Ptr<RdmaPd> pd, const std::vector<RdmaSge>& sgl, uint64_t offset,
                            const uint8_t* src, uint64_t len) const;
    /// Walks [offset, offset+len) of an SGE list piece by piece, each checked for access
    /// (`write` or read) against its MR, calling visit(memory, memory address, bytes, bytes
    /// before it) until a check or a visit fails; LOC_LEN_ERR if the list is too short.
    template <typename Visit>
    RdmaWcStatus ForEachSglPiece(Ptr<RdmaPd> pd, const std::vector<RdmaSge>& sgl, uint64_t offset,
                                 uint64_t len, bool write, Visit visit) const;

    // ---- requester (rdma-requester.cc) ----
    /// Send at most one packet for the QP; true if it has more to send right away.
    bool RequesterStep(RdmaQpContext& c);
    bool StartWqe(RdmaQpContext& c, const RdmaSendWqe& wqe);
    void SendRequestPacket(RdmaQpContext& c, const RdmaSendWqe& wqe, RdmaSendOp& op);
    void SendUdPacket(RdmaQpContext& c, const RdmaSendWqe& wqe);
    uint32_t PacketsFor(const RdmaQpContext& c, RdmaWrOpcode op, uint64_t len) const;
    uint32_t PathMtu(const RdmaQpContext& c) const;
    void WakeRequester(uint32_t qpn);
    /// End-to-end credits (IBA vol. 1 §9.7.7.2): may a message that uses a receive WQE at
    /// the responder start now? Sets WaitCredit (and a probe wake-up) when not.
    bool CreditAllows(RdmaQpContext& c);
    /// Execute a LOCAL_INV work request (no packet); false if the key was refused.
    bool LocalInvalidate(RdmaQpContext& c, const RdmaSendWqe& wqe);

    // ---- completer (rdma-completer.cc) ----
    void CompleterReceive(RdmaQpContext& c, const IbTransportHeaders& h,
                          const uint8_t* payload);
    /// Everything before `psn` is acknowledged.
    void AckThrough(RdmaQpContext& c, uint32_t psnExclusive, Time now);
    void CompleteInOrder(RdmaQpContext& c);
    /// Take the credit count and MSN of an ACK-kind AETH (IBA vol. 1 §9.7.7.2).
    void ApplyCredits(RdmaQpContext& c, const IbAethHeader& aeth);
    void Rewind(RdmaQpContext& c, uint32_t psn);
    void ArmRetryTimer(RdmaQpContext& c);
    void OnRetryTimeout(uint32_t qpn);
    void OnRnrTimerExpired(uint32_t qpn, uint32_t psn);
    /// Complete the oldest WQE with `status` and move the QP to its error state.
    void FailHead(RdmaQpContext& c, RdmaWcStatus status);

    // ---- loss recovery options: RTO and selective repeat (rdma-engine-recovery.cc) ----
    /// The retransmission timeout the next timer of `c` runs for (RtoLow/RtoHigh, or IBA's
    /// local ACK timeout when RtoHigh is 0); zero means no timer.
    Time RetryTimeout(const RdmaQpContext& c) const;
    /// RTO_low expired while more than RtoLowPackets are in flight: wait on to RTO_high.
    bool ExtendRto(RdmaQpContext& c);
    /// Packets a QP may have in flight (0 = no cap): MaxInflightPackets, and in selective
    /// mode no more than the SACK window.
    uint32_t InflightCap() const;
    bool Selective() const
    {
        return m_lossRecovery == RDMA_RECOVERY_SELECTIVE;
    }
    /// Point the requester's cursor at the oldest lost packet to resend; false if none.
    bool PickSelectiveResend(RdmaQpContext& c, uint32_t& resendCount);
    /// A NAK whose AETH is followed by a SACK extension (cumulative PSN in the BTH).
    void SackReceive(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                     uint32_t sackPsn);
    void SelectiveTimeout(RdmaQpContext& c);
    /// Try the transport headers of a NAK with a SACK extension; true and the SACK PSN if so.
    static bool ParseSack(IbTransportHeaders& h, const uint8_t* data, uint32_t length,
                          uint32_t icrcSize, uint32_t& sackPsn);
    void HoldOutOfOrder(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                        const RdmaRxInfo& info);
    void DrainHeld(RdmaQpContext& c);
    void SendSack(RdmaQpContext& c, uint32_t sackPsn);

    // ---- responder (rdma-responder.cc) ----
    void ResponderReceive(RdmaQpContext& c, const IbTransportHeaders& h,
                          const uint8_t* payload, const RdmaRxInfo& info);
    void RcResponder(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                     const RdmaRxInfo& info);
    void UcResponder(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                     const RdmaRxInfo& info);
    void UdResponder(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                     const RdmaRxInfo& info);
    void RcDuplicate(RdmaQpContext& c, const IbTransportHeaders& h);
    void SendAck(RdmaQpContext& c, uint32_t psn);
    void SendNak(RdmaQpContext& c, uint32_t psn, uint8_t syndrome);
    void NoteAckReq(RdmaQpContext& c);
    void FlushAck(uint32_t qpn);
    /// Start answering a READ of [va, va+len) of `mr`, PSNs from firstPsn on: the packets
    /// go one per pump turn (ReadResponseStep). Always true (a memory fault is found, and
    /// NAKed, when the packet that meets it is built).
    bool SendReadResponses(RdmaQpContext& c, Ptr<RdmaMr> mr, uint64_t va, uint32_t len,
                           uint32_t firstPsn);
    uint8_t CreditCode(const RdmaQpContext& c) const;
    /// Outcome of ReadResponseStep.
    enum class ReadStep : uint8_t
    {
        More,     ///< a packet went; more remain
        Done,     ///< nothing more to send for this QP's READs
        PortFull, ///< the port cannot take a packet now
    };
    /// Send the next READ response packet of the QP's oldest READ.
    ReadStep ReadResponseStep(RdmaQpContext& c);
    /// The QP's READs are all answered: release the responses held behind them.
    void ReleaseHeldResponses(RdmaQpContext& c);
    /// Execute an incoming SEND / WRITE packet's data part; returns false after answering
    /// an error.
    bool ResponderData(RdmaQpContext& c, const IbTransportHeaders& h, const uint8_t* payload,
                       const RdmaRxInfo& info, bool reliable);
    /// SEND with invalidate: invalidate the IETH's R_Key (IBA vol. 1 §9.4.1.1, §10.6.7).
    bool RemoteInvalidate(const RdmaQpContext& c, uint32_t rkey);
    void ResponderFatal(RdmaQpContext& c, RdmaEventType ev);
    RdmaAhAttr ReplyAv(const RdmaQpContext& c) const;

    Ptr<RdmaDevice> m_device;
    std::vector<Ptr<RdmaLinkPort>> m_ports;
    std::vector<Ptr<RdmaQp>> m_mcastScratch; ///< DispatchMulticast's member list
    Ptr<RdmaCongestionControl> m_cc;
    /// The INT stack of the packet being dispatched (null: none), for the responder's ACK to
    /// echo and the completer to hand to the congestion control.
    const IntStack* m_rxInt = nullptr;
    /// Echo stacks of ACKs already sent, for the next ACKs to reuse (QueueResponse).
    std::vector<std::unique_ptr<IntStack>> m_spareEchoes;
    std::unordered_map<uint32_t, std::unique_ptr<RdmaQpContext>> m_ctx;
    /// m_ctx's contexts again, by QP number (RdmaQpnTable): the lookup of every packet received
    /// and sent costs one load instead of a hash (a division by the bucket count) and a bucket.
    RdmaQpnTable<RdmaQpContext> m_ctxByQpn;
    /// Contexts dropped while engine code may still hold them; freed by a later event.
    std::vector<std::unique_ptr<RdmaQpContext>> m_graveyard;
    EventId m_buryEvent;
    void Bury();
    std::deque<uint32_t> m_ready;
    /// Responder QPs with READ responses to send; served in turn with m_ready.
    std::deque<uint32_t> m_readReady;
    bool m_readTurn = false;
    /// Responses (ACKs, NAKs, CNPs) by lane; usually one lane.
    std::deque<ResponseLane> m_responseLanes; ///< a deque: lanes never move
    size_t m_responseCount = 0; ///< over all lanes (MaxResponseQueue bounds it)
    /// A pump turn's QPs whose lane was full, in order (scratch, kept to avoid allocation).
    std::vector<uint32_t> m_deferredReady;
    std::vector<uint32_t> m_deferredRead;
    PendingEvent m_pump; ///< asked per packet whether it is still to run (SchedulePump)
    bool m_pumpDeferred = false; ///< a pump turn waits at the end of this event (EventTail)
    RdmaEngineCounters m_counters;
    std::array<uint64_t, static_cast<size_t>(RdmaDropReason::Count)> m_drops{};

    // attributes
    uint32_t m_ackCoalesceCount;
    Time m_ackCoalesceDelay;
    uint32_t m_ackReqEvery;
    Time m_rxProcessingDelay;
    Time m_cnpInterval;
    bool m_ibBecnByCnp = false; ///< IB RC: BECN in an immediate CNP (annex A10)
    uint64_t m_windowBytes;
    uint32_t m_maxResponseQueue;
    uint64_t m_lineRateBps;
    bool m_e2eCredits;
    Time m_creditProbeDelay;
    int m_lossRecovery = RDMA_RECOVERY_GO_BACK_N; ///< an RdmaLossRecovery (EnumValue: int)
    Time m_rtoLow;
    Time m_rtoHigh;
    uint32_t m_rtoLowPackets = 3;
    uint32_t m_maxInflightPackets = 0;
    uint32_t m_sackWindow = 1024;

    // traces
    TracedCallback<uint32_t, uint8_t, uint32_t, uint32_t, bool> m_sentTrace;
    TracedCallback<uint32_t, uint8_t, uint32_t, uint32_t> m_rxTrace;
    TracedCallback<uint32_t, uint32_t> m_retransmitTrace;
    TracedCallback<uint32_t, uint8_t, uint32_t> m_nakSentTrace;
    TracedCallback<uint32_t, uint8_t, uint32_t> m_nakRxTrace;
    TracedCallback<uint32_t, uint32_t> m_timeoutTrace;
    TracedCallback<uint32_t, uint32_t, uint32_t> m_creditTrace;
    TracedCallback<const RdmaWc&, bool> m_completionTrace;
    TracedCallback<uint32_t, uint8_t> m_dropTrace;
};

} // namespace ns3

#endif
