package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
)

// TestAdmin runs the admin API against a real 3-node cluster: members, bad input,
// leadership transfer, a real node joining and being removed, and cluster status with
// one node stopped and then without a quorum.
func TestAdmin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 3, Node: node.Config{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cfg := client.DefaultConfig()
	cfg.Addrs, cfg.TLS = lc.ClientAddrs(), lc.ClientConfig().TLS
	cfg.MaxRetries = -1 // ctx bounds the retries: elections happen under load
	c, err := client.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// members returns the leader's id as Members reports it, or an error unless the
	// member ids are want and one of them leads. Right after an election the new
	// leader's list may lag for a moment (see Members), so callers wait for it.
	members := func(want ...string) (string, error) {
		ms, err := c.Cluster().Members(ctx)
		if err != nil {
			return "", err
		}
		var ids []string
		var lead string
		for _, m := range ms {
			ids = append(ids, m.ID)
			if m.RaftAddr == "" || m.ClientAddr == "" || (m.Role != client.RoleLeader && m.Role != client.RoleFollower) {
				return "", fmt.Errorf("member %+v", m)
			}
			if m.Role == client.RoleLeader {
				if lead != "" {
					return "", fmt.Errorf("two leaders: %s and %s", lead, m.ID)
				}
				lead = m.ID
			}
		}
		if !slices.Equal(ids, want) || lead == "" {
			return "", fmt.Errorf("members %+v, want ids %v and one leader", ms, want)
		}
		return lead, nil
	}
	// leader waits until Members lists want, and returns the leader it names.
	leader := func(t *testing.T, want ...string) string {
		t.Helper()
		var lead string
		testutil.WaitFor(t, 20*time.Second, func() (err error) {
			lead, err = members(want...)
			return err
		})
		return lead
	}
	three := []string{"n1", "n2", "n3"}

	t.Run("Members", func(t *testing.T) {
		lead := leader(t, three...)
		i, err := lc.WaitLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := lc.Nodes[i].ID(); lead != want {
			t.Logf("Members named leader %s, the cluster now %s (an election in between?)", lead, want)
		}
		ms, err := c.Cluster().Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if n := lc.Nodes[i]; m.ClientAddr != n.ClientAddr() || m.RaftAddr != n.RaftAddr() {
				t.Errorf("member %+v, node %s at %s / %s", m, n.ID(), n.ClientAddr(), n.RaftAddr())
			}
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		if err := c.Cluster().RemoveMember(ctx, "n9"); !errors.Is(err, client.ErrUnknownMember) {
			t.Errorf("Remove(n9): %v, want ErrUnknownMember", err)
		}
		if err := c.Cluster().RemoveMember(ctx, ""); !errors.Is(err, client.ErrBadArguments) {
			t.Errorf("Remove(\"\"): %v, want ErrBadArguments", err)
		}
		if err := c.Cluster().TransferLeadership(ctx, "n9"); !errors.Is(err, client.ErrUnknownMember) {
			t.Errorf("TransferLeadership(n9): %v, want ErrUnknownMember", err)
		}
		if err := c.Cluster().AddMember(ctx, client.JoinRequest{ID: "n9"}); !errors.Is(err, client.ErrBadArguments) {
			t.Errorf("AddVoter without addresses: %v, want ErrBadArguments", err)
		}
		// The leader refuses a node of another partition count.
		n := lc.Nodes[0]
		bad := client.JoinRequest{ID: "n9", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2",
			Partitions: n.FSM().Partitions() + 1, Procedures: n.FSM().Fingerprint()}
		var we *client.Error
		if err := c.Cluster().AddMember(ctx, bad); !errors.Is(err, client.ErrBadArguments) || !errors.As(err, &we) {
			t.Errorf("AddVoter with another partition count: %v, want the leader's ErrBadArguments", err)
		}
		// Nothing changed.
		leader(t, three...)
		if c.SessionID() != 0 {
			t.Errorf("the admin API opened session %d", c.SessionID())
		}
	})

	t.Run("TransferLeadership", func(t *testing.T) {
		before := leader(t, three...)
		if err := c.Cluster().TransferLeadership(ctx, before); err != nil {
			t.Fatalf("transfer to the leader itself: %v", err)
		}
		target := "n1"
		if before == target {
			target = "n2"
		}
		if err := c.Cluster().TransferLeadership(ctx, target); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 20*time.Second, func() error {
			got, err := members(three...)
			if err == nil && got != target {
				err = fmt.Errorf("leader %s, want %s", got, target)
			}
			return err
		})
	})

	t.Run("JoinAndRemove", func(t *testing.T) {
		n4, err := node.Start(node.Config{ID: "n4", DataDir: t.TempDir(), Logger: quiet, CertsDir: lc.CertsDir()}, procedures.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		defer n4.Close()
		err = c.Cluster().AddMember(ctx, client.JoinRequest{ID: "n4", RaftAddr: n4.RaftAddr(), ClientAddr: n4.ClientAddr(),
			Partitions: n4.FSM().Partitions(), Procedures: n4.FSM().Fingerprint(), Build: node.BuildTarget()})
		if err != nil {
			t.Fatal(err)
		}
		leader(t, "n1", "n2", "n3", "n4")
		testutil.WaitFor(t, 20*time.Second, func() error {
			st, err := c.Status(ctx, n4.ClientAddr())
			if err != nil || !st.Ready || st.LeaderID == "" {
				return fmt.Errorf("n4: %+v, %v", st, err)
			}
			cs, err := c.Cluster().Status(ctx)
			if err != nil || len(cs.Nodes) != 4 || len(cs.Failed()) != 0 {
				return fmt.Errorf("cluster status with n4: %+v, %v", cs, err)
			}
			return nil
		})
		if err := c.Cluster().RemoveMember(ctx, "n4"); err != nil {
			t.Fatal(err)
		}
		leader(t, three...)
	})

	t.Run("ClusterStatus", func(t *testing.T) {
		testutil.WaitFor(t, 20*time.Second, func() error {
			cs, err := c.Cluster().Status(ctx)
			if err != nil {
				return err
			}
			var ids []string
			for _, n := range cs.Nodes {
				ids = append(ids, n.ID)
				if n.Err != nil || n.Status.NodeID != n.ID || !n.Status.Ready || len(n.Status.Hashes) != n.Status.Partitions {
					return fmt.Errorf("node %+v", n)
				}
			}
			if !slices.Equal(ids, three) || !slices.Contains(three, cs.Leader) {
				return fmt.Errorf("cluster status: nodes %v, leader %q", ids, cs.Leader)
			}
			return nil
		})
	})

	t.Run("NodeStopped", func(t *testing.T) {
		lead, err := lc.WaitLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		victim := (lead + 1) % 3
		addr, id := lc.ClientAddrs()[victim], lc.Nodes[victim].ID()
		lc.Kill(victim)
		// One seed: the stopped node is found through the leader's member list.
		one := cfg
		one.Addrs = []string{lc.ClientAddrs()[lead]}
		c1, err := client.Open(one)
		if err != nil {
			t.Fatal(err)
		}
		defer c1.Close()
		testutil.WaitFor(t, 20*time.Second, func() error {
			cs, err := c1.Cluster().Status(ctx)
			if err != nil {
				return err
			}
			failed := cs.Failed()
			if len(cs.Nodes) != 3 || len(failed) != 1 || cs.Nodes[2].Addr != addr || cs.Nodes[2].ID != id ||
				!errors.Is(failed[0].Err, client.ErrUnreachable) || cs.Leader == "" || cs.Leader == id {
				return fmt.Errorf("cluster status with %s stopped: %+v", id, cs)
			}
			return nil
		})
	})

	t.Run("NoQuorum", func(t *testing.T) {
		// Stop a second node: no leader is left. Status and ClusterStatus still answer;
		// Members waits for a leader until its context ends.
		alive := -1
		for i, n := range lc.Nodes {
			if n != nil && alive < 0 {
				alive = i
				continue
			}
			lc.Kill(i)
		}
		c2, err := client.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		cs, err := c2.Cluster().Status(ctx)
		if err != nil || len(cs.Nodes) != 3 || len(cs.Failed()) != 2 || cs.Nodes[0].ID != lc.Nodes[alive].ID() {
			t.Fatalf("cluster status without a quorum: %+v, %v", cs, err)
		}
		for _, n := range cs.Failed() {
			if !errors.Is(n.Err, client.ErrUnreachable) {
				t.Errorf("node %s: %v, want ErrUnreachable", n.Addr, n.Err)
			}
		}
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		if _, err := c2.Cluster().Members(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Members without a leader: %v, want the context's deadline", err)
		}
	})
}

// TestOpenContactsNobody checks that Open needs no reachable node, and that Status and
// ClusterStatus report a node nobody listens at as unreachable.
func TestOpenContactsNobody(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cfg := client.DefaultConfig()
	cfg.Addrs, cfg.Insecure = []string{dead}, true
	c, err := client.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Status(ctx, dead); !errors.Is(err, client.ErrUnreachable) {
		t.Errorf("Status: %v, want ErrUnreachable", err)
	}
	cs, err := c.Cluster().Status(ctx)
	if err != nil || len(cs.Nodes) != 1 || cs.Nodes[0].Addr != dead || !errors.Is(cs.Nodes[0].Err, client.ErrUnreachable) {
		t.Fatalf("ClusterStatus: %+v, %v", cs, err)
	}
	if _, err := client.Open(client.Config{}); !errors.Is(err, client.ErrBadConfig) {
		t.Errorf("Open without addresses: %v, want ErrBadConfig", err)
	}
	c.Close()
	if _, err := c.Cluster().Status(ctx); !errors.Is(err, client.ErrClosed) {
		t.Errorf("ClusterStatus after Close: %v, want ErrClosed", err)
	}
}
