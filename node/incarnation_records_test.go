package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// TestStaleViewKeepsClearedIncarnation: a status view the leader took before it cleared a
// member's incarnation for its rebuild (here: before the incarnation was first recorded)
// records nothing once the clear is done, so the rebuilt member's new incarnation can join. The leader's member loop takes such views
// seconds before it acts on them under load; the old code recorded the old incarnation
// again, and the rebuilt node's join was refused as a wiped data directory
// (TestDivergentReplicaRebuilt failed so).
func TestStaleViewKeepsClearedIncarnation(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	leader := c.leader()
	var victim *Node
	for _, n := range c.Nodes {
		if n != leader {
			victim = n
			break
		}
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		if leader.FSM().Nodes()[victim.ID()].Incarnation == "" {
			return errors.New("incarnation not recorded yet")
		}
		return nil
	})
	// The view of a round that began on the new cluster, before the victim's incarnation
	// was recorded: the log held none, and the victim, not yet divergent, reported its own.
	views, err := leader.viewMembers(false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range views {
		if views[i].ID == victim.ID() {
			if views[i].status == nil {
				t.Fatalf("%s did not answer: %v", victim.ID(), views[i].err)
			}
			views[i].info.Incarnation = ""
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := leader.clearIncarnation(ctx, victim.ID()); err != nil {
		t.Fatal(err)
	}
	leader.recordIncarnations(views)
	if got := leader.FSM().Nodes()[victim.ID()].Incarnation; got != "" {
		t.Fatalf("%s's incarnation %q recorded again from a view older than its clear for the rebuild", victim.ID(), got)
	}
	// Once the member has joined again, the leader records what it reports again.
	leader.joined(victim.ID())
	leader.recordIncarnations(views)
	if got, want := leader.FSM().Nodes()[victim.ID()].Incarnation, victim.Status().Incarnation; got != want {
		t.Fatalf("after the join: recorded incarnation %q, want %q", got, want)
	}
}
