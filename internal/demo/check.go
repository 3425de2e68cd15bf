package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// pipelineReport waits until the pipeline has handled every click and closed every
// window, then checks exactly-once: for each page's window, its final count plus its late
// clicks equals the clicks the producers were told were acknowledged (up to those whose
// outcome stayed unknown), the input stream holds each acknowledged click once, and every
// replica holds the same state. It prints the last live line and the summary, both from
// the same counts, and returns an error wrapping ErrCheckFailed on any difference.
func pipelineReport(ctx context.Context, out io.Writer, c *demoCluster, pipe procedures.ClickPipelineConfig,
	tally *clickTally, stopped time.Time, clock clickClock, view *resultView, sink *demoSink) error {
	cl := c.cl
	streams := pipe.Streams()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	lastEnd := lastWindowEnd(tally, pipe.Window)
	closeAt := lastEnd + pipe.AllowedLateness.Milliseconds()
	fmt.Fprintf(out, "waiting for the watermark to reach %s on every partition: the last window, [%s, %s), takes clicks until then (its end + %s allowed lateness);\n",
		clockOf(closeAt), clockOf(lastEnd-pipe.Window.Milliseconds()), clockOf(lastEnd), pipe.AllowedLateness)
	fmt.Fprintf(out, "no clicks arrive any more: an idle partition (%s without a click) stops holding the watermark back, but batch time never moves it,\n", pipe.IdleTimeout)
	fmt.Fprintf(out, "so one closing click an hour of event time ahead (page %s, in no window's result) carries it past the last window\n", closingPage)
	if err := appendClosingClick(cctx, cl, pipe, clock.at(stopped)); err != nil {
		return err
	}
	st, err := waitPipelineDone(cctx, out, cl, pipe, closeAt, stopped, view)
	if err != nil {
		return err
	}
	hashes, convErr := c.WaitConverged(cctx)
	input, err := streamRecords(cctx, cl, streams.Clicks)
	if err != nil {
		return err
	}
	input-- // the closing click
	results, err := streamRecords(cctx, cl, streams.Counts)
	if err != nil {
		return err
	}
	if err := waitView(cctx, view, results); err != nil {
		return err
	}
	late, lateStragglers, err := lateClicks(cctx, cl, streams.Late, pipe.Window, tally)
	if err != nil {
		return err
	}
	finals, err := view.snapshot()
	if err != nil {
		return err
	}
	counts := view.counts()
	fmt.Fprintln(out, liveLine(0, tally.ackedN.Load(), "stopped at "+clockOf(clock.at(stopped)), &st, counts))

	var problems []string
	acked, unknown := tally.ackedN.Load(), tally.unknwnN.Load()
	if input < acked || input > acked+unknown {
		problems = append(problems, fmt.Sprintf("input stream holds %d clicks, producers had %d acknowledged and %d unknown", input, acked, unknown))
	}
	minutes, windowProblems := compareWindows(tally, finals, late, lateStragglers)
	problems = append(problems, windowProblems...)
	sum := summarize(minutes, tally, input, counts, time.Duration(tally.slowestAppend.Load()))
	problems = append(problems, sum.check(int64(results), int64(st.late))...)
	if sink != nil {
		sinkProblems, err := sink.check(cctx, results, finals)
		if err != nil {
			return err
		}
		if err := sink.stop(); err != nil {
			sinkProblems = append(sinkProblems, "the sink failed: "+err.Error())
		}
		if len(sinkProblems) == 0 {
			fmt.Fprintf(out, "sink table %s holds every window result exactly once\n", sink.table)
		}
		problems = append(problems, sinkProblems...)
	}
	var hashLine string
	if convErr == nil {
		hashLine = fmt.Sprintf("%x", hashes)
	}
	sum.write(out, pipe, hashLine)
	if convErr != nil {
		problems = append(problems, "replicas differ: "+convErr.Error())
	}
	if len(hashes) == 0 {
		problems = append(problems, "no state hashes")
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
		}
		return fmt.Errorf("%w:\n  %s", ErrCheckFailed, strings.Join(problems, "\n  "))
	}
	fmt.Fprintln(out, "exactly-once check passed: every acknowledged click counted once, in its window's final count or in the late stream; all replicas equal")
	return nil
}

// closingPage is the page of the closing click, which no producer uses.
const closingPage = "demo.closing"

// appendClosingClick appends one click an hour of event time ahead of the producers'
// clock, which stopped at clockMs: once the other input partitions are idle, the
// watermark passes every window but its own (docs/streams.md, "Watermarks across the
// exchange": an idle partition stops holding the watermark back, and batch time never
// moves it, so an input that stops needs a later record to close its last windows). Its
// window never closes, so no final count holds it.
func appendClosingClick(ctx context.Context, cl *client.Client, pipe procedures.ClickPipelineConfig, clockMs int64) error {
	v, err := msgpack.Marshal(&builtin.Click{Page: closingPage, Time: clockMs + time.Hour.Milliseconds()})
	if err != nil {
		return err
	}
	if _, err := cl.AppendBatch(ctx, pipe.Streams().Clicks, []client.StreamRecord{{Key: []byte(closingPage), Value: v}}); err != nil {
		return fmt.Errorf("demo: closing click: %w", err)
	}
	return nil
}

// lastWindowEnd returns the end of the latest window a producer sent a click for.
func lastWindowEnd(tally *clickTally, window time.Duration) int64 {
	var lastEnd int64
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for _, m := range []map[clickWindowKey]int64{tally.acked, tally.unknown} {
		for k := range m {
			lastEnd = max(lastEnd, k.start+window.Milliseconds())
		}
	}
	return lastEnd
}

// streamRecords counts the records of every partition of stream (none is trimmed or
// compacted in the demo).
func streamRecords(ctx context.Context, cl *client.Client, stream string) (int64, error) {
	d, err := cl.Streams().Describe(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("describe %s: %w", stream, err)
	}
	var n int64
	for _, p := range d.Partitions {
		n += p.Records
	}
	return n, nil
}

// waitView waits until the live view has received all n window results.
func waitView(ctx context.Context, view *resultView, n int64) error {
	for {
		view.mu.Lock()
		got, err := view.records, view.err
		view.mu.Unlock()
		if err != nil {
			return fmt.Errorf("demo: window results: %w", err)
		}
		if int64(got) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: the live view received %d of %d window results: %w", got, n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lateClicks reads the late stream and counts its clicks per window: all of them, and
// those the producers sent as stragglers.
func lateClicks(ctx context.Context, cl *client.Client, stream string, window time.Duration, tally *clickTally) (late, stragglers map[clickWindowKey]int64, err error) {
	d, err := cl.Streams().Describe(ctx, stream)
	if err != nil {
		return nil, nil, fmt.Errorf("describe %s: %w", stream, err)
	}
	size := window.Milliseconds()
	late, stragglers = map[clickWindowKey]int64{}, map[clickWindowKey]int64{}
	for _, p := range d.Partitions {
		for off := p.FirstOffset; off < p.NextOffset; {
			recs, next, err := cl.ReadStream(ctx, stream, int(p.Partition), off, 0)
			if err != nil {
				return nil, nil, fmt.Errorf("read %s: %w", stream, err)
			}
			for _, r := range recs {
				var c builtin.Click
				if err := msgpack.Unmarshal(r.Data, &c); err != nil {
					return nil, nil, fmt.Errorf("late click at offset %d: %w", r.Offset, err)
				}
				k := clickWindowKey{c.Page, c.Time - c.Time%size}
				late[k]++
				if tally.takeStraggler(c) {
					stragglers[k]++
				}
			}
			off = next
		}
	}
	return late, stragglers, nil
}
