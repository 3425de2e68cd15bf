#!/usr/bin/env bash
# nexmark.sh: `lockstep bench nexmark` for every query on 1 and 3 node processes, and a
# markdown table of the results (benchmarks/RESULTS.md, "Nexmark").
#
#   benchmarks/nexmark.sh LOCKSTEP_BIN OUTDIR [EVENTS] [QUERIES] [NODES]
#
# Each run: EVENTS (1,000,000) events of the default generator (10,000 events/s of event
# time), appended from this machine by the bench process in batches of 500 from 4
# clients, as fast as the cluster takes them; the nodes are real processes (mutual TLS,
# fsync on). OUTDIR gets QUERY-NODESn.json, QUERY-NODESn.svg and table.md; uptime
# before and after each run goes to load.txt.
set -euo pipefail
bin=$(realpath "$1"); out=$(realpath -m "$2"); events=${3:-1000000}
queries=${4:-"q0 q1 q2 q3 q4 q5 q7 q8"}; nodes=${5:-"1 3"}
mkdir -p "$out"
for n in $nodes; do
  for q in $queries; do
    echo "$q $n nodes: $(uptime)" >>"$out/load.txt"
    "$bin" bench nexmark --query "$q" --nodes "$n" --events "$events" --timeout 300s -o json \
      --chart "$out/$q-${n}n.svg" >"$out/$q-${n}n.json"
  done
done
echo "end: $(uptime)" >>"$out/load.txt"
python3 - "$out" <<'PY' >"$out/table.md"
import json, sys, glob, os
out = sys.argv[1]
print("| query | nodes | events/s sustained | events/s per core (per replica) | result p50 / p99 ms | results | node RSS MiB | bench CPU s |")
print("|---|---|---|---|---|---|---|---|")
order = {q: i for i, q in enumerate("q0 q1 q2 q3 q4 q5 q7 q8".split())}
runs = [json.load(open(f)) for f in glob.glob(os.path.join(out, "*.json"))]
for r in sorted(runs, key=lambda r: (r["nodes"], order[r["query"]])):
    per = " / ".join(f'{x["events_per_cpu_s"]/1000:.0f} K' for x in r["replicas"])
    rss = " / ".join(f'{x["rss_bytes"]/2**20:.0f}' for x in r["replicas"])
    lat = r["latency_ms"]
    print(f'| {r["query"]} | {r["nodes"]} | {r["events_per_s"]/1000:.1f} K | {r["events_per_core_s"]/1000:.0f} K ({per}) | '
          f'{lat["p50"]:.0f} / {lat["p99"]:.0f} | {r["results"]} | {rss} | {r["bench_cpu_s"]:.1f} |')
PY
cat "$out/table.md"
