//go:build !jepsen_clockbug

package planted

// ClockBug is false: the planted bug that takes batch time unclamped from the leader's clock is built only with -tags jepsen_clockbug.
const ClockBug = false
