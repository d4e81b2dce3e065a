# What the opensm benches read from opensm's logs; sourced by bench/emu-umad-bench.sh and
# bench/sm-vs-opensm.sh.

# Seconds from "Entering DISCOVERING state" to the first "SUBNET UP" in an opensm log (its own
# time stamps, hh:mm:ss plus microseconds).
sweep_seconds() {
  awk '
    function t(line,   a) { split($3, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] + $4 / 1e6 }
    /Entering DISCOVERING state/ && !s { s = t($0) }
    /SUBNET UP/ && s && !e { e = t($0) }
    END { if (s && e) printf "%.3f", e - s; else printf "none" }' "$1"
}

# The most SMPs opensm says it sent (its debug log, vl15_send_mad's "total sent").
smps_sent() {
  grep -o '[0-9]* total sent' "$1" | awk '{ if ($1 > m) m = $1 } END { print m + 0 }'
}
