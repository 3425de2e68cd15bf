package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// statusValue returns the msgpack encoding of a status of node id in state, naming the
// leader at leaderAddr and the members ids.
func statusValue(t *testing.T, id, state, leaderAddr string, ids ...string) []byte {
	t.Helper()
	st := wire.Status{NodeID: id, State: state, LeaderClientAddr: leaderAddr}
	for _, m := range ids {
		st.Nodes = append(st.Nodes, wire.NodeAddr{ID: m, RaftAddr: m + ":r", ClientAddr: m + ":c"})
	}
	return value(t, st)
}

// TestAdminCallRetries checks which membership-change answers are retried: NotLeader is
// followed to the hint, NotReady is tried again, and an attempt that may have run (the
// connection broke after sending, or the leader answered UnknownOutcome) ends a leadership
// transfer with ErrUnknownOutcome, sent once, while a join or remove (the same effect when
// run twice) is sent again until it gets a definite answer.
func TestAdminCallRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// b leads; it refuses the first Remove as not ready, then runs it.
	notReady := true
	b := newFakeNode(t, "b", func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: statusValue(t, "b", "Leader", "", "a", "b")})
		case wire.OpRemove:
			if notReady {
				notReady = false
				fc.reply(wire.Response{ID: req.ID, Code: wire.CodeNotReady})
				return
			}
			fc.reply(wire.Response{ID: req.ID})
		}
	})
	// a follows b.
	a := newFakeNode(t, "a", func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: statusValue(t, "a", "Follower", b.addr, "a", "b")})
		default:
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeNotLeader, Leader: b.addr})
		}
	})
	c, err := Open(testConfig(t, a.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Cluster().RemoveMember(ctx, "a"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if got := len(b.requests(wire.OpRemove)); got != 2 {
		t.Errorf("Remove reached the leader %d times, want 2 (NotReady, then OK)", got)
	}
	ms, err := c.Cluster().Members(ctx)
	if err != nil || len(ms) != 2 || ms[0].Role != RoleFollower || ms[1].Role != RoleLeader || ms[1].ClientAddr != "b:c" {
		t.Errorf("Members: %+v, %v", ms, err)
	}

	// A node id the leader does not list is refused without sending anything.
	if err := c.Cluster().RemoveMember(ctx, "z"); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("Remove(z): %v, want ErrUnknownMember", err)
	}
	if err := c.Cluster().TransferLeadership(ctx, "z"); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("TransferLeadership(z): %v, want ErrUnknownMember", err)
	}
	if got := len(b.requests(wire.OpRemove)) + len(b.requests(wire.OpTransferLeader)); got != 2 {
		t.Errorf("the leader got %d removes and transfers, want the 2 removes of a", got)
	}

	// d drops the connection after receiving a transfer; it answers UnknownOutcome to the
	// first join, and runs the second.
	joins := 0
	d := newFakeNode(t, "d", func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: statusValue(t, "d", "Leader", "", "d", "x")})
		case wire.OpTransferLeader:
			fc.drop()
		case wire.OpJoin:
			if joins++; joins == 1 {
				fc.reply(wire.Response{ID: req.ID, Code: wire.CodeUnknownOutcome})
				return
			}
			fc.reply(wire.Response{ID: req.ID})
		}
	})
	cd, err := Open(testConfig(t, d.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cd.Close()
	if err := cd.Cluster().TransferLeadership(ctx, "x"); !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, ErrConnLost) {
		t.Errorf("TransferLeadership over a dropped connection: %v, want ErrUnknownOutcome and ErrConnLost", err)
	}
	if got := len(d.requests(wire.OpTransferLeader)); got != 1 {
		t.Errorf("transfer sent %d times, want 1", got)
	}
	if err := cd.Cluster().AddMember(ctx, JoinRequest{ID: "y", RaftAddr: "y:r", ClientAddr: "y:c"}); err != nil {
		t.Errorf("AddVoter answered UnknownOutcome, then OK: %v, want nil", err)
	}
	if got := len(d.requests(wire.OpJoin)); got != 2 {
		t.Errorf("join sent %d times, want 2 (in doubt, then again)", got)
	}
	if cd.SessionID() != 0 || len(d.requests(wire.OpOpenSession)) != 0 {
		t.Errorf("the admin API opened a session")
	}
}

// TestRequestRebuild: the leader's grant is the rebuild point; its refusal (an answer with
// no index) is a *RebuildRefusedError matching ErrRebuildRefused and holding the leader's
// reason as it sent it.
func TestRequestRebuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const reason = "demoting x would leave 2 voters"
	n := newFakeNode(t, "n", func(fc *fakeConn, req wire.Request) {
		switch {
		case req.Op == wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: statusValue(t, "n", "Leader", "", "n", "x", "y")})
		case req.Op == wire.OpRebuild && string(req.Key) == "x":
			fc.reply(wire.Response{ID: req.ID, Value: []byte(reason)})
		case req.Op == wire.OpRebuild:
			fc.reply(wire.Response{ID: req.ID, NextOffset: 42})
		}
	})
	c, err := Open(testConfig(t, n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if from, err := NewPeer(c).RequestRebuild(ctx, "y"); err != nil || from != 42 {
		t.Errorf("granted rebuild: got %d, %v, want 42, nil", from, err)
	}
	from, err := NewPeer(c).RequestRebuild(ctx, "x")
	var refused *RebuildRefusedError
	if !errors.Is(err, ErrRebuildRefused) || !errors.As(err, &refused) || from != 0 {
		t.Fatalf("refused rebuild: got %d, %v, want 0 and a *RebuildRefusedError", from, err)
	}
	if refused.ID != "x" || refused.Reason != reason {
		t.Errorf("refusal: got %+v, want node x and reason %q", refused, reason)
	}
}
