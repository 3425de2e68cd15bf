package jepsen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// Pipeline is the pipeline workload: each worker keeps many requests in flight in its one
// session, so the session's acknowledged point (the AckThrough every request carries)
// moves while requests are still on their way. Invoke sends a burst of Depth
// counter.add of 1 at once through the worker's client, each on a counter drawn at
// random, and waits for all of them. One burst in AbandonEvery is given up: its context
// ends 0.2–3 ms after it began, typically while its requests wait at the leader for the
// next log entry. The client then lets AckThrough pass them, and the next burst's
// requests, which often join the same log entry, acknowledge results not computed yet:
// the session table must not cache those (DESIGN.md §5), or replicas that restore a
// snapshot and replicas that did not hold different session tables. The nodes snapshot
// every SnapshotBytes of log, so a node killed and restarted restores one.
//
// Checks: each counter's final value within [acknowledged, acknowledged + unknown] and
// the acknowledged results distinct and within [1, final] — nothing ran twice, results
// are the counters' own — and, as after every run, every replica's partition and meta
// hashes equal (replicas-identical), which is what a session table that depends on
// restores breaks.
type Pipeline struct {
	// Depth is the number of requests a burst sends at once. Default 8.
	Depth int
	// Counters is the number of counters. Default 3.
	Counters int
	// AbandonEvery: one burst in AbandonEvery (drawn at random) is given up. Default 4;
	// negative: none.
	AbandonEvery int
	// SnapshotBytes is the nodes' --snapshot-bytes. Default 16 KiB: a snapshot every few
	// hundred operations, so that a node killed even early in a short run on a loaded
	// machine restores one taken after the first abandoned bursts.
	SnapshotBytes int64

	abandoned atomic.Int64 // operations of abandoned bursts
}

// Name implements Workload.
func (p *Pipeline) Name() string { return "pipeline" }

func (p *Pipeline) depth() int {
	if p.Depth <= 0 {
		return 8
	}
	return p.Depth
}

func (p *Pipeline) counters() int {
	if p.Counters <= 0 {
		return 3
	}
	return p.Counters
}

// NodeArgs implements nodeArgser: frequent snapshots, so restarts restore one (without
// the floor, which would space them by the state's size).
func (p *Pipeline) NodeArgs() []string {
	b := p.SnapshotBytes
	if b == 0 {
		b = 16 << 10
	}
	return []string{"--snapshot-bytes", fmt.Sprint(b), "--no-snapshot-floor"}
}

// Setup implements Workload: counters start at 0.
func (p *Pipeline) Setup(context.Context, *client.Client) error { return nil }

// Invoke implements Workload: one burst of Depth concurrent adds.
func (p *Pipeline) Invoke(ctx context.Context, w *Worker) {
	every := p.AbandonEvery
	if every == 0 {
		every = 4
	}
	bctx := ctx
	if every > 0 && w.Rand.IntN(every) == 0 {
		var cancel context.CancelFunc
		bctx, cancel = context.WithTimeout(ctx, 200*time.Microsecond+time.Duration(w.Rand.Int64N(int64(2800*time.Microsecond))))
		defer cancel()
		p.abandoned.Add(int64(p.depth()))
	}
	// The worker's random source is not safe for concurrent use: draw before the burst.
	names := make([]string, p.depth())
	for i := range names {
		names[i] = fmt.Sprintf("p%d", w.Rand.IntN(p.counters()))
	}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.record(Op{F: "add", Key: name, Args: []int64{1}}, func() ([]int64, error) {
				v, err := w.Client.CounterAdd(bctx, name, 1)
				return []int64{v}, err
			})
		}()
	}
	wg.Wait()
	w.Seq += int64(len(names))
}

// Check implements Workload.
func (p *Pipeline) Check(ctx context.Context, cl *client.Client, hist []Op, _ string) []Verdict {
	var names []string
	for i := range p.counters() {
		names = append(names, fmt.Sprintf("p%d", i))
	}
	vs := checkCounters(ctx, cl, hist, names)
	return append(vs, Verdict{Checker: "pipeline-abandoned", Valid: true,
		Detail: fmt.Sprintf("%d operations in bursts given up after 0.2–3 ms (depth %d)", p.abandoned.Load(), p.depth())})
}
