package node

// Learners. A new node enters the cluster as a Raft non-voter (a learner): it receives
// the log, or a compaction snapshot and the log after it, and replays it, while the quorum
// stays what it was, so a join can never make the cluster unable to commit — the three
// joins naming addresses where nothing listens leave three harmless learners, where they
// used to make a 3-voter cluster a 6-voter one with 3 alive. The leader promotes a learner
// to voter once it has applied within PromoteMaxLag entries of the leader, and only if the
// voters it can reach now, with the learner, make a quorum of the larger configuration.
// Until its promotion a learner is not ready: it serves no reads, at any level.
//
// The same loop records the incarnation (identity.go) of members whose incarnation the
// log does not hold yet: bootstrap peers, nodes admitted by `lockstep cluster join`.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/sequencer"
)

// PromoteMaxLag is how many entries a learner may have applied fewer than the leader and
// still be promoted.
const PromoteMaxLag = ReadyMaxLag

const (
	// memberCheckInterval is how often the leader looks at its learners.
	memberCheckInterval = 500 * time.Millisecond
	// memberStatusTimeout bounds one status question to a member.
	memberStatusTimeout = time.Second
	// promotionWaitInterval is how often a learner looks whether it has been promoted.
	promotionWaitInterval = 100 * time.Millisecond
)

// ErrLearner is why a learner is not ready: it replays the log and waits for the leader
// to promote it. It matches wire.ErrNotReady.
var ErrLearner error = &notReady{"learner: catching up, not yet promoted to voter"}

// ErrPromotionRefused is the note of a learner the leader will not promote, and the
// refusal of a join: making the node a voter would leave the cluster unable to reach a
// quorum with the members alive now. It matches wire.ErrNotReady (the client tries again).
var ErrPromotionRefused error = &notReady{"join or promotion refused"}

// learnerBook is the leader's latest view of its learners, for its status.
type learnerBook struct {
	mu       sync.Mutex
	progress []wire.LearnerProgress
}

// learnerProgress returns the leader's latest view of its learners (nil on other nodes).
func (n *Node) learnerProgress() []wire.LearnerProgress {
	if !n.seq.IsLeader() {
		return nil
	}
	n.learners.mu.Lock()
	defer n.learners.mu.Unlock()
	return slices.Clone(n.learners.progress)
}

// memberLoop runs tendMembers on the leader every memberCheckInterval.
func (n *Node) memberLoop() {
	defer n.wg.Done()
	t := time.NewTicker(memberCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		if n.leading() {
			n.tendMembers()
		}
	}
}

// memberView is what the leader learnt of one member this round.
type memberView struct {
	sequencer.Member
	info   batch.NodeInfo
	status *wire.Status // nil: did not answer
	err    error
}

// viewMembers asks every other member of the configuration (only the voters, with
// votersOnly) for its status, in turn, each within memberStatusTimeout.
func (n *Node) viewMembers(votersOnly bool) ([]memberView, error) {
	members, err := n.seq.Members()
	if err != nil {
		return nil, err
	}
	nodes := n.fsm.Nodes()
	var views []memberView
	for _, m := range members {
		if m.ID == n.cfg.ID || (votersOnly && !m.Voter) {
			continue
		}
		v := memberView{Member: m, info: nodes[m.ID]}
		if v.info.ClientAddr == "" {
			v.err = errors.New("no client address recorded yet")
		} else {
			ctx, cancel := context.WithTimeout(n.ctx, memberStatusTimeout)
			st, err := n.peers.Status(ctx, v.info.ClientAddr)
			cancel()
			switch {
			case err != nil:
				v.err = err
			case st.NodeID != m.ID:
				v.err = fmt.Errorf("%s answers as %q", v.info.ClientAddr, st.NodeID)
			default:
				w := wire.Status{NodeID: st.NodeID, AppliedIndex: st.AppliedIndex, Divergent: st.Divergent,
					Incompatible: st.Incompatible, Incarnation: st.Incarnation, NotReadyReason: st.NotReadyReason,
					Rebuild: st.Rebuild, RebuildFrom: st.RebuildFrom}
				for _, h := range st.HashChecks {
					w.HashChecks = append(w.HashChecks, wire.HashCheck{Index: h.Index, Hashes: h.Hashes, Meta: h.Meta})
				}
				v.status = &w
			}
		}
		views = append(views, v)
	}
	return views, nil
}

// tendMembers asks every other member for its status, records incarnations the log lacks,
// and promotes the learners that have caught up.
func (n *Node) tendMembers() {
	views, err := n.viewMembers(false)
	if err != nil {
		return
	}
	// Not for a divergent member, nor one being rebuilt: the leader cleared its incarnation
	// for its rebuild, and the new one is recorded when it joins again.
	n.recordIncarnations(views)
	n.tendRebuilds(views)
	var book []wire.LearnerProgress
	for _, v := range views {
		if v.Voter || v.info.ReadReplica {
			continue // read replicas stay non-voters
		}
		p := n.considerPromotion(v, views)
		if p.Note != "" {
			book = append(book, p)
		}
	}
	n.learners.mu.Lock()
	n.learners.progress = book
	n.learners.mu.Unlock()
}

// considerPromotion promotes learner v if it has caught up and the quorum check passes;
// it returns its progress, with a note saying why it is still a learner (empty once
// promoted).
func (n *Node) considerPromotion(v memberView, views []memberView) wire.LearnerProgress {
	p := wire.LearnerProgress{ID: v.ID, Target: n.fsm.Applied()}
	if v.status == nil {
		p.Note = fmt.Sprintf("unreachable: %v", v.err)
		return p
	}
	p.Applied = v.status.AppliedIndex
	switch {
	case v.status.Divergent != "":
		p.Note = "divergent: " + v.status.Divergent
		return p
	case v.status.Incompatible != "":
		p.Note = "incompatible: " + v.status.Incompatible
		return p
	case v.info.Incarnation != "" && v.status.Incarnation != v.info.Incarnation:
		p.Note = fmt.Sprintf("stale: recorded incarnation %s, the node runs %s", v.info.Incarnation, v.status.Incarnation)
		return p
	case p.Applied+PromoteMaxLag < p.Target:
		p.Note = fmt.Sprintf("catching up: applied %d of %d (%.0f%%)", p.Applied, p.Target, 100*float64(p.Applied)/float64(max(p.Target, 1)))
		return p
	}
	if v.status.Rebuild == RebuildRebuilding {
		if ok, note := rebuildVerified(n.fsm.HashRecords(), v.status); !ok {
			p.Note = note
			return p
		}
	}
	if err := promotionQuorum(v.ID, views); err != nil {
		p.Note = err.Error()
		return p
	}
	ctx, cancel := context.WithTimeout(n.ctx, membershipTimeout)
	defer cancel()
	if err := n.seq.Promote(ctx, v.ID, v.Addr); err != nil {
		p.Note = fmt.Sprintf("promotion failed: %v", err)
		return p
	}
	n.log.Info("learner promoted to voter", "node", v.ID, "applied", p.Applied, "leader_applied", p.Target)
	return wire.LearnerProgress{}
}

// promotionQuorum refuses to promote learner id when the voters alive now (the leader,
// the voters that answered this round) and the learner would not make a quorum of the
// configuration with it as a voter.
func promotionQuorum(id string, views []memberView) error {
	voters, alive, down := countVoters(views, "", func(v memberView) bool { return v.status != nil })
	after := voters + 1
	if quorum := after/2 + 1; alive+1 < quorum {
		return fmt.Errorf("%w: %d of %d voters answer (%s do not); with %s as a voter, %d of %d would be needed",
			ErrPromotionRefused, alive, voters, strings.Join(down, ", "), id, quorum, after)
	}
	return nil
}

// countVoters counts the voters of views and the leader, and those alive: the leader and
// every voter but skip for which healthy holds; down names the others (skip is in neither).
func countVoters(views []memberView, skip string, healthy func(memberView) bool) (voters, alive int, down []string) {
	voters, alive = 1, 1 // the leader
	for _, v := range views {
		if !v.Voter {
			continue
		}
		voters++
		switch {
		case v.ID == skip:
		case healthy(v):
			alive++
		default:
			down = append(down, v.ID)
		}
	}
	return voters, alive, down
}

// isReadReplica reports whether this node is a read replica: configured as one, or
// recorded as one in the applied log.
func (n *Node) isReadReplica() bool {
	return n.cfg.ReadReplica || n.fsm.Nodes()[n.cfg.ID].ReadReplica
}

// joinApplied reports whether the applied log records this node's own incarnation: only a
// voter configuration that comes after that record in the log is this node's promotion.
// The leader records the joiner's incarnation with its join (addNode), so a record
// without one is never this node's join: a node that replaced an earlier incarnation
// under the same id and replays the log from its start applies the bootstrap's record of
// that one first, which carries no incarnation (the leader records the peers' later),
// while the bootstrap's configuration names it a voter.
func (n *Node) joinApplied() bool {
	rec, ok := n.fsm.Nodes()[n.cfg.ID]
	n.mu.Lock()
	own := n.identity.Incarnation
	n.mu.Unlock()
	return ok && (own == "" || rec.Incarnation == own)
}

// awaitPromotion keeps a learner not ready (ErrLearner) until the leader promotes it.
func (n *Node) awaitPromotion() {
	n.admission.set(ErrLearner)
	t := time.NewTicker(promotionWaitInterval)
	defer t.Stop()
	for {
		switch n.seq.Suffrage() {
		case sequencer.SuffrageVoter:
			if !n.joinApplied() {
				// A configuration from before this node's join: a node that replaced an
				// earlier incarnation under the same id replays the log from its start,
				// and the bootstrap's configuration names that one a voter.
				break
			}
			n.log.Info("promoted to voter")
			n.finishRebuild()
			n.admission.set(nil)
			return
		case sequencer.SuffrageLearner:
			if n.isReadReplica() { // restarted without Config.ReadReplica: the log says so
				n.admission.set(nil)
				return
			}
		case "":
			// Removed, or not yet in the configuration this node knows.
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}
