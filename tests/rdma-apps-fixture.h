// A small InfiniBand fabric with an HCA on every host and the traffic helper over it, for the
// traffic-application tests.
#ifndef CNUAS_TESTS_RDMA_APPS_FIXTURE_H
#define CNUAS_TESTS_RDMA_APPS_FIXTURE_H

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/rdma/rdma-traffic-helper.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace cnuas_test
{

using namespace ns3;

class RdmaAppsTest : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        traffic.reset();
        hcas.clear();
        Simulator::Destroy();
    }

    /// Build `topology` (a topology spec), bring it up, put HCAs on the hosts.
    void Build(const std::string& topology = "pair", bool realMemory = false,
               uint64_t bufferBytes = 1ULL << 32)
    {
        fabric = IbFabricHelper().Build(BuildTopologyFromSpec(topology));
        subnet.Configure(fabric.nodes);
        hcas = RdmaHelper().Install(fabric);
        RunUntil(MicroSeconds(10)); // training + Init -> Armed -> Active
        traffic = std::make_unique<RdmaTrafficHelper>(hcas, realMemory, bufferBytes);
    }

    void RunUntil(Time t)
    {
        Simulator::Stop(t - Simulator::Now());
        Simulator::Run();
    }

    IbFabric fabric;
    IbStaticSubnetHelper subnet;
    std::vector<RdmaHca> hcas;
    std::unique_ptr<RdmaTrafficHelper> traffic;
};

} // namespace cnuas_test

#endif
