package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runBenchApp runs `lockstep bench args...` in process and returns stdout, stderr and
// the error.
func runBenchApp(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.RunContext(context.Background(), append([]string{"lockstep", "bench"}, args...))
	return out.String(), errOut.String(), err
}

// benchJSON runs bench with --json and decodes the report.
func benchJSON(t *testing.T, args ...string) benchReport {
	t.Helper()
	out, errOut, err := runBenchApp(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("bench %v: %v\nstderr:\n%s", args, err, errOut)
	}
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench %v: --json output does not decode: %v\n%s", args, err, out)
	}
	return r
}

// TestBenchWorkloads: a short embedded run of every workload makes requests without
// errors, counts them second by second, and reads the batch sizes from the node's
// metrics.
func TestBenchWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded clusters")
	}
	for i, args := range [][]string{
		{"--workload", "counter", "--embedded", "3"},
		{"--workload", "kv", "--mix", "a"},
		{"--workload", "kv", "--mix", "b", "--distribution", "zipfian", "--consistency", "any"},
		{"--workload", "kv", "--mix", "c"},
		{"--workload", "voter"},
		{"--workload", "transfer", "--keys", "50"},
		{"--workload", "append", "--value-size", "64"},
	} {
		flags := append([]string{"--embedded", "1", "--duration", "1s", "--warmup", "200ms", "--clients", "8", "--connections", "2", "--no-progress"}, args...)
		if slices.Contains(args, "--embedded") {
			flags = append(flags[2:], args...)
		}
		r := benchJSON(t, flags...)
		if r.Workload != args[1] || r.Ops == 0 || r.Errors != 0 || len(r.Timeline) == 0 {
			t.Errorf("#%d %v: got workload %q, %d ops, %d errors %v, %d seconds; want ops, no errors", i, args, r.Workload, r.Ops, r.Errors, r.ErrorTypes, len(r.Timeline))
		}
		if r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 || r.Latency.Max < r.Latency.P99 {
			t.Errorf("#%d %v: latency percentiles out of order: %+v", i, args, r.Latency)
		}
		readOnly := slices.Equal(args, []string{"--workload", "kv", "--mix", "c"}) // reads are served off the log
		if !readOnly && (r.Batches == nil || r.Batches.Batches == 0 || r.Batches.MeanInputs < 1) {
			t.Errorf("#%d %v: batches: got %+v, want the applied batches of the run", i, args, r.Batches)
		}
	}
}

// TestBenchOpenLoop: an open-loop run schedules --rate requests a second: every one it
// scheduled in the measured time is made or reported missed (a closed loop would make as
// many as the cluster carries); the chart is written.
func TestBenchOpenLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded cluster")
	}
	svg := filepath.Join(t.TempDir(), "run.svg")
	r := benchJSON(t, "--embedded", "1", "--rate", "100", "--duration", "2s", "--warmup", "500ms", "--clients", "64", "--no-progress", "--chart", svg)
	if n := r.Ops + r.Errors + r.Missed; r.Loop != "open" || r.Ops == 0 || n < 199 || n > 201 {
		t.Errorf("got %s loop, %d ops, %d errors, %d missed; want open, 200 scheduled (100/s for 2s) in all", r.Loop, r.Ops, r.Errors, r.Missed)
	}
	if r.Missed > 0 {
		t.Logf("%d of 200 scheduled requests missed (a slow machine)", r.Missed)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(b, []byte("<svg")) || bytes.Count(b, []byte(`fill="#8ab4f8"`)) < 2 {
		t.Errorf("--chart: got %v and %.80q, want an SVG with a bar per second", err, b)
	}
}

// TestBenchJSONShape: the --json report has the documented keys (docs/benchmarks.md),
// and the text report and the progress lines say what was measured.
func TestBenchJSONShape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded cluster")
	}
	out, errOut, err := runBenchApp(t, "--embedded", "1", "--workload", "kv", "--duration", "2s", "--warmup", "1s", "--clients", "4", "--connections", "1", "--json")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"batches", "clients", "commit_round", "connections", "consistency", "distribution", "duration_s", "elapsed_s", "embedded_nodes",
		"error_types", "errors", "keys", "latency_ms", "loop", "missed", "mix", "ops", "ops_per_s", "timeline", "value_size", "warmup_s", "workload"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys: got %v, want %v", keys, want)
	}
	lat, _ := m["latency_ms"].(map[string]any)
	for _, k := range []string{"mean", "p50", "p90", "p99", "p999", "max"} {
		if _, ok := lat[k]; !ok {
			t.Errorf("latency_ms lacks %s: %v", k, lat)
		}
	}
	if tl, _ := m["timeline"].([]any); len(tl) < 2 {
		t.Errorf("timeline: got %v, want a second each", m["timeline"])
	}
	// The tick at the end of the run's last second races the run's end (then that second is
	// the final, partial window, which has no live line): one measured line is certain.
	if !strings.Contains(errOut, "warm-up") || strings.Count(errOut, "bench ") < 1 {
		t.Errorf("progress lines: got %q, want a warm-up line and a line per whole measured second", errOut)
	}
	out, _, err = runBenchApp(t, "--embedded", "1", "--duration", "1s", "--warmup", "0s", "--clients", "4", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"workload", "throughput", "ops/s", "latency ms", "p99.9", "batch sizes", "commit round", "queue (leader)"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchBadFlags: bad flags fail with an error naming the flag, before any cluster is
// started or reached (--addr names a port where nothing listens) and before any chart
// is written.
func TestBenchBadFlags(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "x.svg")
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "poker"}, `--workload: unknown workload "poker"`},
		{[]string{"--mix", "z", "--workload", "kv"}, `--mix "z"`},
		{[]string{"--distribution", "hot"}, `--distribution "hot"`},
		{[]string{"--consistency", "strong"}, `--consistency "strong"`},
		{[]string{"--clients", "0"}, "--clients 0"},
		{[]string{"--connections", "0"}, "--connections 0"},
		{[]string{"--clients", "2", "--connections", "3"}, "--connections 3: want 1 to --clients (2)"},
		{[]string{"--duration", "0s"}, "--duration 0s"},
		{[]string{"--warmup", "-1s"}, "--warmup -1s"},
		{[]string{"--rate", "-5"}, "--rate -5"},
		{[]string{"--rate", "NaN"}, "--rate NaN"},
		{[]string{"--rate", "inf"}, "--rate +Inf"},
		{[]string{"--keys", "0"}, "--keys 0"},
		{[]string{"--keys", "1", "--workload", "transfer"}, "--keys: transfer needs at least 2"},
		{[]string{"--value-size", "0"}, "--value-size 0"},
		{[]string{"--embedded", "-1"}, "--embedded -1"},
		{[]string{"--embedded", "3", "--addr", "127.0.0.1:1"}, "give it or --addr/--admin, not both"},
		{[]string{"--partitions", "8"}, "--partitions is for --embedded"},
		{[]string{"extra"}, "bench takes no arguments"},
	} {
		_, _, err := runBenchApp(t, append(c.args, "--addr", "127.0.0.1:1", "--insecure", "--chart", svg)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("#%d %v: got %v, want an error with %q", i, c.args, err, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused runs wrote %v", ents)
	}
}
