// A small HTTP/1.1 client over a real loopback socket for the Redfish tests, with timeouts on
// every call so that a misbehaving server fails the test instead of hanging it.
#ifndef CNUAS_TEST_RACK_REDFISH_HTTP_H
#define CNUAS_TEST_RACK_REDFISH_HTTP_H

#include "ib-test-packets.h"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cnuas_test
{

struct HttpReply
{
    int status = 0; ///< 0: no (complete) answer
    std::map<std::string, std::string> headers; ///< names lower-cased
    std::string body;
    std::string raw;
};

inline int
HttpConnect(uint16_t port)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
    {
        close(fd);
        return -1;
    }
    return fd;
}

/// Reads until the peer closes or `timeoutMs` passes; returns what arrived.
inline std::string
HttpReadAll(int fd, int timeoutMs, bool* closedByPeer = nullptr)
{
    std::string out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    char buf[8192];
    if (closedByPeer)
    {
        *closedByPeer = false;
    }
    while (true)
    {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              end - std::chrono::steady_clock::now())
                              .count();
        if (left <= 0)
        {
            break;
        }
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left)) <= 0)
        {
            break;
        }
        const ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0)
        {
            if (closedByPeer)
            {
                *closedByPeer = true;
            }
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

/// Splits one or more responses (Content-Length framed) from `raw`.
inline std::vector<HttpReply>
HttpParseReplies(const std::string& raw, bool head = false)
{
    std::vector<HttpReply> out;
    std::size_t pos = 0;
    while (pos < raw.size())
    {
        const std::size_t end = raw.find("\r\n\r\n", pos);
        if (end == std::string::npos)
        {
            break;
        }
        HttpReply r;
        std::istringstream h(raw.substr(pos, end - pos));
        std::string line;
        std::getline(h, line);
        if (line.compare(0, 9, "HTTP/1.1 ") != 0 || line.size() < 12)
        {
            break;
        }
        r.status = std::stoi(line.substr(9, 3));
        while (std::getline(h, line))
        {
            if (!line.empty() && line.back() == '\r')
            {
                line.pop_back();
            }
            const std::size_t c = line.find(':');
            if (c == std::string::npos)
            {
                continue;
            }
            std::string k = line.substr(0, c);
            for (char& ch : k)
            {
                ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            }
            r.headers[k] = line.substr(c + 2);
        }
        const std::size_t len =
            r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
        const std::size_t bodyStart = end + 4;
        const std::size_t bodyLen = head ? 0 : len;
        if (bodyStart + bodyLen > raw.size())
        {
            break;
        }
        r.body = raw.substr(bodyStart, bodyLen);
        r.raw = raw.substr(pos, bodyStart + bodyLen - pos);
        out.push_back(r);
        pos = bodyStart + bodyLen;
    }
    return out;
}

/// Sends `request` as is on a new connection and returns every response until the server
/// closes or `timeoutMs` passes.
inline std::vector<HttpReply>
HttpRaw(uint16_t port, const std::string& request, int timeoutMs = 5000, bool head = false,
        bool* closedByPeer = nullptr)
{
    const int fd = HttpConnect(port);
    if (fd < 0)
    {
        return {};
    }
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    const std::string raw = HttpReadAll(fd, timeoutMs, closedByPeer);
    close(fd);
    return HttpParseReplies(raw, head);
}

/// One request with Connection: close.
inline HttpReply
HttpRequest(uint16_t port, const std::string& method, const std::string& path)
{
    const std::string req = method + " " + path +
                            " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
                            "Connection: close\r\n\r\n";
    auto r = HttpRaw(port, req, 5000, method == "HEAD");
    return r.empty() ? HttpReply() : r.front();
}

/// GET and parse the body; a failed GET gives a null JSON value.
inline nlohmann::json
GetJson(uint16_t port, const std::string& path, int* status = nullptr)
{
    HttpReply r = HttpRequest(port, "GET", path);
    if (status)
    {
        *status = r.status;
    }
    return nlohmann::json::parse(r.body, nullptr, false);
}

/// One schema check to run: the instance fetched from `uri` against a definition.
struct SchemaCase
{
    std::string uri;
    std::string definition;
    nlohmann::json instance;
};

/**
 * Validates every case with python3-jsonschema (tests/data/redfish/validate.py) in one run.
 * Returns the validator's output; `ok` is set when it exited 0.
 */
inline std::string
ValidateRedfish(const std::vector<SchemaCase>& cases, bool* ok)
{
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& c : cases)
    {
        arr.push_back({{"uri", c.uri}, {"definition", c.definition}, {"instance", c.instance}});
    }
    char tmpl[] = "/tmp/cnuas-redfish-cases-XXXXXX";
    const int fd = mkstemp(tmpl);
    const std::string text = arr.dump();
    const bool written = fd >= 0 && write(fd, text.data(), text.size()) ==
                                        static_cast<ssize_t>(text.size());
    if (fd >= 0)
    {
        close(fd);
    }
    if (!written)
    {
        *ok = false;
        return "cannot write the cases file";
    }
    const std::string dir = std::string(CNUAS_SOURCE_DIR) + "/tests/data/redfish/";
    int status = -1;
    const std::string out = RunCommand("timeout 60 " + std::string(CNUAS_PYTHON) + " " + dir +
                                           "validate.py " + dir +
                                           "redfish-subset.schema.json " + tmpl + " 2>&1",
                                       &status);
    std::remove(tmpl);
    *ok = status == 0;
    return out;
}

/// The schema definition for an @odata.type ("#Chassis.v1_14_0.Chassis" -> "Chassis").
inline std::string
DefinitionOf(const nlohmann::json& j)
{
    if (!j.is_object() || !j.contains("@odata.type"))
    {
        return j.is_object() && j.contains("v1") ? "RedfishVersionObject" : "?";
    }
    const std::string t = j["@odata.type"].get<std::string>();
    const std::size_t dot = t.rfind('.');
    return dot == std::string::npos ? "?" : t.substr(dot + 1);
}

} // namespace cnuas_test

#endif
