#!/usr/bin/env bash
# The built-in SM's bring-up of a k-ary fat-tree beside opensm's against ibsim on the same
# topology (issue 18). Per K, two rounds: the built-in SM (sm-bench's FatTreeBringUp/K/0, every
# SMP a packet on the simulated wire) and opensm (Debian's, unmodified, through libumad2sim
# against ibsim) started together, each pinned to its own core (BENCH_CORES, default "0 1"),
# the cores swapped in the second round. Then one more opensm run with its debug log on, only to
# count the SMPs it sends (the debug log slows it, so it is not timed).
#
#   bench/sm-vs-opensm.sh [build-dir]           # default build; K="8 16 24"
#   K=16 bench/sm-vs-opensm.sh                  # one fabric
#   OPENSM_ARGS="-R updn" bench/sm-vs-opensm.sh  # opensm's options (default: its min-hop routing)
#
# Built-in SM: wall and CPU time to every port Active, SMPs, peak RSS, from sm-bench's counters
# (one benchmark per process, so peak RSS is the bring-up's). opensm: wall time from its own log
# stamps, "Entering DISCOVERING state" to "SUBNET UP" (as bench/emu-umad-bench.sh), with
# --once so that it exits after that sweep; CPU time of opensm (whole process) plus ibsim's
# during the sweep (ibsim's parse of the topology file is left out); peak RSS of each.
#
# The topology file is `cnuas fabric show --view ibnetdiscover` of the same fat-tree: the names,
# GUIDs and port numbers Cnuas builds, in the format ibsim reads. Debian's ibsim 0.10 holds 256
# switches, 2,048 nodes and 13,312 ports unless told (-S/-N/-P); the script sizes them from the
# file. ibsim runs with -n (no console): with its standard input at end of file it would spin a
# core reading it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ks=${K:-"8 16 24"}
read -r core_a core_b <<< "${BENCH_CORES:-0 1}"
smbench="$build/bin/sm-bench"
cnuas="$build/bin/cnuas"
umad2sim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
[ -x "$smbench" ] && [ -x "$cnuas" ] || { echo "no $smbench or $cnuas: build first" >&2; exit 1; }
have_ibsim=1
command -v ibsim >/dev/null && command -v opensm >/dev/null && [ -r "$umad2sim" ] || have_ibsim=0
[ "$have_ibsim" = 1 ] || echo "(ibsim-utils, libumad2sim0 or opensm not installed: built-in SM only)" >&2

out=$(mktemp -d)
ibsim_pid=
cleanup() {
  [ -n "$ibsim_pid" ] && kill "$ibsim_pid" 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "files kept in $out" >&2; else rm -rf "$out"; fi
}
trap cleanup EXIT
tck=$(getconf CLK_TCK)

# CPU seconds (user + system) a live process has used so far.
cpu_of() { awk -v t="$tck" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat"; }
# sweep_seconds LOG, smps_sent DEBUG_LOG
. bench/opensm-log.sh

# The built-in SM on core $2 for fabric k=$1; its counters as JSON in $3.
builtin_run() {
  taskset -c "$2" "$smbench" --benchmark_filter="FatTreeBringUp/$1/0/" \
    --benchmark_out="$3" --benchmark_out_format=json >/dev/null 2>&1 || echo "sm-bench failed" >&2
}

# Starts ibsim on core $2 with topology $1 and waits until it has parsed the file.
ibsim_start() {
  local topo=$1 core=$2 sw nodes ports
  sw=$(grep -c '^Switch' "$topo")
  nodes=$(grep -c '^\(Switch\|Ca\|Hca\)' "$topo")
  # Every switch port plus its port 0, and one per CA port; twice over for headroom.
  ports=$(awk '/^Switch/ { n += $2 + 1 } /^(Ca|Hca)/ { n += $2 } END { print 2 * n }' "$topo")
  export IBSIM_SOCKNAME="smvsosm$$"
  (cd "$out" && exec taskset -c "$core" ibsim -n -S $((sw * 2 > 256 ? sw * 2 : 256)) \
     -N $((nodes * 2 > 2048 ? nodes * 2 : 2048)) -P $((ports > 13312 ? ports : 13312)) \
     -s "$topo" > "$out/ibsim.out" 2>&1) &
  ibsim_pid=$!
  for _ in $(seq 600); do
    grep -q "simulator ready" "$out/ibsim.out" 2>/dev/null && return 0
    kill -0 "$ibsim_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "ibsim did not start: $(tail -1 "$out/ibsim.out")" >&2
  ibsim_pid=
  return 1
}
ibsim_stop() {
  kill "$ibsim_pid" 2>/dev/null || true
  wait "$ibsim_pid" 2>/dev/null || true
  ibsim_pid=
}

# opensm --once on core $1 against the running ibsim, from h0 (where the built-in SM sits);
# $2 = extra options, $3 = log; its CPU and peak RSS (/usr/bin/time) to $3.time.
opensm_run() {
  rm -rf "$3" "$out/cache"
  mkdir -p "$out/cache"
  (cd "$out" && exec env SIM_HOST=h0 OSM_CACHE_DIR="$out/cache" LD_PRELOAD="$umad2sim" \
     taskset -c "$1" /usr/bin/time -o "$3.time" -f "%U %S %M" \
     timeout 600 opensm --once ${OPENSM_ARGS:-} $2 -f "$3" >/dev/null 2>&1) || echo "opensm failed" >&2
}

# One JSON counter of sm-bench's output.
counter() {
  /usr/bin/python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["benchmarks"][0]; print(b[sys.argv[2]])' "$1" "$2"
}

rows=()
for k in $ks; do
  topo="$out/k$k.topo"
  "$cnuas" fabric show --topology "fat-tree:k=$k" --view ibnetdiscover > "$topo"
  for round in 1 2; do
    if [ "$round" = 1 ]; then cb=$core_a; co=$core_b; else cb=$core_b; co=$core_a; fi
    osm_t=- osm_cpu=- osm_rss=- sim_rss=-
    started=0
    if [ "$have_ibsim" = 1 ] && ibsim_start "$topo" "$co"; then
      started=1
    fi
    builtin_run "$k" "$cb" "$out/b$k.$round.json" &
    bpid=$!
    if [ "$started" = 1 ]; then
      sim0=$(cpu_of "$ibsim_pid")
      opensm_run "$co" "" "$out/osm$k.$round.log"
      sim1=$(cpu_of "$ibsim_pid")
      sim_rss=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$ibsim_pid/status")
      ibsim_stop
      osm_t=$(sweep_seconds "$out/osm$k.$round.log")
      read -r u s m < "$out/osm$k.$round.log.time"
      osm_cpu=$(awk -v u="$u" -v s="$s" -v a="$sim0" -v b="$sim1" 'BEGIN { printf "%.2f+%.2f", u + s, b - a }')
      osm_rss=$(awk -v m="$m" 'BEGIN { printf "%.0f", m / 1024 }')
    fi
    wait "$bpid"
    j="$out/b$k.$round.json"
    b_t=$(awk -v v="$(counter "$j" real_time)" 'BEGIN { printf "%.3f", v / 1000 }')
    b_cpu=$(awk -v v="$(counter "$j" cpu_s_to_active)" 'BEGIN { printf "%.2f", v }')
    b_smps=$(awk -v v="$(counter "$j" smps_to_active)" 'BEGIN { printf "%d", v }')
    b_rss=$(awk -v v="$(counter "$j" peak_rss_mb)" 'BEGIN { printf "%.0f", v }')
    ratio=$(awk -v o="$osm_t" -v b="$b_t" 'BEGIN { if (o + 0 > 0 && b > 0) printf "%.1f", o / b; else print "-" }')
    # CPU too: on a machine others load, a core's wall time is shared and the CPU time is not.
    cratio=$(awk -v o="$osm_cpu" -v b="$b_cpu" 'BEGIN { split(o, a, "+"); if (a[1] + a[2] > 0 && b > 0) printf "%.1f", (a[1] + a[2]) / b; else print "-" }')
    rows+=("$(printf "%-4s %-5s %-4s %9s %7s %8s %6s | %-4s %9s %10s %11s %9s | %6s %6s" \
      "$k" "$round" "$cb" "$b_t" "$b_cpu" "$b_smps" "$b_rss" \
      "$co" "$osm_t" "@SMPS@" "$osm_cpu" "$osm_rss/$sim_rss" "$ratio" "$cratio")")
  done
  # opensm's SMP count: one more run with its debug log (vl15_send_mad), alone.
  osm_smps=-
  if [ "$have_ibsim" = 1 ] && ibsim_start "$topo" "$core_b"; then
    opensm_run "$core_b" "-D 0x0b" "$out/osm$k.debug.log"
    ibsim_stop
    osm_smps=$(smps_sent "$out/osm$k.debug.log")
  fi
  # This K's rows get the count.
  for i in "${!rows[@]}"; do
    rows[$i]=${rows[$i]/"$(printf %10s @SMPS@)"/"$(printf %10s "$osm_smps")"}
  done
done

echo "fat-tree bring-up: built-in SM (sm-bench, to every port Active) vs opensm --once on ibsim 0.10"
echo "(opensm: log stamps DISCOVERING -> SUBNET UP; CPU = opensm + ibsim during the sweep; RSS MB opensm/ibsim;"
echo " last two columns: opensm's wall and CPU over the built-in SM's)"
printf "%-4s %-5s %-4s %9s %7s %8s %6s | %-4s %9s %10s %11s %9s | %6s %6s\n" \
  k round core "wall s" "CPU s" SMPs "RSS MB" core "wall s" SMPs "CPU s" "RSS MB" "wall" "CPU"
printf '%s\n' "${rows[@]}"
