package nexbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/feed"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/latency"
)

// ErrBadConfig is a Config Run refuses before it does anything.
var ErrBadConfig = errors.New("nexbench: bad config")

// Config is one measured run.
type Config struct {
	// Query is the query run (Queries(Engine)); for EngineGo the cluster's nodes must
	// carry it (bench nodes), for EngineSQL Run deploys it.
	Query string
	// Engine is EngineGo (the default) or EngineSQL.
	Engine string
	// OutOfOrderness is the SQL engine's out-of-orderness of the input streams (default
	// 1 s; the Go engine's is its nodes' flag), and for both the watermark wait of
	// Report.WindowLatency.
	OutOfOrderness time.Duration
	// Feed is the events and how they are appended.
	Feed feed.Config
	// Clients append (round robin over Feed.Workers) and subscribe (the first). Required.
	Clients []*client.Client
	// Nodes are the node processes measured (CPU, data size); may be empty.
	Nodes []Node
	// DrainTimeout bounds the wait for lag 0 after the last append, and Check's wait for
	// the windows to close. Default 60 s.
	DrainTimeout time.Duration
	// Check compares the result with the batch reference after the run (ErrWrongResult);
	// the events are kept in memory for it.
	Check bool
}

// Run runs cfg and reports what it measured; an error after the appends started comes
// with the partial report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Engine == "" {
		cfg.Engine = EngineGo
	}
	if err := CheckQuery(cfg.Engine, cfg.Query); err != nil {
		return Report{}, err
	}
	if cfg.OutOfOrderness <= 0 {
		cfg.OutOfOrderness = time.Second
	}
	if len(cfg.Clients) == 0 {
		return Report{}, fmt.Errorf("%w: no client", ErrBadConfig)
	}
	if err := cfg.Feed.Validate(); err != nil {
		return Report{}, err
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = time.Minute
	}
	fc := cfg.Feed
	if fc.Batch == 0 {
		fc.Batch = 500
	}
	c0 := cfg.Clients[0]
	dep, err := deploy(ctx, c0, cfg.Engine, cfg.Query, cfg.OutOfOrderness)
	if err != nil {
		return Report{}, err
	}
	parts, err := carried(ctx, c0, dep)
	if err != nil {
		return Report{}, err
	}
	g, err := nexmark.New(fc.Generator)
	if err != nil {
		return Report{}, err
	}
	chunks := (fc.Events + int64(fc.Batch) - 1) / int64(fc.Batch)
	w := &watcher{query: cfg.Query, gen: g.Config(), from: fc.From, end: fc.From + fc.Events, batch: int64(fc.Batch),
		reached: make([]int64, chunks), keep: cfg.Check, closeAfterMs: dep.closeAfterMs, batchTimed: dep.batchTimed, view: dep.view,
		timeCol: dep.timeCol, total: latency.New(), window: latency.New(), acked: latency.New()}
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	sub, err := subscribe(subCtx, c0, dep.output)
	if err != nil {
		return Report{}, err
	}
	defer sub.Close()
	cpu0 := cpuOf(cfg.Nodes)
	w.start = time.Now() // before follow, which reads it
	subDone := make(chan error, 1)
	go func() { subDone <- w.follow(subCtx, sub) }()

	fc.Sending, fc.Appended = w.sending, w.appended
	res, err := feed.Run(ctx, cfg.Clients, fc)
	rep := Report{Query: cfg.Query, Engine: cfg.Engine, Nodes: len(cfg.Nodes), Partitions: parts, Events: res.Events,
		Batches: res.Batches, AppendS: res.Elapsed.Seconds(), AppendRate: res.EventsPerSec, Pace: fc.Pace}
	if err != nil {
		return rep, fmt.Errorf("appending after %d events: %w", res.Events, err)
	}
	drainCtx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
	err = feed.WaitDrained(drainCtx, c0, dep.output, 10*time.Millisecond)
	cancel()
	if err != nil {
		return rep, err
	}
	elapsed := time.Since(w.start)
	cpu1 := cpuOf(cfg.Nodes)
	rep.DrainedS = elapsed.Seconds()
	rep.Rate = float64(res.Events) / rep.DrainedS
	var sum float64
	for i, n := range cfg.Nodes {
		r := Replica{ID: n.ID, Pid: n.Pid}
		if cpu0[i] >= 0 && cpu1[i] >= 0 {
			r.CPUSeconds = cpu1[i] - cpu0[i]
			if r.CPUSeconds > 0 {
				r.EventsPerCPUSecond = float64(res.Events) / r.CPUSeconds
			}
			sum += r.CPUSeconds
		}
		if n.DataDir != "" {
			r.DiskBytes = diskBytes(n.DataDir)
		}
		if n.Pid > 0 {
			r.RSSBytes, _ = RSSBytes(n.Pid)
		}
		rep.Replicas = append(rep.Replicas, r)
	}
	if len(cfg.Nodes) > 0 && sum > 0 {
		rep.EventsPerCore = float64(res.Events) * float64(len(cfg.Nodes)) / sum
	}
	out := dep.output
	rep.StreamBytes = map[string]int64{}
	var outEnd int64
	for _, s := range []string{nexmark.StreamPerson, nexmark.StreamAuction, nexmark.StreamBid, out} {
		d, err := c0.Streams().Describe(ctx, s)
		if err != nil {
			return rep, fmt.Errorf("nexbench: describing %s: %w", s, err)
		}
		for _, p := range d.Partitions {
			rep.StreamBytes[s] += p.Bytes
			if s == out {
				outEnd += int64(p.NextOffset)
			}
		}
	}
	// Every result is in the output stream now; the subscriber may still be behind.
	if err := w.waitResults(ctx, outEnd, time.Now().Add(cfg.DrainTimeout)); err != nil {
		return rep, err
	}
	if self, err := CPUSeconds(os.Getpid()); err == nil {
		rep.BenchCPUSeconds = self
	}
	w.mu.Lock()
	rep.Results = w.results
	rep.Latency = summary(w.total.Summary())
	rep.AppendLatency = summary(w.acked.Summary())
	if dep.closeAfterMs >= 0 {
		s := summary(w.window.Summary())
		rep.WindowLatency = &s
	}
	rep.Seconds = w.chartSeconds(elapsed)
	w.mu.Unlock()
	select {
	case err := <-subDone:
		return rep, fmt.Errorf("subscriber of %s: %w", dep.output, err)
	default:
	}
	if cfg.Check {
		rows, err := check(ctx, cfg, dep, parts, w)
		rep.CheckedRows = rows
		if err != nil {
			return rep, err
		}
		rep.Checked = true
	}
	return rep, nil
}

// carried returns the cluster's partition count, from the query's processor statuses,
// or an error if the cluster's nodes do not run the query's processors.
func carried(ctx context.Context, c *client.Client, d *deployed) (int, error) {
	deadline := time.Now().Add(10 * time.Second) // a deploy just applied: every node has it soon
	for {
		st, err := c.Procedures().Processors(ctx, "")
		if err != nil {
			return 0, fmt.Errorf("nexbench: listing the processors: %w", err)
		}
		parts := 0
		for _, s := range st {
			if s.Processor == d.output || strings.HasPrefix(s.Processor, d.output+".") {
				parts = max(parts, s.Partition+1)
			}
		}
		switch {
		case parts > 0:
			return parts, nil
		case d.engine == EngineGo:
			return 0, fmt.Errorf("%w: the cluster runs no processor of %s (start its nodes with `lockstep bench nexmark-node --nexmark-query %s`)",
				ErrBadConfig, d.query, d.query)
		case time.Now().After(deadline):
			return 0, fmt.Errorf("nexbench: the cluster runs no processor of the view %s after its deploy", d.output)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// subscribe subscribes to stream from its start, waiting for the processors' first
// phase to create it.
func subscribe(ctx context.Context, c *client.Client, stream string) (*client.Subscription, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		sub, err := c.SubscribeAll(ctx, stream, nil)
		if err == nil || !errors.Is(err, client.ErrUnknownStream) || time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("nexbench: subscribing to %s: %w", stream, err)
			}
			return sub, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cpuOf returns each node's CPU seconds so far, -1 where unknown.
func cpuOf(nodes []Node) []float64 {
	out := make([]float64, len(nodes))
	for i, n := range nodes {
		out[i] = -1
		if n.Pid > 0 {
			if s, err := CPUSeconds(n.Pid); err == nil {
				out[i] = s
			}
		}
	}
	return out
}

// check appends the drain events, then waits until the output reduces to the batch
// reference over the run's events (ErrWrongResult when DrainTimeout passes first). It
// returns the reference's row count.
func check(ctx context.Context, cfg Config, dep *deployed, parts int, w *watcher) (int, error) {
	g, err := nexmark.New(cfg.Feed.Generator)
	if err != nil {
		return 0, err
	}
	evs, err := g.Slice(cfg.Feed.From, cfg.Feed.From+cfg.Feed.Events)
	if err != nil {
		return 0, err
	}
	maxT := int64(0)
	for i := range evs {
		maxT = max(maxT, evs[i].Time())
	}
	drain := drainEvents(maxT+time.Hour.Milliseconds(), parts)
	per := map[string][]client.StreamRecord{}
	for i := range drain {
		e := &drain[i]
		per[e.Stream()] = append(per[e.Stream()], client.StreamRecord{Key: e.Key(), Value: e.Value(), EventTime: time.UnixMilli(e.Time())})
	}
	for _, s := range []string{nexmark.StreamPerson, nexmark.StreamAuction, nexmark.StreamBid} {
		if _, err := cfg.Clients[0].AppendBatch(ctx, s, per[s]); err != nil {
			return 0, fmt.Errorf("nexbench: appending the drain events: %w", err)
		}
	}
	all := append(evs, drain...)
	if dep.view != nil {
		return checkSQL(ctx, cfg, dep, all, maxT, w)
	}
	want := reference(cfg.Query, all, maxT+1)
	n := reflectLen(want)
	deadline := time.Now().Add(cfg.DrainTimeout)
	for {
		w.mu.Lock()
		got, err := answer(cfg.Query, w.values())
		w.mu.Unlock()
		if err != nil {
			return n, err
		}
		if equalAnswers(got, want) {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("%w: %s: %d rows, reference %d rows; %s", ErrWrongResult, cfg.Query, reflectLen(got), n, firstDiff(got, want))
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkSQL waits until the output view's rows equal the batch reference over the events
// (the run's and the drain's; windows before the drain) projected to the view's columns
// (ErrWrongResult when DrainTimeout passes first); rows at an event time of the drain
// are not the run's (a batch-timed view's are all kept: the reference has their drain
// rows). It returns the reference's row count.
func checkSQL(ctx context.Context, cfg Config, dep *deployed, evs []nexmark.Event, maxT int64, w *watcher) (int, error) {
	v := dep.view
	want, err := projectReference(v, reference(cfg.Query, evs, maxT+1))
	if err != nil {
		return 0, err
	}
	before := w.drainFrom()
	if dep.batchTimed || v.Window == nil && len(v.Aggs) > 0 {
		// A batch-timed view's rows, and an unwindowed aggregate's (q4: revised by every
		// input, the drain's too, as the reference is), are all the run's.
		before = math.MaxInt64
	}
	deadline := time.Now().Add(cfg.DrainTimeout)
	for {
		w.mu.Lock()
		got, err := sqlAnswer(v, w.parts, before)
		w.mu.Unlock()
		if err != nil {
			return len(want), err
		}
		if slices.Equal(got, want) {
			return len(want), nil
		}
		if time.Now().After(deadline) {
			return len(want), fmt.Errorf("%w: %s (sql): %d rows, reference %d rows; %s", ErrWrongResult, cfg.Query, len(got), len(want), firstDiffRows(got, want))
		}
		select {
		case <-ctx.Done():
			return len(want), ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
