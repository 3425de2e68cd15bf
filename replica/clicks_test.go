package replica

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// clickBase is a Unix millisecond time on a minute boundary: the built-in pipeline's
// windows are [clickBase + k·60 s, clickBase + (k+1)·60 s).
const clickBase = 1_700_000_040_000

// sec is a time clickBase + s seconds, in milliseconds.
func sec(s float64) int64 { return clickBase + int64(s*1000) }

// runClickEntries applies the pipeline's log, one entry per ApplyBatch, calling after
// with each entry's index in entries once it is applied.
func runClickEntries(t *testing.T, pc procedures.ClickPipelineConfig, entries []refEntry, after func(i int, f *FSM)) *FSM {
	t.Helper()
	f := newPipelineFSM(t, propConfig(1<<20), pc)
	t.Cleanup(f.Close)
	for i, l := range entriesToLogs(pipelineEntries(propParts, pc, entries)) {
		f.ApplyBatch([]*raft.Log{l})
		if i > 0 && after != nil {
			after(i-1, f)
		}
	}
	if got, want := pipelineOutputs(t, f, pc), referenceOutputs(pc, propParts, 0, entries); got != want {
		t.Fatalf("outputs differ from the reference\n got: %s\nwant: %s", got, want)
	}
	return f
}

// userOn returns the n-th user name whose clicks the sequencer puts on input partition
// q of propParts.
func userOn(q, n int) string {
	for i := 0; ; i++ {
		u := fmt.Sprintf("u%d.%d", n, i)
		if partition.PartitionOf([]byte(u), propParts) == q {
			return u
		}
	}
}

// TestClickPipelineOutOfOrder: the built-in pipeline (1-minute windows, 5 s
// out-of-orderness, 10 s allowed lateness) counts a click that arrives after its window
// fired but within the lateness, as a new revision; sends one that arrives after the
// window closed to clicks.late; and counts an out-of-order click of an open window
// silently. All the users are on one input partition and the entries 20 s of batch time
// apart, so the other input partitions are idle and the watermark is this partition's;
// each click is judged against the exchange watermark of the entry before it.
func TestClickPipelineOutOfOrder(t *testing.T) {
	pc := procedures.DefaultClickPipeline
	var entries []refEntry
	for i, c := range []refClick{
		{userOn(0, 1), "home", sec(10)}, // window [0, 60 s), watermark 5 s
		{userOn(0, 2), "home", sec(70)}, // watermark 65 s after this entry
		{userOn(0, 3), "home", sec(20)}, // [0, 60 s) fires (revision 0, count 1); within the lateness (65 < 60 + 10): revision 1, count 2
		{userOn(0, 4), "home", sec(80)}, // watermark 75 s after this entry
		{userOn(0, 5), "home", sec(30)}, // [0, 60 s) closes (final revision 2), then this click is late
		{userOn(0, 6), "home", sec(61)}, // out of order within [60 s, 120 s), not fired: no result
	} {
		entries = append(entries, refEntry{now: sec(100+20*float64(i)) * 1e6, clicks: []refClick{c}})
	}
	f := runClickEntries(t, pc, entries, nil)
	s := pc.Streams()
	w := func(rev int, n int64, final bool) builtin.PageCount {
		return builtin.PageCount{Page: "home", Start: sec(0), End: sec(60), Count: n, Revision: rev, Final: final}
	}
	want := []builtin.PageCount{w(0, 1, false), w(1, 2, false), w(2, 2, true)}
	if got := pageCounts(t, streamRecords(t, f, s.Counts)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("page counts %+v, want %+v", got, want)
	}
	wantLate := []builtin.Click{{User: userOn(0, 5), Page: "home", Time: sec(30)}}
	if got := lateClicks(t, streamRecords(t, f, s.Late)); fmt.Sprint(got) != fmt.Sprint(wantLate) {
		t.Fatalf("late clicks %+v, want %+v", got, wantLate)
	}
}

// TestClickPipelineIdleUpstream: an input partition with no click for the idle timeout
// (10 s) stops holding the watermark back, and when every input partition is idle the
// watermark is the highest of theirs, never batch time. Two users on two input
// partitions click at 10 s; the first clicks again at 70 s (its watermark 65 s), the
// second stops. [0, 60 s) fires only once the second partition is idle; then, with both
// idle, hours of batch time fire and close nothing more: the watermark stays 65 s. (The
// old rule gave each counter the highest click time it saw − 5 s, so [0, 60 s) fired at
// once whatever the second partition held, and batch time − 5 s once all were idle.)
func TestClickPipelineIdleUpstream(t *testing.T) {
	pc := procedures.DefaultClickPipeline
	a, b := userOn(0, 1), userOn(1, 1)
	entries := []refEntry{
		{now: sec(10) * 1e6, clicks: []refClick{{a, "home", sec(10)}, {b, "home", sec(10)}}},
		{now: sec(12) * 1e6, clicks: []refClick{{a, "home", sec(70)}}},
	}
	ticks := []float64{13, 19, 21, 22, 23, 3600, 3601}
	for _, s := range ticks {
		entries = append(entries, refEntry{now: sec(s) * 1e6})
	}
	fired := builtin.PageCount{Page: "home", Start: sec(0), End: sec(60), Count: 2}
	wantAfter := map[float64][]builtin.PageCount{
		13: nil, 19: nil, // b's partition (watermark 5 s) holds it back
		21: nil,                                                // b idle since 20 s: the exchange watermark is 65 s from this entry's end
		22: {fired}, 23: {fired}, 3600: {fired}, 3601: {fired}, // both idle: 65 s, not batch time
	}
	s := pc.Streams()
	runClickEntries(t, pc, entries, func(i int, f *FSM) {
		if i < 2 {
			return
		}
		at := ticks[i-2]
		if got := pageCounts(t, streamRecords(t, f, s.Counts)); fmt.Sprint(got) != fmt.Sprint(wantAfter[at]) {
			t.Fatalf("after the tick at %v s: page counts %+v, want %+v", at, got, wantAfter[at])
		}
	})
}

// TestClickPipelineBackfillPause: week-old clicks backfilled with a pause of 11 s of
// batch time (longer than the idle timeout) between two halves lose nothing to "late":
// the old idle rule moved the watermark to batch time − 5 s during the pause and sent
// 5 of 5 clicks of the second half to clicks.late (issue 20, item 3).
func TestClickPipelineBackfillPause(t *testing.T) {
	pc := procedures.DefaultClickPipeline
	const week = 7 * 24 * 3600 * 1000
	now := sec(0) + week
	var entries []refEntry
	for i := range 10 {
		at := now + int64(i)*100
		if i >= 5 {
			at += 11_000 // the pause
		}
		entries = append(entries, refEntry{now: at * 1e6, clicks: []refClick{{userOn(i%propParts, i), "home", sec(float64(i))}}})
	}
	entries = append(entries, refEntry{now: (now + 12_000) * 1e6}, refEntry{now: (now + 13_000) * 1e6})
	f := runClickEntries(t, pc, entries, nil)
	if late := lateClicks(t, streamRecords(t, f, pc.Streams().Late)); len(late) != 0 {
		t.Fatalf("%d of 10 backfilled clicks late: %+v", len(late), late)
	}
}
