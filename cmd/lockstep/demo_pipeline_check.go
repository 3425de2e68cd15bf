package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// pipelineReport waits until the pipeline has handled every click and closed every
// window, then checks exactly-once: for each page's window, its final count plus its late
// clicks equals the clicks the producers were told were acknowledged (up to those whose
// outcome stayed unknown), the input stream holds each acknowledged click once, and every
// replica holds the same state. It returns an error (a non-zero exit) on any difference.
func pipelineReport(ctx context.Context, out io.Writer, cluster *node.LocalCluster, cl *client.Client,
	pipe procedures.ClickPipelineConfig, tally *clickTally, view *resultView, sink *demoSink) error {
	streams := pipe.Streams()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fmt.Fprintln(out, "waiting for the watermark to pass the last windows (a closing click an hour ahead moves it; batch time alone does not)...")
	if err := appendClosingClick(cctx, cl, pipe); err != nil {
		return err
	}
	if err := waitPipelineDone(cctx, cl, pipe, tally); err != nil {
		return err
	}
	hashes, convErr := cluster.WaitConverged(cctx)
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
	late, err := lateClicks(cctx, cl, streams.Late, pipe.Window)
	if err != nil {
		return err
	}
	finals, err := view.snapshot()
	if err != nil {
		return err
	}

	var problems []string
	acked, unknown := tally.ackedN.Load(), tally.unknwnN.Load()
	if input < acked || input > acked+unknown {
		problems = append(problems, fmt.Sprintf("input stream holds %d clicks, producers had %d acknowledged and %d unknown", input, acked, unknown))
	}
	minutes, windowProblems := compareWindows(tally, finals, late)
	problems = append(problems, windowProblems...)
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
	var counted, lateN int64
	for _, m := range minutes {
		counted += m.clicks
		lateN += m.late
	}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "window (UTC)\tpages\tclicks\tlate\trevisions")
	starts := make([]int64, 0, len(minutes))
	for s := range minutes {
		starts = append(starts, s)
	}
	slices.Sort(starts)
	for _, s := range starts {
		m := minutes[s]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", minuteOf(s), m.pages, m.clicks, m.late, m.revisions)
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "clicks acknowledged\t%d\n", acked)
	fmt.Fprintf(tw, "outcome unknown to the producers\t%d\n", unknown)
	fmt.Fprintf(tw, "clicks in the input stream\t%d\n", input)
	fmt.Fprintf(tw, "clicks counted in windows\t%d (%d of them late)\n", counted, lateN)
	fmt.Fprintf(tw, "window results received live\t%d\n", results)
	if convErr == nil {
		fmt.Fprintf(tw, "state hashes, equal on every replica\t%x\n", hashes)
	}
	tw.Flush()
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
		return fmt.Errorf("demo: exactly-once check FAILED:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Fprintln(out, "exactly-once check passed: every acknowledged click counted once in its window (on time or late), all replicas equal")
	return nil
}

// minuteTotals sums one minute's windows over the pages.
type minuteTotals struct{ pages, clicks, late, revisions int64 }

// compareWindows compares each page window's final count plus late clicks with what the
// producers were told: the count must lie in [acknowledged, acknowledged + unknown]. It
// returns the totals per window start and the differences found.
func compareWindows(tally *clickTally, finals map[clickWindowKey]builtin.PageCount, late map[clickWindowKey]int64) (map[int64]*minuteTotals, []string) {
	keys := map[clickWindowKey]bool{}
	for _, m := range []map[clickWindowKey]int64{tally.acked, tally.unknown, late} {
		for k := range m {
			keys[k] = true
		}
	}
	for k := range finals {
		keys[k] = true
	}
	var problems []string
	minutes := map[int64]*minuteTotals{}
	for k := range keys {
		pc, ok := finals[k]
		if ok && !pc.Final {
			problems = append(problems, fmt.Sprintf("window %s %s never closed: %+v", k.page, minuteOf(k.start), pc))
		}
		got := pc.Count + late[k]
		if want := tally.acked[k]; got < want || got > want+tally.unknown[k] {
			problems = append(problems, fmt.Sprintf("window %s %s: counted %d (%d on time + %d late), producers had %d acknowledged, %d unknown",
				k.page, minuteOf(k.start), got, pc.Count, late[k], want, tally.unknown[k]))
		}
		m := minutes[k.start]
		if m == nil {
			m = &minuteTotals{}
			minutes[k.start] = m
		}
		m.pages++
		m.clicks += got
		m.late += late[k]
		m.revisions += int64(pc.Revision)
	}
	slices.Sort(problems)
	return minutes, problems
}

func minuteOf(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }

// waitPipelineDone waits until, on the leader, both processors have handled every record
// and every partition's watermark has passed the last window's end plus the lateness.
func waitPipelineDone(ctx context.Context, cl *client.Client, pipe procedures.ClickPipelineConfig, tally *clickTally) error {
	var lastEnd int64
	tally.mu.Lock()
	for _, m := range []map[clickWindowKey]int64{tally.acked, tally.unknown} {
		for k := range m {
			lastEnd = max(lastEnd, k.start+pipe.Window.Milliseconds())
		}
	}
	tally.mu.Unlock()
	closeAt := lastEnd + pipe.AllowedLateness.Milliseconds()
	why := "no status yet"
	for {
		st, err := cl.Processors(ctx, "")
		if err == nil {
			why = pipelineBusy(st, pipe, closeAt)
			if why == "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: the pipeline did not finish: %s: %w", why, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// pipelineBusy says what the pipeline still has to do, or "" when it is done.
func pipelineBusy(st []client.ProcessorStatus, pipe procedures.ClickPipelineConfig, closeAt int64) string {
	for _, p := range st {
		if !strings.HasPrefix(p.Processor, pipe.Prefix) {
			continue
		}
		if p.DeadLetters > 0 {
			return fmt.Sprintf("processor %s partition %d dead-lettered %d records", p.Processor, p.Partition, p.DeadLetters)
		}
		if p.Lag > 0 || p.Waiting {
			return fmt.Sprintf("processor %s partition %d has %d records to handle", p.Processor, p.Partition, p.Lag)
		}
		for _, w := range p.Windows {
			if !w.HasWatermark || w.Watermark < closeAt {
				return fmt.Sprintf("partition %d watermark before %s", p.Partition, time.UnixMilli(closeAt).UTC().Format("15:04:05"))
			}
		}
	}
	return ""
}

// closingPage is the page of the closing click, which no producer uses.
const closingPage = "demo.closing"

// appendClosingClick appends one click an hour of event time ahead of every producer's:
// once the other input partitions are idle, the watermark passes every window but its
// own (docs/streams.md, "Watermarks across the exchange": an idle partition stops holding
// the watermark back, and batch time never moves it, so an input that stops needs a later
// record to close its last windows). Its window never fires, so no result counts it.
func appendClosingClick(ctx context.Context, cl *client.Client, pipe procedures.ClickPipelineConfig) error {
	v, err := msgpack.Marshal(&builtin.Click{Page: closingPage, Time: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		return err
	}
	if _, err := cl.AppendBatch(ctx, pipe.Streams().Clicks, []client.StreamRecord{{Key: "demo.closing", Value: v}}); err != nil {
		return fmt.Errorf("demo: closing click: %w", err)
	}
	return nil
}

// streamRecords counts the records of every partition of stream (none is trimmed or
// compacted in the demo).
func streamRecords(ctx context.Context, cl *client.Client, stream string) (int64, error) {
	d, err := cl.DescribeStream(ctx, stream)
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

// lateClicks reads the late stream and counts its clicks per window.
func lateClicks(ctx context.Context, cl *client.Client, stream string, window time.Duration) (map[clickWindowKey]int64, error) {
	d, err := cl.DescribeStream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", stream, err)
	}
	size := window.Milliseconds()
	late := map[clickWindowKey]int64{}
	for _, p := range d.Partitions {
		for off := p.FirstOffset; off < p.NextOffset; {
			recs, next, err := cl.ReadStream(ctx, stream, int(p.Partition), off, 0)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", stream, err)
			}
			for _, r := range recs {
				var c builtin.Click
				if err := msgpack.Unmarshal(r.Data, &c); err != nil {
					return nil, fmt.Errorf("late click at offset %d: %w", r.Offset, err)
				}
				late[clickWindowKey{c.Page, c.Time - c.Time%size}]++
			}
			off = next
		}
	}
	return late, nil
}
