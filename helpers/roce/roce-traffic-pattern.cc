#include "roce-traffic-pattern.h"

#include "helpers/formats/parse-util.h"
#include "models/rdma/apps/empirical-size-distribution.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace ns3
{

RocePattern
ParseRocePattern(const std::string& name)
{
    if (name == "all-to-all")
    {
        return RocePattern::AllToAll;
    }
    if (name == "permutation")
    {
        return RocePattern::Permutation;
    }
    if (name == "incast")
    {
        return RocePattern::Incast;
    }
    throw std::invalid_argument("pattern must be all-to-all, permutation or incast, not '" +
                                name + "'");
}

RoceTraffic
MakeRoceTraffic(const RoceTrafficSpec& spec)
{
    if (spec.hosts < 2)
    {
        throw std::invalid_argument("traffic needs at least two hosts");
    }
    if (!(spec.load > 0 && spec.load <= 1))
    {
        throw std::invalid_argument("load must be in (0, 1]");
    }
    if (!(spec.linkBps > 0) || !spec.duration.IsStrictlyPositive())
    {
        throw std::invalid_argument("traffic needs a positive link rate and duration");
    }
    Ptr<EmpiricalSizeDistribution> cdf = CreateObject<EmpiricalSizeDistribution>();
    std::string err;
    if (!cdf->LoadFile(spec.cdfFile, &err))
    {
        throw InputError("cdf: " + err); // the CDF file is wrong: named, with the line
    }
    RoceTraffic out;
    out.meanBytes = cdf->Mean();
    if (!(out.meanBytes >= 1))
    {
        throw InputError("cdf: " + spec.cdfFile + ": mean flow size below one byte");
    }
    std::mt19937_64 rng(spec.seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);

    // Who sends, and to whom.
    std::vector<uint32_t> senders;
    switch (spec.pattern)
    {
    case RocePattern::AllToAll:
    case RocePattern::Permutation:
        senders.resize(spec.hosts);
        std::iota(senders.begin(), senders.end(), 0);
        break;
    case RocePattern::Incast:
        if (spec.incastTarget >= spec.hosts)
        {
            throw std::invalid_argument("incast target is not a host");
        }
        if (spec.incastSenders < 1 || spec.incastSenders > spec.hosts - 1)
        {
            throw std::invalid_argument("incast needs 1.." + std::to_string(spec.hosts - 1) +
                                        " senders on " + std::to_string(spec.hosts) +
                                        " hosts");
        }
        for (uint32_t i = 1; i <= spec.incastSenders; ++i)
        {
            senders.push_back((spec.incastTarget + i) % spec.hosts);
        }
        break;
    }
    if (spec.pattern == RocePattern::Permutation)
    {
        // A uniformly random derangement: shuffle until no host is its own partner (about e
        // tries on average).
        out.partner.resize(spec.hosts);
        bool fixedPoint = true;
        while (fixedPoint)
        {
            std::iota(out.partner.begin(), out.partner.end(), 0);
            for (uint32_t i = spec.hosts - 1; i > 0; --i)
            {
                std::uniform_int_distribution<uint32_t> pick(0, i);
                std::swap(out.partner[i], out.partner[pick(rng)]);
            }
            fixedPoint = false;
            for (uint32_t h = 0; h < spec.hosts; ++h)
            {
                fixedPoint |= out.partner[h] == h;
            }
        }
    }
    out.senders = static_cast<uint32_t>(senders.size());

    // Poisson arrivals per sender at the rate that offers `load` of a link in flow bytes.
    double rate = spec.load * spec.linkBps / (8.0 * out.meanBytes);
    if (spec.pattern == RocePattern::Incast)
    {
        rate /= senders.size();
    }
    out.arrivalsPerSecond = rate;
    const double end = spec.duration.GetSeconds();
    for (uint32_t src : senders)
    {
        std::exponential_distribution<double> gap(rate);
        for (double t = gap(rng); t < end; t += gap(rng))
        {
            RoceFlowSpec f;
            f.src = src;
            switch (spec.pattern)
            {
            case RocePattern::AllToAll: {
                std::uniform_int_distribution<uint32_t> other(0, spec.hosts - 2);
                const uint32_t d = other(rng);
                f.dst = d >= src ? d + 1 : d;
                break;
            }
            case RocePattern::Permutation:
                f.dst = out.partner[src];
                break;
            case RocePattern::Incast:
                f.dst = spec.incastTarget;
                break;
            }
            const double size = std::llround(cdf->Quantile(uniform(rng)));
            f.bytes = static_cast<uint64_t>(std::clamp<double>(size, 1, spec.maxBytes));
            f.start = PicoSeconds(std::llround(t * 1e12));
            out.flows.push_back(f);
        }
    }
    std::stable_sort(out.flows.begin(), out.flows.end(),
                     [](const RoceFlowSpec& a, const RoceFlowSpec& b) { return a.start < b.start; });
    return out;
}

} // namespace ns3
