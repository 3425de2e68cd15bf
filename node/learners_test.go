package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// TestJoinAppliedNeedsOwnIncarnation: a record of this node's id that carries no
// incarnation is not its join. A node that replaced an earlier incarnation under the same
// id replays the log from its start: the bootstrap's record of that id carries none, and
// the bootstrap's configuration names it a voter, so counting such a record as the join
// made awaitPromotion report the learner ready (TestWipedDataDirRefused: "n3-replaced
// ready while learner"). Here the leader clears a member's record to none, as that
// prefix of the log has it.
func TestJoinAppliedNeedsOwnIncarnation(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	leader := c.leader()
	var m *Node
	for _, n := range c.Nodes {
		if n != leader {
			m = n
			break
		}
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		if !m.joinApplied() {
			return fmt.Errorf("%s's own incarnation not applied yet", m.ID())
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := leader.clearIncarnation(ctx, m.ID()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		if inc := m.FSM().Nodes()[m.ID()].Incarnation; inc != "" {
			return fmt.Errorf("%s still has incarnation %q applied", m.ID(), inc)
		}
		return nil
	})
	if m.joinApplied() {
		t.Fatalf("%s counts a record of its id without an incarnation as its join", m.ID())
	}
}
