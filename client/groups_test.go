package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
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
