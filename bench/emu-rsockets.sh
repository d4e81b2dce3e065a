#!/usr/bin/env bash
# rsockets on an emulated fabric (docs/emulation.md §8.6, "rsockets"): what a user sees from
# Debian's rstream (64 B and 4 KiB round trips, 64 KiB and 1 MiB streams) and from an unmodified
# iperf3 under librdmacm's librspreload, beside iperf3 over the kernel's TCP on the same fabric
# (RoCE: eth0 through the TAP bridge; InfiniBand: IPoIB), the two alternated in each round.
# ROUNDS runs each, the median printed with the spread. Wall-clock figures of a fabric run in
# real time: they include the emulation's own costs (docs/emulation.md §8.4). Needs root.
#
#   bench/emu-rsockets.sh [BUILD_DIR]          # default build, RoCE
#   ROUNDS=5 FABRIC=ib|roce bench/emu-rsockets.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
rounds=${ROUNDS:-3}
fabric=${FABRIC:-roce}
preload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
command -v rstream >/dev/null && command -v iperf3 >/dev/null && [ -r "$preload" ] ||
  { echo "needs rdmacm-utils, librdmacm1 and iperf3 (scripts/setup-debian.sh)" >&2; exit 1; }
state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
cnuas="$build/bin/cnuas"
trap '"$cnuas" down --all >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
args="--fabric $fabric --hosts 2"
[ "$fabric" = ib ] && args="$args --dilation 1"
"$cnuas" up --name rsock $args >/dev/null
x() { "$cnuas" exec --name rsock "$@"; }
# The IB fabric's ports turn Active after `up` returns; IPoIB and rdma_cm need them.
for i in $(seq 100); do x h0 ping -c 1 -W 1 10.0.0.2 >/dev/null 2>&1 && break; sleep 0.2; done

median() { # numbers on stdin -> "median (min-max)"
  sort -g | awk '{ v[NR] = $1 } END { printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

wait_listening() { # host: until its rdma_cm has a listener
  local i
  for i in $(seq 100); do
    "$cnuas" status --name rsock --json | python3 -c "
import json, sys
h = [h for h in json.load(sys.stdin)['live']['hosts'] if h['name'] == '$1'][0]
sys.exit(0 if h['rdma_cm']['listening'] > 0 else 1)" && return
    sleep 0.05
  done
}

rstream_col() { # rstream-args column -> the client's figure in that column
  x h1 timeout 60 rstream $1 >/dev/null 2>&1 &
  local srv=$!
  wait_listening h1
  x h0 timeout 60 rstream -s 10.0.0.2 $1 | awk -v c="$2" '/^custom/ { print $c }'
  wait $srv || true
}

iperf() { # env-prefix -> receiver Gb/s of a 3 s run
  x h1 timeout 30 $1 iperf3 -s -1 >/dev/null 2>&1 &
  local srv=$! i
  if [ -n "$1" ]; then
    wait_listening h1
  else
    for i in $(seq 100); do x h1 ss -ltn | grep -q ':5201 ' && break; sleep 0.05; done
  fi
  x h0 timeout 30 $1 iperf3 -c 10.0.0.2 -t 3 -J > "$state/iperf.json" 2>/dev/null || true
  wait $srv || true
  python3 -c "
import json, sys
d = json.load(open('$state/iperf.json'))
if 'sum_received' not in d['end']:
    sys.exit('iperf3: ' + str(d.get('error')))
print(round(d['end']['sum_received']['bits_per_second'] / 1e9, 3))"
}

echo "# $fabric fabric, 2 hosts, $rounds runs each; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for spec in "64 10000" "4096 2000"; do
  set -- $spec
  vals=$(for r in $(seq "$rounds"); do rstream_col "-S $1 -C $2 -T b" 8; done)
  echo "rstream $1 B round trips (-T b), us per transfer (half a round trip): $(echo "$vals" | median)"
done
for spec in "65536 200" "1048576 20"; do
  set -- $spec
  vals=$(for r in $(seq "$rounds"); do rstream_col "-S $1 -C $2 -T b" 7; done)
  echo "rstream $1 B streams (-T b, both ways in turn), Gb/s: $(echo "$vals" | median)"
done
rs=() tcp=()
for r in $(seq "$rounds"); do
  rs+=("$(iperf "env LD_PRELOAD=$preload")")
  tcp+=("$(iperf "")")
done
kernel=$([ "$fabric" = ib ] && echo IPoIB || echo eth0)
echo "iperf3 -t 3 under librspreload (rsockets over the adapter), Gb/s:" \
  "$(printf '%s\n' "${rs[@]}" | median)"
echo "iperf3 -t 3 over the kernel's TCP ($kernel), Gb/s: $(printf '%s\n' "${tcp[@]}" | median)"
