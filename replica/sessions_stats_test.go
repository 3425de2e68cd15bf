package replica

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
)

// TestSessionStats: the stats describe the session table at the latest hash check, and
// are the same on replicas that applied the same log in different groupings (DESIGN.md
// section 5: the session table is a pure function of the log).
func TestSessionStats(t *testing.T) {
	cfg := sessionTestConfig()
	const pad = 30 // 40 bytes a result
	var logs []*raft.Log
	index := uint64(2)
	add := func(items ...batch.Item) {
		logs = append(logs, commandLog(index, &batch.Entry{Time: 1e12 + int64(index), Items: items}))
		index++
	}
	// Session 1 caches seqs 1..3, then acknowledges 1 and 2 and caches 4; session 2
	// caches one result; then a hash check.
	add(stepItem(propParts, "a", 1, 1, 0, pad, false), stepItem(propParts, "b", 1, 2, 0, pad, false), stepItem(propParts, "c", 1, 3, 0, pad, false))
	add(stepItem(propParts, "a", 1, 4, 2, pad, false), stepItem(propParts, "a", 2, 1, 0, pad, false))
	add(batch.Item{Kind: batch.KindHashCheck})
	want := SessionStats{Index: 4, Sessions: 2, Results: 3, ResultBytes: 120, MaxSessionResults: 2}
	for i, split := range [][]int{{1, 1, 1}, {3}, {2, 1}} {
		f := newTestFSM(t, cfg)
		defer f.Close()
		openSessions(t, f, 1, 2)
		if got := f.SessionStats(); got != (SessionStats{}) {
			t.Fatalf("#%d: before any hash check got %+v, want zero", i, got)
		}
		rest := logs
		for _, n := range split {
			f.ApplyBatch(rest[:n])
			rest = rest[n:]
		}
		if got := f.SessionStats(); got != want {
			t.Errorf("#%d: got %+v, want %+v", i, got, want)
		}
	}
}
