//go:build !jepsen_clockbug

package batch

// plantedNoClamp is the fault switch of the jepsen_clockbug build (planted_clockbug.go);
// false in every other build.
const plantedNoClamp = false
