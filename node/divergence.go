package node

import (
	"context"
	"time"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// hashCompareLoop compares this replica's hash checks with its peers' every
// HashCompareInterval (DESIGN.md invariant 6). Peers are found through the node addresses
// recorded in the log and asked through the client library, on connections it keeps.
func (n *Node) hashCompareLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.HashCompareInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		if n.fsm.Divergent() != nil {
			continue
		}
		n.markIfIdle()
		var peers [][]replica.HashRecord
		for id, info := range n.fsm.Nodes() {
			if id == n.cfg.ID || info.ClientAddr == "" || info.ReadReplica {
				continue // read replicas are judged, never witnesses: more of them than voters must not outvote the voters
			}
			ctx, cancel := context.WithTimeout(n.ctx, n.cfg.HashCompareInterval)
			st, err := n.peers.Status(ctx, info.ClientAddr)
			cancel()
			if err != nil || st.Divergent != "" {
				continue // an unreachable or known-bad peer neither accuses nor vouches
			}
			recs := make([]replica.HashRecord, len(st.HashChecks))
			for i, h := range st.HashChecks {
				recs[i] = replica.HashRecord{Index: h.Index, Hashes: h.Hashes, Meta: h.Meta}
			}
			peers = append(peers, recs)
		}
		n.fsm.CompareHashes(peers)
		if err := n.fsm.Divergent(); err != nil {
			n.recordEvent(EventDivergent, err.Error())
		}
	}
}

// markIfIdle has the leader append a hash check when entries were applied since the last
// one: the sequencer adds checks to batches it forms anyway, but a quiet cluster would
// otherwise leave its last changes unchecked.
func (n *Node) markIfIdle() {
	if !n.leading() {
		return
	}
	recs := n.fsm.HashRecords()
	if len(recs) > 0 && recs[len(recs)-1].Index >= n.fsm.Applied() {
		return // nothing applied since the last check
	}
	n.seq.Submit(&sequencer.Proposal{Item: batch.Item{Kind: batch.KindHashCheck}, Done: func(batch.Result, uint64, error) {}})
}
