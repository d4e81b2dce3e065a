#!/usr/bin/env bash
# Reproduces the figures in docs/performance.md: every benchmark in its own process (peak memory
# is a per-process high-water mark), Release build, results to stdout and bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target wire-bench fabric-bench rdma-bench rdma-traffic-bench rs485-pty-bench sm-bench eth-bench rack-bench roce-hpcc-bench cnuas >/dev/null
mkdir -p bench/results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=bench/results/$stamp.txt
{
  echo "# $(date -u) $(uname -srm) $(nproc) cores"
  build/bin/wire-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
  for f in 'FatTreeAllToAll/4/' 'FatTreeAllToAll/8/' 'Incast' 'FatTreeSmallPackets'; do
    build/bin/fabric-bench --benchmark_filter="$f"
  done
  for f in 'RcWriteStream' 'ManyQps'; do
    build/bin/rdma-bench --benchmark_filter="$f"
  done
  build/bin/rs485-pty-bench
  build/bin/rack-bench
  for f in 'OneQp/64/1/' 'OneQp/64/16/' 'OneQp/64/128/' 'OneQp/4096/' 'OneQp/65536/' \
           'OneQp/1048576/' 'ManyQps/1000/64/' 'ManyQps/1000/4096/' 'FctWebSearch'; do
    build/bin/rdma-traffic-bench --benchmark_filter="$f"
  done
  for f in 'FatTreeBringUp/8/0' 'FatTreeBringUp/8/1' 'FatTreeBringUp/16/0'; do
    build/bin/sm-bench --benchmark_filter="$f"
  done
  # Ethernet/PFC fabric (docs/roce.md §7)
  for f in 'FatTreeAllToAll/4/' 'FatTreeAllToAll/8/' 'LeafSpine320' 'Incast/8/' 'Incast/32/'; do
    build/bin/eth-bench --benchmark_filter="$f"
  done
  # RoCE on HPCC's fat-tree (issue 4; skipped without ../shared/data/hpcc-compat beside the
  # project or $CNUAS_HPCC_DIR). One benchmark per process: peak RSS is a process high-water mark.
  for f in 'RoceHpccWebSearch$' 'RoceHpccWebSearch300$' 'RoceHpccWebSearch300Sampled' \
           'RoceHpccFbHadoop'; do
    build/bin/roce-hpcc-bench --benchmark_filter="$f"
  done
  # How the cost grows with the fabric (issues 17 and 18), quick defaults: RoCE k=8 and 12 for
  # 2 ms, InfiniBand all-to-all k=8 (K=16 and the figures: docs/performance.md).
  /usr/bin/python3 bench/roce-scale-bench.py
  /usr/bin/python3 bench/ib-scale-bench.py
} 2>&1 | tee "$out"
echo "results in $out"
