package feed

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
)

// TestReport: a run's report in seconds and its table; a query's out-of-orderness covers
// twice the feed's disorder, and is at least a second.
func TestReport(t *testing.T) {
	r := Result{Events: 1000, Batches: 4, Elapsed: 500 * time.Millisecond, EventsPerSec: 2000}.Report()
	if r != (Report{Events: 1000, Batches: 4, AppendS: 0.5, AppendRate: 2000}) {
		t.Fatalf("report %+v", r)
	}
	var w bytes.Buffer
	if err := r.WriteTable(&w); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "events  1000") || !strings.Contains(w.String(), "append  0.500s, 4 batches, 2000 events/s") {
		t.Fatalf("table:\n%s", w.String())
	}
	slow := Config{Generator: nexmark.Config{Rate: 10}, Events: 10, Batch: 100, Workers: 4}
	if got, want := slow.OutOfOrderness(), 2*time.Duration(slow.MaxDisorderMs())*time.Millisecond; got != want || got <= time.Second {
		t.Errorf("out-of-orderness %v, want %v (> 1s)", got, want)
	}
	fast := Config{Generator: nexmark.Config{Rate: 1_000_000}, Events: 10, Batch: 1, Workers: 1}
	if got := fast.OutOfOrderness(); got != time.Second {
		t.Errorf("fast feed's out-of-orderness %v, want 1s", got)
	}
}
