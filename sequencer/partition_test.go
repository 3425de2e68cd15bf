package sequencer_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/sequencer"
)

// TestPartitionLeaderInMinority cuts the leader off with a minority (alone of 3; with one
// follower, of 5). The majority elects a new leader and its writes succeed; the old
// leader acknowledges nothing submitted to it after the cut (each proposal fails with
// ErrNotLeader or ErrLeadershipLost, never succeeds); after healing, every replica has
// applied the same log to the same state, holds every acknowledged write (DESIGN.md
// invariant 4) and none of the old leader's unacknowledged ones (invariant 1).
func TestPartitionLeaderInMinority(t *testing.T) {
	for _, tc := range []struct{ nodes, minority int }{{3, 1}, {5, 2}} {
		t.Run(fmt.Sprintf("%d nodes, leader with %d", tc.nodes, tc.minority-1), func(t *testing.T) {
			testPartitionLeaderInMinority(t, tc.nodes, tc.minority)
		})
	}
}

func testPartitionLeaderInMinority(t *testing.T, nodes, minoritySize int) {
	c := newMemCluster(t, nodes)
	acked := map[string]string{} // every acknowledged write: key → value
	put := func(side []*memNode, key, value string) uint64 {
		idx := c.put(side, key, value)
		acked[key] = value
		return idx
	}
	for i := range 5 {
		put(c.nodes, fmt.Sprintf("before-%d", i), "v")
	}

	// Cut: the leader and minoritySize-1 followers against the rest.
	old := c.waitLeader(c.nodes)
	minority := []*memNode{old}
	var majority []*memNode
	for _, nd := range c.nodes {
		if nd == old {
			continue
		}
		if len(minority) < minoritySize {
			minority = append(minority, nd)
		} else {
			majority = append(majority, nd)
		}
	}
	c.partition(minority, majority)
	t.Logf("cut %v (old leader %s) from %v", ids(minority), old.id, ids(majority))

	// Proposals to the old leader after the cut: none may succeed.
	const stale = 20
	out := make(chan putOutcome, stale)
	var accepted, refused int
	for i := range stale {
		switch err := submitPut(old, fmt.Sprintf("stale-%d", i), "x", out); {
		case err == nil:
			accepted++
		case errors.Is(err, sequencer.ErrNotLeader):
			refused++ // never entered the log
		default:
			t.Fatalf("Submit to the old leader: %v", err)
		}
	}
	for range accepted {
		select {
		case o := <-out:
			if o.err == nil {
				t.Fatalf("old leader %s acknowledged %s at index %d after it was cut off", old.id, o.key, o.index)
			}
			if !errors.Is(o.err, sequencer.ErrLeadershipLost) && !errors.Is(o.err, sequencer.ErrNotLeader) {
				t.Errorf("%s on the old leader: got %v, want ErrLeadershipLost or ErrNotLeader", o.key, o.err)
			}
		case <-time.After(memWait):
			t.Fatalf("old leader %s: a proposal got no outcome", old.id)
		}
	}
	t.Logf("old leader: %d proposals accepted by Submit and failed, %d refused", accepted, refused)
	if old.seq.IsLeader() {
		t.Errorf("old leader %s still leads after every proposal failed", old.id)
	}

	// The majority elects a leader of its own and goes on.
	newLeader := c.waitLeader(majority)
	t.Logf("majority leader: %s", newLeader.id)
	for i := range 5 {
		put(majority, fmt.Sprintf("during-%d", i), "w")
	}

	// Heal: one leader for all, the same log and state everywhere.
	c.heal()
	c.waitLeader(c.nodes)
	last := put(c.nodes, "after", "z")
	applied := c.waitConverged(last)
	t.Logf("converged at applied index %d", applied)
	for _, nd := range c.nodes {
		for k, v := range acked {
			if got, ok := get(t, nd, k); !ok || got != v {
				t.Errorf("%s: acknowledged %s=%q, got %q (found %t)", nd.id, k, v, got, ok)
			}
		}
		for i := range stale {
			k := fmt.Sprintf("stale-%d", i)
			if got, ok := get(t, nd, k); ok {
				t.Errorf("%s: %s=%q, a write the cut-off leader never acknowledged", nd.id, k, got)
			}
		}
	}
}

func ids(nodes []*memNode) []string {
	out := make([]string, len(nodes))
	for i, nd := range nodes {
		out[i] = nd.id
	}
	return out
}
