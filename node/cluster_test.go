package node

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// testCluster is a LocalCluster that reports to t and is closed when the test ends.
type testCluster struct {
	*LocalCluster
	t *testing.T
}

// clusterOptions tune a test cluster.
type clusterOptions struct {
	nodes      int
	partitions int
	snapshots  bool // small snapshot threshold: 64 entries
	registry   func(i int) *procedures.Registry
	// idleChecksOnly disables the sequencer's hash checks in batches, leaving only those
	// the leader appends when the cluster goes quiet.
	idleChecksOnly bool
	// patientRaft raises Raft's timeouts (heartbeat and election 2s, leader lease 1s) for
	// tests that must not see a leader change while the machine is loaded.
	patientRaft bool
	// processorBudget is replica.Config.ProcessorBudget; 0: the default.
	processorBudget int
	// processorTick is Config.ProcessorTickInterval; 0: the default.
	processorTick time.Duration
	// processorIdleTick is Config.ProcessorIdleTickInterval; 0: the default.
	processorIdleTick time.Duration
	// maxSubscriptions is Config.MaxSubscriptionsPerConn; 0: the default.
	maxSubscriptions int
	// configure is LocalClusterOptions.Configure.
	configure func(i int, cfg *Config)
	// logStore is sequencer.Config.LogStoreKind; "": the default.
	logStore string
	// noAutoRebuild is Config.DisableAutoRebuild: a divergent node stays a fenced voter.
	noAutoRebuild bool
}

// testLogger sends the nodes' warnings and errors to t.Log.
func testLogger(t *testing.T) *slog.Logger { return testutil.Logger(t, slog.LevelWarn) }

// startCluster bootstraps a new cluster of real nodes in temp dirs and waits for a ready
// leader.
func startCluster(t *testing.T, opts clusterOptions) *testCluster {
	t.Helper()
	if opts.partitions == 0 {
		opts.partitions = 4
	}
	node := Config{
		Replica:                   replica.Config{Partitions: opts.partitions, ProcessorBudget: opts.processorBudget},
		Logger:                    testLogger(t),
		CertsDir:                  testCertsDir,
		HashCompareInterval:       200 * time.Millisecond,
		ProcessorTickInterval:     opts.processorTick,
		ProcessorIdleTickInterval: opts.processorIdleTick,
		MaxSubscriptionsPerConn:   opts.maxSubscriptions,
		DisableAutoRebuild:        opts.noAutoRebuild,
	}
	node.Sequencer.HashCheckInterval = 100 * time.Millisecond
	node.Sequencer.LogStoreKind = opts.logStore
	if opts.idleChecksOnly {
		node.Sequencer.HashCheckInterval = -1
	}
	if opts.patientRaft {
		node.Sequencer.HeartbeatTimeout = 2 * time.Second
		node.Sequencer.ElectionTimeout = 2 * time.Second
		node.Sequencer.LeaderLeaseTimeout = time.Second
	}
	if opts.snapshots {
		node.Sequencer.SnapshotThreshold = 64
		node.Sequencer.SnapshotInterval = 200 * time.Millisecond
		// Keep few entries behind a snapshot, so a node that is behind (restarted or
		// joining) receives a snapshot rather than the log: the FSM's Restore path.
		node.Sequencer.TrailingLogs = 16
		// raft-wal frees log space a whole segment at a time: small segments, so that
		// compaction really removes the entries a lagging node would need.
		node.Sequencer.WALSegmentBytes = sequencer.MinWALSegmentBytes
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lc, err := StartLocalCluster(ctx, LocalClusterOptions{Nodes: opts.nodes, Dir: t.TempDir(), Node: node, Registry: opts.registry,
		Configure: opts.configure})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(lc.Close)
	return &testCluster{LocalCluster: lc, t: t}
}

// leader returns the ready leader, or nil.
// leader returns the node that leads now, waiting for one: under load an election can be
// under way at any moment, and a nil leader would only turn into a nil dereference.
func (c *testCluster) leader() *Node { return c.waitLeader() }

func (c *testCluster) waitLeader() *Node {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	i, err := c.WaitLeader(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.Nodes[i]
}

func (c *testCluster) kill(i int) { c.Kill(i) }

func (c *testCluster) restart(i int) {
	c.t.Helper()
	if err := c.Restart(i); err != nil {
		c.t.Fatalf("restart node %d: %v", i, err)
	}
}

// waitConverged waits until every running node has applied the same index and has equal
// partition hashes, checks them against a full recompute, and returns them (DESIGN.md
// invariant 1).
func (c *testCluster) waitConverged() []uint64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hashes, err := c.WaitConverged(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, n := range c.Nodes {
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
