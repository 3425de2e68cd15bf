package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures"
)

// pipelineStatus is what the processors' status (on the leader) says about the click
// pipeline, measured against a target watermark.
type pipelineStatus struct {
	partitions int    // partitions of the window operator
	past       int    // of them, those whose watermark is at or past the target
	slowest    int64  // the lowest watermark, valid if hasMark
	hasMark    bool   // every partition has a watermark
	lag        uint64 // records the pipeline's processors have not handled yet
	waiting    bool   // a processor waits for its input stream
	late       uint64 // late clicks so far, over the partitions
	dead       string // a processor that dead-lettered records, if any
}

// readPipelineStatus sums up st, the status of every processor, for pipe's processors.
func readPipelineStatus(st []client.ProcessorStatus, pipe procedures.ClickPipelineConfig, target int64) pipelineStatus {
	s := pipelineStatus{hasMark: true}
	marks := 0
	for _, p := range st {
		if !strings.HasPrefix(p.Processor, pipe.Prefix) {
			continue
		}
		if p.DeadLetters > 0 && s.dead == "" {
			s.dead = fmt.Sprintf("processor %s partition %d dead-lettered %d records", p.Processor, p.Partition, p.DeadLetters)
		}
		s.lag += p.Lag
		s.waiting = s.waiting || p.Waiting
		for _, w := range p.Windows {
			s.partitions++
			s.late += w.Late
			if !w.HasWatermark {
				s.hasMark = false
				continue
			}
			if marks++; marks == 1 || w.Watermark < s.slowest {
				s.slowest = w.Watermark
			}
			if w.Watermark >= target {
				s.past++
			}
		}
	}
	if s.partitions == 0 {
		s.hasMark = false
	}
	return s
}

// done reports whether the pipeline has handled every click and every partition's
// watermark reached the target.
func (s pipelineStatus) done() bool {
	return s.partitions > 0 && s.past == s.partitions && s.lag == 0 && !s.waiting
}

// watermark describes the slowest partition's watermark.
func (s pipelineStatus) watermark() string {
	if !s.hasMark {
		return "none yet"
	}
	return clockOf(s.slowest)
}

func clockOf(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05") }

// statusNow asks the leader for the processors' status, bounded by a second.
func statusNow(ctx context.Context, cl *client.Client, pipe procedures.ClickPipelineConfig, target int64) (pipelineStatus, error) {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := cl.Procedures().Processors(sctx, "")
	if err != nil {
		return pipelineStatus{}, err
	}
	return readPipelineStatus(st, pipe, target), nil
}

// liveLegend explains the live lines.
const liveLegend = "each second: clicks acknowledged per second and in all | the producers' clock (event time) and the slowest partition's watermark | window results received | late clicks so far"

// liveLine is the line a second of the run: counts a snapshot of the view, st the
// processors' status (nil if it could not be read).
func liveLine(rate float64, acked int64, clock string, st *pipelineStatus, counts viewCounts) string {
	wm, late := "?", "?"
	if st != nil {
		wm, late = st.watermark(), fmt.Sprint(st.late)
	}
	return fmt.Sprintf("%7.0f clicks/s %8d acked | clock %s, watermark %s | results %d: %d final, %d revisions | late %s",
		rate, acked, clock, wm, counts.records, counts.finals, counts.revisions, late)
}

// printLive writes a live line every second until ctx ends.
func printLive(ctx context.Context, out io.Writer, cl *client.Client, pipe procedures.ClickPipelineConfig, tally *clickTally, clock clickClock, view *resultView) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, lastAt := tally.ackedN.Load(), time.Now()
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-tick.C:
		}
		n := tally.ackedN.Load()
		rate := float64(n-last) / now.Sub(lastAt).Seconds()
		last, lastAt = n, now
		var stp *pipelineStatus
		if st, err := statusNow(ctx, cl, pipe, 0); err == nil {
			stp = &st
		}
		if ctx.Err() != nil {
			return // the run ended while asking: the next lines say what follows
		}
		fmt.Fprintln(out, liveLine(rate, n, clockOf(clock.now()), stp, view.counts()))
	}
}

// waitPipelineDone waits until, on the leader, the pipeline's processors have handled
// every click and every partition's watermark has reached closeAt, the close of the last
// window; it prints a line a second of how far it is.
// lastClick is when the producers stopped.
func waitPipelineDone(ctx context.Context, out io.Writer, cl *client.Client, pipe procedures.ClickPipelineConfig, closeAt int64, lastClick time.Time, view *resultView) (pipelineStatus, error) {
	start := time.Now()
	nextPrint := start.Add(time.Second)
	var st pipelineStatus
	why := "no status yet"
	for {
		s, err := statusNow(ctx, cl, pipe, closeAt)
		switch {
		case err != nil:
			why = err.Error()
		case s.dead != "":
			return s, fmt.Errorf("%w: %s", ErrCheckFailed, s.dead)
		case s.done():
			fmt.Fprintf(out, "  every partition's watermark reached %s after %s\n", clockOf(closeAt), time.Since(start).Round(time.Second))
			return s, nil
		default:
			st, why = s, waitingFor(s, closeAt)
		}
		if now := time.Now(); !now.Before(nextPrint) {
			c := view.counts()
			fmt.Fprintf(out, "  %3ds: last click %s ago; %s; windows: %d final, %d open\n", int(nextPrint.Sub(start).Seconds()),
				now.Sub(lastClick).Round(time.Second), why, c.finals, c.open)
			for !nextPrint.After(now) {
				nextPrint = nextPrint.Add(time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("demo: the pipeline did not finish: %s: %w", why, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitingFor says what the pipeline has still to do to reach closeAt.
func waitingFor(s pipelineStatus, closeAt int64) string {
	var parts []string
	if s.waiting {
		parts = append(parts, "a processor waits for its input stream")
	}
	if s.lag > 0 {
		parts = append(parts, fmt.Sprintf("%d clicks to handle", s.lag))
	}
	if !s.hasMark {
		parts = append(parts, "a partition has no watermark yet")
	} else if s.past < s.partitions {
		parts = append(parts, fmt.Sprintf("slowest watermark %s, %s to go; %d of %d partitions there", clockOf(s.slowest),
			(time.Duration(closeAt-s.slowest)*time.Millisecond).Round(time.Second), s.past, s.partitions))
	}
	return strings.Join(parts, "; ")
}
