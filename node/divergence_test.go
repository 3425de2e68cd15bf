package node

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// nondetRegistry returns the built-ins plus "test.nondet", which writes a value that
// depends on the node it runs on: the one kind of bug DESIGN.md invariant 6 must catch.
func nondetRegistry(node int) *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegister(r, "test.nondet", func(tx *partition.Tx, _ struct{}) (bool, error) {
		return true, tx.Put("nondet", tx.Key(), []byte(fmt.Sprintf("node-%d", node)))
	})
	return r
}

// TestDivergentReplicaStopsServing: a replica whose state differs from its peers' at a
// hash check marks itself divergent, reports it in its status and refuses clients, while
// the majority goes on (DESIGN.md invariant 6).
func TestDivergentReplicaStopsServing(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots, registry: func(i int) *procedures.Registry {
			if i == 2 {
				return nondetRegistry(2)
			}
			return nondetRegistry(0)
		}})
		l := c.waitLeader()
		resp := rawCall(t, l.ClientAddr(), &wire.Request{Op: wire.OpInvoke, Procedure: "test.nondet", Key: []byte("k"), HasKey: true})
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		bad := c.Nodes[2]
		testutil.WaitFor(t, 20*time.Second, func() error {
			if bad.fsm.Divergent() == nil {
				return errors.New("node 3 not yet divergent")
			}
			return nil
		})
		// The status page's event ring records it.
		testutil.WaitFor(t, 5*time.Second, func() error {
			for _, e := range bad.Events() {
				if e.Kind == EventDivergent {
					return nil
				}
			}
			return fmt.Errorf("no divergence event: %v", bad.Events())
		})
		for i, n := range c.Nodes[:2] {
			if err := n.fsm.Divergent(); err != nil {
				t.Fatalf("#%d: healthy node marked divergent: %v", i, err)
			}
		}
		if st := bad.Status(); st.Divergent == "" || st.Ready {
			t.Fatalf("divergent node status: divergent=%q ready=%t", st.Divergent, st.Ready)
		}
		resp = rawCall(t, bad.ClientAddr(), &wire.Request{Op: wire.OpStreamRead, Stream: "s"})
		if !errors.Is(resp.Err(), wire.ErrDivergent) {
			t.Fatalf("divergent node answered %v, want replica.ErrDivergent", resp.Err())
		}
		// The healthy majority keeps serving.
		putKV(t, c.dial(context.Background()), "after", "v")
	})
}

// TestQuietClusterChecksLastWrite: with no hash checks added to batches, the leader still
// appends one after the cluster goes quiet, so the last write before the quiet is checked
// too (DESIGN.md invariant 6).
func TestQuietClusterChecksLastWrite(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, idleChecksOnly: true, registry: func(i int) *procedures.Registry {
		return nondetRegistry(i / 2) // nodes 0 and 1 agree, node 2 differs
	}})
	l := c.waitLeader()
	// Wait for the idle check after the cluster's own first entries.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if len(l.fsm.HashRecords()) == 0 {
			return errors.New("no hash check yet")
		}
		return nil
	})
	resp := rawCall(t, l.ClientAddr(), &wire.Request{Op: wire.OpInvoke, Procedure: "test.nondet", Key: []byte("k"), HasKey: true})
	if err := resp.Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		if c.Nodes[2].fsm.Divergent() == nil {
			return errors.New("node 3 not yet divergent")
		}
		return nil
	})
}
