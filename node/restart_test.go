package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// bothSnapshotModes runs f with Raft snapshots off and with a small threshold: snapshots
// only bound the log, so every behaviour must be the same either way (DESIGN.md section 6).
func bothSnapshotModes(t *testing.T, f func(t *testing.T, snapshots bool)) {
	for _, snap := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshots=%t", snap), func(t *testing.T) { f(t, snap) })
	}
}

func putKV(t *testing.T, cl *client.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.KVPut(ctx, []byte(key), []byte(value)); err != nil {
		t.Fatalf("kv.put %s: %v", key, err)
	}
}

// TestRestartReplaysAndCatchesUp: a node stopped while the cluster moves on replays its
// durable log on restart, catches up, and ends with equal hashes (DESIGN.md section 6),
// with each log store.
func TestRestartReplaysAndCatchesUp(t *testing.T) {
	for _, store := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run("log-store="+store, func(t *testing.T) { testRestartReplaysAndCatchesUp(t, store) })
	}
}

func testRestartReplaysAndCatchesUp(t *testing.T, store string) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots, logStore: store})
		l := c.waitLeader()
		cl := c.dial(context.Background())
		for i := 0; i < 50; i++ {
			putKV(t, cl, fmt.Sprintf("before-%d", i), "v")
		}
		c.waitConverged()
		victim := 0
		for i, n := range c.Nodes {
			if n != l {
				victim = i
				break
			}
		}
		c.kill(victim)
		for i := 0; i < 200; i++ {
			putKV(t, cl, fmt.Sprintf("after-%d", i), "w")
		}
		if snapshots {
			if err := l.seq.Snapshot(); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
		}
		c.restart(victim)
		hashes := c.waitConverged()
		if got := c.Nodes[victim].fsm.Engine().Hashes(); fmt.Sprint(got) != fmt.Sprint(hashes) {
			t.Fatalf("restarted node hashes %x, want %x", got, hashes)
		}
		// The restarted node also reads its replayed state locally.
		rows := 0
		for _, p := range c.Nodes[victim].fsm.Engine().Partitions() {
			rows += p.Rows("kv")
		}
		if rows != 250 {
			t.Fatalf("restarted node has %d kv rows, want 250", rows)
		}
	})
}
