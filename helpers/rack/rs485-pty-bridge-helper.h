// Puts a pseudo-terminal on an RS-485 bus: a transceiver plus an Rs485PtyBridge, and the
// real-time scheduler the bridge needs.
#ifndef CNUAS_RS485_PTY_BRIDGE_HELPER_H
#define CNUAS_RS485_PTY_BRIDGE_HELPER_H

#include "helpers/rack/rs485-bus-helper.h"
#include "models/emu/rs485-pty-bridge.h"

#include "ns3/object-factory.h"

#include <string>

namespace ns3
{

/**
 * \brief Installs Rs485PtyBridge objects: one new Rs485Device on the node, attached to the bus,
 * with the bridge bound to it (not started: Start() opens the pty and may fail).
 */
class Rs485PtyBridgeHelper
{
  public:
    Rs485PtyBridgeHelper();

    /// Rs485PtyBridge attributes (LinkPath, LocalEcho, Parity, RequireRealtime).
    void SetBridgeAttribute(const std::string& name, const AttributeValue& value);
    /// Rs485Device attributes of the bridge's transceiver (TxEnableDelay, BitErrorRate...).
    void SetDeviceAttribute(const std::string& name, const AttributeValue& value);
    /**
     * The transceiver's format until a client configures the port (the pty starts at it, so
     * a client that never calls tcsetattr talks at it): normally the segment's format.
     */
    void SetFormat(const Rs485Format& f);

    /**
     * Selects ns3::RealtimeSimulatorImpl in best-effort mode (HardLimit off: a late event is run
     * late, never an abort) for the simulator created next. Call before the first Simulator
     * call of the run (or after Simulator::Destroy).
     */
    static void EnableRealtime();
    /// Back to Cnuas's simulator core (CnuasInit's) for the simulator created next.
    static void DisableRealtime();

    Ptr<Rs485PtyBridge> Install(Ptr<Node> node, Ptr<Rs485Channel> bus) const;

  private:
    Rs485BusHelper m_busHelper;
    ObjectFactory m_bridgeFactory;
};

} // namespace ns3

#endif
