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
