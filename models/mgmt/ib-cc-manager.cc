#include "ib-cc-manager.h"

#include "ib-cc-attributes.h"
#include "ib-mad-header.h"

#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbCcManager");
NS_OBJECT_ENSURE_REGISTERED(IbCcManager);

TypeId
IbCcManager::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbCcManager")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbCcManager>()
            .AddAttribute("Threshold", "Switches: Threshold, 0 (off) .. 15 (most aggressive)",
                          UintegerValue(15),
                          MakeUintegerAccessor(&IbCcManager::m_threshold),
                          MakeUintegerChecker<uint8_t>(0, 15))
            .AddAttribute("MarkingRate", "Switches: eligible packets skipped between marks",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbCcManager::m_markingRate),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("PacketSize",
                          "Switches: smallest packet marked, 64-byte blocks",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbCcManager::m_packetSize),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("MarkVictims", "Switches: Victim_Mask set for every port",
                          BooleanValue(false),
                          MakeBooleanAccessor(&IbCcManager::m_markVictims),
                          MakeBooleanChecker())
            .AddAttribute("ControlMap", "CAs: SLs under congestion control (bit per SL)",
                          UintegerValue(0xFFFF),
                          MakeUintegerAccessor(&IbCcManager::m_controlMap),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("CctiTimer", "CAs: CCTI_Timer, units of 1.024 us",
                          UintegerValue(2),
                          MakeUintegerAccessor(&IbCcManager::m_cctiTimer),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("CctiIncrease", "CAs: CCTI_Increase per BECN",
                          UintegerValue(1),
                          MakeUintegerAccessor(&IbCcManager::m_cctiIncrease),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("CctiMin", "CAs: CCTI_Min",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbCcManager::m_cctiMin),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("CctiLimit", "CAs: CCTI_Limit (the table has CctiLimit + 1 entries)",
                          UintegerValue(127),
                          MakeUintegerAccessor(&IbCcManager::m_cctiLimit),
                          MakeUintegerChecker<uint16_t>(0, 127))
            .AddAttribute("CctStep",
                          "CAs: entry i of the table has CCT_Multiplier i * CctStep (shift 0)",
                          UintegerValue(64),
                          MakeUintegerAccessor(&IbCcManager::m_cctStep),
                          MakeUintegerChecker<uint16_t>())
            .AddTraceSource("MadSent",
                            "A CC Set was sent: (destination LID, attribute ID, modifier)",
                            MakeTraceSourceAccessor(&IbCcManager::m_sentTrace),
                            "ns3::IbCcManager::MadSentCallback");
    return tid;
}

IbCcManager::IbCcManager() = default;
IbCcManager::~IbCcManager() = default;

void
IbCcManager::DoDispose()
{
    m_sm = nullptr;
    m_disp = nullptr;
    m_local = nullptr;
    Object::DoDispose();
}

void
IbCcManager::Install(Ptr<IbSubnetManager> sm, Ptr<IbMadDispatcher> dispatcher, uint8_t port)
{
    m_sm = sm;
    m_disp = dispatcher;
    m_port = port;
    sm->TraceConnectWithoutContext("SweepFinished",
                                   MakeCallback(&IbCcManager::SweepFinished, this));
}

void
IbCcManager::SetLocalAgent(Ptr<IbCcAgent> agent)
{
    m_local = agent;
}

void
IbCcManager::SweepFinished(bool heavy, uint32_t, Time)
{
    // A heavy sweep may have found new nodes or given out new LIDs; a light one changes neither.
    if (heavy)
    {
        ConfigureAll();
    }
}

void
IbCcManager::SendSet(uint16_t dlid, uint16_t attr, uint32_t mod, const uint8_t* data,
                     uint32_t len)
{
    uint8_t mad[kIbMadBytes] = {};
    IbMadHeader h;
    h.SetMgmtClass(IbCc::kMgmtClass);
    h.SetClassVersion(IbCc::kClassVersion);
    h.SetMethod(IbMadMethod::Set);
    h.SetAttributeId(attr);
    h.SetAttributeModifier(mod);
    h.SetTransactionId(m_tid++);
    h.WriteTo(mad);
    std::memcpy(mad + IbCc::kDataOffset, data, std::min(len, IbCc::kDataSize));
    if (m_local && dlid == m_disp->GetLid(m_port))
    {
        m_local->Answer(mad); // the answer stays here: nobody waits for it
        ++m_sent;
        m_sentTrace(dlid, attr, mod);
        return;
    }
    if (m_disp->SendGmp(m_port, mad, dlid, 1, 0))
    {
        ++m_sent;
        m_sentTrace(dlid, attr, mod);
    }
    else
    {
        ++m_failed;
    }
}

void
IbCcManager::ConfigureAll()
{
    if (!m_sm || !m_disp)
    {
        return;
    }
    IbSwitchCongestionSettingAttr sw;
    sw.s.controlMap = 0x1F; // Victim_Mask, Credit_Mask, threshold/size, CS, marking rate valid
    sw.s.threshold = static_cast<uint8_t>(m_threshold);
    sw.s.packetSize = static_cast<uint8_t>(m_packetSize);
    sw.s.markingRate = static_cast<uint16_t>(m_markingRate);
    if (m_markVictims)
    {
        sw.s.victimMask.fill(0xFF);
    }
    uint8_t swBytes[IbSwitchCongestionSettingAttr::kSize];
    sw.WriteTo(swBytes);

    IbCaCongestionSettingAttr ca;
    ca.controlMap = static_cast<uint16_t>(m_controlMap);
    for (auto& e : ca.entries)
    {
        e.cctiTimer = static_cast<uint16_t>(m_cctiTimer);
        e.cctiIncrease = static_cast<uint8_t>(m_cctiIncrease);
        e.cctiMin = static_cast<uint8_t>(m_cctiMin);
    }
    uint8_t caBytes[IbCaCongestionSettingAttr::kSize];
    ca.WriteTo(caBytes);

    const uint32_t entries = m_cctiLimit + 1;
    const uint32_t blocks = (entries + IbCc::kCctEntriesPerBlock - 1) / IbCc::kCctEntriesPerBlock;
    std::vector<std::array<uint8_t, IbCongestionControlTableAttr::kSize>> cct(blocks);
    for (uint32_t b = 0; b < blocks; ++b)
    {
        IbCongestionControlTableAttr t;
        t.cctiLimit = static_cast<uint16_t>(m_cctiLimit);
        for (uint32_t i = 0; i < IbCc::kCctEntriesPerBlock; ++i)
        {
            const uint32_t index = b * IbCc::kCctEntriesPerBlock + i;
            t.entries[i].multiplier =
                static_cast<uint16_t>(std::min<uint32_t>(index * m_cctStep, 0x3FFF));
        }
        t.WriteTo(cct[b].data());
    }

    const IbSmSubnet& subnet = m_sm->GetSubnet();
    for (const IbSmNode& n : subnet.Nodes())
    {
        if (n.IsSwitch())
        {
            if (n.lid)
            {
                SendSet(n.lid, IbCc::kSwitchCongestionSetting, 0, swBytes, sizeof(swBytes));
            }
            continue;
        }
        for (uint8_t p = 1; p < n.ports.size(); ++p)
        {
            const uint16_t lid = n.ports[p].lid;
            if (!lid)
            {
                continue;
            }
            // The table first: the setting enables control, and must find the delays in place.
            for (uint32_t b = 0; b < blocks; ++b)
            {
                SendSet(lid, IbCc::kCongestionControlTable, b, cct[b].data(), cct[b].size());
            }
            SendSet(lid, IbCc::kCaCongestionSetting, 0, caBytes, sizeof(caBytes));
        }
    }
}

} // namespace ns3
