#!/usr/bin/env bash
# Builds Cnuas (Release) and runs the whole test suite with ctest. Used by README and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure -j"$(nproc)"
