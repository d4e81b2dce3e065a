#include "ib-aeth-header.h"

#include "ib-wire-bytes.h"

#include <array>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbAethHeader);

namespace
{

// IBA vol. 1 §9.7.5.2, credit count encoding: code -> number of credits (receive WQEs). Each
// power of two from 4 up is followed by 1.5 times itself.
constexpr std::array<uint32_t, 31> kCreditCounts = {
    0,    1,    2,    3,    4,    6,    8,     12,    16,    24,    32,
    48,   64,   96,   128,  192,  256,  384,   512,   768,   1024,  1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};

// IBA vol. 1 §9.7.5.2, RNR NAK timer encoding, in microseconds: code 0 is the longest,
// 655.36 ms; codes 1-31 grow from 0.01 ms to 491.52 ms.
constexpr std::array<uint32_t, 32> kRnrTimerUs = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};

constexpr uint8_t
Syndrome(IbAethKind kind, uint8_t value)
{
    return static_cast<uint8_t>((static_cast<uint8_t>(kind) << 5) | (value & 0x1F));
}

} // namespace

const char*
IbNakCodeName(IbNakCode code)
{
    switch (code)
    {
    case IbNakCode::PsnSequenceError:
        return "PSN sequence error";
    case IbNakCode::InvalidRequest:
        return "invalid request";
    case IbNakCode::RemoteAccessError:
        return "remote access error";
    case IbNakCode::RemoteOperationalError:
        return "remote operational error";
    case IbNakCode::InvalidRdRequest:
        return "invalid RD request";
    }
    return "reserved";
}

TypeId
IbAethHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbAethHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbAethHeader>();
    return tid;
}

void
IbAethHeader::WriteTo(uint8_t* out) const
{
    out[0] = m_syndrome;
    IbWireStore24(out + 1, m_msn);
}

void
IbAethHeader::ReadFrom(const uint8_t* in)
{
    m_syndrome = in[0] & 0x7F;
    m_msn = IbWireLoad24(in + 1);
}

IbAethHeader
IbAethHeader::MakeAck(uint32_t msn, uint8_t creditCode)
{
    IbAethHeader h;
    h.SetSyndrome(Syndrome(IbAethKind::Ack, creditCode));
    h.SetMsn(msn);
    return h;
}

IbAethHeader
IbAethHeader::MakeRnrNak(uint32_t msn, uint8_t timerCode)
{
    IbAethHeader h;
    h.SetSyndrome(Syndrome(IbAethKind::RnrNak, timerCode));
    h.SetMsn(msn);
    return h;
}

IbAethHeader
IbAethHeader::MakeNak(uint32_t msn, IbNakCode code)
{
    IbAethHeader h;
    h.SetSyndrome(Syndrome(IbAethKind::Nak, static_cast<uint8_t>(code)));
    h.SetMsn(msn);
    return h;
}

uint32_t
IbAethHeader::CreditCodeToCount(uint8_t code)
{
    return code < kCreditCounts.size() ? kCreditCounts[code] : kUnlimitedCredits;
}

uint8_t
IbAethHeader::CountToCreditCode(uint32_t credits)
{
    size_t code = 0;
    while (code + 1 < kCreditCounts.size() && kCreditCounts[code + 1] <= credits)
    {
        ++code;
    }
    return static_cast<uint8_t>(code);
}

uint32_t
IbAethHeader::RnrTimerMicroSeconds(uint8_t code)
{
    return kRnrTimerUs[code & 0x1F];
}

uint8_t
IbAethHeader::RnrTimerCodeAtLeast(Time minimum)
{
    // Codes 1-31 are increasing; code 0 is the longest of all.
    for (uint8_t code = 1; code < kRnrTimerUs.size(); ++code)
    {
        if (MicroSeconds(kRnrTimerUs[code]) >= minimum)
        {
            return code;
        }
    }
    return 0;
}

void
IbAethHeader::Print(std::ostream& os) const
{
    os << "AETH ";
    switch (GetKind())
    {
    case IbAethKind::Ack:
        os << "ACK credits=";
        if (GetCreditCode() == kInvalidCreditCode)
        {
            os << "invalid";
        }
        else
        {
            os << GetCredits();
        }
        break;
    case IbAethKind::RnrNak:
        os << "RNR-NAK timer=" << RnrTimerMicroSeconds(GetValue()) << "us";
        break;
    case IbAethKind::Nak:
        os << "NAK " << IbNakCodeName(GetNakCode());
        break;
    case IbAethKind::Reserved:
        os << "reserved syndrome=0x" << std::hex << +m_syndrome << std::dec;
        break;
    }
    os << " MSN=" << m_msn;
}

} // namespace ns3
