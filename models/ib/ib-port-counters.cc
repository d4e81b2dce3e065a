#include "ib-port-counters.h"

namespace ns3
{

void
IbPortCounters::CountXmit(uint32_t bytes, bool multicast)
{
    Add(portXmitData, bytes / 4);
    Add(portXmitPkts, 1);
    extXmitData += bytes / 4;
    extXmitPkts += 1;
    (multicast ? extMulticastXmitPkts : extUnicastXmitPkts) += 1;
}

void
IbPortCounters::CountRcv(uint32_t bytes, bool multicast)
{
    Add(portRcvData, bytes / 4);
    Add(portRcvPkts, 1);
    extRcvData += bytes / 4;
    extRcvPkts += 1;
    (multicast ? extMulticastRcvPkts : extUnicastRcvPkts) += 1;
}

void
IbPortCounters::ResetPortCounters()
{
    uint64_t x[8] = {extXmitData, extRcvData, extXmitPkts, extRcvPkts,
                     extUnicastXmitPkts, extUnicastRcvPkts, extMulticastXmitPkts,
                     extMulticastRcvPkts};
    *this = IbPortCounters();
    extXmitData = x[0];
    extRcvData = x[1];
    extXmitPkts = x[2];
    extRcvPkts = x[3];
    extUnicastXmitPkts = x[4];
    extUnicastRcvPkts = x[5];
    extMulticastXmitPkts = x[6];
    extMulticastRcvPkts = x[7];
}

void
IbPortCounters::ResetExtended()
{
    extXmitData = extRcvData = extXmitPkts = extRcvPkts = 0;
    extUnicastXmitPkts = extUnicastRcvPkts = extMulticastXmitPkts = extMulticastRcvPkts = 0;
}

} // namespace ns3
