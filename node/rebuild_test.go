package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// oneDivergent returns registries under which node bad writes what the others do not.
func oneDivergent(bad int) func(int) *procedures.Registry {
	return func(i int) *procedures.Registry {
		if i == bad {
			return nondetRegistry(bad)
		}
		return nondetRegistry(0)
	}
}

// invokeNondet runs test.nondet on key through cl (retried across a leader change, with
// its session number).
func invokeNondet(t *testing.T, cl *client.Client, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ok bool
	if err := cl.Invoke(ctx, "test.nondet", []byte(key), struct{}{}, &ok); err != nil {
		t.Fatal(err)
	}
}

// waitRebuildRequested waits until node n announces its rebuild.
func waitRebuildRequested(t *testing.T, n *Node, within time.Duration) {
	t.Helper()
	select {
	case <-n.RebuildRequested():
	case <-time.After(within):
		st := n.Status()
		t.Fatalf("%s announced no rebuild within %v: rebuild %q: %s; divergent %q", n.ID(), within, st.Rebuild, st.RebuildNote, st.Divergent)
	}
}

// rebuildCount returns node n's lockstep_rebuilds_total for outcome.
func rebuildCount(t *testing.T, n *Node, outcome string) float64 {
	return gather(t, n.Metrics().Registry)["lockstep_rebuilds_total{outcome="+outcome+"}"]
}

// divergeThird starts 3 nodes of which the third diverges on the first test.nondet,
// runs one, and waits until the third announces its rebuild; it returns the cluster, a
// client of it (closed at the test's end) and the divergent node.
func divergeThird(t *testing.T, snapshots bool) (*testCluster, *client.Client, *Node) {
	t.Helper()
	c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots, registry: oneDivergent(2)})
	cl := c.dial(context.Background())
	t.Cleanup(func() { cl.Close() })
	putKV(t, cl, "before", "v")
	invokeNondet(t, cl, "k1")
	bad := c.Nodes[2]
	waitRebuildRequested(t, bad, 30*time.Second)
	return c, cl, bad
}

// TestDivergentReplicaRebuilt: a replica that diverges is demoted by the leader, discards
// its state, installs the leader's snapshot (its own code would write the divergent value
// again if it replayed the log), is verified by a hash check past the rebuild point and
// promoted back to voter, with the others' hashes (DESIGN.md invariant 6). When it
// diverges again, it stays fenced and says why. Both with automatic snapshots off (the
// rebuild compacts the log itself) and on.
func TestDivergentReplicaRebuilt(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c, cl, bad := divergeThird(t, snapshots)
		plan := bad.RebuildPlan()
		if plan.From == 0 || !strings.Contains(plan.Reason, "diverge") || len(plan.Seeds) != 2 {
			t.Fatalf("rebuild plan %+v", plan)
		}
		if got := rebuildCount(t, bad, "started"); got != 1 {
			t.Fatalf("rebuilds started %v, want 1", got)
		}
		if st := bad.Status(); st.Rebuild != RebuildRebuilding {
			t.Fatalf("demoted node: rebuild %q", st.Rebuild)
		}
		// The leader committed the demotion with the two healthy voters before it granted
		// the rebuild; the node itself learns it when the entry reaches its log.
		testutil.WaitFor(t, 30*time.Second, func() error {
			if st := bad.Status(); st.Suffrage != sequencer.SuffrageLearner {
				return fmt.Errorf("demoted node: suffrage %q", st.Suffrage)
			}
			return nil
		})
		putKV(t, cl, "during", "v") // the two healthy voters commit
		if err := c.RebuildNode(2); err != nil {
			t.Fatal(err)
		}
		rebuilt := c.Nodes[2]
		if st := rebuilt.Status(); st.Rebuild != RebuildRebuilding || st.Rebuilds != 1 || st.RebuildFrom != plan.From {
			t.Fatalf("rebuilt node at start: rebuild %q rebuilds %d from %d", st.Rebuild, st.Rebuilds, st.RebuildFrom)
		}
		putKV(t, cl, "after", "v")
		testutil.WaitFor(t, 60*time.Second, func() error {
			st := rebuilt.Status()
			if st.Suffrage != sequencer.SuffrageVoter || !st.Ready || st.Rebuild != "" {
				return fmt.Errorf("rebuilt node: suffrage %q ready %t rebuild %q (%s) %s", st.Suffrage, st.Ready, st.Rebuild,
					st.RebuildNote, st.NotReadyReason)
			}
			return nil
		})
		if got := rebuildCount(t, rebuilt, "finished"); got != 1 {
			t.Fatalf("rebuilds finished %v, want 1", got)
		}
		if err := rebuilt.fsm.Divergent(); err != nil {
			t.Fatalf("rebuilt node divergent: %v", err)
		}
		// Its hashes equal the others' (waitConverged compares every running node).
		c.waitConverged()
		if !slices.Equal(c.voters(), []string{"n1", "n2", "n3"}) {
			t.Fatalf("voters %v", c.voters())
		}

		// A second divergence: no second automatic rebuild.
		invokeNondet(t, cl, "k2")
		testutil.WaitFor(t, 30*time.Second, func() error {
			st := rebuilt.Status()
			if st.Divergent == "" || st.Rebuild != RebuildFenced {
				return fmt.Errorf("divergent %q rebuild %q", st.Divergent, st.Rebuild)
			}
			if !strings.Contains(st.RebuildNote, "diverged again after 1 automatic rebuild") {
				return fmt.Errorf("note %q", st.RebuildNote)
			}
			return nil
		})
		select {
		case <-rebuilt.RebuildRequested():
			t.Fatal("a second automatic rebuild was announced")
		case <-time.After(2 * rebuildRetryInterval):
		}
		if got := rebuildCount(t, rebuilt, "failed"); got != 1 {
			t.Fatalf("rebuilds failed %v, want 1", got)
		}
		putKV(t, cl, "still-serving", "v")
	})
}

// TestRebuildSurvivesLeaderChange: leadership moves after the rebuild was granted, to a
// healthy voter whose log still starts at index 1 (automatic snapshots off). The new
// leader must not have the rebuilt node replay the log with its own code (it would
// diverge again and stay fenced): the node's rebuild guard applies nothing before a
// snapshot and prepares the same rebuild again, and the leader compacts past the rebuild
// point, so the retry installs a snapshot. One rebuild is counted; the node ends a
// verified voter with the others' hashes.
func TestRebuildSurvivesLeaderChange(t *testing.T) {
	c, cl, bad := divergeThird(t, false)
	testutil.WaitFor(t, 30*time.Second, func() error {
		if st := bad.Status(); st.Suffrage != sequencer.SuffrageLearner {
			return fmt.Errorf("demoted node: suffrage %q", st.Suffrage)
		}
		return nil
	})
	// Hand the leadership to the other healthy voter, whose log was not compacted.
	old := c.leader()
	other := c.Nodes[1-c.index(old)]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := old.seq.TransferLeadership(ctx, other.ID()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		if l := c.leader(); l != other {
			return fmt.Errorf("leader %s, want %s", l.ID(), other.ID())
		}
		return nil
	})
	if first, err := other.seq.FirstLogIndex(); err != nil || first > bad.RebuildPlan().From {
		t.Fatalf("the new leader's log starts at %d (%v): the test needs it to hold the rebuild point %d", first, err,
			bad.RebuildPlan().From)
	}
	putKV(t, cl, "during", "v")
	if err := c.RebuildNode(2); err != nil {
		t.Fatal(err)
	}
	retries := 0
	testutil.WaitFor(t, 90*time.Second, func() error {
		n := c.Nodes[2]
		select {
		case <-n.RebuildRequested():
			if !n.RebuildPlan().Retry {
				t.Fatalf("a new rebuild, not a retry: %+v (%s)", n.RebuildPlan(), n.Status().RebuildNote)
			}
			retries++
			if err := c.RebuildNode(2); err != nil {
				t.Fatal(err)
			}
			return errors.New("rebuild retried")
		default:
		}
		st := n.Status()
		if st.Divergent != "" {
			t.Fatalf("the rebuilt node diverged again: %s (rebuild %q: %s)", st.Divergent, st.Rebuild, st.RebuildNote)
		}
		if st.Suffrage != sequencer.SuffrageVoter || !st.Ready || st.Rebuild != "" {
			return fmt.Errorf("rebuilt node: suffrage %q ready %t rebuild %q (%s) %s", st.Suffrage, st.Ready, st.Rebuild,
				st.RebuildNote, st.NotReadyReason)
		}
		return nil
	})
	t.Logf("rebuild retried %d time(s)", retries)
	rebuilt := c.Nodes[2]
	if st := rebuilt.Status(); st.Rebuilds != 1 {
		t.Fatalf("rebuilds %d, want 1", st.Rebuilds)
	}
	putKV(t, cl, "after", "v")
	c.waitConverged()
}

// TestRebuildRefusedWithoutQuorum: with two of five voters down, demoting a divergent
// third would leave four voters of which two are alive and healthy, short of a quorum of
// three: the leader refuses, the replica stays a fenced voter and says why, and the
// cluster keeps committing. Once the two are back, the rebuild goes ahead. Before that,
// rebuild requests for no node, an unknown node or a healthy one are refused with
// BadArguments and change nothing (DESIGN.md invariant 7).
func TestRebuildRefusedWithoutQuorum(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 5, patientRaft: true, registry: oneDivergent(4)})
	var inc string // n2's recorded incarnation, once the leader has recorded it
	testutil.WaitFor(t, 20*time.Second, func() error {
		if inc = c.waitLeader().fsm.Nodes()["n2"].Incarnation; inc == "" {
			return errors.New("n2's incarnation not recorded yet")
		}
		return nil
	})
	for i, key := range []string{"", "n9", "n2"} {
		testutil.WaitFor(t, 20*time.Second, func() error {
			resp := rawCall(t, c.waitLeader().ClientAddr(), &wire.Request{Op: wire.OpRebuild, Key: []byte(key)})
			switch err := resp.Err(); {
			case errors.Is(err, wire.ErrNotLeader):
				return err // leadership moved: ask the new leader
			case !errors.Is(err, wire.ErrBadArguments):
				t.Fatalf("#%d: rebuild %q: got %v, want BadArguments", i, key, err)
			}
			return nil
		})
	}
	if got := c.voters(); !slices.Equal(got, []string{"n1", "n2", "n3", "n4", "n5"}) {
		t.Fatalf("voters after refused rebuilds: %v", got)
	}
	if got := c.waitLeader().fsm.Nodes()["n2"].Incarnation; got != inc {
		t.Fatalf("n2's incarnation %q after refused rebuilds, want %q", got, inc)
	}
	moveLeadership(t, c, 0)
	c.kill(2)
	c.kill(3)
	cl := c.dial(context.Background())
	defer cl.Close()
	invokeNondet(t, cl, "k")
	bad := c.Nodes[4]
	testutil.WaitFor(t, 30*time.Second, func() error {
		st := bad.Status()
		if st.Rebuild != RebuildRefused {
			return fmt.Errorf("rebuild %q: %s (divergent %q)", st.Rebuild, st.RebuildNote, st.Divergent)
		}
		return nil
	})
	st := bad.Status()
	if !strings.Contains(st.RebuildNote, "a quorum needs 3") || st.Suffrage != sequencer.SuffrageVoter {
		t.Fatalf("refused rebuild: note %q suffrage %q", st.RebuildNote, st.Suffrage)
	}
	// The refusal carries the leader's reason alone: the client puts "rebuild refused"
	// in front of it once.
	if resp := rawCall(t, c.Nodes[0].ClientAddr(), &wire.Request{Op: wire.OpRebuild, Key: []byte(bad.ID())}); resp.Err() != nil ||
		!strings.HasPrefix(string(resp.Value), "demoting "+bad.ID()) {
		t.Fatalf("refusal answer: value %q, err %v; want the reason alone", resp.Value, resp.Err())
	}
	if got := rebuildCount(t, bad, "refused"); got != 1 {
		t.Fatalf("rebuilds refused %v, want 1", got)
	}
	select {
	case <-bad.RebuildRequested():
		t.Fatal("rebuild announced without a quorum")
	default:
	}
	putKV(t, cl, "fenced-but-serving", "v")
	c.restart(2)
	c.restart(3)
	waitRebuildRequested(t, bad, 60*time.Second)
}

// TestRebuildQuorum checks the leader's quorum rule for demoting a divergent voter.
func TestRebuildQuorum(t *testing.T) {
	up := &wire.Status{}
	div := &wire.Status{Divergent: "x"}
	v := func(id string, st *wire.Status) memberView {
		return memberView{Member: sequencer.Member{Server: sequencer.Server{ID: id}, Voter: true}, status: st}
	}
	tests := []struct {
		views []memberView
		ok    bool
	}{
		{[]memberView{v("b", up), v("c", div)}, true},                            // 3 voters: 2 left, both healthy
		{[]memberView{v("b", nil), v("c", div)}, false},                          // 3 voters, one down: 1 of 2
		{[]memberView{v("b", up), v("c", nil), v("d", up), v("e", div)}, true},   // 5: 3 of 4
		{[]memberView{v("b", nil), v("c", nil), v("d", up), v("e", div)}, false}, // 5: 2 of 4
		{[]memberView{v("b", div), v("c", nil), v("d", up), v("e", div)}, false}, // 5: one divergent, one down
		{[]memberView{v("e", div)}, true},                                        // 2 voters: 1 of 1
	}
	for i, tt := range tests {
		err := rebuildQuorum(tt.views[len(tt.views)-1].ID, tt.views)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrRebuildRefused)) {
			t.Errorf("#%d: got %v, want ok %t", i, err, tt.ok)
		}
	}
}

// TestRebuildVerified checks the leader's rule for promoting a rebuilt replica: a hash
// check past the rebuild point, equal to the leader's own at that index.
func TestRebuildVerified(t *testing.T) {
	own := []replica.HashRecord{{Index: 10, Hashes: []uint64{1}, Meta: 1}, {Index: 20, Hashes: []uint64{2}, Meta: 2}}
	check := func(i uint64, h, m uint64) wire.HashCheck {
		return wire.HashCheck{Index: i, Hashes: []uint64{h}, Meta: m}
	}
	tests := []struct {
		checks []wire.HashCheck
		ok     bool
		note   string
	}{
		{nil, false, "waiting for a hash check past index 15"},
		{[]wire.HashCheck{check(10, 1, 1)}, false, "waiting"},                   // before the rebuild point
		{[]wire.HashCheck{check(10, 1, 1), check(20, 2, 2)}, true, ""},          // verified
		{[]wire.HashCheck{check(20, 3, 2)}, false, "hashes at index 20 differ"}, // partitions differ
		{[]wire.HashCheck{check(20, 2, 9)}, false, "hashes at index 20 differ"}, // meta differs
		{[]wire.HashCheck{check(30, 2, 2)}, false, "waiting"},                   // the leader has no record there
	}
	for i, tt := range tests {
		ok, note := rebuildVerified(own, &wire.Status{RebuildFrom: 15, HashChecks: tt.checks})
		if ok != tt.ok || !strings.Contains(note, tt.note) {
			t.Errorf("#%d: got %t %q, want %t %q", i, ok, note, tt.ok, tt.note)
		}
	}
}
