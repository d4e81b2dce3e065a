#include "rs485-pty-bridge.h"

#include "models/rack/modbus-rtu.h"

#include "ns3/boolean.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/realtime-simulator-impl.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("Rs485PtyBridge");
NS_OBJECT_ENSURE_REGISTERED(Rs485PtyBridge);

TypeId
Rs485PtyBridge::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::Rs485PtyBridge")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<Rs485PtyBridge>()
            .AddAttribute("LinkPath",
                          "A symlink to the pty's slave side made at Start and removed at Stop "
                          "(e.g. /tmp/cnuas-rs485-0), so a client's configuration can name a "
                          "stable path. Empty: no symlink. An existing symlink is replaced; any "
                          "other existing file makes Start fail.",
                          StringValue(""),
                          MakeStringAccessor(&Rs485PtyBridge::m_linkPath),
                          MakeStringChecker())
            .AddAttribute("LocalEcho",
                          "Whether the client reads back its own characters, as on a two-wire "
                          "adapter without echo suppression (rackmon's LocalEcho mode). Sets "
                          "the transceiver's SuppressEcho to the opposite at Start.",
                          BooleanValue(false),
                          MakeBooleanAccessor(&Rs485PtyBridge::m_localEcho),
                          MakeBooleanChecker())
            .AddAttribute("Parity",
                          "Parity of the client's characters: Observe (from the client's "
                          "termios INPCK/PARODD, since a pty hides PARENB), or fixed None, Even "
                          "or Odd for clients that ask for parity without INPCK.",
                          EnumValue(static_cast<int>(Rs485PtyParityMode::Observe)),
                          MakeEnumAccessor(&Rs485PtyBridge::m_parityMode),
                          MakeEnumChecker(static_cast<int>(Rs485PtyParityMode::Observe),
                                          "Observe",
                                          static_cast<int>(Rs485PtyParityMode::None),
                                          "None",
                                          static_cast<int>(Rs485PtyParityMode::Even),
                                          "Even",
                                          static_cast<int>(Rs485PtyParityMode::Odd),
                                          "Odd"))
            .AddAttribute("KeepSilentInterval",
                          "Whether a client's frame waits until the line has been silent for "
                          "t3.5 (Modbus over serial line v1.02 §2.5.1.1) before going out. A "
                          "host behind a real USB-RS485 adapter cannot answer sooner (the "
                          "adapter's receive latency timer, 1-16 ms on FTDI parts, and the 1 ms "
                          "USB frame; rackmon adds a 2-3 ms min_delay); through a pty it can, "
                          "within microseconds, and a strict slave would then read the request "
                          "as the tail of the previous frame. false: bytes go out at once.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&Rs485PtyBridge::m_keepSilence),
                          MakeBooleanChecker())
            .AddAttribute("TxBufferSize",
                          "Bytes of the client's that may wait to go on the line (for the bus, "
                          "for the silent interval, or in the transceiver's queue), like a UART's "
                          "transmit FIFO; more are dropped and counted (txOverruns). Default: "
                          "one maximum RTU frame, 256 bytes (Modbus over serial line v1.02 "
                          "§2.5.1); a master sends one request and waits for its answer (§2.4.1), "
                          "so only a runaway writer overruns it.",
                          UintegerValue(256),
                          MakeUintegerAccessor(&Rs485PtyBridge::m_txBufferSize),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("ClientResponseTimeout",
                          "With an arbiter: how long the client's transaction keeps the bus "
                          "after its request's last character without any answer (serial line "
                          "v1.02 §2.4.1 response time-out; libmodbus's default is 0.5 s). Only "
                          "requests nobody answers (absent address, broadcast, bad CRC) wait "
                          "this long.",
                          TimeValue(MilliSeconds(500)),
                          MakeTimeAccessor(&Rs485PtyBridge::m_clientResponseTimeout),
                          MakeTimeChecker(MicroSeconds(1)))
            .AddAttribute("ClientHoldTime",
                          "With an arbiter: after the answer's frame has ended (t3.5 of "
                          "silence), the bus stays the client's this much longer, so that a "
                          "client polling several registers or slaves in a row (mbpoll -a "
                          "200,201, rackmond) does not wait for another master's transaction "
                          "between its requests.",
                          TimeValue(MilliSeconds(20)),
                          MakeTimeAccessor(&Rs485PtyBridge::m_clientHoldTime),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("RequireRealtime",
                          "Whether Start refuses to run unless the simulator is "
                          "ns3::RealtimeSimulatorImpl (a client's bytes are stamped with wall-"
                          "clock time; under the default scheduler they would land at "
                          "arbitrary simulated times).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&Rs485PtyBridge::m_requireRealtime),
                          MakeBooleanChecker())
            .AddTraceSource("FromClient",
                            "Bytes the client wrote, with the format they go on the bus with.",
                            MakeTraceSourceAccessor(&Rs485PtyBridge::m_fromClientTrace),
                            "ns3::Rs485PtyBridge::BytesCallback")
            .AddTraceSource("ToClient",
                            "A bus character written to the client.",
                            MakeTraceSourceAccessor(&Rs485PtyBridge::m_toClientTrace),
                            "ns3::Rs485PtyBridge::ByteCallback")
            .AddTraceSource("FormatChange",
                            "The client's character format changed (new format).",
                            MakeTraceSourceAccessor(&Rs485PtyBridge::m_formatTrace),
                            "ns3::Rs485PtyBridge::FormatCallback")
            .AddTraceSource("Client",
                            "A client opened (true) or closed (false) the port.",
                            MakeTraceSourceAccessor(&Rs485PtyBridge::m_clientTrace),
                            "ns3::Rs485PtyBridge::ClientCallback");
    return tid;
}

Rs485PtyBridge::Rs485PtyBridge() = default;

void
Rs485PtyBridge::SetArbiter(Ptr<Rs485BusArbiter> arbiter)
{
    NS_ABORT_MSG_IF(m_running, "Rs485PtyBridge: SetArbiter while running");
    m_arbiter = arbiter;
    if (m_arbiter)
    {
        m_arbiterId = m_arbiter->Register("pty");
    }
}

Rs485PtyBridge::~Rs485PtyBridge()
{
    Stop();
}

void
Rs485PtyBridge::DoDispose()
{
    Stop();
    m_device = nullptr;
    Object::DoDispose();
}

void
Rs485PtyBridge::SetDevice(Ptr<Rs485Device> device)
{
    NS_ABORT_MSG_IF(m_running, "Rs485PtyBridge: SetDevice while running");
    m_device = device;
}

Ptr<Rs485Device>
Rs485PtyBridge::GetDevice() const
{
    return m_device;
}

std::string
Rs485PtyBridge::GetPortPath() const
{
    return m_linkPath.empty() ? m_slavePath : m_linkPath;
}

namespace
{
/// termios speed constants and their rates (termios(3), Linux <bits/termios-baud.h>).
struct SpeedEntry
{
    speed_t s;
    uint32_t baud;
};

const SpeedEntry kSpeeds[] = {
    {B50, 50},           {B75, 75},           {B110, 110},         {B134, 134},
    {B150, 150},         {B200, 200},         {B300, 300},         {B600, 600},
    {B1200, 1200},       {B1800, 1800},       {B2400, 2400},       {B4800, 4800},
    {B9600, 9600},       {B19200, 19200},     {B38400, 38400},     {B57600, 57600},
    {B115200, 115200},   {B230400, 230400},   {B460800, 460800},   {B500000, 500000},
    {B576000, 576000},   {B921600, 921600},   {B1000000, 1000000}, {B1152000, 1152000},
    {B1500000, 1500000}, {B2000000, 2000000}, {B2500000, 2500000}, {B3000000, 3000000},
    {B3500000, 3500000}, {B4000000, 4000000},
};
} // namespace

uint32_t
Rs485PtyBridge::BaudFromSpeed(unsigned int speed)
{
    for (const SpeedEntry& e : kSpeeds)
    {
        if (e.s == speed)
        {
            return e.baud;
        }
    }
    return 0;
}

bool
Rs485PtyBridge::FormatFromTermios(const struct termios& t, Rs485PtyParityMode mode,
                                  Rs485Format* out)
{
    const uint32_t baud = BaudFromSpeed(cfgetospeed(&t));
    if (baud == 0)
    {
        return false;
    }
    Rs485Format f;
    f.baudRate = baud;
    // The pty forces CS8 whatever the client asks (drivers/tty/pty.c pty_set_termios), so the
    // data bits the client wanted are lost; RTU characters have 8 anyway (Modbus over serial
    // line v1.02 §2.5.1).
    f.dataBits = 8;
    f.stopBits = (t.c_cflag & CSTOPB) ? 2 : 1;
    switch (mode)
    {
    case Rs485PtyParityMode::Observe:
        // PARENB is cleared by the pty; a client that wants parity checked sets INPCK
        // (libmodbus, rackmon), and PARODD is left as the client set it.
        if (t.c_iflag & INPCK)
        {
            f.parity = (t.c_cflag & PARODD) ? Rs485Parity::Odd : Rs485Parity::Even;
        }
        else
        {
            f.parity = Rs485Parity::None;
        }
        break;
    case Rs485PtyParityMode::None:
        f.parity = Rs485Parity::None;
        break;
    case Rs485PtyParityMode::Even:
        f.parity = Rs485Parity::Even;
        break;
    case Rs485PtyParityMode::Odd:
        f.parity = Rs485Parity::Odd;
        break;
    }
    *out = f;
    return true;
}

void
Rs485PtyBridge::Fail(const std::string& what)
{
    m_error = what;
    NS_LOG_ERROR("Rs485PtyBridge: " << what);
}

bool
Rs485PtyBridge::Start()
{
    NS_LOG_FUNCTION(this);
    if (m_running)
    {
        return true;
    }
    m_error.clear();
    if (!m_device || !m_device->GetRs485Channel())
    {
        Fail("no Rs485Device attached to a bus (SetDevice)");
        return false;
    }
    if (m_requireRealtime &&
        !DynamicCast<RealtimeSimulatorImpl>(Simulator::GetImplementation()))
    {
        Fail("the simulator is not ns3::RealtimeSimulatorImpl (set SimulatorImplementationType "
             "before the first Simulator call, e.g. Rs485PtyBridgeHelper::EnableRealtime)");
        return false;
    }

    m_master = posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (m_master < 0 || grantpt(m_master) != 0 || unlockpt(m_master) != 0)
    {
        Fail(std::string("posix_openpt/grantpt/unlockpt: ") + std::strerror(errno));
        Stop();
        return false;
    }
    char name[128];
    if (ptsname_r(m_master, name, sizeof(name)) != 0)
    {
        Fail(std::string("ptsname_r: ") + std::strerror(errno));
        Stop();
        return false;
    }
    m_slavePath = name;

    // Raw mode until a client configures the port: no echo of what the bus writes (a fresh pty
    // echoes, and the echo would come back to the master as client data). RefreshFormat below
    // then adds the parity-trap sentinel.
    // The bus's own format, so that a client that opens the port without configuring it
    // talks at the segment's rate, and the bridge's transceiver keeps its format until then.
    struct termios t;
    if (tcgetattr(m_master, &t) == 0)
    {
        cfmakeraw(&t);
        t.c_cflag |= CLOCAL | CREAD;
        const Rs485Format bus = m_device->GetFormat();
        for (const SpeedEntry& e : kSpeeds)
        {
            if (e.baud == bus.baudRate)
            {
                cfsetspeed(&t, e.s);
            }
        }
        if (bus.stopBits == 2)
        {
            t.c_cflag |= CSTOPB;
        }
        if (bus.parity != Rs485Parity::None)
        {
            t.c_cflag |= PARENB; // dropped by the pty; INPCK and PARODD say it
            t.c_iflag |= INPCK;
        }
        if (bus.parity == Rs485Parity::Odd)
        {
            t.c_cflag |= PARODD;
        }
        tcsetattr(m_master, TCSANOW, &t);
    }

    m_inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (m_inotify < 0 ||
        inotify_add_watch(m_inotify, m_slavePath.c_str(), IN_OPEN | IN_CLOSE) < 0)
    {
        Fail(std::string("inotify on ") + m_slavePath + ": " + std::strerror(errno));
        Stop();
        return false;
    }
    if (pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0)
    {
        Fail(std::string("pipe2: ") + std::strerror(errno));
        Stop();
        return false;
    }

    if (!m_linkPath.empty())
    {
        struct stat st;
        if (lstat(m_linkPath.c_str(), &st) == 0)
        {
            if (!S_ISLNK(st.st_mode))
            {
                Fail("LinkPath " + m_linkPath + " exists and is not a symlink");
                Stop();
                return false;
            }
            unlink(m_linkPath.c_str());
        }
        if (symlink(m_slavePath.c_str(), m_linkPath.c_str()) != 0)
        {
            Fail("symlink " + m_linkPath + ": " + std::strerror(errno));
            Stop();
            return false;
        }
        m_linkMade = true;
    }

    m_device->SetAttribute("SuppressEcho", BooleanValue(!m_localEcho));
    m_device->SetCharacterReceiveCallback(MakeCallback(&Rs485PtyBridge::ReceiveCharacter, this));
    m_device->SetTxCompleteCallback(MakeCallback(&Rs485PtyBridge::TxComplete, this));
    m_context = m_device->GetNode() ? m_device->GetNode()->GetId() : Simulator::NO_CONTEXT;
    RefreshFormat();

    m_running = true;
    m_stopReader = false;
    m_reader = std::thread(&Rs485PtyBridge::ReaderLoop, this);
    // The reader must be gone before the simulator is torn down (it schedules events).
    Ptr<Rs485PtyBridge> self(this);
    Simulator::ScheduleDestroy([self]() { self->Stop(); });
    NS_LOG_INFO("Rs485PtyBridge: " << GetPortPath() << " -> " << m_slavePath);
    return true;
}

void
Rs485PtyBridge::Stop()
{
    if (m_reader.joinable())
    {
        m_stopReader = true;
        const char c = 'q';
        if (write(m_wake[1], &c, 1) < 0)
        {
            NS_LOG_WARN("Rs485PtyBridge: cannot wake the reader: " << std::strerror(errno));
        }
        m_reader.join();
    }
    if (m_running && m_device)
    {
        m_device->SetCharacterReceiveCallback(MakeNullCallback<void, const Rs485Character&>());
        m_device->SetTxCompleteCallback(MakeNullCallback<void>());
    }
    if (m_arbiter && m_bus != BusState::Idle)
    {
        m_arbiter->Cancel(m_arbiterId);
    }
    m_bus = BusState::Idle;
    m_endEvent.Cancel();
    m_running = false;
    m_clientOpen = false;
    m_heldEvent.Cancel();
    m_held.clear();
    if (m_linkMade)
    {
        // Remove the symlink only if it still points at our pty.
        char target[256];
        const ssize_t n = readlink(m_linkPath.c_str(), target, sizeof(target) - 1);
        if (n > 0 && std::string(target, n) == m_slavePath)
        {
            unlink(m_linkPath.c_str());
        }
        m_linkMade = false;
    }
    for (int* fd : {&m_master, &m_inotify, &m_wake[0], &m_wake[1]})
    {
        if (*fd >= 0)
        {
            close(*fd);
            *fd = -1;
        }
    }
}

Rs485PtyBridgeCounters
Rs485PtyBridge::GetCounters() const
{
    Rs485PtyBridgeCounters c = m_counters;
    c.clientOpens = m_opens.load();
    c.clientCloses = m_closes.load();
    c.termiosResets = m_resets.load();
    c.chunksFromClient = m_chunks.load();
    c.inputFlushes = m_flushes.load();
    return c;
}

// ---- reader thread --------------------------------------------------------------------------

namespace
{
/// The sentinel flags (class documentation): every client's configuration clears or sets them
/// the other way, and none of them means anything to an open raw-mode client of a pty.
constexpr tcflag_t kSentinelLflags = ECHOE | ECHOK | ECHOCTL | ECHOKE;

bool
HasSentinel(const struct termios& t)
{
    return !(t.c_cflag & CLOCAL) && (t.c_lflag & kSentinelLflags) == kSentinelLflags;
}
} // namespace

void
Rs485PtyBridge::ResetSlaveTermios(bool unlessOpen)
{
    // The parity trap (class documentation): leave the slave in a state every client's
    // configuration changes, so its tcsetattr() never meets the "nothing changed" EINVAL of
    // glibc after the pty has dropped PARENB. Flags chosen to be harmless while a client has
    // the port open: CLOCAL has no effect on a pty, ECHOE/ECHOK/ECHOCTL/ECHOKE do nothing
    // without ECHO/ICANON. The speed stays what the last client chose. Called from both threads
    // (on close by the reader, after a client's configuration by the simulation thread).
    //
    // Written only when the sentinel is missing, and with `unlessOpen` (the reader, after a
    // close) only while no client has the port: a write that races a reopening client's
    // tcsetattr() can land between glibc's set and its check (a TCGETS right after) and make
    // the check see no change (EINVAL). A client that has reopened already configured the
    // port itself; the simulation thread puts the sentinel back once it writes.
    struct termios t;
    if (tcgetattr(m_master, &t) != 0 || HasSentinel(t))
    {
        return;
    }
    if (unlessOpen)
    {
        pollfd p = {m_master, POLLIN, 0};
        if (poll(&p, 1, 0) < 0 || !(p.revents & POLLHUP))
        {
            return; // a client has the port (POLLHUP: none, once one has closed)
        }
    }
    t.c_cflag &= ~CLOCAL;
    t.c_lflag |= kSentinelLflags;
    if (tcsetattr(m_master, TCSANOW, &t) == 0)
    {
        m_resets++;
    }
}

void
Rs485PtyBridge::FlushSlaveInput(uint32_t* opens, uint32_t* closes)
{
    // What the last client left unread stays in the slave's input queue (its line discipline
    // lives as long as the master does) and would be the next opener's first bytes: an answer
    // it abandoned, or the tail of a transaction of another master. tcflush() on the master
    // cannot reach it (TCIFLUSH flushes the master's own input, TCOFLUSH only the slave's flip
    // buffer, drivers/tty/pty.c pty_flush_buffer), so the bridge opens the slave itself for a
    // moment and discards its input (POSIX tcflush(TCIFLUSH)), as closing a real UART's port
    // leaves nothing for the next open. (A TCSAFLUSH termios write through the master also
    // flushes the slave, but it races a reopening client's tcsetattr(): see ResetSlaveTermios.)
    //
    // That open and close must not reach the inotify queue: inotify merges an event with the
    // one before it when both are the same and unread (inotify(7)), so the bridge's IN_OPEN and
    // a client's immediate reopen would become one and the client's open be taken for the
    // bridge's. The watch is masked meanwhile (inotify_add_watch replaces the mask of the same
    // watch), and what clients did before is read first. A client that opened while the watch
    // was masked has no IN_OPEN: once the watch is back, the master says whether a client has
    // the port, and one there with no open read since the last close is counted from that.
    // Its IN_OPEN may still come (it opened after the watch was back, its open() not yet
    // returned): the next open before any close is then taken as that one.
    inotify_add_watch(m_inotify, m_slavePath.c_str(), IN_ATTRIB);
    ReadInotify(opens, closes);
    const int fd = open(m_slavePath.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0)
    {
        tcflush(fd, TCIFLUSH);
        close(fd);
        m_flushes++;
    }
    inotify_add_watch(m_inotify, m_slavePath.c_str(), IN_OPEN | IN_CLOSE);
    ReadInotify(opens, closes);
    pollfd probe = {m_master, POLLIN, 0};
    if (!m_lastEventOpen && poll(&probe, 1, 0) >= 0 && !(probe.revents & POLLHUP))
    {
        (*opens)++;
        m_opens++;
        m_lastEventOpen = true;
        m_openEventOwed = true;
    }
}

bool
Rs485PtyBridge::ReadMaster(std::vector<std::vector<uint8_t>>* chunks)
{
    uint8_t buf[4096];
    for (;;)
    {
        const ssize_t n = read(m_master, buf, sizeof(buf));
        if (n > 0)
        {
            m_chunks++;
            chunks->emplace_back(buf, buf + n);
            continue;
        }
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0 && errno == EAGAIN)
        {
            return true;
        }
        // EIO (or end of file): no process has the slave open.
        return false;
    }
}

void
Rs485PtyBridge::ReadInotify(uint32_t* opens, uint32_t* closes)
{
    // Every IN_OPEN and IN_CLOSE of the slave node is a client's (any process, any fd): the
    // watch is masked while the bridge opens the slave itself (FlushSlaveInput). inotify(7)
    // merges an event with the one before it when both are the same and the first is unread,
    // so only opens with no close between them (two descriptors at once) can count as one.
    alignas(inotify_event) char ev[4096];
    ssize_t n;
    while ((n = read(m_inotify, ev, sizeof(ev))) > 0)
    {
        for (char* p = ev; p < ev + n;)
        {
            const auto* e = reinterpret_cast<const inotify_event*>(p);
            if ((e->mask & IN_OPEN) && m_openEventOwed)
            {
                m_openEventOwed = false; // counted already, from the master (FlushSlaveInput)
            }
            else if (e->mask & IN_OPEN)
            {
                (*opens)++;
                m_opens++;
                m_lastEventOpen = true;
            }
            if (e->mask & IN_CLOSE)
            {
                (*closes)++;
                m_closes++;
                m_lastEventOpen = false;
                m_openEventOwed = false;
            }
            p += sizeof(inotify_event) + e->len;
        }
    }
}

void
Rs485PtyBridge::ReaderLoop()
{
    bool hung = false; // the master reports POLLHUP: no client; do not poll it (it never blocks)
    for (;;)
    {
        pollfd fds[3] = {{m_wake[0], POLLIN, 0},
                         {m_inotify, POLLIN, 0},
                         {hung ? -1 : m_master, POLLIN, 0}};
        const int r = poll(fds, 3, -1);
        if (m_stopReader)
        {
            return;
        }
        if (r < 0)
        {
            if (errno == EINTR)
            {
                continue;
            }
            NS_LOG_ERROR("Rs485PtyBridge: poll: " << std::strerror(errno));
            return;
        }

        // The master's bytes first, the inotify events after them: a client's IN_OPEN is queued
        // before its open() returns, so before it can write, and the open of every client whose
        // bytes were just read is among the events read next. ClientOpened is then scheduled
        // ahead of those bytes and cannot drop a new client's first request as stale.
        std::vector<std::vector<uint8_t>> chunks;
        bool closedNow = false;
        if (!hung && fds[2].revents != 0)
        {
            // Data comes before EIO: the kernel reports EIO only once the buffer is empty.
            if (!ReadMaster(&chunks))
            {
                hung = true;
                closedNow = true;
            }
        }
        uint32_t opens = 0;
        uint32_t closes = 0;
        ReadInotify(&opens, &closes);

        if (closedNow)
        {
            // No client is left: discard the input the last one left unread.
            FlushSlaveInput(&opens, &closes);
        }
        if (closedNow || closes > 0)
        {
            // A client has closed the port (and may already have reopened it: a close and an
            // open can both be pending here): undo its termios, unless a client has it now.
            ResetSlaveTermios(true);
        }
        if (hung && (closedNow || opens > 0 || closes > 0))
        {
            // A client may have opened the port since: the master stops reporting POLLHUP.
            pollfd probe = {m_master, POLLIN, 0};
            if (poll(&probe, 1, 0) >= 0 && !(probe.revents & POLLHUP))
            {
                hung = !ReadMaster(&chunks);
                ReadInotify(&opens, &closes); // that client's open, if not read yet
            }
        }

        if (opens > 0)
        {
            Simulator::ScheduleWithContext(m_context, Time(0), [this]() { ClientOpened(); });
        }
        for (std::vector<uint8_t>& bytes : chunks)
        {
            Simulator::ScheduleWithContext(m_context,
                                           Time(0),
                                           [this, b = std::move(bytes)]() { FromClient(b); });
        }

        // Until its first client a fresh pty does not report POLLHUP, so "open" comes from
        // inotify; "closed" always from EIO/POLLHUP. The Client trace is scheduled before
        // IsClientOpen() changes, so a thread that sees the change and then schedules an event
        // (Simulator::Stop) has it run after the trace.
        const bool wasOpen = m_clientOpen.load();
        const bool open = !hung && (wasOpen || opens > 0 || !chunks.empty());
        if (open != wasOpen)
        {
            Simulator::ScheduleWithContext(m_context, Time(0), [this, open]() {
                NotifyClient(open);
            });
            m_clientOpen = open;
        }
    }
}

// ---- simulation thread ----------------------------------------------------------------------

void
Rs485PtyBridge::NotifyClient(bool open)
{
    if (m_running)
    {
        m_clientTrace(open);
    }
}

void
Rs485PtyBridge::ClientOpened()
{
    if (!m_running)
    {
        return;
    }
    // A port's new owner does not inherit the output an earlier client left queued (a runaway
    // writer's backlog would otherwise run into the new client's first request): its first
    // frame starts on a line that has been silent for t3.5 (Modbus over serial line v1.02
    // §2.5.1.1), as after a tcflush(TCOFLUSH).
    m_heldEvent.Cancel();
    m_counters.txStaleDropped += m_held.size() + m_device->FlushTxQueue();
    m_held.clear();
    m_gapBeforeNext = true;
    if (m_bus == BusState::Waiting)
    {
        m_arbiter->Cancel(m_arbiterId);
        m_bus = BusState::Idle;
    }
}

void
Rs485PtyBridge::RefreshFormat()
{
    struct termios t;
    if (m_master < 0 || tcgetattr(m_master, &t) != 0)
    {
        return;
    }
    if (!HasSentinel(t))
    {
        // A client has configured the port since the last reset. Put the sentinel back now,
        // while it is open: a client that closes and reopens within microseconds would
        // otherwise reach its tcsetattr() before the reader thread has seen the close.
        ResetSlaveTermios();
    }
    Rs485Format f;
    if (!FormatFromTermios(t, static_cast<Rs485PtyParityMode>(m_parityMode), &f))
    {
        m_counters.unknownSpeeds++;
        return;
    }
    if (f != m_device->GetFormat())
    {
        NS_LOG_INFO("Rs485PtyBridge: client format " << m_device->GetFormat().ToString() << " -> "
                                                     << f.ToString());
        m_device->SetFormat(f);
        m_counters.formatChanges++;
        m_formatTrace(f);
    }
}

std::size_t
Rs485PtyBridge::GetTxBacklog() const
{
    return m_held.size() + (m_device ? m_device->GetTxQueueSize() : 0);
}

void
Rs485PtyBridge::FromClient(std::vector<uint8_t> bytes)
{
    if (!m_running)
    {
        return;
    }
    // The client's format as it is now: a master that switches baud rate between probes
    // (rackmond scanning 19200 and 115200 devices) sends each request at its own rate.
    RefreshFormat();
    m_counters.bytesFromClient += bytes.size();
    // The transmit buffer is bounded, as a UART's FIFO: what does not fit is lost (an overrun),
    // instead of queueing minutes of line time behind a runaway writer.
    const std::size_t queued = GetTxBacklog();
    const std::size_t room = queued < m_txBufferSize ? m_txBufferSize - queued : 0;
    if (bytes.size() > room)
    {
        m_counters.txOverruns += bytes.size() - room;
        bytes.resize(room);
    }
    if (bytes.empty())
    {
        return;
    }
    m_fromClientTrace(bytes, m_device->GetFormat());
    m_held.insert(m_held.end(), bytes.begin(), bytes.end());
    if (m_arbiter && m_bus != BusState::Holding)
    {
        if (m_bus == BusState::Idle)
        {
            // Modbus over serial line v1.02 §2.1: one master at a time. The other master's
            // transaction in progress (request, then response or time-out) ends first.
            m_bus = BusState::Waiting;
            m_arbiter->Request(m_arbiterId, [this]() { BusGranted(); });
        }
        return;
    }
    if (m_heldEvent.IsRunning())
    {
        return; // goes out with the bytes already waiting for the silent interval
    }
    Transmit();
}

void
Rs485PtyBridge::Transmit()
{
    if (m_held.empty())
    {
        return;
    }
    m_endEvent.Cancel(); // the client's transaction goes on with a new request
    if (m_gapBeforeNext && m_device->IsTransmitting())
    {
        return; // TxComplete sends it, after t3.5 of silence
    }
    m_gapBeforeNext = false;
    if (m_keepSilence && !m_device->IsTransmitting() && !m_device->IsCharacterArriving())
    {
        // A new burst on a quiet line: no earlier than t3.5 after the last character on it
        // (heard or sent: the transceiver hears its own). A client that writes while a
        // character is on the line is not held: it collides, as it would on a real bus.
        const Time earliest = m_device->GetLastRxEnd() +
                              ModbusRtuTiming::ForFormat(m_device->GetFormat()).t35;
        if (m_device->GetLastRxEnd().IsStrictlyPositive() && earliest > Simulator::Now())
        {
            m_counters.heldForSilence++;
            m_heldEvent = Simulator::Schedule(earliest - Simulator::Now(),
                                              &Rs485PtyBridge::SendHeld,
                                              this);
            return;
        }
    }
    std::vector<uint8_t> bytes;
    bytes.swap(m_held);
    m_answerSeen = false;
    m_device->Send(bytes);
}

void
Rs485PtyBridge::SendHeld()
{
    std::vector<uint8_t> bytes;
    bytes.swap(m_held);
    if (m_running && !bytes.empty())
    {
        m_endEvent.Cancel();
        m_answerSeen = false;
        m_device->Send(bytes);
    }
}

void
Rs485PtyBridge::BusGranted()
{
    if (!m_running || m_bus != BusState::Waiting)
    {
        return;
    }
    m_bus = BusState::Holding;
    m_counters.clientTransactions++;
    if (m_held.empty())
    {
        ArmEnd(Time(0)); // nothing left to send (cannot happen today; be safe)
        return;
    }
    // Transmit() waits for t3.5 after the other master's last character (§2.5.1.1).
    Transmit();
}

void
Rs485PtyBridge::TxComplete()
{
    if (!m_held.empty() && !m_heldEvent.IsRunning() &&
        (m_bus == BusState::Holding || !m_arbiter))
    {
        Transmit(); // held back behind an earlier client's burst (ClientOpened)
        return;
    }
    if (m_bus == BusState::Holding && m_held.empty())
    {
        // The request's last stop bit: the response time-out runs from here (§2.4.1).
        ArmEnd(m_clientResponseTimeout);
    }
}

void
Rs485PtyBridge::ArmEnd(Time after)
{
    m_endEvent.Cancel();
    m_endEvent = Simulator::Schedule(after, &Rs485PtyBridge::EndClientTransaction, this);
}

void
Rs485PtyBridge::EndClientTransaction()
{
    if (m_bus != BusState::Holding)
    {
        return;
    }
    if (!m_held.empty() || m_device->IsTransmitting() || m_device->IsCharacterArriving())
    {
        return; // the client's next request, or a character, is on its way: not over yet
    }
    if (!m_answerSeen)
    {
        m_counters.clientTimeouts++;
    }
    m_bus = BusState::Idle;
    m_arbiter->Release(m_arbiterId);
}

bool
Rs485PtyBridge::SlaveIsOpen() const
{
    // Checked now rather than trusting the reader thread's last word, which may lag a close
    // by a moment: a byte written to the master while no process has the slave open stays in
    // the slave's input queue and is read by the next client (docs/rack.md §10.2). Once a
    // client has opened and closed the slave, the master reports POLLHUP until it is open
    // again; a pty never opened reports nothing, and m_clientOpen covers that case.
    pollfd p = {m_master, POLLOUT, 0};
    return poll(&p, 1, 0) >= 0 && !(p.revents & POLLHUP);
}

void
Rs485PtyBridge::ReceiveCharacter(const Rs485Character& c)
{
    if (!m_running)
    {
        return;
    }
    struct termios t;
    const bool haveTermios = tcgetattr(m_master, &t) == 0;
    if (c.status != Rs485RxStatus::Ok)
    {
        m_counters.rxErrors++;
    }
    if (m_bus == BusState::Holding && !c.ownTransmission)
    {
        // Part of the answer: the transaction ends t3.5 after the answer's last character
        // (the end of an RTU frame, serial line v1.02 §2.5.1.1), plus the hold time.
        m_answerSeen = true;
        ArmEnd(ModbusRtuTiming::ForFormat(m_device->GetFormat()).t35 + m_clientHoldTime);
    }
    if (m_arbiter && m_bus != BusState::Holding)
    {
        // Another master's transaction (the BMC's request or its answer): not the client's.
        m_counters.rxOtherMaster++;
        return;
    }
    if (!m_clientOpen.load() || !SlaveIsOpen())
    {
        m_counters.rxWhileClosed++;
        return;
    }
    uint8_t out = c.byte;
    if (c.status != Rs485RxStatus::Ok && haveTermios && (t.c_iflag & INPCK))
    {
        // POSIX termios "Input Modes" and Linux n_tty: with INPCK a character with a parity or
        // framing error is discarded under IGNPAR, else read as NUL (or marked under PARMRK,
        // which a pty cannot carry: see the class documentation).
        if (t.c_iflag & IGNPAR)
        {
            m_counters.rxErrorsDropped++;
            return;
        }
        out = 0;
        m_counters.rxErrorsMarked++;
    }
    ssize_t n;
    do
    {
        n = write(m_master, &out, 1);
    } while (n < 0 && errno == EINTR);
    if (n == 1)
    {
        m_counters.bytesToClient++;
        if (c.ownTransmission)
        {
            m_counters.echoToClient++;
        }
        m_toClientTrace(out);
    }
    else if (n < 0 && errno == EAGAIN)
    {
        m_counters.rxOverflow++;
    }
    else
    {
        m_counters.rxWhileClosed++;
    }
    // The client may have switched format since its last request; take it from now on.
    if (haveTermios)
    {
        Rs485Format f;
        if (FormatFromTermios(t, static_cast<Rs485PtyParityMode>(m_parityMode), &f) &&
            f != m_device->GetFormat() && !m_device->IsTransmitting())
        {
            m_device->SetFormat(f);
            m_counters.formatChanges++;
            m_formatTrace(f);
        }
    }
}

} // namespace ns3
