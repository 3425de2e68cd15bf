package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/replica"
)

// TestSessionTablesAgreeAfterFollowerRestart reproduces issue 7: a follower that restarts
// applies what it missed in larger ApplyBatch groups than the leader did, which left it
// with results its client had acknowledged and a session table unlike its peers'. After
// the restart every replica must record equal hashes — the partitions' and the meta hash
// of the session table — at every hash check they share, and none may be divergent
// (DESIGN.md section 5: the session table is a pure function of the log; invariant 6).
func TestSessionTablesAgreeAfterFollowerRestart(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots})
		l := c.waitLeader()
		cl := c.dial(context.Background())
		for i := 0; i < 20; i++ {
			putKV(t, cl, fmt.Sprintf("before-%d", i), "v")
		}
		c.waitConverged()
		victim := slices.IndexFunc(c.Nodes, func(n *Node) bool { return n != l })
		c.kill(victim)
		for i := 0; i < 150; i++ {
			putKV(t, cl, fmt.Sprintf("during-%d", i), "w")
		}
		if snapshots {
			if err := l.seq.Snapshot(); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
		}
		c.restart(victim)
		for i := 0; i < 50; i++ {
			putKV(t, cl, fmt.Sprintf("after-%d", i), "x")
		}
		c.waitConverged()
		applied := c.Nodes[victim].fsm.Applied()

		// Wait for a hash check past the last put that every replica recorded: the leader
		// adds one when the cluster goes quiet.
		var shared []uint64
		testutil.WaitFor(t, 20*time.Second, func() error {
			shared = sharedHashChecks(c)
			if len(shared) == 0 || shared[len(shared)-1] < applied {
				return fmt.Errorf("no hash check at or after index %d on every replica yet (shared %v)", applied, shared)
			}
			return nil
		})
		ref := recordsByIndex(c.Nodes[victim])
		for i, n := range c.Nodes {
			recs := recordsByIndex(n)
			for _, idx := range shared {
				got, want := recs[idx], ref[idx]
				if got.Meta == 0 || !slices.Equal(got.Hashes, want.Hashes) || got.Meta != want.Meta {
					t.Errorf("#%d: node %s at index %d recorded %x meta %x; restarted node %s recorded %x meta %x",
						i, n.cfg.ID, idx, got.Hashes, got.Meta, c.Nodes[victim].cfg.ID, want.Hashes, want.Meta)
					break // the first difference tells
				}
			}
			if err := n.fsm.Divergent(); err != nil {
				t.Errorf("#%d: node %s divergent: %v", i, n.cfg.ID, err)
			}
		}
		// The nodes' own comparison agrees.
		for i, n := range c.Nodes {
			var peers [][]replica.HashRecord
			for _, p := range c.Nodes {
				if p != n {
					peers = append(peers, p.fsm.HashRecords())
				}
			}
			if err := n.fsm.CompareHashes(peers); err != nil {
				t.Errorf("#%d: node %s: %v", i, n.cfg.ID, err)
			}
		}
	})
}

// sharedHashChecks returns the hash-check indexes every running node has recorded, in
// ascending order.
func sharedHashChecks(c *testCluster) []uint64 {
	var shared []uint64
	for i, n := range c.Nodes {
		if n == nil {
			continue
		}
		var idx []uint64
		for _, r := range n.fsm.HashRecords() {
			idx = append(idx, r.Index)
		}
		if i == 0 {
			shared = idx
			continue
		}
		shared = slices.DeleteFunc(shared, func(x uint64) bool { return !slices.Contains(idx, x) })
	}
	return shared
}

func recordsByIndex(n *Node) map[uint64]replica.HashRecord {
	out := map[uint64]replica.HashRecord{}
	for _, r := range n.fsm.HashRecords() {
		out[r.Index] = r
	}
	return out
}
