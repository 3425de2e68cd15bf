package node

import (
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/sequencer"
)

// Readiness is decided in one place, Node.Readiness: /readyz, /status (ready and
// not_ready_reason), the lockstep_ready metric and `lockstep cluster status` all report its
// answer. The request path keeps a cheaper check of its own (Node.ready), the part of the
// rule that is about this replica's state; see there.

// ReadyMaxLag is how many committed log entries a node may have left to apply and still
// count as caught up.
const ReadyMaxLag = 1024

// Reasons a node is not ready, besides replica.ErrDivergent and replica.ErrIncompatible. Each is returned
// wrapped with detail; test with errors.Is. Their text is the reason alone, and each
// matches wire.ErrNotReady, so a client refused for one gets CodeNotReady.
var (
	// ErrNotInitialised: the node has no log yet; it waits for a bootstrap or to be added
	// to a cluster.
	ErrNotInitialised error = &notReady{"cluster not initialised yet"}
	// ErrCatchingUp: the node has committed (or, before it learns the commit index, logged)
	// entries it has not applied yet: more than ReadyMaxLag, or any before the cluster's
	// first entry. A new leader is catching up too until it has applied every entry
	// committed before its term.
	ErrCatchingUp error = &notReady{"replaying the log"}
	// ErrNoLeader: the node neither leads nor has heard from a leader within its lease
	// (twice the Raft heartbeat timeout; DefaultLeaderLease).
	ErrNoLeader error = &notReady{"no leader known"}
)

// notReady is a reason of readiness. It unwraps to wire.ErrNotReady, which gives the wire
// code without repeating the words "not ready" in the text.
type notReady struct{ reason string }

func (e *notReady) Error() string { return e.reason }
func (e *notReady) Unwrap() error { return wire.ErrNotReady }

// Readiness returns nil if the node is ready to take traffic, else why not. A node is
// ready when, in this order of reasons reported:
//
//  1. its state machine may serve: a node started with Config.Join has been admitted
//     (ErrJoining), the cluster's partition count and procedures are this
//     node's (replica.ErrIncompatible), its state has not diverged (replica.ErrDivergent), it has
//     applied the cluster's first entry (ErrNotInitialised, or ErrCatchingUp when it has
//     a log it has not replayed yet), and, after a restart, the log it found at start or,
//     if less, all the leader says is committed
//     (ErrCatchingUp);
//  2. it knows a leader: it leads and has applied every entry committed before its term,
//     or it has heard from the leader within its lease (ErrNoLeader, ErrCatchingUp);
//  3. it is caught up: at most ReadyMaxLag committed entries left to apply (ErrCatchingUp).
func (n *Node) Readiness() error { return n.readiness(n.seq.Stats()) }

// readiness is Readiness for the sequencer state st, so that a caller that has st already
// (statusFrom) reports the same state in its fields and in its readiness.
func (n *Node) readiness(st sequencer.Stats) error {
	applied := n.fsm.Applied()
	if err := n.fsmReadiness(st, applied); err != nil {
		return err
	}
	switch id, _ := n.seq.Leader(); {
	case st.State == "Leader":
		if !n.leading() {
			return fmt.Errorf("%w: new leader: applying the entries committed before its term", ErrCatchingUp)
		}
	case id == "":
		return ErrNoLeader
	case time.Since(st.LastContact) > n.leaderLease():
		return fmt.Errorf("%w: last heard from leader %s %v ago", ErrNoLeader, id,
			time.Since(st.LastContact).Round(time.Millisecond))
	}
	if st.CommitIndex > applied+ReadyMaxLag {
		return fmt.Errorf("%w: applied %d of %d committed entries", ErrCatchingUp, applied, st.CommitIndex)
	}
	return nil
}

// ready is the request path's check: nil when the state machine may serve (one atomic
// load), else the reason of step 1 of Readiness. Requests are refused for these reasons
// only: the rest of the rule needs no check per request, because a write on a node that
// does not lead fails with NotLeader (and the client follows the leader hint), a new
// leader refuses writes until it is ready (see submit), and a read at consistency Any or a
// stream read may come from a replica that lags, leader or not.
func (n *Node) ready() error {
	if n.fsm.Serving() && n.replayed.Load() && n.admission.err() == nil && n.stale.Load() == nil { // the common case: four atomic loads
		return nil
	}
	return n.fsmReadiness(n.seq.Stats(), n.fsm.Applied())
}

// fsmReadiness returns step 1 of Readiness: why the state machine may not serve, or nil.
// st is the sequencer's state.
func (n *Node) fsmReadiness(st sequencer.Stats, applied uint64) error {
	if err := n.staleIdentity(); err != nil {
		return err
	}
	if err := n.joinPending(); err != nil {
		return err
	}
	if err := n.fsm.Incompatible(); err != nil {
		return err
	}
	if err := n.fsm.Divergent(); err != nil {
		return err
	}
	if _, ok := n.fsm.Cluster(); !ok {
		if st.LastLogIndex > applied {
			return fmt.Errorf("%w: applied %d of %d", ErrCatchingUp, applied, st.LastLogIndex)
		}
		return ErrNotInitialised
	}
	// A restarted node replays its log from the start (or its last compaction snapshot):
	// until it is back where it was, it would answer reads at consistency Any with state
	// older than it served before, so a client reading it twice could see time go back.
	// The log's tail past the cluster's commit index may never commit (a crash lost it on
	// the others, a new leader replaces it): having applied all the leader says is
	// committed is being back too.
	if !n.replayed.Load() {
		if applied < n.replayTo && (st.CommitIndex == 0 || applied < st.CommitIndex) {
			return fmt.Errorf("%w: replaying its log after a restart: applied %d of %d", ErrCatchingUp, applied, n.replayTo)
		}
		n.replayed.Store(true)
	}
	return nil
}

// DefaultLeaderLease is the leader lease of a node with the default Raft heartbeat
// timeout (sequencer.DefaultHeartbeatTimeout): 1 s. It is the readiness rule's bound for a
// node cut off from the leader: a follower or read replica whose links to the voters are
// down reports not ready (ErrNoLeader) at most this long after the last message it
// received from the leader, however fast or slow the machine, because each Readiness call
// compares the wall-clock time since that message with the lease.
const DefaultLeaderLease = 2 * sequencer.DefaultHeartbeatTimeout

// leaderLease is how long after its last contact with the leader a follower still counts
// the leader as known: twice the Raft heartbeat timeout (DefaultLeaderLease with the
// default), the longest a follower of a healthy cluster waits before it starts an
// election.
func (n *Node) leaderLease() time.Duration {
	hb := n.cfg.Sequencer.HeartbeatTimeout
	if hb == 0 {
		return DefaultLeaderLease
	}
	return 2 * hb
}
