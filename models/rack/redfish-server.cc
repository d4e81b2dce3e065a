#include "redfish-server.h"

#include "ns3/abort.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <malloc.h>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RedfishServer");
NS_OBJECT_ENSURE_REGISTERED(RedfishServer);

namespace
{

const char* const kBaseMessage = "Base.1.8.";

const char*
ReasonPhrase(int status)
{
    switch (status)
    {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

/// RFC 9110 §5.6.2 tchar.
bool
IsTchar(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

std::string
Lower(std::string s)
{
    for (char& c : s)
    {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
}

std::string
Trim(const std::string& s)
{
    std::size_t b = 0;
    std::size_t e = s.size();
    while (b < e && (s[b] == ' ' || s[b] == '\t'))
    {
        ++b;
    }
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t'))
    {
        --e;
    }
    return s.substr(b, e - b);
}

/// Percent-decoding of a path (RFC 3986 §2.1); false on a malformed escape or a NUL.
bool
PercentDecode(const std::string& in, std::string* out)
{
    out->clear();
    for (std::size_t i = 0; i < in.size(); ++i)
    {
        if (in[i] != '%')
        {
            out->push_back(in[i]);
            continue;
        }
        if (i + 2 >= in.size() || std::isxdigit(static_cast<unsigned char>(in[i + 1])) == 0 ||
            std::isxdigit(static_cast<unsigned char>(in[i + 2])) == 0)
        {
            return false;
        }
        const char c = static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16));
        if (c == '\0')
        {
            return false;
        }
        out->push_back(c);
        i += 2;
    }
    return true;
}

} // namespace

std::string
RedfishHttpResponse::Serialize(bool head) const
{
    std::string s = "HTTP/1.1 " + std::to_string(status) + " " + ReasonPhrase(status) + "\r\n";
    for (const auto& [k, v] : headers)
    {
        s += k + ": " + v + "\r\n";
    }
    // HEAD: the same header fields as GET, Content-Length included (RFC 9110 §9.3.2).
    s += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    s += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
    s += "\r\n";
    if (!head)
    {
        s += body;
    }
    return s;
}

struct RedfishServer::Connection
{
    int fd = -1;
    std::string in;
    std::string out;
    std::chrono::steady_clock::time_point last;
    std::chrono::steady_clock::time_point lastSent; ///< last time the client took output
    bool closeAfterWrite = false;
    /// Response sent and write side shut: unread request bytes are drained until the client
    /// closes, so that closing does not reset the connection under the response (RFC 9112
    /// §9.6, "tear-down").
    bool lingering = false;
    std::chrono::steady_clock::time_point lingerUntil;
    bool dead = false;
};

TypeId
RedfishServer::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RedfishServer")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<RedfishServer>()
            .AddAttribute("Port",
                          "TCP port on 127.0.0.1; 0 picks an ephemeral port (GetPort tells which).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RedfishServer::m_port),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("PublishInterval",
                          "Simulation time between two snapshots of the BMC's inventory handed "
                          "to the server thread (s).",
                          TimeValue(Seconds(1)),
                          MakeTimeAccessor(&RedfishServer::m_publishInterval),
                          MakeTimeChecker(MilliSeconds(1)))
            .AddAttribute("MaxConnections",
                          "Client connections served at once; more are closed on accept.",
                          UintegerValue(32),
                          MakeUintegerAccessor(&RedfishServer::m_maxConnections),
                          MakeUintegerChecker<uint32_t>(1, 1024))
            .AddAttribute("MaxRequestBytes",
                          "Longest request head accepted (bytes); longer ones get 431.",
                          UintegerValue(8192),
                          MakeUintegerAccessor(&RedfishServer::m_maxRequestBytes),
                          MakeUintegerChecker<uint32_t>(256, 1 << 20))
            .AddAttribute("IdleTimeout",
                          "Wall-clock time a connection may stay without completing a request "
                          "before it is closed (s).",
                          TimeValue(Seconds(10)),
                          MakeTimeAccessor(&RedfishServer::m_idleTimeout),
                          MakeTimeChecker(MilliSeconds(10)))
            .AddAttribute("MaxPendingOutput",
                          "Unsent response bytes a connection may have queued; while it has "
                          "more, the server stops reading its requests (TCP flow control then "
                          "holds the client back). A client that pipelines requests and never "
                          "reads cannot make the server keep its responses (RFC 9112 §9.3.2: a "
                          "server may process pipelined requests in parallel, it need not "
                          "buffer without bound).",
                          UintegerValue(256 * 1024),
                          MakeUintegerAccessor(&RedfishServer::m_maxPendingOutput),
                          MakeUintegerChecker<uint32_t>(4096))
            .AddAttribute("StallTimeout",
                          "Wall-clock time a connection with unsent output may go without "
                          "taking any of it before it is closed (the client does not read).",
                          TimeValue(Seconds(10)),
                          MakeTimeAccessor(&RedfishServer::m_stallTimeout),
                          MakeTimeChecker(MilliSeconds(10)))
            .AddAttribute("PsuCapacity",
                          "Rated output of one PSU (W), reported as PowerCapacityWatts: the "
                          "ORv3 registers do not carry it (ORv3 3 kW rectifier).",
                          DoubleValue(3000),
                          MakeDoubleAccessor(&RedfishServer::m_psuCapacity),
                          MakeDoubleChecker<double>(0))
            .AddTraceSource("Published",
                            "A snapshot of the BMC was handed to the server thread.",
                            MakeTraceSourceAccessor(&RedfishServer::m_publishedTrace),
                            "ns3::RedfishServer::PublishedCallback");
    return tid;
}

RedfishServer::RedfishServer() = default;

RedfishServer::~RedfishServer()
{
    Stop();
}

void
RedfishServer::DoDispose()
{
    Stop();
    Connect(false);
    m_bmc = nullptr;
    Object::DoDispose();
}

void
RedfishServer::SetBmc(Ptr<RackBmc> bmc)
{
    NS_ABORT_MSG_IF(m_running, "RedfishServer::SetBmc after Start");
    Connect(false);
    m_bmc = bmc;
    Connect(true);
}

void
RedfishServer::Connect(bool on)
{
    if (!m_bmc)
    {
        return;
    }
    auto cycle = MakeCallback(&RedfishServer::CycleEnded, this);
    auto poll = MakeCallback(&RedfishServer::PollEnded, this);
    auto dev = MakeCallback(&RedfishServer::DeviceEvent, this);
    if (on)
    {
        m_bmc->TraceConnectWithoutContext("MonitorCycle", cycle);
        m_bmc->TraceConnectWithoutContext("Poll", poll);
        for (const char* t : {"Discovered", "Dormant", "Revived"})
        {
            m_bmc->TraceConnectWithoutContext(t, dev);
        }
    }
    else
    {
        m_bmc->TraceDisconnectWithoutContext("MonitorCycle", cycle);
        m_bmc->TraceDisconnectWithoutContext("Poll", poll);
        for (const char* t : {"Discovered", "Dormant", "Revived"})
        {
            m_bmc->TraceDisconnectWithoutContext(t, dev);
        }
    }
}

void
RedfishServer::PollEnded(uint8_t address, uint16_t start, uint16_t count, bool ok)
{
    m_dirty = true;
}

void
RedfishServer::DeviceEvent(uint8_t address, const std::string& type)
{
    m_dirty = true;
}

void
RedfishServer::CycleEnded(uint64_t cycle, Time start, Time end)
{
    m_cyclesCompleted++;
    m_lastCycleStart = start;
    m_lastCycleEnd = end;
    if (m_running)
    {
        Publish();
    }
}

Ptr<RackBmc>
RedfishServer::GetBmc() const
{
    return m_bmc;
}

std::string
RedfishServer::GetBaseUrl() const
{
    return "http://127.0.0.1:" + std::to_string(m_boundPort) + "/redfish/v1";
}

RedfishServerCounters
RedfishServer::GetCounters() const
{
    std::lock_guard<std::mutex> lock(m_countersMutex);
    return m_counters;
}

bool
RedfishServer::Start()
{
    if (m_running)
    {
        return true;
    }
    m_error.clear();
    if (!m_bmc)
    {
        m_error = "RedfishServer: no BMC (SetBmc)";
        return false;
    }
    auto fail = [this](const std::string& what) {
        m_error = "RedfishServer: " + what + ": " + std::strerror(errno);
        if (m_listen >= 0)
        {
            close(m_listen);
            m_listen = -1;
        }
        for (int& fd : m_wake)
        {
            if (fd >= 0)
            {
                close(fd);
                fd = -1;
            }
        }
        return false;
    };
    m_listen = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m_listen < 0)
    {
        return fail("socket");
    }
    const int one = 1;
    setsockopt(m_listen, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(m_port);
    // Loopback only: the service has no authentication (DSP0266 would require it on a network).
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    {
        return fail("bind 127.0.0.1:" + std::to_string(m_port));
    }
    if (listen(m_listen, 64) != 0)
    {
        return fail("listen");
    }
    socklen_t len = sizeof(addr);
    if (getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    {
        return fail("getsockname");
    }
    m_boundPort = ntohs(addr.sin_port);
    if (pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0)
    {
        return fail("pipe2");
    }
    PublishTick();
    m_stop = false;
    m_thread = std::thread(&RedfishServer::Serve, this);
    m_running = true;
    NS_LOG_INFO("Redfish on " << GetBaseUrl());
    return true;
}

void
RedfishServer::Stop()
{
    m_publishEvent.Cancel();
    if (!m_running)
    {
        return;
    }
    m_stop = true;
    const char b = 1;
    if (write(m_wake[1], &b, 1) < 0)
    {
        NS_LOG_WARN("RedfishServer: wake pipe: " << std::strerror(errno));
    }
    if (m_thread.joinable())
    {
        m_thread.join();
    }
    close(m_listen);
    m_listen = -1;
    for (int& fd : m_wake)
    {
        close(fd);
        fd = -1;
    }
    m_running = false;
}

void
RedfishServer::PublishTick()
{
    // A snapshot copies every register of every device: skip it when the BMC read nothing.
    if (m_dirty || m_version.load() == 0)
    {
        Publish();
    }
    m_publishEvent = Simulator::Schedule(m_publishInterval, &RedfishServer::PublishTick, this);
}

void
RedfishServer::Publish()
{
    if (!m_bmc)
    {
        return;
    }
    m_dirty = false;
    RedfishSnapshot snap = RedfishSnapshot::FromBmc(*m_bmc, m_version.load() + 1);
    snap.cyclesCompleted = m_cyclesCompleted;
    if (m_cyclesCompleted > 0)
    {
        snap.lastCycleStart = m_lastCycleStart.GetSeconds();
        snap.lastCycleEnd = m_lastCycleEnd.GetSeconds();
    }
    auto s = std::make_shared<const RedfishSnapshot>(std::move(snap));
    {
        std::lock_guard<std::mutex> lock(m_snapshotMutex);
        m_snapshot = s;
    }
    m_version = s->version;
    {
        std::lock_guard<std::mutex> lock(m_countersMutex);
        ++m_counters.publications;
    }
    m_publishedTrace(s->version, static_cast<uint32_t>(s->devices.size()));
}

std::shared_ptr<const RedfishService::Tree>
RedfishServer::CurrentTree()
{
    std::shared_ptr<const RedfishSnapshot> snap;
    {
        std::lock_guard<std::mutex> lock(m_snapshotMutex);
        snap = m_snapshot;
    }
    std::lock_guard<std::mutex> lock(m_treeMutex);
    const uint64_t v = snap ? snap->version : 0;
    if (!m_tree || v != m_treeVersion)
    {
        RedfishServiceOptions o;
        o.psuCapacityWatts = m_psuCapacity;
        RedfishService svc(o);
        m_tree = std::make_shared<const RedfishService::Tree>(
            svc.Build(snap ? *snap : RedfishSnapshot()));
        m_treeVersion = v;
        std::lock_guard<std::mutex> c(m_countersMutex);
        ++m_counters.rebuilds;
    }
    return m_tree;
}

int64_t
RedfishServer::ParseHead(const std::string& buffer, std::size_t maxBytes, RedfishHttpRequest* out)
{
    // Find the end of the head: an empty line. RFC 9112 §2.2 lets a recipient accept a bare LF
    // as a line terminator; we do.
    std::size_t pos = 0;
    // RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line.
    while (pos < buffer.size() && (buffer[pos] == '\r' || buffer[pos] == '\n'))
    {
        ++pos;
    }
    std::vector<std::string> lines;
    std::size_t end = std::string::npos;
    std::size_t start = pos;
    while (true)
    {
        const std::size_t nl = buffer.find('\n', start);
        if (nl == std::string::npos)
        {
            break;
        }
        std::string line = buffer.substr(start, nl - start);
        if (!line.empty() && line.back() == '\r')
        {
            line.pop_back();
        }
        start = nl + 1;
        if (line.empty())
        {
            end = start;
            break;
        }
        lines.push_back(std::move(line));
        if (start > maxBytes)
        {
            return -431;
        }
    }
    if (end == std::string::npos)
    {
        return buffer.size() > maxBytes ? -431 : 0;
    }
    if (end > maxBytes)
    {
        return -431;
    }
    if (lines.empty())
    {
        return -400;
    }
    for (const std::string& l : lines)
    {
        for (char c : l)
        {
            const auto u = static_cast<unsigned char>(c);
            if ((u < 0x20 && c != '\t') || u == 0x7f)
            {
                return -400; // CR, NUL or other controls inside a line (RFC 9112 §2.2)
            }
        }
    }
    RedfishHttpRequest r;
    // Request line: method SP request-target SP HTTP-version (RFC 9112 §3).
    const std::string& rl = lines[0];
    const std::size_t s1 = rl.find(' ');
    const std::size_t s2 = s1 == std::string::npos ? s1 : rl.find(' ', s1 + 1);
    if (s1 == std::string::npos || s2 == std::string::npos || rl.find(' ', s2 + 1) != rl.npos)
    {
        return -400;
    }
    r.method = rl.substr(0, s1);
    r.target = rl.substr(s1 + 1, s2 - s1 - 1);
    r.version = rl.substr(s2 + 1);
    if (r.method.empty() || r.target.empty() ||
        !std::all_of(r.method.begin(), r.method.end(), IsTchar))
    {
        return -400;
    }
    // HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3).
    if (r.version.size() != 8 || r.version.compare(0, 5, "HTTP/") != 0 ||
        std::isdigit(static_cast<unsigned char>(r.version[5])) == 0 || r.version[6] != '.' ||
        std::isdigit(static_cast<unsigned char>(r.version[7])) == 0)
    {
        return -400;
    }
    bool haveLength = false;
    for (std::size_t i = 1; i < lines.size(); ++i)
    {
        const std::string& l = lines[i];
        if (l[0] == ' ' || l[0] == '\t')
        {
            return -400; // obs-fold: a server rejects it with 400 (RFC 9112 §5.2)
        }
        const std::size_t colon = l.find(':');
        if (colon == std::string::npos || colon == 0)
        {
            return -400;
        }
        const std::string name = l.substr(0, colon);
        // No whitespace between the field name and the colon (RFC 9112 §5.1).
        if (!std::all_of(name.begin(), name.end(), IsTchar))
        {
            return -400;
        }
        const std::string key = Lower(name);
        const std::string value = Trim(l.substr(colon + 1));
        if (key == "content-length")
        {
            if (value.empty() || value.size() > 18 ||
                !std::all_of(value.begin(), value.end(),
                             [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            {
                return -400; // RFC 9112 §6.3: an invalid Content-Length is unrecoverable
            }
            const uint64_t n = std::stoull(value);
            if (haveLength && n != r.contentLength)
            {
                return -400;
            }
            haveLength = true;
            r.contentLength = n;
        }
        if (key == "transfer-encoding")
        {
            r.hasBody = true;
        }
        auto it = r.headers.find(key);
        if (it == r.headers.end())
        {
            r.headers[key] = value;
        }
        else
        {
            it->second += ", " + value; // RFC 9110 §5.3: combine repeated fields
        }
    }
    if (r.contentLength > 0)
    {
        r.hasBody = true;
    }
    // RFC 9112 §3.2: a server responds 400 to an HTTP/1.1 request without a Host field.
    if (r.version == "HTTP/1.1" && r.headers.count("host") == 0)
    {
        return -400;
    }
    const std::string conn = Lower(r.headers.count("connection") ? r.headers["connection"] : "");
    if (r.version == "HTTP/1.0")
    {
        r.keepAlive = conn.find("keep-alive") != std::string::npos;
    }
    else
    {
        r.keepAlive = conn.find("close") == std::string::npos;
    }
    *out = std::move(r);
    return static_cast<int64_t>(end);
}

RedfishHttpResponse
RedfishServer::Error(int status,
                     const std::string& messageId,
                     const std::string& message,
                     const std::vector<std::string>& args)
{
    RedfishHttpResponse r;
    r.status = status;
    r.headers = {{"Content-Type", "application/json; charset=utf-8"}, {"OData-Version", "4.0"}};
    const std::string resolution =
        status == 404   ? "Check the URI; GET /redfish/v1 lists what exists."
        : status == 405 ? "This service is read-only: use GET or HEAD."
                        : "Correct the request and send it again.";
    r.body = RedfishService::ErrorBody(kBaseMessage + messageId, message, args, resolution);
    return r;
}

RedfishHttpResponse
RedfishServer::Handle(const RedfishHttpRequest& q)
{
    if (q.version != "HTTP/1.1" && q.version != "HTTP/1.0")
    {
        auto r = Error(505, "GeneralError", "HTTP version " + q.version + " is not supported.",
                       {});
        r.close = true;
        return r;
    }
    // origin-form, or absolute-form "http://host[:port]/path" (RFC 9112 §3.2.2).
    std::string target = q.target;
    if (target.compare(0, 7, "http://") == 0)
    {
        const std::size_t slash = target.find('/', 7);
        target = slash == std::string::npos ? "/" : target.substr(slash);
    }
    if (target.empty() || target[0] != '/')
    {
        return Error(400, "GeneralError", "The request target must be a path.", {});
    }
    std::string query;
    const std::size_t qm = target.find('?');
    if (qm != std::string::npos)
    {
        query = target.substr(qm + 1);
        target.resize(qm);
    }
    std::string path;
    if (!PercentDecode(target, &path))
    {
        return Error(400, "GeneralError", "The request target has a malformed %-escape.", {});
    }
    while (path.size() > 1 && path.back() == '/')
    {
        path.pop_back(); // "/redfish/v1/" and "/redfish/v1" name the same resource
    }
    std::shared_ptr<const RedfishService::Tree> tree = CurrentTree();
    auto it = tree->find(path);
    if (it == tree->end())
    {
        return Error(404, "ResourceMissingAtURI", "The resource at the URI " + path +
                     " was not found.", {path});
    }
    if (q.method != "GET" && q.method != "HEAD")
    {
        auto r = Error(405, "GeneralError",
                       "The method " + q.method + " is not allowed on " + path +
                           "; this service is read-only.",
                       {});
        r.headers.emplace_back("Allow", "GET, HEAD"); // RFC 9110 §15.5.6
        return r;
    }
    if (query.find('$') != std::string::npos)
    {
        return Error(501, "QueryNotSupported", "Querying is not supported by the implementation.",
                     {});
    }
    RedfishHttpResponse r;
    r.status = 200;
    r.headers = {{"Content-Type", "application/json; charset=utf-8"},
                 {"OData-Version", "4.0"},
                 {"Cache-Control", "no-cache"}};
    r.body = it->second;
    return r;
}

void
RedfishServer::Serve()
{
    using Clock = std::chrono::steady_clock;
    const auto idle = std::chrono::nanoseconds(m_idleTimeout.GetNanoSeconds());
    const auto stall = std::chrono::nanoseconds(m_stallTimeout.GetNanoSeconds());
    std::list<Connection> conns;
    auto count = [this](uint64_t RedfishServerCounters::*field) {
        std::lock_guard<std::mutex> lock(m_countersMutex);
        ++(m_counters.*field);
    };
    std::vector<pollfd> fds;
    char buf[4096];
    while (!m_stop.load())
    {
        fds.clear();
        fds.push_back({m_wake[0], POLLIN, 0});
        fds.push_back({m_listen, POLLIN, 0});
        for (const Connection& c : conns)
        {
            // Back-pressure: while the client leaves too much output unread, its requests stay
            // in the socket (and then in its own send buffer) instead of in our memory.
            const bool full = c.out.size() >= m_maxPendingOutput;
            short ev = (c.closeAfterWrite && !c.lingering) || (full && !c.lingering) ? 0 : POLLIN;
            if (!c.out.empty())
            {
                ev |= POLLOUT;
            }
            fds.push_back({c.fd, ev, 0});
        }
        // A bounded wait so that idle connections are noticed without a timer thread.
        const int n = poll(fds.data(), fds.size(), 100);
        if (n < 0 && errno != EINTR)
        {
            NS_LOG_WARN("RedfishServer: poll: " << std::strerror(errno));
            break;
        }
        if (m_stop.load())
        {
            break;
        }
        if (fds[1].revents & POLLIN)
        {
            while (true)
            {
                const int fd = accept4(m_listen, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                {
                    break; // EAGAIN: no more pending; other errors: try again next round
                }
                if (conns.size() >= m_maxConnections)
                {
                    close(fd);
                    count(&RedfishServerCounters::refused);
                    continue;
                }
                Connection c;
                c.fd = fd;
                c.last = Clock::now();
                c.lastSent = c.last;
                conns.push_back(std::move(c));
                count(&RedfishServerCounters::connections);
            }
        }
        std::size_t i = 2;
        const auto now = Clock::now();
        for (Connection& c : conns)
        {
            // Connections accepted in this round have no pollfd yet.
            const short re = i < fds.size() && fds[i].fd == c.fd ? fds[i].revents : 0;
            ++i;
            if (c.lingering)
            {
                ssize_t got = 1;
                while (re & (POLLIN | POLLHUP | POLLERR))
                {
                    got = recv(c.fd, buf, sizeof(buf), 0);
                    if (got <= 0)
                    {
                        break;
                    }
                }
                if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
                    now > c.lingerUntil)
                {
                    c.dead = true;
                }
                continue;
            }
            if ((re & POLLIN) || (!c.in.empty() && c.out.size() < m_maxPendingOutput))
            {
                while ((re & POLLIN) && c.out.size() < m_maxPendingOutput)
                {
                    const ssize_t got = recv(c.fd, buf, sizeof(buf), 0);
                    if (got > 0)
                    {
                        c.in.append(buf, static_cast<std::size_t>(got));
                        if (c.in.size() > 4 * static_cast<std::size_t>(m_maxRequestBytes))
                        {
                            break; // enough to decide; the parser rejects it below
                        }
                        continue;
                    }
                    if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                    {
                        c.dead = true; // the client closed (or reset) the connection
                    }
                    break;
                }
                while (!c.closeAfterWrite && !c.in.empty() && c.out.size() < m_maxPendingOutput)
                {
                    RedfishHttpRequest q;
                    const int64_t r = ParseHead(c.in, m_maxRequestBytes, &q);
                    if (r == 0)
                    {
                        break;
                    }
                    count(&RedfishServerCounters::requests);
                    RedfishHttpResponse resp;
                    bool head = false;
                    if (r < 0)
                    {
                        resp = r == -431 ? Error(431, "GeneralError",
                                                 "The request head is too large.", {})
                                         : Error(400, "GeneralError",
                                                 "The request is not valid HTTP/1.1.", {});
                        resp.close = true;
                    }
                    else
                    {
                        resp = Handle(q);
                        head = q.method == "HEAD";
                        if (q.hasBody || !q.keepAlive)
                        {
                            resp.close = true; // the body is never read: end here
                        }
                    }
                    switch (resp.status)
                    {
                    case 200:
                        count(&RedfishServerCounters::ok);
                        break;
                    case 404:
                        count(&RedfishServerCounters::notFound);
                        break;
                    case 405:
                        count(&RedfishServerCounters::methodNotAllowed);
                        break;
                    default:
                        count(&RedfishServerCounters::badRequests);
                    }
                    c.out += resp.Serialize(head);
                    c.last = now;
                    if (resp.close)
                    {
                        c.closeAfterWrite = true;
                        c.in.clear();
                    }
                    else
                    {
                        c.in.erase(0, static_cast<std::size_t>(r));
                    }
                }
            }
            else if (re & (POLLERR | POLLHUP | POLLNVAL))
            {
                c.dead = true;
            }
            if (!c.dead && !c.out.empty())
            {
                const ssize_t sent = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
                if (sent > 0)
                {
                    c.out.erase(0, static_cast<std::size_t>(sent));
                    c.lastSent = now;
                    if (c.out.empty() && c.out.capacity() > 64 * 1024)
                    {
                        std::string().swap(c.out); // a burst's buffer, not kept for idle time
                    }
                }
                else if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                {
                    c.dead = true;
                }
            }
            if (!c.dead && c.out.empty() && c.closeAfterWrite)
            {
                shutdown(c.fd, SHUT_WR);
                c.lingering = true;
                c.lingerUntil = now + std::chrono::seconds(1);
                continue;
            }
            if (!c.dead && !c.out.empty() && now - c.lastSent > stall)
            {
                // Output waiting and the client takes none of it: it does not read.
                c.dead = true;
                count(&RedfishServerCounters::stalledClosed);
            }
            if (!c.dead && c.out.empty() && now - c.last > idle)
            {
                c.dead = true;
                count(&RedfishServerCounters::idleTimeouts);
            }
        }
        std::size_t released = 0;
        std::size_t pending = 0;
        for (auto it = conns.begin(); it != conns.end();)
        {
            if (it->dead)
            {
                released += it->in.capacity() + it->out.capacity();
                shutdown(it->fd, SHUT_RDWR);
                close(it->fd);
                it = conns.erase(it);
            }
            else
            {
                pending += it->out.size();
                ++it;
            }
        }
        {
            std::lock_guard<std::mutex> lock(m_countersMutex);
            m_counters.pendingOutput = pending;
            m_counters.maxPendingOutput = std::max<uint64_t>(m_counters.maxPendingOutput, pending);
        }
        if (released > 1024 * 1024)
        {
            // glibc keeps freed heap for reuse; give a large connection's buffers back to the
            // system once it is gone, so the process shrinks again (malloc_trim(3)).
            malloc_trim(0);
        }
    }
    for (Connection& c : conns)
    {
        close(c.fd);
    }
}

} // namespace ns3
