//go:build !lockstep_nondet

package main

import "github.com/lockstepdb/lockstep/procedures"

// registerTestProcedures adds nothing: only a lockstep_nondet build (nondet_tag.go) has
// test procedures.
func registerTestProcedures(*procedures.Registry, string) {}
