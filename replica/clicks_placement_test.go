package replica

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"pgregory.net/rapid"
)

// placedPage returns a name for page that hashes to counter partition q of propParts:
// page itself with a suffix, so that a placement is a renaming of the pages.
func placedPage(page string, q int) string {
	for i := 0; ; i++ {
		p := fmt.Sprintf("%s~%d", page, i)
		if partition.PartitionOf([]byte(p), propParts) == q {
			return p
		}
	}
}

// placedOutcome is what must not depend on placement: every (page, window)'s final
// count and every late click, with the pages named back.
func placedOutcome(t fataler, f *FSM, pc procedures.ClickPipelineConfig, unplace map[string]string) string {
	var lines []string
	for _, r := range pageCounts(t, streamRecords(t, f, pc.Streams().Counts)) {
		if r.Final && r.Page != drainPage {
			lines = append(lines, fmt.Sprintf("final %s@%d=%d", unplace[r.Page], r.Start, r.Count))
		}
	}
	for _, c := range lateClicks(t, streamRecords(t, f, pc.Streams().Late)) {
		lines = append(lines, fmt.Sprintf("late %s %s@%d", c.User, unplace[c.Page], c.Time))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestClickLatenessIndependentOfPlacement: the same clicks, with the pages placed on the
// counter partitions in two drawn ways (a renaming of the pages), give the same final
// counts and the same late clicks. The watermark crosses the exchange as one value for
// every partition (DESIGN.md section 5, "Time"); when each counter took the highest click
// time it saw − the out-of-orderness, whether a click was late depended on which pages
// shared its counter's partition (issue 20, item 2: two in-order producers 40 s apart
// gave 1 late click or none by placement alone).
func TestClickLatenessIndependentOfPlacement(t *testing.T) {
	pc := procedures.DefaultClickPipeline
	rapid.Check(t, func(t *rapid.T) {
		budget := rapid.IntRange(1, 6).Draw(t, "budget")
		entries := genClicks(t)
		if rapid.Bool().Draw(t, "two producers") {
			entries = twoProducers(t)
		}
		var want string
		for k := range 2 {
			place, unplace := map[string]string{}, map[string]string{}
			for _, page := range clickPages {
				q := rapid.IntRange(0, propParts-1).Draw(t, fmt.Sprintf("placement %d of %s", k, page))
				place[page] = placedPage(page, q)
				unplace[place[page]] = page
			}
			var es []refEntry
			for _, e := range entries {
				pe := refEntry{now: e.now}
				for _, c := range e.clicks {
					c.page = place[c.page]
					pe.clicks = append(pe.clicks, c)
				}
				es = append(es, pe)
			}
			es = withDrain(es, budget)
			f := newPipelineFSM(t, clickConfig(rapid.Bool().Draw(t, "sequential"), budget), pc)
			for _, l := range entriesToLogs(pipelineEntries(propParts, pc, es)) {
				f.ApplyBatch([]*raft.Log{l})
			}
			got := placedOutcome(t, f, pc, unplace)
			f.Close()
			if k == 0 {
				want = got
			} else if got != want {
				t.Fatalf("other placement, other outcome\n got: %s\nwant: %s", got, want)
			}
		}
	})
}

// twoProducers draws the review's case: two in-order producers on two input partitions,
// one 40 s of event time behind the other, clicking the same pages.
func twoProducers(t *rapid.T) []refEntry {
	ahead, behind := userOn(0, 1), userOn(1, 1)
	now := sec(100) * 1e6
	var out []refEntry
	for i := range rapid.IntRange(1, 20).Draw(t, "steps") {
		now += int64(rapid.IntRange(100, 3000).Draw(t, "step ms")) * 1e6
		at := sec(100) + int64(i)*1000
		out = append(out, refEntry{now: now, clicks: []refClick{
			{ahead, rapid.SampledFrom(clickPages).Draw(t, "page"), at},
			{behind, rapid.SampledFrom(clickPages).Draw(t, "page"), at - 40_000},
		}})
	}
	return out
}
