#include "eth-pcap-writer.h"

#include "pcap-file-open.h"

namespace ns3
{

namespace
{
void
WriteRecord(Ptr<PcapFileWrapper> file, Time t, const uint8_t* bytes, uint32_t len, bool)
{
    file->Write(t, bytes, len);
}
} // namespace

Ptr<PcapFileWrapper>
EthPcapHelper::Enable(Ptr<EthNetDevice> port, const std::string& path)
{
    uint32_t handle = 0;
    return Enable(port, path, &handle);
}

Ptr<PcapFileWrapper>
EthPcapHelper::Enable(Ptr<EthNetDevice> port, const std::string& path, uint32_t* snifferHandle)
{
    Ptr<PcapFileWrapper> file = OpenNanosecondPcap(path, kLinkTypeEthernet);
    if (!file)
    {
        return nullptr;
    }
    *snifferHandle = port->AddSniffer(MakeBoundCallback(&WriteRecord, file));
    return file;
}

} // namespace ns3
