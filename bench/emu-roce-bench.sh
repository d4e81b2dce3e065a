#!/usr/bin/env bash
# Emulated RoCE fabric against the physical limit of this machine (issue 12's bench): ping
# round-trip time and TCP goodput between two network namespaces joined (a) by a plain veth
# pair and (b) by `cnuas up --hosts 2` (two TAPs, a simulated 100 Gb/s switch between them),
# once with the TAP bridge's offloads (TSO, checksum offload, receive coalescing; the defaults)
# and once without, with the daemon's lag over each TCP test. Needs root. Prints a table;
# docs/performance.md records the figures.
#
#   bench/emu-roce-bench.sh [build-dir]      # default: build
#   PINGS=500 SECS=5 RATES="1G 2G"            # pings, iperf3 seconds, offered loads (iperf3 -b)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cnuas="$build/bin/cnuas"
[ -x "$cnuas" ] || { echo "no $cnuas: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
command -v iperf3 >/dev/null || { echo "needs iperf3 (scripts/setup-debian.sh)" >&2; exit 1; }

state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
pings=${PINGS:-500}
secs=${SECS:-5}
a=cnb-veth-a b=cnb-veth-b

cleanup() {
  ip netns del $a 2>/dev/null || true
  ip netns del $b 2>/dev/null || true
  "$cnuas" down --name bench >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT

# rtt: "min/avg/max/mdev" in ms from ping's summary
ping_rtt() { # netns dst
  ip netns exec "$1" ping -q -c "$pings" -i 0.002 "$2" | sed -n 's/.*= \([0-9.\/]*\) ms/\1/p'
}
goodput() { # client-netns server-netns dst [rate] -> "Gbit/s received, retransmits"
  ip netns exec "$2" iperf3 -s -1 -D -p 5201 >/dev/null
  sleep 0.5
  ip netns exec "$1" iperf3 -c "$3" -p 5201 -t "$secs" ${4:+-b $4} -J |
    /usr/bin/python3 -c 'import json,sys; e=json.load(sys.stdin)["end"]; print("%.2f %d" % (e["sum_received"]["bits_per_second"]/1e9, e["sum_sent"].get("retransmits", 0)))'
}

echo "# $(date -u) $(uname -srm) $(nproc) cores; $pings pings at 2 ms, iperf3 TCP ${secs} s"

# (a) veth pair
ip netns add $a; ip netns add $b
ip link add cnbva type veth peer name cnbvb
ip link set cnbva netns $a; ip link set cnbvb netns $b
ip -n $a addr add 10.9.0.1/24 dev cnbva; ip -n $b addr add 10.9.0.2/24 dev cnbvb
ip -n $a link set cnbva up; ip -n $b link set cnbvb up
ip -n $a link set lo up; ip -n $b link set lo up
ping_rtt $a 10.9.0.2 >/dev/null # warm ARP
veth_rtt=$(ping_rtt $a 10.9.0.2)
veth_gbps=$(goodput $a $b 10.9.0.2 | cut -d" " -f1)

# (b) the emulated fabric, with the bridge's offloads (TSO, checksum offload, receive
# coalescing: the defaults) and without them, one after the other
off_set="--set ns3::EthTapBridge::ChecksumOffload=false --set ns3::EthTapBridge::SegmentationOffload=false --set ns3::EthTapBridge::ReceiveCoalescing=false"
emu_run() { # label, extra `cnuas up` arguments, variable prefix, [iperf3 -b rate]
  "$cnuas" up --name bench --hosts 2 $2 >/dev/null
  ping_rtt bench-h0 10.0.0.2 >/dev/null
  local rtt="" got gbps retr lag_file lag
  [ -n "${4:-}" ] || rtt=$(ping_rtt bench-h0 10.0.0.2)
  lag_file=$(mktemp)
  # the lag over the TCP test alone: one status before it, one at its end
  "$cnuas" status --json > "$lag_file.0"
  ( sleep $((secs - 1)); "$cnuas" status --json > "$lag_file" ) &
  got=$(goodput bench-h0 bench-h1 10.0.0.2 "${4:-}")
  wait
  gbps=${got% *}; retr=${got#* }
  lag=$(/usr/bin/python3 -c '
import json,sys
def get(f):
    for s in json.load(open(f)):
        if s.get("name") == "bench":
            return s["live"]
a, b = get(sys.argv[1] + ".0"), get(sys.argv[1])
la, lb = a["lag"], b["lag"]
ev = lb["events"] - la["events"]
late = lb["late_events"] - la["late_events"]
mean = (lb["mean_lag_us"] * lb["events"] - la["mean_lag_us"] * la["events"]) / max(ev, 1)
o0, o1 = b["hosts"][0].get("offload", {}), b["hosts"][1].get("offload", {})
print("lag mean %.0f us, %.1f %% of %d events > 1 ms late; h0 reads %d (TSO %d), h1 writes %d for %d frames" % (
    mean, 100.0 * late / max(ev, 1), ev, o0.get("reads_from_host", 0), o0.get("gso_from_host", 0),
    o1.get("writes_to_host", 0), b["hosts"][1]["to_host_frames"]))
' "$lag_file")
  rm -f "$lag_file" "$lag_file.0"
  "$cnuas" down --name bench >/dev/null
  printf "%-34s %-28s %-13s %s\n" "$1${4:+, offered $4}" "${rtt:--}" "$gbps ($retr)" "$lag"
  if [ -z "${4:-}" ]; then
    eval "${3}_rtt=\$(echo \$rtt | cut -d/ -f2); ${3}_gbps=\$gbps"
  fi
}

echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
veth_avg=$(echo "$veth_rtt" | cut -d/ -f2)
printf "%-34s %-28s %-13s %s\n" "path" "ping rtt min/avg/max/mdev ms" "TCP Gb/s (retr)" "daemon during TCP"
printf "%-34s %-28s %-13s\n" "veth pair" "$veth_rtt" "$veth_gbps"
emu_run "cnuas RoCE, offloads on" "" on
emu_run "cnuas RoCE, offloads off" "$off_set" off
# offered loads below the maximum: does the daemon keep real time there?
for rate in ${RATES-1G 2G}; do
  emu_run "cnuas RoCE, offloads on" "" on "$rate"
  emu_run "cnuas RoCE, offloads off" "$off_set" off "$rate"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 -c "print('ratio (cnuas/veth): offloads on: rtt %.2fx, goodput %.2fx; off: rtt %.2fx, goodput %.2fx' % ($on_rtt/$veth_avg, $on_gbps/$veth_gbps, $off_rtt/$veth_avg, $off_gbps/$veth_gbps))"
