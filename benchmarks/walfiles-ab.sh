#!/usr/bin/env bash
# walfiles-ab.sh: A/B of `lockstep node --wal-files preallocated|zeroed` with real node
# processes (benchmarks/RESULTS.md, "Zero-filled WAL segments").
#
#   benchmarks/walfiles-ab.sh LOCKSTEP_BIN OUTDIR ROUNDS CLIENTS...
#
# For each round, each CLIENTS and each kind (the order of the kinds flips between
# rounds): a fresh 3-node cluster (--insecure, --log-store wal, fsync on) on loopback
# ports 174xx/184xx/194xx, `lockstep bench --workload counter` from its own process
# (4 connections, 2 s warm-up, 10 s), one line per run with ops/s, p50/p99/p99.9 ms,
# errors and the load average at the start; the JSON report goes to OUTDIR.
set -uo pipefail
bin=$(realpath "$1"); out=$(realpath -m "$2"); rounds=$3; shift 3
mkdir -p "$out"; work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$work"' EXIT
P=n1=127.0.0.1:17401=127.0.0.1:18401,n2=127.0.0.1:17402=127.0.0.1:18402,n3=127.0.0.1:17403=127.0.0.1:18403
A=127.0.0.1:18401,127.0.0.1:18402,127.0.0.1:18403
run() { # kind clients round
  rm -rf "$work"/n*; pids=()
  for i in 1 2 3; do
    "$bin" node --id n$i --data "$work/n$i" --raft 127.0.0.1:1740$i --client 127.0.0.1:1840$i \
      --admin 127.0.0.1:1940$i --insecure --log-store wal --wal-files "$1" --bootstrap $P 2>"$work/n$i.log" &
    pids+=($!)
  done
  for _ in $(seq 1 100); do
    "$bin" cluster status --insecure --addr $A >/dev/null 2>&1 && break; sleep 0.2
  done
  local load json=$out/r$3-$1-$2.json
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  "$bin" bench --insecure --addr $A --admin 127.0.0.1:19401 --admin 127.0.0.1:19402 --admin 127.0.0.1:19403 \
    --clients "$2" --duration 10s --json --no-progress >"$json" 2>"$work/bench.err"
  python3 - "$json" "$3" "$1" "$2" "$load" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); l = d["latency_ms"]
print("round %s %-12s c=%-4s ops/s %8.0f  p50 %.2f p99 %.2f p99.9 %.2f  errors %d  load %s" % (
    sys.argv[2], sys.argv[3], sys.argv[4], d["ops_per_s"], l["p50"], l["p99"], l["p999"], d["errors"], sys.argv[5]))
PY
  kill "${pids[@]}"; wait "${pids[@]}"
}
for r in $(seq 1 "$rounds"); do
  for c in "$@"; do
    if [ $((r % 2)) = 1 ]; then kinds="preallocated zeroed"; else kinds="zeroed preallocated"; fi
    for k in $kinds; do run "$k" "$c" "$r"; done
  done
done
