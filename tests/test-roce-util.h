// Small fixtures shared by the tests/test-roce-*.cc suites.
#ifndef CNUAS_TEST_ROCE_UTIL_H
#define CNUAS_TEST_ROCE_UTIL_H

#include "helpers/roce/eth-fabric-helper.h"

#include "ns3/callback.h"
#include "ns3/data-rate.h"
#include "ns3/uinteger.h"

#include <string>

namespace cnuas_test
{

/// Two hosts joined by one cable of `meters` at `rate`, PFC on `pfcMask`.
inline ns3::EthFabric
MakeEthPair(const std::string& rate = "100Gbps", double meters = 2.0, uint8_t pfcMask = 0x08,
            ns3::EthFabricHelper* helper = nullptr)
{
    ns3::Topology t;
    t.name = "eth-pair";
    t.AddNode("a", ns3::TopoNodeKind::Host, 1, 0);
    t.AddNode("b", ns3::TopoNodeKind::Host, 1, 0);
    t.AddLink(0, 1, 1, 1, "", meters);
    ns3::EthFabricHelper local;
    ns3::EthFabricHelper& h = helper ? *helper : local;
    h.SetHostLinkRate(ns3::DataRate(rate));
    h.SetPortAttribute("PfcEnableMask", ns3::UintegerValue(pfcMask));
    return h.Build(t);
}

/// The Internet checksum written out again, independently of the model's: the one's-complement
/// sum of the 16-bit words of a correct header (checksum field included) is 0xFFFF (RFC 1071).
inline uint16_t
OnesComplementSum(const uint8_t* p, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i += 2)
    {
        sum += (uint32_t(p[i]) << 8) + (i + 1 < n ? p[i + 1] : 0);
    }
    while (sum > 0xFFFF)
    {
        sum = (sum >> 16) + (sum & 0xFFFF);
    }
    return static_cast<uint16_t>(sum);
}

/// Receive callback body for CountEthRx.
inline void
CountEthFrame(uint64_t* n, ns3::Ptr<ns3::EthNetDevice>, const ns3::EthFrame&)
{
    (*n)++;
}

/// Counts into `*n` the frames `port` hands up; `n` must outlive the simulation run.
inline void
CountEthRx(ns3::Ptr<ns3::EthNetDevice> port, uint64_t* n)
{
    port->SetEthReceiveCallback(ns3::MakeBoundCallback(&CountEthFrame, n));
}

} // namespace cnuas_test

#endif
