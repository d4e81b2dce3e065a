#!/usr/bin/env bash
# Coverage-guided fuzzing of one target with clang's libFuzzer (docs/fuzzing.md):
#
#   scripts/fuzz.sh TARGET [SECONDS] [-- LIBFUZZER_OPTIONS...]
#
# TARGET is one of tests/fuzz/fuzz-*.cc without "fuzz-" and ".cc" (wire-parsers, ib-wire,
# roce-wire, rack-protocols, input-files). Builds build-fuzz/ with clang, the library and the
# target instrumented for libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer, then
# fuzzes for SECONDS (default 600) from the seed corpus. New inputs go to
# build-fuzz/corpus/TARGET (the seeds in the repository are not touched), crashes to
# build-fuzz/crashes/TARGET/. Re-run a crash: build-fuzz/tests/fuzz/fuzz-TARGET FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/fuzz.sh TARGET [SECONDS] [-- LIBFUZZER_OPTIONS...]}"
shift
seconds=600
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  seconds="$1"
  shift
fi
[ "${1:-}" = "--" ] && shift
if [ ! -f "tests/fuzz/fuzz-$target.cc" ]; then
  echo "fuzz.sh: no target '$target' (tests/fuzz/fuzz-$target.cc)" >&2
  exit 2
fi
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang (apt-get install clang)" >&2; exit 2; }
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DCNUAS_LIBFUZZER=ON -DCNUAS_ALLOCATOR=system >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "fuzz-$target"
mkdir -p "build-fuzz/corpus/$target" "build-fuzz/crashes/$target"
exec "build-fuzz/tests/fuzz/fuzz-$target" -max_total_time="$seconds" -print_final_stats=1 \
     -artifact_prefix="build-fuzz/crashes/$target/" "$@" \
     "build-fuzz/corpus/$target" "tests/fuzz/corpus/$target"
