package sequencer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"

	"go.uber.org/goleak"

	"github.com/lockstepdb/lockstep/internal/batch"
)

// TestMain fails the run if any test leaves a goroutine behind: every Sequencer a test
// opens is closed, and Close must stop and wait for everything it started, Raft included.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLogger returns a logger into t.Log. Register it before anything that logs, so its
// cleanup runs last.
func testLogger(t testing.TB, level slog.Level) *slog.Logger { return testutil.Logger(t, level) }

// node is one test server: a Sequencer and its FSM.
type node struct {
	id  string
	cfg Config
	fsm *testFSM
	seq *Sequencer
}

// testConfig returns a config for node id with a fresh data dir and logs into t.Log.
// Its leader lease is twice the default (as long as Raft allows: the heartbeat timeout), so
// that a leader starved of CPU on a loaded 2-core machine running -race keeps its lease.
func testConfig(t testing.TB, id string) Config {
	return Config{
		NodeID:             id,
		RaftAddr:           "127.0.0.1:0",
		DataDir:            t.TempDir(),
		Logger:             testLogger(t, slog.LevelInfo),
		LeaderLeaseTimeout: DefaultHeartbeatTimeout,
	}
}

// solo shortens the Raft timeouts of a node that stays the only voter: its first
// election comes sooner, and a single voter has no lease to lose.
func solo(c *Config) {
	c.HeartbeatTimeout = 100 * time.Millisecond
	c.ElectionTimeout = 100 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
}

// openSolo opens a single-voter cluster with mod applied to its config and waits until
// it leads.
func openSolo(t testing.TB, id string, mod func(*Config)) *node {
	t.Helper()
	cfg := testConfig(t, id)
	solo(&cfg)
	if mod != nil {
		mod(&cfg)
	}
	n := openNode(t, cfg, newTestFSM())
	if err := n.seq.Bootstrap([]Server{{ID: n.id, Addr: n.seq.Addr()}}); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	waitLeader(t, []*node{n})
	return n
}

// openNode opens a Sequencer for cfg on fsm, closed when the test ends.
func openNode(t testing.TB, cfg Config, fsm *testFSM) *node {
	t.Helper()
	s, err := Open(cfg, fsm)
	if err != nil {
		t.Fatalf("Open(%s): %v", cfg.NodeID, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close(%s): %v", cfg.NodeID, err)
		}
	})
	return &node{id: cfg.NodeID, cfg: cfg, fsm: fsm, seq: s}
}

// newCluster opens n nodes, bootstraps them all with the same voters and waits for a
// leader. mod, if not nil, adjusts each node's config.
func newCluster(t testing.TB, n int, mod func(*Config)) ([]*node, *node) {
	t.Helper()
	nodes := make([]*node, n)
	servers := make([]Server, n)
	for i := range nodes {
		cfg := testConfig(t, fmt.Sprintf("n%d", i+1))
		if mod != nil {
			mod(&cfg)
		}
		nodes[i] = openNode(t, cfg, newTestFSM())
		servers[i] = Server{ID: nodes[i].id, Addr: nodes[i].seq.Addr()}
	}
	for _, nd := range nodes {
		if err := nd.seq.Bootstrap(servers); err != nil {
			t.Fatalf("Bootstrap(%s): %v", nd.id, err)
		}
	}
	return nodes, waitLeader(t, nodes)
}

// waitLeader waits until exactly one of nodes is the leader and every other one knows it,
// and returns it.
func waitLeader(t testing.TB, nodes []*node) *node {
	t.Helper()
	var leader *node
	testutil.WaitFor(t, 10*time.Second, func() error {
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
			if id, addr := nd.seq.Leader(); id != leader.id || addr != leader.seq.Addr() {
				return fmt.Errorf("%s sees leader %q at %q, want %s", nd.id, id, addr, leader.id)
			}
		}
		return nil
	})
	return leader
}

// waitSameState waits until every node's FSM holds the same state as want's.
func waitSameState(t testing.TB, want *node, nodes ...*node) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() error {
		ws := want.fsm.state()
		for _, nd := range nodes {
			if got := nd.fsm.state(); got != ws {
				return fmt.Errorf("%s state %+v, %s has %+v", nd.id, got, want.id, ws)
			}
		}
		return nil
	})
}

// outcome is what one Done call delivered.
type outcome struct {
	res   batch.Result
	index uint64
	err   error
}

// tracker hands out proposals and checks that each one's Done is called exactly once.
type tracker struct {
	t     testing.TB
	mu    sync.Mutex
	calls map[string]int
	out   map[string]outcome
	done  chan string
}

func newTracker(t testing.TB, capacity int) *tracker {
	return &tracker{t: t, calls: map[string]int{}, out: map[string]outcome{}, done: make(chan string, capacity)}
}

// proposal returns an invoke proposal whose Args are args.
func (tr *tracker) proposal(args string) *Proposal {
	return &Proposal{
		Item: batch.Item{Kind: batch.KindInvoke, Procedure: "echo", Args: []byte(args)},
		Done: func(res batch.Result, index uint64, err error) {
			tr.mu.Lock()
			tr.calls[args]++
			n := tr.calls[args]
			tr.out[args] = outcome{res: res, index: index, err: err}
			tr.mu.Unlock()
			if n != 1 {
				tr.t.Errorf("Done for %q called %d times", args, n)
				return
			}
			select {
			case tr.done <- args:
			default:
				tr.t.Errorf("tracker channel full")
			}
		},
	}
}

// get returns the outcome of args and how many times its Done was called.
func (tr *tracker) get(args string) (outcome, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.out[args], tr.calls[args]
}

// submitWait submits one proposal on s and waits for its outcome.
func submitWait(t testing.TB, s *Sequencer, args string) outcome {
	t.Helper()
	tr := newTracker(t, 1)
	if err := s.Submit(tr.proposal(args)); err != nil {
		t.Fatalf("Submit(%q): %v", args, err)
	}
	select {
	case <-tr.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("no outcome for %q", args)
	}
	o, _ := tr.get(args)
	return o
}

// counterOf returns the FSM count a testFSM appended to a result, checking that the
// result starts with args.
func counterOf(t testing.TB, args string, res batch.Result) uint64 {
	t.Helper()
	v := res.Value
	if len(v) != len(args)+8 || string(v[:len(args)]) != args {
		t.Fatalf("result %q is not for %q", v, args)
	}
	return binary.BigEndian.Uint64(v[len(args):])
}
