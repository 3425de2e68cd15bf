package node

// Recording members' incarnations on the leader. Two paths write a member's incarnation
// to the log: tendMembers records the one a member reports when the log holds none yet
// (bootstrap peers, nodes admitted by `lockstep cluster join`), and a rebuild clears it
// (rebuildNode), so that the member's new incarnation can join again. tendMembers acts on
// a view taken earlier, one status question per member, which under load can be seconds
// old: recorded after the clear, the rebuilt member's old incarnation, from a status it
// gave before it diverged, made the cluster refuse its join as a wiped data directory.
// So both paths run under one lock, the leader remembers the members it cleared for a
// rebuild until they join again, and tendMembers records nothing for them, and only
// where the log, read under the lock, still holds no incarnation.

import (
	"context"
	"sync"
)

// incarnationRecords serializes the leader's writes of members' incarnations.
type incarnationRecords struct {
	mu         sync.Mutex
	rebuilding map[string]bool // members whose incarnation this leader cleared for a rebuild, until they join again
}

// clearIncarnation clears member id's recorded incarnation for its rebuild, and keeps
// tendMembers from recording its old one again until it has joined (joined).
func (n *Node) clearIncarnation(ctx context.Context, id string) error {
	r := &n.incarnations
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rebuilding == nil {
		r.rebuilding = map[string]bool{}
	}
	r.rebuilding[id] = true
	info := n.fsm.Nodes()[id]
	if info.Incarnation == "" {
		return nil
	}
	info.Incarnation = ""
	if err := n.recordNode(ctx, info); err != nil {
		delete(r.rebuilding, id)
		return err
	}
	return nil
}

// joined tells the leader that member id joined again: its join recorded its incarnation.
func (n *Node) joined(id string) {
	n.incarnations.mu.Lock()
	delete(n.incarnations.rebuilding, id)
	n.incarnations.mu.Unlock()
}

// recordIncarnations records, for each member that answered and is not divergent, the
// incarnation it reported, where the log holds none: not for a member cleared for a
// rebuild (its status may predate the clear), and not where the log, read now, already
// holds one.
func (n *Node) recordIncarnations(views []memberView) {
	r := &n.incarnations
	for _, v := range views {
		if v.status == nil || v.status.Incarnation == "" || v.status.Divergent != "" {
			continue
		}
		r.mu.Lock()
		info := n.fsm.Nodes()[v.ID]
		if !r.rebuilding[v.ID] && info.ID != "" && info.Incarnation == "" {
			info.Incarnation = v.status.Incarnation
			ctx, cancel := context.WithTimeout(n.ctx, membershipTimeout)
			if err := n.recordNode(ctx, info); err != nil {
				n.log.Warn("cannot record a member's incarnation", "member", v.ID, "err", err)
			}
			cancel()
		}
		r.mu.Unlock()
	}
}
