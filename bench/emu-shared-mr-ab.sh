#!/usr/bin/env bash
# Registered memory shared with the daemon against the /proc/PID/mem path, alternated in the
# same session on the same fabric: Debian's ib_write_bw / ib_read_bw goodput and ibv_rc_pingpong
# round trip between two emulated RoCE hosts, with CNUAS_SHARE_MR=1 (the default: the verbs
# library moves each registered region into a memfd the daemon maps) and CNUAS_SHARE_MR=0 (every
# access a pread/pwrite of /proc/PID/mem). Once at the default 1,500-byte Ethernet MTU (RoCE MTU
# 1,024) and once with jumbo frames (9,000, RoCE MTU 4,096). Needs root and the packages of
# scripts/setup-debian.sh; docs/performance.md records the figures.
#
#   bench/emu-shared-mr-ab.sh [build-dir]     # ROUNDS=3 BW_ITERS=5000 ITERS=2000 MTUS="1500 9000"
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cnuas="$build/bin/cnuas"
[ -x "$cnuas" ] || { echo "no $cnuas: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
command -v ib_write_bw >/dev/null || { echo "needs perftest (scripts/setup-debian.sh)" >&2; exit 1; }

state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
rounds=${ROUNDS:-3}
bw_iters=${BW_ITERS:-5000}
iters=${ITERS:-2000}
mtus=${MTUS:-1500 9000}
cleanup() {
  "$cnuas" down --all >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT

wait_listen() {
  for _ in $(seq 100); do
    "$cnuas" exec --name ab h1 -- ss -ltn | grep -q ":$1 " && return 0
    sleep 0.1
  done
  echo "server did not start" >&2
  return 1
}

# pair SHARE CMD...: CMD in h1 (server) and h0 (client, with the server's address); client output.
pair() {
  local share=$1
  shift
  "$cnuas" exec --name ab h1 -- env CNUAS_SHARE_MR="$share" timeout 300 "$@" >/dev/null 2>&1 &
  wait_listen 18515
  "$cnuas" exec --name ab h0 -- env CNUAS_SHARE_MR="$share" timeout 300 "$@" 10.0.0.2 2>/dev/null \
    | grep -v "inline feature"
  wait
}

echo "# $(date -u) $(uname -srm) $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $rounds rounds; ib_*_bw: $bw_iters x 64 KiB; rc_pingpong: $iters iterations"
printf '%-6s %-5s %-6s %-14s %-14s %-20s %s\n' mtu round shared write_MB/s read_MB/s \
  rc_pingpong_4096_us rc_pingpong_64_us
for mtu in $mtus; do
  "$cnuas" up --name ab --fabric roce --hosts 2 --mtu "$mtu" >/dev/null
  for r in $(seq "$rounds"); do
    for share in 1 0; do
      w=$(pair $share ib_write_bw -n "$bw_iters" -s 65536 | awk '/^ 65536/ {print $4}')
      rd=$(pair $share ib_read_bw -n "$bw_iters" -s 65536 | awk '/^ 65536/ {print $4}')
      p4=$(pair $share ibv_rc_pingpong -g 0 -s 4096 -n "$iters" | sed -n 's/.*= \([0-9.]*\) usec\/iter.*/\1/p')
      p64=$(pair $share ibv_rc_pingpong -g 0 -s 64 -n "$iters" | sed -n 's/.*= \([0-9.]*\) usec\/iter.*/\1/p')
      printf '%-6s %-5s %-6s %-14s %-14s %-20s %s\n' "$mtu" "$r" "$share" "$w" "$rd" "$p4" "$p64"
    done
  done
  "$cnuas" status --name ab 2>/dev/null | grep -E "lag:" || "$cnuas" status | grep -E "lag:"
  "$cnuas" down --name ab >/dev/null
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
