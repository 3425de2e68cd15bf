package nexbench

import (
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
)

// TestDueAtChunksOutOfOrder: the workers send their chunks concurrently, so a later
// chunk can go first and move the watermark past an earlier chunk's event times; the
// input reached those times when the later chunk was sent (before the fix dueAt had no
// time for them, and the run's windows closed that way went unmeasured).
func TestDueAtChunksOutOfOrder(t *testing.T) {
	g, err := nexmark.New(nexmark.Config{Rate: 1000}) // one event per ms
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{gen: g.Config(), from: 0, end: 400, batch: 100, reached: make([]int64, 4), start: time.Unix(100, 0)}
	base := w.gen.BaseTime
	at := func(s int64) time.Time { return time.Unix(s, 0) }
	if _, ok := w.dueAt(base + 50); ok {
		t.Fatal("nothing sent: dueAt has a time")
	}
	w.sending(200, 300, at(101)) // chunk 2 before chunks 0 and 1
	for _, c := range []struct {
		t    int64
		want time.Time
	}{{base, at(101)}, {base + 150, at(101)}, {base + 250, at(101)}} {
		if got, ok := w.dueAt(c.t); !ok || !got.Equal(c.want) {
			t.Errorf("dueAt(base+%d): %v, %v; want %v", c.t-base, got, ok, c.want)
		}
	}
	if _, ok := w.dueAt(base + 350); ok {
		t.Error("chunk 3 not sent: dueAt has a time")
	}
	w.sending(0, 100, at(102)) // late: the input had reached its times already
	w.sending(300, 400, at(103))
	if got, _ := w.dueAt(base + 50); !got.Equal(at(101)) {
		t.Errorf("dueAt(base+50) after chunk 0: %v; want the earlier %v", got, at(101))
	}
	if got, ok := w.dueAt(base + 399); !ok || !got.Equal(at(103)) {
		t.Errorf("dueAt(base+399): %v, %v; want %v", got, ok, at(103))
	}
	if _, ok := w.dueAt(base + 400); ok {
		t.Error("past the run's last event: dueAt has a time")
	}
}
