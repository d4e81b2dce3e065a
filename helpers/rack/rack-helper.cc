#include "rack-helper.h"

#include "helpers/rack/rs485-bus-helper.h"

#include "ns3/abort.h"
#include "ns3/double.h"
#include "ns3/node.h"

namespace ns3
{

Ptr<RackDevice>
Rack::Find(uint8_t address) const
{
    for (std::size_t i = 0; i < devices.size(); ++i)
    {
        if (slaves[i]->GetAddress() == address)
        {
            return devices[i];
        }
    }
    return nullptr;
}

RackHelper::RackHelper()
{
    m_power.SetTypeId("ns3::RackElectricalModel");
    m_bmc.SetTypeId("ns3::RackBmc");
    m_master.SetTypeId("ns3::ModbusMaster");
    m_transceiver.SetTypeId("ns3::Rs485Device");
}

void
RackHelper::SetElectricalAttribute(const std::string& name, const AttributeValue& value)
{
    m_power.Set(name, value);
}

void
RackHelper::SetBmcAttribute(const std::string& name, const AttributeValue& value)
{
    m_bmc.Set(name, value);
}

void
RackHelper::SetMasterAttribute(const std::string& name, const AttributeValue& value)
{
    m_master.Set(name, value);
}

void
RackHelper::SetTransceiverAttribute(const std::string& name, const AttributeValue& value)
{
    m_transceiver.Set(name, value);
}

namespace
{
/// One transceiver on a new node, attached to the bus, at `f`.
Ptr<Rs485Device>
AddTransceiver(Rack& r, const ObjectFactory& factory, const Rs485Format& f)
{
    Ptr<Node> n = CreateObject<Node>();
    r.nodes.Add(n);
    Ptr<Rs485Device> d = factory.Create<Rs485Device>();
    n->AddDevice(d);
    d->Attach(r.bus);
    d->SetFormat(f);
    return d;
}
} // namespace

Rack
RackHelper::Build(const RackConfig& c) const
{
    NS_ABORT_MSG_IF(c.psusPerShelf > (c.hpr ? 6u : 8u) || c.bbusPerShelf > (c.hpr ? 6u : 8u),
                    "RackHelper: too many modules per shelf for the addressing scheme");
    NS_ABORT_MSG_IF(!c.hpr && (c.psuShelves > c.psuShelfPins.size() ||
                               c.bbuShelves > c.bbuShelfPins.size()),
                    "RackHelper: give the rack-address pins of every shelf");
    NS_ABORT_MSG_IF(c.hpr && (c.psuShelves > 4 || c.bbuShelves > 4),
                    "RackHelper: HPR addressing has 4 PSU and 4 BBU shelves");
    Rack r;
    Rs485BusHelper busHelper;
    busHelper.SetChannelAttribute("Length", DoubleValue(c.busLength));
    r.bus = busHelper.CreateBus();
    r.power = m_power.Create<RackElectricalModel>();

    const RackRegisterMap psuMap =
        RackRegisterMap::LoadType(c.hpr ? "ORV3_HPR_PSU" : "ORV3_PSU", c.mapDirectory);
    const RackRegisterMap bbuMap =
        RackRegisterMap::LoadType(c.hpr ? "ORV3_HPR_BBU" : "ORV3_BBU", c.mapDirectory);
    std::vector<RackRegisterMap> maps = {psuMap, bbuMap};
    RackRegisterMap pmmPsuMap;
    RackRegisterMap pmmBbuMap;
    if (c.hpr)
    {
        pmmPsuMap = RackRegisterMap::LoadType("ORV3_HPR_PMM_PSU", c.mapDirectory);
        pmmBbuMap = RackRegisterMap::LoadType("ORV3_HPR_PMM_BBU", c.mapDirectory);
        maps.push_back(pmmPsuMap);
        maps.push_back(pmmBbuMap);
    }

    // The BMC first (node 0).
    Ptr<Rs485Device> masterDev = AddTransceiver(r, m_transceiver, psuMap.Format());
    r.master = m_master.Create<ModbusMaster>();
    r.master->SetAttribute("InterRequestDelay", TimeValue(c.minDelay));
    r.master->SetDevice(masterDev);
    masterDev->GetNode()->AddApplication(r.master);
    r.master->SetStartTime(Seconds(0));

    auto addSlave = [&](Ptr<RackDevice> dev, const RackRegisterMap& map, uint8_t address) {
        Ptr<Rs485Device> t = AddTransceiver(r, m_transceiver, map.Format());
        Ptr<ModbusSlave> s = CreateObject<ModbusSlave>();
        s->SetAddress(address);
        s->SetAttribute("ResponseDelay", TimeValue(c.responseDelay));
        NS_ABORT_MSG_IF(c.bmc && !map.Covers(address),
                        "RackHelper: " << map.name << " at address " << int(address)
                                       << " is outside the map's scan ranges; the BMC would "
                                          "never find it (choose other shelf pins)");
        s->SetRegisterBank(dev);
        s->SetDevice(t);
        t->GetNode()->AddApplication(s);
        s->SetStartTime(Seconds(0));
        dev->SetSlave(s);
        r.devices.push_back(dev);
        r.slaves.push_back(s);
    };

    std::vector<std::vector<Ptr<RackDevice>>> psuShelves;
    for (uint32_t sh = 0; sh < c.psuShelves; ++sh)
    {
        const uint32_t idx = r.power->AddPsuShelf(c.psusPerShelf);
        const uint8_t pins = c.hpr ? static_cast<uint8_t>(sh) : c.psuShelfPins[sh];
        psuShelves.emplace_back();
        for (uint32_t slot = 0; slot < c.psusPerShelf; ++slot)
        {
            Ptr<RackPsu> p = CreateObject<RackPsu>();
            p->SetMap(psuMap);
            p->Bind(r.power, idx, slot, pins);
            const uint8_t a = c.hpr ? RackAddressing::HprPsu(static_cast<uint8_t>(sh),
                                                             static_cast<uint8_t>(slot))
                                    : RackAddressing::Orv3Psu(pins, static_cast<uint8_t>(slot));
            addSlave(p, psuMap, a);
            r.psus.push_back(p);
            psuShelves.back().push_back(p);
        }
    }
    std::vector<std::vector<Ptr<RackDevice>>> bbuShelves;
    for (uint32_t sh = 0; sh < c.bbuShelves; ++sh)
    {
        const uint8_t pins = c.hpr ? static_cast<uint8_t>(sh) : c.bbuShelfPins[sh];
        bbuShelves.emplace_back();
        for (uint32_t slot = 0; slot < c.bbusPerShelf; ++slot)
        {
            Ptr<RackBbu> b = CreateObject<RackBbu>();
            b->SetMap(bbuMap);
            b->Bind(r.power, r.power->AddBbu(), slot, pins);
            const uint8_t a = c.hpr ? RackAddressing::HprBbu(static_cast<uint8_t>(sh),
                                                             static_cast<uint8_t>(slot))
                                    : RackAddressing::Orv3Bbu(pins, static_cast<uint8_t>(slot));
            addSlave(b, bbuMap, a);
            r.bbus.push_back(b);
            bbuShelves.back().push_back(b);
        }
    }
    if (c.hpr)
    {
        for (uint32_t sh = 0; sh < c.psuShelves; ++sh)
        {
            Ptr<RackPmm> p = CreateObject<RackPmm>();
            p->SetMap(pmmPsuMap);
            p->SetModules(psuShelves[sh], static_cast<uint8_t>(sh));
            addSlave(p, pmmPsuMap, RackAddressing::HprPmmPsu(static_cast<uint8_t>(sh)));
            r.pmms.push_back(p);
        }
        for (uint32_t sh = 0; sh < c.bbuShelves; ++sh)
        {
            Ptr<RackPmm> p = CreateObject<RackPmm>();
            p->SetMap(pmmBbuMap);
            p->SetModules(bbuShelves[sh], static_cast<uint8_t>(sh));
            addSlave(p, pmmBbuMap, RackAddressing::HprPmmBbu(static_cast<uint8_t>(sh)));
            r.pmms.push_back(p);
        }
    }
    if (c.bmc)
    {
        r.bmc = m_bmc.Create<RackBmc>();
        r.bmc->SetMaster(r.master);
        r.arbiter = CreateObject<Rs485BusArbiter>();
        r.bmc->SetArbiter(r.arbiter);
        for (const auto& m : maps)
        {
            r.bmc->AddMap(m);
        }
        masterDev->GetNode()->AddApplication(r.bmc);
        r.bmc->SetStartTime(Seconds(0));
    }
    return r;
}

} // namespace ns3
