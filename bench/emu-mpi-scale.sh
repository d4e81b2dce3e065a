#!/usr/bin/env bash
# An MPI job larger than the machine: NP ranks (default 16), one a host of a k=4 fat-tree,
# examples/mpi/mpi-collectives (3 calls a size up to 32 KiB), a fresh fabric for each of RUNS
# runs. Per run: mpirun's exit status, the wall time, the daemon's worst lag behind the wall
# clock, how long its event loop waited on the run queue and ran (/proc/PID/schedstat), and
# the adapters' transport counters summed over the hosts (packets sent and received,
# retransmitted, dropped). Needs root. docs/emulation.md §8.4 and §8.7, docs/performance.md.
# AB=1 alternates runs with the daemon's session nice as `cnuas up` sets it (--nice, -10) and
# reset to 0 (as before session 29: the daemon then meets the job's session as an equal).
#
#   bench/emu-mpi-scale.sh [BUILD_DIR]
#   FABRIC=ib|roce RUNS=5 NP=16 AB=1 bench/emu-mpi-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
fabric=${FABRIC:-roce}
runs=${RUNS:-5}
np=${NP:-16}
ab=${AB:-0}
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
[ -x "$build/bin/mpi-collectives" ] && command -v mpirun >/dev/null ||
  { echo "needs openmpi-bin and $build/bin/mpi-collectives (libopenmpi-dev)" >&2; exit 1; }
state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
cnuas="$build/bin/cnuas"
trap '"$cnuas" down --all >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
hosts=$(seq -s, -f "h%g" 0 $((np - 1)))
echo "# $fabric fat-tree k=4, $np ranks, $runs runs; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# autogroups: $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo absent)"
for r in $(seq "$runs"); do
  "$cnuas" up --name scale --fabric "$fabric" --topology fat-tree:k=4 >/dev/null
  pid=$(python3 -c "import json; print(json.load(open('$state/fabric-scale.json'))['pid'])")
  if [ "$ab" = 1 ] && [ $((r % 2)) = 0 ]; then echo 0 > "/proc/$pid/autogroup"; fi
  session=$(sed 's/.* nice /session nice /' "/proc/$pid/autogroup" 2>/dev/null || echo "no autogroup")
  read -r run0 wait0 _ < "/proc/$pid/task/$pid/schedstat"
  start=$(date +%s.%N)
  rc=0
  "$cnuas" exec --name scale h0 -- timeout 300 mpirun -np "$np" --host "$hosts" \
    "$build/bin/mpi-collectives" 3 32768 > "$state/run-$r.txt" 2>&1 || rc=$?
  end=$(date +%s.%N)
  read -r run1 wait1 _ < "/proc/$pid/task/$pid/schedstat"
  sleep 0.2 # the last ACKs
  figures=$("$cnuas" status --json | python3 -c "
import json, sys
live = [f for f in json.load(sys.stdin) if f['name'] == 'scale'][0]['live']
sent = received = retransmitted = dropped = 0
for h in live['hosts']:
    t = h['verbs']['transport']
    sent += t['packets_sent']; received += t['packets_received']
    retransmitted += t['retransmitted_packets']; dropped += sum(t['drops'].values())
print('max lag %.0f ms; packets sent %d received %d retransmitted %d dropped %d' % (
    live['lag']['max_lag_us'] / 1e3, sent, received, retransmitted, dropped))")
  printf 'run %d (%s): exit %d, %.1f s; daemon ran %.2f s, waited %.2f s on the run queue; %s; %s\n' \
    "$r" "$session" "$rc" "$(echo "$end - $start" | bc)" "$(echo "($run1 - $run0) / 10^9" | bc -l)" \
    "$(echo "($wait1 - $wait0) / 10^9" | bc -l)" "$figures" \
    "$(grep -m1 -oE '[0-9]+ bad elements|Assertion.*failed' "$state/run-$r.txt" || echo 'no result')"
  "$cnuas" down --name scale >/dev/null
done
