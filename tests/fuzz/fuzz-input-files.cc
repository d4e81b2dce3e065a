// Fuzz target: every file a user hands Cnuas, as the readers read them. The first input byte
// picks the reader, the rest is the file:
//  0  a topology file (`--topology file:...`)
//  1  a scenario file (`cnuas run FILE.scn`)
//  2  a rack file (`cnuas rack up --config`)
//  3  an HPCC-simulator config (`roce-hpcc --param config=`)
//  4  an HPCC-simulator topology, then (when it reads) the same bytes as its flow file
//  5  a capture (`cnuas pcap check`)
//  6  a partition policy (`cnuas up --partitions`, opensm's partitions.conf)
// Bad input must end in the reader's exception with a message (or, for the trace checker, a
// report), never in a crash, an abort or a hang.
#include "helpers/formats/rack-file.h"
#include "helpers/formats/roce-hpcc-compat.h"
#include "helpers/formats/topology.h"
#include "helpers/scenario/scenario-file.h"
#include "helpers/trace/trace-check.h"
#include "models/mgmt/ib-sm-partitions.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace ns3;

namespace
{

std::string g_inputDir;

/// The private directory goes when the process ends (each test run made one before and left it).
void
RemoveInputDir()
{
    std::remove((g_inputDir + "/input").c_str());
    rmdir(g_inputDir.c_str());
}

/// A private file the readers that take paths read the input from.
std::string
InputPath()
{
    if (g_inputDir.empty())
    {
        char dir[] = "/tmp/cnuas-fuzz-XXXXXX";
        if (!mkdtemp(dir))
        {
            std::perror("fuzz-input-files: mkdtemp");
            std::abort();
        }
        g_inputDir = dir;
        std::atexit(RemoveInputDir);
    }
    return g_inputDir + "/input";
}

void
WriteInput(const std::string& text)
{
    std::ofstream(InputPath(), std::ios::binary | std::ios::trunc) << text;
}

template <class F>
void
Expecting(F read)
{
    try
    {
        read();
    }
    catch (const std::exception& e)
    {
        if (std::string(e.what()).empty())
        {
            std::fprintf(stderr, "fuzz-input-files: an error without a message\n");
            std::abort();
        }
    }
}

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1 || size > 65536)
    {
        return 0;
    }
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    switch (data[0] % 7)
    {
    case 0:
        Expecting([&] { ParseTopologyText(text, "fuzz.topo"); });
        break;
    case 1:
        Expecting([&] { ParseScenarioText(text, "fuzz.scn", "/nonexistent"); });
        break;
    case 2:
        WriteInput(text);
        Expecting([&] {
            RackFileConfig c;
            ReadRackFile(InputPath(), &c);
        });
        break;
    case 3:
        WriteInput(text);
        Expecting([&] { ReadHpccConfig(InputPath(), HpccUnknownKeys::Error); });
        Expecting([&] {
            std::vector<std::string> warnings;
            ReadHpccConfig(InputPath(), HpccUnknownKeys::Warn, &warnings);
        });
        break;
    case 4:
        WriteInput(text);
        Expecting([&] {
            const HpccTopology topo = ReadHpccTopology(InputPath());
            ReadHpccFlows(InputPath(), topo, 0.0);
        });
        break;
    case 6: {
        // Accepted or refused with a line number; an accepted policy gives every port valid
        // keys (never 0x0000 or 0x8000), the default partition's first.
        IbPartitionPolicy policy;
        std::string why;
        if (!policy.Parse(text, &why))
        {
            if (why.rfind("line ", 0) != 0)
            {
                std::fprintf(stderr, "fuzz-input-files: a refused policy without its line\n");
                std::abort();
            }
            break;
        }
        for (uint64_t guid : {uint64_t{0x12}, uint64_t{0x0002c90300000101}})
        {
            for (uint16_t key : policy.CaPortPkeys(guid, guid == 0x12))
            {
                if ((key & 0x7FFF) == 0)
                {
                    std::fprintf(stderr, "fuzz-input-files: an invalid P_Key in a table\n");
                    std::abort();
                }
            }
        }
        break;
    }
    default:
        WriteInput(text);
        Expecting([&] { CheckTrace(InputPath()).Summary(); });
        break;
    }
    return 0;
}
