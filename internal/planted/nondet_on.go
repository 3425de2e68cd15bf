//go:build lockstep_nondet

package planted

// Nondet is true: this build registers test.nondet, a procedure whose write differs on one
// node (tag lockstep_nondet), the divergence the determinism guard must catch.
const Nondet = true
