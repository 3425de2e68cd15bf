package replica

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"testing"
	"time"

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
			t.Fatalf("divergent node answered %v, want ErrDivergent", resp.Err())
		}
		// The healthy majority keeps serving.
		putKV(t, c.dial(context.Background()), "after", "v")
	})
}
