package restartplan

import (
	"slices"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/clusterstatus"
)

// Step is one node of a rolling restart.
type Step struct {
	// ID, Client and Raft are the node's id and addresses.
	ID, Client, Raft string
	// Role is how the plan describes the node: leader, follower, read replica, learner,
	// or unreachable (a node that did not answer: its ID is "?").
	Role string
}

// Plan orders the nodes of cs for a rolling restart: read replicas and learners,
// then followers, each by id, then the leader. It also returns the number of voters.
func Plan(cs clusterstatus.Report) ([]Step, int) {
	var replicas, followers, leader []Step
	voters := 0
	for _, n := range cs.Nodes {
		s := Step{ID: n.NodeID, Client: n.ClientAddr, Raft: n.RaftAddr}
		switch {
		case n.Error != "":
			s.ID, s.Role = "?", "unreachable"
			followers = append(followers, s)
		case n.ReadReplica:
			s.Role = "read replica"
			replicas = append(replicas, s)
		case n.Suffrage == "learner":
			s.Role = "learner"
			replicas = append(replicas, s)
		case n.NodeID == cs.Leader:
			s.Role = "leader"
			leader = append(leader, s)
			voters++
		default:
			s.Role = "follower"
			followers = append(followers, s)
			if n.Suffrage == "voter" {
				voters++
			}
		}
	}
	byID := func(a, b Step) int { return strings.Compare(a.ID, b.ID) }
	slices.SortStableFunc(replicas, byID)
	slices.SortStableFunc(followers, byID)
	return append(append(replicas, followers...), leader...), voters
}

// PlanJSON is the output of `cluster restart-plan --output json`: the plan and,
// with --execute, that it was carried out.
type PlanJSON struct {
	Steps    []StepJSON `json:"steps"`
	Executed bool       `json:"executed"`
	TookMs   int64      `json:"took_ms,omitempty"`
}

// StepJSON is one node of the plan, in restart order.
type StepJSON struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Client  string `json:"client"`
	Raft    string `json:"raft"`
	Command string `json:"command,omitempty"`
}

// PlanJSON returns plan as `cluster restart-plan --output json` prints it: executed
// says it was carried out, in took.
func (r *Restarter) PlanJSON(plan []Step, executed bool, took time.Duration) PlanJSON {
	out := PlanJSON{Steps: []StepJSON{}, Executed: executed, TookMs: took.Milliseconds()}
	for _, s := range plan {
		st := StepJSON{ID: s.ID, Role: s.Role, Client: s.Client, Raft: s.Raft}
		if r.cfg.Command != "" {
			st.Command = CommandFor(r.cfg.Command, s)
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}

// CommandFor is the command line that restarts s: template with {id},
// {client} and {raft} replaced by s's, each as one single-quoted shell word.
func CommandFor(template string, s Step) string {
	return strings.NewReplacer("{id}", shellQuote(s.ID), "{client}", shellQuote(s.Client),
		"{raft}", shellQuote(s.Raft)).Replace(template)
}

// shellQuote returns v as one single-quoted word of a POSIX shell.
func shellQuote(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }
