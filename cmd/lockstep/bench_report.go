package main

import (
	"fmt"
	"os"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/benchmarks/report"
)

// benchReport is what `lockstep bench` prints (report.Bench).
type benchReport = report.Bench

func newBenchReport(spec benchSpec, res loadgen.Result, batches *report.Batches, round *report.Round) benchReport {
	return report.NewBench(report.Params{Workload: spec.workload.Name, Mix: spec.wcfg.Mix, Consistency: spec.consistency,
		Keys: spec.wcfg.Keys, Distribution: spec.wcfg.Distribution, ValueSize: spec.wcfg.ValueSize,
		Clients: spec.run.Workers, Connections: spec.connections, Embedded: spec.embedded,
		Rate: spec.run.Rate, Duration: spec.run.Duration, Warmup: spec.run.Warmup}, res, batches, round)
}

// writeBenchChart writes the run's measured seconds as an SVG chart to --chart's path.
func writeBenchChart(path string, r benchReport, res loadgen.Result) error {
	if err := os.WriteFile(path, r.Chart(res), 0o644); err != nil {
		return fmt.Errorf("--chart: %w", err)
	}
	return nil
}
