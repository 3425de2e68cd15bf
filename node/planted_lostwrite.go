//go:build jepsen_lostwrite

package node

import "sync/atomic"

// A planted bug, for the fault-injection harness's tests only (jepsen/): built with
// -tags jepsen_lostwrite, a node acknowledges every tenth kv.put and every tenth
// counter.add it receives without sending them to the log — "acknowledge before commit"
// at its worst. The register and counter checkers must catch it
// (jepsen.TestCheckersCatchLostWrites).

var plantedCalls atomic.Uint64

// plantedLostWrite returns the msgpack result to acknowledge an invocation of proc with,
// or nil to run it normally.
func plantedLostWrite(proc string) []byte {
	if proc != "kv.put" && proc != "counter.add" || plantedCalls.Add(1)%10 != 0 {
		return nil
	}
	if proc == "kv.put" {
		return []byte{0xc2} // false: the key was not new
	}
	return []byte{0x00} // 0: the counter's "new value"
}
