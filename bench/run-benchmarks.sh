#!/usr/bin/env bash
# Reproduces the figures in docs/performance.md: every benchmark in its own process (peak memory
# is a per-process high-water mark), Release build, results to stdout and bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target wire-bench fabric-bench sm-bench rs485-pty-bench >/dev/null
mkdir -p bench/results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=bench/results/$stamp.txt
{
  echo "# $(date -u) $(uname -srm) $(nproc) cores"
  build/bin/wire-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
  for f in 'FatTreeAllToAll/4/' 'FatTreeAllToAll/8/' 'Incast' 'FatTreeSmallPackets'; do
    build/bin/fabric-bench --benchmark_filter="$f"
  done
  for f in 'FatTreeBringUp/8/0' 'FatTreeBringUp/8/1' 'FatTreeBringUp/16/0'; do
    build/bin/sm-bench --benchmark_filter="$f"
  done
  build/bin/rs485-pty-bench
} 2>&1 | tee "$out"
echo "results in $out"
