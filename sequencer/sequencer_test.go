package sequencer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/batch"
)

func TestSingleNode(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	cfg := testConfig(t, "solo")
	solo(&cfg)
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	n := openNode(t, cfg, newTestFSM())
	s := n.seq

	if err := s.Submit(newTracker(t, 1).proposal("early")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Submit before bootstrap: got %v, want ErrNotLeader", err)
	}
	self := []Server{{ID: "solo", Addr: s.Addr()}}
	if err := s.Bootstrap(self); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	waitLeader(t, []*node{n})
	select {
	case leader := <-s.LeaderChanges():
		if !leader {
			t.Fatalf("LeaderChanges: got false, want true")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("LeaderChanges: nothing")
	}
	if err := s.Bootstrap(self); err != nil {
		t.Errorf("second Bootstrap: got %v, want nil", err)
	}
	if got, err := s.Servers(); err != nil || !slices.Equal(got, self) {
		t.Errorf("Servers: got %v, %v, want %v", got, err, self)
	}

	o := submitWait(t, s, "a")
	if o.err != nil || o.index == 0 {
		t.Fatalf("Submit a: got index %d err %v", o.index, o.err)
	}
	if c := counterOf(t, "a", o.res); c != 1 {
		t.Errorf("a: FSM count %d, want 1", c)
	}
	// The first batch of a leader carries a hash check, as its last item.
	n.fsm.mu.Lock()
	kinds := slices.Clone(n.fsm.lastKinds)
	n.fsm.mu.Unlock()
	if !slices.Equal(kinds, []batch.Kind{batch.KindInvoke, batch.KindHashCheck}) {
		t.Errorf("first entry kinds %v, want [invoke hash-check]", kinds)
	}
	// Batch times come from Config.Now and never go backwards.
	clock.Add(-int64(time.Hour))
	o2 := submitWait(t, s, "b")
	if o2.err != nil || o2.index <= o.index {
		t.Fatalf("Submit b: got index %d err %v, want > %d", o2.index, o2.err, o.index)
	}
	if c := counterOf(t, "b", o2.res); c != 3 { // a, hash check, b
		t.Errorf("b: FSM count %d, want 3", c)
	}
	n.fsm.mu.Lock()
	times := slices.Clone(n.fsm.times)
	n.fsm.mu.Unlock()
	want := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	if !slices.Equal(times, []int64{want, want}) {
		t.Errorf("entry times %v, want [%d %d]", times, want, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.VerifyLeader(ctx); err != nil {
		t.Errorf("VerifyLeader: %v", err)
	}
	if err := s.Barrier(ctx); err != nil {
		t.Errorf("Barrier: %v", err)
	}
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	if err := s.Barrier(done); !errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("Barrier(cancelled): got %v, want ErrTimeout and context.Canceled", err)
	}
	st := s.Stats()
	if st.State != "Leader" || st.Batches != 2 || st.Inputs != 2 || st.HashChecks != 1 || st.CommitIndex < o2.index || st.Term == 0 {
		t.Errorf("Stats: got %+v", st)
	}
}

// TestSubmitRefused covers every reason Submit refuses a proposal without calling Done
// (DESIGN.md invariant 7: bad input gets a typed error and changes nothing).
func TestSubmitRefused(t *testing.T) {
	cfg := testConfig(t, "f")
	cfg.MaxBatchBytes = MinBatchBytes
	n := openNode(t, cfg, newTestFSM()) // never bootstrapped: a follower
	tr := newTracker(t, 10)
	withItem := func(mod func(*batch.Item)) *Proposal {
		p := tr.proposal("x")
		mod(&p.Item)
		return p
	}
	tests := []struct {
		p    *Proposal
		want error
	}{
		{nil, ErrBadProposal},
		{&Proposal{Item: batch.Item{Kind: batch.KindInvoke}}, ErrBadProposal},
		{withItem(func(it *batch.Item) { it.Kind = 0 }), ErrBadProposal},
		{withItem(func(it *batch.Item) { it.Scope = make([]int, batch.MaxScope+1) }), ErrBadProposal},
		{withItem(func(it *batch.Item) { it.Scope = []int{0, -1} }), ErrBadProposal},
		{withItem(func(it *batch.Item) { it.Scope = []int{batch.MaxScope + 1} }), ErrBadProposal},
		{withItem(func(it *batch.Item) { it.Args = make([]byte, MinBatchBytes) }), ErrTooLarge},
		{withItem(func(it *batch.Item) { it.Key = make([]byte, 3000); it.Args = make([]byte, 1000) }), ErrTooLarge},
		{withItem(func(it *batch.Item) { it.Scope = []int{0, batch.MaxScope} }), ErrNotLeader},
		{tr.proposal("y"), ErrNotLeader},
	}
	for i, tt := range tests {
		if err := n.seq.Submit(tt.p); !errors.Is(err, tt.want) {
			t.Errorf("#%d: got %v, want %v", i, err, tt.want)
		}
	}
	n.seq.Close()
	if err := n.seq.Submit(tr.proposal("z")); !errors.Is(err, ErrShutdown) {
		t.Errorf("after Close: got %v, want ErrShutdown", err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.calls) != 0 {
		t.Errorf("Done called for refused proposals: %v", tr.calls)
	}
}

// TestThreeNodes submits from many goroutines to a 3-node cluster: each proposal gets its
// own result, each goroutine's proposals are applied in submission order, batches form,
// and every replica applies the same sequence (DESIGN.md invariant 1).
func TestThreeNodes(t *testing.T) {
	nodes, leader := newCluster(t, 3, nil)
	for _, nd := range nodes {
		if nd == leader {
			continue
		}
		if err := nd.seq.Submit(newTracker(t, 1).proposal("f")); !errors.Is(err, ErrNotLeader) {
			t.Errorf("Submit on follower %s: got %v, want ErrNotLeader", nd.id, err)
		}
		if err := nd.seq.Barrier(context.Background()); !errors.Is(err, ErrNotLeader) {
			t.Errorf("Barrier on follower %s: got %v, want ErrNotLeader", nd.id, err)
		}
	}

	const workers, perWorker = 8, 250
	tr := newTracker(t, workers*perWorker)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				if err := leader.seq.Submit(tr.proposal(fmt.Sprintf("w%d/%d", w, i))); err != nil {
					t.Errorf("Submit: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for range workers * perWorker {
		select {
		case <-tr.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("outcomes missing")
		}
	}
	seen := map[uint64]string{}
	for w := range workers {
		var last uint64
		for i := range perWorker {
			args := fmt.Sprintf("w%d/%d", w, i)
			o, _ := tr.get(args)
			if o.err != nil {
				t.Fatalf("%s: %v", args, o.err)
			}
			c := counterOf(t, args, o.res)
			if c <= last {
				t.Fatalf("%s applied at %d, after its predecessor at %d", args, c, last)
			}
			if other, dup := seen[c]; dup {
				t.Fatalf("%s and %s both got position %d", args, other, c)
			}
			seen[c], last = args, c
		}
	}
	st := leader.seq.Stats()
	if st.Inputs != workers*perWorker || st.Batches >= st.Inputs || st.BatchSizes[0] == st.Batches {
		t.Errorf("no batching: %d inputs in %d batches, histogram %s", st.Inputs, st.Batches, st.HistogramString())
	}
	t.Logf("%d inputs in %d batches (mean %.1f), histogram %s", st.Inputs, st.Batches, st.MeanBatch(), st.HistogramString())
	waitSameState(t, leader, nodes...)
}

// TestLeaderChange moves the leadership and removes a member: the cluster keeps ordering
// inputs and the replicas stay equal.
func TestLeaderChange(t *testing.T) {
	nodes, leader := newCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if o := submitWait(t, leader.seq, "before"); o.err != nil {
		t.Fatalf("Submit: %v", o.err)
	}
	var target *node
	for _, nd := range nodes {
		if nd != leader {
			target = nd
			break
		}
	}
	if err := leader.seq.TransferLeadership(ctx, "nobody"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("TransferLeadership(nobody): got %v, want ErrUnknownServer", err)
	}
	if err := leader.seq.TransferLeadership(ctx, target.id); err != nil {
		t.Fatalf("TransferLeadership(%s): %v", target.id, err)
	}
	if got := waitLeader(t, nodes); got != target {
		t.Fatalf("leader after transfer: %s, want %s", got.id, target.id)
	}
	if o := submitWait(t, target.seq, "after"); o.err != nil {
		t.Fatalf("Submit on new leader: %v", o.err)
	}
	if err := leader.seq.Submit(newTracker(t, 1).proposal("old")); !errors.Is(err, ErrNotLeader) {
		t.Errorf("Submit on old leader: got %v, want ErrNotLeader", err)
	}
	if err := leader.seq.VerifyLeader(ctx); !errors.Is(err, ErrNotLeader) {
		t.Errorf("VerifyLeader on old leader: got %v, want ErrNotLeader", err)
	}

	// Remove the old leader; the other two go on.
	if err := target.seq.RemoveServer(ctx, leader.id); err != nil {
		t.Fatalf("RemoveServer(%s): %v", leader.id, err)
	}
	servers, err := target.seq.Servers()
	if err != nil || len(servers) != 2 || slices.ContainsFunc(servers, func(s Server) bool { return s.ID == leader.id }) {
		t.Fatalf("Servers after remove: %v, %v", servers, err)
	}
	if err := leader.seq.Close(); err != nil {
		t.Fatalf("Close removed node: %v", err)
	}
	rest := slices.DeleteFunc(slices.Clone(nodes), func(nd *node) bool { return nd == leader })
	if o := submitWait(t, target.seq, "two left"); o.err != nil {
		t.Fatalf("Submit with two voters: %v", o.err)
	}
	waitSameState(t, target, rest...)
}

// TestLeaderShutdown closes the leader under load. Every accepted proposal learns its
// outcome exactly once, failures say ErrShutdown, ErrLeadershipLost or ErrNotLeader, never
// nothing, and every acknowledged input survives on the new leader (DESIGN.md
// invariant 4).
func TestLeaderShutdown(t *testing.T) {
	nodes, _ := newCluster(t, 3, func(c *Config) { c.MaxQueuedInputs = 4096 })
	leaderNow := func() *node {
		for _, nd := range nodes {
			if nd.seq.IsLeader() {
				return nd
			}
		}
		return nil
	}
	// Workers submit to whichever node leads, so a spurious election on a loaded machine
	// does not stall the test.
	const workers = 6
	tr := newTracker(t, 1<<17)
	var accepted atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); {
				nd := leaderNow()
				if nd == nil {
					time.Sleep(time.Millisecond)
					continue
				}
				err := nd.seq.Submit(tr.proposal(fmt.Sprintf("w%d/%d", w, i)))
				switch {
				case err == nil:
					accepted.Add(1)
					i++
				case errors.Is(err, ErrShutdown), errors.Is(err, ErrNotLeader), errors.Is(err, ErrOverloaded):
					time.Sleep(time.Millisecond) // not accepted: Done will not run, the name is free
				default:
					t.Errorf("Submit: %v", err)
					return
				}
			}
		}()
	}
	var old *node
	waitFor(t, 10*time.Second, func() error {
		if old = leaderNow(); old == nil {
			return errors.New("no leader")
		}
		if st := old.seq.Stats(); st.Inputs < 500 {
			return fmt.Errorf("only %d inputs proposed by %s, %d accepted", st.Inputs, old.id, accepted.Load())
		}
		return nil
	})
	if err := old.seq.Close(); err != nil {
		t.Fatalf("Close leader: %v", err)
	}
	rest := slices.DeleteFunc(slices.Clone(nodes), func(nd *node) bool { return nd == old })
	newLeader := waitLeader(t, rest)
	stop.Store(true)
	wg.Wait()
	if o := submitWait(t, newLeader.seq, "after"); o.err != nil {
		t.Fatalf("Submit on new leader: %v", o.err)
	}
	waitFor(t, 10*time.Second, func() error {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if int64(len(tr.calls)) != accepted.Load() {
			return fmt.Errorf("%d accepted proposals, %d had Done called", accepted.Load(), len(tr.calls))
		}
		return nil
	})
	var acked, failed int
	tr.mu.Lock()
	outs := tr.out
	tr.mu.Unlock()
	for args, o := range outs {
		switch {
		case o.err == nil:
			acked++
			if n := newLeader.fsm.seen(args); n != 1 {
				t.Errorf("acknowledged %q applied %d times on the new leader", args, n)
			}
		case errors.Is(o.err, ErrLeadershipLost):
			failed++ // outcome unknown: may or may not be in the log
		case errors.Is(o.err, ErrShutdown), errors.Is(o.err, ErrNotLeader):
			failed++ // promised never to have entered the log
			if n := newLeader.fsm.seen(args); n != 0 {
				t.Errorf("%q failed with %v but was applied %d times", args, o.err, n)
			}
		default:
			t.Errorf("%q: unexpected error %v", args, o.err)
		}
	}
	t.Logf("%d accepted: %d acknowledged, %d failed", accepted.Load(), acked, failed)
	waitSameState(t, newLeader, rest...)
}

// TestLeaderIsolated stops both followers under a leader with proposals in flight: the
// leader cannot commit, steps down when its lease runs out, and every proposal fails with
// ErrLeadershipLost (in flight: the outcome is unknown, RAFT-NOTES trap 1) or ErrNotLeader
// (still queued: never entered the log) — never silently.
func TestLeaderIsolated(t *testing.T) {
	nodes, leader := newCluster(t, 3, func(c *Config) { c.MaxInflightBatches = 2 })
	for _, nd := range nodes {
		if nd != leader {
			if err := nd.seq.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	tr := newTracker(t, 1000)
	accepted := 0
	for i := range 1000 {
		if err := leader.seq.Submit(tr.proposal(fmt.Sprint(i))); err != nil {
			if !errors.Is(err, ErrNotLeader) {
				t.Fatalf("Submit: %v", err)
			}
			break
		}
		accepted++
	}
	waitFor(t, 10*time.Second, func() error {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if len(tr.calls) != accepted {
			return fmt.Errorf("%d of %d proposals have an outcome", len(tr.calls), accepted)
		}
		return nil
	})
	lost, notLeader := 0, 0
	for i := range accepted {
		o, _ := tr.get(fmt.Sprint(i))
		switch {
		case errors.Is(o.err, ErrLeadershipLost):
			lost++
		case errors.Is(o.err, ErrNotLeader):
			notLeader++
		default:
			t.Errorf("%d: got %v, want ErrLeadershipLost or ErrNotLeader", i, o.err)
		}
	}
	if lost == 0 {
		t.Errorf("no proposal was in flight (%d not leader of %d)", notLeader, accepted)
	}
	if leader.seq.IsLeader() {
		t.Errorf("isolated node still leads")
	}
	t.Logf("%d accepted: %d leadership lost, %d not leader", accepted, lost, notLeader)
}

// TestAddVoter adds a fresh node to a running cluster: it catches up from the log and
// then follows.
func TestAddVoter(t *testing.T) {
	nodes, leader := newCluster(t, 1, nil)
	for i := range 50 {
		if o := submitWait(t, leader.seq, fmt.Sprintf("a%d", i)); o.err != nil {
			t.Fatal(o.err)
		}
	}
	fresh := openNode(t, testConfig(t, "fresh"), newTestFSM())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.seq.AddVoter(ctx, fresh.id, fresh.seq.Addr()); err != nil {
		t.Fatalf("AddVoter: %v", err)
	}
	waitSameState(t, leader, fresh)
	if o := submitWait(t, leader.seq, "b"); o.err != nil {
		t.Fatal(o.err)
	}
	waitSameState(t, leader, append(nodes, fresh)...)
	if err := fresh.seq.Submit(newTracker(t, 1).proposal("c")); !errors.Is(err, ErrNotLeader) {
		t.Errorf("Submit on the new follower: got %v, want ErrNotLeader", err)
	}
	if err := leader.seq.RemoveServer(ctx, fresh.id); err != nil {
		t.Fatalf("RemoveServer: %v", err)
	}
	if servers, err := leader.seq.Servers(); err != nil || len(servers) != 1 {
		t.Errorf("Servers after remove: %v, %v", servers, err)
	}
	if o := submitWait(t, leader.seq, "d"); o.err != nil {
		t.Fatal(o.err)
	}
}

// TestCloseWithQueued closes a leader whose FSM is stuck, with one batch in flight and
// many proposals queued: queued ones fail with plain ErrShutdown (they never entered the
// log), the in-flight batch gets its real results, and every Done runs exactly once.
func TestCloseWithQueued(t *testing.T) {
	n := openSolo(t, "c", func(c *Config) {
		c.MaxInflightBatches = 1
		c.MaxBatchInputs = 8
	})
	release := n.fsm.block()

	const total = 200
	tr := newTracker(t, total)
	for i := range total {
		if err := n.seq.Submit(tr.proposal(fmt.Sprint(i))); err != nil {
			t.Fatalf("Submit %d: %v", i, err)
		}
		if i == 0 {
			// Let the first proposal become the stuck in-flight batch.
			waitFor(t, 5*time.Second, func() error {
				if n.seq.Stats().InflightBatches != 1 {
					return errors.New("first batch not in flight")
				}
				return nil
			})
		}
	}
	closed := make(chan error)
	go func() { closed <- n.seq.Close() }()
	late := newTracker(t, 1) // may be accepted if Close has not begun yet
	waitFor(t, 5*time.Second, func() error {
		if err := n.seq.Submit(late.proposal("late")); !errors.Is(err, ErrShutdown) {
			return fmt.Errorf("Submit while closing: %v", err)
		}
		if q := n.seq.Stats().QueueDepth; q != 0 {
			return fmt.Errorf("%d still queued", q)
		}
		return nil
	})
	release() // let the in-flight batch finish, so Close can stop Raft
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	var ok, shut int
	for i := range total {
		o, calls := tr.get(fmt.Sprint(i))
		switch {
		case calls != 1:
			t.Errorf("%d: Done called %d times", i, calls)
		case o.err == nil:
			ok++
		case errors.Is(o.err, ErrShutdown) && !errors.Is(o.err, ErrLeadershipLost):
			shut++
		default:
			t.Errorf("%d: got %v, want nil or plain ErrShutdown", i, o.err)
		}
	}
	if ok != 1 || ok+shut != total {
		t.Errorf("%d applied, %d shut down, want 1 applied and the rest shut down", ok, shut)
	}
	if err := n.seq.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := n.seq.Barrier(context.Background()); !errors.Is(err, ErrShutdown) {
		t.Errorf("Barrier after Close: got %v, want ErrShutdown", err)
	}
	if st := n.seq.Stats(); st.State != "Shutdown" {
		t.Errorf("State after Close: %s", st.State)
	}
}

// TestOverload fills the submit queue while the FSM is stuck: Submit returns
// ErrOverloaded rather than queue without bound (DESIGN.md §7), and every accepted
// proposal completes once the FSM moves again.
func TestOverload(t *testing.T) {
	n := openSolo(t, "o", func(c *Config) {
		c.MaxInflightBatches = 1
		c.MaxBatchInputs = 8
		c.MaxQueuedInputs = 16
	})
	cfg, fsm := n.cfg, n.fsm
	release := fsm.block()

	tr := newTracker(t, 100)
	accepted := 0
	for i := 0; ; i++ {
		err := n.seq.Submit(tr.proposal(fmt.Sprint(i)))
		if errors.Is(err, ErrOverloaded) {
			break
		}
		if err != nil {
			t.Fatalf("Submit %d: %v", i, err)
		}
		accepted++
		if accepted > cfg.MaxQueuedInputs+cfg.MaxBatchInputs {
			t.Fatalf("%d proposals accepted, queue unbounded", accepted)
		}
		if accepted == 1 {
			// Let the first proposal become the stuck in-flight batch.
			waitFor(t, 5*time.Second, func() error {
				if n.seq.Stats().InflightBatches != 1 {
					return errors.New("first batch not in flight")
				}
				return nil
			})
		}
	}
	if st := n.seq.Stats(); st.QueueDepth != cfg.MaxQueuedInputs || st.Overloaded != 1 {
		t.Errorf("Stats: queue %d overloaded %d, want %d and 1", st.QueueDepth, st.Overloaded, cfg.MaxQueuedInputs)
	}
	release()
	for range accepted {
		select {
		case args := <-tr.done:
			if o, _ := tr.get(args); o.err != nil {
				t.Errorf("%s: %v", args, o.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("outcomes missing")
		}
	}
}

// TestBatchLimits checks that entries respect MaxBatchBytes and MaxBatchInputs, and that
// MaxBatchDelay lets a batch gather inputs.
func TestBatchLimits(t *testing.T) {
	n := openSolo(t, "b", func(c *Config) {
		c.MaxBatchBytes = MinBatchBytes
		c.MaxBatchInputs = 5
		c.MaxBatchDelay = 20 * time.Millisecond
		c.HashCheckInterval = -1
	})
	cfg, fsm := n.cfg, n.fsm

	const total = 30
	tr := newTracker(t, total)
	for i := range total {
		args := fmt.Sprintf("%03d", i)
		p := tr.proposal(args)
		if i%2 == 0 {
			p.Item.Key = make([]byte, 1000) // 1 KiB items: a few per 4 KiB entry
		}
		if err := n.seq.Submit(p); err != nil {
			t.Fatal(err)
		}
	}
	for range total {
		select {
		case args := <-tr.done:
			if o, _ := tr.get(args); o.err != nil {
				t.Fatalf("%s: %v", args, o.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("outcomes missing")
		}
	}
	st := n.seq.Stats()
	fsm.mu.Lock()
	maxEntry, maxItems := fsm.maxEntry, fsm.maxItems
	fsm.mu.Unlock()
	if maxEntry > cfg.MaxBatchBytes || maxItems > cfg.MaxBatchInputs {
		t.Errorf("entry of %d bytes and %d items, limits %d and %d", maxEntry, maxItems, cfg.MaxBatchBytes, cfg.MaxBatchInputs)
	}
	if st.Batches >= total || st.HashChecks != 0 {
		t.Errorf("%d batches for %d inputs, %d hash checks; want fewer batches, none", st.Batches, total, st.HashChecks)
	}
}
