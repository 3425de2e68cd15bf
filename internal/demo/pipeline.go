package demo

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// RunPipeline runs the built-in click pipeline (procedures.DefaultClickPipeline) on an
// embedded cluster: cfg.Clients out-of-order producers append clicks for cfg.Duration, a
// subscription to the window results shows them live, the leader is killed halfway
// (cfg.Kill), and at the end every window's result is checked against what the producers
// were told was acknowledged; with cfg.SinkDSN the PostgreSQL sink copies the results and
// its table is checked too. It writes to out and returns an error wrapping
// ErrCheckFailed if the check failed.
func RunPipeline(ctx context.Context, cfg PipelineConfig, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	out = &lockedWriter{w: out} // the live view, the kill and the main line all print
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pipe := procedures.DefaultClickPipeline
	streams := pipe.Streams()
	c, err := startCluster(ctx, cfg.Config, out)
	if err != nil {
		return err
	}
	defer c.close()
	// The input alone: the pipeline's processors create their output streams.
	if err := c.cl.Streams().Create(ctx, builtin.StreamDefinition{Name: streams.Clicks}); err != nil {
		return fmt.Errorf("create stream %s: %w", streams.Clicks, err)
	}
	fmt.Fprintf(out, "click pipeline: %s → %s → 1-minute windows per page → %s (late clicks → %s)\n",
		streams.Clicks, streams.ByPage, streams.Counts, streams.Late)
	fmt.Fprintf(out, "%d producers append batches of %d clicks for %s; event time runs %d× the wall clock, out of order\n",
		cfg.Clients, clickBatch, cfg.Duration, clickSpeed)

	tally := newClickTally(pipe.Window)
	view := watchWindowResults(ctx, c.cl, streams.Counts)
	defer view.stop()
	var sink *demoSink
	if cfg.SinkDSN != "" {
		sink, err = startDemoSink(ctx, cfg.SinkDSN, cfg.SinkSchema, streams.Counts, c.cl, c.quiet, out)
		if err != nil {
			return err
		}
		defer sink.stop()
	}
	clock := newClickClock(time.Now(), cfg.Duration, pipe.Window)
	runCtx, stopProducers := context.WithTimeout(ctx, cfg.Duration)
	defer stopProducers()
	fmt.Fprintln(out, liveLegend)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		printLive(runCtx, out, c.cl, pipe, tally, clock, view)
	}()
	for p := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			produceClicks(runCtx, c.cl, streams.Clicks, uint64(p), clock, tally)
		}()
	}
	if sink != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sink.takeOver(runCtx, cfg.Duration*3/4)
		}()
	}
	restart := c.killLeaderHalfway(runCtx, cfg.Config, out)
	wg.Wait()
	stopped := time.Now()
	fmt.Fprintf(out, "producers done: %d clicks acknowledged, %d with unknown outcome; their clock stopped at %s\n",
		tally.ackedN.Load(), tally.unknwnN.Load(), clockOf(clock.at(stopped)))
	if err := restart(); err != nil {
		return err
	}
	return pipelineReport(ctx, out, c, pipe, tally, stopped, clock, view, sink)
}
