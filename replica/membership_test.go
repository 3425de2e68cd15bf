package replica

import (
	"context"
	"fmt"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"slices"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

func (c *testCluster) voters() []string {
	c.t.Helper()
	servers, err := c.leader().seq.Servers()
	if err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestJoinAndRemove: a new node joins a running cluster, receives the log, and ends with
// the same state; a removed voter leaves the configuration (DESIGN.md section 6).
func TestJoinAndRemove(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots})
		cl := c.dial(context.Background())
		for i := 0; i < 100; i++ {
			putKV(t, cl, fmt.Sprintf("k%d", i), "v")
		}
		i, err := c.AddNode(nil)
		if err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 30*time.Second, func() error {
			if v := c.voters(); len(v) != 4 {
				return fmt.Errorf("voters %v", v)
			}
			return nil
		})
		putKV(t, cl, "after-join", "v")
		c.waitConverged()
		if got := c.Nodes[i].Status(); got.Divergent != "" || got.AppliedIndex == 0 {
			t.Fatalf("joined node status %+v", got)
		}
		// Remove a follower through the admin request.
		victim := ""
		for _, n := range c.Nodes {
			if n != c.leader() {
				victim = n.ID()
				break
			}
		}
		resp := rawCall(t, c.leader().ClientAddr(), &wire.Request{Op: wire.OpRemove, Key: []byte(victim)})
		if err := resp.Err(); err != nil {
			t.Fatalf("remove %s: %v", victim, err)
		}
		if v := c.voters(); len(v) != 3 || slices.Contains(v, victim) {
			t.Fatalf("voters after removing %s: %v", victim, v)
		}
		putKV(t, cl, "after-remove", "v")
	})
}

// TestJoinRefusedForDifferentProcedures: a node whose procedure set or partition count
// differs from the cluster's is not added (DESIGN.md section 4).
func TestJoinRefusedForDifferentProcedures(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	cases := []wire.JoinArgs{
		{ID: "n9", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2", Partitions: 4, Procedures: nondetRegistry(0).Fingerprint()},
		{ID: "n9", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2", Partitions: 8, Procedures: c.leader().fsm.Fingerprint()},
	}
	for i, j := range cases {
		args, err := msgpack.Marshal(&j)
		if err != nil {
			t.Fatal(err)
		}
		resp := rawCall(t, c.leader().ClientAddr(), &wire.Request{Op: wire.OpJoin, Args: args})
		if resp.Code != wire.CodeBadArguments {
			t.Errorf("#%d: got %v, want CodeBadArguments", i, resp.Err())
		}
	}
	if v := c.voters(); len(v) != 3 {
		t.Fatalf("voters %v, want the original 3", v)
	}
}
