// The compiled half of the Python package `cnuas` (bindings/cnuas/__init__.py is the half a
// researcher calls): the built-in scenarios, attribute lookup and validation, and the run
// itself. A run goes through the same ScenarioRegistry entry `cnuas run NAME` calls, with the
// same parameter and attribute checks, so the numbers are the command line's; the results come
// back as numpy arrays that own the scenario's column vectors (no per-element copy).
#include "helpers/formats/parse-util.h"
#include "helpers/scenario/scenario-file.h"
#include "helpers/scenario/scenario.h"
#include "models/common/cnuas-init.h"

#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/type-id.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace
{

// ns-3 keeps one simulator, one event list and one set of attribute defaults per process: two
// runs at once (from two Python threads) would corrupt each other, so the second is refused.
std::atomic<bool> g_simulationRunning{false};

// The exception types, created once and kept for the life of the process (raw pointers: a
// py::object destroyed after the interpreter has finalized would crash at exit).
/// Raised for a parameter or attribute the model cannot take (a ValueError in Python).
PyObject* g_parameterError = nullptr;
/// Raised when a run is asked for while another is in progress in this process.
PyObject* g_busyError = nullptr;
/// Raised when the simulation itself fails (a RuntimeError in Python).
PyObject* g_simulationError = nullptr;

[[noreturn]] void
Raise(PyObject* type, const std::string& message)
{
    PyErr_SetString(type, message.c_str());
    throw py::error_already_set();
}

/// A numpy array that takes over `values` without copying its elements.
template <typename T>
py::array_t<T>
AdoptVector(std::vector<T>&& values, std::vector<py::ssize_t> shape = {})
{
    auto* owned = new std::vector<T>(std::move(values));
    py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    if (shape.empty())
    {
        shape = {static_cast<py::ssize_t>(owned->size())};
    }
    return py::array_t<T>(shape, owned->data(), owner);
}

/// The TypeId and attribute a name such as "ns3::RdmaCcDcqcnPaper::G" or "EthNetDevice::Mtu"
/// points at; false if there is none.
bool
ResolveAttribute(const std::string& fullName, ns3::TypeId* tid,
                 ns3::TypeId::AttributeInformation* info)
{
    const size_t sep = fullName.rfind("::");
    if (sep == std::string::npos || sep == 0)
    {
        return false;
    }
    std::string cls = fullName.substr(0, sep);
    if (!ns3::TypeId::LookupByNameFailSafe(cls, tid) &&
        !(cls.rfind("ns3::", 0) != 0 && ns3::TypeId::LookupByNameFailSafe("ns3::" + cls, tid)))
    {
        return false;
    }
    return tid->LookupAttributeByName(fullName.substr(sep + 2), info);
}

py::dict
DescribeAttribute(const ns3::TypeId& owner, const ns3::TypeId::AttributeInformation& info)
{
    py::dict d;
    d["name"] = owner.GetName() + "::" + info.name;
    d["type"] = info.checker->GetValueTypeName();
    d["accepts"] = info.checker->GetUnderlyingTypeInformation();
    d["default"] = info.initialValue->SerializeToString(info.checker);
    d["help"] = info.help;
    d["settable"] = (info.flags & ns3::TypeId::ATTR_CONSTRUCT) != 0;
    return d;
}

/**
 * Remembers the defaults a run's settings replace and puts them back when the run ends, so that
 * the next run in the same process starts from ns-3's defaults again (Config::SetDefault would
 * otherwise leak one run's settings into the next).
 */
class AttributeDefaultsRestorer
{
  public:
    void Remember(const std::string& declaredName)
    {
        const size_t sep = declaredName.rfind("::");
        ns3::TypeId tid;
        if (sep == std::string::npos ||
            !ns3::TypeId::LookupByNameFailSafe(declaredName.substr(0, sep), &tid))
        {
            return; // a GlobalValue: the run sets seed and run number itself
        }
        const std::string attr = declaredName.substr(sep + 2);
        for (size_t i = 0; i < tid.GetAttributeN(); ++i)
        {
            if (tid.GetAttribute(i).name == attr)
            {
                m_saved.push_back({tid, i, tid.GetAttribute(i).initialValue});
                return;
            }
        }
    }

    ~AttributeDefaultsRestorer()
    {
        // Newest first, so an attribute set twice ends at its original default.
        for (auto it = m_saved.rbegin(); it != m_saved.rend(); ++it)
        {
            it->tid.SetAttributeInitialValue(it->index, it->value);
        }
    }

  private:
    struct Saved
    {
        ns3::TypeId tid;
        size_t index;
        ns3::Ptr<const ns3::AttributeValue> value;
    };

    std::vector<Saved> m_saved;
};

/// Clears the one-run-per-process flag however the run ends.
struct RunningFlag
{
    ~RunningFlag()
    {
        g_simulationRunning = false;
    }
};

py::list
Scenarios()
{
    py::list out;
    for (const ns3::ScenarioInfo& info : ns3::ScenarioRegistry::All())
    {
        py::list params;
        for (const ns3::ScenarioParam& p : info.params)
        {
            params.append(py::make_tuple(p.key, p.defaultValue, p.help));
        }
        py::dict d;
        d["name"] = info.name;
        d["description"] = info.description;
        d["params"] = params;
        out.append(d);
    }
    return out;
}

py::dict
AttributeInfo(const std::string& name)
{
    ns3::TypeId tid;
    ns3::TypeId::AttributeInformation info;
    if (!ResolveAttribute(name, &tid, &info))
    {
        // The same wording `cnuas run --set` uses (class missing, or the attributes it has).
        Raise(g_parameterError, name + ": " + ns3::CheckAttributeSetting(name, "", nullptr));
    }
    return DescribeAttribute(tid, info);
}

py::list
ClassAttributes(const std::string& className)
{
    ns3::TypeId tid;
    if (!ns3::TypeId::LookupByNameFailSafe(className, &tid) &&
        !ns3::TypeId::LookupByNameFailSafe("ns3::" + className, &tid))
    {
        Raise(g_parameterError, "no ns-3 class '" + className + "'");
    }
    py::list out;
    for (ns3::TypeId t = tid;; t = t.GetParent())
    {
        for (size_t i = 0; i < t.GetAttributeN(); ++i)
        {
            out.append(DescribeAttribute(t, t.GetAttribute(i)));
        }
        if (t == t.GetParent())
        {
            break;
        }
    }
    return out;
}

/// "" if `name=value` could be set (the `--set` checks), else why not; the canonical name too.
py::tuple
CheckAttribute(const std::string& name, const std::string& value)
{
    std::string declared;
    std::string problem = ns3::CheckAttributeSetting(name, value, &declared);
    return py::make_tuple(problem, declared);
}

py::dict
FlowTable(ns3::ScenarioFlowTable&& t)
{
    py::dict d;
    d["src"] = AdoptVector(std::move(t.src));
    d["dst"] = AdoptVector(std::move(t.dst));
    d["size"] = AdoptVector(std::move(t.sizeBytes));
    d["start_ns"] = AdoptVector(std::move(t.startNs));
    d["fct_ns"] = AdoptVector(std::move(t.fctNs));
    d["ideal_fct_ns"] = AdoptVector(std::move(t.idealFctNs));
    d["slowdown"] = AdoptVector(std::move(t.slowdown));
    d["ok"] = AdoptVector(std::move(t.ok));
    return d;
}

py::dict
Traces(ns3::ScenarioTraces&& t)
{
    const auto samples = static_cast<py::ssize_t>(t.timeUs.size());
    const py::ssize_t flows = samples == 0 ? 0 : t.flowRateGbps.size() / samples;
    py::dict d;
    // A fabric's running counts are there when it has them: PFC and ECN on RoCE, not on
    // InfiniBand (whose FECN marks come as a series of their own). Without samples every one
    // is an empty array, as before any fabric had its own.
    auto counts = [&](const char* name, std::vector<double>&& v) {
        if (samples == 0 || static_cast<py::ssize_t>(v.size()) == samples)
        {
            d[name] = AdoptVector(std::move(v));
        }
    };
    d["time_us"] = AdoptVector(std::move(t.timeUs));
    counts("max_queue_bytes", std::move(t.maxQueueBytes));
    counts("pfc_pauses", std::move(t.pfcPauses));
    counts("ecn_marks", std::move(t.ecnMarks));
    counts("cnps", std::move(t.cnps));
    d["rate_gbps"] = AdoptVector(std::move(t.flowRateGbps), {flows, samples});
    py::list ports;
    for (const std::string& name : t.portNames)
    {
        ports.append(name);
    }
    d["ports"] = ports;
    for (ns3::ScenarioTraces::Series& series : t.series)
    {
        std::vector<py::ssize_t> shape(series.shape.begin(), series.shape.end());
        d[py::str(series.name)] = AdoptVector(std::move(series.values), shape);
    }
    return d;
}

py::dict
RunScenario(const std::string& name,
            const std::map<std::string, std::string>& params,
            const std::vector<std::pair<std::string, std::string>>& settings,
            uint64_t seed,
            uint64_t run,
            const std::string& outDir,
            const std::string& pcapDir,
            bool plots,
            bool progress)
{
    if (g_simulationRunning.exchange(true))
    {
        Raise(g_busyError,
              "a simulation is already running in this process: ns-3 keeps one simulator per "
              "process, so run concurrent simulations in separate processes (cnuas.sweep does)");
    }
    RunningFlag clearWhenDone;
    const ns3::ScenarioInfo* info = ns3::ScenarioRegistry::Find(name);
    if (info == nullptr)
    {
        std::string names;
        for (const auto& s : ns3::ScenarioRegistry::All())
        {
            names += (names.empty() ? "" : ", ") + s.name;
        }
        Raise(g_parameterError, "no scenario '" + name + "' (there are: " + names + ")");
    }
    if (seed == 0 || seed > UINT32_MAX)
    {
        Raise(g_parameterError, "seed must be in [1, 4294967295], not " + std::to_string(seed));
    }
    ns3::ScenarioOptions o;
    o.name = name;
    o.params = params;
    o.outDir = outDir;
    o.pcapDir = pcapDir;
    o.plots = plots;
    o.progress = progress;
    // Ctrl-C during the run (the GIL released, Python's own handler cannot act) stops the
    // simulation cleanly; KeyboardInterrupt is raised below once the files are complete.
    o.stopOnInterrupt = true;
    try
    {
        ns3::CheckScenarioParams(o, *info);
        ns3::CheckScenarioPcapRequest(o, *info);
    }
    catch (const std::invalid_argument& e)
    {
        Raise(g_parameterError, e.what());
    }
    // Every setting is checked before any is applied: a bad one changes nothing.
    std::vector<std::string> declared(settings.size());
    for (size_t i = 0; i < settings.size(); ++i)
    {
        const auto& [attr, value] = settings[i];
        std::string problem = ns3::CheckAttributeSetting(attr, value, &declared[i]);
        if (problem.empty())
        {
            problem = ns3::ScenarioOwnAttributeProblem(*info, declared[i]);
        }
        if (!problem.empty())
        {
            Raise(g_parameterError, attr + "=" + value + ": " + problem);
        }
    }
    AttributeDefaultsRestorer restoreDefaults;
    for (size_t i = 0; i < settings.size(); ++i)
    {
        restoreDefaults.Remember(declared[i]);
        const std::string problem = ns3::ApplyAttributeSetting(settings[i].first, settings[i].second);
        if (!problem.empty())
        {
            Raise(g_parameterError, settings[i].first + "=" + settings[i].second + ": " + problem);
        }
    }
    ns3::RngSeedManager::SetSeed(static_cast<uint32_t>(seed));
    ns3::RngSeedManager::SetRun(run);
    o.seed = seed;
    o.run = run;

    ns3::ScenarioResult result;
    std::string failure;
    {
        py::gil_scoped_release simulateWithoutTheGil;
        try
        {
            result = info->run(o);
        }
        catch (const std::invalid_argument& e) // ScenarioParamError, InputError among them
        {
            failure = e.what();
        }
        catch (const std::exception& e)
        {
            failure = std::string("simulation failed: ") + e.what();
        }
        // Whatever the scenario left behind goes, so the next run starts from an empty
        // simulator (scenarios destroy their own; this is the safety net).
        ns3::Simulator::Destroy();
    }
    if (!failure.empty())
    {
        Raise(failure.rfind("simulation failed", 0) == 0 ? g_simulationError : g_parameterError,
              failure);
    }
    if (!result.summary.empty() && result.summary.front().first == "interrupted")
    {
        // As Python reports Ctrl-C anywhere else; what the run wrote to `out` is complete.
        Raise(PyExc_KeyboardInterrupt, result.summary.front().second);
    }

    py::list summary;
    for (const auto& [key, value] : result.summary)
    {
        summary.append(py::make_tuple(key, value));
    }
    py::dict counters;
    for (const auto& [key, value] : result.counters)
    {
        counters[py::str(key)] = value;
    }
    py::dict out;
    out["exit_code"] = result.exitCode;
    out["summary"] = summary;
    out["artifacts"] = result.artifacts;
    out["counters"] = counters;
    out["flows"] = FlowTable(std::move(result.flows));
    out["traces"] = Traces(std::move(result.traces));
    return out;
}

} // namespace

PYBIND11_MODULE(_cnuas, m)
{
    m.doc() = "Compiled core of the cnuas package: use cnuas.Fabric, cnuas.Traffic, cnuas.Run.";
    // What the `cnuas` command's main() does first (picosecond time resolution): without it
    // every serialization time rounds to nanoseconds and the numbers differ from the CLI's.
    ns3::CnuasInit();
    g_parameterError = PyErr_NewExceptionWithDoc(
        "cnuas.ParameterError", "A parameter or ns-3 attribute the model cannot take.",
        PyExc_ValueError, nullptr);
    g_busyError = PyErr_NewExceptionWithDoc(
        "cnuas.BusyError", "A simulation is already running in this process.",
        PyExc_RuntimeError, nullptr);
    g_simulationError = PyErr_NewExceptionWithDoc(
        "cnuas.SimulationError", "The simulation failed while running.", PyExc_RuntimeError,
        nullptr);
    m.attr("ParameterError") = py::handle(g_parameterError);
    m.attr("BusyError") = py::handle(g_busyError);
    m.attr("SimulationError") = py::handle(g_simulationError);

    m.def("scenarios", &Scenarios,
          "The built-in scenarios: dicts of name, description and params [(key, default, help)].");
    m.def("attribute_info", &AttributeInfo, py::arg("name"),
          "An ns-3 attribute by its full name: its type, what it accepts, default and help.");
    m.def("class_attributes", &ClassAttributes, py::arg("class_name"),
          "Every attribute of an ns-3 class and its parents, as attribute_info describes them.");
    m.def("check_attribute", &CheckAttribute, py::arg("name"), py::arg("value"),
          "('', declared name) if name=value could be set, else (why not, '').");
    m.def("run_scenario", &RunScenario, py::arg("name"), py::arg("params"), py::arg("settings"),
          py::arg("seed"), py::arg("run"), py::arg("out_dir"), py::arg("pcap_dir") = "",
          py::arg("plots") = false, py::arg("progress") = false,
          "Runs a registered scenario as `cnuas run` does (GIL released); returns its results.");
    m.def("simulation_running", []() { return g_simulationRunning.load(); },
          "True while a run is in progress in this process.");
}
