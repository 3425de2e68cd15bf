#!/usr/bin/env bash
# pipeline-600s.sh runs BenchmarkPipelineProcs (the built-in click pipeline end to end on
# 3 `lockstep node` processes, benchmarks/pipeline_test.go) for 600 measured seconds, so
# that about ten 1-minute windows fire and the window result lag's p99 rests on ten
# events instead of two or three. It records the machine's load and CPU count before and
# after beside the benchmark's output, for benchmarks/RESULTS.md.
#
#   benchmarks/pipeline-600s.sh [RATE] [OUT]
#
# RATE: clicks/s offered (LOCKSTEP_PIPE_RATE; default 55000; 0 = unpaced).
# OUT:  the log file (default pipeline-600s-<UTC time>.log in the current directory).
# Needs Go on PATH; takes ~11 minutes. Run it on a quiet machine: three replicas, the
# load generator and the poller share its cores.
set -euo pipefail
rate=${1:-55000}
out=${2:-pipeline-600s-$(date -u +%Y%m%dT%H%M%SZ).log}
cd "$(dirname "$0")/.."
{
	echo "# $(date -u +%FT%TZ) BenchmarkPipelineProcs, 600 s, rate ${rate} (0: unpaced), $(nproc) CPUs, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "# load before: $(uptime)"
} | tee "$out"
env_rate=()
if [ "$rate" != 0 ]; then
	env_rate=(LOCKSTEP_PIPE_RATE="$rate")
fi
env "${env_rate[@]}" LOCKSTEP_BENCH_SECONDS=600 \
	go test -run '^$' -bench BenchmarkPipelineProcs -benchtime 1x -timeout 30m ./benchmarks/ 2>&1 | tee -a "$out"
echo "# load after: $(uptime)" | tee -a "$out"
