//go:build lockstep_nondet

package main

import (
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// nondetArgs are the arguments of test.nondet.
type nondetArgs struct {
	// Node is the id of the node on which the write differs.
	Node string `msgpack:"node"`
}

// registerTestProcedures adds "test.nondet" to a test build (go build -tags
// lockstep_nondet): it writes a value that differs on the node whose id is its argument
// Node, the one kind of bug the determinism guard must catch (DESIGN.md invariant 6). The
// rebuild tests (rebuild_test.go) use it to make one replica diverge. Never in a release.
func registerTestProcedures(r *procedures.Registry, id string) {
	procedures.MustRegister(r, "test.nondet", func(tx *partition.Tx, a nondetArgs) (bool, error) {
		v := "same"
		if a.Node == id {
			v = "differs on " + id
		}
		return true, tx.Put("nondet", tx.Key(), []byte(v))
	})
}
