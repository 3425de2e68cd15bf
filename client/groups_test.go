package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestJoinGroupBadSessionTimeout: a session timeout below the cluster's 1 ms precision is
// ErrBadArguments, and the join is not sent.
func TestJoinGroupBadSessionTimeout(t *testing.T) {
	n := newFakeNode(t, "n", func(fc *fakeConn, req wire.Request) {})
	c, err := Open(testConfig(t, n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, d := range []time.Duration{0, -time.Second, time.Millisecond - 1} {
		if _, err := c.JoinGroup(context.Background(), "g", "s", "m", WithSessionTimeout(d)); !errors.Is(err, ErrBadArguments) {
			t.Errorf("#%d: timeout %v: got %v, want ErrBadArguments", i, d, err)
		}
	}
	if got := n.requests(wire.OpInvoke); len(got) != 0 {
		t.Errorf("the node got %d invocations, want none", len(got))
	}
}

// TestGroupMemberCloseDoesNotWaitForHeartbeat: Close stops a heartbeat in flight to a node
// that does not answer, rather than waiting out its heartbeat interval.
func TestGroupMemberCloseDoesNotWaitForHeartbeat(t *testing.T) {
	beat := make(chan struct{}, 1)
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		switch req.Procedure {
		case builtin.GroupJoin:
			fc.reply(wire.Response{ID: req.ID, Value: value(t, builtin.GroupAssignment{Generation: 1, Partitions: []int32{0}})})
		case builtin.GroupHeartbeat:
			signal(beat) // and no answer
		}
	})
	c := dial(t, testConfig(t, n.addr))
	const interval = 500 * time.Millisecond
	m, err := c.JoinGroup(context.Background(), "g", "s", "m", WithSessionTimeout(time.Minute), WithHeartbeatInterval(interval))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-beat:
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat")
	}
	start := time.Now()
	m.Close()
	if took := time.Since(start); took >= interval/2 {
		t.Fatalf("Close took %v with a heartbeat in flight; want it stopped at once", took)
	}
	if err := m.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Err after Close: %v, want ErrClosed", err)
	}
}
