package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// ErrBadConfig is a Config that fails Validate.
var ErrBadConfig = errors.New("feed: bad config")

// MaxBatch bounds Config.Batch: one AppendBatch must stay well inside the request limit.
const MaxBatch = 10_000

// Config describes one feed run.
type Config struct {
	// Generator is the event sequence. Required to be valid (nexmark.Config.Validate).
	Generator nexmark.Config
	// From is the first emission position; Events how many to append (≥ 1, and within
	// Generator.Events when that is bounded).
	From, Events int64
	// Batch is the number of events per chunk (one AppendBatch per stream). Default 500.
	Batch int
	// Workers is the number of concurrent appenders. Default 1.
	Workers int
	// Progress, if set, is called about once a second with the events appended so far,
	// from the run's own goroutine.
	Progress func(events int64)
	// Pace, if positive, is the wall-clock rate in events per second: chunk k is not
	// appended before Batch×k/Pace seconds after the start (open loop). 0: as fast as
	// the cluster takes them.
	Pace float64
	// Sending, if set, is called by the appending goroutine just before it appends the
	// chunk of positions [from, to), with the time it was due (its scheduled time under
	// Pace, so that a late chunk's wait counts; else now): a run measuring result
	// latency from the append records it. It must be safe for concurrent use.
	Sending func(from, to int64, at time.Time)
	// Appended, if set, is called by the appending goroutine when every append of the
	// chunk [from, to) has been answered, with the time it was due (as Sending's): the
	// append's own latency, to set a result's latency beside. It must be safe for
	// concurrent use.
	Appended func(from, to int64, due time.Time)
}

func (c Config) withDefaults() Config {
	if c.Batch == 0 {
		c.Batch = 500
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	return c
}

// Validate checks c after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.Generator.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	switch {
	case c.From < 0 || c.Events < 1:
		return fmt.Errorf("%w: from %d, events %d: want from ≥ 0 and events ≥ 1", ErrBadConfig, c.From, c.Events)
	case c.Generator.Events > 0 && c.From+c.Events > c.Generator.Events:
		return fmt.Errorf("%w: positions [%d, %d) past the generator's %d events", ErrBadConfig, c.From, c.From+c.Events, c.Generator.Events)
	case c.Batch < 1 || c.Batch > MaxBatch:
		return fmt.Errorf("%w: batch %d not in 1..%d", ErrBadConfig, c.Batch, MaxBatch)
	case !(c.Pace >= 0) || c.Pace > 1e9: // NaN fails >= 0
		return fmt.Errorf("%w: pace %v: want 0 (unpaced) or events per second", ErrBadConfig, c.Pace)
	case c.Workers < 1 || c.Workers > 1024:
		return fmt.Errorf("%w: workers %d not in 1..1024", ErrBadConfig, c.Workers)
	}
	return nil
}

// MaxDisorderMs is how far, in event time, an appended event may trail the latest one
// appended before it: the generator's disorder plus that of concurrent chunks.
func (c Config) MaxDisorderMs() int64 {
	c = c.withDefaults()
	g := c.Generator
	g.OutOfOrderGroup = max(g.OutOfOrderGroup, 1) + c.Workers*c.Batch
	return g.MaxDisorderMs()
}

// Result is what a run did.
type Result struct {
	Events  int64 // appended
	Batches int64 // AppendBatch calls
	Elapsed time.Duration
	// EventsPerSec is Events / Elapsed.
	EventsPerSec float64
}

// CreateStreams creates person, auction and bid, each with retention, where missing.
func CreateStreams(ctx context.Context, c *client.Client, retention builtin.StreamRetention) error {
	for _, s := range []string{nexmark.StreamPerson, nexmark.StreamAuction, nexmark.StreamBid} {
		err := c.Streams().Create(ctx, builtin.StreamDefinition{Name: s, Retention: retention})
		if err != nil && !errors.Is(err, client.ErrStreamExists) {
			return fmt.Errorf("creating stream %s: %w", s, err)
		}
	}
	return nil
}

// Run appends the events of cfg through clients (at least one), returning when all are
// appended, one append fails (its error), or ctx ends. What was appended before an
// error stays appended.
func Run(ctx context.Context, clients []*client.Client, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if len(clients) == 0 {
		return Result{}, fmt.Errorf("%w: no client", ErrBadConfig)
	}
	cfg = cfg.withDefaults()
	chunks := (cfg.Events + int64(cfg.Batch) - 1) / int64(cfg.Batch)
	var sent, batches atomic.Int64
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen, err := nexmark.New(cfg.Generator)
			if err != nil {
				cancel(err)
				return
			}
			c := clients[w%len(clients)]
			for k := int64(w); k < chunks && ctx.Err() == nil; k += int64(cfg.Workers) {
				from := cfg.From + k*int64(cfg.Batch)
				to := min(from+int64(cfg.Batch), cfg.From+cfg.Events)
				at := time.Now()
				if cfg.Pace > 0 {
					due := start.Add(time.Duration(float64(k*int64(cfg.Batch)) / cfg.Pace * float64(time.Second)))
					if err := sleepUntil(ctx, due); err != nil {
						return
					}
					at = due
				}
				if cfg.Sending != nil {
					cfg.Sending(from, to, at)
				}
				n, err := appendChunk(ctx, c, gen, from, to)
				batches.Add(n)
				if err != nil {
					cancel(fmt.Errorf("appending positions [%d, %d): %w", from, to, err))
					return
				}
				if cfg.Appended != nil {
					cfg.Appended(from, to, at)
				}
				sent.Add(to - from)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			if cfg.Progress != nil {
				cfg.Progress(sent.Load())
			}
		}
	}
	res := Result{Events: sent.Load(), Batches: batches.Load(), Elapsed: time.Since(start)}
	if s := res.Elapsed.Seconds(); s > 0 {
		res.EventsPerSec = float64(res.Events) / s
	}
	return res, context.Cause(ctx) // nil unless an append failed or the caller's ctx ended
}

// appendChunk appends positions [from, to), one AppendBatch per stream, the streams'
// concurrently (so that they can share a log entry: one after another, the bids, last,
// waited for two commits first); it returns the calls made.
func appendChunk(ctx context.Context, c *client.Client, gen *nexmark.Generator, from, to int64) (int64, error) {
	evs, err := gen.Slice(from, to)
	if err != nil {
		return 0, err
	}
	var per [3][]client.StreamRecord // by nexmark.Kind
	for i := range evs {
		e := &evs[i]
		per[e.Kind] = append(per[e.Kind], client.StreamRecord{Key: e.Key(), Value: e.Value(), EventTime: time.UnixMilli(e.Time())})
	}
	var calls int64
	var wg sync.WaitGroup
	var errs [3]error
	for k, recs := range per {
		if len(recs) == 0 {
			continue
		}
		calls++
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[k] = c.AppendBatch(ctx, nexmark.Kind(k).String(), recs)
		}()
	}
	wg.Wait()
	return calls, errors.Join(errs[:]...)
}

// sleepUntil waits until t or until ctx ends (its error).
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
