// Ethernet fabric behaviour: PFC keeps an incast lossless, drops without it are counted, a NIC
// pauses its switch when it cannot keep up, ECN marking, ECMP, link failure.
#include "helpers/eth-fabric-helper.h"
#include "helpers/eth-traffic-run.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

using namespace ns3;

namespace
{

/// 4-to-1 incast through one switch at 100 Gb/s with a 1 MiB buffer, so PFC must act.
EthTrafficSpec
SmallBufferIncast(bool pfc)
{
    EthTrafficSpec spec;
    spec.topology = "star:hosts=5";
    spec.pattern = EthTrafficSpec::Pattern::Incast;
    spec.duration = MicroSeconds(200);
    spec.pfc = pfc;
    spec.configure = [](EthFabricHelper& h) {
        h.SetMmuAttribute("BufferBytes", UintegerValue(1024 * 1024));
    };
    return spec;
}

} // namespace

TEST(RoceFabric, LosslessIncastWithPfcDropsNothing)
{
    const EthTrafficStats st = RunEthTraffic(SmallBufferIncast(true));
    std::printf("incast 4:1 PFC: sent %llu received %llu drops %llu pauses %llu pfc frames %llu "
                "max egress %llu B max headroom %llu B events %llu\n",
                (unsigned long long)st.sent, (unsigned long long)st.received,
                (unsigned long long)st.drops, (unsigned long long)st.pausesSent,
                (unsigned long long)st.pfcFramesSent, (unsigned long long)st.maxEgressQueueBytes,
                (unsigned long long)st.maxHeadroomUsed, (unsigned long long)st.events);
    EXPECT_GT(st.sent, 1000u);
    EXPECT_EQ(st.drops, 0u);
    EXPECT_EQ(st.received, st.sent);
    EXPECT_GT(st.pausesSent, 0u);
}

TEST(RoceFabric, LossyIncastCountsEveryDrop)
{
    const EthTrafficStats st = RunEthTraffic(SmallBufferIncast(false));
    std::printf("incast 4:1 no PFC: sent %llu received %llu drops %llu\n",
                (unsigned long long)st.sent, (unsigned long long)st.received,
                (unsigned long long)st.drops);
    EXPECT_GT(st.drops, 0u);
    EXPECT_EQ(st.drops, st.sent - st.received);
    EXPECT_EQ(st.dropsByReason[static_cast<int>(EthDropReason::BufferFull)], st.drops);
    EXPECT_EQ(st.pfcFramesSent, 0u);
}
