// Invalid Ethernet fabric configurations are refused with a message that names the problem.
#include "test-roce-util.h"

#include "helpers/roce/eth-fabric-helper.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

using namespace ns3;

namespace
{
/// Builds a star with `configure` applied; returns the exception text ("" if it built).
std::string
BuildError(const std::function<void(EthFabricHelper&)>& configure)
{
    EthFabricHelper h;
    configure(h);
    std::string what;
    try
    {
        h.Build(MakeStar(3));
    }
    catch (const std::invalid_argument& e)
    {
        what = e.what();
    }
    Simulator::Destroy();
    return what;
}
} // namespace

TEST(RoceConfig, DefaultsBuild)
{
    EXPECT_EQ(BuildError([](EthFabricHelper&) {}), "");
}

TEST(RoceConfig, KminAboveKmaxRefused)
{
    const std::string e = BuildError([](EthFabricHelper& h) {
        h.SetMmuAttribute("EcnMode", EnumValue(1));
        h.SetMmuAttribute("KminBytes", UintegerValue(500000));
        h.SetMmuAttribute("KmaxBytes", UintegerValue(100000));
    });
    EXPECT_NE(e.find("Kmin 500000 bytes is above Kmax 100000"), std::string::npos) << e;
    EXPECT_NE(e.find("sw0"), std::string::npos) << e; // names the switch
}

TEST(RoceConfig, XoffBelowXonRefused)
{
    const std::string e = BuildError([](EthFabricHelper& h) {
        h.SetMmuAttribute("ThresholdMode", EnumValue(0));
        h.SetMmuAttribute("XoffBytes", UintegerValue(10000));
        h.SetMmuAttribute("XonBytes", UintegerValue(20000));
    });
    EXPECT_NE(e.find("XonBytes 20000 is not below XoffBytes 10000"), std::string::npos) << e;
}

TEST(RoceConfig, HeadroomSmallerThanRoundTripRefused)
{
    // 100 m of cable at 100 Gb/s: 1 us there and back alone is 12500 bytes.
    const std::string e = BuildError([](EthFabricHelper& h) {
        h.SetCableAttribute("Length", DoubleValue(100));
        h.SetMmuAttribute("HeadroomBytes", UintegerValue(20000));
    });
    EXPECT_NE(e.find("HeadroomBytes 20000 is less than the PFC round trip needs"),
              std::string::npos)
        << e;
    // The same headroom is enough on a 2 m cable? No: the 100G response time alone is
    // 324608 bit times (40576 bytes). With it sized automatically, the fabric builds.
    EXPECT_EQ(BuildError([](EthFabricHelper& h) {
                  h.SetCableAttribute("Length", DoubleValue(100));
              }),
              "");
}

TEST(RoceConfig, HeadroomGrowsWithCableRateAndMtu)
{
    // HeadroomNeeded from its parts, independently: 2 max frames + a PFC frame on the wire
    // (each with 20 bytes of preamble and gap), the cable both ways and the response time.
    auto need = [](double gbps, double meters, uint32_t mtu, double responseBits) {
        const double frame = mtu + 14 + 4 + 4 + 20;
        const double bits = 2 * frame * 8 + 84 * 8 + 2 * meters * 5e-9 * gbps * 1e9 +
                            responseBits;
        return static_cast<uint64_t>(std::ceil(bits / 8));
    };
    struct Case
    {
        const char* rate;
        double gbps;
        double meters;
        uint32_t mtu;
        double responseBits;
    };
    for (const Case& c : {Case{"10Gbps", 10, 2, 1500, 8192 + 30720},
                          Case{"25Gbps", 25, 100, 1500, 6144 + 40960},
                          Case{"40Gbps", 40, 10, 9000, 24576 + 60416},
                          Case{"100Gbps", 100, 300, 4200, 122880 + 201728},
                          // Above 100G the 100G response time (3.24608 us) is kept.
                          Case{"400Gbps", 400, 5, 4200, 3.24608e-6 * 400e9}})
    {
        ns3::EthFabricHelper h;
        h.SetPortAttribute("Mtu", UintegerValue(c.mtu));
        h.SetCableAttribute("Length", DoubleValue(c.meters));
        ns3::EthFabric fab = cnuas_test::MakeEthPair(c.rate, c.meters, 0x08, &h);
        EXPECT_EQ(fab.HostPort(0)->HeadroomNeeded(),
                  need(c.gbps, c.meters, c.mtu, c.responseBits))
            << c.rate;
        Simulator::Destroy();
    }
}

TEST(RoceConfig, NicThresholdsRefused)
{
    auto nicError = [](uint64_t xoff, uint64_t xon, uint64_t buffer) {
        return BuildError([=](EthFabricHelper& h) {
            h.SetPortAttribute("RxDrainRate", DataRateValue(DataRate("10Gbps")));
            h.SetPortAttribute("NicXoffBytes", UintegerValue(xoff));
            h.SetPortAttribute("NicXonBytes", UintegerValue(xon));
            h.SetPortAttribute("RxBufferBytes", UintegerValue(buffer));
        });
    };
    EXPECT_NE(nicError(1000, 2000, 512 * 1024).find("NicXonBytes 2000 is not below"),
              std::string::npos);
    EXPECT_NE(nicError(600000, 1000, 512 * 1024).find("exceeds RxBufferBytes"),
              std::string::npos);
    EXPECT_NE(nicError(500000, 1000, 512 * 1024).find("less than the PFC round trip needs"),
              std::string::npos);
    EXPECT_EQ(nicError(256 * 1024, 128 * 1024, 512 * 1024), "");
}

TEST(RoceConfig, BufferTooSmallAndQuantumBelowFrameRefused)
{
    EXPECT_NE(BuildError([](EthFabricHelper& h) {
                  h.SetMmuAttribute("BufferBytes", UintegerValue(64 * 1024));
              }).find("leaves no shared pool"),
              std::string::npos);
    EXPECT_NE(BuildError([](EthFabricHelper& h) {
                  h.SetPortAttribute("Mtu", UintegerValue(9000));
                  h.SetPortAttribute("DwrrQuantumBytes", UintegerValue(1500));
              }).find("below the largest frame"),
              std::string::npos);
    for (const char* bad : {"1,1,1", "1,1,1,1,1,1,1,0", "1,1,1,1,1,1,1,x", "1,1,1,1,1,1,1,1,1"})
    {
        const std::string e = BuildError([bad](EthFabricHelper& h) {
            h.SetPortAttribute("DwrrWeights", StringValue(bad));
        });
        EXPECT_NE(e.find(std::string("DwrrWeights '") + bad + "' is not eight"),
                  std::string::npos)
            << e;
    }
    // An attribute out of its documented range is refused by ns-3's checker.
    Ptr<SharedBufferMmu> mmu = CreateObject<SharedBufferMmu>();
    EXPECT_FALSE(mmu->SetAttributeFailSafe("Pmax", DoubleValue(1.5)));
    Ptr<EthNetDevice> port = CreateObject<EthNetDevice>();
    EXPECT_FALSE(port->SetAttributeFailSafe("VlanId", UintegerValue(4095)));
}
