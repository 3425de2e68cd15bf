package latency

import (
	"sync"
	"testing"
	"time"
)

func TestRecorderPercentiles(t *testing.T) {
	r := New()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 250; i++ {
				r.Record(time.Duration(i) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	s := r.Summary()
	cases := []struct {
		name      string
		got, want time.Duration
	}{
		{"p50", s.P50, 125 * time.Millisecond},
		{"p99", s.P99, 248 * time.Millisecond},
		{"max", s.Max, 250 * time.Millisecond},
	}
	if s.Count != 1000 {
		t.Fatalf("count: got %d, want 1000", s.Count)
	}
	for i, c := range cases {
		if d := c.got - c.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("#%d %s: got %v, want %v", i, c.name, c.got, c.want)
		}
	}
	if w := r.Take(); w.Count != 1000 || r.Summary().Count != 0 {
		t.Fatalf("Take: got %d then %d, want 1000 then 0", w.Count, r.Summary().Count)
	}
	other := New()
	other.Record(time.Second)
	r.Merge(other)
	if got := r.Summary(); got.Count != 1 || got.Max < time.Second-time.Millisecond {
		t.Fatalf("Merge: got %+v", got)
	}
}

// TestTakeInto: a window taken into a total leaves the window empty and the total holding
// every value of every window.
func TestTakeInto(t *testing.T) {
	w, total := New(), New()
	for i := 1; i <= 100; i++ {
		w.Record(time.Duration(i) * time.Millisecond)
	}
	if s := w.TakeInto(total); s.Count != 100 {
		t.Fatalf("first window: got %d values, want 100", s.Count)
	}
	w.Record(time.Second)
	if s := w.TakeInto(total); s.Count != 1 || s.Max < time.Second-time.Millisecond {
		t.Fatalf("second window: got %+v, want one value of 1s", s)
	}
	if got := total.Summary(); got.Count != 101 || got.P50 < 50*time.Millisecond || got.P50 > 52*time.Millisecond {
		t.Fatalf("total: got %+v, want 101 values, p50 about 51ms", got)
	}
	if got := w.Summary().Count; got != 0 {
		t.Fatalf("window after TakeInto: got %d values, want 0", got)
	}
}

// TestRecordBeyondRange: a latency longer than the histogram's range is counted at the
// top of the range, not dropped (the histogram alone drops it, which would leave an
// overloaded run's slowest requests out of its count and percentiles).
func TestRecordBeyondRange(t *testing.T) {
	r := New()
	r.Record(time.Millisecond)
	r.Record(2 * time.Minute)
	s := r.Summary()
	if s.Count != 2 {
		t.Fatalf("count %d, want 2", s.Count)
	}
	if s.Max < 59*time.Second {
		t.Errorf("max %v, want about a minute", s.Max)
	}
}
