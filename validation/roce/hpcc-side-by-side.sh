#!/bin/bash
# Cnuas and HPCC's reference simulator on the same HPCC inputs at the same moment, each pinned to
# its own core (issue 17): the speed ratio (wall and CPU time), the peak memory of both, and the
# FCT slowdown per size bucket (p50/p95/p99, Cnuas against the reference) with a plot.
#
# Usage: hpcc-side-by-side.sh HPCC_SIM_DIR [CASE ...]
#   HPCC_SIM_DIR  the reference's simulation/ folder, built (build/scratch/third; how to build it:
#                 ../shared/design/notes/hpcc-reference-simulator.md)
#   CASE          ws-dcqcn ws-hpcc fb-dcqcn fb-hpcc incast-dcqcn (default: ws-dcqcn ws-hpcc)
# Environment:
#   HPCC_INPUT_DIR  the HPCC-format inputs (default ../shared/data/hpcc-compat beside the checkout)
#   ROUNDS          rounds per case (1); every second round swaps the two cores
#   CORES           "C R": Cnuas's core and the reference's in the first round ("0 1")
#   MAX_FLOWS       0 = every flow; N runs the first N flows of the flow file in both
#   OUT             output folder (build/validation/roce); results in OUT/side-by-side/
# Writes OUT/side-by-side/summary.md (per case and round: wall, CPU, peak RSS of both, the
# ratios, the load average before and after), speed.png, fct-compare.txt and fct-compare.png.
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  usage
  exit 0
fi
if [ $# -lt 1 ]; then
  usage >&2
  exit 2
fi
source "$(dirname "$0")/common.sh"
SIM="$1"
shift
[ -d "$SIM" ] || { echo "$0: no such directory: $SIM" >&2; exit 2; }
SIM="$(cd "$SIM" && pwd)"
THIRD="$SIM/build/scratch/third"
[ -x "$THIRD" ] || { echo "$0: $THIRD is not there: build the reference first" \
  "(../shared/design/notes/hpcc-reference-simulator.md)" >&2; exit 2; }
DATA="${HPCC_INPUT_DIR:-}"
if [ -z "$DATA" ] && [ -d "$ROOT/../shared/data/hpcc-compat" ]; then
  DATA="$ROOT/../shared/data/hpcc-compat"
fi
[ -n "$DATA" ] && [ -d "$DATA" ] || { echo "$0: set HPCC_INPUT_DIR to the HPCC input files" >&2
  exit 2; }
DATA="$(cd "$DATA" && pwd)"
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(ws-dcqcn ws-hpcc)
ROUNDS="${ROUNDS:-1}"
MAX_FLOWS="${MAX_FLOWS:-0}"
read -r CORE_C CORE_R <<< "${CORES:-0 1}"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "$0: ROUNDS must be a positive number" >&2; exit 2; }
[[ "$MAX_FLOWS" =~ ^[0-9]+$ ]] || { echo "$0: MAX_FLOWS must be a number" >&2; exit 2; }
[[ "$CORE_C" =~ ^[0-9]+$ && "$CORE_R" =~ ^[0-9]+$ && "$CORE_C" != "$CORE_R" ]] ||
  { echo "$0: CORES must name two different cores, e.g. \"0 1\"" >&2; exit 2; }
for tool in taskset /usr/bin/time; do
  command -v "$tool" > /dev/null || { echo "$0: $tool is missing" >&2; exit 2; }
done

# case -> topology, flows, config (the HPCC configs those workloads were published with; FB_Hadoop
# under HPCC's CC uses the WebSearch hp95 config with the FB flow file, as hpcc-fct.sh does).
spec() {
  case "$1" in
    ws-dcqcn) echo "fat.txt ws30_5ms.txt config_fat_ws30_5ms_dcqcn.txt" ;;
    ws-hpcc) echo "fat.txt ws30_5ms.txt config_fat_ws30_5ms_hp95.txt" ;;
    fb-dcqcn) echo "fat.txt fb30_5ms.txt config_fat_fb30_5ms_dcqcn.txt" ;;
    fb-hpcc) echo "fat.txt fb30_5ms.txt config_fat_ws30_5ms_hp95.txt" ;;
    incast-dcqcn) echo "topology.txt incast60.txt config_topology_incast60_dcqcn.txt" ;;
    *) return 1 ;;
  esac
}
for c in "${CASES[@]}"; do
  s="$(spec "$c")" || { echo "$0: unknown case '$c' (ws-dcqcn ws-hpcc fb-dcqcn fb-hpcc" \
    "incast-dcqcn)" >&2; exit 2; }
  for f in $s; do
    [ -f "$DATA/$f" ] || { echo "$0: $DATA has no $f" >&2; exit 2; }
  done
done

RES="$OUT/side-by-side"
rm -rf "$RES"
mkdir -p "$RES"
load() { cut -d' ' -f1-3 /proc/loadavg; }

# The reference reads its file names from the config: every path becomes absolute, its outputs go
# into the run's folder. The flow file is the one both simulators read.
reference_config() { # config flows topology dir
  sed -e "s|^TOPOLOGY_FILE .*|TOPOLOGY_FILE $3|" \
      -e "s|^FLOW_FILE .*|FLOW_FILE $2|" \
      -e "s|^TRACE_FILE .*|TRACE_FILE $SIM/mix/trace.txt|" \
      -e "s|^TRACE_OUTPUT_FILE .*|TRACE_OUTPUT_FILE $4/mix.tr|" \
      -e "s|^FCT_OUTPUT_FILE .*|FCT_OUTPUT_FILE $4/fct.txt|" \
      -e "s|^PFC_OUTPUT_FILE .*|PFC_OUTPUT_FILE $4/pfc.txt|" \
      -e "s|^QLEN_MON_FILE .*|QLEN_MON_FILE $4/qlen.txt|" "$1"
}

run_pair() { # case round
  local name="$1" round="$2" topo flows cfg dir cc cr
  read -r topo flows cfg <<< "$(spec "$name")"
  dir="$RES/$name/round$round"
  mkdir -p "$dir/cnuas" "$dir/reference"
  local flowfile="$DATA/$flows"
  if [ "$MAX_FLOWS" != 0 ]; then
    flowfile="$dir/flows.txt"
    { echo "$MAX_FLOWS"; sed -n "2,$((MAX_FLOWS + 1))p" "$DATA/$flows"; } > "$flowfile"
    [ "$(($(wc -l < "$flowfile") - 1))" = "$MAX_FLOWS" ] ||
      { echo "$0: $flows has fewer than $MAX_FLOWS flows" >&2; return 1; }
  fi
  reference_config "$DATA/$cfg" "$flowfile" "$DATA/$topo" "$dir/reference" \
    > "$dir/reference/config.txt"
  if [ $((round % 2)) = 1 ]; then cc=$CORE_C cr=$CORE_R; else cc=$CORE_R cr=$CORE_C; fi
  echo "$cc $cr" > "$dir/cores"
  load > "$dir/load-before"
  local t0=$SECONDS
  taskset -c "$cc" /usr/bin/time -f "%e %U %S %M" -o "$dir/cnuas/time" \
    "$CNUAS" run roce-hpcc --no-progress --out "$dir/cnuas" --param dir="$DATA" \
    --param topology-file="$DATA/$topo" --param flow-file="$flowfile" \
    --param config-file="$DATA/$cfg" \
    > "$dir/cnuas/summary.txt" 2> "$dir/cnuas/stderr.txt" &
  local pc=$!
  ( cd "$SIM" && LD_LIBRARY_PATH="$SIM/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      taskset -c "$cr" /usr/bin/time -f "%e %U %S %M" -o "$dir/reference/time" \
      "$THIRD" "$dir/reference/config.txt" > "$dir/reference/stdout.txt" 2>&1 ) &
  local pr=$!
  local rc_c="" rc_r=""
  # Progress every 30 s while either runs; each one's exit status once it has ended.
  while [ -z "$rc_c" ] || [ -z "$rc_r" ]; do
    sleep 1
    if [ -z "$rc_c" ] && ! kill -0 "$pc" 2> /dev/null; then
      wait "$pc" && rc_c=0 || rc_c=$?
      echo "$(date +%T) $name round $round: Cnuas done after $((SECONDS - t0)) s (exit $rc_c)"
    fi
    if [ -z "$rc_r" ] && ! kill -0 "$pr" 2> /dev/null; then
      wait "$pr" && rc_r=0 || rc_r=$?
      echo "$(date +%T) $name round $round: reference done after $((SECONDS - t0)) s (exit $rc_r)"
    fi
    if [ $(((SECONDS - t0) % 30)) = 0 ] && { [ -z "$rc_c" ] || [ -z "$rc_r" ]; }; then
      echo "$(date +%T) $name round $round: $((SECONDS - t0)) s, load $(load)"
    fi
  done
  load > "$dir/load-after"
  [ "$rc_c" = 0 ] || { echo "$0: Cnuas failed on $name, see $dir/cnuas/stderr.txt" >&2; return 1; }
  [ "$rc_r" = 0 ] || { echo "$0: the reference failed on $name, see $dir/reference/stdout.txt" >&2
    return 1; }
  [ -s "$dir/reference/fct.txt" ] || { echo "$0: the reference wrote no FCT file" \
    "($dir/reference/fct.txt)" >&2; return 1; }
}

echo "$(date +%T) side by side: ${CASES[*]}, $ROUNDS round(s), Cnuas $CNUAS, reference $THIRD," \
  "load $(load)"
for name in "${CASES[@]}"; do
  for ((r = 1; r <= ROUNDS; r++)); do
    run_pair "$name" "$r"
  done
done
"$PY" "$HERE/hpcc-side-by-side-report.py" --data "$DATA" --max-flows "$MAX_FLOWS" "$RES" \
  "${CASES[@]}"
