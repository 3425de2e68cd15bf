package client

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
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

// TestClientCloseStopsHeartbeats: the client's Close ends its members' heartbeats before it
// returns, a heartbeat in flight included, without a warning, and a join after Close is
// ErrClosed.
func TestClientCloseStopsHeartbeats(t *testing.T) {
	beat := make(chan struct{}, 1)
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		switch req.Procedure {
		case builtin.GroupJoin:
			fc.reply(wire.Response{ID: req.ID, Value: value(t, builtin.GroupAssignment{Generation: 1, Partitions: []int32{0}})})
		case builtin.GroupHeartbeat:
			signal(beat) // and no answer
		}
	})
	cfg := testConfig(t, n.addr)
	var logs syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := dial(t, cfg)
	m, err := c.JoinGroup(context.Background(), "g", "s", "m", WithSessionTimeout(time.Minute), WithHeartbeatInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-beat:
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat")
	}
	c.Close()
	select {
	case <-m.done:
	default:
		t.Fatal("the heartbeat loop still runs after the client's Close returned")
	}
	if s := logs.String(); s != "" {
		t.Errorf("Close logged %q; want nothing", s)
	}
	if _, err := c.JoinGroup(context.Background(), "g", "s", "m2"); !errors.Is(err, ErrClosed) {
		t.Errorf("JoinGroup after Close: %v, want ErrClosed", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
