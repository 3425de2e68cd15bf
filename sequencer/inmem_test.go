package sequencer_test

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// An in-memory cluster in the manner of hashicorp/raft's testing.go: every node is a real
// Sequencer with the real replica FSM, on a raft.InmemTransport and in-memory stores, so a
// test can cut and heal links in process, and compare replicas by their state hashes.

const (
	// memPartitions is the partition count of every node's FSM.
	memPartitions = 4
	// memWait bounds every wait for a condition of the cluster.
	memWait = 20 * time.Second
)

// memNode is one node of a memCluster.
type memNode struct {
	id    string
	addr  raft.ServerAddress
	trans *raft.InmemTransport
	fsm   *replica.FSM
	seq   *sequencer.Sequencer
}

// memCluster is n nodes bootstrapped together, all linked to start with.
type memCluster struct {
	t     testing.TB
	nodes []*memNode
}

// memConfig returns the sequencer config of one in-memory node. The Raft timeouts are
// shorter than the TCP defaults (partitions heal in a second), yet long enough that a
// leader starved of CPU on a loaded 2-core machine under -race rarely loses its lease;
// the tests stay correct when it does.
func memConfig(t testing.TB, n *memNode) sequencer.Config {
	return sequencer.Config{
		NodeID:             n.id,
		Transport:          n.trans,
		LogStore:           raft.NewInmemStore(),
		StableStore:        raft.NewInmemStore(),
		SnapshotStore:      raft.NewInmemSnapshotStore(),
		HeartbeatTimeout:   200 * time.Millisecond,
		ElectionTimeout:    200 * time.Millisecond,
		LeaderLeaseTimeout: 200 * time.Millisecond,
		Logger:             sequencer.NewTestLogger(t, slog.LevelInfo),
	}
}

// newMemCluster starts n nodes, links every pair, bootstraps them with the same voters
// and waits for a leader. Everything is closed when the test ends.
func newMemCluster(t testing.TB, n int) *memCluster {
	t.Helper()
	c := &memCluster{t: t}
	servers := make([]sequencer.Server, n)
	for i := range n {
		nd := &memNode{id: fmt.Sprintf("n%d", i+1)}
		nd.addr, nd.trans = raft.NewInmemTransport(raft.ServerAddress("mem-" + nd.id))
		fsm, err := replica.New(replica.Config{Partitions: memPartitions}, procedures.Builtins(), sequencer.NewTestLogger(t, slog.LevelWarn))
		if err != nil {
			t.Fatalf("replica.New: %v", err)
		}
		nd.fsm = fsm
		// Cleanups run last-registered first: the Sequencer closes before the FSM it
		// applies to and the transport it sends on, which are the test's to close.
		t.Cleanup(func() { _ = nd.trans.Close() })
		t.Cleanup(fsm.Close)
		seq, err := sequencer.Open(memConfig(t, nd), fsm)
		if err != nil {
			t.Fatalf("Open(%s): %v", nd.id, err)
		}
		nd.seq = seq
		t.Cleanup(func() {
			if err := seq.Close(); err != nil {
				t.Errorf("Close(%s): %v", nd.id, err)
			}
		})
		c.nodes = append(c.nodes, nd)
		servers[i] = sequencer.Server{ID: nd.id, Addr: string(nd.addr)}
	}
	c.heal()
	for _, nd := range c.nodes {
		if err := nd.seq.Bootstrap(servers); err != nil {
			t.Fatalf("Bootstrap(%s): %v", nd.id, err)
		}
	}
	c.waitLeader(c.nodes)
	return c
}

// heal links every pair of nodes, in both directions.
func (c *memCluster) heal() {
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

// partition cuts every link between nodes of different groups, in both directions; links
// inside a group stay. Every node must be in exactly one group.
func (c *memCluster) partition(groups ...[]*memNode) {
	c.t.Helper()
	group := map[*memNode]int{}
	for g, nodes := range groups {
		for _, nd := range nodes {
			if _, dup := group[nd]; dup {
				c.t.Fatalf("partition: %s in two groups", nd.id)
			}
			group[nd] = g
		}
	}
	if len(group) != len(c.nodes) {
		c.t.Fatalf("partition: %d of %d nodes in a group", len(group), len(c.nodes))
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if group[a] != group[b] {
				a.trans.Disconnect(b.addr) // also closes a's pipelines to b
			}
		}
	}
}

// waitLeader waits until exactly one of nodes leads and all of them know it, and returns
// it. Nodes outside the list are not consulted: a cut-off old leader may still believe it
// leads.
func (c *memCluster) waitLeader(nodes []*memNode) *memNode {
	c.t.Helper()
	var leader *memNode
	testutil.WaitFor(c.t, memWait, func() error {
		leader = nil
		for _, nd := range nodes {
			if nd.seq.IsLeader() {
				if leader != nil {
					return fmt.Errorf("two leaders: %s and %s", leader.id, nd.id)
				}
				leader = nd
			}
		}
		if leader == nil {
			return errors.New("no leader")
		}
		for _, nd := range nodes {
			if id, _ := nd.seq.Leader(); id != leader.id {
				return fmt.Errorf("%s sees leader %q, want %s", nd.id, id, leader.id)
			}
		}
		return nil
	})
	return leader
}

// waitConverged waits until every node has applied the same index, at least min, and
// holds the same partition state hashes (DESIGN.md invariant 1), and returns the index.
func (c *memCluster) waitConverged(min uint64) uint64 {
	c.t.Helper()
	var applied uint64
	testutil.WaitFor(c.t, memWait, func() error {
		first := c.nodes[0]
		applied = first.fsm.Applied()
		hashes := first.fsm.Engine().Hashes()
		if applied < min {
			return fmt.Errorf("%s applied %d, want >= %d", first.id, applied, min)
		}
		for _, nd := range c.nodes[1:] {
			if a := nd.fsm.Applied(); a != applied {
				return fmt.Errorf("%s applied %d, %s applied %d", nd.id, a, first.id, applied)
			}
			if h := nd.fsm.Engine().Hashes(); !slices.Equal(h, hashes) {
				return fmt.Errorf("%s hashes %x, %s has %x", nd.id, h, first.id, hashes)
			}
		}
		return nil
	})
	return applied
}

// putOutcome is the outcome of one kv.put proposal.
type putOutcome struct {
	key   string
	index uint64
	err   error
}

// submitPut proposes kv.put(key, value) on nd. The outcome arrives on out, unless Submit
// refuses it; then submitPut returns Submit's error and nothing arrives.
func submitPut(nd *memNode, key, value string, out chan<- putOutcome) error {
	args, err := msgpack.Marshal(builtin.KVPutArgs{Value: []byte(value)})
	if err != nil {
		return err
	}
	return nd.seq.Submit(&sequencer.Proposal{
		Item: batch.Item{
			Kind:      batch.KindInvoke,
			Procedure: "kv.put",
			Key:       []byte(key),
			Partition: int32(partition.PartitionOf([]byte(key), memPartitions)),
			Args:      args,
		},
		Done: func(res batch.Result, index uint64, err error) {
			if err == nil {
				err = res.Err
			}
			out <- putOutcome{key: key, index: index, err: err} // buffered by the caller
		},
	})
}

// put writes key=value through the current leader of nodes, as a client would: when the
// leader changes under it (ErrNotLeader, or ErrLeadershipLost: outcome unknown), it asks
// the new leader again. kv.put is idempotent, so a retry that doubles a committed write
// changes nothing (the client library uses a session for the same effect). It returns the
// log index of the write.
func (c *memCluster) put(nodes []*memNode, key, value string) uint64 {
	c.t.Helper()
	var index uint64
	testutil.WaitFor(c.t, memWait, func() error {
		leader := c.waitLeader(nodes)
		out := make(chan putOutcome, 1)
		if err := submitPut(leader, key, value, out); err != nil {
			if errors.Is(err, sequencer.ErrNotLeader) {
				return err
			}
			c.t.Fatalf("put %s on %s: %v", key, leader.id, err)
		}
		var o putOutcome
		select {
		case o = <-out: // Done is always called, at the latest when leadership is lost
		case <-time.After(memWait):
			c.t.Fatalf("put %s on %s: no outcome", key, leader.id)
		}
		switch {
		case o.err == nil:
			index = o.index
			return nil
		case errors.Is(o.err, sequencer.ErrNotLeader), errors.Is(o.err, sequencer.ErrLeadershipLost):
			c.t.Logf("put %s on %s: %v; retrying", key, leader.id, o.err)
			return o.err
		default:
			c.t.Fatalf("put %s on %s: %v", key, leader.id, o.err)
			return nil
		}
	})
	return index
}

// get reads key on nd's applied state.
func get(t testing.TB, nd *memNode, key string) (string, bool) {
	t.Helper()
	res := nd.fsm.Query(&partition.Input{
		Procedure: "kv.get",
		Key:       []byte(key),
		Partition: partition.PartitionOf([]byte(key), memPartitions),
	})
	if res.Err != nil {
		t.Fatalf("kv.get %s on %s: %v", key, nd.id, res.Err)
	}
	var r builtin.KVGetResult
	if err := msgpack.Unmarshal(res.Value, &r); err != nil {
		t.Fatalf("kv.get %s on %s: %v", key, nd.id, err)
	}
	return string(r.Value), r.Found
}
