//go:build jepsen_staleread

package node

import "sync"

// A planted bug, for the fault-injection harness's tests only (jepsen/): built with
// -tags jepsen_staleread, a node that led answers linearizable reads (readindex.go) from
// its own state, skipping the read-index round's quorum confirmation and its leadership
// checks, for as long as its Raft term is still the one it led in — a "lease" that is
// never confirmed with a quorum. A leader cut off from the others keeps its term (pre-vote
// fails without a majority), so while the majority elects a new leader and writes, the
// deposed one goes on serving reads of the old state. The register workload must catch it
// under the isolate-leader-clients nemesis (jepsen.TestCheckersCatchStaleReads).

// plantedLedTerm holds, per *Node, the term in which that node last became ready to lead
// (per node, so that the in-process clusters of node's tests plant it too).
var plantedLedTerm sync.Map

// plantedNoteLeading records that n leads in term.
func plantedNoteLeading(n *Node, term uint64) { plantedLedTerm.Store(n, term) }

// plantedStaleRead reports whether a linearizable read is answered locally.
func plantedStaleRead(n *Node) bool {
	t, ok := plantedLedTerm.Load(n)
	return ok && t.(uint64) == n.seq.Term()
}
