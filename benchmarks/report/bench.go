package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/internal/chart"
	"github.com/lockstepdb/lockstep/internal/latency"
)

// Params are a bench run's parameters, as the report shows them.
type Params struct {
	// Workload is the loadgen workload's name; Mix, Consistency and ValueSize are shown
	// only for the workloads they apply to (kv; append's value size).
	Workload     string
	Mix          string
	Consistency  string
	Keys         int
	Distribution string
	ValueSize    int
	// Clients are the concurrent requests, Connections the client connections they share,
	// Embedded the nodes of an in-process cluster (0: a running one).
	Clients     int
	Connections int
	Embedded    int
	// Rate is the open loop's requests per second (0: closed loop).
	Rate     float64
	Duration time.Duration
	Warmup   time.Duration
}

// Bench is what `lockstep bench` prints: the run's parameters and what it measured;
// --json prints it as is. Durations are in milliseconds (_ms) or seconds (_s).
type Bench struct {
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
	Latency    Latency          `json:"latency_ms"`
	Batches    *Batches         `json:"batches"`
	Round      *Round           `json:"commit_round"`
	Timeline   []Second         `json:"timeline"`
}

// Latency is a latency summary in milliseconds.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// Second is one measured second.
type Second struct {
	AtS    float64 `json:"at_s"`
	Ops    int64   `json:"ops"`
	Errors int64   `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func newLatency(s latency.Summary) Latency {
	return Latency{Mean: ms(s.Mean), P50: ms(s.P50), P90: ms(s.P90), P99: ms(s.P99), P999: ms(s.P999), Max: ms(s.Max)}
}

// NewBench makes the report of a run of p that measured res, with the nodes' batch sizes
// and commit round (nil: not measured).
func NewBench(p Params, res loadgen.Result, batches *Batches, round *Round) Bench {
	r := Bench{
		Workload: p.Workload, Keys: p.Keys, Distribution: p.Distribution,
		Clients: p.Clients, Connections: p.Connections, Embedded: p.Embedded,
		Loop: "closed", Rate: p.Rate, DurationS: p.Duration.Seconds(), WarmupS: p.Warmup.Seconds(),
		ElapsedS: res.Elapsed.Seconds(), OpsPerSec: res.Throughput(), Ops: res.Ops, Errors: res.Errors, Missed: res.Missed,
		ErrorTypes: res.ErrorTypes, Latency: newLatency(res.Latency), Batches: batches, Round: round, Timeline: []Second{},
	}
	if p.Rate > 0 {
		r.Loop = "open"
	}
	switch p.Workload {
	case "kv":
		r.Mix, r.Consistency, r.ValueSize = p.Mix, p.Consistency, p.ValueSize
	case "append":
		r.ValueSize = p.ValueSize
	}
	for _, s := range res.Timeline {
		r.Timeline = append(r.Timeline, Second{AtS: s.At.Seconds(), Ops: s.Ops, Errors: s.Errors, P50Ms: ms(s.Latency.P50), P99Ms: ms(s.Latency.P99)})
	}
	return r
}

// WriteText prints the report for people, as aligned rows.
func (r Bench) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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

// Chart draws the measured seconds of res as an SVG chart (package chart): ops per
// second, median and p99 latency.
func (r Bench) Chart(res loadgen.Result) []byte {
	run := chart.Run{Unit: "ops/s",
		Caption: fmt.Sprintf("%s, %d clients, %s loop · bars: ops per second · green: median latency · orange: p99 latency (log scale, right)", r.Workload, r.Clients, r.Loop)}
	for _, s := range res.Timeline {
		run.Seconds = append(run.Seconds, chart.Second{OK: s.Ops, P50: s.Latency.P50, P99: s.Latency.P99})
	}
	return chart.SVG(run)
}
