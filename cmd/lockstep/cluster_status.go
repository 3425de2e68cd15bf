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
per node: id, role, term, last log index, applied index, lag (log entries the node
has applied fewer than the leader), readiness, divergence, partition count,
uptime, addresses; then each partition's state hash on every node. One reachable
address is enough. Exits non-zero, after printing, if a node did not answer.

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
}

func runClusterStatus(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	ctx, cancel, err := commandContext(c)
	if err != nil {
		return err
	}
	defer cancel()
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	cs, failed, err := gatherStatus(ctx, cl)
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
	if failed > 0 {
		var why []string
		for _, r := range cs.Nodes {
			if r.Error != "" {
				why = append(why, r.Error)
			}
		}
		return fmt.Errorf("%d of %d nodes did not answer: %s", failed, len(cs.Nodes), strings.Join(why, "; "))
	}
	return nil
}

// gatherStatus asks the cluster's nodes for their status (client.ClusterStatus: the seeds
// and every node their statuses name) and returns the rows and how many failed.
func gatherStatus(ctx context.Context, cl *client.Client) (clusterStatusJSON, int, error) {
	st, err := cl.ClusterStatus(ctx)
	if err != nil {
		return clusterStatusJSON{}, 0, err
	}
	var rows, failed []nodeRow
	for _, n := range st.Nodes {
		if n.Err != nil {
			failed = append(failed, nodeRow{statusJSON: statusJSON{Status: client.Status{ClientAddr: n.Addr}}, Error: n.Err.Error()})
			continue
		}
		r := nodeRow{statusJSON: newStatusJSON(n.Status)}
		r.HashChecks = nil // long; /status has them
		rows = append(rows, r)
	}
	cs := clusterStatusJSON{Leader: st.Leader}
	// The reference is what the leader has applied, not its commit index: Raft's own
	// entries (a new leader's no-op, configuration changes) never reach the state
	// machine, so an idle replica's applied index stays below the commit index.
	var ref uint64
	for _, r := range rows {
		if r.NodeID == cs.Leader {
			ref = r.AppliedIndex
			break
		}
		ref = max(ref, r.AppliedIndex)
	}
	for i := range rows {
		if ref > rows[i].AppliedIndex {
			rows[i].Lag = ref - rows[i].AppliedIndex
		}
	}
	cs.Nodes = append(rows, failed...)
	return cs, len(failed), nil
}

func writeStatusTable(w io.Writer, cs clusterStatusJSON) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tROLE\tTERM\tLAST-INDEX\tAPPLIED\tLAG\tREADY\tDIVERGENT\tPARTITIONS\tUPTIME\tCLIENT\tRAFT")
	var answered []nodeRow
	for _, r := range cs.Nodes {
		if r.Error != "" {
			fmt.Fprintf(tw, "?\tunreachable\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t-\n", r.ClientAddr)
			continue
		}
		answered = append(answered, r)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", r.NodeID, r.State, r.Term, r.LastLogIndex,
			r.AppliedIndex, r.Lag, yesNo(r.Ready), yesNo(r.Divergent != ""), r.Partitions,
			(time.Duration(r.UptimeMs) * time.Millisecond).Round(time.Second), r.ClientAddr, r.RaftAddr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
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
	return nil
}

// hashSummary says whether the replicas' state hashes agree, where that can be judged:
// only replicas at the same applied index must have equal hashes.
func hashSummary(rows []nodeRow) string {
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
