#include "shared-buffer-mmu.h"

#include "eth-net-device.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("SharedBufferMmu");
NS_OBJECT_ENSURE_REGISTERED(SharedBufferMmu);

TypeId
SharedBufferMmu::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::SharedBufferMmu")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<SharedBufferMmu>()
            .AddAttribute("BufferBytes",
                          "Packet buffer of the switch, bytes.",
                          UintegerValue(16 * 1024 * 1024),
                          MakeUintegerAccessor(&SharedBufferMmu::m_bufferBytes),
                          MakeUintegerChecker<uint64_t>(1))
            .AddAttribute("ReservedBytes",
                          "Guaranteed space per ingress port and priority, bytes.",
                          UintegerValue(4096),
                          MakeUintegerAccessor(&SharedBufferMmu::m_reserved),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("HeadroomBytes",
                          "Headroom per ingress port and lossless priority, bytes; 0 = the "
                          "round trip each port needs (802.1Qbb Annex O).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&SharedBufferMmu::m_headroomBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("ThresholdMode",
                          "Shared-space threshold per (port, priority): Static (XoffBytes) or "
                          "Dynamic (Alpha x free pool).",
                          EnumValue(static_cast<int>(ThresholdMode::Dynamic)),
                          MakeEnumAccessor(&SharedBufferMmu::m_thresholdMode),
                          MakeEnumChecker(static_cast<int>(ThresholdMode::Static),
                                          "Static",
                                          static_cast<int>(ThresholdMode::Dynamic),
                                          "Dynamic"))
            .AddAttribute("XoffBytes",
                          "Static mode: shared bytes of a (port, priority) at which PFC XOFF "
                          "is sent (and lossy frames are dropped), bytes.",
                          UintegerValue(256 * 1024),
                          MakeUintegerAccessor(&SharedBufferMmu::m_xoff),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("XonBytes",
                          "Static mode: shared bytes at or below which XON is sent, bytes "
                          "(below XoffBytes).",
                          UintegerValue(128 * 1024),
                          MakeUintegerAccessor(&SharedBufferMmu::m_xon),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("Alpha",
                          "Dynamic mode: threshold = Alpha x (shared pool - shared in use), "
                          "dimensionless.",
                          DoubleValue(0.125),
                          MakeDoubleAccessor(&SharedBufferMmu::m_alpha),
                          MakeDoubleChecker<double>(1.0 / 1024, 64))
            .AddAttribute("ResumeOffsetBytes",
                          "Dynamic mode: XON when shared bytes + this are within the "
                          "threshold, bytes.",
                          UintegerValue(3072),
                          MakeUintegerAccessor(&SharedBufferMmu::m_resumeOffset),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("EcnMode",
                          "ECN marking on egress queues: Off, Red (Kmin/Kmax/Pmax) or "
                          "Threshold (mark above Kmin).",
                          EnumValue(static_cast<int>(EcnMode::Off)),
                          MakeEnumAccessor(&SharedBufferMmu::m_ecnMode),
                          MakeEnumChecker(static_cast<int>(EcnMode::Off),
                                          "Off",
                                          static_cast<int>(EcnMode::Red),
                                          "Red",
                                          static_cast<int>(EcnMode::Threshold),
                                          "Threshold"))
            .AddAttribute("KminBytes",
                          "ECN: queue length below which nothing is marked (Threshold mode: "
                          "the threshold), bytes.",
                          UintegerValue(100 * 1000),
                          MakeUintegerAccessor(&SharedBufferMmu::m_kmin),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("KmaxBytes",
                          "ECN: queue length above which everything is marked, bytes.",
                          UintegerValue(400 * 1000),
                          MakeUintegerAccessor(&SharedBufferMmu::m_kmax),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("Pmax",
                          "ECN: marking probability at Kmax, 0..1.",
                          DoubleValue(0.2),
                          MakeDoubleAccessor(&SharedBufferMmu::m_pmax),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("EcnAtDequeue",
                          "Mark when a frame leaves the egress queue (queue behind it) instead "
                          "of when it joins it (queue ahead of it).",
                          BooleanValue(false),
                          MakeBooleanAccessor(&SharedBufferMmu::m_ecnAtDequeue),
                          MakeBooleanChecker())
            .AddAttribute("EcnRateMap",
                          "ECN thresholds by egress port speed, \"RATE KMIN KMAX PMAX; ...\" "
                          "(RATE e.g. 400Gbps, KMIN/KMAX bytes, PMAX 0..1); ports of other "
                          "speeds use KminBytes/KmaxBytes/Pmax. Applied at Setup.",
                          StringValue(""),
                          MakeStringAccessor(&SharedBufferMmu::m_ecnRateMap),
                          MakeStringChecker());
    return tid;
}

SharedBufferMmu::SharedBufferMmu()
    : m_bufferBytes(16 * 1024 * 1024),
      m_reserved(4096),
      m_headroomBytes(0),
      m_thresholdMode(static_cast<int>(ThresholdMode::Dynamic)),
      m_xoff(256 * 1024),
      m_xon(128 * 1024),
      m_alpha(0.125),
      m_resumeOffset(3072),
      m_ecnMode(static_cast<int>(EcnMode::Off)),
      m_kmin(100000),
      m_kmax(400000),
      m_pmax(0.2),
      m_ecnAtDequeue(false),
      m_rng(CreateObject<UniformRandomVariable>())
{
}

void
SharedBufferMmu::DoDispose()
{
    m_rng = nullptr;
    Object::DoDispose();
}

int64_t
SharedBufferMmu::AssignStreams(int64_t stream)
{
    m_rng->SetStream(stream);
    return 1;
}

void
SharedBufferMmu::Setup(const std::vector<EthNetDevice*>& ports)
{
    m_ports.assign(ports.size(), PortAcct());
    uint64_t carved = 0;
    for (size_t i = 0; i < ports.size(); ++i)
    {
        PortAcct& a = m_ports[i];
        a.pfcMask = 0;
        for (uint8_t p = 0; p < 8; ++p)
        {
            if (ports[i]->IsPfcEnabled(p))
            {
                a.pfcMask |= static_cast<uint8_t>(1u << p);
            }
        }
        a.headroomNeed = ports[i]->HeadroomNeeded();
        a.headroom = m_headroomBytes > 0 ? m_headroomBytes : a.headroomNeed;
        carved += 8 * m_reserved + __builtin_popcount(a.pfcMask) * a.headroom;
    }
    m_pool = carved < m_bufferBytes ? m_bufferBytes - carved : 0;
    m_setUp = true;

    std::vector<EcnRateEntry> map;
    ParseEcnRateMap(m_ecnRateMap, &map); // a bad map is reported by Validate
    m_portEcn.assign(ports.size(), EcnSet{m_kmin, m_kmax, m_pmax});
    for (size_t i = 0; i < ports.size(); ++i)
    {
        const uint64_t bps = ports[i]->GetDataRate().GetBitRate();
        for (const EcnRateEntry& e : map)
        {
            if (e.rateBps == bps)
            {
                m_portEcn[i] = EcnSet{e.kminBytes, e.kmaxBytes, e.pmax};
            }
        }
    }
}

std::string
SharedBufferMmu::ParseEcnRateMap(const std::string& text, std::vector<EcnRateEntry>* out)
{
    out->clear();
    std::istringstream all(text);
    std::string item;
    while (std::getline(all, item, ';'))
    {
        std::istringstream s(item);
        std::string rate;
        EcnRateEntry e;
        if (!(s >> rate))
        {
            continue; // empty item (e.g. a trailing ';')
        }
        std::string extra;
        if (!(s >> e.kminBytes >> e.kmaxBytes >> e.pmax) || (s >> extra))
        {
            return "EcnRateMap entry '" + item + "' is not 'RATE KMIN KMAX PMAX'";
        }
        // The rate: a number of bit/s with an optional bps/Kbps/Mbps/Gbps/Tbps unit.
        char* end = nullptr;
        const double v = std::strtod(rate.c_str(), &end);
        const std::string unit(end);
        const std::pair<const char*, double> units[] = {
            {"", 1}, {"bps", 1}, {"Kbps", 1e3}, {"Mbps", 1e6}, {"Gbps", 1e9}, {"Tbps", 1e12}};
        bool known = false;
        for (const auto& [name, mult] : units)
        {
            if (unit == name)
            {
                e.rateBps = static_cast<uint64_t>(std::llround(v * mult));
                known = true;
            }
        }
        if (!known || end == rate.c_str() || !(v > 0))
        {
            return "EcnRateMap rate '" + rate + "' is not a rate (e.g. 100Gbps)";
        }
        if (e.pmax < 0 || e.pmax > 1)
        {
            return "EcnRateMap entry '" + item + "': Pmax is not within 0..1";
        }
        out->push_back(e);
    }
    return "";
}

std::string
SharedBufferMmu::Validate() const
{
    std::ostringstream err;
    if (m_ecnMode == static_cast<int>(EcnMode::Red) && m_kmin > m_kmax)
    {
        err << "ECN Kmin " << m_kmin << " bytes is above Kmax " << m_kmax << " bytes";
        return err.str();
    }
    std::vector<EcnRateEntry> map;
    const std::string mapError = ParseEcnRateMap(m_ecnRateMap, &map);
    if (!mapError.empty())
    {
        return mapError;
    }
    for (const EcnRateEntry& e : map)
    {
        if (m_ecnMode == static_cast<int>(EcnMode::Red) && e.kminBytes > e.kmaxBytes)
        {
            err << "ECN Kmin " << e.kminBytes << " bytes is above Kmax " << e.kmaxBytes
                << " bytes for " << e.rateBps / 1e9 << " Gb/s ports (EcnRateMap)";
            return err.str();
        }
    }
    if (m_thresholdMode == static_cast<int>(ThresholdMode::Static) && m_xon >= m_xoff)
    {
        err << "XonBytes " << m_xon << " is not below XoffBytes " << m_xoff
            << " (XOFF must be above XON)";
        return err.str();
    }
    for (size_t i = 0; i < m_ports.size(); ++i)
    {
        const PortAcct& a = m_ports[i];
        if (a.pfcMask && a.headroom < a.headroomNeed)
        {
            err << "port " << i + 1 << ": HeadroomBytes " << a.headroom
                << " is less than the PFC round trip needs (" << a.headroomNeed
                << " bytes for its rate, cable and MTU, 802.1Qbb Annex O)";
            return err.str();
        }
    }
    if (m_setUp && m_pool == 0)
    {
        err << "BufferBytes " << m_bufferBytes
            << " leaves no shared pool after reserved and headroom space";
    }
    return err.str();
}

uint64_t
SharedBufferMmu::Threshold(uint16_t, uint8_t) const
{
    if (m_thresholdMode == static_cast<int>(ThresholdMode::Static))
    {
        return m_xoff;
    }
    const uint64_t free = m_pool > m_sharedUsed ? m_pool - m_sharedUsed : 0;
    return static_cast<uint64_t>(m_alpha * static_cast<double>(free));
}

uint64_t
SharedBufferMmu::GetIngressBytes(uint16_t port, uint8_t prio) const
{
    const PortAcct& a = m_ports.at(port);
    return a.rsv[prio] + a.shared[prio] + a.hdrm[prio];
}

bool
SharedBufferMmu::Admit(uint16_t port, uint8_t prio, uint32_t bytes, bool lossless,
                       uint8_t* bucket, bool* dropForHeadroom)
{
    PortAcct& a = m_ports[port];
    if (a.rsv[prio] + bytes <= m_reserved)
    {
        a.rsv[prio] += bytes;
        *bucket = Reserved;
        return true;
    }
    // Once a lossless queue has spilled into headroom it stays there until XON: new bytes must
    // not overtake the pause by sneaking back into shared space.
    if ((!lossless || a.hdrm[prio] == 0) && a.shared[prio] + bytes <= Threshold(port, prio) &&
        m_sharedUsed + bytes <= m_pool)
    {
        a.shared[prio] += bytes;
        m_sharedUsed += bytes;
        m_maxSharedUsed = std::max(m_maxSharedUsed, m_sharedUsed);
        *bucket = Shared;
        return true;
    }
    if (lossless && a.hdrm[prio] + bytes <= a.headroom)
    {
        a.hdrm[prio] += bytes;
        m_maxHdrmUsed = std::max(m_maxHdrmUsed, a.hdrm[prio]);
        *bucket = Headroom;
        return true;
    }
    *dropForHeadroom = lossless;
    return false;
}

void
SharedBufferMmu::Release(uint16_t port, uint8_t prio, uint32_t bytes, uint8_t bucket)
{
    PortAcct& a = m_ports[port];
    switch (bucket)
    {
    case Reserved:
        a.rsv[prio] -= bytes;
        break;
    case Shared:
        a.shared[prio] -= bytes;
        m_sharedUsed -= bytes;
        break;
    default:
        a.hdrm[prio] -= bytes;
        break;
    }
}

bool
SharedBufferMmu::ShouldPause(uint16_t port, uint8_t prio) const
{
    const PortAcct& a = m_ports[port];
    return a.hdrm[prio] > 0 || a.shared[prio] >= Threshold(port, prio);
}

bool
SharedBufferMmu::ShouldResume(uint16_t port, uint8_t prio) const
{
    const PortAcct& a = m_ports[port];
    if (a.hdrm[prio] > 0)
    {
        return false;
    }
    if (a.shared[prio] == 0)
    {
        return true;
    }
    if (m_thresholdMode == static_cast<int>(ThresholdMode::Static))
    {
        return a.shared[prio] <= m_xon;
    }
    return a.shared[prio] + m_resumeOffset <= Threshold(port, prio);
}

double
SharedBufferMmu::Probability(uint64_t q, const EcnSet& e) const
{
    switch (static_cast<EcnMode>(m_ecnMode))
    {
    case EcnMode::Off:
        return 0.0;
    case EcnMode::Threshold:
        return q > e.kmin ? 1.0 : 0.0;
    case EcnMode::Red:
        if (q <= e.kmin)
        {
            return 0.0;
        }
        if (q > e.kmax)
        {
            return 1.0;
        }
        if (e.kmax == e.kmin)
        {
            return e.pmax;
        }
        return e.pmax * static_cast<double>(q - e.kmin) / static_cast<double>(e.kmax - e.kmin);
    }
    return 0.0;
}

double
SharedBufferMmu::MarkProbability(uint64_t q) const
{
    return Probability(q, EcnSet{m_kmin, m_kmax, m_pmax});
}

double
SharedBufferMmu::MarkProbability(uint64_t q, uint16_t port) const
{
    return port < m_portEcn.size() ? Probability(q, m_portEcn[port]) : MarkProbability(q);
}

bool
SharedBufferMmu::ShouldMark(uint64_t queueBytes)
{
    return ShouldMark(queueBytes, UINT16_MAX);
}

bool
SharedBufferMmu::ShouldMark(uint64_t queueBytes, uint16_t port)
{
    const double p = MarkProbability(queueBytes, port);
    if (p <= 0.0)
    {
        return false;
    }
    if (p >= 1.0)
    {
        return true;
    }
    return m_rng->GetValue() < p;
}

} // namespace ns3
