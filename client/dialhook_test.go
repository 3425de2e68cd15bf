package client

import (
	"context"
	"net"
	"sync"
	"testing"
)

// TestDialHook: with Config.Dial set, every connection to a node is opened by it, for the
// address the client meant (here a name only the hook can resolve), and the client works
// over what it returns.
func TestDialHook(t *testing.T) {
	n := startNode(t, "n1", nil)
	var mu sync.Mutex
	var asked []string
	cfg := testConfig(t, "node-one:1")
	cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		asked = append(asked, addr)
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, "tcp", n.addr)
	}
	dial(t, cfg) // opens a session: a request and its answer through the hook's connection
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 || asked[0] != "node-one:1" {
		t.Fatalf("hook asked for %v, want node-one:1", asked)
	}
}
