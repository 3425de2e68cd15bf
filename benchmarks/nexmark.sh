#!/usr/bin/env bash
# nexmark.sh: `lockstep bench nexmark` for every query of each engine on 1 and 3 node
# processes, and a markdown table of the results (benchmarks/RESULTS.md, "Nexmark").
#
#   benchmarks/nexmark.sh LOCKSTEP_BIN OUTDIR [EVENTS] [QUERIES] [NODES] [ENGINES]
#
# Each run: EVENTS (1,000,000) events of the default generator (10,000 events/s of event
# time), appended from this machine by the bench process in batches of 500 from 4
# clients, as fast as the cluster takes them; the nodes are real processes (mutual TLS,
# fsync on): bench nodes for the go engine, plain `lockstep node` for sql (the query
# deployed through the log). A query an engine does not run is skipped. OUTDIR gets
# QUERY-ENGINE-NODESn.json, .svg and table.md; uptime before and after each run goes to
# load.txt.
set -euo pipefail
bin=$(realpath "$1"); out=$(realpath -m "$2"); events=${3:-1000000}
queries=${4:-"q0 q1 q2 q3 q4 q5 q7 q8"}; nodes=${5:-"1 3"}; engines=${6:-"go sql"}
sqlqueries="q0 q1 q2 q3 q4 q5 q7 q8" # nexmark.SQLQueries
mkdir -p "$out"
for n in $nodes; do
  for q in $queries; do
    for e in $engines; do
      if [ "$e" = sql ] && [[ " $sqlqueries " != *" $q "* ]]; then continue; fi
      echo "$q $e $n nodes: $(uptime)" >>"$out/load.txt"
      "$bin" bench nexmark --query "$q" --engine "$e" --nodes "$n" --events "$events" --timeout 300s -o json \
        --chart "$out/$q-$e-${n}n.svg" >"$out/$q-$e-${n}n.json" || echo "$q $e $n: failed" >>"$out/load.txt"
    done
  done
done
echo "end: $(uptime)" >>"$out/load.txt"
python3 - "$out" <<'PY' >"$out/table.md"
import json, sys, glob, os
out = sys.argv[1]
print("| query | engine | nodes | events/s sustained | events/s per core (per replica) | result p50 / p99 ms (raw) | from watermark p50 / p99 ms | results | node RSS MiB |")
print("|---|---|---|---|---|---|---|---|---|")
order = {q: i for i, q in enumerate("q0 q1 q2 q3 q4 q5 q7 q8".split())}
runs = []
for f in glob.glob(os.path.join(out, "*.json")):
    try:
        runs.append(json.load(open(f)))
    except ValueError:
        pass
for r in sorted(runs, key=lambda r: (r["nodes"], order[r["query"]], r["engine"])):
    per = " / ".join(f'{x["events_per_cpu_s"]/1000:.0f} K' for x in r["replicas"])
    rss = " / ".join(f'{x["rss_bytes"]/2**20:.0f}' for x in r["replicas"])
    lat, wl = r["latency_ms"], r.get("window_latency_ms")
    wls = f'{wl["p50"]:.0f} / {wl["p99"]:.0f}' if wl else "—"
    print(f'| {r["query"]} | {r["engine"]} | {r["nodes"]} | {r["events_per_s"]/1000:.1f} K | {r["events_per_core_s"]/1000:.0f} K ({per}) | '
          f'{lat["p50"]:.0f} / {lat["p99"]:.0f} | {wls} | {r["results"]} | {rss} |')
PY
cat "$out/table.md"
