#include "ib-cc-agent.h"

#include "ib-cc-attributes.h"
#include "ib-mad-header.h"
#include "ib-perf-attributes.h"

#include "models/rdma/ib-wire-bytes.h"

#include "ns3/log.h"
#include "ns3/uinteger.h"

#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbCcAgent");
NS_OBJECT_ENSURE_REGISTERED(IbCcAgent);

TypeId
IbCcAgent::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbCcAgent")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbCcAgent>()
            .AddAttribute("ControlTableCap",
                          "CA: 64-entry congestion control table blocks supported "
                          "(CongestionInfo.ControlTableCap)",
                          UintegerValue(2),
                          MakeUintegerAccessor(&IbCcAgent::m_cctBlocks),
                          MakeUintegerChecker<uint8_t>(1, 127))
            .AddTraceSource("MadAnswered",
                            "A CC MAD was answered: (attribute ID, method, status)",
                            MakeTraceSourceAccessor(&IbCcAgent::m_answeredTrace),
                            "ns3::IbCcAgent::AnsweredCallback");
    return tid;
}

IbCcAgent::IbCcAgent() = default;
IbCcAgent::~IbCcAgent() = default;

void
IbCcAgent::DoDispose()
{
    m_disp = nullptr;
    m_marker = nullptr;
    m_policy = nullptr;
    Object::DoDispose();
}

void
IbCcAgent::InstallSwitch(Ptr<IbMadDispatcher> dispatcher, Ptr<IbCcSwitchMarker> marker)
{
    m_disp = dispatcher;
    m_marker = marker;
    if (m_disp) // without one the agent only answers MADs handed to Answer()
    {
        m_disp->SetGsiHandler(IbMgmtClass::CongestionMgt,
                              MakeCallback(&IbCcAgent::Handle, this));
    }
}

void
IbCcAgent::InstallCa(Ptr<IbMadDispatcher> dispatcher, Ptr<RdmaCcIba> policy)
{
    m_disp = dispatcher;
    m_policy = policy;
    if (m_disp) // without one the agent only answers MADs handed to Answer()
    {
        m_disp->SetGsiHandler(IbMgmtClass::CongestionMgt,
                              MakeCallback(&IbCcAgent::Handle, this));
    }
}

uint64_t
IbCcAgent::GetCcKey() const
{
    return m_ccKey;
}

uint16_t
IbCcAgent::GetKeyViolations() const
{
    return m_keyViolations;
}

uint64_t
IbCcAgent::GetAnsweredCount(uint16_t status) const
{
    auto it = m_answered.find(status);
    return it == m_answered.end() ? 0 : it->second;
}

void
IbCcAgent::Handle(const IbReceivedMad& req)
{
    uint8_t mad[kIbMadBytes];
    std::memcpy(mad, req.view.mad.data(), kIbMadBytes);
    if (Answer(mad))
    {
        m_disp->SendGmpResponse(req, mad);
    }
}

bool
IbCcAgent::Answer(uint8_t* mad)
{
    IbMadHeader h;
    h.ReadFrom(mad);
    const uint8_t method = h.GetMethod();
    const uint16_t attr = h.GetAttributeId();
    // Annex A10 CC_Key: a node with a nonzero key ignores requests that do not carry it.
    if (m_ccKey != 0 && IbWireLoad64(mad + IbCc::kCcKeyOffset) != m_ccKey)
    {
        if (m_keyViolations < 0xFFFF)
        {
            ++m_keyViolations;
        }
        return false;
    }
    uint16_t status = IbMadStatus::Ok;
    if (h.GetBaseVersion() != kIbMadBaseVersion || h.GetClassVersion() != IbCc::kClassVersion)
    {
        status = IbMadStatus::BadVersion;
    }
    else if (method != IbMadMethod::Get && method != IbMadMethod::Set)
    {
        status = IbMadStatus::UnsupportedMethod;
    }
    else
    {
        uint8_t data[IbCc::kDataSize];
        std::memcpy(data, mad + IbCc::kDataOffset, IbCc::kDataSize);
        status = Attribute(attr, h.GetAttributeModifier(), method == IbMadMethod::Set, data);
        if (status == IbMadStatus::Ok)
        {
            std::memcpy(mad + IbCc::kDataOffset, data, IbCc::kDataSize);
        }
    }
    h.SetMethod(IbMadMethod::GetResp);
    h.SetStatus(status);
    h.WriteTo(mad);
    m_answered[status]++;
    m_answeredTrace(attr, method, status);
    return true;
}

uint16_t
IbCcAgent::Attribute(uint16_t attr, uint32_t mod, bool set, uint8_t* data)
{
    const bool sw = m_marker != nullptr;
    switch (attr)
    {
    case IbCc::kClassPortInfo: {
        if (set)
        {
            return IbMadStatus::UnsupportedMethodAttr;
        }
        IbClassPortInfo cpi;
        cpi.baseVersion = kIbMadBaseVersion;
        cpi.classVersion = IbCc::kClassVersion;
        cpi.respTimeValue = 18;
        std::memset(data, 0, IbCc::kDataSize);
        cpi.WriteTo(data);
        return IbMadStatus::Ok;
    }
    case IbCc::kCongestionInfo: {
        if (set)
        {
            return IbMadStatus::UnsupportedMethodAttr;
        }
        IbCongestionInfoAttr ci;
        // No credit starvation (switch) and QP-based control only (CA): no capability bits.
        ci.controlTableCap = sw ? 0 : m_cctBlocks;
        std::memset(data, 0, IbCc::kDataSize);
        ci.WriteTo(data);
        return IbMadStatus::Ok;
    }
    case IbCc::kCongestionKeyInfo: {
        IbCongestionKeyInfoAttr k;
        if (set)
        {
            k.ReadFrom(data);
            m_ccKey = k.ccKey;
            m_keyProtect = k.protectBit;
            m_keyLease = k.leasePeriod;
            m_keyViolations = k.violations;
        }
        k.ccKey = m_ccKey;
        k.protectBit = m_keyProtect;
        k.leasePeriod = m_keyLease;
        k.violations = m_keyViolations;
        std::memset(data, 0, IbCc::kDataSize);
        k.WriteTo(data);
        return IbMadStatus::Ok;
    }
    case IbCc::kSwitchCongestionSetting: {
        if (!sw)
        {
            return IbMadStatus::UnsupportedMethodAttr;
        }
        IbSwitchCongestionSettingAttr a;
        if (set)
        {
            a.ReadFrom(data);
            if (a.s.threshold > 15)
            {
                return IbMadStatus::InvalidField;
            }
            m_marker->SetSwitchSetting(a.s);
        }
        a.s = m_marker->GetSwitchSetting();
        std::memset(data, 0, IbCc::kDataSize);
        a.WriteTo(data);
        return IbMadStatus::Ok;
    }
    case IbCc::kSwitchPortCongestionSetting: {
        if (!sw)
        {
            return IbMadStatus::UnsupportedMethodAttr;
        }
        const uint8_t ports = m_disp ? m_disp->GetNumPorts() : 255;
        if (mod > ports / IbCc::kPortsPerBlock)
        {
            return IbMadStatus::InvalidField;
        }
        IbSwitchPortCongestionSettingAttr a;
        if (set)
        {
            a.ReadFrom(data);
            for (uint32_t i = 0; i < IbCc::kPortsPerBlock; ++i)
            {
                const uint32_t port = mod * IbCc::kPortsPerBlock + i;
                if (port <= ports)
                {
                    m_marker->SetPortSetting(static_cast<uint8_t>(port), a.ports[i]);
                }
            }
        }
        for (uint32_t i = 0; i < IbCc::kPortsPerBlock; ++i)
        {
            const uint32_t port = mod * IbCc::kPortsPerBlock + i;
            a.ports[i] = port <= ports ? m_marker->GetPortSetting(static_cast<uint8_t>(port))
                                       : IbCcSwitchPortSetting{};
        }
        std::memset(data, 0, IbCc::kDataSize);
        a.WriteTo(data);
        return IbMadStatus::Ok;
    }
    case IbCc::kCaCongestionSetting: {
        if (sw || !m_policy)
        {
            return IbMadStatus::UnsupportedMethodAttr;
        }
        IbCaCongestionSettingAttr a;
        if (set)
        {
            a.ReadFrom(data);
            m_policy->SetPortControl(a.portControl);
            for (uint8_t sl = 0; sl < 16; ++sl)
            {
                m_policy->SetCaEntry(sl, a.entries[sl]);
            }
            m_policy->SetControlMap(a.controlMap);
        }
        a.portControl = m_policy->GetPortControl();
        a.controlMap = m_policy->GetControlMap();
        for (uint8_t sl = 0; sl < 16; ++sl)
        {
            a.entries[sl] = m_policy->GetCaEntry(sl);
        }
        std::memset(data, 0, IbCc::kDataSize);
        a.WriteTo(data);
        return IbMadStatus::Ok;
    }
    case IbCc::kCongestionControlTable: {
        if (sw || !m_policy)
        {
            return IbMadStatus::UnsupportedMethodAttr;
        }
        if (mod >= m_cctBlocks)
        {
            return IbMadStatus::InvalidField;
        }
        IbCongestionControlTableAttr a;
        const uint16_t first = static_cast<uint16_t>(mod * IbCc::kCctEntriesPerBlock);
        if (set)
        {
            a.ReadFrom(data);
            if (a.cctiLimit >= uint32_t(m_cctBlocks) * IbCc::kCctEntriesPerBlock)
            {
                return IbMadStatus::InvalidField;
            }
            m_policy->SetCctEntries(first,
                                    std::vector<IbCctEntry>(a.entries.begin(), a.entries.end()));
            m_policy->SetCctiLimit(a.cctiLimit);
        }
        a.cctiLimit = m_policy->GetCctiLimit();
        for (uint32_t i = 0; i < IbCc::kCctEntriesPerBlock; ++i)
        {
            a.entries[i] = m_policy->GetCctEntry(static_cast<uint16_t>(first + i));
        }
        std::memset(data, 0, IbCc::kDataSize);
        a.WriteTo(data);
        return IbMadStatus::Ok;
    }
    default:
        return IbMadStatus::UnsupportedMethodAttr;
    }
}

} // namespace ns3
