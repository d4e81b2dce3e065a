#include "ib-pma-agent.h"

#include "ib-gmp.h"
#include "ib-perf-attributes.h"

#include "models/ib/ib-net-device.h"

#include "ns3/log.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbPmaAgent");
NS_OBJECT_ENSURE_REGISTERED(IbPmaAgent);

TypeId
IbPmaAgent::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbPmaAgent")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbPmaAgent>()
            .AddAttribute("RespTimeValue",
                          "ClassPortInfo.RespTimeValue: expected response time, "
                          "4.096 us x 2^value (IBA vol. 1 §13.4.6.2).",
                          UintegerValue(18),
                          MakeUintegerAccessor(&IbPmaAgent::m_respTimeValue),
                          MakeUintegerChecker<uint8_t>(0, 31))
            .AddTraceSource("MadAnswered",
                            "A PerfMgt MAD was answered: (attribute ID, request method, status).",
                            MakeTraceSourceAccessor(&IbPmaAgent::m_answeredTrace),
                            "ns3::IbPmaAgent::AnsweredCallback");
    return tid;
}

IbPmaAgent::IbPmaAgent() = default;
IbPmaAgent::~IbPmaAgent() = default;

void
IbPmaAgent::DoDispose()
{
    m_disp = nullptr;
    Object::DoDispose();
}

void
IbPmaAgent::Install(Ptr<IbMadDispatcher> dispatcher)
{
    m_disp = dispatcher;
    m_disp->SetGsiHandler(IbMgmtClass::PerfMgt, MakeCallback(&IbPmaAgent::Handle, this));
}

uint64_t
IbPmaAgent::GetAnsweredCount(uint16_t status) const
{
    auto it = m_answered.find(status);
    return it == m_answered.end() ? 0 : it->second;
}

void
IbPmaAgent::Handle(const IbReceivedMad& req)
{
    IbPerfMgtMad mad;
    mad.ReadFrom(req.view.mad.data());
    IbMadHeader& h = mad.Mad();
    const uint8_t method = h.GetMethod();
    const uint16_t attr = h.GetAttributeId();
    uint16_t status = IbMadStatus::Ok;
    if (h.GetBaseVersion() != kIbMadBaseVersion || h.GetClassVersion() != kIbPerfMgtClassVersion)
    {
        status = IbMadStatus::BadVersion;
    }
    else if (method != IbMadMethod::Get && method != IbMadMethod::Set)
    {
        status = IbMadStatus::UnsupportedMethod;
    }
    else
    {
        const bool set = method == IbMadMethod::Set;
        switch (attr)
        {
        case IbPerfAttr::ClassPortInfo: {
            if (set)
            {
                status = IbMadStatus::UnsupportedMethodAttr;
                break;
            }
            IbClassPortInfo cpi;
            cpi.baseVersion = kIbMadBaseVersion;
            cpi.classVersion = kIbPerfMgtClassVersion;
            // 64-bit PortCountersExtended and PortXmitWait are kept (§16.1.2 Table 227).
            cpi.capabilityMask =
                IbPerfCap::ExtendedWidthSupported | IbPerfCap::PortCountersXmitWaitSupported;
            cpi.respTimeValue = m_respTimeValue;
            cpi.WriteTo(mad.Data());
            break;
        }
        case IbPerfAttr::PortCounters:
            status = PortCounters(mad, set);
            if (status == IbMadStatus::Ok && set)
            {
                status = PortCounters(mad, false);
            }
            break;
        case IbPerfAttr::PortCountersExtended:
            status = PortCountersExtended(mad, set);
            if (status == IbMadStatus::Ok && set)
            {
                status = PortCountersExtended(mad, false);
            }
            break;
        default:
            status = IbMadStatus::UnsupportedMethodAttr;
        }
    }
    h.SetMethod(IbMadMethod::GetResp);
    h.SetStatus(status);
    m_answered[status]++;
    m_answeredTrace(attr, method, status);
    uint8_t bytes[kIbMadBytes];
    mad.WriteTo(bytes);
    m_disp->SendGmpResponse(req, bytes);
}

uint16_t
IbPmaAgent::PortCounters(IbPerfMgtMad& mad, bool set)
{
    IbPortCountersAttr a;
    a.ReadFrom(mad.Data());
    Ptr<IbNetDevice> d = m_disp->GetPort(a.portSelect);
    if (!d)
    {
        return IbMadStatus::InvalidField; // no such port, or 0xFF (AllPortSelect unsupported)
    }
    IbPortCounters& c = d->GetCountersForUpdate();
    if (set)
    {
        // §16.1.3.5: each CounterSelect bit names one counter the Set resets.
        const uint16_t s = a.counterSelect;
        auto clear = [s](uint16_t bit, auto& counter) {
            if (s & bit)
            {
                counter = 0;
            }
        };
        clear(IbCounterSelect::SymbolError, c.symbolErrorCounter);
        clear(IbCounterSelect::LinkErrorRecovery, c.linkErrorRecoveryCounter);
        clear(IbCounterSelect::LinkDowned, c.linkDownedCounter);
        clear(IbCounterSelect::PortRcvErrors, c.portRcvErrors);
        clear(IbCounterSelect::PortRcvRemotePhysicalErrors, c.portRcvRemotePhysicalErrors);
        clear(IbCounterSelect::PortRcvSwitchRelayErrors, c.portRcvSwitchRelayErrors);
        clear(IbCounterSelect::PortXmitDiscards, c.portXmitDiscards);
        clear(IbCounterSelect::PortXmitConstraintErrors, c.portXmitConstraintErrors);
        clear(IbCounterSelect::PortRcvConstraintErrors, c.portRcvConstraintErrors);
        clear(IbCounterSelect::LocalLinkIntegrityErrors, c.localLinkIntegrityErrors);
        clear(IbCounterSelect::ExcessiveBufferOverrunErrors, c.excessiveBufferOverrunErrors);
        clear(IbCounterSelect::Vl15Dropped, c.vl15Dropped);
        clear(IbCounterSelect::PortXmitData, c.portXmitData);
        clear(IbCounterSelect::PortRcvData, c.portRcvData);
        clear(IbCounterSelect::PortXmitPkts, c.portXmitPkts);
        clear(IbCounterSelect::PortRcvPkts, c.portRcvPkts);
        if (a.counterSelect2 & IbCounterSelect::PortXmitWait)
        {
            c.portXmitWait = 0;
        }
        return IbMadStatus::Ok;
    }
    a.symbolErrorCounter = c.symbolErrorCounter;
    a.linkErrorRecoveryCounter = c.linkErrorRecoveryCounter;
    a.linkDownedCounter = c.linkDownedCounter;
    a.portRcvErrors = c.portRcvErrors;
    a.portRcvRemotePhysicalErrors = c.portRcvRemotePhysicalErrors;
    a.portRcvSwitchRelayErrors = c.portRcvSwitchRelayErrors;
    a.portXmitDiscards = c.portXmitDiscards;
    a.portXmitConstraintErrors = c.portXmitConstraintErrors;
    a.portRcvConstraintErrors = c.portRcvConstraintErrors;
    a.localLinkIntegrityErrors = c.localLinkIntegrityErrors;
    a.excessiveBufferOverrunErrors = c.excessiveBufferOverrunErrors;
    a.vl15Dropped = c.vl15Dropped;
    a.portXmitData = c.portXmitData;
    a.portRcvData = c.portRcvData;
    a.portXmitPkts = c.portXmitPkts;
    a.portRcvPkts = c.portRcvPkts;
    a.portXmitWait = c.portXmitWait;
    a.WriteTo(mad.Data());
    return IbMadStatus::Ok;
}

uint16_t
IbPmaAgent::PortCountersExtended(IbPerfMgtMad& mad, bool set)
{
    IbPortCountersExtendedAttr a;
    a.ReadFrom(mad.Data());
    Ptr<IbNetDevice> d = m_disp->GetPort(a.portSelect);
    if (!d)
    {
        return IbMadStatus::InvalidField;
    }
    IbPortCounters& c = d->GetCountersForUpdate();
    uint64_t* counters[] = {&c.extXmitData,         &c.extRcvData,
                            &c.extXmitPkts,         &c.extRcvPkts,
                            &c.extUnicastXmitPkts,  &c.extUnicastRcvPkts,
                            &c.extMulticastXmitPkts, &c.extMulticastRcvPkts};
    if (set)
    {
        // §16.1.4.11: CounterSelect bit i resets the i-th counter of the attribute.
        for (int i = 0; i < 8; ++i)
        {
            if (a.counterSelect & (1u << i))
            {
                *counters[i] = 0;
            }
        }
        return IbMadStatus::Ok;
    }
    a.portXmitData = c.extXmitData;
    a.portRcvData = c.extRcvData;
    a.portXmitPkts = c.extXmitPkts;
    a.portRcvPkts = c.extRcvPkts;
    a.portUnicastXmitPkts = c.extUnicastXmitPkts;
    a.portUnicastRcvPkts = c.extUnicastRcvPkts;
    a.portMulticastXmitPkts = c.extMulticastXmitPkts;
    a.portMulticastRcvPkts = c.extMulticastRcvPkts;
    a.WriteTo(mad.Data());
    return IbMadStatus::Ok;
}

} // namespace ns3
