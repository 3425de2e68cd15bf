package replica

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
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

// TestClickPipelineOutOfOrder: the built-in pipeline (1-minute windows, 5 s
// out-of-orderness, 10 s allowed lateness) counts a click that arrives after its window
// fired but within the lateness, as a new revision; sends one that arrives after the
// window closed to clicks.late; and counts an out-of-order click of an open window
// silently. Each click is in an entry of its own, one second of batch time apart, so
// the counter sees them in this order whatever partitions the users hash to.
func TestClickPipelineOutOfOrder(t *testing.T) {
	pc := procedures.DefaultClickPipeline
	var entries []refEntry
	for i, c := range []refClick{
		{"u1", "home", sec(10)}, // window [0, 60 s), watermark 5 s
		{"u2", "home", sec(70)}, // watermark 65 s: [0, 60 s) fires, revision 0, count 1
		{"u3", "home", sec(20)}, // within the lateness (65 < 60 + 10): revision 1, count 2
		{"u4", "home", sec(80)}, // watermark 75 s: [0, 60 s) closes, final revision 2
		{"u5", "home", sec(30)}, // [0, 60 s) closed: late
		{"u6", "home", sec(61)}, // out of order within [60 s, 120 s), not fired: no result
	} {
		entries = append(entries, refEntry{now: sec(100+float64(i)) * 1e6, clicks: []refClick{c}})
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
	wantLate := []builtin.Click{{User: "u5", Page: "home", Time: sec(30)}}
	if got := lateClicks(t, streamRecords(t, f, s.Late)); fmt.Sprint(got) != fmt.Sprint(wantLate) {
		t.Fatalf("late clicks %+v, want %+v", got, wantLate)
	}
}

// TestClickPipelineIdleAdvance: with no click after the first two, ticks alone fire and
// close their window as batch time passes: once no click has arrived for 10 s, the
// watermark is batch time − 5 s, so [0, 60 s) fires at batch time 65 s and closes at 75 s.
func TestClickPipelineIdleAdvance(t *testing.T) {
	pc := procedures.DefaultClickPipeline
	entries := []refEntry{
		{now: sec(10) * 1e6, clicks: []refClick{{"u1", "home", sec(10)}}},
		{now: sec(20) * 1e6, clicks: []refClick{{"u2", "home", sec(20)}}},
		{now: sec(21) * 1e6}, // delivers u2's click if it crossed partitions
	}
	ticks := []float64{30, 64, 66, 74, 76}
	for _, s := range ticks {
		entries = append(entries, refEntry{now: sec(s) * 1e6})
	}
	w := func(rev int, final bool) builtin.PageCount {
		return builtin.PageCount{Page: "home", Start: sec(0), End: sec(60), Count: 2, Revision: rev, Final: final}
	}
	wantAfter := map[float64][]builtin.PageCount{
		30: nil, 64: nil, 66: {w(0, false)}, 74: {w(0, false)}, 76: {w(0, false), w(1, true)},
	}
	s := pc.Streams()
	runClickEntries(t, pc, entries, func(i int, f *FSM) {
		if i < 3 {
			return
		}
		at := ticks[i-3]
		if got := pageCounts(t, streamRecords(t, f, s.Counts)); fmt.Sprint(got) != fmt.Sprint(wantAfter[at]) {
			t.Fatalf("after the tick at %v s: page counts %+v, want %+v", at, got, wantAfter[at])
		}
	})
}
