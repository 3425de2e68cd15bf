//go:build jepsen_clockbug

package batch

// plantedNoClamp is a planted bug, for the fault-injection harness's tests only (jepsen/):
// built with -tags jepsen_clockbug, NextTime does not clamp: the sequencer stamps the
// leader's clock as it is and the replicas apply it so, and batch time can go backwards.
// The set workload's batch-time-monotonic checker must catch it under clock faults
// (jepsen.TestClockCheckerCatchesBackwardsTime).
const plantedNoClamp = true
