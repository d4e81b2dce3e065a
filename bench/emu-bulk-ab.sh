#!/usr/bin/env bash
# Bulk verbs traffic through the emulation daemon, two builds alternated: Debian's ib_write_bw,
# ib_read_bw and ib_send_bw (64 KiB messages, SECS seconds each, perftest's duration mode) between
# the two hosts of a 2-host fabric, old build then new (new then old on odd rounds), with the
# daemon's CPU seconds over each run and its largest lag. A busy real-time link runs as fast as
# the model can take its packets, so the goodput the programs print is the model's speed in
# wall-clock terms (docs/performance.md, "Emulation: unmodified verbs programs"). Needs root.
#
#   bench/emu-bulk-ab.sh OLD_BUILD_DIR NEW_BUILD_DIR       # e.g. a worktree's build of main
#   ROUNDS=3 SECS=4 FABRIC=ib|roce|hybrid bench/emu-bulk-ab.sh OLD NEW
#   OLD_ENV="CNUAS_POLL_SLEEP_AFTER_US=20" NEW_ENV="CNUAS_POLL_SLEEP_AFTER_US=200" \
#     bench/emu-bulk-ab.sh build build                   # one build, two settings
#
# OLD_ENV / NEW_ENV: VAR=VALUE words put in the programs' environment (the verbs library's
# settings, docs/emulation.md §8.4) for the old and the new side; UP_ARGS_OLD / UP_ARGS_NEW:
# more arguments of each side's `cnuas up` (e.g. --set ns3::EmuHcaService::WakeModerationLag=0).
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/emu-bulk-ab.sh OLD_BUILD_DIR NEW_BUILD_DIR}
new=${2:?usage: bench/emu-bulk-ab.sh OLD_BUILD_DIR NEW_BUILD_DIR}
rounds=${ROUNDS:-3}
secs=${SECS:-4}
fabric=${FABRIC:-ib}
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
command -v ib_write_bw >/dev/null || { echo "needs perftest (scripts/setup-debian.sh)" >&2; exit 1; }
for b in "$old" "$new"; do
  [ -x "$b/bin/cnuas" ] && [ -r "$b/host/lib/libibverbs.so.1" ] ||
    { echo "$b: needs bin/cnuas and host/lib (build the cnuas-cli and cnuas-ibverbs targets)" >&2; exit 1; }
done
state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
results=$(mktemp)
trap 'for b in "$old" "$new"; do "$b/bin/cnuas" down --all >/dev/null 2>&1 || true; done; rm -rf "$state" "$results"' EXIT

dev=""
[ "$fabric" = hybrid ] && dev="-d cnuas_0" # the InfiniBand HCA; cnuas_1 is the RoCE NIC
gid=""
[ "$fabric" = roce ] && gid="-x 0"
ip=10.0.0.2
[ "$fabric" = hybrid ] && ip=10.1.0.2

daemon_cpu() { # pid -> user+system CPU seconds so far
  awk '{ printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"
}

max_lag_ms() { # build -> the daemon's largest lag since up, ms
  "$1/bin/cnuas" status --json | /usr/bin/python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s.get("name") == "bulk-ab":
        print("%.0f" % (s["live"]["lag"]["max_lag_us"] / 1000))' 2>/dev/null || echo "?"
}

one_round() { # label build env up-args
  local label=$1 b=$2 envs=$3 up=$4 pid tool out before after
  # shellcheck disable=SC2086
  "$b/bin/cnuas" up --name bulk-ab --fabric "$fabric" --hosts 2 $up >/dev/null
  pid=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
    "$state/fabric-bulk-ab.json")
  for tool in ib_write_bw ib_read_bw ib_send_bw; do
    # shellcheck disable=SC2086
    env $envs "$b/bin/cnuas" exec --name bulk-ab h1 -- timeout 120 $tool $dev $gid -s 65536 -D "$secs" \
      >/dev/null 2>&1 &
    for _ in $(seq 100); do
      "$b/bin/cnuas" exec --name bulk-ab h1 -- ss -ltn | grep -q ":18515 " && break
      sleep 0.1
    done
    before=$(daemon_cpu "$pid")
    # shellcheck disable=SC2086
    out=$(env $envs "$b/bin/cnuas" exec --name bulk-ab h0 -- timeout 120 $tool $dev $gid -s 65536 \
      -D "$secs" "$ip" 2>/dev/null | awk '/^ 65536/ {print $4}')
    wait
    after=$(daemon_cpu "$pid")
    echo "$label $tool ${out:-fail} $(/usr/bin/python3 -c "print('%.2f' % ($after - $before))")" \
      "$(max_lag_ms "$b")" | tee -a "$results"
  done
  "$b/bin/cnuas" down --name bulk-ab >/dev/null
}

echo "# $(date -u) $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $fabric, $secs s a run"
echo "# old: $old ${OLD_ENV:-} ${UP_ARGS_OLD:-}; new: $new ${NEW_ENV:-} ${UP_ARGS_NEW:-}"
echo "# build tool MB/s daemon-CPU-s max-lag-ms-since-up"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    one_round old "$old" "${OLD_ENV:-}" "${UP_ARGS_OLD:-}"
    one_round new "$new" "${NEW_ENV:-}" "${UP_ARGS_NEW:-}"
  else
    one_round new "$new" "${NEW_ENV:-}" "${UP_ARGS_NEW:-}"
    one_round old "$old" "${OLD_ENV:-}" "${UP_ARGS_OLD:-}"
  fi
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
    med = {}
    for build in ("old", "new"):
        bw = [float(r[2]) for r in rows if r[0] == build and r[1] == tool and r[2] != "fail"]
        med[build] = statistics.median(bw) if bw else float("nan")
        print("%-11s %s: median %.0f MB/s over %d runs (%s)" % (
            tool, build, med[build], len(bw), " ".join("%.0f" % x for x in bw)))
    print("%-11s new/old %.2f" % (tool, med["new"] / med["old"]))
EOF
