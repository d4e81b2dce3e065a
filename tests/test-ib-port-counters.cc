// PortCounters semantics (IBA vol. 1 §16.1.3.5): counters stop at their maximum, data counts
// 4-byte words, and the 64-bit PortCountersExtended are independent of a PortCounters reset.
#include "models/ib/ib-port-counters.h"

#include <gtest/gtest.h>

using namespace ns3;

TEST(IbPortCounters, SaturateInsteadOfWrapping)
{
    IbPortCounters c;
    for (int i = 0; i < 70000; ++i)
    {
        IbPortCounters::Add(c.portRcvErrors, 1);
    }
    EXPECT_EQ(c.portRcvErrors, 0xFFFF);
    IbPortCounters::Add(c.excessiveBufferOverrunErrors, 100, 4);
    EXPECT_EQ(c.excessiveBufferOverrunErrors, 0xF); // a 4-bit field
    IbPortCounters::Add(c.linkDownedCounter, 300);
    EXPECT_EQ(c.linkDownedCounter, 0xFF);
    c.portXmitData = 0xFFFFFFF0u;
    IbPortCounters::Add(c.portXmitData, 1000);
    EXPECT_EQ(c.portXmitData, 0xFFFFFFFFu);
}

TEST(IbPortCounters, DataInWordsAndIndependentExtendedReset)
{
    IbPortCounters c;
    c.CountXmit(4128, false); // LRH..ICRC of a 4 KiB UD packet
    c.CountRcv(64, true);
    EXPECT_EQ(c.portXmitData, 1032u);
    EXPECT_EQ(c.portXmitPkts, 1u);
    EXPECT_EQ(c.extXmitData, 1032u);
    EXPECT_EQ(c.extUnicastXmitPkts, 1u);
    EXPECT_EQ(c.extMulticastRcvPkts, 1u);
    c.ResetPortCounters();
    EXPECT_EQ(c.portXmitData, 0u);
    EXPECT_EQ(c.portRcvPkts, 0u);
    EXPECT_EQ(c.extXmitData, 1032u); // the extended set is reset on its own
    c.ResetExtended();
    EXPECT_EQ(c.extXmitData, 0u);
    EXPECT_EQ(c.extMulticastRcvPkts, 0u);
}
