#!/usr/bin/env bash
# How long `cnuas up` and `cnuas down` take for a large emulated fabric, and where up's time
# goes: the daemon's own CPU (user, system) and its children's (the `ip` programs it runs),
# read from /proc/PID/stat right after up returns, and its resident memory then. Each build
# given is run in turn within a round (each of FABRICS in turn), so two builds compare on the same
# machine minutes apart: up and down cannot run side by side (both take the kernel's rtnl lock
# for every device). Needs root. Prints a markdown table; docs/performance.md records figures.
#
#   bench/emu-updown-bench.sh [BUILD-DIR...]         # default: build
#   K="8 12" FABRICS="roce ib" ROUNDS=2 bench/emu-updown-bench.sh build /tmp/old-build
#   K="8 12 16" FABRICS="roce ib hybrid" bench/emu-updown-bench.sh  # a hybrid beside its parts
#
# A BUILD-DIR holds bin/cnuas (and ns3-module/ for its library, found through its RUNPATH or,
# for a copied build, LD_LIBRARY_PATH=BUILD-DIR/ns3-module).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces, TAP devices)" >&2; exit 1; }
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=(build)
for b in "${builds[@]}"; do
  [ -x "$b/bin/cnuas" ] || { echo "no $b/bin/cnuas: build first" >&2; exit 1; }
done
ks=${K:-"8 12"}
fabrics=${FABRICS:-"roce ib"}
rounds=${ROUNDS:-1}
state=$(mktemp -d)
export CNUAS_STATE_DIR=$state
name=updown$$
cleanup() {
  for b in "${builds[@]}"; do
    LD_LIBRARY_PATH="$b/ns3-module" "$b/bin/cnuas" down --name "$name" >/dev/null 2>&1 || true
  done
  rm -rf "$state"
}
trap cleanup EXIT
hz=$(getconf CLK_TCK)
now() { date +%s.%N; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| round | build | fabric | k | hosts | up s | daemon user / sys s | ip programs user / sys s | daemon RSS | down s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for round in $(seq "$rounds"); do
  for k in $ks; do
    for fabric in $fabrics; do
      for b in "${builds[@]}"; do
        cnuas() { LD_LIBRARY_PATH="$b/ns3-module" "$b/bin/cnuas" "$@"; }
        t0=$(now)
        if ! cnuas up --fabric "$fabric" --topology "fat-tree:k=$k" --name "$name" >"$state/up.log" 2>&1; then
          # A build that cannot bring this fabric up gets a row saying why (the last 100
          # characters of its error), and the next goes on.
          printf "| %s | %s | %s | %s | %s | up failed: %s |  |  |  |  |\n" "$round" "$b" "$fabric" "$k" \
            "$((k * k * k / 4))" "$(tail -c 100 "$state/up.log" | tr '\n|' ' /')"
          cnuas down --name "$name" >/dev/null 2>&1 || true
          continue
        fi
        t1=$(now)
        pid=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" \
          "$state/fabric-$name.json")
        # fields 14-17 of /proc/PID/stat: utime, stime, cutime, cstime (clock ticks)
        cpu=$(awk -v hz="$hz" '{printf "%.2f / %.2f | %.2f / %.2f", $14/hz, $15/hz, $16/hz, $17/hz}' \
          "/proc/$pid/stat")
        rss=$(awk '/VmRSS/ {printf "%.0f MB", $2/1024}' "/proc/$pid/status")
        t2=$(now)
        if ! cnuas down --name "$name" >"$state/down.log" 2>&1; then
          echo "down failed ($b)" >&2
          cat "$state/down.log" >&2
          exit 1
        fi
        t3=$(now)
        hosts=$((k * k * k / 4))
        printf "| %s | %s | %s | %s | %s | %.2f | %s | %s | %.2f |\n" "$round" "$b" "$fabric" "$k" \
          "$hosts" "$(echo "$t1 - $t0" | bc)" "$cpu" "$rss" "$(echo "$t3 - $t2" | bc)"
      done
    done
  done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
