// `cnuas fabric show`: the fabric as the standard tools print it, after a subnet manager ran:
// per host port what `ibstat` shows, and the topology the SM discovered as `ibnetdiscover`
// writes it. See docs/management.md, "Subnet manager".
#include "command.h"

#include "helpers/formats/parse-util.h"
#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/scenario/scenario-file.h"
#include "models/mgmt/ib-subnet-manager.h"

#include "ns3/config.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"

#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace
{

void
PrintUsage(std::ostream& os)
{
    os << "usage: cnuas fabric show [--topology SPEC] [--sm builtin|static|none]\n"
          "                         [--routing updn|minhop] [--view ibstat|ibnetdiscover|all]\n"
          "                         [--set ATTRIBUTE=VALUE]...\n"
          "\n"
          "Builds the fabric, lets a subnet manager bring it up, and prints it as the standard\n"
          "tools would: every host port as `ibstat` shows it (State, Physical state, Rate, Base\n"
          "lid, SM lid), then the topology the SM discovered in `ibnetdiscover` format (readable\n"
          "again with --topology file:PATH).\n"
          "  --topology SPEC  pair, star:hosts=N, leaf-spine:..., fat-tree:k=K, file:PATH\n"
          "                   (default fat-tree:k=4; see docs/cli.md)\n"
          "  --sm builtin     an SM on host 0 sweeps with SMPs (default)\n"
          "  --sm static      LIDs, routes and states set directly (no discovery to print)\n"
          "  --sm none        no SM: ports stay Initializing with LID 0\n"
          "  --routing R      the built-in SM's routing engine: updn (default) or minhop\n"
          "  --set A=V        an ns-3 attribute default, as for `cnuas run`\n"
          "Exit status: 0 printed, 1 the SM did not bring the subnet up, 2 usage error,\n"
          "3 a bad topology file (named with the line).\n";
}

int
UsageError(const std::string& message)
{
    std::cerr << "cnuas fabric: " << message << "\n";
    PrintUsage(std::cerr);
    return cnuas::kExitUsage;
}

int
RunFabric(const std::vector<std::string>& args)
{
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help"))
    {
        PrintUsage(std::cout);
        return 0;
    }
    if (args.empty() || args[0] != "show")
    {
        return UsageError(args.empty() ? "no action given" : "unknown action '" + args[0] + "'");
    }
    std::string spec = "fat-tree:k=4";
    std::string sm = "builtin";
    std::string routing = "updn";
    std::string view = "all";
    std::vector<std::pair<std::string, std::string>> settings;
    for (size_t i = 1; i < args.size(); ++i)
    {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h")
        {
            PrintUsage(std::cout);
            return 0;
        }
        if (a != "--topology" && a != "--sm" && a != "--routing" && a != "--view" && a != "--set")
        {
            return UsageError("unknown option '" + a + "'");
        }
        if (i + 1 >= args.size())
        {
            return UsageError(a + " needs a value");
        }
        const std::string& v = args[++i];
        if (a == "--topology")
        {
            spec = v;
        }
        else if (a == "--sm")
        {
            sm = v;
        }
        else if (a == "--routing")
        {
            routing = v;
        }
        else if (a == "--view")
        {
            view = v;
        }
        else
        {
            const size_t eq = v.find('=');
            if (eq == std::string::npos)
            {
                return UsageError("--set needs ATTRIBUTE=VALUE, not '" + v + "'");
            }
            settings.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        }
    }
    if (sm != "builtin" && sm != "static" && sm != "none")
    {
        return UsageError("--sm must be builtin, static or none, not '" + sm + "'");
    }
    if (routing != "updn" && routing != "minhop")
    {
        return UsageError("--routing must be updn or minhop, not '" + routing + "'");
    }
    if (view != "all" && view != "ibstat" && view != "ibnetdiscover")
    {
        return UsageError("--view must be ibstat, ibnetdiscover or all, not '" + view + "'");
    }
    for (const auto& [name, value] : settings)
    {
        const std::string problem = ns3::ApplyAttributeSetting(name, value);
        if (!problem.empty())
        {
            return UsageError("--set " + name + "=" + value + ": " + problem);
        }
    }
    ns3::Config::SetDefault("ns3::IbSubnetManager::RoutingEngine",
                            ns3::EnumValue(static_cast<int>(
                                routing == "updn" ? ns3::IbRoutingAlgorithm::UpDown
                                                  : ns3::IbRoutingAlgorithm::MinHop)));
    ns3::IbFabric f;
    try
    {
        f = ns3::IbFabricHelper().Build(ns3::BuildTopologyFromSpec(spec));
    }
    catch (const ns3::InputError& e)
    {
        // The file is wrong, not the command line: no usage text, the file's own message.
        std::cerr << "cnuas fabric: " << e.what() << "\n";
        return cnuas::kExitInput;
    }
    catch (const std::invalid_argument& e)
    {
        return UsageError(e.what());
    }
    int status = cnuas::kExitOk;
    std::string discovered;
    if (sm == "builtin")
    {
        try
        {
            ns3::IbSmBringUp up = ns3::IbBringUpWithSm(f, 1);
            std::cout << "# subnet up at " << up.upAt.GetSeconds() * 1e6 << " us (simulated) after "
                      << up.smps << " SMPs; SM on " << f.topology.nodes[0].name << " port 1, LID "
                      << up.sm->GetSmLid() << ", routing " << routing << "\n";
            discovered = ns3::IbFormatIbnetdiscover(up.sm->GetSubnet(), up.sm->GetGuid());
        }
        catch (const std::exception& e)
        {
            std::cerr << "cnuas fabric: " << e.what() << "\n";
            status = cnuas::kExitFailed;
        }
    }
    else
    {
        if (sm == "static")
        {
            ns3::IbStaticSubnetHelper().Configure(f.nodes);
        }
        ns3::Simulator::Stop(ns3::MicroSeconds(5));
        ns3::Simulator::Run();
        std::cout << "# " << (sm == "static" ? "static configuration" : "no subnet manager")
                  << ": nothing was discovered\n";
        const std::string notActive = sm == "static" ? ns3::IbFabricNotActive(f) : "";
        if (!notActive.empty())
        {
            std::cerr << "cnuas fabric: the static configuration did not bring the fabric up "
                         "within 5 us: "
                      << notActive << "\n";
            status = cnuas::kExitFailed;
        }
    }
    if (view != "ibnetdiscover")
    {
        std::cout << ns3::IbFormatIbstat(f);
    }
    if (view != "ibstat" && !discovered.empty())
    {
        std::cout << "\n" << discovered;
    }
    ns3::Simulator::Destroy();
    return status;
}

} // namespace

CNUAS_COMMAND("fabric",
              "the fabric after a subnet manager ran, as ibstat and ibnetdiscover print it "
              "(fabric show --topology SPEC)",
              RunFabric);
