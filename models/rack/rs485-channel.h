// A two-wire RS-485 bus segment: half duplex, multidrop, every transceiver hears every character.
#ifndef CNUAS_RS485_CHANNEL_H
#define CNUAS_RS485_CHANNEL_H

#include "rs485-character.h"

#include "ns3/channel.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <deque>
#include <vector>

namespace ns3
{

class Rs485Device;

/// A character as the line carries it (the channel's view, before any receiver decodes it).
struct Rs485WireCharacter
{
    uint64_t seq = 0;    ///< running number on this channel
    uint32_t sender = 0; ///< channel index of the transceiver that drove it
    uint8_t byte = 0;    ///< what the sender's UART sent
    /**
     * What the line carried: `byte`, or for a collided character `byte` AND the bytes of the
     * characters it overlapped (an arbitrary but deterministic choice: with two drivers fighting
     * the differential voltage is undefined, see docs/rack.md).
     */
    uint8_t lineByte = 0;
    Rs485Format format; ///< the sender's character format
    Time start;         ///< start bit leading edge at the sender
    Time end;           ///< end of the last stop bit at the sender
    bool collided = false;
};

/**
 * \brief One RS-485 bus segment (TIA-485, two-wire, as Modbus over serial line v1.02 §3.3.2
 * uses it: "at any time one driver only has the right for transmitting").
 *
 * Transceivers (Rs485Device) attach to the channel. A transceiver enables its driver, sends
 * characters, and releases the driver; the channel carries each character to every attached
 * transceiver, the sender included (a two-wire bus has the sender's receiver on the same pair).
 *
 * Contention: a character is corrupted (collided) if any other transceiver's driver was enabled
 * at any instant of the character's time on the line (driver intervals and characters are
 * half-open [from, to) intervals, so a driver enabled exactly when a character ends does not
 * touch it). Every receiver then gets the collided character as a framing error. The decision is
 * made at the character's end, from the recorded driver intervals, so it never depends on the
 * order of events that share a timestamp.
 *
 * Propagation: the delay between two different transceivers is Length x DelayPerMeter (all
 * transceivers are taken to be the full segment apart: the worst case); a transceiver hears its
 * own characters with no delay. Contention is judged on the line at the sender's timing (the
 * few microseconds of propagation are ignored there; see docs/rack.md).
 *
 * Events: one per character at its end (collision check, local echo, and delivery to everyone
 * when Length is 0), plus one per character for delivery to the other transceivers when the
 * propagation delay is not zero.
 */
class Rs485Channel : public Channel
{
  public:
    static TypeId GetTypeId();
    Rs485Channel();
    ~Rs485Channel() override;

    /// Character callbacks (Character, Collision traces): the line's view of one character.
    typedef void (*WireCharacterCallback)(const Rs485WireCharacter& c);
    /// Contention trace: (index of the transceiver that enabled its driver, drivers now enabled).
    typedef void (*ContentionCallback)(uint32_t device, uint32_t enabledDrivers);

    /// Connects a transceiver; returns its index on this channel.
    uint32_t Attach(Ptr<Rs485Device> device);
    Ptr<Rs485Device> GetRs485Device(uint32_t i) const;
    std::size_t GetNDevices() const override;
    Ptr<NetDevice> GetDevice(std::size_t i) const override;

    /// Propagation delay between two different transceivers (Length x DelayPerMeter).
    Time GetDelay() const;

    // ---- used by Rs485Device -----------------------------------------------------------------
    /// Driver enable (DE) of transceiver `id` goes on or off now.
    void SetDriverEnabled(uint32_t id, bool enabled);
    /// Transceiver `id` puts a character on the line from `start` (now) to `end`.
    void TransmitStart(uint32_t id, uint8_t byte, const Rs485Format& format, Time start, Time end);
    /// Number of drivers enabled now.
    uint32_t GetEnabledDrivers() const;

    // ---- observation -------------------------------------------------------------------------
    uint64_t GetCharacterCount() const { return m_characters; }
    /// Characters corrupted by contention.
    uint64_t GetCollidedCharacterCount() const { return m_collided; }
    /// Times a driver was enabled while another one was.
    uint64_t GetContentionCount() const { return m_contentions; }
    /// Total time characters occupied the line (overlapping characters counted once each).
    Time GetBusyTime() const { return m_busyTime; }

  protected:
    void DoDispose() override;

  private:
    struct Interval
    {
        Time from;
        Time to; ///< Time::Max() while still enabled
    };
    struct Driver
    {
        bool enabled = false;
        std::deque<Interval> history; ///< recent enable intervals, oldest first
    };

    struct Entry
    {
        Rs485WireCharacter c;
        bool evaluated; ///< its end has passed and its collision status is final
    };

    void EndCharacter(uint64_t seq);
    void Deliver(Rs485WireCharacter c);
    Entry* Find(uint64_t seq);
    void Prune();

    std::vector<Ptr<Rs485Device>> m_devices;
    std::vector<Driver> m_drivers;
    /// Characters that started recently, in start order (kept while a later one may overlap).
    std::deque<Entry> m_recent;
    uint64_t m_nextSeq = 0;
    Time m_longestCharacter; ///< for pruning: no character lasts longer

    double m_lengthMeters;
    Time m_delayPerMeter;

    uint64_t m_characters = 0;
    uint64_t m_collided = 0;
    uint64_t m_contentions = 0;
    Time m_busyTime;

    TracedCallback<const Rs485WireCharacter&> m_characterTrace;
    TracedCallback<const Rs485WireCharacter&> m_collisionTrace;
    TracedCallback<uint32_t, uint32_t> m_contentionTrace;
};

} // namespace ns3

#endif
