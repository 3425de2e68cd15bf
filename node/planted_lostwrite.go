//go:build jepsen_lostwrite

package node

import "sync/atomic"

// A planted bug, for the fault-injection harness's tests only (jepsen/): built with
// -tags jepsen_lostwrite, a node acknowledges every tenth kv.put it receives without
// sending it to the log — "acknowledge before commit" at its worst. The register
// workload's linearizability checker must catch it (jepsen.TestCheckerCatchesLostWrite).

var plantedPuts atomic.Uint64

// plantedLostWrite reports whether this invocation of proc is to be acknowledged and
// dropped.
func plantedLostWrite(proc string) bool {
	return proc == "kv.put" && plantedPuts.Add(1)%10 == 0
}
