package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
)

// BenchmarkApplySessionInvokes measures applying session requests, the hot path the result
// cache is on: 64 sessions pipelining requests, 1024 an ApplyBatch call, acknowledging as
// they go. With several entries a call, every session has requests in every entry, so the
// FSM runs each entry separately (the result-cache bound is checked against earlier
// entries' results): the worst case of that rule.
func BenchmarkApplySessionInvokes(b *testing.B) {
	for _, entries := range []int{1, 8} {
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) { benchApplySessions(b, entries) })
	}
}

func benchApplySessions(b *testing.B, entries int) {
	const sessions, perCall = 64, 1024
	perEntry := perCall / entries / sessions // requests of one session in one entry
	f := newTestFSM(b, Config{Partitions: propParts})
	defer f.Close()
	open := batch.Entry{Time: 1e12}
	for range sessions {
		open.Items = append(open.Items, batch.Item{Kind: batch.KindOpenSession})
	}
	f.ApplyBatch([]*raft.Log{commandLog(1, &open)})
	next := make([]uint64, sessions+1)
	es := make([]batch.Entry, entries)
	for i := range es {
		for s := 1; s <= sessions; s++ {
			for range perEntry {
				es[i].Items = append(es[i].Items, stepItem(propParts, fmt.Sprint(s), uint64(s), 0, 0, 8, false))
			}
		}
	}
	logs := make([]*raft.Log, entries)
	index := uint64(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for k := range es {
			e := &es[k]
			e.Time = 1e12 + int64(i)*int64(time.Millisecond)
			for s := 1; s <= sessions; s++ {
				for r := range perEntry {
					next[s]++
					it := &e.Items[(s-1)*perEntry+r]
					it.Seq, it.AckThrough = next[s], next[s]-min(next[s], 32)
				}
			}
			index++
			logs[k] = commandLog(index, e)
		}
		f.ApplyBatch(logs)
	}
}
