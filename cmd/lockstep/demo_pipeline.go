package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/urfave/cli/v2"
)

// runPipelineDemo runs the built-in click pipeline (procedures.DefaultClickPipeline) on an
// embedded cluster: out-of-order producers append clicks, a subscription to the window
// results shows them live, the leader is killed halfway, and at the end every window's
// result is checked against what the producers were told was acknowledged.
func runPipelineDemo(c *cli.Context) error {
	out := &lockedWriter{w: c.App.Writer} // the live view, the kill and the main line all print
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	duration, producers := c.Duration("duration"), c.Int("clients")
	pipe := procedures.DefaultClickPipeline
	streams := pipe.Streams()
	cluster, cl, quiet, err := startDemoCluster(ctx, c, out)
	if err != nil {
		return err
	}
	defer cluster.Close()
	defer cl.Close()
	// The input alone: the pipeline's processors create their output streams.
	if err := cl.CreateStream(ctx, builtin.StreamDefinition{Name: streams.Clicks}); err != nil {
		return fmt.Errorf("create stream %s: %w", streams.Clicks, err)
	}
	fmt.Fprintf(out, "click pipeline: %s → %s → 1-minute windows per page → %s (late clicks → %s)\n",
		streams.Clicks, streams.ByPage, streams.Counts, streams.Late)
	fmt.Fprintf(out, "%d producers append batches of %d clicks for %s; event time runs %d× the wall clock, out of order\n",
		producers, clickBatch, duration, clickSpeed)

	tally := newClickTally(pipe.Window)
	view, err := watchWindowResults(ctx, cl, streams.Counts, out, tally.ackedN.Load)
	if err != nil {
		return err
	}
	defer view.stop()
	var sink *demoSink
	if dsn := c.String("sink-dsn"); dsn != "" {
		sink, err = startDemoSink(ctx, dsn, c.String("sink-schema"), streams.Counts, cl, quiet, out)
		if err != nil {
			return err
		}
		defer sink.stop()
	}
	clock := newClickClock(time.Now(), duration)
	runCtx, stopProducers := context.WithTimeout(ctx, duration)
	defer stopProducers()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			produceClicks(runCtx, cl, streams.Clicks, uint64(p), clock, tally)
		}()
	}
	if sink != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sink.takeOver(runCtx, duration*3/4)
		}()
	}
	restart := killLeaderHalfway(runCtx, c, out, cluster, duration, &wg)
	wg.Wait()
	fmt.Fprintf(out, "producers done: %d clicks acknowledged, %d with unknown outcome\n", tally.ackedN.Load(), tally.unknwnN.Load())
	if err := restart(); err != nil {
		return err
	}
	return pipelineReport(ctx, out, cluster, cl, pipe, tally, view, sink)
}
