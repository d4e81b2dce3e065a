// ACK Extended Transport Header, carried by every RC response: acknowledgments, NAKs, RDMA READ
// responses (first, last, only) and atomic acknowledgments. IBA vol. 1 §9.3.5 (AETH) and
// §9.7.5.2 (the syndrome's encoding: ACK with credit count, RNR NAK with timer, NAK codes).
#ifndef CNUAS_IB_AETH_HEADER_H
#define CNUAS_IB_AETH_HEADER_H

#include "models/common/fixed-size-header.h"

#include "ns3/nstime.h"

#include <cstdint>

namespace ns3
{

/// What an AETH says, from syndrome bits 6:5 (IBA vol. 1 §9.7.5.2).
enum class IbAethKind : uint8_t
{
    Ack = 0,      ///< 00: ACK; the low 5 bits are the credit count
    RnrNak = 1,   ///< 01: Receiver Not Ready NAK; the low 5 bits are the RNR timer
    Reserved = 2, ///< 10: reserved
    Nak = 3,      ///< 11: NAK; the low 5 bits are the NAK code
};

/// NAK codes, the low 5 bits of a NAK syndrome (IBA vol. 1 §9.7.5.2). Values 5-31 are reserved.
enum class IbNakCode : uint8_t
{
    PsnSequenceError = 0,
    InvalidRequest = 1,
    RemoteAccessError = 2,
    RemoteOperationalError = 3,
    InvalidRdRequest = 4,
};

/// The name of a NAK code as the spec writes it ("PSN sequence error"), "reserved" for 5-31.
const char* IbNakCodeName(IbNakCode code);

/**
 * \brief The AETH, serialized byte-exactly (big-endian, IBA vol. 1 §9.3.5).
 *
 * Layout: byte 0 Syndrome (bit 7 reserved, bits 6:5 kind, bits 4:0 value); bytes 1-3 MSN.
 * The reserved syndrome bit is written as zero and ignored on read.
 *
 * The 5-bit value means (IBA vol. 1 §9.7.5.2):
 *  * ACK: the credit count, a logarithmic code of the receive WQEs the responder has available
 *    (CreditCodeToCount); code 31 means "invalid": the responder does not do end-to-end flow
 *    control (e.g. it uses a shared receive queue);
 *  * RNR NAK: the minimum time the requester waits before retrying (RnrTimerMicroSeconds);
 *  * NAK: an IbNakCode.
 */
class IbAethHeader : public FixedSizeHeader<IbAethHeader, 4>
{
  public:
    /// Largest value of the 24-bit MSN field.
    static constexpr uint32_t kMaxMsn = 0xFFFFFF;
    /// Largest value of the 5-bit credit count / timer / NAK code.
    static constexpr uint8_t kMaxValue = 0x1F;
    /// Credit count code that carries no credit information (IBA vol. 1 §9.7.5.2).
    static constexpr uint8_t kInvalidCreditCode = 0x1F;
    /// CreditCodeToCount of kInvalidCreditCode: no end-to-end flow-control limit.
    static constexpr uint32_t kUnlimitedCredits = 0xFFFFFFFF;
    /// Largest credit count a code can say (code 30).
    static constexpr uint32_t kMaxCredits = 32768;

    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;

    /// Serialize into 4 raw bytes (the hot path that does not go through a Buffer).
    void WriteTo(uint8_t* out) const;
    /// Parse 4 raw bytes.
    void ReadFrom(const uint8_t* in);

    /// An ACK with MSN msn and credit count code creditCode (kInvalidCreditCode: none).
    static IbAethHeader MakeAck(uint32_t msn, uint8_t creditCode = kInvalidCreditCode);
    /// An RNR NAK with MSN msn asking the requester to wait at least timer code timerCode.
    static IbAethHeader MakeRnrNak(uint32_t msn, uint8_t timerCode);
    /// A NAK with MSN msn and the given code.
    static IbAethHeader MakeNak(uint32_t msn, IbNakCode code);

    /// The whole syndrome byte (the reserved bit 7 always reads as zero).
    uint8_t GetSyndrome() const { return m_syndrome; }
    void SetSyndrome(uint8_t s) { m_syndrome = s & 0x7F; }
    uint32_t GetMsn() const { return m_msn; }
    void SetMsn(uint32_t msn) { m_msn = msn & kMaxMsn; }

    IbAethKind GetKind() const { return static_cast<IbAethKind>((m_syndrome >> 5) & 0x03); }
    /// Syndrome bits 4:0: credit count, RNR timer or NAK code depending on GetKind().
    uint8_t GetValue() const { return m_syndrome & kMaxValue; }
    bool IsAck() const { return GetKind() == IbAethKind::Ack; }
    bool IsRnrNak() const { return GetKind() == IbAethKind::RnrNak; }
    bool IsNak() const { return GetKind() == IbAethKind::Nak; }

    /// ACK: the credit count code. Meaningless for other kinds.
    uint8_t GetCreditCode() const { return GetValue(); }
    /// ACK: the credits the code stands for (kUnlimitedCredits for kInvalidCreditCode).
    uint32_t GetCredits() const { return CreditCodeToCount(GetValue()); }
    /// RNR NAK: the RNR timer code. Meaningless for other kinds.
    uint8_t GetRnrTimerCode() const { return GetValue(); }
    /// RNR NAK: the delay the timer code stands for.
    Time GetRnrDelay() const { return MicroSeconds(RnrTimerMicroSeconds(GetValue())); }
    /// NAK: the NAK code (may be a reserved value 5-31). Meaningless for other kinds.
    IbNakCode GetNakCode() const { return static_cast<IbNakCode>(GetValue()); }

    /// Credits a credit count code stands for: 0, 1, 2, 3, 4, 6, 8, 12, ... 32768 for codes
    /// 0-30 (IBA vol. 1 §9.7.5.2, credit count encoding); kUnlimitedCredits for 31 and above.
    static uint32_t CreditCodeToCount(uint8_t code);
    /// The largest code whose count does not exceed credits: a responder never advertises more
    /// receive WQEs than it has. 32768 or more gives code 30.
    static uint8_t CountToCreditCode(uint32_t credits);
    /// The RNR NAK timer of a code in microseconds: code 0 is 655.36 ms, codes 1-31 run from
    /// 0.01 ms to 491.52 ms (IBA vol. 1 §9.7.5.2, RNR NAK timer encoding). Codes above 31 are
    /// taken modulo 32.
    static uint32_t RnrTimerMicroSeconds(uint8_t code);
    /// The smallest timer code whose delay is at least minimum (code 0, the longest, when
    /// minimum exceeds 491.52 ms).
    static uint8_t RnrTimerCodeAtLeast(Time minimum);

  private:
    uint8_t m_syndrome{0};
    uint32_t m_msn{0};
};

} // namespace ns3

#endif
