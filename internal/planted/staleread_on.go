//go:build jepsen_staleread

package planted

// StaleRead switches on a planted bug, for the fault-injection harness's tests only
// (jepsen/): built with
// -tags jepsen_staleread, a node that led answers linearizable reads (readindex.go) from
// its own state, skipping the read-index round's quorum confirmation and its leadership
// checks, for as long as its Raft term is still the one it led in — a "lease" that is
// never confirmed with a quorum. A leader cut off from the others keeps its term (pre-vote
// fails without a majority), so while the majority elects a new leader and writes, the
// deposed one goes on serving reads of the old state. The register workload must catch it
// under the isolate-leader-clients nemesis (jepsen.TestCheckersCatchStaleReads).
const StaleRead = true
