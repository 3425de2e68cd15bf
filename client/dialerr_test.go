package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// promptly bounds how long a definite refusal (another cluster, another protocol) may
// take to reach the caller: one dial and handshake on loopback, no retries.
const promptly = 500 * time.Millisecond

// TestRefusedPromptly runs the client against a real node with the wrong cluster id, and
// against the node's admin HTTP address: Dial, Status, ClusterStatus, Invoke and the admin
// calls must all fail at once with an error matching ErrClusterMismatch, or
// ErrSpeaksHTTP and ErrProtocolVersion, with the default retry settings.
func TestRefusedPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1,
		Node: node.Config{Logger: quiet, ClusterID: "right", AdminAddr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	node := lc.ClientAddrs()[0]
	admin := lc.Nodes[0].AdminAddr()
	if admin == "" {
		t.Fatal("the node has no admin address")
	}

	tests := []struct {
		name      string
		addr, id  string
		want      []error
		mentions  string
		serverErr bool // the node itself refused: the error is a *client.Error
	}{
		{"wrong cluster id", node, "wrong", []error{client.ErrClusterMismatch, client.ErrUnreachable}, "cluster", true},
		{"admin HTTP address", admin, "right", []error{client.ErrSpeaksHTTP, client.ErrProtocolVersion, client.ErrUnreachable}, "HTTP", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := client.DefaultConfig() // MaxRetries 10: a retried refusal takes seconds
			cfg.Addrs, cfg.ClusterID, cfg.TLS = []string{tt.addr}, tt.id, lc.ClientConfig().TLS
			// Each check has a context of its own, so that a refusal retried (the bug) fails
			// the check after a few seconds rather than the whole test at its end.
			check := func(what string, f func(ctx context.Context) error) {
				t.Helper()
				ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				start := time.Now()
				err := f(ctx)
				took := time.Since(start)
				for _, want := range tt.want {
					if !errors.Is(err, want) {
						t.Errorf("%s: got %v, want an error matching %v", what, err, want)
					}
				}
				if !strings.Contains(err.Error(), tt.mentions) {
					t.Errorf("%s: %q does not mention %q", what, err, tt.mentions)
				}
				var ce *client.Error
				if errors.As(err, &ce) != tt.serverErr {
					t.Errorf("%s: got %#v, want a *client.Error: %t", what, err, tt.serverErr)
				}
				if took > promptly {
					t.Errorf("%s: took %v, want at most %v", what, took, promptly)
				}
			}
			check("Dial", func(ctx context.Context) error {
				c, err := client.Dial(ctx, cfg)
				if err == nil {
					c.Close()
				}
				return err
			})
			c, err := client.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			check("Status", func(ctx context.Context) error { _, err := c.Status(ctx, ""); return err })
			check("ClusterStatus", func(ctx context.Context) error {
				cs, err := c.Cluster().Status(ctx)
				if err != nil {
					t.Fatalf("ClusterStatus: %v", err)
				}
				if len(cs.Nodes) != 1 {
					t.Fatalf("ClusterStatus: %+v, want one node", cs)
				}
				return cs.Nodes[0].Err
			})
			check("Invoke", func(ctx context.Context) error { _, err := c.CounterAdd(ctx, "k", 1); return err })
			check("Query", func(ctx context.Context) error {
				_, err := client.QueryAs[builtin.KVGetResult](ctx, c, builtin.KVGet, []byte("k"), builtin.NoArgs{}, client.ReadAny)
				return err
			})
			check("ReadStream", func(ctx context.Context) error { _, _, err := c.ReadStream(ctx, "s", 0, 0, 1); return err })
			check("Members", func(ctx context.Context) error { _, err := c.Cluster().Members(ctx); return err })
			check("TransferLeadership", func(ctx context.Context) error { return c.Cluster().TransferLeadership(ctx, "") })
			check("AddVoter", func(ctx context.Context) error {
				return c.Cluster().AddMember(ctx, client.JoinRequest{ID: "x", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2"})
			})
		})
	}
}

// TestDialWaitsForElection restarts every node of a real cluster and dials it at once,
// while it elects a leader, with a single retry allowed: Dial waits for the leader within
// its context instead of giving up after MaxRetries, and the client then works.
func TestDialWaitsForElection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 3, Node: node.Config{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	for i := range lc.Nodes {
		lc.Kill(i)
	}
	for i := range lc.Nodes {
		if err := lc.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	if lc.Leader() >= 0 {
		t.Fatal("the restarted cluster has a leader already; the test needs an election in progress")
	}
	cfg := client.DefaultConfig()
	cfg.Addrs, cfg.TLS = lc.ClientAddrs(), lc.ClientConfig().TLS
	cfg.MaxRetries = 1
	cfg.RetryBackoff, cfg.MaxRetryBackoff = time.Millisecond, 10*time.Millisecond
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial while the cluster elects: %v", err)
	}
	defer c.Close()
	if _, err := c.CounterAdd(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
}

// TestDialBoundedByContext checks that Dial against a cluster without a quorum gives up
// when its context ends, with an error that says so.
func TestDialBoundedByContext(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 3, Node: node.Config{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	for i := range lc.Nodes {
		lc.Kill(i)
	}
	if err := lc.Restart(0); err != nil { // one of three: no quorum, no leader
		t.Fatal(err)
	}
	cfg := client.DefaultConfig()
	cfg.Addrs, cfg.TLS = lc.ClientAddrs()[:1], lc.ClientConfig().TLS
	cfg.MaxRetries = 1
	const wait = 500 * time.Millisecond
	dctx, dcancel := context.WithTimeout(ctx, wait)
	defer dcancel()
	start := time.Now()
	_, err = client.Dial(dctx, cfg)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrRetriesExhausted) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	if d := time.Since(start); d < wait {
		t.Fatalf("Dial gave up after %v, before its context's %v", d, wait)
	}
}
