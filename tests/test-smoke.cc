#include "ns3/nstime.h"
#include <gtest/gtest.h>
TEST(Smoke, PicosecondResolution) { EXPECT_EQ(ns3::PicoSeconds(40).GetPicoSeconds(), 40); EXPECT_EQ(ns3::Time::GetResolution(), ns3::Time::PS); }
