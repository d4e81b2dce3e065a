// Module registration point of libcnuas. ns-3 registers TypeIds through static initialisers in
// each model's translation unit; this file carries the module's version string.
#include "cnuas-module.h"

namespace ns3
{
const char*
CnuasVersion()
{
    return CNUAS_VERSION;
}
} // namespace ns3
