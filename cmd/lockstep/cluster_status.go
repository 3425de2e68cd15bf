package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

func clusterStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show every node: role, term, log indexes, lag, partition state hashes, divergence, uptime",
		Description: `Asks the nodes at --addr for their status, and every member they name, and prints one row
per node: id, role (Leader, Follower, Candidate, or learner for a new node that replays
the log before the leader promotes it to voter), term, last log index, applied index, lag (log entries the node
has applied fewer than the leader), readiness, divergence, partition count,
uptime, addresses, version; then, from the leader, each learner's catch-up progress
("learner n4: catching up: applied 5120 of 90000 (6%)"); then each partition's state hash on every node. One reachable
address is enough.

After printing, it checks the cluster's health and says on stderr what is wrong.
Exit codes (when several hold, the first in this list; docs/cli.md has every command's):
  0  healthy: a leader, every member answered, ready and not divergent
  1  the command failed (bad flags, no output), as every lockstep command
  2  no leader: no node that answered leads or knows a leader
  3  a replica is divergent (its state differs from its peers')
  4  a member did not answer (unreachable)
  5  a member is not ready for another reason (catching up, incompatible, ...)

Examples:
  lockstep cluster status --addr 127.0.0.1:8001,127.0.0.1:8002,127.0.0.1:8003
  lockstep cluster status --output json`,
		Flags:  withClientFlags(outputFlag(outputTable)),
		Action: runClusterStatus,
	}
}

// nodeRow is one node of `lockstep cluster status --output json`: its status, its lag and,
// for a node that did not answer, the error (and only its address).
type nodeRow struct {
	statusJSON
	// Lag is how many log entries the node has applied fewer than the leader.
	Lag uint64 `json:"lag"`
	// Error says why the node did not answer; empty when it did.
	Error string `json:"error,omitempty"`
}

// clusterStatusJSON is the output of `lockstep cluster status --output json`.
type clusterStatusJSON struct {
	// Leader is the leader's id, empty if none is known.
	Leader string `json:"leader"`
	// Nodes are the nodes asked, ordered by id; the ones that did not answer come last.
	Nodes []nodeRow `json:"nodes"`

	status client.ClusterStatus // what the rows were made of: checkHealth judges it
}

func runClusterStatus(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	cs, err := gatherStatus(ctx, cl)
	if err != nil {
		return err
	}
	if format == outputJSON {
		err = writeJSON(c.App.Writer, cs)
	} else {
		err = writeStatusTable(c.App.Writer, cs)
	}
	if err != nil {
		return err
	}
	return checkHealth(cs)
}

// healthError is an unhealthy cluster: what is wrong, wrapping the error of the worst
// problem (exitTable gives its exit code).
type healthError struct {
	worst    error
	problems []string
}

func (e *healthError) Error() string { return strings.Join(e.problems, "; ") }

// Unwrap returns the error of the worst problem.
func (e *healthError) Unwrap() error { return e.worst }

// problemErrs maps each kind of problem to its error.
var problemErrs = map[client.ProblemKind]error{
	client.ProblemNoLeader:    errNoLeader,
	client.ProblemDivergent:   errReplicaDivergent,
	client.ProblemUnreachable: errMemberUnreachable,
	client.ProblemNotReady:    errMemberNotReady,
}

// checkHealth returns nil for a healthy cluster, else a *healthError naming every problem
// (client.ClusterStatus.Problems) and wrapping the worst's error: no leader, then
// divergent replicas, then members that did not answer, then members not ready for
// another reason (their exit codes' order).
func checkHealth(cs clusterStatusJSON) error {
	e := &healthError{}
	for _, p := range cs.status.Problems() {
		if err := problemErrs[p.Kind]; e.worst == nil || exitCode(err) < exitCode(e.worst) {
			e.worst = err
		}
		e.problems = append(e.problems, p.Message)
	}
	if e.worst == nil {
		return nil
	}
	return e
}

// gatherStatus asks the cluster's nodes for their status (client.ClusterStatus: the seeds
// and every node their statuses name) and returns the rows, with each one's lag.
func gatherStatus(ctx context.Context, cl *client.Client) (clusterStatusJSON, error) {
	st, err := cl.Cluster().Status(ctx)
	if err != nil {
		return clusterStatusJSON{}, err
	}
	lag := st.Lag()
	var rows, failed []nodeRow
	for _, n := range st.Nodes {
		if n.Err != nil {
			failed = append(failed, nodeRow{statusJSON: statusJSON{Status: client.Status{ClientAddr: n.Addr}}, Error: n.Err.Error()})
			continue
		}
		r := nodeRow{statusJSON: newStatusJSON(n.Status), Lag: lag[n.Status.NodeID]}
		r.HashChecks = nil // long; /status has them
		rows = append(rows, r)
	}
	return clusterStatusJSON{Leader: st.Leader, Nodes: append(rows, failed...), status: st}, nil
}

func writeStatusTable(w io.Writer, cs clusterStatusJSON) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tROLE\tTERM\tLAST-INDEX\tAPPLIED\tLAG\tREADY\tDIVERGENT\tPARTITIONS\tUPTIME\tCLIENT\tRAFT\tVERSION")
	var answered []nodeRow
	for _, r := range cs.Nodes {
		if r.Error != "" {
			fmt.Fprintf(tw, "?\tunreachable\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t-\t-\n", r.ClientAddr)
			continue
		}
		answered = append(answered, r)
		version := r.Version
		if version == "" {
			version = "-" // a node that does not report it
		}
		role := string(r.State)
		switch {
		case r.ReadReplica:
			role = "read-replica" // a permanent non-voter serving reads
		case r.Suffrage == "learner":
			role = "learner" // a non-voter catching up; the leader promotes it
		}
		role = rebuildRole(r, role)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.NodeID, role, r.Term, r.LastLogIndex,
			r.AppliedIndex, r.Lag, yesNo(r.Ready), yesNo(r.Divergent != ""), r.Partitions,
			(time.Duration(r.UptimeMs) * time.Millisecond).Round(time.Second), r.ClientAddr, r.RaftAddr, version)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range answered {
		for _, l := range r.Learners {
			fmt.Fprintf(w, "learner %s: %s\n", l.ID, l.Note)
		}
	}
	writeRebuildNotes(w, answered)
	if len(answered) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	head := []string{"PARTITION"}
	parts := 0
	for _, r := range answered {
		head = append(head, r.NodeID)
		parts = max(parts, len(r.Hashes))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for p := range parts {
		row := []string{fmt.Sprint(p)}
		for _, r := range answered {
			h := "-"
			if p < len(r.Hashes) {
				h = r.Hashes[p]
			}
			row = append(row, h)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, hashSummary(answered))
	insecure := 0
	for _, r := range answered {
		if r.Insecure {
			insecure++
		}
	}
	if insecure > 0 {
		fmt.Fprintf(w, "WARNING: %d of %d nodes run insecure (--insecure): no TLS, no authentication\n", insecure, len(answered))
	}
	return nil
}

// hashSummary says whether the replicas' state hashes agree, where that can be judged:
// only replicas at the same applied index must have equal hashes, and only those that
// apply the cluster's log: an incompatible node (another procedure set or partition
// count) applies none of it, so its hashes say nothing about divergence (its row and the
// health check say why it does not serve).
func hashSummary(rows []nodeRow) string {
	var skipped []string
	compared := rows[:0:0]
	for _, r := range rows {
		if r.Incompatible != "" {
			skipped = append(skipped, r.NodeID)
		} else {
			compared = append(compared, r)
		}
	}
	s := compareHashes(compared)
	if len(skipped) > 0 {
		s += fmt.Sprintf("; not compared: %s (incompatible with the cluster: applies none of its log)", strings.Join(skipped, ", "))
	}
	return s
}

// compareHashes is hashSummary for the replicas that apply the cluster's log.
func compareHashes(rows []nodeRow) string {
	if len(rows) == 0 {
		return "no replica applies the cluster's log"
	}
	for _, r := range rows[1:] {
		if r.AppliedIndex != rows[0].AppliedIndex {
			return "replicas are at different applied indexes (writes in flight): hashes compare only at equal indexes"
		}
	}
	for _, r := range rows[1:] {
		if !slices.Equal(r.Hashes, rows[0].Hashes) {
			return fmt.Sprintf("state hashes DIFFER at applied index %d", rows[0].AppliedIndex)
		}
	}
	return fmt.Sprintf("%d replicas at applied index %d: state hashes equal", len(rows), rows[0].AppliedIndex)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
