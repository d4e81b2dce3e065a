#include "models/common/cnuas-init.h"
#include <cstdio>
int main(){ ns3::CnuasInit(); std::puts("cnuas placeholder"); return 0; }
