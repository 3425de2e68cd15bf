package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/internal/latency"
)

// TestNewBench: the report shows the kv-only parameters for kv alone, the loop from the
// rate, latencies in milliseconds and the timeline second by second; its text names the
// missed requests and the error types, and its chart is SVG.
func TestNewBench(t *testing.T) {
	res := loadgen.Result{Ops: 900, Errors: 3, Missed: 7, Elapsed: 3 * time.Second,
		Latency:    latency.Summary{Mean: 2 * time.Millisecond, P50: 1500 * time.Microsecond, P99: 9 * time.Millisecond, Max: 20 * time.Millisecond},
		ErrorTypes: map[string]int64{"Timeout": 2, "Other": 1},
		Timeline:   []loadgen.Second{{At: time.Second, Ops: 300, Latency: latency.Summary{P50: time.Millisecond, P99: 4 * time.Millisecond}}}}
	p := Params{Workload: "kv", Mix: "b", Consistency: "any", Keys: 10, Distribution: "zipfian", ValueSize: 64,
		Clients: 8, Connections: 2, Rate: 500, Duration: 3 * time.Second, Warmup: time.Second}
	r := NewBench(p, res, nil, nil)
	if r.Loop != "open" || r.Mix != "b" || r.Consistency != "any" || r.ValueSize != 64 || r.OpsPerSec != 300 ||
		r.Latency.P50 != 1.5 || r.Latency.Max != 20 || len(r.Timeline) != 1 || r.Timeline[0].P99Ms != 4 || r.Timeline[0].AtS != 1 {
		t.Fatalf("kv report: %+v", r)
	}
	var w bytes.Buffer
	if err := r.WriteText(&w); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kv (mix b, any reads, 64-byte values), 10 keys zipfian", "open loop at 500/s",
		"300 ops/s (900 ok, 3 errors, 7 scheduled requests missed", "p50 1.50", "Timeout 2", "Other 1"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, w.String())
		}
	}
	if svg := r.Chart(res); !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("chart is not SVG: %.80s", svg)
	}

	p.Workload, p.Rate = "counter", 0
	r = NewBench(p, loadgen.Result{}, nil, nil)
	if r.Loop != "closed" || r.Mix != "" || r.Consistency != "" || r.ValueSize != 0 || r.Timeline == nil {
		t.Fatalf("counter report: %+v", r)
	}
	p.Workload = "append"
	if r = NewBench(p, loadgen.Result{}, nil, nil); r.ValueSize != 64 || r.Mix != "" {
		t.Fatalf("append report: %+v", r)
	}
}
