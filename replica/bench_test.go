package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
)

// BenchmarkApplySessionInvokes measures applying entries of session requests, the hot path
// the result cache is on: 64 sessions pipelining 16 requests an entry each, acknowledging
// as they go.
func BenchmarkApplySessionInvokes(b *testing.B) {
	const sessions, perEntry = 64, 16
	f := newTestFSM(b, Config{Partitions: propParts})
	defer f.Close()
	open := batch.Entry{Time: 1e12}
	for range sessions {
		open.Items = append(open.Items, batch.Item{Kind: batch.KindOpenSession})
	}
	f.ApplyBatch([]*raft.Log{commandLog(1, &open)})
	next := make([]uint64, sessions+1)
	var e batch.Entry
	for s := 1; s <= sessions; s++ {
		for range perEntry {
			e.Items = append(e.Items, stepItem(propParts, fmt.Sprint(s), uint64(s), 0, 0, 8, false))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e.Time = 1e12 + int64(i)*int64(time.Millisecond)
		for s := 1; s <= sessions; s++ {
			for k := range perEntry {
				next[s]++
				it := &e.Items[(s-1)*perEntry+k]
				it.Seq, it.AckThrough = next[s], next[s]-min(next[s], 32)
			}
		}
		f.ApplyBatch([]*raft.Log{commandLog(uint64(i)+2, &e)})
	}
}
