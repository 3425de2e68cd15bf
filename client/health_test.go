package client

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

// answeredNode returns the NodeStatus of a node that answered.
func answeredNode(id string, applied uint64, ready bool, notReady, divergent string) NodeStatus {
	return NodeStatus{Addr: id + ":1", ID: id, Status: Status{NodeID: id, AppliedIndex: applied, Ready: ready,
		NotReadyReason: notReady, Divergent: divergent}}
}

// TestProblems: each kind of problem, their order (worst first), and the text
// `lockstep cluster status` prints for them.
func TestProblems(t *testing.T) {
	down := NodeStatus{Addr: "n9:1", Err: errors.New("client: status of n9:1: cannot connect")}
	for i, tc := range []struct {
		cs    ClusterStatus
		kinds []ProblemKind
		msgs  []string
	}{
		{ClusterStatus{Leader: "n1", Nodes: []NodeStatus{answeredNode("n1", 5, true, "", ""), answeredNode("n2", 5, true, "", "")}}, nil, nil},
		{ClusterStatus{Leader: "n1", Nodes: []NodeStatus{answeredNode("n1", 5, true, "", ""), down}},
			[]ProblemKind{ProblemUnreachable}, []string{"1 of 2 nodes did not answer: client: status of n9:1: cannot connect"}},
		// Nobody answered: unreachable, not "no leader".
		{ClusterStatus{Nodes: []NodeStatus{down}}, []ProblemKind{ProblemUnreachable}, []string{"1 of 1 nodes did not answer: client: status of n9:1: cannot connect"}},
		{ClusterStatus{Nodes: []NodeStatus{
			answeredNode("n1", 5, false, "no leader known", ""),
			answeredNode("n2", 5, false, "diverged", "partition 1 hash differs"),
			answeredNode("n3", 2, false, "catching up", ""),
			down,
		}}, []ProblemKind{ProblemNoLeader, ProblemDivergent, ProblemUnreachable, ProblemNotReady}, []string{
			"no leader",
			"1 divergent: n2: partition 1 hash differs",
			"1 of 4 nodes did not answer: client: status of n9:1: cannot connect",
			"2 not ready: n1: no leader known, n3: catching up",
		}},
	} {
		ps := tc.cs.Problems()
		var kinds []ProblemKind
		var msgs []string
		for _, p := range ps {
			kinds, msgs = append(kinds, p.Kind), append(msgs, p.String())
		}
		if !slices.Equal(kinds, tc.kinds) || !slices.Equal(msgs, tc.msgs) {
			t.Errorf("#%d: got %v %q, want %v %q", i, kinds, msgs, tc.kinds, tc.msgs)
		}
	}
}

// TestProblemNodes: each problem lists the nodes it concerns; a node counts once.
func TestProblemNodes(t *testing.T) {
	cs := ClusterStatus{Leader: "n1", Nodes: []NodeStatus{
		answeredNode("n1", 5, true, "", ""),
		answeredNode("n2", 5, false, "diverged", "hash"), // divergent, not also not-ready
		answeredNode("n3", 5, false, "catching up", ""),
	}}
	ps := cs.Problems()
	if len(ps) != 2 || len(ps[0].Nodes) != 1 || ps[0].Nodes[0].ID != "n2" || len(ps[1].Nodes) != 1 || ps[1].Nodes[0].ID != "n3" {
		t.Fatalf("got %+v, want divergent n2, then not ready n3", ps)
	}
	if s := ProblemNotReady.String(); s != "not-ready" {
		t.Errorf("got %q, want not-ready", s)
	}
}

// TestLag: lag counts from the leader's applied index (not the highest), from the
// highest without a leader among the answers; nodes ahead of the leader lag 0; nodes
// that did not answer have none.
func TestLag(t *testing.T) {
	down := NodeStatus{Addr: "n9:1", ID: "n9", Err: errors.New("down")}
	for i, tc := range []struct {
		cs   ClusterStatus
		want map[string]uint64
	}{
		{ClusterStatus{Leader: "n2", Nodes: []NodeStatus{answeredNode("n1", 12, true, "", ""), answeredNode("n2", 10, true, "", ""),
			answeredNode("n3", 4, true, "", ""), down}}, map[string]uint64{"n1": 0, "n2": 0, "n3": 6}},
		{ClusterStatus{Leader: "n9", Nodes: []NodeStatus{answeredNode("n1", 7, true, "", ""), answeredNode("n3", 9, true, "", ""), down}},
			map[string]uint64{"n1": 2, "n3": 0}},
		{ClusterStatus{Nodes: []NodeStatus{down}}, map[string]uint64{}},
	} {
		if got := tc.cs.Lag(); !maps.Equal(got, tc.want) {
			t.Errorf("#%d: got %v, want %v", i, got, tc.want)
		}
	}
}
