#!/usr/bin/env bash
# Compares two builds on one scenario when the machine's speed drifts: both run at the same
# time, each pinned to its own core (taskset; PAIRED_CORES, default "0 1"), in two rounds with
# the cores and the start order swapped, so that both see the same machine (they share the last-level cache and memory bandwidth, so paired runs are slower than
# solo ones; compare the pair, not the absolute figures). Prints each run's wall time and peak
# RSS and whether the two builds wrote the same FCT file.
#   bench/paired-runs.sh OLD_BUILD_DIR NEW_BUILD_DIR [cnuas run arguments...]
# default arguments: roce-hpcc --no-progress (the HPCC fat-tree, WebSearch 30 %, DCQCN)
set -euo pipefail
old=${1:?usage: bench/paired-runs.sh OLD_BUILD_DIR NEW_BUILD_DIR [cnuas run args]}
new=${2:?usage: bench/paired-runs.sh OLD_BUILD_DIR NEW_BUILD_DIR [cnuas run args]}
shift 2
args=("$@")
if [ ${#args[@]} -eq 0 ]; then args=(roce-hpcc --no-progress); fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
read -r core_a core_b <<< "${PAIRED_CORES:-0 1}"
one() { # build label round core
  local dir="$out/$2"
  mkdir -p "$dir"
  taskset -c "$4" "$1/bin/cnuas" run "${args[@]}" --out "$dir" 2>&1 |
    awk -F: -v l="$2" -v r="$3" '/wall time/ {w=$2} /peak RSS/ {m=$2}
      END {gsub(/ /, "", w); gsub(/ /, "", m); printf "round %s %-4s wall %s s, peak RSS %s MB\n", r, l, w, m}'
}
for round in 1 2; do
  if [ "$round" = 1 ]; then
    one "$old" old "$round" "$core_a" & sleep 0.2; one "$new" new "$round" "$core_b" &
  else
    one "$new" new "$round" "$core_a" & sleep 0.2; one "$old" old "$round" "$core_b" &
  fi
  wait
done
for f in "$out"/old/*; do
  name=$(basename "$f")
  if cmp -s "$f" "$out/new/$name"; then echo "$name: identical"; else echo "$name: DIFFERS"; fi
done
