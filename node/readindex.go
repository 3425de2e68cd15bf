package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/sequencer"
)

// Linearizable reads off the log: ReadIndex (Raft dissertation §6.4), on this node's own
// calls to its peers rather than on Raft's heartbeats (hashicorp/raft's VerifyLeader counts
// answers to AppendEntries sent before it was called, which proves nothing about the
// leadership when the read arrived: RAFT-NOTES trap 3, branch perf14-readindex).
//
//  1. A session-less read-only invocation at ConsistencyLinearizable reaches the leader,
//     which queues it (readIndex) and wakes readLoop. Nothing blocks the connection.
//  2. readLoop takes every read queued at that moment and runs one round for all of them
//     (readRound): in a term in which this leader has committed an entry of its own
//     (readyTerm, set after becomeLeader's Barrier), it notes its commit index C, then asks
//     every other voter of its configuration, with a request sent now — after all the
//     reads of the round arrived —, whether it still follows this leader in this term
//     (OpConfirmLeader). Itself and the voters that say yes must make a majority.
//  3. The leader waits until it has applied C, then answers each read from its local state.
//     Reads that arrived during the round wait for the next one.
//
// Why it is linearizable. Let r be a read of the round and t the time it arrived. Every
// voter that said yes was, when it answered (after t), in term T following this leader. A
// leader of a term above T needs the votes of a majority, which shares a voter v with the
// yes-majority; v's term only grows, so v voted for it after answering, after t. So at t no
// leader of a term above T existed, and every write acknowledged before t was committed in
// a term ≤ T: this leader's log holds it (leader completeness) at an index ≤ C, since C is
// noted after t and after this leader committed an entry of its own term. A deposed leader
// (a newer term exists) gets a no from a majority, and never answers alone (DESIGN.md
// invariant 5).
//
// Bounded staleness (ConsistencyBounded, any node): a node keeps a freshness proof, the
// pair (s, I) of a read index I it got from the leader (OpReadIndex; its own round on the
// leader) and the time s, on its own monotonic clock, at which it sent that request. Once
// it has applied I its state holds every write acknowledged before s; it answers a read
// with bound B if it has applied I and now − s ≤ B, else it refreshes the proof (one
// request for all the reads waiting) and checks again, and answers NotReady if the bound
// still is not met. Only the node's own clock is used, and only to measure an interval.
// The time since the leader's last heartbeat would not do: a leader cut off with this
// follower keeps sending heartbeats after a majority has elected another, and a count of
// entries behind the leader's commit index says nothing about time (a cut-off follower is
// 0 entries behind the last index it heard of, forever).

// readIndexTimeout bounds a read-index round (the confirmation and the wait for the apply)
// and a follower's refresh of its freshness proof. A round that does not finish in time
// fails its reads with NotReady, and the clients try again.
const readIndexTimeout = 2 * time.Second

// readWaiter is a read waiting for a round: done is called once, on readLoop, with the
// round's read index, which this node has applied, or with why there is none.
type readWaiter func(index uint64, err error)

// readIndexer queues the reads that wait for the next round.
type readIndexer struct {
	queue  waitQueue[readWaiter]
	rounds atomic.Uint64 // rounds run, for tests and metrics
	served atomic.Uint64 // reads the rounds answered (with an index or an error)
}

// waitQueue holds the waiters for the next batch and wakes the one goroutine that serves
// them (serve). A read-index round and a freshness refresh each serve a whole batch.
type waitQueue[W any] struct {
	mu      sync.Mutex
	waiting []W
	wake    chan struct{} // capacity 1: there may be waiters to serve
}

func newWaitQueue[W any]() waitQueue[W] {
	return waitQueue[W]{wake: make(chan struct{}, 1)}
}

// add queues w for the next batch.
func (q *waitQueue[W]) add(w W) {
	q.mu.Lock()
	q.waiting = append(q.waiting, w)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the waiters queued, reusing buf for the next ones.
func (q *waitQueue[W]) take(buf []W) []W {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.waiting
	q.waiting = buf[:0]
	return batch
}

// serve runs until done closes: each time it is woken, it calls batch with the waiters
// queued at that moment, again until none are left. When done closes it calls shut with
// the waiters left.
func (q *waitQueue[W]) serve(done <-chan struct{}, batch func([]W), shut func(W)) {
	var b []W
	for {
		select {
		case <-done:
			for _, w := range q.take(nil) {
				shut(w)
			}
			return
		case <-q.wake:
		}
		for {
			if b = q.take(b); len(b) == 0 {
				break
			}
			batch(b)
			clear(b) // the waiters' closures are not kept until the next batch
		}
	}
}

// readIndex queues w for the next round. The number of waiting reads is bounded by the
// client connections' in-flight limits: every read holds a slot of its connection.
func (n *Node) readIndex(w readWaiter) { n.reads.queue.add(w) }

// readLoop runs the rounds: each one serves every read queued when it starts. It fails
// the waiting reads when the node closes.
func (n *Node) readLoop() {
	defer n.wg.Done()
	n.reads.queue.serve(n.ctx.Done(), func(batch []readWaiter) {
		index, err := n.readRound()
		n.reads.served.Add(uint64(len(batch)))
		for _, w := range batch {
			w(index, err)
		}
	}, func(w readWaiter) { w(0, sequencer.ErrShutdown) })
}

// readRound runs one round: it returns a read index that this node has applied, such that
// its local state answers linearizably every read that arrived before the call.
func (n *Node) readRound() (uint64, error) {
	n.reads.rounds.Add(1)
	if plantedStaleRead(n) { // a test-only build's planted bug; false in a normal build
		return n.fsm.Applied(), nil
	}
	term := n.readyTerm.Load()
	if term == 0 || !n.seq.IsLeader() || n.seq.Term() != term {
		return 0, fmt.Errorf("%w: read index: not the leader, or a new leader catching up", sequencer.ErrNotLeader)
	}
	index := n.seq.CommitIndex()
	if n.seq.Term() != term {
		return 0, fmt.Errorf("%w: read index: the term changed", sequencer.ErrNotLeader)
	}
	ctx, cancel := context.WithTimeout(n.ctx, readIndexTimeout)
	defer cancel()
	if err := n.confirmLeadership(ctx, term); err != nil {
		return 0, err
	}
	if err := n.waitApplied(ctx, index); err != nil {
		return 0, err
	}
	return index, nil
}

// errNotConfirmed is why a round fails when a majority of voters did not confirm the
// leadership: the node may have been deposed. The client tries another node.
var errNotConfirmed = fmt.Errorf("%w: the leadership was not confirmed by a majority of voters", wire.ErrNotReady)

// confirmLeadership asks every other voter of the latest configuration, with requests sent
// now, whether it still follows this node in term, and returns nil once this node and the
// voters that said yes make a majority of the voters.
func (n *Node) confirmLeadership(ctx context.Context, term uint64) error {
	voters, err := n.seq.Servers()
	if err != nil {
		return fmt.Errorf("%w: read index: %w", wire.ErrNotReady, err)
	}
	need, yes := len(voters)/2+1, 0
	var addrs []string
	nodes := n.fsm.Nodes()
	for _, v := range voters {
		switch {
		case v.ID == n.cfg.ID:
			yes++
		case nodes[v.ID].ClientAddr != "":
			addrs = append(addrs, nodes[v.ID].ClientAddr)
		}
	}
	if yes+len(addrs) < need {
		return fmt.Errorf("%w (%d of %d voters reachable)", errNotConfirmed, yes+len(addrs), len(voters))
	}
	if yes >= need {
		return nil // a single voter: itself
	}
	ctx, cancel := context.WithCancel(ctx)
	answers := make(chan error, len(addrs))
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- n.peer.ConfirmLeader(ctx, addr, term, n.cfg.ID)
		}()
	}
	// The answers still out are cancelled and awaited: the round owns its calls.
	defer func() { cancel(); wg.Wait() }()
	no := 0
	var last error
	for range addrs {
		if err := <-answers; err != nil {
			no, last = no+1, err
		} else {
			yes++
		}
		if yes >= need {
			return nil
		}
		if len(voters)-no < need {
			break
		}
	}
	return fmt.Errorf("%w (%d of %d voters; last refusal: %v)", errNotConfirmed, yes, len(voters), last)
}

// waitApplied waits until the FSM has applied index, or ctx ends, or the replica diverges.
func (n *Node) waitApplied(ctx context.Context, index uint64) error {
	for {
		ch := n.applied.wait()
		if n.fsm.Applied() >= index {
			return nil
		}
		if err := n.fsm.Divergent(); err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: applied %d of read index %d", wire.ErrNotReady, n.fsm.Applied(), index)
		}
	}
}

// readLinearizable answers the read-only input in off the log (step 1 of the comment at
// the top), for request id of cc.
func (cc *clientConn) readLinearizable(id uint64, in *partition.Input) {
	n := cc.n
	if err := n.ready(); err != nil {
		cc.fail(id, err)
		return
	}
	if !plantedStaleRead(n) { // a test-only build's planted bug; false in a normal build
		if err := n.leaderReady(); err != nil {
			cc.fail(id, err)
			return
		}
	}
	n.readIndex(func(_ uint64, err error) {
		if err == nil {
			err = n.ready() // the replica may have diverged meanwhile
		}
		if err != nil {
			cc.fail(id, err)
			return
		}
		cc.answerQuery(id, in)
	})
}

// answerQuery runs the read-only input in on the local state and answers request id.
func (cc *clientConn) answerQuery(id uint64, in *partition.Input) {
	res := cc.n.state.Query(in)
	if res.Err != nil {
		cc.fail(id, res.Err)
		return
	}
	cc.reply(&wire.Response{ID: id, Value: res.Value})
}

// serveReadIndex answers OpReadIndex on the leader with the index of the next round.
func (cc *clientConn) serveReadIndex(req *wire.Request) {
	n, id := cc.n, req.ID
	if err := n.leaderReady(); err != nil {
		cc.fail(id, err)
		return
	}
	n.readIndex(func(index uint64, err error) {
		if err != nil {
			cc.fail(id, err)
			return
		}
		cc.reply(&wire.Response{ID: id, Index: index})
	})
}

// confirmLeader answers OpConfirmLeader: OK if this node's current term is req.Term and
// its leader req.LeaderID, both read together (the term before and after the leader is
// the same), else NotLeader.
func (cc *clientConn) confirmLeader(req *wire.Request) {
	n := cc.n
	if req.Term == 0 || req.LeaderID == "" {
		cc.fail(req.ID, fmt.Errorf("%w: confirm leader needs a term and a leader id", wire.ErrBadArguments))
		return
	}
	t1 := n.seq.Term()
	leader, _ := n.seq.Leader()
	t2 := n.seq.Term()
	if t1 == req.Term && t2 == t1 && leader == req.LeaderID && leader != n.cfg.ID {
		cc.reply(&wire.Response{ID: req.ID})
		return
	}
	cc.fail(req.ID, &wire.Error{Code: wire.CodeNotLeader, Leader: n.leaderClientAddr(), Message: fmt.Sprintf(
		"node %s is in term %d following %q, not in term %d following %q", n.cfg.ID, t1, leader, req.Term, req.LeaderID)})
}

// freshness is this node's proof of how fresh its state is, for bounded-staleness reads
// (see the comment at the top), and the reads waiting for a refresh.
type freshness struct {
	mu     sync.Mutex
	sentAt time.Time // when the request for index was sent (monotonic); zero: no proof
	index  uint64
	queue  waitQueue[func(error)] // reads waiting for a refresh
}

// fresh reports whether this node has applied its proof's index and the proof is at most
// maxLag old.
func (n *Node) fresh(maxLag time.Duration) bool {
	f := &n.freshness
	f.mu.Lock()
	sentAt, index := f.sentAt, f.index
	f.mu.Unlock()
	return !sentAt.IsZero() && time.Since(sentAt) <= maxLag && n.fsm.Applied() >= index
}

// readBounded answers the read-only input in if this node's state is at most maxLag
// stale, refreshing its freshness proof first if it must; else NotReady.
func (cc *clientConn) readBounded(id uint64, in *partition.Input, maxLag time.Duration) {
	n := cc.n
	if err := n.ready(); err != nil {
		cc.fail(id, err)
		return
	}
	if n.fresh(maxLag) {
		cc.answerQuery(id, in)
		return
	}
	n.freshness.queue.add(func(err error) {
		if err == nil {
			err = n.ready()
		}
		if err == nil && !n.fresh(maxLag) {
			err = fmt.Errorf("%w: node %s cannot show its state is within %v of the leader's", wire.ErrNotReady, n.cfg.ID, maxLag)
		}
		if err != nil {
			cc.fail(id, err)
			return
		}
		cc.answerQuery(id, in)
	})
}

// freshnessLoop refreshes the freshness proof for the bounded reads waiting: one read
// index from the leader for all of them.
func (n *Node) freshnessLoop() {
	defer n.wg.Done()
	n.freshness.queue.serve(n.ctx.Done(), func(batch []func(error)) {
		err := n.refreshFreshness()
		for _, w := range batch {
			w(err)
		}
	}, func(w func(error)) { w(sequencer.ErrShutdown) })
}

// refreshFreshness gets a read index from the leader (its own round on the leader), waits
// until this node has applied it, and records the proof.
func (n *Node) refreshFreshness() error {
	ctx, cancel := context.WithTimeout(n.ctx, readIndexTimeout)
	defer cancel()
	sentAt := time.Now()
	var index uint64
	if n.seq.IsLeader() {
		type answer struct {
			index uint64
			err   error
		}
		done := make(chan answer, 1)
		n.readIndex(func(i uint64, err error) { done <- answer{i, err} })
		select {
		case a := <-done:
			if a.err != nil {
				return a.err
			}
			index = a.index
		case <-ctx.Done():
			return fmt.Errorf("%w: read index: %w", wire.ErrNotReady, ctx.Err())
		}
	} else {
		addr := n.leaderClientAddr()
		if addr == "" {
			return fmt.Errorf("%w: no known leader to confirm freshness with", wire.ErrNotReady)
		}
		var err error
		if index, err = n.peer.ReadIndex(ctx, addr); err != nil {
			if errors.Is(err, context.Canceled) && n.ctx.Err() != nil {
				return sequencer.ErrShutdown
			}
			return fmt.Errorf("%w: read index from the leader: %v", wire.ErrNotReady, err)
		}
	}
	if err := n.waitApplied(ctx, index); err != nil {
		return err
	}
	f := &n.freshness
	f.mu.Lock()
	if sentAt.After(f.sentAt) {
		f.sentAt, f.index = sentAt, index
	}
	f.mu.Unlock()
	return nil
}
