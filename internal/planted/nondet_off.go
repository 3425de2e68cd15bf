//go:build !lockstep_nondet

package planted

// Nondet is false: test.nondet is registered only with -tags lockstep_nondet.
const Nondet = false
