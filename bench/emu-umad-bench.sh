#!/usr/bin/env bash
# opensm's sweep of a fat-tree to SUBNET UP (issue 14's bench): Debian's opensm, unmodified, in
# host h0 of an emulated InfiniBand fabric (through Cnuas's libibumad, every SMP a packet on the
# simulated wire), beside the built-in SM on the same fabric and, when Debian's ibsim-utils is
# installed, opensm against ibsim on the same topology (the emulated fabric's own ibnetdiscover
# output, which ibsim reads). Needs root and the packages of scripts/setup-debian.sh.
#
#   bench/emu-umad-bench.sh [build-dir]             # default: build; K=8 DILATIONS="50 20"
#   DILATIONS= BUILTIN_DILATION=50 bench/emu-umad-bench.sh   # the built-in SM and ibsim only
#
# Times are opensm's own log stamps, from "Entering DISCOVERING state" to its first "SUBNET UP"
# (wall clock). SMPs are those opensm sent, from its debug log (vl15_send_mad's "total sent"),
# in a second run of each kind. The built-in SM's figures are its simulated time to subnet up
# (and that x dilation, its wall time) and its SMP count, from `cnuas status`. Prints a table;
# docs/performance.md ("umad") records the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cnuas="$build/bin/cnuas"
k=${K:-8}
dilations=${DILATIONS-"50 20"}
[ -x "$cnuas" ] || { echo "no $cnuas: build first" >&2; exit 1; }
[ -r "$build/host/lib/libibumad.so.3" ] || { echo "no Cnuas libibumad: build with libibumad-dev" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
command -v opensm >/dev/null || { echo "needs opensm (scripts/setup-debian.sh)" >&2; exit 1; }

state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
name=umadbench
cleanup() {
  "$cnuas" down --name "$name" >/dev/null 2>&1 || true
  [ -n "${ibsim_pid:-}" ] && kill "$ibsim_pid" 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "state kept in $state" >&2; else rm -rf "$state"; fi
}
trap cleanup EXIT

# sweep_seconds LOG, smps_sent DEBUG_LOG
. bench/opensm-log.sh
# Waits up to 120 s for "SUBNET UP" in log $1.
wait_up() {
  for _ in $(seq 600); do
    grep -q "SUBNET UP" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# One opensm run in h0 of a fresh fabric at dilation $1; $2 = extra opensm options; the log goes
# to $3.
cnuas_opensm() {
  "$cnuas" up --name "$name" --fabric ib --topology "fat-tree:k=$k" --sm none --dilation "$1" \
    --timeout 300 >/dev/null || { lag="(cnuas up failed)"; return 0; }
  "$cnuas" exec --name "$name" h0 -- env OSM_CACHE_DIR="$state" \
    timeout 300 opensm $2 -f "$3" >/dev/null 2>&1 &
  wait_up "$3" || echo "  (no SUBNET UP in 120 s)" >&2
  # The first run's LID assignment (later runs reuse opensm's cache).
  [ -s "$state/guid2lid.first" ] || cp "$state/guid2lid" "$state/guid2lid.first" 2>/dev/null || true
  [ -s "$state/k$k.topo" ] ||
    "$cnuas" exec --name "$name" h1 -- ibnetdiscover > "$state/k$k.topo" 2>/dev/null || true
  lag=$("$cnuas" status | awk '/lag:/ { print $3, $4 }' | tr -d ',' || true)
  "$cnuas" down --name "$name" >/dev/null || true
  wait 2>/dev/null || true
}

echo "fat-tree k=$k: opensm 3.3.23 from 'Entering DISCOVERING' to 'SUBNET UP'"
printf "%-34s %12s %8s  %s\n" "run" "wall s" "SMPs" "notes"
for d in $dilations; do
  cnuas_opensm "$d" "" "$state/osm-$d.log"
  t=$(sweep_seconds "$state/osm-$d.log")
  cnuas_opensm "$d" "-D 0x0b" "$state/osm-$d-debug.log"
  n=$(smps_sent "$state/osm-$d-debug.log")
  printf "%-34s %12s %8s  %s\n" "opensm vs Cnuas, dilation $d" "$t" "$n" "daemon lag at the end: $lag"
done

d0=${dilations%% *}
d0=${d0:-${BUILTIN_DILATION:-50}}
if "$cnuas" up --name "$name" --fabric ib --topology "fat-tree:k=$k" --sm builtin \
     --dilation "$d0" --timeout 300 >/dev/null; then
  for _ in $(seq 300); do
    sm=$("$cnuas" status | grep "subnet manager" || true)
    echo "$sm" | grep -q "subnet up at [0-9]" && break
    sleep 0.2
  done
  # The topology for ibsim, if no opensm run made it.
  [ -s "$state/k$k.topo" ] ||
    "$cnuas" exec --name "$name" h1 -- ibnetdiscover > "$state/k$k.topo" 2>/dev/null || true
  "$cnuas" down --name "$name" >/dev/null || true
  up_s=$(echo "$sm" | sed -n 's/.*subnet up at \([0-9.]*\) s simulated.*/\1/p')
  smps=$(echo "$sm" | sed -n 's/.* \([0-9]*\) SMPs.*/\1/p')
  wall=$(awk -v s="$up_s" -v d="$d0" 'BEGIN { printf "%.3f", s * d }')
  printf "%-34s %12s %8s  %s\n" "built-in SM, dilation $d0" "$wall" "$smps" "$up_s s simulated"
else
  echo "built-in SM: cnuas up failed"
fi

if command -v ibsim >/dev/null && [ -r /usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so ]; then
  # $1 = extra opensm options, $2 = its log. ibsim and opensm are this script's children, ended
  # by their process ids.
  sim_run() {
    export IBSIM_SOCKNAME="cnuasbench$$"
    (cd "$state" && exec ibsim -s "$state/k$k.topo" < /dev/null > "$state/ibsim.out" 2>&1) &
    ibsim_pid=$!
    sleep 3
    # opensm runs on h0 in both, so that both discover the fabric from the same port.
    host=$(grep '^Ca' "$state/k$k.topo" | grep -m1 '# "h0' | sed 's/[^"]*"\([^"]*\)".*/\1/')
    (cd "$state" && exec env SIM_HOST="$host" OSM_CACHE_DIR="$state/sim" \
       LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so \
       timeout 300 opensm $1 -f "$2" >/dev/null 2>&1) &
    local osm=$!
    wait_up "$2" || echo "  (no SUBNET UP under ibsim)" >&2
    kill "$osm" 2>/dev/null || true
    wait "$osm" 2>/dev/null || true
    kill "$ibsim_pid" 2>/dev/null || true
    wait "$ibsim_pid" 2>/dev/null || true
    ibsim_pid=
  }
  mkdir -p "$state/sim"
  sim_run "" "$state/sim.log"
  t=$(sweep_seconds "$state/sim.log")
  sim_run "-D 0x0b" "$state/sim-debug.log"
  n=$(smps_sent "$state/sim-debug.log")
  printf "%-34s %12s %8s  %s\n" "opensm vs ibsim 0.10" "$t" "$n" "same topology, no wire"
  # LIDs: opensm's guid2lid cache of its first (fresh) run against each.
  if [ -s "$state/guid2lid.first" ] && [ -s "$state/sim/guid2lid" ]; then
    # (opensm's cache has a blank line after every entry.)
    same=$(awk 'NF < 2 { next } NR == FNR { lid[$1] = $2; next }
                ($1 in lid) && lid[$1] == $2 { n++ } END { print n + 0 }' \
             "$state/guid2lid.first" "$state/sim/guid2lid")
    total=$(awk 'NF >= 2' "$state/sim/guid2lid" | wc -l)
    echo "LIDs opensm assigned: $same of $total ports (by GUID) the same against Cnuas and ibsim"
    diff <(awk 'NF >= 2' "$state/guid2lid.first" | sort) \
         <(awk 'NF >= 2' "$state/sim/guid2lid" | sort) | head -20 || true
  fi
else
  echo "(ibsim-utils and libumad2sim0 not installed: no ibsim row)"
fi
