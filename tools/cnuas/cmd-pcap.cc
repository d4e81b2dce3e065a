// `cnuas pcap check FILE...`: verify Cnuas (or real) traces offline, including every CRC that
// Wireshark shows but does not check. See docs/ib-wire.md.
#include "command.h"

#include "helpers/trace/trace-check.h"

#include <iostream>
#include <string>
#include <vector>

namespace
{

/// Problems printed per file; the rest are summarized as "... and N more".
constexpr size_t kMaxPrintedProblems = 20;

void
PrintUsage(std::ostream& os)
{
    os << "usage: cnuas pcap check FILE...\n"
          "\n"
          "Check pcap/pcapng traces and print one summary line per file, followed by up to "
       << kMaxPrintedProblems
       << " problems.\n"
          "  link type 197 (ERF): ERF headers; InfiniBand records (type 21): LRH, GRH, BTH,\n"
          "      VCRC and ICRC; link flow-control records (type 25): length, Op, LPCRC\n"
          "  link type 247 (InfiniBand from the LRH): the same packet checks\n"
          "  link type 1 (Ethernet): RoCEv2 (UDP port 4791) lengths and ICRC\n"
          "  link type 252 (Wireshark upper PDU, 'cnuas rack up --pcap'): exported-PDU tags;\n"
          "      Modbus RTU frames: length 4..256, slave address, CRC-16\n"
          "Exit status: 0 all files good, 1 a problem was found in a trace, 2 usage error,\n"
          "3 a file could not be read as a pcap trace.\n";
}

int
RunPcap(const std::vector<std::string>& args)
{
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help"))
    {
        PrintUsage(std::cout);
        return 0;
    }
    if (args.empty() || args[0] != "check")
    {
        if (!args.empty())
        {
            std::cerr << "cnuas pcap: unknown action '" << args[0] << "'\n";
        }
        PrintUsage(std::cerr);
        return cnuas::kExitUsage;
    }
    std::vector<std::string> files;
    for (size_t i = 1; i < args.size(); ++i)
    {
        if (args[i] == "--help" || args[i] == "-h")
        {
            PrintUsage(std::cout);
            return 0;
        }
        files.push_back(args[i]);
    }
    if (files.empty())
    {
        std::cerr << "cnuas pcap check: no FILE given\n";
        PrintUsage(std::cerr);
        return cnuas::kExitUsage;
    }

    bool allOk = true;
    bool unreadable = false;
    for (const auto& file : files)
    {
        const ns3::TraceCheckReport report = ns3::CheckTrace(file);
        std::cout << report.Summary() << "\n";
        if (report.ok())
        {
            continue;
        }
        allOk = false;
        // Without a link type the file could not be read as a trace at all: an input error,
        // not a trace whose packets failed the check.
        unreadable = unreadable || report.linkType.empty();
        // A file that cannot be read at all has its one problem in the summary line already.
        const size_t first = report.linkType.empty() ? 1 : 0;
        size_t printed = 0;
        for (size_t i = first; i < report.firstProblems.size() && printed < kMaxPrintedProblems;
             ++i, ++printed)
        {
            std::cout << "  " << report.firstProblems[i] << "\n";
        }
        const uint64_t shown = first + printed;
        if (report.errors > shown)
        {
            std::cout << "  ... and " << report.errors - shown << " more\n";
        }
    }
    return unreadable ? cnuas::kExitInput : allOk ? cnuas::kExitOk : cnuas::kExitFailed;
}

} // namespace

CNUAS_COMMAND("pcap", "check pcap traces: framing, headers and all CRCs (pcap check FILE...)",
              RunPcap);
