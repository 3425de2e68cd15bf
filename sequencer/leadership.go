package sequencer

// Keeping a node out of leadership. A node whose state machine is known to be wrong (a
// divergent replica, DESIGN.md invariant 6) must not lead: it refuses clients, so as
// leader it would block every write. Its owner calls Abstain(true) so it never starts an
// election on its own, and HandOffLeadership whenever it leads nonetheless.
//
// Both use hashicorp/raft's ReloadConfig, whose reloadable fields (v1.7.3, config.go
// ReloadableConfig) include HeartbeatTimeout and ElectionTimeout. What they govern:
//   - a follower starts a (pre-)vote when it has heard from no leader for HeartbeatTimeout,
//     randomised up to twice that (raft.go runFollower);
//   - a candidate retries after ElectionTimeout, randomised likewise (runCandidate);
//   - a leader heartbeats every HeartbeatTimeout/10 (replication.go heartbeat); its
//     followers still hear from it every CommitTimeout, when it replicates even with
//     nothing new, so a long HeartbeatTimeout does not depose it;
//   - a leadership transfer fails after ElectionTimeout, read when it starts (raft.go
//     leaderLoop).
// LeaderLeaseTimeout is not reloadable, and Raft requires it <= HeartbeatTimeout <=
// ElectionTimeout, which long timeouts keep.
//
// An abstaining node still replicates and votes, with one catch: a follower forgets its
// leader only when its own heartbeat timeout passes, and it refuses to (pre-)vote for
// anyone while it has a leader (raft.go requestVote, requestPreVote; a leadership
// transfer's vote excepted). With AbstainTimeout it would never forget a leader that died,
// and a cluster that needs its vote to elect the next leader (one divergent voter of
// three) would stay without one. So the owner abstains only while it hears from a leader,
// and stops abstaining when it has not for a while: the node then forgets the dead leader
// and votes; it may also stand and win, like any voter, and must then hand off.
//
// An abstaining node can still be made leader: by a leadership transfer aimed at it
// (TimeoutNow makes any voter a candidate at once), by one without a target that picks it
// as the most up-to-date voter, or by an election it was already standing in. Its owner
// must then hand the leadership off again.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// AbstainTimeout is the heartbeat and election timeout of an abstaining node: long enough
// that it never starts an election by itself.
const AbstainTimeout = 1000 * time.Hour

// Abstain makes this node stop standing for election (true), or stand again with its
// configured timeouts (false). It does not give up a leadership the node holds: see
// HandOffLeadership. Not to be called concurrently with itself or HandOffLeadership.
func (s *Sequencer) Abstain(abstain bool) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	rc := s.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = s.cfg.HeartbeatTimeout, s.cfg.ElectionTimeout
	if abstain {
		rc.HeartbeatTimeout, rc.ElectionTimeout = AbstainTimeout, AbstainTimeout
	}
	if err := s.raft.ReloadConfig(rc); err != nil {
		return fmt.Errorf("sequencer: abstain %t: %w: %w", abstain, ErrBadConfig, err)
	}
	return nil
}

// Abstaining reports whether the node abstains from elections (see Abstain).
func (s *Sequencer) Abstaining() bool {
	return s.raft.ReloadableConfig().ElectionTimeout == AbstainTimeout
}

// HandOffLeadership transfers the leadership to another voter, and keeps the node
// abstaining if it was. It tries the most up-to-date voter first, as TransferLeadership
// with no id does; that one may be down (a transfer to it fails after the election
// timeout), so then it tries every other voter in turn. It returns nil at once on a node
// that does not lead, and an error if no transfer succeeded before ctx ended; the caller
// retries. Not to be called concurrently with itself or Abstain.
func (s *Sequencer) HandOffLeadership(ctx context.Context) error {
	if s.raft.State() != raft.Leader {
		return nil
	}
	// Raft gives a transfer ElectionTimeout to complete, read when it starts: an
	// abstaining node's would be AbstainTimeout, during which the leader refuses new
	// entries and further transfers. Its own timeouts are restored for the transfer.
	abstaining := s.Abstaining()
	if abstaining {
		if err := s.Abstain(false); err != nil {
			return err
		}
		defer s.Abstain(true) // cannot fail: the values were valid a moment ago
	}
	err := s.TransferLeadership(ctx, "")
	if err == nil || ctx.Err() != nil {
		return err
	}
	servers, serr := s.Servers()
	if serr != nil {
		return errors.Join(err, serr)
	}
	for _, srv := range servers {
		if srv.ID == s.cfg.NodeID {
			continue
		}
		if s.raft.State() != raft.Leader {
			return nil
		}
		if err = s.TransferLeadership(ctx, srv.ID); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}
