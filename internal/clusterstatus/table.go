package clusterstatus

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/node"
)

// WriteTable prints cs as `lockstep cluster status` does: a row per node, the learners'
// progress, the rebuilds, then each partition's state hash on every node and whether
// they agree, and a warning for nodes that run insecure.
func WriteTable(w io.Writer, cs Report) error {
	tw := cliout.NewTable(w)
	fmt.Fprintln(tw, "ID\tROLE\tTERM\tLAST-INDEX\tAPPLIED\tLAG\tREADY\tDIVERGENT\tPARTITIONS\tUPTIME\tCLIENT\tRAFT\tVERSION")
	var answered []Row
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
			r.AppliedIndex, r.Lag, cliout.YesNo(r.Ready), cliout.YesNo(r.Divergent != ""), r.Partitions,
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
	tw = cliout.NewTable(w)
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
	fmt.Fprintln(w, HashSummary(answered))
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

// HashSummary says whether the replicas' state hashes agree, where that can be judged:
// only replicas at the same applied index must have equal hashes, and only those that
// apply the cluster's log: an incompatible node (another procedure set or partition
// count) applies none of it, so its hashes say nothing about divergence (its row and the
// health check say why it does not serve).
func HashSummary(rows []Row) string {
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
func compareHashes(rows []Row) string {
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

// rebuildRole is the ROLE column of a node in the middle of its automatic rebuild after
// a divergence ("rebuilding"), else role.
func rebuildRole(r Row, role string) string {
	if r.Rebuild == node.RebuildRebuilding {
		return "rebuilding"
	}
	return role
}

// writeRebuildNotes prints one line per node with a rebuild under way, refused or ruled
// out ("rebuild n3: fenced: diverged again after 1 automatic rebuild(s) ..."), and the
// automatic rebuilds each node went through.
func writeRebuildNotes(w io.Writer, rows []Row) {
	for _, r := range rows {
		if r.Rebuild != "" {
			fmt.Fprintf(w, "rebuild %s: %s: %s\n", r.NodeID, r.Rebuild, r.RebuildNote)
		} else if r.Rebuilds > 0 {
			fmt.Fprintf(w, "rebuild %s: %d automatic rebuild(s), the last from index %d\n", r.NodeID, r.Rebuilds, r.RebuildFrom)
		}
	}
}
