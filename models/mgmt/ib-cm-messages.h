// The communication management messages (IBA vol. 1 ch. 12, MgmtClass 0x07 on QP1): REQ, REP,
// RTU, REJ, DREQ, DREP, SIDR_REQ and SIDR_REP as 256-byte MADs, byte-exact, both ways.
#ifndef CNUAS_IB_CM_MESSAGES_H
#define CNUAS_IB_CM_MESSAGES_H

#include "ib-mad-header.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

/// ClassVersion of the CM class (IBA vol. 1 §12.11: version 2, what the Linux CM sends).
constexpr uint8_t kIbCmClassVersion = 2;

/// Attribute IDs of the CM messages (IBA vol. 1 §12.6, Table 104 "CM attributes").
namespace IbCmAttr
{
constexpr uint16_t ClassPortInfo = 0x0001;
constexpr uint16_t Req = 0x0010;
constexpr uint16_t Mra = 0x0011;
constexpr uint16_t Rej = 0x0012;
constexpr uint16_t Rep = 0x0013;
constexpr uint16_t Rtu = 0x0014;
constexpr uint16_t Dreq = 0x0015;
constexpr uint16_t Drep = 0x0016;
constexpr uint16_t SidrReq = 0x0017;
constexpr uint16_t SidrRep = 0x0018;
} // namespace IbCmAttr

/// REJ reasons used here (IBA vol. 1 §12.6.7.2, Table 109).
namespace IbCmRejReason
{
constexpr uint16_t Timeout = 1;            ///< the REQ's sender gave up waiting (ARI: none)
constexpr uint16_t StaleConnection = 10;
constexpr uint16_t InvalidServiceId = 8;   ///< no listener for the service ID
constexpr uint16_t ConsumerReject = 28;    ///< the application refused (rdma_reject)
} // namespace IbCmRejReason

/// SIDR_REP status (IBA vol. 1 §12.11.2, Table 121).
namespace IbCmSidrStatus
{
constexpr uint8_t Valid = 0;
constexpr uint8_t ServiceIdNotSupported = 1;
constexpr uint8_t Rejected = 2;
} // namespace IbCmSidrStatus

/// Private-data room of each message (IBA vol. 1 Tables 106-120).
constexpr uint32_t kIbCmReqPrivateBytes = 92;
constexpr uint32_t kIbCmRepPrivateBytes = 196;
constexpr uint32_t kIbCmRtuPrivateBytes = 224;
constexpr uint32_t kIbCmRejPrivateBytes = 148;
constexpr uint32_t kIbCmDreqPrivateBytes = 220;
constexpr uint32_t kIbCmDrepPrivateBytes = 224;
constexpr uint32_t kIbCmSidrReqPrivateBytes = 216;
constexpr uint32_t kIbCmSidrRepPrivateBytes = 136;

/// One path of a REQ (primary; the alternate is left empty: no automatic path migration).
struct IbCmPath
{
    uint16_t localLid = 0;
    uint16_t remoteLid = 0;
    std::array<uint8_t, 16> localGid{};
    std::array<uint8_t, 16> remoteGid{};
    uint32_t flowLabel = 0;
    uint8_t packetRate = 0;   ///< enum ibv_rate as the SA encodes it (0: port rate)
    uint8_t trafficClass = 0;
    uint8_t hopLimit = 0;
    uint8_t sl = 0;
    bool subnetLocal = true;
    uint8_t localAckTimeout = 0;
};

/**
 * \brief The fields of any CM message; which ones a message carries is its attribute ID's.
 *
 * Layouts: the kernel's and Wireshark's reading of IBA vol. 1 Tables 106 (REQ), 108 (REJ),
 * 110 (REP), 111 (RTU), 112 (DREQ), 113 (DREP), 119 (SIDR_REQ), 120 (SIDR_REP); offsets below are
 * from the end of the 24-byte common MAD header, multi-bit fields most significant bit first.
 */
struct IbCmMessage
{
    uint16_t attrId = 0;
    uint64_t transactionId = 0;

    uint32_t localCommId = 0;   ///< SIDR: the RequestID
    uint32_t remoteCommId = 0;
    uint64_t serviceId = 0;
    uint64_t localCaGuid = 0;
    uint32_t localQkey = 0;
    uint32_t localQpn = 0;
    uint8_t responderResources = 0;
    uint8_t initiatorDepth = 0;
    uint8_t remoteCmResponseTimeout = 0;
    uint8_t transportServiceType = 0; ///< 0 RC, 1 UC, 3 RD (2 is reserved)
    bool endToEndFlowControl = false;
    uint32_t startingPsn = 0;
    uint8_t localCmResponseTimeout = 0;
    uint8_t retryCount = 0;
    uint16_t pkey = 0xFFFF;
    uint8_t pathMtu = 0;      ///< enum ibv_mtu
    uint8_t rnrRetryCount = 0;
    uint8_t maxCmRetries = 0;
    bool srq = false;
    IbCmPath primary;
    uint8_t targetAckDelay = 0;  ///< REP
    uint8_t failoverAccepted = 0;
    uint8_t messageRejected = 0; ///< REJ: 0 REQ, 1 REP, 2 other
    uint16_t reason = 0;         ///< REJ
    uint8_t sidrStatus = 0;      ///< SIDR_REP
    std::vector<uint8_t> privateData;

    /// 256 bytes: the common header (class 0x07, version 2, method Send) and this message.
    std::array<uint8_t, kIbMadBytes> Encode() const;
    /// False if `mad` is not a CM message this model knows (class, version, attribute).
    static bool Decode(const uint8_t* mad, IbCmMessage& out);
    /// Private-data room of a message with this attribute ID (0: none).
    static uint32_t PrivateDataRoom(uint16_t attrId);
};

const char* IbCmAttrName(uint16_t attrId);

} // namespace ns3

#endif
