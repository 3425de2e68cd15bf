package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures"
)

// handOffBound is how long a divergent leader may keep the leadership after it finds it
// diverged: a hand-off is one TimeoutNow and one election (Raft bounds it by twice the
// election timeout, 1s by default); the rest is slack for a loaded test machine.
const handOffBound = 10 * time.Second

// TestDivergentLeaderHandsOff: a LEADER that finds its state differs from its peers' hands
// the leadership to a healthy node within a bounded time, so writes succeed again, and it
// does not stand for election again: while leadership moves between the healthy nodes
// several times, it is never leader (DESIGN.md invariant 6: a replica that differs stops
// serving and leading). Automatic rebuilds are off: the test is about a divergent voter
// that stays one (as when its rebuild is refused, or it was rebuilt once already).
func TestDivergentLeaderHandsOff(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, noAutoRebuild: true, registry: func(i int) *procedures.Registry {
		if i == 2 {
			return nondetRegistry(2)
		}
		return nondetRegistry(0)
	}})
	bad, healthy := c.Nodes[2], c.Nodes[:2]
	moveLeadership(t, c, 2)

	resp := rawCall(t, bad.ClientAddr(), &wire.Request{Op: wire.OpInvoke, Procedure: "test.nondet", Key: []byte("k"), HasKey: true})
	if err := resp.Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		if bad.fsm.Divergent() == nil {
			return errors.New("the leader, n3, is not yet divergent")
		}
		return nil
	})
	diverged := time.Now()
	testutil.WaitFor(t, handOffBound, func() error {
		if i := c.Leader(); i != 0 && i != 1 {
			return fmt.Errorf("ready leader is node %d, want a healthy one", i)
		}
		return nil
	})
	t.Logf("leadership left the divergent node %v after it found it diverged", time.Since(diverged).Round(time.Millisecond))
	cl := c.dial(context.Background())
	defer cl.Close()
	putKV(t, cl, "after-handoff", "v")

	// From here on the divergent node must never lead. Watch it, and the healthy nodes'
	// view of the leader, until the end of the test.
	testutil.WaitFor(t, 10*time.Second, func() error {
		for _, n := range append(healthy, bad) {
			if id, _ := n.seq.Leader(); id == "" || id == bad.ID() {
				return fmt.Errorf("%s sees leader %q", n.ID(), id)
			}
		}
		if !bad.seq.Abstaining() {
			return errors.New("the divergent node still stands for election")
		}
		return nil
	})
	var led atomic.Value // string: what the watcher saw, if the divergent node led
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond) // the watcher's sampling period
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if bad.seq.IsLeader() {
				led.Store("n3 is leader")
			}
			for _, n := range healthy {
				if id, _ := n.seq.Leader(); id == bad.ID() {
					led.Store(n.ID() + " follows n3")
				}
			}
		}
	})
	// Force elections: move the leadership back and forth between the healthy nodes.
	for round := range 4 {
		from := -1
		testutil.WaitFor(t, handOffBound, func() error {
			if from = c.Leader(); from != 0 && from != 1 {
				return fmt.Errorf("ready leader is node %d, want a healthy one", from)
			}
			return nil
		})
		moveLeadership(t, c, 1-from)
		putKV(t, cl, fmt.Sprintf("round-%d", round), "v")
	}
	close(stop)
	wg.Wait()
	if what := led.Load(); what != nil {
		t.Fatalf("the divergent node led again: %s", what)
	}
	if bad.fsm.Divergent() == nil || bad.Status().Ready {
		t.Fatal("the divergent node is serving again")
	}

	// The healthy leader dies: the last healthy node needs the divergent node's vote. An
	// abstaining node that never forgot the dead leader would refuse it, and the cluster
	// would stay without a leader; the divergent node votes (and may lead for a moment,
	// then hand off).
	dead := c.Leader()
	if dead != 0 && dead != 1 {
		t.Fatalf("ready leader is node %d, want a healthy one", dead)
	}
	c.kill(dead)
	start := time.Now()
	testutil.WaitFor(t, 20*time.Second, func() error {
		if i := c.Leader(); i != 1-dead {
			return fmt.Errorf("ready leader is node %d, want node %d", i, 1-dead)
		}
		return nil
	})
	t.Logf("with n%d dead, n%d leads after %v", dead+1, 2-dead, time.Since(start).Round(time.Millisecond))
	putKV(t, cl, "after-leader-death", "v")
}

// moveLeadership transfers the leadership to node i and waits until it leads and takes
// requests. A transfer can fail (the target was not caught up, or an election was under
// way); it is asked again while node i does not lead.
func moveLeadership(t *testing.T, c *testCluster, i int) {
	t.Helper()
	target := c.Nodes[i].ID()
	testutil.WaitFor(t, 20*time.Second, func() error {
		li := c.Leader()
		if li == i {
			return nil
		}
		if li >= 0 {
			l := c.Nodes[li]
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := l.seq.TransferLeadership(ctx, target); err != nil {
				return fmt.Errorf("transfer from %s to %s: %w", l.ID(), target, err)
			}
		}
		return fmt.Errorf("%s does not lead yet", target)
	})
}
