// Attaching observers to InfiniBand ports: pcap traces and the credit (flow-control) trace.
#ifndef CNUAS_IB_TRACE_HELPER_H
#define CNUAS_IB_TRACE_HELPER_H

#include "ns3/ptr.h"

#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

class IbNetDevice;
class IbErfPcapWriter;
struct IbFabric;

/**
 * \brief Writes one pcap per port (ERF-in-pcap, link type 197, that stock tshark decodes) with
 * every packet the port sends and receives, CRCs filled in as on the wire.
 */
class IbPcapHelper
{
  public:
    /// `path` is created (truncated); returns false if it cannot be opened.
    bool Enable(Ptr<IbNetDevice> port, const std::string& path);
    /**
     * A separate trace of the link flow-control packets `port` sends (ERF type 25, LPCRC
     * filled in). Kept out of the main trace because Wireshark 4.0 marks every flow-control
     * record malformed (a dissector bug); `cnuas pcap check` verifies them.
     */
    bool EnableFlowControl(Ptr<IbNetDevice> port, const std::string& path);
    /// Flushes and closes every file.
    void Close();
    ~IbPcapHelper();

  private:
    std::vector<std::shared_ptr<IbErfPcapWriter>> m_writers;
};

/**
 * One trace per host port of `f` in `dir` (created if missing), named after the host in the
 * topology (`<dir>/<host>.pcap`); returns the paths in host order. Throws std::runtime_error
 * naming the file that cannot be written.
 */
std::vector<std::string> EnableHostPcaps(IbPcapHelper& pcap, const IbFabric& f,
                                         const std::string& dir);

/**
 * \brief The credit trace: a CSV of every flow-control packet sent and received, every change of
 * transmit credit and every credit stall on the traced ports, readable by a person and plotted
 * by tools/plot/plot-credits.py.
 *
 * Columns: time_ns,port,event,vl,fctbs,fccl,credits,stall_ns
 * (event: fc_tx, fc_rx, credits, stall_end; unused columns empty).
 */
class IbCreditTraceHelper
{
  public:
    bool Open(const std::string& path);
    void Trace(Ptr<IbNetDevice> port, const std::string& name);
    void Close();

  private:
    struct Ctx
    {
        std::ofstream* out;
        std::string name;
    };
    static void FcTx(Ctx* c, uint8_t op, uint8_t vl, uint16_t fctbs, uint16_t fccl);
    static void FcRx(Ctx* c, uint8_t op, uint8_t vl, uint16_t fctbs, uint16_t fccl);
    static void Credits(Ctx* c, uint8_t vl, uint32_t credits);
    static void Stall(Ctx* c, uint8_t vl, class Time d);
    std::unique_ptr<std::ofstream> m_out;
    std::vector<std::unique_ptr<Ctx>> m_ctx;
};

} // namespace ns3

#endif
