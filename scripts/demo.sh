#!/usr/bin/env bash
# Sets up, builds, and runs the main demo: an InfiniBand 8-to-1 incast with a victim flow,
# writing pcaps (open them in Wireshark), CSV traces and plots under out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
build/bin/cnuas run ib-incast --pcap out/ib-incast/pcap --out out/ib-incast
echo
for f in out/ib-incast/pcap/*.pcap; do build/bin/cnuas pcap check "$f"; done
