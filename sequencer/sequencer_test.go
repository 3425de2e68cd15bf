package sequencer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"

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
	// Stage timings: every committed batch is timed, and a commit round through Raft
	// (fsync included) takes measurable time.
	if st.RoundBatches != st.Batches || st.RaftTime <= 0 || st.QueueTime < 0 || st.ReplyTime <= 0 {
		t.Errorf("stage timings: %d of %d batches timed, queue %v, raft %v, reply %v",
			st.RoundBatches, st.Batches, st.QueueTime, st.RaftTime, st.ReplyTime)
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
			testutil.WaitFor(t, 5*time.Second, func() error {
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
	testutil.WaitFor(t, 5*time.Second, func() error {
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
			testutil.WaitFor(t, 5*time.Second, func() error {
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
