package node

import (
	"sync"
	"sync/atomic"

	"github.com/lockstepdb/lockstep/internal/planted"
)

// The code of two planted bugs (internal/planted): in a normal build their switches are
// false constants and these functions do nothing.

// plantedCalls counts the invocations the jepsen_lostwrite build has seen.
var plantedCalls atomic.Uint64

// plantedLostWrite returns the msgpack result to acknowledge an invocation of proc with
// without sending it to the log (planted.LostWrite: every tenth kv.put and counter.add),
// or nil to run it normally.
func plantedLostWrite(proc string) []byte {
	if !planted.LostWrite {
		return nil
	}
	if proc != "kv.put" && proc != "counter.add" || plantedCalls.Add(1)%10 != 0 {
		return nil
	}
	if proc == "kv.put" {
		return []byte{0xc2} // false: the key was not new
	}
	return []byte{0x00} // 0: the counter's "new value"
}

// plantedLedTerm holds, per *Node, the term in which that node last became ready to lead
// (per node, so that the in-process clusters of node's tests plant it too); only the
// jepsen_staleread build writes it.
var plantedLedTerm sync.Map

// plantedNoteLeading records that n leads in term (planted.StaleRead only).
func plantedNoteLeading(n *Node, term uint64) {
	if planted.StaleRead {
		plantedLedTerm.Store(n, term)
	}
}

// plantedStaleRead reports whether a linearizable read is answered locally: in the
// jepsen_staleread build, while n's term is still the one it led in.
func plantedStaleRead(n *Node) bool {
	if !planted.StaleRead {
		return false
	}
	t, ok := plantedLedTerm.Load(n)
	return ok && t.(uint64) == n.seq.Term()
}
