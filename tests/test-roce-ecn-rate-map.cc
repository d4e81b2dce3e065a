// SharedBufferMmu EcnRateMap: ECN thresholds per egress-port speed (the HPCC simulator's
// KMIN_MAP/KMAX_MAP/PMAX_MAP), the fallback to the single set, and bad maps refused.
#include "models/roce/eth-net-device.h"
#include "models/roce/shared-buffer-mmu.h"

#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

using namespace ns3;

namespace
{
Ptr<EthNetDevice>
PortAt(const char* rate)
{
    Ptr<EthNetDevice> d = CreateObject<EthNetDevice>();
    d->SetAttribute("DataRate", DataRateValue(DataRate(rate)));
    return d;
}

/// RED marking probability written out independently of the model.
double
Red(uint64_t q, double kmin, double kmax, double pmax)
{
    if (q <= kmin)
    {
        return 0;
    }
    if (q > kmax)
    {
        return 1;
    }
    return pmax * (q - kmin) / (kmax - kmin);
}
} // namespace

TEST(RoceEcnRateMap, EachPortUsesItsSpeedsThresholds)
{
    Ptr<SharedBufferMmu> mmu = CreateObject<SharedBufferMmu>();
    mmu->SetAttribute("EcnMode", EnumValue(1));
    mmu->SetAttribute("KminBytes", UintegerValue(100000));
    mmu->SetAttribute("KmaxBytes", UintegerValue(400000));
    mmu->SetAttribute("Pmax", DoubleValue(0.2));
    // HPCC run.py style: the 100 G host rate and 4 x 100 G fabric rate get their own sets;
    // 25 G is not in the map and falls back to the single set.
    mmu->SetAttribute("EcnRateMap",
                      StringValue("100Gbps 400000 1600000 0.2; 400000000000 1600000 6400000 0.5"));
    std::vector<Ptr<EthNetDevice>> keep = {PortAt("100Gbps"), PortAt("400Gbps"),
                                           PortAt("25Gbps")};
    mmu->Setup({PeekPointer(keep[0]), PeekPointer(keep[1]), PeekPointer(keep[2])});
    EXPECT_EQ(mmu->Validate(), "");
    for (uint64_t q : {0, 100000, 250000, 400000, 1000000, 1600000, 3000000, 6400000, 7000000})
    {
        EXPECT_DOUBLE_EQ(mmu->MarkProbability(q, 0), Red(q, 400000, 1600000, 0.2)) << q;
        EXPECT_DOUBLE_EQ(mmu->MarkProbability(q, 1), Red(q, 1600000, 6400000, 0.5)) << q;
        EXPECT_DOUBLE_EQ(mmu->MarkProbability(q, 2), Red(q, 100000, 400000, 0.2)) << q;
    }
    // A queue of 500 KB is always marked on the 25 G port, never on the 400 G one.
    EXPECT_TRUE(mmu->ShouldMark(500000, 2));
    EXPECT_FALSE(mmu->ShouldMark(500000, 1));
}

TEST(RoceEcnRateMap, KminAboveKmaxForOneSpeedIsRefused)
{
    Ptr<SharedBufferMmu> mmu = CreateObject<SharedBufferMmu>();
    mmu->SetAttribute("EcnMode", EnumValue(1));
    mmu->SetAttribute("EcnRateMap",
                      StringValue("100Gbps 400000 1600000 0.2; 400Gbps 7000000 6400000 0.2"));
    const std::string e = mmu->Validate();
    EXPECT_NE(e.find("Kmin 7000000 bytes is above Kmax 6400000"), std::string::npos) << e;
    EXPECT_NE(e.find("400 Gb/s"), std::string::npos) << e;
}

TEST(RoceEcnRateMap, MalformedMapsAreRefusedWithTheEntry)
{
    for (const char* bad : {"100Gbps 400000", "fastGbps 1 2 0.1", "100Gbps 1 2 1.5",
                            "100Gbps 1 2 0.1 7", "100Gbpx 1 2 0.1"})
    {
        Ptr<SharedBufferMmu> mmu = CreateObject<SharedBufferMmu>();
        mmu->SetAttribute("EcnMode", EnumValue(1));
        mmu->SetAttribute("EcnRateMap", StringValue(bad));
        EXPECT_NE(mmu->Validate().find("EcnRateMap"), std::string::npos) << bad;
    }
}
