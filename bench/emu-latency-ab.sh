#!/usr/bin/env bash
# Latency through the emulation daemon, two builds alternated (issues 12 and 13): on a machine
# whose load comes and goes, one run of each says little, so this runs ROUNDS short rounds,
# each a ping (PINGS at 2 ms), an ibv_rc_pingpong -s 64 and one -s 4096 (ITERS iterations)
# between two hosts of a 2-host RoCE fabric, old build then new (or new then old on odd rounds),
# and prints every figure and the median, quartiles and best of each. Needs root.
#
#   bench/emu-latency-ab.sh OLD_BUILD_DIR NEW_BUILD_DIR     # e.g. a copy of build/ before a change
#   ROUNDS=10 PINGS=300 ITERS=2000 UP_ARGS_OLD="" UP_ARGS_NEW="--set ..." bench/emu-latency-ab.sh build build
#
# An old build copied elsewhere finds its libcnuas through LD_LIBRARY_PATH=OLD/ns3-module (its
# RUNPATH names the original tree); the script sets that when OLD/ns3-module exists.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/emu-latency-ab.sh OLD_BUILD_DIR NEW_BUILD_DIR}
new=${2:?usage: bench/emu-latency-ab.sh OLD_BUILD_DIR NEW_BUILD_DIR}
rounds=${ROUNDS:-10}
pings=${PINGS:-300}
iters=${ITERS:-2000}
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
results=$(mktemp)
trap 'for b in "$old" "$new"; do "$b/bin/cnuas" down --all >/dev/null 2>&1 || true; done; rm -rf "$state" "$results"' EXIT

cnuas() { # build args...
  local b=$1
  shift
  if [ -d "$b/ns3-module" ] && [ ! -d "$b/CMakeFiles" ]; then
    LD_LIBRARY_PATH="$b/ns3-module" "$b/bin/cnuas" "$@"
  else
    "$b/bin/cnuas" "$@"
  fi
}

one_round() { # label build up-args
  local label=$1 b=$2 up=$3 rtt size out
  # shellcheck disable=SC2086
  cnuas "$b" up --name lat-ab --fabric roce --hosts 2 $up >/dev/null
  ip netns exec lat-ab-h0 ping -q -c 20 -i 0.002 10.0.0.2 >/dev/null
  rtt=$(ip netns exec lat-ab-h0 ping -q -c "$pings" -i 0.002 10.0.0.2 |
    sed -n 's/.*= [0-9.]*\/\([0-9.]*\)\/.*/\1/p')
  echo "$label ping_avg_us $(/usr/bin/python3 -c "print('%.1f' % ($rtt * 1000))")" | tee -a "$results"
  for size in 64 4096; do
    cnuas "$b" exec --name lat-ab h1 -- timeout 120 ibv_rc_pingpong -g 0 -s $size -n "$iters" \
      >/dev/null 2>&1 &
    for _ in $(seq 100); do
      cnuas "$b" exec --name lat-ab h1 -- ss -ltn | grep -q ":18515 " && break
      sleep 0.1
    done
    out=$(cnuas "$b" exec --name lat-ab h0 -- timeout 120 ibv_rc_pingpong -g 0 -s $size \
      -n "$iters" 10.0.0.2 | sed -n 's/.*= \([0-9.]*\) usec\/iter/\1/p')
    wait
    echo "$label rc_pingpong_${size}_us ${out:-nan}" | tee -a "$results"
  done
  cnuas "$b" down --name lat-ab >/dev/null
}

echo "# $(date -u) $(nproc) cores; $rounds rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    one_round old "$old" "${UP_ARGS_OLD:-}"
    one_round new "$new" "${UP_ARGS_NEW:-}"
  else
    one_round new "$new" "${UP_ARGS_NEW:-}"
    one_round old "$old" "${UP_ARGS_OLD:-}"
  fi
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$results" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    label, what, value = line.split()
    if value != "nan":
        runs.setdefault((what, label), []).append(float(value))
for (what, label), v in sorted(runs.items()):
    s = sorted(v)
    print("%-22s %-4s n %2d  median %7.1f  quartiles %7.1f %7.1f  best %7.1f" % (
        what, label, len(s), statistics.median(s), s[len(s) // 4], s[(3 * len(s)) // 4], s[0]))
EOF
