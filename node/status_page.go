package node

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node/statuspage"
)

// The status page (GET / on the admin port; node/statuspage renders it).
const (
	// statusPageRefresh is how often the page reloads itself.
	statusPageRefresh = 2 * time.Second
	// statusPageTimeout bounds gathering the cluster's status for one page: a member
	// that does not answer in time shows as not answering.
	statusPageTimeout = 2 * time.Second
)

// serveStatusPage writes the status page: the cluster as its members describe it (asked
// through the node's peer client, as `lockstep cluster status` asks), this node's
// processors and its recent fault events.
func (n *Node) serveStatusPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), statusPageTimeout)
	defer cancel()
	p := n.statusPageData(ctx)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := statuspage.Render(w, p); err != nil {
		n.log.Warn("status page", "err", err)
	}
}

// statusPageData gathers the page's data within ctx.
func (n *Node) statusPageData(ctx context.Context) statuspage.Page {
	p := statuspage.Page{NodeID: n.cfg.ID, Version: Version(), Generated: time.Now(),
		RefreshSeconds: int(statusPageRefresh / time.Second)}
	for _, e := range n.Events() {
		p.Events = append(p.Events, statuspage.Event{Time: e.Time, Kind: string(e.Kind), Message: e.Message, Count: e.Count})
	}
	if procs, err := n.processorStatus(); err == nil {
		for _, ps := range procs {
			row := statuspage.Processor{Name: ps.Processor, Input: ps.Input, Partition: ps.Partition, Position: ps.Position,
				End: ps.End, Lag: ps.Lag, DeadLetters: ps.DeadLetters, Skipped: ps.Skipped}
			for _, w := range ps.Windows {
				row.Late += w.Late
				wm := "none yet"
				if w.HasWatermark {
					wm = time.UnixMilli(w.Watermark).UTC().Format(time.RFC3339Nano)
				}
				row.Watermarks = append(row.Watermarks, w.Operator+": "+wm)
			}
			p.Processors = append(p.Processors, row)
		}
	}
	cs, err := n.peers.Cluster().Status(ctx)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	p.Leader = cs.Leader
	for _, pr := range cs.Problems() {
		p.Problems = append(p.Problems, pr.Message)
	}
	lag := cs.Lag()
	var answered []client.Status
	for _, ns := range cs.Nodes {
		if ns.Err != nil {
			p.Members = append(p.Members, statuspage.Member{ID: ns.ID, Role: "unreachable", Addr: ns.Addr, Error: ns.Err.Error()})
			continue
		}
		st := ns.Status
		answered = append(answered, st)
		role := string(st.State)
		switch {
		case st.ReadReplica:
			role = "read-replica"
		case st.Suffrage == "learner":
			role = "learner"
		}
		p.Members = append(p.Members, statuspage.Member{ID: st.NodeID, Role: role, Addr: st.ClientAddr, Version: st.Version,
			Term: st.Term, Applied: st.AppliedIndex, Lag: lag[st.NodeID], Ready: st.Ready, Divergent: st.Divergent, NotReady: st.NotReadyReason})
		p.HashMembers = append(p.HashMembers, st.NodeID)
	}
	p.Partitions, p.HashSummary = hashRows(answered)
	return p
}

// hashRows lays out the answering members' partition hashes, and says whether they agree:
// only members at one applied index must have equal hashes.
func hashRows(sts []client.Status) ([]statuspage.HashRow, string) {
	if len(sts) == 0 {
		return nil, "no member answered"
	}
	parts := 0
	sameIndex := true
	for _, st := range sts {
		parts = max(parts, len(st.Hashes))
		sameIndex = sameIndex && st.AppliedIndex == sts[0].AppliedIndex
	}
	rows := make([]statuspage.HashRow, parts)
	differ := 0
	for i := range rows {
		rows[i].Partition = i
		var hs []uint64
		for _, st := range sts {
			h := "-"
			if i < len(st.Hashes) {
				h = fmt.Sprintf("%016x", st.Hashes[i])
				hs = append(hs, st.Hashes[i])
			}
			rows[i].Hashes = append(rows[i].Hashes, h)
		}
		slices.Sort(hs)
		if sameIndex && len(slices.Compact(hs)) > 1 {
			rows[i].Differ = true
			differ++
		}
	}
	switch {
	case !sameIndex:
		return rows, "members are at different applied indexes (writes in flight): hashes compare only at equal indexes"
	case differ > 0:
		return rows, fmt.Sprintf("state hashes DIFFER on %d partitions at applied index %d", differ, sts[0].AppliedIndex)
	}
	return rows, fmt.Sprintf("%d members at applied index %d: state hashes equal", len(sts), sts[0].AppliedIndex)
}
