package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// verCount is t.p's body in these tests: it adds step to the key's counter and returns
// tag:counter, so the version that ran shows in the result.
func verCount(tag string, step int) func(tx *partition.Tx, a struct{}) (string, error) {
	return func(tx *partition.Tx, a struct{}) (string, error) {
		n := 0
		if v, ok := tx.Get("t", tx.Key()); ok {
			fmt.Sscan(string(v), &n)
		}
		n += step
		if err := tx.Put("t", tx.Key(), []byte(fmt.Sprint(n))); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s:%d", tag, n), nil
	}
}

// verBuild is the procedure set of one "build": the built-ins and t.p, with t.p@2 in a
// new build.
func verBuild(v2 bool) *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegister(r, "t.p", verCount("v1", 1))
	if v2 {
		procedures.MustRegister(r, "t.p@2", verCount("v2", 100))
	}
	return r
}

// TestRollingUpgrade: a cluster of old binaries (cluster version 1, t.p@1 only) is rolled
// one node at a time to a new build (cluster version 2, t.p@2 carried): the upgrade is
// refused while a member cannot run it, naming the node and its range; after the roll it
// is accepted, t.p@2 is activated, every replica switches at one index and converges, a
// downgrade is refused, and a node without t.p@2 cannot join (issue 22 items 1 and 2).
func TestRollingUpgrade(t *testing.T) {
	var mu sync.Mutex
	rolled := map[int]bool{}
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true,
		registry: func(i int) *procedures.Registry {
			mu.Lock()
			defer mu.Unlock()
			return verBuild(rolled[i])
		},
		configure: func(i int, cfg *Config) { cfg.Replica.MaxClusterVersion = 1 }})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	invoke := func() string {
		t.Helper()
		var s string
		if err := cl.Invoke(ctx, "t.p", []byte("k"), struct{}{}, &s); err != nil {
			t.Fatalf("invoke t.p: %v", err)
		}
		return s
	}
	// A restarted follower learns the commit index from the next entry the leader sends;
	// touch writes one, so that waits after a restart do not depend on idle hash checks.
	touch := func() {
		var s string
		_ = cl.Invoke(ctx, "t.p", []byte("touch"), struct{}{}, &s)
	}
	if got := invoke(); got != "v1:1" {
		t.Fatalf("old cluster: got %s, want v1:1", got)
	}
	if _, err := cl.Cluster().Upgrade(ctx, 2); !errors.Is(err, client.ErrBadArguments) ||
		!strings.Contains(err.Error(), "supports cluster versions 1..1, not 2") {
		t.Fatalf("upgrade before the roll: got %v, want a refusal naming a node and its range", err)
	}

	// The roll: each node restarts with the new build; the cluster serves throughout.
	for i := range c.Nodes {
		c.kill(i)
		mu.Lock()
		rolled[i] = true
		mu.Unlock()
		c.cfgs[i].Replica.MaxClusterVersion = 0 // the new binary's own
		c.restart(i)
		testutil.WaitFor(t, 60*time.Second, func() error { touch(); return c.Nodes[i].Ready() })
		invoke()
	}
	d, err := cl.Cluster().Upgrade(ctx, 2)
	if err != nil || d.ClusterVersion != 2 {
		t.Fatalf("upgrade after the roll: %+v %v", d, err)
	}
	if got := invoke(); !strings.HasPrefix(got, "v1:") {
		t.Fatalf("after the upgrade, before the activation: got %s, want t.p@1", got)
	}
	d, err = cl.Procedures().Activate(ctx, "t.p@2")
	if err != nil || !strings.Contains(fmt.Sprint(d.Active), "t.p@2") {
		t.Fatalf("activate: %+v %v", d, err)
	}
	if got := invoke(); !strings.HasPrefix(got, "v2:") {
		t.Fatalf("after the activation: got %s, want t.p@2", got)
	}
	c.waitConverged()
	var index uint64
	for i, n := range c.Nodes {
		dep := n.FSM().Deployment()
		if dep.Version != 2 || (index != 0 && dep.Index != index) {
			t.Fatalf("node %d: deployment %+v, want version 2 switched at index %d", i, dep, index)
		}
		index = dep.Index
		if err := n.FSM().Incompatible(); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	if _, err := cl.Cluster().Upgrade(ctx, 1); !errors.Is(err, client.ErrBadArguments) || !strings.Contains(err.Error(), "downgrade") {
		t.Fatalf("downgrade: got %v, want a refusal", err)
	}

	// A member restarted with an old binary refuses, by name, instead of running other
	// code; restarted with the new one again it catches up and converges.
	for i, tc := range []struct {
		v2     bool
		maxVer uint64
		reason string
	}{
		{false, 0, "t.p@2"},
		{true, 1, "this binary supports 1..1"},
	} {
		c.kill(2)
		mu.Lock()
		rolled[2] = tc.v2
		mu.Unlock()
		c.cfgs[2].Replica.MaxClusterVersion = tc.maxVer
		c.restart(2)
		testutil.WaitFor(t, 60*time.Second, func() error {
			touch()
			if err := c.Nodes[2].Ready(); err == nil || !strings.Contains(err.Error(), tc.reason) {
				return fmt.Errorf("#%d: restarted old node's readiness: %v, want a refusal saying %q", i, err, tc.reason)
			}
			return nil
		})
	}
	c.kill(2)
	mu.Lock()
	rolled[2] = true
	mu.Unlock()
	c.cfgs[2].Replica.MaxClusterVersion = 0
	c.restart(2)
	testutil.WaitFor(t, 60*time.Second, func() error { touch(); return c.Nodes[2].Ready() })
	invoke()
	c.waitConverged()

	// A node of the old build lacks the active t.p@2: its join is refused, by name.
	j, err := c.AddNode(verBuild(false))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 60*time.Second, func() error {
		if err := c.Nodes[j].Ready(); err == nil || !strings.Contains(err.Error(), "t.p@2") {
			return fmt.Errorf("new node's readiness: %v, want a refusal naming t.p@2", err)
		}
		return nil
	})
}

// TestIncompatibleLeaderHandsOff: a member restarted with a binary that lacks the active
// code refuses to apply the log; given the leadership, it hands it to a member that can
// run the log, within a bounded time, and stops standing for election. Before, it kept the
// leadership it could not serve from and every write stalled until it was stopped (seen in
// CI as TestRollingUpgrade timing out when the restarted old binary won an election).
func TestIncompatibleLeaderHandsOff(t *testing.T) {
	var mu sync.Mutex
	old := map[int]bool{}
	c := startCluster(t, clusterOptions{nodes: 3, registry: func(i int) *procedures.Registry {
		mu.Lock()
		defer mu.Unlock()
		return verBuild(!old[i])
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	if _, err := cl.Procedures().Activate(ctx, "t.p@2"); err != nil {
		t.Fatal(err)
	}
	c.kill(2)
	mu.Lock()
	old[2] = true
	mu.Unlock()
	c.restart(2)
	bad := c.Nodes[2]
	testutil.WaitFor(t, 30*time.Second, func() error {
		if bad.fsm.Incompatible() == nil {
			return errors.New("the restarted old binary has not refused the log yet")
		}
		return nil
	})
	testutil.WaitFor(t, 20*time.Second, func() error {
		if bad.seq.IsLeader() {
			return nil
		}
		l := c.Leader()
		if l < 0 {
			return errors.New("no ready leader to transfer from")
		}
		tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
		defer tcancel()
		if err := c.Nodes[l].seq.TransferLeadership(tctx, bad.ID()); err != nil {
			return fmt.Errorf("transfer to %s: %w", bad.ID(), err)
		}
		return nil // the old leader saw bad's higher term: bad led, if only for a moment
	})
	testutil.WaitFor(t, handOffBound, func() error {
		if i := c.Leader(); i != 0 && i != 1 {
			return fmt.Errorf("ready leader is node %d, want one that can run the log", i)
		}
		if !bad.seq.Abstaining() {
			return errors.New("the incompatible node still stands for election")
		}
		return nil
	})
	var s string
	if err := cl.Invoke(ctx, "t.p", []byte("k"), struct{}{}, &s); err != nil || !strings.HasPrefix(s, "v2:") {
		t.Fatalf("invoke after the hand-off: %q %v", s, err)
	}
}
