package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/benchmarks/report"
	"github.com/lockstepdb/lockstep/internal/chart"
	"github.com/lockstepdb/lockstep/internal/latency"
	"github.com/urfave/cli/v2"
)

// benchReport is what `lockstep bench` prints: the run's parameters and what it
// measured; --json prints it as is. Durations are in milliseconds (_ms) or seconds (_s).
type benchReport struct {
	Workload     string  `json:"workload"`
	Mix          string  `json:"mix,omitempty"`
	Consistency  string  `json:"consistency,omitempty"`
	Keys         int     `json:"keys"`
	Distribution string  `json:"distribution"`
	ValueSize    int     `json:"value_size,omitempty"`
	Clients      int     `json:"clients"`
	Connections  int     `json:"connections"`
	Embedded     int     `json:"embedded_nodes,omitempty"`
	Loop         string  `json:"loop"` // "closed" or "open"
	Rate         float64 `json:"rate,omitempty"`
	DurationS    float64 `json:"duration_s"`
	WarmupS      float64 `json:"warmup_s"`

	ElapsedS   float64          `json:"elapsed_s"`
	OpsPerSec  float64          `json:"ops_per_s"`
	Ops        int64            `json:"ops"`
	Errors     int64            `json:"errors"`
	Missed     int64            `json:"missed"`
	ErrorTypes map[string]int64 `json:"error_types"`
	Latency    benchLatency     `json:"latency_ms"`
	Batches    *report.Batches  `json:"batches"`
	Round      *report.Round    `json:"commit_round"`
	Timeline   []benchSecond    `json:"timeline"`
}

// benchLatency is a latency summary in milliseconds.
type benchLatency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// benchSecond is one measured second.
type benchSecond struct {
	AtS    float64 `json:"at_s"`
	Ops    int64   `json:"ops"`
	Errors int64   `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func newBenchLatency(s latency.Summary) benchLatency {
	return benchLatency{Mean: ms(s.Mean), P50: ms(s.P50), P90: ms(s.P90), P99: ms(s.P99), P999: ms(s.P999), Max: ms(s.Max)}
}

func newBenchReport(spec benchSpec, c *cli.Context, res loadgen.Result, batches *report.Batches, round *report.Round) benchReport {
	r := benchReport{
		Workload: spec.workload.Name, Keys: spec.wcfg.Keys, Distribution: spec.wcfg.Distribution,
		Clients: spec.run.Workers, Connections: spec.connections, Embedded: spec.embedded,
		Loop: "closed", Rate: spec.run.Rate, DurationS: spec.run.Duration.Seconds(), WarmupS: spec.run.Warmup.Seconds(),
		ElapsedS: res.Elapsed.Seconds(), OpsPerSec: res.Throughput(), Ops: res.Ops, Errors: res.Errors, Missed: res.Missed,
		ErrorTypes: res.ErrorTypes, Latency: newBenchLatency(res.Latency), Batches: batches, Round: round, Timeline: []benchSecond{},
	}
	if spec.run.Rate > 0 {
		r.Loop = "open"
	}
	switch spec.workload.Name {
	case "kv":
		r.Mix, r.Consistency, r.ValueSize = spec.wcfg.Mix, spec.consistency, spec.wcfg.ValueSize
	case "append":
		r.ValueSize = spec.wcfg.ValueSize
	}
	for _, s := range res.Timeline {
		r.Timeline = append(r.Timeline, benchSecond{AtS: s.At.Seconds(), Ops: s.Ops, Errors: s.Errors, P50Ms: ms(s.Latency.P50), P99Ms: ms(s.Latency.P99)})
	}
	return r
}

// writeText prints the report for people.
func (r benchReport) writeText(w io.Writer) error {
	tw := newTable(w)
	what := r.Workload
	if r.Mix != "" {
		what += fmt.Sprintf(" (mix %s, %s reads, %d-byte values)", r.Mix, r.Consistency, r.ValueSize)
	}
	fmt.Fprintf(tw, "workload\t%s, %d keys %s\n", what, r.Keys, r.Distribution)
	loop := "closed loop"
	if r.Loop == "open" {
		loop = fmt.Sprintf("open loop at %.0f/s", r.Rate)
	}
	fmt.Fprintf(tw, "load\t%d clients on %d connections, %s, %.1fs after %.1fs warm-up\n", r.Clients, r.Connections, loop, r.ElapsedS, r.WarmupS)
	fmt.Fprintf(tw, "throughput\t%.0f ops/s (%d ok, %d errors", r.OpsPerSec, r.Ops, r.Errors)
	if r.Missed > 0 {
		fmt.Fprintf(tw, ", %d scheduled requests missed: the rate was more than the cluster or --clients carried", r.Missed)
	}
	fmt.Fprintln(tw, ")")
	l := r.Latency
	fmt.Fprintf(tw, "latency ms\tmean %.2f  p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f\n", l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
	if len(r.ErrorTypes) > 0 {
		var parts []string
		for _, name := range (loadgen.Result{ErrorTypes: r.ErrorTypes}).ErrorTypeNames() {
			parts = append(parts, fmt.Sprintf("%s %d", name, r.ErrorTypes[name]))
		}
		fmt.Fprintf(tw, "errors\t%s\n", strings.Join(parts, ", "))
	}
	r.Batches.WriteText(tw)
	r.Round.WriteText(tw)
	return tw.Flush()
}

// writeBenchChart writes the run's measured seconds as an SVG chart (package chart).
func writeBenchChart(path string, r benchReport, res loadgen.Result) error {
	run := chart.Run{Unit: "ops/s",
		Caption: fmt.Sprintf("%s, %d clients, %s loop · bars: ops per second · green: median latency · orange: p99 latency (log scale, right)", r.Workload, r.Clients, r.Loop)}
	for _, s := range res.Timeline {
		run.Seconds = append(run.Seconds, chart.Second{OK: s.Ops, P50: s.Latency.P50, P99: s.Latency.P99})
	}
	if err := os.WriteFile(path, chart.SVG(run), 0o644); err != nil {
		return fmt.Errorf("--chart: %w", err)
	}
	return nil
}
