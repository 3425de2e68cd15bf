// Package testutil holds helpers shared by the tests of several packages. Only tests
// import it.
package testutil

import (
	"testing"
	"time"
)

// pollInterval is the pause between two evaluations of a WaitFor condition.
const pollInterval = 10 * time.Millisecond

// WaitFor calls cond until it returns nil, and fails the test with cond's last error if
// timeout passes first. Tests wait on conditions with it instead of sleeping.
func WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}
