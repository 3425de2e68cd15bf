package replica

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"pgregory.net/rapid"
)

// checkClickConservation checks what holds for every log of the click pipeline, however
// entries are bounded, once every click is handled and the watermark has passed every
// window's end + lateness (all but withDrain's closing click's, left out): each window's
// results are revisions 0, 1, … with counts that never fall, the last one Final and no
// other; every late click is an input click; and for every (page, window) the final
// count plus the late clicks equals the input clicks.
func checkClickConservation(t fataler, pc procedures.ClickPipelineConfig, entries []refEntry, counts, late [][]refRecord) {
	t.Helper()
	size := pc.Window.Milliseconds()
	type win struct {
		page  string
		start int64
	}
	in := map[win]int64{}
	inClicks := map[builtin.Click]int{}
	for _, e := range entries {
		for _, c := range e.clicks {
			if c.page == drainPage {
				continue
			}
			in[win{c.page, c.t - c.t%size}]++
			inClicks[builtin.Click{User: c.user, Page: c.page, Time: c.t}]++
		}
	}
	out := map[win]int64{}
	last := map[win]builtin.PageCount{}
	for _, r := range pageCounts(t, counts) {
		if r.Page == drainPage {
			continue
		}
		w := win{r.Page, r.Start}
		prev, seen := last[w]
		switch {
		case r.End != r.Start+size || r.Start%size != 0:
			t.Fatalf("result of a bad window: %+v", r)
		case seen && (prev.Final || r.Revision != prev.Revision+1 || r.Count < prev.Count):
			t.Fatalf("result %+v after %+v", r, prev)
		case !seen && r.Revision != 0:
			t.Fatalf("first result %+v not revision 0", r)
		}
		last[w] = r
		if r.Final {
			out[w] += r.Count
		}
	}
	for w, r := range last {
		if !r.Final {
			t.Fatalf("window %+v never closed: last result %+v", w, r)
		}
	}
	for _, c := range lateClicks(t, late) {
		if inClicks[c] == 0 {
			t.Fatalf("late click %+v is not an input click (or is late twice)", c)
		}
		inClicks[c]--
		out[win{c.Page, c.Time - c.Time%size}]++
	}
	if fmt.Sprint(out) != fmt.Sprint(in) {
		t.Fatalf("final counts + late clicks per (page, window) %v, input clicks %v", out, in)
	}
}

// TestClickPipelineOnePartition: on one partition the outputs of any log equal the
// reference and keep the invariants of checkClickConservation, for the same clicks split
// into any entries at any batch times. (They used to be the same bytes for every split:
// the counter's watermark followed each click. Now each click is judged against the
// exchange watermark of the entry before it — the same value on every partition, so
// lateness does not depend on key placement — so entry boundaries matter, as they do on
// more partitions.)
func TestClickPipelineOnePartition(t *testing.T) {
	pc := procedures.ClickPipelineConfig{Prefix: "one.", Window: procedures.DefaultClickPipeline.Window,
		OutOfOrderness: procedures.DefaultClickPipeline.OutOfOrderness, AllowedLateness: procedures.DefaultClickPipeline.AllowedLateness}
	rapid.Check(t, func(t *rapid.T) {
		budget := rapid.IntRange(1, 6).Draw(t, "budget")
		entries := genClicks(t)
		for i, es := range [][]refEntry{entries, resplit(t, entries)} {
			es = withDrain(es, budget)
			cfg := clickConfig(true, budget)
			cfg.Partitions = 1
			f := newPipelineFSM(t, cfg, pc)
			for _, l := range entriesToLogs(pipelineEntries(1, pc, es)) {
				f.ApplyBatch([]*raft.Log{l})
			}
			got := pipelineOutputs(t, f, pc)
			checkClickConservation(t, pc, es, streamRecords(t, f, pc.Streams().Counts), streamRecords(t, f, pc.Streams().Late))
			f.Close()
			if ref := referenceOutputs(pc, 1, budget, es); got != ref {
				t.Fatalf("log %d: outputs differ from the reference\n got: %s\nwant: %s", i, got, ref)
			}
		}
	})
}
