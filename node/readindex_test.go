package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// raftCutter cuts nodes' Raft links in an in-process cluster: every node dials its peers'
// Raft addresses through it (Sequencer.Dial, set per node by configure), and isolate
// closes the links of one node and refuses its new ones, both ways. The client port (and
// so the nodes' peer calls) stays open.
type raftCutter struct {
	mu    sync.Mutex
	addrs []string // Raft address by node index, known once the nodes started
	cut   map[int]bool
	conns []cutterConn
}

type cutterConn struct {
	from int
	to   string
	c    net.Conn
}

func newRaftCutter() *raftCutter { return &raftCutter{cut: map[int]bool{}} }

// configure gives node i its dialer.
func (rc *raftCutter) configure(i int, cfg *Config) {
	cfg.Sequencer.Dial = func(addr string, timeout time.Duration) (net.Conn, error) {
		if rc.isCut(i, addr) {
			return nil, fmt.Errorf("raftCutter: link n%d → %s is cut", i+1, addr)
		}
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.isCutLocked(i, addr) { // cut while this dial was under way
			c.Close()
			return nil, fmt.Errorf("raftCutter: link n%d → %s is cut", i+1, addr)
		}
		rc.conns = append(rc.conns, cutterConn{from: i, to: addr, c: c})
		return c, nil
	}
}

// isCut reports whether node from may not reach addr.
func (rc *raftCutter) isCut(from int, addr string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.isCutLocked(from, addr)
}

func (rc *raftCutter) isCutLocked(from int, addr string) bool {
	if rc.cut[from] {
		return true
	}
	for i, a := range rc.addrs {
		if a == addr && rc.cut[i] {
			return true
		}
	}
	return false
}

// isolate cuts node i off from every other node's Raft.
func (rc *raftCutter) isolate(c *testCluster, i int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.addrs = rc.addrs[:0]
	for _, n := range c.Nodes {
		rc.addrs = append(rc.addrs, n.RaftAddr())
	}
	rc.cut[i] = true
	kept := rc.conns[:0]
	for _, cc := range rc.conns {
		if cc.from == i || cc.to == rc.addrs[i] {
			cc.c.Close()
			continue
		}
		kept = append(kept, cc)
	}
	rc.conns = kept
}

// index returns n's index in c.
func (c *testCluster) index(n *Node) int {
	for i, m := range c.Nodes {
		if m == n {
			return i
		}
	}
	c.t.Fatalf("node %s is not in the cluster", n.cfg.ID)
	return -1
}

// TestReadIndexDeposedLeader: the leader is cut off from the other nodes' Raft (its peer
// calls still reach them); the majority elects a new leader and writes v2 over v1. From
// then on the old leader must never answer a linearizable read with v1 (DESIGN.md
// invariant 5: a deposed leader never answers a read alone), and its read-index round in
// its old term must be refused by the majority. The planted bug jepsen_staleread, which
// skips the round, fails it (TestReadIndexPlantedStaleRead).
func TestReadIndexDeposedLeader(t *testing.T) {
	if err := deposedLeaderReads(t, true); err != nil {
		t.Fatal(err)
	}
}

// deposedLeaderReads runs TestReadIndexDeposedLeader's scenario and returns an error if
// the old leader answered a stale read. checkRound also runs the old leader's
// confirmation directly.
func deposedLeaderReads(t *testing.T, checkRound bool) error {
	rc := newRaftCutter()
	c := startCluster(t, clusterOptions{nodes: 3, configure: rc.configure})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := c.dial(ctx)
	if _, err := all.KVPut(ctx, []byte("k"), []byte("v1")); err != nil {
		return fmt.Errorf("put v1: %w", err)
	}
	old := c.waitLeader()
	oi := c.index(old)
	oldTerm := old.readyTerm.Load()
	atOld := c.dialOne(ctx, oi, 1)
	if v, _, err := atOld.KVGet(ctx, []byte("k")); err != nil || string(v) != "v1" {
		return fmt.Errorf("read at the leader before the cut: got %q, %v, want v1", v, err)
	}
	rc.isolate(c, oi)
	var majority []string
	for i, cfg := range c.cfgs {
		if i != oi {
			majority = append(majority, cfg.ClientAddr)
		}
	}
	cl, err := client.Dial(ctx, client.Config{Addrs: majority, ClusterID: "lockstep", MaxRetries: -1,
		RequestTimeout: 3 * time.Second, TLS: testTLS})
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := cl.KVPut(ctx, []byte("k"), []byte("v2")); err != nil {
		return fmt.Errorf("put v2 through the majority: %w", err)
	}
	if old.fsm.Applied() >= c.Nodes[(oi+1)%3].fsm.Applied() {
		return fmt.Errorf("the old leader applied %d, as much as the majority: the cut did not take", old.fsm.Applied())
	}
	t.Logf("v2 written by the majority; old leader %s was in term %d", old.cfg.ID, oldTerm)
	// Reads at the old leader, from now on: v2 (a redirect to the new leader) or an error.
	for i := range 5 {
		v, _, err := atOld.KVGet(ctx, []byte("k"))
		if err == nil && string(v) != "v2" {
			return fmt.Errorf("read #%d at the cut-off old leader %s answered %q after v2 was acknowledged: a stale read", i, old.cfg.ID, v)
		}
		t.Logf("read #%d at the old leader: %q, %v (old leader: term %d, leader %v, applied %d)", i, v, err,
			old.seq.Term(), old.seq.IsLeader(), old.fsm.Applied())
	}
	if checkRound {
		rctx, rcancel := context.WithTimeout(ctx, readIndexTimeout)
		defer rcancel()
		err := old.confirmLeadership(rctx, oldTerm)
		if !errors.Is(err, errNotConfirmed) {
			return fmt.Errorf("old leader's confirmation in term %d: got %v, want errNotConfirmed", oldTerm, err)
		}
		t.Logf("old leader's confirmation: %v", err)
	}
	return nil
}

// TestReadIndexRounds: linearizable reads at the leader reflect the writes acknowledged
// before them, and concurrent reads share rounds instead of running one each.
func TestReadIndexRounds(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	leader := c.waitLeader()
	const readers = 64
	for round := range 3 {
		want := fmt.Sprintf("v%d", round)
		if _, err := cl.KVPut(ctx, []byte("k"), []byte(want)); err != nil {
			t.Fatal(err)
		}
		before := leader.reads.rounds.Load()
		var wg sync.WaitGroup
		errs := make(chan error, readers)
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if v, _, err := cl.KVGet(ctx, []byte("k")); err != nil || string(v) != want {
					errs <- fmt.Errorf("got %q, %v, want %q", v, err, want)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("#%d: %v", round, err)
		}
		rounds := leader.reads.rounds.Load() - before
		t.Logf("#%d: %d concurrent reads, %d rounds", round, readers, rounds)
		if rounds == 0 || rounds >= readers {
			t.Errorf("#%d: %d concurrent reads took %d rounds, want them shared (1 to %d)", round, readers, rounds, readers-1)
		}
	}
}

// TestConfirmLeader: a voter says yes to its leader in its term, no otherwise; a request
// without a term or leader id is refused as bad arguments.
func TestConfirmLeader(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := c.waitLeader()
	term := leader.readyTerm.Load()
	fi := (c.index(leader) + 1) % len(c.Nodes)
	cl := c.dialOne(ctx, fi, 0)
	addr := c.cfgs[fi].ClientAddr
	tests := []struct {
		term   uint64
		leader string
		want   error // nil: yes
	}{
		{term, leader.cfg.ID, nil},
		{term + 1, leader.cfg.ID, client.ErrNotLeader},
		{term - 1, leader.cfg.ID, client.ErrNotLeader},
		{term, c.Nodes[fi].cfg.ID, client.ErrNotLeader},
		{0, leader.cfg.ID, client.ErrBadArguments},
		{term, "", client.ErrBadArguments},
	}
	for i, tt := range tests {
		err := client.NewPeer(cl).ConfirmLeader(ctx, addr, tt.term, tt.leader)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("#%d: term %d leader %q: got %v, want %v", i, tt.term, tt.leader, err, tt.want)
		}
	}
	if _, err := client.NewPeer(cl).ReadIndex(ctx, addr); !errors.Is(err, client.ErrNotLeader) {
		t.Errorf("ReadIndex at a follower: got %v, want ErrNotLeader", err)
	}
	if idx, err := client.NewPeer(cl).ReadIndex(ctx, leader.ClientAddr()); err != nil || idx == 0 {
		t.Errorf("ReadIndex at the leader: got %d, %v, want an index", idx, err)
	}
}

// TestReadBounded: a follower answers a bounded-staleness read with every write
// acknowledged before it (its first proof of freshness is asked after them); a follower
// cut off from the leader's Raft never answers with a value older than the bound; and a
// bound that is not positive is refused as bad arguments, by the client and by the node,
// as is a write sent as a session-less linearizable read.
func TestReadBounded(t *testing.T) {
	rc := newRaftCutter()
	c := startCluster(t, clusterOptions{nodes: 3, configure: rc.configure})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := c.dial(ctx)
	leader := c.waitLeader()
	fi := (c.index(leader) + 1) % len(c.Nodes)
	atFollower := c.dialOne(ctx, fi, 0)
	get := func(maxLag time.Duration) (string, error) {
		res, err := client.QueryBoundedAs[builtin.KVGetResult](ctx, atFollower, builtin.KVGet, []byte("k"), builtin.NoArgs{}, maxLag)
		return string(res.Value), err
	}

	for _, bad := range []time.Duration{0, -1, -time.Second} {
		if _, err := get(bad); !errors.Is(err, client.ErrBadArguments) {
			t.Errorf("bound %v: got %v, want ErrBadArguments", bad, err)
		}
	}
	for i, req := range []wire.Request{
		{Op: wire.OpInvoke, Procedure: builtin.KVGet, Key: []byte("k"), HasKey: true, Consistency: wire.ConsistencyBounded},
		{Op: wire.OpInvoke, Procedure: builtin.KVGet, Key: []byte("k"), HasKey: true, Consistency: wire.ConsistencyBounded, MaxLag: 1 << 63},
		{Op: wire.OpInvoke, Procedure: builtin.KVPut, Key: []byte("k"), HasKey: true, Consistency: wire.ConsistencyBounded, MaxLag: 1e9},
		{Op: wire.OpInvoke, Procedure: builtin.KVGet, Key: []byte("k"), HasKey: true, Consistency: 9},
		{Op: wire.OpInvoke, Procedure: builtin.KVPut, Key: []byte("k"), HasKey: true, Consistency: wire.ConsistencyLinearizableRead},
	} {
		if resp := rawRequest(t, c.cfgs[fi].ClientAddr, &req); resp.Code != wire.CodeBadArguments {
			t.Errorf("#%d: raw request %+v: got %v %q, want BadArguments", i, req, resp.Code, resp.Message)
		}
	}

	for i := range 3 {
		want := fmt.Sprintf("v%d", i)
		if _, err := all.KVPut(ctx, []byte("k"), []byte(want)); err != nil {
			t.Fatal(err)
		}
		// The first read needs a proof newer than the write; the next ones may use it.
		if i == 0 {
			if v, err := get(time.Minute); err != nil || v != want {
				t.Fatalf("first bounded read at the follower: got %q, %v, want %q", v, err, want)
			}
		}
		if resp := rawRequest(t, c.cfgs[fi].ClientAddr, &wire.Request{Op: wire.OpInvoke, Procedure: builtin.KVGet, Key: []byte("k"),
			HasKey: true, Consistency: wire.ConsistencyBounded, MaxLag: 1}); resp.Code != wire.CodeNotReady {
			t.Errorf("#%d: bound of 1 ns: got %v %q, want NotReady: a proof cannot be that fresh", i, resp.Code, resp.Message)
		}
	}

	rc.isolate(c, fi)
	if _, err := all.KVPut(ctx, []byte("k"), []byte("late")); err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	const bound = 300 * time.Millisecond
	answered, refused := 0, 0
	// Raw requests, at the follower alone: the client library would try other nodes.
	read := &wire.Request{Op: wire.OpInvoke, Procedure: builtin.KVGet, Key: []byte("k"), HasKey: true,
		Consistency: wire.ConsistencyBounded, MaxLag: uint64(bound)}
	testutil.WaitFor(t, 20*time.Second, func() error {
		resp := rawRequest(t, c.cfgs[fi].ClientAddr, read)
		var res builtin.KVGetResult
		switch {
		case resp.Code == wire.CodeNotReady:
			refused++
		case resp.Code != wire.CodeOK:
			t.Fatalf("cut-off follower: got %v %q, want OK or NotReady", resp.Code, resp.Message)
		case msgpack.Unmarshal(resp.Value, &res) != nil:
			t.Fatalf("cut-off follower: undecodable result %x", resp.Value)
		default:
			answered++
			if v := string(res.Value); v != "late" && time.Since(acked) > bound {
				t.Fatalf("cut-off follower answered %q, %v after %q was acknowledged, past the bound %v", v, time.Since(acked), "late", bound)
			}
		}
		if time.Since(acked) < 3*bound {
			return errors.New("still within the bound")
		}
		return nil
	})
	t.Logf("cut-off follower: %d reads answered, %d refused", answered, refused)
	if refused == 0 {
		t.Error("the cut-off follower refused no read past the bound")
	}
}

// rawRequest sends req on a new connection to addr and returns the answer.
func rawRequest(t *testing.T, addr string, req *wire.Request) wire.Response {
	t.Helper()
	nc := rawConn(t, addr)
	req.ID = 1
	if _, err := nc.Write(wire.AppendFrame(nil, wire.AppendRequest(nil, req))); err != nil {
		t.Fatal(err)
	}
	resp, err := readResponse(t, nc)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestWaitQueue: a batch serves every waiter queued when it starts, the waiters queued
// during a batch are served by the next one, and when done closes every waiter is served
// or shut exactly once (a read queued at shutdown is failed, never forgotten).
func TestWaitQueue(t *testing.T) {
	q := newWaitQueue[int]()
	done := make(chan struct{})
	batches, shut := make(chan []int, 8), make(chan int, 8)
	release := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		q.serve(done, func(b []int) {
			batches <- append([]int(nil), b...)
			<-release
		}, func(w int) { shut <- w })
	}()
	q.add(1)
	if b := <-batches; len(b) != 1 || b[0] != 1 {
		t.Fatalf("first batch %v, want [1]", b)
	}
	q.add(2) // during the first batch
	q.add(3)
	release <- struct{}{}
	if b := <-batches; len(b) != 2 || b[0] != 2 || b[1] != 3 {
		t.Fatalf("second batch %v, want [2 3]", b)
	}
	close(release) // batches no longer block
	q.add(4)
	close(done)
	<-stopped
	close(batches)
	close(shut)
	seen := map[int]int{}
	for b := range batches {
		for _, w := range b {
			seen[w]++
		}
	}
	for w := range shut {
		seen[w]++
	}
	if seen[4] != 1 || len(seen) != 1 {
		t.Fatalf("after done: waiters served or shut %v, want 4 once", seen)
	}
	q.add(5) // after serve returned: nobody serves it, but add never blocks
}
