#!/usr/bin/env bash
# Emulated RoCE fabric against the physical limit of this machine (issue 12's bench): ping
# round-trip time and TCP goodput between two network namespaces joined (a) by a plain veth
# pair and (b) by `cnuas up --hosts 2` (two TAPs, a simulated 100 Gb/s switch between them),
# with the daemon's lag while the TCP test runs. Needs root. Prints a table; docs/performance.md
# records the figures.
#
#   bench/emu-roce-bench.sh [build-dir]      # default: build
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
goodput() { # client-netns server-netns dst -> Gbit/s received
  ip netns exec "$2" iperf3 -s -1 -D -p 5201 >/dev/null
  sleep 0.5
  ip netns exec "$1" iperf3 -c "$3" -p 5201 -t "$secs" -J |
    /usr/bin/python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))'
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
veth_gbps=$(goodput $a $b 10.9.0.2)

# (b) the emulated fabric
"$cnuas" up --name bench --hosts 2 >/dev/null
ping_rtt bench-h0 10.0.0.2 >/dev/null
emu_rtt=$(ping_rtt bench-h0 10.0.0.2)
lag_file=$(mktemp)
( sleep 2; "$cnuas" status --json > "$lag_file" ) &
emu_gbps=$(goodput bench-h0 bench-h1 10.0.0.2)
wait
lag=$(/usr/bin/python3 -c '
import json,sys
for s in json.load(open(sys.argv[1])):
    if s.get("name") == "bench":
        l = s["live"]["lag"]
        print("now %.1f us, mean %.1f us, max %.1f us, late>1ms %d of %d events" % (
            l["current_lag_us"], l["mean_lag_us"], l["max_lag_us"], l["late_events"], l["events"]))
' "$lag_file")
rm -f "$lag_file"

veth_avg=$(echo "$veth_rtt" | cut -d/ -f2)
emu_avg=$(echo "$emu_rtt" | cut -d/ -f2)
printf "%-22s %-28s %s\n" "path" "ping rtt min/avg/max/mdev ms" "TCP goodput Gbit/s"
printf "%-22s %-28s %s\n" "veth pair" "$veth_rtt" "$veth_gbps"
printf "%-22s %-28s %s\n" "cnuas RoCE, 1 switch" "$emu_rtt" "$emu_gbps"
/usr/bin/python3 -c "print('ratio (cnuas/veth): rtt %.2fx, goodput %.2fx' % ($emu_avg/$veth_avg, $emu_gbps/$veth_gbps))"
echo "daemon lag during TCP: $lag"
