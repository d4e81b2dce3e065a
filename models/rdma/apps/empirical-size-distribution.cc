#include "empirical-size-distribution.h"

#include "ns3/abort.h"
#include "ns3/rng-stream.h"
#include "ns3/string.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(EmpiricalSizeDistribution);

TypeId
EmpiricalSizeDistribution::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EmpiricalSizeDistribution")
            .SetParent<RandomVariableStream>()
            .SetGroupName("Cnuas")
            .AddConstructor<EmpiricalSizeDistribution>()
            .AddAttribute("File",
                          "CDF file to load (format: data/cdf/README.md); an invalid file "
                          "is refused with its line and reason.",
                          StringValue(""),
                          MakeStringAccessor(&EmpiricalSizeDistribution::SetFile,
                                             &EmpiricalSizeDistribution::GetFile),
                          MakeStringChecker());
    return tid;
}

EmpiricalSizeDistribution::EmpiricalSizeDistribution() = default;
EmpiricalSizeDistribution::~EmpiricalSizeDistribution() = default;

bool
EmpiricalSizeDistribution::SetFile(const std::string& path)
{
    m_file = path;
    if (path.empty())
    {
        return true;
    }
    std::string err;
    // An attribute setter cannot return a message; a bad file named in a configuration is a
    // configuration error, so it stops the run with the reason instead of going unnoticed.
    NS_ABORT_MSG_UNLESS(LoadFile(path, &err), err);
    return true;
}

std::string
EmpiricalSizeDistribution::GetFile() const
{
    return m_file;
}

bool
EmpiricalSizeDistribution::LoadFile(const std::string& path, std::string* error)
{
    std::ifstream in(path);
    if (!in)
    {
        if (error)
        {
            *error = path + ": cannot open the CDF file";
        }
        return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return Parse(ss.str(), path, error);
}

namespace
{
/// A whole token as a finite double (strtod, and nothing left over).
bool
ToDouble(const std::string& tok, double* out)
{
    if (tok.empty())
    {
        return false;
    }
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(tok.c_str(), &end);
    if (errno != 0 || end != tok.c_str() + tok.size() || !std::isfinite(v))
    {
        return false;
    }
    *out = v;
    return true;
}
} // namespace

bool
EmpiricalSizeDistribution::Parse(const std::string& text, const std::string& name,
                                 std::string* error)
{
    std::vector<Point> pts;
    std::istringstream in(text);
    std::string line;
    int lineNo = 0;
    auto fail = [&](int l, const std::string& why) {
        if (error)
        {
            *error = name + ":" + std::to_string(l) + ": " + why;
        }
        return false;
    };
    std::vector<int> lines;
    while (std::getline(in, line))
    {
        ++lineNo;
        const auto hash = line.find('#');
        if (hash != std::string::npos)
        {
            line.erase(hash);
        }
        std::istringstream ls(line);
        std::vector<std::string> tok;
        std::string t;
        while (ls >> t)
        {
            tok.push_back(t);
        }
        if (tok.empty())
        {
            continue;
        }
        if (tok.size() != 2)
        {
            return fail(lineNo, "expected two columns 'size_bytes cumulative_probability', "
                                "found " + std::to_string(tok.size()));
        }
        Point p{};
        if (!ToDouble(tok[0], &p.size))
        {
            return fail(lineNo, "size '" + tok[0] + "' is not a number");
        }
        if (!ToDouble(tok[1], &p.probability))
        {
            return fail(lineNo, "probability '" + tok[1] + "' is not a number");
        }
        pts.push_back(p);
        lines.push_back(lineNo);
    }
    // The table is taken only if every point passes, so a bad file leaves the old table.
    for (size_t i = 0; i < pts.size(); ++i)
    {
        const Point& p = pts[i];
        if (p.size < 0)
        {
            return fail(lines[i], "size must be >= 0 bytes");
        }
        if (p.size > 4294967295.0)
        {
            return fail(lines[i], "size exceeds 2^32-1 bytes");
        }
        if (p.probability < 0 || p.probability > 1)
        {
            return fail(lines[i], "cumulative probability must be within [0, 1] (write "
                                  "percentages as fractions)");
        }
        if (i > 0 && p.size < pts[i - 1].size)
        {
            return fail(lines[i], "sizes must not decrease");
        }
        if (i > 0 && p.probability < pts[i - 1].probability)
        {
            return fail(lines[i], "cumulative probabilities must not decrease");
        }
    }
    if (pts.empty())
    {
        return fail(lineNo, "no points (a CDF needs at least one 'size probability' line)");
    }
    if (pts.back().probability != 1.0)
    {
        return fail(lines.back(), "the last cumulative probability must be 1, not " +
                                      std::to_string(pts.back().probability));
    }
    m_points = std::move(pts);
    return true;
}

bool
EmpiricalSizeDistribution::SetPoints(const std::vector<Point>& points, std::string* error)
{
    std::ostringstream text;
    text.precision(17);
    for (const auto& p : points)
    {
        text << p.size << ' ' << p.probability << '\n';
    }
    return Parse(text.str(), "points", error);
}

double
EmpiricalSizeDistribution::Cdf(double x) const
{
    NS_ABORT_MSG_IF(m_points.empty(), "EmpiricalSizeDistribution: no CDF loaded");
    if (x < m_points.front().size)
    {
        return 0;
    }
    if (x >= m_points.back().size)
    {
        return 1;
    }
    // The last point whose size is <= x; the segment to its successor holds x.
    auto it = std::upper_bound(m_points.begin(), m_points.end(), x,
                               [](double v, const Point& p) { return v < p.size; });
    const Point& hi = *it;
    const Point& lo = *(it - 1);
    return lo.probability + (hi.probability - lo.probability) * (x - lo.size) / (hi.size - lo.size);
}

double
EmpiricalSizeDistribution::Mean() const
{
    NS_ABORT_MSG_IF(m_points.empty(), "EmpiricalSizeDistribution: no CDF loaded");
    // The atom at the first size, then each segment's mass at its midpoint (uniform density).
    double m = m_points.front().probability * m_points.front().size;
    for (size_t i = 1; i < m_points.size(); ++i)
    {
        const double mass = m_points[i].probability - m_points[i - 1].probability;
        m += mass * 0.5 * (m_points[i].size + m_points[i - 1].size);
    }
    return m;
}

double
EmpiricalSizeDistribution::Quantile(double u) const
{
    NS_ABORT_MSG_IF(m_points.empty(), "EmpiricalSizeDistribution: no CDF loaded");
    if (u <= m_points.front().probability)
    {
        return m_points.front().size;
    }
    // The first point with probability >= u; u lies on the segment that ends there (a segment
    // of zero mass is never chosen because u > the previous point's probability).
    auto it = std::lower_bound(m_points.begin(), m_points.end(), u,
                               [](const Point& p, double v) { return p.probability < v; });
    if (it == m_points.end())
    {
        return m_points.back().size;
    }
    const Point& hi = *it;
    const Point& lo = *(it - 1);
    return lo.size + (hi.size - lo.size) * (u - lo.probability) / (hi.probability - lo.probability);
}

double
EmpiricalSizeDistribution::GetValue()
{
    NS_ABORT_MSG_IF(m_points.empty(),
                    "EmpiricalSizeDistribution: no CDF loaded (set File or call LoadFile)");
    return std::round(Quantile(Peek()->RandU01()));
}

uint32_t
EmpiricalSizeDistribution::GetInteger()
{
    return static_cast<uint32_t>(GetValue());
}

} // namespace ns3
