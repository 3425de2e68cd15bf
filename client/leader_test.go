package client

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// freezeCluster is two fake nodes: a, the leader of term 1 until frozen is set (then it
// answers nothing at all, like a SIGSTOPped process), and b, a follower that names a in
// term 1 until campaigning is set, then a candidate of term 2 that knows no leader, and
// once elected is set the leader of term 2. Invocations answer their Seq.
type freezeCluster struct {
	a, b                         *fakeNode
	frozen, campaigning, elected atomic.Bool
}

func newFreezeCluster(t *testing.T) *freezeCluster {
	fz := &freezeCluster{}
	status := func(self string, st wire.Status) []byte {
		st.ClientAddr = self
		st.Nodes = []wire.NodeAddr{{ID: "a", ClientAddr: fz.a.addr}, {ID: "b", ClientAddr: fz.b.addr}}
		return value(t, st)
	}
	fz.a = startNode(t, "a", func(fc *fakeConn, req wire.Request) {
		if fz.frozen.Load() {
			return
		}
		switch req.Op {
		case wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: status(fz.a.addr, wire.Status{State: "Leader", Term: 1, LeaderClientAddr: fz.a.addr})})
		case wire.OpInvoke:
			fc.reply(wire.Response{ID: req.ID, Value: value(t, int64(req.Seq))})
		}
	})
	fz.b = startNode(t, "b", func(fc *fakeConn, req wire.Request) {
		elected := fz.elected.Load()
		switch {
		case req.Op == wire.OpStatus && elected:
			fc.reply(wire.Response{ID: req.ID, Value: status(fz.b.addr, wire.Status{State: "Leader", Term: 2, LeaderClientAddr: fz.b.addr})})
		case req.Op == wire.OpStatus && fz.campaigning.Load():
			fc.reply(wire.Response{ID: req.ID, Value: status(fz.b.addr, wire.Status{State: "Candidate", Term: 2})})
		case req.Op == wire.OpInvoke && !elected && fz.campaigning.Load():
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeNotLeader})
		case req.Op == wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: status(fz.b.addr, wire.Status{State: "Follower", Term: 1, LeaderClientAddr: fz.a.addr})})
		case req.Op == wire.OpInvoke && elected:
			fc.reply(wire.Response{ID: req.ID, Value: value(t, int64(req.Seq))})
		case req.Op == wire.OpInvoke:
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeNotLeader, Leader: fz.a.addr})
		}
	})
	return fz
}

// TestFrozenLeaderAfterCallerDeadline: a request that ended on the caller's deadline at a
// silent leader makes the next request ask the other nodes, and go to the leader they
// name in a newer term, not back to the frozen one. Default timeouts.
func TestFrozenLeaderAfterCallerDeadline(t *testing.T) {
	fz := newFreezeCluster(t)
	cfg := testConfig(t, fz.a.addr, fz.b.addr)
	c := dial(t, cfg)
	if _, err := c.CounterAdd(context.Background(), "k", 1); err != nil {
		t.Fatal(err)
	}
	fz.frozen.Store(true)
	fz.elected.Store(true)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.CounterAdd(ctx, "k", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("at the frozen leader: got %v, want context.DeadlineExceeded", err)
	}
	atA := len(fz.a.requests(wire.OpInvoke))

	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	start := time.Now()
	got, err := c.CounterAdd(ctx2, "k", 1)
	if err != nil {
		t.Fatalf("after the deadline: %v (leader guess %s; a is %s)", err, c.Leader(), fz.a.addr)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the next request took %v, want well under SuspectAfter", took)
	}
	if got != 3 {
		t.Errorf("seq: got %d, want 3", got)
	}
	if n := len(fz.a.requests(wire.OpInvoke)); n != atA {
		t.Errorf("the frozen node got %d more invocations, want none", n-atA)
	}
	if c.Leader() != fz.b.addr {
		t.Errorf("leader guess %s, want b (%s)", c.Leader(), fz.b.addr)
	}
}

// TestFrozenLeaderWhileWaiting: a request waiting at a leader that stopped answering, with
// a long deadline and the default RequestTimeout, moves to the new leader once the others
// name it, well before RequestTimeout; until then, the others' hints and status naming
// the frozen leader in the current term keep the client there. Every attempt carries the
// same session and Seq.
func TestFrozenLeaderWhileWaiting(t *testing.T) {
	fz := newFreezeCluster(t)
	cfg := testConfig(t, fz.a.addr, fz.b.addr)
	cfg.SuspectAfter = 200 * time.Millisecond
	c := dial(t, cfg)
	if _, err := c.CounterAdd(context.Background(), "k", 1); err != nil {
		t.Fatal(err)
	}
	fz.frozen.Store(true)
	const election = 700 * time.Millisecond
	elect := time.AfterFunc(election, func() { fz.elected.Store(true) })
	defer elect.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	got, err := c.CounterAdd(ctx, "k", 1)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if got != 2 {
		t.Errorf("seq: got %d, want 2", got)
	}
	if took > election+time.Second {
		t.Errorf("took %v; the new leader was elected after %v (RequestTimeout %v)", took, election, c.cfg.RequestTimeout)
	}
	var seqs []uint64
	for _, n := range []*fakeNode{fz.a, fz.b} {
		for _, r := range n.requests(wire.OpInvoke) {
			if r.Seq == 2 {
				seqs = append(seqs, r.Session)
			}
		}
	}
	for _, s := range seqs {
		if s != seqs[0] {
			t.Errorf("attempts of seq 2 in sessions %v, want one", seqs)
		}
	}
	t.Logf("took %v, %d attempts", took, len(seqs))
}

// TestFrozenLeaderDuringElection: the others first name the frozen leader, then no leader
// (an election runs), then a new one. The client leaves the frozen node when they stop
// naming it, and the request waiting there is retried at the new leader as soon as a probe
// names it, not when RequestTimeout passes.
func TestFrozenLeaderDuringElection(t *testing.T) {
	fz := newFreezeCluster(t)
	cfg := testConfig(t, fz.a.addr, fz.b.addr)
	cfg.SuspectAfter = 100 * time.Millisecond
	c := dial(t, cfg)
	if _, err := c.CounterAdd(context.Background(), "k", 1); err != nil {
		t.Fatal(err)
	}
	fz.frozen.Store(true)
	const campaign, election = 300 * time.Millisecond, 800 * time.Millisecond
	t1 := time.AfterFunc(campaign, func() { fz.campaigning.Store(true) })
	defer t1.Stop()
	t2 := time.AfterFunc(election, func() { fz.elected.Store(true) })
	defer t2.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	got, err := c.CounterAdd(ctx, "k", 1)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if got != 2 {
		t.Errorf("seq: got %d, want 2", got)
	}
	if took > election+time.Second {
		t.Errorf("took %v; the new leader was elected after %v (RequestTimeout %v)", took, election, c.cfg.RequestTimeout)
	}
	t.Logf("took %v", took)
}

// TestElectionEndsRetryPause: a request pausing between retries, with a long pause, goes
// on as soon as a probe names the leader of a newer term, instead of sleeping out its
// pause (issue 14, failover: retry pauses grown while the cluster had no leader outlasted
// the election). The seed leader a is down; b is a candidate of term 2, then its leader.
func TestElectionEndsRetryPause(t *testing.T) {
	var elected atomic.Bool
	var b *fakeNode
	b = startNode(t, "b", func(fc *fakeConn, req wire.Request) {
		switch {
		case req.Op == wire.OpStatus && elected.Load():
			fc.reply(wire.Response{ID: req.ID, Value: value(t, wire.Status{State: "Leader", Term: 2, ClientAddr: b.addr, LeaderClientAddr: b.addr})})
		case req.Op == wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: value(t, wire.Status{State: "Candidate", Term: 2, ClientAddr: b.addr})})
		case elected.Load():
			fc.reply(wire.Response{ID: req.ID, Value: value(t, int64(1))})
		default:
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeNotLeader})
		}
	})
	a := startNode(t, "a", func(fc *fakeConn, req wire.Request) {})
	aAddr := a.addr
	a.close() // the leader is gone: connecting to it is refused
	cfg := testConfig(t, aAddr, b.addr)
	cfg.RetryBackoff, cfg.MaxRetryBackoff = 4*time.Second, 4*time.Second
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.AfterFunc(200*time.Millisecond, func() { elected.Store(true) })
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CounterAdd(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	// Without the wake-up the first pause alone is 2–4 s.
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Fatalf("the request took %v after the election at 200ms: the retry pause outlasted it", took)
	}
}
