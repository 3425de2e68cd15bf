package client

import (
	"fmt"
	"strings"
)

// Health: what a ClusterStatus (Cluster().Status) says is wrong with the cluster (Problems) and how far
// each replica is behind the leader (Lag). `lockstep cluster status` prints both and maps
// the worst problem to its exit code; a rolling restart waits until there is none.

// ProblemKind is the class of a Problem. The kinds are ordered by severity, worst first.
type ProblemKind uint8

const (
	// ProblemNoLeader: no node that answered leads or knows a leader. Judged only from
	// nodes that answered: if none did, the cluster is unreachable, not leaderless.
	ProblemNoLeader ProblemKind = iota + 1
	// ProblemDivergent: a replica's state differs from its peers' and it stopped serving.
	ProblemDivergent
	// ProblemUnreachable: a node did not answer.
	ProblemUnreachable
	// ProblemNotReady: a node answered but is not ready for another reason (catching up,
	// incompatible, no leader known, ...).
	ProblemNotReady
)

// String returns the kind's name: "no-leader", "divergent", "unreachable", "not-ready".
func (k ProblemKind) String() string {
	switch k {
	case ProblemNoLeader:
		return "no-leader"
	case ProblemDivergent:
		return "divergent"
	case ProblemUnreachable:
		return "unreachable"
	case ProblemNotReady:
		return "not-ready"
	}
	return fmt.Sprintf("ProblemKind(%d)", uint8(k))
}

// Problem is one thing wrong with the cluster: its kind and the nodes it concerns.
type Problem struct {
	// Kind is the class of the problem.
	Kind ProblemKind
	// Nodes are the nodes concerned, in ClusterStatus.Nodes order; none for
	// ProblemNoLeader.
	Nodes []NodeStatus
	// Message says what is wrong, naming each node concerned and why: "no leader",
	// "1 divergent: n2: ...", "1 of 3 nodes did not answer: ...", "2 not ready: n1: ...,
	// n3: ...".
	Message string
}

// String returns p.Message.
func (p Problem) String() string { return p.Message }

// Problems returns what is wrong with the cluster, at most one Problem of each kind, worst
// kind first; none for a healthy cluster: a leader, every node answered, ready and not
// divergent. A node counts under one kind only: unreachable, else divergent, else not
// ready.
func (cs *ClusterStatus) Problems() []Problem {
	var unreachable, divergent, notReady []NodeStatus
	for _, n := range cs.Nodes {
		switch {
		case n.Err != nil:
			unreachable = append(unreachable, n)
		case n.Status.Divergent != "":
			divergent = append(divergent, n)
		case !n.Status.Ready:
			notReady = append(notReady, n)
		}
	}
	var out []Problem
	if cs.Leader == "" && len(unreachable) < len(cs.Nodes) {
		out = append(out, Problem{Kind: ProblemNoLeader, Message: "no leader"})
	}
	if len(divergent) > 0 {
		out = append(out, Problem{Kind: ProblemDivergent, Nodes: divergent,
			Message: fmt.Sprintf("%d divergent: %s", len(divergent), reasons(divergent, func(s *Status) string { return s.Divergent }))})
	}
	if len(unreachable) > 0 {
		errs := make([]string, len(unreachable))
		for i, n := range unreachable {
			errs[i] = n.Err.Error()
		}
		out = append(out, Problem{Kind: ProblemUnreachable, Nodes: unreachable,
			Message: fmt.Sprintf("%d of %d nodes did not answer: %s", len(unreachable), len(cs.Nodes), strings.Join(errs, "; "))})
	}
	if len(notReady) > 0 {
		out = append(out, Problem{Kind: ProblemNotReady, Nodes: notReady,
			Message: fmt.Sprintf("%d not ready: %s", len(notReady), reasons(notReady, func(s *Status) string { return s.NotReadyReason }))})
	}
	return out
}

// reasons returns "id: why, id: why" for nodes, why taken from each node's status.
func reasons(nodes []NodeStatus, why func(*Status) string) string {
	parts := make([]string, len(nodes))
	for i := range nodes {
		parts[i] = nodes[i].Status.NodeID + ": " + why(&nodes[i].Status)
	}
	return strings.Join(parts, ", ")
}

// Lag returns, for every node that answered, by id, how many log entries it has applied
// fewer than the leader (0 for the leader and for any node ahead of it). Without a
// leader among the answers the reference is the highest applied index any node reports.
// The reference is what the leader has applied, not its commit index: Raft's own entries
// (a new leader's no-op, configuration changes) never reach the state machine, so an
// idle replica's applied index stays below the commit index.
func (cs *ClusterStatus) Lag() map[string]uint64 {
	var ref uint64
	for _, n := range cs.Nodes {
		if n.Err != nil {
			continue
		}
		if n.Status.NodeID == cs.Leader {
			ref = n.Status.AppliedIndex
			break
		}
		ref = max(ref, n.Status.AppliedIndex)
	}
	lag := map[string]uint64{}
	for _, n := range cs.Nodes {
		if n.Err == nil {
			lag[n.Status.NodeID] = ref - min(ref, n.Status.AppliedIndex)
		}
	}
	return lag
}
