package procedures

import (
	"github.com/lockstepdb/lockstep/internal/planted"
	"github.com/lockstepdb/lockstep/partition"
)

// nondetArgs are the arguments of test.nondet.
type nondetArgs struct {
	// Node is the id of the node on which the write differs.
	Node string `msgpack:"node"`
}

// RegisterTestProcedures adds "test.nondet" to r in a test build (go build -tags
// lockstep_nondet, planted.Nondet) and nothing in any other build. test.nondet writes a
// value that differs on the node whose id is its argument Node — nodeID names the node r
// belongs to — the one kind of bug the determinism guard must catch (DESIGN.md
// invariant 6). The rebuild tests use it to make one replica diverge. Never in a release.
func RegisterTestProcedures(r *Registry, nodeID string) {
	if !planted.Nondet {
		return
	}
	MustRegister(r, "test.nondet", func(tx *partition.Tx, a nondetArgs) (bool, error) {
		v := "same"
		if a.Node == nodeID {
			v = "differs on " + nodeID
		}
		return true, tx.Put("nondet", tx.Key(), []byte(v))
	})
}
