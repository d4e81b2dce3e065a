// Test entry point: ns-3 is configured once (picosecond time resolution, as every Cnuas program
// uses) before any test runs.
#include "models/common/cnuas-init.h"

#include <gtest/gtest.h>

int
main(int argc, char** argv)
{
    ns3::CnuasInit();
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
