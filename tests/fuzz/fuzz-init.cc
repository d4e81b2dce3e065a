// Every fuzz target's start-up, under the driver and under libFuzzer alike: picosecond time
// resolution before any Time exists, as every Cnuas program (models/common/cnuas-init.h). Without
// it the InfiniBand link's flow-control refresh period rounds to zero.
#include "models/common/cnuas-init.h"

extern "C" int
LLVMFuzzerInitialize(int*, char***)
{
    ns3::CnuasInit();
    return 0;
}
