#!/usr/bin/env bash
# UCX and Open MPI on an emulated fabric (docs/emulation.md §8.7): the figures a user sees from
# Debian's ucx_perftest (UCT rc_verbs and ud_verbs latency, UCP tag bandwidth) and from
# examples/mpi/mpi-pingpong (mpirun --mca pml ucx across two hosts; MPICH's mpirun.mpich too
# when it is installed) and mpi-collectives
# (allreduce, all-to-all, broadcast across four hosts of a leaf-spine, one rank each), ROUNDS
# runs each, the median printed with the spread. Wall-clock figures of a fabric run in real time: they include
# the emulation's own costs (docs/emulation.md §8.4). Needs root.
#
#   bench/emu-ucx-mpi.sh [BUILD_DIR]          # default build
#   ROUNDS=5 FABRIC=ib|roce bench/emu-ucx-mpi.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
rounds=${ROUNDS:-3}
fabric=${FABRIC:-ib}
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)" >&2; exit 1; }
command -v ucx_perftest >/dev/null || { echo "needs ucx-utils (scripts/setup-debian.sh)" >&2; exit 1; }
[ -x "$build/bin/mpi-pingpong" ] && [ -x "$build/bin/mpi-collectives" ] &&
  command -v mpirun >/dev/null ||
  { echo "needs openmpi-bin and $build/bin/mpi-pingpong, mpi-collectives (libopenmpi-dev)" >&2; exit 1; }
state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
cnuas="$build/bin/cnuas"
trap '"$cnuas" down --all >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
"$cnuas" up --name ucx --fabric "$fabric" --hosts 2 >/dev/null
x() { "$cnuas" exec --name ucx "$@"; }

median() { # numbers on stdin -> "median (min-max)"
  sort -g | awk '{ v[NR] = $1 } END { printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

perftest() { # server-args client-args column -> the client's Final figure in that column
  x h1 timeout 60 ucx_perftest $1 >/dev/null 2>&1 &
  local srv=$! i
  for i in $(seq 50); do x h1 ss -ltn | grep -q ':13337 ' && break; sleep 0.1; done
  x h0 timeout 60 ucx_perftest 10.0.0.2 $2 2>/dev/null | awk -v c="$3" '/^Final:/ { print $c }'
  wait $srv || true
}

echo "# $fabric fabric, 2 hosts, $rounds runs each; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
dev="-d cnuas_0:1"
for spec in "rc_verbs am_lat 8 3" "rc_verbs put_lat 8 3" "ud_verbs am_lat 8 3"; do
  set -- $spec
  vals=$(for r in $(seq "$rounds"); do perftest "$dev -x $1" "$dev -x $1 -t $2 -n 2000 -s $3" $4; done)
  echo "UCT $1 $2 ($3 B), one-way latency us (ucx_perftest's 50th percentile): $(echo "$vals" | median)"
done
vals=$(for r in $(seq "$rounds"); do perftest "" "-t tag_bw -s 65536 -n 2000" 7; done)
echo "UCP tag_bw (64 KiB, UCX's own transport choice), MB/s: $(echo "$vals" | median)"
# MPICH too when it is installed (mpich, libmpich-dev): the same program built with its mpicc,
# started by its hydra; each round runs Open MPI then MPICH, both bound to a core a rank.
mpich=
if command -v mpicc.mpich >/dev/null && command -v mpirun.mpich >/dev/null; then
  mpicc.mpich -O2 -o "$state/mpi-pingpong-mpich" examples/mpi/mpi-pingpong.c && mpich=1
fi
for r in $(seq "$rounds"); do
  start=$(date +%s.%N)
  x h0 timeout 120 mpirun --allow-run-as-root --mca pml ucx -np 2 --host h0,h1 \
    "$build/bin/mpi-pingpong" 100 1048576 > "$state/mpi-$r.txt"
  end=$(date +%s.%N)
  echo "$end - $start" | bc >> "$state/mpi-wall.txt"
  if [ -n "$mpich" ]; then
    x h0 timeout 120 mpirun.mpich -np 2 -hosts h0,h1 -bind-to core \
      "$state/mpi-pingpong-mpich" 100 1048576 > "$state/mpich-$r.txt"
  fi
done
for mpi in mpi ${mpich:+mpich}; do
  for size in 1 4096 65536 1048576; do
    rt=$(for r in $(seq "$rounds"); do awk -v s="$size" '$1 == s { print $2 }' "$state/$mpi-$r.txt"; done | median)
    bw=$(for r in $(seq "$rounds"); do awk -v s="$size" '$1 == s { print $3 }' "$state/$mpi-$r.txt"; done | median)
    echo "mpi-pingpong ($([ $mpi = mpi ] && echo Open MPI || echo MPICH)) $size B: round trip us $rt, MB/s one way $bw"
  done
done
echo "mpirun of mpi-pingpong (100 round trips a size, 1 B-1 MiB), wall s: $(median < "$state/mpi-wall.txt")"
grep -h "bad bytes" "$state"/mpi-*.txt "$state"/mpich-*.txt 2>/dev/null | sort | uniq -c

# Collectives: four hosts, two on each leaf, so that half of every exchange crosses a spine.
"$cnuas" down --name ucx >/dev/null
"$cnuas" up --name ucx --fabric "$fabric" --topology leaf-spine:leaves=2,spines=2,hosts=2 >/dev/null
for r in $(seq "$rounds"); do
  x h0 timeout 300 mpirun --allow-run-as-root --mca pml ucx -np 4 --host h0,h1,h2,h3 \
    "$build/bin/mpi-collectives" 10 1048576 > "$state/coll-$r.txt"
done
echo "mpi-collectives, 4 ranks on a leaf-spine (2 leaves x 2 hosts, 2 spines), 10 calls a size:"
for spec in "allreduce 8" "allreduce 8192" "allreduce 131072" "allreduce 524288" \
            "alltoall 32" "alltoall 524288" "alltoall 2097152" "bcast 8" "bcast 524288"; do
  set -- $spec
  t=$(for r in $(seq "$rounds"); do awk -v o="$1" -v s="$2" '$1 == o && $2 == s { print $3 }' "$state/coll-$r.txt"; done | median)
  bw=$(for r in $(seq "$rounds"); do awk -v o="$1" -v s="$2" '$1 == o && $2 == s { print $4 }' "$state/coll-$r.txt"; done | median)
  echo "  $1 $2 B: us per call $t, bus bandwidth MB/s $bw"
done
grep -h "bad elements" "$state"/coll-*.txt | sort | uniq -c
