package node

import (
	"maps"
	"slices"
	"time"

	"github.com/lockstepdb/lockstep/internal/buildinfo"
	"github.com/lockstepdb/lockstep/internal/wire"
)

// Version returns this build's version as nodes report it in their status: the module
// version, or "(devel)" with the VCS revision and time when the build recorded them.
func Version() string { return buildinfo.Version() }

// BuildTarget returns this binary's build target: the Go version, GOARCH and its
// instruction-set level (GOAMD64, GOARM64, ...), for example "go1.26.8 amd64 GOAMD64=v1".
// Float results can differ between targets (the compiler fuses x*y+z into FMA where the
// target has it), so a node joins only a cluster whose leader runs the same target
// (docs/procedures.md, Floats).
func BuildTarget() string { return buildinfo.Target() }

// statusFrom assembles the node's status as the wire reports it.
func (n *Node) statusFrom() wire.Status {
	st := n.seq.Stats()
	// Readiness first: the fields read after it (applied index, suffrage) only move
	// forward, so a status that says ready never shows a learner, or an applied index
	// behind the one readiness judged — the join completes with the promotion.
	notReady := n.readiness(st)
	s := wire.Status{
		NodeID:            n.cfg.ID,
		ClientAddr:        n.ClientAddr(),
		RaftAddr:          n.seq.Addr(),
		AdminAddr:         n.AdminAddr(),
		Version:           Version(),
		Build:             n.cfg.BuildTarget,
		Carries:           carried(n.fsm.Registry()),
		RestFingerprint:   n.fsm.Registry().RestFingerprint(),
		TablesFingerprint: n.fsm.Registry().TablesFingerprint(),
		State:             st.State,
		Term:              st.Term,
		LastLogIndex:      st.LastLogIndex,
		CommitIndex:       st.CommitIndex,
		AppliedIndex:      n.fsm.Applied(),
		Partitions:        n.fsm.Partitions(),
		Hashes:            n.fsm.Engine().Hashes(),
		Sessions:          n.fsm.Sessions(),
		UptimeMs:          time.Since(n.started).Milliseconds(),
		Batches:           st.Batches,
		Inputs:            st.Inputs,
		QueueDepth:        st.QueueDepth,
		Insecure:          n.Insecure(),
	}
	s.MinVersion, s.MaxVersion = n.fsm.SupportedVersions()
	s.ClusterVersion = n.fsm.Deployment().Effective()
	s.LeaderID, _ = n.seq.Leader()
	s.LeaderClientAddr = n.leaderClientAddr()
	if err := n.fsm.Divergent(); err != nil {
		s.Divergent = err.Error()
	}
	if err := n.fsm.Incompatible(); err != nil {
		s.Incompatible = err.Error()
	}
	if info, ok := n.fsm.Cluster(); ok {
		s.ClusterID = info.ClusterID
	}
	for _, r := range n.fsm.HashRecords() {
		s.HashChecks = append(s.HashChecks, wire.HashCheck{Index: r.Index, Hashes: r.Hashes, Meta: r.Meta})
	}
	nodes := n.fsm.Nodes()
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		s.Nodes = append(s.Nodes, wire.NodeAddr{ID: id, RaftAddr: nodes[id].RaftAddr, ClientAddr: nodes[id].ClientAddr,
			Incarnation: nodes[id].Incarnation})
	}
	s.Suffrage = n.seq.Suffrage()
	s.ReadReplica = n.isReadReplica()
	n.mu.Lock()
	s.Incarnation, s.Rebuilds, s.RebuildFrom = n.identity.Incarnation, n.identity.Rebuilds, n.identity.RebuildFrom
	n.mu.Unlock()
	s.Learners = n.learnerProgress()
	s.Rebuild, s.RebuildNote = n.rebuildStatus()
	if notReady != nil {
		s.NotReadyReason = notReady.Error()
	} else {
		s.Ready = true
	}
	return s
}
