#include "pcap-file-open.h"

#include "ns3/boolean.h"
#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("PcapFileOpen");

Ptr<PcapFileWrapper>
OpenNanosecondPcap(const std::string& path, uint32_t linkType)
{
    Ptr<PcapFileWrapper> file = CreateObject<PcapFileWrapper>();
    file->SetAttribute("NanosecMode", BooleanValue(true));
    file->Open(path, std::ios::out);
    if (file->Fail())
    {
        NS_LOG_WARN("cannot open " << path << " for writing");
        return nullptr;
    }
    file->Init(linkType, 65535, 0);
    if (file->Fail())
    {
        NS_LOG_WARN("cannot write the pcap header of " << path);
        file->Close();
        return nullptr;
    }
    return file;
}

} // namespace ns3
