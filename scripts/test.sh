#!/usr/bin/env bash
# Builds Cnuas and runs the whole test suite with ctest, twice: a Release build, then a Debug
# build (-O1) with AddressSanitizer and UndefinedBehaviorSanitizer (which also turns on NS_ASSERT and
# NS_LOG in Cnuas's own code), leaving out the long simulated runs and the hybrid fabric's rdma_cm
# variants the Release pass ran. Used by README and .ci/run. Set CNUAS_SKIP_SANITIZERS=1 to run
# only the Release pass.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
jobs=$(nproc)

echo "== Release build and tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

if [ "${CNUAS_SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== Debug build with sanitizers, and tests"
  cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build-debug -j"$jobs"
  # Without the long simulated runs (label long-run, tests/CMakeLists.txt): the Release pass
  # has run them, and under the sanitizers they would double this pass. Nor the hybrid fabric's
  # rdma_cm variants (label hybrid-variant), whose code the InfiniBand and RoCE cases run.
  (cd build-debug && ctest --output-on-failure -j"$jobs" -LE 'long-run|hybrid-variant')
fi
