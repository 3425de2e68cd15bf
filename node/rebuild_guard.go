package node

import (
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// rebuildGuard wraps the FSM of a node started for its rebuild (its Raft state discarded,
// its identity rebuilding from index from). Such a node must begin with a healthy
// replica's snapshot taken past the rebuild point. Until one is restored, an entry to
// apply (necessarily index 1: the node's log is empty) means the leader still holds its
// log from the start — leadership moved after the rebuild was granted, to a member that
// had not compacted — and would have this node re-run, with its own code, the entries it
// diverged on. The guard applies none of them and calls interrupted, once; the node then
// asks its owner to prepare the rebuild again (interruptRebuild), and the leader, seeing
// a rebuilding learner that has not reached its rebuild point, compacts its log first
// (tendRebuilds), so the next attempt receives the snapshot.
type rebuildGuard struct {
	raft.BatchingFSM
	from        uint64
	interrupted func()

	restored atomic.Bool
	tripped  atomic.Bool
}

// Restore implements raft.FSM: a restored snapshot lifts the guard.
func (g *rebuildGuard) Restore(rc io.ReadCloser) error {
	err := g.BatchingFSM.Restore(rc)
	if err == nil {
		g.restored.Store(true)
	}
	return err
}

// ApplyBatch implements raft.BatchingFSM.
func (g *rebuildGuard) ApplyBatch(logs []*raft.Log) []interface{} {
	if !g.restored.Load() && (g.tripped.Load() || (len(logs) > 0 && logs[0].Index <= g.from)) {
		if !g.tripped.Swap(true) {
			g.interrupted()
		}
		return make([]interface{}, len(logs))
	}
	return g.BatchingFSM.ApplyBatch(logs)
}

// Apply implements raft.FSM.
func (g *rebuildGuard) Apply(l *raft.Log) interface{} { return g.ApplyBatch([]*raft.Log{l})[0] }
