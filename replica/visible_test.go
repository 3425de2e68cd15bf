package replica

import (
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// TestVisibleCoversTheApplyInProgress: while an entry's inputs run — when their effects
// may already be read — Visible is at or after that entry's index; between applies it
// equals Applied, and a restored snapshot makes it the snapshot's index. Subscriptions
// rely on it to move between replicas without a gap.
func TestVisibleCoversTheApplyInProgress(t *testing.T) {
	var f *FSM
	var seen atomic.Uint64 // Visible as the probe saw it, during the apply
	reg := procedures.New()
	procedures.MustRegister(reg, "t.probe", func(tx *partition.Tx, _ struct{}) ([]byte, error) {
		seen.Store(f.Visible()) // not part of any result: determinism is unaffected
		return nil, nil
	})
	f, err := New(Config{Partitions: 2}, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Visible() != 0 {
		t.Fatalf("got Visible %d before any apply, want 0", f.Visible())
	}
	init := &batch.Entry{Items: []batch.Item{{Kind: batch.KindInitCluster,
		Args: mustMsgpack(t, batch.ClusterInfo{ClusterID: "c", Partitions: 2, Procedures: f.Fingerprint()})}}}
	f.ApplyBatch([]*raft.Log{commandLog(1, init)})
	probe := func(index uint64) *raft.Log {
		return commandLog(index, &batch.Entry{Items: []batch.Item{{Kind: batch.KindInvoke, Procedure: "t.probe",
			Key: []byte("k"), Partition: int32(partition.PartitionOf([]byte("k"), 2))}}})
	}
	for i, logs := range [][]*raft.Log{{probe(2)}, {probe(3), probe(4), probe(5)}, {probe(9)}} {
		last := logs[len(logs)-1].Index
		f.ApplyBatch(logs)
		if got := seen.Load(); got < logs[0].Index || got != last {
			t.Errorf("#%d: got Visible %d while applying entries %d to %d, want %d", i, got, logs[0].Index, last, last)
		}
		if f.Visible() != f.Applied() || f.Applied() != last {
			t.Errorf("#%d: got Visible %d, Applied %d after the apply, want both %d", i, f.Visible(), f.Applied(), last)
		}
	}
	g := snapshotRoundTrip(t, f, Config{Partitions: 2})
	defer g.Close()
	if g.Visible() != 9 || g.Applied() != 9 {
		t.Errorf("restored: got Visible %d, Applied %d, want 9", g.Visible(), g.Applied())
	}
}
