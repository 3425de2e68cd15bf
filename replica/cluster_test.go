package replica

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/sequencer"
)

// testCluster runs real nodes in this process: real Raft over TCP on 127.0.0.1 with
// OS-chosen ports, real fsynced logs in temp dirs.
type testCluster struct {
	t     *testing.T
	nodes []*Node // nil where stopped
	cfgs  []NodeConfig
	reg   func() *procedures.Registry
}

// clusterOptions tune a test cluster.
type clusterOptions struct {
	nodes      int
	partitions int
	snapshots  bool // small snapshot threshold: 64 entries
	registry   func(i int) *procedures.Registry
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// startCluster bootstraps a new cluster of opts.nodes nodes and waits for a ready leader.
func startCluster(t *testing.T, opts clusterOptions) *testCluster {
	t.Helper()
	if opts.partitions == 0 {
		opts.partitions = 4
	}
	if opts.registry == nil {
		opts.registry = func(int) *procedures.Registry { return procedures.Builtins() }
	}
	c := &testCluster{t: t}
	// Bind every node first (port 0) so the bootstrap list can name real addresses.
	for i := 0; i < opts.nodes; i++ {
		cfg := NodeConfig{
			ID:                  fmt.Sprintf("n%d", i+1),
			DataDir:             t.TempDir(),
			Replica:             Config{Partitions: opts.partitions},
			Logger:              testLogger(t),
			HashCompareInterval: 200 * time.Millisecond,
		}
		cfg.Sequencer.HashCheckInterval = 100 * time.Millisecond
		cfg.Sequencer.HeartbeatTimeout = time.Second
		cfg.Sequencer.ElectionTimeout = time.Second
		cfg.Sequencer.LeaderLeaseTimeout = 500 * time.Millisecond
		if opts.snapshots {
			cfg.Sequencer.SnapshotThreshold = 64
			cfg.Sequencer.SnapshotInterval = 200 * time.Millisecond
		}
		n, err := StartNode(cfg, opts.registry(i))
		if err != nil {
			t.Fatalf("start node %d: %v", i, err)
		}
		cfg.RaftAddr, cfg.ClientAddr = n.RaftAddr(), n.ClientAddr()
		c.nodes = append(c.nodes, n)
		c.cfgs = append(c.cfgs, cfg)
	}
	var peers []Peer
	for _, cfg := range c.cfgs {
		peers = append(peers, Peer{ID: cfg.ID, RaftAddr: cfg.RaftAddr, ClientAddr: cfg.ClientAddr})
	}
	for i, n := range c.nodes {
		c.cfgs[i].Bootstrap = peers
		n.cfg.Bootstrap = peers // the first leader records every peer's addresses
	}
	servers := make([]sequencer.Server, len(peers))
	for i, p := range peers {
		servers[i] = sequencer.Server{ID: p.ID, Addr: p.RaftAddr}
	}
	if err := c.nodes[0].seq.Bootstrap(servers); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	c.reg = func() *procedures.Registry { return opts.registry(0) }
	t.Cleanup(c.stopAll)
	c.waitLeader()
	return c
}

// leader returns the ready leader, or nil.
func (c *testCluster) leader() *Node {
	for _, n := range c.nodes {
		if n != nil && n.seq.IsLeader() && n.leaderReady.Load() {
			return n
		}
	}
	return nil
}

func (c *testCluster) waitLeader() *Node {
	c.t.Helper()
	var l *Node
	waitFor(c.t, 20*time.Second, func() error {
		if l = c.leader(); l == nil {
			return fmt.Errorf("no ready leader")
		}
		return nil
	})
	return l
}

// kill stops node i without any hand-off, as a crash would (its fsynced log survives).
func (c *testCluster) kill(i int) {
	c.t.Helper()
	if c.nodes[i] == nil {
		return
	}
	c.nodes[i].Close()
	c.nodes[i] = nil
}

// restart starts node i again on its data dir and addresses.
func (c *testCluster) restart(i int) {
	c.t.Helper()
	cfg := c.cfgs[i]
	cfg.Bootstrap = nil
	n, err := StartNode(cfg, c.reg())
	if err != nil {
		c.t.Fatalf("restart node %d: %v", i, err)
	}
	c.nodes[i] = n
}

func (c *testCluster) stopAll() {
	for i := range c.nodes {
		if c.nodes[i] != nil {
			c.nodes[i].Close()
			c.nodes[i] = nil
		}
	}
}

// waitConverged waits until every running node has applied the same index and has equal
// partition hashes, and returns the hashes (DESIGN.md invariant 1).
func (c *testCluster) waitConverged() []uint64 {
	c.t.Helper()
	var hashes []uint64
	waitFor(c.t, 20*time.Second, func() error {
		hashes = nil
		var applied uint64
		for _, n := range c.nodes {
			if n == nil {
				continue
			}
			a := n.fsm.Applied()
			h := n.fsm.Engine().Hashes()
			if hashes == nil {
				hashes, applied = h, a
				continue
			}
			if a != applied || !slices.Equal(h, hashes) {
				return fmt.Errorf("node %s applied %d hashes %x, others %d %x", n.cfg.ID, a, h, applied, hashes)
			}
		}
		return nil
	})
	for _, n := range c.nodes {
		if n == nil {
			continue
		}
		for p, part := range n.fsm.Engine().Partitions() {
			if got := part.RecomputeHash(); got != hashes[p] {
				c.t.Fatalf("node %s partition %d: incremental hash %x, recomputed %x", n.cfg.ID, p, hashes[p], got)
			}
		}
	}
	return hashes
}

// waitFor polls cond until it returns nil or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
