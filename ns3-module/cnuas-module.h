// Umbrella header of the Cnuas ns-3 module, in the manner of ns-3's <module>-module.h files.
#ifndef CNUAS_MODULE_H
#define CNUAS_MODULE_H

namespace ns3
{
/// Version of libcnuas.
const char* CnuasVersion();
} // namespace ns3

#endif
