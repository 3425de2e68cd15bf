package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// TestDialPermissionDeniedText: a node that refuses the client's identity makes Dial
// fail at once with ErrPermissionDenied, and the text says so once, with the node's
// reason, and no package prefix twice (issue 20 item 10).
func TestDialPermissionDeniedText(t *testing.T) {
	n := newFakeNode(t, "a", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Code: wire.CodePermissionDenied, Message: `"bob" is not a user of this cluster (lockstep user add)`})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Dial(ctx, testConfig(t, n.addr))
	if !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("got %v, want ErrPermissionDenied", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Dial took %v, want it to fail at once", took)
	}
	msg := err.Error()
	if strings.Count(msg, "client:") != 1 || strings.Count(msg, "permission denied") != 1 || !strings.Contains(msg, "lockstep user add") {
		t.Errorf("text %q: want one \"client:\", one \"permission denied\" and the node's reason", msg)
	}
}

// TestUnknownMemberText: Remove and TransferLeadership of an id that is not a member say
// so once, naming the members there are (issue 20 item 10: "client: remove n9: client:
// unknown member").
func TestUnknownMemberText(t *testing.T) {
	var n *fakeNode
	n = startNode(t, "n1", func(fc *fakeConn, req wire.Request) {
		if req.Op == wire.OpStatus {
			st := wire.Status{NodeID: "n1", State: "Leader", Term: 1, ClientAddr: n.addr, LeaderClientAddr: n.addr, LeaderID: "n1",
				Nodes: []wire.NodeAddr{{ID: "n1", ClientAddr: n.addr}, {ID: "n2", ClientAddr: "127.0.0.1:1"}}}
			fc.reply(wire.Response{ID: req.ID, Value: value(t, st)})
		}
	})
	c, err := Open(testConfig(t, n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, call := range []func() error{
		func() error { return c.Cluster().RemoveMember(context.Background(), "n9") },
		func() error { return c.Cluster().TransferLeadership(context.Background(), "n9") },
	} {
		err := call()
		if !errors.Is(err, ErrUnknownMember) {
			t.Fatalf("#%d: got %v, want ErrUnknownMember", i, err)
		}
		msg := err.Error()
		if strings.Count(msg, "client:") != 1 || strings.Count(msg, "n9") != 1 || !strings.Contains(msg, "n1, n2") {
			t.Errorf("#%d: text %q: want one \"client:\", n9 named once, and the members n1, n2", i, msg)
		}
	}
}

// TestClosedText: a call on a closed client says so once, under one package prefix.
func TestClosedText(t *testing.T) {
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		fc.reply(wire.Response{ID: req.ID, Value: value(t, int64(1))})
	})
	c := dial(t, testConfig(t, n.addr))
	c.Close()
	_, err := c.CounterAdd(context.Background(), "k", 1)
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
	if msg := err.Error(); strings.Count(msg, "client:") > 1 || strings.Count(msg, "closed") != 1 {
		t.Errorf("text %q: want one \"client:\" at most and \"closed\" once", msg)
	}
}
