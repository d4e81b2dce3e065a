// Message sizes drawn from a piecewise-linear CDF given as a table of points, the way the
// flow-size distributions of data-centre studies (WebSearch, FB_Hadoop) are published and used
// by RDMA congestion-control simulators. The file format is documented in data/cdf/README.md.
#ifndef CNUAS_EMPIRICAL_SIZE_DISTRIBUTION_H
#define CNUAS_EMPIRICAL_SIZE_DISTRIBUTION_H

#include "ns3/random-variable-stream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \brief A RandomVariableStream of message sizes (bytes) from an empirical CDF.
 *
 * The CDF is the table of points (size_i, p_i), sizes and probabilities non-decreasing, the
 * last probability 1: F(x) = p_0 for x = size_0 (an atom of p_0 at the smallest size), linear
 * between neighbouring points, 1 from the last size on. Two points with the same size make an
 * atom there. GetValue() inverts F at a uniform draw and rounds to the nearest byte; every draw
 * uses exactly one uniform number of this stream (AssignStreams / SetStream make runs
 * reproducible).
 *
 * A table that breaks a rule is refused as a whole with a message naming the line and the rule
 * (LoadFile, Parse return false and leave the previous table in place); a stream with no table
 * aborts on its first draw rather than returning a made-up size.
 */
class EmpiricalSizeDistribution : public RandomVariableStream
{
  public:
    struct Point
    {
        double size;        ///< bytes
        double probability; ///< F(size), in [0, 1]
    };

    static TypeId GetTypeId();
    EmpiricalSizeDistribution();
    ~EmpiricalSizeDistribution() override;

    /// Read a CDF file; on failure `error` says "PATH:LINE: what is wrong".
    bool LoadFile(const std::string& path, std::string* error);
    /// Parse CDF text; `name` prefixes error messages.
    bool Parse(const std::string& text, const std::string& name, std::string* error);
    /// Use these points (same rules as the file).
    bool SetPoints(const std::vector<Point>& points, std::string* error);

    const std::vector<Point>& GetPoints() const
    {
        return m_points;
    }

    /// Whether a table is loaded.
    bool IsReady() const
    {
        return !m_points.empty();
    }

    /// F(x) of the table (not of the rounded draws).
    double Cdf(double x) const;
    /// The mean of the piecewise-linear distribution, bytes.
    double Mean() const;
    /// The inverse CDF at u in [0, 1], before rounding.
    double Quantile(double u) const;

    double GetValue() override;
    uint32_t GetInteger() override;

  private:
    std::vector<Point> m_points;
    std::string m_file; ///< attribute "File": loaded when set
    bool SetFile(const std::string& path);
    std::string GetFile() const;
};

} // namespace ns3

#endif
