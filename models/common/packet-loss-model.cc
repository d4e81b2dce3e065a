#include "packet-loss-model.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <cctype>
#include <stdexcept>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(PacketLossModel);

TypeId
PacketLossModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::PacketLossModel")
            .SetParent<ErrorModel>()
            .SetGroupName("Cnuas")
            .AddConstructor<PacketLossModel>()
            .AddAttribute("Mode",
                          "How packets are picked: Random, Burst, EveryNth or List.",
                          EnumValue(RANDOM),
                          MakeEnumAccessor(&PacketLossModel::m_mode),
                          MakeEnumChecker(RANDOM, "Random", BURST, "Burst", EVERY_NTH,
                                          "EveryNth", LIST, "List"))
            .AddAttribute("Action",
                          "What a picked packet suffers: Corrupt (one bit flipped, caught by "
                          "the receiver's CRC) or Drop (lost on the wire).",
                          EnumValue(CORRUPT),
                          MakeEnumAccessor(&PacketLossModel::m_action),
                          MakeEnumChecker(CORRUPT, "Corrupt", DROP, "Drop"))
            .AddAttribute("Rate",
                          "Random and Burst: long-run fraction of packets hit (0..1).",
                          DoubleValue(0.0),
                          MakeDoubleAccessor(&PacketLossModel::m_rate),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("MeanBurstLength",
                          "Burst: mean number of consecutive packets hit (packets, >= 1).",
                          DoubleValue(4.0),
                          MakeDoubleAccessor(&PacketLossModel::m_meanBurst),
                          MakeDoubleChecker<double>(1.0))
            .AddAttribute("N",
                          "EveryNth: hit packets N, 2N, ... counting from 1 (0: none).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&PacketLossModel::m_everyN),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("Indices",
                          "List: comma-separated 0-based packet indices to hit.",
                          StringValue(""),
                          MakeStringAccessor(&PacketLossModel::SetIndices,
                                             &PacketLossModel::GetIndices),
                          MakeStringChecker())
            .AddTraceSource("Hit",
                            "A packet was picked: (its 0-based index).",
                            MakeTraceSourceAccessor(&PacketLossModel::m_hitTrace),
                            "ns3::PacketLossModel::HitCallback");
    return tid;
}

PacketLossModel::PacketLossModel()
    : m_rng(CreateObject<UniformRandomVariable>())
{
}

PacketLossModel::~PacketLossModel() = default;

int64_t
PacketLossModel::AssignStreams(int64_t stream)
{
    m_rng->SetStream(stream);
    return 1;
}

std::set<uint64_t>
PacketLossModel::ParseIndices(const std::string& list)
{
    std::set<uint64_t> out;
    size_t i = 0;
    while (i < list.size())
    {
        while (i < list.size() && (list[i] == ' ' || list[i] == ','))
        {
            ++i;
        }
        if (i >= list.size())
        {
            break;
        }
        if (!std::isdigit(static_cast<unsigned char>(list[i])))
        {
            throw std::invalid_argument("PacketLossModel Indices: not a number at '" +
                                        list.substr(i) + "'");
        }
        uint64_t v = 0;
        while (i < list.size() && std::isdigit(static_cast<unsigned char>(list[i])))
        {
            const uint64_t d = static_cast<uint64_t>(list[i] - '0');
            if (v > (UINT64_MAX - d) / 10)
            {
                throw std::invalid_argument("PacketLossModel Indices: number too large");
            }
            v = v * 10 + d;
            ++i;
        }
        out.insert(v);
        if (i < list.size() && list[i] != ',' && list[i] != ' ')
        {
            throw std::invalid_argument("PacketLossModel Indices: unexpected '" +
                                        list.substr(i, 1) + "'");
        }
    }
    return out;
}

void
PacketLossModel::SetIndices(std::string list)
{
    m_indices = ParseIndices(list); // throws on a bad list: a clear error, not a silent no-op
    m_indicesText = list;
}

std::string
PacketLossModel::GetIndices() const
{
    return m_indicesText;
}

bool
PacketLossModel::DoCorrupt(Ptr<Packet>)
{
    const uint64_t index = m_seen++;
    bool hit = false;
    switch (m_mode)
    {
    case RANDOM:
        hit = m_rate > 0 && m_rng->GetValue() < m_rate;
        break;
    case BURST: {
        // Gilbert-Elliott with a loss-free good state and an all-loss bad state: stationary
        // P(bad) = p / (p + r) = rate with r = 1 / meanBurst.
        const double r = 1.0 / m_meanBurst;
        const double p = m_rate >= 1.0 ? 1.0 : m_rate * r / (1.0 - m_rate);
        if (m_bad)
        {
            m_bad = m_rng->GetValue() >= r;
        }
        else
        {
            m_bad = m_rate > 0 && m_rng->GetValue() < p;
        }
        hit = m_bad;
        break;
    }
    case EVERY_NTH:
        hit = m_everyN != 0 && (index + 1) % m_everyN == 0;
        break;
    case LIST:
        hit = m_indices.count(index) != 0;
        break;
    default:
        break;
    }
    if (hit)
    {
        ++m_hits;
        m_hitTrace(index);
    }
    return hit;
}

void
PacketLossModel::DoReset()
{
    m_seen = 0;
    m_hits = 0;
    m_bad = false;
}

} // namespace ns3
