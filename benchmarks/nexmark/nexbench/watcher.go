package nexbench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/chart"
	"github.com/lockstepdb/lockstep/internal/latency"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// watcher is the run's subscriber of the query's output stream and the record of when
// each chunk of events was due.
type watcher struct {
	query string
	gen   nexmark.Config // with defaults
	from  int64          // first position
	end   int64          // the position after the last
	batch int64
	start time.Time
	keep  bool // keep the records, for check
	// closeAfterMs: a windowed query's result at event time t is due once the input
	// reaches t + closeAfterMs (the watermark closes its window); -1 for no window.
	closeAfterMs int64
	// batchTimed, view and timeCol: deployed's; a batch-timed result's latency is from
	// its date_time column's value, or without one from its log entry's batch time.
	batchTimed bool
	view       *plan.View
	timeCol    int

	mu sync.Mutex
	// reached[k]: when the input first reached chunk k's event times, Unix ns (0 before):
	// the due time of the first chunk at or past k that was sent. The workers send their
	// chunks concurrently, so a later chunk may go before k and close k's windows.
	reached []int64
	sentTo  int // chunks [0, sentTo) are reached
	results int64
	total   *latency.Recorder
	window  *latency.Recorder   // windowed results' latency from the watermark that closed the window
	acked   *latency.Recorder   // chunks' appends answered, from their due time
	perSec  []*latency.Recorder // results' latency by second of the run they became visible
	appends []int64             // events due per second of the run
	parts   map[int][]kept      // kept records by partition, in offset order
}

// sending records chunk [from, to)'s due time (feed.Config.Sending).
func (w *watcher) sending(from, to int64, at time.Time) {
	k := int((from - w.from) / w.batch)
	w.mu.Lock()
	for ; w.sentTo <= k; w.sentTo++ {
		w.reached[w.sentTo] = at.UnixNano()
	}
	sec := w.second(at)
	for len(w.appends) <= sec {
		w.appends = append(w.appends, 0)
	}
	w.appends[sec] += to - from
	w.mu.Unlock()
}

// appended records chunk [from, to)'s appends answered (feed.Config.Appended).
func (w *watcher) appended(_, _ int64, due time.Time) {
	d := time.Since(due)
	w.mu.Lock()
	w.acked.Record(d)
	w.mu.Unlock()
}

func (w *watcher) second(t time.Time) int { return max(int(t.Sub(w.start)/time.Second), 0) }

// dueAt returns when the input reached event time t: the due time of the first chunk
// sent at or past the one that holds the first event number at t or later (positions
// and numbers differ within an out-of-order group only), and false if none was sent or
// the run's events do not reach t. w.mu is held.
func (w *watcher) dueAt(t int64) (time.Time, bool) {
	// event number n is at BaseTime + n*1000/Rate ms: the first at t or later is
	// ceil((t−BaseTime)×Rate/1000).
	n := ((t-w.gen.BaseTime)*w.gen.Rate + 999) / 1000
	k := max((n-w.from)/w.batch, 0)
	if k >= int64(len(w.reached)) {
		if t > w.lastTime() {
			return time.Time{}, false
		}
		k = int64(len(w.reached) - 1)
	}
	ns := w.reached[k]
	if ns == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// follow reads the subscription until ctx ends, recording each result's latency.
func (w *watcher) follow(ctx context.Context, sub *client.Subscription) error {
	for {
		recs, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now()
		w.mu.Lock()
		sec := w.second(now)
		for len(w.perSec) <= sec {
			w.perSec = append(w.perSec, latency.New())
		}
		for _, r := range recs {
			w.results++
			t := r.EventTime.UnixMilli()
			if w.batchTimed {
				t = w.rowTime(r)
				if t < 0 {
					d := now.Sub(r.EventTime)
					w.total.Record(d)
					w.perSec[sec].Record(d)
				}
			}
			if due, ok := w.dueAt(t); ok && t > 0 && t < w.drainFrom() {
				d := now.Sub(due)
				w.total.Record(d)
				w.perSec[sec].Record(d)
			}
			// A window the run's own input closed (not check's drain, not idleness).
			if due, ok := w.dueAt(t + w.closeAfterMs); ok && t > 0 && w.closeAfterMs >= 0 && t+w.closeAfterMs <= w.lastTime() {
				w.window.Record(now.Sub(due))
			}
			if w.keep {
				if w.parts == nil {
					w.parts = map[int][]kept{}
				}
				w.parts[r.Partition] = append(w.parts[r.Partition], kept{key: r.Key, value: r.Data, time: t})
			}
		}
		w.mu.Unlock()
	}
}

// drainFrom is the first event time of check's drain events, whose results are not the
// run's: an hour past the run's last event time at the latest.
func (w *watcher) drainFrom() int64 {
	last := w.from + int64(len(w.reached))*w.batch
	return w.gen.BaseTime + last*1000/w.gen.Rate + time.Hour.Milliseconds()/2
}

// rowTime returns a batch-timed result's event time from its date_time column, or -1.
func (w *watcher) rowTime(r client.Record) int64 {
	if w.timeCol < 0 {
		return -1
	}
	ch, err := w.view.DecodeChange(r.Key, r.Data)
	if err != nil {
		return -1
	}
	t, _ := ch.Row[w.timeCol].(int64)
	return t
}

// lastTime is the event time of the run's last event number.
func (w *watcher) lastTime() int64 {
	return w.gen.BaseTime + (w.end-1)*1000/w.gen.Rate
}

// values returns the kept values, partition by partition. w.mu is held.
func (w *watcher) values() [][]byte {
	var out [][]byte
	for p := 0; len(w.parts) > 0 && p <= maxKey(w.parts); p++ {
		for _, r := range w.parts[p] {
			out = append(out, r.value)
		}
	}
	return out
}

func maxKey(m map[int][]kept) int {
	k := 0
	for p := range m {
		k = max(k, p)
	}
	return k
}

// chartSeconds returns the run's seconds: events due and result latency. w.mu is held.
func (w *watcher) chartSeconds(elapsed time.Duration) []chart.Second {
	n := int(elapsed/time.Second) + 1
	out := make([]chart.Second, n)
	for i := range out {
		if i < len(w.appends) {
			out[i].OK = w.appends[i]
		}
		if i < len(w.perSec) {
			s := w.perSec[i].Summary()
			out[i].P50, out[i].P99 = s.P50, s.P99
		}
	}
	return out
}

// waitResults waits until the subscriber has seen n results, or deadline.
func (w *watcher) waitResults(ctx context.Context, n int64, deadline time.Time) error {
	for {
		w.mu.Lock()
		got := w.results
		w.mu.Unlock()
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nexbench: the subscriber saw %d of the %d results", got, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
