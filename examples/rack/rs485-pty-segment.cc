// A simulated RS-485 segment of ORv3-like PSUs behind a pseudo-terminal, for real Modbus masters:
//
//   build/bin/example-rs485-pty-segment --link=/tmp/cnuas-rs485-0 --units=200,201 --seconds=120
//   mbpoll -m rtu -b 19200 -P even -a 200 -t 4 -r 79 -c 4 -0 -1 /tmp/cnuas-rs485-0
//
// Each unit serves holding registers 0-119 (ORv3 PSU layout: model string at 8, inlet
// temperature at 69, output voltage/current/power at 79-82 with rackmon2's fixed-point
// precisions). The run is in real time for --seconds; the bridge's and the slaves' counters are
// printed at the end.
#include "helpers/rack/modbus-helper.h"
#include "helpers/rack/rs485-bus-helper.h"
#include "helpers/rack/rs485-pty-bridge-helper.h"
#include "models/common/cnuas-init.h"

#include "ns3/boolean.h"
#include "ns3/command-line.h"
#include "ns3/enum.h"
#include "ns3/node-container.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <cmath>
#include <iostream>
#include <sstream>

using namespace ns3;

namespace
{

uint16_t
Fixed(double value, int precision)
{
    return static_cast<uint16_t>(std::lround(std::ldexp(value, precision)));
}

Ptr<ModbusMemoryRegisterBank>
PsuBank(uint8_t unit)
{
    Ptr<ModbusMemoryRegisterBank> b = CreateObject<ModbusMemoryRegisterBank>();
    b->DefineHoldingRegisters(0, 120);
    b->SetHoldingString(0, 8, "CNUAS-PSU");
    b->SetHoldingString(8, 8, "ECD17020037");
    b->SetHoldingString(24, 16, "SN" + std::to_string(unit));
    b->SetHoldingRegister(69, Fixed(25.5, 7));      // PSU_Temp0_Inlet, degC
    b->SetHoldingRegister(79, Fixed(51.0, 10));     // PSU_Output_Voltage, V
    b->SetHoldingRegister(80, Fixed(58.796875, 6)); // PSU_Output_Current, A
    b->SetHoldingRegister(82, Fixed(3000.0, 3));    // PSU_Output_Power, W
    return b;
}

} // namespace

int
main(int argc, char** argv)
{
    CnuasInit();
    std::string link = "/tmp/cnuas-rs485-0";
    std::string units = "200,201,202";
    uint32_t baud = 19200;
    std::string parity = "even";
    bool localEcho = false;
    double seconds = 600;
    CommandLine cmd(__FILE__);
    cmd.AddValue("link", "symlink to the pty's slave side (empty: none)", link);
    cmd.AddValue("units", "comma-separated Modbus addresses of the simulated PSUs", units);
    cmd.AddValue("baud", "the devices' baud rate, bit/s", baud);
    cmd.AddValue("parity", "the devices' parity: even, odd or none", parity);
    cmd.AddValue("echo", "the client reads back its own characters (rackmon LocalEcho)",
                 localEcho);
    cmd.AddValue("seconds", "how long to run, wall-clock seconds", seconds);
    cmd.Parse(argc, argv);

    Rs485Format f;
    f.baudRate = baud;
    if (parity == "even")
    {
        f.parity = Rs485Parity::Even;
    }
    else if (parity == "odd")
    {
        f.parity = Rs485Parity::Odd;
    }
    else if (parity == "none")
    {
        f.parity = Rs485Parity::None;
    }
    else
    {
        std::cerr << "--parity must be even, odd or none\n";
        return 2;
    }
    std::vector<uint8_t> addresses;
    std::istringstream in(units);
    std::string tok;
    while (std::getline(in, tok, ','))
    {
        const int a = std::atoi(tok.c_str());
        if (a < 1 || a > 255)
        {
            std::cerr << "bad unit address '" << tok << "'\n";
            return 2;
        }
        addresses.push_back(static_cast<uint8_t>(a));
    }

    Rs485PtyBridgeHelper::EnableRealtime();
    NodeContainer nodes;
    nodes.Create(addresses.size() + 1);
    Rs485BusHelper bh;
    bh.SetFormat(f);
    Ptr<Rs485Channel> bus = bh.CreateBus();
    ModbusHelper mh;
    std::vector<Ptr<ModbusSlave>> slaves;
    for (size_t i = 0; i < addresses.size(); ++i)
    {
        slaves.push_back(
            mh.InstallSlave(bh.Install(nodes.Get(i), bus), addresses[i], PsuBank(addresses[i])));
    }
    Rs485PtyBridgeHelper ph;
    ph.SetFormat(f);
    ph.SetBridgeAttribute("LinkPath", StringValue(link));
    ph.SetBridgeAttribute("LocalEcho", BooleanValue(localEcho));
    Ptr<Rs485PtyBridge> bridge = ph.Install(nodes.Get(addresses.size()), bus);
    if (!bridge->Start())
    {
        std::cerr << "pty bridge: " << bridge->GetError() << "\n";
        return 1;
    }
    std::cout << "pty " << bridge->GetSlavePath() << (link.empty() ? "" : " link " + link)
              << ", " << addresses.size() << " units at " << f.ToString() << ", " << seconds
              << " s" << std::endl;
    Simulator::Stop(Seconds(seconds));
    Simulator::Run();

    const Rs485PtyBridgeCounters c = bridge->GetCounters();
    std::cout << "bridge: opens " << c.clientOpens << ", bytes from client " << c.bytesFromClient
              << ", to client " << c.bytesToClient << ", format changes " << c.formatChanges
              << ", rx errors " << c.rxErrors << "\n";
    for (const Ptr<ModbusSlave>& s : slaves)
    {
        const ModbusSlaveDiagnostics& d = s->GetDiagnostics();
        std::cout << "unit " << unsigned(s->GetAddress()) << ": bus messages "
                  << d.busMessageCount << ", communication errors "
                  << d.busCommunicationErrorCount << ", responses " << s->GetResponsesSent()
                  << "\n";
    }
    Simulator::Destroy();
    return 0;
}
