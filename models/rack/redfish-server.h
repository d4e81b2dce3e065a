// An HTTP/1.1 server on loopback that serves a rack BMC's view as DMTF Redfish, from its own
// thread, reading snapshots the simulation thread publishes.
#ifndef CNUAS_REDFISH_SERVER_H
#define CNUAS_REDFISH_SERVER_H

#include "rack-bmc.h"
#include "redfish-service.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ns3
{

/// What the server counted (read from any thread).
struct RedfishServerCounters
{
    uint64_t connections = 0;      ///< accepted
    uint64_t refused = 0;          ///< closed at once: MaxConnections reached
    uint64_t requests = 0;         ///< complete request heads answered
    uint64_t ok = 0;               ///< 200
    uint64_t notFound = 0;         ///< 404
    uint64_t methodNotAllowed = 0; ///< 405
    uint64_t badRequests = 0;      ///< 400, 431, 501, 505: malformed or unsupported requests
    uint64_t idleTimeouts = 0;     ///< connections closed after IdleTimeout without a request
    uint64_t stalledClosed = 0;    ///< closed: output unread for StallTimeout
    uint64_t pendingOutput = 0;    ///< unsent response bytes over all connections, now
    uint64_t maxPendingOutput = 0; ///< the most there ever was
    uint64_t publications = 0;     ///< snapshots published by the simulation thread
    uint64_t rebuilds = 0;         ///< resource trees built from a new snapshot
};

/// One parsed HTTP/1.1 request head (RFC 9112 §2-§3, §5: request line and header fields).
struct RedfishHttpRequest
{
    std::string method;
    std::string target;  ///< request-target as sent
    std::string version; ///< "HTTP/1.1"
    std::map<std::string, std::string> headers; ///< names lower-cased, values trimmed
    uint64_t contentLength = 0;
    bool hasBody = false; ///< Content-Length > 0 or Transfer-Encoding present
    bool keepAlive = true;
};

/// One HTTP response.
struct RedfishHttpResponse
{
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    bool close = false; ///< close the connection after it
    /// The bytes on the wire (status line, headers, body unless `head`).
    std::string Serialize(bool head) const;
};

/**
 * \brief Serves the DMTF Redfish view of a RackBmc (see RedfishService for the resources) over
 * HTTP/1.1 on 127.0.0.1, from a thread of its own.
 *
 * Threads: the simulation thread calls Publish() (at Start and then every PublishInterval of
 * simulation time in which the BMC read something, so in real-time mode at most every
 * PublishInterval of wall time): it copies the
 * BMC's inventory into a RedfishSnapshot of plain values and swaps it in under a mutex. The
 * server thread never touches an ns-3 object: it builds the resource tree from the newest
 * snapshot and answers from it. The server also publishes as soon as a BMC monitoring cycle
 * ends (the BMC's MonitorCycle trace), so an answer is at most PublishInterval older than the
 * BMC's own view, and the BMC's view is as old as its last poll (MonitorInterval). The
 * ServiceRoot's Oem.Cnuas object tells the snapshot's simulation time and the last completed
 * cycle, for clients that must know how fresh the values are (or when the bus is quiet).
 *
 * HTTP: persistent connections and pipelining (RFC 9112 §9), several clients at once (poll
 * loop, MaxConnections), GET and HEAD only (RFC 9110 §9.1: a general-purpose server supports
 * both; Redfish is read-only here): any other method gets 405 with an Allow header (RFC 9110
 * §15.5.6). A request with a body is answered and the connection closed (the body is never
 * read). Errors carry a Redfish error body (DSP0266 "Error responses"): 404 for an unknown
 * path, 400 for a malformed request, 431 for a head over MaxRequestBytes, 501 for $ query
 * options (DSP0266: a service shall reject query parameters it does not support), 505 for an
 * HTTP version other than 1.0/1.1. A connection that sends no complete request within
 * IdleTimeout (wall clock) is closed. Output is bounded per connection: while more than
 * MaxPendingOutput bytes of responses wait to be sent, the connection's requests are not read
 * (TCP flow control holds the client); a connection whose client takes none of its output for
 * StallTimeout is closed, and its buffers are given back when it closes. Only loopback: there
 * is no authentication.
 */
class RedfishServer : public Object
{
  public:
    static TypeId GetTypeId();
    RedfishServer();
    ~RedfishServer() override;

    /// Trace signature: a snapshot was published.
    typedef void (*PublishedCallback)(uint64_t version, uint32_t devices);

    void SetBmc(Ptr<RackBmc> bmc);
    Ptr<RackBmc> GetBmc() const;

    /**
     * Binds 127.0.0.1:Port (0: an ephemeral port, see GetPort), publishes a first snapshot,
     * schedules the next publications and starts the server thread. Returns false with the
     * reason in GetError() when there is no BMC or a system call fails. Simulation thread.
     */
    bool Start();
    /// Stops the thread, closes every socket, cancels the publications. Idempotent.
    void Stop();
    bool IsRunning() const { return m_running; }
    const std::string& GetError() const { return m_error; }
    /// The port bound (after Start).
    uint16_t GetPort() const { return m_boundPort; }
    /// "http://127.0.0.1:PORT/redfish/v1".
    std::string GetBaseUrl() const;

    /// Snapshots the BMC now and hands the snapshot to the server thread. Simulation thread.
    void Publish();
    uint64_t GetPublishedVersion() const { return m_version.load(); }
    RedfishServerCounters GetCounters() const;

    /**
     * Parses a request head from the start of `buffer` (RFC 9112 §2.2, §3, §5). Returns 0 when
     * more bytes are needed, the head's length (through the blank line) when it is complete and
     * valid, -400 when it is malformed, -431 when it is longer than `maxBytes`.
     */
    static int64_t ParseHead(const std::string& buffer,
                             std::size_t maxBytes,
                             RedfishHttpRequest* out);
    /// The response to one request, from the newest snapshot (any thread).
    RedfishHttpResponse Handle(const RedfishHttpRequest& request);
    /// An error response with a Redfish error body.
    static RedfishHttpResponse Error(int status,
                                     const std::string& messageId,
                                     const std::string& message,
                                     const std::vector<std::string>& args);

  protected:
    void DoDispose() override;

  private:
    struct Connection;
    void Serve();
    void PublishTick();
    /// The BMC's MonitorCycle trace: records the cycle and publishes at once.
    void CycleEnded(uint64_t cycle, Time start, Time end);
    /// The BMC's Poll, Discovered, Dormant and Revived traces: something new to publish.
    void PollEnded(uint8_t address, uint16_t start, uint16_t count, bool ok);
    void DeviceEvent(uint8_t address, const std::string& type);
    void Connect(bool on);
    /// The current tree, rebuilt if a newer snapshot was published (server thread or Handle).
    std::shared_ptr<const RedfishService::Tree> CurrentTree();

    Ptr<RackBmc> m_bmc;
    uint64_t m_cyclesCompleted = 0;
    bool m_dirty = true; ///< the BMC read something since the last snapshot
    Time m_lastCycleStart;
    Time m_lastCycleEnd;
    uint16_t m_port = 0;
    Time m_publishInterval;
    uint32_t m_maxConnections = 32;
    uint32_t m_maxRequestBytes = 8192;
    Time m_idleTimeout;
    uint32_t m_maxPendingOutput = 256 * 1024;
    Time m_stallTimeout;
    double m_psuCapacity = 3000;

    int m_listen = -1;
    int m_wake[2] = {-1, -1};
    uint16_t m_boundPort = 0;
    bool m_running = false;
    std::string m_error;
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    EventId m_publishEvent;

    std::mutex m_snapshotMutex; ///< guards m_snapshot
    std::shared_ptr<const RedfishSnapshot> m_snapshot;
    std::atomic<uint64_t> m_version{0};
    std::mutex m_treeMutex; ///< guards m_tree, m_treeVersion
    std::shared_ptr<const RedfishService::Tree> m_tree;
    uint64_t m_treeVersion = 0;

    mutable std::mutex m_countersMutex;
    RedfishServerCounters m_counters;

    TracedCallback<uint64_t, uint32_t> m_publishedTrace;
};

} // namespace ns3

#endif
