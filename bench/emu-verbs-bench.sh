#!/usr/bin/env bash
# Unmodified verbs programs through the emulator (issue 13's bench): Debian's ibv_rc_pingpong
# round trip and ib_write_bw / ib_read_bw goodput between two emulated hosts, in wall-clock
# terms as the programs report them, with the daemon's lag over each run. RoCE at real time,
# InfiniBand at the dilation it needs on this machine (issue 18). Needs root and the packages of
# scripts/setup-debian.sh. Prints a table; docs/performance.md records the figures.
#
#   bench/emu-verbs-bench.sh [build-dir]       # default: build
#   ITERS=2000 IB_DILATION=10 bench/emu-verbs-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cnuas="$build/bin/cnuas"
[ -x "$cnuas" ] || { echo "no $cnuas: build first" >&2; exit 1; }
[ -r "$build/host/lib/libibverbs.so.1" ] || { echo "no Cnuas libibverbs: build with libibverbs-dev" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
command -v ib_write_bw >/dev/null || { echo "needs perftest (scripts/setup-debian.sh)" >&2; exit 1; }

state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
iters=${ITERS:-2000}
bw_iters=${BW_ITERS:-5000}
ib_dilation=${IB_DILATION:-10}

cleanup() {
  "$cnuas" down --all >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT

# Waits until host h1 of fabric $1 listens on TCP port $2.
wait_listen() {
  for _ in $(seq 100); do
    "$cnuas" exec --name "$1" h1 -- ss -ltn | grep -q ":$2 " && return 0
    sleep 0.1
  done
  echo "server did not start" >&2
  return 1
}

# pair FABRIC SERVER_IP CMD...: runs CMD in h1 (server) and h0 (client); prints the client's output.
pair() {
  local fab=$1 ip=$2
  shift 2
  "$cnuas" exec --name "$fab" h1 -- timeout 300 "$@" >/dev/null 2>&1 &
  wait_listen "$fab" 18515
  "$cnuas" exec --name "$fab" h0 -- timeout 300 "$@" "$ip"
  wait
}

lag() { # fabric -> the daemon's lag since the fabric came up
  "$cnuas" status --json | /usr/bin/python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s.get("name") == sys.argv[1]:
        f = s["live"]["lag"]
        print("since up: lag mean %.1f us, max %.0f us; %d of %d events late > 1 ms; sim %.2f s in %.2f s wall"
              % (f["mean_lag_us"], f["max_lag_us"], f["late_events"], f["events"], f["sim_s"], f["wall_s"]))' "$1" 2>/dev/null || echo "lag n/a"
}

echo "# $(date -u) $(uname -srm) $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# ibv_rc_pingpong: $iters iterations; ib_write_bw/ib_read_bw: $bw_iters iterations of 64 KiB"
printf '%-11s %-44s %s\n' fabric measurement result
for fab in roce ib; do
  if [ $fab = roce ]; then
    "$cnuas" up --name bv$fab --fabric roce --hosts 2 >/dev/null
    ip=10.0.0.2; gid="-g 0"; dil=1
  else
    "$cnuas" up --name bv$fab --fabric ib --hosts 2 --dilation "$ib_dilation" >/dev/null
    ip=10.255.0.2; gid=""; dil=$ib_dilation
  fi
  for size in 64 4096; do
    out=$(pair bv$fab $ip ibv_rc_pingpong $gid -s $size -n "$iters" | grep 'usec/iter')
    printf '%-11s %-44s %s\n' "$fab x$dil" "rc_pingpong -s $size round trip (usec/iter)" "$(echo "$out" | sed 's/.*= //')"
  done
  printf '%-11s %-44s %s\n' "$fab x$dil" "  daemon" "$(lag bv$fab)"
  for tool in ib_write_bw ib_read_bw; do
    out=$(pair bv$fab $ip $tool -n "$bw_iters" -s 65536 | awk '/^ 65536/ {print $4}')
    gbps=$(/usr/bin/python3 -c "print('%.2f' % ($out * 8 * 1.048576 / 1000))")
    printf '%-11s %-44s %s\n' "$fab x$dil" "$tool 64 KiB (MB/s avg, Gb/s)" "$out MB/s = $gbps Gb/s"
  done
  printf '%-11s %-44s %s\n' "$fab x$dil" "  daemon" "$(lag bv$fab)"
  "$cnuas" down --name bv$fab >/dev/null
done
