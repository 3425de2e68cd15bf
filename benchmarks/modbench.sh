#!/usr/bin/env bash
# modbench.sh: the Starlark module against the same processor in Go on real node processes
# (issue 22; benchmarks/RESULTS.md, "A Starlark module against Go on real nodes").
#
#   benchmarks/modbench.sh [MODBENCH FLAGS...]     e.g. -nodes 1,3 -pairs 3 -n 300000
#
# Builds ./cmd/lockstep, benchmarks/modbench/cmd/modbench-node (lockstep node plus the Go
# processor) and the driver benchmarks/modbench/cmd/modbench into a temp dir, records the
# machine's load (uptime) before and after, and runs the driver with the flags given.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d); trap 'rm -rf "$bin"' EXIT
go build -o "$bin/lockstep" ./cmd/lockstep
go build -o "$bin/modbench-node" ./benchmarks/modbench/cmd/modbench-node
go build -o "$bin/modbench" ./benchmarks/modbench/cmd/modbench
echo "# $(date -u +%FT%TZ) $(go version) $(nproc) cores; uptime before: $(uptime)"
"$bin/modbench" -lockstep "$bin/lockstep" -gonode "$bin/modbench-node" "$@"
echo "# uptime after: $(uptime)"
