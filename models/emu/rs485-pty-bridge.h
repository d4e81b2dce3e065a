// A pseudo-terminal on the host that is one more transceiver on a simulated RS-485 segment: a
// real Modbus master (mbpoll, libmodbus, pymodbus, rackmond) opens the pty's slave side as if it
// were a USB-RS485 adapter and drives the bus in real time.
#ifndef CNUAS_RS485_PTY_BRIDGE_H
#define CNUAS_RS485_PTY_BRIDGE_H

#include "models/rack/rs485-bus-arbiter.h"
#include "models/rack/rs485-character.h"
#include "models/rack/rs485-device.h"

#include "ns3/event-id.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

struct termios;

namespace ns3
{

/// How the bridge decides the parity of the client's characters.
enum class Rs485PtyParityMode : uint8_t
{
    /**
     * From the client's termios: INPCK set means the client checks parity, so it has parity on
     * (odd if PARODD, else even); INPCK clear means none. Needed because a Linux pty drops
     * PARENB itself (drivers/tty/pty.c pty_set_termios); PARODD and INPCK survive.
     */
    Observe = 0,
    None = 1, ///< always 8N
    Even = 2, ///< always 8E (for clients that set PARENB without INPCK, e.g. pyserial)
    Odd = 3,  ///< always 8O
};

/// What the bridge counted since it was created.
struct Rs485PtyBridgeCounters
{
    /// open() calls on the slave side (inotify IN_OPEN; the bridge's own are not seen).
    /// inotify(7) merges two identical events in a row while unread, so two opens with no
    /// close between them (descriptors held at once) may count as one.
    uint64_t clientOpens = 0;
    uint64_t clientCloses = 0;   ///< close() of those descriptors (inotify IN_CLOSE, likewise)
    uint64_t termiosResets = 0;  ///< parity-trap resets of the slave termios (see class doc)
    uint64_t inputFlushes = 0;   ///< slave input discarded after the last client closed
    uint64_t chunksFromClient = 0;  ///< reads from the master that returned bytes
    uint64_t bytesFromClient = 0;   ///< bytes the client wrote (read from the master)
    uint64_t txOverruns = 0;        ///< of which dropped: the transmit buffer was full
    uint64_t txStaleDropped = 0;    ///< an earlier client's bytes not sent when a new one opened
    uint64_t clientTransactions = 0; ///< bus grants to the client (with an arbiter)
    uint64_t clientTimeouts = 0;    ///< of which ended by ClientResponseTimeout, no answer
    uint64_t heldForSilence = 0;    ///< client frames held back until t3.5 of silence
    uint64_t formatChanges = 0;     ///< times the client's character format changed
    uint64_t unknownSpeeds = 0;     ///< termios speeds the bridge could not map (kept old baud)
    uint64_t bytesToClient = 0;     ///< bus characters written to the client
    uint64_t echoToClient = 0;      ///< of which the bridge's own characters (LocalEcho)
    uint64_t rxErrors = 0;          ///< bus characters the UART received with an error
    uint64_t rxErrorsDropped = 0;   ///< of which dropped because the client asked IGNPAR
    uint64_t rxErrorsMarked = 0;    ///< of which replaced by NUL (INPCK set, POSIX termios)
    uint64_t rxWhileClosed = 0;     ///< bus characters dropped because no client had the port
    uint64_t rxOverflow = 0;        ///< bus characters dropped: the pty buffer was full
    uint64_t rxOtherMaster = 0;     ///< bus characters of another master's transactions,
                                    ///< not delivered (with an arbiter)
};

/**
 * \brief A Linux pseudo-terminal bridged to an Rs485Device: the pty's slave side
 * (/dev/pts/N, optionally symlinked) behaves as a UART on the simulated bus.
 *
 * The bridge owns the pty master (posix_openpt). Bytes a client writes to the slave side are
 * read from the master by a reader thread and handed to the simulator with
 * Simulator::ScheduleWithContext (the simulator must be RealtimeSimulatorImpl, so they enter the
 * bus at the wall-clock time they were written). They go onto the bus through the bridge's
 * Rs485Device, at the character format the client set: the bridge reads the client's termios
 * through the master (on Linux termios ioctls on a master act on its slave) before every burst
 * it sends and every character it receives, so a client at the wrong baud rate or parity
 * produces framing/parity errors at the simulated devices, as a real adapter would. Data bits
 * cannot be observed (the pty forces CS8); parity is observed through INPCK/PARODD (see
 * Rs485PtyParityMode) or fixed by the Parity attribute; stop bits through CSTOPB.
 *
 * Characters the bridge's transceiver receives are written to the master one by one as their
 * stop bit ends, so the client sees them arrive at the bus's pace. A character received with a
 * parity or framing error is handed over the way the Linux tty layer treats a UART error
 * (POSIX termios, n_tty): dropped with IGNPAR, replaced by a NUL byte with INPCK, passed as
 * received otherwise. (With PARMRK a real UART delivers 0xFF 0x00 c; a pty cannot carry that
 * mark because n_tty doubles every 0xFF written through the master, so the bridge gives the NUL
 * form.) LocalEcho passes the bridge's own characters back (a two-wire adapter without echo
 * suppression, what rackmon's LocalEcho mode expects).
 *
 * Open/close: when the last client closes the slave, read() on the master fails with EIO and
 * poll() reports POLLHUP until someone opens it again, so the reader stops polling the master
 * (no busy loop) and waits on an inotify watch of the slave node (IN_OPEN/IN_CLOSE), then
 * polls the master again. Bus characters that arrive while no client has the port are dropped
 * (counted) instead of being queued for the next one, and what the last client left unread is
 * discarded when it closes: the bridge opens the slave for a moment and flushes it, with the
 * inotify watch masked so that its own events cannot merge with a client's (FlushSlaveInput).
 *
 * The parity trap (notes/rack-modbus-orv3.md §2.3): the pty clears PARENB, and Debian's glibc
 * tcsetattr() then returns EINVAL if the call changed nothing else, which is what happens when
 * a client reopens a port whose termios still hold its own previous settings: rackmond,
 * phosphor-modbus and pyserial fail to reopen. The bridge therefore changes the slave's termios
 * through the master to a sentinel that every client's configuration undoes: CLOCAL off and
 * ECHOE/ECHOK/ECHOCTL/ECHOKE on, once a configured client writes and, if still missing, when it
 * closes. Unlike the B9600 sentinel in the notes, it leaves the speed alone and only touches
 * flags that mean nothing to an open raw-mode client. It is never written while a client has
 * the port after a close: glibc verifies a tcsetattr() with a TCGETS right after it, and a
 * write in between makes a reopening client's call fail with EINVAL.
 *
 * Transmit buffer: the client's bytes that are not yet on the line (waiting for the bus, for
 * the silent interval, or in the transceiver's queue) are bounded by TxBufferSize, like a
 * UART's transmit FIFO; bytes written beyond it are dropped and counted (txOverruns), so a
 * client that writes faster than the line cannot queue minutes of traffic.
 *
 * Sharing the bus (SetArbiter): with another master on the segment (the simulated BMC) the
 * bridge is one master behind an Rs485BusArbiter, as behind a gateway. A client's bytes wait
 * until the other master's transaction has ended; the bridge then holds the bus for the
 * client's transaction: its request, then the answer (ended by t3.5 of silence after it, plus
 * ClientHoldTime for the client's next request), or ClientResponseTimeout without an answer.
 * Only characters heard while the client holds the bus are delivered to it; the other master's
 * traffic is dropped and counted (rxOtherMaster).
 */
class Rs485PtyBridge : public Object
{
  public:
    static TypeId GetTypeId();
    Rs485PtyBridge();
    ~Rs485PtyBridge() override;

    /// Trace signatures.
    typedef void (*BytesCallback)(const std::vector<uint8_t>& bytes, const Rs485Format& format);
    typedef void (*ByteCallback)(uint8_t byte);
    typedef void (*ClientCallback)(bool open);
    typedef void (*FormatCallback)(const Rs485Format& format);

    /// The transceiver the bridge talks through (attached to the bus by the caller).
    void SetDevice(Ptr<Rs485Device> device);
    Ptr<Rs485Device> GetDevice() const;
    /// Shares the bus with the arbiter's other masters (class documentation). Before Start.
    void SetArbiter(Ptr<Rs485BusArbiter> arbiter);
    /// Whether the client's transaction holds the bus (with an arbiter).
    bool HoldsBus() const { return m_bus == BusState::Holding; }
    /**
     * Client bytes accepted but not yet on the line (waiting for the bus, for the silent
     * interval, or in the transceiver's queue): never more than TxBufferSize. Simulation thread.
     */
    std::size_t GetTxBacklog() const;

    /**
     * Opens the pty, makes the symlink (LinkPath) and starts the reader thread. Fails (returns
     * false, reason in GetError()) when the simulator is not real time (RequireRealtime), the
     * device is missing, or a system call fails.
     */
    bool Start();
    /// Stops the reader thread, removes the symlink and closes the master. Idempotent.
    void Stop();
    bool IsRunning() const { return m_running; }
    const std::string& GetError() const { return m_error; }

    /// The slave side a client opens (/dev/pts/N); empty before Start().
    std::string GetSlavePath() const { return m_slavePath; }
    /// The symlink, if LinkPath was set; else the slave path.
    std::string GetPortPath() const;

    /**
     * Whether a client has the slave side open, as far as the reader has seen. Any thread. The
     * Client trace event of a change is scheduled before the change shows here.
     */
    bool IsClientOpen() const { return m_clientOpen.load(); }
    /**
     * Counters. Call from the simulation thread, or after the simulation has stopped: the
     * reader thread's own counts (opens, closes, resets, chunks) are read atomically.
     */
    Rs485PtyBridgeCounters GetCounters() const;

    /**
     * The character format a termios asks for, as far as a pty shows it: baud rate from the
     * output speed, 8 data bits, stop bits from CSTOPB, parity by `mode`. Returns false (and
     * leaves `out` alone) for a speed it cannot map (B0 or one not in the standard list).
     */
    static bool FormatFromTermios(const struct termios& t, Rs485PtyParityMode mode,
                                  Rs485Format* out);
    /// Bit/s of a termios speed constant (B19200 -> 19200), 0 if unknown.
    static uint32_t BaudFromSpeed(unsigned int speed);

  protected:
    void DoDispose() override;

  private:
    void ReaderLoop();
    /**
     * Reads everything the master has into `chunks`; returns false when the master says EIO
     * (no client has the slave open).
     */
    bool ReadMaster(std::vector<std::vector<uint8_t>>* chunks);
    /// Reads the inotify queue, adding the opens and closes of the slave it reports.
    void ReadInotify(uint32_t* opens, uint32_t* closes);
    /**
     * Puts the parity-trap sentinel into the slave's termios if it is missing (class doc); with
     * `unlessOpen` only while no client has the port.
     */
    void ResetSlaveTermios(bool unlessOpen = false);
    /**
     * Discards the slave's unread input (reader thread, once the last client has closed), with
     * the inotify watch masked; adds the clients' opens and closes it reads or infers.
     */
    void FlushSlaveInput(uint32_t* opens, uint32_t* closes);
    /// Slave termios -> device format, counting changes. Simulation thread.
    void RefreshFormat();
    void FromClient(std::vector<uint8_t> bytes);
    void SendHeld();
    void Transmit();
    void BusGranted();
    void TxComplete();
    void ArmEnd(Time after);
    void EndClientTransaction();
    void NotifyClient(bool open);
    /// A client has opened the port: what an earlier one left unsent is not its traffic.
    void ClientOpened();
    void ReceiveCharacter(const Rs485Character& c);
    bool SlaveIsOpen() const;
    void Fail(const std::string& what);

    Ptr<Rs485Device> m_device;
    std::string m_linkPath;
    bool m_localEcho = false;
    int m_parityMode = static_cast<int>(Rs485PtyParityMode::Observe);
    bool m_requireRealtime = true;
    bool m_keepSilence = true;
    std::vector<uint8_t> m_held; ///< client bytes not yet handed to the transceiver
    EventId m_heldEvent;
    uint32_t m_txBufferSize = 256;
    Time m_clientResponseTimeout;
    Time m_clientHoldTime;

    enum class BusState : uint8_t
    {
        Idle,    ///< the client has no transaction
        Waiting, ///< asked the arbiter, another master's transaction runs
        Holding, ///< the client's transaction has the bus
    };
    Ptr<Rs485BusArbiter> m_arbiter;
    uint32_t m_arbiterId = 0;
    BusState m_bus = BusState::Idle;
    bool m_gapBeforeNext = false; ///< a new client: its first frame waits for t3.5 of silence
    bool m_answerSeen = false; ///< a character from another transceiver since our last request
    EventId m_endEvent;

    int m_master = -1;
    int m_inotify = -1;
    int m_wake[2] = {-1, -1};
    std::string m_slavePath;
    bool m_linkMade = false;
    std::thread m_reader;
    std::atomic<bool> m_stopReader{false};
    std::atomic<bool> m_clientOpen{false};
    bool m_lastEventOpen = false; ///< reader thread: the last inotify event read was an open
    /// Reader thread: a client was counted from the master (FlushSlaveInput); its IN_OPEN, if
    /// it comes before a close, is not counted again.
    bool m_openEventOwed = false;
    bool m_running = false;
    std::string m_error;
    uint32_t m_context = 0;

    // Written by the reader thread.
    std::atomic<uint64_t> m_opens{0};
    std::atomic<uint64_t> m_closes{0};
    std::atomic<uint64_t> m_resets{0};
    std::atomic<uint64_t> m_chunks{0};
    std::atomic<uint64_t> m_flushes{0};
    // Written by the simulation thread.
    Rs485PtyBridgeCounters m_counters;

    TracedCallback<const std::vector<uint8_t>&, const Rs485Format&> m_fromClientTrace;
    TracedCallback<uint8_t> m_toClientTrace;
    TracedCallback<const Rs485Format&> m_formatTrace;
    TracedCallback<bool> m_clientTrace;
};

} // namespace ns3

#endif
