package node

import (
	"context"
	"errors"
	"time"
)

// A divergent replica stops serving and leading (DESIGN.md invariant 6). It refuses every
// client, so as leader it would block every write until an operator acted. It therefore
// hands the leadership to another voter at once, and stops standing for election until it
// is rebuilt (sequencer.Abstain), for as long as it hears from a leader. When it has heard
// from none for the leader lease, it stands ready again: hashicorp/raft refuses votes while
// it still has a leader, so an abstaining node would never vote in the election that
// replaces a dead leader, and a cluster that needs its vote would stay leaderless (see
// sequencer/leadership.go). It may then win that election; it hands off again at once.
//
// A replica that cannot run the cluster's log (replica.ErrIncompatible: a binary without
// the active cluster version or code) does the same: it refuses every client too, and as
// leader it would stall the cluster until it was stopped.

// handOffTimeout bounds one leadership hand-off; Raft's own bound is twice the election
// timeout.
const handOffTimeout = 10 * time.Second

// errStillLeading is returned by keepOutOfLeadership when a hand-off returned but the
// node leads again.
var errStillLeading = errors.New("unfit replica still leads after handing leadership off")

// wakeAbstain asks abstainLoop to check the node's part in elections now. Never blocks.
func (n *Node) wakeAbstain() {
	select {
	case n.abstainCh <- struct{}{}:
	default:
	}
}

// abstainLoop keeps an unfit node (unfitToLead) out of leadership: it runs
// keepOutOfLeadership when the replica diverges or finds itself incompatible
// (FSM.OnDivergent, FSM.OnIncompatible), when the node becomes leader while unfit
// (leaderLoop), and, while the node is unfit or still abstains, every quarter of the
// leader lease, so it retries a hand-off that failed, hands off a leadership it was given
// anyway, and follows the leader's comings and goings.
func (n *Node) abstainLoop() {
	defer n.wg.Done()
	var recheck <-chan time.Time
	var lastErr string
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.abstainCh:
		case <-recheck:
		}
		err := n.keepOutOfLeadership()
		if n.ctx.Err() != nil {
			return
		}
		if err != nil && err.Error() != lastErr {
			n.log.Warn("unfit replica: leadership hand-off failed; retrying", "err", err)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		recheck = nil
		if n.unfitToLead() || n.seq.Abstaining() {
			recheck = time.After(n.leaderLease() / 4)
		}
	}
}

// unfitToLead reports whether this node must keep out of leadership: its replica diverged
// or cannot run the cluster's log, or its identity is stale (identity.go: its log is not
// the one the cluster counted on).
func (n *Node) unfitToLead() bool {
	return n.fsm.Divergent() != nil || n.fsm.Incompatible() != nil || n.staleIdentity() != nil
}

// keepOutOfLeadership brings the node's part in elections in line with its state: an
// unfit replica hands off a leadership it holds, and abstains from elections while it
// hears from a leader; a replica that is not (or no longer) unfit stands for election.
func (n *Node) keepOutOfLeadership() error {
	unfit := n.unfitToLead()
	if unfit && n.seq.IsLeader() {
		n.log.Warn("unfit replica leads: handing leadership off")
		ctx, cancel := context.WithTimeout(n.ctx, handOffTimeout)
		defer cancel()
		if err := n.seq.HandOffLeadership(ctx); err != nil {
			return err
		}
		if n.seq.IsLeader() {
			return errStillLeading
		}
		id, _ := n.seq.Leader()
		n.log.Warn("unfit replica handed leadership off", "leader", id)
	}
	abstain := unfit && n.hearsLeader()
	if abstain == n.seq.Abstaining() {
		return nil
	}
	if err := n.seq.Abstain(abstain); err != nil {
		return err
	}
	switch {
	case abstain:
		n.log.Warn("unfit replica: no longer stands for election")
	case unfit:
		n.log.Warn("unfit replica: no leader heard from; votes (and may stand) in the next election")
	default:
		n.log.Info("replica no longer unfit: stands for election again")
	}
	return nil
}

// hearsLeader reports whether another node leads and this one heard from it within the
// leader lease.
func (n *Node) hearsLeader() bool {
	id, _ := n.seq.Leader()
	return id != "" && id != n.cfg.ID && time.Since(n.seq.Stats().LastContact) <= n.leaderLease()
}
