//go:build jepsen_clockbug

package planted

// ClockBug is a planted bug, for the fault-injection harness's tests only (jepsen/):
// built with -tags jepsen_clockbug, batch time is taken from the leader's clock as it is,
// without the clamp that keeps it from going backwards. The set workload's
// batch-time-monotonic checker must catch it under clock faults
// (jepsen.TestClockCheckerCatchesBackwardsTime).
const ClockBug = true
